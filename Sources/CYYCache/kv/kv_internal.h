/*
 * kv_internal.h - what the files of the KV storage share (private; not API): the on-disk layout
 * and SQL, struct yyc_kv and the yyc__kv_* functions one file defines for another.
 *
 *   kv_storage.c   the public KV API (yyc_kv_*: open/close, save, remove, trims, remove-all,
 *                  gets, counts) and the deviations from YYKVStorage;
 *   kv_sqlite.c    the bottom: statuses of SQLite and errno failures, reporting, statement
 *                  helpers;
 *   kv_transactions.c  SQLite's row, commit and rollback hooks and when a change is committed;
 *   kv_manifest.c  the SQLite manifest connection (open, reopen, rebuild, schema, vacuum);
 *   kv_folder.c    the multi-process folder protocol (folder lock, data/, trash/, value files,
 *                  file names, space reserve);
 *   kv_sweep.c     the background sweeps on the worker thread (trash, stale temporaries, orphans);
 *   kv_checkpoints.c  the WAL checkpoints on the checkpoint queue, queued by the WAL hook, and
 *                  the truncating checkpoint;
 *   kv_totals.c    the count and total cost in O(1), carried by the connection's row hooks;
 *   kv_totals_read.c  reading them (carried, or summed after another connection's commit);
 *   kv_expiry_clock.c, kv_expiry.c  the expiry clock and column, and expired rows;
 *   kv_read_hold.c, kv_access_times.c, kv_entries.c, kv_group_commit.c, kv_page_cache.c.
 *
 * Calls go one way (scripts/kv-layers.py, run by `make headers`, fails on a cycle), bottom first:
 * stmt_cache.c, kv_read_hold.c, kv_checkpoints.c, kv_expiry_clock.c; kv_removals.c, kv_totals.c
 * (what the hooks tell them); kv_transactions.c (the hooks); kv_sqlite.c; kv_folder.c,
 * kv_page_cache.c, kv_sweep.c; kv_manifest.c; kv_access_times.c, kv_totals_read.c; kv_storage.c;
 * kv_expiry.c, kv_entries.c, kv_group_commit.c.
 *
 * Thread safety: none (as for yyc_kv); the caller serialises access to one yyc_kv. The internal
 * entry points used by disk_cache.c and the tests are in kv_private.h.
 */
#ifndef YYCACHE_KV_INTERNAL_H
#define YYCACHE_KV_INTERNAL_H

/* sqlite3.h declares the preupdate hook only with this macro. The functions are referenced
 * weakly below and used only when the linked SQLite has them (yyc__kv_row_hooks_available). */
#ifndef SQLITE_ENABLE_PREUPDATE_HOOK
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#endif

#include "platform/internal.h"

#include "platform/fs_util.h"
#include "kv/kv_private.h"
#include "memory/lru_map.h"
#include "kv/stmt_cache.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#pragma weak sqlite3_preupdate_hook
#pragma weak sqlite3_preupdate_old
#pragma weak sqlite3_preupdate_new

/* --- layout and SQL (a file-format contract: spec 2.1, 2.2, 2.5) --- */

#define MANIFEST_NAME "manifest.sqlite"
#define TEXT_OF_(x) #x
#define TEXT_OF(x) TEXT_OF_(x)
#define WAL_LIMIT_TEXT TEXT_OF(YYC__KV_WAL_LIMIT_BYTES)
#define DATA_DIR "data"
#define TRASH_DIR "trash"

/* YYKVStorage's initialization script, byte for byte in effect. */
#define SQL_INIT                                                                   \
    "pragma journal_mode = wal; pragma synchronous = normal; "                     \
    "create table if not exists manifest (key text, filename text, size integer, " \
    "inline_data blob, modification_time integer, last_access_time integer, "      \
    "extended_data blob, primary key(key)); "                                      \
    "create index if not exists last_access_time_idx on manifest(last_access_time);"

#define COLS_FULL \
    "key, filename, size, inline_data, modification_time, last_access_time, extended_data"
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

#define SQL_UPSERT                                                                           \
    "insert or replace into manifest (key, filename, size, inline_data, modification_time, " \
    "last_access_time, extended_data) values (?1, ?2, ?3, ?4, ?5, ?6, ?7);"
