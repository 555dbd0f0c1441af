/*
 * yycache/disk_cache.h - a thread-safe disk cache (YYDiskCache) over yyc_kv.
 *
 * A yyc_diskcache is a reference-counted object shared per canonical path within the process:
 * yyc_diskcache_open() on a path that is already open returns the same core with one more
 * reference (the lookup-or-create is atomic), and yyc_diskcache_release() drops one.
 *
 * Values up to inline_threshold bytes are stored inline in SQLite; larger ones go to
 * data/<md5(key)> (or the name given by the file-name function; while a file of that name
 * exists, a replace uses a fresh variant <name>~<8 hex digits>: see yyc_kv_save). Threshold 0
 * stores everything in files, SIZE_MAX everything in SQLite.
 *
 * Limits (count, cost = bytes, age since last access, free disk space) are enforced only by the
 * explicit trims and by the auto-trim, every auto_trim_interval seconds (default 60), in the
 * order cost, count, age, free space - as YYDiskCache does. Limit setters treat negative
 * values as 0; INT64_MAX (the default) means no limit; an age of DBL_MAX/+inf means no limit.
 *
 * Keys: NUL-terminated strings. An empty key: writes return YYC_EINVAL, reads YYC_NOTFOUND,
 * removals YYC_OK. Values may be empty.
 *
 * Thread safety: every function is thread-safe (one mutex per core). No user callback runs while
 * the mutex is held. Blocking: every call may touch the disk except retain, path,
 * inline_threshold and the setting getters/setters (limits, interval, logs, hook, name, file-name
 * function), which only take the core's mutex (or the registry's, for retain).
 * Opening or closing one path's storage (which may wait up to the busy timeout on a manifest
 * locked by another process) holds up only the opens of that same path, never the opens, closes
 * or calls of other paths.
 * Errors: calls returning an error record details for yyc_last_error(). After
 * yyc_diskcache_close every call returns YYC_ECLOSED (contains returns false).
 * Misuse: a NULL cache (or NULL output pointer) returns YYC_EINVAL (asserted in debug builds),
 * or 0 / false / NULL / no-op for functions without status.
 */
#ifndef YYCACHE_DISK_CACHE_H
#define YYCACHE_DISK_CACHE_H

#include "kv_storage.h"
#include "removal_cause.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct yyc_diskcache yyc_diskcache;

/* Opens the disk cache at path (created if needed), or returns the core already open for the
 * same canonical path (its threshold wins; the one given here is then ignored).
 * Concurrent opens of one path: one opens the storage, the others wait for it and then share
 * the core - or, if that open failed, return the same error (the next open tries afresh). An
 * open of a path that is being closed (yyc_diskcache_close or the last release) waits until the
 * close is done, then opens a new core.
 * Returns: YYC_OK, and the errors of yyc_kv_open. Called on the library's background thread (an
 * error hook run by the auto-trim), an open that would wait for another thread's open or close
 * of the same path returns YYC_EBUSY instead (waiting there could deadlock).
 * Ownership: path is copied; *out holds one reference, dropped with yyc_diskcache_release. */
YYC_API int yyc_diskcache_open(const char *path, size_t inline_threshold, yyc_diskcache **out);

/* Takes one more reference (drop it with yyc_diskcache_release). Returns dc (NULL for NULL). */
YYC_API yyc_diskcache *yyc_diskcache_retain(yyc_diskcache *dc);

/* Drops one reference; the last one commits the deferred writes (see yyc_write_mode), stops the
 * auto-trim, closes the storage and frees the core. NULL is fine. */
YYC_API void yyc_diskcache_release(yyc_diskcache *dc);

/* Closes the core for every holder: the deferred writes are committed (what cannot be is
 * reported through the hook and dropped), the storage is closed, the path is forgotten (a later
 * open creates a new core), and every later call on this core returns YYC_ECLOSED. References
 * stay valid until released. Idempotent. */
YYC_API void yyc_diskcache_close(yyc_diskcache *dc);

