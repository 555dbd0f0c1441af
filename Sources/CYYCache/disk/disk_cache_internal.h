/*
 * disk_cache_internal.h - what the disk cache's files share (private; not API): the core's
 * struct with the owner of each field, the registry, the lock order and the helpers every file
 * uses. The files: disk_cache.c (locking, events, reads, removal, totals, settings),
 * disk_cache_registry.c (the per-path registry: open, retain, release, close, fork),
 * disk_cache_commits.c (group commit and the deferred write queue), disk_cache_trims.c (trims,
 * removal events and statistics), disk_cache_entries.c (enumeration) and disk_cache_loads.c
 * (single-flight loads and time to live).
 *
 * YYDiskCache in C: a thread-safe, per-path shared core over yyc_kv.
 *
 * Deviations from YYDiskCache (tested in Tests/C/test_disk_cache.c):
 *   - the per-path registry is keyed by the canonical path (realpath after creating the folder)
 *     and its lookup-or-create is atomic, so two threads opening one path share one core
 *     (YYDiskCache could create two: two connections on one manifest);
 *   - a core is reference-counted and can be closed explicitly (every later call returns
 *     YYC_ECLOSED), the equivalent of _appWillBeTerminated;
 *   - file names from the file-name function (or given explicitly) are validated;
 *   - free space is measured on the cache's own file system (statvfs on its path);
 *   - empty values are stored; in the FILE type (threshold 0) they get a file like any value;
 *   - concurrent sets share commits (group commit, commit_write), each still with its own
 *     result; a deferred write mode queues writes in memory and commits them in batches
 *     (deferred_commit_locked; the queue is deferred_writes.c);
 *   - errors are returned and reported through the hook; the hook runs after the core's mutex
 *     is released (events are queued under the lock, delivered after unlocking). Corruption
 *     events that happen while no hook is set (for example the manifest rebuilt by the open)
 *     are kept (at most PENDING_MAX) and delivered when a hook is set.
 *
 * The registry (tested in Tests/C/test_disk_cache_registry.c). Its mutex covers only its
 * bookkeeping, never SQLite or the file system: opening or closing a cache's storage can take
 * seconds (a manifest locked by another process waits out the busy timeout), and must not hold
 * up the opens and closes of other paths. Each core is in one of these states:
 *
 *   OPENING  in the list: a placeholder; its opener opens the storage with no lock held.
 *   READY    in the list: shared; an open of its path takes one more reference.
 *   CLOSING  in the list: yyc_diskcache_close or the last release closes its storage with no
 *            lock held; an open of its path waits, so no new core opens the folder while the
 *            old connection is half closed.
 *   CLOSED   out of the list: references may remain (explicit close); every call returns
 *            YYC_ECLOSED.
 *   FAILED   out of the list: its open failed; kept only until the waiters read the error.
 *
 * OPENING -> READY | FAILED, READY -> CLOSING -> CLOSED; each change is made under the registry
 * mutex and broadcast on registry.changed. An open that finds its path OPENING or CLOSING waits
 * there (counted in `waiters`, which keeps the core's memory alive) and then looks again: a
 * READY core is shared; a FAILED open is not retried: the waiters that joined it return its
 * error (code and yyc_last_error details), as its opener does - a retry would only wait out the
 * same busy timeout again, once per waiter. An open that starts after the failure was published
 * finds no entry and tries afresh. Opens and closes of other paths never wait. On the library's
 * worker thread (an error hook run by the auto-trim) an open that would wait returns YYC_EBUSY
 * instead: the opener or closer it would wait for may itself be waiting for that thread.
 * A core is freed by whoever leaves it CLOSED or FAILED with no reference and no waiter.
 *
 * Locking: `lock` guards every field of the core but the registry fields (`state`, `refcount`,
 * `waiters`, `open_rc`, `open_error`, `next`, guarded by registry.lock), `timer` /
 * `interval` (guarded by `timer_lock`), and two atomics read without it: `incoming` (the group
 * commit's stack of waiting sets: pushed by any thread, taken only under `lock`) and
 * `has_filename_fn` (written under `lock`). While OPENING the core belongs to its opener, which
 * fills it without its lock. Lock order: registry -> core lock. timer_lock is never held
 * together with the core lock. No user callback (file-name function, progress, error hook)
 * runs while a lock is held, and none runs while this thread keeps a core OPENING or CLOSING
 * (the close delivers its events after the core is CLOSED), so a callback may open the path.
 *
 * User code runs through one path: yyc__dc_deliver (error hook, removal listener), with no lock
 * held, on a thread whose use of the core is covered - a public call's caller holds a
 * reference, and a timer's callback runs inside yyc__dc_run, which puts off to its end any
 * release that a callback makes on its thread (the last reference dropped by a listener during
 * an auto-trim's hand-over closes the core once the trim is done, never under it).
 */
