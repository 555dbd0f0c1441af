/*
 * test_faults.c - corrupt files, lost files, full disks and read-only folders (issue 7).
 *
 * Each case damages a cache folder the way a crash, a bad disk, a full disk or a careless user
 * would, then checks what DESIGN.md promises: the library gives a clear error or rebuilds the
 * cache (reporting YYC_ECORRUPT), never crashes, never returns a wrong value (every value read
 * is checked against the (key, version) it was written with; reliability_support.h), and works
 * again once the fault is gone.
 *
 * Full disks: a real one (a 2 MiB tmpfs mounted in a private mount namespace of a child,
 * filled up; skipped where mounting is not permitted), and RLIMIT_FSIZE in a child (SIGXFSZ
 * ignored, so writes fail with EFBIG), once on a data file and once on the manifest's WAL.
 * SQLite's PRAGMA max_page_count is per connection and not persistent, so it cannot be
 * injected into the library's own connection from outside; the WAL limit and the full tmpfs
 * cover "SQLite is full" instead.
 * A read-only folder is simulated in a child that drops its capabilities (the tests run as
 * root, for whom permission bits do not apply otherwise).
 */
#include "reliability_support.h"

#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>

/* ---------------------------------------------------------------- helpers */

typedef struct fixture {
    char *dir;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->dir = test_temp_dir("faults");
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    char *data = rel_path(f->dir, "data");
    chmod(f->dir, 0700);
    chmod(data, 0700);
    free(data);
    test_rm_rf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void fkey(unsigned k, char out[16]) { snprintf(out, 16, "f-%03u", k); }

static yyc_diskcache *open_ok(const char *dir) {
    yyc_diskcache *dc = NULL;
    int s = yyc_diskcache_open(dir, REL_THRESHOLD, &dc);
    if (s != YYC_OK) fail_msg("open: %s", rel_last_error());
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    return dc;
}

static int put(yyc_diskcache *dc, const char *key, uint64_t version) {
    size_t len;
    unsigned char *v = rel_value_make(key, version, &len);
    rel_ext e = rel_ext_make(key, version);
    int s = yyc_diskcache_set(dc, key, v, len, &e, sizeof e);
    free(v);
    return s;
}

/* Reads key: returns the version read (0 = miss); *status receives the call's status. A value
 * that is not a complete value of this key fails the test: that is a wrong value. */
static uint64_t read_version(yyc_diskcache *dc, const char *key, int *status) {
    void *v = NULL;
    size_t len = 0;
    int s = yyc_diskcache_get(dc, key, &v, &len);
    if (status) *status = s;
    uint64_t ver = 0;
    if (s == YYC_OK) {
        const char *why = NULL;
        ver = rel_value_check(key, v, len, &why);
        if (!ver) {
            yyc_free(v);
            fail_msg("%s returned a wrong value (%zu bytes): %s", key, len, why);
        }
    }
    yyc_free(v);
    return ver;
}

static void expect_version(yyc_diskcache *dc, const char *key, uint64_t want) {
    int s;
    uint64_t got = read_version(dc, key, &s);
    if (got != want)
        fail_msg("%s: read version %llu (status %s), expected %llu", key, (unsigned long long)got,
                 yyc_status_name(s), (unsigned long long)want);
}

/* The cache at dir works: a new small and a new large value are stored and read back. */
static void expect_working(const char *dir) {
    yyc_diskcache *dc = open_ok(dir);
    assert_int_equal(put(dc, "works-small", 1000), YYC_OK);
    assert_int_equal(put(dc, "works-large", 1001), YYC_OK);
    expect_version(dc, "works-small", 1000);
    expect_version(dc, "works-large", 1001);
    yyc_diskcache_release(dc);
}

/* An odd (large) version whose value length is within [lo, hi]. */
static uint64_t large_version_between(const char *key, size_t lo, size_t hi) {
    for (uint64_t v = 1;; v += 2) {
        size_t n = rel_value_len(key, v);
        if (n >= lo && n <= hi) return v;
    }
}

/* Fills keys [0, n): even keys small (version 2), odd keys large (version 3). */
static void fill(const char *dir, unsigned n) {
    yyc_diskcache *dc = open_ok(dir);
    for (unsigned k = 0; k < n; k++) {
        char key[16];
        fkey(k, key);
        assert_int_equal(put(dc, key, k % 2 ? 3 : 2), YYC_OK);
    }
    yyc_diskcache_release(dc);
}

static void write_garbage(const char *path, size_t len, uint64_t seed, const void *prefix,
                          size_t prefix_len) {
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)rel_splitmix64(&seed);
    if (prefix) memcpy(buf, prefix, prefix_len);
    assert_true(rel_write_file(path, buf, len));
    free(buf);
}

static void remove_manifest_side_files(const char *dir) {
    char *wal = rel_path(dir, "manifest.sqlite-wal");
    char *shm = rel_path(dir, "manifest.sqlite-shm");
    unlink(wal);
    unlink(shm);
    free(wal);
    free(shm);
}

/* Opens the cache after a manifest fault: the open must either succeed (the manifest was
 * rebuilt and that was reported as YYC_ECORRUPT) or fail with a clear error. Returns the
 * handle or NULL. */