/* The canonical path (borrowed, valid while referenced) and the inline threshold (NULL / 0 for
 * a NULL cache). */
YYC_API const char *yyc_diskcache_path(yyc_diskcache *dc);
YYC_API size_t yyc_diskcache_inline_threshold(yyc_diskcache *dc);

/* Whether key has a value (no access-time update). false on error or after close. */
YYC_API bool yyc_diskcache_contains(yyc_diskcache *dc, const char *key);

/* Reads a value and refreshes its access time. The read writes nothing: the access time is
 * noted in memory and written later, in the background (at most 4,096 a second, and not while
 * a call waits for the cache's lock), before any
 * trim that decides by access time (a trim decides by the times noted before it started; reads
 * made while it runs are written after it), and at close; while 8,192 keys' times wait, a read of
 * another key keeps its older one. Consecutive reads share one read transaction (at most 256
 * reads or 5 ms, ended as soon as another connection commits): a read never returns a value
 * older than a set that returned, in this process or another.
 * Returns: YYC_OK (*out_value transferred, free with yyc_free; may be NULL when *out_len == 0),
 * YYC_NOTFOUND, errors. Ownership: key is borrowed. Blocking: reads the disk. */
YYC_API int yyc_diskcache_get(yyc_diskcache *dc, const char *key, void **out_value,
                              size_t *out_len);

/* yyc_diskcache_get's read, done only if it can be done at once: when no other thread holds the
 * cache's lock (a write, a trim, a commit waiting for the folder lock or the busy timeout) and the
 * read is a hit. It never waits for a lock and never writes, so that an async caller can serve a
 * hit on its own thread and send the rest to a thread that may block. out_ttl_seconds (may be
 * NULL) receives the entry's remaining time to live, as yyc_diskcache_time_to_live gives it.
 * Returns: true for a hit (*out_value transferred, free with yyc_free; may be NULL when
 * *out_len == 0), counted in the statistics like yyc_diskcache_get's; false otherwise (the lock
 * was held, a miss, an expired entry, a closed cache or an error; *out_value NULL, nothing
 * counted): call yyc_diskcache_get for the answer. Ownership: key is borrowed. Blocking: may read
 * the disk (the value's page or file), never waits for another thread or process. */
YYC_API bool yyc_diskcache_try_get(yyc_diskcache *dc, const char *key, void **out_value,
                                   size_t *out_len, double *out_ttl_seconds);

/* Reads a value's extended data (no access-time update).
 * Returns: YYC_OK (*out transferred, free with yyc_free; NULL/0 when the entry has none),
 * YYC_NOTFOUND, YYC_ENOMEM, errors. Ownership: key is borrowed. */
YYC_API int yyc_diskcache_get_extended_data(yyc_diskcache *dc, const char *key, void **out,
                                            size_t *out_len);

/* Stores a value (NULL value with len 0 = an empty value) with optional extended data. Values
 * above the threshold go to a file named by the file-name function, else md5(key).
 * Immediate mode: returns after the commit, which concurrent sets share (see yyc_write_mode);
 * deferred mode: returns once queued.
 * Returns: YYC_OK, YYC_EINVAL (empty key, NULL value with len > 0, invalid file name), and the
 * errors of yyc_kv_save (deferred mode: YYC_ENOMEM, or the error of the commit a full queue
 * needed).
 * Ownership: everything is copied. */
YYC_API int yyc_diskcache_set(yyc_diskcache *dc, const char *key, const void *value, size_t len,
                              const void *extended, size_t extended_len);

