/*
 * disk_cache.c - YYDiskCache in C: a thread-safe, per-path shared core over yyc_kv.
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
 */
#include "internal.h"

#include "deferred_writes.h"
#include "fs_util.h"
#include "kv_private.h"

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
    double ttl;       /* seconds (INFINITY: never), or NAN for the core's default time to live */
    atomic_bool done; /* committed or failed: w.status is final (release store, acquire load) */
    struct write_req *next; /* in `incoming` */
} write_req;

/* The background writes of the reads' access times (write_access_times_fire): every
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
    double default_ttl; /* seconds, INFINITY: none (disk_cache_expiry.c's sets) */
    char *name;
    bool logs;
    yyc_filename_fn filename_fn;
    void *filename_ctx;
    atomic_bool has_filename_fn; /* filename_fn != NULL (written under the lock; read without) */
    yyc_error_hook hook;
    void *hook_ctx;
    yyc_error pending[PENDING_MAX]; /* reported under the lock, delivered after unlocking */
    int npending;
    /* Removal events and statistics (disk_cache.c "removal events"): the listener, the
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
     * that commits it on the disk worker (created with the first switch to DEFERRED, paused
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

    /* Registry (registry.lock). */
    int state; /* a reg_state */
    long refcount;
    long waiters; /* opens waiting for this core to leave OPENING or CLOSING */
    int open_rc;  /* FAILED: the open's status and details, for its waiters */
    yyc_error open_error;
    struct yyc_diskcache *next; /* in registry.head while OPENING, READY or CLOSING */
};

enum reg_state { OPENING, READY, CLOSING, CLOSED, FAILED };

/* A removed entry waiting for the listener: its key (owned) and why it left. */
struct removal {
    char *key;
    yyc_removal_cause cause;
};

/* Every core that is being opened, is open or is being closed, by canonical path (at most one
 * per path). */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* broadcast when a core leaves OPENING or CLOSING */
    yyc_diskcache *head;
#ifdef YYC_TESTING
    void (*test_hook)(void *ctx, const char *path, bool closing);
    void *test_hook_ctx;
#endif
} registry = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};

#ifdef YYC_TESTING
void yyc__diskcache_set_test_hook(void (*fn)(void *ctx, const char *path, bool closing), void *ctx);
long yyc__diskcache_registry_waiters(const char *canonical_path);
int yyc__diskcache_registry_size(void);
#endif

/* --- private prototypes --- */

static void push_event(yyc_diskcache *dc, const yyc_error *e);
static void unlock_and_deliver(yyc_diskcache *dc);
static int fail_locked(yyc_diskcache *dc, int code, int sys_errno, const char *what);
static void auto_trim(void *arg);
static void end_read_fire(void *arg);
static void write_access_times_fire(void *arg);
static void remove_if_expired_locked(yyc_diskcache *dc, const char *key);
static void remove_if_read_found_expired_locked(yyc_diskcache *dc, const char *key);
static void watch_locked(yyc_diskcache *dc);
static void unwatch_locked(yyc_diskcache *dc, yyc_removal_cause cause);
static void note_saved_locked(yyc_diskcache *dc, const yyc__kv_write *w);
static void note_replaced_locked(yyc_diskcache *dc, const char *key);
static int remove_expired_locked(yyc_diskcache *dc);
static int commit_write(yyc_diskcache *dc, write_req *req);
static int deferred_commit_locked(yyc_diskcache *dc);
static void deferred_close_locked(yyc_diskcache *dc);
static int deferred_put_locked(yyc_diskcache *dc, yyc__kv_write *w);
static bool queued_read_locked(yyc_diskcache *dc, const char *key, bool want_ext, void **out,
                               size_t *out_len, int *rc);

/* --- locking and reporting --- */

static void lock_init(pthread_mutex_t *m) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
#ifndef NDEBUG
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
#endif
    int rc = pthread_mutex_init(m, &attr);
    assert(rc == 0);
    (void)rc;
    pthread_mutexattr_destroy(&attr);
}

static void lock(pthread_mutex_t *m) {
    int rc = pthread_mutex_lock(m);
    assert(rc == 0);
    (void)rc;
    yyc__lock_note_acquired(m);
}

static void unlock(pthread_mutex_t *m) {
    yyc__lock_note_released(m);
    int rc = pthread_mutex_unlock(m);
    assert(rc == 0);
    (void)rc;
}

/* --- fork --- */

/* Around fork(): no other thread may hold the registry lock at the fork, and the child forgets
 * the parent's cores (they, and their SQLite connections, stay the parent's; see yycache.h), so
 * an open in the child creates its own core even for a folder the parent has open. */
static void registry_fork_prepare(void) { lock(&registry.lock); }
static void registry_fork_parent(void) { unlock(&registry.lock); }
static void registry_fork_child(void) {
    registry.head = NULL;
    pthread_cond_init(&registry.changed, NULL); /* a waiter of the parent's may have left it */
    unlock(&registry.lock);
}

static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;
static void install_fork_handlers(void) {
    pthread_atfork(registry_fork_prepare, registry_fork_parent, registry_fork_child);
}

/* The storage's hook: runs on the failing thread, under the core's lock. */
static void kv_hook(void *ctx, const yyc_error *e) { push_event(ctx, e); }

/* Queues an event (caller holds the lock, or owns the core exclusively during open). When
 * the queue is full the oldest event is dropped. */
static void push_event(yyc_diskcache *dc, const yyc_error *e) {
    if (dc->npending == PENDING_MAX) {
        memmove(dc->pending, dc->pending + 1, (PENDING_MAX - 1) * sizeof *dc->pending);
        dc->npending--;
    }
    dc->pending[dc->npending++] = *e;
}

/* Records a core-level failure (thread's last error + queued for the hook). Returns code. */
static int fail_locked(yyc_diskcache *dc, int code, int sys_errno, const char *what) {
    yyc__assert_held(&dc->lock);
    yyc_error e = {.code = code, .sys_errno = sys_errno};
    if (sys_errno) snprintf(e.message, sizeof e.message, "%s: %s", what, strerror(sys_errno));
    else snprintf(e.message, sizeof e.message, "%s", what);
    yyc__error(code, 0, sys_errno, "%s", e.message);
    if (dc->logs)
        fprintf(stderr, "yycache: disk cache: %s (%s)\n", e.message, yyc_status_name(code));
    push_event(dc, &e);
    return code;
}

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

/* Caller holds the lock. Takes the queued events for the hook. Without a hook only the
 * corruption events stay queued (for a hook set later); the others are dropped. */
static void take_events_locked(yyc_diskcache *dc, event_batch *b) {
    yyc__assert_held(&dc->lock);
    b->hook = dc->hook;
    b->ctx = dc->hook_ctx;
    b->n = 0;
    b->removal_fn = dc->removal_fn;
    b->removal_ctx = dc->removal_ctx;
    b->removed = dc->nremoved ? dc->removed : NULL;
    b->nremoved = dc->nremoved;
    if (dc->nremoved) {
        dc->removed = NULL;
        dc->nremoved = dc->capremoved = 0;
    }
    if (b->hook) {
        b->n = dc->npending;
        memcpy(b->events, dc->pending, (size_t)b->n * sizeof *b->events);
        dc->npending = 0;
    } else {
        int kept = 0;
        for (int i = 0; i < dc->npending; i++)
            if (dc->pending[i].code == YYC_ECORRUPT) dc->pending[kept++] = dc->pending[i];
        dc->npending = kept;
    }
}

/* Runs the hook on the taken events (no lock held; touches nothing of the core). The calling
 * thread's last error is kept: a library call in the hook that fails does not replace it. */
static void deliver(const event_batch *b) {
    if (b->n == 0 && b->nremoved == 0) return;
    yyc_error saved;
    yyc_last_error(&saved);
    for (int i = 0; i < b->n; i++) b->hook(b->ctx, &b->events[i]);
    for (size_t i = 0; i < b->nremoved; i++) {
        if (b->removal_fn) b->removal_fn(b->removal_ctx, b->removed[i].key, b->removed[i].cause);
        free(b->removed[i].key);
    }
    free(b->removed);
    yyc__error_restore(&saved);
}

/* Releases the core's lock, then hands the queued events to the hook. */
static void unlock_and_deliver(yyc_diskcache *dc) {
    event_batch b;
    take_events_locked(dc, &b);
    unlock(&dc->lock);
    deliver(&b);
}

/* Takes the lock for a call, counted as waiting meanwhile (hand_over_locked). */
static void lock_as_caller(yyc_diskcache *dc) {
    atomic_fetch_add_explicit(&dc->callers_waiting, 1, memory_order_relaxed);
    lock(&dc->lock);
    atomic_fetch_sub_explicit(&dc->callers_waiting, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&dc->lock_turns, 1, memory_order_relaxed);
}

/* Takes the lock; if the core is closed, records YYC_ECLOSED, unlocks and returns it. */
static int lock_open(yyc_diskcache *dc) {
    lock_as_caller(dc);
    if (dc->closed) {
        fail_locked(dc, YYC_ECLOSED, 0, "disk cache is closed");
        unlock_and_deliver(dc);
        return YYC_ECLOSED;
    }
    return YYC_OK;
}

static bool key_is_empty(const char *key) { return !key || !*key; }

/* --- open, retain, release, close --- */

static yyc_kv_type type_for_threshold(size_t threshold) {
    if (threshold == 0) return YYC_KV_FILE;
    if (threshold == SIZE_MAX) return YYC_KV_SQLITE;
    return YYC_KV_MIXED;
}

static void free_core(yyc_diskcache *dc) {
    for (size_t i = 0; i < dc->nremoved; i++) free(dc->removed[i].key);
    free(dc->removed);
    yyc__deferred_clear(&dc->queue);
    pthread_mutex_destroy(&dc->lock);
    pthread_mutex_destroy(&dc->timer_lock);
    pthread_mutex_destroy(&dc->flights_lock);
    pthread_mutex_destroy(&dc->commit_lock);
    pthread_cond_destroy(&dc->commit_done);
    free(dc->name);
    free(dc->path);
    free(dc);
}

/* Caller holds registry.lock. The core in the list for canonical path, or NULL. */
static yyc_diskcache *find_locked(const char *canon) {
    yyc__assert_held(&registry.lock);
    for (yyc_diskcache *dc = registry.head; dc; dc = dc->next)
        if (strcmp(dc->path, canon) == 0) return dc;
    return NULL;
}

