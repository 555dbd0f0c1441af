/*
 * test_memory_cache.c - behaviour of yyc_memcache (spec 1.4 and 3): LRU order, limits, trims,
 * auto-trim, release policy, event handlers, re-entrancy and bad input.
 * Background work is awaited with WAIT_UNTIL (a deadline), never with a fixed sleep.
 */
#include "policy_support.h"
#include "platform/internal.h" /* yyc__worker_drain: wait for the queued cost trim */

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

/* Test hooks compiled into yycache_testing (memory_cache.c, YYC_TESTING). */
bool yyc__memcache_check(yyc_memcache *c);
unsigned yyc__memcache_auto_trim_fires(yyc_memcache *c);

#define WAIT_SECONDS 10.0 /* generous deadline for background work (sanitizers are slow) */

/* --- lifetime tracker: counts live values; every value must be released exactly once --- */

#define TRACKED_MAGIC 0x7ac4edu

typedef struct tracked {
    atomic_int refs;
    unsigned magic;
    int id;
} tracked;

typedef struct tracker {
    atomic_long live;      /* tracked values not yet destroyed */
    atomic_long releases;  /* release callbacks run */
    atomic_int off_caller; /* releases that ran on another thread than `caller` */
    atomic_int on_caller;
    pthread_t caller;
    yyc_memcache *reenter; /* if set, the release callback calls into this cache */
    atomic_int reentered;
} tracker;

static tracked *tracked_new(tracker *t, int id) {
    tracked *v = malloc(sizeof *v);
    assert_non_null(v);
    atomic_init(&v->refs, 1);
    v->magic = TRACKED_MAGIC;
    v->id = id;
    atomic_fetch_add(&t->live, 1);
    return v;
}

static void tracked_drop(tracker *t, tracked *v) {
    assert_int_equal(v->magic, TRACKED_MAGIC);
    int before = atomic_fetch_sub(&v->refs, 1);
    assert_true(before >= 1);
    if (before == 1) {
        v->magic = 0;
        free(v);
        atomic_fetch_sub(&t->live, 1);
    }
}

static void *tracker_retain(void *ctx, void *value) {
    (void)ctx;
    tracked *v = value;
    assert_int_equal(v->magic, TRACKED_MAGIC);
    atomic_fetch_add(&v->refs, 1);
    return v;
}

static void tracker_release(void *ctx, void *value) {
    tracker *t = ctx;
    /* Counters first, the drop last: once live reaches 0 every counter is final. */
    atomic_fetch_add(&t->releases, 1);
    if (pthread_equal(pthread_self(), t->caller)) atomic_fetch_add(&t->on_caller, 1);
    else atomic_fetch_add(&t->off_caller, 1);
    if (t->reenter) {
        /* A release callback may call back into the same cache. */
        void *out = NULL;
        yyc_memcache_contains(t->reenter, "k0", 2);
        if (yyc_memcache_get(t->reenter, "k0", 2, &out) == YYC_OK) tracked_drop(t, out);
        yyc_memcache_set(t->reenter, "from-release", 12, NULL, 0);
        atomic_fetch_add(&t->reentered, 1);
    }
    tracked_drop(t, value);
}

static yyc_memcache *new_tracked_cache(tracker *t) {
    memset(t, 0, sizeof *t);
    t->caller = pthread_self();
    yyc_value_callbacks cb = {tracker_retain, tracker_release, t};
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(&cb, &c), YYC_OK);
    assert_non_null(c);
    return c;
}

/* Sets a fresh tracked value under key (the cache takes its own reference). */
static void put(yyc_memcache *c, tracker *t, const char *key, size_t cost) {
    tracked *v = tracked_new(t, 0);
    assert_int_equal(yyc_memcache_set(c, key, strlen(key), v, cost), YYC_OK);
    tracked_drop(t, v);
    if (yyc_memcache_total_count(c) <= 256) assert_true(yyc__memcache_check(c)); /* O(n) */
}

static bool has(yyc_memcache *c, const char *key) {
    return yyc_memcache_contains(c, key, strlen(key));
}

static void touch(yyc_memcache *c, tracker *t, const char *key) {
    void *v = NULL;
    assert_int_equal(yyc_memcache_get(c, key, strlen(key), &v), YYC_OK);
    assert_non_null(v);
    tracked_drop(t, v);
}

static void free_and_check_no_leak(yyc_memcache *c, tracker *t) {
    yyc_memcache_free(c);
    /* free waits for every release, so no polling here. */
    assert_int_equal(atomic_load(&t->live), 0);
}

/* A cache of plain pointers (no callbacks). */
static yyc_memcache *new_plain_cache(void) {
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    return c;
}

/* --- basics --- */

static void new_cache_has_yymemorycache_defaults(void **state) {
    (void)state;
    yyc_memcache *c = new_plain_cache();
    assert_int_equal(yyc_memcache_total_count(c), 0);
    assert_int_equal(yyc_memcache_total_cost(c), 0);
    assert_int_equal(yyc_memcache_count_limit(c), SIZE_MAX);
    assert_int_equal(yyc_memcache_cost_limit(c), SIZE_MAX);
    assert_true(yyc_memcache_age_limit(c) == DBL_MAX);
    assert_true(yyc_memcache_auto_trim_interval(c) == 5.0);
    assert_true(yyc_memcache_release_asynchronously(c));
    assert_true(yyc_memcache_remove_all_on_memory_warning(c));
    assert_true(yyc_memcache_remove_all_on_enter_background(c));
    assert_int_equal(yyc_memcache_new(NULL, NULL), YYC_EINVAL);
    yyc_memcache_free(c);
    yyc_memcache_free(NULL);
}

