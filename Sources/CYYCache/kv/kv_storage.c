/*
 * kv_storage.c - YYKVStorage in C: an SQLite manifest plus data files, byte-compatible on disk.
 *
 * Deviations from YYKVStorage (each one tested in Tests/C/test_kv_storage.c):
 *   - statements are reset after every use, every parameter bound again before each step, and
 *     finalized before close (YYCache #115, #166); the connection has a busy timeout and is
 *     opened NOMUTEX;
 *   - the manifest is rebuilt only for SQLITE_CORRUPT / SQLITE_NOTADB (or a manifest table
 *     without YYKVStorage's columns), never because it was busy (#157), in place (SQLite's
 *     database reset under the folder lock, never an unlink that other connections would not
 *     see), and the rebuild is reported (YYC_ECORRUPT) instead of silent;
 *   - value files are written to a temporary file and moved to a fresh name (never over an
 *     existing file: the key's name when free, else a variant of it), the row switched to it in
 *     one statement, and the key's previous file deleted only after the commit, so a failed save
 *     keeps the previous value; a save that changes a key's file name deletes the old file
 *     (YYKVStorage orphaned it); names starting with the temporary prefix are refused;
 *   - empty values are stored and read back; the SQLite type ignores file names;
 *   - 64-bit sizes and sums (#90); `IN (...)` lists are chunked (YYC__KV_IN_CHUNK keys);
 *   - file names are validated (on save, and before any file operation on a name read from the
 *     manifest: a hostile row cannot make us touch a file outside data/);
 *   - a data file whose size differs from the recorded size reads as a miss and is removed
 *     (reported as YYC_ECORRUPT through the hook), like a missing file;
 *   - LRU ties in last_access_time are broken by rowid explicitly (YYKVStorage relied on the
 *     index order, which is the same thing);
 *   - a CRC-32C of each value in an extra column (value_crc32c) that YYKVStorage ignores; a
 *     mismatch is a miss plus a corruption event; rows without it (YYKVStorage's) still read;
 *     likewise a CRC-32C of the extended data (extended_crc32c, NULL when a row has none),
 *     checked wherever extended data is returned (items and item infos): a mismatch removes the
 *     entry and reads as a miss, like a damaged value;
 *   - removals delete the row first and the file after (a crash leaves an unreferenced file,
 *     never a row naming a missing file), and unreferenced or stale temporary files older than
 *     a grace period are swept in the background after each open;
 *   - the fast remove-all deletes the rows in place and moves data/ to the trash, instead of
 *     unlinking the manifest under other connections (#96); on a full disk it deletes the files
 *     first and retries; the WAL is capped (journal_size_limit) and truncated after it;
 *   - several processes may share a folder: an flock on the folder is held around every
 *     row+file change (data/ moves to the trash only under it), data/ is revalidated before
 *     file I/O (once per hold of the lock; a read outside the lock opens its file through the
 *     current data/ in one openat2 where Linux has it, else checks data/ first), a temporary
 *     file written through a data/ that another process's remove-all replaced is moved into the
 *     new data/ under the lock, or written again there when the trash took it, the WAL switch
 *     at open is retried while busy, and a value that looks damaged is re-read under the lock
 *     before it is dropped;
 *   - the access time is not rewritten when it already holds the current second;
 *   - a save learns the file name of the row it replaces from SQLite's preupdate hook during its
 *     upsert (where the linked SQLite has the hook, as Debian's does), not from a lookup first;
 *   - every removal and trim lists its rows and deletes exactly those by rowid, then their files,
 *     in one write transaction under the folder lock (delete_rows): a row another process
 *     refreshed meanwhile is never deleted without its file or kept without it, and rows whose
 *     key is NULL or a BLOB go like any other (YYKVStorage deleted by key, in two statements);
 *   - removals work on a full disk (WAL checkpoint, a space reserve file, files before rows as
 *     the last resort: see delete_rows), and trims end with a TRUNCATE checkpoint;
 *   - the total size counts only sizes that are positive integers and saturates (yyc_cost_total);
 *   - the folder lock waits at most the busy timeout (YYC_EBUSY), and its errors are reported;
 *   - a foreign schema (a view or index named manifest, a table without the columns) is rebuilt
 *     like a corrupt manifest;
 *   - items place the value and the extended data at max_align_t-aligned offsets.
 *
 * This file is the public KV API (open/close, save, remove, the trims, remove-all, gets,
 * counts); the manifest connection is in kv_manifest.c, the folder protocol and the files in
 * kv_folder.c, the background sweeps in kv_sweep.c, and struct yyc_kv in kv_internal.h.
 *
 * Owner: the caller's thread - the caller serialises every call on one yyc_kv (disk_cache.c's
 * mutex), so nothing here locks in-process. Every change of a row together with its file runs
 * under the folder flock (kv->lock_depth > 0; the `*_locked` functions assert it), so other
 * processes sharing the folder never interleave inside one; the first pass of a read runs
 * outside it, and a value it finds missing or damaged is read again under it.
 */

#include "kv/kv_internal.h"

#include "platform/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A row get_many found damaged or without its file (read again under the lock). */
typedef struct lru_row {
    char *key;
    char *filename; /* NULL when inline (or the name is unusable) */
    int64_t size;
} lru_row;

/* --- private prototypes --- */

static int delete_row(yyc_kv *kv, const char *key);
static int step_learning_old_row(yyc_kv *kv, sqlite3_stmt *s, const char *key, int64_t size,
                                 const char *what);
static int64_t now_seconds(void) { return (int64_t)time(NULL); }

#ifdef YYC_TESTING
static atomic_int testing_busy_timeout_ms; /* 0: the default */
void yyc__kv_testing_set_default_busy_timeout(int ms) {
    atomic_store(&testing_busy_timeout_ms, ms > 0 ? ms : 0);
}
#endif

/* The busy timeout a new storage starts with. */
static int default_busy_timeout_ms(void) {
#ifdef YYC_TESTING
    int ms = atomic_load(&testing_busy_timeout_ms);
    if (ms > 0) return ms;
#endif
    return YYC__KV_BUSY_TIMEOUT_MS;
}
/* --- open / close / properties --- */