/* Caller holds registry.lock. Takes dc out of the list. */
static void unlink_locked(yyc_diskcache *dc) {
    yyc__assert_held(&registry.lock);
    for (yyc_diskcache **p = &registry.head; *p; p = &(*p)->next) {
        if (*p == dc) {
            *p = dc->next;
            break;
        }
    }
    dc->next = NULL;
}

/* Caller holds registry.lock. Whether nothing can reach dc any more: the caller frees it (after
 * unlocking). True for one caller only: nothing changes dc once it holds. */
static bool unreachable_locked(const yyc_diskcache *dc) {
    yyc__assert_held(&registry.lock);
    return (dc->state == CLOSED || dc->state == FAILED) && dc->refcount == 0 && dc->waiters == 0;
}

/* Opens the storage and the auto-trim timer of a new core (OPENING, owned by the caller; no
 * lock held). */
static int open_storage(yyc_diskcache *dc) {
    /* The core is not shared yet: the hook may queue events without the lock. */
    int rc = yyc__kv_open_ex(dc->path, dc->type, kv_hook, dc, &dc->kv);
    if (rc == YYC_OK &&
        yyc__timer_new(YYC__QUEUE_DISK, end_read_fire, dc, 0, &dc->read_timer) == YYC_OK)
        yyc__kv_set_read_hold(dc->kv, true); /* (no timer: no read is held) */
    if (rc == YYC_OK && yyc__timer_new(YYC__QUEUE_DISK, write_access_times_fire, dc,
                                       ACCESS_WRITE_INTERVAL, &dc->access_timer) == YYC_OK)
        yyc__kv_set_deferred_access_times(dc->kv, true); /* (no timer: reads write them) */
    if (rc == YYC_OK) {
        rc = yyc__timer_new(YYC__QUEUE_DISK, auto_trim, dc, dc->interval, &dc->timer);
        if (rc != YYC_OK) {
            yyc__timer_free(dc->read_timer);
            dc->read_timer = NULL;
            yyc__timer_free(dc->access_timer);
            dc->access_timer = NULL;
            yyc_kv_close(dc->kv);
            dc->kv = NULL;
            yyc__error(rc, 0, ENOMEM, "create auto-trim timer");
        }
    }
    return rc;
}

int yyc_diskcache_open(const char *path, size_t inline_threshold, yyc_diskcache **out) {
    if (YYC__MISUSE(out == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "out is NULL");
    *out = NULL;
    if (!path || !*path) return yyc__error(YYC_EINVAL, 0, 0, "empty path");
    if (strlen(path) > PATH_MAX - 64) return yyc__error(YYC_EINVAL, 0, 0, "path too long");
    int err = yyc__fs_mkdirs(path);
    if (err) {
        int code = yyc__status_from_errno(err);
        if (code == YYC_NOTFOUND) code = YYC_EIO;
        return yyc__error(code, 0, err, "create cache folder: %s", strerror(err));
    }
    char *canon = realpath(path, NULL);
    if (!canon) {
        int e = errno;
        int code = yyc__status_from_errno(e);
        if (code == YYC_NOTFOUND) code = YYC_EIO;
        return yyc__error(code, 0, e, "resolve cache path: %s", strerror(e));
    }

    /* Look up the path; wait while another thread opens or closes it. */
    pthread_once(&fork_handlers_once, install_fork_handlers); /* before any registry lock */
    lock(&registry.lock);
    yyc_diskcache *dc;
    while ((dc = find_locked(canon)) != NULL) {
        if (dc->state == READY) {
            dc->refcount++;
            unlock(&registry.lock);
            free(canon);
            *out = dc;
            return YYC_OK;
        }
        if (yyc__worker_is_current()) {
            unlock(&registry.lock);
            free(canon);
            return yyc__error(YYC_EBUSY, 0, 0,
                              "cache folder is being opened or closed by another thread");
        }
        int seen = dc->state; /* OPENING or CLOSING */
        dc->waiters++;
        do {
            int rc = pthread_cond_wait(&registry.changed, &registry.lock);
            assert(rc == 0);
            (void)rc;
        } while (dc->state == seen);
        dc->waiters--;
        if (dc->state == READY) continue; /* opened: shared just above */
        bool gone = unreachable_locked(dc);
        if (dc->state == FAILED) { /* the open we waited for failed: so does ours */
            int rc = dc->open_rc;
            yyc_error e = dc->open_error;
            unlock(&registry.lock);
            if (gone) free_core(dc);
            free(canon);
            return yyc__error(rc, e.sqlite_code, e.sys_errno, "%s", e.message);
        }
        /* CLOSING or CLOSED (closed right after its open, or the close we waited for): look
         * again. */
        if (gone) {
            unlock(&registry.lock);
            free_core(dc);
            lock(&registry.lock);
        }
    }

    /* None: register a placeholder, open the storage without the registry lock, publish. */
    dc = calloc(1, sizeof *dc);
    if (!dc) {
        unlock(&registry.lock);
        free(canon);
        return yyc__error(YYC_ENOMEM, 0, ENOMEM, "allocate disk cache");
    }
    lock_init(&dc->lock);
    lock_init(&dc->timer_lock);
    lock_init(&dc->flights_lock);
    lock_init(&dc->commit_lock);
    pthread_cond_init(&dc->commit_done, NULL);
    dc->path = canon;
    dc->threshold = inline_threshold;
    dc->type = type_for_threshold(inline_threshold);
    dc->count_limit = INT64_MAX;
    dc->cost_limit = INT64_MAX;
    dc->age_limit = DBL_MAX;
    dc->free_space_limit = 0;
    dc->default_ttl = INFINITY;
    dc->interval = DEFAULT_AUTO_TRIM_INTERVAL;
    dc->state = OPENING;
    dc->refcount = 1; /* the opener's */
    dc->next = registry.head;
    registry.head = dc;
#ifdef YYC_TESTING
    void (*hook)(void *, const char *, bool) = registry.test_hook;
    void *hook_ctx = registry.test_hook_ctx;
#endif
    unlock(&registry.lock);

#ifdef YYC_TESTING
    if (hook) hook(hook_ctx, canon, false);
#endif
    int rc = open_storage(dc);

    bool gone = false;
    lock(&registry.lock);
    if (rc == YYC_OK) {
        dc->state = READY;
    } else {
        unlink_locked(dc);
        dc->state = FAILED;
        dc->refcount = 0;
        dc->open_rc = rc;
        yyc_last_error(&dc->open_error);
        gone = unreachable_locked(dc);
    }
    pthread_cond_broadcast(&registry.changed);
    unlock(&registry.lock);
    if (rc != YYC_OK) {
        if (gone) free_core(dc);
        return rc;
    }
    *out = dc;
    return YYC_OK;
}

yyc_diskcache *yyc_diskcache_retain(yyc_diskcache *dc) {
    if (!dc) return NULL;
    lock(&registry.lock);
    dc->refcount++;
    unlock(&registry.lock);
    return dc;
}

/* Closes the core: marks it closed, stops the auto-trim, closes the storage (no lock held while
 * it does), then takes it out of the registry (CLOSED) and wakes the opens waiting for that.
 * The caller moved it from READY to CLOSING (or found it past READY) under the registry lock.
 * The first close does the work; a later one (or one racing it) returns at once. */
static void close_core(yyc_diskcache *dc) {
    event_batch b;
    lock(&dc->lock);
    if (!dc->closed) deferred_close_locked(dc);
    yyc__timer *flush_timer = dc->flush_timer;
    dc->flush_timer = NULL;
    yyc_kv *kv = dc->kv;
    bool was_closed = dc->closed;
    dc->closed = true;
    dc->kv = NULL;
    take_events_locked(dc, &b);
    unlock(&dc->lock);
    bool gone = false;
    if (!was_closed) {
#ifdef YYC_TESTING
        lock(&registry.lock);
        void (*hook)(void *, const char *, bool) = registry.test_hook;
        void *hook_ctx = registry.test_hook_ctx;
        unlock(&registry.lock);
        if (hook) hook(hook_ctx, dc->path, true);
#endif
        /* Outside the core's lock: a trim firing on the worker may be waiting for it, and
         * closing the storage waits for the storage's jobs on that same worker. */
        lock(&dc->timer_lock);
        yyc__timer *t = dc->timer;
        dc->timer = NULL;
        unlock(&dc->timer_lock);
        yyc__timer_free(t);
        yyc__timer_free(flush_timer);      /* (waits for a commit running on the worker) */
        yyc__timer_free(dc->read_timer);   /* (set at open, never changed; its fire sees closed) */
        yyc__timer_free(dc->access_timer); /* (likewise; the close writes what waits) */
        yyc_kv_close(kv);
        lock(&registry.lock);
        unlink_locked(dc);
        dc->state = CLOSED;
        gone = unreachable_locked(dc);
        pthread_cond_broadcast(&registry.changed);
        unlock(&registry.lock);
    }
    /* After CLOSED: a hook may open this path again without waiting for this thread. */
    deliver(&b);
    if (gone) free_core(dc);
}

void yyc_diskcache_close(yyc_diskcache *dc) {
    if (!dc) return;
    lock(&registry.lock);
    if (dc->state == READY) dc->state = CLOSING; /* new opens of the path wait for CLOSED */
    unlock(&registry.lock);
    close_core(dc);
}

void yyc_diskcache_release(yyc_diskcache *dc) {
    if (!dc) return;
    lock(&registry.lock);
    long left = --dc->refcount;
    assert(left >= 0);
    bool teardown = left == 0 && dc->state == READY;
    if (teardown) dc->state = CLOSING; /* in the same critical section: no open can share it */
    bool gone = !teardown && unreachable_locked(dc);
    unlock(&registry.lock);
    if (teardown) close_core(dc); /* frees it unless an open is still waiting on it */
    else if (gone) free_core(dc); /* closed earlier; this was the last reference */
}

const char *yyc_diskcache_path(yyc_diskcache *dc) { return dc ? dc->path : NULL; }

size_t yyc_diskcache_inline_threshold(yyc_diskcache *dc) { return dc ? dc->threshold : 0; }

/* --- reads --- */

/* The read timer (disk worker): ends the held read transaction, so that an idle cache never
 * keeps another connection's checkpoint waiting, and pauses itself. */
static void end_read_fire(void *arg) {
    yyc_diskcache *dc = arg;
    lock(&dc->lock);
    if (!dc->closed && dc->kv) {
        yyc__kv_end_read(dc->kv);
        dc->read_end_armed = false;
        yyc__timer_set_interval(dc->read_timer, 0);
    }
    unlock(&dc->lock);
}

/* Reads note their access times instead of writing them (kv_access_times.c); this writes
 * them from the disk worker, at most ACCESS_WRITES_PER_FIRE per fire (so that heavy reads of
 * many keys cost the worker a bounded share of the lock), ACCESS_WRITE_CHUNK per transaction,
 * releasing the lock between two so that callers wait behind one chunk at most. Every trim
 * writes them all first, chunk by chunk in the same way (trim_in_batches_locked), and the close
 * writes the rest. */

static void write_access_times_fire(void *arg) {
    yyc_diskcache *dc = arg;
    for (size_t written = 0; written < ACCESS_WRITES_PER_FIRE; written += ACCESS_WRITE_CHUNK) {
        lock(&dc->lock);
        bool more = !dc->closed && dc->kv && yyc__kv_access_times_pending(dc->kv) > 0;
        if (more) yyc__kv_write_access_times(dc->kv, ACCESS_WRITE_CHUNK);
        more = more && dc->kv && yyc__kv_access_times_pending(dc->kv) > 0;
        unlock_and_deliver(dc);
        if (!more) return;
    }
}

#ifdef YYC_TESTING
/* Testing: one fire of the access-time timer now, on the caller's thread. */
void yyc__diskcache_testing_write_access_times(yyc_diskcache *dc);
void yyc__diskcache_testing_write_access_times(yyc_diskcache *dc) { write_access_times_fire(dc); }
/* Testing: stops the access-time timer (the noted times wait for a trim or the close). */
void yyc__diskcache_testing_pause_access_times(yyc_diskcache *dc);
void yyc__diskcache_testing_pause_access_times(yyc_diskcache *dc) {
    lock(&dc->lock);
    if (dc->access_timer) yyc__timer_set_interval(dc->access_timer, 0);
    unlock(&dc->lock);
}
#endif

/* After a read: arms the read timer if the read left a read transaction held. Caller holds the
 * lock; the core is open. */
static void arm_read_end_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
    if (dc->read_end_armed || !dc->read_timer || !yyc__kv_read_is_held(dc->kv)) return;
    yyc__timer_set_interval(dc->read_timer, YYC__KV_READ_HOLD_SECONDS);
    dc->read_end_armed = true;
}

