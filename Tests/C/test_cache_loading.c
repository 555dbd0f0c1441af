/*
 * test_cache_loading.c - yyc_cache_get_or_load and yyc_cache_get_statistics (cache.h): 64
 * threads missing on one key run the loader once, all get its value, and memory is filled;
 * a failing loader fails all of them once and stores nothing; hits in either tier and misses
 * are counted. The loader waits (bounded) until the other callers wait for it. Every test in
 * its own temporary folder.
 */
#include "test_kv_support.h"

#include <pthread.h>
#include <stdatomic.h>

long yyc__diskcache_flight_waiters(yyc_diskcache *dc, const char *key);

#define CALLERS 64

typedef struct loader {
    yyc_cache *c;
    atomic_int runs;
    int fail_with;
} loader;

static int load_value(void *ctx, const char *key, void **out, size_t *len) {
    loader *l = ctx;
    atomic_fetch_add(&l->runs, 1);
    for (int i = 0;
         i < 60000 && yyc__diskcache_flight_waiters(yyc_cache_disk(l->c), key) < CALLERS - 1; i++)
        usleep(1000);
    if (l->fail_with) return l->fail_with;
    *out = strdup("loaded");
    *len = 6;
    return YYC_OK;
}

typedef struct caller {
    loader *l;
    int rc;
    bool equal;
} caller;

static void *call(void *arg) {
    caller *c = arg;
    void *v = NULL;
    size_t len = 0;
    c->rc = yyc_cache_get_or_load(c->l->c, "k", load_value, c->l, &v, &len);
    c->equal = c->rc == YYC_OK && len == 6 && !memcmp(v, "loaded", 6);
    yyc_free(v);
    return NULL;
}

static void run_callers(loader *l, caller *callers) {
    pthread_t t[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        callers[i] = (caller){.l = l};
        assert_int_equal(pthread_create(&t[i], NULL, call, &callers[i]), 0);
    }
    for (int i = 0; i < CALLERS; i++) pthread_join(t[i], NULL);
}

static void cache_sixty_four_callers_of_one_missing_key_run_one_load(void **state) {
    (void)state;
    char *dir;
    yyc_cache *c = test_cache_open("cload", &dir);
    loader failing = {.c = c, .fail_with = YYC_EIO};
    caller callers[CALLERS];
    run_callers(&failing, callers);
    assert_int_equal(atomic_load(&failing.runs), 1);
    for (int i = 0; i < CALLERS; i++) assert_int_equal(callers[i].rc, YYC_EIO);
    assert_false(yyc_cache_contains(c, "k"));

    loader l = {.c = c};
    run_callers(&l, callers);
    assert_int_equal(atomic_load(&l.runs), 1);
    for (int i = 0; i < CALLERS; i++) assert_true(callers[i].equal);
    assert_true(yyc_memcache_contains(yyc_cache_memory(c), "k", 1)); /* filled */
    yyc_cache_statistics s;
    assert_int_equal(yyc_cache_get_statistics(c, &s), YYC_OK);
    assert_int_equal(s.loads, 1);
    assert_int_equal(s.load_failures, 1);
    /* API.md: every caller missed (one miss each, twice), one load, one stored value. */
    assert_int_equal(s.hits, 0);
    assert_int_equal(s.misses, 2 * CALLERS);
    assert_int_equal(s.insertions, 1);
    test_cache_close(c, dir);
}

static void cache_statistics_count_hits_in_either_tier(void **state) {
    (void)state;
    char *dir;
    yyc_cache *c = test_cache_open("cload", &dir);
    assert_int_equal(yyc_cache_set(c, "k", "v", 1), YYC_OK);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_cache_get(c, "k", &v, &len), YYC_OK); /* memory */
    yyc_free(v);
    yyc_memcache_remove_all(yyc_cache_memory(c));
    assert_int_equal(yyc_cache_get(c, "k", &v, &len), YYC_OK); /* disk */
    yyc_free(v);
    assert_int_equal(yyc_cache_get(c, "missing", &v, &len), YYC_NOTFOUND);
    yyc_cache_statistics s;
    assert_int_equal(yyc_cache_get_statistics(c, &s), YYC_OK);
    assert_int_equal(s.hits, 2);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.insertions, 1);
    yyc_cache_reset_statistics(c);
    assert_int_equal(yyc_cache_get_statistics(c, &s), YYC_OK);
    assert_int_equal(s.hits + s.misses + s.insertions, 0);
    test_cache_close(c, dir);
}

/* A loader that sets the key itself (a write after the miss that returns before the load's
 * value is stored), then returns another value. */
