/*
 * test_disk_cache_events.c - removal events and statistics of yyc_diskcache (disk_cache.h
 * "Removal events", "Statistics"): every cause with its key, exactly once, outside the lock
 * (the listener calls back), shared by every holder of the core, and an 8-thread stress whose
 * event count must match the model (every stored row leaves once). Every test works in its own
 * temporary folder.
 */
#include "test_kv_support.h"

#include "kv/kv_private.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

/* --- a listener that records what it is told --- */

#define LOG_MAX 4096

typedef struct event_log {
    pthread_mutex_t lock;
    int n;
    char keys[LOG_MAX][16];
    yyc_removal_cause causes[LOG_MAX];
    atomic_long total;
    atomic_long by_cause[YYC_REMOVAL_CAUSE_COUNT];
    yyc_diskcache *reenter; /* set: the listener reads the removed key back */
    atomic_long reentered_absent;
} event_log;

static void record_removal(void *ctx, const char *key, yyc_removal_cause cause) {
    event_log *log = ctx;
    atomic_fetch_add(&log->total, 1);
    atomic_fetch_add(&log->by_cause[cause], 1);
    pthread_mutex_lock(&log->lock);
    if (log->n < LOG_MAX) {
        snprintf(log->keys[log->n], sizeof log->keys[0], "%s", key);
        log->causes[log->n] = cause;
        log->n++;
    }
    pthread_mutex_unlock(&log->lock);
    /* Called under the core's lock this would fail the error-checking mutex (or deadlock). */
    if (log->reenter && cause != YYC_REMOVED_REPLACED && !yyc_diskcache_contains(log->reenter, key))
        atomic_fetch_add(&log->reentered_absent, 1);
}

static void log_init(event_log *log) {
    memset(log, 0, sizeof *log);
    pthread_mutex_init(&log->lock, NULL);
}

/* How many events key got with cause. */
static int events_of(event_log *log, const char *key, yyc_removal_cause cause) {
    int n = 0;
    for (int i = 0; i < log->n; i++)
        if (log->causes[i] == cause && !strcmp(log->keys[i], key)) n++;
    return n;
}

static yyc_diskcache *open_dc(const char *dir) {
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 20, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    return dc;
}

static yyc_cache_statistics stats_of(yyc_diskcache *dc) {
    yyc_cache_statistics s;
    assert_int_equal(yyc_diskcache_statistics(dc, &s), YYC_OK);
    return s;
}

/* --- cases --- */