bool yyc_diskcache_contains(yyc_diskcache *dc, const char *key) {
    if (YYC__MISUSE(dc == NULL)) return false;
    if (lock_open(dc) != YYC_OK) return false;
    int rc;
    if (!queued_read_locked(dc, key, false, NULL, NULL, &rc)) {
        rc = key_is_empty(key) ? YYC_NOTFOUND : yyc_kv_exists(dc->kv, key);
        if (rc == YYC_NOTFOUND) remove_if_read_found_expired_locked(dc, key);
        arm_read_end_locked(dc);
    }
    unlock_and_deliver(dc);
    return rc == YYC_OK;
}

int yyc_diskcache_get(yyc_diskcache *dc, const char *key, void **out_value, size_t *out_len) {
    if (YYC__MISUSE(dc == NULL || out_value == NULL || out_len == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out_value = NULL;
    *out_len = 0;
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    if (queued_read_locked(dc, key, false, out_value, out_len, &rc)) {
        if (rc == YYC_OK) dc->stats.hits++;
        else if (rc == YYC_NOTFOUND) dc->stats.misses++;
        unlock_and_deliver(dc);
        return rc;
    }
    rc = key_is_empty(key) ? YYC_NOTFOUND : yyc_kv_get_value(dc->kv, key, out_value, out_len);
    if (rc == YYC_NOTFOUND) remove_if_read_found_expired_locked(dc, key);
    if (rc == YYC_OK) dc->stats.hits++;
    else if (rc == YYC_NOTFOUND) dc->stats.misses++;
    arm_read_end_locked(dc);
    unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_get_extended_data(yyc_diskcache *dc, const char *key, void **out,
                                    size_t *out_len) {
    if (YYC__MISUSE(dc == NULL || out == NULL || out_len == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = NULL;
    *out_len = 0;
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    if (queued_read_locked(dc, key, true, out, out_len, &rc)) {
        unlock_and_deliver(dc);
        return rc;
    }
    yyc_kv_item *item = NULL;
    rc = key_is_empty(key) ? YYC_NOTFOUND : yyc_kv_get_item_info(dc->kv, key, &item);
    if (rc == YYC_NOTFOUND) remove_if_read_found_expired_locked(dc, key);
    if (rc == YYC_OK && item->extended_len) {
        void *copy = malloc(item->extended_len);
        if (!copy) {
            rc = fail_locked(dc, YYC_ENOMEM, ENOMEM, "copy extended data");
        } else {
            memcpy(copy, item->extended_data, item->extended_len);
            *out = copy;
            *out_len = item->extended_len;
        }
    }
    yyc_kv_item_free(item);
    arm_read_end_locked(dc);
    unlock_and_deliver(dc);
    return rc;
}

/* --- writes --- */

/* Group commit. A set pushes its request onto `incoming` (no lock) and takes the committer's
 * baton if no other set holds it. The committer takes the core's lock, takes every request
 * pushed so far, commits them in one transaction (yyc__kv_save_each: each in its own
 * savepoint, so each succeeds or fails by itself), marks them done, and gives the baton back.
 * The sets that found the baton taken wait (spinning a moment, then asleep on commit_done)
 * until their request is done, or until the baton is free again, and then take it: so the sets
 * that arrive during a commit join the next one instead of each waiting for one of its own.
 * They wait for the baton, not for the core's lock: a thread that sets again at once would
 * otherwise take that lock before a sleeping one woke, and keep it from learning for a long
 * time that its set was committed long ago. The commit itself runs under the core's lock, as
 * every other use of the storage does. */

/* Takes every request pushed so far, oldest first. */
static write_req *take_incoming(yyc_diskcache *dc) {
    write_req *newest = atomic_exchange_explicit(&dc->incoming, NULL, memory_order_acquire);
    write_req *oldest = NULL;
    while (newest) {
        write_req *next = newest->next;
        newest->next = oldest;
        oldest = newest;
        newest = next;
    }
    return oldest;
}

/* Wakes the sets asleep on commit_done (to find their request done, or the baton free). */
static void wake_waiters(yyc_diskcache *dc) {
    lock(&dc->commit_lock);
    if (dc->commit_sleepers) pthread_cond_broadcast(&dc->commit_done);
    unlock(&dc->commit_lock);
}

/* Caller holds the lock. Commits every waiting request (at most 64 per transaction), or fails
 * them with YYC_ECLOSED after close, and marks them done; each transaction's sets are woken
 * as soon as it ends. */
static void commit_incoming_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
    write_req *r = take_incoming(dc);
    while (r) {
        yyc__kv_write *batch[64];
        write_req *reqs[64];
        size_t n = 0;
        for (; r && n < 64; r = r->next) {
            reqs[n] = r;
            batch[n++] = &r->w;
        }
        if (dc->closed) {
            for (size_t i = 0; i < n; i++) {
                reqs[i]->w.status = fail_locked(dc, YYC_ECLOSED, 0, "disk cache is closed");
                yyc_last_error(&reqs[i]->w.error);
            }
            for (size_t i = 0; i < n; i++)
                atomic_store_explicit(&reqs[i]->done, true, memory_order_release);
            wake_waiters(dc);
            continue;
        }
        for (size_t i = 0; i < n; i++) { /* (default_ttl is [lock]: read here, not in set_impl) */
            double ttl = isnan(reqs[i]->ttl) ? dc->default_ttl : reqs[i]->ttl;
            reqs[i]->w.expiry_ms = yyc__kv_expiry_from_ttl(ttl);
        }
        if (dc->mode == YYC_WRITE_DEFERRED) {
            for (size_t i = 0; i < n; i++)
                if (deferred_put_locked(dc, &reqs[i]->w) == YYC_OK) dc->stats.insertions++;
        } else {
            yyc__kv_save_each(dc->kv, batch, n);
            for (size_t i = 0; i < n; i++)
                if (reqs[i]->w.status == YYC_OK) note_saved_locked(dc, &reqs[i]->w);
            dc->last_batch = n;
        }
        for (size_t i = 0; i < n; i++)
            atomic_store_explicit(&reqs[i]->done, true, memory_order_release);
        wake_waiters(dc); /* (those sets return now, while later ones still commit) */
    }
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Whether req is done or the baton is free. */
static bool commit_wait_over(yyc_diskcache *dc, write_req *req) {
    return atomic_load_explicit(&req->done, memory_order_acquire) ||
           !atomic_load_explicit(&dc->committer, memory_order_acquire);
}

/* Waits until req is done or the baton is free: spins for COMMIT_SPIN_SECONDS, then yields the
 * processor until COMMIT_YIELD_SECONDS (a commit of small values takes tens of microseconds; a
 * thread woken from sleep would come back later than that), then sleeps on commit_done. */
#define COMMIT_SPIN_SECONDS 20e-6
#define COMMIT_YIELD_SECONDS 500e-6
static void await_commit(yyc_diskcache *dc, write_req *req) {
    double start = yyc__monotonic_now();
    while (!commit_wait_over(dc, req)) {
        double t = yyc__monotonic_now() - start;
        if (t < COMMIT_SPIN_SECONDS) {
            for (int i = 0; i < 32; i++) cpu_relax();
            continue;
        }
        if (t < COMMIT_YIELD_SECONDS) {
            sched_yield();
            continue;
        }
        lock(&dc->commit_lock);
        dc->commit_sleepers++;
        while (!commit_wait_over(dc, req)) {
            int rc = pthread_cond_wait(&dc->commit_done, &dc->commit_lock);
            assert(rc == 0);
            (void)rc;
        }
        dc->commit_sleepers--;
        unlock(&dc->commit_lock);
    }
}

/* The committer, before it commits, when other threads are writing too (it waited for another
 * set's commit, or the last commit took several requests) and only its own request is waiting:
 * waits up to GATHER_SECONDS for another one. The thread whose set the last commit returned
 * needs a moment to come back with its next one, and sharing the commit with it saves far more
 * than that moment. A single writer never waits here (it never waits for another commit, and
 * its commits take one request each); a writer whose company stopped waits once. */
#define GATHER_SECONDS 50e-6
static void gather(yyc_diskcache *dc, write_req *own) {
    double deadline = yyc__monotonic_now() + GATHER_SECONDS;
    while (atomic_load_explicit(&dc->incoming, memory_order_acquire) == own && !own->next) {
        for (int i = 0; i < 32; i++) cpu_relax();
        if (yyc__monotonic_now() >= deadline) return;
    }
}

/* The committer's part: commits every request pushed so far (own among them), gives the baton
 * back and wakes the sets asleep on commit_done, and only then hands the events to the hook and
 * the listener: they may set again, which needs the baton. */
static void commit_as_committer(yyc_diskcache *dc, write_req *own, bool waited) {
    if (waited || dc->last_batch >= 2) gather(dc, own);
    lock_as_caller(dc);
    commit_incoming_locked(dc);
    event_batch events;
    take_events_locked(dc, &events);
    unlock(&dc->lock);
    atomic_store_explicit(&dc->committer, false, memory_order_release);
    wake_waiters(dc);
    deliver(&events);
}

/* A set's commit: returns once req is committed (possibly by another set's thread, in a shared
 * transaction) with its own status; the thread's last error is its own failure's. */
static int commit_write(yyc_diskcache *dc, write_req *req) {
    write_req *head = atomic_load_explicit(&dc->incoming, memory_order_relaxed);
    do {
        req->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&dc->incoming, &head, req, memory_order_release,
                                                    memory_order_relaxed));
    bool waited = false; /* for another set's commit: other threads are writing */
    while (!atomic_load_explicit(&req->done, memory_order_acquire)) {
        if (!atomic_exchange_explicit(&dc->committer, true, memory_order_acq_rel)) {
            commit_as_committer(dc, req, waited); /* (req was pushed before: committed now) */
            assert(atomic_load_explicit(&req->done, memory_order_relaxed));
            break;
        }
        await_commit(dc, req);
        waited = true;
    }
    if (req->w.status != YYC_OK) yyc__error_restore(&req->w.error);
    return req->w.status;
}

static int set_impl(yyc_diskcache *dc, const char *key, const void *value, size_t len,
                    const void *extended, size_t extended_len, const char *explicit_name,
                    bool use_fn, double ttl) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc;
    if (key_is_empty(key) || (!value && len)) {
        rc = lock_open(dc);
        if (rc != YYC_OK) return rc;
        rc = fail_locked(dc, YYC_EINVAL, 0,
                         key_is_empty(key) ? "empty key" : "NULL value with a length");
        unlock_and_deliver(dc);
        return rc;
    }
    /* (type and threshold are fixed at the open: the lock is taken here only for a file value's
     * name function, so that a set of a small value takes it once, in commit_write) */
    yyc_kv_type type = dc->type;
    size_t threshold = dc->threshold;
    /* YYDiskCache: a file when the value is strictly larger than the threshold. The FILE type
     * (threshold 0) needs a file for every value, the empty one included. */
    bool to_file = type == YYC_KV_FILE || (type == YYC_KV_MIXED && len > threshold);
    yyc_filename_fn fn = NULL;
    void *fn_ctx = NULL;
    if (to_file && use_fn && !(explicit_name && *explicit_name) &&
        atomic_load_explicit(&dc->has_filename_fn, memory_order_relaxed)) {
        rc = lock_open(dc);
        if (rc != YYC_OK) return rc;
        fn = dc->filename_fn;
        fn_ctx = dc->filename_ctx;
        unlock_and_deliver(dc);
    }
    char name[256];
    const char *filename = NULL;
    bool bad_name = false;
    if (to_file) {
        if (explicit_name && *explicit_name) {
            filename = explicit_name;
        } else if (fn) {
            name[0] = '\0';
            if (fn(fn_ctx, key, name)) { /* called without the lock */
                if (!memchr(name, '\0', sizeof name)) bad_name = true;
                else if (name[0]) filename = name;
            }
        }
        if (!filename && !bad_name) {
            yyc_kv_md5_filename(key, name);
            filename = name;
        }
        if (!bad_name && !yyc_kv_filename_is_valid(filename)) bad_name = true;
    }
    if (bad_name) {
        rc = lock_open(dc);
        if (rc != YYC_OK) return rc;
        rc = fail_locked(dc, YYC_EINVAL, 0, "invalid file name");
        unlock_and_deliver(dc);
        return rc;
    }
    write_req req = {.w = {.key = key,
                           .value = value,
                           .len = len,
                           .filename = filename,
                           .extended = extended,
                           .extended_len = extended_len},
                     .ttl = ttl};
    return commit_write(dc, &req);
}

int yyc_diskcache_set(yyc_diskcache *dc, const char *key, const void *value, size_t len,
                      const void *extended, size_t extended_len) {
    return set_impl(dc, key, value, len, extended, extended_len, NULL, true, NAN);
}

int yyc_diskcache_set_with_ttl(yyc_diskcache *dc, const char *key, const void *value, size_t len,
                               const void *extended, size_t extended_len, double ttl_seconds) {
    if (isnan(ttl_seconds) || ttl_seconds < 0)
        return yyc__error(YYC_EINVAL, 0, 0, "time to live is negative or NaN");
    return set_impl(dc, key, value, len, extended, extended_len, NULL, true, ttl_seconds);
}

int yyc_diskcache_set_with_filename_and_ttl(yyc_diskcache *dc, const char *key, const void *value,
                                            size_t len, const void *extended, size_t extended_len,
                                            const char *filename, double ttl_seconds) {
    if (isnan(ttl_seconds) || ttl_seconds < 0)
        return yyc__error(YYC_EINVAL, 0, 0, "time to live is negative or NaN");
    return set_impl(dc, key, value, len, extended, extended_len, filename, false, ttl_seconds);
}

int yyc_diskcache_set_with_filename(yyc_diskcache *dc, const char *key, const void *value,
                                    size_t len, const void *extended, size_t extended_len,
                                    const char *filename) {
    return set_impl(dc, key, value, len, extended, extended_len, filename, false, NAN);
}

void yyc_diskcache_set_filename_fn(yyc_diskcache *dc, yyc_filename_fn fn, void *ctx) {
    if (!dc) return;
    lock(&dc->lock);
    dc->filename_fn = fn;
    dc->filename_ctx = ctx;
    atomic_store_explicit(&dc->has_filename_fn, fn != NULL, memory_order_relaxed);
    unlock(&dc->lock);
}

/* --- deferred writes --- */

/* The queue's bounds: a set that would grow it beyond them commits it first. */
#define DEFERRED_MAX_WRITES 10000
#define DEFERRED_MAX_BYTES ((size_t)64 << 20)

typedef struct batch_builder {
    yyc__kv_write *writes;
    yyc__kv_write **ptrs;
    size_t n;
} batch_builder;

static void add_to_batch(void *ctx, const yyc__deferred_entry *e) {
    batch_builder *b = ctx;
    yyc__kv_write *w = &b->writes[b->n];
    *w = (yyc__kv_write){.key = e->key,
                         .remove = e->remove,
                         .value = e->value,
                         .len = e->len,
                         .filename = e->filename,
                         .extended = e->extended,
                         .extended_len = e->extended_len,
                         .expiry_ms = e->expiry_ms};
    b->ptrs[b->n++] = w;
}

/* Caller holds the lock (no removal watch on). Commits the queue in one transaction
 * (yyc__kv_apply_batch) and empties it; on failure the queue is kept whole (the error is
 * recorded and reported). Removal events: the rows the queued removals deleted
 * (YYC_REMOVED_EXPLICIT, under a removal watch) and the rows the queued saves replaced
 * (YYC_REMOVED_REPLACED), once the batch committed; nothing for a batch rolled back (its retry
 * reports them). The queued sets were counted as insertions when queued. */
static int deferred_commit_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
#ifdef YYC_TESTING
    yyc__deferred_check(&dc->queue);
#endif
    if (dc->queue.count == 0) return YYC_OK;
    if (!dc->kv) return fail_locked(dc, YYC_ECLOSED, 0, "disk cache is closed");
    batch_builder b = {.writes = malloc(dc->queue.count * sizeof *b.writes),
                       .ptrs = malloc(dc->queue.count * sizeof *b.ptrs)};
    int rc;
    if (!b.writes || !b.ptrs) {
        rc = fail_locked(dc, YYC_ENOMEM, ENOMEM, "commit deferred writes");
    } else {
        yyc__deferred_each(&dc->queue, add_to_batch, &b);
        assert(b.n == dc->queue.count);
        watch_locked(dc);
        rc = yyc__kv_apply_batch(dc->kv, b.ptrs, b.n);
        unwatch_locked(dc, YYC_REMOVED_EXPLICIT);
        for (size_t i = 0; rc == YYC_OK && i < b.n; i++)
            if (!b.writes[i].remove && b.writes[i].replaced)
                note_replaced_locked(dc, b.writes[i].key);
    }
    free(b.writes);
    free(b.ptrs);
    if (rc == YYC_OK) yyc__deferred_clear(&dc->queue);
    return rc;
}

/* Caller holds the lock. Queues w (a copy), committing the queue first when it is full; arms the
 * flush timer when the queue was empty. Sets and returns w->status. */
static int deferred_put_locked(yyc_diskcache *dc, yyc__kv_write *w) {
    yyc__assert_held(&dc->lock);
    int rc = YYC_OK;
    if (dc->queue.count >= DEFERRED_MAX_WRITES ||
        dc->queue.bytes + w->len + w->extended_len > DEFERRED_MAX_BYTES)
        rc = deferred_commit_locked(dc);
    bool was_empty = dc->queue.count == 0;
    if (rc == YYC_OK && !yyc__deferred_put(&dc->queue, w->key, w->remove, w->value, w->len,
                                           w->extended, w->extended_len, w->filename, w->expiry_ms))
        rc = fail_locked(dc, YYC_ENOMEM, ENOMEM, "queue a deferred write");
    if (rc == YYC_OK && was_empty) yyc__timer_set_interval(dc->flush_timer, dc->max_delay);
    w->status = rc;
    if (rc != YYC_OK) yyc_last_error(&w->error);
    return rc;
}

/* Caller holds the lock. When key has a queued write: true, with *rc YYC_NOTFOUND for a queued
 * removal or an expired queued save, else YYC_OK and (out non-NULL) a copy of its value, or of its
 * extended data with want_ext, in *out / *out_len (NULL / 0 when empty). */
static bool queued_read_locked(yyc_diskcache *dc, const char *key, bool want_ext, void **out,
                               size_t *out_len, int *rc) {
    yyc__assert_held(&dc->lock);
    if (dc->queue.count == 0 || key_is_empty(key)) return false;
    const yyc__deferred_entry *e = yyc__deferred_find(&dc->queue, key);
    if (!e) return false;
    /* An expired queued save is a miss (its row, committed with its expiry, is then removed
     * and reported as YYC_REMOVED_EXPIRED by whatever finds it on disk, as for any row). */
    bool gone = e->remove || (e->expiry_ms != 0 && yyc__kv_now_ms() >= e->expiry_ms);
    *rc = gone ? YYC_NOTFOUND : YYC_OK;
    if (gone || !out) return true;
    const void *src = want_ext ? e->extended : e->value;
    size_t n = want_ext ? e->extended_len : e->len;
    if (n == 0) return true; /* (*out and *out_len were cleared by the caller) */
    void *copy = malloc(n);
    if (!copy) {
        *rc = fail_locked(dc, YYC_ENOMEM, ENOMEM, "copy a queued value");
        return true;
    }
    memcpy(copy, src, n);
    *out = copy;
    *out_len = n;
    return true;
}

/* Caller holds the lock; the core is closing. Commits the queue; what cannot be committed is
 * reported and dropped. */
static void deferred_close_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
    if (dc->queue.count && deferred_commit_locked(dc) != YYC_OK) {
        char what[96];
        snprintf(what, sizeof what, "closing: %zu queued writes could not be committed",
                 dc->queue.count);
        fail_locked(dc, YYC_EIO, 0, what);
    }
    yyc__deferred_clear(&dc->queue);
}

/* The flush timer (disk worker): commits the queue; pauses itself once the queue is empty. A
 * failed commit is tried again after max_delay, but at most once a second (each failure is
 * reported: a full disk must not flood the hook). */
static void flush_fire(void *arg) {
    yyc_diskcache *dc = arg;
    lock(&dc->lock);
    if (dc->closed) {
        unlock(&dc->lock);
        return;
    }
    int rc = deferred_commit_locked(dc);
    if (dc->queue.count == 0) yyc__timer_set_interval(dc->flush_timer, 0);
    else if (rc != YYC_OK) yyc__timer_set_interval(dc->flush_timer, fmax(dc->max_delay, 1.0));
    unlock_and_deliver(dc);
}

/* exit(): commits the queue of every open core (each retained meanwhile; no lock held while
 * flushing, so error hooks run as usual). */
static void flush_all_at_exit(void) {
    lock(&registry.lock);
    size_t n = 0, i = 0;
    for (yyc_diskcache *dc = registry.head; dc; dc = dc->next) n += dc->state == READY;
    yyc_diskcache **all = n ? malloc(n * sizeof *all) : NULL;
    for (yyc_diskcache *dc = registry.head; all && dc; dc = dc->next) {
        if (dc->state != READY) continue;
        dc->refcount++;
        all[i++] = dc;
    }
    unlock(&registry.lock);
    for (size_t k = 0; k < i; k++) {
        yyc_diskcache_flush(all[k]);
        yyc_diskcache_release(all[k]);
    }
    free(all);
}

static pthread_once_t at_exit_once = PTHREAD_ONCE_INIT;
static void install_flush_at_exit(void) { atexit(flush_all_at_exit); }

int yyc_diskcache_set_write_mode(yyc_diskcache *dc, yyc_write_mode mode, double max_delay) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    if (mode != YYC_WRITE_IMMEDIATE && mode != YYC_WRITE_DEFERRED)
        return yyc__error(YYC_EINVAL, 0, 0, "unknown write mode");
    if (mode == YYC_WRITE_DEFERRED) pthread_once(&at_exit_once, install_flush_at_exit);
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    if (mode == YYC_WRITE_DEFERRED) {
        if (isnan(max_delay)) max_delay = 1;
        max_delay = max_delay < 0.001 ? 0.001 : max_delay > 3600 ? 3600 : max_delay;
        if (!dc->flush_timer)
            rc = yyc__timer_new(YYC__QUEUE_DISK, flush_fire, dc, 0, &dc->flush_timer);
        if (rc != YYC_OK) {
            rc = fail_locked(dc, rc, ENOMEM, "create the deferred writes' timer");
        } else {
            dc->mode = YYC_WRITE_DEFERRED;
            dc->max_delay = max_delay;
            if (dc->queue.count) yyc__timer_set_interval(dc->flush_timer, max_delay);
        }
    } else {
        rc = deferred_commit_locked(dc);
        if (rc == YYC_OK) {
            dc->mode = YYC_WRITE_IMMEDIATE;
            dc->max_delay = 0;
            yyc__timer_set_interval(dc->flush_timer, 0);
        }
    }
    unlock_and_deliver(dc);
    return rc;
}

