/*
 * test_memory_cache_ttl.c - time to live of yyc_memcache entries (memory_cache.h "Time to
 * live"): strict expiry at the deadline on every read path and value mode, removal by every
 * trim and the auto-trim, default and per-entry values, the bounded deadline heap, and a
 * model-based random sequence. Every case runs under each eviction policy. Time is moved with
 * the test-build clock hook, never slept.
 */
#include "policy_support.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

/* Test hooks compiled into yycache_testing (memory_cache.c, YYC_TESTING). */
bool yyc__memcache_check(yyc_memcache *c);
void yyc__memcache_testing_advance_clock(double seconds);

#define WAIT_SECONDS 10.0

/* --- values that count their releases --- */

typedef struct counter {
    atomic_long live;
    atomic_long released;
} counter;

static void *counted_retain(void *ctx, void *v) {
    (void)ctx;
    return v;
}

static void counted_release(void *ctx, void *v) {
    counter *k = ctx;
    atomic_fetch_add(&k->released, 1);
    atomic_fetch_sub(&k->live, 1);
    free(v);
}

static void *counted_new(counter *k, int id) {
    int *v = malloc(sizeof *v);
    assert_non_null(v);
    *v = id;
    atomic_fetch_add(&k->live, 1);
    return v;
}

static yyc_memcache *counted_cache(counter *k, bool async) {
    yyc_value_callbacks cb = {counted_retain, counted_release, k};
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(&cb, &c), YYC_OK);
    yyc_memcache_set_release_asynchronously(c, async);
    yyc_memcache_set_auto_trim_interval(c, 0); /* only the trims a case runs */
    return c;
}

static bool present(yyc_memcache *c, const char *key) {
    void *v = NULL;
    return yyc_memcache_get(c, key, strlen(key), &v) == YYC_OK;
}

/* --- cases --- */

static void entry_expires_exactly_at_its_time_to_live(void **state) {
    (void)state;
    counter k = {0};
    yyc_memcache *c = counted_cache(&k, false);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "a", 1, counted_new(&k, 1), 0, 10.0), YYC_OK);
    yyc__memcache_testing_advance_clock(9.9);
    assert_true(present(c, "a"));
    assert_true(yyc_memcache_contains(c, "a", 1));
    yyc__memcache_testing_advance_clock(0.1);
    assert_false(yyc_memcache_contains(c, "a", 1));
    assert_false(present(c, "a"));
    assert_int_equal(yyc_memcache_total_count(c), 0); /* removed by the read that found it */
    assert_int_equal(atomic_load(&k.released), 1);
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
    assert_int_equal(atomic_load(&k.live), 0);
}

/* Each read path on its own finds the expired entry, reports it absent and removes it. */
static void every_read_path_hides_and_removes_an_expired_entry(void **state) {
    (void)state;
    for (int path = 0; path < 3; path++) {
        counter k = {0};
        yyc_memcache *c = counted_cache(&k, false);
        assert_int_equal(yyc_memcache_set_with_ttl(c, "k", 1, counted_new(&k, 1), 7, 1.0), YYC_OK);
        yyc__memcache_testing_advance_clock(1.0);
        assert_int_equal(yyc_memcache_total_count(c), 1); /* nothing removed it yet */
        double left = -1;
        void *v = NULL;
        switch (path) {
        case 0: assert_int_equal(yyc_memcache_get(c, "k", 1, &v), YYC_NOTFOUND); break;
        case 1: assert_false(yyc_memcache_contains(c, "k", 1)); break;
        case 2: assert_int_equal(yyc_memcache_time_to_live(c, "k", 1, &left), YYC_NOTFOUND); break;
        }
        assert_null(v);
        assert_int_equal(yyc_memcache_total_count(c), 0);
        assert_int_equal(yyc_memcache_total_cost(c), 0);
        assert_int_equal(atomic_load(&k.released), 1);
        assert_true(yyc__memcache_check(c));
        yyc_memcache_free(c);
    }
}

typedef struct pair {
    int a, b;
} pair;

static atomic_int inline_destroyed;
static void pair_destroy(void *ctx, void *value) {
    (void)ctx;
    (void)value;
    atomic_fetch_add(&inline_destroyed, 1);
}