static void set_then_get_returns_value(void **state) {
    (void)state;
    yyc_memcache *c = new_plain_cache();
    int a = 1, b = 2;
    assert_int_equal(yyc_memcache_set(c, "a", 1, &a, 3), YYC_OK);
    assert_int_equal(yyc_memcache_set(c, "b", 1, &b, 4), YYC_OK);
    void *out = NULL;
    assert_int_equal(yyc_memcache_get(c, "a", 1, &out), YYC_OK);
    assert_ptr_equal(out, &a);
    assert_int_equal(yyc_memcache_get(c, "b", 1, &out), YYC_OK);
    assert_ptr_equal(out, &b);
    assert_int_equal(yyc_memcache_total_count(c), 2);
    assert_int_equal(yyc_memcache_total_cost(c), 7);
    out = &a;
    assert_int_equal(yyc_memcache_get(c, "zz", 2, &out), YYC_NOTFOUND);
    assert_null(out);
    yyc_memcache_free(c);
}

static void set_on_existing_key_replaces_value_and_cost(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    yyc_memcache_set_release_asynchronously(c, false);
    put(c, &t, "k", 10);
    put(c, &t, "k", 4);
    assert_int_equal(yyc_memcache_total_count(c), 1);
    assert_int_equal(yyc_memcache_total_cost(c), 4);
    assert_int_equal(atomic_load(&t.live), 1); /* the first value was released */
    free_and_check_no_leak(c, &t);
}

static void remove_deletes_entry_and_absent_key_is_ok(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    put(c, &t, "a", 5);
    put(c, &t, "b", 6);
    assert_int_equal(yyc_memcache_remove(c, "a", 1), YYC_OK);
    assert_true(yyc__memcache_check(c));
    assert_false(has(c, "a"));
    assert_true(has(c, "b"));
    assert_int_equal(yyc_memcache_total_cost(c), 6);
    assert_int_equal(yyc_memcache_remove(c, "a", 1), YYC_OK);
    assert_int_equal(yyc_memcache_remove(c, "nope", 4), YYC_OK);
    assert_true(WAIT_UNTIL(atomic_load(&t.live) == 1, WAIT_SECONDS));
    free_and_check_no_leak(c, &t);
}

static void null_value_is_stored_as_null(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    assert_int_equal(yyc_memcache_set(c, "n", 1, NULL, 2), YYC_OK);
    void *out = &t;
    assert_int_equal(yyc_memcache_get(c, "n", 1, &out), YYC_OK);
    assert_null(out);
    assert_true(has(c, "n"));
    free_and_check_no_leak(c, &t);
}

/* --- LRU order --- */

static void get_moves_entry_to_head(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    put(c, &t, "a", 0);
    put(c, &t, "b", 0);
    put(c, &t, "c", 0);
    touch(c, &t, "a"); /* order now a, c, b */
    yyc_memcache_trim_to_count(c, 2);
    assert_false(has(c, "b"));
    assert_true(has(c, "a"));
    assert_true(has(c, "c"));
    yyc_memcache_trim_to_count(c, 1);
    assert_false(has(c, "c"));
    assert_true(has(c, "a"));
    free_and_check_no_leak(c, &t);
}

static void set_on_existing_key_moves_entry_to_head(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    put(c, &t, "a", 0);
    put(c, &t, "b", 0);
    put(c, &t, "c", 0);
    put(c, &t, "a", 0); /* order now a, c, b */
    yyc_memcache_trim_to_count(c, 1);
    assert_true(has(c, "a"));
    assert_int_equal(yyc_memcache_total_count(c), 1);
    free_and_check_no_leak(c, &t);
}

static void contains_does_not_change_lru_order(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    put(c, &t, "a", 0);
    put(c, &t, "b", 0);
    assert_true(has(c, "a"));
    yyc_memcache_trim_to_count(c, 1);
    assert_false(has(c, "a"));
    assert_true(has(c, "b"));
    free_and_check_no_leak(c, &t);
}

static void trims_evict_from_the_tail(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    char key[16];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put(c, &t, key, 1);
    }
    for (size_t keep = 9; keep > 0; keep--) {
        yyc_memcache_trim_to_count(c, keep);
        assert_true(yyc__memcache_check(c));
        assert_int_equal(yyc_memcache_total_count(c), keep);
        snprintf(key, sizeof key, "k%zu", 9 - keep); /* the oldest one went */
        assert_false(has(c, key));
        snprintf(key, sizeof key, "k%zu", 10 - keep);
        assert_true(has(c, key));
    }
    yyc_memcache_trim_to_cost(c, 0);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    free_and_check_no_leak(c, &t);
}

/* --- limits --- */