int yyc__kv_open_ex(const char *path, yyc_kv_type type, yyc_error_hook hook, void *hook_ctx,
                    yyc_kv **out) {
    if (YYC__MISUSE(out == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "out is NULL");
    *out = NULL;
    if (!path || !*path) return yyc__error(YYC_EINVAL, 0, 0, "empty path");
    /* YYKVStorage refuses paths longer than PATH_MAX - 64, leaving room for the file names. */
    if (strlen(path) > PATH_MAX - 64) return yyc__error(YYC_EINVAL, 0, 0, "path too long");
    if ((unsigned)type > YYC_KV_MIXED) return yyc__error(YYC_EINVAL, 0, 0, "bad storage type");

    yyc_kv *kv = calloc(1, sizeof *kv);
    if (!kv) return yyc__error(YYC_ENOMEM, 0, ENOMEM, "allocate storage");
    kv->type = type;
    kv->root_fd = -1;
    kv->data_fd = -1;
    kv->save_dir_fd = -1;
    kv->busy_timeout_ms = default_busy_timeout_ms();
    yyc__lru_map_init(&kv->access);
    kv->max_open_retries = YYC__KV_MAX_OPEN_RETRIES;
    kv->retry_interval = YYC__KV_RETRY_INTERVAL;
    kv->hook = hook;
    kv->hook_ctx = hook_ctx;
    kv->path = strdup(path);
    if (kv->path && asprintf(&kv->db_path, "%s/%s", path, MANIFEST_NAME) < 0) kv->db_path = NULL;
    if (!kv->path || !kv->db_path) {
        free(kv->path);
        free(kv);
        return yyc__error(YYC_ENOMEM, 0, ENOMEM, "allocate storage");
    }
    int rc = YYC_OK;
    int err = yyc__fs_mkdirs(path);
    if (err) {
        rc = yyc__kv_errno_fail(kv, err, "create storage folder");
        goto fail;
    }
    kv->root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (kv->root_fd < 0) {
        rc = yyc__kv_errno_fail(kv, errno, "open storage folder");
        goto fail;
    }
    int tfd = -1;
    err = yyc__kv_open_data_dir(kv);
    if (!err) err = yyc__fs_open_subdir(kv->root_fd, TRASH_DIR, &tfd);
    if (tfd >= 0) close(tfd);
    if (err) {
        rc = yyc__kv_errno_fail(kv, err, "create data or trash folder");
        goto fail;
    }
    rc = yyc__kv_db_open_or_rebuild(kv);
    if (rc != YYC_OK) goto fail;
    yyc__kv_reserve_make(kv);               /* (best effort) */
    yyc__kv_schedule_trash_empty(kv, true); /* finish a deletion interrupted last time */
    *out = kv;
    return YYC_OK;
fail:
    yyc__worker_drain(kv);
    if (kv->data_fd >= 0) close(kv->data_fd);
    if (kv->root_fd >= 0) close(kv->root_fd);
    free(kv->db_path);
    free(kv->path);
    free(kv);
    return rc;
}

int yyc_kv_open(const char *path, yyc_kv_type type, yyc_kv **out) {
    return yyc__kv_open_ex(path, type, NULL, NULL, out);
}

void yyc_kv_close(yyc_kv *kv) {
    if (!kv) return;
    /* First the background job (its read-only connection must be gone so that our close, the
     * last one, checkpoints and deletes the -wal and -shm files), then the connection. */
    yyc__worker_drain(kv);
    yyc__kv_write_access_times(kv, SIZE_MAX); /* (errors reported; the times are lost) */
    yyc__kv_access_times_destroy(kv);
    yyc__kv_db_close(kv);
    if (kv->data_fd >= 0) close(kv->data_fd);
    if (kv->root_fd >= 0) close(kv->root_fd);
    free(kv->db_path);
    free(kv->path);
    free(kv);
}

const char *yyc_kv_path(const yyc_kv *kv) { return kv ? kv->path : NULL; }
yyc_kv_type yyc_kv_type_of(const yyc_kv *kv) { return kv ? kv->type : YYC_KV_MIXED; }

void yyc_kv_set_error_hook(yyc_kv *kv, yyc_error_hook hook, void *ctx) {
    if (!kv) return;
    kv->hook = hook;
    kv->hook_ctx = ctx;
    if (hook && kv->has_pending_event) {
        kv->has_pending_event = false;
        hook(ctx, &kv->pending_event);
    }
}

void yyc_kv_set_error_logs_enabled(yyc_kv *kv, bool on) {
    if (kv) kv->logs = on;
}

bool yyc_kv_error_logs_enabled(const yyc_kv *kv) { return kv && kv->logs; }

/* --- small row helpers --- */

static bool key_is_empty(const char *key) { return !key || !*key; }

/* A usable file name read from the manifest, or NULL (NULL, empty, or not a single component:
 * never joined to data/). */
static const char *column_filename(sqlite3_stmt *s, int col) {
    const char *name = (const char *)sqlite3_column_text(s, col);
    return yyc_kv_filename_is_valid(name) ? name : NULL;
}

/* Deletes key's row. */
static int delete_row(yyc_kv *kv, const char *key) {
    sqlite3_stmt *s;
    int rc = yyc__kv_prepare(kv, SQL_DELETE, &s);
    if (rc != YYC_OK) return rc;
    yyc__kv_bind_key(s, 1, key);
    return yyc__kv_step_done(kv, s, "delete row");
}

/* Drops the row of a value that is gone or damaged, then its file (if any, and unchanged).
 * Returns YYC_NOTFOUND (the caller's miss) or the error of the row delete. */
static int delete_row_and_file(yyc_kv *kv, const char *key, const char *filename) {
    file_ref f;
    yyc__kv_file_ref_capture(kv, filename, &f);
    int rc = delete_row(kv, key);
    if (rc == YYC_OK) yyc__kv_file_ref_delete(kv, &f);
    else yyc__kv_file_ref_forget(&f);
    return rc == YYC_OK ? YYC_NOTFOUND : rc;
}

/* The key's current file name (a copy, NULL when inline or absent). */
static int lookup_filename(yyc_kv *kv, const char *key, char **out) {
    *out = NULL;
    sqlite3_stmt *s;
    int rc = yyc__kv_prepare(kv, SQL_GET_FILENAME, &s);
    if (rc != YYC_OK) return rc;
    yyc__kv_bind_key(s, 1, key);
    int src = sqlite3_step(s);
    if (src == SQLITE_ROW) {
        const char *name = column_filename(s, 0);
        if (name && !(*out = strdup(name)))
            rc = yyc__kv_report(kv, true, YYC_ENOMEM, 0, ENOMEM, "copy");
    } else if (src != SQLITE_DONE) {
        rc = yyc__kv_sqlite_fail(kv, src, "look up file name");
    }
    yyc__stmt_done(s);
    return rc;
}

static int touch(yyc_kv *kv, const char *key) {
    sqlite3_stmt *s;
    int rc = yyc__kv_prepare(kv, SQL_TOUCH, &s); /* (db_check ends a held read transaction) */
    if (rc != YYC_OK) return rc;
    sqlite3_bind_int64(s, 1, now_seconds());
    yyc__kv_bind_key(s, 2, key);
    return yyc__kv_step_done(kv, s, "update access time");
}

/* A read's access time: noted for a later write when the owner defers them
 * (kv_access_times.c), else written now (a failure is reported, the read still succeeds). */
static void record_access(yyc_kv *kv, const char *key) {
    if (kv->defer_access) {
        yyc__kv_note_access(kv, key, now_seconds());
        return;
    }
    int rc = touch(kv, key);
    if (rc != YYC_OK) yyc__kv_report(kv, false, rc, 0, 0, "access time not updated");
}

/* --- items --- */

static size_t add_sizes(size_t a, size_t b, bool *overflow) {
    if (a > SIZE_MAX - b) *overflow = true;
    return a + b;
}

/* n rounded up to a multiple of _Alignof(max_align_t). */
static size_t align_item(size_t n, bool *overflow) {
    const size_t a = _Alignof(max_align_t);
    return add_sizes(n, a - 1, overflow) & ~(a - 1);
}

/* Builds an item from a row with the COLS_FULL / COLS_INFO columns and the two checksums (8th
 * and 9th columns, NULL when not checked). With want_value, a file-backed row's file is read
 * into the item. Returns YYC_OK, YYC_NOTFOUND (the value is gone or the value or extended data
 * does not match its checksum: the caller deletes the row, and the file when *drop_file), or a
 * recorded error. */
static int row_to_item(yyc_kv *kv, sqlite3_stmt *s, bool want_value, yyc_kv_item **out,
                       bool *drop_file) {
    *out = NULL;
    *drop_file = false;
    const char *key = (const char *)sqlite3_column_text(s, 0);
    size_t key_len = key ? (size_t)sqlite3_column_bytes(s, 0) : 0;
    const char *raw_name = (const char *)sqlite3_column_text(s, 1);
    size_t name_len = raw_name ? (size_t)sqlite3_column_bytes(s, 1) : 0;
    const char *name = column_filename(s, 1);
    int64_t size = sqlite3_column_int64(s, 2);
    int64_t mtime = sqlite3_column_int64(s, 4);
    int64_t atime = sqlite3_column_int64(s, 5);
    const void *ext = sqlite3_column_blob(s, 6);
    size_t ext_len = ext ? (size_t)sqlite3_column_bytes(s, 6) : 0;
    bool has_crc = want_value && sqlite3_column_type(s, 7) == SQLITE_INTEGER;
    uint32_t crc = has_crc ? (uint32_t)sqlite3_column_int64(s, 7) : 0;

    int fd = -1;
    size_t value_len = 0;
    const void *inline_value = NULL;
    bool from_file = raw_name && name_len > 0;
    if (sqlite3_column_type(s, 8) == SQLITE_INTEGER &&
        yyc__crc32c(ext, ext_len) != (uint32_t)sqlite3_column_int64(s, 8)) {
        *drop_file = from_file;
        yyc__kv_report(kv, false, YYC_ECORRUPT, 0, 0, "extended data does not match its checksum");
        return YYC_NOTFOUND;
    }
    if (want_value) {
        if (from_file) {
            int rc = yyc__kv_open_value_file(kv, name, size, &fd, &value_len, drop_file);
            if (rc != YYC_OK) return rc;
        } else {
            inline_value = sqlite3_column_blob(s, 3);
            value_len = inline_value ? (size_t)sqlite3_column_bytes(s, 3) : 0;
        }
    }
    /* One block: the item, then the value and the extended data at max_align_t boundaries
     * (callers may read them as any type), then the key and the file name. */
    bool overflow = false;
    size_t value_at = align_item(sizeof(yyc_kv_item), &overflow);
    size_t ext_at = align_item(add_sizes(value_at, value_len, &overflow), &overflow);
    size_t key_at = add_sizes(ext_at, ext_len, &overflow);
    size_t name_at = add_sizes(key_at, key_len + 1, &overflow);
    size_t total = add_sizes(name_at, from_file ? name_len + 1 : 0, &overflow);
    yyc_kv_item *item = overflow ? NULL : malloc(total);
    if (!item) {
        if (fd >= 0) close(fd);
        return yyc__kv_report(kv, true, YYC_ENOMEM, 0, ENOMEM, "allocate item");
    }
    char *base = (char *)item;
    *item = (yyc_kv_item){.size = size, .modification_time = mtime, .last_access_time = atime};
    item->key = base + key_at;
    if (key_len) memcpy(item->key, key, key_len);
    item->key[key_len] = '\0';
    if (from_file) {
        item->filename = base + name_at;
        memcpy(item->filename, raw_name, name_len + 1);
    }
    if (want_value) {
        char *p = base + value_at;
        item->value = value_len ? p : NULL;
        item->value_len = value_len;
        if (fd >= 0) {
            int rc = yyc__kv_read_value_file(kv, fd, p, value_len);
            if (rc != YYC_OK) {
                free(item);
                if (rc == YYC_NOTFOUND) *drop_file = true;
                return rc;
            }
        } else if (value_len) {
            memcpy(p, inline_value, value_len);
        }
        if (has_crc && yyc__crc32c(p, value_len) != crc) {
            free(item);
            *drop_file = from_file;
            yyc__kv_report(kv, false, YYC_ECORRUPT, 0, 0, "value does not match its checksum");
            return YYC_NOTFOUND;
        }
    }
    if (ext_len) {
        item->extended_data = base + ext_at;
        item->extended_len = ext_len;
        memcpy(item->extended_data, ext, ext_len);
    }
    *out = item;
    return YYC_OK;
}

void yyc_kv_item_free(yyc_kv_item *item) { free(item); }

void yyc_kv_items_free(yyc_kv_item **items, size_t count) {
    if (!items) return;
    for (size_t i = 0; i < count; i++) free(items[i]);
    free(items);
}

/* --- save --- */

/* step_done of a statement that replaces or deletes key's row, with hook_key set while it
 * steps: kv->old_filename gets the file name of the row it deleted ("" when none) and
 * kv->old_row_failed tells whether that row could not be read. */
static int step_learning_old_row(yyc_kv *kv, sqlite3_stmt *s, const char *key, int64_t size,
                                 const char *what) {
    kv->hook_key = key;
    kv->hook_size = size;
    kv->old_row_failed = false;
    kv->replaced_row = false;
    kv->old_filename[0] = '\0';
    int rc = yyc__kv_step_done(kv, s, what);
    kv->hook_key = NULL;
    return rc;
}

/* Replaces key's row (INSERT OR REPLACE). With the old-row hook in use, kv->old_filename gets
 * the file name of the row it replaced ("" when none) and kv->old_row_failed tells whether that
 * row could not be read. */
static int upsert(yyc_kv *kv, const char *key, const char *filename, const void *value,
                  size_t value_len, const void *ext, size_t ext_len, uint32_t crc,
                  uint32_t ext_crc) {
    sqlite3_stmt *s;
    bool with_crc;
    int rc = yyc__kv_prepare2(kv, SQL_UPSERT, SQL_UPSERT_CRC, &s, &with_crc);
    if (rc != YYC_OK) return rc;
    int64_t now = now_seconds();
    /* Value and extended data outlive the step (the statement is reset before we return). */
    int b = yyc__kv_bind_key(s, 1, key);
    if (b == SQLITE_OK)
        b = filename ? sqlite3_bind_text(s, 2, filename, -1, SQLITE_STATIC)
                     : sqlite3_bind_null(s, 2);
    if (b == SQLITE_OK) b = sqlite3_bind_int64(s, 3, (int64_t)value_len);
    if (b == SQLITE_OK) {
        if (filename) b = sqlite3_bind_null(s, 4);
        else if (value_len == 0) b = sqlite3_bind_zeroblob(s, 4, 0); /* empty, not NULL */
        else b = sqlite3_bind_blob64(s, 4, value, value_len, SQLITE_STATIC);
    }
    if (b == SQLITE_OK) b = sqlite3_bind_int64(s, 5, now);
    if (b == SQLITE_OK) b = sqlite3_bind_int64(s, 6, now);
    if (b == SQLITE_OK)
        b = ext_len ? sqlite3_bind_blob64(s, 7, ext, ext_len, SQLITE_STATIC)
                    : sqlite3_bind_null(s, 7);
    if (b == SQLITE_OK && with_crc) b = sqlite3_bind_int64(s, 8, crc);
    if (b == SQLITE_OK && with_crc)
        b = ext_len ? sqlite3_bind_int64(s, 9, ext_crc) : sqlite3_bind_null(s, 9);
    if (b != SQLITE_OK) {
        yyc__stmt_done(s);
        return yyc__kv_sqlite_fail(kv, b, "bind row");
    }
    if (!kv->use_old_row_hook) return yyc__kv_step_done(kv, s, "save row");
    return step_learning_old_row(kv, s, key, (int64_t)value_len, "save row");
}

/* The row replaced and the key's previous file deleted, after the commit that makes the row
 * name something else (inline now, or the new file's fresh name). The old file name comes from
 * the upsert itself (yyc__kv_old_row_deleted) or, without the hook, from a lookup first. Caller
 * holds the folder lock, so no other process changes the row or the file in between. */
static int replace_row(yyc_kv *kv, const char *key, const void *value, size_t value_len,
                       const char *filename, const void *extended, size_t extended_len,
                       uint32_t crc, uint32_t ext_crc) {
    const void *inline_value = filename ? NULL : value;
    file_ref old;
    if (!kv->use_old_row_hook) {
        char *old_name = NULL;
        int rc = lookup_filename(kv, key, &old_name);
        if (rc != YYC_OK) return rc;
        yyc__kv_file_ref_capture(
            kv, filename && old_name && !strcmp(old_name, filename) ? NULL : old_name, &old);
        free(old_name);
        rc = upsert(kv, key, filename, inline_value, value_len, extended, extended_len, crc,
                    ext_crc);
        if (rc == YYC_OK) yyc__kv_delete_after_commit(kv, &old);
        else yyc__kv_file_ref_forget(&old);
        return rc;
    }
    int rc =
        upsert(kv, key, filename, inline_value, value_len, extended, extended_len, crc, ext_crc);
    if (rc != YYC_OK) return rc;
    if (kv->old_row_failed) /* (out of memory): the orphan sweep after an open removes it */
        yyc__kv_report(kv, false, YYC_ENOMEM, 0, 0, "previous file of a saved key not known");
    const char *old_name = kv->old_filename[0] ? kv->old_filename : NULL;
    if (old_name && !(filename && !strcmp(old_name, filename))) {
        yyc__kv_file_ref_capture(kv, old_name, &old);
        yyc__kv_delete_after_commit(kv, &old);
    }
    return YYC_OK;
}

void yyc__kv_delete_after_commit(yyc_kv *kv, file_ref *r) {
    yyc__kv_batch *b = kv->batch;
    if (!b) {
        yyc__kv_file_ref_delete(kv, r);
    } else if (r->name && b->n_old < b->cap) {
        b->old[b->n_old++] = *r; /* (the list owns the name now) */
        *r = (file_ref){0};
    } else {
        yyc__kv_file_ref_forget(r);
    }
}

/* After a failed row write: deletes the new file `placed` unless the row names it after all (a
 * commit reported as failed that still happened). When that cannot be told (the lookup fails
 * too) the file stays: the orphan sweep after an open removes it if no row names it. The
 * caller's error stays the thread's last error. */
static void drop_unsaved_file_locked(yyc_kv *kv, const char *key, const char *placed) {
    assert(kv->lock_depth > 0);
    yyc_error failure;
    yyc_last_error(&failure);
    char *name = NULL;
    if (lookup_filename(kv, key, &name) == YYC_OK && !(name && !strcmp(name, placed))) {
        /* Under the folder lock nothing else moves a file into place: the file under that name
         * is still the one just written. */
        file_ref written;
        yyc__kv_file_ref_capture(kv, placed, &written);
        yyc__kv_file_ref_delete(kv, &written);
    }
    free(name);
    yyc__error(failure.code, failure.sqlite_code, failure.sys_errno, "%s", failure.message);
}

/* The part of a save under the folder lock: the value's file (when filename is set) is put in
 * place under a fresh name, then the row switched to it (replace_row) in one statement. A
 * failure at any step leaves the key's previous row and file as they were. */
static int save_locked(yyc_kv *kv, const char *key, const void *value, size_t value_len,
                       const char *filename, int tdfd, const char *tmp, const void *extended,
                       size_t extended_len, uint32_t crc, uint32_t ext_crc) {
    assert(kv->lock_depth > 0);
    char placed[256] = "";
    if (filename) {
        int rc = yyc__kv_place_file_locked(kv, value, value_len, filename, tdfd, tmp, placed);
        if (rc != YYC_OK) return rc;
    }
    int rc = replace_row(kv, key, value, value_len, filename ? placed : NULL, extended,
                         extended_len, crc, ext_crc);
    if (rc != YYC_OK && filename) drop_unsaved_file_locked(kv, key, placed);
    yyc__kv_batch *b = kv->batch;
    if (rc == YYC_OK && filename && b && b->n_placed < b->cap) { /* (a rollback deletes it) */
        b->placed[b->n_placed].key = key;
        memcpy(b->placed[b->n_placed].name, placed, sizeof placed);
        b->n_placed++;
    }
    return rc;
}

void yyc__kv_drop_unsaved_file_locked(yyc_kv *kv, const char *key, const char *placed) {
    drop_unsaved_file_locked(kv, key, placed);
}

int yyc_kv_save(yyc_kv *kv, const char *key, const void *value, size_t value_len,
                const char *filename, const void *extended, size_t extended_len) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    if (key_is_empty(key)) return yyc__kv_report(kv, true, YYC_EINVAL, 0, 0, "empty key");
    if (!value && value_len)
        return yyc__kv_report(kv, true, YYC_EINVAL, 0, 0, "NULL value with a length");
    if (!extended) extended_len = 0;
    /* The SQLite type stores every value inline and ignores file names. */
    bool to_file = kv->type != YYC_KV_SQLITE && filename && *filename;
    if (kv->type == YYC_KV_FILE && !to_file)
        return yyc__kv_report(kv, true, YYC_EINVAL, 0, 0, "file storage needs a file name");
    if (to_file && !yyc_kv_filename_is_valid(filename))
        return yyc__kv_report(kv, true, YYC_EINVAL, 0, 0, "invalid file name");
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK) return rc;
    uint64_t limit = (uint64_t)sqlite3_limit(kv->db, SQLITE_LIMIT_LENGTH, -1);
    if ((!to_file && (uint64_t)value_len > limit) || (uint64_t)extended_len > limit)
        return yyc__kv_report(kv, true, YYC_ETOOBIG, SQLITE_TOOBIG, 0,
                              "value above SQLite's blob limit");
    if ((uint64_t)value_len > (uint64_t)INT64_MAX)
        return yyc__kv_report(kv, true, YYC_ETOOBIG, 0, 0, "value too large");

    uint32_t crc = yyc__crc32c(value, value_len);
    uint32_t ext_crc = extended_len ? yyc__crc32c(extended, extended_len) : 0;
    /* A file value is written to a temporary file first, outside the folder lock, through the
     * data/ descriptor we hold, unchecked: data/ may have been replaced by another process's
     * remove-all, before or during the write. save_locked checks data/ under the lock and moves
     * the file into the current data/ (or, when the trash took it, writes it again there). The
     * descriptor stays open until then even if data/ is reopened meanwhile (save_dir_fd). */
    int tdfd = -1;
    char tmp[64] = "";
    if (to_file) {
        tdfd = kv->data_fd >= 0 ? kv->data_fd : yyc__kv_data_dir(kv);
        if (tdfd < 0) return yyc__kv_errno_fail(kv, EIO, "open data folder");
        kv->save_dir_fd = tdfd;
        int err = yyc__fs_write_temp(tdfd, value, value_len, tmp);
        if (err == ENOENT) {
            tmp[0] = '\0'; /* nothing was left behind */
        } else if (err) {
            kv->save_dir_fd = -1;
            return yyc__kv_errno_fail(kv, err, "write data file");
        }
    }
    rc = yyc__kv_folder_lock(kv);
    if (rc == YYC_OK) {
        rc = save_locked(kv, key, value, value_len, to_file ? filename : NULL, tdfd, tmp, extended,
                         extended_len, crc, ext_crc);
        yyc__kv_folder_unlock(kv);
    } else if (*tmp) {
        unlinkat(tdfd, tmp, 0); /* never renamed into place */
    }
    if (tdfd >= 0 && tdfd != kv->data_fd) close(tdfd); /* data/ was reopened meanwhile */
    kv->save_dir_fd = -1;
    return rc;
}