static void inline_cache_entries_expire_too(void **state) {
    (void)state;
    atomic_store(&inline_destroyed, 0);
    yyc_inline_value_type type = {.size = sizeof(pair), .destroy = pair_destroy};
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_OK);
    yyc_memcache_set_release_asynchronously(c, false);
    pair p = {1, 2}, out = {0, 0};
    assert_int_equal(yyc_memcache_set_inline_with_ttl(c, "p", 1, &p, 0, 2.0), YYC_OK);
    assert_int_equal(yyc_memcache_set_inline_with_ttl(c, "q", 1, &p, 0, INFINITY), YYC_OK);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "p", 1, NULL, 0, 1.0), YYC_EINVAL); /* mode */
    yyc__memcache_testing_advance_clock(1.5);
    assert_int_equal(yyc_memcache_get_inline(c, "p", 1, &out), YYC_OK);
    assert_int_equal(out.b, 2);
    yyc__memcache_testing_advance_clock(0.5);
    out = (pair){0, 0};
    assert_int_equal(yyc_memcache_get_inline(c, "p", 1, &out), YYC_NOTFOUND);
    assert_int_equal(out.a, 0);
    assert_int_equal(atomic_load(&inline_destroyed), 1);
    assert_int_equal(yyc_memcache_get_inline(c, "q", 1, &out), YYC_OK);
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
    assert_int_equal(atomic_load(&inline_destroyed), 2);
}

static void default_time_to_live_applies_to_sets_without_their_own(void **state) {
    (void)state;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    assert_true(isinf(yyc_memcache_default_time_to_live(c)));
    yyc_memcache_set_default_time_to_live(c, 5.0);
    assert_true(yyc_memcache_default_time_to_live(c) == 5.0);
    assert_int_equal(yyc_memcache_set(c, "plain", 5, NULL, 0), YYC_OK);
    /* (taken after the other set: keys share generations by stripe, and "plain" falls in
     * "gen"'s stripe for 1 seed in 256) */
    uint64_t g = yyc_memcache_generation(c, "gen", 3);
    bool stored = false;
    assert_int_equal(yyc_memcache_set_if_generation(c, "gen", 3, NULL, 0, g, &stored), YYC_OK);
    assert_true(stored);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "never", 5, NULL, 0, INFINITY), YYC_OK);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "long", 4, NULL, 0, 50.0), YYC_OK);
    double left = 0;
    assert_int_equal(yyc_memcache_time_to_live(c, "never", 5, &left), YYC_OK);
    assert_true(isinf(left));
    yyc__memcache_testing_advance_clock(5.0);
    assert_false(yyc_memcache_contains(c, "plain", 5));
    assert_false(yyc_memcache_contains(c, "gen", 3));
    assert_true(yyc_memcache_contains(c, "never", 5));
    assert_true(yyc_memcache_contains(c, "long", 4));
    /* NaN means none, a negative default means 0 */
    yyc_memcache_set_default_time_to_live(c, NAN);
    assert_true(isinf(yyc_memcache_default_time_to_live(c)));
    yyc_memcache_set_default_time_to_live(c, -3);
    assert_true(yyc_memcache_default_time_to_live(c) == 0);
    assert_int_equal(yyc_memcache_set(c, "zero", 4, NULL, 0), YYC_OK);
    assert_false(yyc_memcache_contains(c, "zero", 4)); /* expired at once */
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
}

static void a_later_set_replaces_the_time_to_live(void **state) {
    (void)state;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "a", 1, NULL, 0, 1.0), YYC_OK);
    assert_int_equal(yyc_memcache_set(c, "a", 1, NULL, 0), YYC_OK); /* no default: none */
    assert_int_equal(yyc_memcache_set_with_ttl(c, "b", 1, NULL, 0, 100.0), YYC_OK);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "b", 1, NULL, 0, 1.0), YYC_OK);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "c", 1, NULL, 0, 1.0), YYC_OK);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "c", 1, NULL, 0, 100.0), YYC_OK);
    assert_true(yyc__memcache_check(c));
    yyc__memcache_testing_advance_clock(2.0);
    assert_true(yyc_memcache_contains(c, "a", 1));
    assert_false(yyc_memcache_contains(c, "b", 1));
    assert_true(yyc_memcache_contains(c, "c", 1));
    /* the stale deadline of c's first set removes nothing, in a trim either */
    yyc_memcache_trim_to_count(c, 100);
    assert_int_equal(yyc_memcache_total_count(c), 2);
    double left = 0;
    assert_int_equal(yyc_memcache_time_to_live(c, "c", 1, &left), YYC_OK);
    assert_true(left > 97.0 && left <= 98.0);
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
}

