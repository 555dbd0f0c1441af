/*
 * disk_cache_trims.c - the disk cache's trims (count, cost, age, free space; in batches that hand
 * the lock over), its auto-trim, and removal events and statistics.
 *
 * Fields, lock order and invariants: disk_cache_internal.h.
 */
#include "disk/disk_cache_internal.h"

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
    yyc__dc_unlock_and_deliver(dc);
#ifdef YYC_TESTING
    yyc__dc_lock(&dc->lock);
    void (*hook)(void *) = dc->trim_batch_hook;
    void *hook_ctx = dc->trim_batch_ctx;
    yyc__dc_unlock(&dc->lock);
    if (hook) hook(hook_ctx);
#endif
    double deadline = yyc__monotonic_now() + 0.002;
    while (waited_for && atomic_load_explicit(&dc->lock_turns, memory_order_relaxed) == turns &&
           yyc__monotonic_now() < deadline) {
        struct timespec ts = {0, 20000}; /* 20 us */
        nanosleep(&ts, NULL);
    }
    yyc__dc_lock(&dc->lock);
}

/* After a trim removed rows: the WAL is truncated on the checkpoint queue (a truncating
 * checkpoint's fsync would otherwise run under the core's lock), unless the file system is short
 * of space (yyc__kv_space_is_short): then here and now, so that the space
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
    /* The trim orders entries by their last access as of its start: the access times noted
     * before it are written first, a chunk per transaction with the lock handed over between
     * two, so that no caller waits behind all of them at once. The reads made while it runs are
     * written after it (by the worker, as always): writing them before every batch let a steady
     * stream of reads starve the trim (1,000 evictions at 100,000 entries took 40 s instead of
     * 0.1 s beside one thread reading in a loop). */
    size_t noted = yyc__kv_access_times_pending(dc->kv);
    for (;;) {
        bool more = false;
        int64_t n = 0;
        for (size_t written = 0; noted > 0;) {
            yyc__kv_write_access_times(dc->kv, ACCESS_WRITE_CHUNK);
            written += ACCESS_WRITE_CHUNK;
            if (written >= noted || yyc__kv_access_times_pending(dc->kv) == 0) {
                noted = 0;
                break;
            }
            yyc__dc_unwatch_locked(dc, cause);
            hand_over_locked(dc);
            if (dc->closed)
                return yyc__dc_fail_locked(dc, YYC_ECLOSED, 0, "disk cache closed during a trim");
            yyc__dc_watch_locked(dc);
        }
        int rc = yyc__kv_trim_batch(dc->kv, kind, value, &more, &n);
        removed += n;
        if (rc != YYC_OK || !more) {
            if (removed > 0) truncate_wal_after_trim_locked(dc);
            return rc;
        }
        yyc__dc_unwatch_locked(dc, cause);
        hand_over_locked(dc);
        if (dc->closed)
            return yyc__dc_fail_locked(dc, YYC_ECLOSED, 0, "disk cache closed during a trim");
        yyc__dc_watch_locked(dc);
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
    if (statvfs(dc->path, &sv) != 0) return yyc__dc_fail_locked(dc, YYC_EIO, errno, "statvfs");
    /* Measured on the cache's own file system (YYDiskCache measured the home folder's). */
    uint64_t avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    int64_t free_bytes = avail > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)avail;
    if (free_bytes >= target) return YYC_OK;
    int64_t need = target - free_bytes;
    int64_t keep = total > need ? total - need : 0;
    return trim_cost_locked(dc, keep); /* (the goal fixed now, as YYDiskCache did) */
}

/* The public trims: what every one does around its own trim (the queue committed first, expired
 * entries removed, the removals watched with the trim's cause), in one place. */
typedef enum public_trim { BY_COUNT, BY_COST, BY_AGE, BY_FREE_SPACE } public_trim;

