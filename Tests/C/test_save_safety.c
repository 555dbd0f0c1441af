/*
 * test_save_safety.c - a failed save never loses the previous value; remove-all never unlinks a
 * manifest that other connections hold; reserved file names; the WAL cap (issue 11, items 1, 2,
 * 7 and the WAL contract fix).
 *
 * Faults are real: another connection holding SQLite's write lock past the busy timeout, a
 * trigger that aborts the row write (an injected SQL error), a real full tmpfs mounted in a
 * private mount namespace of a child (skipped where mounting is not permitted), a manifest
 * whose pages were overwritten behind the connections' backs, and another process that holds
 * the manifest open while this one clears it.
 */
#include "reliability_support.h"
#include "test_kv_support.h"

#include "platform/fs_util.h"
#include "platform/internal.h"
#include "kv/kv_private.h"

#include <sched.h>
#include <sys/mount.h>

/* ---------------------------------------------------------------- helpers */

#define VALUE_LEN 4096u /* one tmpfs page */

/* The three ways a replace can switch a key: between two files of the same requested name
 * (md5(key): the case that lost the key), from inline to a file, from a file to inline. */
typedef enum direction { FILE_TO_FILE, INLINE_TO_FILE, FILE_TO_INLINE, DIRECTIONS } direction;
static const char *const direction_names[DIRECTIONS] = {"file->file", "inline->file",
                                                        "file->inline"};
static bool old_in_file(direction d) { return d != INLINE_TO_FILE; }
static bool new_in_file(direction d) { return d != FILE_TO_INLINE; }

static void fill_pattern(unsigned char *buf, size_t len, unsigned seed) {
    for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8));
}

/* Saves VALUE_LEN bytes of pattern seed under key, in md5(key) or inline. */
static int save_pattern(yyc_kv *kv, const char *key, unsigned seed, bool in_file) {
    unsigned char v[VALUE_LEN];
    fill_pattern(v, sizeof v, seed);
    char name[33];
    yyc_kv_md5_filename(key, name);
    return yyc_kv_save(kv, key, v, sizeof v, in_file ? name : NULL, NULL, 0);
}

/* Whether key reads back as exactly VALUE_LEN bytes of pattern seed. */
static bool reads_pattern(yyc_kv *kv, const char *key, unsigned seed) {
    unsigned char want[VALUE_LEN];
    fill_pattern(want, sizeof want, seed);
    void *v = NULL;
    size_t len = 0;
    int rc = yyc_kv_get_value(kv, key, &v, &len);
    bool ok = rc == YYC_OK && len == sizeof want && memcmp(v, want, len) == 0;
    if (!ok)
        fprintf(stderr, "%s: %s, %zu bytes%s\n", key, yyc_status_name(rc), len,
                rc == YYC_OK && len == sizeof want ? ", other bytes" : "");
    yyc_free(v);
    return ok;
}

static yyc_kv *open_kv(const char *dir) {
    yyc_kv *kv = NULL;
    if (yyc_kv_open(dir, YYC_KV_MIXED, &kv) != YYC_OK) fail_msg("open: %s", rel_last_error());
    return kv;
}

/* Number of files in dir/data (temporary files included). */
static int data_files(const char *dir) { return tk_count_entries(dir, "data"); }

/* The inode of dir/manifest.sqlite (0 when missing). */
static ino_t manifest_inode(const char *dir) {
    char p[4096];
    struct stat st;
    return stat(tk_join(p, sizeof p, dir, "manifest.sqlite"), &st) == 0 ? st.st_ino : 0;
}

/* A replace of key "k" in direction d that `fail` makes fail (it returns the save's status);
 * then checks that the old value reads back byte for byte, that no file was left behind, and
 * that the same save works once the fault is gone (`heal`). */
typedef int (*failing_save_fn)(void *ctx, yyc_kv *kv, direction d);
typedef void (*heal_fn)(void *ctx, yyc_kv *kv);

