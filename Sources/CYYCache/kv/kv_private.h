/*
 * kv_private.h - internal entry points of the KV storage used by disk_cache.c and by the
 * tests (private; not API).
 *
 * Thread safety: like yyc_kv itself, none; the caller serialises access to one yyc_kv. The test
 * knobs at the end exist only in test builds (YYC_TESTING). What the KV storage's own files share
 * is in kv_internal.h.
 */
#ifndef YYCACHE_KV_PRIVATE_H
#define YYCACHE_KV_PRIVATE_H

#include <yycache/kv_storage.h>

/* Default busy timeout of the manifest connection, in milliseconds. */
#define YYC__KV_BUSY_TIMEOUT_MS 5000
/* YYKVStorage's lazy-reopen limits (kMaxErrorRetryCount, kMinRetryTimeInterval). */
#define YYC__KV_MAX_OPEN_RETRIES 8
#define YYC__KV_RETRY_INTERVAL 2.0
/* Rows per LRU batch in the fit-to-size/count loops and in the slow remove-all. */
#define YYC__KV_LRU_BATCH 16
#define YYC__KV_REMOVE_ALL_BATCH 32
/* Keys per `IN (...)` statement: well below SQLite's variable limit (999 before 3.32). */
#define YYC__KV_IN_CHUNK 500

/* yyc_kv_open with an error hook installed before the manifest is opened, so that an event
 * of the open itself (a corrupt manifest rebuilt: YYC_ECORRUPT) reaches it. */
int yyc__kv_open_ex(const char *path, yyc_kv_type type, yyc_error_hook hook, void *hook_ctx,
                    yyc_kv **out);

/* Sets the busy timeout (milliseconds; applied now and at every reopen). */
void yyc__kv_set_busy_timeout(yyc_kv *kv, int ms);

/* Whether the manifest connection is open now (false after a failed reopen, until the next call
 * reopens it). */
bool yyc__kv_is_open(const yyc_kv *kv);

/* The trims a disk cache runs in batches (yyc__kv_trim_batch). */
typedef enum yyc__kv_trim {
    YYC__KV_TRIM_TO_SIZE,  /* least recently used first, until the total size is at most value */
    YYC__KV_TRIM_TO_COUNT, /* the same until the count is at most value */
    YYC__KV_TRIM_EARLIER   /* entries last accessed before value (seconds since the epoch) */
} yyc__kv_trim;

/* One batch of a trim: at most YYC__KV_LRU_BATCH (fits) or 256 (age) rows and their files
 * deleted in one transaction under the folder lock (the full-disk retries of the removals
 * included), the fits deciding on the totals the connection carries (O(1), kv_totals.c).
 * Without them (an SQLite without the preupdate hook) the whole trim runs in this call.
 * value: 1..INT64_MAX - 1 for the fits (0 and INT64_MAX are the caller's: remove-all, nothing), > 0
 * for the age. *more: candidates may remain, call again; *removed: rows deleted. Returns YYC_OK or
 * an error (the batch's rows kept). Blocks like every removal (folder lock, busy timeout). No
 * checkpoint: the caller ends with one. */
int yyc__kv_trim_batch(yyc_kv *kv, yyc__kv_trim kind, int64_t value, bool *more, int64_t *removed);

/* The file system holding the folder is short of space: less than YYC__KV_SHORT_OF_SPACE_BYTES
 * free (or its free space is unknown). Then a disk cache's trim truncates the WAL at once on
 * the caller's thread, so that the space it freed is there for the next set; with more room it
 * leaves that to the checkpoint queue. */
#define YYC__KV_SHORT_OF_SPACE_BYTES (4 * (uint64_t)YYC__KV_WAL_LIMIT_BYTES) /* 24 MiB */
bool yyc__kv_space_is_short(yyc_kv *kv);

/* Asks the checkpoint queue for a TRUNCATE checkpoint of the WAL on its own connection (after
 * a large deletion: a disk cache's trim), instead of one on the caller's thread under the
 * caller's locks; best effort like every truncating checkpoint (skipped while another
 * connection reads). Without a queue (no thread) it runs here. */
void yyc__kv_checkpoints_truncate_soon(yyc_kv *kv);

