/*
 * disk_cache_registry.c - the per-path registry of disk cache cores: open, retain, release, close,
 * and fork handling.
 *
 * Fields, lock order and invariants: disk_cache_internal.h.
 */
#include "disk/disk_cache_internal.h"

/* --- fork --- */

/* Around fork(): no other thread may hold the registry lock at the fork, and the child forgets
 * the parent's cores (they, and their SQLite connections, stay the parent's; see yycache.h), so
 * an open in the child creates its own core even for a folder the parent has open. */
static void registry_fork_prepare(void) { yyc__dc_lock(&yyc__dc_registry.lock); }
static void registry_fork_parent(void) { yyc__dc_unlock(&yyc__dc_registry.lock); }
static void registry_fork_child(void) {
    yyc__dc_registry.head = NULL;
    pthread_cond_init(&yyc__dc_registry.changed,
                      NULL); /* a waiter of the parent's may have left it */
    yyc__dc_unlock(&yyc__dc_registry.lock);
}

static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;
static void install_fork_handlers(void) {
    pthread_atfork(registry_fork_prepare, registry_fork_parent, registry_fork_child);
}

/* The storage's hook: runs on the failing thread, under the core's lock. */
static void kv_hook(void *ctx, const yyc_error *e) { yyc__dc_push_event(ctx, e); }

yyc__dc_registry_t yyc__dc_registry = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                       .changed = PTHREAD_COND_INITIALIZER};

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

/* Caller holds yyc__dc_registry.lock. The core in the list for canonical path, or NULL. */
static yyc_diskcache *find_locked(const char *canon) {
    yyc__assert_held(&yyc__dc_registry.lock);
    for (yyc_diskcache *dc = yyc__dc_registry.head; dc; dc = dc->next)
        if (strcmp(dc->path, canon) == 0) return dc;
    return NULL;
}

/* Caller holds yyc__dc_registry.lock. Takes dc out of the list. */
static void unlink_locked(yyc_diskcache *dc) {
    yyc__assert_held(&yyc__dc_registry.lock);
    for (yyc_diskcache **p = &yyc__dc_registry.head; *p; p = &(*p)->next) {
        if (*p == dc) {
            *p = dc->next;
            break;
        }
    }
    dc->next = NULL;
}

/* Caller holds yyc__dc_registry.lock. Whether nothing can reach dc any more: the caller frees it
 * (after unlocking). True for one caller only: nothing changes dc once it holds. */
static bool unreachable_locked(const yyc_diskcache *dc) {
    yyc__assert_held(&yyc__dc_registry.lock);
    return (dc->state == CLOSED || dc->state == FAILED) && dc->refcount == 0 && dc->waiters == 0;
}

/* Opens the storage and the auto-trim timer of a new core (OPENING, owned by the caller; no
 * lock held). */
