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
 */
/* sqlite3.h declares the preupdate hook only with this macro. The functions are referenced
 * weakly below and used only when the linked SQLite has them (old_row_hook_available). */
#ifndef SQLITE_ENABLE_PREUPDATE_HOOK
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#endif
#include "internal.h"

#include "fs_util.h"
#include "kv_private.h"
#include "crc32c.h"
#include "stmt_cache.h"

#include <bsd/stdlib.h> /* arc4random_buf */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <md5.h>
#include <stddef.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#pragma weak sqlite3_preupdate_hook
#pragma weak sqlite3_preupdate_old

/* --- layout and SQL (a file-format contract: spec 2.1, 2.2, 2.5) --- */

#define MANIFEST_NAME "manifest.sqlite"
#define TEXT_OF_(x) #x
#define TEXT_OF(x) TEXT_OF_(x)
#define WAL_LIMIT_TEXT TEXT_OF(YYC__KV_WAL_LIMIT_BYTES)
#define DATA_DIR "data"
#define TRASH_DIR "trash"

/* YYKVStorage's initialization script, byte for byte in effect. */
#define SQL_INIT                                                                              \
    "pragma journal_mode = wal; pragma synchronous = normal; "                                \
    "create table if not exists manifest (key text, filename text, size integer, "            \
    "inline_data blob, modification_time integer, last_access_time integer, "                 \
    "extended_data blob, primary key(key)); "                                                 \
    "create index if not exists last_access_time_idx on manifest(last_access_time);"

#define COLS_FULL "key, filename, size, inline_data, modification_time, last_access_time, extended_data"
#define COLS_INFO "key, filename, size, NULL, modification_time, last_access_time, extended_data"

#define SQL_SCHEMA_CHECK "select rowid, " COLS_FULL " from manifest limit 0;"

/* Beyond YYKVStorage: a CRC-32C of each value, in a column YYKVStorage neither reads nor writes
 * (its statements name their columns, so its saves leave it NULL: such rows are not checked).
 * Added to existing manifests at open; if that fails, the storage works without it. */
#define CRC_COLUMN "value_crc32c"
#define SQL_CRC_CHECK "select " CRC_COLUMN " from manifest limit 0;"
#define SQL_CRC_ADD "alter table manifest add column " CRC_COLUMN " integer;"
/* The same for the extended data: NULL when the row has none (or was written without it). The
 * storage uses the checksums only when the manifest has both columns. */
#define EXT_CRC_COLUMN "extended_crc32c"
#define SQL_EXT_CRC_CHECK "select " EXT_CRC_COLUMN " from manifest limit 0;"
#define SQL_EXT_CRC_ADD "alter table manifest add column " EXT_CRC_COLUMN " integer;"

#define SQL_UPSERT                                                                            \
    "insert or replace into manifest (key, filename, size, inline_data, modification_time, " \
    "last_access_time, extended_data) values (?1, ?2, ?3, ?4, ?5, ?6, ?7);"
#define SQL_UPSERT_CRC                                                                        \
    "insert or replace into manifest (key, filename, size, inline_data, modification_time, " \
    "last_access_time, extended_data, " CRC_COLUMN ", " EXT_CRC_COLUMN ") "                  \
    "values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9);"
#define SQL_TOUCH "update manifest set last_access_time = ?1 where key = ?2;"
#define SQL_DELETE "delete from manifest where key = ?1;"
/* Deletions: candidate rows are listed (rowid, filename, size) and deleted by rowid, in one
 * write transaction under the folder lock (delete_rows), whatever their key holds (NULL, a
 * BLOB...). */
#define ROWS_HEAD "select rowid, filename, size from manifest "
#define SQL_ROWS_KEY ROWS_HEAD "where key = ?1;"
#define SQL_ROWS_KEYS_IN ROWS_HEAD "where key in ("
#define SQL_ROWS_LARGER ROWS_HEAD "where size > ?1;"
#define SQL_ROWS_EARLIER ROWS_HEAD "where last_access_time < ?1;"
#define SQL_ROWS_LRU ROWS_HEAD "order by last_access_time asc, rowid asc;"
#define SQL_DELETE_ROWID "delete from manifest where rowid = ?1;"
/* Item rows: COLS_FULL / COLS_INFO, then the value's and the extended data's checksums (NULL
 * without the columns; an info row never checks the value, which it does not read). */
#define CRCS_FULL CRC_COLUMN ", " EXT_CRC_COLUMN
#define CRCS_INFO "NULL, " EXT_CRC_COLUMN
#define SQL_GET_ITEM "select " COLS_FULL ", NULL, NULL from manifest where key = ?1;"
#define SQL_GET_ITEM_CRC "select " COLS_FULL ", " CRCS_FULL " from manifest where key = ?1;"
#define SQL_GET_INFO "select " COLS_INFO ", NULL, NULL from manifest where key = ?1;"
#define SQL_GET_INFO_CRC "select " COLS_INFO ", " CRCS_INFO " from manifest where key = ?1;"
/* Heads of the `key in (...)` lists of the same rows. */
#define SQL_ITEMS_IN "select " COLS_FULL ", NULL, NULL from manifest where key in ("
#define SQL_ITEMS_IN_CRC "select " COLS_FULL ", " CRCS_FULL " from manifest where key in ("
#define SQL_INFOS_IN "select " COLS_INFO ", NULL, NULL from manifest where key in ("
#define SQL_INFOS_IN_CRC "select " COLS_INFO ", " CRCS_INFO " from manifest where key in ("
#define SQL_GET_VALUE                                                                         \
    "select filename, size, inline_data, last_access_time, NULL from manifest where key = ?1;"
#define SQL_GET_VALUE_CRC                                                                     \
    "select filename, size, inline_data, last_access_time, " CRC_COLUMN                      \
    " from manifest where key = ?1;"
#define SQL_GET_FILENAME "select filename from manifest where key = ?1;"
#define SQL_EXISTS "select 1 from manifest where key = ?1 limit 1;"
/* The total cost: yyc_cost_total (cost_total_step) sums the sizes that are positive integers (a
 * hostile row's NULL, text, real or negative size costs nothing) and saturates at INT64_MAX
 * instead of failing on overflow as sum() does. */
#define SQL_SUM "select yyc_cost_total(size) from manifest;"
#define SQL_COUNT "select count(*) from manifest;"

/* --- the object --- */

/* Invariants: db != NULL iff the manifest connection is open, and then stmts belongs to db;
 * root_fd is the storage folder for the object's whole life; data_fd is data/ (-1 only while it
 * could not be recreated); data_checked only while lock_depth > 0; save_dir_fd is -1 outside
 * yyc_kv_save; an item handed out is one malloc block. */
struct yyc_kv {
    char *path;    /* as given to open */
    char *db_path; /* path/manifest.sqlite */
    yyc_kv_type type;
    int root_fd;
    int data_fd;
    dev_t data_dev; /* identity of the folder data_fd was opened on */
    ino_t data_ino;
    /* data_fd was checked against data/ since the folder lock was taken: data/ is only replaced
     * under that lock, so it stays valid until the lock is released. */
    bool data_checked;
    /* The descriptor a save in progress wrote its temporary file through (-1: none). Reopening
     * data/ meanwhile leaves it open: the save closes it. */
    int save_dir_fd;
    sqlite3 *db;
    yyc__stmt_cache stmts;
    int busy_timeout_ms;
    /* Lazy reopen (spec 2.3). */
    int open_error_count;
    double last_open_error_time;
    int max_open_retries;
    double retry_interval;
    int fail_opens;       /* testing: opens left to fail */
    bool rebuild_pending; /* SQLITE_CORRUPT seen on an open connection: rebuild on next use */
    bool has_crc;         /* the manifest has both checksum columns */
    /* A save learns the file name of the row it replaces from SQLite's preupdate hook, in the
     * upsert itself, instead of looking it up first (old_row_hook). */
    bool use_old_row_hook;     /* the hook is available and the columns below were found */
    bool no_old_row_hook;      /* testing: always look up */
    int col_key, col_filename; /* column numbers in manifest */
    const char *hook_key;      /* the key being saved, while the upsert steps (else NULL) */
    bool old_row_failed;       /* the hook could not read the replaced row */
    char old_filename[256];    /* the replaced row's file name; "" when none (or not valid) */
    int lock_depth;       /* folder_lock nesting */
    bool quiet_corrupt;   /* a first, unlocked read: a damaged value is only suspected */
    bool quiet_full;      /* a deletion that will be retried: its ENOSPC is not reported */
    bool reserve_gone;    /* the space reserve was released (or never made): remake it */
#ifdef YYC_TESTING
    int fail_flock; /* testing: the next folder lock fails with this errno (0: none) */
#endif
    /* Reporting. */
    yyc_error_hook hook;
    void *hook_ctx;
    bool logs;
    bool probing;           /* opening: a corrupt manifest is only recorded (the rebuild reports) */
    bool has_pending_event; /* a corruption event happened before any hook was set */
    yyc_error pending_event;
};

/* A row get_many found damaged or without its file (read again under the lock). */
typedef struct lru_row {
    char *key;
    char *filename; /* NULL when inline (or the name is unusable) */
    int64_t size;
} lru_row;

/* --- private prototypes --- */