/* The commit that finds the last background checkpoint done and only a few pages beyond it
 * copies them itself (kv_checkpoints.c), with two fsyncs, and a commit past the WAL's cap waits
 * for the checkpoint. With on, such a commit queues the job instead (or finds it queued or
 * running), for the owner to run or wait for after releasing its own lock (a disk cache: so that
 * no caller waits behind those fsyncs): yyc__kv_take_due_checkpoint, under the owner's lock,
 * returns a token (NULL: nothing due); yyc__kv_run_due_checkpoint(token), after it, runs the
 * queued job on this thread or waits for the running one (blocks; safe after the kv closed: the
 * token is never followed). */
void yyc__kv_set_tail_checkpoint_outside(yyc_kv *kv, bool on);
const void *yyc__kv_take_due_checkpoint(yyc_kv *kv);
void yyc__kv_run_due_checkpoint(const void *token);

/* The manifest connection's page cache, in KiB (0: SQLite's default), now if the connection is
 * open and at every later open (kv_page_cache.c). Memory-mapped I/O stays off. */
void yyc__kv_set_page_cache_kib(yyc_kv *kv, int64_t kib);
int64_t yyc__kv_page_cache_kib(const yyc_kv *kv);

/* Removes up to `limit` least recently used items (files too). *removed gets the number of
 * rows removed (0 when the storage is empty). Returns YYC_OK or an error. */
int yyc__kv_remove_lru_batch(yyc_kv *kv, int limit, int64_t *removed);

/* The WAL's size after a restart (PRAGMA journal_size_limit, bytes): in the first commit after a
 * checkpoint lets the WAL restart, SQLite truncates it to this size instead of keeping its
 * high-water mark (after a large transaction, say). It is above the WAL of a normal cycle (see
 * below; at most YYC__KV_WAL_CAP_PAGES pages of 4 KB, 4 MB): a cap below the cycle truncated the
 * WAL at every restart, and its pages were freed and allocated again every time (Benchmarks/
 * README.md, "Design measurements").
 * Checkpoints run on the checkpoint queue (kv_checkpoints.c): */
#define YYC__KV_WAL_LIMIT_BYTES 6291456 /* 6 MiB */
/* a commit that leaves this many WAL pages or more queues a passive checkpoint (one at a time);
 * the commit that finds the last one done and at most YYC__KV_CHECKPOINT_TAIL_PAGES pages beyond
 * what it copied copies those itself, so the WAL restarts; */
#define YYC__KV_CHECKPOINT_PAGES 256
#define YYC__KV_CHECKPOINT_TAIL_PAGES 64
/* and one that leaves YYC__KV_WAL_CAP_PAGES or more runs the queued one itself (or waits for
 * the running one) and then copies the rest: a writer that never pauses keeps the WAL under this
 * plus one transaction. Another process reading an old snapshot can hold the WAL longer, as in
 * SQLite itself. */
#define YYC__KV_WAL_CAP_PAGES 1000

/* Access times noted by reads instead of written at once (kv_access_times.c): at most this
 * many keys wait; a read of another key while they do keeps that key's older time. */
#define YYC__KV_ACCESS_MAX 8192

/* Turns deferred access times on or off (off by default: a read writes its key's access time at
 * once, as YYKVStorage does; turning it off writes what waits). */
void yyc__kv_set_deferred_access_times(yyc_kv *kv, bool on);
/* Notes that key was read at `now` (unix seconds) instead of writing it. */
void yyc__kv_note_access(yyc_kv *kv, const char *key, int64_t now);
/* How many keys' access times wait. */
size_t yyc__kv_access_times_pending(const yyc_kv *kv);
/* Writes up to max waiting access times (the oldest noted first; SIZE_MAX: all) in one
 * transaction, each only if it is newer than the row's, and forgets them, written or not.
 * Returns YYC_OK or an error (a closed manifest keeps them for a later call). */
int yyc__kv_write_access_times(yyc_kv *kv, size_t max);
/* Frees the map (at close, after the last write). */
void yyc__kv_access_times_destroy(yyc_kv *kv);

/* The read transaction held across consecutive pure reads (kv_read_hold.c): at most this many
 * reads, and never longer than this (the owner's timer ends an idle one; the reads measure it
 * on the coarse clock, so one may find it held up to a clock tick, about 4 ms, longer). */
#define YYC__KV_READ_HOLD_USES 256
#define YYC__KV_READ_HOLD_SECONDS 0.005
/* After a read found another connection's commit, nothing is held for this long (seconds): a
 * held read keeps other connections' checkpoints from restarting the WAL, so among writers of
 * other processes (more than 20 commits a second) reads are not held at all (a bound as short
 * as the hold itself let a busy writer's WAL in another process grow far past its cap). */
