/*
 * test_deferred_writes.c - the disk cache's deferred write mode (issue 14, item 5): sets and
 * removals return once queued, this process reads them at once, other connections see them only
 * once committed (by flush, the background commit within max_delay, close, the last release, a
 * switch back to immediate, exit()), and a failed commit keeps the queue and reports its error.
 *
 * "Committed" is checked through a second, raw SQLite connection on the manifest (what another
 * process would see). Each test in its own temporary folder.
 */
#include "test_kv_support.h"

#include "kv/kv_private.h"

#include <math.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/wait.h>

#define THRESHOLD 1024
#define LONG_DELAY 3600.0 /* never reached by a test: only explicit commits count */

void yyc__diskcache_set_busy_timeout(yyc_diskcache *dc, int ms);

static yyc_diskcache *open_deferred(const char *dir, double delay) {
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, THRESHOLD, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    assert_int_equal(yyc_diskcache_set_write_mode(dc, YYC_WRITE_DEFERRED, delay), YYC_OK);
    return dc;
}

/* Rows another connection sees for key. */
static int64_t committed_rows(const char *dir, const char *key) {
    char sql[256];
    snprintf(sql, sizeof sql, "select count(*) from manifest where key = '%s';", key);
    return tk_int(dir, sql);
}

static void expect_get(yyc_diskcache *dc, const char *key, const char *want) {
    void *v = NULL;
    size_t len = 0;
    int rc = yyc_diskcache_get(dc, key, &v, &len);
    if (!want) {
        assert_int_equal(rc, YYC_NOTFOUND);
        assert_false(yyc_diskcache_contains(dc, key));
        return;
    }
    assert_int_equal(rc, YYC_OK);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(v, want, len);
    yyc_free(v);
    assert_true(yyc_diskcache_contains(dc, key));
}