/* Beyond YYKVStorage, too: each row's expiry (unix milliseconds; NULL: never, as in every row
 * YYKVStorage writes), indexed (partial: only rows that expire) so that the expired rows are
 * found by one index range. Added at open like the checksum columns; kv_expiry.c. A row is
 * live while its expiry is NULL or later than yyc_now_ms() (an SQL function of the connection:
 * the clock of yyc__kv_now_ms). The statements of the checksum variants (the _CRC ones) also
 * write and test it: has_crc means all three columns are there. */
#define EXPIRY_COLUMN "yyc_expiry_ms"
#define SQL_EXPIRY_CHECK "select " EXPIRY_COLUMN " from manifest limit 0;"
#define SQL_EXPIRY_ADD "alter table manifest add column " EXPIRY_COLUMN " integer;"
#define SQL_EXPIRY_INDEX                                                   \
    "create index if not exists yyc_expiry_idx on manifest(" EXPIRY_COLUMN \
    ") where " EXPIRY_COLUMN " is not null;"
#define LIVE_ROW "(" EXPIRY_COLUMN " is null or " EXPIRY_COLUMN " > yyc_now_ms())"

#define SQL_UPSERT_CRC                                                                       \
    "insert or replace into manifest (key, filename, size, inline_data, modification_time, " \
    "last_access_time, extended_data, " CRC_COLUMN ", " EXT_CRC_COLUMN ", " EXPIRY_COLUMN    \
    ") values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, yyc_save_expiry());"
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
/* The one-key reads (item, info, value, exists) end with the row's liveness (LIVE_ROW as a
 * column: 1 live, 0 expired) instead of filtering by it, so that a read tells an expired row
 * from a missing one without a second query (step_live). */
#define SQL_GET_ITEM "select " COLS_FULL ", NULL, NULL, 1 from manifest where key = ?1;"
#define SQL_GET_ITEM_CRC \
    "select " COLS_FULL ", " CRCS_FULL ", " LIVE_ROW " from manifest where key = ?1;"
#define SQL_GET_INFO "select " COLS_INFO ", NULL, NULL, 1 from manifest where key = ?1;"
#define SQL_GET_INFO_CRC \
    "select " COLS_INFO ", " CRCS_INFO ", " LIVE_ROW " from manifest where key = ?1;"
#define ITEM_LIVE_COLUMN 9
/* Heads of the `key in (...)` lists of the same rows. */
#define SQL_ITEMS_IN "select " COLS_FULL ", NULL, NULL from manifest where key in ("
#define SQL_ITEMS_IN_CRC \
    "select " COLS_FULL ", " CRCS_FULL " from manifest where " LIVE_ROW " and key in ("
#define SQL_INFOS_IN "select " COLS_INFO ", NULL, NULL from manifest where key in ("
#define SQL_INFOS_IN_CRC \
    "select " COLS_INFO ", " CRCS_INFO " from manifest where " LIVE_ROW " and key in ("
#define SQL_GET_VALUE \
    "select filename, size, inline_data, last_access_time, NULL, 1 from manifest where key = ?1;"
#define SQL_GET_VALUE_CRC                                                             \
    "select filename, size, inline_data, last_access_time, " CRC_COLUMN ", " LIVE_ROW \
    " from manifest where key = ?1;"
#define VALUE_LIVE_COLUMN 5
#define SQL_GET_FILENAME "select filename from manifest where key = ?1;"
#define SQL_EXISTS "select 1 from manifest where key = ?1 limit 1;"
#define SQL_EXISTS_CRC "select " LIVE_ROW " from manifest where key = ?1 limit 1;"
#define EXISTS_LIVE_COLUMN 0
/* The total cost: yyc_cost_total (cost_total_step) sums the sizes that are positive integers (a
 * hostile row's NULL, text, real or negative size costs nothing) and saturates at INT64_MAX
 * instead of failing on overflow as sum() does. */
/* (kv_totals.c sums both in one scan.) */

/* --- the object --- */

/* Where this connection's transaction stands for the row hooks (kv_transactions.c). */
typedef struct yyc__kv_txn {
    bool commit_seen; /* the commit hook ran and no rollback followed (yet) */
} yyc__kv_txn;

/* The keys of the manifest rows deleted by this connection while the watch is on (SQLite's
 * preupdate hook), kept once their transaction committed (kv_transactions.c).
 * Invariants: committed <= at_commit <= n <= cap after a commit hook. */
