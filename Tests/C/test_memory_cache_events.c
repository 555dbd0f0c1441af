/*
 * test_memory_cache_events.c - the memory cache's removal listener (memory_cache.h "Removal
 * events"): every cause, reported once per entry, after the entry left, with no lock held, on
 * the release policy's thread; a listener that calls back into the cache; an 8-thread stress
 * checked against a model count. Every case runs under each eviction policy.
 */
#include "policy_support.h"

#include "platform/internal.h" /* yyc__worker_wait_idle, yyc__worker_is_current (test builds) */

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

bool yyc__memcache_check(yyc_memcache *c);
void yyc__memcache_testing_advance_clock(double seconds);
unsigned yyc__memcache_auto_trim_fires(yyc_memcache *c);
void yyc__lru_testing_fail_allocs(int n);

#define WAIT_SECONDS 10.0
#define MAX_EVENTS 4096

/* --- a listener that records what it is told --- */

typedef struct event {
    char key[32];
    size_t key_len;
    intptr_t value;
    yyc_removal_cause cause;
    bool on_caller;     /* ran on the thread that made the recorder */
    bool on_worker;     /* ran on the library's worker thread */
    bool still_present; /* the key was found again from inside the listener */
} event;

typedef struct recorder {
    pthread_mutex_t lock;
    event events[MAX_EVENTS];
    int count;
    pthread_t caller;
    yyc_memcache *cache; /* when set, the listener looks the key up (re-entering the cache) */
    atomic_long released;
} recorder;

static void record(void *ctx, const void *key, size_t key_len, void *value,
                   yyc_removal_cause cause) {
    recorder *r = ctx;
    bool present = false;
    if (r->cache) present = yyc_memcache_contains(r->cache, key, key_len);
    pthread_mutex_lock(&r->lock);
    assert_true(r->count < MAX_EVENTS);
    event *e = &r->events[r->count++];
    e->key_len = key_len < sizeof e->key ? key_len : sizeof e->key - 1;
    memcpy(e->key, key, e->key_len);
    e->key[e->key_len] = 0;
    e->value = (intptr_t)value;
    e->cause = cause;
    e->on_caller = pthread_equal(pthread_self(), r->caller);
    e->on_worker = yyc__worker_is_current();
    e->still_present = present;
    pthread_mutex_unlock(&r->lock);
}

static void count_release(void *ctx, void *value) {
    (void)value;
    atomic_fetch_add(&((recorder *)ctx)->released, 1);
}

static void recorder_init(recorder *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    r->caller = pthread_self();
}

/* A pointer cache whose "values" are small integers (not owned, releases counted), with the
 * recorder as listener, synchronous release unless async, no auto-trim. */
static yyc_memcache *recorded_cache(recorder *r, bool async) {
    yyc_value_callbacks cb = {NULL, count_release, r};
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(&cb, &c), YYC_OK);
    yyc_memcache_set_release_asynchronously(c, async);
    yyc_memcache_set_auto_trim_interval(c, 0);
    yyc_memcache_set_removal_listener(c, record, r);
    return c;
}

static void put(yyc_memcache *c, const char *key, intptr_t value) {
    assert_int_equal(yyc_memcache_set(c, key, strlen(key), (void *)value, 1), YYC_OK);
}

static int events_with(recorder *r, yyc_removal_cause cause) {
    int n = 0;
    for (int i = 0; i < r->count; i++) n += r->events[i].cause == cause;
    return n;
}

static const event *event_for(recorder *r, const char *key) {
    for (int i = 0; i < r->count; i++)
        if (strcmp(r->events[i].key, key) == 0) return &r->events[i];
    return NULL;
}

/* --- one case per cause --- */

static void explicit_remove_is_reported_once_after_the_entry_left(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, false);
    r.cache = c;
    put(c, "a", 1);
    put(c, "b", 2);
    assert_int_equal(yyc_memcache_remove(c, "a", 1), YYC_OK);
    assert_int_equal(yyc_memcache_remove(c, "a", 1), YYC_OK); /* absent: nothing more */
    assert_int_equal(r.count, 1);
    assert_string_equal(r.events[0].key, "a");
    assert_int_equal(r.events[0].value, 1);
    assert_int_equal(r.events[0].cause, YYC_REMOVED_EXPLICIT);
    assert_false(r.events[0].still_present); /* it had left when the listener ran */
    assert_true(r.events[0].on_caller);      /* synchronous release: the caller's thread */
    assert_int_equal(atomic_load(&r.released), 1);
    yyc_memcache_free(c);
    assert_int_equal(r.count, 1); /* free reports nothing */
}