static void count_limit_evicts_one_tail_entry_on_set(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    yyc_memcache_set_count_limit(c, 3);
    assert_int_equal(yyc_memcache_count_limit(c), 3);
    put(c, &t, "a", 0);
    put(c, &t, "b", 0);
    put(c, &t, "c", 0);
    put(c, &t, "d", 0);
    assert_int_equal(yyc_memcache_total_count(c), 3); /* evicted before set returned */
    /* TinyLFU: c, out of the window (of 1) for d, is no more frequent than main's oldest (a),
     * so c goes. */
    assert_false(has(c, yyc_memcache_policy(c) == YYC_EVICT_TINYLFU ? "c" : "a"));
    /* Lowering the limit: only one entry goes per set (the auto-trim does the rest). */
    yyc_memcache_set_count_limit(c, 1);
    put(c, &t, "e", 0);
    assert_int_equal(yyc_memcache_total_count(c), 3);
    assert_true(has(c, "e"));
    /* TinyLFU judges the window's oldest (d) against main's oldest (b): d is not more
     * frequent, so d goes; the other policies take their tail. */
    assert_false(has(c, yyc_memcache_policy(c) == YYC_EVICT_TINYLFU ? "d" : "b"));
    free_and_check_no_leak(c, &t);
}

/* YYMemoryCache checks the cost limit before its count eviction, so an entry that a set at
 * the count limit evicts still counts toward the cost that queues the trim: with a cost limit
 * of 0 that trim empties the cache (found by fuzz_memcache). */
static void set_at_the_count_limit_queues_the_cost_trim_the_evicted_entry_made_due(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    yyc_memcache_set_auto_trim_interval(c, 1e15); /* paused: only the set's own trim counts */
    put(c, &t, "a", 14);
    yyc_memcache_set_count_limit(c, 0);
    yyc_memcache_set_cost_limit(c, 0);
    put(c, &t, "b", 0); /* evicts a, then the queued trim to cost 0 removes everything */
    yyc__worker_drain(c);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    assert_false(has(c, "b"));
    assert_true(yyc__memcache_check(c));
    free_and_check_no_leak(c, &t);
}

static void cost_limit_trims_in_background_to_limit(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    yyc_memcache_set_cost_limit(c, 100);
    assert_int_equal(yyc_memcache_cost_limit(c), 100);
    char key[16];
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put(c, &t, key, 10);
    }
    assert_true(WAIT_UNTIL(yyc_memcache_total_cost(c) <= 100, WAIT_SECONDS));
    assert_true(yyc__memcache_check(c));
    /* The most recent survive; k1, not k0: S3-FIFO (libCacheSim's) keeps k0 in its small
     * queue while main is over its size (k1.. went to main, the small queue being full before
     * any eviction). TinyLFU rejects a new key no more frequent than main's oldest: which keys
     * stay depends on when the background trims ran. */
    if (yyc_memcache_policy(c) != YYC_EVICT_TINYLFU) {
        assert_true(has(c, "k49"));
        assert_false(has(c, "k1"));
    }
    long held = (long)yyc_memcache_total_count(c);
    assert_true(WAIT_UNTIL(atomic_load(&t.live) == held, WAIT_SECONDS));
    free_and_check_no_leak(c, &t);
}

static void trim_to_cost_brings_total_under_target(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    char key[16];
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put(c, &t, key, (size_t)i + 1);
    }
    yyc_memcache_trim_to_cost(c, 50);
    assert_true(yyc_memcache_total_cost(c) <= 50);
    assert_true(yyc_memcache_total_cost(c) > 50 - 20); /* stopped as soon as under */
    assert_true(has(c, "k19"));
    free_and_check_no_leak(c, &t);
}

static void age_trim_uses_monotonic_clock(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    double t_old = test_now();
    put(c, &t, "old", 0);
    put(c, &t, "touched", 0);
    double deadline = t_old + 0.3;
    while (test_now() < deadline) usleep(1000); /* ages must differ by a known amount */
    double t_young = test_now();
    put(c, &t, "young", 0);
    touch(c, &t, "touched"); /* a get refreshes the time */
    /* Everything older than now - t_young + margin goes; young and touched stay. */
    yyc_memcache_trim_to_age(c, (test_now() - t_young) + 0.15);
    assert_false(has(c, "old"));
    assert_true(has(c, "young"));
    assert_true(has(c, "touched"));
    yyc_memcache_trim_to_age(c, DBL_MAX);
    yyc_memcache_trim_to_age(c, INFINITY);
    yyc_memcache_trim_to_age(c, NAN);
    assert_int_equal(yyc_memcache_total_count(c), 2);
    free_and_check_no_leak(c, &t);
}

static void zero_limits_remove_all(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    for (int round = 0; round < 3; round++) {
        put(c, &t, "a", 0); /* cost 0: trim_to_cost(0) must still remove it */
        put(c, &t, "b", 5);
        if (round == 0) yyc_memcache_trim_to_count(c, 0);
        if (round == 1) yyc_memcache_trim_to_cost(c, 0);
        if (round == 2) yyc_memcache_trim_to_age(c, 0.0);
        assert_int_equal(yyc_memcache_total_count(c), 0);
        assert_int_equal(yyc_memcache_total_cost(c), 0);
        assert_true(yyc__memcache_check(c));
    }
    put(c, &t, "a", 0);
    yyc_memcache_trim_to_age(c, -1.0);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    /* A count limit of 0 evicts the entry just set. */
    yyc_memcache_set_count_limit(c, 0);
    put(c, &t, "z", 0);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    free_and_check_no_leak(c, &t);
}