/* Time to live: expiry counted from the write, strict and per entry (the age limit is
 * YYDiskCache's softer "since last access, enforced by trims").
 * An entry stored with a time to live of t seconds expires t seconds after that set, rounded up
 * to a millisecond, on the wall clock (CLOCK_REALTIME: the expiry is stored in the manifest, in
 * a column of ours that YYKVStorage neither reads nor writes, so it holds after a reopen and
 * for every process). From then on no call returns it or reports it present (get, contains,
 * get_extended_data, time_to_live, and the yyc_kv reads of the same folder); the read that
 * finds it expired removes it (a miss costs one more indexed read for this), and every trim
 * (trim_to_count/cost/age/free_space, also one within its limit) and the auto-trim remove
 * every expired entry first, through an index on the expiry (no scan of the entries that do
 * not expire). A later set of the key replaces the time to live with its own (or with none).
 * Rows written by YYKVStorage, or by a set without a time to live while the default is none,
 * never expire. An entry with a time to live stays in the totals until it is removed.
 *
 * yyc_diskcache_set_with_ttl: yyc_diskcache_set with an explicit time to live in seconds: >= 0
 * (0: expired at once: stored, never returned, removed by the next read or trim), or INFINITY
 * (never expires, whatever the default).
 * Returns: as yyc_diskcache_set, and YYC_EINVAL for a NaN or negative time to live (nothing
 * stored), YYC_EIO when the manifest has no expiry column (it could not be added; nothing
 * stored). Ownership: everything is copied. */
YYC_API int yyc_diskcache_set_with_ttl(yyc_diskcache *dc, const char *key, const void *value,
                                       size_t len, const void *extended, size_t extended_len,
                                       double ttl_seconds);

/* yyc_diskcache_set_with_filename with an explicit time to live, as yyc_diskcache_set_with_ttl
 * takes it. Returns and ownership as those two. */
YYC_API int yyc_diskcache_set_with_filename_and_ttl(yyc_diskcache *dc, const char *key,
                                                    const void *value, size_t len,
                                                    const void *extended, size_t extended_len,
                                                    const char *filename, double ttl_seconds);

/* Stores a value a loader produced after a miss on key: as yyc_diskcache_set_with_filename (no
 * extended data, the default time to live; filename NULL or "": the file-name function's or
 * md5(key)), unless key has a value when the write commits (a write of the key
 * since the miss, committed or queued; another process's is seen once it committed): that newer
 * write stays and nothing is stored. *stored (non-NULL) says which. For loaders outside
 * yyc_diskcache_get_or_load (which stores its loads this way). Returns and blocking as
 * yyc_diskcache_set (YYC_OK also when nothing was stored); counted as an insertion only when
 * stored. */
YYC_API int yyc_diskcache_set_if_absent(yyc_diskcache *dc, const char *key, const void *value,
                                        size_t len, const char *filename, bool *stored);

/* The time to live every other set gets (yyc_diskcache_set, set_with_filename): seconds,
 * INFINITY (the default) for none. Core-wide (shared by every holder of the core). Setting NaN
 * means none; a negative value means 0. Entries already stored keep theirs. The getter returns
 * INFINITY for a NULL cache. Takes only the core's mutex. */
YYC_API void yyc_diskcache_set_default_time_to_live(yyc_diskcache *dc, double seconds);
YYC_API double yyc_diskcache_default_time_to_live(yyc_diskcache *dc);

/* Removes every expired entry (and nothing else), as every trim does first: one index range
 * per batch of 256, under the folder lock like every removal. Returns: YYC_OK, errors (earlier
 * batches stay removed). */
YYC_API int yyc_diskcache_trim_expired(yyc_diskcache *dc);

/* The remaining time to live of key's entry, in seconds (> 0), or INFINITY if it has none. No
 * access-time update. Returns: YYC_OK (*out_seconds set), YYC_NOTFOUND (no entry, an empty key,
 * or an expired entry, which this call removes; *out_seconds = 0), errors. Ownership: key is
 * borrowed. */
YYC_API int yyc_diskcache_time_to_live(yyc_diskcache *dc, const char *key, double *out_seconds);

/* The same with an explicit file name for this write (used when the value goes to a file; NULL
 * or "" means md5(key)); overrides the core's file-name function. Returns and ownership as
 * yyc_diskcache_set (filename is copied). */
YYC_API int yyc_diskcache_set_with_filename(yyc_diskcache *dc, const char *key, const void *value,
                                            size_t len, const void *extended, size_t extended_len,
                                            const char *filename);