/* --- remove --- */

/* Every deletion (of one key, a list of keys, the rows of a trim) is decided and applied in one
 * locked step (delete_step_locked): under the folder lock and inside one write transaction,
 * the candidate rows are listed (rowid, file name, size), exactly those rows are deleted by
 * rowid and committed, and then exactly their files are deleted. Another process cannot change
 * a chosen row in between (a refresh of its access time waits for the transaction and then
 * finds no row; a save of its key waits for the folder lock), so no row ever survives naming a
 * file that was deleted, and a row whose key is NULL or a BLOB is deleted like any other.
 *
 * A full disk: SQLite needs room in the WAL to record a delete, so a disk that the cache itself
 * filled could otherwise not be freed through it. A step that fails with ENOSPC is retried
 * (unreported) after each of these, in turn: a TRUNCATE checkpoint (gives back the WAL when
 * its pages need no room in the database file); releasing the space reserve, a file of
 * RESERVE_BYTES kept in the folder for this (RESERVE_NAME; YYKVStorage ignores it), which is
 * made again after a later deletion once the disk has room for it twice over; deleting the
 * chosen rows' files before their rows (the last resort: should the rows still not go, they
 * name missing files, which read as misses); smaller transactions, down to one row. Only when
 * all of that failed is ENOSPC returned - left only by a WAL full of inline values that needs
 * more room to be checkpointed than the reserve gives (remove-all still works then). A
 * deletion that needed the reserve or that removed rows of a trim ends with a TRUNCATE
 * checkpoint. */