static void check_failed_replace_keeps_old_value(const char *tag, failing_save_fn make_it_fail,
                                                 heal_fn heal, void *ctx) {
    for (direction d = 0; d < DIRECTIONS; d++) {
        char *dir = test_temp_dir(tag);
        yyc_kv *kv = open_kv(dir);
        yyc__worker_drain(kv); /* the open's sweep: its read connection must not interfere */
        assert_int_equal(save_pattern(kv, "k", 1, old_in_file(d)), YYC_OK);
        int rc = make_it_fail(ctx, kv, d);
        if (rc == YYC_OK)
            fail_msg("%s: the injected fault did not make the save fail", direction_names[d]);
        heal(ctx, kv);
        if (!reads_pattern(kv, "k", 1))
            fail_msg("%s: the failed replace (%s) lost the previous value", direction_names[d],
                     yyc_status_name(rc));
        assert_int_equal(data_files(dir), old_in_file(d) ? 1 : 0);
        assert_int_equal(save_pattern(kv, "k", 2, new_in_file(d)), YYC_OK);
        assert_true(reads_pattern(kv, "k", 2));
        assert_int_equal(data_files(dir), new_in_file(d) ? 1 : 0);
        yyc_kv_close(kv);
        test_rm_rf(dir);
        free(dir);
    }
}

/* Two keys given the same custom file name: the second save never replaces the first key's
 * file (a fresh variant is used), and removing one leaves the other's file. */
static void kv_a_save_never_replaces_another_keys_file(void **state) {
    (void)state;
    char *dir = test_temp_dir("save-shared");
    yyc_kv *kv = open_kv(dir);
    unsigned char a[VALUE_LEN], b[VALUE_LEN];
    fill_pattern(a, sizeof a, 1);
    fill_pattern(b, sizeof b, 2);
    assert_int_equal(yyc_kv_save(kv, "a", a, sizeof a, "shared", NULL, 0), YYC_OK);
    assert_int_equal(yyc_kv_save(kv, "b", b, sizeof b, "shared", NULL, 0), YYC_OK);
    assert_true(reads_pattern(kv, "a", 1));
    assert_true(reads_pattern(kv, "b", 2));
    assert_int_equal(data_files(dir), 2);
    assert_int_equal(yyc_kv_remove(kv, "b"), YYC_OK);
    assert_true(reads_pattern(kv, "a", 1));
    assert_int_equal(data_files(dir), 1);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* ---------------------------------------------------------------- item 1: busy */

typedef struct busy_ctx {
    sqlite3 *other;
} busy_ctx;

/* Another connection holds the write lock past the busy timeout while the save runs. */
static int save_while_another_connection_writes(void *ctx, yyc_kv *kv, direction d) {
    busy_ctx *b = ctx;
    b->other = tk_raw_open(yyc_kv_path(kv));
    tk_raw_exec(b->other, "begin immediate;");
    yyc__kv_set_busy_timeout(kv, 50);
    int rc = save_pattern(kv, "k", 2, new_in_file(d));
    assert_int_equal(rc, YYC_EBUSY);
    return rc;
}

static void end_other_write(void *ctx, yyc_kv *kv) {
    busy_ctx *b = ctx;
    tk_raw_exec(b->other, "commit;");
    sqlite3_close(b->other);
    b->other = NULL;
    yyc__kv_set_busy_timeout(kv, YYC__KV_BUSY_TIMEOUT_MS);
}

static void kv_replace_blocked_by_another_writer_keeps_the_old_value(void **state) {
    (void)state;
    busy_ctx b = {0};
    check_failed_replace_keeps_old_value("save-busy", save_while_another_connection_writes,
                                         end_other_write, &b);
}

/* ---------------------------------------------------------------- item 1: injected error */

/* A trigger (added by another connection) aborts every row write of key "k". */
static int save_against_an_aborting_trigger(void *ctx, yyc_kv *kv, direction d) {
    (void)ctx;
    sqlite3 *db = tk_raw_open(yyc_kv_path(kv));
    tk_raw_exec(db, "create trigger fail_k before insert on manifest when new.key = 'k' "
                    "begin select raise(abort, 'injected'); end;");
    sqlite3_close(db);
    return save_pattern(kv, "k", 2, new_in_file(d));
}

static void drop_trigger(void *ctx, yyc_kv *kv) {
    (void)ctx;
    sqlite3 *db = tk_raw_open(yyc_kv_path(kv));
    tk_raw_exec(db, "drop trigger fail_k;");
    sqlite3_close(db);
}

static void kv_replace_whose_row_write_fails_keeps_the_old_value(void **state) {
    (void)state;
    check_failed_replace_keeps_old_value("save-trigger", save_against_an_aborting_trigger,
                                         drop_trigger, NULL);
}

/* ---------------------------------------------------------------- full tmpfs */

/* Mounts a `size` tmpfs on dir in a private mount namespace of this (child) process. Returns
 * false when that is not permitted here. */
static bool mount_private_tmpfs(const char *dir, const char *size) {
    char opts[64];
    snprintf(opts, sizeof opts, "size=%s,mode=0700", size);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", dir, "tmpfs", 0, opts) != 0) {
        fprintf(stderr, "cannot mount a tmpfs here (%s): skipped\n", strerror(errno));
        return false;
    }
    return true;
}