/* Computes a file name for key into out (at most 255 bytes plus NUL). Return false (or leave
 * out empty) to use md5(key). A name that is not one valid path component, or that is reserved
 * (yyc_kv_filename_is_valid), makes the write fail with YYC_EINVAL and nothing is written.
 * Thread safety: called without the core's lock, only for values that go to a file, on the
 * thread of the writing call, so it may run on several threads at once and may call into the
 * cache. Ownership: ctx is borrowed and must stay valid until the function is replaced (NULL fn
 * restores md5) and no write is in progress; key is borrowed for the call. */
typedef bool (*yyc_filename_fn)(void *ctx, const char *key, char out[256]);

/* Sets the core-wide file-name function (shared by every holder of the core); ctx is borrowed
 * (see yyc_filename_fn). */
YYC_API void yyc_diskcache_set_filename_fn(yyc_diskcache *dc, yyc_filename_fn fn, void *ctx);

/* Removes one value / every value (rows deleted in place, data/ moved to trash/ and emptied on
 * the background worker; see yyc_kv_remove_all). In deferred mode a removal of one value is
 * queued like a set; removing every value drops the queue too. Returns: YYC_OK (also when absent
 * or for an empty key), errors. */
YYC_API int yyc_diskcache_remove(yyc_diskcache *dc, const char *key);
YYC_API int yyc_diskcache_remove_all(yyc_diskcache *dc);

/* Removes every value in batches, calling progress (may be NULL) between batches with the lock
 * released; counts increase monotonically to (total, total). progress runs on the calling
 * thread; ctx is borrowed for the call. Returns: YYC_OK, errors. */
YYC_API int yyc_diskcache_remove_all_progress(yyc_diskcache *dc, yyc_progress_fn progress,
                                              void *ctx);

/* Number of entries and their total size in bytes (64-bit; rows whose size is not a positive
 * integer count 0, and the sum saturates at INT64_MAX). O(1): summed once per connection, then
 * kept from this process's own changes; summed again (one scan) when another connection -
 * another process, YYKVStorage, the CLI - wrote the folder since. Never older than the read
 * transaction it is answered in. Commits queued deferred writes first. Blocks on the core's
 * lock. Returns: YYC_OK, errors. */
YYC_API int yyc_diskcache_total_count(yyc_diskcache *dc, int64_t *out);
YYC_API int yyc_diskcache_total_cost(yyc_diskcache *dc, int64_t *out);

/* Explicit trims (synchronous). Count/cost 0 and age <= 0 remove everything; INT64_MAX and
 * DBL_MAX do nothing. They run in short batches (one transaction of at most 16 rows, 256 for
 * the age, by index order, deciding on count and total cost kept in O(1)) and release the core's
 * mutex between batches, handing it to a waiting call, so other threads' calls go on during a
 * long trim (writes made meanwhile count for the next batch; removal events of the batches done
 * are delivered on the way); a close meanwhile ends the trim with YYC_ECLOSED, the batches done
 * staying done. The auto-trim and trim_to_free_space run the same way. Like every removal they
 * work on a full disk, also one the cache filled itself (see yyc_kv_remove); afterwards the WAL
 * is truncated, by the background checkpoint thread when the file system has room (24 MiB or
 * more free), else at once on this thread. Another process
 * holding the folder lock beyond the busy timeout gives YYC_EBUSY (the core's mutex is then
 * released, so other threads' calls go on). Returns: YYC_OK, YYC_EBUSY, errors. */
YYC_API int yyc_diskcache_trim_to_count(yyc_diskcache *dc, int64_t count);
YYC_API int yyc_diskcache_trim_to_cost(yyc_diskcache *dc, int64_t cost);
YYC_API int yyc_diskcache_trim_to_age(yyc_diskcache *dc, double seconds);
/* Evicts LRU entries until the file system holding the cache has at least `bytes` free
 * (statvfs f_bavail * f_frsize; the storage's space reserve counts as used). 0 or less does
 * nothing. Returns: YYC_OK, YYC_EIO (statvfs failed), errors. */
