/*
 * disk_cache.c - the disk cache's public calls: locking and event delivery, reads, removal, totals
 * and settings.
 *
 * Fields, lock order and invariants: disk_cache_internal.h.
 */
#include "disk/disk_cache_internal.h"

/* --- locking and reporting --- */

void yyc__dc_lock_init(pthread_mutex_t *m) {
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

void yyc__dc_lock(pthread_mutex_t *m) {
    int rc = pthread_mutex_lock(m);
    assert(rc == 0);
    (void)rc;
    yyc__lock_note_acquired(m);
}

/* Takes m only if no other thread holds it (the deadline timers: worker.c). */
bool yyc__dc_trylock(pthread_mutex_t *m) {
    if (pthread_mutex_trylock(m) != 0) return false;
    yyc__lock_note_acquired(m);
    return true;
}

void yyc__dc_unlock(pthread_mutex_t *m) {
    yyc__lock_note_released(m);
    int rc = pthread_mutex_unlock(m);
    assert(rc == 0);
    (void)rc;
}

/* Queues an event (caller holds the lock, or owns the core exclusively during open). When
 * the queue is full the oldest event is dropped. */
void yyc__dc_push_event(yyc_diskcache *dc, const yyc_error *e) {
    if (dc->npending == PENDING_MAX) {
        memmove(dc->pending, dc->pending + 1, (PENDING_MAX - 1) * sizeof *dc->pending);
        dc->npending--;
    }
    dc->pending[dc->npending++] = *e;
}

/* Records a core-level failure (thread's last error + queued for the hook). Returns code. */
int yyc__dc_fail_locked(yyc_diskcache *dc, int code, int sys_errno, const char *what) {
    yyc__assert_held(&dc->lock);
    yyc_error e = {.code = code, .sys_errno = sys_errno};
    if (sys_errno) snprintf(e.message, sizeof e.message, "%s: %s", what, strerror(sys_errno));
    else snprintf(e.message, sizeof e.message, "%s", what);
    yyc__error(code, 0, sys_errno, "%s", e.message);
    if (dc->logs)
        fprintf(stderr, "yycache: disk cache: %s (%s)\n", e.message, yyc_status_name(code));
    yyc__dc_push_event(dc, &e);
    return code;
}

/* Caller holds the lock. Takes the queued events for the hook. Without a hook only the
 * corruption events stay queued (for a hook set later); the others are dropped. */
void yyc__dc_take_events_locked(yyc_diskcache *dc, event_batch *b) {
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
void yyc__dc_deliver(const event_batch *b) {
    if (b->n == 0 && b->nremoved == 0) return;
    yyc__assert_no_lock_held(); /* the one path to user code: never under a lock */
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

/* Releases the core's lock, runs the checkpoint a commit left due (kv_checkpoints.c), then hands
 * the queued events to the hook. */
void yyc__dc_unlock_and_deliver(yyc_diskcache *dc) {
    event_batch b;
    yyc__dc_take_events_locked(dc, &b);
    const void *checkpoint = dc->kv ? yyc__kv_take_due_checkpoint(dc->kv) : NULL;
    yyc__dc_unlock(&dc->lock);
    yyc__kv_run_due_checkpoint(checkpoint); /* (a commit's checkpoint: fsyncs, no lock held) */
    yyc__dc_deliver(&b);
}

/* Takes the lock for a call, counted as waiting meanwhile (hand_over_locked). */
void yyc__dc_lock_as_caller(yyc_diskcache *dc) {
    atomic_fetch_add_explicit(&dc->callers_waiting, 1, memory_order_relaxed);
    yyc__dc_lock(&dc->lock);
    atomic_fetch_sub_explicit(&dc->callers_waiting, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&dc->lock_turns, 1, memory_order_relaxed);
}

/* Takes the lock; if the core is closed, records YYC_ECLOSED, unlocks and returns it. */
int yyc__dc_lock_open(yyc_diskcache *dc) {
    yyc__dc_lock_as_caller(dc);
    if (dc->closed) {
        yyc__dc_fail_locked(dc, YYC_ECLOSED, 0, "disk cache is closed");
        yyc__dc_unlock_and_deliver(dc);
        return YYC_ECLOSED;
    }
    return YYC_OK;
}

bool yyc__dc_key_is_empty(const char *key) { return !key || !*key; }

/* --- reads --- */

/* The read timer (deadline queue): ends the held read transaction, so that an idle cache never
 * keeps another connection's checkpoint waiting, and pauses itself. When the core's lock is
 * held it comes back in YYC__DEADLINE_RETRY (whatever holds it ends the read before it waits
 * for anything: yyc__kv_folder_lock). */
static void end_read(yyc_diskcache *dc) {
    if (!yyc__dc_trylock(&dc->lock)) {
        yyc__timer_set_interval(yyc__timer_current(), YYC__DEADLINE_RETRY);
        return;
    }
    if (!dc->closed && dc->kv) {
        yyc__kv_end_read(dc->kv);
        dc->read_end_armed = false;
        yyc__timer_set_interval(dc->read_timer, 0);
    }
    yyc__dc_unlock(&dc->lock);
}

void yyc__dc_end_read_fire(void *arg) { yyc__dc_run(arg, end_read); }

/* Reads note their access times instead of writing them (kv_access_times.c); this writes
 * them from the disk worker, at most ACCESS_WRITES_PER_FIRE per fire (so that heavy reads of
 * many keys cost the worker a bounded share of the lock), ACCESS_WRITE_CHUNK per transaction,
 * releasing the lock between two so that callers wait behind one chunk at most. Every trim
 * writes them all first, chunk by chunk in the same way (trim_in_batches_locked), and the close
 * writes the rest. */

static void write_access_times(yyc_diskcache *dc) {
    for (size_t written = 0; written < ACCESS_WRITES_PER_FIRE; written += ACCESS_WRITE_CHUNK) {
        /* Background work gives way: while a call waits for the lock (behind a trim's batches,
         * say), the times wait for the next fire, the next trim or the close. Writing a chunk
         * of them there made a get wait 40-50 ms behind the trim and this writer in turn (a
         * 100,000-entry cache on ext4); the lock is not fair. */
        if (atomic_load_explicit(&dc->callers_waiting, memory_order_relaxed) > 0) return;
        yyc__dc_lock(&dc->lock);
        bool more = !dc->closed && dc->kv && yyc__kv_access_times_pending(dc->kv) > 0;
        if (more) yyc__kv_write_access_times(dc->kv, ACCESS_WRITE_CHUNK);
        more = more && dc->kv && yyc__kv_access_times_pending(dc->kv) > 0;
        yyc__dc_unlock_and_deliver(dc);
        if (!more) return;
    }
}

void yyc__dc_write_access_times_fire(void *arg) { yyc__dc_run(arg, write_access_times); }

#ifdef YYC_TESTING
/* Testing: one fire of the access-time timer now, on the caller's thread. */
void yyc__diskcache_testing_write_access_times(yyc_diskcache *dc);
void yyc__diskcache_testing_write_access_times(yyc_diskcache *dc) {
    yyc__dc_write_access_times_fire(dc);
}
/* Testing: counts delta more (or fewer) calls as waiting for the lock. */
void yyc__diskcache_testing_add_waiting_callers(yyc_diskcache *dc, int delta);
void yyc__diskcache_testing_add_waiting_callers(yyc_diskcache *dc, int delta) {
    atomic_fetch_add_explicit(&dc->callers_waiting, delta, memory_order_relaxed);
}
/* Testing: stops the access-time timer (the noted times wait for a trim or the close). */
void yyc__diskcache_testing_pause_access_times(yyc_diskcache *dc);
void yyc__diskcache_testing_pause_access_times(yyc_diskcache *dc) {
    yyc__dc_lock(&dc->lock);
    if (dc->access_timer) yyc__timer_set_interval(dc->access_timer, 0);
    yyc__dc_unlock(&dc->lock);
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
    if (yyc__dc_lock_open(dc) != YYC_OK) return false;
    int rc;
    if (!yyc__dc_queued_read_locked(dc, key, false, NULL, NULL, &rc)) {
        rc = yyc__dc_key_is_empty(key) ? YYC_NOTFOUND : yyc_kv_exists(dc->kv, key);
        if (rc == YYC_NOTFOUND) yyc__dc_remove_if_read_found_expired_locked(dc, key);
        arm_read_end_locked(dc);
    }
    yyc__dc_unlock_and_deliver(dc);
    return rc == YYC_OK;
}

/* yyc_diskcache_get; counted as a hit or a miss only with `count` (a get_or_load's second look
 * after its miss is part of the one miss it counted). */
int yyc__dc_get(yyc_diskcache *dc, const char *key, void **out_value, size_t *out_len, bool count) {
    if (YYC__MISUSE(dc == NULL || out_value == NULL || out_len == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out_value = NULL;
    *out_len = 0;
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    if (!yyc__dc_queued_read_locked(dc, key, false, out_value, out_len, &rc)) {
        rc = yyc__dc_key_is_empty(key) ? YYC_NOTFOUND
                                       : yyc_kv_get_value(dc->kv, key, out_value, out_len);
        if (rc == YYC_NOTFOUND) yyc__dc_remove_if_read_found_expired_locked(dc, key);
        arm_read_end_locked(dc);
    }
    if (count && rc == YYC_OK) dc->stats.hits++;
    else if (count && rc == YYC_NOTFOUND) dc->stats.misses++;
    yyc__dc_unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_get(yyc_diskcache *dc, const char *key, void **out_value, size_t *out_len) {
    return yyc__dc_get(dc, key, out_value, out_len, true);
}

/* The remaining time to live of key's entry that was just read (the lock held), as
 * yyc_diskcache_time_to_live gives it; false if the row is gone or cannot be read. */
static bool time_to_live_of_hit_locked(yyc_diskcache *dc, const char *key, double *out_seconds) {
    yyc__assert_held(&dc->lock);
    int64_t expiry = 0;
    const yyc__deferred_entry *queued = yyc__deferred_find(&dc->queue, key);
    if (queued) expiry = queued->expiry_ms;
    else if (yyc__kv_expiry_of(dc->kv, key, &expiry) != YYC_OK) return false;
    double seconds = expiry == 0 ? INFINITY : (double)(expiry - yyc__kv_now_ms()) / 1000.0;
    *out_seconds = seconds < 0 ? 0 : seconds; /* (expired since the read) */
    return true;
}

bool yyc_diskcache_try_get(yyc_diskcache *dc, const char *key, void **out_value, size_t *out_len,
                           double *out_ttl_seconds) {
    if (YYC__MISUSE(dc == NULL || out_value == NULL || out_len == NULL)) return false;
    *out_value = NULL;
    *out_len = 0;
    if (out_ttl_seconds) *out_ttl_seconds = 0;
    if (yyc__dc_key_is_empty(key) || !yyc__dc_trylock(&dc->lock)) return false;
    atomic_fetch_add_explicit(&dc->lock_turns, 1, memory_order_relaxed); /* a caller's turn */
    int rc = YYC_NOTFOUND;
    /* A closed connection is reopened by the next call, which may wait: not here. */
    if (!dc->closed && dc->kv && yyc__kv_is_open(dc->kv)) {
        if (!yyc__dc_queued_read_locked(dc, key, false, out_value, out_len, &rc)) {
            rc = yyc_kv_get_value(dc->kv, key, out_value, out_len);
            arm_read_end_locked(dc);
        }
        if (rc == YYC_OK && out_ttl_seconds &&
            !time_to_live_of_hit_locked(dc, key, out_ttl_seconds))
            rc = YYC_NOTFOUND; /* (the caller asks again, the way that may wait) */
        if (rc == YYC_OK) dc->stats.hits++;
    }
    if (rc != YYC_OK) { /* (a queued removal answers NOTFOUND with nothing to free) */
        free(*out_value);
        *out_value = NULL;
        *out_len = 0;
    }
    yyc__dc_unlock_and_deliver(dc);
    return rc == YYC_OK;
}

int yyc_diskcache_get_extended_data(yyc_diskcache *dc, const char *key, void **out,
                                    size_t *out_len) {
    if (YYC__MISUSE(dc == NULL || out == NULL || out_len == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = NULL;
    *out_len = 0;
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    if (yyc__dc_queued_read_locked(dc, key, true, out, out_len, &rc)) {
        yyc__dc_unlock_and_deliver(dc);
        return rc;
    }
    yyc_kv_item *item = NULL;
    rc = yyc__dc_key_is_empty(key) ? YYC_NOTFOUND : yyc_kv_get_item_info(dc->kv, key, &item);
    if (rc == YYC_NOTFOUND) yyc__dc_remove_if_read_found_expired_locked(dc, key);
    if (rc == YYC_OK && item->extended_len) {
        void *copy = malloc(item->extended_len);
        if (!copy) {
            rc = yyc__dc_fail_locked(dc, YYC_ENOMEM, ENOMEM, "copy extended data");
        } else {
            memcpy(copy, item->extended_data, item->extended_len);
            *out = copy;
            *out_len = item->extended_len;
        }
    }
    yyc_kv_item_free(item);
    arm_read_end_locked(dc);
    yyc__dc_unlock_and_deliver(dc);
    return rc;
}

/* --- removal --- */

int yyc_diskcache_remove(yyc_diskcache *dc, const char *key) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    if (dc->mode == YYC_WRITE_DEFERRED && !yyc__dc_key_is_empty(key)) {
        yyc__kv_write w = {.key = key, .remove = true};
        rc = yyc__dc_deferred_put_locked(dc, &w);
        yyc__dc_unlock_and_deliver(dc);
        return rc;
    }
    yyc__dc_watch_locked(dc);
    rc = yyc__dc_key_is_empty(key) ? YYC_OK : yyc_kv_remove(dc->kv, key);
    yyc__dc_unwatch_locked(dc, YYC_REMOVED_EXPLICIT);
    yyc__dc_unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_remove_all(yyc_diskcache *dc) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    yyc__deferred_clear(&dc->queue); /* (everything queued goes too) */
    yyc__dc_watch_locked(dc);
    rc = yyc_kv_remove_all(dc->kv);
    yyc__dc_unwatch_locked(dc, YYC_REMOVED_EXPLICIT);
    yyc__dc_unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_remove_all_progress(yyc_diskcache *dc, yyc_progress_fn progress, void *ctx) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    int64_t total = 0;
    yyc__deferred_clear(&dc->queue); /* (everything queued goes too) */
    rc = yyc_kv_count(dc->kv, &total);
    yyc__dc_unlock_and_deliver(dc);
    if (rc != YYC_OK) return rc;
    /* The total is a snapshot: values written meanwhile by other threads may stay. */
    int64_t removed = 0, reported = -1;
    while (removed < total) {
        rc = yyc__dc_lock_open(dc);
        if (rc != YYC_OK) return rc;
        int64_t n = 0;
        yyc__dc_watch_locked(dc);
        rc = yyc__kv_remove_lru_batch(dc->kv, YYC__KV_REMOVE_ALL_BATCH, &n);
        yyc__dc_unwatch_locked(dc, YYC_REMOVED_EXPLICIT);
        yyc__dc_unlock_and_deliver(dc);
        if (rc != YYC_OK) return rc;
        if (n == 0) break;
        removed += n;
        if (removed > total) removed = total;
        if (progress) progress(ctx, removed, total); /* lock released between batches */
        reported = removed;
    }
    if (total > 0 && reported != total && progress) progress(ctx, total, total);
    if (total > 0 && yyc__dc_lock_open(dc) == YYC_OK) {
        yyc__kv_checkpoint(dc->kv);
        yyc__dc_unlock_and_deliver(dc);
    }
    return YYC_OK;
}

/* --- totals --- */

int yyc_diskcache_total_count(yyc_diskcache *dc, int64_t *out) {
    if (YYC__MISUSE(dc == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = 0;
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    rc = yyc__dc_deferred_commit_locked(dc);
    if (rc == YYC_OK) rc = yyc_kv_count(dc->kv, out);
    yyc__dc_unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_total_cost(yyc_diskcache *dc, int64_t *out) {
    if (YYC__MISUSE(dc == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = 0;
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    rc = yyc__dc_deferred_commit_locked(dc);
    if (rc == YYC_OK) rc = yyc_kv_size(dc->kv, out);
    yyc__dc_unlock_and_deliver(dc);
    return rc;
}

/* --- settings --- */

#define LOCKED_SET(dc, field, value) \
    do {                             \
        if (!(dc)) return;           \
        yyc__dc_lock(&(dc)->lock);   \
        (dc)->field = (value);       \
        yyc__dc_unlock(&(dc)->lock); \
    } while (0)

#define LOCKED_GET(dc, type, field, fallback) \
    do {                                      \
        if (!(dc)) return (fallback);         \
        yyc__dc_lock(&(dc)->lock);            \
        type v__ = (dc)->field;               \
        yyc__dc_unlock(&(dc)->lock);          \
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
    yyc__dc_lock(&dc->timer_lock);
    dc->interval = seconds;
    if (dc->timer) yyc__timer_set_interval(dc->timer, seconds);
    yyc__dc_unlock(&dc->timer_lock);
}

double yyc_diskcache_auto_trim_interval(yyc_diskcache *dc) {
    if (!dc) return 0;
    yyc__dc_lock(&dc->timer_lock);
    double v = dc->interval;
    yyc__dc_unlock(&dc->timer_lock);
    return v;
}

void yyc_diskcache_set_error_logs_enabled(yyc_diskcache *dc, bool on) {
    if (!dc) return;
    yyc__dc_lock(&dc->lock);
    dc->logs = on;
    if (dc->kv) yyc_kv_set_error_logs_enabled(dc->kv, on);
    yyc__dc_unlock(&dc->lock);
}

bool yyc_diskcache_error_logs_enabled(yyc_diskcache *dc) { LOCKED_GET(dc, bool, logs, false); }

void yyc_diskcache_set_error_hook(yyc_diskcache *dc, yyc_error_hook hook, void *ctx) {
    if (!dc) return;
    yyc__dc_lock(&dc->lock);
    dc->hook = hook;
    dc->hook_ctx = ctx;
    yyc__dc_unlock_and_deliver(dc); /* events kept while no hook was set */
}

void yyc_diskcache_set_name(yyc_diskcache *dc, const char *name) {
    if (!dc) return;
    char *copy = name ? strdup(name) : NULL;
    if (name && !copy) return; /* out of memory: the old name stays */
    yyc__dc_lock(&dc->lock);
    char *old = dc->name;
    dc->name = copy;
    yyc__dc_unlock(&dc->lock);
    free(old);
}

char *yyc_diskcache_copy_name(yyc_diskcache *dc) {
    if (!dc) return NULL;
    yyc__dc_lock(&dc->lock);
    char *copy = dc->name ? strdup(dc->name) : NULL;
    yyc__dc_unlock(&dc->lock);
    return copy;
}