/* Fills the file system of dir completely: fillers of one page each (dir/page-N) until none
 * fits, then dir/filler grown byte by byte. Returns the number of page fillers. */
static int fill_pages(const char *dir) {
    static const char page[VALUE_LEN];
    int n = 0;
    for (;; n++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/page-%d", dir, n);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        REL_CHECK(fd >= 0, "filler: %s", strerror(errno));
        ssize_t w = write(fd, page, sizeof page);
        close(fd);
        if (w != (ssize_t)sizeof page) {
            unlink(p);
            break;
        }
    }
    return n;
}

/* Grows dir/filler byte by byte until the file system is full. */
static void top_up(const char *dir) {
    char p[4096];
    snprintf(p, sizeof p, "%s/filler", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    REL_CHECK(fd >= 0, "filler: %s", strerror(errno));
    while (write(fd, "x", 1) == 1) {
    }
    REL_CHECK(errno == ENOSPC, "filler stopped with %s", strerror(errno));
    close(fd);
}

/* Saves small inline values until the manifest cannot grow (the WAL's slack used up). */
static void fill_manifest(yyc_kv *kv) {
    int rc = YYC_OK;
    for (int i = 0; i < 100000 && rc == YYC_OK; i++) {
        char key[32];
        snprintf(key, sizeof key, "pad-%d", i);
        rc = yyc_kv_save(kv, key, key, strlen(key), NULL, NULL, 0);
    }
    REL_CHECK(rc == YYC_ENOSPC, "filling the manifest ended with %s", yyc_status_name(rc));
}

/* --child full_replace DIR: on a real full tmpfs, a replace in each direction fails (only the
 * new value's own file fits: one page is freed for it) and keeps the previous value. */
static int child_full_replace(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *dir = argv[1];
    if (!mount_private_tmpfs(dir, "2m")) return 77;
    char cache[4096];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    yyc_kv *kv = NULL;
    REL_CHECK(yyc_kv_open(cache, YYC_KV_MIXED, &kv) == YYC_OK, "open: %s", rel_last_error());
    yyc__worker_drain(kv);
    static const char *const keys[DIRECTIONS] = {"ff", "if", "fi"};
    for (direction d = 0; d < DIRECTIONS; d++)
        REL_CHECK(save_pattern(kv, keys[d], 1, old_in_file(d)) == YYC_OK, "old %s: %s", keys[d],
                  rel_last_error());
    int pages = fill_pages(dir);
    fill_manifest(kv);
    top_up(dir);
    for (direction d = 0; d < DIRECTIONS; d++) {
        top_up(dir);
        if (new_in_file(d)) {
            char p[4096];
            snprintf(p, sizeof p, "%s/page-%d", dir, --pages);
            REL_CHECK(pages >= 0 && unlink(p) == 0, "free a page");
        }
        int rc = save_pattern(kv, keys[d], 2, new_in_file(d));
        REL_CHECK(rc == YYC_ENOSPC, "%s on a full disk: %s (%s)", direction_names[d],
                  yyc_status_name(rc), rel_last_error());
        REL_CHECK(reads_pattern(kv, keys[d], 1), "%s: the failed replace lost the previous value",
                  direction_names[d]);
    }
    /* The fault gone, every replace works. */
    for (int i = 0; i < pages; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/page-%d", dir, i);
        unlink(p);
    }
    char p[4096];
    snprintf(p, sizeof p, "%s/filler", dir);
    unlink(p);
    for (direction d = 0; d < DIRECTIONS; d++) {
        REL_CHECK(reads_pattern(kv, keys[d], 1), "%s after the fault", keys[d]);
        REL_CHECK(save_pattern(kv, keys[d], 2, new_in_file(d)) == YYC_OK, "%s: %s", keys[d],
                  rel_last_error());
        REL_CHECK(reads_pattern(kv, keys[d], 2), "%s: new value", keys[d]);
    }
    yyc_kv_close(kv);
    return 0;
}

static void kv_replace_on_a_full_disk_keeps_the_old_value(void **state) {
    (void)state;
    char *dir = test_temp_dir("save-full");
    const char *args[] = {"full_replace", dir, NULL};
    int rc = rel_run(args, 120.0);
    test_rm_rf(dir);
    free(dir);
    if (rc == 77) skip();
    assert_int_equal(rc, 0);
}

/* ---------------------------------------------------------------- item 2: remove-all */

/* --child holder DIR READY_FD GO_FD: opens the storage (its connection holds the manifest
 * open), says so, waits for the go, then saves "after-inline" and "after-file" (acknowledged
 * when this exits 0). */
static int child_holder(int argc, char **argv) {
    if (argc != 4) return 2;
    int ready = atoi(argv[2]), go = atoi(argv[3]);
    yyc_kv *kv = NULL;
    REL_CHECK(yyc_kv_open(argv[1], YYC_KV_MIXED, &kv) == YYC_OK, "holder open: %s",
              rel_last_error());
    REL_CHECK(write(ready, "r", 1) == 1, "ready");
    char c;
    REL_CHECK(read(go, &c, 1) == 1, "go");
    REL_CHECK(save_pattern(kv, "after-inline", 7, false) == YYC_OK, "holder inline save: %s",
              rel_last_error());
    REL_CHECK(save_pattern(kv, "after-file", 8, true) == YYC_OK, "holder file save: %s",
              rel_last_error());
    yyc_kv_close(kv);
    return 0;
}

typedef struct holder {
    pid_t pid;
    int ready, go;
} holder;

static holder holder_start(const char *cache) {
    int ready[2], go[2];
    REL_CHECK(pipe(ready) == 0 && pipe(go) == 0, "pipe");
    fcntl(ready[0], F_SETFD, FD_CLOEXEC);
    fcntl(go[1], F_SETFD, FD_CLOEXEC);
    char rfd[16], gfd[16];
    snprintf(rfd, sizeof rfd, "%d", ready[1]);
    snprintf(gfd, sizeof gfd, "%d", go[0]);
    const char *args[] = {"holder", cache, rfd, gfd, NULL};
    holder h = {.pid = rel_spawn(args), .ready = ready[0], .go = go[1]};
    REL_CHECK(h.pid > 0, "spawn holder");
    close(ready[1]);
    close(go[0]);
    char c;
    REL_CHECK(read(h.ready, &c, 1) == 1, "holder did not open");
    return h;
}

/* Lets the holder write; returns whether its two saves were acknowledged. */
static bool holder_finish(holder *h) {
    REL_CHECK(write(h->go, "g", 1) == 1, "go");
    int st = rel_wait(h->pid, 60.0);
    close(h->ready);
    close(h->go);
    return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The holder's acknowledged writes read back through a third connection, and the storage
 * still works. */
static void check_holder_writes_survive(const char *cache) {
    yyc_kv *third = NULL;
    REL_CHECK(yyc_kv_open(cache, YYC_KV_MIXED, &third) == YYC_OK, "third open: %s",
              rel_last_error());
    REL_CHECK(reads_pattern(third, "after-inline", 7), "the holder's inline write was lost");
    REL_CHECK(reads_pattern(third, "after-file", 8), "the holder's file write was lost");
    yyc_kv_close(third);
}

static void count_no_space(void *ctx, const yyc_error *e) {
    if (e->code == YYC_ENOSPC) ++*(int *)ctx;
}

/* --child full_remove_all DIR: on a real full tmpfs that the cache itself filled, while
 * another process holds the manifest open, remove-all succeeds without replacing the manifest
 * file, the holder's later writes are kept, and the storage works again. */
static int child_full_remove_all(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *dir = argv[1];
    if (!mount_private_tmpfs(dir, "2m")) return 77;
    char cache[4096];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    yyc_kv *kv = NULL;
    REL_CHECK(yyc_kv_open(cache, YYC_KV_MIXED, &kv) == YYC_OK, "open: %s", rel_last_error());
    holder h = holder_start(cache);
    int rc = YYC_OK;
    for (int i = 0; i < 10000 && rc == YYC_OK; i++) {
        char key[32];
        snprintf(key, sizeof key, "file-%d", i);
        rc = save_pattern(kv, key, (unsigned)i, true);
    }
    REL_CHECK(rc == YYC_ENOSPC, "filling with files ended with %s", yyc_status_name(rc));
    fill_manifest(kv);
    top_up(dir);
    REL_CHECK(save_pattern(kv, "probe", 1, false) == YYC_ENOSPC, "the disk is not full");
    ino_t before = manifest_inode(cache);
    int no_space_events = 0;
    yyc_kv_set_error_hook(kv, count_no_space, &no_space_events);
    rc = yyc_kv_remove_all(kv);
    yyc_kv_set_error_hook(kv, NULL, NULL);
    REL_CHECK(rc == YYC_OK, "remove-all on a full disk: %s (%s)", yyc_status_name(rc),
              rel_last_error());
    /* (The row delete did meet the full disk: the fallback was what worked.) */
    REL_CHECK(no_space_events > 0, "the disk was not full for the remove-all");
    REL_CHECK(manifest_inode(cache) == before, "remove-all replaced the manifest file");
    int64_t n = -1;
    REL_CHECK(yyc_kv_count(kv, &n) == YYC_OK && n == 0, "%lld rows left", (long long)n);
    REL_CHECK(holder_finish(&h), "the holder's writes after the remove-all failed");
    check_holder_writes_survive(cache);
    REL_CHECK(save_pattern(kv, "again", 3, true) == YYC_OK, "save after: %s", rel_last_error());
    REL_CHECK(reads_pattern(kv, "again", 3), "read after");
    REL_CHECK(manifest_inode(cache) == before, "the manifest file was replaced");
    yyc_kv_close(kv);
    return 0;
}

static void kv_remove_all_on_a_full_disk_works_and_keeps_the_manifest_file(void **state) {
    (void)state;
    char *dir = test_temp_dir("save-fullclear");
    const char *args[] = {"full_remove_all", dir, NULL};
    int rc = rel_run(args, 120.0);
    test_rm_rf(dir);
    free(dir);
    if (rc == 77) skip();
    assert_int_equal(rc, 0);
}

/* Overwrites every page of dir/manifest.sqlite but the first (the schema stays readable, so
 * opens succeed; every row read or write then reports SQLITE_CORRUPT). */
static void corrupt_all_but_the_first_page(const char *dir) {
    char p[4096];
    int fd = open(tk_join(p, sizeof p, dir, "manifest.sqlite"), O_WRONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(st.st_size > 3 * 4096);
    char junk[4096];
    for (off_t off = 4096; off < st.st_size; off += (off_t)sizeof junk) {
        tk_fill(junk, sizeof junk, (unsigned)off);
        assert_int_equal(pwrite(fd, junk, sizeof junk, off), (ssize_t)sizeof junk);
    }
    close(fd);
}

/* Corruption found by the remove-all itself (seen_before false) or by an earlier call. */
static void check_corrupt_remove_all(bool seen_before) {
    char *dir = test_temp_dir("save-corruptclear");
    yyc_kv *kv = open_kv(dir);
    for (int i = 0; i < 200; i++) {
        char key[32];
        snprintf(key, sizeof key, "key-%d", i);
        assert_int_equal(save_pattern(kv, key, (unsigned)i, i % 4 == 0), YYC_OK);
    }
    yyc_kv_close(kv); /* checkpoints everything into the main file */
    corrupt_all_but_the_first_page(dir);
    holder h = holder_start(dir);
    kv = open_kv(dir);
    ino_t before = manifest_inode(dir);
    int64_t n;
    if (seen_before) assert_int_equal(yyc_kv_count(kv, &n), YYC_ECORRUPT);
    int rc = yyc_kv_remove_all(kv);
    if (rc != YYC_OK) fail_msg("remove-all of a corrupt manifest: %s", rel_last_error());
    assert_int_equal(manifest_inode(dir), before);
    assert_int_equal(yyc_kv_count(kv, &n), YYC_OK);
    assert_int_equal(n, 0);
    assert_true(holder_finish(&h));
    check_holder_writes_survive(dir);
    assert_int_equal(manifest_inode(dir), before);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void
kv_remove_all_of_a_corrupt_manifest_rebuilds_it_in_place_under_other_processes(void **state) {
    (void)state;
    check_corrupt_remove_all(false);
    check_corrupt_remove_all(true);
}

/* A garbage manifest found at open is rebuilt in place: the file this test holds open stays
 * the manifest (still linked, same inode). */
static void kv_open_rebuilds_a_garbage_manifest_in_place(void **state) {
    (void)state;
    char *dir = test_temp_dir("save-garbageopen");
    char p[4096];
    tk_join(p, sizeof p, dir, "manifest.sqlite");
    char junk[16384];
    tk_fill(junk, sizeof junk, 3);
    tk_write_file(p, junk, sizeof junk);
    int held = open(p, O_RDONLY | O_CLOEXEC);
    assert_true(held >= 0);
    struct stat was;
    assert_int_equal(fstat(held, &was), 0);
    yyc_kv *kv = NULL;
    assert_int_equal(yyc_kv_open(dir, YYC_KV_MIXED, &kv), YYC_OK);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_ECORRUPT);
    struct stat now;
    assert_int_equal(fstat(held, &now), 0);
    assert_true(now.st_nlink > 0);
    assert_int_equal(manifest_inode(dir), was.st_ino);
    assert_int_equal(save_pattern(kv, "k", 1, true), YYC_OK);
    assert_true(reads_pattern(kv, "k", 1));
    yyc_kv_close(kv);
    close(held);
    test_rm_rf(dir);
    free(dir);
}

/* ---------------------------------------------------------------- item 7: reserved names */

static void kv_reserved_file_names_are_rejected_and_nothing_is_written(void **state) {
    (void)state;
    char *dir = test_temp_dir("save-reserved");
    yyc_kv *kv = open_kv(dir);
    static const char *const reserved[] = {YYC__FS_TEMP_PREFIX, YYC__FS_TEMP_PREFIX "x",
                                           YYC__FS_TEMP_PREFIX "0123456789abcdef"};
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++) {
        assert_false(yyc_kv_filename_is_valid(reserved[i]));
        assert_int_equal(yyc_kv_save(kv, "k", "value", 5, reserved[i], NULL, 0), YYC_EINVAL);
    }
    assert_int_equal(yyc_kv_exists(kv, "k"), YYC_NOTFOUND);
    assert_int_equal(data_files(dir), 0);
    /* Names that only look alike are fine. */
    assert_true(yyc_kv_filename_is_valid(".yyc-tm"));
    assert_true(yyc_kv_filename_is_valid("x" YYC__FS_TEMP_PREFIX));
    yyc_kv_close(kv);
    /* Through the disk cache too. */
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 0, &dc), YYC_OK);
    assert_int_equal(
        yyc_diskcache_set_with_filename(dc, "k", "value", 5, NULL, 0, YYC__FS_TEMP_PREFIX "y"),
        YYC_EINVAL);
    assert_false(yyc_diskcache_contains(dc, "k"));
    yyc_diskcache_release(dc);
    assert_int_equal(data_files(dir), 0);
    test_rm_rf(dir);
    free(dir);
}