/* The cost of a row (its size column): the size when it is a positive integer, else 0. */
static int64_t column_cost(sqlite3_stmt *s, int col) {
    if (sqlite3_column_type(s, col) != SQLITE_INTEGER) return 0;
    int64_t v = sqlite3_column_int64(s, col);
    return v > 0 ? v : 0;
}

enum fit { FIT_NONE, FIT_COUNT, FIT_SIZE };

/* What one deletion removes and what it removed. */
typedef struct deletion {
    select_rows_fn select;
    const void *arg;
    size_t limit; /* most rows per transaction */
    enum fit fit; /* FIT_*: stop once the total count / size is at most max */
    int64_t max;
    bool one_step; /* stop after one step (a batch) even when candidates are left */
    /* FIT_*: the total, summed by the first step inside its transaction and carried on by the
     * later ones (summing again at every step would make a large trim quadratic); another
     * process's changes meanwhile only move where the trim stops. */
    bool have_total;
    int64_t total;
    int64_t removed; /* rows deleted so far */
    bool more;       /* the last step stopped at its limit: candidates may be left */
} deletion;

/* A row chosen in a step. */
typedef struct doomed_row {
    int64_t rowid;
    file_ref file;
} doomed_row;

static int prepare_in(yyc_kv *kv, const char *head, const char *tail, const char *const *keys,
                      size_t n, int first, sqlite3_stmt **out, bool *adhoc);
static void release_in(sqlite3_stmt *s, bool adhoc);

static void rollback(yyc_kv *kv) {
    if (kv->db && !sqlite3_get_autocommit(kv->db))
        sqlite3_exec(kv->db, "rollback;", NULL, NULL, NULL);
}

/* Lists the candidates (up to limit, or until the totals fit) and deletes exactly those rows by
 * rowid, in one write transaction; after the commit deletes their files (files_first: before
 * deleting the rows, so that a full disk gets their space back even if the rows then cannot
 * be deleted). Caller holds the folder lock. */
