/*
 * test_memory_cache_loading.c - single-flight loading (memory_cache.h "Loading with single
 * flight"): 64 threads missing on one key run one load and get one value; a failing loader
 * gives 64 errors, stores nothing, and the next call loads again; other keys are not delayed by
 * a running load; an expired entry found by a load is reported expired and replaced; a load
 * asking for its own key gets YYC_ERECURSIVE; inline caches and the two-step form. Every case runs
 * under each eviction policy.
 */
#include "policy_support.h"

#include <pthread.h>
#include <stdatomic.h>

bool yyc__memcache_check(yyc_memcache *c);
void yyc__memcache_testing_advance_clock(double seconds);

#define WAIT_SECONDS 10.0
#define CALLERS 64

static uint64_t misses(yyc_memcache *c) {
    yyc_cache_statistics s;
    assert_int_equal(yyc_memcache_statistics(c, &s), YYC_OK);
    return s.misses;
}

/* A loader that waits until every caller has missed (so all of them overlap its run), then
 * returns its value or its error. */
typedef struct gate {
    yyc_memcache *cache;
    atomic_int runs;
    int status;       /* what the loader returns */
    intptr_t value;   /* its value */
    uint64_t callers; /* misses to wait for */
} gate;

static int gated_load(void *ctx, const void *key, size_t key_len, void *out_value) {
    (void)key, (void)key_len;
    gate *g = ctx;
    atomic_fetch_add(&g->runs, 1);
    assert_true(WAIT_UNTIL(misses(g->cache) >= g->callers, WAIT_SECONDS));
    if (g->status != YYC_OK) return g->status;
    *(void **)out_value = (void *)g->value;
    return YYC_OK;
}

typedef struct caller {
    gate *g;
    int status;
    intptr_t value;
} caller;

static void *call_get_or_load(void *arg) {
    caller *k = arg;
    void *v = (void *)-1;
    k->status = yyc_memcache_get_or_load(k->g->cache, "key", 3, 1, gated_load, k->g, &v);
    k->value = (intptr_t)v;
    return NULL;
}

static void run_callers(gate *g, caller *callers) {
    pthread_t threads[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        callers[i] = (caller){.g = g};
        assert_int_equal(pthread_create(&threads[i], NULL, call_get_or_load, &callers[i]), 0);
    }
    for (int i = 0; i < CALLERS; i++) pthread_join(threads[i], NULL);
}

static yyc_memcache *plain_cache(void) {
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    yyc_memcache_set_auto_trim_interval(c, 0);
    return c;
}

static void sixty_four_callers_run_one_load_and_get_its_value(void **state) {
    (void)state;
    gate g = {.cache = plain_cache(), .status = YYC_OK, .value = 42, .callers = CALLERS};
    caller callers[CALLERS];
    run_callers(&g, callers);
    assert_int_equal(atomic_load(&g.runs), 1);
    for (int i = 0; i < CALLERS; i++) {
        assert_int_equal(callers[i].status, YYC_OK);
        assert_int_equal(callers[i].value, 42);
    }
    void *v;
    assert_int_equal(yyc_memcache_get(g.cache, "key", 3, &v), YYC_OK);
    assert_int_equal((intptr_t)v, 42);
    yyc_cache_statistics s;
    assert_int_equal(yyc_memcache_statistics(g.cache, &s), YYC_OK);
    assert_int_equal(s.loads, 1);
    assert_int_equal(s.insertions, 1);
    assert_int_equal(s.misses, CALLERS);
    assert_true(yyc__memcache_check(g.cache));
    yyc_memcache_free(g.cache);
}