static void deferred_sets_are_read_back_before_they_are_committed(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-read");
    yyc_diskcache *dc = open_deferred(dir, LONG_DELAY);
    assert_int_equal(yyc_diskcache_set(dc, "k", "queued", 6, "ext", 3), YYC_OK);
    char big[3000];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(yyc_diskcache_set(dc, "big", big, strlen(big), NULL, 0), YYC_OK);
    assert_int_equal(committed_rows(dir, "k"), 0); /* not committed yet */
    expect_get(dc, "k", "queued");
    expect_get(dc, "big", big);
    void *ext = NULL;
    size_t ext_len = 0;
    assert_int_equal(yyc_diskcache_get_extended_data(dc, "k", &ext, &ext_len), YYC_OK);
    assert_int_equal(ext_len, 3);
    assert_memory_equal(ext, "ext", 3);
    yyc_free(ext);
    /* a second open of the path shares the core and its queue */
    yyc_diskcache *other = NULL;
    assert_int_equal(yyc_diskcache_open(dir, THRESHOLD, &other), YYC_OK);
    expect_get(other, "k", "queued");
    yyc_diskcache_release(other);
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    assert_int_equal(committed_rows(dir, "k"), 1);
    assert_int_equal(committed_rows(dir, "big"), 1);
    expect_get(dc, "big", big);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void deferred_removal_hides_the_committed_value_until_flushed(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-remove");
    yyc_diskcache *dc = open_deferred(dir, LONG_DELAY);
    assert_int_equal(yyc_diskcache_set(dc, "k", "v1", 2, NULL, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    assert_int_equal(yyc_diskcache_remove(dc, "k"), YYC_OK);
    expect_get(dc, "k", NULL);
    assert_int_equal(committed_rows(dir, "k"), 1);
    assert_int_equal(yyc_diskcache_set(dc, "k", "v2", 2, NULL, 0), YYC_OK);
    expect_get(dc, "k", "v2");
    assert_int_equal(yyc_diskcache_remove(dc, "k"), YYC_OK);
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    assert_int_equal(committed_rows(dir, "k"), 0);
    expect_get(dc, "k", NULL);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void deferred_queue_commits_by_itself(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-timer");
    yyc_diskcache *dc = open_deferred(dir, 0.02);
    for (int round = 0; round < 3; round++) { /* the timer pauses and is armed again */
        char key[16];
        snprintf(key, sizeof key, "k%d", round);
        assert_int_equal(yyc_diskcache_set(dc, key, "v", 1, NULL, 0), YYC_OK);
        assert_true(WAIT_UNTIL(committed_rows(dir, key) == 1, 30.0));
    }
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void close_and_last_release_commit_the_queue(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-close");
    yyc_diskcache *dc = open_deferred(dir, LONG_DELAY);
    yyc_diskcache *other = yyc_diskcache_retain(dc);
    assert_int_equal(yyc_diskcache_set(dc, "closed", "v", 1, NULL, 0), YYC_OK);
    yyc_diskcache_close(dc); /* while `other` still holds the core */
    assert_int_equal(committed_rows(dir, "closed"), 1);
    yyc_diskcache_release(other);
    yyc_diskcache_release(dc);
    dc = open_deferred(dir, LONG_DELAY);
    assert_int_equal(yyc_diskcache_set(dc, "released", "v", 1, NULL, 0), YYC_OK);
    yyc_diskcache_release(dc);
    assert_int_equal(committed_rows(dir, "released"), 1);
    test_rm_rf(dir);
    free(dir);
}

static void exit_commits_the_queue(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-exit");
    for (int how = 0; how < 2; how++) { /* exit(): committed; _exit(): lost (no atexit) */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            yyc_diskcache *dc = NULL;
            if (yyc_diskcache_open(dir, THRESHOLD, &dc) != YYC_OK ||
                yyc_diskcache_set_write_mode(dc, YYC_WRITE_DEFERRED, LONG_DELAY) != YYC_OK ||
                yyc_diskcache_set(dc, how ? "by-_exit" : "by-exit", "v", 1, NULL, 0) != YYC_OK)
                _exit(3);
            if (how) _exit(0);
            exit(0);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    assert_int_equal(committed_rows(dir, "by-exit"), 1);
    assert_int_equal(committed_rows(dir, "by-_exit"), 0);
    test_rm_rf(dir);
    free(dir);
}

/* (the hook runs on the worker: the test reads it from its own thread) */
typedef struct hook_log {
    atomic_int errors;
    atomic_int last_code;
} hook_log;

static void log_hook(void *ctx, const yyc_error *e) {
    hook_log *h = ctx;
    atomic_store(&h->last_code, e->code);
    atomic_fetch_add(&h->errors, 1);
}

static void a_failed_commit_keeps_the_queue_and_flush_returns_the_error(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-fail");
    yyc_diskcache *dc = open_deferred(dir, 0.02);
    hook_log h;
    atomic_init(&h.errors, 0);
    atomic_init(&h.last_code, 0);
    yyc_diskcache_set_error_hook(dc, log_hook, &h);
    yyc__diskcache_set_busy_timeout(dc, 20);
    /* another holder of the folder lock (another open file description: as another process) */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    assert_int_equal(yyc_diskcache_set(dc, "k", "v", 1, NULL, 0), YYC_OK);
    assert_true(WAIT_UNTIL(atomic_load(&h.errors) > 0, 30.0)); /* the background commit failed */
    assert_int_equal(atomic_load(&h.last_code), YYC_EBUSY);
    assert_int_equal(yyc_diskcache_flush(dc), YYC_EBUSY);
    expect_get(dc, "k", "v"); /* still queued */
    assert_int_equal(committed_rows(dir, "k"), 0);
    assert_int_equal(flock(fd, LOCK_UN), 0);
    close(fd);
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    assert_int_equal(committed_rows(dir, "k"), 1);
    yyc_diskcache_set_error_hook(dc, NULL, NULL);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void totals_and_a_switch_to_immediate_commit_the_queue(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-totals");
    yyc_diskcache *dc = open_deferred(dir, LONG_DELAY);
    assert_int_equal(yyc_diskcache_set(dc, "a", "12345", 5, NULL, 0), YYC_OK);
    int64_t n = 0;
    assert_int_equal(yyc_diskcache_total_count(dc, &n), YYC_OK);
    assert_int_equal(n, 1);
    assert_int_equal(committed_rows(dir, "a"), 1);
    assert_int_equal(yyc_diskcache_set(dc, "b", "x", 1, NULL, 0), YYC_OK);
    double delay = 0;
    assert_int_equal(yyc_diskcache_write_mode(dc, &delay), YYC_WRITE_DEFERRED);
    assert_true(delay == LONG_DELAY);
    assert_int_equal(yyc_diskcache_set_write_mode(dc, YYC_WRITE_IMMEDIATE, 0), YYC_OK);
    assert_int_equal(committed_rows(dir, "b"), 1);
    assert_int_equal(yyc_diskcache_write_mode(dc, NULL), YYC_WRITE_IMMEDIATE);
    assert_int_equal(yyc_diskcache_set(dc, "c", "x", 1, NULL, 0), YYC_OK);
    assert_int_equal(committed_rows(dir, "c"), 1); /* immediate again */
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void remove_all_drops_the_queue(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-remove-all");
    yyc_diskcache *dc = open_deferred(dir, LONG_DELAY);
    assert_int_equal(yyc_diskcache_set(dc, "a", "1", 1, NULL, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    assert_int_equal(yyc_diskcache_set(dc, "b", "2", 1, NULL, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_remove_all(dc), YYC_OK);
    expect_get(dc, "a", NULL);
    expect_get(dc, "b", NULL);
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    assert_int_equal(committed_rows(dir, "b"), 0);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* --- time to live, removal events and statistics through the queue --- */

static void a_deferred_set_with_a_time_to_live_is_not_returned_after_expiry(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-ttl");
    yyc_diskcache *dc = open_deferred(dir, LONG_DELAY);
    char big[3000];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    /* q expires while queued; f is committed first, then expires; n never expires */
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "q", "queued", 6, "x", 1, 10), YYC_OK);
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "f", big, strlen(big), NULL, 0, 10), YYC_OK);
    assert_int_equal(yyc_diskcache_set(dc, "n", "never", 5, NULL, 0), YYC_OK);
    expect_get(dc, "q", "queued");
    double ttl = 0;
    assert_int_equal(yyc_diskcache_time_to_live(dc, "f", &ttl), YYC_OK); /* from the queue */
    assert_true(ttl > 0 && ttl <= 10);
    assert_int_equal(yyc_diskcache_time_to_live(dc, "n", &ttl), YYC_OK);
    assert_true(ttl == INFINITY);
    assert_int_equal(committed_rows(dir, "f"), 0);
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    assert_int_equal(committed_rows(dir, "f"), 1);
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "q", "queued", 6, "x", 1, 10), YYC_OK);
    yyc__kv_testing_advance_clock(11 * 1000);
    expect_get(dc, "q", NULL); /* from the queue: expired, a miss */
    assert_int_equal(yyc_diskcache_time_to_live(dc, "q", &ttl), YYC_NOTFOUND);
    void *ext = NULL;
    size_t ext_len = 0;
    assert_int_equal(yyc_diskcache_get_extended_data(dc, "q", &ext, &ext_len), YYC_NOTFOUND);
    assert_null(ext);
    expect_get(dc, "f", NULL); /* committed with its time to live */
    expect_get(dc, "n", "never");
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    expect_get(dc, "q", NULL); /* and after the flush */
    assert_int_equal(yyc_diskcache_time_to_live(dc, "q", &ttl), YYC_NOTFOUND);
    yyc_diskcache_release(dc);
    dc = open_deferred(dir, LONG_DELAY); /* another core: the expiry was committed */
    expect_get(dc, "q", NULL);
    expect_get(dc, "f", NULL);
    expect_get(dc, "n", "never");
    yyc__kv_testing_advance_clock(-11 * 1000);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

#define EV_KEYS 6

typedef struct ev_log {
    atomic_int replaced[EV_KEYS], removed[EV_KEYS], other;
} ev_log;

/* Keys r<i> (replaced) and x<i> (removed). */
static void log_event(void *ctx, const char *key, yyc_removal_cause cause) {
    ev_log *log = ctx;
    int i = atoi(key + 1);
    if (key[0] == 'r' && cause == YYC_REMOVED_REPLACED && i < EV_KEYS)
        atomic_fetch_add(&log->replaced[i], 1);
    else if (key[0] == 'x' && cause == YYC_REMOVED_EXPLICIT && i < EV_KEYS)
        atomic_fetch_add(&log->removed[i], 1);
    else atomic_fetch_add(&log->other, 1);
}

static void a_deferred_flush_reports_each_replacement_and_removal_once(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-events");
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, THRESHOLD, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    char key[16], big[3000];
    memset(big, 'b', sizeof big);
    for (int i = 0; i < EV_KEYS; i++) { /* committed rows, immediate mode */
        snprintf(key, sizeof key, "r%d", i);
        assert_int_equal(yyc_diskcache_set(dc, key, big, i % 2 ? sizeof big : 10, NULL, 0), YYC_OK);
        snprintf(key, sizeof key, "x%d", i);
        assert_int_equal(yyc_diskcache_set(dc, key, "old", 3, NULL, 0), YYC_OK);
    }
    ev_log log;
    memset(&log, 0, sizeof log);
    yyc_diskcache_set_removal_listener(dc, log_event, &log);
    yyc_diskcache_reset_statistics(dc);
    assert_int_equal(yyc_diskcache_set_write_mode(dc, YYC_WRITE_DEFERRED, LONG_DELAY), YYC_OK);
    int sets = 0;
    for (int i = 0; i < EV_KEYS; i++) {
        snprintf(key, sizeof key, "r%d", i);
        for (int k = 0; k <= i % 2; k++, sets++) /* odd keys twice: the queue keeps the last */
            assert_int_equal(yyc_diskcache_set(dc, key, big, i % 2 ? 20 : sizeof big, NULL, 0),
                             YYC_OK);
        snprintf(key, sizeof key, "x%d", i);
        assert_int_equal(yyc_diskcache_remove(dc, key), YYC_OK);
    }
    assert_int_equal(yyc_diskcache_set(dc, "n", "new", 3, NULL, 0), YYC_OK); /* replaces nothing */
    sets++;
    assert_int_equal(atomic_load(&log.other), 0);
    for (int i = 0; i < EV_KEYS; i++) assert_int_equal(atomic_load(&log.replaced[i]), 0);
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK); /* nothing left: nothing more */
    yyc_cache_statistics s;
    assert_int_equal(yyc_diskcache_statistics(dc, &s), YYC_OK);
    assert_int_equal(s.insertions, sets); /* one per set, coalesced in the queue or not */
    assert_int_equal(s.removals[YYC_REMOVED_REPLACED], EV_KEYS);
    assert_int_equal(s.removals[YYC_REMOVED_EXPLICIT], EV_KEYS);
    yyc_diskcache_release(dc); /* (the last release commits nothing more either) */
    for (int i = 0; i < EV_KEYS; i++) {
        if (atomic_load(&log.replaced[i]) != 1)
            fail_msg("r%d: %d replaced events", i, atomic_load(&log.replaced[i]));
        if (atomic_load(&log.removed[i]) != 1)
            fail_msg("x%d: %d removal events", i, atomic_load(&log.removed[i]));
    }
    assert_int_equal(atomic_load(&log.other), 0);
    test_rm_rf(dir);
    free(dir);
}

static void deferred_sets_count_one_insertion_each(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-stats");
    yyc_diskcache *dc = open_deferred(dir, LONG_DELAY);
    assert_int_equal(yyc_diskcache_set(dc, "a", "1", 1, NULL, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_set(dc, "a", "2", 1, NULL, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "b", "3", 1, NULL, 0, 60), YYC_OK);
    assert_int_equal(yyc_diskcache_remove(dc, "a"), YYC_OK);
    yyc_cache_statistics s;
    assert_int_equal(yyc_diskcache_statistics(dc, &s), YYC_OK);
    assert_int_equal(s.insertions, 3);
    void *v = NULL;
    size_t n = 0;
    assert_int_equal(yyc_diskcache_get(dc, "b", &v, &n), YYC_OK); /* a hit from the queue */
    yyc_free(v);
    assert_int_equal(yyc_diskcache_get(dc, "a", &v, &n), YYC_NOTFOUND); /* a queued removal */
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    assert_int_equal(yyc_diskcache_statistics(dc, &s), YYC_OK);
    assert_int_equal(s.insertions, 3); /* the flush stores nothing more */
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.misses, 1);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* The queue is committed in key order (the key index is then walked forwards, not at random):
 * the new rows' rowids follow the keys' byte order, also for keys that tie on their first 16
 * bytes, short keys, and bytes above 0x7f (UTF-8), whatever order they were queued in; and
 * every queued write is committed. */
static void a_deferred_flush_commits_the_queue_in_key_order(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-order");
    yyc_diskcache *dc = open_deferred(dir, LONG_DELAY);
    enum { N = 1500 };
    static char keys[N][48];
    for (int i = 0; i < N; i++) {
        switch (i % 5) {
        case 0: snprintf(keys[i], sizeof keys[i], "%d", i); break;
        case 1: snprintf(keys[i], sizeof keys[i], "a-common-prefix-%d", i); break; /* 16 + */
        case 2: snprintf(keys[i], sizeof keys[i], "\xc3\xa9t\xc3\xa9-%d", i); break;
        case 3: snprintf(keys[i], sizeof keys[i], "key_%d", i); break;
        default: snprintf(keys[i], sizeof keys[i], "%c", 'A' + i / 5 % 50); break; /* replaced */
        }
    }
    unsigned x = 12345;
    int order[N];
    for (int i = 0; i < N; i++) order[i] = i;
    for (int i = N - 1; i > 0; i--) { /* a fixed shuffle */
        x = x * 1103515245u + 12345u;
        int j = (int)((x >> 8) % (unsigned)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < N; i++) tk_set_str(dc, keys[order[i]], keys[order[i]]);
    assert_int_equal(yyc_diskcache_remove(dc, "key_3"), YYC_OK);
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);

    sqlite3 *db = tk_raw_open(dir);
    sqlite3_stmt *s = NULL;
    assert_int_equal(
        sqlite3_prepare_v2(db, "select key from manifest order by rowid;", -1, &s, NULL),
        SQLITE_OK);
    char prev[64] = "";
    int rows = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(s, 0);
        if (rows > 0 && strcmp(prev, k) >= 0)
            fail_msg("row %d: key '%s' committed after '%s'", rows, k, prev);
        snprintf(prev, sizeof prev, "%s", k);
        rows++;
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    int distinct = -1; /* (key_3 removed) */
    for (int i = 0; i < N; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = strcmp(keys[i], keys[j]) == 0;
        distinct += !seen;
    }
    assert_int_equal(rows, distinct);
    for (int i = 0; i < N; i++)
        if (strcmp(keys[i], "key_3") != 0) tk_check_str(dc, keys[i], keys[i]);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* A queued write replaced by a later write of its key keeps its memory until the queue is
 * committed (the queue bump-allocates in chunks): that memory counts toward the queue's bound
 * (64 MiB), so rewriting one key forever commits the queue now and then instead of growing it
 * without end. */
static void rewriting_one_key_keeps_the_queue_bounded(void **state) {
    (void)state;
    char *dir = test_temp_dir("deferred-rewrites");
    yyc_diskcache *dc = open_deferred(dir, LONG_DELAY);
    static char value[1000];
    int i = 0;
    for (; i < 100000 && committed_rows(dir, "k") == 0; i += 1000)
        for (int j = 0; j < 1000; j++) {
            memset(value, 'a' + (i + j) % 26, sizeof value);
            assert_int_equal(yyc_diskcache_set(dc, "k", value, sizeof value, NULL, 0), YYC_OK);
        }
    if (committed_rows(dir, "k") == 0)
        fail_msg("%d rewrites of a 1000-byte value (%d MB) and the queue was never committed", i,
                 i / 1000);
    assert_true(i <= 80000); /* (64 MiB of 1000-byte values: about 67,000 rewrites) */
    tk_set_str(dc, "k", "last");
    expect_get(dc, "k", "last"); /* (from the queue) */
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    assert_int_equal(tk_int(dir, "select count(*) from manifest where key = 'k' and "
                                 "inline_data = cast('last' as blob);"),
                     1);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deferred_sets_are_read_back_before_they_are_committed),
        cmocka_unit_test(deferred_removal_hides_the_committed_value_until_flushed),
        cmocka_unit_test(deferred_queue_commits_by_itself),
        cmocka_unit_test(close_and_last_release_commit_the_queue),
        cmocka_unit_test(exit_commits_the_queue),
        cmocka_unit_test(a_failed_commit_keeps_the_queue_and_flush_returns_the_error),
        cmocka_unit_test(totals_and_a_switch_to_immediate_commit_the_queue),
        cmocka_unit_test(remove_all_drops_the_queue),
        cmocka_unit_test(a_deferred_set_with_a_time_to_live_is_not_returned_after_expiry),
        cmocka_unit_test(a_deferred_flush_reports_each_replacement_and_removal_once),
        cmocka_unit_test(deferred_sets_count_one_insertion_each),
        cmocka_unit_test(a_deferred_flush_commits_the_queue_in_key_order),
        cmocka_unit_test(rewriting_one_key_keeps_the_queue_bounded),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
