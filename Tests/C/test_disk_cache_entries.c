/*
 * test_disk_cache_entries.c - enumeration of yyc_diskcache entries (disk_cache.h
 * "Enumeration"): least recently used first, expired entries left out, 100,000 entries walked a
 * page at a time while another thread writes (it must finish a write in the middle of the
 * walk), a closed cache, a callback that stops the walk. Every test works in its own temporary
 * folder; time is moved with the test clock.
 */
#include "test_kv_support.h"

#include "kv/kv_private.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

size_t yyc__diskcache_iter_max_buffered(const yyc_diskcache_iter *it);

static yyc_diskcache *open_dc(const char *dir) {
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 20, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    return dc;
}

static void disk_entries_come_least_recently_used_first_without_expired_ones(void **state) {
    (void)state;
    yyc__kv_testing_freeze_clock(true);
    char *dir = test_temp_dir("dentries");
    yyc_diskcache *dc = open_dc(dir);
    assert_int_equal(yyc_diskcache_set(dc, "b", "12345", 5, NULL, 0), YYC_OK);
    assert_int_equal(
        yyc_diskcache_set_with_ttl(dc, "a", "a value above the threshold", 27, NULL, 0, 60),
        YYC_OK);
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "gone", "v", 1, NULL, 0, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_set(dc, "c", "v", 1, NULL, 0), YYC_OK);
    tk_exec(dir, "update manifest set last_access_time = case key when 'a' then 10 when 'b' "
                 "then 20 else 30 end;");
    yyc_diskcache_iter *it = NULL;
    assert_int_equal(yyc_diskcache_iter_open(dc, &it), YYC_OK);
    const yyc_diskcache_entry *e;
    assert_int_equal(yyc_diskcache_iter_next(it, &e), YYC_OK);
    assert_string_equal(e->key, "a");
    assert_non_null(e->filename);
    assert_int_equal(e->size, 27);
    assert_int_equal(e->last_access_time, 10);
    assert_int_equal(e->expiry_ms, yyc__kv_now_ms() + 60000);
    assert_int_equal(yyc_diskcache_iter_next(it, &e), YYC_OK);
    assert_string_equal(e->key, "b");
    assert_null(e->filename);
    assert_int_equal(e->expiry_ms, 0);
    assert_int_equal(yyc_diskcache_iter_next(it, &e), YYC_OK);
    assert_string_equal(e->key, "c"); /* "gone" (expired) is left out */
    assert_int_equal(yyc_diskcache_iter_next(it, &e), YYC_NOTFOUND);
    assert_int_equal(yyc_diskcache_iter_next(it, &e), YYC_NOTFOUND);
    yyc_diskcache_iter_free(it);
    /* An entry that expires after its page was read is left out too. */
    assert_int_equal(yyc_diskcache_iter_open(dc, &it), YYC_OK);
    assert_int_equal(yyc_diskcache_iter_next(it, &e), YYC_OK);
    assert_string_equal(e->key, "a");
    yyc_diskcache_iter_free(it);
    assert_int_equal(yyc_diskcache_iter_open(dc, &it), YYC_OK);
    yyc__kv_testing_advance_clock(60000);
    assert_int_equal(yyc_diskcache_iter_next(it, &e), YYC_OK);
    assert_string_equal(e->key, "b");
    yyc_diskcache_iter_free(it);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static int stop_at_second(void *ctx, const yyc_diskcache_entry *e) {
    (void)e;
    int *seen = ctx;
    return ++*seen == 2 ? 42 : 0;
}