static void remove_all_reports_one_explicit_event_per_entry(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, false);
    char key[16];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put(c, key, i + 1);
    }
    yyc_memcache_remove_all(c);
    assert_int_equal(r.count, 100);
    assert_int_equal(events_with(&r, YYC_REMOVED_EXPLICIT), 100);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k%d", i);
        const event *e = event_for(&r, key);
        assert_non_null(e);
        assert_int_equal(e->value, i + 1);
    }
    yyc_memcache_free(c);
}

static void replaced_value_is_reported_with_its_key(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, false);
    r.cache = c;
    put(c, "a", 1);
    put(c, "a", 2);
    assert_int_equal(yyc_memcache_set(c, "a", 1, NULL, 0), YYC_OK); /* NULL stored */
    put(c, "a", 3); /* the NULL value is replaced too */
    assert_int_equal(r.count, 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(r.events[i].key, "a");
        assert_int_equal(r.events[i].cause, YYC_REMOVED_REPLACED);
        assert_true(r.events[i].still_present); /* the key holds its new value */
    }
    assert_int_equal(r.events[0].value, 1);
    assert_int_equal(r.events[1].value, 2);
    assert_int_equal(r.events[2].value, 0);
    void *v = NULL;
    assert_int_equal(yyc_memcache_get(c, "a", 1, &v), YYC_OK);
    assert_int_equal((intptr_t)v, 3);
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
}

static void replacement_out_of_memory_changes_nothing_and_reports_nothing(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, false);
    put(c, "a", 1);
    yyc__lru_testing_fail_allocs(1); /* the node copy that would carry the old value */
    assert_int_equal(yyc_memcache_set(c, "a", 1, (void *)2, 0), YYC_ENOMEM);
    yyc__lru_testing_fail_allocs(0);
    assert_int_equal(r.count, 0);
    void *v = NULL;
    assert_int_equal(yyc_memcache_get(c, "a", 1, &v), YYC_OK);
    assert_int_equal((intptr_t)v, 1);
    yyc_memcache_free(c);
}

static void expired_entries_are_reported_by_reads_and_trims(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, false);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "read", 4, (void *)1, 0, 1.0), YYC_OK);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "trim", 4, (void *)2, 0, 1.0), YYC_OK);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "zero", 4, (void *)3, 0, 1.0), YYC_OK);
    put(c, "stays", 4);
    yyc__memcache_testing_advance_clock(2.0);
    void *v;
    assert_int_equal(yyc_memcache_get(c, "read", 4, &v), YYC_NOTFOUND);
    assert_int_equal(r.count, 1);
    assert_string_equal(r.events[0].key, "read");
    yyc_memcache_trim_to_count(c, 100); /* within its limit: still removes the expired ones */
    assert_int_equal(r.count, 3);
    assert_int_equal(events_with(&r, YYC_REMOVED_EXPIRED), 3);
    assert_null(event_for(&r, "stays"));
    assert_int_equal(yyc_memcache_total_count(c), 1);
    yyc_memcache_free(c);
}

static void trim_to_zero_reports_expired_entries_as_expired(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, false);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "old", 3, (void *)1, 0, 1.0), YYC_OK);
    put(c, "live", 2);
    yyc__memcache_testing_advance_clock(2.0);
    yyc_memcache_trim_to_count(c, 0);
    assert_int_equal(r.count, 2);
    assert_int_equal(event_for(&r, "old")->cause, YYC_REMOVED_EXPIRED);
    assert_int_equal(event_for(&r, "live")->cause, YYC_REMOVED_EVICTED);
    yyc_memcache_free(c);
}

static void age_trims_report_expired(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, false);
    put(c, "a", 1);
    put(c, "b", 2);
    usleep(50 * 1000); /* both older than 10 ms (the age clock is not the test clock) */
    put(c, "new", 3);
    yyc_memcache_trim_to_age(c, 0.01);
    assert_int_equal(r.count, 2);
    assert_int_equal(events_with(&r, YYC_REMOVED_EXPIRED), 2);
    assert_null(event_for(&r, "new"));
    yyc_memcache_trim_to_age(c, 0); /* everything */
    assert_int_equal(r.count, 3);
    assert_int_equal(event_for(&r, "new")->cause, YYC_REMOVED_EXPIRED);
    yyc_memcache_free(c);
}