static yyc_diskcache *open_after_manifest_fault(const char *dir, bool *rebuilt) {
    yyc_diskcache *dc = NULL;
    int s = yyc_diskcache_open(dir, REL_THRESHOLD, &dc);
    yyc_error e;
    yyc_last_error(&e);
    *rebuilt = s == YYC_OK && e.code == YYC_ECORRUPT;
    if (s != YYC_OK) {
        fprintf(stderr, "open after the fault: %s (%s)\n", yyc_status_name(s), rel_last_error());
        assert_true(s == YYC_ECORRUPT || s == YYC_ESQLITE || s == YYC_EIO);
        return NULL;
    }
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    return dc;
}

/* Corruption events reported through the error hook. */
static void count_corrupt(void *ctx, const yyc_error *e) {
    if (e->code == YYC_ECORRUPT) ++*(int *)ctx;
}

/* ---------------------------------------------------------------- the manifest */

static void garbage_manifest(const char *dir, bool sqlite_header) {
    fill(dir, 6);
    char *db = rel_path(dir, "manifest.sqlite");
    static const char header[16] = "SQLite format 3";
    write_garbage(db, 65536, 42, sqlite_header ? header : NULL, sqlite_header ? 16 : 0);
    remove_manifest_side_files(dir);
    bool rebuilt = false;
    yyc_diskcache *dc = open_after_manifest_fault(dir, &rebuilt);
    assert_non_null(dc); /* DESIGN.md: a manifest that is not a database is rebuilt */
    assert_true(rebuilt);
    /* The rebuild happened before any hook could be set: it is delivered when one is. */
    int events = 0;
    yyc_diskcache_set_error_hook(dc, count_corrupt, &events);
    assert_true(events >= 1);
    yyc_diskcache_set_error_hook(dc, NULL, NULL);
    for (unsigned k = 0; k < 6; k++) {
        char key[16];
        fkey(k, key);
        expect_version(dc, key, 0); /* the old values went with the manifest */
    }
    yyc_diskcache_release(dc);
    /* The old data files were moved to the trash and are deleted in the background. */
    char *trash = rel_path(dir, "trash");
    char *data = rel_path(dir, "data");
    assert_true(WAIT_UNTIL(rel_count_entries(trash, NULL) == 0, 10.0));
    assert_int_equal(rel_count_entries(data, NULL), 0);
    expect_working(dir);
    free(trash);
    free(data);
    free(db);
}

static void garbage_manifest_is_rebuilt_and_reported(void **state) {
    garbage_manifest(((fixture *)*state)->dir, false);
}

static void garbage_after_an_sqlite_header_is_rebuilt_and_reported(void **state) {
    garbage_manifest(((fixture *)*state)->dir, true);
}

static void empty_manifest_file_opens_as_an_empty_cache(void **state) {
    fixture *f = *state;
    fill(f->dir, 4);
    char *db = rel_path(f->dir, "manifest.sqlite");
    assert_int_equal(truncate(db, 0), 0);
    remove_manifest_side_files(f->dir);
    yyc_diskcache *dc = open_ok(f->dir);
    for (unsigned k = 0; k < 4; k++) {
        char key[16];
        fkey(k, key);
        expect_version(dc, key, 0);
    }
    yyc_diskcache_release(dc);
    expect_working(f->dir);
    free(db);
}

/* Half of a multi-page manifest cut off: SQLite only notices when a query reaches a missing
 * page. Reads must give the right value, a miss or an error - and the cache must recover (at
 * the latest after one reopen). */
static void truncated_manifest_never_returns_wrong_values_and_recovers(void **state) {
    fixture *f = *state;
    fill(f->dir, 300);
    char *db = rel_path(f->dir, "manifest.sqlite");
    struct stat st;
    assert_int_equal(stat(db, &st), 0);
    assert_true(st.st_size > 8 * 4096);
    assert_int_equal(truncate(db, st.st_size / 2), 0);
    remove_manifest_side_files(f->dir);
    bool rebuilt = false;
    yyc_diskcache *dc = open_after_manifest_fault(f->dir, &rebuilt);
    int hits = 0, misses = 0, errors = 0;
    if (dc) {
        for (unsigned k = 0; k < 300; k++) {
            char key[16];
            fkey(k, key);
            int s;
            uint64_t v = read_version(dc, key, &s);
            if (s == YYC_OK) {
                assert_int_equal(v, k % 2 ? 3 : 2);
                hits++;
            } else if (s == YYC_NOTFOUND) {
                misses++;
            } else {
                assert_true(s == YYC_ECORRUPT || s == YYC_ESQLITE || s == YYC_EIO);
                errors++;
            }
        }
        fprintf(stderr, "truncated manifest: rebuilt at open %d; %d hits, %d misses, %d errors\n",
                rebuilt, hits, misses, errors);
        /* A write right away may fail (the corruption is found now), but the cache must work
         * again after that or after one reopen. */
        int s = put(dc, "after", 1002);
        if (s == YYC_OK) expect_version(dc, "after", 1002);
        yyc_diskcache_release(dc);
    }
    expect_working(f->dir);
    free(db);
}

static void foreign_schema_manifest_is_rebuilt_or_refused(void **state) {
    fixture *f = *state;
    char *db_path = rel_path(f->dir, "manifest.sqlite");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TABLE manifest(a INTEGER, b TEXT);"
                                  "INSERT INTO manifest VALUES (1, 'x');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    bool rebuilt = false;
    yyc_diskcache *dc = open_after_manifest_fault(f->dir, &rebuilt);
    if (dc) {
        assert_true(rebuilt);
        expect_version(dc, "x", 0);
        yyc_diskcache_release(dc);
        expect_working(f->dir);
    } else {
        /* Refused: the fault is gone once the foreign file is. */
        assert_int_equal(unlink(db_path), 0);
        expect_working(f->dir);
    }
    free(db_path);
}