#define YYC__KV_READ_HOLD_QUIET_SECONDS 0.05

/* Turns the held read transaction on or off (off by default: an owner that turns it on must
 * end an idle one within YYC__KV_READ_HOLD_SECONDS with yyc__kv_end_read). */
void yyc__kv_set_read_hold(yyc_kv *kv, bool on);
/* Ends the held read transaction, if any (no I/O beyond SQLite's lock calls). */
void yyc__kv_end_read(yyc_kv *kv);
/* Whether a read transaction is held now. */
bool yyc__kv_read_is_held(const yyc_kv *kv);

/* A TRUNCATE WAL checkpoint that waits for no other connection (busy ones leave it passive;
 * errors ignored). */
void yyc__kv_checkpoint(yyc_kv *kv);

/* The size in bytes of manifest.sqlite-wal now (0 when there is none). Touches only the folder's
 * metadata (one fstatat); no lock, no SQLite call. Returns YYC_OK, YYC_EINVAL (NULL argument) or
 * an I/O error (*out = 0). For yycache stats. */
int yyc__kv_wal_size(yyc_kv *kv, int64_t *out);

/* Compacts the manifest under the folder lock: VACUUM (gives the free pages back to the file
 * system), then a truncating checkpoint (the WAL back to 0 bytes when no other connection
 * reads). Blocks for as long as the VACUUM (it rewrites the whole manifest, needing up to its
 * size again in free space) and waits up to the busy timeout for other connections. Returns
 * YYC_OK or an error (YYC_EBUSY, YYC_ENOSPC, ...; the manifest is then unchanged). */
int yyc__kv_vacuum(yyc_kv *kv);

/* --- expiry (kv_expiry.c): a column of ours, unix milliseconds; NULL never expires --- */

/* Now on the expiry clock: unix milliseconds (CLOCK_REALTIME, moved by the test clock). */
int64_t yyc__kv_now_ms(void);

/* The one rule for "expired", for every deadline the library keeps (a row's, a queued write's,
 * a two-level cache's memory copy of a disk entry): a deadline in unix milliseconds on the
 * expiry clock (0: never) has passed when now >= it. The manifest's SQL says the same
 * (LIVE_ROW, kv_internal.h); a row's stored value is read by yyc__kv_expiry_of. */
static inline bool yyc__kv_expired(int64_t expiry_ms, int64_t now_ms) {
    return expiry_ms != 0 && now_ms >= expiry_ms;
}

/* The expiry of a row saved now with a time to live of ttl_seconds (>= 0; INFINITY: none):
 * now plus the time to live rounded up to a millisecond, or 0 (none) for INFINITY or a time to
 * live beyond the clock's range. Negative counts as 0 (expired at once). */
int64_t yyc__kv_expiry_from_ttl(double ttl_seconds);

/* yyc_kv_save, the row expiring at expiry_ms (unix ms; 0: never, exactly yyc_kv_save). A row
 * expires when now >= its expiry: from then on no yyc_kv read returns it (item, info, value,
 * the lists, exists). Returns: as yyc_kv_save, and YYC_EIO when the manifest has no expiry
 * column (it could not be added at open; nothing is written). */
int yyc__kv_save_with_expiry(yyc_kv *kv, const char *key, const void *value, size_t value_len,
                             const char *filename, const void *extended, size_t extended_len,
                             int64_t expiry_ms);

/* The expiry of key's row, expired or not (0: never). Returns YYC_OK, YYC_NOTFOUND (no row, or
 * an empty key), errors. */
int yyc__kv_expiry_of(yyc_kv *kv, const char *key, int64_t *expiry_ms);

/* Removes key's row (and file) if it has expired, deciding in the delete's own transaction
 * (under the folder lock, as every removal); *removed tells whether it did. Call it after a read
 * found the row expired (yyc__kv_take_read_found_expired): it always takes the folder lock and
 * opens a write transaction. Returns YYC_OK (also when nothing was expired) or an error. */
int yyc__kv_remove_if_expired(yyc_kv *kv, const char *key, bool *removed);

/* Whether the last one-key read (yyc_kv_get_item, _get_item_info, _get_value, _exists) answered
 * a miss because key's row had expired; clears it. A miss of a missing row answers false, so a
 * caller removes expired rows on read without a second query. */
bool yyc__kv_take_read_found_expired(yyc_kv *kv);