yyc_write_mode yyc_diskcache_write_mode(yyc_diskcache *dc, double *out_max_delay) {
    if (out_max_delay) *out_max_delay = 0;
    if (!dc) return YYC_WRITE_IMMEDIATE;
    lock(&dc->lock);
    yyc_write_mode mode = dc->mode;
    if (out_max_delay) *out_max_delay = dc->max_delay;
    unlock(&dc->lock);
    return mode;
}

int yyc_diskcache_flush(yyc_diskcache *dc) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    rc = deferred_commit_locked(dc);
    unlock_and_deliver(dc);
    return rc;
}

/* --- removal --- */

int yyc_diskcache_remove(yyc_diskcache *dc, const char *key) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    if (dc->mode == YYC_WRITE_DEFERRED && !key_is_empty(key)) {
        yyc__kv_write w = {.key = key, .remove = true};
        rc = deferred_put_locked(dc, &w);
        unlock_and_deliver(dc);
        return rc;
    }
    watch_locked(dc);
    rc = key_is_empty(key) ? YYC_OK : yyc_kv_remove(dc->kv, key);
    unwatch_locked(dc, YYC_REMOVED_EXPLICIT);
    unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_remove_all(yyc_diskcache *dc) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    yyc__deferred_clear(&dc->queue); /* (everything queued goes too) */
    watch_locked(dc);
    rc = yyc_kv_remove_all(dc->kv);
    unwatch_locked(dc, YYC_REMOVED_EXPLICIT);
    unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_remove_all_progress(yyc_diskcache *dc, yyc_progress_fn progress, void *ctx) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    int64_t total = 0;
    yyc__deferred_clear(&dc->queue); /* (everything queued goes too) */
    rc = yyc_kv_count(dc->kv, &total);
    unlock_and_deliver(dc);
    if (rc != YYC_OK) return rc;
    /* The total is a snapshot: values written meanwhile by other threads may stay. */
    int64_t removed = 0, reported = -1;
    while (removed < total) {
        rc = lock_open(dc);
        if (rc != YYC_OK) return rc;
        int64_t n = 0;
        watch_locked(dc);
        rc = yyc__kv_remove_lru_batch(dc->kv, YYC__KV_REMOVE_ALL_BATCH, &n);
        unwatch_locked(dc, YYC_REMOVED_EXPLICIT);
        unlock_and_deliver(dc);
        if (rc != YYC_OK) return rc;
        if (n == 0) break;
        removed += n;
        if (removed > total) removed = total;
        if (progress) progress(ctx, removed, total); /* lock released between batches */
        reported = removed;
    }
    if (total > 0 && reported != total && progress) progress(ctx, total, total);
    if (total > 0 && lock_open(dc) == YYC_OK) {
        yyc__kv_checkpoint(dc->kv);
        unlock_and_deliver(dc);
    }
    return YYC_OK;
}

