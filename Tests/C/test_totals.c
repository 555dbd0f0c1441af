/*
 * test_totals.c - the manifest's count and total cost in O(1) (kv_totals.c): carried by the
 * connection's own changes without a scan, exact after every kind of write, and never trusted
 * after another connection's commit (another process, YYKVStorage's plain statements), hostile
 * sizes included. Each case compares with a scan by a second, raw connection. The fault loop
 * (test_fault_loop.c) checks the same after a fault at every step of every operation.
 */
#include "test_kv_support.h"

#include "platform/internal.h"
#include "kv/kv_private.h"
#include "tsan_fork_children.h"

#include <signal.h>
#include <sys/wait.h>

static void assert_totals_match_a_scan(yyc_kv *kv, const char *dir) {
    int64_t count = -1, cost = -1, scan_count, scan_cost;
    assert_int_equal(yyc_kv_count(kv, &count), YYC_OK);
    assert_int_equal(yyc_kv_size(kv, &cost), YYC_OK);
    tk_scan_totals(dir, &scan_count, &scan_cost);
    assert_int_equal(count, scan_count);
    assert_int_equal(cost, scan_cost);
}

static yyc_kv *open_kv(const char *dir) {
    yyc_kv *kv = NULL;
    assert_int_equal(yyc_kv_open(dir, YYC_KV_MIXED, &kv), YYC_OK);
    return kv;
}

static void save_n(yyc_kv *kv, const char *prefix, int from, int to, size_t len) {
    char key[32], name[40];
    char *v = malloc(len + 7);
    assert_non_null(v);
    memset(v, 'v', len + 7);
    for (int i = from; i < to; i++) {
        snprintf(key, sizeof key, "%s%d", prefix, i);
        snprintf(name, sizeof name, "f-%s%d", prefix, i);
        /* every third value in a file */
        assert_int_equal(
            yyc_kv_save(kv, key, v, len + (size_t)(i % 7), i % 3 ? NULL : name, NULL, 0), YYC_OK);
    }
    free(v);
}