static void count_limit_and_count_and_cost_trims_report_evicted(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, false);
    yyc_memcache_set_count_limit(c, 3);
    char key[16];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put(c, key, i + 1); /* cost 1 each */
    }
    assert_int_equal(r.count, 7);
    assert_int_equal(events_with(&r, YYC_REMOVED_EVICTED), 7);
    yyc_memcache_trim_to_count(c, 2);
    assert_int_equal(r.count, 8);
    yyc_memcache_trim_to_cost(c, 1);
    assert_int_equal(r.count, 9);
    yyc_memcache_trim_to_cost(c, 0);
    assert_int_equal(r.count, 10);
    assert_int_equal(events_with(&r, YYC_REMOVED_EVICTED), 10);
    for (int i = 0; i < 10; i++) { /* each value exactly once */
        int seen = 0;
        for (int j = 0; j < r.count; j++) seen += r.events[j].value == i + 1;
        assert_int_equal(seen, 1);
    }
    yyc_memcache_free(c);
}

static void background_cost_trim_reports_evicted_on_the_worker(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, false);
    yyc_memcache_set_cost_limit(c, 2);
    put(c, "a", 1);
    put(c, "b", 2);
    put(c, "c", 3); /* over the cost limit: a background trim */
    yyc__worker_wait_idle(YYC__QUEUE_MEMORY);
    pthread_mutex_lock(&r.lock);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.events[0].cause, YYC_REMOVED_EVICTED);
    assert_true(r.events[0].on_worker);
    pthread_mutex_unlock(&r.lock);
    yyc_memcache_free(c);
}

static int locked_count(recorder *r) {
    pthread_mutex_lock(&r->lock);
    int n = r->count;
    pthread_mutex_unlock(&r->lock);
    return n;
}

static void auto_trim_reports_evicted_and_expired(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, false);
    put(c, "a", 1);
    put(c, "b", 2);
    assert_int_equal(yyc_memcache_set_with_ttl(c, "ttl", 3, (void *)3, 0, 1.0), YYC_OK);
    yyc__memcache_testing_advance_clock(2.0);
    yyc_memcache_set_count_limit(c, 1); /* no eviction until a trim: the set already happened */
    yyc_memcache_set_auto_trim_interval(c, 0.01);
    assert_true(WAIT_UNTIL(locked_count(&r) == 2, WAIT_SECONDS));
    yyc_memcache_set_auto_trim_interval(c, 0);
    yyc__worker_wait_idle(YYC__QUEUE_MEMORY);
    pthread_mutex_lock(&r.lock);
    assert_int_equal(r.count, 2);
    assert_int_equal(event_for(&r, "ttl")->cause, YYC_REMOVED_EXPIRED);
    assert_int_equal(events_with(&r, YYC_REMOVED_EVICTED), 1);
    for (int i = 0; i < r.count; i++) assert_true(r.events[i].on_worker);
    pthread_mutex_unlock(&r.lock);
    yyc_memcache_free(c);
}

static void memory_warning_and_background_report_memory_pressure(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, false);
    put(c, "a", 1);
    put(c, "b", 2);
    yyc_memcache_handle_memory_warning(c);
    assert_int_equal(r.count, 2);
    put(c, "c", 3);
    yyc_memcache_handle_enter_background(c);
    assert_int_equal(r.count, 3);
    assert_int_equal(events_with(&r, YYC_REMOVED_MEMORY_PRESSURE), 3);
    yyc_memcache_free(c);
}

static void asynchronous_release_reports_on_the_worker(void **state) {
    (void)state;
    recorder r;
    recorder_init(&r);
    yyc_memcache *c = recorded_cache(&r, true);
    put(c, "a", 1);
    put(c, "a", 2);
    yyc_memcache_remove(c, "a", 1);
    put(c, "b", 3);
    yyc_memcache_remove_all(c);
    yyc__worker_wait_idle(YYC__QUEUE_MEMORY);
    pthread_mutex_lock(&r.lock);
    assert_int_equal(r.count, 3);
    assert_int_equal(event_for(&r, "a")->cause, YYC_REMOVED_REPLACED);
    assert_int_equal(events_with(&r, YYC_REMOVED_EXPLICIT), 2);
    for (int i = 0; i < r.count; i++) assert_true(r.events[i].on_worker);
    pthread_mutex_unlock(&r.lock);
    assert_int_equal(atomic_load(&r.released), 3);
    yyc_memcache_free(c);
}