static int report(yyc_kv *kv, bool record, int code, int sqlite_code, int sys_errno,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int sqlite_fail(yyc_kv *kv, int rc, const char *what);
static int errno_fail(yyc_kv *kv, int err, const char *what);
static int db_check(yyc_kv *kv);
static void db_close(yyc_kv *kv);
static int db_open_or_rebuild(yyc_kv *kv);
static int rebuild_in_place(yyc_kv *kv);
static int compact(yyc_kv *kv);
static void schedule_trash_empty(yyc_kv *kv, bool sweep_data);
static int open_data_dir(yyc_kv *kv);
static int flock_bounded(int fd, int timeout_ms);
static void reserve_make(yyc_kv *kv);
static void checkpoint_truncate(yyc_kv *kv);
static int folder_lock(yyc_kv *kv) __attribute__((warn_unused_result));
static void folder_unlock(yyc_kv *kv);
static int prepare(yyc_kv *kv, const char *sql, sqlite3_stmt **out);
static int delete_row(yyc_kv *kv, const char *key);
static int step_learning_old_row(yyc_kv *kv, sqlite3_stmt *s, const char *key, const char *what);
typedef struct file_ref file_ref;
static void file_ref_capture(yyc_kv *kv, const char *filename, file_ref *r);
static void file_ref_delete(yyc_kv *kv, file_ref *r);
static void file_ref_forget(file_ref *r);
static int64_t now_seconds(void) { return (int64_t)time(NULL); }

/* --- reporting --- */

/* Formats an error; records it as the thread's last error when `record` (the call is going to
 * return it), sends it to the hook, and prints it when logs are on. Returns code. */
static int report(yyc_kv *kv, bool record, int code, int sqlite_code, int sys_errno,
                  const char *fmt, ...) {
    yyc_error e = {.code = code, .sqlite_code = sqlite_code, .sys_errno = sys_errno};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    if (record) yyc__error(code, sqlite_code, sys_errno, "%s", e.message);
    if ((kv->probing || kv->quiet_corrupt) && code == YYC_ECORRUPT) return code;
    if (kv->quiet_full && code == YYC_ENOSPC) return code;
    if (kv->logs) {
        fprintf(stderr, "yycache: kv storage: %s (%s, sqlite %d, errno %d)\n", e.message,
                yyc_status_name(code), sqlite_code, sys_errno);
    }
    if (kv->hook) {
        /* A library call in the hook that fails must not replace the error this call is
         * about to return. */
        yyc_error saved;
        yyc_last_error(&saved);
        kv->hook(kv->hook_ctx, &e);
        yyc__error_restore(&saved);
    } else if (code == YYC_ECORRUPT) {
        kv->pending_event = e; /* delivered when a hook is set */
        kv->has_pending_event = true;
    }
    return code;
}

static int errno_status(int err) {
    int s = yyc__status_from_errno(err);
    return s == YYC_NOTFOUND ? YYC_EIO : s;
}

static int errno_fail(yyc_kv *kv, int err, const char *what) {
    return report(kv, true, errno_status(err), 0, err, "%s: %s", what, strerror(err));
}

/* Whether a failed manifest write is explained by a full file system or by the process's
 * file-size limit (RLIMIT_FSIZE) being reached by the database or its WAL. */
static bool manifest_looks_full(yyc_kv *kv) {
    struct statvfs sv;
    if (fstatvfs(kv->root_fd, &sv) == 0 && sv.f_bavail == 0) return true;
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return false;
    static const char *const names[] = {MANIFEST_NAME, MANIFEST_NAME "-wal"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        struct stat st;
        /* Within two WAL frames of the largest page size of the limit. */
        if (fstatat(kv->root_fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            (uint64_t)st.st_size + 2 * (65536 + 24) >= (uint64_t)rl.rlim_cur)
            return true;
    }
    return false;
}

static int status_from_sqlite(yyc_kv *kv, int rc, int sys_errno) {
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return YYC_EBUSY;
    case SQLITE_FULL: return YYC_ENOSPC;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return YYC_ECORRUPT;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH: return YYC_EPERM;
    case SQLITE_TOOBIG: return YYC_ETOOBIG;
    case SQLITE_NOMEM: return YYC_ENOMEM;
    case SQLITE_CANTOPEN:
        if (sys_errno == EACCES || sys_errno == EPERM || sys_errno == EROFS) return YYC_EPERM;
        if (faccessat(kv->root_fd, ".", W_OK, AT_EACCESS) != 0) return YYC_EPERM;
        return YYC_EIO;
    case SQLITE_IOERR:
        if (sys_errno == ENOSPC || sys_errno == EFBIG || sys_errno == EDQUOT) return YYC_ENOSPC;
        if (sys_errno == EACCES || sys_errno == EPERM || sys_errno == EROFS) return YYC_EPERM;
        /* SQLite reports a write that hit RLIMIT_FSIZE (EFBIG) as SQLITE_IOERR_WRITE, and its
         * saved errno is often already overwritten (unixGetLastError reads errno late). */
        if (manifest_looks_full(kv)) return YYC_ENOSPC;
        return YYC_EIO;
    default: return YYC_ESQLITE;
    }
}

/* Maps an SQLite failure to a status, records and reports it. Corruption of an open manifest
 * schedules a rebuild at the next call. */
static int sqlite_fail(yyc_kv *kv, int rc, const char *what) {
    int ext = kv->db ? sqlite3_extended_errcode(kv->db) : rc;
    if ((ext & 0xff) != (rc & 0xff)) ext = rc;
    int sys = kv->db ? sqlite3_system_errno(kv->db) : 0;
    int code = status_from_sqlite(kv, rc, sys);
    if (code == YYC_ECORRUPT && kv->db) kv->rebuild_pending = true;
    return report(kv, true, code, ext, sys, "%s: %s", what, sqlite3_errstr(rc));
}

/* --- the manifest connection --- */

static void db_close(yyc_kv *kv) {
    if (!kv->db) return;
    yyc__stmt_cache_clear(&kv->stmts);
    if (sqlite3_close(kv->db) != SQLITE_OK) {
        /* Only an ad-hoc statement left behind by a bug can cause this: finalize and retry. */
        sqlite3_stmt *s;
        while ((s = sqlite3_next_stmt(kv->db, NULL)) != NULL) sqlite3_finalize(s);
        sqlite3_close_v2(kv->db);
    }
    kv->db = NULL;
}

/* Whether the manifest has a checksum column (check_sql selects it), adding it (add_sql) when
 * missing. */
static bool ensure_crc_column(sqlite3 *db, const char *check_sql, const char *add_sql) {
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, check_sql, -1, &s, NULL);
    sqlite3_finalize(s);
    if (rc == SQLITE_OK) return true;
    if (sqlite3_exec(db, add_sql, NULL, NULL, NULL) == SQLITE_OK) return true;
    /* Another process may have added it meanwhile. */
    s = NULL;
    rc = sqlite3_prepare_v2(db, check_sql, -1, &s, NULL);
    sqlite3_finalize(s);
    return rc == SQLITE_OK;
}

/* Whether the linked SQLite has the preupdate hook (weak references: NULL when absent). */
static bool old_row_hook_available(void) {
    return sqlite3_preupdate_hook != NULL && sqlite3_preupdate_old != NULL &&
           sqlite3_compileoption_used("ENABLE_PREUPDATE_HOOK");
}

/* The column numbers of key and filename in manifest (any order: the schema check only names
 * them). Returns false if either is missing. */
static bool find_manifest_columns(sqlite3 *db, int *key_col, int *name_col) {
    *key_col = *name_col = -1;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "select * from manifest limit 0;", -1, &s, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return false;
    }
    for (int i = 0; i < sqlite3_column_count(s); i++) {
        const char *name = sqlite3_column_name(s, i);
        if (!name) continue;
        if (!sqlite3_stricmp(name, "key")) *key_col = i;
        if (!sqlite3_stricmp(name, "filename")) *name_col = i;
    }
    sqlite3_finalize(s);
    return *key_col >= 0 && *name_col >= 0;
}

/* The aggregate yyc_cost_total(size): see SQL_SUM. */
static void cost_total_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    int64_t *sum = sqlite3_aggregate_context(ctx, sizeof *sum);
    if (!sum) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) return;
    int64_t v = sqlite3_value_int64(argv[0]);
    if (v > 0) *sum = *sum > INT64_MAX - v ? INT64_MAX : *sum + v;
}

static void cost_total_final(sqlite3_context *ctx) {
    int64_t *sum = sqlite3_aggregate_context(ctx, 0);
    sqlite3_result_int64(ctx, sum ? *sum : 0);
}

/* Runs a query of the schema that returns at most one row: SQLITE_ROW (a row), SQLITE_DONE
 * (none), or the error of the look-up. */
static int schema_query(sqlite3 *db, const char *sql, sqlite3_stmt **out) {
    int rc = sqlite3_prepare_v2(db, sql, -1, out, NULL);
    if (rc != SQLITE_OK) return rc;
    return sqlite3_step(*out);
}

/* Decides whether the manifest's schema is not YYKVStorage's (init_rc: the result of SQL_INIT):
 * *foreign, with what naming the offending object. Returns SQLITE_OK when decided, else the
 * SQLite error that kept it from looking (busy, out of memory, I/O: no verdict - a transient
 * failure must never get a healthy manifest rebuilt). */