static int delete_step_locked(yyc_kv *kv, deletion *d, size_t limit, bool files_first) {
    assert(kv->lock_depth > 0);
    d->more = false;
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK) return rc;
    int src = sqlite3_exec(kv->db, "begin immediate;", NULL, NULL, NULL);
    if (src != SQLITE_OK) return yyc__kv_sqlite_fail(kv, src, "begin deletion");
    int64_t total = d->total;
    bool saturated = false;
    if (d->fit != FIT_NONE) {
        /* (a saturated total may be smaller than the true one: summed again) */
        if (!d->have_total || d->total == INT64_MAX) {
            int64_t count = 0, cost = 0;
            rc = yyc__kv_totals_read(kv, &count, &cost); /* (O(1): kv_totals.c) */
            total = d->fit == FIT_SIZE ? cost : count;
        }
        saturated = total == INT64_MAX;
        if (rc != YYC_OK || total <= d->max) {
            if (rc != YYC_OK) rollback(kv);
            else sqlite3_exec(kv->db, "commit;", NULL, NULL, NULL); /* (nothing written) */
            return rc;
        }
    }
    sqlite3_stmt *s = NULL, *del = NULL;
    bool adhoc = false;
    doomed_row *rows = NULL;
    size_t n = 0, cap = 0;
    rc = d->select(kv, d->arg, &s, &adhoc);
    src = SQLITE_DONE;
    while (rc == YYC_OK && n < limit && (src = sqlite3_step(s)) == SQLITE_ROW) {
        src = SQLITE_DONE;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            doomed_row *p = realloc(rows, ncap * sizeof *p);
            if (!p) {
                src = SQLITE_NOMEM;
                break;
            }
            rows = p;
            cap = ncap;
        }
        rows[n].rowid = sqlite3_column_int64(s, 0);
        /* (under the folder lock: nothing renames a file into place before it is deleted) */
        yyc__kv_file_ref_capture(kv, column_filename(s, 1), &rows[n].file);
        n++;
        if (d->fit != FIT_NONE) {
            int64_t cost = d->fit == FIT_SIZE ? column_cost(s, 2) : 1;
            total -= cost; /* (no overflow: total >= 0 before, cost >= 0) */
            if (total <= d->max) break;
        }
    }
    /* Candidates may be left: the step stopped at its limit, or its total was saturated (the
     * true one may be larger: the next step sums again). */
    bool at_limit =
        n > 0 && (n == limit || saturated) && (d->fit == FIT_NONE || total > d->max || saturated);
    if (rc == YYC_OK && src != SQLITE_DONE)
        rc = yyc__kv_sqlite_fail(kv, src, "list rows to delete");
    if (s) release_in(s, adhoc);
    if (rc == YYC_OK && files_first) /* the last resort on a full disk (see delete_rows) */
        for (size_t i = 0; i < n; i++) yyc__kv_file_ref_delete(kv, &rows[i].file);
    if (rc == YYC_OK && n > 0) rc = yyc__kv_prepare_checked(kv, SQL_DELETE_ROWID, &del);
    for (size_t i = 0; rc == YYC_OK && i < n; i++) {
        sqlite3_bind_int64(del, 1, rows[i].rowid);
        src = sqlite3_step(del);
        sqlite3_reset(del);
        if (src != SQLITE_DONE) rc = yyc__kv_sqlite_fail(kv, src, "delete rows");
    }
    if (del) yyc__stmt_done(del);
    if (rc == YYC_OK) {
        src = sqlite3_exec(kv->db, "commit;", NULL, NULL, NULL);
        if (src != SQLITE_OK) rc = yyc__kv_sqlite_fail(kv, src, "commit deletion");
    }
    if (rc != YYC_OK) rollback(kv);
    for (size_t i = 0; i < n; i++) { /* rows first, then files */
        if (rc == YYC_OK) yyc__kv_file_ref_delete(kv, &rows[i].file);
        else yyc__kv_file_ref_forget(&rows[i].file);
    }
    free(rows);
    if (rc == YYC_OK) {
        d->removed += (int64_t)n;
        d->more = at_limit;
        d->total = saturated ? INT64_MAX : total;
        d->have_total = true;
    }
    return rc;
}

/* Runs steps under the folder lock until no candidate is left (or the totals fit), retrying a
 * step that found the disk full as described above. Returns YYC_OK or the error of the step
 * that failed (earlier steps stay done). */
static int delete_rows(yyc_kv *kv, deletion *d) {
    size_t limit = d->limit;
    bool released = false, files_first = false;
    int rc = YYC_OK;
    for (int tries = 0;;) {
        rc = yyc__kv_folder_lock(kv);
        if (rc != YYC_OK) return rc;
        kv->quiet_full = true;
        rc = delete_step_locked(kv, d, limit, files_first);
        kv->quiet_full = false;
        bool retry = false;
        if (rc == YYC_ENOSPC) {
            if (tries == 0) {
                retry = true; /* after a checkpoint */
            } else if (!released && yyc__kv_reserve_release(kv)) {
                retry = released = true;
            } else if (!files_first) {
                retry = files_first = true;
            } else if (limit > 1) {
                limit /= 2;
                retry = true;
            }
            tries++;
            yyc__kv_checkpoint(kv);
        }
        yyc__kv_folder_unlock(kv);
        if (rc == YYC_OK && d->more && !d->one_step) continue;
        if (!retry) break;
    }
    if (rc == YYC_ENOSPC) { /* the last try's error, reported now */
        yyc_error e;
        yyc_last_error(&e);
        yyc__kv_report(kv, false, e.code, e.sqlite_code, e.sys_errno, "%s", e.message);
    }
    if (released || kv->reserve_gone) {
        if (released) yyc__kv_checkpoint(kv);
        yyc__kv_reserve_make(kv);
    }
    return rc;
}

static int select_key(yyc_kv *kv, const void *arg, sqlite3_stmt **s, bool *adhoc) {
    *adhoc = false;
    int rc = yyc__kv_prepare_checked(kv, SQL_ROWS_KEY, s);
    if (rc == YYC_OK) yyc__kv_bind_key(*s, 1, arg);
    return rc;
}

/* Removes key's row and then its file (delete_rows). */
int yyc_kv_remove(yyc_kv *kv, const char *key) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    if (key_is_empty(key)) return YYC_OK;
    deletion d = {.select = select_key, .arg = key, .limit = SIZE_MAX};
    return delete_rows(kv, &d);
}

/* "<head>?,?,...,?<tail>" with n placeholders, or NULL. */
static char *in_list_sql(const char *head, size_t n, const char *tail) {
    size_t hl = strlen(head), tl = strlen(tail);
    char *sql = malloc(hl + 2 * n + tl + 1);
    if (!sql) return NULL;
    char *p = sql;
    memcpy(p, head, hl);
    p += hl;
    for (size_t i = 0; i < n; i++) {
        if (i) *p++ = ',';
        *p++ = '?';
    }
    memcpy(p, tail, tl + 1);
    return sql;
}

/* A statement for one chunk of an IN list. Full chunks share one cached statement; shorter
 * ones are prepared for the occasion (*adhoc: finalize instead of giving back). Keys are
 * bound from parameter `first` on. */
static int prepare_in(yyc_kv *kv, const char *head, const char *tail, const char *const *keys,
                      size_t n, int first, sqlite3_stmt **out, bool *adhoc) {
    *out = NULL;
    *adhoc = n != YYC__KV_IN_CHUNK;
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK) return rc;
    char *sql = in_list_sql(head, n, tail);
    if (!sql) return yyc__kv_report(kv, true, YYC_ENOMEM, 0, ENOMEM, "build query");
    int src = *adhoc ? sqlite3_prepare_v2(kv->db, sql, -1, out, NULL)
                     : yyc__stmt_cache_get(&kv->stmts, sql, out);
    free(sql);
    if (src != SQLITE_OK) {
        if (*adhoc) sqlite3_finalize(*out);
        *out = NULL;
        return yyc__kv_sqlite_fail(kv, src, "prepare list query");
    }
    for (size_t i = 0; i < n; i++) {
        int b = yyc__kv_bind_key(*out, first + (int)i, keys[i] ? keys[i] : "");
        if (b != SQLITE_OK) {
            rc = yyc__kv_sqlite_fail(kv, b, "bind key");
            if (*adhoc) sqlite3_finalize(*out);
            else yyc__stmt_done(*out);
            *out = NULL;
            return rc;
        }
    }
    return YYC_OK;
}

static void release_in(sqlite3_stmt *s, bool adhoc) {
    if (adhoc) sqlite3_finalize(s);
    else yyc__stmt_done(s);
}

/* The keys of one chunk of yyc_kv_remove_keys. */
typedef struct key_chunk {
    const char *const *keys;
    size_t n;
} key_chunk;

static int select_keys(yyc_kv *kv, const void *arg, sqlite3_stmt **s, bool *adhoc) {
    const key_chunk *c = arg;
    return prepare_in(kv, SQL_ROWS_KEYS_IN, ");", c->keys, c->n, 1, s, adhoc);
}