/* --- totals --- */

int yyc_diskcache_total_count(yyc_diskcache *dc, int64_t *out) {
    if (YYC__MISUSE(dc == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = 0;
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    rc = deferred_commit_locked(dc);
    if (rc == YYC_OK) rc = yyc_kv_count(dc->kv, out);
    unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_total_cost(yyc_diskcache *dc, int64_t *out) {
    if (YYC__MISUSE(dc == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = 0;
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    rc = deferred_commit_locked(dc);
    if (rc == YYC_OK) rc = yyc_kv_size(dc->kv, out);
    unlock_and_deliver(dc);
    return rc;
}

/* --- trims (spec 4.3); the caller holds the lock and the core is open --- */

/* Caller holds the lock: between two pieces of a long job (a trim's batches) it releases the
 * lock and lets the calls waiting for it in (a mutex is not fair: the releasing thread would
 * take it straight back): when calls were waiting, it waits until one of them has had the lock
 * (at most 2 ms); then takes it again. Events queued so far are delivered on the way. Returns
 * with the lock held; the caller checks dc->closed. */
static void hand_over_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
    bool waited_for = atomic_load_explicit(&dc->callers_waiting, memory_order_relaxed) > 0;
    unsigned turns = atomic_load_explicit(&dc->lock_turns, memory_order_relaxed);
    unlock_and_deliver(dc);
#ifdef YYC_TESTING
    lock(&dc->lock);
    void (*hook)(void *) = dc->trim_batch_hook;
    void *hook_ctx = dc->trim_batch_ctx;
    unlock(&dc->lock);
    if (hook) hook(hook_ctx);
#endif
    double deadline = yyc__monotonic_now() + 0.002;
    while (waited_for && atomic_load_explicit(&dc->lock_turns, memory_order_relaxed) == turns &&
           yyc__monotonic_now() < deadline) {
        struct timespec ts = {0, 20000}; /* 20 us */
        nanosleep(&ts, NULL);
    }
    lock(&dc->lock);
}

/* After a trim removed rows: the WAL is truncated on the checkpoint queue (on ext4 a
 * truncating checkpoint's fsync alone took 80 ms, all of it under the core's lock), unless the
 * file system is short of space (yyc__kv_space_is_short): then here and now, so that the space
 * the trim freed is there for the next set. */
static void truncate_wal_after_trim_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
    if (yyc__kv_space_is_short(dc->kv)) yyc__kv_checkpoint(dc->kv);
    else yyc__kv_checkpoints_truncate_soon(dc->kv);
}

/* Runs a trim in short batches (yyc__kv_trim_batch: one transaction each, by index order) and
 * releases the core's lock between them (hand_over_locked), so that no caller waits behind more
 * than one batch however large the trim (issue 14, item 3). The caller's removal watch is
 * ended before each release (its removals queued with the trim's cause, delivered on the way)
 * and started again after it. Returns with the lock held; YYC_ECLOSED when the core was closed
 * meanwhile (the batches done stay done). When rows went, the WAL is truncated
 * (truncate_wal_after_trim_locked). */
static int trim_in_batches_locked(yyc_diskcache *dc, yyc__kv_trim kind, int64_t value) {
    yyc__assert_held(&dc->lock);
    yyc_removal_cause cause =
        kind == YYC__KV_TRIM_EARLIER ? YYC_REMOVED_EXPIRED : YYC_REMOVED_EVICTED;
    int64_t removed = 0;
    for (;;) {
        bool more = false;
        int64_t n = 0;
        /* The access times noted so far first (also those of the reads made since the last
         * batch), a chunk per transaction with the lock handed over between two: writing 8,192
         * of them at once took 160 ms at 100,000 entries. */
        size_t noted = yyc__kv_access_times_pending(dc->kv);
        for (size_t written = 0; noted > 0;) {
            yyc__kv_write_access_times(dc->kv, ACCESS_WRITE_CHUNK);
            written += ACCESS_WRITE_CHUNK;
            if (written >= noted || yyc__kv_access_times_pending(dc->kv) == 0) break;
            unwatch_locked(dc, cause);
            hand_over_locked(dc);
            if (dc->closed)
                return fail_locked(dc, YYC_ECLOSED, 0, "disk cache closed during a trim");
            watch_locked(dc);
        }
        int rc = yyc__kv_trim_batch(dc->kv, kind, value, &more, &n);
        removed += n;
        if (rc != YYC_OK || !more) {
            if (removed > 0) truncate_wal_after_trim_locked(dc);
            return rc;
        }
        unwatch_locked(dc, cause);
        hand_over_locked(dc);
        if (dc->closed) return fail_locked(dc, YYC_ECLOSED, 0, "disk cache closed during a trim");
        watch_locked(dc);
    }
}

static int trim_cost_locked(yyc_diskcache *dc, int64_t cost) {
    yyc__assert_held(&dc->lock);
    if (cost == INT64_MAX) return YYC_OK;
    if (cost <= 0) return yyc_kv_remove_all(dc->kv); /* 0: everything */
    return trim_in_batches_locked(dc, YYC__KV_TRIM_TO_SIZE, cost);
}

static int trim_count_locked(yyc_diskcache *dc, int64_t count) {
    yyc__assert_held(&dc->lock);
    if (count == INT64_MAX) return YYC_OK;
    if (count <= 0) return yyc_kv_remove_all(dc->kv);
    return trim_in_batches_locked(dc, YYC__KV_TRIM_TO_COUNT, count);
}

static int trim_age_locked(yyc_diskcache *dc, double age) {
    yyc__assert_held(&dc->lock);
    if (isnan(age)) return YYC_OK;
    if (age <= 0) return yyc_kv_remove_all(dc->kv);
    int64_t now = (int64_t)time(NULL);
    if (!(age < (double)now)) return YYC_OK; /* covers DBL_MAX and +inf */
    int64_t cutoff = now - (int64_t)age;
    if (cutoff <= 0) return YYC_OK;
    return trim_in_batches_locked(dc, YYC__KV_TRIM_EARLIER, cutoff);
}

static int trim_free_space_locked(yyc_diskcache *dc, int64_t target) {
    yyc__assert_held(&dc->lock);
    if (target <= 0) return YYC_OK;
    int64_t total = 0;
    int rc = yyc_kv_size(dc->kv, &total);
    if (rc != YYC_OK) return rc;
    if (total <= 0) return YYC_OK;
    struct statvfs sv;
    if (statvfs(dc->path, &sv) != 0) return fail_locked(dc, YYC_EIO, errno, "statvfs");
    /* Measured on the cache's own file system (YYDiskCache measured the home folder's). */
    uint64_t avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    int64_t free_bytes = avail > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)avail;
    if (free_bytes >= target) return YYC_OK;
    int64_t need = target - free_bytes;
    int64_t keep = total > need ? total - need : 0;
    return trim_cost_locked(dc, keep); /* (the goal fixed now, as YYDiskCache did) */
}

int yyc_diskcache_trim_to_count(yyc_diskcache *dc, int64_t count) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    deferred_commit_locked(dc); /* (a failed commit does not stop the trim) */
    rc = remove_expired_locked(dc);
    watch_locked(dc);
    if (rc == YYC_OK) rc = trim_count_locked(dc, count);
    unwatch_locked(dc, YYC_REMOVED_EVICTED);
    unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_trim_to_cost(yyc_diskcache *dc, int64_t cost) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    deferred_commit_locked(dc); /* (a failed commit does not stop the trim) */
    rc = remove_expired_locked(dc);
    watch_locked(dc);
    if (rc == YYC_OK) rc = trim_cost_locked(dc, cost);
    unwatch_locked(dc, YYC_REMOVED_EVICTED);
    unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_trim_to_age(yyc_diskcache *dc, double seconds) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    deferred_commit_locked(dc); /* (a failed commit does not stop the trim) */
    rc = remove_expired_locked(dc);
    watch_locked(dc);
    if (rc == YYC_OK) rc = trim_age_locked(dc, seconds);
    unwatch_locked(dc, YYC_REMOVED_EXPIRED);
    unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_trim_to_free_space(yyc_diskcache *dc, int64_t bytes) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    deferred_commit_locked(dc); /* (a failed commit does not stop the trim) */
    rc = remove_expired_locked(dc);
    watch_locked(dc);
    if (rc == YYC_OK) rc = trim_free_space_locked(dc, bytes);
    unwatch_locked(dc, YYC_REMOVED_EVICTED);
    unlock_and_deliver(dc);
    return rc;
}

/* The auto-trim timer (worker thread): cost, count, age, free space, as YYDiskCache does. */
static void auto_trim(void *arg) {
    yyc_diskcache *dc = arg;
    lock(&dc->lock);
    if (dc->closed) {
        unlock(&dc->lock);
        return;
    }
    deferred_commit_locked(dc);
    remove_expired_locked(dc);
    watch_locked(dc);
    if (dc->kv) trim_cost_locked(dc, dc->cost_limit);
    if (dc->kv) trim_count_locked(dc, dc->count_limit);
    unwatch_locked(dc, YYC_REMOVED_EVICTED);
    watch_locked(dc);
    if (dc->kv) trim_age_locked(dc, dc->age_limit);
    unwatch_locked(dc, YYC_REMOVED_EXPIRED);
    watch_locked(dc);
    if (dc->kv) trim_free_space_locked(dc, dc->free_space_limit);
    unwatch_locked(dc, YYC_REMOVED_EVICTED);
    unlock_and_deliver(dc); /* touches nothing of dc after the hook */
}

/* --- removal events and statistics (kv_removals.c) ---
 *
 * Every call that may remove rows runs them under a removal watch (watch_locked ...
 * unwatch_locked with the cause): the storage records the key of each row its committed
 * transactions deleted; each counts in stats.removals[cause] and, with a listener, is queued
 * (the key copied) for delivery after the lock is released (unlock_and_deliver). A save that
 * replaced a row of its key queues a YYC_REMOVED_REPLACED. Removals done by other processes are
 * not seen. */

static void queue_removal_locked(yyc_diskcache *dc, char *key, yyc_removal_cause cause) {
    yyc__assert_held(&dc->lock);
    dc->stats.removals[cause]++;
    if (!dc->removal_fn) {
        free(key);
        return;
    }
    if (dc->nremoved == dc->capremoved) {
        size_t cap = dc->capremoved ? dc->capremoved * 2 : 16;
        struct removal *p = realloc(dc->removed, cap * sizeof *p);
        if (!p) { /* (out of memory: the event is lost; the count is kept) */
            free(key);
            return;
        }
        dc->removed = p;
        dc->capremoved = cap;
    }
    dc->removed[dc->nremoved++] = (struct removal){key, cause};
}

/* Caller holds the lock; the core is open. */
static void watch_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
    if (dc->kv) yyc__kv_watch_removals(dc->kv);
}