typedef struct yyc__kv_removal_watch {
    bool on;
    char **keys; /* NUL-terminated copies, n of them */
    size_t n, cap;
    size_t committed; /* keys[0..committed) belong to committed transactions */
    size_t at_commit; /* n when the commit hook last ran */
    bool lost;        /* a key could not be copied (out of memory) */
} yyc__kv_removal_watch;

/* The manifest's count and total cost as this connection carries them (kv_totals.c): summed
 * once, then moved by this connection's own row changes (the row hooks), and trusted only while
 * SQLite's data version of the file shows no other connection's commit since.
 * Invariants: while known, count >= 0 and 0 <= cost < INT64_MAX; commits and done_* are the
 * committed transactions not yet folded in, txn_* the transaction in progress; without the row
 * hooks (!on) nothing is known or carried. Checked by asserts around every read (kv_totals.c,
 * totals_ok). */
typedef struct yyc__kv_totals {
    bool on;          /* the connection has the row hooks and the size column: carried */
    bool known;       /* count and cost were right at data version `version` */
    uint32_t version; /* SQLITE_FCNTL_DATA_VERSION then */
    int64_t count, cost;
    uint32_t commits; /* commits of ours since (each moves the data version by one) */
    int64_t done_count, done_cost;
    bool done_lost; /* a committed change could not be counted */
    int64_t txn_count, txn_cost;
    bool txn_lost;  /* a change of the transaction in progress could not be counted */
    uint64_t scans; /* times the totals were summed (tests and benchmarks read it) */
} yyc__kv_totals;

/* Invariants: db != NULL iff the manifest connection is open, and then stmts belongs to db;
 * root_fd is the storage folder for the object's whole life; data_fd is data/ (-1 only while it
 * could not be recreated); data_checked only while lock_depth > 0; save_dir_fd is -1 outside
 * yyc_kv_save; an item handed out is one malloc block.
 *
 * Who guards what: every field belongs to the caller's thread (the caller serialises calls on
 * one yyc_kv; disk_cache.c's mutex does) and nothing else reads or writes it: the sweeps run on
 * the worker thread with descriptors, a path and a connection of their own (kv_sweep.c), and the
 * row hooks (kv_transactions.c) run inside sqlite3_step on the caller's thread. On top of that
 * the folder flock (held while lock_depth > 0; kv_folder.c) guards what other processes share:
 * data_checked is true only under it, data/ (the folder data_fd names) is replaced only under it,
 * and every change of a row together with its file happens under it. Below, [caller] marks a
 * field only the caller's serialisation guards, [folder lock] one that needs the flock as well,
 * [open] one set by the open and constant after it, [testing] a test knob (test builds only). */
typedef struct yyc__kv_checkpointer yyc__kv_checkpointer;

