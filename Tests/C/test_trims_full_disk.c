/*
 * test_trims_full_disk.c - a disk that the cache itself filled can be freed through the cache
 * (issue 11, item 3).
 *
 * A child process mounts a 2 MiB tmpfs in a private mount namespace (skipped where mounting is
 * not permitted, as in test_faults.c) and fills it through the cache until a set fails with
 * YYC_ENOSPC - large values as files, small ones inline, so both the data files and the WAL
 * hold the space. Then each kind of removal runs on that full disk: it must succeed, remove
 * rows and give space back, leave no row naming a missing file, and truncate the WAL when it
 * was a trim. The disk is filled again before the next one. At the end a set works again.
 */
#include "reliability_support.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

typedef struct fixture {
    char *dir;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->dir = test_temp_dir("trims-full");
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    test_rm_rf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static int64_t free_bytes(const char *dir) {
    struct statvfs sv;
    REL_CHECK(statvfs(dir, &sv) == 0, "statvfs");
    return (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
}

static int64_t file_size(const char *dir, const char *name) {
    char *p = rel_path(dir, name);
    struct stat st;
    int64_t n = stat(p, &st) == 0 ? (int64_t)st.st_size : 0;
    free(p);
    return n;
}

static int64_t count_of(yyc_diskcache *dc) {
    int64_t n = -1;
    REL_CHECK(yyc_diskcache_total_count(dc, &n) == YYC_OK, "count: %s", rel_last_error());
    return n;
}

/* Saves values under prefix-<i> (every third one large: a data file) until a set fails, which
 * must be with YYC_ENOSPC. Returns how many were saved. */
static int fill_until_full(yyc_diskcache *dc, const char *prefix) {
    static unsigned char value[40000];
    memset(value, 'x', sizeof value);
    for (int i = 0; i < 100000; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s-%d", prefix, i);
        size_t len = i % 3 == 0 ? 30000 : 3000;
        value[0] = (unsigned char)i;
        int s = yyc_diskcache_set(dc, key, value, len, NULL, 0);
        if (s == YYC_OK) continue;
        REL_CHECK(s == YYC_ENOSPC, "filling: %s", rel_last_error());
        return i;
    }
    REL_CHECK(false, "the disk never filled");
    return 0;
}

static void expect_consistent(const char *cache) {
    rel_manifest_scan scan = rel_scan_manifest(cache);
    REL_CHECK(scan.rc == SQLITE_OK, "scan: %d", scan.rc);
    REL_CHECK(scan.missing == 0, "%lld rows name missing files (%s)", (long long)scan.missing,
              scan.first_missing);
}

enum op {
    REMOVE_FILE_VALUE,
    REMOVE_INLINE_VALUE,
    TRIM_COUNT,
    TRIM_COST,
    TRIM_AGE,
    TRIM_FREE,
    REMOVE_ALL_PROGRESS
};
static const char *const op_names[] = {"remove of a file value",
                                       "remove of an inline value",
                                       "trim to count",
                                       "trim to cost",
                                       "trim to age",
                                       "trim to free space",
                                       "remove-all with progress"};

/* --child full DIR */
static int child_full(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *dir = argv[1];
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", dir, "tmpfs", 0, "size=2m,mode=0700") != 0) {
        fprintf(stderr, "full: cannot mount a tmpfs here (%s): skipped\n", strerror(errno));
        return 77;
    }
    char *cache = rel_path(dir, "cache");
    yyc_diskcache *dc = NULL;
    REL_CHECK(yyc_diskcache_open(cache, REL_THRESHOLD, &dc) == YYC_OK, "open: %s",
              rel_last_error());
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    for (int op = REMOVE_FILE_VALUE; op <= REMOVE_ALL_PROGRESS; op++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "fill%d", op);
        if (op == TRIM_AGE) {
            /* Rows to age out: written while there is room, then made old through SQLite. */
            static unsigned char old[30000];
            memset(old, 'o', sizeof old);
            for (int i = 0; i < 5; i++) { /* two as files, three inline */
                char key[32];
                snprintf(key, sizeof key, "aged-%d", i);
                REL_CHECK(yyc_diskcache_set(dc, key, old, i < 2 ? sizeof old : 3, NULL, 0) ==
                              YYC_OK,
                          "aged: %s", rel_last_error());
            }
            sqlite3 *raw = NULL;
            char *db = rel_path(cache, "manifest.sqlite");
            REL_CHECK(sqlite3_open(db, &raw) == SQLITE_OK, "raw open");
            sqlite3_busy_timeout(raw, 5000);
            REL_CHECK(sqlite3_exec(raw,
                                   "update manifest set last_access_time = 1000 "
                                   "where key like 'aged-%';",
                                   NULL, NULL, NULL) == SQLITE_OK,
                      "age rows: %s", sqlite3_errmsg(raw));
            sqlite3_close(raw);
            free(db);
        }
        int saved = fill_until_full(dc, prefix);
        REL_CHECK(saved > 0 || op > REMOVE_FILE_VALUE, "nothing saved before the disk was full");
        int64_t before = count_of(dc);
        int64_t free_before = free_bytes(dir);
        char *data = rel_path(cache, "data");
        int files_before = rel_count_entries(data, NULL);
        int s = YYC_OK;
        switch (op) {
        case REMOVE_FILE_VALUE: s = yyc_diskcache_remove(dc, "fill0-0"); break;
        case REMOVE_INLINE_VALUE: s = yyc_diskcache_remove(dc, "fill0-1"); break;
        case TRIM_COUNT: s = yyc_diskcache_trim_to_count(dc, before - 10); break;
        case TRIM_COST: {
            int64_t cost = 0;
            REL_CHECK(yyc_diskcache_total_cost(dc, &cost) == YYC_OK, "cost: %s", rel_last_error());
            s = yyc_diskcache_trim_to_cost(dc, cost - 100000);
            break;
        }
        case TRIM_AGE: s = yyc_diskcache_trim_to_age(dc, (double)(time(NULL) - 5000)); break;
        case TRIM_FREE: s = yyc_diskcache_trim_to_free_space(dc, free_before + 200000); break;
        case REMOVE_ALL_PROGRESS: s = yyc_diskcache_remove_all_progress(dc, NULL, NULL); break;
        }
        REL_CHECK(s == YYC_OK, "%s on a full disk: %s", op_names[op], rel_last_error());
        int64_t after = count_of(dc);
        int64_t free_after = free_bytes(dir);
        fprintf(stderr, "full: %s: rows %lld -> %lld, free %lld -> %lld, WAL %lld\n", op_names[op],
                (long long)before, (long long)after, (long long)free_before, (long long)free_after,
                (long long)file_size(cache, "manifest.sqlite-wal"));
        REL_CHECK(after < before, "%s removed no row", op_names[op]);
        int files_after = rel_count_entries(data, NULL);
        free(data);
        /* Removing only inline rows frees no file; their space comes back with the WAL's
         * checkpoint, which a WAL of new pages cannot have on a full disk. Removing one file
         * value frees its file, but SQLite may use that space at once (the delete's WAL frames,
         * a background checkpoint growing the database file), so what is checked is that the
         * file went; the trims, which end with a truncating checkpoint, must give space back. */
        if (op == REMOVE_FILE_VALUE)
            REL_CHECK(files_after == files_before - 1, "%s left its file (%d -> %d)", op_names[op],
                      files_before, files_after);
        else if (op != REMOVE_INLINE_VALUE)
            REL_CHECK(free_after > free_before, "%s gave no space back", op_names[op]);
        if (op >= TRIM_COUNT) /* a trim ends with a TRUNCATE checkpoint */
            REL_CHECK(file_size(cache, "manifest.sqlite-wal") == 0, "%s left the WAL",
                      op_names[op]);
        if (op == TRIM_AGE) {
            for (int i = 0; i < 5; i++) {
                char key[32];
                snprintf(key, sizeof key, "aged-%d", i);
                REL_CHECK(!yyc_diskcache_contains(dc, key), "aged row %d stayed", i);
            }
        }
        if (op == REMOVE_ALL_PROGRESS) REL_CHECK(after == 0, "%lld rows left", (long long)after);
        if (op == TRIM_FREE)
            REL_CHECK(free_after >= free_before + 200000, "free space %lld, wanted %lld",
                      (long long)free_after, (long long)(free_before + 200000));
        expect_consistent(cache);
    }
    /* Sets work again: a file value and an inline one. */
    static unsigned char value[30000];
    memset(value, 'n', sizeof value);
    REL_CHECK(yyc_diskcache_set(dc, "new-large", value, sizeof value, NULL, 0) == YYC_OK,
              "set after freeing: %s", rel_last_error());
    REL_CHECK(yyc_diskcache_set(dc, "new-small", value, 100, NULL, 0) == YYC_OK,
              "set after freeing: %s", rel_last_error());
    void *v = NULL;
    size_t len = 0;
    REL_CHECK(yyc_diskcache_get(dc, "new-large", &v, &len) == YYC_OK && len == sizeof value &&
                  memcmp(v, value, len) == 0,
              "read back");
    free(v);
    expect_consistent(cache);
    yyc_diskcache_release(dc);
    free(cache);
    return 0;
}

static void removals_and_every_trim_free_a_disk_the_cache_filled(void **state) {
    fixture *f = *state;
    const char *args[] = {"full", f->dir, NULL};
    int rc = rel_run(args, 120.0);
    if (rc == 77) skip();
    assert_int_equal(rc, 0);
}

static const rel_child children[] = {
    {"full", child_full},
    {NULL, NULL},
};

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--child") == 0)
        return rel_dispatch(children, argc - 2, argv + 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(removals_and_every_trim_free_a_disk_the_cache_filled, setup,
                                        teardown),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
