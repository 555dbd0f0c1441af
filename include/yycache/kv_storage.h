/*
 * yycache/kv_storage.h - key/value storage on SQLite and files (YYKVStorage).
 *
 * A yyc_kv is an object. Constructor: yyc_kv_open(). Destructor: yyc_kv_close().
 *
 * Layout of a storage folder (a file-format contract, byte-compatible with YYKVStorage):
 *   <path>/manifest.sqlite (+ -wal, -shm)   table `manifest`, WAL mode, synchronous=NORMAL
 *   <path>/data/<filename>                  one file per value stored outside SQLite
 *   <path>/trash/<UUID>/                    former data/ folders waiting to be deleted
 *   <path>/space.reserve                    256 KiB kept for removals on a full disk (ours;
 *                                           YYKVStorage ignores it; see yyc_kv_remove)
 *
 * Keys are NUL-terminated strings (normally UTF-8; other bytes are stored as they are).
 * An empty key makes writes fail with YYC_EINVAL; reads report YYC_NOTFOUND / false; removals
 * do nothing and return YYC_OK. Values may be empty (0 bytes; stored and read back as empty).
 *
 * Beyond YYKVStorage, each row also stores a CRC-32C of its value and one of its extended data
 * in columns YYKVStorage ignores (value_crc32c, extended_crc32c; NULL when there is nothing to
 * check): a value or extended data that does not match, or a data file whose length differs
 * from the recorded size, reads as YYC_NOTFOUND, is removed, and is reported as YYC_ECORRUPT
 * through the error hook. The item getters (info ones included) check the extended data;
 * yyc_kv_get_value, which does not return it, does not. Rows written by YYKVStorage (no
 * checksum) still read.
 *
 * Several processes may use one folder at once: every change of a row and its file happens under
 * an flock on the folder, and SQLite waits up to its busy timeout (5 s) for other connections.
 * The flock is waited for up to the same busy timeout too; a call that cannot get it returns
 * YYC_EBUSY (any other failure to lock is reported as well) and changes nothing.
 *
 * Thread safety: NOT thread-safe. One thread at a time per yyc_kv (yyc_diskcache adds the lock).
 * Blocking: every call may read or write the disk except yyc_kv_path, yyc_kv_type_of, the error
 * hook and log settings, yyc_kv_item(s)_free, yyc_kv_filename_is_valid and yyc_kv_md5_filename.
 * WAL checkpoints: no save or removal runs SQLite's auto-checkpoint. A commit that leaves 256
 * pages or more in the WAL queues a passive checkpoint on a background thread (through a
 * connection of its own); the commit that finds it done with at most 64 pages written since
 * copies those few itself, so that the WAL restarts; a commit that leaves 1,000 pages or more
 * runs the queued one itself or waits for the running one (the WAL stays under that plus one
 * transaction, unless another process reads an old snapshot, as with SQLite's own). Remove-all,
 * the trims and vacuum end with a truncating checkpoint on the calling thread, after running or
 * waiting for a queued one; a close runs a queued one.
 * Misuse: a NULL storage (or NULL output pointer) returns YYC_EINVAL (asserted in debug builds),
 * or NULL / false / no-op for functions without status.
 * Errors: a call returning an error status records details for yyc_last_error().
 * Time: modification and access times are unix seconds from time(NULL).
 */
#ifndef YYCACHE_KV_STORAGE_H
#define YYCACHE_KV_STORAGE_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct yyc_kv yyc_kv;

typedef enum yyc_kv_type {
    YYC_KV_FILE = 0,   /* every value in data/; a file name is required on save */
    YYC_KV_SQLITE = 1, /* every value inline in the manifest; file names are ignored */
    YYC_KV_MIXED = 2   /* per item: a file if a file name is given, else inline */
} yyc_kv_type;

/* One stored item. Items handed out by the library are allocated in one block per item and
 * freed with yyc_kv_item_free (lists with yyc_kv_items_free); value and extended_data start at
 * offsets aligned to _Alignof(max_align_t), so they may be read as any type. */