struct yyc_kv {
    /* [caller] The background checkpoints of the open connection (kv_checkpoints.c), NULL when
     * the manifest is closed. */
    yyc__kv_checkpointer *checkpointer;
    /* [open] */
    char *path;    /* as given to open */
    char *db_path; /* path/manifest.sqlite */
    yyc_kv_type type;
    int root_fd;
    /* [caller]; reopened under the folder lock or when data/ was found replaced (data_dir). */
    int data_fd;
    dev_t data_dev; /* identity of the folder data_fd was opened on */
    ino_t data_ino;
    /* data_fd was checked against data/ since the folder lock was taken: data/ is only replaced
     * under that lock, so it stays valid until the lock is released. */
    bool data_checked; /* [folder lock] */
    /* The descriptor a save in progress wrote its temporary file through (-1: none). Reopening
     * data/ meanwhile leaves it open: the save closes it. */
    int save_dir_fd; /* [caller] */
    /* [caller]: the manifest connection and its reopen state (kv_manifest.c). */
    sqlite3 *db;
    yyc__stmt_cache stmts;
    int busy_timeout_ms;
    /* Lazy reopen (spec 2.3). */
    int open_error_count;
    double last_open_error_time;
    int max_open_retries;
    double retry_interval;
#ifdef YYC_TESTING
    int fail_opens; /* [testing] opens left to fail */
#endif
    bool rebuild_pending; /* SQLITE_CORRUPT seen on an open connection: rebuild on next use */
    bool has_crc;         /* the manifest has both checksum columns and the expiry column */
    /* Access times noted by reads and written later (kv_access_times.c). [caller] */
    bool defer_access;       /* the owner turned it on (yyc__kv_set_deferred_access_times) */
    yyc__lru_map access;     /* key -> second of its last read; oldest noted at the tail */
    uint64_t access_dropped; /* reads whose time was not noted (the map was full) */
    /* A read transaction held across pure reads (kv_read_hold.c). [caller] */
    bool hold_reads;          /* the owner turned it on (yyc__kv_set_read_hold) */
    bool keep_read;           /* the call in progress is a pure read: db_check keeps the hold */
    bool read_held;           /* a read transaction of ours is open (only while db != NULL) */
    int read_uses;            /* reads in it so far */
    double read_began;        /* monotonic seconds */
    double hold_quiet_until;  /* nothing is held before this (monotonic; another writer seen) */
    const unsigned char *shm; /* SQLite's map of the WAL index (its header first), or NULL */
    unsigned char read_header[48]; /* its WAL-index header before the transaction began */
    /* The last one-key read (item, info, value, exists) found key's row expired and answered a
     * miss: the caller may remove it (yyc__kv_take_read_found_expired). [caller] */
    bool read_found_expired;
    /* The copy of the WAL's tail is queued for the owner to run outside its lock
     * (yyc__kv_set_tail_checkpoint_outside). [caller] */
    bool tail_outside;
    /* The page cache in KiB (SQLite's cache_size, as -KiB), applied at every open of the
     * connection; 0: SQLite's default (yyc__kv_set_page_cache_kib). [caller] */
    int64_t page_cache_kib;
    int64_t save_expiry_ms; /* [caller] the expiry yyc_save_expiry() gives the row being saved
                             * (0: none); set only around one save (kv_expiry.c) */
    /* A save learns the file name of the row it replaces from SQLite's preupdate hook, in the
     * upsert itself, instead of looking it up first (yyc__kv_old_row_deleted). [caller]; the last
     * three are written by the hook, inside the upsert's sqlite3_step (step_learning_old_row). */
    bool use_old_row_hook; /* the hook is available and the columns below were found */
#ifdef YYC_TESTING
    bool no_old_row_hook; /* [testing] always look up */
#endif
    int col_key, col_filename; /* column numbers in manifest */
    int col_size;              /* (-1: none found; the totals are then summed at every read) */
    bool size_keeps_integers;  /* col_size stores a bound integer as one (its declared type has
                                * INTEGER, NUMERIC or BLOB affinity, not TEXT or REAL) */
    const char *hook_key;      /* the key being saved, while the upsert steps (else NULL) */
    int64_t hook_size;         /* the size column that upsert writes, while hook_key */
    bool old_row_failed;       /* the hook could not read the replaced row */
    char old_filename[256];    /* the replaced row's file name; "" when none (or not valid) */
    bool replaced_row;         /* the hook saw the key's previous row deleted (a replacement) */
    /* [caller] The keys of the rows deleted while a removal watch is on (kv_removals.c). */
    yyc__kv_removal_watch watch;
    /* [caller] The transaction the row hooks follow (kv_transactions.c). */
    yyc__kv_txn txn;
    /* [caller] The count and total cost (kv_totals.c). */
    yyc__kv_totals totals;
    /* [caller] */
    int lock_depth;     /* folder_lock nesting; > 0: this process holds the folder flock */
    uint64_t lock_hold; /* numbers the holds of the folder lock: +1 when lock_depth leaves 0 and
                         * when data/ is reopened (see file_ref) */
    bool quiet_corrupt; /* a first, unlocked read: a damaged value is only suspected */
    bool quiet_full;    /* a deletion that will be retried: its ENOSPC is not reported */
    bool reserve_gone;  /* the space reserve was released (or never made): remake it */
#ifdef YYC_TESTING
    int fail_flock; /* [testing] the next folder lock fails with this errno (0: none) */
#endif
    /* Reporting. [caller] */
    yyc_error_hook hook;
    void *hook_ctx;
    bool logs;
    bool probing;           /* opening: a corrupt manifest is only recorded (the rebuild reports) */
    bool has_pending_event; /* a corruption event happened before any hook was set */
    yyc_error pending_event;
    /* A transaction of several writes is open (kv_group_commit.c) while non-NULL: the saves in
     * it defer deleting the files they replace until after the commit and note the files they
     * placed (see yyc__kv_batch). [caller] */
    struct yyc__kv_batch *batch;
};