/* Removes every expired row and its file (one index range per batch, under the folder lock as
 * every removal; see yyc_kv_remove) and checkpoints when any went. *removed (may be NULL) gets
 * the number of rows removed. Returns YYC_OK or an error (earlier batches stay removed). */
int yyc__kv_remove_expired(yyc_kv *kv, int64_t *removed);

/* The number of expired rows still in the manifest (one index range). Returns YYC_OK or an
 * error (*out = 0). */
int yyc__kv_count_expired(yyc_kv *kv, int64_t *out);

/* --- removal watch (kv_removals.c): which keys a call removed --- */

/* Starts recording the key of every manifest row this storage deletes (any removal, trim or
 * remove-all; not saves), keeping only those whose transaction commits. Needs SQLite's
 * preupdate hook (yyc__kv_can_watch_removals); without it nothing is recorded. Not nested. */
void yyc__kv_watch_removals(yyc_kv *kv);
/* Stops recording; *keys gets the recorded keys (transferred: free each, then the array;
 * NULL when none) and the count is returned. *lost: a key could not be recorded (out of
 * memory), so the count may be short. */
size_t yyc__kv_unwatch_removals(yyc_kv *kv, char ***keys, bool *lost);
/* Whether the removal watch works here (the linked SQLite has the preupdate hook). */
bool yyc__kv_can_watch_removals(const yyc_kv *kv);
/* Whether the last yyc_kv_save replaced a row of its key (false without the preupdate hook). */
bool yyc__kv_last_save_replaced(const yyc_kv *kv);

/* --- entries a page at a time (kv_entries.c) --- */

/* Where a walk of the entries is: after the row (last_access_time, rowid); not started: at
 * the beginning. The access time is kept as the row held it (a copy of the column's value,
 * whatever its type: a hostile REAL, TEXT or NULL orders as SQLite orders it), freed by
 * yyc__kv_cursor_clear. */
typedef struct yyc__kv_cursor {
    bool started;
    struct sqlite3_value *last_access_time; /* owned; NULL: the row's was NULL */
    int64_t rowid;
} yyc__kv_cursor;
/* Frees what the cursor holds and puts it back at the beginning. */
void yyc__kv_cursor_clear(yyc__kv_cursor *cursor);

/* One entry of a page; key and filename (NULL: inline) are owned (yyc__kv_entries_clear). */
typedef struct yyc__kv_entry {
    int64_t rowid;
    char *key;
    char *filename;
    int64_t size, modification_time, last_access_time;
    int64_t expiry_ms; /* 0: none */
} yyc__kv_entry;

/* The next page of at most max live entries after *cursor, least recently used first (ties by
 * rowid), into out[0..*n); *cursor moves past them; *more: the page was full (entries may
 * follow). One indexed query; nothing stays open after it. Rows with a key that is not text
 * are skipped. Returns YYC_OK or an error (*n = 0, *cursor unchanged). */
int yyc__kv_entries_page(yyc_kv *kv, yyc__kv_cursor *cursor, size_t max, yyc__kv_entry *out,
                         size_t *n, bool *more);
/* Frees the strings of entries[0..n). */
void yyc__kv_entries_clear(yyc__kv_entry *entries, size_t n);
/* One write of a batch (kv_group_commit.c): a save of key (value, file name, extended data as
 * yyc_kv_save takes them; everything borrowed for the call) or, with remove, a removal of key.
 * status (and error, when status is not YYC_OK) are set by the batch. */
typedef struct yyc__kv_write {
    const char *key;
    bool remove;
    const void *value;
    size_t len;
    const char *filename; /* NULL or "": inline */
    const void *extended;
    size_t extended_len;
    int64_t expiry_ms; /* a save's expiry (unix ms; 0: never), as yyc__kv_save_with_expiry */
    yyc_error *error;  /* NULL, or where the details of a failure go (out; owned by the caller:
                        * a deferred batch's writes have none, its failure is the thread's) */
    int status;        /* out */
    bool replaced;     /* out: a save that committed replaced a row of its key (a save rolled back
                        * with its transaction did not); always false
                        * without the preupdate hook */
} yyc__kv_write;

