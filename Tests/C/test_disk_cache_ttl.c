/*
 * test_disk_cache_ttl.c - time to live of yyc_diskcache entries (disk_cache.h "Time to live"):
 * strict expiry at the boundary on every read path, removal by the read and by every trim and
 * the auto-trim, the default, expiry surviving a reopen, rows of YYKVStorage (no expiry) that
 * never expire, and a folder with the expiry column still usable through YYKVStorage's own
 * statements. Time is moved with the test-build clock hook (yyc__kv_testing_advance_clock),
 * never slept. Every test works in its own temporary folder.
 */
#include "test_kv_support.h"

#include "kv/kv_private.h"

#include <float.h>
#include <math.h>
#include <unistd.h>

#define HOUR_MS (3600LL * 1000)

static yyc_diskcache *open_dc(const char *dir, size_t threshold) {
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, threshold, &dc), YYC_OK);
    return dc;
}

static void set_ttl(yyc_diskcache *dc, const char *key, const char *value, double ttl) {
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, key, value, strlen(value), "x", 1, ttl),
                     YYC_OK);
}

static bool readable(yyc_diskcache *dc, const char *key) {
    void *v = NULL;
    size_t len = 0;
    int rc = yyc_diskcache_get(dc, key, &v, &len);
    assert_true(rc == YYC_OK || rc == YYC_NOTFOUND);
    yyc_free(v);
    return rc == YYC_OK;
}

static int64_t rows(const char *dir) { return tk_int(dir, "select count(*) from manifest"); }

/* Every read path of one key: value, contains, extended data, time to live. */
static void check_live(yyc_diskcache *dc, const char *key, bool live) {
    assert_int_equal(yyc_diskcache_contains(dc, key), live);
    void *ext = NULL;
    size_t ext_len = 0;
    assert_int_equal(yyc_diskcache_get_extended_data(dc, key, &ext, &ext_len),
                     live ? YYC_OK : YYC_NOTFOUND);
    yyc_free(ext);
    double left = -1;
    assert_int_equal(yyc_diskcache_time_to_live(dc, key, &left), live ? YYC_OK : YYC_NOTFOUND);
    assert_int_equal(readable(dc, key), live);
}

static void disk_entry_expires_exactly_at_its_time_to_live(void **state) {
    (void)state;
    char *dir = test_temp_dir("dttl");
    for (int threshold = 0; threshold < 2; threshold++) { /* a file, then inline */
        yyc_diskcache *dc = open_dc(dir, threshold ? SIZE_MAX : 0);
        set_ttl(dc, "a", "value a", 10.0);
        yyc__kv_testing_advance_clock(9999);
        check_live(dc, "a", true);
        double left = 0;
        assert_int_equal(yyc_diskcache_time_to_live(dc, "a", &left), YYC_OK);
        assert_true(left > 0 && left <= 0.001);
        yyc__kv_testing_advance_clock(1);
        /* Each read path on its own finds it expired and removes it. */
        assert_false(yyc_diskcache_contains(dc, "a"));
        assert_int_equal(rows(dir), 0);
        set_ttl(dc, "a", "value a", 0.5);
        yyc__kv_testing_advance_clock(500);
        assert_false(readable(dc, "a"));
        assert_int_equal(rows(dir), 0);
        set_ttl(dc, "a", "value a", 0.5);
        yyc__kv_testing_advance_clock(500);
        void *ext = NULL;
        size_t ext_len = 0;
        assert_int_equal(yyc_diskcache_get_extended_data(dc, "a", &ext, &ext_len), YYC_NOTFOUND);
        assert_int_equal(rows(dir), 0);
        assert_int_equal(tk_count_entries(dir, "data"), 0); /* its file went too */
        check_live(dc, "a", false);
        yyc_diskcache_release(dc);
    }
    test_rm_rf(dir);
    free(dir);
}