/* A data file as it was when captured. It is deleted later only if its name still refers to
 * the same file: a value that another process renamed into place under that name meanwhile
 * (between our row delete and our unlink) survives, and its row never dangles. Captured and
 * deleted within one hold of the folder lock and one data/ (hold == kv->lock_hold while
 * lock_depth > 0), the name cannot have changed hands - no other process renames or unlinks in
 * data/ without the lock, and this storage places files only under names no file has
 * (RENAME_NOREPLACE) - so the delete skips the identity check (one fstatat less per replaced or
 * removed file value). */
typedef struct file_ref {
    char *name; /* NULL: nothing to delete */
    dev_t dev;
    ino_t ino;
    uint64_t hold; /* kv->lock_hold at the capture, 0 if the folder lock was not held */
} file_ref;

/* The files of a transaction of several writes (kv_group_commit.c), while kv->batch points at
 * it. A save (or a removal) in the transaction never deletes a file before the commit: it moves
 * the captured reference of the file it replaces to `old`, deleted after the commit (forgotten
 * after a rollback: the rows name those files again). A save notes the file it placed in
 * `placed`, deleted after a rollback (no row names it then). Room for one of each per write
 * (cap): a write replaces at most one file and places at most one. */
typedef struct yyc__kv_batch {
    file_ref *old;
    size_t n_old;
    struct yyc__kv_placed {
        const char *key; /* borrowed from the write, valid for the transaction */
        char name[256];
    } * placed;
    size_t n_placed;
    size_t cap;
} yyc__kv_batch;

/* --- kv_transactions.c: the row hooks and when a change is committed --- */

/* Whether the linked SQLite has the preupdate hook (weak references: NULL when absent). */
bool yyc__kv_row_hooks_available(void);
/* Installs the hooks on db (the connection being opened; nothing without them). */
void yyc__kv_install_row_hooks(yyc_kv *kv, sqlite3 *db);
/* Forgets where the transaction stood (the connection closed). */
void yyc__kv_txn_reset(yyc_kv *kv);
/* The caller knows the transaction whose commit was seen has ended (it is in a later one, or
 * outside any): the concerns keep that transaction's changes as committed. */
void yyc__kv_txn_settle(yyc_kv *kv);

/* What each concern does, told by kv_transactions.c: a row change this connection makes
 * (SQLite's preupdate hook, inside sqlite3_step; they call nothing but sqlite3_preupdate_* and
 * sqlite3_value_*), a commit hook (the commit may still fail), a commit known to have
 * succeeded (committed), a rollback (also after a commit that failed). */
void yyc__kv_totals_row_changed(yyc_kv *kv, sqlite3 *db, int op);
void yyc__kv_totals_committed(yyc_kv *kv);
void yyc__kv_totals_rolled_back(yyc_kv *kv);
void yyc__kv_watch_row_deleted(yyc_kv *kv, sqlite3 *db); /* kv_removals.c, while watch.on */
void yyc__kv_watch_committing(yyc_kv *kv);
void yyc__kv_watch_committed(yyc_kv *kv);
void yyc__kv_watch_rolled_back(yyc_kv *kv);
/* A reported SQLite failure (kv_sqlite.c): the transaction's counted changes are unsure. */
void yyc__kv_txn_statement_failed(yyc_kv *kv);
/* Turns the preupdate hook off around a statement that empties the manifest (the fast
 * remove-all: SQLite's truncate optimization is off while a preupdate hook is set), unless a
 * removal watch needs it; on again after it. The totals are forgotten (summed at the next read,
 * of an empty table). */
void yyc__kv_row_hook_pause(yyc_kv *kv);
void yyc__kv_row_hook_resume(yyc_kv *kv);

/* --- kv_totals.c (carried by the hooks) and kv_totals_read.c: the count and total cost --- */

/* Forgets the carried totals (a new connection: its data version starts anew). on: whether
 * this connection carries them. */