static void invalid_time_to_live_is_refused_and_stores_nothing(void **state) {
    (void)state;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "a", 1, NULL, 0, NAN), YYC_EINVAL);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "a", 1, NULL, 0, -1.0), YYC_EINVAL);
    assert_int_equal(yyc_memcache_set_with_ttl(NULL, "a", 1, NULL, 0, 1.0), YYC_EINVAL);
    assert_int_equal(yyc_memcache_set_with_ttl(c, NULL, 1, NULL, 0, 1.0), YYC_EINVAL);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    double left = 9;
    assert_int_equal(yyc_memcache_time_to_live(c, "a", 1, NULL), YYC_EINVAL);
    assert_int_equal(yyc_memcache_time_to_live(NULL, "a", 1, &left), YYC_EINVAL);
    assert_int_equal(yyc_memcache_time_to_live(c, "a", 1, &left), YYC_NOTFOUND);
    assert_true(left == 0);
    assert_true(isinf(yyc_memcache_default_time_to_live(NULL)));
    yyc_memcache_set_default_time_to_live(NULL, 1.0); /* no-op */
    yyc_memcache_free(c);
}

/* Trims at limits they do not reach still remove the expired entries, and only those. */
static void every_trim_removes_expired_entries_even_within_its_limit(void **state) {
    (void)state;
    for (int kind = 0; kind < 3; kind++) {
        counter k = {0};
        yyc_memcache *c = counted_cache(&k, kind == 1);
        char key[16];
        for (int i = 0; i < 200; i++) {
            int n = snprintf(key, sizeof key, "k%d", i);
            double ttl = i % 2 ? 5.0 : INFINITY;
            assert_int_equal(
                yyc_memcache_set_with_ttl(c, key, (size_t)n, counted_new(&k, i), 1, ttl), YYC_OK);
        }
        yyc__memcache_testing_advance_clock(5.0);
        switch (kind) {
        case 0: yyc_memcache_trim_to_count(c, 1000); break;
        case 1: yyc_memcache_trim_to_cost(c, 1000); break;
        case 2: yyc_memcache_trim_to_age(c, 1e9); break;
        }
        assert_int_equal(yyc_memcache_total_count(c), 100);
        assert_int_equal(yyc_memcache_total_cost(c), 100);
        assert_true(WAIT_UNTIL(atomic_load(&k.released) == 100, WAIT_SECONDS));
        for (int i = 0; i < 200; i++) {
            int n = snprintf(key, sizeof key, "k%d", i);
            assert_int_equal(yyc_memcache_contains(c, key, (size_t)n), i % 2 == 0);
        }
        assert_true(yyc__memcache_check(c));
        yyc_memcache_free(c);
        assert_int_equal(atomic_load(&k.live), 0);
    }
}

static void auto_trim_removes_expired_entries(void **state) {
    (void)state;
    counter k = {0};
    yyc_memcache *c = counted_cache(&k, true);
    for (int i = 0; i < 600; i++) { /* more than one purge step */
        char key[16];
        int n = snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(yyc_memcache_set_with_ttl(c, key, (size_t)n, counted_new(&k, i), 0, 1.0),
                         YYC_OK);
    }
    assert_int_equal(yyc_memcache_set(c, "stay", 4, counted_new(&k, -1), 0), YYC_OK);
    yyc__memcache_testing_advance_clock(1.0);
    assert_int_equal(yyc_memcache_total_count(c), 601);
    yyc_memcache_set_auto_trim_interval(c, 0.01);
    assert_true(WAIT_UNTIL(yyc_memcache_total_count(c) == 1, WAIT_SECONDS));
    assert_true(WAIT_UNTIL(atomic_load(&k.released) == 600, WAIT_SECONDS));
    assert_true(yyc_memcache_contains(c, "stay", 4));
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
    assert_int_equal(atomic_load(&k.live), 0);
}

/* Re-setting one key with a time to live leaves a stale heap entry each time; the invariant
 * check (heap <= 2 * live + 64) fails if they pile up. */
static void resetting_a_key_keeps_the_deadline_heap_bounded(void **state) {
    (void)state;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    for (int i = 0; i < 5000; i++) {
        assert_int_equal(yyc_memcache_set_with_ttl(c, "k", 1, NULL, 0, 100.0 + i), YYC_OK);
        if (i % 97 == 0) assert_true(yyc__memcache_check(c));
    }
    for (int i = 0; i < 5000; i++) {
        assert_int_equal(yyc_memcache_set_with_ttl(c, "r", 1, NULL, 0, 100.0), YYC_OK);
        assert_int_equal(yyc_memcache_remove(c, "r", 1), YYC_OK);
    }
    assert_true(yyc__memcache_check(c));
    double left = 0;
    assert_int_equal(yyc_memcache_time_to_live(c, "k", 1, &left), YYC_OK);
    assert_true(left > 5098.0 && left <= 5099.0);
    yyc_memcache_free(c);
}