YYC_API int yyc_diskcache_trim_to_free_space(yyc_diskcache *dc, int64_t bytes);

/* Core-wide settings (shared by every holder of the core). Getters return 0 / false for a NULL
 * cache. The error hook runs with no lock held, on the thread of the failing call or on the
 * background worker (auto-trim); ctx is borrowed until the hook is replaced (and every call
 * still running the old one has returned) or the core is freed. Setting a hook delivers the
 * YYC_ECORRUPT events kept while none was set, on the calling thread. The calling thread's
 * yyc_last_error is the same after the hook ran as before (a failing call in the hook does
 * not replace it). */
YYC_API void yyc_diskcache_set_count_limit(yyc_diskcache *dc, int64_t limit);
YYC_API int64_t yyc_diskcache_count_limit(yyc_diskcache *dc);
YYC_API void yyc_diskcache_set_cost_limit(yyc_diskcache *dc, int64_t limit);
YYC_API int64_t yyc_diskcache_cost_limit(yyc_diskcache *dc);
YYC_API void yyc_diskcache_set_age_limit(yyc_diskcache *dc, double seconds);
YYC_API double yyc_diskcache_age_limit(yyc_diskcache *dc);
YYC_API void yyc_diskcache_set_free_disk_space_limit(yyc_diskcache *dc, int64_t bytes);
YYC_API int64_t yyc_diskcache_free_disk_space_limit(yyc_diskcache *dc);
/* The page cache of the core's manifest connection (SQLite's cache_size), in bytes: how much of
 * the manifest (its rows, its key index) stays in memory between calls. Default
 * YYC_DISKCACHE_DEFAULT_PAGE_CACHE_SIZE (SQLite's default, 2,000 KiB); a cache that holds many
 * entries reads and writes with fewer system calls when the whole key index fits (about 50 bytes
 * per entry with short keys, plus the rows read often). The size is rounded up to whole KiB; 0 or
 * less restores the default. It takes effect at once and is kept when the connection is opened
 * again. Memory-mapped reads of the manifest stay off whatever the size: a file that another
 * process truncates, or a failing disk, would kill this process with SIGBUS instead of failing one
 * read. Core-wide, like the other settings. Returns: YYC_OK, YYC_EINVAL (NULL cache), YYC_ECLOSED.
 * Thread-safe; waits for the call that holds the core, if any. */