void yyc__kv_totals_reset(yyc_kv *kv, bool on);
/* The count and total cost (saturated at INT64_MAX) as the open transaction sees them, its own
 * uncommitted changes included. Precondition: a transaction of kv->db is open (a read or a
 * write one; asserted). O(1) unless another connection committed since the last read (then
 * one scan). Returns YYC_OK or a reported error. */
int yyc__kv_totals_read(yyc_kv *kv, int64_t *count, int64_t *cost);
/* A reported SQLite failure: a change of the transaction in progress may have been undone by
 * the failing statement alone (no hook tells), so the transaction's changes count as unknown. */
void yyc__kv_totals_statement_failed(yyc_kv *kv);

/* --- kv_read_hold.c: one read transaction across consecutive reads --- */

/* Finds SQLite's map of the WAL index (at open, once the connection is up; nothing when the
 * hold is off). */
void yyc__kv_read_hold_attach(yyc_kv *kv);
/* Ends the hold and forgets the map (before the connection closes). */
void yyc__kv_read_hold_detach(yyc_kv *kv);
/* A pure read is about to step: continues the held read transaction while it is young, short
 * and the manifest unchanged, else ends it and begins a new one (or holds nothing). */
void yyc__kv_read_begin(yyc_kv *kv);

/* --- kv_sqlite.c: statuses, reporting, statement helpers (the bottom layer) --- */

/* Formats an error; records it as the thread's last error when `record`, reports it through the
 * hook (and the log). Returns code. */