typedef struct yyc_kv_item {
    char *key;   /* NUL-terminated */
    void *value; /* NULL in "info" results; may be NULL when value_len == 0 */
    size_t value_len;
    char *filename;            /* NULL when the value is inline */
    int64_t size;              /* value length recorded in the manifest */
    int64_t modification_time; /* unix seconds */
    int64_t last_access_time;  /* unix seconds */
    void *extended_data;       /* NULL when absent or empty */
    size_t extended_len;
} yyc_kv_item;

/* Called with the details of every error and notable event (for example a corrupt manifest
 * that was rebuilt empty: code YYC_ECORRUPT). Runs on the thread of the failing call;
 * it must not call back into the same storage. An event that happened before a hook was set
 * (a rebuild during open) is kept and delivered when the hook is set. The calling thread's
 * yyc_last_error is restored after the hook returns, so a library call in the hook that fails
 * does not replace the error of the call that reported. */
typedef void (*yyc_error_hook)(void *ctx, const yyc_error *e);

/* Progress of a slow remove-all: removed so far, and the total at the start. */
typedef void (*yyc_progress_fn)(void *ctx, int64_t removed, int64_t total);

/* Opens (creating folders and manifest as needed) the storage at path. A manifest that is not a
 * database or is corrupt (SQLITE_CORRUPT / SQLITE_NOTADB), or has a foreign schema (a view,
 * index or trigger named manifest, a table manifest without YYKVStorage's columns or with a
 * column named rowid), is rebuilt empty in place - the file is reset, never unlinked, so other
 * connections keep using it - with data/ moved to the trash, and the event is reported through
 * the error hook and yyc_last_error (code YYC_ECORRUPT, the message naming the foreign object)
 * - but the open succeeds. A busy or locked manifest is never deleted: the open fails with
 * YYC_EBUSY and every file stays. Folders are created 0700, files 0600.
 * Returns: YYC_OK, YYC_EINVAL (empty path, path too long, bad type), YYC_EIO, YYC_EPERM,
 * YYC_ENOSPC, YYC_EBUSY, YYC_ESQLITE, YYC_ENOMEM.
 * Ownership: path is copied; *out is transferred (close with yyc_kv_close; NULL on error). */
YYC_API int yyc_kv_open(const char *path, yyc_kv_type type, yyc_kv **out);

/* Waits for the storage's background work, finalizes every cached statement, then closes the
 * database and frees kv (which must not be used again). NULL is fine. May block on the disk. */
YYC_API void yyc_kv_close(yyc_kv *kv);

/* The path as given to yyc_kv_open (borrowed; valid until close), and the type (NULL and
 * YYC_KV_MIXED for a NULL storage). */
YYC_API const char *yyc_kv_path(const yyc_kv *kv);
YYC_API yyc_kv_type yyc_kv_type_of(const yyc_kv *kv);

/* Error reporting: the hook (NULL to remove it) and whether errors are also printed to stderr
 * (default false). ctx is borrowed until the hook is replaced or the storage is closed. Setting a
 * hook delivers at once, on the calling thread, an event kept from before (see yyc_error_hook).
 * The hook runs on the thread of the failing call, possibly while the folder's flock is held
 * (other processes then wait for it): it must be quick and must not call this storage (queue
 * the event instead, as yyc_diskcache does). */
YYC_API void yyc_kv_set_error_hook(yyc_kv *kv, yyc_error_hook hook, void *ctx);
YYC_API void yyc_kv_set_error_logs_enabled(yyc_kv *kv, bool on);
YYC_API bool yyc_kv_error_logs_enabled(const yyc_kv *kv);