int yyc_kv_remove_keys(yyc_kv *kv, const char *const *keys, size_t n) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    if (n == 0) return YYC_OK;
    if (!keys) return yyc__kv_report(kv, true, YYC_EINVAL, 0, 0, "NULL key list");
    for (size_t i = 0; i < n; i += YYC__KV_IN_CHUNK) {
        key_chunk c = {keys + i, n - i < YYC__KV_IN_CHUNK ? n - i : YYC__KV_IN_CHUNK};
        deletion d = {.select = select_keys, .arg = &c, .limit = SIZE_MAX};
        int rc = delete_rows(kv, &d);
        if (rc != YYC_OK) return rc;
    }
    return YYC_OK;
}

/* A statement of one int64 parameter (arg: the SQL; the value follows in where_arg). */
typedef struct where_arg {
    const char *sql;
    int64_t value;
} where_arg;

static int select_where(yyc_kv *kv, const void *arg, sqlite3_stmt **s, bool *adhoc) {
    const where_arg *w = arg;
    *adhoc = false;
    int rc = yyc__kv_prepare_checked(kv, w->sql, s);
    if (rc == YYC_OK) sqlite3_bind_int64(*s, 1, w->value);
    return rc;
}

/* Rows per transaction of the trims by size and age. */
#define WHERE_BATCH 256

/* Deletes the rows sql selects with value, and their files; checkpoints when any went. */
static int remove_where(yyc_kv *kv, const char *sql, int64_t value) {
    where_arg w = {sql, value};
    deletion d = {.select = select_where, .arg = &w, .limit = WHERE_BATCH};
    int rc = delete_rows(kv, &d);
    if (d.removed > 0) yyc__kv_checkpoint(kv);
    return rc;
}

int yyc_kv_remove_larger_than(yyc_kv *kv, int64_t size) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    if (size == INT64_MAX) return YYC_OK;
    if (size <= 0) return yyc_kv_remove_all(kv);
    return remove_where(kv, SQL_ROWS_LARGER, size);
}

int yyc_kv_remove_earlier_than(yyc_kv *kv, int64_t t) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    if (t <= 0) return YYC_OK;
    if (t == INT64_MAX) return yyc_kv_remove_all(kv);
    return remove_where(kv, SQL_ROWS_EARLIER, t);
}

/* --- LRU eviction (spec 2.8) --- */

static int select_lru(yyc_kv *kv, const void *arg, sqlite3_stmt **s, bool *adhoc) {
    (void)arg;
    *adhoc = false;
    return yyc__kv_prepare_checked(kv, SQL_ROWS_LRU, s);
}

/* Deletes least recently used rows (oldest access first, ties: oldest rowid first) until the
 * count or the total cost is at most max, YYC__KV_LRU_BATCH rows per transaction. Each step
 * computes the total inside its own transaction, so the rows of other processes count. */
static int remove_to_fit(yyc_kv *kv, int64_t max, bool by_size) {
    if (max == INT64_MAX) return YYC_OK;
    if (max <= 0) return yyc_kv_remove_all(kv);
    deletion d = {.select = select_lru,
                  .limit = YYC__KV_LRU_BATCH,
                  .fit = by_size ? FIT_SIZE : FIT_COUNT,
                  .max = max};
    int rc = delete_rows(kv, &d);
    if (d.removed > 0) yyc__kv_checkpoint(kv);
    return rc;
}

int yyc_kv_remove_to_fit_size(yyc_kv *kv, int64_t max_size) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    return remove_to_fit(kv, max_size, true);
}

int yyc_kv_remove_to_fit_count(yyc_kv *kv, int64_t max_count) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    return remove_to_fit(kv, max_count, false);
}

int yyc__kv_trim_batch(yyc_kv *kv, yyc__kv_trim kind, int64_t value, bool *more, int64_t *removed) {
    *more = false;
    *removed = 0;
    where_arg w = {SQL_ROWS_EARLIER, value};
    /* One step: its transaction reads the totals in O(1). Without them (an SQLite without the
     * preupdate hook) every step would scan for its total: the whole trim runs as one call. */
    deletion d = {.one_step = kv->totals.on};
    if (kind == YYC__KV_TRIM_EARLIER) {
        d.select = select_where;
        d.arg = &w;
        d.limit = WHERE_BATCH;
    } else {
        d.select = select_lru;
        d.limit = YYC__KV_LRU_BATCH;
        d.fit = kind == YYC__KV_TRIM_TO_SIZE ? FIT_SIZE : FIT_COUNT;
        d.max = value;
    }
    int rc = delete_rows(kv, &d);
    *more = rc == YYC_OK && d.more && d.one_step;
    *removed = d.removed;
    return rc;
}

int yyc__kv_remove_lru_batch(yyc_kv *kv, int limit, int64_t *removed) {
    *removed = 0;
    if (limit <= 0) return YYC_OK;
    deletion d = {.select = select_lru, .limit = (size_t)limit, .one_step = true};
    int rc = delete_rows(kv, &d);
    *removed = d.removed;
    return rc;
}

int yyc__kv_delete_selected(yyc_kv *kv, select_rows_fn select, const void *arg, size_t limit,
                            int64_t *removed) {
    deletion d = {.select = select, .arg = arg, .limit = limit};
    int rc = delete_rows(kv, &d);
    if (removed) *removed = d.removed;
    return rc;
}

/* --- remove all --- */

/* Runs one fixed statement to completion (cached). */
static int exec_cached(yyc_kv *kv, const char *sql, const char *what) {
    sqlite3_stmt *s;
    int rc = yyc__kv_prepare(kv, sql, &s);
    if (rc != YYC_OK) return rc;
    return yyc__kv_step_done(kv, s, what);
}

/* The fast remove-all, under the folder lock: every row is deleted in one statement (SQLite's
 * truncate optimization), then data/ goes to the trash. The manifest file is never unlinked or
 * recreated, so this is safe while other processes have the folder open: their connections
 * stay valid (YYCache #96). Rows go first: a crash before data/ moves leaves unreferenced
 * files, never rows without files. When the delete cannot be written for want of space (SQLite
 * needs room in the WAL), the files go first instead - data/ is moved to the trash and deleted
 * at once, which frees their space - then the WAL is checkpointed and truncated and the delete
 * tried again; meanwhile (or after a crash, or if that fails too) the rows name missing files
 * and read as misses. Other errors (busy, corrupt, I/O, permission) are returned with
 * everything kept. */
static int clear_rows(yyc_kv *kv) {
    yyc__kv_row_hook_pause(kv);
    int rc = exec_cached(kv, "delete from manifest;", "remove all rows");
    yyc__kv_row_hook_resume(kv);
    return rc;
}

static int clear_locked(yyc_kv *kv) {
    assert(kv->lock_depth > 0);
    int rc = clear_rows(kv);
    if (rc == YYC_OK) {
        yyc__kv_move_data_to_trash(kv, false);
        return YYC_OK;
    }
    if (rc != YYC_ENOSPC || !kv->db) return rc; /* (busy, corrupt, I/O: everything kept) */
    yyc__kv_move_data_to_trash(kv, true);
    yyc__kv_checkpoints_wait(kv);
    sqlite3_wal_checkpoint_v2(kv->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    return clear_rows(kv);
}

int yyc_kv_remove_all(yyc_kv *kv) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    /* Unlike other calls, a remove-all always tries to reopen a closed manifest (the user's
     * way out of a broken cache): the lazy-reopen limits are reset first. */
    kv->open_error_count = 0;
    kv->last_open_error_time = 0;
    int rc = yyc__kv_folder_lock(kv);
    if (rc != YYC_OK) return rc; /* (reported; nothing changed) */
    rc = yyc__kv_db_check(kv);   /* (a manifest found corrupt before is rebuilt here) */
    if (rc == YYC_OK) rc = clear_locked(kv);
    if (rc == YYC_ECORRUPT && kv->db) {
        /* Real corruption found by the delete: db_check rebuilds the manifest empty in place
         * (data/ goes to the trash with it), reports it and reopens. (Found by the open, the
         * rebuild was tried there already.) */
        kv->rebuild_pending = true;
        rc = yyc__kv_db_check(kv);
    }
    yyc__kv_folder_unlock(kv);
    if (rc != YYC_OK) return rc;
    yyc__kv_schedule_trash_empty(kv, false);
    yyc__kv_compact(kv);
    return YYC_OK;
}

