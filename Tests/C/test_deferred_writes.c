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
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