static void unwatch_locked(yyc_diskcache *dc, yyc_removal_cause cause) {
    yyc__assert_held(&dc->lock);
    if (!dc->kv) return;
    char **keys = NULL;
    bool lost = false;
    size_t n = yyc__kv_unwatch_removals(dc->kv, &keys, &lost);
    for (size_t i = 0; i < n; i++) queue_removal_locked(dc, keys[i], cause);
    free(keys);
}

/* The save w committed: one insertion, and the row it replaced (w->replaced, learned by that
 * save itself: each write of a group commit has its own) left. */
static void note_saved_locked(yyc_diskcache *dc, const yyc__kv_write *w) {
    yyc__assert_held(&dc->lock);
    assert(!w->remove && w->status == YYC_OK);
    dc->stats.insertions++;
    if (w->replaced) note_replaced_locked(dc, w->key);
}

/* A committed save of key replaced its row: one YYC_REMOVED_REPLACED. */
static void note_replaced_locked(yyc_diskcache *dc, const char *key) {
    yyc__assert_held(&dc->lock);
    char *copy = dc->removal_fn ? strdup(key) : NULL;
    if (dc->removal_fn && !copy) {
        dc->stats.removals[YYC_REMOVED_REPLACED]++; /* counted, not delivered */
        return;
    }
    queue_removal_locked(dc, copy, YYC_REMOVED_REPLACED);
}