#define YYC_DISKCACHE_DEFAULT_PAGE_CACHE_SIZE ((int64_t)2000 * 1024)
YYC_API int yyc_diskcache_set_page_cache_size(yyc_diskcache *dc, int64_t bytes);
/* The page cache size in bytes (the default before any setting); 0 for a NULL or closed cache. */
YYC_API int64_t yyc_diskcache_page_cache_size(yyc_diskcache *dc);
/* Seconds between auto-trims (default 60); <= 0 or NaN pauses it. */
YYC_API void yyc_diskcache_set_auto_trim_interval(yyc_diskcache *dc, double seconds);
YYC_API double yyc_diskcache_auto_trim_interval(yyc_diskcache *dc);
YYC_API void yyc_diskcache_set_error_logs_enabled(yyc_diskcache *dc, bool on);
YYC_API bool yyc_diskcache_error_logs_enabled(yyc_diskcache *dc);
YYC_API void yyc_diskcache_set_error_hook(yyc_diskcache *dc, yyc_error_hook hook, void *ctx);
/* Write modes (core-wide, like the limits).
 *
 * YYC_WRITE_IMMEDIATE (the default, YYDiskCache's): a set or remove returns after its commit.
 * Sets of several threads that arrive while a commit is running share the next commit (group
 * commit); each still returns only once its own row is committed, with its own status: a write
 * that fails fails alone, and the others are committed together without it (the shared
 * transaction is rolled back and tried again without the failed write). A set waiting for
 * another thread's commit spins for up to 20 microseconds, then yields the processor for up to
 * 500, then sleeps; it returns as soon as the transaction holding its write has committed. A
 * set that commits while other threads are writing waits up to 50 microseconds for one more
 * write to share the commit (a single writer never waits).
 *
 * YYC_WRITE_DEFERRED: yyc_diskcache_set, _set_with_filename and _remove return once the write is
 * queued in memory (the value is copied; a later write of the same key replaces the queued
 * one). Every call of this process sees the queued writes and removals: get, get_extended_data
 * and contains answer from the queue (a queued value's access time is not updated; a queued set
 * whose time to live has passed is a miss), and every other call (totals, trims, remove-all
 * with progress, enumeration) commits the queue first (time_to_live also answers from the
 * queue). A queued
 * set keeps its time to live, counted from the set, and is committed with it. The queue is
 * committed in one transaction (all or nothing) on a background thread that runs only such
 * deadlines (never behind another cache's trims, sweeps or folder-lock waits) at most max_delay
 * seconds after its first write (later only while a call of this cache holds it up), and by
 * yyc_diskcache_flush, yyc_diskcache_close, the last release, a switch back to YYC_WRITE_IMMEDIATE
 * and exit() (an atexit handler flushes every open core). remove_all drops the queue with
 * everything else. A queue holding 10,000 writes or 64 MiB of values is committed by the set that
 * would grow it further (on the caller's thread; a failure is that set's error and nothing more is
 * queued). Crash semantics: a kill loses at most the writes acknowledged since the last commit
 * (about max_delay, plus one batch while it commits); what survives is a prefix of this process's
 * acknowledged writes, in order: never a torn value, never an older version after a newer one.
 * Other processes see only committed writes.
 * A failed background commit is reported through the error hook and keeps the queue (nothing is
 * dropped): the next commit tries it again, and yyc_diskcache_flush returns its error. */
typedef enum yyc_write_mode {
    YYC_WRITE_IMMEDIATE = 0,
    YYC_WRITE_DEFERRED = 1,
} yyc_write_mode;

/* Sets the core's write mode; max_delay (seconds; DEFERRED only) is clamped to [0.001, 3600],
 * NaN counts as 1. Switching to IMMEDIATE commits the queue first.
 * Returns: YYC_OK, YYC_EINVAL (unknown mode), YYC_ECLOSED, or the commit's error (the mode then
 * stays DEFERRED and the queue is kept). Blocking: may touch disk (the commit). */
YYC_API int yyc_diskcache_set_write_mode(yyc_diskcache *dc, yyc_write_mode mode, double max_delay);
/* The core's write mode, and its max_delay in *out_max_delay (may be NULL; 0 for IMMEDIATE).
 * YYC_WRITE_IMMEDIATE for a NULL cache. Takes only the core's mutex. */
YYC_API yyc_write_mode yyc_diskcache_write_mode(yyc_diskcache *dc, double *out_max_delay);
/* Commits every queued write now, in one transaction (nothing to do in IMMEDIATE mode).
 * Returns: YYC_OK, YYC_ECLOSED, or the commit's error (the queue is kept for a later try).
 * Blocking: touches disk. */
YYC_API int yyc_diskcache_flush(yyc_diskcache *dc);

/* The name (copied; NULL clears it; if the copy runs out of memory the old name stays) and a
 * copy of it (transferred, yyc_free; NULL if none or out of memory). */
YYC_API void yyc_diskcache_set_name(yyc_diskcache *dc, const char *name);
YYC_API char *yyc_diskcache_copy_name(yyc_diskcache *dc);