/* A later version of the format may add columns (a checksum): rows still read, writes work. */
static void manifest_with_an_extra_column_still_works(void **state) {
    fixture *f = *state;
    char *db_path = rel_path(f->dir, "manifest.sqlite");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "PRAGMA journal_mode = WAL;"
                     "CREATE TABLE manifest (key text, filename text, size integer, inline_data "
                     "blob, modification_time integer, last_access_time integer, extended_data "
                     "blob, checksum integer, primary key(key));"
                     "CREATE INDEX last_access_time_idx ON manifest(last_access_time);",
                     NULL, NULL, NULL),
        SQLITE_OK);
    size_t len;
    unsigned char *v = rel_value_make("old", 2, &len);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "INSERT INTO manifest VALUES ('old', NULL, ?1, ?2, "
                                        "strftime('%s','now'), strftime('%s','now'), NULL, 77)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)len);
    sqlite3_bind_blob(st, 2, v, (int)len, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(v);
    yyc_diskcache *dc = open_ok(f->dir);
    expect_version(dc, "old", 2);
    yyc_diskcache_release(dc);
    expect_working(f->dir);
    free(db_path);
}

static void manifest_that_is_a_folder_gives_an_error_then_works(void **state) {
    fixture *f = *state;
    char *db_path = rel_path(f->dir, "manifest.sqlite");
    assert_int_equal(mkdir(db_path, 0700), 0);
    char *inside = rel_path(db_path, "keep");
    assert_true(rel_write_file(inside, "keep", 4));
    yyc_diskcache *dc = NULL;
    int s = yyc_diskcache_open(f->dir, REL_THRESHOLD, &dc);
    if (s == YYC_OK) {
        fprintf(stderr, "note: a folder named manifest.sqlite was replaced\n");
        yyc_diskcache_release(dc);
    } else {
        assert_true(s == YYC_ECORRUPT || s == YYC_EIO || s == YYC_ESQLITE);
        /* Nobody's folder is deleted to make room. */
        struct stat sb;
        assert_int_equal(stat(inside, &sb), 0);
        test_rm_rf(db_path);
    }
    expect_working(f->dir);
    free(inside);
    free(db_path);
}

/* ---------------------------------------------------------------- WAL and SHM after a crash */

/* Keys of the WAL tests and the versions before (checkpointed) and after (only in the WAL). */
#define WAL_KEYS 9
static const uint64_t wal_before[WAL_KEYS] = {2, 2, 2, 2, 3, 3, 3, 3, 0};
static const uint64_t wal_after[WAL_KEYS] = {4, 5, 0, 2, 7, 6, 0, 3, 9};

/* --child walwriter DIR READY_FD: applies the "after" changes, reports, and waits to be
 * killed (so the changes stay in the WAL, never checkpointed). */
static int child_walwriter(int argc, char **argv) {
    if (argc != 3) return 2;
    yyc_diskcache *dc = NULL;
    REL_CHECK(yyc_diskcache_open(argv[1], REL_THRESHOLD, &dc) == YYC_OK, "open: %s",
              rel_last_error());
    for (unsigned k = 0; k < WAL_KEYS; k++) {
        char key[16];
        fkey(k, key);
        if (wal_after[k] == wal_before[k]) continue;
        int s;
        if (wal_after[k]) {
            size_t len;
            unsigned char *v = rel_value_make(key, wal_after[k], &len);
            s = yyc_diskcache_set(dc, key, v, len, NULL, 0);
            free(v);
        } else {
            s = yyc_diskcache_remove(dc, key);
        }
        REL_CHECK(s == YYC_OK, "%s: %s", key, rel_last_error());
    }
    REL_CHECK(write(atoi(argv[2]), "r", 1) == 1, "ready");
    for (;;) pause();
}

static void crash_with_changes_in_the_wal(const char *dir) {
    yyc_diskcache *dc = open_ok(dir);
    for (unsigned k = 0; k < WAL_KEYS; k++) {
        char key[16];
        fkey(k, key);
        if (wal_before[k]) assert_int_equal(put(dc, key, wal_before[k]), YYC_OK);
    }
    yyc_diskcache_release(dc); /* clean close: checkpointed */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    char fd_arg[16];
    snprintf(fd_arg, sizeof fd_arg, "%d", fds[1]);
    const char *args[] = {"walwriter", dir, fd_arg, NULL};
    pid_t pid = rel_spawn(args);
    assert_true(pid > 0);
    close(fds[1]);
    char c;
    assert_int_equal(read(fds[0], &c, 1), 1);
    close(fds[0]);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    char *wal = rel_path(dir, "manifest.sqlite-wal");
    struct stat st;
    assert_int_equal(stat(wal, &st), 0);
    assert_true(st.st_size > 0);
    free(wal);
}

/* Every key reads its "before" version, its "after" version, or nothing; afterwards no row
 * names a missing file and the cache works. Returns how many keys read their "after" state. */