int yyc_kv_remove_all_progress(yyc_kv *kv, yyc_progress_fn progress, void *ctx) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    int64_t total;
    int rc = yyc_kv_count(kv, &total);
    if (rc != YYC_OK) return rc;
    int64_t removed = 0, reported = -1;
    while (removed < total) {
        int64_t n;
        rc = yyc__kv_remove_lru_batch(kv, YYC__KV_REMOVE_ALL_BATCH, &n);
        if (rc != YYC_OK) return rc;
        if (n == 0) break;
        removed += n;
        if (removed > total) removed = total;
        if (progress) progress(ctx, removed, total);
        reported = removed;
    }
    if (total > 0 && reported != total && progress) progress(ctx, total, total);
    if (total > 0) yyc__kv_checkpoint(kv);
    return YYC_OK;
}

/* --- get one --- */

/* Steps a one-key read whose column live_at holds the row's liveness (see SQL_GET_ITEM): an
 * expired row is reported as no row (SQLITE_DONE) and noted in kv->read_found_expired. */
static int step_live(yyc_kv *kv, sqlite3_stmt *s, int live_at) {
    int src = sqlite3_step(s);
    if (src == SQLITE_ROW && sqlite3_column_int(s, live_at) == 0) {
        kv->read_found_expired = true;
        src = SQLITE_DONE;
    }
    return src;
}

/* Returned by a first read pass that found a row whose file is missing or damaged: that may be
 * another process replacing the value right now, so the read is repeated under the folder
 * lock, where it is conclusive. */
#define RETRY_UNDER_LOCK (-1)

static int get_one_pass(yyc_kv *kv, const char *key, bool want_value, yyc_kv_item **out,
                        bool confirm) {
    *out = NULL;
    sqlite3_stmt *s;
    bool with_crc;
    kv->keep_read = !confirm; /* (a first pass is a pure read: the held read transaction stays) */
    int rc = want_value ? yyc__kv_prepare2(kv, SQL_GET_ITEM, SQL_GET_ITEM_CRC, &s, &with_crc)
                        : yyc__kv_prepare2(kv, SQL_GET_INFO, SQL_GET_INFO_CRC, &s, &with_crc);
    if (rc == YYC_OK && !confirm) yyc__kv_read_begin(kv);
    kv->keep_read = false;
    if (rc != YYC_OK) return rc;
    yyc__kv_bind_key(s, 1, key);
    int src = step_live(kv, s, ITEM_LIVE_COLUMN);
    bool drop_file = false;
    char *drop_name = NULL;
    if (src == SQLITE_ROW) {
        rc = row_to_item(kv, s, want_value, out, &drop_file);
        const char *name = column_filename(s, 1);
        if (drop_file && name) drop_name = strdup(name);
    } else if (src == SQLITE_DONE) {
        rc = YYC_NOTFOUND;
    } else {
        rc = yyc__kv_sqlite_fail(kv, src, "get item");
    }
    yyc__stmt_done(s);
    if (src == SQLITE_ROW) {
        if (rc == YYC_NOTFOUND) {
            /* The row outlived its file (or the value or extended data is damaged): drop both,
             * report a miss. */
            rc = confirm ? delete_row_and_file(kv, key, drop_name) : RETRY_UNDER_LOCK;
        } else if (want_value && rc == YYC_OK && (*out)->last_access_time != now_seconds()) {
            /* (Already touched this second: writing the same time again is skipped.) */
            record_access(kv, key);
        }
    }
    free(drop_name);
    return rc;
}