static void a_failing_load_reaches_every_caller_and_stores_nothing(void **state) {
    (void)state;
    gate g = {.cache = plain_cache(), .status = YYC_EIO, .callers = CALLERS};
    caller callers[CALLERS];
    run_callers(&g, callers);
    assert_int_equal(atomic_load(&g.runs), 1);
    for (int i = 0; i < CALLERS; i++) {
        assert_int_equal(callers[i].status, YYC_EIO);
        assert_int_equal(callers[i].value, 0); /* *out_value is NULL on failure */
    }
    assert_false(yyc_memcache_contains(g.cache, "key", 3));
    assert_int_equal(yyc_memcache_total_count(g.cache), 0);
    /* The error was not stored: the next call loads again. */
    g.status = YYC_OK;
    g.value = 7;
    g.callers = 0;
    void *v;
    assert_int_equal(yyc_memcache_get_or_load(g.cache, "key", 3, 0, gated_load, &g, &v), YYC_OK);
    assert_int_equal((intptr_t)v, 7);
    assert_int_equal(atomic_load(&g.runs), 2);
    yyc_cache_statistics s;
    assert_int_equal(yyc_memcache_statistics(g.cache, &s), YYC_OK);
    assert_int_equal(s.load_failures, 1);
    assert_int_equal(s.loads, 1);
    yyc_memcache_free(g.cache);
}

/* A loader that blocks until released, to hold a flight open. */
typedef struct held {
    atomic_bool started, release;
} held;

static int held_load(void *ctx, const void *key, size_t key_len, void *out_value) {
    (void)key, (void)key_len;
    held *h = ctx;
    atomic_store(&h->started, true);
    assert_true(WAIT_UNTIL(atomic_load(&h->release), WAIT_SECONDS));
    *(void **)out_value = (void *)1;
    return YYC_OK;
}

typedef struct held_call {
    yyc_memcache *cache;
    held *h;
    int status;
} held_call;

static void *call_held(void *arg) {
    held_call *k = arg;
    void *v;
    k->status = yyc_memcache_get_or_load(k->cache, "slow", 4, 0, held_load, k->h, &v);
    return NULL;
}

static int quick_load(void *ctx, const void *key, size_t key_len, void *out_value) {
    (void)ctx, (void)key, (void)key_len;
    *(void **)out_value = (void *)2;
    return YYC_OK;
}

static void a_running_load_does_not_delay_other_keys(void **state) {
    (void)state;
    held h = {0};
    held_call k = {.cache = plain_cache(), .h = &h};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, call_held, &k), 0);
    assert_true(WAIT_UNTIL(atomic_load(&h.started), WAIT_SECONDS));
    /* While "slow" loads (and would wait forever), every other call completes. */
    void *v;
    assert_int_equal(yyc_memcache_get_or_load(k.cache, "fast", 4, 0, quick_load, NULL, &v), YYC_OK);
    assert_int_equal((intptr_t)v, 2);
    assert_int_equal(yyc_memcache_set(k.cache, "other", 5, (void *)3, 0), YYC_OK);
    assert_int_equal(yyc_memcache_get(k.cache, "other", 5, &v), YYC_OK);
    assert_int_equal(yyc_memcache_get(k.cache, "slow", 4, &v), YYC_NOTFOUND);
    yyc_memcache_remove_all(k.cache);
    assert_int_equal(yyc_memcache_total_count(k.cache), 0);
    atomic_store(&h.release, true);
    pthread_join(t, NULL);
    assert_int_equal(k.status, YYC_OK);
    assert_true(yyc_memcache_contains(k.cache, "slow", 4));
    yyc_memcache_free(k.cache);
}

static yyc_removal_cause last_cause;
static intptr_t last_value;
static void note_removal(void *ctx, const void *key, size_t key_len, void *value,
                         yyc_removal_cause cause) {
    (void)ctx, (void)key, (void)key_len;
    last_cause = cause;
    last_value = (intptr_t)value;
}