static int check_after_wal_fault(const char *dir) {
    yyc_diskcache *dc = open_ok(dir);
    int after = 0;
    for (unsigned k = 0; k < WAL_KEYS; k++) {
        char key[16];
        fkey(k, key);
        int s;
        uint64_t v = read_version(dc, key, &s);
        assert_true(s == YYC_OK || s == YYC_NOTFOUND);
        if (v != wal_before[k] && v != wal_after[k] && v != 0)
            fail_msg("%s reads version %llu, neither before (%llu) nor after (%llu)", key,
                     (unsigned long long)v, (unsigned long long)wal_before[k],
                     (unsigned long long)wal_after[k]);
        after += v == wal_after[k];
    }
    yyc_diskcache_release(dc);
    rel_manifest_scan scan = rel_scan_manifest(dir);
    assert_int_equal(scan.rc, SQLITE_OK);
    assert_int_equal(scan.missing, 0);
    expect_working(dir);
    return after;
}

static void deleted_wal_after_a_crash_never_gives_wrong_values(void **state) {
    fixture *f = *state;
    crash_with_changes_in_the_wal(f->dir);
    remove_manifest_side_files(f->dir);
    int after = check_after_wal_fault(f->dir);
    fprintf(stderr, "deleted WAL: %d of %d keys in their latest state\n", after, WAL_KEYS);
}

static void garbage_wal_after_a_crash_never_gives_wrong_values(void **state) {
    fixture *f = *state;
    crash_with_changes_in_the_wal(f->dir);
    char *wal = rel_path(f->dir, "manifest.sqlite-wal");
    struct stat st;
    assert_int_equal(stat(wal, &st), 0);
    write_garbage(wal, (size_t)st.st_size, 7, NULL, 0);
    free(wal);
    check_after_wal_fault(f->dir);
}

static void garbage_shm_after_a_crash_keeps_every_committed_change(void **state) {
    fixture *f = *state;
    crash_with_changes_in_the_wal(f->dir);
    char *shm = rel_path(f->dir, "manifest.sqlite-shm");
    struct stat st;
    assert_int_equal(stat(shm, &st), 0);
    write_garbage(shm, (size_t)st.st_size, 9, NULL, 0);
    free(shm);
    /* The WAL is intact: SQLite rebuilds its index from it, so nothing committed is lost. */
    assert_int_equal(check_after_wal_fault(f->dir), WAL_KEYS);
}

static void deleted_shm_after_a_crash_keeps_every_committed_change(void **state) {
    fixture *f = *state;
    crash_with_changes_in_the_wal(f->dir);
    char *shm = rel_path(f->dir, "manifest.sqlite-shm");
    assert_int_equal(unlink(shm), 0);
    free(shm);
    assert_int_equal(check_after_wal_fault(f->dir), WAL_KEYS);
}

/* ---------------------------------------------------------------- data files */

/* Stores key "victim" as a large value and returns the path of its data file. */
static char *large_victim(const char *dir, uint64_t version) {
    yyc_diskcache *dc = open_ok(dir);
    assert_int_equal(put(dc, "victim", version), YYC_OK);
    yyc_diskcache_release(dc);
    char name[33];
    yyc_kv_md5_filename("victim", name);
    char *data = rel_path(dir, "data");
    char *p = rel_path(data, name);
    free(data);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    return p;
}

/* "victim" reads as a miss and its row is dropped; when reported, a corruption event reaches
 * the error hook (a data file whose length differs from the row's size is corruption). */
static void expect_victim_missing_then_working_ex(const char *dir, bool reported) {
    yyc_diskcache *dc = open_ok(dir);
    int events = 0;
    yyc_diskcache_set_error_hook(dc, count_corrupt, &events);
    expect_version(dc, "victim", 0);
    assert_false(yyc_diskcache_contains(dc, "victim")); /* the broken row was dropped */
    if (reported) assert_true(events >= 1);
    yyc_diskcache_set_error_hook(dc, NULL, NULL);
    yyc_diskcache_release(dc);
    rel_manifest_scan scan = rel_scan_manifest(dir);
    assert_int_equal(scan.missing, 0);
    assert_int_equal(scan.mismatched, 0);
    expect_working(dir);
}

static void expect_victim_missing_then_working(const char *dir) {
    expect_victim_missing_then_working_ex(dir, false);
}

static void truncated_data_file_reads_as_a_miss(void **state) {
    fixture *f = *state;
    char *p = large_victim(f->dir, 3);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(truncate(p, st.st_size / 2), 0);
    expect_victim_missing_then_working_ex(f->dir, true);
    free(p);
}

static void longer_data_file_reads_as_a_miss(void **state) {
    fixture *f = *state;
    char *p = large_victim(f->dir, 3);
    int fd = open(p, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "tail", 4), 4);
    close(fd);
    expect_victim_missing_then_working_ex(f->dir, true);
    free(p);
}

static void data_file_replaced_by_a_folder_or_a_fifo_reads_as_a_miss(void **state) {
    fixture *f = *state;
    char *p = large_victim(f->dir, 3);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(mkdir(p, 0700), 0);
    expect_victim_missing_then_working(f->dir);
    rmdir(p);
    free(p);
    p = large_victim(f->dir, 5);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(mkfifo(p, 0600), 0); /* a reader that followed it would block */
    expect_victim_missing_then_working(f->dir);
    unlink(p);
    free(p);
}