static int open_storage(yyc_diskcache *dc) {
    /* The core is not shared yet: the hook may queue events without the lock. */
    int rc = yyc__kv_open_ex(dc->path, dc->type, kv_hook, dc, &dc->kv);
    if (rc == YYC_OK && yyc__timer_new(YYC__QUEUE_DEADLINE, yyc__dc_end_read_fire, dc, 0,
                                       &dc->read_timer) == YYC_OK)
        yyc__kv_set_read_hold(dc->kv, true); /* (no timer: no read is held) */
    if (rc == YYC_OK && yyc__timer_new(YYC__QUEUE_DISK, yyc__dc_write_access_times_fire, dc,
                                       ACCESS_WRITE_INTERVAL, &dc->access_timer) == YYC_OK)
        yyc__kv_set_deferred_access_times(dc->kv, true); /* (no timer: reads write them) */
    if (rc == YYC_OK) yyc__kv_set_tail_checkpoint_outside(dc->kv, true); /* (unlock_and_deliver) */
    if (rc == YYC_OK) {
        rc = yyc__timer_new(YYC__QUEUE_DISK, yyc__dc_auto_trim, dc, dc->interval, &dc->timer);
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
    yyc__dc_lock(&yyc__dc_registry.lock);
    yyc_diskcache *dc;
    while ((dc = find_locked(canon)) != NULL) {
        if (dc->state == READY) {
            dc->refcount++;
            yyc__dc_unlock(&yyc__dc_registry.lock);
            free(canon);
            *out = dc;
            return YYC_OK;
        }
        if (yyc__worker_is_current()) {
            yyc__dc_unlock(&yyc__dc_registry.lock);
            free(canon);
            return yyc__error(YYC_EBUSY, 0, 0,
                              "cache folder is being opened or closed by another thread");
        }
        int seen = dc->state; /* OPENING or CLOSING */
        dc->waiters++;
        do {
            int rc = pthread_cond_wait(&yyc__dc_registry.changed, &yyc__dc_registry.lock);
            assert(rc == 0);
            (void)rc;
        } while (dc->state == seen);
        dc->waiters--;
        if (dc->state == READY) continue; /* opened: shared just above */
        bool gone = unreachable_locked(dc);
        if (dc->state == FAILED) { /* the open we waited for failed: so does ours */
            int rc = dc->open_rc;
            yyc_error e = dc->open_error;
            yyc__dc_unlock(&yyc__dc_registry.lock);
            if (gone) free_core(dc);
            free(canon);
            return yyc__error(rc, e.sqlite_code, e.sys_errno, "%s", e.message);
        }
        /* CLOSING or CLOSED (closed right after its open, or the close we waited for): look
         * again. */
        if (gone) {
            yyc__dc_unlock(&yyc__dc_registry.lock);
            free_core(dc);
            yyc__dc_lock(&yyc__dc_registry.lock);
        }
    }

    /* None: register a placeholder, open the storage without the registry lock, publish. */
    dc = calloc(1, sizeof *dc);
    if (!dc) {
        yyc__dc_unlock(&yyc__dc_registry.lock);
        free(canon);
        return yyc__error(YYC_ENOMEM, 0, ENOMEM, "allocate disk cache");
    }
    yyc__dc_lock_init(&dc->lock);
    yyc__dc_lock_init(&dc->timer_lock);
    yyc__dc_lock_init(&dc->flights_lock);
    yyc__dc_lock_init(&dc->commit_lock);
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
    dc->next = yyc__dc_registry.head;
    yyc__dc_registry.head = dc;
#ifdef YYC_TESTING
    void (*hook)(void *, const char *, bool) = yyc__dc_registry.test_hook;
    void *hook_ctx = yyc__dc_registry.test_hook_ctx;
#endif
    yyc__dc_unlock(&yyc__dc_registry.lock);

#ifdef YYC_TESTING
    if (hook) hook(hook_ctx, canon, false);
#endif
    int rc = open_storage(dc);

    bool gone = false;
    yyc__dc_lock(&yyc__dc_registry.lock);
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
    pthread_cond_broadcast(&yyc__dc_registry.changed);
    yyc__dc_unlock(&yyc__dc_registry.lock);
    if (rc != YYC_OK) {
        if (gone) free_core(dc);
        return rc;
    }
    *out = dc;
    return YYC_OK;
}

/* A timer's run (yyc__dc_run) keeps its core alive to its end. A release on another thread
 * needs nothing: the last one closes the core, which waits for the running timers (they then
 * see the core closed and stop). A release made on the run's own thread - by a listener or a
 * hook the run delivers to - cannot wait for the run it is part of: it is put off to the run's
 * end (deferred_releases), so the run never reads a freed core. The run takes no counted
 * reference of its own, so the last release of the application's keeps closing the core before
 * it returns, as the header says. */
static _Thread_local yyc_diskcache *running_core;
static _Thread_local long deferred_releases;

void yyc__dc_run(yyc_diskcache *dc, void (*body)(yyc_diskcache *dc)) {
    assert(running_core == NULL); /* timers do not nest: one runs at a time on a queue */
    running_core = dc;
    body(dc);
    running_core = NULL;
    for (long n = deferred_releases; n > 0; n--) yyc_diskcache_release(dc);
    deferred_releases = 0;
}

yyc_diskcache *yyc_diskcache_retain(yyc_diskcache *dc) {
    if (!dc) return NULL;
    yyc__dc_lock(&yyc__dc_registry.lock);
    dc->refcount++;
    yyc__dc_unlock(&yyc__dc_registry.lock);
    return dc;
}

/* Closes the core: marks it closed, stops the auto-trim, closes the storage (no lock held while
 * it does), then takes it out of the registry (CLOSED) and wakes the opens waiting for that.
 * The caller moved it from READY to CLOSING (or found it past READY) under the registry lock.
 * The first close does the work; a later one (or one racing it) returns at once. */
static void close_core(yyc_diskcache *dc) {
    event_batch b;
    yyc__dc_lock(&dc->lock);
    if (!dc->closed) yyc__dc_deferred_close_locked(dc);
    yyc__timer *flush_timer = dc->flush_timer;
    dc->flush_timer = NULL;
    yyc_kv *kv = dc->kv;
    bool was_closed = dc->closed;
    dc->closed = true;
    dc->kv = NULL;
    yyc__dc_take_events_locked(dc, &b);
    yyc__dc_unlock(&dc->lock);
    bool gone = false;
    if (!was_closed) {
#ifdef YYC_TESTING
        yyc__dc_lock(&yyc__dc_registry.lock);
        void (*hook)(void *, const char *, bool) = yyc__dc_registry.test_hook;
        void *hook_ctx = yyc__dc_registry.test_hook_ctx;
        yyc__dc_unlock(&yyc__dc_registry.lock);
        if (hook) hook(hook_ctx, dc->path, true);
#endif
        /* Outside the core's lock: a trim firing on the worker may be waiting for it, and
         * closing the storage waits for the storage's jobs on that same worker. */
        yyc__dc_lock(&dc->timer_lock);
        yyc__timer *t = dc->timer;
        dc->timer = NULL;
        yyc__dc_unlock(&dc->timer_lock);
        yyc__timer_free(t);
        yyc__timer_free(flush_timer);      /* (waits for a commit running on the worker) */
        yyc__timer_free(dc->read_timer);   /* (set at open, never changed; its fire sees closed) */
        yyc__timer_free(dc->access_timer); /* (likewise; the close writes what waits) */
        yyc_kv_close(kv);
        yyc__dc_lock(&yyc__dc_registry.lock);
        unlink_locked(dc);
        dc->state = CLOSED;
        gone = unreachable_locked(dc);
        pthread_cond_broadcast(&yyc__dc_registry.changed);
        yyc__dc_unlock(&yyc__dc_registry.lock);
    }
    /* After CLOSED: a hook may open this path again without waiting for this thread. */
    yyc__dc_deliver(&b);
    if (gone) free_core(dc);
}

void yyc_diskcache_close(yyc_diskcache *dc) {
    if (!dc) return;
    yyc__dc_lock(&yyc__dc_registry.lock);
    if (dc->state == READY) dc->state = CLOSING; /* new opens of the path wait for CLOSED */
    yyc__dc_unlock(&yyc__dc_registry.lock);
    close_core(dc);
}

void yyc_diskcache_release(yyc_diskcache *dc) {
    if (!dc) return;
    if (dc == running_core) { /* from inside the core's own timer run: at its end */
        deferred_releases++;
        return;
    }
    yyc__dc_lock(&yyc__dc_registry.lock);
    long left = --dc->refcount;
    assert(left >= 0);
    bool teardown = left == 0 && dc->state == READY;
    if (teardown) dc->state = CLOSING; /* in the same critical section: no open can share it */
    bool gone = !teardown && unreachable_locked(dc);
    yyc__dc_unlock(&yyc__dc_registry.lock);
    if (teardown) close_core(dc); /* frees it unless an open is still waiting on it */
    else if (gone) free_core(dc); /* closed earlier; this was the last reference */
}

const char *yyc_diskcache_path(yyc_diskcache *dc) { return dc ? dc->path : NULL; }

size_t yyc_diskcache_inline_threshold(yyc_diskcache *dc) { return dc ? dc->threshold : 0; }

/* --- test hooks --- */

#ifdef YYC_TESTING
/* Sets a function called with no lock held, with the core's canonical path, by every open that
 * creates a core (closing false: after registering it OPENING, before opening the storage) and
 * by every close that closes one (closing true: CLOSING, before closing the storage): a test
 * may block it there. NULL removes it. */
void yyc__diskcache_set_test_hook(void (*fn)(void *ctx, const char *path, bool closing),
                                  void *ctx) {
    yyc__dc_lock(&yyc__dc_registry.lock);
    yyc__dc_registry.test_hook = fn;
    yyc__dc_registry.test_hook_ctx = ctx;
    yyc__dc_unlock(&yyc__dc_registry.lock);
}

/* Sets the busy timeout of the cache's storage (SQLite and the folder lock), in milliseconds. */
void yyc__diskcache_set_busy_timeout(yyc_diskcache *dc, int ms);
void yyc__diskcache_set_busy_timeout(yyc_diskcache *dc, int ms) {
    yyc__dc_lock(&dc->lock);
    if (dc->kv) yyc__kv_set_busy_timeout(dc->kv, ms);
    yyc__dc_unlock(&dc->lock);
}

/* How many opens wait for the core registered for canonical_path; -1 when there is none. */
long yyc__diskcache_registry_waiters(const char *canonical_path) {
    yyc__dc_lock(&yyc__dc_registry.lock);
    yyc_diskcache *dc = find_locked(canonical_path);
    long n = dc ? dc->waiters : -1;
    yyc__dc_unlock(&yyc__dc_registry.lock);
    return n;
}

/* How many cores the registry lists (OPENING, READY or CLOSING). */
/* Sets a function run between two batches of every trim of dc, with no lock held (NULL: none). */
void yyc__diskcache_set_trim_batch_hook(yyc_diskcache *dc, void (*fn)(void *ctx), void *ctx);
void yyc__diskcache_set_trim_batch_hook(yyc_diskcache *dc, void (*fn)(void *ctx), void *ctx) {
    yyc__dc_lock(&dc->lock);
    dc->trim_batch_hook = fn;
    dc->trim_batch_ctx = ctx;
    yyc__dc_unlock(&dc->lock);
}

int yyc__diskcache_registry_size(void) {
    yyc__dc_lock(&yyc__dc_registry.lock);
    int n = 0;
    for (yyc_diskcache *dc = yyc__dc_registry.head; dc; dc = dc->next) n++;
    yyc__dc_unlock(&yyc__dc_registry.lock);
    return n;
}
#endif