/* Stale deadlines at the heap's bound, then expired entries taken one by one by a trim: every
 * take shrinks the live count by one and the heap by one, so the bound must be restored after
 * a take too, not only after a set or a removal. */
static void expiring_entries_one_by_one_keeps_the_deadline_heap_bounded(void **state) {
    (void)state;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    yyc_memcache_set_auto_trim_interval(c, 0);
    char key[16];
    for (int i = 0; i < 10; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(yyc_memcache_set_with_ttl(c, key, (size_t)n, NULL, 0, 1.0 + i), YYC_OK);
    }
    /* 74 stale deadlines: the heap holds 84 = 2 * 10 + 64 entries, the most it may */
    for (int i = 0; i < 74; i++)
        assert_int_equal(yyc_memcache_set_with_ttl(c, "k9", 2, NULL, 0, 100.0), YYC_OK);
    assert_true(yyc__memcache_check(c));
    for (int i = 0; i < 9; i++) {
        yyc__memcache_testing_advance_clock(1.0);
        yyc_memcache_trim_to_count(c, 1000); /* takes the one entry that just expired */
        assert_int_equal(yyc_memcache_total_count(c), 9 - i);
        assert_true(yyc__memcache_check(c));
    }
    yyc_memcache_free(c);
}

/* Entries with a deadline that leave by eviction, removal or remove_all leave no deadline
 * behind (checked), and a new entry at a reused address does not inherit one. */
static void evicted_and_removed_entries_leave_no_deadline(void **state) {
    (void)state;
    counter k = {0};
    yyc_memcache *c = counted_cache(&k, false);
    yyc_memcache_set_count_limit(c, 10);
    char key[16];
    for (int i = 0; i < 500; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(yyc_memcache_set_with_ttl(c, key, (size_t)n, counted_new(&k, i), 0, 1.0),
                         YYC_OK);
        if (i % 3 == 0) yyc_memcache_remove(c, key, (size_t)n);
        if (i % 50 == 0) assert_true(yyc__memcache_check(c));
    }
    yyc_memcache_remove_all(c);
    assert_true(yyc__memcache_check(c));
    for (int i = 0; i < 10; i++) {
        int n = snprintf(key, sizeof key, "n%d", i);
        assert_int_equal(yyc_memcache_set(c, key, (size_t)n, counted_new(&k, i), 0), YYC_OK);
    }
    yyc__memcache_testing_advance_clock(2.0);
    yyc_memcache_trim_to_count(c, 100);
    assert_int_equal(yyc_memcache_total_count(c), 10);
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
    assert_int_equal(atomic_load(&k.live), 0);
}

/* A fixed-seed random sequence against a model of (key -> deadline): no limits, so the model
 * is exact; every read agrees with it and the invariants hold throughout. */