/* A value whose bytes changed but not its length (here: a complete value of the same length
 * made for another key) is caught by the per-value checksum (baa2f94; before it, the foreign
 * bytes were returned): a miss, a reported corruption, the entry removed. */
static void expect_corruption_caught(const char *dir) {
    yyc_diskcache *dc = open_ok(dir);
    int events = 0;
    yyc_diskcache_set_error_hook(dc, count_corrupt, &events);
    void *out = NULL;
    size_t out_len = 0;
    int s = yyc_diskcache_get(dc, "victim", &out, &out_len);
    yyc_free(out);
    assert_int_equal(s, YYC_NOTFOUND);
    assert_true(events >= 1);
    assert_false(yyc_diskcache_contains(dc, "victim"));
    yyc_diskcache_set_error_hook(dc, NULL, NULL);
    yyc_diskcache_release(dc);
    expect_working(dir);
}

/* A complete value of (key, version) relabelled as another key's: same length, other bytes. */
static unsigned char *foreign_value(const char *key, uint64_t version, size_t *len) {
    unsigned char *v = rel_value_make(key, version, len);
    rel_header h;
    memcpy(&h, v, sizeof h);
    h.key_hash = rel_fnv1a64("someone-else");
    memcpy(v, &h, sizeof h);
    return v;
}

static void same_size_foreign_data_file_is_detected(void **state) {
    fixture *f = *state;
    char *p = large_victim(f->dir, 3);
    size_t len;
    unsigned char *v = foreign_value("victim", 3, &len);
    assert_true(rel_write_file(p, v, len));
    free(v);
    expect_corruption_caught(f->dir);
    free(p);
}

static void same_size_change_of_an_inline_value_is_detected(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_ok(f->dir);
    assert_int_equal(put(dc, "victim", 2), YYC_OK);
    yyc_diskcache_release(dc);
    size_t len;
    unsigned char *v = foreign_value("victim", 2, &len);
    char *db_path = rel_path(f->dir, "manifest.sqlite");
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "UPDATE manifest SET inline_data = ?1 WHERE key = 'victim'",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(st, 1, v, (int)len, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    assert_int_equal(sqlite3_changes(db), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(v);
    free(db_path);
    expect_corruption_caught(f->dir);
}

/* Rows written without a checksum (by YYKVStorage, which ignores the extra column, or before it
 * existed) still read. */
static void rows_without_a_checksum_still_read(void **state) {
    fixture *f = *state;
    fill(f->dir, 4);
    char *db_path = rel_path(f->dir, "manifest.sqlite");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    /* Every column YYKVStorage does not know is cleared. */
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT name FROM pragma_table_info('manifest') WHERE "
                                        "name NOT IN ('key', 'filename', 'size', "
                                        "'inline_data', 'modification_time', "
                                        "'last_access_time', 'extended_data')",
                                        -1, &st, NULL),
                     SQLITE_OK);
    int extra = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char sql[256];
        snprintf(sql, sizeof sql, "UPDATE manifest SET \"%s\" = NULL",
                 (const char *)sqlite3_column_text(st, 0));
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        extra++;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(db_path);
    fprintf(stderr, "%d extra manifest column(s) cleared\n", extra);
    yyc_diskcache *dc = open_ok(f->dir);
    for (unsigned k = 0; k < 4; k++) {
        char key[16];
        fkey(k, key);
        expect_version(dc, key, k % 2 ? 3 : 2);
    }
    yyc_diskcache_release(dc);
}

/* A kill between writing a value's file and committing its row leaves a temporary file
 * (.yyc-tmp-*) or an unreferenced data file. Planted here with an old modification time (the
 * sweep spares young files, which another process may be about to commit); the next open
 * removes them. (Nothing did before f9dd383: BUG-ORPHAN-FILES.) */
static void leftover_temporary_and_unreferenced_files_are_removed_by_the_next_open(void **state) {
    fixture *f = *state;
    fill(f->dir, 4);
    char *data = rel_path(f->dir, "data");
    char *tmp = rel_path(data, ".yyc-tmp-0123456789abcdef");
    char name[33];
    yyc_kv_md5_filename("nobody", name);
    char *orphan = rel_path(data, name);
    assert_true(rel_write_file(tmp, "half a value", 12));
    assert_true(rel_write_file(orphan, "a value without a row", 21));
    struct timespec old[2] = {{time(NULL) - 7 * 86400, 0}, {time(NULL) - 7 * 86400, 0}};
    assert_int_equal(utimensat(AT_FDCWD, tmp, old, 0), 0);
    assert_int_equal(utimensat(AT_FDCWD, orphan, old, 0), 0);
    yyc_diskcache *dc = open_ok(f->dir);
    bool cleaned = WAIT_UNTIL(access(tmp, F_OK) != 0 && access(orphan, F_OK) != 0, 10.0);
    for (unsigned k = 0; k < 4; k++) {
        char key[16];
        fkey(k, key);
        expect_version(dc, key, k % 2 ? 3 : 2); /* real values untouched */
    }
    yyc_diskcache_release(dc);
    assert_true(cleaned);
    free(data);
    free(tmp);
    free(orphan);
}

