/*
 * internal.h - declarations shared across the library's source files. Not API.
 *
 * Cross-file internals are named yyc__name; file-local helpers are static and unprefixed.
 */
#ifndef YYCACHE_INTERNAL_H
#define YYCACHE_INTERNAL_H

#include <yycache/yycache.h>

#include <assert.h>
#include <stdarg.h>
#include <stdbool.h>

/* Library-wide assertion for misuse: fails in debug builds, is checked in release builds by
 * the caller's explicit `if`. */
#define YYC__MISUSE(cond) (assert(!(cond)), (cond))

/* ---- errors ---- */

/* Records a failure in the calling thread's yyc_error (see yyc_last_error) and returns code.
 * sqlite_code / sys_errno may be 0. The message is printf-formatted and must not contain keys
 * or values. */
int yyc__error(int code, int sqlite_code, int sys_errno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Puts back a yyc_error saved with yyc_last_error as the calling thread's last error: around
 * an error hook, whose own failing library calls must not replace the error being returned. */
void yyc__error_restore(const yyc_error *saved);

/* Maps an errno from a failed system call to a status (ENOSPC/EFBIG/EDQUOT -> YYC_ENOSPC,
 * EACCES/EPERM/EROFS -> YYC_EPERM, ENOMEM -> YYC_ENOMEM, ENOENT -> YYC_NOTFOUND,
 * ENAMETOOLONG/EINVAL -> YYC_EINVAL, anything else -> YYC_EIO). */
int yyc__status_from_errno(int err);

/* ---- lock checks ----
 *
 * Debug and test builds (assertions on, and not optimized unless YYC_TESTING: the condition of
 * memory_cache.c's error-checking mutex) note which mutexes each thread holds, so that a
 * `*_locked` function can assert that its caller holds its lock: yyc__lock_note_acquired after
 * every successful lock, yyc__lock_note_released before every unlock (a condition wait keeps the
 * note: the thread is asleep meanwhile and holds the mutex again when it returns),
 * yyc__assert_held(m) at the top of the `*_locked` function. The notes are the calling thread's
 * own (no data race) and shared by every source file, so a mutex locked through one file's helper
 * is seen held by another's `*_locked` function. Other builds: no-ops. */
#if !defined(NDEBUG) && (!defined(__OPTIMIZE__) || defined(YYC_TESTING))
#define YYC__LOCK_CHECKS 1
#define YYC__HELD_MAX 8 /* mutexes one thread holds at once (the registry, a core: 2) */
/* The calling thread's notes (lock_notes.c): one set per thread for the whole library. */
const void **yyc__lock_notes(int **count);
static inline void yyc__lock_note_acquired(const void *m) {
    int *n;
    const void **held = yyc__lock_notes(&n);
    assert(*n < YYC__HELD_MAX);
    if (*n < YYC__HELD_MAX) held[(*n)++] = m;
}
static inline void yyc__lock_note_released(const void *m) {
    int *n;
    const void **held = yyc__lock_notes(&n);
    for (int i = *n - 1; i >= 0; i--) {
        if (held[i] == m) {
            held[i] = held[--*n];
            return;
        }
    }
    assert(!"unlocking a mutex this thread does not hold");
}
static inline bool yyc__lock_is_held(const void *m) {
    int *n;
    const void **held = yyc__lock_notes(&n);
    for (int i = 0; i < *n; i++)
        if (held[i] == m) return true;
    return false;
}
#define yyc__assert_held(m) assert(yyc__lock_is_held(m))
/* Before user code runs (a hook, a listener): this thread holds none of the library's mutexes. */
static inline bool yyc__holds_no_lock(void) {
    int *n;
    yyc__lock_notes(&n);
    return *n == 0;
}
#define yyc__assert_no_lock_held() assert(yyc__holds_no_lock())
#else
#define yyc__lock_note_acquired(m) ((void)(m))
#define yyc__lock_note_released(m) ((void)(m))
#define yyc__assert_held(m) ((void)0)
#define yyc__assert_no_lock_held() ((void)0)
#endif

/* ---- time ---- */

/* Seconds on CLOCK_MONOTONIC. */
double yyc__monotonic_now(void);
/* Seconds on CLOCK_MONOTONIC_COARSE where there is one (CLOCK_MONOTONIC elsewhere): a few
 * milliseconds of resolution (the kernel's tick), a fifth of the cost to read; for bounds that
 * need no precision, on paths where a clock read is a noticeable part of the work. */
double yyc__monotonic_coarse_now(void);

/* ---- background worker ----
 *
 * Lazily started threads run deferred jobs in FIFO order and fire timers, one per queue, so
 * that work with a deadline never waits behind work that may block (worker.c states each
 * queue's promise). Jobs carry an owner tag so
 * that an object can wait for its own pending jobs (and only those) before it is freed.
 * After fork() the child starts with empty queues and no thread: the parent's jobs and timers
 * are never run there (see worker.c). */

typedef void (*yyc__job_fn)(void *arg);

/* Seconds after which a YYC__QUEUE_DEADLINE callback that found its lock held tries again. */
#define YYC__DEADLINE_RETRY 0.002

typedef enum yyc__queue {
    YYC__QUEUE_MEMORY,     /* memory caches: releases, cost trims, auto-trims; never touch disk */
    YYC__QUEUE_DISK,       /* disk maintenance: trash, orphan sweeps, disk auto-trims; may wait for
                            * the folder lock and SQLite's busy timeout */
    YYC__QUEUE_DEADLINE,   /* disk timers with a deadline (deferred flush, read-transaction end):
                            * never wait for a lock another thread holds (worker.c) */
    YYC__QUEUE_CHECKPOINT, /* WAL checkpoints of the manifests: short passive copies that wait
                            * for nothing, so a commit may wait for them (kv_checkpoints.c) */
    YYC__QUEUE_COUNT
} yyc__queue;

/* Queues fn(arg) to run on the queue's thread. Returns YYC_OK, or YYC_ENOMEM (no memory, or the
 * thread could not be started: then the job was not queued and the caller should run it
 * inline). Thread-safe. */
int yyc__worker_async(yyc__queue queue, const void *owner, yyc__job_fn fn, void *arg);

/* yyc__worker_async, but the job joins the queue only `delay` seconds from now, so that what
 * happens meanwhile is done by that one job (the caller coalesces: at most one such job per
 * owner and purpose); delay <= 0 is yyc__worker_async. Thread-safe. Drains run a delayed job at
 * once; yyc__worker_wait_idle waits for it. */
int yyc__worker_async_after(yyc__queue queue, const void *owner, yyc__job_fn fn, void *arg,
                            double delay);

/* Returns once no job of owner is queued or running, on either queue. It waits only for
 * owner's jobs: owner's queued jobs are taken out of their queue and run on the calling thread;
 * a job of owner already running on a worker thread is waited for (unless the caller is that
 * thread: then the running job is the caller's own, and only the queued ones are run). Jobs
 * queued by other threads during the drain may or may not be waited for. Thread-safe. */
void yyc__worker_drain(const void *owner);

#ifdef YYC_TESTING
/* Testing: waits until the queue has run every job queued so far (delayed ones too, when they
 * come due), whatever its owner, and no
 * job or timer callback runs (jobs queued meanwhile are waited for too; a timer that fires
 * later is not). Not from that queue's own thread. */
void yyc__worker_wait_idle(yyc__queue queue);
#endif

/* Whether the calling thread is one of the worker threads. */
bool yyc__worker_is_current(void);

typedef struct yyc__timer yyc__timer;

/* A repeating timer whose fire(arg) runs on the queue's thread every `interval` seconds, the
 * first time one interval after creation. interval <= 0 or NaN pauses it. Returns YYC_OK,
 * YYC_ENOMEM (also when the thread could not be started). */
int yyc__timer_new(yyc__queue queue, yyc__job_fn fire, void *arg, double interval,
                   yyc__timer **out);

/* Changes the interval; the next firing is rescheduled from now. Thread-safe. */
void yyc__timer_set_interval(yyc__timer *t, double interval);

/* The timer whose callback runs on the calling thread (NULL outside a timer's callback): a
 * callback may reschedule itself with yyc__timer_set_interval without reading its owner's
 * fields. */
yyc__timer *yyc__timer_current(void);

/* Cancels the timer and frees it. If fire is running on the queue's thread, waits for it to
 * return (unless called from fire itself). NULL is fine. Thread-safe. */
void yyc__timer_free(yyc__timer *t);

#endif /* YYCACHE_INTERNAL_H */