#define MODEL_KEYS 40
static void random_operations_match_a_model_of_deadlines(void **state) {
    (void)state;
    counter k = {0};
    yyc_memcache *c = counted_cache(&k, false);
    double model[MODEL_KEYS]; /* -1: absent; else the deadline on the model clock */
    for (int i = 0; i < MODEL_KEYS; i++) model[i] = -1;
    double clock = 0;
    unsigned seed = 13;
    char key[8];
    for (int step = 0; step < 20000; step++) {
        int i = rand_r(&seed) % MODEL_KEYS;
        int n = snprintf(key, sizeof key, "%d", i);
        bool live = model[i] >= 0 && clock < model[i];
        switch (rand_r(&seed) % 8) {
        case 0:
        case 1: {
            double ttl = (rand_r(&seed) % 8) * 10.0;
            assert_int_equal(
                yyc_memcache_set_with_ttl(c, key, (size_t)n, counted_new(&k, i), 0, ttl), YYC_OK);
            model[i] = clock + ttl;
            break;
        }
        case 2:
            assert_int_equal(yyc_memcache_set(c, key, (size_t)n, counted_new(&k, i), 0), YYC_OK);
            model[i] = INFINITY;
            break;
        case 3: {
            void *v = NULL;
            int rc = yyc_memcache_get(c, key, (size_t)n, &v);
            assert_int_equal(rc, live ? YYC_OK : YYC_NOTFOUND);
            if (live) assert_int_equal(*(int *)v, i);
            break;
        }
        case 4: assert_int_equal(yyc_memcache_contains(c, key, (size_t)n), live); break;
        case 5: {
            double left = 0;
            int rc = yyc_memcache_time_to_live(c, key, (size_t)n, &left);
            assert_int_equal(rc, live ? YYC_OK : YYC_NOTFOUND);
            if (live && isinf(model[i])) assert_true(isinf(left));
            if (live && !isinf(model[i])) assert_true(left > 0 && left <= model[i] - clock + 1e-6);
            break;
        }
        case 6:
            yyc_memcache_remove(c, key, (size_t)n);
            model[i] = -1;
            break;
        case 7:
            if (rand_r(&seed) % 4 == 0) {
                yyc_memcache_trim_to_count(c, SIZE_MAX - 1);
                size_t expect = 0;
                for (int j = 0; j < MODEL_KEYS; j++) expect += model[j] >= 0 && clock < model[j];
                assert_int_equal(yyc_memcache_total_count(c), expect);
            } else {
                double d = (rand_r(&seed) % 4) * 5.0;
                yyc__memcache_testing_advance_clock(d);
                clock += d;
            }
            break;
        }
        if (step % 500 == 0) assert_true(yyc__memcache_check(c));
    }
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
    assert_int_equal(atomic_load(&k.live), 0);
}

/* Threads set with short times to live, read, remove and trim while one moves the clock; run
 * under TSan. Every value is released exactly once and the invariants hold. */
typedef struct race {
    yyc_memcache *c;
    counter *k;
    int id;
} race;

static void *race_thread(void *arg) {
    race *r = arg;
    unsigned seed = (unsigned)r->id * 7919u + 1;
    char key[8];
    for (int i = 0; i < 3000; i++) {
        int n = snprintf(key, sizeof key, "%d", rand_r(&seed) % 64);
        switch (rand_r(&seed) % 6) {
        case 0:
        case 1:
            yyc_memcache_set_with_ttl(r->c, key, (size_t)n, counted_new(r->k, i), 0,
                                      (rand_r(&seed) % 4) * 0.01);
            break;
        case 2: {
            void *v = NULL;
            yyc_memcache_get(r->c, key, (size_t)n, &v);
            break;
        }
        case 3: yyc_memcache_contains(r->c, key, (size_t)n); break;
        case 4: yyc_memcache_remove(r->c, key, (size_t)n); break;
        case 5:
            if (r->id == 0) yyc__memcache_testing_advance_clock(0.005);
            else if (i % 64 == 0) yyc_memcache_trim_to_count(r->c, 1000);
            break;
        }
    }
    return NULL;
}

static void concurrent_expiry_releases_each_value_once(void **state) {
    (void)state;
    counter k = {0};
    yyc_memcache *c = counted_cache(&k, true);
    yyc_memcache_set_auto_trim_interval(c, 0.001);
    pthread_t th[4];
    race r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = (race){c, &k, i};
        assert_int_equal(pthread_create(&th[i], NULL, race_thread, &r[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
    assert_int_equal(atomic_load(&k.live), 0);
}

static const struct CMUnitTest every_policy[] = {
    cmocka_unit_test(entry_expires_exactly_at_its_time_to_live),
    cmocka_unit_test(every_read_path_hides_and_removes_an_expired_entry),
    cmocka_unit_test(inline_cache_entries_expire_too),
    cmocka_unit_test(default_time_to_live_applies_to_sets_without_their_own),
    cmocka_unit_test(a_later_set_replaces_the_time_to_live),
    cmocka_unit_test(invalid_time_to_live_is_refused_and_stores_nothing),
    cmocka_unit_test(every_trim_removes_expired_entries_even_within_its_limit),
    cmocka_unit_test(auto_trim_removes_expired_entries),
    cmocka_unit_test(resetting_a_key_keeps_the_deadline_heap_bounded),
    cmocka_unit_test(expiring_entries_one_by_one_keeps_the_deadline_heap_bounded),
    cmocka_unit_test(evicted_and_removed_entries_leave_no_deadline),
    cmocka_unit_test(random_operations_match_a_model_of_deadlines),
    cmocka_unit_test(concurrent_expiry_releases_each_value_once),
};

YYC_EVERY_POLICY_TEST_MAIN(every_policy)