static void disk_every_removal_cause_is_reported_once_with_its_key(void **state) {
    (void)state;
    char *dir = test_temp_dir("devents");
    yyc_diskcache *dc = open_dc(dir);
    event_log log;
    log_init(&log);
    log.reenter = dc;
    yyc_diskcache_set_removal_listener(dc, record_removal, &log);

    tk_set_str(dc, "r", "first");
    tk_set_str(dc, "r", "a value above the inline threshold"); /* replaced */
    tk_set_str(dc, "r", "third");                              /* replaced again */
    assert_int_equal(events_of(&log, "r", YYC_REMOVED_REPLACED), 2);

    tk_set_str(dc, "x", "v");
    assert_int_equal(yyc_diskcache_remove(dc, "x"), YYC_OK);
    assert_int_equal(yyc_diskcache_remove(dc, "x"), YYC_OK); /* absent: nothing */
    assert_int_equal(events_of(&log, "x", YYC_REMOVED_EXPLICIT), 1);

    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "t", "v", 1, NULL, 0, 0), YYC_OK);
    assert_false(yyc_diskcache_contains(dc, "t")); /* the read removes it */
    assert_false(yyc_diskcache_contains(dc, "t"));
    assert_int_equal(events_of(&log, "t", YYC_REMOVED_EXPIRED), 1);
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "t2", "v", 1, NULL, 0, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, INT64_MAX), YYC_OK);
    assert_int_equal(events_of(&log, "t2", YYC_REMOVED_EXPIRED), 1);

    tk_set_str(dc, "e1", "v");
    tk_set_str(dc, "e2", "v");
    /* Oldest access first: r (written first); ties by rowid. */
    assert_int_equal(yyc_diskcache_trim_to_count(dc, 2), YYC_OK);
    assert_int_equal(events_of(&log, "r", YYC_REMOVED_EVICTED), 1);
    assert_int_equal(yyc_diskcache_trim_to_cost(dc, 1), YYC_OK);
    assert_int_equal(events_of(&log, "e1", YYC_REMOVED_EVICTED), 1);

    assert_int_equal(yyc_diskcache_trim_to_age(dc, 0), YYC_OK); /* everything, as expired */
    assert_int_equal(events_of(&log, "e2", YYC_REMOVED_EXPIRED), 1);

    for (int i = 0; i < 40; i++) {
        char key[16];
        snprintf(key, sizeof key, "all%d", i);
        tk_set_str(dc, key, i % 2 ? "a value above the inline threshold" : "v");
    }
    assert_int_equal(yyc_diskcache_remove_all(dc), YYC_OK);
    for (int i = 0; i < 40; i++) {
        char key[16];
        snprintf(key, sizeof key, "all%d", i);
        assert_int_equal(events_of(&log, key, YYC_REMOVED_EXPLICIT), 1);
    }
    for (int i = 0; i < 40; i++) tk_set_str(dc, "p", "v"), tk_set_str(dc, "q", "v");
    assert_int_equal(yyc_diskcache_remove_all_progress(dc, NULL, NULL), YYC_OK);
    assert_int_equal(events_of(&log, "q", YYC_REMOVED_EXPLICIT), 1);

    /* The statistics count the same removals, by cause. */
    yyc_cache_statistics s = stats_of(dc);
    long total = 0;
    for (int c = 0; c < YYC_REMOVAL_CAUSE_COUNT; c++) {
        assert_int_equal(s.removals[c], atomic_load(&log.by_cause[c]));
        total += (long)s.removals[c];
    }
    assert_int_equal(total, atomic_load(&log.total));
    /* The listener ran after the entry left (and with no lock held: it could read). */
    assert_int_equal(atomic_load(&log.reentered_absent),
                     atomic_load(&log.total) - (long)s.removals[YYC_REMOVED_REPLACED]);
    assert_int_equal(s.removals[YYC_REMOVED_MEMORY_PRESSURE], 0);
    yyc_diskcache_set_removal_listener(dc, NULL, NULL);
    tk_set_str(dc, "z", "v");
    assert_int_equal(yyc_diskcache_remove(dc, "z"), YYC_OK);
    assert_int_equal(atomic_load(&log.total), total); /* no listener: no event ... */
    assert_int_equal(stats_of(dc).removals[YYC_REMOVED_EXPLICIT], s.removals[0] + 1); /* counted */
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* A listener that writes to the cache when its key is replaced (the replacing set is still
 * returning when it is told). */
typedef struct writing_listener {
    yyc_diskcache *dc;
    atomic_int calls, set_status;
} writing_listener;

static void set_on_replace(void *ctx, const char *key, yyc_removal_cause cause) {
    writing_listener *w = ctx;
    if (cause != YYC_REMOVED_REPLACED || strcmp(key, "k") != 0) return;
    if (atomic_fetch_add(&w->calls, 1) == 0)
        atomic_store(&w->set_status, yyc_diskcache_set(w->dc, "from-listener", "L", 1, NULL, 0));
}

typedef struct set_job {
    yyc_diskcache *dc;
    atomic_int status;
    atomic_bool done;
} set_job;

static void *replace_k(void *arg) {
    set_job *j = arg;
    atomic_store(&j->status, yyc_diskcache_set(j->dc, "k", "2", 1, NULL, 0));
    atomic_store(&j->done, true);
    return NULL;
}

