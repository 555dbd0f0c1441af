/*
 * disk_cache_loads.c - single-flight loads (get_or_load) and per-entry time to live of the disk
 * cache.
 *
 * Fields, lock order and invariants: disk_cache_internal.h.
 */
#include "disk/disk_cache_internal.h"
#include "disk/disk_cache_private.h"

/* --- private prototypes --- */

static void remove_if_expired_locked(yyc_diskcache *dc, const char *key);

/* --- loading with single flight ---
 *
 * A flight is one load of one key under way; callers that miss on a key with a flight wait on
 * the flight's condition (with flights_lock, never the core's lock) and get a copy of its
 * value. A caller on the thread that runs a flight's load is inside that load (the loader asks
 * for its own key): it fails at once with YYC_ERECURSIVE instead of waiting for itself. Lock
 * order: flights_lock is never held together with the core's lock, and never while user code
 * (the loader) runs. Invariant: a flight is in dc->flights until done; it is freed
 * by whoever leaves it done with no waiter. */

struct flight {
    char *key;
    pthread_t loader; /* the thread that runs the load (a call of it for key: ERECURSIVE) */
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
    yyc__dc_lock(&dc->lock);
    if (ok) dc->stats.loads++;
    else dc->stats.load_failures++;
    dc->stats.total_load_time_ns += ns;
    yyc__dc_unlock(&dc->lock);
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

int yyc__diskcache_get_or_load(yyc_diskcache *dc, const char *key, yyc_diskcache_load_fn load,
                               void *ctx, void **out_value, size_t *out_len, bool *missed,
                               bool *stored) {
    if (missed) *missed = false;
    if (stored) *stored = false;
    if (YYC__MISUSE(dc == NULL || load == NULL || out_value == NULL || out_len == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out_value = NULL;
    *out_len = 0;
    if (yyc__dc_key_is_empty(key)) return yyc__error(YYC_EINVAL, 0, 0, "empty key");
    int rc = yyc_diskcache_get(dc, key, out_value, out_len); /* a hit or a miss */
    if (rc != YYC_NOTFOUND) return rc;
    if (missed) *missed = true;

    yyc__dc_lock(&dc->flights_lock);
    struct flight *f = dc->flights;
    while (f && strcmp(f->key, key) != 0) f = f->next;
    if (f && pthread_equal(f->loader, pthread_self())) { /* the load of key asks for key */
        yyc__dc_unlock(&dc->flights_lock);
        return yyc__error(YYC_ERECURSIVE, 0, 0, "a loader asked for the key it is loading");
    }
    if (f) { /* another caller loads it: wait for its result */
        f->waiters++;
        rc = wait_flight_locked(dc, f, out_value, out_len);
        yyc__dc_unlock(&dc->flights_lock);
        if (rc != YYC_OK) yyc__error(rc, 0, 0, "the load this call waited for failed");
        return rc;
    }
    f = calloc(1, sizeof *f);
    char *key_copy = f ? strdup(key) : NULL;
    if (!key_copy) {
        yyc__dc_unlock(&dc->flights_lock);
        free(f);
        return yyc__error(YYC_ENOMEM, 0, ENOMEM, "allocate a load");
    }
    f->key = key_copy;
    f->loader = pthread_self();
    pthread_cond_init(&f->finished, NULL);
    f->next = dc->flights;
    dc->flights = f;
    yyc__dc_unlock(&dc->flights_lock);

    /* A load that finished between our miss and our flight stored its value: use it (part of
     * the miss counted above, not a second read). */
    rc = yyc__dc_get(dc, key, out_value, out_len, false);
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
        /* Stored unless a write of the key came in since the miss: that one is newer. */
        if (rc == YYC_OK) rc = yyc_diskcache_set_if_absent(dc, key, value, len, NULL, stored);
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

    yyc__dc_lock(&dc->flights_lock);
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
    yyc__dc_unlock(&dc->flights_lock);
    if (gone) free_flight(f);
    if (rc != YYC_OK && loaded)
        yyc__error(failure.code, failure.sqlite_code, failure.sys_errno, "%s", failure.message);
    return rc;
}

int yyc_diskcache_get_or_load(yyc_diskcache *dc, const char *key, yyc_diskcache_load_fn load,
                              void *ctx, void **out_value, size_t *out_len) {
    return yyc__diskcache_get_or_load(dc, key, load, ctx, out_value, out_len, NULL, NULL);
}

#ifdef YYC_TESTING
/* Testing: how many callers wait for the load of key under way (-1: none under way). */
long yyc__diskcache_flight_waiters(yyc_diskcache *dc, const char *key);
long yyc__diskcache_flight_waiters(yyc_diskcache *dc, const char *key) {
    yyc__dc_lock(&dc->flights_lock);
    long n = -1;
    for (struct flight *f = dc->flights; f; f = f->next)
        if (!strcmp(f->key, key)) n = f->waiters;
    yyc__dc_unlock(&dc->flights_lock);
    return n;
}
#endif

/* --- time to live (kv_expiry.c) --- */

/* Removes key's row if it has expired (the read that finds an entry expired removes it). Its errors
 * are reported through the hook only: the read still answers that there is no value. Caller holds
 * the lock; the core is open. */
static void remove_if_expired_locked(yyc_diskcache *dc, const char *key) {
    yyc__assert_held(&dc->lock);
    if (yyc__dc_key_is_empty(key)) return;
    yyc_error saved;
    yyc_last_error(&saved);
    bool removed = false;
    yyc__dc_watch_locked(dc);
    yyc__kv_remove_if_expired(dc->kv, key, &removed);
    yyc__dc_unwatch_locked(dc, YYC_REMOVED_EXPIRED);
    yyc__error_restore(&saved);
}

/* After a read answered a miss: removes key's row if the read found it expired (a missing row
 * costs nothing more). Caller holds the lock; the core is open. */
void yyc__dc_remove_if_read_found_expired_locked(yyc_diskcache *dc, const char *key) {
    if (yyc__kv_take_read_found_expired(dc->kv)) remove_if_expired_locked(dc, key);
}

/* Removes every expired entry (the first step of every trim and auto-trim). Caller holds the
 * lock; the core is open. */
int yyc__dc_remove_expired_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
    yyc__dc_watch_locked(dc);
    int rc = yyc__kv_remove_expired(dc->kv, NULL);
    yyc__dc_unwatch_locked(dc, YYC_REMOVED_EXPIRED);
    return rc;
}

int yyc_diskcache_trim_expired(yyc_diskcache *dc) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    yyc__dc_deferred_commit_locked(dc); /* (a failed commit does not stop the trim) */
    rc = yyc__dc_remove_expired_locked(dc);
    yyc__dc_unlock_and_deliver(dc);
    return rc;
}

int yyc__diskcache_expiry_ms(yyc_diskcache *dc, const char *key, int64_t *expiry_ms) {
    *expiry_ms = 0;
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    const yyc__deferred_entry *queued =
        yyc__dc_key_is_empty(key) ? NULL : yyc__deferred_find(&dc->queue, key);
    int64_t now = yyc__kv_now_ms();
    if (queued) { /* the queued write is the answer (nothing is committed for it) */
        bool gone = queued->remove || yyc__kv_expired(queued->expiry_ms, now);
        if (!gone) *expiry_ms = queued->expiry_ms;
        yyc__dc_unlock_and_deliver(dc);
        return gone ? YYC_NOTFOUND : YYC_OK;
    }
    int64_t expiry = 0;
    rc = yyc__dc_key_is_empty(key) ? YYC_NOTFOUND : yyc__kv_expiry_of(dc->kv, key, &expiry);
    if (rc == YYC_OK && yyc__kv_expired(expiry, now)) {
        remove_if_expired_locked(dc, key);
        rc = YYC_NOTFOUND;
    }
    if (rc == YYC_OK) *expiry_ms = expiry;
    yyc__dc_unlock_and_deliver(dc);
    return rc;
}

int yyc_diskcache_time_to_live(yyc_diskcache *dc, const char *key, double *out_seconds) {
    if (YYC__MISUSE(dc == NULL || out_seconds == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out_seconds = 0;
    int64_t expiry = 0;
    int rc = yyc__diskcache_expiry_ms(dc, key, &expiry);
    if (rc == YYC_OK)
        *out_seconds = expiry == 0 ? INFINITY : (double)(expiry - yyc__kv_now_ms()) / 1000.0;
    if (rc == YYC_OK && *out_seconds < 0) *out_seconds = 0; /* (expired since the look) */
    return rc;
}

void yyc_diskcache_set_default_time_to_live(yyc_diskcache *dc, double seconds) {
    if (!dc) return;
    yyc__dc_lock(&dc->lock);
    dc->default_ttl = isnan(seconds) ? INFINITY : seconds < 0 ? 0 : seconds;
    yyc__dc_unlock(&dc->lock);
}

double yyc_diskcache_default_time_to_live(yyc_diskcache *dc) {
    if (!dc) return INFINITY;
    yyc__dc_lock(&dc->lock);
    double v = dc->default_ttl;
    yyc__dc_unlock(&dc->lock);
    return v;
}