static void totals_of_own_writes_are_carried_without_a_scan(void **state) {
    (void)state;
    char *dir = test_temp_dir("totals-own");
    yyc_kv *kv = open_kv(dir);
    save_n(kv, "k", 0, 300, 100);
    assert_totals_match_a_scan(kv, dir);
    uint64_t scans = yyc__kv_totals_scans(kv);
    assert_true(scans >= 1);
    /* Fresh saves, replaces of another size (inline <-> file), removals, a key list, trims of
     * every kind, a group commit and a deferred batch: none of them sums the manifest again. */
    save_n(kv, "k", 0, 100, 300);
    assert_totals_match_a_scan(kv, dir);
    save_n(kv, "n", 0, 50, 10);
    assert_totals_match_a_scan(kv, dir);
    /* (several commits between two reads, some of them without a change) */
    assert_int_equal(yyc_kv_remove(kv, "k7"), YYC_OK);
    assert_int_equal(yyc_kv_remove(kv, "absent"), YYC_OK);
    assert_int_equal(yyc_kv_remove(kv, "absent2"), YYC_OK);
    const char *keys[] = {"k8", "k9", "n3"};
    assert_int_equal(yyc_kv_remove_keys(kv, keys, 3), YYC_OK);
    assert_totals_match_a_scan(kv, dir);
    assert_int_equal(yyc_kv_remove_larger_than(kv, 305), YYC_OK);
    assert_totals_match_a_scan(kv, dir);
    assert_int_equal(yyc_kv_remove_to_fit_count(kv, 200), YYC_OK);
    assert_totals_match_a_scan(kv, dir);
    int64_t cost = 0;
    assert_int_equal(yyc_kv_size(kv, &cost), YYC_OK);
    assert_int_equal(yyc_kv_remove_to_fit_size(kv, cost / 2), YYC_OK);
    assert_totals_match_a_scan(kv, dir);
    yyc__kv_write w[3] = {{.key = "g0", .value = "G0", .len = 2},
                          {.key = "g1", .value = "G11", .len = 3},
                          {.key = "n4", .remove = true}};
    yyc__kv_write *p[3] = {&w[0], &w[1], &w[2]};
    assert_int_equal(yyc__kv_save_each(kv, p, 3), 0);
    assert_totals_match_a_scan(kv, dir);
    yyc__kv_write b[2] = {{.key = "b0", .value = "B", .len = 1}, {.key = "g0", .remove = true}};
    yyc__kv_write *pb[2] = {&b[0], &b[1]};
    assert_int_equal(yyc__kv_apply_batch(kv, pb, 2), YYC_OK);
    assert_totals_match_a_scan(kv, dir);
    assert_int_equal(yyc__kv_totals_scans(kv), scans);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void another_connection_s_commits_are_counted_at_the_next_read(void **state) {
    (void)state;
    char *dir = test_temp_dir("totals-foreign");
    yyc_kv *kv = open_kv(dir);
    save_n(kv, "k", 0, 50, 100);
    assert_totals_match_a_scan(kv, dir);
    /* YYKVStorage's own statements, on a connection without our hooks. */
    sqlite3 *other = tk_raw_open(dir);
    tk_raw_exec(other, "insert or replace into manifest " TK_COLS
                       " values ('x1', NULL, 1000, zeroblob(1000), 1, 1, NULL);");
    assert_totals_match_a_scan(kv, dir);
    tk_raw_exec(other, "insert or replace into manifest " TK_COLS
                       " values ('k1', NULL, 5, x'0102030405', 1, 1, NULL);");
    assert_totals_match_a_scan(kv, dir);
    tk_raw_exec(other, "delete from manifest where key in ('k2', 'k3', 'x1');");
    assert_totals_match_a_scan(kv, dir);
    tk_raw_exec(other, "update manifest set size = size + 1000 where key = 'k4';");
    assert_totals_match_a_scan(kv, dir);
    /* Its commit between two of ours. */
    save_n(kv, "m", 0, 3, 10);
    tk_raw_exec(other, "delete from manifest where key = 'k5';");
    save_n(kv, "m", 3, 6, 10);
    assert_totals_match_a_scan(kv, dir);
    /* And inside our transaction's window: a trim that reads the totals after it. */
    tk_raw_exec(other, "delete from manifest where key like 'm%';");
    assert_int_equal(yyc_kv_remove_to_fit_count(kv, 40), YYC_OK);
    assert_totals_match_a_scan(kv, dir);
    int64_t count = 0;
    assert_int_equal(yyc_kv_count(kv, &count), YYC_OK);
    assert_int_equal(count, 40);
    sqlite3_close(other);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void a_second_storage_on_the_folder_in_the_same_process_is_another_connection(void **state) {
    (void)state;
    char *dir = test_temp_dir("totals-two");
    yyc_kv *a = open_kv(dir), *b = open_kv(dir);
    save_n(a, "a", 0, 20, 10);
    assert_totals_match_a_scan(a, dir);
    assert_totals_match_a_scan(b, dir);
    save_n(b, "b", 0, 20, 10);
    assert_int_equal(yyc_kv_remove(b, "a3"), YYC_OK);
    assert_totals_match_a_scan(a, dir);
    save_n(a, "a", 0, 5, 50);
    assert_totals_match_a_scan(b, dir);
    assert_totals_match_a_scan(a, dir);
    yyc_kv_close(a);
    yyc_kv_close(b);
    test_rm_rf(dir);
    free(dir);
}

static void hostile_sizes_count_as_the_sum_counts_them(void **state) {
    (void)state;
    char *dir = test_temp_dir("totals-hostile");
    yyc_kv *kv = open_kv(dir);
    save_n(kv, "k", 0, 10, 100);
    assert_totals_match_a_scan(kv, dir);
    sqlite3 *other = tk_raw_open(dir);
    tk_raw_exec(other, "insert into manifest " TK_COLS " values ('h1', NULL, NULL, x'00', 1, 1, "
                       "NULL), ('h2', NULL, 'text', x'00', 1, 1, NULL), ('h3', NULL, -5, x'00', 1, "
                       "1, NULL), ('h4', NULL, 1.5, x'00', 1, 1, NULL), (NULL, NULL, 7, x'00', 1, "
                       "1, NULL), (x'ff', NULL, 9, x'00', 1, 1, NULL);");
    assert_totals_match_a_scan(kv, dir);
    /* Past INT64_MAX: saturated, then exact again once the huge rows go. */
    tk_raw_exec(other, "insert into manifest " TK_COLS
                       " values ('big1', NULL, 9223372036854775807, x'00', 1, 1, NULL), ('big2', "
                       "NULL, 9223372036854775807, x'00', 1, 1, NULL);");
    int64_t cost = 0;
    assert_int_equal(yyc_kv_size(kv, &cost), YYC_OK);
    assert_int_equal(cost, INT64_MAX);
    save_n(kv, "s", 0, 3, 10); /* (our own changes on top of a saturated total) */
    assert_int_equal(yyc_kv_size(kv, &cost), YYC_OK);
    assert_int_equal(cost, INT64_MAX);
    assert_int_equal(yyc_kv_remove(kv, "big1"), YYC_OK);
    assert_int_equal(yyc_kv_remove(kv, "big2"), YYC_OK);
    assert_totals_match_a_scan(kv, dir);
    /* Our own deletions of hostile rows (a trim deletes them like any other). */
    assert_int_equal(yyc_kv_remove_to_fit_count(kv, 5), YYC_OK);
    assert_totals_match_a_scan(kv, dir);
    sqlite3_close(other);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* A manifest made by someone else may declare `size` with a type that converts the integers
 * bound to it (TEXT or REAL affinity): the scan then counts those rows' sizes as 0, and so must
 * the carried totals, whatever the saves bound. INTEGER, NUMERIC and no type keep them. */
static void a_size_column_of_any_declared_type_is_counted_as_the_scan_counts_it(void **state) {
    (void)state;
    static const char *const types[] = {
        "text",   "real", "varchar(20)", "double precision", "numeric", "",
        "bigint", "blob", "blob double", "floating point" /* (INT: integer affinity) */};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        char *dir = test_temp_dir("totals-size-type");
        char p[4096], sql[1024];
        assert_int_equal(mkdir(tk_join(p, sizeof p, dir, "data"), 0700), 0);
        snprintf(sql, sizeof sql,
                 "create table manifest (key text, filename text, size %s, inline_data blob, "
                 "modification_time integer, last_access_time integer, extended_data blob, "
                 "primary key(key)); create index last_access_time_idx on "
                 "manifest(last_access_time);",
                 types[t]);
        tk_exec(dir, sql);
        yyc_kv *kv = open_kv(dir);
        assert_totals_match_a_scan(kv, dir); /* (the first read sums: then they are carried) */
        save_n(kv, "k", 0, 20, 100);
        save_n(kv, "k", 10, 30, 50); /* replaces too */
        int64_t count = 0, cost = 0, scan_count = 0, scan_cost = 0;
        assert_int_equal(yyc_kv_count(kv, &count), YYC_OK);
        assert_int_equal(yyc_kv_size(kv, &cost), YYC_OK);
        tk_scan_totals(dir, &scan_count, &scan_cost);
        if (count != scan_count || cost != scan_cost)
            fail_msg("size %s: totals %lld / %lld, a scan %lld / %lld", types[t], (long long)count,
                     (long long)cost, (long long)scan_count, (long long)scan_cost);
        yyc_kv_close(kv);
        test_rm_rf(dir);
        free(dir);
    }
}

static void remove_all_leaves_an_empty_total_and_later_writes_count(void **state) {
    (void)state;
    char *dir = test_temp_dir("totals-clear");
    yyc_kv *kv = open_kv(dir);
    save_n(kv, "k", 0, 100, 100);
    assert_totals_match_a_scan(kv, dir);
    assert_int_equal(yyc_kv_remove_all(kv), YYC_OK);
    int64_t count = -1, cost = -1;
    assert_int_equal(yyc_kv_count(kv, &count), YYC_OK);
    assert_int_equal(yyc_kv_size(kv, &cost), YYC_OK);
    assert_int_equal(count, 0);
    assert_int_equal(cost, 0);
    save_n(kv, "n", 0, 30, 10);
    assert_totals_match_a_scan(kv, dir);
    /* With a removal watch on the delete goes row by row through the hooks. */
    yyc__kv_watch_removals(kv);
    assert_int_equal(yyc_kv_remove_all(kv), YYC_OK);
    char **keys = NULL;
    bool lost = false;
    size_t n = yyc__kv_unwatch_removals(kv, &keys, &lost);
    for (size_t i = 0; i < n; i++) free(keys[i]);
    free(keys);
    assert_int_equal(n, 30);
    save_n(kv, "p", 0, 7, 10);
    assert_totals_match_a_scan(kv, dir);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* A child process saves and removes while the parent does the same and reads its totals; every
 * read of the parent equals the parent's own scan inside the same moment is not observable, so
 * the check is after each child round (the child waits for the parent between rounds) and at
 * the end. */
static void another_process_writing_between_our_reads_never_makes_them_wrong(void **state) {
    (void)state;
    char *dir = test_temp_dir("totals-process");
    yyc_kv *kv = open_kv(dir);
    save_n(kv, "p", 0, 50, 40);
    assert_totals_match_a_scan(kv, dir);
    int to_child[2], to_parent[2];
    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(to_parent), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(to_child[1]);
        close(to_parent[0]);
        yyc_kv *c = NULL;
        if (yyc_kv_open(dir, YYC_KV_MIXED, &c) != YYC_OK) _exit(2);
        char go;
        for (int round = 0; round < 20; round++) {
            if (read(to_child[0], &go, 1) != 1) _exit(3);
            char key[32];
            for (int i = 0; i < 10; i++) {
                snprintf(key, sizeof key, "c%d", round * 10 + i);
                if (yyc_kv_save(c, key, "child-value", 1 + (size_t)i, NULL, NULL, 0) != YYC_OK)
                    _exit(4);
            }
            snprintf(key, sizeof key, "p%d", round);
            if (yyc_kv_remove(c, key) != YYC_OK) _exit(5);
            if (write(to_parent[1], "k", 1) != 1) _exit(6);
        }
        yyc_kv_close(c);
        _exit(0);
    }
    close(to_child[0]);
    close(to_parent[1]);
    for (int round = 0; round < 20; round++) {
        save_n(kv, "q", round * 3, round * 3 + 3, 20); /* our commits between the child's */
        assert_int_equal(write(to_child[1], "g", 1), 1);
        int64_t count;
        assert_int_equal(yyc_kv_count(kv, &count), YYC_OK); /* (racing the child's round) */
        char done;
        if (read(to_parent[0], &done, 1) != 1) {
            int status = 0;
            waitpid(pid, &status, 0);
            fail_msg("the child stopped in round %d (status %#x)", round, status);
        }
        assert_totals_match_a_scan(kv, dir);
    }
    close(to_child[1]);
    close(to_parent[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_totals_match_a_scan(kv, dir);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void the_disk_cache_s_totals_follow_its_sets_trims_and_deferred_writes(void **state) {
    (void)state;
    char *dir = test_temp_dir("totals-dc");
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 1024, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    char v[2000];
    memset(v, 'd', sizeof v);
    char key[32];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "d%d", i);
        assert_int_equal(yyc_diskcache_set(dc, key, v, (size_t)(i % 2 ? 100 : 2000), NULL, 0),
                         YYC_OK);
    }
    int64_t count = 0, cost = 0, sc, scost;
    assert_int_equal(yyc_diskcache_total_count(dc, &count), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_cost(dc, 50000), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, 30), YYC_OK);
    assert_int_equal(yyc_diskcache_total_count(dc, &count), YYC_OK);
    assert_int_equal(yyc_diskcache_total_cost(dc, &cost), YYC_OK);
    tk_scan_totals(dir, &sc, &scost);
    assert_int_equal(count, sc);
    assert_int_equal(cost, scost);
    assert_true(count <= 30 && cost <= 50000);
    assert_int_equal(yyc_diskcache_set_write_mode(dc, YYC_WRITE_DEFERRED, 60.0), YYC_OK);
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "e%d", i);
        assert_int_equal(yyc_diskcache_set(dc, key, v, 10, NULL, 0), YYC_OK);
    }
    assert_int_equal(yyc_diskcache_total_count(dc, &count), YYC_OK); /* (commits the queue) */
    assert_int_equal(yyc_diskcache_total_cost(dc, &cost), YYC_OK);
    tk_scan_totals(dir, &sc, &scost);
    assert_int_equal(count, sc);
    assert_int_equal(cost, scost);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(totals_of_own_writes_are_carried_without_a_scan),
    cmocka_unit_test(another_connection_s_commits_are_counted_at_the_next_read),
    cmocka_unit_test(a_second_storage_on_the_folder_in_the_same_process_is_another_connection),
    cmocka_unit_test(hostile_sizes_count_as_the_sum_counts_them),
    cmocka_unit_test(a_size_column_of_any_declared_type_is_counted_as_the_scan_counts_it),
    cmocka_unit_test(remove_all_leaves_an_empty_total_and_later_writes_count),
    cmocka_unit_test(another_process_writing_between_our_reads_never_makes_them_wrong),
    cmocka_unit_test(the_disk_cache_s_totals_follow_its_sets_trims_and_deferred_writes),
};

YYC_TEST_MAIN(tests)
