/*
 * test_kv_storage.c - yyc_kv (YYKVStorage): behaviour of spec 1.3 / 2, its deviations, the
 * on-disk format contract and its faults. Every test works in its own temporary folder.
 */
#include "test_kv_support.h"

#include "platform/crc32c.h"
#include "platform/fs_util.h"
#include "platform/internal.h"
#include "kv/kv_private.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>

/* --- helpers --- */

static yyc_kv *open_kv(const char *dir, yyc_kv_type type) {
    yyc_kv *kv = NULL;
    int rc = yyc_kv_open(dir, type, &kv);
    assert_int_equal(rc, YYC_OK);
    assert_non_null(kv);
    return kv;
}

static void save_str(yyc_kv *kv, const char *key, const char *value, const char *filename) {
    assert_int_equal(yyc_kv_save(kv, key, value, strlen(value), filename, NULL, 0), YYC_OK);
}

static void check_value(yyc_kv *kv, const char *key, const char *value) {
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_kv_get_value(kv, key, &v, &len), YYC_OK);
    assert_int_equal(len, strlen(value));
    assert_memory_equal(v, value, len);
    yyc_free(v);
}

static int64_t kv_count(yyc_kv *kv) {
    int64_t n = -1;
    assert_int_equal(yyc_kv_count(kv, &n), YYC_OK);
    return n;
}

/* --- a pause inside a save (BUG-MP-CLEAR-RACE) ---
 * A save writes its temporary file before it takes the folder lock, so another process can
 * move data/ to the trash (and empty it) in between. To open that window deterministically,
 * flock() and openat() are interposed here (the library is linked in statically: its calls
 * reach these definitions): when armed, the arming thread runs window_action once, just before
 * the chosen call - its first exclusive lock, or the creation of its first temporary file.
 * Everything else passes straight through. */
enum { WINDOW_NONE, WINDOW_BEFORE_LOCK, WINDOW_BEFORE_TEMP };
static atomic_int window_armed;
static pthread_t window_thread;
static void (*window_action)(void *ctx);
static void *window_ctx;

static void window_fire(int at) {
    int expected = at;
    if (atomic_load(&window_armed) == at && pthread_equal(pthread_self(), window_thread) &&
        atomic_compare_exchange_strong(&window_armed, &expected, WINDOW_NONE))
        window_action(window_ctx);
}

static void window_arm(int at, void (*action)(void *), void *ctx) {
    window_action = action;
    window_ctx = ctx;
    window_thread = pthread_self();
    atomic_store(&window_armed, at);
}

/* The real functions, resolved lazily by whichever thread calls first (atomically: the worker
 * thread calls them too). */
typedef int (*flock_fn)(int, int);
typedef int (*openat_fn)(int, const char *, int, ...);
static _Atomic(flock_fn) real_flock;
static _Atomic(openat_fn) real_openat;

int flock(int fd, int op) {
    flock_fn real = atomic_load(&real_flock);
    if (!real) {
        real = (flock_fn)dlsym(RTLD_NEXT, "flock");
        atomic_store(&real_flock, real);
    }
    if (op & LOCK_EX) window_fire(WINDOW_BEFORE_LOCK);
    return real(fd, op);
}

int openat(int dirfd, const char *path, int flags, ...) {
    openat_fn real = atomic_load(&real_openat);
    if (!real) {
        real = (openat_fn)dlsym(RTLD_NEXT, "openat");
        atomic_store(&real_openat, real);
    }
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if ((flags & O_CREAT) && strncmp(path, YYC__FS_TEMP_PREFIX, strlen(YYC__FS_TEMP_PREFIX)) == 0)
        window_fire(WINDOW_BEFORE_TEMP);
    return real(dirfd, path, flags, mode);
}

typedef struct hook_log {
    int calls;
    int last_code;
    int corrupt_events;
    char last_message[256];
} hook_log;

static void record_hook(void *ctx, const yyc_error *e) {
    hook_log *log = ctx;
    log->calls++;
    log->last_code = e->code;
    if (e->code == YYC_ECORRUPT) log->corrupt_events++;
    snprintf(log->last_message, sizeof log->last_message, "%s", e->message);
}

/* --- open and layout --- */