/* ---------------------------------------------------------------- the WAL */

static long long wal_bytes(const char *dir) { return tk_file_size(dir, "manifest.sqlite-wal"); }

static void kv_wal_is_capped_after_checkpoints_and_truncated_by_remove_all(void **state) {
    (void)state;
    char *dir = test_temp_dir("save-wal");
    yyc_kv *kv = open_kv(dir);
    yyc__worker_drain(kv); /* no other reader: checkpoints complete */
    static unsigned char v[16384];
    for (int i = 0; i < 600; i++) { /* ~10 MB through the WAL, past the auto-checkpoint */
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        fill_pattern(v, sizeof v, (unsigned)i);
        assert_int_equal(yyc_kv_save(kv, key, v, sizeof v, NULL, NULL, 0), YYC_OK);
    }
    yyc__kv_checkpoint(kv);
    assert_int_equal(yyc_kv_save(kv, "small", "x", 1, NULL, NULL, 0), YYC_OK); /* WAL restarts */
    long long capped = wal_bytes(dir);
    int64_t reported = -1;
    assert_int_equal(yyc__kv_wal_size(kv, &reported), YYC_OK);
    assert_int_equal(reported, capped);
    if (capped > YYC__KV_WAL_LIMIT_BYTES)
        fail_msg("WAL is %lld bytes after a checkpoint, above its cap %d", capped,
                 YYC__KV_WAL_LIMIT_BYTES);
    assert_int_equal(yyc_kv_remove_all(kv), YYC_OK);
    assert_int_equal(yyc__kv_wal_size(kv, &reported), YYC_OK);
    assert_int_equal(reported, 0);
    assert_int_equal(wal_bytes(dir), 0);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_vacuum_gives_the_space_of_removed_rows_back(void **state) {
    (void)state;
    char *dir = test_temp_dir("save-vacuum");
    yyc_kv *kv = open_kv(dir);
    yyc__worker_drain(kv);
    static unsigned char v[4000];
    for (int i = 0; i < 500; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(yyc_kv_save(kv, key, v, sizeof v, NULL, NULL, 0), YYC_OK);
    }
    for (int i = 0; i < 490; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(yyc_kv_remove(kv, key), YYC_OK);
    }
    yyc__kv_checkpoint(kv);
    long long before = tk_file_size(dir, "manifest.sqlite");
    assert_true(before > 1000000);
    assert_int_equal(yyc__kv_vacuum(kv), YYC_OK);
    assert_true(tk_file_size(dir, "manifest.sqlite") < before / 10);
    assert_int_equal(wal_bytes(dir), 0);
    int64_t n;
    assert_int_equal(yyc_kv_count(kv, &n), YYC_OK);
    assert_int_equal(n, 10);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* ---------------------------------------------------------------- main */

static const rel_child children[] = {
    {"full_replace", child_full_replace},
    {"full_remove_all", child_full_remove_all},
    {"holder", child_holder},
    {NULL, NULL},
};

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--child") == 0)
        return rel_dispatch(children, argc - 2, argv + 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kv_a_save_never_replaces_another_keys_file),
        cmocka_unit_test(kv_replace_blocked_by_another_writer_keeps_the_old_value),
        cmocka_unit_test(kv_replace_whose_row_write_fails_keeps_the_old_value),
        cmocka_unit_test(kv_replace_on_a_full_disk_keeps_the_old_value),
        cmocka_unit_test(kv_remove_all_on_a_full_disk_works_and_keeps_the_manifest_file),
        cmocka_unit_test(
            kv_remove_all_of_a_corrupt_manifest_rebuilds_it_in_place_under_other_processes),
        cmocka_unit_test(kv_open_rebuilds_a_garbage_manifest_in_place),
        cmocka_unit_test(kv_reserved_file_names_are_rejected_and_nothing_is_written),
        cmocka_unit_test(kv_wal_is_capped_after_checkpoints_and_truncated_by_remove_all),
        cmocka_unit_test(kv_vacuum_gives_the_space_of_removed_rows_back),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