static int load_after_a_set(void *ctx, const char *key, void **out, size_t *len) {
    yyc_cache *c = ctx;
    assert_int_equal(yyc_cache_set(c, key, "set", 3), YYC_OK);
    *out = strdup("loaded");
    *len = 6;
    return YYC_OK;
}

static void cache_has(yyc_cache *c, const char *key, const char *want) {
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_cache_get(c, key, &v, &len), YYC_OK);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(v, want, len);
    yyc_free(v);
}

/* A set acknowledged while the load ran is newer than the load's miss: both tiers keep it (the
 * disk used to take the loaded value while memory kept the set's, and the set was lost once
 * memory forgot the key). */
static void cache_a_loaded_value_never_overwrites_a_set_made_after_the_miss(void **state) {
    (void)state;
    char *dir;
    yyc_cache *c = test_cache_open("cload", &dir);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_cache_get_or_load(c, "k", load_after_a_set, c, &v, &len), YYC_OK);
    yyc_free(v);
    cache_has(c, "k", "set");
    yyc_memcache_remove_all(yyc_cache_memory(c)); /* memory forgets: the disk answers */
    cache_has(c, "k", "set");
    yyc_cache_statistics s;
    assert_int_equal(yyc_cache_get_statistics(c, &s), YYC_OK);
    assert_int_equal(s.insertions, 1); /* the set; the loaded value was not stored */
    test_cache_close(c, dir);
}

static int load_v(void *ctx, const char *key, void **out, size_t *len) {
    (void)ctx;
    (void)key;
    *out = strdup("v");
    *len = 1;
    return YYC_OK;
}

/* API.md: a loader call on a missing key is one miss plus one load; the stored value is one
 * insertion; a later call is one hit. */
static void cache_statistics_count_a_loading_call_as_one_miss_one_load_one_insertion(void **state) {
    (void)state;
    char *dir;
    yyc_cache *c = test_cache_open("cload", &dir);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_cache_get_or_load(c, "k", load_v, NULL, &v, &len), YYC_OK);
    yyc_free(v);
    yyc_cache_statistics s;
    assert_int_equal(yyc_cache_get_statistics(c, &s), YYC_OK);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.hits, 0);
    assert_int_equal(s.loads, 1);
    assert_int_equal(s.insertions, 1);
    assert_int_equal(yyc_cache_get_or_load(c, "k", load_v, NULL, &v, &len), YYC_OK);
    yyc_free(v);
    assert_int_equal(yyc_cache_get_statistics(c, &s), YYC_OK);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.loads, 1);
    test_cache_close(c, dir);
}

static int load_fresh(void *ctx, const char *key, void **out, size_t *len) {
    (void)key;
    atomic_fetch_add((atomic_int *)ctx, 1);
    *out = strdup("fresh");
    *len = 5;
    return YYC_OK;
}

/* A loader that asks the two-level cache for its own key. */
static int self_load(void *ctx, const char *key, void **out, size_t *len) {
    (void)out;
    (void)len;
    yyc_cache *c = ctx;
    void *v = NULL;
    size_t n = 0;
    atomic_int inner_runs = 0;
    assert_int_equal(yyc_cache_get_or_load(c, key, load_fresh, &inner_runs, &v, &n),
                     YYC_ERECURSIVE);
    assert_int_equal(atomic_load(&inner_runs), 0);
    return YYC_ERECURSIVE;
}

static void
cache_a_load_asking_for_its_own_key_fails_at_once_and_the_key_stays_usable(void **state) {
    (void)state;
    char *dir = test_temp_dir("cload");
    yyc_cache *c = NULL;
    assert_int_equal(yyc_cache_open(dir, &c), YYC_OK);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_cache_get_or_load(c, "k", self_load, c, &v, &len), YYC_ERECURSIVE);
    assert_null(v);
    atomic_int runs = 0;
    assert_int_equal(yyc_cache_get_or_load(c, "k", load_fresh, &runs, &v, &len), YYC_OK);
    assert_memory_equal(v, "fresh", 5);
    yyc_free(v);
    assert_int_equal(atomic_load(&runs), 1);
    yyc_cache_free(c);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(cache_a_loaded_value_never_overwrites_a_set_made_after_the_miss),
    cmocka_unit_test(cache_statistics_count_a_loading_call_as_one_miss_one_load_one_insertion),
    cmocka_unit_test(cache_sixty_four_callers_of_one_missing_key_run_one_load),
    cmocka_unit_test(cache_statistics_count_hits_in_either_tier),
    cmocka_unit_test(cache_a_load_asking_for_its_own_key_fails_at_once_and_the_key_stays_usable),
};

YYC_TEST_MAIN(tests)