/* A listener that writes into the cache it listens to. */
static void refill(void *ctx, const void *key, size_t key_len, void *value,
                   yyc_removal_cause cause) {
    (void)value;
    yyc_memcache *c = ctx;
    if (cause == YYC_REMOVED_EXPLICIT && key_len == 1)
        assert_int_equal(yyc_memcache_set(c, "refilled", 8, (void *)9, 0), YYC_OK);
    (void)key;
}

static void listener_may_write_into_the_cache(void **state) {
    (void)state;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    yyc_memcache_set_release_asynchronously(c, false);
    yyc_memcache_set_removal_listener(c, refill, c);
    assert_int_equal(yyc_memcache_set(c, "a", 1, (void *)1, 0), YYC_OK);
    assert_int_equal(yyc_memcache_remove(c, "a", 1), YYC_OK);
    assert_true(yyc_memcache_contains(c, "refilled", 8));
    yyc_memcache_free(c);
}

/* Inline values: the listener gets the address of the bytes. */
static atomic_int inline_sum;
static void inline_listener(void *ctx, const void *key, size_t key_len, void *value,
                            yyc_removal_cause cause) {
    (void)ctx, (void)key, (void)key_len, (void)cause;
    int v;
    memcpy(&v, value, sizeof v);
    atomic_fetch_add(&inline_sum, v);
}

static void inline_cache_reports_the_value_bytes(void **state) {
    (void)state;
    yyc_inline_value_type type = {.size = sizeof(int)};
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_OK);
    yyc_memcache_set_release_asynchronously(c, false);
    yyc_memcache_set_removal_listener(c, inline_listener, NULL);
    atomic_store(&inline_sum, 0);
    int v = 5;
    assert_int_equal(yyc_memcache_set_inline(c, "a", 1, &v, 0), YYC_OK);
    v = 7;
    assert_int_equal(yyc_memcache_set_inline(c, "a", 1, &v, 0), YYC_OK); /* 5 replaced */
    assert_int_equal(atomic_load(&inline_sum), 5);
    yyc_memcache_remove_all(c);
    assert_int_equal(atomic_load(&inline_sum), 12);
    yyc_memcache_free(c);
}

/* --- exactly once under concurrency --- */

#define STRESS_THREADS 8
#define STRESS_OPS 20000
#define STRESS_KEYS 64
#define STRESS_VALUES (STRESS_THREADS * STRESS_OPS + 1)

typedef struct stress {
    yyc_memcache *cache;
    atomic_uchar *reported; /* per value id: how many events named it */
    atomic_uchar *released; /* per value id: how many releases */
    atomic_long stored;     /* values stored (successful sets) */
    atomic_long events;
    int seed;
} stress;

static void stress_listener(void *ctx, const void *key, size_t key_len, void *value,
                            yyc_removal_cause cause) {
    (void)key, (void)key_len, (void)cause;
    stress *s = ctx;
    atomic_fetch_add(&s->reported[(intptr_t)value], 1);
    atomic_fetch_add(&s->events, 1);
}

static void stress_release(void *ctx, void *value) {
    stress *s = ctx;
    atomic_fetch_add(&s->released[(intptr_t)value], 1);
}

typedef struct stress_thread {
    stress *s;
    int index;
} stress_thread;

static void *stress_body(void *arg) {
    stress_thread *t = arg;
    stress *s = t->s;
    unsigned seed = (unsigned)(s->seed + t->index);
    char key[16];
    for (int i = 0; i < STRESS_OPS; i++) {
        int op = rand_r(&seed) % 100;
        snprintf(key, sizeof key, "k%d", rand_r(&seed) % STRESS_KEYS);
        size_t len = strlen(key);
        intptr_t id = 1 + (intptr_t)t->index * STRESS_OPS + i;
        if (op < 50) {
            int rc = op < 10 ? yyc_memcache_set_with_ttl(s->cache, key, len, (void *)id, 1, 0.0)
                             : yyc_memcache_set(s->cache, key, len, (void *)id, 1);
            if (rc == YYC_OK) atomic_fetch_add(&s->stored, 1);
        } else if (op < 75) {
            void *v;
            yyc_memcache_get(s->cache, key, len, &v);
        } else if (op < 90) {
            yyc_memcache_remove(s->cache, key, len);
        } else if (op < 95) {
            yyc_memcache_trim_to_count(s->cache, (size_t)(rand_r(&seed) % 32));
        } else if (op < 99) {
            yyc_memcache_trim_to_cost(s->cache, (size_t)(rand_r(&seed) % 32));
        } else {
            yyc_memcache_handle_memory_warning(s->cache);
        }
    }
    return NULL;
}

