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

/* Removes up to `limit` least recently used items (files too). *removed gets the number of
 * rows removed (0 when the storage is empty). Returns YYC_OK or an error. */
int yyc__kv_remove_lru_batch(yyc_kv *kv, int limit, int64_t *removed);

/* The WAL's size after a checkpoint (PRAGMA journal_size_limit, bytes): after a checkpoint
 * lets the WAL restart, SQLite truncates it to this size instead of keeping its high-water
 * mark. Checkpoints run on the checkpoint queue, queued by a commit that leaves 1000 pages or
 * more in the WAL, never inside the commit. */
#define YYC__KV_WAL_LIMIT_BYTES 1048576
/* The WAL's cap (pages): a commit that leaves at least this many pages in the WAL waits
 * (up to the busy timeout) for the queued checkpoint, so a writer that commits faster than the
 * checkpoints complete cannot grow the WAL past it by more than one transaction. Another
 * process reading an old snapshot can still hold the WAL longer, as in SQLite itself. */
#define YYC__KV_WAL_CAP_PAGES 4000

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
    int status;      /* out */
    yyc_error error; /* out: the details of a failure */
} yyc__kv_write;

/* Group commit: the writes in one transaction under the folder lock, each in its own SAVEPOINT,
 * in order (a later write of a key wins). Each write gets its own status: one that fails is
 * rolled back to its savepoint and fails alone; the others commit. Files replaced are deleted
 * only after the commit. When the transaction itself cannot be used (BEGIN, a SAVEPOINT or the
 * COMMIT fails, or SQLite rolled it back after an error), it is rolled back, the files it placed
 * are deleted, and every write that had not failed on its own is done again alone, in its own
 * transaction, as yyc_kv_save / yyc_kv_remove do it (so it still succeeds or fails by itself).
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
/* Testing: whether the manifest connection is open now (false after a failed reopen). */
bool yyc__kv_is_open(const yyc_kv *kv);

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

/* Testing: how many of the WAL checkpoints queued after commits (every storage, since the
 * process started) copied pages into the database on a worker thread, and how many on another thread (a close
 * drains a queued one on its own thread). */
void yyc__kv_checkpoint_counts(int *on_worker, int *elsewhere);
#endif /* YYC_TESTING */

#endif /* YYCACHE_KV_PRIVATE_H */