void yyc_diskcache_set_removal_listener(yyc_diskcache *dc, yyc_diskcache_removal_fn fn, void *ctx) {
    if (!dc) return;
    lock(&dc->lock);
    dc->removal_fn = fn;
    dc->removal_ctx = ctx;
    unlock(&dc->lock); /* (nothing is queued between calls: each delivers its own) */
}

void *yyc_diskcache_removal_listener_ctx(yyc_diskcache *dc) {
    if (!dc) return NULL;
    lock(&dc->lock);
    void *ctx = dc->removal_fn ? dc->removal_ctx : NULL;
    unlock(&dc->lock);
    return ctx;
}

int yyc_diskcache_statistics(yyc_diskcache *dc, yyc_cache_statistics *out) {
    if (YYC__MISUSE(dc == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    lock(&dc->lock);
    *out = dc->stats;
    unlock(&dc->lock);
    return YYC_OK;
}

void yyc_diskcache_reset_statistics(yyc_diskcache *dc) {
    if (!dc) return;
    lock(&dc->lock);
    memset(&dc->stats, 0, sizeof dc->stats);
    unlock(&dc->lock);
}

/* --- enumeration (kv_entries.c) ---
 *
 * An iterator holds a reference to the core and one page of entries (ENTRIES_PAGE at most);
 * each page is read under the core's lock in one indexed query and handed out after unlocking,
 * so a walk of any size holds the lock for one page at a time and writers proceed between
 * pages. */

#define ENTRIES_PAGE 256

/* Invariant: next <= n <= ENTRIES_PAGE; page[next..n) are the entries not handed out yet;
 * `current` points into page[next - 1] after a successful next. */
struct yyc_diskcache_iter {
    yyc_diskcache *dc; /* one reference */
    yyc__kv_cursor cursor;
    yyc__kv_entry page[ENTRIES_PAGE];
    size_t n, next;
    bool more;           /* the last page was full: entries may follow */
    size_t max_buffered; /* [testing] the most entries held at once */
    yyc_diskcache_entry current;
};

int yyc_diskcache_iter_open(yyc_diskcache *dc, yyc_diskcache_iter **out) {
    if (YYC__MISUSE(dc == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = NULL;
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    unlock_and_deliver(dc);
    yyc_diskcache_iter *it = calloc(1, sizeof *it);
    if (!it) return yyc__error(YYC_ENOMEM, 0, ENOMEM, "allocate iterator");
    it->dc = yyc_diskcache_retain(dc);
    it->more = true;
    *out = it;
    return YYC_OK;
}

/* Reads the next page (no lock held by the caller). */
static int iter_fill(yyc_diskcache_iter *it) {
    yyc__kv_entries_clear(it->page, it->n);
    it->n = it->next = 0;
    while (it->n == 0 && it->more) {
        int rc = lock_open(it->dc);
        if (rc != YYC_OK) return rc;
        deferred_commit_locked(it->dc); /* (a failed commit does not stop the walk) */
        rc = yyc__kv_entries_page(it->dc->kv, &it->cursor, ENTRIES_PAGE, it->page, &it->n,
                                  &it->more);
        unlock_and_deliver(it->dc);
        if (rc != YYC_OK) return rc;
        if (it->n > it->max_buffered) it->max_buffered = it->n;
    }
    return YYC_OK;
}

int yyc_diskcache_iter_next(yyc_diskcache_iter *it, const yyc_diskcache_entry **out) {
    if (YYC__MISUSE(it == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = NULL;
    for (;;) {
        if (it->next == it->n) {
            int rc = iter_fill(it);
            if (rc != YYC_OK) return rc;
            if (it->n == 0) return YYC_NOTFOUND;
        }
        const yyc__kv_entry *e = &it->page[it->next++];
        if (e->expiry_ms && e->expiry_ms <= yyc__kv_now_ms()) continue; /* expired meanwhile */
        it->current = (yyc_diskcache_entry){.key = e->key,
                                            .filename = e->filename,
                                            .size = e->size,
                                            .modification_time = e->modification_time,
                                            .last_access_time = e->last_access_time,
                                            .expiry_ms = e->expiry_ms};
        *out = &it->current;
        return YYC_OK;
    }
}

void yyc_diskcache_iter_free(yyc_diskcache_iter *it) {
    if (!it) return;
    yyc__kv_entries_clear(it->page, it->n);
    yyc_diskcache_release(it->dc);
    free(it);
}

int yyc_diskcache_for_each_entry(yyc_diskcache *dc, yyc_diskcache_entry_fn fn, void *ctx) {
    if (YYC__MISUSE(dc == NULL || fn == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    yyc_diskcache_iter *it;
    int rc = yyc_diskcache_iter_open(dc, &it);
    if (rc != YYC_OK) return rc;
    const yyc_diskcache_entry *e;
    while ((rc = yyc_diskcache_iter_next(it, &e)) == YYC_OK) {
        int stop = fn(ctx, e); /* no lock held */
        if (stop) {
            rc = stop;
            break;
        }
    }
    yyc_diskcache_iter_free(it);
    return rc == YYC_NOTFOUND ? YYC_OK : rc;
}

#ifdef YYC_TESTING
/* Testing: the most entries the iterator held at once. */
size_t yyc__diskcache_iter_max_buffered(const yyc_diskcache_iter *it);
size_t yyc__diskcache_iter_max_buffered(const yyc_diskcache_iter *it) { return it->max_buffered; }
#endif

/* --- loading with single flight ---
 *
 * A flight is one load of one key under way; callers that miss on a key with a flight wait on
 * the flight's condition (with flights_lock, never the core's lock) and get a copy of its
 * value. Lock order: flights_lock is never held together with the core's lock, and never while
 * user code (the loader) runs. Invariant: a flight is in dc->flights until done; it is freed
 * by whoever leaves it done with no waiter. */

struct flight {
    char *key;
    long waiters;
    bool done;
    int status;
    void *value; /* a copy for the waiters (done, status YYC_OK, waiters > 0) */
    size_t len;
    pthread_cond_t finished;
    struct flight *next;
};

static void free_flight(struct flight *f) {
    pthread_cond_destroy(&f->finished);
    free(f->value);
    free(f->key);
    free(f);
}

/* Counts a finished load (core lock taken here). */
static void count_load(yyc_diskcache *dc, bool ok, uint64_t ns) {
    lock(&dc->lock);
    if (ok) dc->stats.loads++;
    else dc->stats.load_failures++;
    dc->stats.total_load_time_ns += ns;
    unlock(&dc->lock);
}

void yyc_diskcache_count_load(yyc_diskcache *dc, bool ok, uint64_t load_ns) {
    if (dc) count_load(dc, ok, load_ns);
}

/* Waits for f (caller holds flights_lock and counted itself in f->waiters); copies its result. */
static int wait_flight_locked(yyc_diskcache *dc, struct flight *f, void **out, size_t *len) {
    yyc__assert_held(&dc->flights_lock);
    while (!f->done) {
        int rc = pthread_cond_wait(&f->finished, &dc->flights_lock);
        assert(rc == 0);
        (void)rc;
    }
    int status = f->status;
    if (status == YYC_OK && f->len) {
        *out = malloc(f->len);
        if (*out) {
            memcpy(*out, f->value, f->len);
            *len = f->len;
        } else {
            status = YYC_ENOMEM;
        }
    }
    bool last = --f->waiters == 0;
    if (last) free_flight(f); /* done flights are out of the list */
    return status;
}

int yyc_diskcache_get_or_load(yyc_diskcache *dc, const char *key, yyc_diskcache_load_fn load,
                              void *ctx, void **out_value, size_t *out_len) {
    if (YYC__MISUSE(dc == NULL || load == NULL || out_value == NULL || out_len == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out_value = NULL;
    *out_len = 0;
    if (key_is_empty(key)) return yyc__error(YYC_EINVAL, 0, 0, "empty key");
    int rc = yyc_diskcache_get(dc, key, out_value, out_len); /* a hit or a miss */
    if (rc != YYC_NOTFOUND) return rc;

    lock(&dc->flights_lock);
    struct flight *f = dc->flights;
    while (f && strcmp(f->key, key) != 0) f = f->next;
    if (f) { /* another caller loads it: wait for its result */
        f->waiters++;
        rc = wait_flight_locked(dc, f, out_value, out_len);
        unlock(&dc->flights_lock);
        if (rc != YYC_OK) yyc__error(rc, 0, 0, "the load this call waited for failed");
        return rc;
    }
    f = calloc(1, sizeof *f);
    char *key_copy = f ? strdup(key) : NULL;
    if (!key_copy) {
        unlock(&dc->flights_lock);
        free(f);
        return yyc__error(YYC_ENOMEM, 0, ENOMEM, "allocate a load");
    }
    f->key = key_copy;
    pthread_cond_init(&f->finished, NULL);
    f->next = dc->flights;
    dc->flights = f;
    unlock(&dc->flights_lock);

    /* A load that finished between our miss and our flight stored its value: use it. */
    rc = yyc_diskcache_get(dc, key, out_value, out_len);
    bool loaded = false;
    if (rc == YYC_NOTFOUND) {
        double start = yyc__monotonic_now();
        void *value = NULL;
        size_t len = 0;
        rc = load(ctx, key, &value, &len);    /* no lock held */
        if (rc == YYC_NOTFOUND) rc = YYC_EIO; /* (a loader has no "miss") */
        if (rc == YYC_OK && !value && len) rc = YYC_EINVAL;
        uint64_t ns = (uint64_t)((yyc__monotonic_now() - start) * 1e9);
        count_load(dc, rc == YYC_OK, ns);
        if (rc == YYC_OK) rc = yyc_diskcache_set(dc, key, value, len, NULL, 0);
        if (rc == YYC_OK) {
            *out_value = len ? value : NULL;
            *out_len = len;
            if (!len) free(value);
        } else {
            free(value);
        }
        loaded = true;
    }
    yyc_error failure;
    if (rc != YYC_OK) yyc_last_error(&failure);

    lock(&dc->flights_lock);
    for (struct flight **p = &dc->flights; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    f->done = true;
    f->status = rc;
    if (rc == YYC_OK && f->waiters && *out_len) {
        f->value = malloc(*out_len);
        if (f->value) {
            memcpy(f->value, *out_value, *out_len);
            f->len = *out_len;
        } else {
            f->status = YYC_ENOMEM;
        }
    }
    pthread_cond_broadcast(&f->finished);
    bool gone = f->waiters == 0;
    unlock(&dc->flights_lock);
    if (gone) free_flight(f);
    if (rc != YYC_OK && loaded)
        yyc__error(failure.code, failure.sqlite_code, failure.sys_errno, "%s", failure.message);
    return rc;
}

#ifdef YYC_TESTING
/* Testing: how many callers wait for the load of key under way (-1: none under way). */
long yyc__diskcache_flight_waiters(yyc_diskcache *dc, const char *key);
long yyc__diskcache_flight_waiters(yyc_diskcache *dc, const char *key) {
    lock(&dc->flights_lock);
    long n = -1;
    for (struct flight *f = dc->flights; f; f = f->next)
        if (!strcmp(f->key, key)) n = f->waiters;
    unlock(&dc->flights_lock);
    return n;
}
#endif

/* --- time to live (kv_expiry.c) --- */

/* Removes key's row if it has expired (the read that finds an entry expired removes it). Its errors
 * are reported through the hook only: the read still answers that there is no value. Caller holds
 * the lock; the core is open. */
static void remove_if_expired_locked(yyc_diskcache *dc, const char *key) {
    yyc__assert_held(&dc->lock);
    if (key_is_empty(key)) return;
    yyc_error saved;
    yyc_last_error(&saved);
    bool removed = false;
    watch_locked(dc);
    yyc__kv_remove_if_expired(dc->kv, key, &removed);
    unwatch_locked(dc, YYC_REMOVED_EXPIRED);
    yyc__error_restore(&saved);
}

/* After a read answered a miss: removes key's row if the read found it expired (a missing row
 * costs nothing more). Caller holds the lock; the core is open. */
static void remove_if_read_found_expired_locked(yyc_diskcache *dc, const char *key) {
    if (yyc__kv_take_read_found_expired(dc->kv)) remove_if_expired_locked(dc, key);
}

/* Removes every expired entry (the first step of every trim and auto-trim). Caller holds the
 * lock; the core is open. */
static int remove_expired_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
    watch_locked(dc);
    int rc = yyc__kv_remove_expired(dc->kv, NULL);
    unwatch_locked(dc, YYC_REMOVED_EXPIRED);
    return rc;
}

int yyc_diskcache_trim_expired(yyc_diskcache *dc) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    deferred_commit_locked(dc); /* (a failed commit does not stop the trim) */
    rc = remove_expired_locked(dc);
    unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_time_to_live(yyc_diskcache *dc, const char *key, double *out_seconds) {
    if (YYC__MISUSE(dc == NULL || out_seconds == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out_seconds = 0;
    int rc = lock_open(dc);
    if (rc != YYC_OK) return rc;
    int64_t expiry = 0;
    const yyc__deferred_entry *queued =
        key_is_empty(key) ? NULL : yyc__deferred_find(&dc->queue, key);
    int64_t now = yyc__kv_now_ms();
    if (queued) { /* the queued write is the answer (nothing is committed for it) */
        bool gone = queued->remove || (queued->expiry_ms != 0 && queued->expiry_ms <= now);
        if (!gone)
            *out_seconds =
                queued->expiry_ms == 0 ? INFINITY : (double)(queued->expiry_ms - now) / 1000.0;
        unlock_and_deliver(dc);
        return gone ? YYC_NOTFOUND : YYC_OK;
    }
    rc = key_is_empty(key) ? YYC_NOTFOUND : yyc__kv_expiry_of(dc->kv, key, &expiry);
    if (rc == YYC_OK && expiry != 0 && expiry <= now) {
        remove_if_expired_locked(dc, key);
        rc = YYC_NOTFOUND;
    }
    if (rc == YYC_OK) *out_seconds = expiry == 0 ? INFINITY : (double)(expiry - now) / 1000.0;
    unlock_and_deliver(dc);
    return rc;
}

void yyc_diskcache_set_default_time_to_live(yyc_diskcache *dc, double seconds) {
    if (!dc) return;
    lock(&dc->lock);
    dc->default_ttl = isnan(seconds) ? INFINITY : seconds < 0 ? 0 : seconds;
    unlock(&dc->lock);
}

double yyc_diskcache_default_time_to_live(yyc_diskcache *dc) {
    if (!dc) return INFINITY;
    lock(&dc->lock);
    double v = dc->default_ttl;
    unlock(&dc->lock);
    return v;
}

/* --- settings --- */

#define LOCKED_SET(dc, field, value) \
    do {                             \
        if (!(dc)) return;           \
        lock(&(dc)->lock);           \
        (dc)->field = (value);       \
        unlock(&(dc)->lock);         \
    } while (0)

#define LOCKED_GET(dc, type, field, fallback) \
    do {                                      \
        if (!(dc)) return (fallback);         \
        lock(&(dc)->lock);                    \
        type v__ = (dc)->field;               \
        unlock(&(dc)->lock);                  \
        return v__;                           \
    } while (0)

void yyc_diskcache_set_count_limit(yyc_diskcache *dc, int64_t limit) {
    LOCKED_SET(dc, count_limit, limit < 0 ? 0 : limit);
}
int64_t yyc_diskcache_count_limit(yyc_diskcache *dc) { LOCKED_GET(dc, int64_t, count_limit, 0); }

void yyc_diskcache_set_cost_limit(yyc_diskcache *dc, int64_t limit) {
    LOCKED_SET(dc, cost_limit, limit < 0 ? 0 : limit);
}
int64_t yyc_diskcache_cost_limit(yyc_diskcache *dc) { LOCKED_GET(dc, int64_t, cost_limit, 0); }

void yyc_diskcache_set_age_limit(yyc_diskcache *dc, double seconds) {
    LOCKED_SET(dc, age_limit, seconds < 0 ? 0 : seconds);
}
double yyc_diskcache_age_limit(yyc_diskcache *dc) { LOCKED_GET(dc, double, age_limit, 0); }

void yyc_diskcache_set_free_disk_space_limit(yyc_diskcache *dc, int64_t bytes) {
    LOCKED_SET(dc, free_space_limit, bytes < 0 ? 0 : bytes);
}
int64_t yyc_diskcache_free_disk_space_limit(yyc_diskcache *dc) {
    LOCKED_GET(dc, int64_t, free_space_limit, 0);
}

void yyc_diskcache_set_auto_trim_interval(yyc_diskcache *dc, double seconds) {
    if (!dc) return;
    lock(&dc->timer_lock);
    dc->interval = seconds;
    if (dc->timer) yyc__timer_set_interval(dc->timer, seconds);
    unlock(&dc->timer_lock);
}

double yyc_diskcache_auto_trim_interval(yyc_diskcache *dc) {
    if (!dc) return 0;
    lock(&dc->timer_lock);
    double v = dc->interval;
    unlock(&dc->timer_lock);
    return v;
}

void yyc_diskcache_set_error_logs_enabled(yyc_diskcache *dc, bool on) {
    if (!dc) return;
    lock(&dc->lock);
    dc->logs = on;
    if (dc->kv) yyc_kv_set_error_logs_enabled(dc->kv, on);
    unlock(&dc->lock);
}

bool yyc_diskcache_error_logs_enabled(yyc_diskcache *dc) { LOCKED_GET(dc, bool, logs, false); }

void yyc_diskcache_set_error_hook(yyc_diskcache *dc, yyc_error_hook hook, void *ctx) {
    if (!dc) return;
    lock(&dc->lock);
    dc->hook = hook;
    dc->hook_ctx = ctx;
    unlock_and_deliver(dc); /* events kept while no hook was set */
}

void yyc_diskcache_set_name(yyc_diskcache *dc, const char *name) {
    if (!dc) return;
    char *copy = name ? strdup(name) : NULL;
    if (name && !copy) return; /* out of memory: the old name stays */
    lock(&dc->lock);
    char *old = dc->name;
    dc->name = copy;
    unlock(&dc->lock);
    free(old);
}

char *yyc_diskcache_copy_name(yyc_diskcache *dc) {
    if (!dc) return NULL;
    lock(&dc->lock);
    char *copy = dc->name ? strdup(dc->name) : NULL;
    unlock(&dc->lock);
    return copy;
}

/* --- test hooks --- */

#ifdef YYC_TESTING
/* Sets a function called with no lock held, with the core's canonical path, by every open that
 * creates a core (closing false: after registering it OPENING, before opening the storage) and
 * by every close that closes one (closing true: CLOSING, before closing the storage): a test
 * may block it there. NULL removes it. */
void yyc__diskcache_set_test_hook(void (*fn)(void *ctx, const char *path, bool closing),
                                  void *ctx) {
    lock(&registry.lock);
    registry.test_hook = fn;
    registry.test_hook_ctx = ctx;
    unlock(&registry.lock);
}

/* Sets the busy timeout of the cache's storage (SQLite and the folder lock), in milliseconds. */
void yyc__diskcache_set_busy_timeout(yyc_diskcache *dc, int ms);
void yyc__diskcache_set_busy_timeout(yyc_diskcache *dc, int ms) {
    lock(&dc->lock);
    if (dc->kv) yyc__kv_set_busy_timeout(dc->kv, ms);
    unlock(&dc->lock);
}

/* How many opens wait for the core registered for canonical_path; -1 when there is none. */
long yyc__diskcache_registry_waiters(const char *canonical_path) {
    lock(&registry.lock);
    yyc_diskcache *dc = find_locked(canonical_path);
    long n = dc ? dc->waiters : -1;
    unlock(&registry.lock);
    return n;
}

/* How many cores the registry lists (OPENING, READY or CLOSING). */
/* Sets a function run between two batches of every trim of dc, with no lock held (NULL: none). */
void yyc__diskcache_set_trim_batch_hook(yyc_diskcache *dc, void (*fn)(void *ctx), void *ctx);
void yyc__diskcache_set_trim_batch_hook(yyc_diskcache *dc, void (*fn)(void *ctx), void *ctx) {
    lock(&dc->lock);
    dc->trim_batch_hook = fn;
    dc->trim_batch_ctx = ctx;
    unlock(&dc->lock);
}

int yyc__diskcache_registry_size(void) {
    lock(&registry.lock);
    int n = 0;
    for (yyc_diskcache *dc = registry.head; dc; dc = dc->next) n++;
    unlock(&registry.lock);
    return n;
}
#endif
