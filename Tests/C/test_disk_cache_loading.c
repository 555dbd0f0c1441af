/*
 * test_disk_cache_loading.c - yyc_diskcache_get_or_load (disk_cache.h "Loading with single
 * flight"): 64 threads missing on one key run the loader once and all get its value; a failing
 * loader fails all 64 once and stores nothing, and the next call loads again; a hit never
 * loads; an expired entry is loaded again. The loader waits (bounded) until every other caller
 * is waiting for it, so the callers are known to overlap. Every test in its own folder.
 */
#include "test_kv_support.h"

#include "kv/kv_private.h"

#include <pthread.h>
#include <stdatomic.h>

long yyc__diskcache_flight_waiters(yyc_diskcache *dc, const char *key);

#define CALLERS 64

typedef struct loader {
    yyc_diskcache *dc;
    atomic_int runs;
    int fail_with; /* 0: succeed */
} loader;

/* Waits until the other CALLERS - 1 callers wait for this load (60 s at most), then loads. */
static int load_value(void *ctx, const char *key, void **out, size_t *len) {
    loader *l = ctx;
    atomic_fetch_add(&l->runs, 1);
    for (int i = 0; i < 60000 && yyc__diskcache_flight_waiters(l->dc, key) < CALLERS - 1; i++)
        usleep(1000);
    if (l->fail_with) return l->fail_with;
    *out = strdup("loaded value");
    *len = strlen("loaded value");
    return YYC_OK;
}

typedef struct caller {
    loader *l;
    int rc;
    char value[32];
} caller;

static void *call(void *arg) {
    caller *c = arg;
    void *v = NULL;
    size_t len = 0;
    c->rc = yyc_diskcache_get_or_load(c->l->dc, "k", load_value, c->l, &v, &len);
    if (c->rc == YYC_OK) snprintf(c->value, sizeof c->value, "%.*s", (int)len, (char *)v);
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

/* A loader for one caller: no waiting. */
static int load_now(void *ctx, const char *key, void **out, size_t *len) {
    (void)key;
    atomic_fetch_add((atomic_int *)ctx, 1);
    *out = strdup("fresh");
    *len = 5;
    return YYC_OK;
}

static void disk_sixty_four_callers_of_one_missing_key_run_one_load(void **state) {
    (void)state;
    char *dir = test_temp_dir("dload");
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 20, &dc), YYC_OK);
    loader l = {.dc = dc};
    caller callers[CALLERS];
    run_callers(&l, callers);
    assert_int_equal(atomic_load(&l.runs), 1);
    for (int i = 0; i < CALLERS; i++) {
        assert_int_equal(callers[i].rc, YYC_OK);
        assert_string_equal(callers[i].value, "loaded value");
    }
    yyc_cache_statistics s;
    assert_int_equal(yyc_diskcache_statistics(dc, &s), YYC_OK);
    assert_int_equal(s.loads, 1);
    assert_int_equal(s.load_failures, 0);
    assert_int_equal(s.insertions, 1);
    assert_int_equal(s.misses,
                     CALLERS); /* each caller's read (the loader's second look is no miss) */
    /* Stored: the next call is a hit and does not load. */
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_diskcache_get_or_load(dc, "k", load_value, &l, &v, &len), YYC_OK);
    yyc_free(v);
    assert_int_equal(atomic_load(&l.runs), 1);
    assert_int_equal(yyc__diskcache_flight_waiters(dc, "k"), -1);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_a_failing_load_fails_every_waiter_once_and_stores_nothing(void **state) {
    (void)state;
    char *dir = test_temp_dir("dload");
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 20, &dc), YYC_OK);
    loader l = {.dc = dc, .fail_with = YYC_EIO};
    caller callers[CALLERS];
    run_callers(&l, callers);
    assert_int_equal(atomic_load(&l.runs), 1);
    for (int i = 0; i < CALLERS; i++) assert_int_equal(callers[i].rc, YYC_EIO);
    assert_false(yyc_diskcache_contains(dc, "k"));
    yyc_cache_statistics s;
    assert_int_equal(yyc_diskcache_statistics(dc, &s), YYC_OK);
    assert_int_equal(s.load_failures, 1);
    /* The next call loads again (alone: it does not wait for other callers). */
    atomic_int runs = 0;
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_diskcache_get_or_load(dc, "k", load_now, &runs, &v, &len), YYC_OK);
    assert_memory_equal(v, "fresh", 5);
    yyc_free(v);
    assert_int_equal(atomic_load(&runs), 1);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_an_expired_entry_is_loaded_again_and_a_hit_never_loads(void **state) {
    (void)state;
    char *dir = test_temp_dir("dload");
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 20, &dc), YYC_OK);
    atomic_int runs = 0;
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_diskcache_set(dc, "hit", "cached", 6, NULL, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_get_or_load(dc, "hit", load_now, &runs, &v, &len), YYC_OK);
    assert_int_equal(len, 6);
    yyc_free(v);
    assert_int_equal(atomic_load(&runs), 0);
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "old", "stale", 5, NULL, 0, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_get_or_load(dc, "old", load_now, &runs, &v, &len), YYC_OK);
    assert_memory_equal(v, "fresh", 5);
    yyc_free(v);
    assert_int_equal(atomic_load(&runs), 1);
    yyc_cache_statistics s;
    assert_int_equal(yyc_diskcache_statistics(dc, &s), YYC_OK);
    assert_int_equal(s.removals[YYC_REMOVED_EXPIRED], 1);
    assert_int_equal(yyc_diskcache_get_or_load(dc, "", load_now, &runs, &v, &len), YYC_EINVAL);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static int load_after_a_disk_set(void *ctx, const char *key, void **out, size_t *len) {
    assert_int_equal(yyc_diskcache_set(ctx, key, "set", 3, NULL, 0), YYC_OK);
    *out = strdup("loaded");
    *len = 6;
    return YYC_OK;
}