static void disk_time_to_live_zero_is_never_returned_and_infinity_never_expires(void **state) {
    (void)state;
    char *dir = test_temp_dir("dttl");
    yyc_diskcache *dc = open_dc(dir, 20);
    set_ttl(dc, "zero", "v", 0);
    check_live(dc, "zero", false);
    set_ttl(dc, "never", "v", INFINITY);
    yyc__kv_testing_advance_clock(100 * 365 * 24 * HOUR_MS);
    check_live(dc, "never", true);
    double left = 0;
    assert_int_equal(yyc_diskcache_time_to_live(dc, "never", &left), YYC_OK);
    assert_true(isinf(left));
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "bad", "v", 1, NULL, 0, -1), YYC_EINVAL);
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "bad", "v", 1, NULL, 0, NAN), YYC_EINVAL);
    assert_false(yyc_diskcache_contains(dc, "bad"));
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_default_time_to_live_applies_to_plain_sets_only(void **state) {
    (void)state;
    char *dir = test_temp_dir("dttl");
    yyc_diskcache *dc = open_dc(dir, 20);
    assert_true(isinf(yyc_diskcache_default_time_to_live(dc)));
    yyc_diskcache_set_default_time_to_live(dc, 5);
    assert_true(yyc_diskcache_default_time_to_live(dc) == 5);
    /* Core-wide: another holder of the path sees it. */
    yyc_diskcache *other = open_dc(dir, 20);
    assert_true(yyc_diskcache_default_time_to_live(other) == 5);
    yyc_diskcache_release(other);
    assert_int_equal(yyc_diskcache_set(dc, "plain", "v", 1, NULL, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_set_with_filename(dc, "named", "v", 1, NULL, 0, "n"), YYC_OK);
    set_ttl(dc, "own", "v", 60);
    set_ttl(dc, "never", "v", INFINITY);
    yyc__kv_testing_advance_clock(5000);
    check_live(dc, "plain", false);
    check_live(dc, "named", false);
    check_live(dc, "own", true);
    check_live(dc, "never", true);
    /* A later set replaces the time to live with its own: with no default, none. */
    yyc_diskcache_set_default_time_to_live(dc, NAN);
    assert_true(isinf(yyc_diskcache_default_time_to_live(dc)));
    assert_int_equal(yyc_diskcache_set(dc, "own", "v2", 2, NULL, 0), YYC_OK);
    yyc__kv_testing_advance_clock(HOUR_MS);
    check_live(dc, "own", true);
    yyc_diskcache_set_default_time_to_live(dc, -3);
    assert_true(yyc_diskcache_default_time_to_live(dc) == 0);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_expiry_survives_a_reopen(void **state) {
    (void)state;
    char *dir = test_temp_dir("dttl");
    yyc_diskcache *dc = open_dc(dir, 20);
    set_ttl(dc, "small", "v", 10);
    set_ttl(dc, "large", "a value above the threshold", 10);
    yyc_diskcache_close(dc);
    yyc_diskcache_release(dc);
    assert_int_equal(rows(dir), 2);

    dc = open_dc(dir, 20);
    yyc__kv_testing_advance_clock(9000);
    check_live(dc, "small", true);
    check_live(dc, "large", true);
    yyc_diskcache_close(dc);
    yyc_diskcache_release(dc);

    yyc__kv_testing_advance_clock(1000);
    dc = open_dc(dir, 20);
    check_live(dc, "small", false);
    check_live(dc, "large", false);
    assert_int_equal(rows(dir), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* Inserts a row the way YYKVStorage does: its seven columns named, the expiry left NULL. */
static void yykv_insert(sqlite3 *db, const char *key) {
    char sql[512];
    snprintf(sql, sizeof sql,
             "insert or replace into manifest " TK_COLS
             " values ('%s', NULL, 5, x'0102030405', 1, 1, NULL);",
             key);
    tk_raw_exec(db, sql);
}

static void disk_rows_written_by_yykvstorage_statements_never_expire(void **state) {
    (void)state;
    char *dir = test_temp_dir("dttl");
    yyc_diskcache *dc = open_dc(dir, 20);
    yyc_diskcache_set_default_time_to_live(dc, 1); /* the default is ours: not for its rows */
    sqlite3 *db = tk_raw_open(dir);
    yykv_insert(db, "old");
    sqlite3_close(db);
    assert_int_equal(tk_int(dir, "select yyc_expiry_ms is null from manifest where key='old'"), 1);
    yyc__kv_testing_advance_clock(100 * 365 * 24 * HOUR_MS);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, INT64_MAX), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_age(dc, DBL_MAX), YYC_OK);
    check_live(dc, "old", true);
    double left = 0;
    assert_int_equal(yyc_diskcache_time_to_live(dc, "old", &left), YYC_OK);
    assert_true(isinf(left));
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* YYKVStorage's initialization script and statements (YYKVStorage.m), run on a folder that has
 * our expiry column, index and expiring rows: all of them still work. */
static void disk_folder_with_the_expiry_column_still_opens_in_yykvstorage_schema(void **state) {
    (void)state;
    char *dir = test_temp_dir("dttl");
    yyc_diskcache *dc = open_dc(dir, 20);
    set_ttl(dc, "ours", "v", 60);
    yyc_diskcache_close(dc);
    yyc_diskcache_release(dc);
    sqlite3 *db = tk_raw_open(dir);
    tk_raw_exec(db, "pragma journal_mode = wal; pragma synchronous = normal; create table if not "
                    "exists manifest (key text, filename text, size integer, inline_data blob, "
                    "modification_time integer, last_access_time integer, extended_data blob, "
                    "primary key(key)); create index if not exists last_access_time_idx on "
                    "manifest(last_access_time);");
    yykv_insert(db, "theirs");
    tk_raw_exec(db, "update manifest set last_access_time = 2 where key = 'ours';");
    assert_int_equal(
        tk_raw_int(db, "select count(*) from manifest where key in ('ours', 'theirs')"), 2);
    assert_int_equal(tk_raw_int(db, "select sum(size) from manifest"), 6);
    tk_raw_exec(db, "select key, filename, size, inline_data, modification_time, "
                    "last_access_time, extended_data from manifest order by last_access_time "
                    "asc limit 1;");
    tk_raw_exec(db, "delete from manifest where last_access_time < 2;");
    assert_int_equal(tk_raw_int(db, "select count(*) from manifest"), 1);
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "pragma integrity_check;", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "ok");
    sqlite3_finalize(s);
    sqlite3_close(db);
    dc = open_dc(dir, 20);
    check_live(dc, "ours", true); /* (a YYKVStorage update keeps our expiry) */
    yyc__kv_testing_advance_clock(60 * 1000);
    check_live(dc, "ours", false);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

typedef int (*trim_fn)(yyc_diskcache *dc);
static int trim_count(yyc_diskcache *dc) { return yyc_diskcache_trim_to_count(dc, INT64_MAX); }
static int trim_cost(yyc_diskcache *dc) { return yyc_diskcache_trim_to_cost(dc, INT64_MAX); }
static int trim_age(yyc_diskcache *dc) { return yyc_diskcache_trim_to_age(dc, DBL_MAX); }
static int trim_space(yyc_diskcache *dc) { return yyc_diskcache_trim_to_free_space(dc, 1); }

static void disk_every_trim_within_its_limit_removes_expired_entries(void **state) {
    (void)state;
    trim_fn trims[] = {trim_count, trim_cost, trim_age, trim_space};
    for (size_t t = 0; t < sizeof trims / sizeof *trims; t++) {
        char *dir = test_temp_dir("dttl");
        yyc_diskcache *dc = open_dc(dir, 20);
        for (int i = 0; i < 300; i++) { /* more than one batch */
            char key[16];
            snprintf(key, sizeof key, "k%d", i);
            set_ttl(dc, key, i % 2 ? "a value above the threshold" : "small", i < 200 ? 1 : 5);
        }
        set_ttl(dc, "keep", "v", INFINITY);
        yyc__kv_testing_advance_clock(1000);
        assert_int_equal(trims[t](dc), YYC_OK);
        assert_int_equal(rows(dir), 101);
        assert_int_equal(tk_int(dir, "select count(*) from manifest where filename is not null"),
                         tk_count_entries(dir, "data"));
        yyc__kv_testing_advance_clock(4000);
        assert_int_equal(trims[t](dc), YYC_OK);
        assert_int_equal(rows(dir), 1);
        check_live(dc, "keep", true);
        yyc_diskcache_release(dc);
        test_rm_rf(dir);
        free(dir);
    }
}

static void disk_auto_trim_removes_expired_entries(void **state) {
    (void)state;
    char *dir = test_temp_dir("dttl");
    yyc_diskcache *dc = open_dc(dir, 20);
    set_ttl(dc, "a", "v", 1);
    set_ttl(dc, "b", "v", INFINITY);
    yyc__kv_testing_advance_clock(1000);
    yyc_diskcache_set_auto_trim_interval(dc, 0.01);
    for (int i = 0; i < 5000 && rows(dir) != 1; i++) usleep(2000);
    assert_int_equal(rows(dir), 1); /* no read removed it: the auto-trim did */
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    check_live(dc, "b", true);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_expired_rows_are_found_through_the_expiry_index(void **state) {
    (void)state;
    char *dir = test_temp_dir("dttl");
    yyc_diskcache *dc = open_dc(dir, 20);
    set_ttl(dc, "a", "v", 1);
    sqlite3 *db = tk_raw_open(dir);
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "explain query plan select rowid, filename, size from "
                                        "manifest where yyc_expiry_ms <= 5 order by "
                                        "yyc_expiry_ms;",
                                        -1, &s, NULL),
                     SQLITE_OK);
    bool uses_index = false;
    while (sqlite3_step(s) == SQLITE_ROW)
        if (strstr((const char *)sqlite3_column_text(s, 3), "yyc_expiry_idx")) uses_index = true;
    sqlite3_finalize(s);
    sqlite3_close(db);
    assert_true(uses_index);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void kv_reads_skip_a_row_whose_expiry_has_passed(void **state) {
    (void)state;
    char *dir = test_temp_dir("dttl");
    yyc_kv *kv = NULL;
    assert_int_equal(yyc_kv_open(dir, YYC_KV_MIXED, &kv), YYC_OK);
    assert_int_equal(
        yyc__kv_save_with_expiry(kv, "a", "v", 1, NULL, NULL, 0, yyc__kv_now_ms() + 10), YYC_OK);
    assert_int_equal(yyc__kv_save_with_expiry(kv, "b", "v", 1, NULL, NULL, 0, 0), YYC_OK);
    assert_int_equal(yyc_kv_exists(kv, "a"), YYC_OK);
    yyc__kv_testing_advance_clock(10);
    yyc_kv_item *item = NULL;
    assert_int_equal(yyc_kv_exists(kv, "a"), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_get_item(kv, "a", &item), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_get_item_info(kv, "a", &item), YYC_NOTFOUND);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_kv_get_value(kv, "a", &v, &len), YYC_NOTFOUND);
    const char *keys[] = {"a", "b"};
    yyc_kv_item **items = NULL;
    size_t n = 0;
    assert_int_equal(yyc_kv_get_items(kv, keys, 2, &items, &n), YYC_OK);
    assert_int_equal(n, 1);
    assert_string_equal(items[0]->key, "b");
    yyc_kv_items_free(items, n);
    int64_t expired = 0;
    assert_int_equal(yyc__kv_count_expired(kv, &expired), YYC_OK);
    assert_int_equal(expired, 1);
    assert_int_equal(yyc__kv_remove_expired(kv, &expired), YYC_OK);
    assert_int_equal(expired, 1);
    assert_int_equal(yyc_kv_exists(kv, "b"), YYC_OK);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* Every case runs on a frozen clock: only the case moves it. */
static int freeze_clock(void **state) {
    (void)state;
    yyc__kv_testing_freeze_clock(true);
    return 0;
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup(disk_entry_expires_exactly_at_its_time_to_live, freeze_clock),
    cmocka_unit_test_setup(disk_time_to_live_zero_is_never_returned_and_infinity_never_expires,
                           freeze_clock),
    cmocka_unit_test_setup(disk_default_time_to_live_applies_to_plain_sets_only, freeze_clock),
    cmocka_unit_test_setup(disk_expiry_survives_a_reopen, freeze_clock),
    cmocka_unit_test_setup(disk_rows_written_by_yykvstorage_statements_never_expire, freeze_clock),
    cmocka_unit_test_setup(disk_folder_with_the_expiry_column_still_opens_in_yykvstorage_schema,
                           freeze_clock),
    cmocka_unit_test_setup(disk_every_trim_within_its_limit_removes_expired_entries, freeze_clock),
    cmocka_unit_test_setup(disk_auto_trim_removes_expired_entries, freeze_clock),
    cmocka_unit_test_setup(disk_expired_rows_are_found_through_the_expiry_index, freeze_clock),
    cmocka_unit_test_setup(kv_reads_skip_a_row_whose_expiry_has_passed, freeze_clock),
};

YYC_TEST_MAIN(tests)