static void size_max_limits_mean_no_limit(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    yyc_memcache_set_count_limit(c, SIZE_MAX);
    yyc_memcache_set_cost_limit(c, SIZE_MAX);
    yyc_memcache_set_age_limit(c, DBL_MAX);
    yyc_memcache_set_auto_trim_interval(c, 0.01);
    char key[16];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put(c, &t, key, SIZE_MAX / 4);
    }
    assert_int_equal(yyc_memcache_total_cost(c), SIZE_MAX);
    unsigned fires = yyc__memcache_auto_trim_fires(c);
    assert_true(WAIT_UNTIL(yyc__memcache_auto_trim_fires(c) >= fires + 3, WAIT_SECONDS));
    assert_int_equal(yyc_memcache_total_count(c), 100);
    yyc_memcache_set_age_limit(c, INFINITY);
    fires = yyc__memcache_auto_trim_fires(c);
    assert_true(WAIT_UNTIL(yyc__memcache_auto_trim_fires(c) >= fires + 2, WAIT_SECONDS));
    assert_int_equal(yyc_memcache_total_count(c), 100);
    free_and_check_no_leak(c, &t);
}

static void auto_trim_applies_cost_count_and_age_limits(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    char key[16];
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put(c, &t, key, 1);
    }
    yyc_memcache_set_count_limit(c, 30);
    yyc_memcache_set_auto_trim_interval(c, 0.05);
    assert_true(yyc_memcache_auto_trim_interval(c) == 0.05);
    assert_true(WAIT_UNTIL(yyc_memcache_total_count(c) == 30, WAIT_SECONDS));
    yyc_memcache_set_cost_limit(c, 20);
    assert_true(WAIT_UNTIL(yyc_memcache_total_cost(c) == 20, WAIT_SECONDS));
    yyc_memcache_set_age_limit(c, 0.01);
    assert_true(WAIT_UNTIL(yyc_memcache_total_count(c) == 0, WAIT_SECONDS));
    assert_true(yyc__memcache_check(c));
    /* Values evicted by the background trim are released (on the worker). */
    assert_true(WAIT_UNTIL(atomic_load(&t.live) == 0, WAIT_SECONDS));
    assert_int_equal(atomic_load(&t.on_caller), 0);
    free_and_check_no_leak(c, &t);
}

static double process_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void auto_trim_interval_zero_or_negative_pauses_without_spinning(void **state) {
    (void)state;
    yyc_memcache *c = new_plain_cache();
    double pauses[] = {0.0, -1.0, NAN};
    for (int i = 0; i < 3; i++) {
        yyc_memcache_set_auto_trim_interval(c, 0.01);
        unsigned fires = yyc__memcache_auto_trim_fires(c);
        assert_true(WAIT_UNTIL(yyc__memcache_auto_trim_fires(c) > fires + 1, WAIT_SECONDS));
        yyc_memcache_set_auto_trim_interval(c, pauses[i]);
        /* A fire already under way when the interval changed may still count once. */
        unsigned paused_at = yyc__memcache_auto_trim_fires(c);
        double cpu0 = process_cpu_seconds(), wall0 = test_now();
        /* Expected to time out: the paused timer must not fire again. */
        assert_false(WAIT_UNTIL(yyc__memcache_auto_trim_fires(c) > paused_at + 1, 0.3));
        double cpu = process_cpu_seconds() - cpu0, wall = test_now() - wall0;
        /* A spinning timer would burn a whole core (cpu ~ wall); polling costs almost nothing. */
        assert_true(cpu < wall * 0.5);
    }
    yyc_memcache_free(c);
}

/* --- release policy --- */

static void every_value_released_once_after_remove_all(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        tracker t;
        yyc_memcache *c = new_tracked_cache(&t);
        yyc_memcache_set_release_asynchronously(c, async);
        char key[16];
        for (int i = 0; i < 1000; i++) {
            snprintf(key, sizeof key, "k%d", i);
            put(c, &t, key, 1);
        }
        yyc_memcache_remove_all(c);
        assert_int_equal(yyc_memcache_total_count(c), 0);
        assert_int_equal(yyc_memcache_total_cost(c), 0);
        assert_true(yyc__memcache_check(c));
        if (!async) assert_int_equal(atomic_load(&t.live), 0);
        assert_true(WAIT_UNTIL(atomic_load(&t.live) == 0, WAIT_SECONDS));
        assert_int_equal(atomic_load(&t.releases), 1000);
        /* The cache is usable again. */
        put(c, &t, "again", 1);
        assert_true(has(c, "again"));
        free_and_check_no_leak(c, &t);
        assert_int_equal(atomic_load(&t.releases), 1001);
    }
}