#ifndef YYCACHE_DISK_CACHE_INTERNAL_H
#define YYCACHE_DISK_CACHE_INTERNAL_H

#include "platform/internal.h"

#include "disk/deferred_writes.h"
#include "platform/fs_util.h"
#include "kv/kv_private.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#define DEFAULT_AUTO_TRIM_INTERVAL 60.0
#define PENDING_MAX 8

/* A set waiting for its commit (group commit, see commit_write). Lives on the writer's stack;
 * the writer returns only once `done` is set. The committer sets it last (under the core's
 * lock) and never touches the request again; the writer reads it without a lock. */
typedef struct write_req {
    yyc__kv_write w;  /* w.expiry_ms is set from ttl under the lock (commit_incoming_locked) */
    yyc_error error;  /* w.error: a failure's details */
    double ttl;       /* seconds (INFINITY: never), or NAN for the core's default time to live */
    bool if_absent;   /* a loaded value: stored only if the key has none (set_if_absent) */
    bool skipped;     /* [committer] if_absent, and the key had a value: not stored */
    atomic_bool done; /* committed or failed: w.status is final (release store, acquire load) */
    struct write_req *next; /* in `incoming` */
} write_req;

/* The background writes of the reads' access times (yyc__dc_write_access_times_fire): every
 * ACCESS_WRITE_INTERVAL seconds at most ACCESS_WRITES_PER_FIRE, ACCESS_WRITE_CHUNK per
 * transaction. */
#define ACCESS_WRITE_INTERVAL 1.0
#define ACCESS_WRITES_PER_FIRE 4096
#define ACCESS_WRITE_CHUNK 256

struct yyc_diskcache {
    pthread_mutex_t lock;
    /* Calls waiting for `lock` (lock_as_caller: every public call and a set's commit), and how
     * many times such a call took it (atomics, read without the lock): a long trim hands the lock
     * over to a waiting call between two batches (hand_over_locked). */
    atomic_int callers_waiting;
    atomic_uint lock_turns;
    yyc_kv *kv; /* NULL once closed */
    bool closed;
    char *path; /* canonical; immutable */
    size_t threshold;
    yyc_kv_type type;
    int64_t count_limit;
    int64_t cost_limit;
    double age_limit;
    int64_t free_space_limit;
    double default_ttl; /* seconds, INFINITY: none (disk_cache_loads.c) */
    char *name;
    bool logs;
    yyc_filename_fn filename_fn;
    void *filename_ctx;
    atomic_bool has_filename_fn; /* filename_fn != NULL (written under the lock; read without) */
    yyc_error_hook hook;
    void *hook_ctx;
    yyc_error pending[PENDING_MAX]; /* reported under the lock, delivered after unlocking */
    int npending;
    /* Removal events and statistics (disk_cache_trims.c): the listener, the
     * removals queued under the lock for it (delivered after unlocking, like `pending`), and
     * the counters. Invariant: nremoved <= capremoved; nremoved == 0 without a listener. */
    yyc_diskcache_removal_fn removal_fn;
    void *removal_ctx;
    struct removal *removed;
    size_t nremoved, capremoved;
    yyc_cache_statistics stats;
    struct flight *flights; /* loads under way (get_or_load), guarded by flights_lock */
    pthread_mutex_t flights_lock;

    /* Group commit (commit_write): sets pushed without a lock (a lock-free stack, newest first),
     * waiting for a committer. `committer` is the baton: the one set that holds it takes the
     * core's lock and commits every request pushed so far. The others wait for their `done`,
     * or for the baton, on `commit_done`; `commit_sleepers` [commit_lock] counts those asleep
     * there. commit_lock is a leaf: taken under the core's lock to wake them, and no other lock
     * is taken while it is held. */
    _Atomic(write_req *) incoming;
    atomic_bool committer;
    size_t last_batch; /* [baton] requests the last commit of immediate writes took */
    pthread_mutex_t commit_lock;
    pthread_cond_t commit_done;
    int commit_sleepers;
    /* Deferred writes (see yyc_diskcache_set_write_mode): the mode, the queue, and the timer
     * that commits it on the deadline queue (created with the first switch to DEFERRED, paused
     * while the queue is empty; [lock], freed by the close outside the lock). */
    yyc_write_mode mode;
    double max_delay;
    yyc__deferred queue;
    yyc__timer *flush_timer;

#ifdef YYC_TESTING
    void (*trim_batch_hook)(void *ctx); /* run between two batches of a trim, no lock held */
    void *trim_batch_ctx;
#endif

