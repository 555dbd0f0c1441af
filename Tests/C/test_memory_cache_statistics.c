/*
 * test_memory_cache_statistics.c - the memory cache's statistics (memory_cache.h
 * "Statistics"): a model-based random sequence with a fixed seed whose counts must equal the
 * model's, expired entries as misses, what does not count, reset, the hit ratio and load
 * times. Every case runs under each eviction policy.
 */
#include "policy_support.h"

#include <math.h>

bool yyc__memcache_check(yyc_memcache *c);
void yyc__memcache_testing_advance_clock(double seconds);

#define KEYS 24

/* --- the model --- */

typedef struct model {
    bool present[KEYS];
    double deadline[KEYS]; /* INFINITY: none */
    double now;            /* the test clock's moves so far */
    yyc_cache_statistics expect;
} model;

static bool live(const model *m, int k) { return m->present[k] && m->now < m->deadline[k]; }

/* The listener keeps the model's key set in step with evictions (whose victims depend on the
 * policy); the counts are predicted before each operation. */
static void forget_key(void *ctx, const void *key, size_t key_len, void *value,
                       yyc_removal_cause cause) {
    (void)value;
    if (cause == YYC_REMOVED_REPLACED) return; /* the key stays, with its new value */
    model *m = ctx;
    char text[8] = {0};
    assert_true(key_len >= 2 && key_len < sizeof text);
    memcpy(text, key, key_len); /* keys are not NUL-terminated */
    int k;
    assert_int_equal(sscanf(text + 1, "%d", &k), 1);
    assert_true(k >= 0 && k < KEYS);
    m->present[k] = false;
}

static void purge_model(model *m) {
    for (int k = 0; k < KEYS; k++)
        if (m->present[k] && !live(m, k)) {
            m->present[k] = false;
            m->expect.removals[YYC_REMOVED_EXPIRED]++;
        }
}

static int load_ok(void *ctx, const void *key, size_t key_len, void *out_value) {
    (void)ctx, (void)key, (void)key_len;
    *(void **)out_value = (void *)1;
    return YYC_OK;
}

static int load_fails(void *ctx, const void *key, size_t key_len, void *out_value) {
    (void)ctx, (void)key, (void)key_len, (void)out_value;
    return YYC_EIO;
}

static void assert_statistics_equal(const yyc_cache_statistics *want, yyc_memcache *c) {
    yyc_cache_statistics got;
    assert_int_equal(yyc_memcache_statistics(c, &got), YYC_OK);
    assert_int_equal(got.hits, want->hits);
    assert_int_equal(got.misses, want->misses);
    assert_int_equal(got.insertions, want->insertions);
    for (int i = 0; i < YYC_REMOVAL_CAUSE_COUNT; i++) {
        if (got.removals[i] != want->removals[i]) fprintf(stderr, "removals by cause %d\n", i);
        assert_int_equal(got.removals[i], want->removals[i]);
    }
    assert_int_equal(got.loads, want->loads);
    assert_int_equal(got.load_failures, want->load_failures);
}