/* A set acknowledged while the load ran stays: the loaded value is not stored over it. The
 * call counts one miss (its second look after the miss is no second miss) and one load. */
static void disk_a_loaded_value_never_overwrites_a_set_made_after_the_miss(void **state) {
    (void)state;
    char *dir = test_temp_dir("dload");
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 1024, &dc), YYC_OK);
    for (int mode = 0; mode < 2; mode++) { /* immediate, then deferred writes */
        const char *key = mode ? "deferred" : "immediate";
        if (mode)
            assert_int_equal(yyc_diskcache_set_write_mode(dc, YYC_WRITE_DEFERRED, 60), YYC_OK);
        yyc_diskcache_reset_statistics(dc);
        void *v = NULL;
        size_t len = 0;
        assert_int_equal(yyc_diskcache_get_or_load(dc, key, load_after_a_disk_set, dc, &v, &len),
                         YYC_OK);
        yyc_free(v);
        assert_int_equal(yyc_diskcache_get(dc, key, &v, &len), YYC_OK);
        assert_int_equal(len, 3);
        assert_memory_equal(v, "set", 3);
        yyc_free(v);
        yyc_cache_statistics s;
        assert_int_equal(yyc_diskcache_statistics(dc, &s), YYC_OK);
        assert_int_equal(s.misses, 1);
        assert_int_equal(s.hits, 1); /* the get above */
        assert_int_equal(s.loads, 1);
        assert_int_equal(s.insertions, 1); /* the set's */
    }
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* A loader that asks for its own key (and, through the same call, for another key). */
static int self_load(void *ctx, const char *key, void **out, size_t *len) {
    (void)out;
    (void)len;
    yyc_diskcache *dc = ctx;
    void *v = NULL;
    size_t n = 0;
    atomic_int inner_runs = 0;
    assert_int_equal(yyc_diskcache_get_or_load(dc, key, load_now, &inner_runs, &v, &n),
                     YYC_ERECURSIVE);
    assert_null(v);
    assert_int_equal(atomic_load(&inner_runs), 0);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_ERECURSIVE);
    atomic_int runs = 0;
    assert_int_equal(yyc_diskcache_get_or_load(dc, "other", load_now, &runs, &v, &n), YYC_OK);
    yyc_free(v);
    return YYC_ERECURSIVE; /* passes the refusal on: nothing is stored */
}

static void
disk_a_load_asking_for_its_own_key_fails_at_once_and_the_key_stays_usable(void **state) {
    (void)state;
    char *dir = test_temp_dir("dload");
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 20, &dc), YYC_OK);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_diskcache_get_or_load(dc, "k", self_load, dc, &v, &len), YYC_ERECURSIVE);
    assert_int_equal(yyc_diskcache_get(dc, "k", &v, &len), YYC_NOTFOUND);
    assert_int_equal(yyc_diskcache_contains(dc, "other"), true);
    atomic_int runs = 0;
    assert_int_equal(yyc_diskcache_get_or_load(dc, "k", load_now, &runs, &v, &len), YYC_OK);
    assert_memory_equal(v, "fresh", 5);
    yyc_free(v);
    assert_int_equal(atomic_load(&runs), 1);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(disk_a_loaded_value_never_overwrites_a_set_made_after_the_miss),
    cmocka_unit_test(disk_sixty_four_callers_of_one_missing_key_run_one_load),
    cmocka_unit_test(disk_a_failing_load_fails_every_waiter_once_and_stores_nothing),
    cmocka_unit_test(disk_an_expired_entry_is_loaded_again_and_a_hit_never_loads),
    cmocka_unit_test(disk_a_load_asking_for_its_own_key_fails_at_once_and_the_key_stays_usable),
};

YYC_TEST_MAIN(tests)