    pthread_mutex_t timer_lock;
    yyc__timer *timer; /* NULL once closed */
    double interval;
    /* Ends the storage's held read transaction YYC__KV_READ_HOLD_SECONDS after it began (see
     * kv_read_hold.c); set at open, freed by the close; NULL: no read is held. Armed (its
     * interval set) while read_end_armed [lock]. */
    yyc__timer *read_timer;
    bool read_end_armed;
    /* Writes the access times the reads noted (kv_access_times.c) every
     * ACCESS_WRITE_INTERVAL seconds; set at open, freed by the close (NULL: the reads write
     * them at once, as YYKVStorage does). */
    yyc__timer *access_timer;

    /* Registry (yyc__dc_registry.lock). */
    int state; /* a reg_state */
    long refcount;
    long waiters; /* opens waiting for this core to leave OPENING or CLOSING */
    int open_rc;  /* FAILED: the open's status and details, for its waiters */
    yyc_error open_error;
    struct yyc_diskcache *next; /* in yyc__dc_registry.head while OPENING, READY or CLOSING */
};

enum reg_state { OPENING, READY, CLOSING, CLOSED, FAILED };

/* A removed entry waiting for the listener: its key (owned) and why it left. */
struct removal {
    char *key;
    yyc_removal_cause cause;
};

/* Every core that is being opened, is open or is being closed, by canonical path (at most one
 * per path). */
typedef struct yyc__dc_registry_t {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* broadcast when a core leaves OPENING or CLOSING */
    yyc_diskcache *head;
#ifdef YYC_TESTING
    void (*test_hook)(void *ctx, const char *path, bool closing);
    void *test_hook_ctx;
#endif
} yyc__dc_registry_t;
extern yyc__dc_registry_t yyc__dc_registry;

#ifdef YYC_TESTING
void yyc__diskcache_set_test_hook(void (*fn)(void *ctx, const char *path, bool closing), void *ctx);
long yyc__diskcache_registry_waiters(const char *canonical_path);
int yyc__diskcache_registry_size(void);
#endif

/* Events taken from the queue under the core's lock, to deliver after unlocking. */
typedef struct event_batch {
    yyc_error_hook hook;
    void *ctx;
    int n;
    yyc_error events[PENDING_MAX];
    yyc_diskcache_removal_fn removal_fn; /* and the removals, for the listener */
    void *removal_ctx;
    struct removal *removed; /* owned by the batch */
    size_t nremoved;
} event_batch;

/* --- shared helpers: the comment on each definition is its contract --- */

/* disk_cache.c */
void yyc__dc_lock_init(pthread_mutex_t *m);
void yyc__dc_lock(pthread_mutex_t *m);
void yyc__dc_unlock(pthread_mutex_t *m);
bool yyc__dc_trylock(pthread_mutex_t *m);
void yyc__dc_push_event(yyc_diskcache *dc, const yyc_error *e);
int yyc__dc_fail_locked(yyc_diskcache *dc, int code, int sys_errno, const char *what);
void yyc__dc_take_events_locked(yyc_diskcache *dc, event_batch *b);
void yyc__dc_deliver(const event_batch *b);
void yyc__dc_unlock_and_deliver(yyc_diskcache *dc);
void yyc__dc_lock_as_caller(yyc_diskcache *dc);
int yyc__dc_lock_open(yyc_diskcache *dc);
bool yyc__dc_key_is_empty(const char *key);
int yyc__dc_get(yyc_diskcache *dc, const char *key, void **out_value, size_t *out_len, bool count);
void yyc__dc_end_read_fire(void *arg);
void yyc__dc_write_access_times_fire(void *arg);

/* disk_cache_registry.c */
void yyc__dc_run(yyc_diskcache *dc, void (*body)(yyc_diskcache *dc));

/* disk_cache_commits.c */
int yyc__dc_deferred_commit_locked(yyc_diskcache *dc);
int yyc__dc_deferred_put_locked(yyc_diskcache *dc, yyc__kv_write *w);
bool yyc__dc_queued_read_locked(yyc_diskcache *dc, const char *key, bool want_ext, void **out,
                                size_t *out_len, int *rc);
void yyc__dc_deferred_close_locked(yyc_diskcache *dc);

/* disk_cache_trims.c */
void yyc__dc_auto_trim(void *arg);
void yyc__dc_watch_locked(yyc_diskcache *dc);
void yyc__dc_unwatch_locked(yyc_diskcache *dc, yyc_removal_cause cause);
void yyc__dc_note_saved_locked(yyc_diskcache *dc, const yyc__kv_write *w);
void yyc__dc_note_replaced_locked(yyc_diskcache *dc, const char *key);

/* disk_cache_loads.c */
void yyc__dc_remove_if_read_found_expired_locked(yyc_diskcache *dc, const char *key);
int yyc__dc_remove_expired_locked(yyc_diskcache *dc);

#endif /* YYCACHE_DISK_CACHE_INTERNAL_H */