/* Removal events: a listener called once for every entry that a call of this process removes
 * from the core, with its key and why it left (yyc_removal_cause): YYC_REMOVED_EXPLICIT
 * (remove, remove_all and remove_all_progress: one per entry), YYC_REMOVED_REPLACED (a set of
 * a key that had a row, also an expired one no read had removed yet), YYC_REMOVED_EXPIRED (its
 * time to live, found by a read or removed by a trim or the auto-trim; the age limit and
 * trim_to_age), YYC_REMOVED_EVICTED (the count, cost and free-space limits, trim_to_count,
 * trim_to_cost, trim_to_free_space).
 * Group commit: each set of a shared transaction reports its own replacement (none when it was
 * rolled back). Deferred mode: the replacements and removals of queued writes are reported when
 * the queue commits (by whichever call commits it, the background worker's timer included); a
 * queued write overwritten in the queue by a later write of its key is not reported, and an
 * expired queued set is reported as YYC_REMOVED_EXPIRED once its committed row is found.
 * When: after the removal committed, with no lock held, on the thread of the call that removed
 * it (the background worker for the auto-trim), before that call returns; so the listener may
 * call into the cache. Exactly once per removed entry (a deletion rolled back and retried, on a
 * full disk, is reported once); removals by other processes sharing the folder, rows a read
 * drops because their file or checksum is damaged, and the entries of a manifest rebuilt
 * because it was corrupt are not reported. Needs SQLite's preupdate hook (Debian's build
 * has it); without it there are no events and the removal counts stay 0.
 * Arguments: key is borrowed for the call. An event whose key could not be copied (out of
 * memory) is not delivered (it is counted).
 * yyc_diskcache_set_removal_listener installs fn (NULL: none, the default) with ctx, core-wide
 * (every holder of the core shares it). Takes only the core's mutex. Ownership: ctx is borrowed
 * until the listener is replaced and every call that took the old one has returned. */
typedef void (*yyc_diskcache_removal_fn)(void *ctx, const char *key, yyc_removal_cause cause);
YYC_API void yyc_diskcache_set_removal_listener(yyc_diskcache *dc, yyc_diskcache_removal_fn fn,
                                                void *ctx);
/* The ctx of the installed listener (borrowed), or NULL when none is installed (or for a NULL
 * cache). Takes only the core's mutex. */
YYC_API void *yyc_diskcache_removal_listener_ctx(yyc_diskcache *dc);

/* Statistics (yyc_cache_statistics in removal_cause.h) of the core in this process, shared by
 * every holder, counted under the core's mutex by the calls that already hold it: exact, no
 * extra lock. get: one hit or one miss (an expired entry is a miss); contains,
 * get_extended_data and time_to_live count nothing. Every set that stored a value is an
 * insertion (in deferred mode: once queued, one per set, even when the queue keeps only the
 * key's last write); removals are counted by cause as the listener would report them (listener or
 * not). yyc_diskcache_statistics copies a snapshot (also after close). Returns: YYC_OK,
 * YYC_EINVAL (NULL argument). yyc_diskcache_reset_statistics sets every counter to 0 (NULL is
 * fine). Both take only the core's mutex. */
YYC_API int yyc_diskcache_statistics(yyc_diskcache *dc, yyc_cache_statistics *out);
YYC_API void yyc_diskcache_reset_statistics(yyc_diskcache *dc);

/* Enumeration: the live entries (expired ones are left out), least recently used first (ties:
 * oldest row first), a page of at most 256 entries at a time: each page is read under the
 * core's lock in one indexed query, and entries are handed out with no lock held, so a walk of
 * any size holds bounded memory and never holds the lock for more than one page; other calls
 * (writers too) proceed between pages. Not a snapshot: an entry written or accessed during the
 * walk (its access time then moves behind the cursor) may be seen again, or not at all if it is
 * removed before its page is read. No access-time update. Rows whose key is not text are
 * skipped. */
typedef struct yyc_diskcache_entry {
    const char *key;           /* NUL-terminated */
    const char *filename;      /* NULL when the value is inline */
    int64_t size;              /* bytes, as the manifest records it */
    int64_t modification_time; /* unix seconds */
    int64_t last_access_time;  /* unix seconds */
    int64_t expiry_ms;         /* unix milliseconds; 0: never expires */
} yyc_diskcache_entry;

typedef struct yyc_diskcache_iter yyc_diskcache_iter;

/* Starts a walk. Returns: YYC_OK (*out transferred: free with yyc_diskcache_iter_free; it holds
 * a reference to the core), YYC_ECLOSED, YYC_ENOMEM, YYC_EINVAL (NULL argument). */