static void an_expired_entry_found_by_a_load_is_reported_expired_and_replaced(void **state) {
    (void)state;
    yyc_memcache *c = plain_cache();
    yyc_memcache_set_release_asynchronously(c, false);
    yyc_memcache_set_removal_listener(c, note_removal, NULL);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "k", 1, (void *)5, 0, 1.0), YYC_OK);
    yyc__memcache_testing_advance_clock(1.0);
    last_value = 0;
    void *v;
    assert_int_equal(yyc_memcache_get_or_load(c, "k", 1, 0, quick_load, NULL, &v), YYC_OK);
    assert_int_equal((intptr_t)v, 2);
    assert_int_equal(last_cause, YYC_REMOVED_EXPIRED);
    assert_int_equal(last_value, 5);
    assert_int_equal(yyc_memcache_get(c, "k", 1, &v), YYC_OK);
    assert_int_equal((intptr_t)v, 2);
    yyc_memcache_free(c);
}

static int self_load(void *ctx, const void *key, size_t key_len, void *out_value) {
    yyc_memcache *c = ctx;
    void *v = (void *)99;
    /* The same key from inside its own load: refused, not a deadlock. */
    assert_int_equal(yyc_memcache_get_or_load(c, key, key_len, 0, quick_load, NULL, &v),
                     YYC_ERECURSIVE);
    /* Other keys and plain calls work from a loader. */
    assert_int_equal(yyc_memcache_get_or_load(c, "inner", 5, 0, quick_load, NULL, &v), YYC_OK);
    assert_int_equal(yyc_memcache_set(c, "side", 4, (void *)4, 0), YYC_OK);
    *(void **)out_value = (void *)3;
    return YYC_OK;
}

static void a_load_asking_for_its_own_key_is_refused(void **state) {
    (void)state;
    yyc_memcache *c = plain_cache();
    void *v;
    assert_int_equal(yyc_memcache_get_or_load(c, "outer", 5, 0, self_load, c, &v), YYC_OK);
    assert_int_equal((intptr_t)v, 3);
    assert_true(yyc_memcache_contains(c, "inner", 5));
    assert_true(yyc_memcache_contains(c, "side", 4));
    assert_int_equal(yyc_memcache_get_or_load(c, "k", 1, 0, NULL, NULL, &v), YYC_EINVAL);
    yyc_memcache_free(c);
}

/* Inline values, with a copy callback that counts the copies and a destroy that counts the ends:
 * every copy handed out and every stored value is destroyed exactly once. */
static atomic_int inline_live;
static atomic_int inline_runs;
static void inline_copy(void *ctx, void *dst, const void *src) {
    (void)ctx;
    memcpy(dst, src, sizeof(int));
    atomic_fetch_add(&inline_live, 1);
}
static void inline_destroy(void *ctx, void *value) {
    (void)ctx, (void)value;
    atomic_fetch_sub(&inline_live, 1);
}

typedef struct inline_caller {
    yyc_memcache *cache;
    int status, value;
} inline_caller;

static int inline_load(void *ctx, const void *key, size_t key_len, void *out_value) {
    (void)key, (void)key_len;
    yyc_memcache *c = ctx;
    atomic_fetch_add(&inline_runs, 1);
    assert_true(WAIT_UNTIL(misses(c) >= CALLERS, WAIT_SECONDS));
    int v = 31;
    memcpy(out_value, &v, sizeof v);
    atomic_fetch_add(&inline_live, 1); /* a new value */
    return YYC_OK;
}

static void *call_inline(void *arg) {
    inline_caller *k = arg;
    k->status =
        yyc_memcache_get_or_load_inline(k->cache, "key", 3, 0, inline_load, k->cache, &k->value);
    if (k->status == YYC_OK) inline_destroy(NULL, &k->value); /* the caller's copy ends */
    return NULL;
}

static void inline_callers_share_one_load_and_every_copy_ends(void **state) {
    (void)state;
    yyc_inline_value_type type = {
        .size = sizeof(int), .copy = inline_copy, .destroy = inline_destroy};
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_OK);
    yyc_memcache_set_release_asynchronously(c, false);
    atomic_store(&inline_live, 0);
    atomic_store(&inline_runs, 0);
    inline_caller callers[CALLERS];
    pthread_t threads[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        callers[i] = (inline_caller){.cache = c};
        assert_int_equal(pthread_create(&threads[i], NULL, call_inline, &callers[i]), 0);
    }
    for (int i = 0; i < CALLERS; i++) pthread_join(threads[i], NULL);
    assert_int_equal(atomic_load(&inline_runs), 1);
    for (int i = 0; i < CALLERS; i++) {
        assert_int_equal(callers[i].status, YYC_OK);
        assert_int_equal(callers[i].value, 31);
    }
    assert_int_equal(atomic_load(&inline_live), 1); /* the stored one */
    assert_int_equal(yyc_memcache_get_or_load_inline(c, "key", 3, 0, NULL, NULL, &callers[0].value),
                     YYC_EINVAL);
    yyc_memcache_free(c);
    assert_int_equal(atomic_load(&inline_live), 0);
}