static void kv_open_creates_layout_with_private_permissions(void **state) {
    (void)state;
    char *base = test_temp_dir("kv-layout");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/a/b/cache", base); /* intermediate folders are created */
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    assert_string_equal(yyc_kv_path(kv), dir);
    assert_int_equal(yyc_kv_type_of(kv), YYC_KV_MIXED);
    save_str(kv, "k", "v", NULL);

    char p[4096];
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(stat(tk_join(p, sizeof p, dir, "data"), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(stat(tk_join(p, sizeof p, dir, "trash"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(stat(tk_join(p, sizeof p, dir, "manifest.sqlite"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(stat(tk_join(p, sizeof p, dir, "manifest.sqlite-wal"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    sqlite3 *db = tk_raw_open(dir);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "pragma journal_mode", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
    sqlite3_finalize(s);
    assert_int_equal(tk_raw_int(db, "select count(*) from sqlite_master where type='index' and "
                                    "name='last_access_time_idx'"),
                     1);
    /* YYKVStorage's seven columns, plus the two checksum columns and the expiry column it
     * never touches. */
    assert_int_equal(tk_raw_int(db, "select count(*) from pragma_table_info('manifest')"), 10);
    assert_int_equal(tk_raw_int(db, "select count(*) from pragma_table_info('manifest') where "
                                    "name in ('value_crc32c', 'extended_crc32c', 'yyc_expiry_ms')"),
                     3);
    assert_int_equal(
        tk_raw_int(db, "select pk from pragma_table_info('manifest') where name='key'"), 1);
    sqlite3_close(db);
    yyc_kv_close(kv);
    test_rm_rf(base);
    free(base);
}

static void kv_open_rejects_bad_arguments(void **state) {
    (void)state;
    yyc_kv *kv = (yyc_kv *)1;
    assert_int_equal(yyc_kv_open("", YYC_KV_MIXED, &kv), YYC_EINVAL);
    assert_null(kv);
    assert_int_equal(yyc_kv_open(NULL, YYC_KV_MIXED, &kv), YYC_EINVAL);
    char *base = test_temp_dir("kv-badargs");
    assert_int_equal(yyc_kv_open(base, (yyc_kv_type)3, &kv), YYC_EINVAL);
    char *longp = malloc(PATH_MAX + 1);
    memset(longp, 'a', PATH_MAX);
    longp[0] = '/';
    longp[PATH_MAX] = '\0';
    assert_int_equal(yyc_kv_open(longp, YYC_KV_MIXED, &kv), YYC_EINVAL);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_EINVAL);
    free(longp);
    test_rm_rf(base);
    free(base);
}

/* --- save and read --- */

static void kv_save_inline_then_read_item_info_and_value(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-inline");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    int64_t before = (int64_t)time(NULL);
    assert_int_equal(yyc_kv_save(kv, "key", "value", 5, NULL, "ext", 3), YYC_OK);

    yyc_kv_item *item = NULL;
    assert_int_equal(yyc_kv_get_item(kv, "key", &item), YYC_OK);
    assert_string_equal(item->key, "key");
    assert_int_equal(item->value_len, 5);
    assert_memory_equal(item->value, "value", 5);
    assert_null(item->filename);
    assert_int_equal(item->size, 5);
    assert_true(item->modification_time >= before && item->modification_time <= time(NULL));
    assert_true(item->last_access_time >= before);
    assert_int_equal(item->extended_len, 3);
    assert_memory_equal(item->extended_data, "ext", 3);
    yyc_kv_item_free(item);

    assert_int_equal(yyc_kv_get_item_info(kv, "key", &item), YYC_OK);
    assert_null(item->value);
    assert_int_equal(item->value_len, 0);
    assert_int_equal(item->size, 5);
    assert_memory_equal(item->extended_data, "ext", 3);
    yyc_kv_item_free(item);

    check_value(kv, "key", "value");
    assert_int_equal(yyc_kv_exists(kv, "key"), YYC_OK);
    assert_int_equal(yyc_kv_exists(kv, "nope"), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_get_item(kv, "nope", &item), YYC_NOTFOUND);
    assert_null(item);
    void *v = (void *)1;
    size_t len = 9;
    assert_int_equal(yyc_kv_get_value(kv, "nope", &v, &len), YYC_NOTFOUND);
    assert_null(v);
    assert_int_equal(len, 0);

    /* Extended data absent or empty reads back as NULL. */
    assert_int_equal(yyc_kv_save(kv, "key", "v2", 2, NULL, "", 0), YYC_OK);
    assert_int_equal(yyc_kv_get_item_info(kv, "key", &item), YYC_OK);
    assert_null(item->extended_data);
    assert_int_equal(item->extended_len, 0);
    yyc_kv_item_free(item);
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    assert_int_equal(tk_int(dir, "select count(*) from manifest where inline_data is not null"), 1);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_save_with_filename_writes_the_file_and_a_row_without_inline_data(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-file");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    char md5[33], rel[64];
    yyc_kv_md5_filename("big", md5);
    char buf[5000];
    tk_fill(buf, sizeof buf, 1);
    assert_int_equal(yyc_kv_save(kv, "big", buf, sizeof buf, md5, NULL, 0), YYC_OK);
    assert_int_equal(tk_file_size(dir, tk_md5_rel(rel, "big")), (long long)sizeof buf);
    assert_int_equal(tk_int(dir, "select count(*) from manifest where inline_data is null and "
                                 "size = 5000 and filename is not null"),
                     1);
    /* No temporary file is left behind. */
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    char p[4096];
    struct stat st;
    assert_int_equal(stat(tk_join(p, sizeof p, dir, rel), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    yyc_kv_item *item;
    assert_int_equal(yyc_kv_get_item(kv, "big", &item), YYC_OK);
    assert_string_equal(item->filename, md5);
    assert_int_equal(item->value_len, sizeof buf);
    assert_memory_equal(item->value, buf, sizeof buf);
    yyc_kv_item_free(item);
    void *v;
    size_t len;
    assert_int_equal(yyc_kv_get_value(kv, "big", &v, &len), YYC_OK);
    assert_int_equal(len, sizeof buf);
    assert_memory_equal(v, buf, len);
    yyc_free(v);

    /* Overwriting the same file name replaces the content. */
    assert_int_equal(yyc_kv_save(kv, "big", "small", 5, md5, NULL, 0), YYC_OK);
    check_value(kv, "big", "small");
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_mixed_moving_a_value_between_inline_and_file_deletes_the_old_file(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-move");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    char md5[33], rel[64];
    yyc_kv_md5_filename("k", md5);
    tk_md5_rel(rel, "k");
    save_str(kv, "k", "in a file", md5);
    assert_true(tk_exists(dir, rel));
    save_str(kv, "k", "inline now", NULL);
    assert_false(tk_exists(dir, rel));
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    check_value(kv, "k", "inline now");
    save_str(kv, "k", "file again", md5);
    assert_true(tk_exists(dir, rel));
    assert_int_equal(tk_int(dir, "select count(*) from manifest where inline_data is null"), 1);
    check_value(kv, "k", "file again");

    /* Deviation: changing a key's file name deletes the old file (YYKVStorage orphaned it). */
    save_str(kv, "k", "renamed", "custom-name");
    assert_false(tk_exists(dir, rel));
    assert_true(tk_exists(dir, "data/custom-name"));
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    check_value(kv, "k", "renamed");
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* A save learns the file it leaves behind either from SQLite's preupdate hook, inside the
 * upsert (the default where the linked SQLite has it, as Debian's does), or from a lookup first:
 * both delete exactly the files the key no longer uses, and only those. */
static void check_old_files_are_deleted(bool hook) {
    char *dir = test_temp_dir(hook ? "kv-oldhook" : "kv-oldlookup");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    bool in_use = yyc__kv_set_old_row_hook(kv, hook);
    if (!hook) assert_false(in_use);
    else if (sqlite3_compileoption_used("ENABLE_PREUPDATE_HOOK")) assert_true(in_use);
    save_str(kv, "other", "another key's file", "f-other");
    save_str(kv, "k", "inline", NULL);
    save_str(kv, "k", "in f1", "f1");
    assert_true(tk_exists(dir, "data/f1"));
    /* Same name: the new version goes to a fresh variant of it, and f1 goes after the commit. */
    save_str(kv, "k", "in f1 again", "f1");
    assert_false(tk_exists(dir, "data/f1"));
    yyc_kv_item *info = NULL;
    assert_int_equal(yyc_kv_get_item_info(kv, "k", &info), YYC_OK);
    assert_int_equal(strncmp(info->filename, "f1~", 3), 0);
    char variant[300];
    snprintf(variant, sizeof variant, "data/%s", info->filename);
    yyc_kv_item_free(info);
    assert_true(tk_exists(dir, variant));
    check_value(kv, "k", "in f1 again");
    save_str(kv, "k", "in f2", "f2");
    assert_false(tk_exists(dir, variant));
    assert_true(tk_exists(dir, "data/f2"));
    save_str(kv, "k", "inline again", NULL);
    assert_false(tk_exists(dir, "data/f2"));
    check_value(kv, "k", "inline again");
    save_str(kv, "k2", "new key", NULL); /* no previous row */
    save_str(kv, "k2", "new key in a file", "f3");
    assert_int_equal(tk_count_entries(dir, "data"), 2); /* f-other, f3 */
    assert_true(tk_exists(dir, "data/f-other"));
    check_value(kv, "other", "another key's file");
    check_value(kv, "k2", "new key in a file");
    /* A lazy reopen keeps the choice. */
    yyc__kv_close_connection(kv);
    save_str(kv, "k2", "inline at last", NULL);
    assert_false(tk_exists(dir, "data/f3"));
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_saves_delete_the_files_they_leave_behind_with_the_preupdate_hook(void **state) {
    (void)state;
    check_old_files_are_deleted(true);
}

static void kv_saves_delete_the_files_they_leave_behind_with_a_lookup(void **state) {
    (void)state;
    check_old_files_are_deleted(false);
}

/* A remove of one key (yyc_kv_remove, and the LRU trims, which remove one key at a time) learns
 * the key's file from SQLite's preupdate hook during its delete, or from a lookup first: both
 * delete the row and exactly the key's file, and only after the row is gone. */
static void check_removes_delete_their_files(bool hook) {
    char *dir = test_temp_dir(hook ? "kv-rmhook" : "kv-rmlookup");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    bool in_use = yyc__kv_set_old_row_hook(kv, hook);
    if (!hook) assert_false(in_use);
    else if (sqlite3_compileoption_used("ENABLE_PREUPDATE_HOOK")) assert_true(in_use);
    save_str(kv, "other", "another key's file", "f-other");
    save_str(kv, "k1", "in f1", "f1");
    save_str(kv, "k2", "inline", NULL);
    save_str(kv, "k3", "in f3", "f3");
    assert_int_equal(yyc_kv_remove(kv, "k1"), YYC_OK);
    assert_false(tk_exists(dir, "data/f1"));
    assert_int_equal(yyc_kv_exists(kv, "k1"), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_remove(kv, "k2"), YYC_OK); /* inline: no file */
    assert_int_equal(yyc_kv_remove(kv, "absent"), YYC_OK);
    assert_int_equal(tk_count_entries(dir, "data"), 2); /* f-other, f3 */
    /* A row naming something that is not one file name: the row goes, nothing else. */
    tk_exec(dir, "update manifest set filename = '../manifest.sqlite' where key = 'k3'");
    assert_int_equal(yyc_kv_remove(kv, "k3"), YYC_OK);
    assert_true(tk_exists(dir, "manifest.sqlite"));
    assert_true(tk_exists(dir, "data/f3")); /* (unreferenced now: the orphan sweep's) */
    unlink(tk_join((char[4096]){0}, 4096, dir, "data/f3"));
    /* A trim removes the least recently used keys and their files. */
    save_str(kv, "t1", "trimmed first", "ft1");
    save_str(kv, "t2", "trimmed second", "ft2");
    save_str(kv, "t3", "kept", "ft3");
    tk_exec(dir, "update manifest set last_access_time = 1 where key = 'other'");
    tk_exec(dir, "update manifest set last_access_time = 2 where key = 't1'");
    tk_exec(dir, "update manifest set last_access_time = 3 where key = 't2'");
    /* A lazy reopen keeps the choice. */
    yyc__kv_close_connection(kv);
    assert_int_equal(yyc_kv_remove_to_fit_count(kv, 1), YYC_OK);
    assert_int_equal(kv_count(kv), 1);
    check_value(kv, "t3", "kept");
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    assert_true(tk_exists(dir, "data/ft3"));
    /* A save after a remove finds no previous file (the hook's record does not linger). */
    assert_int_equal(yyc_kv_remove(kv, "t3"), YYC_OK);
    save_str(kv, "ft3-owner", "inline", NULL);
    save_str(kv, "t3", "back", "ft3");
    check_value(kv, "t3", "back");
    assert_true(tk_exists(dir, "data/ft3"));
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_removes_delete_their_files_with_the_preupdate_hook(void **state) {
    (void)state;
    check_removes_delete_their_files(true);
}

static void kv_removes_delete_their_files_with_a_lookup(void **state) {
    (void)state;
    check_removes_delete_their_files(false);
}

/* The hook finds key and filename by name, not by position: a manifest whose columns come in
 * another order (the schema check only names them) still gets its old files deleted. A row
 * naming something that is not one file name is never followed outside data/. */
static void kv_saves_find_old_files_in_a_manifest_with_reordered_columns(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-reordered");
    char *outside = test_temp_dir("kv-reordered-outside");
    char p[4096];
    assert_int_equal(mkdir(tk_join(p, sizeof p, dir, "data"), 0700), 0);
    tk_exec(dir, "create table manifest (extended_data blob, last_access_time integer, "
                 "filename text, size integer, key text, inline_data blob, "
                 "modification_time integer, primary key(key)); "
                 "create index last_access_time_idx on manifest(last_access_time);");
    tk_write_file(tk_join(p, sizeof p, outside, "precious"), "keep", 4);
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "k", "in a file", "f1");
    save_str(kv, "k", "inline", NULL);
    assert_false(tk_exists(dir, "data/f1"));
    check_value(kv, "k", "inline");
    yyc_kv_close(kv);
    /* A hostile row naming a path outside data/: replacing it touches nothing outside. */
    char sql[4400];
    snprintf(sql, sizeof sql,
             "insert into manifest (key, filename, size, modification_time, last_access_time) "
             "values ('h', '../../%s/precious', 4, 1, 1);",
             outside + 1);
    tk_exec(dir, sql);
    kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "h", "inline over a hostile row", NULL);
    check_value(kv, "h", "inline over a hostile row");
    assert_int_equal(tk_file_size(outside, "precious"), 4);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    test_rm_rf(outside);
    free(dir);
    free(outside);
}

static void kv_file_type_without_a_filename_fails_and_writes_nothing(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-filetype");
    yyc_kv *kv = open_kv(dir, YYC_KV_FILE);
    assert_int_equal(yyc_kv_save(kv, "k", "v", 1, NULL, NULL, 0), YYC_EINVAL);
    assert_int_equal(yyc_kv_save(kv, "k", "v", 1, "", NULL, 0), YYC_EINVAL);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_EINVAL);
    assert_int_equal(kv_count(kv), 0);
    save_str(kv, "k", "v", "f");
    check_value(kv, "k", "v");
    assert_true(tk_exists(dir, "data/f"));
    assert_int_equal(yyc_kv_remove(kv, "k"), YYC_OK);
    assert_false(tk_exists(dir, "data/f"));
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_sqlite_type_ignores_filenames_and_stores_inline(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-sqlitetype");
    yyc_kv *kv = open_kv(dir, YYC_KV_SQLITE);
    save_str(kv, "k", "value", "some-file");
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    yyc_kv_item *item;
    assert_int_equal(yyc_kv_get_item(kv, "k", &item), YYC_OK);
    assert_null(item->filename);
    yyc_kv_item_free(item);
    check_value(kv, "k", "value");
    /* Not even validated: the name is ignored. */
    save_str(kv, "k2", "value", "../../escape");
    check_value(kv, "k2", "value");
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_empty_values_are_stored_and_read_back_as_empty(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-empty");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    /* Deviation: YYKVStorage refused empty values and kept the old one. */
    save_str(kv, "inline", "old", NULL);
    assert_int_equal(yyc_kv_save(kv, "inline", NULL, 0, NULL, NULL, 0), YYC_OK);
    assert_int_equal(yyc_kv_save(kv, "file", "", 0, "f", NULL, 0), YYC_OK);
    assert_int_equal(tk_file_size(dir, "data/f"), 0);
    const char *keys[] = {"inline", "file"};
    for (int i = 0; i < 2; i++) {
        void *v = (void *)1;
        size_t len = 7;
        assert_int_equal(yyc_kv_get_value(kv, keys[i], &v, &len), YYC_OK);
        assert_int_equal(len, 0);
        assert_null(v);
        yyc_kv_item *item;
        assert_int_equal(yyc_kv_get_item(kv, keys[i], &item), YYC_OK);
        assert_int_equal(item->value_len, 0);
        assert_int_equal(item->size, 0);
        yyc_kv_item_free(item);
    }
    /* Stored as an empty blob, not NULL. */
    assert_int_equal(tk_int(dir, "select count(*) from manifest where key='inline' and "
                                 "typeof(inline_data)='blob'"),
                     1);
    assert_int_equal(yyc_kv_save(kv, "x", NULL, 3, NULL, NULL, 0), YYC_EINVAL);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_empty_key_fails_writes_misses_reads_and_ignores_removals(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-emptykey");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    assert_int_equal(yyc_kv_save(kv, "", "v", 1, NULL, NULL, 0), YYC_EINVAL);
    assert_int_equal(yyc_kv_save(kv, NULL, "v", 1, NULL, NULL, 0), YYC_EINVAL);
    yyc_kv_item *item;
    assert_int_equal(yyc_kv_get_item(kv, "", &item), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_get_item_info(kv, "", &item), YYC_NOTFOUND);
    void *v;
    size_t len;
    assert_int_equal(yyc_kv_get_value(kv, "", &v, &len), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_exists(kv, ""), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_remove(kv, ""), YYC_OK);
    assert_int_equal(kv_count(kv), 0);
    /* Empty key lists give empty results. */
    yyc_kv_item **items = (yyc_kv_item **)1;
    size_t n = 5;
    assert_int_equal(yyc_kv_get_items(kv, NULL, 0, &items, &n), YYC_OK);
    assert_null(items);
    assert_int_equal(n, 0);
    assert_int_equal(yyc_kv_remove_keys(kv, NULL, 0), YYC_OK);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_invalid_filenames_are_rejected_and_nothing_is_written(void **state) {
    (void)state;
    assert_true(yyc_kv_filename_is_valid("a"));
    assert_true(yyc_kv_filename_is_valid(".hidden"));
    assert_true(yyc_kv_filename_is_valid("..."));
    assert_false(yyc_kv_filename_is_valid(NULL));
    assert_false(yyc_kv_filename_is_valid(""));
    assert_false(yyc_kv_filename_is_valid("."));
    assert_false(yyc_kv_filename_is_valid(".."));
    assert_false(yyc_kv_filename_is_valid("a/b"));
    assert_false(yyc_kv_filename_is_valid("../x"));
    char name[301];
    memset(name, 'n', 300);
    name[300] = '\0';
    assert_false(yyc_kv_filename_is_valid(name));
    name[255] = '\0';
    assert_true(yyc_kv_filename_is_valid(name));
    name[255] = 'n';

    char *dir = test_temp_dir("kv-badname");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    hook_log log = {0};
    yyc_kv_set_error_hook(kv, record_hook, &log);
    const char *bad[] = {"a/b", "..", ".", "../outside", name};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(yyc_kv_save(kv, "secret-key", "v", 1, bad[i], NULL, 0), YYC_EINVAL);
        /* Messages never carry keys (or names chosen from keys). */
        assert_null(strstr(log.last_message, "secret-key"));
    }
    assert_int_equal(log.calls, 5);
    assert_int_equal(log.last_code, YYC_EINVAL);
    assert_int_equal(kv_count(kv), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    /* data, trash, manifest, -wal, -shm, space.reserve */
    assert_int_equal(tk_count_entries(dir, ""), 6);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_md5_filenames_are_lowercase_hex(void **state) {
    (void)state;
    char out[33];
    yyc_kv_md5_filename("", out);
    assert_string_equal(out, "d41d8cd98f00b204e9800998ecf8427e");
    yyc_kv_md5_filename("abc", out);
    assert_string_equal(out, "900150983cd24fb0d6963f7d28e17f72");
    yyc_kv_md5_filename("The quick brown fox jumps over the lazy dog", out);
    assert_string_equal(out, "9e107d9d372bb6826bd81d3542a419d6");
}

/* --- removal --- */

static void kv_remove_by_key_and_by_key_list_delete_rows_and_files(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-remove");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "a", "A", "fa");
    save_str(kv, "b", "B", NULL);
    save_str(kv, "c", "C", "fc");
    save_str(kv, "d", "D", NULL);
    assert_int_equal(yyc_kv_remove(kv, "a"), YYC_OK);
    assert_false(tk_exists(dir, "data/fa"));
    assert_int_equal(yyc_kv_exists(kv, "a"), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_remove(kv, "a"), YYC_OK); /* absent: still OK */
    const char *keys[] = {"b", "c", "missing"};
    assert_int_equal(yyc_kv_remove_keys(kv, keys, 3), YYC_OK);
    assert_false(tk_exists(dir, "data/fc"));
    assert_int_equal(kv_count(kv), 1);
    check_value(kv, "d", "D");
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_remove_larger_than_removes_big_items_and_honours_sentinels(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-larger");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "s", "1", NULL);
    save_str(kv, "m", "123", "fm");
    save_str(kv, "l", "12345", "fl");
    assert_int_equal(yyc_kv_remove_larger_than(kv, INT64_MAX), YYC_OK);
    assert_int_equal(kv_count(kv), 3);
    assert_int_equal(yyc_kv_remove_larger_than(kv, 3), YYC_OK);
    assert_int_equal(kv_count(kv), 2);
    assert_false(tk_exists(dir, "data/fl"));
    assert_true(tk_exists(dir, "data/fm"));
    assert_int_equal(yyc_kv_remove_larger_than(kv, 0), YYC_OK); /* <= 0: everything */
    assert_int_equal(kv_count(kv), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_remove_earlier_than_uses_strictly_earlier_access_times(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-earlier");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "t100", "a", "f100");
    save_str(kv, "t200", "b", NULL);
    save_str(kv, "t300", "c", NULL);
    tk_exec(dir, "update manifest set last_access_time = cast(substr(key, 2) as integer)");
    assert_int_equal(yyc_kv_remove_earlier_than(kv, 0), YYC_OK); /* <= 0: nothing */
    assert_int_equal(kv_count(kv), 3);
    assert_int_equal(yyc_kv_remove_earlier_than(kv, 200), YYC_OK);
    assert_int_equal(kv_count(kv), 2);
    assert_int_equal(yyc_kv_exists(kv, "t200"), YYC_OK);
    assert_false(tk_exists(dir, "data/f100"));
    assert_int_equal(yyc_kv_remove_earlier_than(kv, INT64_MAX), YYC_OK); /* everything */
    assert_int_equal(kv_count(kv), 0);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_lru_eviction_removes_oldest_access_first_with_ties_by_insertion(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-lru");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    char key[16];
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof key, "k%02d", i);
        assert_int_equal(yyc_kv_save(kv, key, "0123456789", 10, (i % 3) ? NULL : key, NULL, 0),
                         YYC_OK);
    }
    /* Every access in the same second: ties resolve by insertion (rowid). */
    tk_exec(dir, "update manifest set last_access_time = 1000");
    /* Re-saving k00 gives it a new rowid: it becomes the newest of the tie. */
    assert_int_equal(yyc_kv_save(kv, "k00", "0123456789", 10, "k00", NULL, 0), YYC_OK);
    tk_exec(dir, "update manifest set last_access_time = 1000");
    /* k39 is older than all the others. */
    tk_exec(dir, "update manifest set last_access_time = 999 where key = 'k39'");

    assert_int_equal(yyc_kv_remove_to_fit_count(kv, INT64_MAX), YYC_OK);
    assert_int_equal(kv_count(kv), 40);
    assert_int_equal(yyc_kv_remove_to_fit_count(kv, 36), YYC_OK);
    assert_int_equal(kv_count(kv), 36);
    const char *gone[] = {"k39", "k01", "k02", "k03"};
    for (int i = 0; i < 4; i++) assert_int_equal(yyc_kv_exists(kv, gone[i]), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_exists(kv, "k00"), YYC_OK);
    assert_int_equal(yyc_kv_exists(kv, "k04"), YYC_OK);
    assert_false(tk_exists(dir, "data/k03"));

    /* By size: 36 * 10 bytes -> at most 105 bytes keeps the 10 newest (k29..k38, k00). */
    assert_int_equal(yyc_kv_remove_to_fit_size(kv, 105), YYC_OK);
    assert_int_equal(kv_count(kv), 10);
    int64_t size;
    assert_int_equal(yyc_kv_size(kv, &size), YYC_OK);
    assert_int_equal(size, 100);
    assert_int_equal(yyc_kv_exists(kv, "k00"), YYC_OK);
    assert_int_equal(yyc_kv_exists(kv, "k30"), YYC_OK);
    assert_int_equal(yyc_kv_exists(kv, "k29"), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_remove_to_fit_size(kv, INT64_MAX), YYC_OK);
    assert_int_equal(kv_count(kv), 10);
    /* Files of evicted items are gone: k30, k33, k36 and k00 remain as files. */
    assert_int_equal(tk_count_entries(dir, "data"), 4);
    assert_int_equal(yyc_kv_remove_to_fit_count(kv, 0), YYC_OK); /* <= 0: everything */
    assert_int_equal(kv_count(kv), 0);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_remove_all_leaves_empty_manifest_and_data_and_trash_empties_later(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-removeall");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    char key[16];
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "k%d", i);
        save_str(kv, key, "value", (i % 2) ? key : NULL);
    }
    assert_int_equal(tk_count_entries(dir, "data"), 25);
    assert_int_equal(yyc_kv_remove_all(kv), YYC_OK);
    assert_int_equal(kv_count(kv), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    assert_true(tk_exists(dir, "manifest.sqlite"));
    assert_int_equal(tk_int(dir, "select count(*) from manifest"), 0);
    assert_true(WAIT_UNTIL(tk_count_entries(dir, "trash") == 0, 10));
    /* Still usable. */
    save_str(kv, "after", "x", "after-file");
    check_value(kv, "after", "x");
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* The trash left by an interrupted remove-all is emptied after the next open. */
static void kv_open_empties_a_leftover_trash(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-trash");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    yyc_kv_close(kv);
    char p[4096];
    snprintf(p, sizeof p, "%s/trash/0A1B2C3D-0000-4000-8000-000000000000", dir);
    assert_int_equal(mkdir(p, 0700), 0);
    strcat(p, "/file");
    tk_write_file(p, "x", 1);
    assert_int_equal(tk_count_entries(dir, "trash"), 1);
    kv = open_kv(dir, YYC_KV_MIXED);
    assert_true(WAIT_UNTIL(tk_count_entries(dir, "trash") == 0, 10));
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

typedef struct progress_log {
    int calls;
    int64_t last_removed, last_total;
    bool monotonic;
} progress_log;

static void record_progress(void *ctx, int64_t removed, int64_t total) {
    progress_log *log = ctx;
    if (removed < log->last_removed || removed > total) log->monotonic = false;
    if (log->calls > 0 && total != log->last_total) log->monotonic = false;
    log->calls++;
    log->last_removed = removed;
    log->last_total = total;
}

static void kv_remove_all_with_progress_reports_monotonically_up_to_the_total(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-progress");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    char key[16];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k%d", i);
        save_str(kv, key, "value", (i % 4) ? NULL : key);
    }
    progress_log log = {.monotonic = true};
    assert_int_equal(yyc_kv_remove_all_progress(kv, record_progress, &log), YYC_OK);
    assert_true(log.monotonic);
    assert_int_equal(log.calls, 4); /* batches of 32 */
    assert_int_equal(log.last_removed, 100);
    assert_int_equal(log.last_total, 100);
    assert_int_equal(kv_count(kv), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    assert_true(tk_exists(dir, "manifest.sqlite")); /* the slow path keeps the database */
    /* Empty storage: no batch, no call. */
    progress_log none = {.monotonic = true};
    assert_int_equal(yyc_kv_remove_all_progress(kv, record_progress, &none), YYC_OK);
    assert_int_equal(none.calls, 0);
    assert_int_equal(yyc_kv_remove_all_progress(kv, NULL, NULL), YYC_OK);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* --- batches --- */

static void kv_batch_get_and_remove_with_more_keys_than_sqlite_variable_limit(void **state) {
    (void)state;
    enum { N = 40000 };
    char *dir = test_temp_dir("kv-batch");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    /* Fill through a raw transaction (fast), plus a few through the API with files. */
    sqlite3 *db = tk_raw_open(dir);
    tk_raw_exec(db, "begin");
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "insert into manifest (key, filename, size, inline_data, "
                                        "modification_time, last_access_time, extended_data) "
                                        "values (?1, null, 2, x'4142', 100, 100, null)",
                                        -1, &s, NULL),
                     SQLITE_OK);
    char **keys = calloc(N + 10, sizeof *keys);
    for (int i = 0; i < N; i++) {
        assert_true(asprintf(&keys[i], "key-%d", i) > 0);
        sqlite3_bind_text(s, 1, keys[i], -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(s), SQLITE_DONE);
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    tk_raw_exec(db, "commit");
    sqlite3_close(db);
    for (int i = N; i < N + 10; i++) {
        assert_true(asprintf(&keys[i], "file-%d", i) > 0);
        save_str(kv, keys[i], "AB", (i % 2) ? keys[i] : NULL);
    }
    /* A few keys that do not exist. */
    const char **req = calloc(N + 20, sizeof *req);
    for (int i = 0; i < N + 10; i++) req[i] = keys[i];
    for (int i = N + 10; i < N + 20; i++) req[i] = "absent";

    yyc_kv_item **items = NULL;
    size_t count = 0;
    assert_int_equal(yyc_kv_get_item_infos(kv, req, N + 20, &items, &count), YYC_OK);
    assert_int_equal(count, N + 10);
    assert_null(items[0]->value);
    yyc_kv_items_free(items, count);
    assert_int_equal(tk_int(dir, "select count(*) from manifest where last_access_time = 100"), N);

    assert_int_equal(yyc_kv_get_items(kv, req, N + 20, &items, &count), YYC_OK);
    assert_int_equal(count, N + 10);
    for (size_t i = 0; i < count; i++) {
        assert_int_equal(items[i]->value_len, 2);
        assert_memory_equal(items[i]->value, "AB", 2);
    }
    yyc_kv_items_free(items, count);
    /* Every requested key was touched. */
    assert_int_equal(tk_int(dir, "select count(*) from manifest where last_access_time = 100"), 0);

    assert_int_equal(yyc_kv_remove_keys(kv, req, N + 20), YYC_OK);
    assert_int_equal(kv_count(kv), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    for (int i = 0; i < N + 10; i++) free(keys[i]);
    free(keys);
    free(req);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* --- 64-bit sizes --- */

static void kv_totals_above_2_gib_do_not_wrap(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-2gib");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    /* Sizes recorded as YYKVStorage would for huge file values (the files are not needed to
     * count them). */
    tk_exec(dir,
            "insert into manifest " TK_COLS " values ('a', 'fa', 1500000000, null, 1, 1, null);"
            "insert into manifest " TK_COLS " values ('b', 'fb', 1500000000, null, 2, 2, null);"
            "insert into manifest " TK_COLS " values ('c', 'fc', 3000000000, null, 3, 3, null);");
    int64_t size = 0;
    assert_int_equal(yyc_kv_size(kv, &size), YYC_OK);
    assert_int_equal(size, INT64_C(6000000000));
    yyc_kv_item *item;
    assert_int_equal(yyc_kv_get_item_info(kv, "c", &item), YYC_OK);
    assert_int_equal(item->size, INT64_C(3000000000));
    yyc_kv_item_free(item);
    /* LRU by size: drop a (1.5 GB) and b (1.5 GB), keep c. */
    assert_int_equal(yyc_kv_remove_to_fit_size(kv, INT64_C(3500000000)), YYC_OK);
    assert_int_equal(yyc_kv_size(kv, &size), YYC_OK);
    assert_int_equal(size, INT64_C(3000000000));
    assert_int_equal(yyc_kv_remove_larger_than(kv, INT64_C(2500000000)), YYC_OK);
    assert_int_equal(kv_count(kv), 0);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_inline_values_above_sqlite_limit_fail_with_too_big(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-toobig");
    yyc_kv *kv = open_kv(dir, YYC_KV_SQLITE);
    /* 3 GiB of untouched, unreserved zero pages: never read by the library. */
    size_t len = (size_t)3 << 30;
    void *big = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (big == MAP_FAILED) skip();
    assert_int_equal(yyc_kv_save(kv, "big", big, len, NULL, NULL, 0), YYC_ETOOBIG);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_ETOOBIG);
    assert_int_equal(yyc_kv_save(kv, "big", "v", 1, NULL, big, len), YYC_ETOOBIG);
    munmap(big, len);
    assert_int_equal(kv_count(kv), 0);
    save_str(kv, "small", "ok", NULL);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* --- access time (spec 2.9) --- */

static int64_t atime_of(const char *dir, const char *key) {
    char sql[256];
    snprintf(sql, sizeof sql, "select last_access_time from manifest where key = '%s'", key);
    return tk_int(dir, sql);
}

static void kv_access_time_is_updated_exactly_as_yykvstorage_does(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-atime");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "a", "A", NULL);
    save_str(kv, "b", "B", "fb");
    save_str(kv, "c", "C", NULL);
    tk_exec(dir, "update manifest set last_access_time = 100, modification_time = 50");
    yyc_kv_item *item;
    int64_t n;
    /* No update: info, exists, count, size, info lists. */
    assert_int_equal(yyc_kv_get_item_info(kv, "a", &item), YYC_OK);
    assert_int_equal(item->last_access_time, 100);
    yyc_kv_item_free(item);
    assert_int_equal(yyc_kv_exists(kv, "a"), YYC_OK);
    assert_int_equal(yyc_kv_count(kv, &n), YYC_OK);
    assert_int_equal(yyc_kv_size(kv, &n), YYC_OK);
    const char *ab[] = {"a", "b"};
    yyc_kv_item **items;
    size_t count;
    assert_int_equal(yyc_kv_get_item_infos(kv, ab, 2, &items, &count), YYC_OK);
    yyc_kv_items_free(items, count);
    assert_int_equal(atime_of(dir, "a"), 100);
    assert_int_equal(atime_of(dir, "b"), 100);
    /* get_item: updated (the item carries the previous time). */
    assert_int_equal(yyc_kv_get_item(kv, "a", &item), YYC_OK);
    assert_int_equal(item->last_access_time, 100);
    assert_int_equal(item->modification_time, 50);
    yyc_kv_item_free(item);
    assert_true(atime_of(dir, "a") >= time(NULL) - 1);
    assert_int_equal(tk_int(dir, "select modification_time from manifest where key='a'"), 50);
    /* get_value: updated when found (file value too). */
    void *v;
    size_t len;
    assert_int_equal(yyc_kv_get_value(kv, "b", &v, &len), YYC_OK);
    yyc_free(v);
    assert_true(atime_of(dir, "b") >= time(NULL) - 1);
    /* get_items: every requested key once at least one was found... */
    tk_exec(dir, "update manifest set last_access_time = 100");
    const char *cx[] = {"c", "x"};
    assert_int_equal(yyc_kv_get_items(kv, cx, 2, &items, &count), YYC_OK);
    assert_int_equal(count, 1);
    yyc_kv_items_free(items, count);
    assert_true(atime_of(dir, "c") >= time(NULL) - 1);
    assert_int_equal(atime_of(dir, "a"), 100);
    /* ...and nothing when none was found. */
    const char *xy[] = {"x", "y"};
    assert_int_equal(yyc_kv_get_items(kv, xy, 2, &items, &count), YYC_OK);
    assert_int_equal(count, 0);
    yyc_kv_items_free(items, count);
    assert_int_equal(atime_of(dir, "a"), 100);
    /* Save sets both times. */
    save_str(kv, "a", "A2", NULL);
    assert_true(atime_of(dir, "a") >= time(NULL) - 1);
    assert_true(tk_int(dir, "select modification_time from manifest where key='a'") >=
                time(NULL) - 1);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* --- compatibility --- */

static void kv_reads_a_manifest_written_by_yykvstorage(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-compat");
    char p[4096];
    assert_int_equal(mkdir(tk_join(p, sizeof p, dir, "data"), 0755), 0);
    assert_int_equal(mkdir(tk_join(p, sizeof p, dir, "trash"), 0755), 0);
    /* Exactly YYKVStorage's initialization script (spec 2.2) and rows as it writes them. */
    sqlite3 *db = tk_raw_open(dir);
    tk_raw_exec(db, "pragma journal_mode = wal; pragma synchronous = normal; create table if not "
                    "exists manifest (key text, filename text, size integer, inline_data blob, "
                    "modification_time integer, last_access_time integer, extended_data blob, "
                    "primary key(key)); create index if not exists last_access_time_idx on "
                    "manifest(last_access_time);");
    char md5[33], rel[64], sql[512];
    yyc_kv_md5_filename("file-key", md5);
    tk_md5_rel(rel, "file-key");
    char big[30000];
    tk_fill(big, sizeof big, 9);
    tk_write_file(tk_join(p, sizeof p, dir, rel), big, sizeof big);
    snprintf(sql, sizeof sql,
             "insert or replace into manifest (key, filename, size, inline_data, "
             "modification_time, last_access_time, extended_data) values ('file-key', '%s', "
             "30000, null, 1500000000, 1500000001, x'');",
             md5);
    tk_raw_exec(db, sql);
    tk_raw_exec(db, "insert or replace into manifest (key, filename, size, inline_data, "
                    "modification_time, last_access_time, extended_data) values ('inline-key', "
                    "null, 5, x'68656c6c6f', 1400000000, 1400000002, x'0102');");
    sqlite3_close(db);

    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    yyc_kv_item *item;
    assert_int_equal(yyc_kv_get_item_info(kv, "file-key", &item), YYC_OK);
    assert_string_equal(item->filename, md5);
    assert_int_equal(item->size, 30000);
    assert_int_equal(item->modification_time, 1500000000);
    assert_int_equal(item->last_access_time, 1500000001);
    assert_null(item->extended_data); /* zero-length reads as absent */
    yyc_kv_item_free(item);
    assert_int_equal(yyc_kv_get_item(kv, "file-key", &item), YYC_OK);
    assert_int_equal(item->value_len, sizeof big);
    assert_memory_equal(item->value, big, sizeof big);
    yyc_kv_item_free(item);
    assert_int_equal(yyc_kv_get_item(kv, "inline-key", &item), YYC_OK);
    assert_null(item->filename);
    assert_int_equal(item->value_len, 5);
    assert_memory_equal(item->value, "hello", 5);
    assert_int_equal(item->extended_len, 2);
    assert_memory_equal(item->extended_data, "\x01\x02", 2);
    assert_int_equal(item->modification_time, 1400000000);
    yyc_kv_item_free(item);
    const char *both[] = {"inline-key", "file-key"};
    yyc_kv_item **items;
    size_t count;
    assert_int_equal(yyc_kv_get_items(kv, both, 2, &items, &count), YYC_OK);
    assert_int_equal(count, 2);
    yyc_kv_items_free(items, count);
    int64_t size;
    assert_int_equal(yyc_kv_size(kv, &size), YYC_OK);
    assert_int_equal(size, 30005);
    /* The three FILE/SQLITE types read the same folder. */
    yyc_kv_close(kv);
    kv = open_kv(dir, YYC_KV_SQLITE); /* deviation: file rows read in the SQLite type too */
    void *v;
    size_t len;
    assert_int_equal(yyc_kv_get_value(kv, "file-key", &v, &len), YYC_OK);
    assert_int_equal(len, sizeof big);
    yyc_free(v);
    yyc_kv_close(kv);
    kv = open_kv(dir, YYC_KV_FILE);
    check_value(kv, "inline-key", "hello");
    assert_int_equal(yyc_kv_remove(kv, "file-key"), YYC_OK);
    assert_false(tk_exists(dir, rel));
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* --- faults --- */

static void kv_a_data_file_deleted_behind_its_back_reads_as_a_miss_and_the_row_goes(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-missing");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "a", "AAAA", "fa");
    save_str(kv, "b", "BBBB", "fb");
    save_str(kv, "c", "CCCC", "fc");
    save_str(kv, "d", "DDDD", NULL);
    char p[4096];
    assert_int_equal(unlink(tk_join(p, sizeof p, dir, "data/fa")), 0);
    assert_int_equal(unlink(tk_join(p, sizeof p, dir, "data/fb")), 0);
    assert_int_equal(unlink(tk_join(p, sizeof p, dir, "data/fc")), 0);
    yyc_kv_item *item;
    assert_int_equal(yyc_kv_get_item(kv, "a", &item), YYC_NOTFOUND);
    assert_null(item);
    assert_int_equal(yyc_kv_exists(kv, "a"), YYC_NOTFOUND);
    void *v;
    size_t len;
    assert_int_equal(yyc_kv_get_value(kv, "b", &v, &len), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_exists(kv, "b"), YYC_NOTFOUND);
    const char *cd[] = {"c", "d"};
    yyc_kv_item **items;
    size_t count;
    assert_int_equal(yyc_kv_get_items(kv, cd, 2, &items, &count), YYC_OK);
    assert_int_equal(count, 1);
    assert_string_equal(items[0]->key, "d");
    yyc_kv_items_free(items, count);
    assert_int_equal(kv_count(kv), 1);

    /* Deviation: a file of another size than recorded (truncated) is a miss too, and goes. */
    save_str(kv, "t", "0123456789", "ft");
    assert_int_equal(truncate(tk_join(p, sizeof p, dir, "data/ft"), 4), 0);
    hook_log log = {0};
    yyc_kv_set_error_hook(kv, record_hook, &log);
    assert_int_equal(yyc_kv_get_value(kv, "t", &v, &len), YYC_NOTFOUND);
    assert_int_equal(log.corrupt_events, 1);
    assert_false(tk_exists(dir, "data/ft"));
    assert_int_equal(yyc_kv_exists(kv, "t"), YYC_NOTFOUND);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_a_garbage_manifest_is_rebuilt_and_reported(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-garbage");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "a", "A", NULL);
    save_str(kv, "b", "B", "fb");
    yyc_kv_close(kv);
    char p[4096];
    char junk[8192];
    tk_fill(junk, sizeof junk, 77);
    tk_write_file(tk_join(p, sizeof p, dir, "manifest.sqlite"), junk, sizeof junk);

    /* Through the open's own hook... */
    hook_log log = {0};
    assert_int_equal(yyc__kv_open_ex(dir, YYC_KV_MIXED, record_hook, &log, &kv), YYC_OK);
    assert_int_equal(log.corrupt_events, 1);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_ECORRUPT);
    assert_int_equal(kv_count(kv), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 0); /* its files went to the trash */
    save_str(kv, "c", "C", "fc");
    check_value(kv, "c", "C");
    yyc_kv_close(kv);

    /* ...and through a hook set after a plain open (the event waits for it). */
    tk_write_file(tk_join(p, sizeof p, dir, "manifest.sqlite"), junk, sizeof junk);
    char wal[4096];
    unlink(tk_join(wal, sizeof wal, dir, "manifest.sqlite-wal"));
    kv = open_kv(dir, YYC_KV_SQLITE);
    hook_log later = {0};
    yyc_kv_set_error_hook(kv, record_hook, &later);
    assert_int_equal(later.corrupt_events, 1);
    assert_int_equal(kv_count(kv), 0);
    yyc_kv_close(kv);

    /* A manifest table without YYKVStorage's columns is rebuilt as well. */
    unlink(p);
    tk_exec(dir, "create table manifest (k text)");
    kv = open_kv(dir, YYC_KV_MIXED);
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_ECORRUPT);
    save_str(kv, "x", "X", NULL);
    check_value(kv, "x", "X");
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_a_manifest_locked_by_another_connection_gives_busy_and_keeps_data(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-busy");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "a", "A", NULL);
    save_str(kv, "b", "B", "fb");
    yyc__kv_set_busy_timeout(kv, 200);
    sqlite3 *other = tk_raw_open(dir);
    tk_raw_exec(other, "begin exclusive; insert into manifest (key, size) values ('z', 0);");
    assert_int_equal(yyc_kv_save(kv, "c", "C", 1, NULL, NULL, 0), YYC_EBUSY);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_EBUSY);
    assert_int_equal(e.sqlite_code & 0xff, SQLITE_BUSY);
    assert_int_equal(yyc_kv_remove(kv, "a"), YYC_EBUSY);
    /* Reads still work in WAL mode; the access-time update failing does not fail them. */
    check_value(kv, "a", "A");
    check_value(kv, "b", "B");
    tk_raw_exec(other, "rollback");
    save_str(kv, "c", "C", NULL);
    assert_int_equal(kv_count(kv), 3);
    assert_true(tk_exists(dir, "data/fb"));
    yyc_kv_close(kv);

    /* An open that cannot switch to WAL because the database is locked fails with
     * YYC_EBUSY (after a busy timeout shortened from 5 s for the test), and deletes nothing. */
    tk_raw_exec(other, "pragma journal_mode = delete; begin exclusive; "
                       "insert into manifest (key, size) values ('z', 0);");
    yyc__kv_testing_set_default_busy_timeout(200);
    assert_int_equal(yyc_kv_open(dir, YYC_KV_MIXED, &kv), YYC_EBUSY);
    yyc__kv_testing_set_default_busy_timeout(0);
    assert_null(kv);
    tk_raw_exec(other, "rollback");
    sqlite3_close(other);
    kv = open_kv(dir, YYC_KV_MIXED);
    assert_int_equal(kv_count(kv), 3);
    check_value(kv, "b", "B");
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_a_read_only_folder_gives_a_permission_error(void **state) {
    (void)state;
    char *base = test_temp_dir("kv-readonly");
    /* Root ignores permission bits: run the scenario with the effective uid of nobody. */
    bool as_root = geteuid() == 0;
    if (as_root) {
        if (chown(base, 65534, 65534) != 0 || seteuid(65534) != 0) {
            test_rm_rf(base);
            free(base);
            skip();
        }
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/cache", base);
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "a", "A", NULL);
    save_str(kv, "b", "B", "fb");
    char p[4096];
    assert_int_equal(chmod(tk_join(p, sizeof p, dir, "data"), 0500), 0);
    assert_int_equal(yyc_kv_save(kv, "c", "C", 1, "fc", NULL, 0), YYC_EPERM);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_EPERM);
    assert_int_equal(e.sys_errno, EACCES);
    assert_int_equal(yyc_kv_exists(kv, "c"), YYC_NOTFOUND);
    yyc_kv_close(kv);

    assert_int_equal(chmod(dir, 0500), 0);
    int rc = yyc_kv_open(dir, YYC_KV_MIXED, &kv);
    assert_int_equal(rc, YYC_EPERM);
    assert_null(kv);
    assert_int_equal(chmod(dir, 0700), 0);
    assert_int_equal(chmod(tk_join(p, sizeof p, dir, "data"), 0700), 0);
    kv = open_kv(dir, YYC_KV_MIXED);
    check_value(kv, "b", "B");
    yyc_kv_close(kv);
    if (as_root) assert_int_equal(seteuid(0), 0);
    test_rm_rf(base);
    free(base);
}

/* Gives root back its effective uid even when the read-only test failed half-way. */
static int restore_euid(void **state) {
    (void)state;
    if (getuid() == 0 && geteuid() != 0) return seteuid(0);
    return 0;
}

static void kv_lazy_reopen_follows_yykvstorage_retry_limits(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-reopen");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "a", "A", NULL);
    /* Real limits: after a failed reopen, calls within 2 s fail at once. */
    yyc__kv_fail_next_opens(kv, 1);
    yyc__kv_close_connection(kv);
    assert_int_equal(yyc_kv_save(kv, "b", "B", 1, NULL, NULL, 0), YYC_EIO); /* failure 1 */
    assert_false(yyc__kv_is_open(kv));
    assert_int_equal(yyc_kv_save(kv, "b", "B", 1, NULL, NULL, 0), YYC_ECLOSED);
    /* Shorter spacing for the rest of the test: 8 tries in a row, then never again. */
    yyc__kv_set_reopen_policy(kv, 8, 0.05);
    usleep(60000);
    save_str(kv, "b", "B", NULL); /* the second try succeeds */
    assert_true(yyc__kv_is_open(kv));
    check_value(kv, "b", "B");

    yyc__kv_fail_next_opens(kv, 100);
    yyc__kv_close_connection(kv);
    assert_int_equal(yyc_kv_count(kv, &(int64_t){0}), YYC_EIO); /* failure 1 */
    for (int i = 2; i <= 8; i++) {
        assert_int_equal(yyc_kv_count(kv, &(int64_t){0}), YYC_ECLOSED); /* too soon */
        usleep(60000);
        assert_int_equal(yyc_kv_count(kv, &(int64_t){0}), YYC_EIO); /* failure i */
    }
    usleep(60000);
    yyc__kv_fail_next_opens(kv, 0);
    assert_int_equal(yyc_kv_count(kv, &(int64_t){0}), YYC_ECLOSED); /* limit reached */
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_symlinks_in_the_folder_are_never_followed(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-links");
    char *outside = test_temp_dir("kv-outside");
    char p[4096], q[4096];
    tk_write_file(tk_join(p, sizeof p, outside, "precious"), "keep", 4);
    /* data/ and trash/ are links to the outside folder: they are replaced by real folders. */
    assert_int_equal(symlink(outside, tk_join(p, sizeof p, dir, "data")), 0);
    assert_int_equal(symlink(outside, tk_join(p, sizeof p, dir, "trash")), 0);
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    struct stat st;
    assert_int_equal(lstat(tk_join(p, sizeof p, dir, "data"), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(lstat(tk_join(p, sizeof p, dir, "trash"), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(tk_count_entries(outside, ""), 1);
    /* A link planted under a value's file name is replaced, never written through. */
    assert_int_equal(symlink(tk_join(q, sizeof q, outside, "precious"),
                             tk_join(p, sizeof p, dir, "data/victim")),
                     0);
    save_str(kv, "k", "overwritten?", "victim");
    assert_int_equal(tk_file_size(outside, "precious"), 4);
    check_value(kv, "k", "overwritten?");
    /* A link read as a value is a miss. */
    save_str(kv, "l", "xy", "linked");
    unlink(tk_join(p, sizeof p, dir, "data/linked"));
    assert_int_equal(symlink(tk_join(q, sizeof q, outside, "precious"), p), 0);
    void *v;
    size_t len;
    assert_int_equal(yyc_kv_get_value(kv, "l", &v, &len), YYC_NOTFOUND);
    /* Links inside data/ go to the trash and are removed, not followed. */
    assert_int_equal(symlink(outside, tk_join(p, sizeof p, dir, "data/dirlink")), 0);
    assert_int_equal(yyc_kv_remove_all(kv), YYC_OK);
    assert_true(WAIT_UNTIL(tk_count_entries(dir, "trash") == 0, 10));
    assert_int_equal(tk_file_size(outside, "precious"), 4);
    assert_int_equal(tk_count_entries(outside, ""), 1);
    /* A row naming a path outside data/ (written by someone else) touches nothing. */
    tk_exec(dir, "insert into manifest " TK_COLS
                 " values ('evil', '../../precious', 4, null, 1, 1, null)");
    assert_int_equal(yyc_kv_get_value(kv, "evil", &v, &len), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_remove(kv, "evil"), YYC_OK);
    assert_int_equal(tk_file_size(outside, "precious"), 4);
    yyc_kv_close(kv);
    /* Links planted as the -wal and -shm files are removed at open, not followed. */
    assert_int_equal(symlink(tk_join(q, sizeof q, outside, "precious"),
                             tk_join(p, sizeof p, dir, "manifest.sqlite-wal")),
                     0);
    assert_int_equal(symlink(tk_join(q, sizeof q, outside, "precious"),
                             tk_join(p, sizeof p, dir, "manifest.sqlite-shm")),
                     0);
    kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "after-links", "ok", NULL);
    check_value(kv, "after-links", "ok");
    yyc_kv_close(kv);
    assert_int_equal(tk_file_size(outside, "precious"), 4);
    assert_int_equal(tk_count_entries(outside, ""), 1);
    test_rm_rf(dir);
    test_rm_rf(outside);
    free(dir);
    free(outside);
}

static void kv_statements_are_reset_after_use_so_checkpoints_complete(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-wal");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    for (int i = 0; i < 20; i++) save_str(kv, "k", "value", NULL);
    yyc_kv_item *item;
    assert_int_equal(yyc_kv_get_item_info(kv, "k", &item), YYC_OK); /* stops on a row */
    yyc_kv_item_free(item);
    assert_int_equal(yyc_kv_exists(kv, "k"), YYC_OK);
    /* A truncating checkpoint from another connection can only finish if no read transaction
     * of ours is still open. */
    sqlite3 *db = tk_raw_open(dir);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "pragma wal_checkpoint(truncate)", -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), 0); /* not busy */
    sqlite3_finalize(s);
    sqlite3_close(db);
    assert_int_equal(tk_file_size(dir, "manifest.sqlite-wal"), 0);
    yyc_kv_close(kv);
    /* Close leaves no -wal behind (every statement was finalized, so the close completed). */
    assert_false(tk_exists(dir, "manifest.sqlite-wal"));
    test_rm_rf(dir);
    free(dir);
}

static void kv_errors_reach_the_hook_and_the_last_error_without_printing(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-errors");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    assert_false(yyc_kv_error_logs_enabled(kv));
    hook_log log = {0};
    yyc_kv_set_error_hook(kv, record_hook, &log);
    assert_int_equal(yyc_kv_save(kv, "", "v", 1, NULL, NULL, 0), YYC_EINVAL);
    assert_int_equal(log.calls, 1);
    assert_int_equal(log.last_code, YYC_EINVAL);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_EINVAL);
    assert_int_equal(e.sqlite_code, 0);
    assert_true(strlen(e.message) > 0);
    yyc_kv_set_error_hook(kv, NULL, NULL);
    assert_int_equal(yyc_kv_save(kv, "", "v", 1, NULL, NULL, 0), YYC_EINVAL);
    assert_int_equal(log.calls, 1);
    yyc_kv_set_error_logs_enabled(kv, true);
    assert_true(yyc_kv_error_logs_enabled(kv));
    yyc_kv_close(kv);
    yyc_kv_close(NULL);
    test_rm_rf(dir);
    free(dir);
}

static void kv_stale_temporary_files_are_swept_after_open(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-temps");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    yyc_kv_close(kv);
    char p[4096];
    /* A temporary file from a writer that died an hour ago, and one of a write in progress. */
    tk_write_file(tk_join(p, sizeof p, dir, "data/.yyc-tmp-0000000000000001"), "torn", 4);
    struct timespec old[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
    assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
    tk_write_file(tk_join(p, sizeof p, dir, "data/.yyc-tmp-0000000000000002"), "busy", 4);
    kv = open_kv(dir, YYC_KV_MIXED);
    assert_true(WAIT_UNTIL(!tk_exists(dir, "data/.yyc-tmp-0000000000000001"), 10));
    assert_true(tk_exists(dir, "data/.yyc-tmp-0000000000000002"));
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_a_file_size_limit_gives_no_space_and_keeps_the_old_value(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-fsize");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "k", "old value", "fk");
    /* A full disk, simulated for files: writes past RLIMIT_FSIZE fail with EFBIG. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, prev;
    sigaction(SIGXFSZ, &ign, &prev);
    struct rlimit saved, small;
    getrlimit(RLIMIT_FSIZE, &saved);
    small = saved;
    small.rlim_cur = 100000;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    size_t len = 300000;
    char *big = malloc(len);
    tk_fill(big, len, 4);
    int rc = yyc_kv_save(kv, "k", big, len, "fk", NULL, 0);
    setrlimit(RLIMIT_FSIZE, &saved);
    sigaction(SIGXFSZ, &prev, NULL);
    assert_int_equal(rc, YYC_ENOSPC);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_ENOSPC);
    assert_int_equal(e.sys_errno, EFBIG);
    /* The old value is intact and no temporary file is left. */
    check_value(kv, "k", "old value");
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    assert_int_equal(yyc_kv_save(kv, "k", big, len, "fk", NULL, 0), YYC_OK);
    free(big);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_corruption_found_while_open_rebuilds_the_manifest_at_the_next_call(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-livecorrupt");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    char value[1000];
    memset(value, 'v', sizeof value);
    char key[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        assert_int_equal(yyc_kv_save(kv, key, value, sizeof value, NULL, NULL, 0), YYC_OK);
    }
    yyc_kv_close(kv); /* checkpoints everything into the main file */
    kv = open_kv(dir, YYC_KV_MIXED);
    hook_log log = {0};
    yyc_kv_set_error_hook(kv, record_hook, &log);
    /* Overwrite every page but the first behind the open connection's back. */
    char p[4096];
    int fd = open(tk_join(p, sizeof p, dir, "manifest.sqlite"), O_WRONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    char junk[4096];
    for (off_t off = 4096; off < st.st_size; off += (off_t)sizeof junk) {
        tk_fill(junk, sizeof junk, (unsigned)off);
        assert_int_equal(pwrite(fd, junk, sizeof junk, off), (ssize_t)sizeof junk);
    }
    close(fd);
    int64_t n = 0;
    assert_int_equal(yyc_kv_size(kv, &n), YYC_ECORRUPT);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_ECORRUPT);
    assert_true((e.sqlite_code & 0xff) == SQLITE_CORRUPT ||
                (e.sqlite_code & 0xff) == SQLITE_NOTADB);
    /* The next call finds a rebuilt, empty manifest, and it was reported. */
    assert_int_equal(yyc_kv_count(kv, &n), YYC_OK);
    assert_int_equal(n, 0);
    assert_true(log.corrupt_events >= 2);
    save_str(kv, "fresh", "works", "fresh-file");
    check_value(kv, "fresh", "works");
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_a_manifest_that_cannot_grow_gives_no_space_and_keeps_the_old_value(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-fullwal");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "k", "old value", NULL);
    /* The WAL may not grow: SQLite reports SQLITE_IOERR_WRITE (often with errno already lost). */
    struct sigaction ign = {.sa_handler = SIG_IGN}, prev;
    sigaction(SIGXFSZ, &ign, &prev);
    struct rlimit saved, small;
    getrlimit(RLIMIT_FSIZE, &saved);
    small = saved;
    small.rlim_cur = (rlim_t)tk_file_size(dir, "manifest.sqlite-wal");
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    char value[8000];
    memset(value, 'n', sizeof value);
    int rc = yyc_kv_save(kv, "k", value, sizeof value, NULL, NULL, 0);
    int rc2 = yyc_kv_save(kv, "other", value, sizeof value, NULL, NULL, 0);
    setrlimit(RLIMIT_FSIZE, &saved);
    sigaction(SIGXFSZ, &prev, NULL);
    assert_int_equal(rc, YYC_ENOSPC);
    assert_int_equal(rc2, YYC_ENOSPC);
    check_value(kv, "k", "old value");
    assert_int_equal(yyc_kv_exists(kv, "other"), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_save(kv, "k", value, sizeof value, NULL, NULL, 0), YYC_OK);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_remove_all_keeps_other_connections_on_the_folder_working(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-sharedclear");
    /* Two storages on one folder stand for two processes. */
    yyc_kv *a = open_kv(dir, YYC_KV_MIXED);
    yyc_kv *b = open_kv(dir, YYC_KV_MIXED);
    save_str(a, "before-inline", "1", NULL);
    save_str(a, "before-file", "2", "f-before");
    assert_int_equal(yyc_kv_remove_all(b), YYC_OK);
    /* a's connection and data folder follow: its next writes land in the live manifest and
     * the new data/ (YYKVStorage unlinked the files under it: YYCache #96). */
    save_str(a, "after-inline", "3", NULL);
    save_str(a, "after-file", "4", "f-after");
    check_value(b, "after-inline", "3");
    check_value(b, "after-file", "4");
    assert_int_equal(yyc_kv_exists(b, "before-inline"), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_exists(a, "before-file"), YYC_NOTFOUND);
    assert_true(tk_exists(dir, "data/f-after"));
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    yyc_kv_close(a);
    yyc_kv_close(b);
    test_rm_rf(dir);
    free(dir);
}

static void kv_remove_all_gives_the_manifest_space_back(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-vacuum");
    yyc_kv *kv = open_kv(dir, YYC_KV_SQLITE);
    char value[4000];
    memset(value, 'x', sizeof value);
    char key[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(yyc_kv_save(kv, key, value, sizeof value, NULL, NULL, 0), YYC_OK);
    }
    yyc__kv_checkpoint(kv);
    assert_true(tk_file_size(dir, "manifest.sqlite") > 4000000);
    assert_int_equal(yyc_kv_remove_all(kv), YYC_OK);
    assert_true(tk_file_size(dir, "manifest.sqlite") < 100000);
    assert_true(tk_file_size(dir, "manifest.sqlite-wal") < 100000);
    assert_int_equal(kv_count(kv), 0);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_a_data_folder_replaced_while_open_is_recreated(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-datareplaced");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "k", "value", "fk");
    char p[4096];
    test_rm_rf(tk_join(p, sizeof p, dir, "data"));
    tk_write_file(p, "not a folder", 12);
    void *v;
    size_t len;
    assert_int_equal(yyc_kv_get_value(kv, "k", &v, &len), YYC_NOTFOUND); /* its file is gone */
    save_str(kv, "k2", "value 2", "fk2");
    check_value(kv, "k2", "value 2");
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_values_that_do_not_match_their_checksum_read_as_misses(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-crc");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    hook_log log = {0};
    yyc_kv_set_error_hook(kv, record_hook, &log);
    save_str(kv, "inline", "abcd", NULL);
    save_str(kv, "file", "0123456789", "f1");
    save_str(kv, "listed", "0123456789", "f2");
    assert_int_equal(tk_int(dir, "select count(*) from manifest where value_crc32c is null"), 0);
    /* Same sizes, other bytes: only the checksum can tell. */
    tk_exec(dir, "update manifest set inline_data = x'61626365' where key = 'inline'");
    char p[4096];
    tk_write_file(tk_join(p, sizeof p, dir, "data/f1"), "9876543210", 10);
    tk_write_file(tk_join(p, sizeof p, dir, "data/f2"), "9876543210", 10);
    void *v;
    size_t len;
    assert_int_equal(yyc_kv_get_value(kv, "inline", &v, &len), YYC_NOTFOUND);
    yyc_kv_item *item;
    assert_int_equal(yyc_kv_get_item(kv, "file", &item), YYC_NOTFOUND);
    const char *keys[] = {"listed"};
    yyc_kv_item **items;
    size_t count;
    assert_int_equal(yyc_kv_get_items(kv, keys, 1, &items, &count), YYC_OK);
    assert_int_equal(count, 0);
    yyc_kv_items_free(items, count);
    assert_int_equal(log.corrupt_events, 3);
    /* The bad entries are gone, files included. */
    assert_int_equal(kv_count(kv), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    /* Info reads do not read values, so they do not check them. */
    save_str(kv, "info", "abcd", NULL);
    tk_exec(dir, "update manifest set inline_data = x'00000000' where key = 'info'");
    assert_int_equal(yyc_kv_get_item_info(kv, "info", &item), YYC_OK);
    yyc_kv_item_free(item);
    /* A row rewritten by YYKVStorage (seven named columns) has no checksum and reads. */
    tk_exec(dir, "insert or replace into manifest " TK_COLS
                 " values ('info', null, 3, x'78797a', 5, 5, null)");
    check_value(kv, "info", "xyz");
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void save_ext(yyc_kv *kv, const char *key, const char *value, const char *filename,
                     const char *ext) {
    assert_int_equal(yyc_kv_save(kv, key, value, strlen(value), filename, ext, strlen(ext)),
                     YYC_OK);
}

static void check_item_ext(yyc_kv *kv, const char *key, bool info, const char *ext) {
    yyc_kv_item *item = NULL;
    assert_int_equal(info ? yyc_kv_get_item_info(kv, key, &item) : yyc_kv_get_item(kv, key, &item),
                     YYC_OK);
    assert_int_equal(item->extended_len, strlen(ext));
    if (*ext) assert_memory_equal(item->extended_data, ext, strlen(ext));
    else assert_null(item->extended_data);
    yyc_kv_item_free(item);
}

static void kv_extended_data_that_does_not_match_its_checksum_reads_as_a_miss(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-extcrc");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    hook_log log = {0};
    yyc_kv_set_error_hook(kv, record_hook, &log);
    save_ext(kv, "inline", "abcd", NULL, "meta");
    save_ext(kv, "file", "0123456789", "f1", "meta");
    save_ext(kv, "listed", "0123456789", "f2", "meta");
    save_ext(kv, "info", "abcd", NULL, "meta");
    save_ext(kv, "infos", "abcd", "f3", "meta");
    assert_int_equal(tk_int(dir, "select count(*) from manifest where extended_crc32c is null"), 0);
    /* One byte flipped ('m' -> 'n'), same length: only the checksum can tell. */
    tk_exec(dir, "update manifest set extended_data = x'6e657461'");
    yyc_kv_item *item = (yyc_kv_item *)1;
    assert_int_equal(yyc_kv_get_item(kv, "inline", &item), YYC_NOTFOUND);
    assert_null(item);
    assert_int_equal(log.corrupt_events, 1);
    assert_int_equal(yyc_kv_get_item(kv, "file", &item), YYC_NOTFOUND);
    assert_int_equal(log.corrupt_events, 2);
    assert_int_equal(yyc_kv_get_item_info(kv, "info", &item), YYC_NOTFOUND);
    assert_int_equal(log.corrupt_events, 3);
    yyc_kv_item **items;
    size_t count;
    const char *keys[] = {"listed"};
    assert_int_equal(yyc_kv_get_items(kv, keys, 1, &items, &count), YYC_OK);
    assert_int_equal(count, 0);
    yyc_kv_items_free(items, count);
    const char *info_keys[] = {"infos"};
    assert_int_equal(yyc_kv_get_item_infos(kv, info_keys, 1, &items, &count), YYC_OK);
    assert_int_equal(count, 0);
    yyc_kv_items_free(items, count);
    assert_int_equal(log.corrupt_events, 5);
    /* The entries are gone, rows and files. */
    assert_int_equal(kv_count(kv), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_extended_data_round_trips_with_its_checksum(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-extrt");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    hook_log log = {0};
    yyc_kv_set_error_hook(kv, record_hook, &log);
    save_ext(kv, "inline", "abcd", NULL, "inline meta");
    save_ext(kv, "file", "0123456789", "f1", "file meta");
    save_str(kv, "plain", "xyz", NULL);
    char sql[256];
    snprintf(sql, sizeof sql,
             "select count(*) from manifest where key = 'inline' and extended_crc32c = %u",
             (unsigned)yyc__crc32c("inline meta", 11));
    assert_int_equal(tk_int(dir, sql), 1);
    /* No extended data: no checksum (one NULL bind, no CRC computed). */
    assert_int_equal(tk_int(dir, "select count(*) from manifest where key = 'plain' and "
                                 "extended_crc32c is null"),
                     1);
    for (int info = 0; info < 2; info++) {
        check_item_ext(kv, "inline", info, "inline meta");
        check_item_ext(kv, "file", info, "file meta");
        check_item_ext(kv, "plain", info, "");
    }
    const char *keys[] = {"inline", "file", "plain"};
    yyc_kv_item **items;
    size_t count;
    assert_int_equal(yyc_kv_get_items(kv, keys, 3, &items, &count), YYC_OK);
    assert_int_equal(count, 3);
    yyc_kv_items_free(items, count);
    /* A save without extended data clears the previous checksum with the row. */
    save_str(kv, "inline", "abcd", NULL);
    assert_int_equal(tk_int(dir, "select count(*) from manifest where key = 'inline' and "
                                 "extended_crc32c is null"),
                     1);
    check_item_ext(kv, "inline", false, "");
    assert_int_equal(log.corrupt_events, 0);
    assert_int_equal(kv_count(kv), 3);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_manifest_without_the_extended_checksum_column_gains_it(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-extcol");
    char p[4096];
    assert_int_equal(mkdir(tk_join(p, sizeof p, dir, "data"), 0755), 0);
    assert_int_equal(mkdir(tk_join(p, sizeof p, dir, "trash"), 0755), 0);
    /* YYKVStorage's initialization script (spec 2.2) and a row with extended data. */
    sqlite3 *db = tk_raw_open(dir);
    tk_raw_exec(db, "pragma journal_mode = wal; pragma synchronous = normal; create table if not "
                    "exists manifest (key text, filename text, size integer, inline_data blob, "
                    "modification_time integer, last_access_time integer, extended_data blob, "
                    "primary key(key)); create index if not exists last_access_time_idx on "
                    "manifest(last_access_time);");
    tk_raw_exec(db, "insert into manifest " TK_COLS
                    " values ('old', null, 5, x'68656c6c6f', 1400000000, 1400000002, x'0102');");
    sqlite3_close(db);

    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    hook_log log = {0};
    yyc_kv_set_error_hook(kv, record_hook, &log);
    assert_int_equal(tk_int(dir, "select count(*) from pragma_table_info('manifest') where "
                                 "name in ('value_crc32c', 'extended_crc32c')"),
                     2);
    for (int info = 0; info < 2; info++) check_item_ext(kv, "old", info, "\x01\x02");
    check_value(kv, "old", "hello");
    save_ext(kv, "new", "abcd", NULL, "meta");
    assert_int_equal(tk_int(dir, "select count(*) from manifest where key = 'new' and "
                                 "extended_crc32c is not null"),
                     1);
    check_item_ext(kv, "new", false, "meta");
    assert_int_equal(log.corrupt_events, 0);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static void kv_rows_with_a_null_extended_checksum_are_not_checked(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-extnull");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    hook_log log = {0};
    yyc_kv_set_error_hook(kv, record_hook, &log);
    save_ext(kv, "k", "abcd", NULL, "meta");
    /* As a writer without the column leaves it: extended data changed, no checksum. */
    tk_exec(dir, "update manifest set extended_crc32c = null, extended_data = x'6e657461'");
    check_item_ext(kv, "k", false, "neta");
    check_item_ext(kv, "k", true, "neta");
    assert_int_equal(log.corrupt_events, 0);
    assert_int_equal(kv_count(kv), 1);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static uint32_t reference_crc32c(const unsigned char *p, size_t len) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

static void kv_checksums_are_standard_crc32c(void **state) {
    (void)state;
    assert_int_equal(yyc__crc32c("123456789", 9), 0xE3069283u);
    assert_int_equal(yyc__crc32c(NULL, 0), 0);
    unsigned char buf[300];
    tk_fill(buf, sizeof buf, 42);
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len + off <= sizeof buf; len += 7)
            assert_int_equal(yyc__crc32c(buf + off, len), reference_crc32c(buf + off, len));
}

static void kv_trash_folders_are_named_by_uppercase_uuids(void **state) {
    (void)state;
    char a[37], b[37];
    yyc__fs_uuid(a);
    yyc__fs_uuid(b);
    assert_string_not_equal(a, b);
    assert_int_equal(strlen(a), 36);
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) assert_int_equal(a[i], '-');
        else assert_true((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'A' && a[i] <= 'F'));
    }
    assert_int_equal(a[14], '4'); /* version 4 (random) */
    assert_true(strchr("89AB", a[19]) != NULL);
}

static void set_mtime_ago(const char *path, long seconds) {
    struct timespec t[2] = {{.tv_sec = time(NULL) - seconds}, {.tv_sec = time(NULL) - seconds}};
    assert_int_equal(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0);
}

static void kv_unreferenced_data_files_are_removed_after_open(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-orphans");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    save_str(kv, "kept", "value", "kept-file");
    yyc_kv_close(kv);
    char p[4096];
    /* Left by a crash: a file whose row never came, an hour ago; a link; and a file written
     * just now (maybe by a save in progress elsewhere), which must stay. */
    set_mtime_ago(tk_join(p, sizeof p, dir, "data/kept-file"), 3600);
    tk_write_file(tk_join(p, sizeof p, dir, "data/orphan"), "lost", 4);
    set_mtime_ago(p, 3600);
    char *outside = test_temp_dir("kv-orphans-outside");
    char target[4096];
    tk_write_file(tk_join(target, sizeof target, outside, "target"), "keep", 4);
    assert_int_equal(symlink(target, tk_join(p, sizeof p, dir, "data/orphan-link")), 0);
    set_mtime_ago(p, 3600);
    tk_write_file(tk_join(p, sizeof p, dir, "data/fresh"), "new", 3);
    kv = open_kv(dir, YYC_KV_MIXED);
    assert_true(
        WAIT_UNTIL(!tk_exists(dir, "data/orphan") && !tk_exists(dir, "data/orphan-link"), 10));
    assert_true(tk_exists(dir, "data/fresh"));
    assert_true(tk_exists(dir, "data/kept-file"));
    check_value(kv, "kept", "value");
    yyc_kv_close(kv);
    assert_int_equal(tk_file_size(outside, "target"), 4); /* the link went, not its target */
    test_rm_rf(outside);
    free(outside);
    test_rm_rf(dir);
    free(dir);
}

typedef struct sharer {
    const char *dir;
    int id;
    double deadline;
    atomic_int *errors;
} sharer;

/* One storage per thread on one folder: like two processes (separate connections and file
 * descriptors), racing on the same keys' rows and files. */
static void *sharer_main(void *arg) {
    sharer *sh = arg;
    yyc_kv *kv = NULL;
    if (yyc_kv_open(sh->dir, YYC_KV_MIXED, &kv) != YYC_OK) {
        (*sh->errors)++;
        return NULL;
    }
    unsigned r = (unsigned)sh->id * 977u + 5u;
    char key[16], name[40], buf[5000];
    while (test_now() < sh->deadline) {
        unsigned k = rand_r(&r) % 8;
        snprintf(key, sizeof key, "k%u", k);
        yyc_kv_md5_filename(key, name);
        int rc = YYC_OK;
        switch (rand_r(&r) % 6) {
        case 0:
        case 1: {
            size_t len = 100 + rand_r(&r) % 4000;
            tk_fill(buf, len, k * 100u + (unsigned)len);
            rc = yyc_kv_save(kv, key, buf, len, (rand_r(&r) % 3) ? name : NULL, NULL, 0);
            break;
        }
        case 2: rc = yyc_kv_remove(kv, key); break;
        case 3: {
            void *v = NULL;
            size_t len = 0;
            rc = yyc_kv_get_value(kv, key, &v, &len);
            if (rc == YYC_OK) {
                /* Never torn and never another key's bytes (the content derives from both). */
                char want[5000];
                tk_fill(want, len, k * 100u + (unsigned)len);
                if (memcmp(v, want, len) != 0) rc = YYC_ECORRUPT;
            }
            if (rc == YYC_NOTFOUND) rc = YYC_OK;
            yyc_free(v);
            break;
        }
        case 4: {
            yyc_kv_item *item = NULL;
            rc = yyc_kv_get_item(kv, key, &item);
            if (rc == YYC_NOTFOUND) rc = YYC_OK;
            yyc_kv_item_free(item);
            break;
        }
        default: rc = yyc_kv_remove_to_fit_count(kv, 6); break;
        }
        if (rc != YYC_OK) {
            fprintf(stderr, "sharer %d: %s\n", sh->id, yyc_status_name(rc));
            (*sh->errors)++;
        }
    }
    yyc_kv_close(kv);
    return NULL;
}

static void kv_storages_sharing_a_folder_never_leave_rows_without_files(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-sharers");
    yyc_kv_close(open_kv(dir, YYC_KV_MIXED));
    atomic_int errors = 0;
    enum { T = 3 };
    pthread_t th[T];
    sharer sh[T];
    double deadline = test_now() + 1.5;
    for (int i = 0; i < T; i++) {
        sh[i] = (sharer){.dir = dir, .id = i, .deadline = deadline, .errors = &errors};
        pthread_create(&th[i], NULL, sharer_main, &sh[i]);
    }
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    assert_int_equal(errors, 0);
    /* Every row that names a file has it, with the recorded size. */
    sqlite3 *db = tk_raw_open(dir);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "select filename, size from manifest where "
                                        "filename is not null",
                                        -1, &s, NULL),
                     SQLITE_OK);
    char rel[300];
    while (sqlite3_step(s) == SQLITE_ROW) {
        snprintf(rel, sizeof rel, "data/%s", (const char *)sqlite3_column_text(s, 0));
        assert_int_equal(tk_file_size(dir, rel), sqlite3_column_int64(s, 1));
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    test_rm_rf(dir);
    free(dir);
}

/* Another storage on the folder (another process) removes all and waits until its trash is
 * empty: the data/ folder the paused save had opened is gone, with whatever was in it. */
typedef struct remover {
    yyc_kv *other;
    const char *dir;
    bool ok;
} remover;

static void remove_all_and_empty_the_trash(void *ctx) {
    remover *r = ctx;
    r->ok = yyc_kv_remove_all(r->other) == YYC_OK &&
            WAIT_UNTIL(tk_count_entries(r->dir, "trash") == 0, 10);
}

static void
kv_a_save_whose_temporary_file_was_trashed_by_another_remove_all_succeeds(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-trashedtemp");
    yyc_kv *a = open_kv(dir, YYC_KV_MIXED);
    yyc_kv *b = open_kv(dir, YYC_KV_MIXED);
    yyc__worker_drain(a); /* the opens' background sweeps are over */
    yyc__worker_drain(b);
    save_str(a, "old", "old value", "f-old");
    /* a's temporary file is written, then b removes all before a takes the folder lock. */
    remover r = {.other = b, .dir = dir};
    window_arm(WINDOW_BEFORE_LOCK, remove_all_and_empty_the_trash, &r);
    assert_int_equal(yyc_kv_save(a, "k", "paused value", 12, "fk", NULL, 0), YYC_OK);
    assert_int_equal(atomic_load(&window_armed), WINDOW_NONE);
    assert_true(r.ok);
    check_value(a, "k", "paused value");
    check_value(b, "k", "paused value");
    assert_int_equal(yyc_kv_exists(b, "old"), YYC_NOTFOUND);
    /* The value file only: no temporary file left behind, nothing from before. */
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    assert_true(tk_exists(dir, "data/fk"));
    yyc_kv_close(a);
    yyc_kv_close(b);
    test_rm_rf(dir);
    free(dir);
}

static void kv_a_save_into_a_data_folder_trashed_before_its_write_succeeds(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-trashedbefore");
    yyc_kv *a = open_kv(dir, YYC_KV_MIXED);
    yyc_kv *b = open_kv(dir, YYC_KV_MIXED);
    yyc__worker_drain(a);
    yyc__worker_drain(b);
    /* a has opened data/, then b removes all before a creates its temporary file in it. */
    remover r = {.other = b, .dir = dir};
    window_arm(WINDOW_BEFORE_TEMP, remove_all_and_empty_the_trash, &r);
    assert_int_equal(yyc_kv_save(a, "k", "late value", 10, "fk", NULL, 0), YYC_OK);
    assert_int_equal(atomic_load(&window_armed), WINDOW_NONE);
    assert_true(r.ok);
    check_value(b, "k", "late value");
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    assert_true(tk_exists(dir, "data/fk"));
    yyc_kv_close(a);
    yyc_kv_close(b);
    test_rm_rf(dir);
    free(dir);
}

/* data/ moved to the trash but not emptied yet: the temporary file is moved out of it. */
static void move_data_to_a_trash_folder(void *ctx) {
    const char *dir = ctx;
    char from[4096], to[4096];
    tk_join(from, sizeof from, dir, "data");
    tk_join(to, sizeof to, dir, "trash/PENDING");
    if (rename(from, to) == 0) mkdir(from, 0700);
}

static void kv_a_save_whose_temporary_file_is_in_the_trash_moves_it_back(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-pendingtrash");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    yyc__worker_drain(kv); /* the open's trash emptying is over: trash/PENDING stays */
    window_arm(WINDOW_BEFORE_LOCK, move_data_to_a_trash_folder, dir);
    assert_int_equal(yyc_kv_save(kv, "k", "moved value", 11, "fk", NULL, 0), YYC_OK);
    assert_int_equal(atomic_load(&window_armed), WINDOW_NONE);
    assert_int_equal(tk_count_entries(dir, "trash/PENDING"), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    check_value(kv, "k", "moved value");
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* Open descriptors of this process. */
static int count_open_fds(void) { return tk_count_entries("/proc/self", "fd"); }

/* A save through a data/ descriptor that went stale before the save began (another storage's
 * remove-all, trash emptied): the value lands in the new data/, nothing is left behind. */
static void kv_a_save_after_another_remove_all_writes_into_the_new_data_folder(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-staledata");
    yyc_kv *a = open_kv(dir, YYC_KV_MIXED);
    yyc_kv *b = open_kv(dir, YYC_KV_MIXED);
    yyc__worker_drain(a);
    yyc__worker_drain(b);
    save_str(a, "k1", "first value", "f1"); /* a holds its data/ descriptor */
    remover r = {.other = b, .dir = dir};
    remove_all_and_empty_the_trash(&r);
    assert_true(r.ok);
    yyc__worker_drain(b); /* its trash job has closed its descriptors */
    int fds = count_open_fds();
    assert_int_equal(yyc_kv_save(a, "k2", "second value", 12, "f2", NULL, 0), YYC_OK);
    assert_int_equal(count_open_fds(), fds); /* the stale descriptor was replaced, not leaked */
    check_value(b, "k2", "second value");
    check_value(a, "k2", "second value");
    assert_int_equal(yyc_kv_exists(a, "k1"), YYC_NOTFOUND);
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    assert_true(tk_exists(dir, "data/f2"));
    assert_int_equal(tk_count_entries(dir, "trash"), 0);
    yyc_kv_close(a);
    yyc_kv_close(b);
    test_rm_rf(dir);
    free(dir);
}

/* The same while the old data/ still waits in the trash: the temporary file written into it is
 * moved into the new data/ under the lock, through the descriptor the save still holds. */
static void kv_a_save_through_a_data_folder_trashed_earlier_moves_its_file_back(void **state) {
    (void)state;
    char *dir = test_temp_dir("kv-staletrash");
    yyc_kv *kv = open_kv(dir, YYC_KV_MIXED);
    yyc__worker_drain(kv);
    save_str(kv, "k1", "first value", "f1");
    move_data_to_a_trash_folder(dir); /* data/ -> trash/PENDING, a new empty data/ */
    int fds = count_open_fds();
    assert_int_equal(yyc_kv_save(kv, "k2", "second value", 12, "f2", NULL, 0), YYC_OK);
    assert_int_equal(count_open_fds(), fds);
    assert_int_equal(tk_count_entries(dir, "trash/PENDING"), 1); /* f1 only */
    assert_true(tk_exists(dir, "trash/PENDING/f1"));
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    check_value(kv, "k2", "second value");
    /* Later saves use the new data/ (checked once per folder lock). */
    save_str(kv, "k3", "third value", "f3");
    assert_int_equal(tk_count_entries(dir, "data"), 2);
    check_value(kv, "k3", "third value");
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* A read outside the folder lock after another storage replaced data/ (its remove-all: data/
 * went to the trash with the old files still in it, and the same keys were saved again with
 * values of the same size) reads the new values - for a row with a checksum and for a row
 * without one (YYKVStorage's), through openat2 and through the fallback that checks data/. */
static void kv_reads_after_another_remove_all_never_return_the_trashed_files(bool openat2) {
    char *dir = test_temp_dir("kv-staleread");
    yyc_kv *a = open_kv(dir, YYC_KV_MIXED);
    yyc_kv *b = open_kv(dir, YYC_KV_MIXED);
    yyc__worker_drain(a); /* the opens' trash emptying is over: trash/PENDING stays */
    yyc__worker_drain(b);
    save_str(a, "k", "old value A", "f"); /* a holds its data/ descriptor */
    save_str(a, "legacy", "old legacy", "g");
    move_data_to_a_trash_folder(dir); /* data/ -> trash/PENDING, a new empty data/ */
    save_str(b, "k", "new value B", "f");
    save_str(b, "legacy", "new legacy", "g");
    tk_exec(dir, "update manifest set value_crc32c = null where key = 'legacy'");
    assert_true(tk_exists(dir, "trash/PENDING/f"));
    assert_true(tk_exists(dir, "trash/PENDING/g"));
    bool was = yyc__fs_set_openat2(openat2);
    for (int round = 0; round < 2; round++) {
        /* (The row without a checksum first: a damaged-looking read of the other one is retried
         * under the lock, which refreshes the data/ descriptor.) */
        check_value(a, "legacy", "new legacy");
        yyc_kv_item *item = NULL;
        assert_int_equal(yyc_kv_get_item(a, "legacy", &item), YYC_OK);
        assert_int_equal(item->value_len, 10);
        assert_memory_equal(item->value, "new legacy", 10);
        yyc_kv_item_free(item);
        check_value(a, "k", "new value B");
        assert_int_equal(yyc_kv_get_item(a, "k", &item), YYC_OK);
        assert_int_equal(item->value_len, 11);
        assert_memory_equal(item->value, "new value B", 11);
        yyc_kv_item_free(item);
    }
    yyc__fs_set_openat2(was);
    assert_true(tk_exists(dir, "trash/PENDING/f")); /* nothing was deleted */
    assert_true(tk_exists(dir, "data/f"));
    assert_true(tk_exists(dir, "data/g"));
    assert_int_equal(kv_count(a), 2);
    yyc_kv_close(a);
    yyc_kv_close(b);
    test_rm_rf(dir);
    free(dir);
}

static void kv_unlocked_reads_open_files_in_the_current_data_folder_with_openat2(void **state) {
    (void)state;
    kv_reads_after_another_remove_all_never_return_the_trashed_files(true);
}

static void kv_unlocked_reads_open_files_in_the_current_data_folder_without_openat2(void **state) {
    (void)state;
    kv_reads_after_another_remove_all_never_return_the_trashed_files(false);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(kv_open_creates_layout_with_private_permissions),
    cmocka_unit_test(kv_open_rejects_bad_arguments),
    cmocka_unit_test(kv_save_inline_then_read_item_info_and_value),
    cmocka_unit_test(kv_save_with_filename_writes_the_file_and_a_row_without_inline_data),
    cmocka_unit_test(kv_mixed_moving_a_value_between_inline_and_file_deletes_the_old_file),
    cmocka_unit_test(kv_saves_delete_the_files_they_leave_behind_with_the_preupdate_hook),
    cmocka_unit_test(kv_saves_delete_the_files_they_leave_behind_with_a_lookup),
    cmocka_unit_test(kv_removes_delete_their_files_with_the_preupdate_hook),
    cmocka_unit_test(kv_removes_delete_their_files_with_a_lookup),
    cmocka_unit_test(kv_saves_find_old_files_in_a_manifest_with_reordered_columns),
    cmocka_unit_test(kv_file_type_without_a_filename_fails_and_writes_nothing),
    cmocka_unit_test(kv_sqlite_type_ignores_filenames_and_stores_inline),
    cmocka_unit_test(kv_empty_values_are_stored_and_read_back_as_empty),
    cmocka_unit_test(kv_empty_key_fails_writes_misses_reads_and_ignores_removals),
    cmocka_unit_test(kv_invalid_filenames_are_rejected_and_nothing_is_written),
    cmocka_unit_test(kv_md5_filenames_are_lowercase_hex),
    cmocka_unit_test(kv_remove_by_key_and_by_key_list_delete_rows_and_files),
    cmocka_unit_test(kv_remove_larger_than_removes_big_items_and_honours_sentinels),
    cmocka_unit_test(kv_remove_earlier_than_uses_strictly_earlier_access_times),
    cmocka_unit_test(kv_lru_eviction_removes_oldest_access_first_with_ties_by_insertion),
    cmocka_unit_test(kv_remove_all_leaves_empty_manifest_and_data_and_trash_empties_later),
    cmocka_unit_test(kv_open_empties_a_leftover_trash),
    cmocka_unit_test(kv_trash_folders_are_named_by_uppercase_uuids),
    cmocka_unit_test(kv_remove_all_keeps_other_connections_on_the_folder_working),
    cmocka_unit_test(kv_storages_sharing_a_folder_never_leave_rows_without_files),
    cmocka_unit_test(kv_a_save_whose_temporary_file_was_trashed_by_another_remove_all_succeeds),
    cmocka_unit_test(kv_a_save_into_a_data_folder_trashed_before_its_write_succeeds),
    cmocka_unit_test(kv_a_save_whose_temporary_file_is_in_the_trash_moves_it_back),
    cmocka_unit_test(kv_a_save_after_another_remove_all_writes_into_the_new_data_folder),
    cmocka_unit_test(kv_a_save_through_a_data_folder_trashed_earlier_moves_its_file_back),
    cmocka_unit_test(kv_unlocked_reads_open_files_in_the_current_data_folder_with_openat2),
    cmocka_unit_test(kv_unlocked_reads_open_files_in_the_current_data_folder_without_openat2),
    cmocka_unit_test(kv_remove_all_gives_the_manifest_space_back),
    cmocka_unit_test(kv_a_data_folder_replaced_while_open_is_recreated),
    cmocka_unit_test(kv_remove_all_with_progress_reports_monotonically_up_to_the_total),
    cmocka_unit_test(kv_batch_get_and_remove_with_more_keys_than_sqlite_variable_limit),
    cmocka_unit_test(kv_totals_above_2_gib_do_not_wrap),
    cmocka_unit_test(kv_inline_values_above_sqlite_limit_fail_with_too_big),
    cmocka_unit_test(kv_access_time_is_updated_exactly_as_yykvstorage_does),
    cmocka_unit_test(kv_reads_a_manifest_written_by_yykvstorage),
    cmocka_unit_test(kv_values_that_do_not_match_their_checksum_read_as_misses),
    cmocka_unit_test(kv_checksums_are_standard_crc32c),
    cmocka_unit_test(kv_extended_data_that_does_not_match_its_checksum_reads_as_a_miss),
    cmocka_unit_test(kv_extended_data_round_trips_with_its_checksum),
    cmocka_unit_test(kv_manifest_without_the_extended_checksum_column_gains_it),
    cmocka_unit_test(kv_rows_with_a_null_extended_checksum_are_not_checked),
    cmocka_unit_test(kv_a_data_file_deleted_behind_its_back_reads_as_a_miss_and_the_row_goes),
    cmocka_unit_test(kv_a_garbage_manifest_is_rebuilt_and_reported),
    cmocka_unit_test(kv_a_manifest_locked_by_another_connection_gives_busy_and_keeps_data),
    cmocka_unit_test_teardown(kv_a_read_only_folder_gives_a_permission_error, restore_euid),
    cmocka_unit_test(kv_lazy_reopen_follows_yykvstorage_retry_limits),
    cmocka_unit_test(kv_symlinks_in_the_folder_are_never_followed),
    cmocka_unit_test(kv_statements_are_reset_after_use_so_checkpoints_complete),
    cmocka_unit_test(kv_errors_reach_the_hook_and_the_last_error_without_printing),
    cmocka_unit_test(kv_stale_temporary_files_are_swept_after_open),
    cmocka_unit_test(kv_unreferenced_data_files_are_removed_after_open),
    cmocka_unit_test(kv_corruption_found_while_open_rebuilds_the_manifest_at_the_next_call),
    cmocka_unit_test(kv_a_file_size_limit_gives_no_space_and_keeps_the_old_value),
    cmocka_unit_test(kv_a_manifest_that_cannot_grow_gives_no_space_and_keeps_the_old_value),
};

YYC_TEST_MAIN(tests)