/* Saves a value. With a filename (types FILE and MIXED) the value is written to a temporary
 * file in data/ and moved, never over an existing file, to a fresh name: data/<filename> when no
 * file has that name, else a variant <filename>~<8 hex digits> (filename cut to fit 255 bytes);
 * the row is then switched to that name in one statement, and the key's previous file (if any)
 * is deleted only after that commit. The item's filename (yyc_kv_item) is the name actually
 * used, so after a replace it may be the variant; YYKVStorage reads whatever name the row says.
 * Inline saves likewise delete the key's previous file after the commit. A failure at any step
 * (temporary file, move, row write, commit) leaves the key's previous value readable as it was;
 * a process crash leaves the previous value or the new one (there is no fsync: after a power
 * loss either may be missing). The file name must be a single path component: no '/', no NUL, not
 * "." or "..", at most 255 bytes, and not starting with ".yyc-tmp-" (reserved for the library's
 * temporary files). Size is value_len; both times are now. value may be NULL only when value_len is
 * 0. extended may be NULL. Returns: YYC_OK, YYC_EINVAL (empty key, bad or reserved file name, FILE
 * type without a file name, NULL value with value_len > 0; nothing is written), YYC_ETOOBIG (value
 * when inline, or extended data, above SQLite's blob limit), YYC_EIO, YYC_ENOSPC, YYC_EPERM,
 * YYC_EBUSY, YYC_ESQLITE, YYC_ENOMEM, YYC_ECLOSED (the database could not be reopened). Ownership:
 * everything is copied. */
YYC_API int yyc_kv_save(yyc_kv *kv, const char *key, const void *value, size_t value_len,
                        const char *filename, const void *extended, size_t extended_len);

/* Removes one key (its file too). Returns: YYC_OK (also when absent), errors as above. The
 * removals below return the same: YYC_OK or an error, never YYC_NOTFOUND.
 * Every removal and trim chooses its rows and deletes exactly those (by rowid, whatever their
 * key holds: a row with a NULL or BLOB key is removed like any other) and then their files, in
 * one step under the folder lock and one SQLite transaction, so another process never sees a
 * row whose file is gone. They work on a full disk: when SQLite cannot record the delete, the
 * call retries after a WAL checkpoint, after releasing the space reserve (made again once the
 * disk has room), and as a last resort deletes the chosen rows' files before the rows; only a
 * WAL of inline values too large to checkpoint in the space freed leaves YYC_ENOSPC (then
 * yyc_kv_remove_all still works). */
YYC_API int yyc_kv_remove(yyc_kv *kv, const char *key);
/* Removes a list of keys (chunked below SQLite's variable limit). n == 0 is YYC_OK; a NULL list
 * with n > 0 is YYC_EINVAL. A failing chunk stops the call (earlier chunks stay removed).
 * Ownership: keys are borrowed. */
YYC_API int yyc_kv_remove_keys(yyc_kv *kv, const char *const *keys, size_t n);
/* Removes items whose size is larger than size. INT64_MAX: nothing; size <= 0: everything. */
YYC_API int yyc_kv_remove_larger_than(yyc_kv *kv, int64_t size);
/* Removes items last accessed strictly before time. time <= 0: nothing; INT64_MAX: all. */
YYC_API int yyc_kv_remove_earlier_than(yyc_kv *kv, int64_t time);
/* LRU eviction (oldest last_access_time first, ties by rowid) until the total size / count is
 * at most the limit (as yyc_kv_size counts it: a row whose size is not a positive integer costs
 * nothing). INT64_MAX: nothing; <= 0: everything. Trims by size, age and LRU end with a WAL
 * checkpoint that truncates it (when no other connection is reading). */
YYC_API int yyc_kv_remove_to_fit_size(yyc_kv *kv, int64_t max_size);
YYC_API int yyc_kv_remove_to_fit_count(yyc_kv *kv, int64_t max_count);
/* Fast remove-all: deletes every row in one transaction, moves data/ to trash/<UUID> (emptied
 * on the background worker), vacuums the manifest and truncates its WAL. It never unlinks or
 * recreates the manifest (other connections, other processes, keep using it: YYCache #96). On a
 * full disk the files are deleted first, freeing their space, and the row delete is retried (if
 * that fails too, YYC_ENOSPC: the rows left name missing files and read as misses); other
 * errors leave everything as it was; a manifest found corrupt is rebuilt empty in place (SQLite's
 * database reset, under the folder lock) and the event reported (YYC_ECORRUPT through the hook). A
 * closed manifest is reopened regardless of the lazy-reopen limits.
 * Returns: YYC_OK, YYC_EBUSY (another connection writes; nothing removed), errors. */