static void disk_entries_stop_where_the_callback_says_and_a_closed_cache_is_closed(void **state) {
    (void)state;
    char *dir = test_temp_dir("dentries");
    yyc_diskcache *dc = open_dc(dir);
    for (int i = 0; i < 5; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(yyc_diskcache_set(dc, key, "v", 1, NULL, 0), YYC_OK);
    }
    int seen = 0;
    assert_int_equal(yyc_diskcache_for_each_entry(dc, stop_at_second, &seen), 42);
    assert_int_equal(seen, 2);
    yyc_diskcache_iter *it = NULL;
    assert_int_equal(yyc_diskcache_iter_open(dc, &it), YYC_OK);
    yyc_diskcache_close(dc);
    const yyc_diskcache_entry *e;
    assert_int_equal(yyc_diskcache_iter_next(it, &e), YYC_ECLOSED);
    yyc_diskcache_iter_free(it);
    assert_int_equal(yyc_diskcache_iter_open(dc, &it), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_for_each_entry(dc, stop_at_second, &seen), YYC_ECLOSED);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* --- 100,000 entries and a writer --- */

#define MANY 100000

typedef struct writer {
    yyc_diskcache *dc;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool go, done;
} writer;

static void *write_when_told(void *arg) {
    writer *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->go) pthread_cond_wait(&w->changed, &w->lock);
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < 10; i++) {
        char key[16];
        snprintf(key, sizeof key, "new%d", i);
        assert_int_equal(yyc_diskcache_set(w->dc, key, "v", 1, NULL, 0), YYC_OK);
    }
    pthread_mutex_lock(&w->lock);
    w->done = true;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void disk_entries_walk_100000_entries_in_bounded_memory_beside_a_writer(void **state) {
    (void)state;
    char *dir = test_temp_dir("dentries");
    yyc_diskcache *dc = open_dc(dir);
    /* 100,000 rows in one transaction, the way another process would write them. */
    sqlite3 *db = tk_raw_open(dir);
    tk_raw_exec(db, "begin;");
    tk_raw_exec(db, "with recursive n(i) as (select 1 union all select i + 1 from n where i < "
                    "100000) insert into manifest " TK_COLS
                    " select 'key' || i, NULL, 1, x'00', 1000 + i, 1000 + i, NULL from n;");
    tk_raw_exec(db, "commit;");
    sqlite3_close(db);

    writer w = {.dc = dc, .go = false, .done = false};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.changed, NULL);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, write_when_told, &w), 0);

    yyc_diskcache_iter *it = NULL;
    assert_int_equal(yyc_diskcache_iter_open(dc, &it), YYC_OK);
    const yyc_diskcache_entry *e;
    long seen = 0, old = 0;
    int64_t last_time = 0;
    bool writer_finished_mid_walk = false;
    int rc;
    while ((rc = yyc_diskcache_iter_next(it, &e)) == YYC_OK) {
        assert_true(e->last_access_time >= last_time); /* least recently used first */
        last_time = e->last_access_time;
        if (!strncmp(e->key, "key", 3)) old++;
        if (++seen == MANY / 2) {
            /* Mid-walk: the writer must be able to finish its writes now (the walk holds no
             * lock between pages). A generous deadline only to fail instead of hanging. */
            pthread_mutex_lock(&w.lock);
            w.go = true;
            pthread_cond_broadcast(&w.changed);
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_sec += 60;
            while (!w.done && pthread_cond_timedwait(&w.changed, &w.lock, &deadline) == 0) {
            }
            writer_finished_mid_walk = w.done;
            pthread_mutex_unlock(&w.lock);
        }
    }
    assert_int_equal(rc, YYC_NOTFOUND);
    assert_true(writer_finished_mid_walk);
    assert_int_equal(old, MANY);       /* every old entry once */
    assert_int_equal(seen, MANY + 10); /* and the new ones, written after the cursor */
    assert_true(yyc__diskcache_iter_max_buffered(it) <= 256); /* one page at a time */
    yyc_diskcache_iter_free(it);
    pthread_join(t, NULL);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(disk_entries_come_least_recently_used_first_without_expired_ones),
    cmocka_unit_test(disk_entries_stop_where_the_callback_says_and_a_closed_cache_is_closed),
    cmocka_unit_test(disk_entries_walk_100000_entries_in_bounded_memory_beside_a_writer),
};

YYC_TEST_MAIN(tests)