YYC_API int yyc_diskcache_iter_open(yyc_diskcache *dc, yyc_diskcache_iter **out);
/* The next entry. Returns: YYC_OK (*out borrowed: valid until the next call on the iterator or
 * its free), YYC_NOTFOUND at the end, YYC_ECLOSED (the core was closed during the walk),
 * errors. May touch the disk (a new page). An iterator is not thread-safe: one thread at a
 * time. */
YYC_API int yyc_diskcache_iter_next(yyc_diskcache_iter *it, const yyc_diskcache_entry **out);
/* Ends a walk (drops its reference to the core). NULL is fine. */
YYC_API void yyc_diskcache_iter_free(yyc_diskcache_iter *it);

/* Calls fn for every entry of a walk (see above), with no lock held, on the calling thread; fn
 * may call the cache. A non-zero return of fn stops the walk and is returned. Returns: YYC_OK,
 * fn's value, the errors of the iterator (YYC_ECLOSED...). Ownership: the entry is borrowed for
 * the call; ctx is borrowed. */
typedef int (*yyc_diskcache_entry_fn)(void *ctx, const yyc_diskcache_entry *entry);
YYC_API int yyc_diskcache_for_each_entry(yyc_diskcache *dc, yyc_diskcache_entry_fn fn, void *ctx);

/* Loading with single flight. load(ctx, key, out_value, out_len) produces key's value: it
 * returns YYC_OK with *out_value a buffer allocated with malloc (transferred to the cache; may
 * be NULL when *out_len is 0), or an error status (nothing is stored; YYC_NOTFOUND counts as
 * YYC_EIO). It runs on the calling thread with no lock held and may use the cache.
 * yyc_diskcache_get_or_load reads key (as yyc_diskcache_get: a hit, or a miss - an expired entry
 * is removed, reported YYC_REMOVED_EXPIRED, and is a miss); on a miss, concurrent callers of
 * the same key in this process run load once: the first runs it and stores its value (as
 * yyc_diskcache_set, with the default time to live), the others sleep on a condition of the
 * load (never on the core's lock; callers of other keys are not delayed) and receive a copy of
 * its value or its error status. A failed load stores nothing; the next call loads again.
 * Other processes are not coordinated with (each may load once).
 * A loaded value is stored only if the key still has none when it commits: a set of the key
 * made while the load ran (after its miss) is newer, and stays. Statistics: the call counts one
 * hit, or one miss (its second look before loading is part of it) and one load or load
 * failure; a stored loaded value is one insertion.
 * Returns: YYC_OK (*out_value transferred: free with yyc_free; NULL when *out_len is 0), the
 * load's error (or the store's), YYC_EINVAL (NULL argument, empty key, a loader that returned
 * NULL with a length), YYC_ERECURSIVE (called by the load of key, on its thread), YYC_ENOMEM,
 * errors of the read.
 * Blocking: touches the disk; a waiter sleeps until the load it waits for finishes (however
 * long the loader takes). A loader that calls get_or_load for its own key (on its thread) gets
 * YYC_ERECURSIVE at once, and the key stays usable.
 * Statistics: the read counts a hit or a miss; the caller that runs the loader adds one load or
 * load failure and its duration. */
typedef int (*yyc_diskcache_load_fn)(void *ctx, const char *key, void **out_value, size_t *out_len);
YYC_API int yyc_diskcache_get_or_load(yyc_diskcache *dc, const char *key,
                                      yyc_diskcache_load_fn load, void *ctx, void **out_value,
                                      size_t *out_len);

/* For callers that load on their own on top of get and set (the Swift overlay's async loader):
 * counts one finished load (ok) or load failure, and its duration, in the statistics. NULL is
 * fine. Takes only the core's mutex. */
YYC_API void yyc_diskcache_count_load(yyc_diskcache *dc, bool ok, uint64_t load_ns);

#ifdef __cplusplus
}
#endif

#endif /* YYCACHE_DISK_CACHE_H */