static void every_value_released_once_after_trims(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        tracker t;
        yyc_memcache *c = new_tracked_cache(&t);
        yyc_memcache_set_release_asynchronously(c, async);
        char key[16];
        for (int i = 0; i < 300; i++) {
            snprintf(key, sizeof key, "k%d", i);
            put(c, &t, key, 2);
        }
        yyc_memcache_trim_to_count(c, 200);
        yyc_memcache_trim_to_cost(c, 200);
        yyc_memcache_trim_to_age(c, -1);
        assert_int_equal(yyc_memcache_total_count(c), 0);
        if (!async) assert_int_equal(atomic_load(&t.live), 0);
        assert_true(WAIT_UNTIL(atomic_load(&t.live) == 0, WAIT_SECONDS));
        assert_int_equal(atomic_load(&t.releases), 300);
        free_and_check_no_leak(c, &t);
    }
}

static void free_releases_every_value_before_returning(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    char key[16];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "k%d", i % 3000); /* some replaced, released async */
        put(c, &t, key, 1);
    }
    yyc_memcache_remove(c, "k1", 2);
    free_and_check_no_leak(c, &t);
    assert_int_equal(atomic_load(&t.releases), 5000);
}

static void async_release_runs_off_the_calling_thread(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    assert_true(yyc_memcache_release_asynchronously(c));
    put(c, &t, "a", 0);
    put(c, &t, "b", 0);
    put(c, &t, "c", 0);
    put(c, &t, "a", 0);             /* replaced */
    yyc_memcache_remove(c, "b", 1); /* removed */
    yyc_memcache_set_count_limit(c, 1);
    put(c, &t, "d", 0);         /* evicted by count */
    yyc_memcache_remove_all(c); /* all */
    assert_true(WAIT_UNTIL(atomic_load(&t.live) == 0, WAIT_SECONDS));
    assert_int_equal(atomic_load(&t.on_caller), 0);
    assert_int_equal(atomic_load(&t.off_caller), 5); /* a (old), b, c (evicted), a, d */
    free_and_check_no_leak(c, &t);
}

/* Async releases are gathered: the job runs a moment after the first removal it serves
 * (memory_cache_internal.h's YYC__MC_RELEASE_DELAY, 1 ms), so that a stream of replacing sets
 * wakes the worker once per batch, not once per set. */
static _Atomic double released_at;
static void stamp_release(void *ctx, void *value) {
    (void)ctx;
    (void)value;
    atomic_store(&released_at, yyc__monotonic_now());
}

static void async_releases_wait_a_moment_to_gather_a_batch(void **state) {
    (void)state;
    static const yyc_value_callbacks cb = {NULL, stamp_release, NULL};
    yyc_memcache *c;
    assert_int_equal(yyc_memcache_new(&cb, &c), YYC_OK);
    yyc_memcache_set(c, "k", 1, (void *)1, 0);
    atomic_store(&released_at, 0.0);
    double replaced_at = yyc__monotonic_now();
    yyc_memcache_set(c, "k", 1, (void *)2, 0); /* the old value goes to the worker */
    assert_true(WAIT_UNTIL(atomic_load(&released_at) != 0, WAIT_SECONDS));
    assert_true(atomic_load(&released_at) - replaced_at >= 0.001);
    yyc_memcache_free(c);
}

static void sync_release_happens_before_the_call_returns(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    yyc_memcache_set_release_asynchronously(c, false);
    assert_false(yyc_memcache_release_asynchronously(c));
    put(c, &t, "a", 0);
    put(c, &t, "b", 0);
    put(c, &t, "a", 0);
    assert_int_equal(atomic_load(&t.releases), 1); /* the replaced value */
    yyc_memcache_remove(c, "b", 1);
    assert_int_equal(atomic_load(&t.releases), 2);
    yyc_memcache_set_count_limit(c, 1);
    put(c, &t, "c", 0);
    assert_int_equal(atomic_load(&t.releases), 3);
    yyc_memcache_remove_all(c);
    assert_int_equal(atomic_load(&t.releases), 4);
    assert_int_equal(atomic_load(&t.live), 0);
    assert_int_equal(atomic_load(&t.off_caller), 0);
    free_and_check_no_leak(c, &t);
}

static void get_transfers_a_reference_to_the_caller(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    yyc_memcache_set_release_asynchronously(c, false);
    tracked *v = tracked_new(&t, 42);
    yyc_memcache_set(c, "k", 1, v, 0);
    tracked_drop(&t, v);
    void *out = NULL;
    assert_int_equal(yyc_memcache_get(c, "k", 1, &out), YYC_OK);
    yyc_memcache_remove_all(c);
    /* Still alive: the caller owns a reference. */
    assert_int_equal(atomic_load(&t.live), 1);
    assert_int_equal(((tracked *)out)->id, 42);
    tracked_drop(&t, out);
    assert_int_equal(atomic_load(&t.live), 0);
    free_and_check_no_leak(c, &t);
}

static void release_callback_can_reenter_the_cache(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        tracker t;
        yyc_memcache *c = new_tracked_cache(&t);
        yyc_memcache_set_release_asynchronously(c, async);
        t.reenter = c;
        put(c, &t, "k0", 0);
        put(c, &t, "k1", 0);
        put(c, &t, "k1", 0);             /* replace */
        yyc_memcache_remove(c, "k1", 2); /* remove */
        assert_true(WAIT_UNTIL(atomic_load(&t.reentered) == 2, WAIT_SECONDS));
        assert_true(has(c, "from-release"));
        assert_true(has(c, "k0"));
        yyc_memcache_trim_to_count(c, 0); /* the callback runs during a trim too */
        assert_true(WAIT_UNTIL(atomic_load(&t.reentered) == 3, WAIT_SECONDS));
        yyc_memcache_remove_all(c);
        assert_true(WAIT_UNTIL(atomic_load(&t.live) == 0, WAIT_SECONDS));
        free_and_check_no_leak(c, &t);
    }
}