static void data_folder_replaced_by_a_file_while_closed(void **state) {
    fixture *f = *state;
    fill(f->dir, 6);
    char *data = rel_path(f->dir, "data");
    test_rm_rf(data);
    assert_true(rel_write_file(data, "not a folder", 12));
    yyc_diskcache *dc = open_ok(f->dir);
    for (unsigned k = 0; k < 6; k++) {
        char key[16];
        fkey(k, key);
        int s;
        uint64_t v = read_version(dc, key, &s);
        /* Inline values are intact; file values are gone (never someone else's bytes). */
        assert_int_equal(v, k % 2 ? 0 : 2);
    }
    yyc_diskcache_release(dc);
    assert_int_equal(rel_scan_manifest(f->dir).missing, 0);
    expect_working(f->dir);
    free(data);
}

static void data_folder_replaced_by_a_file_while_open(void **state) {
    fixture *f = *state;
    fill(f->dir, 6);
    char *data = rel_path(f->dir, "data");
    char *moved = rel_path(f->dir, "data.moved");
    yyc_diskcache *dc = open_ok(f->dir);
    assert_int_equal(rename(data, moved), 0);
    assert_true(rel_write_file(data, "not a folder", 12));
    int s = put(dc, "during", 1001);
    fprintf(stderr, "set while data/ is a file: %s\n", yyc_status_name(s));
    for (unsigned k = 0; k < 6; k++) {
        char key[16];
        fkey(k, key);
        read_version(dc, key, &s); /* wrong values fail the test */
        assert_true(s == YYC_OK || s == YYC_NOTFOUND || s == YYC_EIO);
    }
    read_version(dc, "during", &s);
    yyc_diskcache_release(dc);
    test_rm_rf(moved);
    dc = open_ok(f->dir);
    for (unsigned k = 0; k < 6; k++) {
        char key[16];
        fkey(k, key);
        read_version(dc, key, &s);
        assert_true(s == YYC_OK || s == YYC_NOTFOUND);
    }
    read_version(dc, "during", &s);
    assert_true(s == YYC_OK || s == YYC_NOTFOUND);
    yyc_diskcache_release(dc);
    assert_int_equal(rel_scan_manifest(f->dir).missing, 0);
    expect_working(f->dir);
    free(data);
    free(moved);
}

/* ---------------------------------------------------------------- full disk */

static void limit_file_size(rlim_t bytes) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl;
    REL_CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0, "getrlimit");
    rl.rlim_cur = bytes;
    REL_CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit");
}

static void child_read_expect(yyc_diskcache *dc, const char *key, uint64_t want) {
    void *v = NULL;
    size_t len = 0;
    int s = yyc_diskcache_get(dc, key, &v, &len);
    const char *why = "";
    uint64_t got = s == YYC_OK ? rel_value_check(key, v, len, &why) : 0;
    yyc_free(v);
    REL_CHECK(got == want, "%s: read version %llu (status %s, %s), expected %llu", key,
              (unsigned long long)got, yyc_status_name(s), why ? why : "",
              (unsigned long long)want);
}

/* --child fsize_data DIR: a large value that does not fit under RLIMIT_FSIZE. */
static int child_fsize_data(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *dir = argv[1];
    uint64_t v1 = large_version_between("big", 21000, 40000);
    uint64_t v2 = large_version_between("big", 90000, 120000);
    yyc_diskcache *dc = NULL;
    REL_CHECK(yyc_diskcache_open(dir, REL_THRESHOLD, &dc) == YYC_OK, "open");
    REL_CHECK(put(dc, "big", v1) == YYC_OK, "set v1: %s", rel_last_error());
    limit_file_size(64 * 1024);
    int s = put(dc, "big", v2);
    REL_CHECK(s == YYC_ENOSPC, "a value over the file size limit: %s, expected ENOSPC (%s)",
              yyc_status_name(s), rel_last_error());
    child_read_expect(dc, "big", v1); /* the previous value is intact */
    rel_manifest_scan scan = rel_scan_manifest(dir);
    REL_CHECK(scan.orphans == 0, "%lld files left in data/ (%lld temporary)",
              (long long)scan.orphans, (long long)scan.temps);
    limit_file_size(RLIM_INFINITY); /* the fault is gone */
    s = put(dc, "big", v2);
    REL_CHECK(s == YYC_OK, "set after the fault: %s", rel_last_error());
    child_read_expect(dc, "big", v2);
    yyc_diskcache_release(dc);
    return 0;
}

/* --child fsize_manifest DIR: the manifest's WAL cannot grow. SQLite reports EFBIG as
 * SQLITE_IOERR_WRITE (only ENOSPC becomes SQLITE_FULL) with sqlite3_system_errno() 0; the
 * library still reports YYC_ENOSPC (8868519; it said YYC_EIO before). */
static int child_fsize_manifest(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *dir = argv[1];
    yyc_diskcache *dc = NULL;
    REL_CHECK(yyc_diskcache_open(dir, REL_THRESHOLD, &dc) == YYC_OK, "open");
    REL_CHECK(put(dc, "small", 2) == YYC_OK, "set v1: %s", rel_last_error());
    char *wal = rel_path(dir, "manifest.sqlite-wal");
    struct stat st;
    REL_CHECK(stat(wal, &st) == 0 && st.st_size > 0, "no WAL");
    limit_file_size((rlim_t)st.st_size);
    int s = put(dc, "small", 4);
    REL_CHECK(s == YYC_ENOSPC, "a manifest that cannot grow: %s, expected ENOSPC (%s)",
              yyc_status_name(s), rel_last_error());
    child_read_expect(dc, "small", 2);
    s = put(dc, "other", 6);
    REL_CHECK(s == YYC_ENOSPC, "second write: %s", yyc_status_name(s));
    limit_file_size(RLIM_INFINITY);
    s = put(dc, "small", 4);
    REL_CHECK(s == YYC_OK, "set after the fault: %s", rel_last_error());
    child_read_expect(dc, "small", 4);
    child_read_expect(dc, "other", 0);
    yyc_diskcache_release(dc);
    free(wal);
    return 0;
}