static void disk_a_listener_told_of_a_replace_can_set_again(void **state) {
    (void)state;
    char *dir = test_temp_dir("disk-events-set");
    yyc_diskcache *dc = open_dc(dir);
    writing_listener w = {.dc = dc};
    atomic_store(&w.set_status, -1);
    yyc_diskcache_set_removal_listener(dc, set_on_replace, &w);
    assert_int_equal(yyc_diskcache_set(dc, "k", "1", 1, NULL, 0), YYC_OK);
    set_job j = {.dc = dc};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, replace_k, &j), 0);
    if (!WAIT_UNTIL(atomic_load(&j.done), 30.0))
        fail_msg("the replacing set did not return: its listener's set waits for it");
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&j.status), YYC_OK);
    assert_int_equal(atomic_load(&w.calls), 1);
    assert_int_equal(atomic_load(&w.set_status), YYC_OK);
    void *v = NULL;
    size_t n = 0;
    assert_int_equal(yyc_diskcache_get(dc, "from-listener", &v, &n), YYC_OK);
    assert_int_equal(n, 1);
    free(v);
    yyc_diskcache_set_removal_listener(dc, NULL, NULL);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_statistics_count_hits_misses_and_insertions_per_core(void **state) {
    (void)state;
    char *dir = test_temp_dir("devents");
    yyc_diskcache *dc = open_dc(dir);
    yyc_diskcache *other = open_dc(dir); /* the same core */
    tk_set_str(dc, "a", "v");
    tk_set_str(other, "a", "w");
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_diskcache_get(dc, "a", &v, &len), YYC_OK);
    yyc_free(v);
    assert_int_equal(yyc_diskcache_get(other, "missing", &v, &len), YYC_NOTFOUND);
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "t", "v", 1, NULL, 0, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_get(dc, "t", &v, &len), YYC_NOTFOUND); /* expired: a miss */
    assert_true(yyc_diskcache_contains(dc, "a"));                         /* counts nothing */
    yyc_cache_statistics s = stats_of(other);
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.misses, 2);
    assert_int_equal(s.insertions, 3);
    assert_int_equal(s.removals[YYC_REMOVED_REPLACED], 1);
    assert_int_equal(s.removals[YYC_REMOVED_EXPIRED], 1);
    double ratio = yyc_cache_statistics_hit_ratio(&s);
    assert_true(ratio > 0.33 && ratio < 0.34);
    yyc_diskcache_reset_statistics(dc);
    s = stats_of(other);
    assert_int_equal(s.hits + s.misses + s.insertions + s.removals[1] + s.removals[2], 0);
    yyc_diskcache_release(other);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* --- eight threads --- */

#define THREADS 8
#define OPS 300
#define KEYS 24

typedef struct stress {
    yyc_diskcache *dc;
    int seed;
} stress;

static void *stress_worker(void *arg) {
    stress *w = arg;
    unsigned r = (unsigned)w->seed * 2654435761u + 1;
    for (int i = 0; i < OPS; i++) {
        r = r * 1103515245u + 12345u;
        char key[16];
        snprintf(key, sizeof key, "k%u", (r >> 8) % KEYS);
        switch ((r >> 20) % 10) {
        case 0:
        case 1:
        case 2:
        case 3:
            yyc_diskcache_set(w->dc, key, "a value above the inline threshold", 34, NULL, 0);
            break;
        case 4: yyc_diskcache_set_with_ttl(w->dc, key, "v", 1, NULL, 0, 0); break;
        case 5:
        case 6: yyc_diskcache_remove(w->dc, key); break;
        case 7: {
            void *v = NULL;
            size_t len = 0;
            yyc_diskcache_get(w->dc, key, &v, &len);
            yyc_free(v);
            break;
        }
        case 8: yyc_diskcache_trim_to_count(w->dc, KEYS / 2); break;
        default:
            if ((r >> 28) % 4 == 0) yyc_diskcache_remove_all(w->dc);
            else yyc_diskcache_trim_to_cost(w->dc, 100);
        }
    }
    return NULL;
}