static void statistics_equal_a_models_counts_after_a_random_sequence(void **state) {
    (void)state;
    model m = {0};
    for (int k = 0; k < KEYS; k++) m.deadline[k] = INFINITY;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    yyc_memcache_set_release_asynchronously(c, false); /* the listener runs before calls return */
    yyc_memcache_set_auto_trim_interval(c, 0);
    yyc_memcache_set_removal_listener(c, forget_key, &m);
    unsigned seed = 20261201;
    char key[8];
    for (int i = 0; i < 20000; i++) {
        int op = rand_r(&seed) % 100, k = rand_r(&seed) % KEYS;
        snprintf(key, sizeof key, "k%d", k);
        size_t len = strlen(key);
        void *v;
        if (op < 30) { /* set, a third with a time to live of 10 or 20 s */
            int ttl = rand_r(&seed) % 3;
            if (m.present[k]) m.expect.removals[YYC_REMOVED_REPLACED]++;
            m.expect.insertions++;
            m.present[k] = true;
            m.deadline[k] = ttl ? m.now + 10.0 * ttl : INFINITY;
            assert_int_equal(ttl ? yyc_memcache_set_with_ttl(c, key, len, (void *)1, 0, 10.0 * ttl)
                                 : yyc_memcache_set(c, key, len, (void *)1, 0),
                             YYC_OK);
        } else if (op < 60) { /* get */
            bool hit = live(&m, k);
            if (hit) {
                m.expect.hits++;
            } else {
                m.expect.misses++;
                if (m.present[k]) m.expect.removals[YYC_REMOVED_EXPIRED]++;
            }
            assert_int_equal(yyc_memcache_get(c, key, len, &v), hit ? YYC_OK : YYC_NOTFOUND);
            m.present[k] = hit;
        } else if (op < 70) { /* get or load, failing on odd rounds */
            bool fails = i % 2, hit = live(&m, k);
            if (hit) {
                m.expect.hits++;
            } else {
                if (m.present[k]) m.expect.removals[YYC_REMOVED_EXPIRED]++;
                m.expect.misses++;
                if (fails) {
                    m.expect.load_failures++;
                } else {
                    m.expect.loads++;
                    m.expect.insertions++;
                }
            }
            int rc =
                yyc_memcache_get_or_load(c, key, len, 0, fails ? load_fails : load_ok, NULL, &v);
            assert_int_equal(rc, hit || !fails ? YYC_OK : YYC_EIO);
            if (!hit) { /* after the call: its expired event made the listener forget the key */
                m.present[k] = !fails;
                m.deadline[k] = INFINITY;
            }
        } else if (op < 78) { /* remove (an expired entry still present counts as explicit) */
            if (m.present[k]) m.expect.removals[YYC_REMOVED_EXPLICIT]++;
            m.present[k] = false;
            yyc_memcache_remove(c, key, len);
        } else if (op < 84) { /* contains and time_to_live count nothing, but drop expired */
            if (m.present[k] && !live(&m, k)) {
                m.expect.removals[YYC_REMOVED_EXPIRED]++;
                m.present[k] = false;
            }
            bool in = m.present[k];
            assert_int_equal(yyc_memcache_contains(c, key, len), in);
            double ttl;
            assert_int_equal(yyc_memcache_time_to_live(c, key, len, &ttl),
                             in ? YYC_OK : YYC_NOTFOUND);
        } else if (op < 90) { /* the clock moves */
            m.now += 10.0;
            yyc__memcache_testing_advance_clock(10.0);
        } else if (op < 96) { /* a trim to a count: expired first, then victims */
            size_t target = (size_t)(rand_r(&seed) % 12);
            purge_model(&m);
            size_t n = 0;
            for (int j = 0; j < KEYS; j++) n += m.present[j];
            if (n > target) m.expect.removals[YYC_REMOVED_EVICTED] += n - target;
            yyc_memcache_trim_to_count(c, target); /* the listener forgets the victims */
            size_t after = 0;
            for (int j = 0; j < KEYS; j++) after += m.present[j];
            assert_int_equal(after, n > target ? target : n);
        } else if (op < 98) {
            for (int j = 0; j < KEYS; j++)
                if (m.present[j]) m.expect.removals[YYC_REMOVED_EXPLICIT]++;
            memset(m.present, 0, sizeof m.present);
            yyc_memcache_remove_all(c);
        } else {
            for (int j = 0; j < KEYS; j++)
                if (m.present[j]) m.expect.removals[YYC_REMOVED_MEMORY_PRESSURE]++;
            memset(m.present, 0, sizeof m.present);
            yyc_memcache_handle_memory_warning(c);
        }
        if (i % 97 == 0) assert_statistics_equal(&m.expect, c);
    }
    assert_statistics_equal(&m.expect, c);
    assert_true(m.expect.hits > 1000 && m.expect.removals[YYC_REMOVED_EXPIRED] > 100);
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
}

static void an_expired_entry_is_a_miss(void **state) {
    (void)state;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "a", 1, (void *)1, 0, 5.0), YYC_OK);
    void *v;
    assert_int_equal(yyc_memcache_get(c, "a", 1, &v), YYC_OK);
    yyc__memcache_testing_advance_clock(5.0);
    assert_int_equal(yyc_memcache_get(c, "a", 1, &v), YYC_NOTFOUND);
    yyc_cache_statistics s;
    assert_int_equal(yyc_memcache_statistics(c, &s), YYC_OK);
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.removals[YYC_REMOVED_EXPIRED], 1);
    assert_true(yyc_cache_statistics_hit_ratio(&s) == 0.5);
    yyc_memcache_free(c);
}