/* A cache freed from a release callback that runs on the worker thread. */
typedef struct owner_of_cache {
    yyc_memcache *inner;
    atomic_int freed;
} owner_of_cache;

static void free_inner_cache(void *ctx, void *value) {
    (void)ctx;
    owner_of_cache *o = value;
    yyc_memcache_free(o->inner);
    atomic_store(&o->freed, 1);
}

static void free_from_a_release_callback_on_the_worker_works(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *inner = new_tracked_cache(&t);
    for (int i = 0; i < 100; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        put(inner, &t, key, 1);
    }
    yyc_memcache_remove(inner, "k1", 2); /* a pending release job for inner */
    owner_of_cache o = {.inner = inner};
    yyc_value_callbacks cb = {NULL, free_inner_cache, NULL};
    yyc_memcache *outer = NULL;
    assert_int_equal(yyc_memcache_new(&cb, &outer), YYC_OK);
    yyc_memcache_set(outer, "o", 1, &o, 0);
    yyc_memcache_remove(outer, "o", 1); /* async: inner is freed on the worker */
    assert_true(WAIT_UNTIL(atomic_load(&o.freed) == 1, WAIT_SECONDS));
    assert_int_equal(atomic_load(&t.live), 0);
    assert_true(atomic_load(&t.off_caller) == 100);
    yyc_memcache_free(outer);
}

/* --- events --- */

typedef struct event_probe {
    atomic_int calls;
    size_t count_seen;
    bool change_flag;
} event_probe;

static void on_event(yyc_memcache *c, void *ctx) {
    event_probe *p = ctx;
    /* Runs with no lock held: calling into the cache is fine. */
    p->count_seen = yyc_memcache_total_count(c);
    yyc_memcache_set(c, "from-handler", 12, NULL, 0);
    if (p->change_flag) yyc_memcache_set_remove_all_on_memory_warning(c, false);
    atomic_fetch_add(&p->calls, 1);
}

static void memory_warning_calls_handler_then_removes_all(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    event_probe p = {0};
    yyc_memcache_set_memory_warning_handler(c, on_event, &p);
    put(c, &t, "a", 0);
    put(c, &t, "b", 0);
    yyc_memcache_handle_memory_warning(c);
    assert_int_equal(atomic_load(&p.calls), 1);
    assert_int_equal(p.count_seen, 2); /* the handler ran before the remove-all */
    assert_int_equal(yyc_memcache_total_count(c), 0);
    /* Flag off: handler only. */
    yyc_memcache_set_remove_all_on_memory_warning(c, false);
    assert_false(yyc_memcache_remove_all_on_memory_warning(c));
    put(c, &t, "a", 0);
    yyc_memcache_handle_memory_warning(c);
    assert_int_equal(atomic_load(&p.calls), 2);
    assert_int_equal(yyc_memcache_total_count(c), 2);
    /* No handler: remove-all only. */
    yyc_memcache_set_memory_warning_handler(c, NULL, NULL);
    yyc_memcache_set_remove_all_on_memory_warning(c, true);
    yyc_memcache_handle_memory_warning(c);
    assert_int_equal(atomic_load(&p.calls), 2);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    free_and_check_no_leak(c, &t);
}

static void enter_background_calls_handler_then_removes_all(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_tracked_cache(&t);
    event_probe p = {0};
    yyc_memcache_set_enter_background_handler(c, on_event, &p);
    put(c, &t, "a", 0);
    yyc_memcache_handle_enter_background(c);
    assert_int_equal(atomic_load(&p.calls), 1);
    assert_int_equal(p.count_seen, 1);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    yyc_memcache_set_remove_all_on_enter_background(c, false);
    assert_false(yyc_memcache_remove_all_on_enter_background(c));
    put(c, &t, "a", 0);
    yyc_memcache_handle_enter_background(c);
    assert_int_equal(atomic_load(&p.calls), 2);
    assert_int_equal(yyc_memcache_total_count(c), 2);
    /* The memory-warning handler is a separate slot. */
    yyc_memcache_handle_memory_warning(c);
    assert_int_equal(atomic_load(&p.calls), 2);
    free_and_check_no_leak(c, &t);
}

/* --- bad input --- */

static void empty_key_is_a_valid_key(void **state) {
    (void)state;
    yyc_memcache *c = new_plain_cache();
    int v = 7;
    assert_int_equal(yyc_memcache_set(c, "", 0, &v, 1), YYC_OK);
    void *out = NULL;
    assert_int_equal(yyc_memcache_get(c, NULL, 0, &out), YYC_OK); /* NULL with length 0 too */
    assert_ptr_equal(out, &v);
    assert_true(yyc_memcache_contains(c, "x", 0));
    assert_false(yyc_memcache_contains(c, "x", 1));
    assert_int_equal(yyc_memcache_remove(c, NULL, 0), YYC_OK);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    yyc_memcache_free(c);
}