static void disk_removal_events_are_exactly_once_under_eight_threads(void **state) {
    (void)state;
    char *dir = test_temp_dir("devents");
    yyc_diskcache *dc = open_dc(dir);
    event_log log;
    log_init(&log);
    yyc_diskcache_set_removal_listener(dc, record_removal, &log);
    pthread_t t[THREADS];
    stress w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (stress){dc, i + 1};
        assert_int_equal(pthread_create(&t[i], NULL, stress_worker, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    /* The model: every insertion made one row; every row that left gave one event. */
    yyc_cache_statistics s = stats_of(dc);
    int64_t rows = 0;
    assert_int_equal(yyc_diskcache_total_count(dc, &rows), YYC_OK);
    assert_int_equal((long)s.insertions - atomic_load(&log.total), rows);
    long counted = 0;
    for (int c = 0; c < YYC_REMOVAL_CAUSE_COUNT; c++) counted += (long)s.removals[c];
    assert_int_equal(counted, atomic_load(&log.total));
    assert_true(s.removals[YYC_REMOVED_REPLACED] > 0 && s.removals[YYC_REMOVED_EXPLICIT] > 0 &&
                s.removals[YYC_REMOVED_EVICTED] > 0);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* --- a listener that releases the last reference during an auto-trim --- */

/* Testing (disk_cache_registry.c): how many opens wait for the core of a canonical path (-1: no
 * core is registered for it). */
long yyc__diskcache_registry_waiters(const char *canonical_path);

typedef struct releaser {
    yyc_diskcache *dc; /* the only reference, handed to the listener */
    atomic_int released;
} releaser;

static void release_on_first_eviction(void *ctx, const char *key, yyc_removal_cause cause) {
    (void)key;
    releaser *r = ctx;
    if (cause == YYC_REMOVED_EVICTED && atomic_exchange(&r->released, 1) == 0)
        yyc_diskcache_release(r->dc);
}

/* The header lets a listener call into the cache, releasing included: the auto-trim delivers the
 * first batch's evictions while it hands the lock over, and the listener drops the last
 * reference then. The trim holds its own reference for its run, so it finishes its batches on a
 * live core, and its release closes the cache (ASan reports a use after free otherwise). */
static void
disk_a_listener_releasing_the_last_reference_mid_trim_does_not_free_the_trim(void **state) {
    (void)state;
    enum { ROWS = 600 };
    char *dir = test_temp_dir("events-release");
    releaser r = {0};
    assert_int_equal(yyc_diskcache_open(dir, 1024, &r.dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(r.dc, 0);
    char key[16];
    for (int i = 0; i < ROWS; i++) {
        snprintf(key, sizeof key, "k%04d", i);
        assert_int_equal(yyc_diskcache_set(r.dc, key, "v", 1, NULL, 0), YYC_OK);
    }
    char *canon = realpath(dir, NULL);
    assert_int_equal(yyc__diskcache_registry_waiters(canon), 0); /* registered */
    yyc_diskcache_set_removal_listener(r.dc, release_on_first_eviction, &r);
    yyc_diskcache_set_count_limit(r.dc, 1);
    yyc_diskcache_set_auto_trim_interval(r.dc,
                                         0.01); /* the test's reference is now the listener's */
    /* Closed once the trim let go of its own reference (a deadline only keeps a hang finite). */
    assert_true(WAIT_UNTIL(yyc__diskcache_registry_waiters(canon) == -1, 60));
    assert_int_equal(atomic_load(&r.released), 1);
    free(canon);
    /* Everything but the one entry the limit keeps was evicted before the close. */
    yyc_diskcache *again = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 1024, &again), YYC_OK);
    int64_t rows = -1;
    assert_int_equal(yyc_diskcache_total_count(again, &rows), YYC_OK);
    assert_int_equal(rows, 1);
    yyc_diskcache_release(again);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(disk_every_removal_cause_is_reported_once_with_its_key),
    cmocka_unit_test(disk_a_listener_told_of_a_replace_can_set_again),
    cmocka_unit_test(disk_statistics_count_hits_misses_and_insertions_per_core),
    cmocka_unit_test(disk_removal_events_are_exactly_once_under_eight_threads),
    cmocka_unit_test(disk_a_listener_releasing_the_last_reference_mid_trim_does_not_free_the_trim),
};

YYC_TEST_MAIN(tests)