static int run_public_trim(yyc_diskcache *dc, public_trim kind, int64_t limit, double seconds) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    yyc__dc_deferred_commit_locked(dc); /* (a failed commit does not stop the trim) */
    rc = yyc__dc_remove_expired_locked(dc);
    yyc__dc_watch_locked(dc);
    if (rc == YYC_OK) {
        switch (kind) {
        case BY_COUNT: rc = trim_count_locked(dc, limit); break;
        case BY_COST: rc = trim_cost_locked(dc, limit); break;
        case BY_AGE: rc = trim_age_locked(dc, seconds); break;
        case BY_FREE_SPACE: rc = trim_free_space_locked(dc, limit); break;
        }
    }
    yyc__dc_unwatch_locked(dc, kind == BY_AGE ? YYC_REMOVED_EXPIRED : YYC_REMOVED_EVICTED);
    yyc__dc_unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_trim_to_count(yyc_diskcache *dc, int64_t count) {
    return run_public_trim(dc, BY_COUNT, count, 0);
}

int yyc_diskcache_trim_to_cost(yyc_diskcache *dc, int64_t cost) {
    return run_public_trim(dc, BY_COST, cost, 0);
}

int yyc_diskcache_trim_to_age(yyc_diskcache *dc, double seconds) {
    return run_public_trim(dc, BY_AGE, 0, seconds);
}

int yyc_diskcache_trim_to_free_space(yyc_diskcache *dc, int64_t bytes) {
    return run_public_trim(dc, BY_FREE_SPACE, bytes, 0);
}

/* The auto-trim timer (worker thread): cost, count, age, free space, as YYDiskCache does. */
static void auto_trim(yyc_diskcache *dc) {
    yyc__dc_lock(&dc->lock);
    if (dc->closed) {
        yyc__dc_unlock(&dc->lock);
        return;
    }
    yyc__dc_deferred_commit_locked(dc);
    yyc__dc_remove_expired_locked(dc);
    yyc__dc_watch_locked(dc);
    if (dc->kv) trim_cost_locked(dc, dc->cost_limit);
    if (dc->kv) trim_count_locked(dc, dc->count_limit);
    yyc__dc_unwatch_locked(dc, YYC_REMOVED_EVICTED);
    yyc__dc_watch_locked(dc);
    if (dc->kv) trim_age_locked(dc, dc->age_limit);
    yyc__dc_unwatch_locked(dc, YYC_REMOVED_EXPIRED);
    yyc__dc_watch_locked(dc);
    if (dc->kv) trim_free_space_locked(dc, dc->free_space_limit);
    yyc__dc_unwatch_locked(dc, YYC_REMOVED_EVICTED);
    yyc__dc_unlock_and_deliver(dc);
}

void yyc__dc_auto_trim(void *arg) { yyc__dc_run(arg, auto_trim); }

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
void yyc__dc_watch_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
    if (dc->kv) yyc__kv_watch_removals(dc->kv);
}

void yyc__dc_unwatch_locked(yyc_diskcache *dc, yyc_removal_cause cause) {
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
void yyc__dc_note_saved_locked(yyc_diskcache *dc, const yyc__kv_write *w) {
    yyc__assert_held(&dc->lock);
    assert(!w->remove && w->status == YYC_OK);
    dc->stats.insertions++;
    if (w->replaced) yyc__dc_note_replaced_locked(dc, w->key);
}

/* A committed save of key replaced its row: one YYC_REMOVED_REPLACED. */
void yyc__dc_note_replaced_locked(yyc_diskcache *dc, const char *key) {
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
    yyc__dc_lock(&dc->lock);
    dc->removal_fn = fn;
    dc->removal_ctx = ctx;
    yyc__dc_unlock(&dc->lock); /* (nothing is queued between calls: each delivers its own) */
}

void *yyc_diskcache_removal_listener_ctx(yyc_diskcache *dc) {
    if (!dc) return NULL;
    yyc__dc_lock(&dc->lock);
    void *ctx = dc->removal_fn ? dc->removal_ctx : NULL;
    yyc__dc_unlock(&dc->lock);
    return ctx;
}

int yyc_diskcache_statistics(yyc_diskcache *dc, yyc_cache_statistics *out) {
    if (YYC__MISUSE(dc == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    yyc__dc_lock(&dc->lock);
    *out = dc->stats;
    yyc__dc_unlock(&dc->lock);
    return YYC_OK;
}

void yyc_diskcache_reset_statistics(yyc_diskcache *dc) {
    if (!dc) return;
    yyc__dc_lock(&dc->lock);
    memset(&dc->stats, 0, sizeof dc->stats);
    yyc__dc_unlock(&dc->lock);
}