/* --child tmpfs_full DIR: a real full disk. In a private mount namespace, mounts a 2 MiB
 * tmpfs on DIR (exit 77 when that is not permitted), fills it, and checks that a large value
 * (a data file) and a small one (the manifest's WAL) both fail with YYC_ENOSPC, that the old
 * values still read, that no temporary file is left, and that everything works once space is
 * freed. */
static int child_tmpfs_full(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *dir = argv[1];
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", dir, "tmpfs", 0, "size=2m,mode=0700") != 0) {
        fprintf(stderr, "tmpfs_full: cannot mount a tmpfs here (%s): skipped\n", strerror(errno));
        return 77;
    }
    char *cache = rel_path(dir, "cache");
    uint64_t v1 = large_version_between("big", 21000, 40000);
    uint64_t v2 = large_version_between("big", 90000, 120000);
    yyc_diskcache *dc = NULL;
    REL_CHECK(yyc_diskcache_open(cache, REL_THRESHOLD, &dc) == YYC_OK, "open: %s",
              rel_last_error());
    REL_CHECK(put(dc, "big", v1) == YYC_OK, "set big: %s", rel_last_error());
    REL_CHECK(put(dc, "small", 2) == YYC_OK, "set small: %s", rel_last_error());
    char *filler = rel_path(dir, "filler");
    int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REL_CHECK(fd >= 0, "filler");
    static char chunk[65536];
    while (write(fd, chunk, sizeof chunk) > 0) {
    }
    REL_CHECK(errno == ENOSPC, "filler stopped with %s", strerror(errno));
    while (write(fd, chunk, 1) > 0) {
    }
    close(fd);
    int s = put(dc, "big", v2);
    REL_CHECK(s == YYC_ENOSPC, "large value on a full disk: %s (%s)", yyc_status_name(s),
              rel_last_error());
    child_read_expect(dc, "big", v1);
    s = put(dc, "small", 4);
    REL_CHECK(s == YYC_ENOSPC, "small value on a full disk: %s (%s)", yyc_status_name(s),
              rel_last_error());
    child_read_expect(dc, "small", 2);
    rel_manifest_scan scan = rel_scan_manifest(cache);
    REL_CHECK(scan.temps == 0, "%lld temporary files left in data/", (long long)scan.temps);
    /* Reopening on the full disk (the -wal and -shm files need space): a clear error or a
     * working cache - and never the old values wiped (YYCache #157 reset the cache when its
     * open failed on a full disk). */
    yyc_diskcache_release(dc); /* the close checkpoints and deletes the WAL: fill again */
    dc = NULL;
    char *filler2 = rel_path(dir, "filler2");
    fd = open(filler2, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REL_CHECK(fd >= 0, "filler2");
    while (write(fd, chunk, sizeof chunk) > 0) {
    }
    while (write(fd, chunk, 1) > 0) {
    }
    close(fd);
    s = yyc_diskcache_open(cache, REL_THRESHOLD, &dc);
    if (s == YYC_OK) {
        fprintf(stderr, "tmpfs_full: reopen on a full disk: OK\n");
        child_read_expect(dc, "big", v1);
        child_read_expect(dc, "small", 2);
    } else {
        fprintf(stderr, "tmpfs_full: reopen on a full disk: %s (%s)\n", yyc_status_name(s),
                rel_last_error());
        REL_CHECK(s == YYC_ENOSPC || s == YYC_EIO, "reopen on a full disk: %s", yyc_status_name(s));
    }
    REL_CHECK(unlink(filler) == 0 && unlink(filler2) == 0, "unlink fillers"); /* fault gone */
    free(filler2);
    if (!dc) {
        s = yyc_diskcache_open(cache, REL_THRESHOLD, &dc);
        REL_CHECK(s == YYC_OK, "open after the fault: %s", rel_last_error());
        child_read_expect(dc, "big", v1);
        child_read_expect(dc, "small", 2);
    }
    s = put(dc, "big", v2);
    REL_CHECK(s == YYC_OK, "large value after the fault: %s", rel_last_error());
    s = put(dc, "small", 4);
    REL_CHECK(s == YYC_OK, "small value after the fault: %s", rel_last_error());
    child_read_expect(dc, "big", v2);
    child_read_expect(dc, "small", 4);
    yyc_diskcache_release(dc);
    free(filler);
    free(cache);
    return 0;
}

static void full_disk_gives_enospc_keeps_old_values_and_recovers(void **state) {
    fixture *f = *state;
    const char *args[] = {"tmpfs_full", f->dir, NULL};
    int rc = rel_run(args, 60.0);
    if (rc == 77) skip();
    assert_int_equal(rc, 0);
}

static void file_size_limit_on_a_data_file_gives_enospc_and_keeps_the_old_value(void **state) {
    fixture *f = *state;
    const char *args[] = {"fsize_data", f->dir, NULL};
    assert_int_equal(rel_run(args, 60.0), 0);
}