static int get_one(yyc_kv *kv, const char *key, bool want_value, yyc_kv_item **out) {
    if (YYC__MISUSE(kv == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = NULL;
    kv->read_found_expired = false;
    if (key_is_empty(key)) return YYC_NOTFOUND;
    kv->quiet_corrupt = true;
    int rc = get_one_pass(kv, key, want_value, out, false);
    kv->quiet_corrupt = false;
    if (rc == RETRY_UNDER_LOCK && (rc = yyc__kv_folder_lock(kv)) == YYC_OK) {
        rc = get_one_pass(kv, key, want_value, out, true);
        yyc__kv_folder_unlock(kv);
    }
    return rc;
}

int yyc_kv_get_item(yyc_kv *kv, const char *key, yyc_kv_item **out) {
    return get_one(kv, key, true, out);
}

int yyc_kv_get_item_info(yyc_kv *kv, const char *key, yyc_kv_item **out) {
    return get_one(kv, key, false, out);
}

static int get_value_pass(yyc_kv *kv, const char *key, void **out_value, size_t *out_len,
                          bool confirm) {
    *out_value = NULL;
    *out_len = 0;
    sqlite3_stmt *s;
    bool with_crc;            /* (the statement selects NULL without the column) */
    kv->keep_read = !confirm; /* (a first pass is a pure read: the held read transaction stays) */
    int rc = yyc__kv_prepare2(kv, SQL_GET_VALUE, SQL_GET_VALUE_CRC, &s, &with_crc);
    if (rc == YYC_OK && !confirm) yyc__kv_read_begin(kv);
    kv->keep_read = false;
    if (rc != YYC_OK) return rc;
    yyc__kv_bind_key(s, 1, key);
    int src = step_live(kv, s, VALUE_LIVE_COLUMN);
    bool drop_file = false;
    char *drop_name = NULL;
    void *buf = NULL;
    size_t len = 0;
    int64_t atime = 0;
    if (src == SQLITE_ROW) {
        atime = sqlite3_column_int64(s, 3);
        const char *raw_name = (const char *)sqlite3_column_text(s, 0);
        if (raw_name && *raw_name) {
            int fd;
            rc = yyc__kv_open_value_file(kv, column_filename(s, 0), sqlite3_column_int64(s, 1), &fd,
                                         &len, &drop_file);
            if (rc == YYC_OK) {
                buf = malloc(len ? len : 1);
                if (!buf) {
                    close(fd);
                    rc = yyc__kv_report(kv, true, YYC_ENOMEM, 0, ENOMEM, "allocate value");
                } else {
                    rc = yyc__kv_read_value_file(kv, fd, buf, len);
                    if (rc == YYC_NOTFOUND) drop_file = true;
                }
            }
        } else {
            const void *blob = sqlite3_column_blob(s, 2);
            len = blob ? (size_t)sqlite3_column_bytes(s, 2) : 0;
            buf = malloc(len ? len : 1);
            if (!buf) rc = yyc__kv_report(kv, true, YYC_ENOMEM, 0, ENOMEM, "allocate value");
            else if (len) memcpy(buf, blob, len);
        }
        if (rc == YYC_OK && sqlite3_column_type(s, 4) == SQLITE_INTEGER &&
            yyc__crc32c(buf, len) != (uint32_t)sqlite3_column_int64(s, 4)) {
            yyc__kv_report(kv, false, YYC_ECORRUPT, 0, 0, "value does not match its checksum");
            rc = YYC_NOTFOUND;
            drop_file = raw_name && *raw_name;
        }
        if (drop_file) drop_name = strdup(raw_name);
    } else if (src == SQLITE_DONE) {
        rc = YYC_NOTFOUND;
    } else {
        rc = yyc__kv_sqlite_fail(kv, src, "get value");
    }
    yyc__stmt_done(s);
    if (src == SQLITE_ROW && rc == YYC_NOTFOUND)
        rc = confirm ? delete_row_and_file(kv, key, drop_name) : RETRY_UNDER_LOCK;
    free(drop_name);
    if (rc != YYC_OK) {
        free(buf);
        return rc;
    }
    if (atime != now_seconds()) record_access(kv, key);
    if (len == 0) {
        free(buf);
        buf = NULL;
    }
    *out_value = buf;
    *out_len = len;
    return YYC_OK;
}

int yyc_kv_get_value(yyc_kv *kv, const char *key, void **out_value, size_t *out_len) {
    if (YYC__MISUSE(kv == NULL || out_value == NULL || out_len == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out_value = NULL;
    *out_len = 0;
    kv->read_found_expired = false;
    if (key_is_empty(key)) return YYC_NOTFOUND;
    kv->quiet_corrupt = true;
    int rc = get_value_pass(kv, key, out_value, out_len, false);
    kv->quiet_corrupt = false;
    if (rc == RETRY_UNDER_LOCK && (rc = yyc__kv_folder_lock(kv)) == YYC_OK) {
        rc = get_value_pass(kv, key, out_value, out_len, true);
        yyc__kv_folder_unlock(kv);
    }
    return rc;
}

/* --- get many --- */

typedef struct item_list {
    yyc_kv_item **items;
    size_t count, cap;
} item_list;

static bool list_push(item_list *l, yyc_kv_item *item) {
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        yyc_kv_item **p = realloc(l->items, cap * sizeof *p);
        if (!p) return false;
        l->items = p;
        l->cap = cap;
    }
    l->items[l->count++] = item;
    return true;
}

/* Rows whose file is gone, collected while a query runs and deleted after it. */
typedef struct gone_list {
    lru_row *rows;
    size_t count, cap;
} gone_list;

static bool gone_push(gone_list *g, const char *key, const char *filename) {
    if (g->count == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 8;
        lru_row *p = realloc(g->rows, cap * sizeof *p);
        if (!p) return false;
        g->rows = p;
        g->cap = cap;
    }
    lru_row *r = &g->rows[g->count];
    r->key = strdup(key ? key : "");
    r->filename = filename ? strdup(filename) : NULL;
    r->size = 0;
    if (!r->key) {
        free(r->filename);
        return false;
    }
    g->count++;
    return true;
}

static int get_chunk(yyc_kv *kv, const char *const *keys, size_t n, bool want_value,
                     item_list *list, gone_list *gone) {
    sqlite3_stmt *s;
    bool adhoc;
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK) return rc;
    const char *head = want_value ? (kv->has_crc ? SQL_ITEMS_IN_CRC : SQL_ITEMS_IN)
                                  : (kv->has_crc ? SQL_INFOS_IN_CRC : SQL_INFOS_IN);
    rc = prepare_in(kv, head, ");", keys, n, 1, &s, &adhoc);
    if (rc != YYC_OK) return rc;
    int src;
    while (rc == YYC_OK && (src = sqlite3_step(s)) == SQLITE_ROW) {
        yyc_kv_item *item;
        bool drop_file;
        rc = row_to_item(kv, s, want_value, &item, &drop_file);
        if (rc == YYC_OK) {
            if (!list_push(list, item)) {
                free(item);
                rc = yyc__kv_report(kv, true, YYC_ENOMEM, 0, ENOMEM, "grow item list");
            }
        } else if (rc == YYC_NOTFOUND) {
            rc = YYC_OK;
            if (!gone_push(gone, (const char *)sqlite3_column_text(s, 0),
                           drop_file ? column_filename(s, 1) : NULL))
                rc = yyc__kv_report(kv, true, YYC_ENOMEM, 0, ENOMEM, "grow list");
        }
    }
    if (rc == YYC_OK && src != SQLITE_DONE) rc = yyc__kv_sqlite_fail(kv, src, "get items");
    release_in(s, adhoc);
    return rc;
}

static int touch_chunk(yyc_kv *kv, const char *const *keys, size_t n) {
    sqlite3_stmt *s;
    bool adhoc;
    yyc__kv_end_read(kv); /* a write: never inside the held read transaction */
    int rc = prepare_in(kv, "update manifest set last_access_time = ?1 where key in (", ");", keys,
                        n, 2, &s, &adhoc);
    if (rc != YYC_OK) return rc;
    sqlite3_bind_int64(s, 1, now_seconds());
    int src = sqlite3_step(s);
    release_in(s, adhoc);
    return src == SQLITE_DONE ? YYC_OK : yyc__kv_sqlite_fail(kv, src, "update access times");
}

static int get_many(yyc_kv *kv, const char *const *keys, size_t n, bool want_value,
                    yyc_kv_item ***out_items, size_t *out_count) {
    if (YYC__MISUSE(kv == NULL || out_items == NULL || out_count == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out_items = NULL;
    *out_count = 0;
    if (n == 0) return YYC_OK;
    if (!keys) return yyc__kv_report(kv, true, YYC_EINVAL, 0, 0, "NULL key list");
    item_list list = {0};
    gone_list gone = {0};
    int rc = YYC_OK;
    for (size_t i = 0; i < n && rc == YYC_OK; i += YYC__KV_IN_CHUNK) {
        size_t m = n - i < YYC__KV_IN_CHUNK ? n - i : YYC__KV_IN_CHUNK;
        kv->quiet_corrupt = true;
        rc = get_chunk(kv, keys + i, m, want_value, &list, &gone);
        kv->quiet_corrupt = false;
    }
    /* Rows whose file looked missing or damaged: read again under the folder lock, where a
     * value being replaced by another process cannot be mistaken for a damaged one. */
    bool locked = gone.count > 0 && rc == YYC_OK && (rc = yyc__kv_folder_lock(kv)) == YYC_OK;
    for (size_t i = 0; i < gone.count; i++) {
        if (rc == YYC_OK) {
            yyc_kv_item *item = NULL;
            int grc = get_one_pass(kv, gone.rows[i].key, want_value, &item, true);
            if (grc == YYC_OK && !list_push(&list, item)) {
                free(item);
                grc = yyc__kv_report(kv, true, YYC_ENOMEM, 0, ENOMEM, "grow item list");
            }
            if (grc != YYC_OK && grc != YYC_NOTFOUND) rc = grc;
        }
        free(gone.rows[i].key);
        free(gone.rows[i].filename);
    }
    if (locked) yyc__kv_folder_unlock(kv);
    free(gone.rows);
    if (rc == YYC_OK && want_value && list.count > 0) {
        /* YYKVStorage refreshes every requested key once at least one item came back. */
        if (kv->defer_access) {
            for (size_t i = 0; i < n; i++)
                if (!key_is_empty(keys[i])) yyc__kv_note_access(kv, keys[i], now_seconds());
            n = 0; /* (nothing to write now) */
        }
        for (size_t i = 0; i < n; i += YYC__KV_IN_CHUNK) {
            size_t m = n - i < YYC__KV_IN_CHUNK ? n - i : YYC__KV_IN_CHUNK;
            int trc = touch_chunk(kv, keys + i, m);
            if (trc != YYC_OK) {
                yyc__kv_report(kv, false, trc, 0, 0, "access times not updated");
                break;
            }
        }
    }
    if (rc != YYC_OK) {
        yyc_kv_items_free(list.items, list.count);
        return rc;
    }
    *out_items = list.items;
    *out_count = list.count;
    return YYC_OK;
}

int yyc_kv_get_items(yyc_kv *kv, const char *const *keys, size_t n, yyc_kv_item ***out_items,
                     size_t *out_count) {
    return get_many(kv, keys, n, true, out_items, out_count);
}

int yyc_kv_get_item_infos(yyc_kv *kv, const char *const *keys, size_t n, yyc_kv_item ***out_items,
                          size_t *out_count) {
    return get_many(kv, keys, n, false, out_items, out_count);
}

/* --- status --- */

int yyc_kv_exists(yyc_kv *kv, const char *key) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    kv->read_found_expired = false;
    if (key_is_empty(key)) return YYC_NOTFOUND;
    sqlite3_stmt *s;
    bool with_crc;
    kv->keep_read = true; /* (a pure read: the held read transaction stays) */
    int rc = yyc__kv_prepare2(kv, SQL_EXISTS, SQL_EXISTS_CRC, &s, &with_crc);
    if (rc == YYC_OK) yyc__kv_read_begin(kv);
    kv->keep_read = false;
    if (rc != YYC_OK) return rc;
    yyc__kv_bind_key(s, 1, key);
    int src = step_live(kv, s, EXISTS_LIVE_COLUMN);
    yyc__stmt_done(s);
    if (src == SQLITE_ROW) return YYC_OK;
    if (src == SQLITE_DONE) return YYC_NOTFOUND;
    return yyc__kv_sqlite_fail(kv, src, "exists");
}

/* The count or the total cost (kv_totals.c), inside a read transaction of its own unless one
 * is open. */
static int totals(yyc_kv *kv, bool want_cost, int64_t *out) {
    if (YYC__MISUSE(kv == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = 0;
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK) return rc;
    bool own = sqlite3_get_autocommit(kv->db);
    if (own) {
        int src = sqlite3_exec(kv->db, "begin;", NULL, NULL, NULL);
        if (src != SQLITE_OK) return yyc__kv_sqlite_fail(kv, src, "begin a read");
    }
    int64_t count = 0, cost = 0;
    rc = yyc__kv_totals_read(kv, &count, &cost);
    if (own) {
        if (kv->db && !sqlite3_get_autocommit(kv->db) &&
            sqlite3_exec(kv->db, "commit;", NULL, NULL, NULL) != SQLITE_OK)
            rollback(kv);
    }
    if (rc == YYC_OK) *out = want_cost ? cost : count;
    return rc;
}

int yyc_kv_count(yyc_kv *kv, int64_t *out) { return totals(kv, false, out); }

int yyc_kv_size(yyc_kv *kv, int64_t *out) { return totals(kv, true, out); }
