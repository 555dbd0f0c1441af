/*
 * test_access_times.c - a disk cache's reads never write the manifest (kv_access_times.c):
 * access times are noted in memory and written in batches, from the background, before every
 * LRU decision and at close; a killed process loses nothing but access times.
 */
#include "test_kv_support.h"

#include "platform/internal.h"
#include "kv/kv_private.h"

#include <signal.h>
#include <sys/wait.h>

/* Testing (disk_cache.c): one fire of the access-time timer now, on the caller's thread; the
 * timer stopped; calls counted as waiting for the core's lock. */
void yyc__diskcache_testing_write_access_times(yyc_diskcache *dc);
void yyc__diskcache_testing_pause_access_times(yyc_diskcache *dc);
void yyc__diskcache_testing_add_waiting_callers(yyc_diskcache *dc, int delta);

static yyc_diskcache *open_dc(const char *dir) {
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 1024, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    return dc;
}

static int64_t atime_of(const char *dir, const char *key) {
    char sql[256];
    snprintf(sql, sizeof sql, "select last_access_time from manifest where key = '%s';", key);
    return tk_int(dir, sql);
}

static void a_get_does_not_write_the_manifest(void **state) {
    (void)state;
    char *dir = test_temp_dir("atime-nowrite");
    yyc_diskcache *dc = open_dc(dir);
    tk_set_str(dc, "small", "inline value");
    char big[3000];
    memset(big, 'b', sizeof big);
    assert_int_equal(yyc_diskcache_set(dc, "large", big, sizeof big, NULL, 0), YYC_OK);
    /* Times from long ago: a read has something to update. */
    tk_exec(dir, "update manifest set last_access_time = 100;");
    /* Another connection sees every commit as a new data_version. */
    sqlite3 *other = tk_raw_open(dir);
    int64_t before = tk_raw_int(other, "pragma data_version;");
    for (int i = 0; i < 10; i++) {
        tk_check_str(dc, "small", "inline value");
        void *v = NULL;
        size_t len = 0;
        assert_int_equal(yyc_diskcache_get(dc, "large", &v, &len), YYC_OK);
        assert_int_equal(len, sizeof big);
        yyc_free(v);
    }
    assert_int_equal(tk_raw_int(other, "pragma data_version;"), before);
    assert_int_equal(
        tk_raw_int(other, "select count(*) from manifest where last_access_time = 100;"), 2);
    sqlite3_close(other);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void kv_reads_of_every_kind_do_not_write_the_manifest(void **state) {
    (void)state;
    char *dir = test_temp_dir("atime-kv");
    yyc_kv *kv = NULL;
    assert_int_equal(yyc_kv_open(dir, YYC_KV_MIXED, &kv), YYC_OK);
    yyc__kv_set_deferred_access_times(kv, true); /* (as the disk cache does) */
    assert_int_equal(yyc_kv_save(kv, "a", "A", 1, NULL, NULL, 0), YYC_OK);
    assert_int_equal(yyc_kv_save(kv, "b", "B", 1, "b-file", NULL, 0), YYC_OK);
    tk_exec(dir, "update manifest set last_access_time = 100;");
    sqlite3 *other = tk_raw_open(dir);
    int64_t before = tk_raw_int(other, "pragma data_version;");
    yyc_kv_item *item = NULL;
    assert_int_equal(yyc_kv_get_item(kv, "a", &item), YYC_OK);
    yyc_kv_item_free(item);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_kv_get_value(kv, "b", &v, &len), YYC_OK);
    yyc_free(v);
    const char *keys[] = {"a", "b"};
    yyc_kv_item **items = NULL;
    size_t count = 0;
    assert_int_equal(yyc_kv_get_items(kv, keys, 2, &items, &count), YYC_OK);
    assert_int_equal(count, 2);
    yyc_kv_items_free(items, count);
    assert_int_equal(tk_raw_int(other, "pragma data_version;"), before);
    /* One write writes them, in one transaction. */
    assert_int_equal(yyc__kv_write_access_times(kv, SIZE_MAX), YYC_OK);
    assert_int_equal(tk_raw_int(other, "pragma data_version;"), before + 1);
    assert_int_equal(
        tk_raw_int(other, "select count(*) from manifest where last_access_time = 100;"), 0);
    sqlite3_close(other);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void an_lru_trim_after_gets_evicts_the_least_recently_read(void **state) {
    (void)state;
    char *dir = test_temp_dir("atime-lru");
    yyc_diskcache *dc = open_dc(dir);
    tk_set_str(dc, "a", "A");
    tk_set_str(dc, "b", "B");
    tk_set_str(dc, "c", "C");
    tk_exec(dir, "update manifest set last_access_time = 100 where key = 'a';"
                 "update manifest set last_access_time = 200 where key = 'b';"
                 "update manifest set last_access_time = 300 where key = 'c';");
    tk_check_str(dc, "a", "A"); /* now the most recently read: only in memory so far */
    assert_int_equal(yyc_diskcache_trim_to_count(dc, 2), YYC_OK);
    assert_true(yyc_diskcache_contains(dc, "a"));
    assert_false(yyc_diskcache_contains(dc, "b"));
    assert_true(yyc_diskcache_contains(dc, "c"));
    /* The same for the age trim: a read long after its write keeps the entry young. */
    tk_exec(dir, "update manifest set last_access_time = 100;");
    tk_check_str(dc, "c", "C");
    assert_int_equal(yyc_diskcache_trim_to_age(dc, 3600), YYC_OK);
    assert_false(yyc_diskcache_contains(dc, "a"));
    assert_true(yyc_diskcache_contains(dc, "c"));
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void access_times_are_written_at_close_and_never_move_back(void **state) {
    (void)state;
    char *dir = test_temp_dir("atime-close");
    yyc_diskcache *dc = open_dc(dir);
    tk_set_str(dc, "a", "A");
    tk_set_str(dc, "future", "F");
    tk_exec(dir, "update manifest set last_access_time = 100 where key = 'a';"
                 "update manifest set last_access_time = 99999999999 where key = 'future';");
    tk_check_str(dc, "a", "A");
    tk_check_str(dc, "future", "F");
    assert_int_equal(atime_of(dir, "a"), 100);
    yyc_diskcache_release(dc); /* the last reference: closes */
    assert_true(atime_of(dir, "a") >= (int64_t)time(NULL) - 1);
    assert_int_equal(atime_of(dir, "future"), INT64_C(99999999999));
    test_rm_rf(dir);
    free(dir);
}

static void reads_write_their_access_times_from_the_background(void **state) {
    (void)state;
    enum { N = 300 };
    char *dir = test_temp_dir("atime-bg");
    yyc_diskcache *dc = open_dc(dir);
    char key[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k%d", i);
        tk_set_str(dc, key, "v");
    }
    tk_exec(dir, "update manifest set last_access_time = 100;");
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k%d", i);
        tk_check_str(dc, key, "v");
    }
    assert_int_equal(tk_int(dir, "select count(*) from manifest where last_access_time = 100;"), N);
    yyc__diskcache_testing_write_access_times(dc); /* what the timer does every second */
    assert_int_equal(tk_int(dir, "select count(*) from manifest where last_access_time = 100;"), 0);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* The noted times are bounded: past YYC__KV_ACCESS_MAX keys a read of another key keeps its
 * older time (the value is read as always), and one background write writes a bounded part. */
static void the_noted_access_times_are_bounded(void **state) {
    (void)state;
    enum { N = YYC__KV_ACCESS_MAX + 100 };
    char *dir = test_temp_dir("atime-bound");
    yyc_kv *kv = NULL;
    assert_int_equal(yyc_kv_open(dir, YYC_KV_SQLITE, &kv), YYC_OK);
    yyc__kv_set_deferred_access_times(kv, true);
    char key[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(yyc_kv_save(kv, key, "v", 1, NULL, NULL, 0), YYC_OK);
    }
    tk_exec(dir, "update manifest set last_access_time = 100;");
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k%d", i);
        void *v = NULL;
        size_t len = 0;
        assert_int_equal(yyc_kv_get_value(kv, key, &v, &len), YYC_OK);
        assert_int_equal(len, 1);
        yyc_free(v);
    }
    assert_int_equal(yyc__kv_access_times_pending(kv), YYC__KV_ACCESS_MAX);
    assert_int_equal(yyc__kv_write_access_times(kv, 1000), YYC_OK);
    assert_int_equal(yyc__kv_access_times_pending(kv), YYC__KV_ACCESS_MAX - 1000);
    assert_int_equal(tk_int(dir, "select count(*) from manifest where last_access_time = 100;"),
                     N - 1000);
    yyc_kv_close(kv); /* writes the rest */
    assert_int_equal(tk_int(dir, "select count(*) from manifest where last_access_time = 100;"),
                     N - YYC__KV_ACCESS_MAX);
    test_rm_rf(dir);
    free(dir);
}

static void a_killed_process_loses_nothing_but_access_times(void **state) {
    (void)state;
    enum { N = 50 };
    char *dir = test_temp_dir("atime-kill");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        yyc_diskcache *dc = NULL;
        if (yyc_diskcache_open(dir, 1024, &dc) != YYC_OK) _exit(2);
        char key[32], value[3000];
        for (int i = 0; i < N; i++) {
            snprintf(key, sizeof key, "k%d", i);
            memset(value, 'a' + i % 26, sizeof value);
            size_t len = i % 2 ? sizeof value : 10; /* inline and file values */
            if (yyc_diskcache_set(dc, key, value, len, NULL, 0) != YYC_OK) _exit(3);
        }
        for (int i = 0; i < N; i++) {
            snprintf(key, sizeof key, "k%d", i);
            void *v = NULL;
            size_t len = 0;
            if (yyc_diskcache_get(dc, key, &v, &len) != YYC_OK) _exit(4);
            yyc_free(v);
        }
        raise(SIGKILL); /* with access times still in memory */
        _exit(5);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    yyc_diskcache *dc = open_dc(dir);
    int64_t n = -1;
    assert_int_equal(yyc_diskcache_total_count(dc, &n), YYC_OK);
    assert_int_equal(n, N);
    for (int i = 0; i < N; i++) {
        char key[32], value[3000];
        snprintf(key, sizeof key, "k%d", i);
        memset(value, 'a' + i % 26, sizeof value);
        size_t want = i % 2 ? sizeof value : 10;
        void *v = NULL;
        size_t len = 0;
        assert_int_equal(yyc_diskcache_get(dc, key, &v, &len), YYC_OK);
        assert_int_equal(len, want);
        assert_memory_equal(v, value, len);
        yyc_free(v);
    }
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* The background writer of access times gives way to calls waiting for the lock: the lock is
 * not fair, and a chunk of writes taken between a trim's batches made a get wait 40-50 ms. */
static void the_background_access_time_writer_gives_way_to_a_waiting_call(void **state) {
    (void)state;
    char *dir = test_temp_dir("atime-gives-way");
    yyc_diskcache *dc = open_dc(dir);
    yyc__diskcache_testing_pause_access_times(dc);
    tk_set_str(dc, "k", "value");
    tk_exec(dir, "update manifest set last_access_time = 100;");
    tk_check_str(dc, "k", "value"); /* notes its access time */
    yyc__diskcache_testing_add_waiting_callers(dc, 1);
    yyc__diskcache_testing_write_access_times(dc);
    assert_int_equal(atime_of(dir, "k"), 100); /* waits for the next fire */
    yyc__diskcache_testing_add_waiting_callers(dc, -1);
    yyc__diskcache_testing_write_access_times(dc);
    assert_true(atime_of(dir, "k") > 100);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_get_does_not_write_the_manifest),
    cmocka_unit_test(kv_reads_of_every_kind_do_not_write_the_manifest),
    cmocka_unit_test(an_lru_trim_after_gets_evicts_the_least_recently_read),
    cmocka_unit_test(access_times_are_written_at_close_and_never_move_back),
    cmocka_unit_test(reads_write_their_access_times_from_the_background),
    cmocka_unit_test(the_noted_access_times_are_bounded),
    cmocka_unit_test(a_killed_process_loses_nothing_but_access_times),
    cmocka_unit_test(the_background_access_time_writer_gives_way_to_a_waiting_call),
};

YYC_TEST_MAIN(tests)