/* The two-step form: a waiter's callback gets the value, or the loader's status and error. */
typedef struct notified {
    int calls, status;
    intptr_t value;
    void *error;
} notified;

static void on_loaded(void *ctx, int status, void *value, void *error) {
    notified *n = ctx;
    n->calls++;
    n->status = status;
    n->value = (intptr_t)value;
    n->error = error;
}

static void waiters_of_the_two_step_form_get_the_value_or_the_error(void **state) {
    (void)state;
    yyc_memcache *c = plain_cache();
    void *v = NULL;
    yyc_memcache_flight *loader = NULL, *none = (yyc_memcache_flight *)1;
    notified first = {0}, second = {0};
    assert_int_equal(yyc_memcache_begin_load(c, "k", 1, &v, on_loaded, &first, false, &loader),
                     YYC_NOTFOUND);
    assert_non_null(loader);
    assert_int_equal(yyc_memcache_begin_load(c, "k", 1, &v, on_loaded, &second, false, &none),
                     YYC_NOTFOUND);
    assert_null(none); /* joined (the same thread: a caller that suspends may) */
    int error_object;
    assert_int_equal(yyc_memcache_finish_load(c, loader, YYC_EIO, NULL, 0, &error_object, 5),
                     YYC_EIO);
    assert_int_equal(second.calls, 1);
    assert_int_equal(second.status, YYC_EIO);
    assert_ptr_equal(second.error, &error_object);
    assert_int_equal(first.calls, 0); /* the loader's own callback is never called */
    assert_false(yyc_memcache_contains(c, "k", 1));

    assert_int_equal(yyc_memcache_begin_load(c, "k", 1, &v, on_loaded, &first, false, &loader),
                     YYC_NOTFOUND);
    assert_int_equal(yyc_memcache_begin_load(c, "k", 1, &v, on_loaded, &second, false, &none),
                     YYC_NOTFOUND);
    assert_int_equal(yyc_memcache_finish_load(c, loader, YYC_OK, (void *)8, 0, NULL, 5), YYC_OK);
    assert_int_equal(second.calls, 2);
    assert_int_equal(second.status, YYC_OK);
    assert_int_equal(second.value, 8);
    assert_int_equal(yyc_memcache_begin_load(c, "k", 1, &v, on_loaded, &first, false, &loader),
                     YYC_OK);
    assert_null(loader);
    assert_int_equal((intptr_t)v, 8);
    yyc_cache_statistics s;
    assert_int_equal(yyc_memcache_statistics(c, &s), YYC_OK);
    assert_int_equal(s.total_load_time_ns, 10);
    yyc_memcache_free(c);
}

static const struct CMUnitTest every_policy[] = {
    cmocka_unit_test(sixty_four_callers_run_one_load_and_get_its_value),
    cmocka_unit_test(a_failing_load_reaches_every_caller_and_stores_nothing),
    cmocka_unit_test(a_running_load_does_not_delay_other_keys),
    cmocka_unit_test(an_expired_entry_found_by_a_load_is_reported_expired_and_replaced),
    cmocka_unit_test(a_load_asking_for_its_own_key_is_refused),
    cmocka_unit_test(inline_callers_share_one_load_and_every_copy_ends),
    cmocka_unit_test(waiters_of_the_two_step_form_get_the_value_or_the_error),
};

YYC_EVERY_POLICY_TEST_MAIN(every_policy)