static void key_of_one_mebibyte_works(void **state) {
    (void)state;
    size_t len = 1u << 20;
    char *key = malloc(len);
    assert_non_null(key);
    memset(key, 'k', len);
    yyc_memcache *c = new_plain_cache();
    int v = 1;
    assert_int_equal(yyc_memcache_set(c, key, len, &v, 0), YYC_OK);
    void *out = NULL;
    assert_int_equal(yyc_memcache_get(c, key, len, &out), YYC_OK);
    assert_ptr_equal(out, &v);
    assert_false(yyc_memcache_contains(c, key, len - 1));
    key[len / 2] = 'x';
    assert_false(yyc_memcache_contains(c, key, len));
    key[len / 2] = 'k';
    assert_int_equal(yyc_memcache_remove(c, key, len), YYC_OK);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    free(key);
    yyc_memcache_free(c);
}

static void key_with_nul_bytes_is_distinct_from_its_prefix(void **state) {
    (void)state;
    yyc_memcache *c = new_plain_cache();
    int a = 1, b = 2, d = 3;
    static const char k[] = {'a', '\0', 'b'};
    assert_int_equal(yyc_memcache_set(c, "a", 1, &a, 0), YYC_OK);
    assert_int_equal(yyc_memcache_set(c, k, 3, &b, 0), YYC_OK);
    assert_int_equal(yyc_memcache_set(c, k, 2, &d, 0), YYC_OK);
    void *out;
    assert_int_equal(yyc_memcache_get(c, "a", 1, &out), YYC_OK);
    assert_ptr_equal(out, &a);
    assert_int_equal(yyc_memcache_get(c, k, 3, &out), YYC_OK);
    assert_ptr_equal(out, &b);
    assert_int_equal(yyc_memcache_get(c, k, 2, &out), YYC_OK);
    assert_ptr_equal(out, &d);
    assert_int_equal(yyc_memcache_total_count(c), 3);
    yyc_memcache_free(c);
}

static void key_longer_than_4_gib_is_refused_without_reading_it(void **state) {
    (void)state;
    yyc_memcache *c = new_plain_cache();
    /* Node key lengths are 32-bit. The length is checked before the bytes are read, so a short
     * buffer is safe here. */
    size_t huge = (size_t)UINT32_MAX + 1;
    int v = 1;
    assert_int_equal(yyc_memcache_set(c, "x", huge, &v, 0), YYC_ETOOBIG);
    assert_false(yyc_memcache_contains(c, "x", huge));
    void *out = &out;
    assert_int_equal(yyc_memcache_get(c, "x", huge, &out), YYC_NOTFOUND);
    assert_null(out);
    assert_int_equal(yyc_memcache_remove(c, "x", huge), YYC_OK);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
}

static void null_key_with_length_is_rejected(void **state) {
    (void)state;
    yyc_memcache *c = new_plain_cache();
    void *out = &out;
    assert_int_equal(yyc_memcache_set(c, NULL, 3, &out, 0), YYC_EINVAL);
    assert_int_equal(yyc_memcache_get(c, NULL, 3, &out), YYC_EINVAL);
    assert_null(out);
    assert_int_equal(yyc_memcache_get(c, "a", 1, NULL), YYC_EINVAL);
    assert_false(yyc_memcache_contains(c, NULL, 3));
    assert_int_equal(yyc_memcache_remove(c, NULL, 3), YYC_EINVAL);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    yyc_memcache_free(c);
}

static void null_handle_is_rejected_everywhere(void **state) {
    (void)state;
    void *out = &out;
    assert_int_equal(yyc_memcache_set(NULL, "a", 1, NULL, 0), YYC_EINVAL);
    assert_int_equal(yyc_memcache_get(NULL, "a", 1, &out), YYC_EINVAL);
    assert_null(out);
    assert_false(yyc_memcache_contains(NULL, "a", 1));
    assert_int_equal(yyc_memcache_remove(NULL, "a", 1), YYC_EINVAL);
    yyc_memcache_remove_all(NULL);
    assert_int_equal(yyc_memcache_total_count(NULL), 0);
    assert_int_equal(yyc_memcache_total_cost(NULL), 0);
    yyc_memcache_set_count_limit(NULL, 1);
    assert_int_equal(yyc_memcache_count_limit(NULL), SIZE_MAX);
    yyc_memcache_set_cost_limit(NULL, 1);
    assert_int_equal(yyc_memcache_cost_limit(NULL), SIZE_MAX);
    yyc_memcache_set_age_limit(NULL, 1);
    assert_true(yyc_memcache_age_limit(NULL) == DBL_MAX);
    yyc_memcache_set_auto_trim_interval(NULL, 1);
    assert_true(yyc_memcache_auto_trim_interval(NULL) == 5.0);
    yyc_memcache_set_release_asynchronously(NULL, false);
    assert_true(yyc_memcache_release_asynchronously(NULL));
    yyc_memcache_trim_to_count(NULL, 0);
    yyc_memcache_trim_to_cost(NULL, 0);
    yyc_memcache_trim_to_age(NULL, 0);
    yyc_memcache_set_memory_warning_handler(NULL, on_event, NULL);
    yyc_memcache_set_enter_background_handler(NULL, on_event, NULL);
    yyc_memcache_set_remove_all_on_memory_warning(NULL, false);
    assert_true(yyc_memcache_remove_all_on_memory_warning(NULL));
    yyc_memcache_set_remove_all_on_enter_background(NULL, false);
    assert_true(yyc_memcache_remove_all_on_enter_background(NULL));
    yyc_memcache_handle_memory_warning(NULL);
    yyc_memcache_handle_enter_background(NULL);
    yyc_memcache_free(NULL);
}