/* Group commit: the writes in one transaction under the folder lock, in order (a later write of
 * a key wins). Each write gets its own status: when one fails, the transaction is rolled back
 * (the files it placed are deleted, the rows and files are as before), that write keeps its
 * failure, and the others are tried together again without it. Files replaced are deleted only
 * after the commit. When the transaction itself cannot be used (BEGIN or the COMMIT fails, or
 * SQLite rolled it back after a write that succeeded), it is rolled back likewise and every write
 * that had not failed on its own is done again alone, in its own transaction, as yyc_kv_save /
 * yyc_kv_remove do it (so it still succeeds or fails by itself).
 * The folder lock failing (YYC_EBUSY beyond the busy timeout, or a lock error) fails every write
 * with that error, as it fails a write alone: no write proceeds without the lock.
 * One write is simply yyc_kv_save / yyc_kv_remove. Returns the number of writes whose status is
 * not YYC_OK. Errors are reported through the hook as they happen (a failed transaction whose
 * writes then succeed alone is reported too). */
size_t yyc__kv_save_each(yyc_kv *kv, yyc__kv_write *const *writes, size_t n);

/* All or nothing: the writes in one transaction under the folder lock, in order. Either every
 * write is committed (YYC_OK) or none is (the first error; the files placed are deleted, the
 * rows and files are as before). Files replaced are deleted after the commit. Every status is
 * set to the result. */
int yyc__kv_apply_batch(yyc_kv *kv, yyc__kv_write *const *writes, size_t n);

#ifdef YYC_TESTING
/* Testing: moves the expiry clock (yyc__kv_now_ms) forward by ms (backward if negative), for
 * every storage of the process. Thread-safe. */
void yyc__kv_testing_advance_clock(int64_t ms);
/* Testing: stops the expiry clock where it is now (frozen true; only advance_clock moves it
 * then), or lets it run again (false). Thread-safe. */
void yyc__kv_testing_freeze_clock(bool frozen);

/* Testing: the lazy-reopen limits, and the next n opens of the manifest fail with YYC_EIO. */
void yyc__kv_set_reopen_policy(yyc_kv *kv, int max_tries, double interval_seconds);
void yyc__kv_fail_next_opens(yyc_kv *kv, int n);
/* Testing: the next folder lock fails with errno err (as flock would), once. */
void yyc__kv_fail_next_folder_lock(yyc_kv *kv, int err);
/* Testing: closes the manifest connection as a failed reopen would leave it (the next call
 * reopens lazily). */
void yyc__kv_close_connection(yyc_kv *kv);

/* Testing: whether a save learns the file name of the row it replaces from SQLite's preupdate
 * hook (on, the default, when the linked SQLite has it) or looks it up first (off). Returns
 * whether the hook is in use now. */
bool yyc__kv_set_old_row_hook(yyc_kv *kv, bool on);

/* Testing: how many background checkpoint jobs ran on a worker thread, and how many checkpoints
 * of the WAL hook ran elsewhere (the rest copied by a commit, or a queued job that a close ran on
 * its own thread), counting those after which the WAL had copied frames; every storage, since the
 * process started. */
void yyc__kv_checkpoint_counts(int *on_worker, int *on_caller);
/* Testing: the WAL pages at which a commit queues a checkpoint, and at which it waits for one
 * (0 < trigger <= cap). The manifest must be open. */
void yyc__kv_set_checkpoint_pages(yyc_kv *kv, int trigger, int cap);
/* Testing: fn(ctx) runs (no lock of the checkpoints held) whenever a copy of the WAL's last pages
 * begins: inside a commit, or a job queued for the owner to run (NULL: none). Process-wide. */
void yyc__kv_testing_set_tail_copy_hook(void (*fn)(void *ctx), void *ctx);
/* Testing: the manifest connection's `pragma cache_size` and `pragma mmap_size` now (0 and -1
 * when it is closed). */
int64_t yyc__kv_testing_cache_size_pragma(yyc_kv *kv);
int64_t yyc__kv_testing_mmap_size_pragma(yyc_kv *kv);
/* Testing: how many checkpoint jobs are inside SQLite calls now (a fork never sees one). */
int yyc__kv_checkpoint_jobs_in_sqlite(void);
/* Testing: how many times the storage summed its manifest for its totals (kv_totals.c). */
uint64_t yyc__kv_totals_scans(const yyc_kv *kv);
/* Testing: the busy timeout (milliseconds) of every storage opened from now on, in the whole
 * process (0: back to YYC__KV_BUSY_TIMEOUT_MS), so a test of a locked manifest need not wait the
 * real 5 s. Thread-safe. */
void yyc__kv_testing_set_default_busy_timeout(int ms);
#endif /* YYC_TESTING */

#endif /* YYCACHE_KV_PRIVATE_H */