int yyc__kv_report(yyc_kv *kv, bool record, int code, int sqlite_code, int sys_errno,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* An errno failure, recorded and reported; returns its status. */
int yyc__kv_errno_fail(yyc_kv *kv, int err, const char *what);
/* The status of an SQLite failure (sys_errno: SQLite's saved errno). */
int yyc__kv_status_from_sqlite(yyc_kv *kv, int rc, int sys_errno);
/* An SQLite failure, mapped to a status, recorded and reported; returns the status. */
int yyc__kv_sqlite_fail(yyc_kv *kv, int rc, const char *what);
/* The cached statement for sql after a db_check. The SQL is a string literal
 * (yyc__stmt_cache_get_literal); text built at run time goes to yyc__stmt_cache_get. */
int yyc__kv_prepare_checked(yyc_kv *kv, const char *sql, sqlite3_stmt **out);
int yyc__kv_bind_key(sqlite3_stmt *s, int idx, const char *key);
/* Steps a statement that returns no row and gives it back. */
int yyc__kv_step_done(yyc_kv *kv, sqlite3_stmt *s, const char *what);

/* --- kv_manifest.c: the manifest connection --- */

/* Opens the manifest, rebuilding a corrupt one in place; closes the connection. */
int yyc__kv_db_open_or_rebuild(yyc_kv *kv);
void yyc__kv_db_close(yyc_kv *kv);
/* Every operation starts here: an open connection proceeds, a closed one is reopened. */
int yyc__kv_db_check(yyc_kv *kv);
/* prepare does the db_check, then prepare_checked; prepare2 picks sql_crc when the manifest has
 * the checksum columns. */
int yyc__kv_prepare(yyc_kv *kv, const char *sql, sqlite3_stmt **out);
int yyc__kv_prepare2(yyc_kv *kv, const char *sql_plain, const char *sql_crc, sqlite3_stmt **out,
                     bool *with_crc);
/* VACUUM, then a truncating checkpoint. */
int yyc__kv_compact(yyc_kv *kv);

/* --- kv_folder.c: the folder protocol and the files --- */

/* The folder lock (nests); warn_unused_result: nothing proceeds unlocked. */
int yyc__kv_folder_lock(yyc_kv *kv) __attribute__((warn_unused_result));
void yyc__kv_folder_unlock(yyc_kv *kv);
/* An exclusive flock on fd, waiting at most timeout_ms. */
int yyc__kv_flock_bounded(int fd, int timeout_ms);
/* data/: (re)opened, the current one's descriptor, moved to trash/ (takes the folder lock). */
int yyc__kv_open_data_dir(yyc_kv *kv);
int yyc__kv_data_dir(yyc_kv *kv);
void yyc__kv_move_data_to_trash(yyc_kv *kv, bool delete_now);
/* A data file captured now, deleted later only if it is still the same file. */
void yyc__kv_file_ref_capture(yyc_kv *kv, const char *filename, file_ref *r);
void yyc__kv_file_ref_delete(yyc_kv *kv, file_ref *r);
void yyc__kv_file_ref_forget(file_ref *r);
/* Value files: opened for reading, read and closed, placed under a fresh name (folder lock). */
int yyc__kv_open_value_file(yyc_kv *kv, const char *filename, int64_t size, int *fd, size_t *len,
                            bool *drop_file);
int yyc__kv_read_value_file(yyc_kv *kv, int fd, void *buf, size_t len);
int yyc__kv_place_file_locked(yyc_kv *kv, const void *value, size_t value_len, const char *name,
                              int tdfd, const char *tmp, char placed[256]);
/* The space reserve: made when missing and there is room; released for a full disk. */
void yyc__kv_reserve_make(yyc_kv *kv);
bool yyc__kv_reserve_release(yyc_kv *kv);

/* --- kv_storage.c: deletions for the other files --- */

/* Lists candidate rows: prepares and binds the statement (rowid, filename, size, in the order
 * they are to go). *adhoc: finalize it instead of giving it back. */
typedef int (*select_rows_fn)(yyc_kv *kv, const void *arg, sqlite3_stmt **s, bool *adhoc);

/* Deletes the rows `select` lists, then their files, at most `limit` rows per transaction,
 * as every removal does (under the folder lock, working on a full disk: see kv_storage.c's
 * "remove" section). *removed (may be NULL) gets the number of rows deleted. Returns YYC_OK or
 * the error of the step that failed (earlier steps stay done). */
int yyc__kv_delete_selected(yyc_kv *kv, select_rows_fn select, const void *arg, size_t limit,
                            int64_t *removed);

/* --- kv_expiry_clock.c and kv_expiry.c: the expiry column --- */

/* Registers the connection's SQL functions yyc_now_ms() (yyc__kv_now_ms) and
 * yyc_save_expiry() (kv->save_expiry_ms, NULL when 0). Returns an SQLite status. */
int yyc__kv_expiry_register_functions(yyc_kv *kv, sqlite3 *db);
/* The expiry column `col` of the row s is on, as yyc__kv_expired reads it (0: never). */
int64_t yyc__kv_expiry_column(sqlite3_stmt *s, int col);
/* Whether the manifest has the expiry column and its index, adding them when missing. */
bool yyc__kv_expiry_ensure_column(sqlite3 *db);

/* --- kv_storage.c: helpers of the save shared with kv_group_commit.c --- */

/* Deletes a captured file now, or after the commit while a batch is open (kv->batch: moved to
 * its `old` list; forgotten when the list is full: the orphan sweep removes the file later). */
void yyc__kv_delete_after_commit(yyc_kv *kv, file_ref *r);
/* After a failed or rolled-back row write: deletes the file `placed` unless key's row names it.
 * The thread's last error is kept. Caller holds the folder lock. */
void yyc__kv_drop_unsaved_file_locked(yyc_kv *kv, const char *key, const char *placed);

/* --- kv_sweep.c: the background sweeps --- */

/* Empties trash/ on the worker thread; with sweep_data also stale temporaries and orphans. */
void yyc__kv_schedule_trash_empty(yyc_kv *kv, bool sweep_data);

/* Background WAL checkpoints (kv_checkpoints.c). start: turns SQLite's auto-checkpoint off on db
 * (the manifest connection being opened, before kv->db is set) and installs the WAL hook that
 * queues them; YYC_OK or YYC_ENOMEM. wait: runs the kv's queued checkpoint job on this thread or
 * waits for the running one (blocks; a caller's TRUNCATE checkpoint would fail at once with
 * SQLITE_BUSY while ours copies). stop: before the manifest connection closes, runs a queued job on
 * this thread or waits for a running one, then closes the job's connection. */
/* Applies the owner's page cache size (yyc__kv_set_page_cache_kib) to db, a manifest connection
 * being opened (kv_page_cache.c). */
void yyc__kv_apply_page_cache(yyc_kv *kv, sqlite3 *db);

int yyc__kv_checkpoints_start(yyc_kv *kv, sqlite3 *db);
void yyc__kv_checkpoints_wait(yyc_kv *kv);
void yyc__kv_checkpoints_stop(yyc_kv *kv);

#endif /* YYCACHE_KV_INTERNAL_H */