static void reset_sets_every_counter_to_zero(void **state) {
    (void)state;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    void *v;
    assert_int_equal(yyc_memcache_set(c, "a", 1, (void *)1, 0), YYC_OK);
    assert_int_equal(yyc_memcache_get(c, "a", 1, &v), YYC_OK);
    assert_int_equal(yyc_memcache_get(c, "b", 1, &v), YYC_NOTFOUND);
    assert_int_equal(yyc_memcache_remove(c, "a", 1), YYC_OK);
    yyc_memcache_reset_statistics(c);
    yyc_cache_statistics s, zero = {0};
    memset(&s, 0xff, sizeof s);
    assert_int_equal(yyc_memcache_statistics(c, &s), YYC_OK);
    assert_memory_equal(&s, &zero, sizeof s);
    assert_true(yyc_cache_statistics_hit_ratio(&s) == 0.0);
    assert_int_equal(yyc_memcache_statistics(NULL, &s), YYC_EINVAL);
    assert_int_equal(yyc_memcache_statistics(c, NULL), YYC_EINVAL);
    yyc_memcache_free(c);
}

static void replacements_and_evictions_are_counted_without_a_listener(void **state) {
    (void)state;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    yyc_memcache_set_count_limit(c, 2);
    assert_int_equal(yyc_memcache_set(c, "a", 1, (void *)1, 0), YYC_OK);
    assert_int_equal(yyc_memcache_set(c, "a", 1, (void *)2, 0), YYC_OK); /* replaced */
    assert_int_equal(yyc_memcache_set(c, "b", 1, (void *)3, 0), YYC_OK);
    assert_int_equal(yyc_memcache_set(c, "c", 1, (void *)4, 0), YYC_OK); /* evicts one */
    yyc_memcache_handle_enter_background(c);                             /* two */
    yyc_cache_statistics s;
    assert_int_equal(yyc_memcache_statistics(c, &s), YYC_OK);
    assert_int_equal(s.insertions, 4);
    assert_int_equal(s.removals[YYC_REMOVED_REPLACED], 1);
    assert_int_equal(s.removals[YYC_REMOVED_EVICTED], 1);
    assert_int_equal(s.removals[YYC_REMOVED_MEMORY_PRESSURE], 2);
    assert_int_equal(s.removals[YYC_REMOVED_EXPLICIT] + s.removals[YYC_REMOVED_EXPIRED], 0);
    yyc_memcache_free(c);
}

static int slow_load(void *ctx, const void *key, size_t key_len, void *out_value) {
    (void)key, (void)key_len;
    struct timespec pause = {0, 2 * 1000 * 1000};
    nanosleep(&pause, NULL);
    *(void **)out_value = ctx;
    return YYC_OK;
}

static void load_time_includes_every_loader_run(void **state) {
    (void)state;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    void *v;
    assert_int_equal(yyc_memcache_get_or_load(c, "a", 1, 0, slow_load, (void *)7, &v), YYC_OK);
    assert_int_equal((intptr_t)v, 7);
    assert_int_equal(yyc_memcache_get_or_load(c, "a", 1, 0, slow_load, (void *)8, &v), YYC_OK);
    assert_int_equal((intptr_t)v, 7); /* a hit: no second load */
    yyc_cache_statistics s;
    assert_int_equal(yyc_memcache_statistics(c, &s), YYC_OK);
    assert_int_equal(s.loads, 1);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.insertions, 1);
    assert_true(s.total_load_time_ns >= 2 * 1000 * 1000); /* the loader slept 2 ms */
    yyc_memcache_free(c);
}

static const struct CMUnitTest every_policy[] = {
    cmocka_unit_test(statistics_equal_a_models_counts_after_a_random_sequence),
    cmocka_unit_test(an_expired_entry_is_a_miss),
    cmocka_unit_test(reset_sets_every_counter_to_zero),
    cmocka_unit_test(load_time_includes_every_loader_run),
    cmocka_unit_test(replacements_and_evictions_are_counted_without_a_listener),
};

YYC_EVERY_POLICY_TEST_MAIN(every_policy)
