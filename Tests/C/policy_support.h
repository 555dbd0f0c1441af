/*
 * policy_support.h - runs a memory-cache test file's policy-independent cases once per
 * eviction policy (LRU, SIEVE, S3-FIFO, TinyLFU), without copying them.
 *
 * End the file with YYC_POLICY_TEST_MAIN(every_policy, lru_only) (or
 * YYC_EVERY_POLICY_TEST_MAIN(every_policy)) instead of YYC_TEST_MAIN:
 * every_policy (an array of cmocka cases) runs four times, every cache created meanwhile
 * getting that policy (the test-build knob yyc__memcache_testing_default_policy), then lru_only
 * (cases about LRU order) once with LRU. As with YYC_TEST_MAIN, one argument runs only the case
 * of that name (under every policy when it is in every_policy); a name in neither array fails.
 */
#ifndef YYCACHE_POLICY_SUPPORT_H
#define YYCACHE_POLICY_SUPPORT_H

#include "test_support.h"

/* Test builds only (memory_cache.c): the policy yyc_memcache_new* gives new caches. */
void yyc__memcache_testing_default_policy(yyc_eviction_policy policy);

static inline bool policy_group_has(const struct CMUnitTest *t, size_t n, const char *name) {
    if (!name) return true;
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0) return true;
    return false;
}

static inline int policy_run_groups(const struct CMUnitTest *every, size_t n_every,
                                    const struct CMUnitTest *lru, size_t n_lru, const char *name) {
    static const char *const names[] = {"policy lru", "policy sieve", "policy s3fifo",
                                        "policy tinylfu"};
    bool in_every = policy_group_has(every, n_every, name);
    bool in_lru = n_lru > 0 && policy_group_has(lru, n_lru, name);
    if (!in_every && !in_lru) {
        fprintf(stderr, "no test case named %s\n", name);
        return 1;
    }
    if (name) cmocka_set_test_filter(name);
    int failed = 0;
    for (int p = YYC_EVICT_LRU; in_every && p <= YYC_EVICT_TINYLFU; p++) {
        yyc__memcache_testing_default_policy((yyc_eviction_policy)p);
        failed += _cmocka_run_group_tests(names[p], every, n_every, NULL, NULL);
    }
    yyc__memcache_testing_default_policy(YYC_EVICT_LRU);
    if (in_lru) failed += _cmocka_run_group_tests("lru order", lru, n_lru, NULL, NULL);
    return failed;
}

#define YYC_POLICY_TEST_MAIN(every_policy, lru_only)                                         \
    int main(int argc, char **argv) {                                                        \
        return policy_run_groups(every_policy, sizeof every_policy / sizeof every_policy[0], \
                                 lru_only, sizeof lru_only / sizeof lru_only[0],             \
                                 argc > 1 ? argv[1] : NULL);                                 \
    }

/* The same for a file whose every case is policy-independent. */
#define YYC_EVERY_POLICY_TEST_MAIN(every_policy)                                                   \
    int main(int argc, char **argv) {                                                              \
        return policy_run_groups(every_policy, sizeof every_policy / sizeof every_policy[0], NULL, \
                                 0, argc > 1 ? argv[1] : NULL);                                    \
    }

#endif /* YYCACHE_POLICY_SUPPORT_H */