YYC_API int yyc_kv_remove_all(yyc_kv *kv);
/* Slow remove-all: deletes rows and files in LRU batches of 32, calling progress (may be NULL)
 * after each batch with monotonically increasing counts ending at (total, total), on the calling
 * thread (ctx borrowed for the call). An empty storage returns YYC_OK without calling
 * progress. */
YYC_API int yyc_kv_remove_all_progress(yyc_kv *kv, yyc_progress_fn progress, void *ctx);

/* Gets a whole item (value included) and refreshes its access time. A row whose data file is
 * missing is deleted and reported as YYC_NOTFOUND.
 * Returns: YYC_OK (*out transferred, free with yyc_kv_item_free), YYC_NOTFOUND (*out = NULL;
 * also for an empty key), errors. Ownership: key is borrowed. */
YYC_API int yyc_kv_get_item(yyc_kv *kv, const char *key, yyc_kv_item **out);
/* Item metadata without the value; no access-time update, no file read. Returns and ownership
 * as yyc_kv_get_item. */
YYC_API int yyc_kv_get_item_info(yyc_kv *kv, const char *key, yyc_kv_item **out);
/* The value only; refreshes the access time only when a value was found.
 * Returns: YYC_OK (*out_value transferred, free with yyc_free; may be NULL when *out_len is 0),
 * YYC_NOTFOUND (*out_value = NULL, *out_len = 0), errors. Ownership: key is borrowed. */
YYC_API int yyc_kv_get_value(yyc_kv *kv, const char *key, void **out_value, size_t *out_len);
/* Several items (values included) in SQLite's order; missing keys are absent. Refreshes the
 * access time of every requested key when at least one item was found.
 * Returns: YYC_OK (*out_items transferred, *out_count items, possibly 0 and then *out_items may
 * be NULL; free with yyc_kv_items_free), YYC_EINVAL (NULL keys with n > 0), errors (nothing is
 * handed out). Ownership: keys are borrowed. */
YYC_API int yyc_kv_get_items(yyc_kv *kv, const char *const *keys, size_t n,
                             yyc_kv_item ***out_items, size_t *out_count);
/* Several items without values; no access-time update. Returns and ownership as
 * yyc_kv_get_items. */
YYC_API int yyc_kv_get_item_infos(yyc_kv *kv, const char *const *keys, size_t n,
                                  yyc_kv_item ***out_items, size_t *out_count);

/* Whether key has a row (no access-time update). Returns: YYC_OK, YYC_NOTFOUND (also for an
 * empty key), errors. */
YYC_API int yyc_kv_exists(yyc_kv *kv, const char *key);
/* Row count and sum of sizes (64-bit; sizes that are not positive integers - a hostile row's
 * NULL, text or negative size - count 0, and the sum saturates at INT64_MAX instead of failing).
 * O(1) while no other connection wrote the manifest since the last read (the storage keeps both
 * from its own changes); else one scan. Returns: YYC_OK, YYC_EINVAL (NULL out), errors; *out is
 * 0 on error. */
YYC_API int yyc_kv_count(yyc_kv *kv, int64_t *out);
YYC_API int yyc_kv_size(yyc_kv *kv, int64_t *out);

/* Free an item handed out by yyc_kv_get_item / _get_item_info (one block: its strings and
 * buffers go with it), or a whole list from yyc_kv_get_items / _get_item_infos with the count
 * returned alongside it. NULL is fine. Ownership: takes back what the library transferred. */
YYC_API void yyc_kv_item_free(yyc_kv_item *item);
YYC_API void yyc_kv_items_free(yyc_kv_item **items, size_t count);

/* Whether name is acceptable as a data file name (one path component, 1..255 bytes, no '/',
 * no NUL, not "." or "..", not starting with the reserved prefix ".yyc-tmp-" of the library's
 * temporary files). false for NULL. Pure: no disk access. A row naming an unacceptable file
 * reads as a miss. */
YYC_API bool yyc_kv_filename_is_valid(const char *name);

/* Writes md5(key) as 32 lowercase hex characters plus NUL into out (caller-owned, 33 bytes).
 * Pure: no disk access. */
YYC_API void yyc_kv_md5_filename(const char *key, char out[33]);

#ifdef __cplusplus
}
#endif

#endif /* YYCACHE_KV_STORAGE_H */