static void every_entry_is_reported_exactly_once_under_eight_threads(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        stress s = {.seed = 1234 + async};
        s.reported = calloc(STRESS_VALUES, 1);
        s.released = calloc(STRESS_VALUES, 1);
        assert_non_null(s.reported);
        assert_non_null(s.released);
        yyc_value_callbacks cb = {NULL, stress_release, &s};
        assert_int_equal(yyc_memcache_new(&cb, &s.cache), YYC_OK);
        yyc_memcache_set_release_asynchronously(s.cache, async);
        yyc_memcache_set_count_limit(s.cache, 40);
        yyc_memcache_set_cost_limit(s.cache, 30);
        yyc_memcache_set_auto_trim_interval(s.cache, 0.005);
        yyc_memcache_set_removal_listener(s.cache, stress_listener, &s);
        pthread_t threads[STRESS_THREADS];
        stress_thread args[STRESS_THREADS];
        for (int i = 0; i < STRESS_THREADS; i++) {
            args[i] = (stress_thread){&s, i};
            assert_int_equal(pthread_create(&threads[i], NULL, stress_body, &args[i]), 0);
        }
        for (int i = 0; i < STRESS_THREADS; i++) pthread_join(threads[i], NULL);
        yyc_memcache_set_auto_trim_interval(s.cache, 0);
        yyc__worker_wait_idle(YYC__QUEUE_MEMORY);
        /* The model: every stored value is reported once it has left, and only then. */
        long remaining = (long)yyc_memcache_total_count(s.cache);
        assert_int_equal(atomic_load(&s.events) + remaining, atomic_load(&s.stored));
        yyc_memcache_remove_all(s.cache);
        yyc__worker_wait_idle(YYC__QUEUE_MEMORY);
        assert_int_equal(atomic_load(&s.events), atomic_load(&s.stored));
        for (long id = 1; id < STRESS_VALUES; id++) {
            assert_true(atomic_load(&s.reported[id]) <= 1);
            assert_int_equal(atomic_load(&s.reported[id]), atomic_load(&s.released[id]));
        }
        yyc_cache_statistics st;
        assert_int_equal(yyc_memcache_statistics(s.cache, &st), YYC_OK);
        uint64_t removals = 0;
        for (int k = 0; k < YYC_REMOVAL_CAUSE_COUNT; k++) removals += st.removals[k];
        assert_int_equal(removals, (uint64_t)atomic_load(&s.events));
        assert_int_equal(st.insertions, (uint64_t)atomic_load(&s.stored));
        assert_true(yyc__memcache_check(s.cache));
        yyc_memcache_free(s.cache);
        free(s.reported);
        free(s.released);
    }
}

static const struct CMUnitTest every_policy[] = {
    cmocka_unit_test(explicit_remove_is_reported_once_after_the_entry_left),
    cmocka_unit_test(remove_all_reports_one_explicit_event_per_entry),
    cmocka_unit_test(replaced_value_is_reported_with_its_key),
    cmocka_unit_test(replacement_out_of_memory_changes_nothing_and_reports_nothing),
    cmocka_unit_test(expired_entries_are_reported_by_reads_and_trims),
    cmocka_unit_test(trim_to_zero_reports_expired_entries_as_expired),
    cmocka_unit_test(age_trims_report_expired),
    cmocka_unit_test(count_limit_and_count_and_cost_trims_report_evicted),
    cmocka_unit_test(background_cost_trim_reports_evicted_on_the_worker),
    cmocka_unit_test(auto_trim_reports_evicted_and_expired),
    cmocka_unit_test(memory_warning_and_background_report_memory_pressure),
    cmocka_unit_test(asynchronous_release_reports_on_the_worker),
    cmocka_unit_test(listener_may_write_into_the_cache),
    cmocka_unit_test(inline_cache_reports_the_value_bytes),
    cmocka_unit_test(every_entry_is_reported_exactly_once_under_eight_threads),
};

YYC_EVERY_POLICY_TEST_MAIN(every_policy)