static void cost_near_size_max_saturates_total(void **state) {
    (void)state;
    yyc_memcache *c = new_plain_cache();
    assert_int_equal(yyc_memcache_set(c, "a", 1, NULL, SIZE_MAX - 1), YYC_OK);
    assert_int_equal(yyc_memcache_total_cost(c), SIZE_MAX - 1);
    assert_int_equal(yyc_memcache_set(c, "b", 1, NULL, 10), YYC_OK);
    assert_int_equal(yyc_memcache_total_cost(c), SIZE_MAX); /* saturated, not 8 */
    assert_int_equal(yyc_memcache_set(c, "c", 1, NULL, SIZE_MAX), YYC_OK);
    assert_int_equal(yyc_memcache_total_cost(c), SIZE_MAX);
    assert_true(yyc__memcache_check(c));
    /* Removing brings back the exact sum. */
    yyc_memcache_remove(c, "c", 1);
    yyc_memcache_remove(c, "a", 1);
    assert_int_equal(yyc_memcache_total_cost(c), 10);
    /* A cost trim against a saturated total evicts until under the target. */
    yyc_memcache_set(c, "d", 1, NULL, SIZE_MAX);
    yyc_memcache_set(c, "e", 1, NULL, SIZE_MAX);
    assert_int_equal(yyc_memcache_total_cost(c), SIZE_MAX);
    void *out;
    assert_int_equal(yyc_memcache_get(c, "b", 1, &out), YYC_OK); /* order: b, e, d */
    yyc_memcache_trim_to_cost(c, SIZE_MAX - 1); /* d and e (2 * SIZE_MAX) go, b stays */
    assert_int_equal(yyc_memcache_total_cost(c), 10);
    assert_int_equal(yyc_memcache_total_count(c), 1);
    assert_true(yyc_memcache_contains(c, "b", 1));
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
}

/* Run under every eviction policy (policy_support.h). */
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(new_cache_has_yymemorycache_defaults),
    cmocka_unit_test(set_then_get_returns_value),
    cmocka_unit_test(set_on_existing_key_replaces_value_and_cost),
    cmocka_unit_test(remove_deletes_entry_and_absent_key_is_ok),
    cmocka_unit_test(null_value_is_stored_as_null),
    cmocka_unit_test(trims_evict_from_the_tail),
    cmocka_unit_test(count_limit_evicts_one_tail_entry_on_set),
    cmocka_unit_test(cost_limit_trims_in_background_to_limit),
    cmocka_unit_test(set_at_the_count_limit_queues_the_cost_trim_the_evicted_entry_made_due),
    cmocka_unit_test(trim_to_cost_brings_total_under_target),
    cmocka_unit_test(age_trim_uses_monotonic_clock),
    cmocka_unit_test(zero_limits_remove_all),
    cmocka_unit_test(size_max_limits_mean_no_limit),
    cmocka_unit_test(auto_trim_applies_cost_count_and_age_limits),
    cmocka_unit_test(auto_trim_interval_zero_or_negative_pauses_without_spinning),
    cmocka_unit_test(every_value_released_once_after_remove_all),
    cmocka_unit_test(every_value_released_once_after_trims),
    cmocka_unit_test(free_releases_every_value_before_returning),
    cmocka_unit_test(async_release_runs_off_the_calling_thread),
    cmocka_unit_test(async_releases_wait_a_moment_to_gather_a_batch),
    cmocka_unit_test(sync_release_happens_before_the_call_returns),
    cmocka_unit_test(get_transfers_a_reference_to_the_caller),
    cmocka_unit_test(release_callback_can_reenter_the_cache),
    cmocka_unit_test(free_from_a_release_callback_on_the_worker_works),
    cmocka_unit_test(memory_warning_calls_handler_then_removes_all),
    cmocka_unit_test(enter_background_calls_handler_then_removes_all),
    cmocka_unit_test(empty_key_is_a_valid_key),
    cmocka_unit_test(key_of_one_mebibyte_works),
    cmocka_unit_test(key_with_nul_bytes_is_distinct_from_its_prefix),
    cmocka_unit_test(key_longer_than_4_gib_is_refused_without_reading_it),
    cmocka_unit_test(null_key_with_length_is_rejected),
    cmocka_unit_test(null_handle_is_rejected_everywhere),
};

/* About LRU order: run with LRU only (the other policies' order: test_policies.c). */
static const struct CMUnitTest lru_tests[] = {
    cmocka_unit_test(get_moves_entry_to_head),
    cmocka_unit_test(set_on_existing_key_moves_entry_to_head),
    cmocka_unit_test(contains_does_not_change_lru_order),
    cmocka_unit_test(cost_near_size_max_saturates_total),
};

YYC_POLICY_TEST_MAIN(tests, lru_tests)