static void file_size_limit_on_the_manifest_gives_enospc_and_keeps_the_old_value(void **state) {
    fixture *f = *state;
    const char *args[] = {"fsize_manifest", f->dir, NULL};
    assert_int_equal(rel_run(args, 60.0), 0);
}

/* ---------------------------------------------------------------- read-only folder */

/* --child readonly DIR: without capabilities, root obeys permission bits. The folder and its
 * files are read-only: the open fails clearly, or reads work and writes fail with EPERM. */
static int child_readonly(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *dir = argv[1];
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    REL_CHECK(syscall(SYS_capset, &hdr, data) == 0, "capset: %s", strerror(errno));
    if (access(dir, W_OK) == 0) {
        fprintf(stderr, "readonly: still writable without capabilities; skipping\n");
        return 77;
    }
    yyc_diskcache *dc = NULL;
    int s = yyc_diskcache_open(dir, REL_THRESHOLD, &dc);
    if (s != YYC_OK) {
        REL_CHECK(s == YYC_EPERM, "open of a read-only cache: %s, expected EPERM (%s)",
                  yyc_status_name(s), rel_last_error());
        return 0;
    }
    fprintf(stderr, "readonly: the open succeeded\n");
    child_read_expect(dc, "f-000", 2);
    child_read_expect(dc, "f-001", 3);
    s = put(dc, "new", 1001);
    REL_CHECK(s == YYC_EPERM, "write to a read-only cache: %s (%s)", yyc_status_name(s),
              rel_last_error());
    yyc_diskcache_release(dc);
    return 0;
}

static void read_only_folder_gives_eperm_and_loses_nothing(void **state) {
    fixture *f = *state;
    fill(f->dir, 4);
    char *data = rel_path(f->dir, "data");
    char *trash = rel_path(f->dir, "trash");
    char *db = rel_path(f->dir, "manifest.sqlite");
    assert_int_equal(chmod(db, 0400), 0);
    assert_int_equal(chmod(data, 0500), 0);
    assert_int_equal(chmod(trash, 0500), 0);
    assert_int_equal(chmod(f->dir, 0500), 0);
    const char *args[] = {"readonly", f->dir, NULL};
    int rc = rel_run(args, 60.0);
    chmod(f->dir, 0700);
    chmod(data, 0700);
    chmod(trash, 0700);
    chmod(db, 0600);
    if (rc == 77) skip();
    assert_int_equal(rc, 0);
    /* Nothing was wiped (YYCache #157 deleted the cache when its open failed). */
    yyc_diskcache *dc = open_ok(f->dir);
    for (unsigned k = 0; k < 4; k++) {
        char key[16];
        fkey(k, key);
        expect_version(dc, key, k % 2 ? 3 : 2);
    }
    yyc_diskcache_release(dc);
    free(data);
    free(trash);
    free(db);
}

/* ---------------------------------------------------------------- main */

static const rel_child children[] = {
    {"walwriter", child_walwriter},           {"fsize_data", child_fsize_data},
    {"fsize_manifest", child_fsize_manifest}, {"readonly", child_readonly},
    {"tmpfs_full", child_tmpfs_full},         {NULL, NULL},
};

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--child") == 0)
        return rel_dispatch(children, argc - 2, argv + 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(garbage_manifest_is_rebuilt_and_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(garbage_after_an_sqlite_header_is_rebuilt_and_reported,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(empty_manifest_file_opens_as_an_empty_cache, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(truncated_manifest_never_returns_wrong_values_and_recovers,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(foreign_schema_manifest_is_rebuilt_or_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(manifest_with_an_extra_column_still_works, setup, teardown),
        cmocka_unit_test_setup_teardown(manifest_that_is_a_folder_gives_an_error_then_works, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(deleted_wal_after_a_crash_never_gives_wrong_values, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(garbage_wal_after_a_crash_never_gives_wrong_values, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(garbage_shm_after_a_crash_keeps_every_committed_change,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(deleted_shm_after_a_crash_keeps_every_committed_change,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(truncated_data_file_reads_as_a_miss, setup, teardown),
        cmocka_unit_test_setup_teardown(longer_data_file_reads_as_a_miss, setup, teardown),
        cmocka_unit_test_setup_teardown(data_file_replaced_by_a_folder_or_a_fifo_reads_as_a_miss,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(same_size_foreign_data_file_is_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(same_size_change_of_an_inline_value_is_detected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(rows_without_a_checksum_still_read, setup, teardown),
        cmocka_unit_test_setup_teardown(
            leftover_temporary_and_unreferenced_files_are_removed_by_the_next_open, setup,
            teardown),
        cmocka_unit_test_setup_teardown(data_folder_replaced_by_a_file_while_closed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(data_folder_replaced_by_a_file_while_open, setup, teardown),
        cmocka_unit_test_setup_teardown(
            file_size_limit_on_a_data_file_gives_enospc_and_keeps_the_old_value, setup, teardown),
        cmocka_unit_test_setup_teardown(
            file_size_limit_on_the_manifest_gives_enospc_and_keeps_the_old_value, setup, teardown),
        cmocka_unit_test_setup_teardown(read_only_folder_gives_eperm_and_loses_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(full_disk_gives_enospc_keeps_old_values_and_recovers, setup,
                                        teardown),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