static int check_foreign_schema(sqlite3 *db, int init_rc, bool *foreign, char *what,
                                size_t size) {
    char init_error[120] = "";
    if (init_rc == SQLITE_ERROR) snprintf(init_error, sizeof init_error, "%s", sqlite3_errmsg(db));
    *foreign = false;
    sqlite3_stmt *s = NULL;
    int rc = schema_query(db,
                          "select type, name from sqlite_master where name = 'manifest' "
                          "collate nocase and type <> 'table' limit 1;",
                          &s);
    if (rc == SQLITE_ROW) {
        snprintf(what, size, "the %s named %s", (const char *)sqlite3_column_text(s, 0),
                 (const char *)sqlite3_column_text(s, 1));
        *foreign = true;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return rc;
    if (*foreign) return SQLITE_OK;
    s = NULL;
    rc = sqlite3_prepare_v2(db, SQL_SCHEMA_CHECK, -1, &s, NULL);
    sqlite3_finalize(s);
    if (rc == SQLITE_ERROR) { /* (no such table or column) */
        snprintf(what, size, "table manifest lacks YYKVStorage's columns");
        *foreign = true;
        return SQLITE_OK;
    }
    if (rc != SQLITE_OK) return rc;
    s = NULL;
    rc = schema_query(db,
                      "select 1 from pragma_table_info('manifest') where name in "
                      "('rowid', '_rowid_', 'oid') collate nocase;",
                      &s);
    sqlite3_finalize(s);
    if (rc == SQLITE_ROW) {
        snprintf(what, size, "table manifest has a column named rowid");
        *foreign = true;
        return SQLITE_OK;
    }
    if (rc != SQLITE_DONE) return rc;
    if (init_rc == SQLITE_ERROR) {
        snprintf(what, size, "%s", init_error);
        *foreign = true;
    }
    return SQLITE_OK;
}

/* Opens and initializes the manifest once. Returns YYC_OK or a recorded error; YYC_ECORRUPT
 * means the file is not a usable manifest (the caller rebuilds). */
static int db_open_once(yyc_kv *kv) {
    if (kv->fail_opens > 0) {
        kv->fail_opens--;
        return report(kv, true, YYC_EIO, 0, 0, "open manifest: injected failure");
    }
    /* Create the manifest ourselves: 0600, and never through a link. SQLite gives the -wal and
     * -shm files the database file's permissions. */
    for (int attempt = 0;; attempt++) {
        int fd = openat(kv->root_fd, MANIFEST_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
                        0600);
        if (fd >= 0) {
            close(fd);
            break;
        }
        int err = errno;
        if (err == ELOOP && attempt == 0 && unlinkat(kv->root_fd, MANIFEST_NAME, 0) == 0) {
            continue; /* a planted link: remove the link, never its target */
        }
        if (err == EISDIR) return report(kv, true, YYC_ECORRUPT, 0, err, "manifest is a folder");
        return errno_fail(kv, err, "create manifest");
    }
    /* Links planted as the -wal or -shm file would make every open fail (SQLite refuses them
     * with SQLITE_OPEN_NOFOLLOW): remove the links themselves, never their targets. */
    static const char *const side_files[] = {MANIFEST_NAME "-wal", MANIFEST_NAME "-shm"};
    for (size_t i = 0; i < sizeof side_files / sizeof *side_files; i++) {
        struct stat st;
        if (fstatat(kv->root_fd, side_files[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(st.st_mode))
            unlinkat(kv->root_fd, side_files[i], 0);
    }
    sqlite3 *db = NULL;
    /* NOMUTEX: the owner serialises every call (yyc_kv is single-threaded and yyc_diskcache
     * holds its mutex around each call), so SQLite's own mutexes would be pure overhead. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
#ifdef SQLITE_OPEN_NOFOLLOW
    flags |= SQLITE_OPEN_NOFOLLOW;
#endif
    int rc = sqlite3_open_v2(kv->db_path, &db, flags, NULL);
    if (rc != SQLITE_OK) {
        int sys = db ? sqlite3_system_errno(db) : 0;
        int ext = db ? sqlite3_extended_errcode(db) : rc;
        sqlite3_close(db);
        return report(kv, true, status_from_sqlite(kv, rc, sys), ext, sys, "open manifest: %s",
                      sqlite3_errstr(rc));
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, kv->busy_timeout_ms);
    rc = sqlite3_create_function_v2(db, "yyc_cost_total", 1,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, NULL,
                                    NULL, cost_total_step, cost_total_final, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_close(db);
        return report(kv, true, YYC_ENOMEM, rc, 0, "register the cost sum");
    }
    /* Switching a new database to WAL (or creating the table) while another process does the
     * same can fail with SQLITE_BUSY at once: SQLite skips the busy handler where waiting could
     * deadlock. The script is idempotent, so retry it until the busy timeout has passed. */
    double deadline = yyc__monotonic_now() + kv->busy_timeout_ms / 1000.0;
    for (unsigned attempt = 0;; attempt++) {
        rc = sqlite3_exec(db, SQL_INIT, NULL, NULL, NULL);
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
        if (yyc__monotonic_now() >= deadline) break;
        usleep(1000u + (attempt < 6 ? 1000u << attempt : 50000u)); /* 2 ms .. 51 ms */
    }
    if (rc == SQLITE_OK || rc == SQLITE_ERROR) {
        /* A foreign schema - a view, index or trigger named manifest, a table named manifest
         * without YYKVStorage's columns or with a column named rowid, or anything else that
         * makes the (valid, idempotent) script fail with SQLITE_ERROR - is as unusable as
         * garbage: reported as corrupt, so that the caller rebuilds it. */
        char what[160];
        bool foreign;
        int crc = check_foreign_schema(db, rc, &foreign, what, sizeof what);
        if (crc != SQLITE_OK) {
            int sys = sqlite3_system_errno(db);
            sqlite3_close(db);
            return report(kv, true, status_from_sqlite(kv, crc, sys), crc, sys,
                          "check the manifest's schema: %s", sqlite3_errstr(crc));
        }
        if (foreign) {
            sqlite3_close(db);
            return report(kv, true, YYC_ECORRUPT, SQLITE_ERROR, 0,
                          "manifest has a foreign schema: %s", what);
        }
    }
    if (rc != SQLITE_OK) {
        int ext = sqlite3_extended_errcode(db);
        int sys = sqlite3_system_errno(db);
        sqlite3_close(db);
        return report(kv, true, status_from_sqlite(kv, rc, sys), ext, sys,
                      "initialize manifest: %s", sqlite3_errstr(rc));
    }
    /* Cap the WAL: after each checkpoint that lets it restart, SQLite truncates it to this
     * instead of keeping its high-water mark (per connection, not stored in the file). */
    sqlite3_exec(db, "pragma journal_size_limit = " WAL_LIMIT_TEXT ";", NULL, NULL, NULL);
    /* Deleted rows are zeroed where that costs no extra page writes (SQLite may be built with
     * SECURE_DELETE, which also rewrites every freed page): a delete then needs only a few WAL
     * frames, which matters most on a full disk (see delete_rows). */
    sqlite3_exec(db, "pragma secure_delete = fast;", NULL, NULL, NULL);
    kv->has_crc = ensure_crc_column(db, SQL_CRC_CHECK, SQL_CRC_ADD) &&
                  ensure_crc_column(db, SQL_EXT_CRC_CHECK, SQL_EXT_CRC_ADD);
    kv->use_old_row_hook = !kv->no_old_row_hook && old_row_hook_available() &&
                           find_manifest_columns(db, &kv->col_key, &kv->col_filename);
    kv->db = db;
    yyc__stmt_cache_init(&kv->stmts, db);
    kv->rebuild_pending = false;
    return YYC_OK;
}

/* Opens the manifest; a corrupt one (and only a corrupt one) is rebuilt empty in place
 * (rebuild_in_place), with the data it described, and the event is reported. */
static int db_open_or_rebuild(yyc_kv *kv) {
    kv->probing = true;
    int rc = db_open_once(kv);
    kv->probing = false;
    if (rc != YYC_ECORRUPT) return rc;
    yyc_error first;
    yyc_last_error(&first);
    rc = rebuild_in_place(kv);
    if (rc == YYC_OK) rc = db_open_once(kv);
    if (rc != YYC_OK) return rc;
    report(kv, true, YYC_ECORRUPT, first.sqlite_code, first.sys_errno,
           "manifest was corrupt (%s): rebuilt empty in place", first.message);
    return YYC_OK;
}

/* Every operation starts here (spec 2.3): an open connection proceeds; a closed one is reopened
 * at most max_open_retries times in a row, retry_interval seconds apart. */
static int db_check(yyc_kv *kv) {
    if (kv->rebuild_pending) {
        /* SQLite reported corruption on the open manifest: it cannot be trusted any more (its
         * first page may still look fine, so probing it again would not tell). */
        kv->rebuild_pending = false;
        kv->open_error_count = 0;
        kv->last_open_error_time = 0;
        int rc = rebuild_in_place(kv);
        if (rc != YYC_OK) {
            kv->rebuild_pending = true; /* (busy, say: the next call tries again) */
            return rc;
        }
        report(kv, false, YYC_ECORRUPT, SQLITE_CORRUPT, 0,
               "manifest was corrupt: rebuilt empty in place");
    }
    if (kv->data_fd < 0) {
        int err = open_data_dir(kv);
        if (err) return errno_fail(kv, err, "open data folder");
    }
    if (kv->db) return YYC_OK;
    double now = yyc__monotonic_now();
    if (kv->open_error_count >= kv->max_open_retries ||
        (kv->open_error_count > 0 && now - kv->last_open_error_time < kv->retry_interval)) {
        return report(kv, true, YYC_ECLOSED, 0, 0, "manifest closed: reopen limit reached");
    }
    int rc = db_open_or_rebuild(kv);
    if (rc != YYC_OK) {
        kv->open_error_count++;
        kv->last_open_error_time = yyc__monotonic_now();
        return rc;
    }
    kv->open_error_count = 0;
    kv->last_open_error_time = 0;
    return YYC_OK;
}

/* The cached statement for sql; caller has passed db_check. */
static int prepare_checked(yyc_kv *kv, const char *sql, sqlite3_stmt **out) {
    int src = yyc__stmt_cache_get(&kv->stmts, sql, out);
    if (src != SQLITE_OK) return sqlite_fail(kv, src, "prepare");
    return YYC_OK;
}

static int prepare(yyc_kv *kv, const char *sql, sqlite3_stmt **out) {
    *out = NULL;
    int rc = db_check(kv);
    if (rc != YYC_OK) return rc;
    return prepare_checked(kv, sql, out);
}

/* Prepares sql_crc when the manifest has the checksum columns, else sql_plain. One db_check:
 * it runs first because it may (re)open the manifest, which sets has_crc. */
static int prepare2(yyc_kv *kv, const char *sql_plain, const char *sql_crc, sqlite3_stmt **out,
                    bool *with_crc) {
    *out = NULL;
    int rc = db_check(kv);
    if (rc != YYC_OK) return rc;
    *with_crc = kv->has_crc;
    return prepare_checked(kv, *with_crc ? sql_crc : sql_plain, out);
}

/* Binds a key with its length. SQLITE_STATIC is safe: SQLite reads a bound value only while
 * the statement steps, every statement is reset before the call that bound it returns, and
 * every use of a cached statement binds all of its parameters again before stepping. */
static int bind_key(sqlite3_stmt *s, int idx, const char *key) {
    return sqlite3_bind_text64(s, idx, key, strlen(key), SQLITE_STATIC, SQLITE_UTF8);
}

/* Steps a statement that returns no row (or whose rows are ignored) and gives it back. */
static int step_done(yyc_kv *kv, sqlite3_stmt *s, const char *what) {
    int rc = sqlite3_step(s);
    while (rc == SQLITE_ROW) rc = sqlite3_step(s);
    int out = rc == SQLITE_DONE ? YYC_OK : sqlite_fail(kv, rc, what);
    yyc__stmt_done(s);
    return out;
}

/* --- trash (spec 2.7) --- */

/* Temporary value files older than this, left in data/ by a process that died mid-write, are
 * removed in the background after an open. Younger ones may belong to a write in progress (in
 * another process sharing the folder). */
#define STALE_TEMP_SECONDS (15 * 60)

/* Files in data/ that no row names and that are older than this (a crash between a file write
 * and its row, or between a row delete and its file delete) are removed after an open. Younger
 * ones may belong to a save in progress (in another process sharing the folder). */
#define ORPHAN_GRACE_SECONDS 60

typedef struct trash_job {
    int trash_fd;
    int root_fd;   /* the folder, for the folder lock (-1: none) */
    int data_fd;   /* -1: no sweep of data/ */
    char *db_path; /* for the orphan sweep (NULL: none) */
} trash_job;

/* Removes the files of data/ that no manifest row names. Runs on the worker thread with its
 * own read-only connection; every candidate is checked once more against the live manifest
 * just before it is unlinked. Best effort: any failure just stops the sweep. */
static void remove_orphans(int root_fd, int data_fd, const char *db_path) {
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX;
#ifdef SQLITE_OPEN_NOFOLLOW
    flags |= SQLITE_OPEN_NOFOLLOW;
#endif
    if (sqlite3_open_v2(db_path, &db, flags, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return;
    }
    sqlite3_busy_timeout(db, 1000);
    time_t cutoff = time(NULL) - ORPHAN_GRACE_SECONDS;
    yyc__lru_map names;
    yyc__lru_map_init(&names);
    sqlite3_stmt *all = NULL, *one = NULL;
    bool ok = sqlite3_prepare_v2(db, "select filename from manifest where filename is not null;",
                                 -1, &all, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(db, "select 1 from manifest where filename = ?1 limit 1;", -1,
                                 &one, NULL) == SQLITE_OK;
    int rc = SQLITE_DONE;
    while (ok && (rc = sqlite3_step(all)) == SQLITE_ROW) {
        const void *name = sqlite3_column_text(all, 0);
        bool inserted;
        if (name && !yyc__lru_map_find_or_insert(&names, name, (size_t)sqlite3_column_bytes(all, 0),
                                                 &inserted))
            ok = false;
    }
    if (rc != SQLITE_DONE) ok = false;
    sqlite3_reset(all);
    int dfd = ok ? openat(data_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d && dfd >= 0) close(dfd);
    struct dirent *e;
    size_t plen = strlen(YYC__FS_TEMP_PREFIX);
    while (d && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (!strcmp(name, ".") || !strcmp(name, "..") || !strncmp(name, YYC__FS_TEMP_PREFIX, plen))
            continue;
        struct stat st;
        if (fstatat(data_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(st.st_mode) || st.st_mtime >= cutoff) continue;
        if (yyc__lru_map_find(&names, name, strlen(name))) continue;
        /* The final check and the unlink under the folder lock (our own open file description
         * of the folder, so it excludes this process's storage too): no save can rename a new
         * file into place under this name in between. */
        if (root_fd >= 0 && flock_bounded(root_fd, 1000) != 0) break; /* (busy: next open) */
        struct stat now;
        sqlite3_bind_text(one, 1, name, -1, SQLITE_STATIC);
        rc = sqlite3_step(one);
        sqlite3_reset(one);
        sqlite3_clear_bindings(one);
        if (rc == SQLITE_DONE && fstatat(data_fd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
            now.st_dev == st.st_dev && now.st_ino == st.st_ino)
            unlinkat(data_fd, name, 0); /* a link is removed, not followed */
        if (root_fd >= 0) flock(root_fd, LOCK_UN);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW) break;
    }
    if (d) closedir(d);
    sqlite3_finalize(all);
    sqlite3_finalize(one);
    yyc__lru_map_destroy(&names);
    sqlite3_close(db);
}

static void empty_trash_job(void *arg) {
    trash_job *job = arg;
    yyc__fs_empty_dir(job->trash_fd);
    close(job->trash_fd);
    if (job->data_fd >= 0) {
        yyc__fs_remove_stale_temps(job->data_fd, STALE_TEMP_SECONDS);
        if (job->db_path) remove_orphans(job->root_fd, job->data_fd, job->db_path);
        close(job->data_fd);
    }
    if (job->root_fd >= 0) close(job->root_fd);
    free(job->db_path);
    free(job);
}

/* Empties trash/ on the worker thread (inline if the job cannot be queued). With sweep_data
 * (after an open) it also removes stale temporary files and unreferenced files from data/.
 * The job holds its own descriptors, so it never follows a link and needs nothing from kv. */
static void schedule_trash_empty(yyc_kv *kv, bool sweep_data) {
    int tfd;
    if (yyc__fs_open_subdir(kv->root_fd, TRASH_DIR, &tfd) != 0) return;
    trash_job *job = calloc(1, sizeof *job);
    if (!job) {
        yyc__fs_empty_dir(tfd);
        close(tfd);
        return;
    }
    job->trash_fd = tfd;
    job->data_fd = -1;
    job->root_fd = -1;
    if (sweep_data && kv->data_fd >= 0) {
        job->data_fd = openat(kv->data_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        job->root_fd = openat(kv->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        job->db_path = strdup(kv->db_path); /* NULL (out of memory): no orphan sweep */
    }
    if (yyc__worker_async(YYC__QUEUE_DISK, kv, empty_trash_job, job) != YYC_OK) empty_trash_job(job);
}

/* (Re)opens data/ and remembers its identity. */
static int open_data_dir(yyc_kv *kv) {
    if (kv->data_fd >= 0 && kv->data_fd != kv->save_dir_fd) close(kv->data_fd);
    kv->data_fd = -1;
    kv->data_checked = false;
    int err = yyc__fs_open_subdir(kv->root_fd, DATA_DIR, &kv->data_fd);
    if (err) return err;
    struct stat st;
    if (fstat(kv->data_fd, &st) == 0) {
        kv->data_dev = st.st_dev;
        kv->data_ino = st.st_ino;
        kv->data_checked = kv->lock_depth > 0;
    }
    return 0;
}

/* The descriptor of the current data/ folder, reopened when data/ was replaced since (by
 * another process's remove-all, or by anything else: a file or a link in its place), so a
 * value is never written into a folder that went to the trash. -1 if it cannot be opened.
 * Checked once per hold of the folder lock (data/ is only replaced under it), else every time. */
static int data_dir(yyc_kv *kv) {
    if (kv->data_fd >= 0 && kv->data_checked) return kv->data_fd;
    struct stat st;
    if (kv->data_fd >= 0 && fstatat(kv->root_fd, DATA_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode) && st.st_dev == kv->data_dev && st.st_ino == kv->data_ino) {
        kv->data_checked = kv->lock_depth > 0;
        return kv->data_fd;
    }
    open_data_dir(kv);
    return kv->data_fd;
}

/* Moves data/ to trash/<UUID> and recreates it; if the move fails, empties data/ in place.
 * With delete_now the moved folder is also emptied and removed before returning (a full disk:
 * the space is needed now), else the trash job does it later. Always under the folder lock
 * (taken here; it nests), so that data/ is never replaced while a save holding the lock moves
 * its file in (save_locked relies on it). */
static void move_data_to_trash(yyc_kv *kv, bool delete_now) {
    if (folder_lock(kv) != YYC_OK) return; /* (reported): data/ stays */
    int tfd = -1;
    bool moved = false;
    if (yyc__fs_open_subdir(kv->root_fd, TRASH_DIR, &tfd) == 0) {
        char uuid[37];
        yyc__fs_uuid(uuid);
        moved = renameat(kv->root_fd, DATA_DIR, tfd, uuid) == 0;
        if (moved && delete_now) yyc__fs_remove_tree_at(tfd, uuid);
        close(tfd);
    }
    if (!moved && kv->data_fd >= 0) yyc__fs_empty_dir(kv->data_fd);
    open_data_dir(kv);
    folder_unlock(kv);
}

/* Rebuilds a corrupt (or foreign) manifest empty, in place, under the folder lock: SQLite's
 * reset (SQLITE_DBCONFIG_RESET_DATABASE, then VACUUM) empties the file itself instead of
 * unlinking it as YYKVStorage's _reset did, so other connections (other processes) keep the live
 * manifest: their later writes land in it, never in an unlinked file. Then data/ goes to the
 * trash (emptied in the background). The own connection is closed first; the caller reopens it
 * (db_open_once: the table is created again). Returns YYC_OK or a recorded error (the manifest
 * and data/ are then left as they were). */
static int rebuild_in_place(yyc_kv *kv) {
    db_close(kv);
    int lrc = folder_lock(kv);
    if (lrc != YYC_OK) return lrc; /* (reported; nothing changed) */
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
#ifdef SQLITE_OPEN_NOFOLLOW
    flags |= SQLITE_OPEN_NOFOLLOW;
#endif
    int rc = sqlite3_open_v2(kv->db_path, &db, flags, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_extended_result_codes(db, 1);
        sqlite3_busy_timeout(db, kv->busy_timeout_ms);
        /* A first read joins the WAL other connections have open (a reset before any read takes
         * the file for a rollback-journal database and waits for an exclusive lock in vain),
         * and gives the schema cookie they may have cached (garbage: none, and nobody can). */
        int64_t cookie = 0;
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db, "pragma schema_version;", -1, &s, NULL) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW)
            cookie = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        rc = sqlite3_db_config(db, SQLITE_DBCONFIG_RESET_DATABASE, 1, NULL);
        if (rc == SQLITE_OK) rc = sqlite3_exec(db, "vacuum;", NULL, NULL, NULL);
        sqlite3_db_config(db, SQLITE_DBCONFIG_RESET_DATABASE, 0, NULL);
        /* The reset restarts the cookie low: move it past every value other connections may
         * have cached, or the first one that comes back to the old value would take its stale
         * schema for the new one. Then the table at once (other readers do not wait for us). */
        char sql[96];
        snprintf(sql, sizeof sql, "pragma schema_version = %lld;", (long long)cookie + 100);
        if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
        if (rc == SQLITE_OK) rc = sqlite3_exec(db, SQL_INIT, NULL, NULL, NULL);
    }
    int status = YYC_OK;
    if (rc != SQLITE_OK) {
        int ext = db ? sqlite3_extended_errcode(db) : rc;
        int sys = db ? sqlite3_system_errno(db) : 0;
        int code = status_from_sqlite(kv, rc, sys);
        /* Still unreadable after the reset (a folder in its place...): not a database at all. */
        status = report(kv, true, code == YYC_ESQLITE ? YYC_ECORRUPT : code, ext, sys,
                        "rebuild manifest in place: %s", sqlite3_errstr(rc));
    }
    sqlite3_close(db);
    if (status == YYC_OK) move_data_to_trash(kv, false);
    folder_unlock(kv);
    if (status == YYC_OK) schedule_trash_empty(kv, false);
    return status;
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
    kv->busy_timeout_ms = YYC__KV_BUSY_TIMEOUT_MS;
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
        rc = errno_fail(kv, err, "create storage folder");
        goto fail;
    }
    kv->root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (kv->root_fd < 0) {
        rc = errno_fail(kv, errno, "open storage folder");
        goto fail;
    }
    int tfd = -1;
    err = open_data_dir(kv);
    if (!err) err = yyc__fs_open_subdir(kv->root_fd, TRASH_DIR, &tfd);
    if (tfd >= 0) close(tfd);
    if (err) {
        rc = errno_fail(kv, err, "create data or trash folder");
        goto fail;
    }
    rc = db_open_or_rebuild(kv);
    if (rc != YYC_OK) goto fail;
    reserve_make(kv); /* (best effort) */
    schedule_trash_empty(kv, true); /* finish a deletion interrupted last time */
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
    db_close(kv);
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

void yyc__kv_set_busy_timeout(yyc_kv *kv, int ms) {
    kv->busy_timeout_ms = ms;
    if (kv->db) sqlite3_busy_timeout(kv->db, ms);
}

bool yyc__kv_is_open(const yyc_kv *kv) { return kv->db != NULL; }

void yyc__kv_set_reopen_policy(yyc_kv *kv, int max_tries, double interval_seconds) {
    kv->max_open_retries = max_tries;
    kv->retry_interval = interval_seconds;
}

void yyc__kv_fail_next_opens(yyc_kv *kv, int n) { kv->fail_opens = n; }

#ifdef YYC_TESTING
void yyc__kv_fail_next_folder_lock(yyc_kv *kv, int err) { kv->fail_flock = err; }
#endif

void yyc__kv_close_connection(yyc_kv *kv) { db_close(kv); }

bool yyc__kv_set_old_row_hook(yyc_kv *kv, bool on) {
    kv->no_old_row_hook = !on;
    kv->use_old_row_hook = on && kv->db && old_row_hook_available() &&
                           find_manifest_columns(kv->db, &kv->col_key, &kv->col_filename);
    return kv->use_old_row_hook;
}

void yyc__kv_checkpoint(yyc_kv *kv) { checkpoint_truncate(kv); }

int yyc__kv_wal_size(yyc_kv *kv, int64_t *out) {
    if (YYC__MISUSE(kv == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = 0;
    struct stat st;
    if (fstatat(kv->root_fd, MANIFEST_NAME "-wal", &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return YYC_OK;
        return errno_fail(kv, errno, "stat the WAL");
    }
    *out = S_ISREG(st.st_mode) ? (int64_t)st.st_size : 0;
    return YYC_OK;
}

int yyc__kv_vacuum(yyc_kv *kv) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    int rc = folder_lock(kv);
    if (rc != YYC_OK) return rc;
    rc = db_check(kv);
    if (rc == YYC_OK) rc = compact(kv);
    folder_unlock(kv);
    return rc;
}

/* --- names --- */

bool yyc_kv_filename_is_valid(const char *name) {
    if (!name) return false;
    size_t len = strnlen(name, 256);
    if (len == 0 || len > 255) return false;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return false;
    /* Reserved: the library's temporary files, which the sweeps delete by this prefix. */
    if (strncmp(name, YYC__FS_TEMP_PREFIX, strlen(YYC__FS_TEMP_PREFIX)) == 0) return false;
    return memchr(name, '/', len) == NULL;
}

void yyc_kv_md5_filename(const char *key, char out[33]) {
    MD5_CTX ctx;
    uint8_t digest[MD5_DIGEST_LENGTH];
    static const char hex[] = "0123456789abcdef";
    MD5Init(&ctx);
    if (key) MD5Update(&ctx, (const uint8_t *)key, strlen(key));
    MD5Final(digest, &ctx);
    for (int i = 0; i < MD5_DIGEST_LENGTH; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[32] = '\0';
}

/* --- small row helpers --- */

static bool key_is_empty(const char *key) { return !key || !*key; }

/* A usable file name read from the manifest, or NULL (NULL, empty, or not a single component:
 * never joined to data/). */
static const char *column_filename(sqlite3_stmt *s, int col) {
    const char *name = (const char *)sqlite3_column_text(s, col);
    return yyc_kv_filename_is_valid(name) ? name : NULL;
}

/* A data file as it was when captured. It is deleted later only if its name still refers to
 * the same file: a value that another process renamed into place under that name meanwhile
 * (between our row delete and our unlink) survives, and its row never dangles. */
typedef struct file_ref {
    char *name; /* NULL: nothing to delete */
    dev_t dev;
    ino_t ino;
} file_ref;

static void file_ref_capture(yyc_kv *kv, const char *filename, file_ref *r) {
    *r = (file_ref){0};
    if (!filename || !yyc_kv_filename_is_valid(filename)) return;
    int dfd = data_dir(kv);
    struct stat st;
    if (dfd < 0 || fstatat(dfd, filename, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    r->name = strdup(filename);
    r->dev = st.st_dev;
    r->ino = st.st_ino;
}

/* Deletes the captured file if it is still there under its name; forgets the reference. */
static void file_ref_delete(yyc_kv *kv, file_ref *r) {
    if (r->name) {
        int dfd = data_dir(kv);
        struct stat st;
        if (dfd >= 0 && fstatat(dfd, r->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            st.st_dev == r->dev && st.st_ino == r->ino)
            unlinkat(dfd, r->name, 0); /* (a replacement in this instant is not detected) */
    }
    free(r->name);
    r->name = NULL;
}

static void file_ref_forget(file_ref *r) {
    free(r->name);
    r->name = NULL;
}

/* The folder lock: an exclusive flock on the storage folder, held around every sequence that
 * changes both a row and a data file (rename + upsert, row delete + unlink, remove-all), so
 * that processes sharing the folder never interleave inside one: a row cannot end up naming a
 * file another process just deleted or replaced. Within a process the owner's mutex already
 * serialises calls; the lock is held for file renames and unlinks, not for a value's write
 * (temporary files are written before it is taken) - except in the rare save whose temporary
 * file another process's remove-all trashed in between: that one is written again under the
 * lock (save_locked). data/ itself is only ever replaced under the lock. Nests. Waits at most the
 * busy timeout for another process, then fails with YYC_EBUSY; any other failure is reported
 * too: nothing proceeds unlocked. */
/* Takes an exclusive flock on fd, waiting at most timeout_ms for another holder: flock has no
 * timed wait, so it polls (LOCK_NB) with sleeps growing from 50 us to 5 ms. Returns 0,
 * EWOULDBLOCK when another open file description still holds it at the deadline, or the errno
 * of a failure (EINTR is retried). */
static int flock_bounded(int fd, int timeout_ms) {
    double deadline = yyc__monotonic_now() + (timeout_ms > 0 ? timeout_ms : 0) / 1000.0;
    for (unsigned attempt = 0;; attempt++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
        int err = errno;
        if (err == EINTR) continue;
        if (err != EWOULDBLOCK) return err;
        if (yyc__monotonic_now() >= deadline) return EWOULDBLOCK;
        usleep(attempt < 7 ? 50u << attempt : 5000u);
    }
}

static int folder_lock(yyc_kv *kv) {
    if (kv->lock_depth > 0) {
        kv->lock_depth++;
        return YYC_OK;
    }
    int err = flock_bounded(kv->root_fd, kv->busy_timeout_ms);
#ifdef YYC_TESTING
    if (!err && kv->fail_flock) {
        flock(kv->root_fd, LOCK_UN);
        err = kv->fail_flock;
        kv->fail_flock = 0;
    }
#endif
    if (err == EWOULDBLOCK)
        return report(kv, true, YYC_EBUSY, 0, err,
                      "folder lock held by another process beyond the busy timeout");
    if (err) return errno_fail(kv, err, "lock folder");
    kv->lock_depth = 1;
    kv->data_checked = false; /* another process may have replaced data/ before we got it */
    return YYC_OK;
}

static void folder_unlock(yyc_kv *kv) {
    assert(kv->lock_depth > 0);
    if (--kv->lock_depth > 0) return;
    kv->data_checked = false;
    flock(kv->root_fd, LOCK_UN); /* (cannot fail on our own open descriptor) */
}

/* Deletes key's row. */
static int delete_row(yyc_kv *kv, const char *key) {
    sqlite3_stmt *s;
    int rc = prepare(kv, SQL_DELETE, &s);
    if (rc != YYC_OK) return rc;
    bind_key(s, 1, key);
    return step_done(kv, s, "delete row");
}

/* Drops the row of a value that is gone or damaged, then its file (if any, and unchanged).
 * Returns YYC_NOTFOUND (the caller's miss) or the error of the row delete. */
static int delete_row_and_file(yyc_kv *kv, const char *key, const char *filename) {
    file_ref f;
    file_ref_capture(kv, filename, &f);
    int rc = delete_row(kv, key);
    if (rc == YYC_OK) file_ref_delete(kv, &f);
    else file_ref_forget(&f);
    return rc == YYC_OK ? YYC_NOTFOUND : rc;
}

/* The key's current file name (a copy, NULL when inline or absent). */
static int lookup_filename(yyc_kv *kv, const char *key, char **out) {
    *out = NULL;
    sqlite3_stmt *s;
    int rc = prepare(kv, SQL_GET_FILENAME, &s);
    if (rc != YYC_OK) return rc;
    bind_key(s, 1, key);
    int src = sqlite3_step(s);
    if (src == SQLITE_ROW) {
        const char *name = column_filename(s, 0);
        if (name && !(*out = strdup(name))) rc = report(kv, true, YYC_ENOMEM, 0, ENOMEM, "copy");
    } else if (src != SQLITE_DONE) {
        rc = sqlite_fail(kv, src, "look up file name");
    }
    yyc__stmt_done(s);
    return rc;
}

static int touch(yyc_kv *kv, const char *key) {
    sqlite3_stmt *s;
    int rc = prepare(kv, SQL_TOUCH, &s);
    if (rc != YYC_OK) return rc;
    sqlite3_bind_int64(s, 1, now_seconds());
    bind_key(s, 2, key);
    return step_done(kv, s, "update access time");
}

/* --- files of values --- */

/* Opens the data file of a row for reading. Returns YYC_OK (*fd, *len), YYC_NOTFOUND when the
 * value is gone (missing, a link, not a regular file, or of another size than recorded: the
 * caller deletes the row, and the file too when *drop_file), or a recorded error. */
static int open_value_file(yyc_kv *kv, const char *filename, int64_t size, int *fd, size_t *len,
                           bool *drop_file) {
    *fd = -1;
    *len = 0;
    *drop_file = false;
    if (!filename) return YYC_NOTFOUND;
    uint64_t fsize;
    /* Outside the folder lock, data/ may have been replaced since data_fd was checked (another
     * process's remove-all): the file is opened through the current data/, resolved in the same
     * system call where the system can (no fstatat of data/ first). A miss there is retried
     * under the lock, where data_dir also repairs data/. */
    int err = kv->lock_depth == 0
                  ? yyc__fs_open_read_in(kv->root_fd, DATA_DIR, filename, fd, &fsize)
                  : ENOSYS;
    if (err == ENOSYS) {
        int dfd = data_dir(kv);
        if (dfd < 0) return YYC_NOTFOUND;
        err = yyc__fs_open_read(dfd, filename, fd, &fsize);
    }
    if (err == ENOENT) return YYC_NOTFOUND;
    if (err) return errno_fail(kv, err, "open data file");
    if (size < 0 || fsize != (uint64_t)size || fsize > SIZE_MAX) {
        close(*fd);
        *fd = -1;
        *drop_file = true;
        report(kv, false, YYC_ECORRUPT, 0, 0, "data file size differs from the manifest");
        return YYC_NOTFOUND;
    }
    *len = (size_t)fsize;
    return YYC_OK;
}

/* Reads an opened value file into buf and closes it. YYC_NOTFOUND if it shrank meanwhile. */
static int read_value_file(yyc_kv *kv, int fd, void *buf, size_t len) {
    int err = yyc__fs_read_full(fd, buf, len);
    close(fd);
    if (err == EIO) return YYC_NOTFOUND;
    if (err) return errno_fail(kv, err, "read data file");
    return YYC_OK;
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
        report(kv, false, YYC_ECORRUPT, 0, 0, "extended data does not match its checksum");
        return YYC_NOTFOUND;
    }
    if (want_value) {
        if (from_file) {
            int rc = open_value_file(kv, name, size, &fd, &value_len, drop_file);
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
        return report(kv, true, YYC_ENOMEM, 0, ENOMEM, "allocate item");
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
            int rc = read_value_file(kv, fd, p, value_len);
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
            report(kv, false, YYC_ECORRUPT, 0, 0, "value does not match its checksum");
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

/* SQLite's preupdate hook while an upsert of one key steps: INSERT OR REPLACE deletes the key's
 * previous row (if any) before inserting the new one, and this records that row's file name, so
 * the save knows which file it leaves behind without a lookup. Runs inside sqlite3_step; calls nothing but sqlite3_preupdate_old and
 * sqlite3_value_*. */
static void old_row_hook(void *ctx, sqlite3 *db, int op, const char *db_name, const char *table,
                         sqlite3_int64 old_rowid, sqlite3_int64 new_rowid) {
    yyc_kv *kv = ctx;
    (void)old_rowid;
    (void)new_rowid;
    if (op != SQLITE_DELETE || !kv->hook_key || strcmp(db_name, "main") != 0 ||
        strcmp(table, "manifest") != 0)
        return;
    sqlite3_value *k = NULL, *f = NULL;
    if (sqlite3_preupdate_old(db, kv->col_key, &k) != SQLITE_OK ||
        sqlite3_preupdate_old(db, kv->col_filename, &f) != SQLITE_OK) {
        kv->old_row_failed = true;
        return;
    }
    size_t key_len = strlen(kv->hook_key);
    const void *old_key = sqlite3_value_text(k);
    if (!old_key || (size_t)sqlite3_value_bytes(k) != key_len ||
        memcmp(old_key, kv->hook_key, key_len))
        return; /* not the key's row (only a trigger someone added could delete another) */
    const char *name = NULL;
    if (sqlite3_value_type(f) == SQLITE_TEXT) name = (const char *)sqlite3_value_text(f);
    if (name && yyc_kv_filename_is_valid(name)) /* (at most 255 bytes) */
        memcpy(kv->old_filename, name, strlen(name) + 1);
}

/* step_done of a statement that replaces or deletes key's row, with old_row_hook installed
 * while it steps: kv->old_filename gets the file name of the row it deleted ("" when none) and
 * kv->old_row_failed tells whether that row could not be read. */
static int step_learning_old_row(yyc_kv *kv, sqlite3_stmt *s, const char *key, const char *what) {
    kv->hook_key = key;
    kv->old_row_failed = false;
    kv->old_filename[0] = '\0';
    sqlite3_preupdate_hook(kv->db, old_row_hook, kv);
    int rc = step_done(kv, s, what);
    sqlite3_preupdate_hook(kv->db, NULL, NULL);
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
    int rc = prepare2(kv, SQL_UPSERT, SQL_UPSERT_CRC, &s, &with_crc);
    if (rc != YYC_OK) return rc;
    int64_t now = now_seconds();
    /* Value and extended data outlive the step (the statement is reset before we return). */
    int b = bind_key(s, 1, key);
    if (b == SQLITE_OK)
        b = filename ? sqlite3_bind_text(s, 2, filename, -1, SQLITE_STATIC) : sqlite3_bind_null(s, 2);
    if (b == SQLITE_OK) b = sqlite3_bind_int64(s, 3, (int64_t)value_len);
    if (b == SQLITE_OK) {
        if (filename) b = sqlite3_bind_null(s, 4);
        else if (value_len == 0) b = sqlite3_bind_zeroblob(s, 4, 0); /* empty, not NULL */
        else b = sqlite3_bind_blob64(s, 4, value, value_len, SQLITE_STATIC);
    }
    if (b == SQLITE_OK) b = sqlite3_bind_int64(s, 5, now);
    if (b == SQLITE_OK) b = sqlite3_bind_int64(s, 6, now);
    if (b == SQLITE_OK)
        b = ext_len ? sqlite3_bind_blob64(s, 7, ext, ext_len, SQLITE_STATIC) : sqlite3_bind_null(s, 7);
    if (b == SQLITE_OK && with_crc) b = sqlite3_bind_int64(s, 8, crc);
    if (b == SQLITE_OK && with_crc)
        b = ext_len ? sqlite3_bind_int64(s, 9, ext_crc) : sqlite3_bind_null(s, 9);
    if (b != SQLITE_OK) {
        yyc__stmt_done(s);
        return sqlite_fail(kv, b, "bind row");
    }
    if (!kv->use_old_row_hook) return step_done(kv, s, "save row");
    return step_learning_old_row(kv, s, key, "save row");
}

/* A fresh name for a new version of the file `name` (caller-owned, 256 bytes): name itself on
 * the first attempt, then name (cut to fit 255 bytes) + "~" + 8 random hex digits. */
static void fresh_name(const char *name, int attempt, char out[256]) {
    if (attempt == 0) {
        snprintf(out, 256, "%s", name);
        return;
    }
    uint32_t r;
    arc4random_buf(&r, sizeof r);
    int base = (int)strnlen(name, 255 - 9);
    snprintf(out, 256, "%.*s~%08x", base, name, r);
}

/* Moves the temporary file tdfd/tmp into dfd under a name no file has yet (fresh_name; never
 * over an existing file, so neither the key's previous version nor another key's file is ever
 * replaced). *placed gets the name. Returns 0 or an errno value (ENOENT: tmp is gone). */
static int link_fresh(int tdfd, const char *tmp, int dfd, const char *name, char placed[256]) {
    for (int attempt = 0; attempt < 16; attempt++) {
        fresh_name(name, attempt, placed);
        int err = yyc__fs_rename_noreplace(tdfd, tmp, dfd, placed);
        if (err != EEXIST) return err;
    }
    return EEXIST;
}

/* Puts a file value into data/ under a fresh name (link_fresh: `name` when no file has it, else
 * a variant of it), under the folder lock: moves the temporary file tdfd/tmp written before the
 * lock was taken (tmp empty: none could be written). When that file is gone - data/ went to
 * another process's trash, and was emptied, between its write and the lock; or it was never
 * written because data/ was already gone - the value is written again, into the current data/,
 * under the lock this time: data/ is only replaced under the lock, so it cannot go away again
 * before the move and once is enough. No existing file is touched; the temporary file never
 * survives a failure. *placed gets the name. Returns YYC_OK or a recorded error. */
static int place_file_locked(yyc_kv *kv, const void *value, size_t value_len, const char *name,
                             int tdfd, const char *tmp, char placed[256]) {
    int dfd = data_dir(kv);
    if (dfd < 0) {
        if (*tmp) unlinkat(tdfd, tmp, 0);
        return errno_fail(kv, EIO, "open data folder");
    }
    if (*tmp) {
        int err = link_fresh(tdfd, tmp, dfd, name, placed);
        if (err == 0) return YYC_OK;
        unlinkat(tdfd, tmp, 0);
        if (err != ENOENT) return errno_fail(kv, err, "move data file into place");
    }
    char again[64];
    int err = yyc__fs_write_temp(dfd, value, value_len, again);
    if (err) return errno_fail(kv, err, "write data file");
    err = link_fresh(dfd, again, dfd, name, placed);
    if (err) {
        unlinkat(dfd, again, 0);
        return errno_fail(kv, err, "move data file into place");
    }
    return YYC_OK;
}

/* The row replaced and the key's previous file deleted, after the commit that makes the row
 * name something else (inline now, or the new file's fresh name). The old file name comes from
 * the upsert itself (old_row_hook) or, without the hook, from a lookup first. Caller holds the
 * folder lock, so no other process changes the row or the file in between. */
static int replace_row(yyc_kv *kv, const char *key, const void *value, size_t value_len,
                       const char *filename, const void *extended, size_t extended_len,
                       uint32_t crc, uint32_t ext_crc) {
    const void *inline_value = filename ? NULL : value;
    file_ref old;
    if (!kv->use_old_row_hook) {
        char *old_name = NULL;
        int rc = lookup_filename(kv, key, &old_name);
        if (rc != YYC_OK) return rc;
        file_ref_capture(kv, filename && old_name && !strcmp(old_name, filename) ? NULL : old_name,
                         &old);
        free(old_name);
        rc = upsert(kv, key, filename, inline_value, value_len, extended, extended_len, crc,
                    ext_crc);
        if (rc == YYC_OK) file_ref_delete(kv, &old);
        else file_ref_forget(&old);
        return rc;
    }
    int rc = upsert(kv, key, filename, inline_value, value_len, extended, extended_len, crc,
                    ext_crc);
    if (rc != YYC_OK) return rc;
    if (kv->old_row_failed) /* (out of memory): the orphan sweep after an open removes it */
        report(kv, false, YYC_ENOMEM, 0, 0, "previous file of a saved key not known");
    const char *old_name = kv->old_filename[0] ? kv->old_filename : NULL;
    if (old_name && !(filename && !strcmp(old_name, filename))) {
        file_ref_capture(kv, old_name, &old);
        file_ref_delete(kv, &old);
    }
    return YYC_OK;
}

/* After a failed row write: deletes the new file `placed` unless the row names it after all (a
 * commit reported as failed that still happened). When that cannot be told (the lookup fails
 * too) the file stays: the orphan sweep after an open removes it if no row names it. The
 * caller's error stays the thread's last error. */
static void drop_unsaved_file_locked(yyc_kv *kv, const char *key, const char *placed) {
    yyc_error failure;
    yyc_last_error(&failure);
    char *name = NULL;
    if (lookup_filename(kv, key, &name) == YYC_OK && !(name && !strcmp(name, placed))) {
        /* Under the folder lock nothing else moves a file into place: the file under that name
         * is still the one just written. */
        file_ref written;
        file_ref_capture(kv, placed, &written);
        file_ref_delete(kv, &written);
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
    char placed[256] = "";
    if (filename) {
        int rc = place_file_locked(kv, value, value_len, filename, tdfd, tmp, placed);
        if (rc != YYC_OK) return rc;
    }
    int rc = replace_row(kv, key, value, value_len, filename ? placed : NULL, extended,
                         extended_len, crc, ext_crc);
    if (rc != YYC_OK && filename) drop_unsaved_file_locked(kv, key, placed);
    return rc;
}

int yyc_kv_save(yyc_kv *kv, const char *key, const void *value, size_t value_len,
                const char *filename, const void *extended, size_t extended_len) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    if (key_is_empty(key)) return report(kv, true, YYC_EINVAL, 0, 0, "empty key");
    if (!value && value_len) return report(kv, true, YYC_EINVAL, 0, 0, "NULL value with a length");
    if (!extended) extended_len = 0;
    /* The SQLite type stores every value inline and ignores file names. */
    bool to_file = kv->type != YYC_KV_SQLITE && filename && *filename;
    if (kv->type == YYC_KV_FILE && !to_file)
        return report(kv, true, YYC_EINVAL, 0, 0, "file storage needs a file name");
    if (to_file && !yyc_kv_filename_is_valid(filename))
        return report(kv, true, YYC_EINVAL, 0, 0, "invalid file name");
    int rc = db_check(kv);
    if (rc != YYC_OK) return rc;
    uint64_t limit = (uint64_t)sqlite3_limit(kv->db, SQLITE_LIMIT_LENGTH, -1);
    if ((!to_file && (uint64_t)value_len > limit) || (uint64_t)extended_len > limit)
        return report(kv, true, YYC_ETOOBIG, SQLITE_TOOBIG, 0, "value above SQLite's blob limit");
    if ((uint64_t)value_len > (uint64_t)INT64_MAX)
        return report(kv, true, YYC_ETOOBIG, 0, 0, "value too large");

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
        tdfd = kv->data_fd >= 0 ? kv->data_fd : data_dir(kv);
        if (tdfd < 0) return errno_fail(kv, EIO, "open data folder");
        kv->save_dir_fd = tdfd;
        int err = yyc__fs_write_temp(tdfd, value, value_len, tmp);
        if (err == ENOENT) {
            tmp[0] = '\0'; /* nothing was left behind */
        } else if (err) {
            kv->save_dir_fd = -1;
            return errno_fail(kv, err, "write data file");
        }
    }
    rc = folder_lock(kv);
    if (rc == YYC_OK) {
        rc = save_locked(kv, key, value, value_len, to_file ? filename : NULL, tdfd, tmp,
                         extended, extended_len, crc, ext_crc);
        folder_unlock(kv);
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

#define RESERVE_NAME "space.reserve"
#define RESERVE_BYTES (256 * 1024)

/* Makes the space reserve if it is missing and the file system has room for it twice over
 * (best effort: a full disk simply leaves it missing). Another process may do the same at
 * the same time: O_EXCL lets one of them make it. */
static void reserve_make(yyc_kv *kv) {
    kv->reserve_gone = true;
    struct statvfs sv;
    if (fstatvfs(kv->root_fd, &sv) != 0 ||
        (uint64_t)sv.f_bavail * sv.f_frsize < 2u * (uint64_t)RESERVE_BYTES)
        return;
    int fd = openat(kv->root_fd, RESERVE_NAME,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == EEXIST) kv->reserve_gone = false;
        return;
    }
    int err = posix_fallocate(fd, 0, RESERVE_BYTES);
    close(fd);
    if (err) unlinkat(kv->root_fd, RESERVE_NAME, 0); /* no half reserve */
    else kv->reserve_gone = false;
}

/* Releases the space reserve. Returns whether there was one (a regular file, never a link). */
static bool reserve_release(yyc_kv *kv) {
    struct stat st;
    kv->reserve_gone = true;
    if (fstatat(kv->root_fd, RESERVE_NAME, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        return false;
    return unlinkat(kv->root_fd, RESERVE_NAME, 0) == 0 && st.st_blocks > 0;
}

/* A TRUNCATE checkpoint that waits for nobody: busy readers or writers of other processes
 * leave it a passive one (best effort; errors ignored). */
static void checkpoint_truncate(yyc_kv *kv) {
    if (!kv->db) return;
    sqlite3_busy_timeout(kv->db, 0);
    sqlite3_wal_checkpoint_v2(kv->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(kv->db, kv->busy_timeout_ms);
}

/* The cost of a row (its size column): the size when it is a positive integer, else 0. */
static int64_t column_cost(sqlite3_stmt *s, int col) {
    if (sqlite3_column_type(s, col) != SQLITE_INTEGER) return 0;
    int64_t v = sqlite3_column_int64(s, col);
    return v > 0 ? v : 0;
}

/* Lists candidate rows: prepares and binds the statement (rowid, filename, size, in the order
 * they are to go). *adhoc: finalize it instead of giving it back. */
typedef int (*select_rows_fn)(yyc_kv *kv, const void *arg, sqlite3_stmt **s, bool *adhoc);

enum fit { FIT_NONE, FIT_COUNT, FIT_SIZE };

/* What one deletion removes and what it removed. */
typedef struct deletion {
    select_rows_fn select;
    const void *arg;
    size_t limit; /* most rows per transaction */
    enum fit fit; /* FIT_*: stop once the total count / size is at most max */
    int64_t max;
    bool one_step;   /* stop after one step (a batch) even when candidates are left */
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

static int scalar_checked(yyc_kv *kv, const char *sql, int64_t *out);
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
    int rc = db_check(kv);
    if (rc != YYC_OK) return rc;
    int src = sqlite3_exec(kv->db, "begin immediate;", NULL, NULL, NULL);
    if (src != SQLITE_OK) return sqlite_fail(kv, src, "begin deletion");
    int64_t total = d->total;
    bool saturated = false;
    if (d->fit != FIT_NONE) {
        /* (a saturated total may be smaller than the true one: summed again) */
        if (!d->have_total || d->total == INT64_MAX)
            rc = scalar_checked(kv, d->fit == FIT_SIZE ? SQL_SUM : SQL_COUNT, &total);
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
        file_ref_capture(kv, column_filename(s, 1), &rows[n].file);
        n++;
        if (d->fit != FIT_NONE) {
            int64_t cost = d->fit == FIT_SIZE ? column_cost(s, 2) : 1;
            total -= cost; /* (no overflow: total >= 0 before, cost >= 0) */
            if (total <= d->max) break;
        }
    }
    /* Candidates may be left: the step stopped at its limit, or its total was saturated (the
     * true one may be larger: the next step sums again). */
    bool at_limit = n > 0 && (n == limit || saturated) && (d->fit == FIT_NONE || total > d->max ||
                                                           saturated);
    if (rc == YYC_OK && src != SQLITE_DONE) rc = sqlite_fail(kv, src, "list rows to delete");
    if (s) release_in(s, adhoc);
    if (rc == YYC_OK && files_first) /* the last resort on a full disk (see delete_rows) */
        for (size_t i = 0; i < n; i++) file_ref_delete(kv, &rows[i].file);
    if (rc == YYC_OK && n > 0) rc = prepare_checked(kv, SQL_DELETE_ROWID, &del);
    for (size_t i = 0; rc == YYC_OK && i < n; i++) {
        sqlite3_bind_int64(del, 1, rows[i].rowid);
        src = sqlite3_step(del);
        sqlite3_reset(del);
        if (src != SQLITE_DONE) rc = sqlite_fail(kv, src, "delete rows");
    }
    if (del) yyc__stmt_done(del);
    if (rc == YYC_OK) {
        src = sqlite3_exec(kv->db, "commit;", NULL, NULL, NULL);
        if (src != SQLITE_OK) rc = sqlite_fail(kv, src, "commit deletion");
    }
    if (rc != YYC_OK) rollback(kv);
    for (size_t i = 0; i < n; i++) { /* rows first, then files */
        if (rc == YYC_OK) file_ref_delete(kv, &rows[i].file);
        else file_ref_forget(&rows[i].file);
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
        rc = folder_lock(kv);
        if (rc != YYC_OK) return rc;
        kv->quiet_full = true;
        rc = delete_step_locked(kv, d, limit, files_first);
        kv->quiet_full = false;
        bool retry = false;
        if (rc == YYC_ENOSPC) {
            if (tries == 0) {
                retry = true; /* after a checkpoint */
            } else if (!released && reserve_release(kv)) {
                retry = released = true;
            } else if (!files_first) {
                retry = files_first = true;
            } else if (limit > 1) {
                limit /= 2;
                retry = true;
            }
            tries++;
            checkpoint_truncate(kv);
        }
        folder_unlock(kv);
        if (rc == YYC_OK && d->more && !d->one_step) continue;
        if (!retry) break;
    }
    if (rc == YYC_ENOSPC) { /* the last try's error, reported now */
        yyc_error e;
        yyc_last_error(&e);
        report(kv, false, e.code, e.sqlite_code, e.sys_errno, "%s", e.message);
    }
    if (released || kv->reserve_gone) {
        if (released) checkpoint_truncate(kv);
        reserve_make(kv);
    }
    return rc;
}

static int select_key(yyc_kv *kv, const void *arg, sqlite3_stmt **s, bool *adhoc) {
    *adhoc = false;
    int rc = prepare_checked(kv, SQL_ROWS_KEY, s);
    if (rc == YYC_OK) bind_key(*s, 1, arg);
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
    int rc = db_check(kv);
    if (rc != YYC_OK) return rc;
    char *sql = in_list_sql(head, n, tail);
    if (!sql) return report(kv, true, YYC_ENOMEM, 0, ENOMEM, "build query");
    int src = *adhoc ? sqlite3_prepare_v2(kv->db, sql, -1, out, NULL)
                     : yyc__stmt_cache_get(&kv->stmts, sql, out);
    free(sql);
    if (src != SQLITE_OK) {
        if (*adhoc) sqlite3_finalize(*out);
        *out = NULL;
        return sqlite_fail(kv, src, "prepare list query");
    }
    for (size_t i = 0; i < n; i++) {
        int b = bind_key(*out, first + (int)i, keys[i] ? keys[i] : "");
        if (b != SQLITE_OK) {
            rc = sqlite_fail(kv, b, "bind key");
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
    if (!keys) return report(kv, true, YYC_EINVAL, 0, 0, "NULL key list");
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
    int rc = prepare_checked(kv, w->sql, s);
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
    if (d.removed > 0) checkpoint_truncate(kv);
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
    return prepare_checked(kv, SQL_ROWS_LRU, s);
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
    if (d.removed > 0) checkpoint_truncate(kv);
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

int yyc__kv_remove_lru_batch(yyc_kv *kv, int limit, int64_t *removed) {
    *removed = 0;
    if (limit <= 0) return YYC_OK;
    deletion d = {.select = select_lru, .limit = (size_t)limit, .one_step = true};
    int rc = delete_rows(kv, &d);
    *removed = d.removed;
    return rc;
}

/* --- remove all --- */

/* Runs one fixed statement to completion (cached). */
static int exec_cached(yyc_kv *kv, const char *sql, const char *what) {
    sqlite3_stmt *s;
    int rc = prepare(kv, sql, &s);
    if (rc != YYC_OK) return rc;
    return step_done(kv, s, what);
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
static int clear_locked(yyc_kv *kv) {
    int rc = exec_cached(kv, "delete from manifest;", "remove all rows");
    if (rc == YYC_OK) {
        move_data_to_trash(kv, false);
        return YYC_OK;
    }
    if (rc != YYC_ENOSPC || !kv->db) return rc; /* (busy, corrupt, I/O: everything kept) */
    move_data_to_trash(kv, true);
    sqlite3_wal_checkpoint_v2(kv->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    return exec_cached(kv, "delete from manifest;", "remove all rows");
}

/* Gives the manifest's space back: VACUUM, then a truncating checkpoint (the WAL goes back to
 * zero bytes when no other connection reads). Best effort (another process reading may
 * postpone either); returns the VACUUM's status. */
static int compact(yyc_kv *kv) {
    if (!kv->db) return YYC_ECLOSED;
    int rc = sqlite3_exec(kv->db, "vacuum;", NULL, NULL, NULL);
    int status = rc == SQLITE_OK ? YYC_OK : sqlite_fail(kv, rc, "vacuum");
    sqlite3_wal_checkpoint_v2(kv->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    return status;
}

int yyc_kv_remove_all(yyc_kv *kv) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    /* Unlike other calls, a remove-all always tries to reopen a closed manifest (the user's
     * way out of a broken cache): the lazy-reopen limits are reset first. */
    kv->open_error_count = 0;
    kv->last_open_error_time = 0;
    int rc = folder_lock(kv);
    if (rc != YYC_OK) return rc; /* (reported; nothing changed) */
    rc = db_check(kv); /* (a manifest found corrupt before is rebuilt here) */
    if (rc == YYC_OK) rc = clear_locked(kv);
    if (rc == YYC_ECORRUPT && kv->db) {
        /* Real corruption found by the delete: db_check rebuilds the manifest empty in place
         * (data/ goes to the trash with it), reports it and reopens. (Found by the open, the
         * rebuild was tried there already.) */
        kv->rebuild_pending = true;
        rc = db_check(kv);
    }
    folder_unlock(kv);
    if (rc != YYC_OK) return rc;
    schedule_trash_empty(kv, false);
    compact(kv);
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

/* Returned by a first read pass that found a row whose file is missing or damaged: that may be
 * another process replacing the value right now, so the read is repeated under the folder
 * lock, where it is conclusive. */
#define RETRY_UNDER_LOCK (-1)

static int get_one_pass(yyc_kv *kv, const char *key, bool want_value, yyc_kv_item **out,
                        bool confirm) {
    *out = NULL;
    sqlite3_stmt *s;
    bool with_crc;
    int rc = want_value ? prepare2(kv, SQL_GET_ITEM, SQL_GET_ITEM_CRC, &s, &with_crc)
                        : prepare2(kv, SQL_GET_INFO, SQL_GET_INFO_CRC, &s, &with_crc);
    if (rc != YYC_OK) return rc;
    bind_key(s, 1, key);
    int src = sqlite3_step(s);
    bool drop_file = false;
    char *drop_name = NULL;
    if (src == SQLITE_ROW) {
        rc = row_to_item(kv, s, want_value, out, &drop_file);
        const char *name = column_filename(s, 1);
        if (drop_file && name) drop_name = strdup(name);
    } else if (src == SQLITE_DONE) {
        rc = YYC_NOTFOUND;
    } else {
        rc = sqlite_fail(kv, src, "get item");
    }
    yyc__stmt_done(s);
    if (src == SQLITE_ROW) {
        if (rc == YYC_NOTFOUND) {
            /* The row outlived its file (or the value or extended data is damaged): drop both,
             * report a miss. */
            rc = confirm ? delete_row_and_file(kv, key, drop_name) : RETRY_UNDER_LOCK;
        } else if (want_value && rc == YYC_OK && (*out)->last_access_time != now_seconds()) {
            /* (Already touched this second: writing the same time again is skipped.) */
            int trc = touch(kv, key);
            if (trc != YYC_OK) report(kv, false, trc, 0, 0, "access time not updated");
        }
    }
    free(drop_name);
    return rc;
}

static int get_one(yyc_kv *kv, const char *key, bool want_value, yyc_kv_item **out) {
    if (YYC__MISUSE(kv == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = NULL;
    if (key_is_empty(key)) return YYC_NOTFOUND;
    kv->quiet_corrupt = true;
    int rc = get_one_pass(kv, key, want_value, out, false);
    kv->quiet_corrupt = false;
    if (rc == RETRY_UNDER_LOCK && (rc = folder_lock(kv)) == YYC_OK) {
        rc = get_one_pass(kv, key, want_value, out, true);
        folder_unlock(kv);
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
    bool with_crc; /* (the statement selects NULL without the column) */
    int rc = prepare2(kv, SQL_GET_VALUE, SQL_GET_VALUE_CRC, &s, &with_crc);
    if (rc != YYC_OK) return rc;
    bind_key(s, 1, key);
    int src = sqlite3_step(s);
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
            rc = open_value_file(kv, column_filename(s, 0), sqlite3_column_int64(s, 1), &fd, &len,
                                 &drop_file);
            if (rc == YYC_OK) {
                buf = malloc(len ? len : 1);
                if (!buf) {
                    close(fd);
                    rc = report(kv, true, YYC_ENOMEM, 0, ENOMEM, "allocate value");
                } else {
                    rc = read_value_file(kv, fd, buf, len);
                    if (rc == YYC_NOTFOUND) drop_file = true;
                }
            }
        } else {
            const void *blob = sqlite3_column_blob(s, 2);
            len = blob ? (size_t)sqlite3_column_bytes(s, 2) : 0;
            buf = malloc(len ? len : 1);
            if (!buf) rc = report(kv, true, YYC_ENOMEM, 0, ENOMEM, "allocate value");
            else if (len) memcpy(buf, blob, len);
        }
        if (rc == YYC_OK && sqlite3_column_type(s, 4) == SQLITE_INTEGER &&
            yyc__crc32c(buf, len) != (uint32_t)sqlite3_column_int64(s, 4)) {
            report(kv, false, YYC_ECORRUPT, 0, 0, "value does not match its checksum");
            rc = YYC_NOTFOUND;
            drop_file = raw_name && *raw_name;
        }
        if (drop_file) drop_name = strdup(raw_name);
    } else if (src == SQLITE_DONE) {
        rc = YYC_NOTFOUND;
    } else {
        rc = sqlite_fail(kv, src, "get value");
    }
    yyc__stmt_done(s);
    if (src == SQLITE_ROW && rc == YYC_NOTFOUND)
        rc = confirm ? delete_row_and_file(kv, key, drop_name) : RETRY_UNDER_LOCK;
    free(drop_name);
    if (rc != YYC_OK) {
        free(buf);
        return rc;
    }
    if (atime != now_seconds()) {
        int trc = touch(kv, key);
        if (trc != YYC_OK) report(kv, false, trc, 0, 0, "access time not updated");
    }
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
    if (key_is_empty(key)) return YYC_NOTFOUND;
    kv->quiet_corrupt = true;
    int rc = get_value_pass(kv, key, out_value, out_len, false);
    kv->quiet_corrupt = false;
    if (rc == RETRY_UNDER_LOCK && (rc = folder_lock(kv)) == YYC_OK) {
        rc = get_value_pass(kv, key, out_value, out_len, true);
        folder_unlock(kv);
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
    int rc = db_check(kv);
    if (rc != YYC_OK) return rc;
    const char *head = want_value ? (kv->has_crc ? SQL_ITEMS_IN_CRC : SQL_ITEMS_IN)
                                  : (kv->has_crc ? SQL_INFOS_IN_CRC : SQL_INFOS_IN);
    rc = prepare_in(kv, head,
                        ");", keys, n, 1, &s, &adhoc);
    if (rc != YYC_OK) return rc;
    int src;
    while (rc == YYC_OK && (src = sqlite3_step(s)) == SQLITE_ROW) {
        yyc_kv_item *item;
        bool drop_file;
        rc = row_to_item(kv, s, want_value, &item, &drop_file);
        if (rc == YYC_OK) {
            if (!list_push(list, item)) {
                free(item);
                rc = report(kv, true, YYC_ENOMEM, 0, ENOMEM, "grow item list");
            }
        } else if (rc == YYC_NOTFOUND) {
            rc = YYC_OK;
            if (!gone_push(gone, (const char *)sqlite3_column_text(s, 0),
                           drop_file ? column_filename(s, 1) : NULL))
                rc = report(kv, true, YYC_ENOMEM, 0, ENOMEM, "grow list");
        }
    }
    if (rc == YYC_OK && src != SQLITE_DONE) rc = sqlite_fail(kv, src, "get items");
    release_in(s, adhoc);
    return rc;
}

static int touch_chunk(yyc_kv *kv, const char *const *keys, size_t n) {
    sqlite3_stmt *s;
    bool adhoc;
    int rc = prepare_in(kv, "update manifest set last_access_time = ?1 where key in (", ");",
                        keys, n, 2, &s, &adhoc);
    if (rc != YYC_OK) return rc;
    sqlite3_bind_int64(s, 1, now_seconds());
    int src = sqlite3_step(s);
    release_in(s, adhoc);
    return src == SQLITE_DONE ? YYC_OK : sqlite_fail(kv, src, "update access times");
}

static int get_many(yyc_kv *kv, const char *const *keys, size_t n, bool want_value,
                    yyc_kv_item ***out_items, size_t *out_count) {
    if (YYC__MISUSE(kv == NULL || out_items == NULL || out_count == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out_items = NULL;
    *out_count = 0;
    if (n == 0) return YYC_OK;
    if (!keys) return report(kv, true, YYC_EINVAL, 0, 0, "NULL key list");
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
    bool locked = gone.count > 0 && rc == YYC_OK && (rc = folder_lock(kv)) == YYC_OK;
    for (size_t i = 0; i < gone.count; i++) {
        if (rc == YYC_OK) {
            yyc_kv_item *item = NULL;
            int grc = get_one_pass(kv, gone.rows[i].key, want_value, &item, true);
            if (grc == YYC_OK && !list_push(&list, item)) {
                free(item);
                grc = report(kv, true, YYC_ENOMEM, 0, ENOMEM, "grow item list");
            }
            if (grc != YYC_OK && grc != YYC_NOTFOUND) rc = grc;
        }
        free(gone.rows[i].key);
        free(gone.rows[i].filename);
    }
    if (locked) folder_unlock(kv);
    free(gone.rows);
    if (rc == YYC_OK && want_value && list.count > 0) {
        /* YYKVStorage refreshes every requested key once at least one item came back. */
        for (size_t i = 0; i < n; i += YYC__KV_IN_CHUNK) {
            size_t m = n - i < YYC__KV_IN_CHUNK ? n - i : YYC__KV_IN_CHUNK;
            int trc = touch_chunk(kv, keys + i, m);
            if (trc != YYC_OK) {
                report(kv, false, trc, 0, 0, "access times not updated");
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

int yyc_kv_get_item_infos(yyc_kv *kv, const char *const *keys, size_t n,
                          yyc_kv_item ***out_items, size_t *out_count) {
    return get_many(kv, keys, n, false, out_items, out_count);
}

/* --- status --- */

int yyc_kv_exists(yyc_kv *kv, const char *key) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    if (key_is_empty(key)) return YYC_NOTFOUND;
    sqlite3_stmt *s;
    int rc = prepare(kv, SQL_EXISTS, &s);
    if (rc != YYC_OK) return rc;
    bind_key(s, 1, key);
    int src = sqlite3_step(s);
    yyc__stmt_done(s);
    if (src == SQLITE_ROW) return YYC_OK;
    if (src == SQLITE_DONE) return YYC_NOTFOUND;
    return sqlite_fail(kv, src, "exists");
}

/* The one value of an aggregate (count or SQL_SUM's total; never negative); caller has passed
 * db_check. */
static int scalar_checked(yyc_kv *kv, const char *sql, int64_t *out) {
    *out = 0;
    sqlite3_stmt *s;
    int rc = prepare_checked(kv, sql, &s);
    if (rc != YYC_OK) return rc;
    int src = sqlite3_step(s);
    if (src == SQLITE_ROW) {
        *out = sqlite3_column_int64(s, 0);
        if (*out < 0) *out = 0;
    }
    yyc__stmt_done(s);
    return src == SQLITE_ROW ? YYC_OK : sqlite_fail(kv, src, "aggregate");
}

static int scalar(yyc_kv *kv, const char *sql, int64_t *out) {
    if (YYC__MISUSE(kv == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = 0;
    int rc = db_check(kv);
    if (rc != YYC_OK) return rc;
    return scalar_checked(kv, sql, out);
}

int yyc_kv_count(yyc_kv *kv, int64_t *out) { return scalar(kv, SQL_COUNT, out); }

int yyc_kv_size(yyc_kv *kv, int64_t *out) { return scalar(kv, SQL_SUM, out); }
