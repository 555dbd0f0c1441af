/*
 * memory_cache_trims.c - the totals, the trims (count, cost, age) and the auto-trim.
 *
 * The struct, its invariants and the shared helpers: memory_cache_internal.h.
 */
#include "memory/memory_cache_internal.h"

/* A finished trim's removed chain list..tail, lock held: queued for the worker when releases
 * are asynchronous and the trim is not on the worker (then *list becomes NULL). Returns whether
 * the release job must be scheduled after unlocking (release_trimmed). */
static bool stash_trimmed_locked(yyc_memcache *c, yyc__lru_node **list, yyc__lru_node *tail,
                                 bool on_worker) {
    yyc__assert_held(&c->lock);
    if (!c->release_async || on_worker) return false;
    bool queue = yyc__mc_stash_list_locked(c, *list, tail);
    *list = NULL;
    return queue;
}

/* After unlocking: schedules the release job if asked, and releases what was not queued. */
static void release_trimmed(yyc_memcache *c, bool queue_release, yyc__lru_node *list) {
    if (queue_release) yyc__mc_schedule_release(c);
    yyc__mc_release_list(c, list);
}

typedef enum trim_kind { TRIM_COUNT, TRIM_COST, TRIM_AGE } trim_kind;
static void trim(yyc_memcache *c, trim_kind kind, size_t limit, double age, bool on_worker);
static void trim_age_scan(yyc_memcache *c, double age, double now, bool on_worker);

/* --- totals and limits --- */

size_t yyc_memcache_total_count(yyc_memcache *c) {
    if (!c) return 0;
    yyc__mc_lock(c);
    size_t n = yyc__lru_map_count(&c->map);
    yyc__mc_unlock(c);
    return n;
}

size_t yyc_memcache_total_cost(yyc_memcache *c) {
    if (!c) return 0;
    yyc__mc_lock(c);
    size_t n = yyc__lru_map_total_cost(&c->map);
    yyc__mc_unlock(c);
    return n;
}

void yyc_memcache_set_auto_trim_interval(yyc_memcache *c, double seconds) {
    if (!c) return;
    yyc__mc_lock(c);
    c->auto_trim_interval = seconds;
    /* Under our lock so the timer's interval always matches the stored one. Lock order:
     * cache, then worker (the worker never takes a cache lock while holding its own). */
    yyc__timer_set_interval(c->timer, seconds);
    yyc__mc_unlock(c);
}

double yyc_memcache_auto_trim_interval(yyc_memcache *c) {
    if (!c) return 5.0;
    yyc__mc_lock(c);
    double v = c->auto_trim_interval;
    yyc__mc_unlock(c);
    return v;
}

/* --- trims --- */

/* Whether the cache is over the limit (under lock). For age, now is fixed by the caller. */
static bool over_limit_locked(yyc_memcache *c, trim_kind kind, size_t limit, double age,
                              double now) {
    yyc__assert_held(&c->lock);
    switch (kind) {
    case TRIM_COUNT: return yyc__lru_map_count(&c->map) > limit;
    case TRIM_COST: return yyc__lru_map_total_cost(&c->map) > limit;
    case TRIM_AGE: /* LRU: the tail is the least recently used */
        return c->map.tail && now - c->map.tail->time > age; /* false for NaN */
    }
    return false;
}

/* Takes the lock for one eviction of a trim. A caller's thread uses YYMemoryCache's trylock
 * (the caller sleeps 10 ms when it fails); the worker thread, shared by every memory cache,
 * never sleeps: it waits for the holder (whose critical section never runs user code). */
static bool lock_for_trim(yyc_memcache *c, bool on_worker) {
    if (on_worker) {
        yyc__mc_lock(c);
        return true;
    }
    return yyc__mc_try_lock(c);
}

/* YYMemoryCache's trim (spec 3.4): a zero limit removes everything; otherwise evict the tail,
 * one node per lock acquisition (on a caller's thread sleeping 10 ms when the lock is
 * contended, see lock_for_trim). on_worker: called from the worker (auto-trim, deferred cost
 * trim), so evicted values are released right here; otherwise they follow the release policy.
 * The caller runs it inside a callback scope of c. */
static void trim(yyc_memcache *c, trim_kind kind, size_t limit, double age, bool on_worker) {
    double now = kind == TRIM_AGE ? yyc__mc_clock_now() : 0.0;
    bool zero = kind == TRIM_AGE ? age <= 0 : limit == 0;
    bool queue_release = false;
    yyc__lru_node *list = NULL, *tail = NULL;

    yyc__mc_purge_expired(c, on_worker); /* every trim, also one within its limit or to zero */
    yyc__mc_lock(c);
    bool async = c->release_async && !on_worker;
    if (zero) {
        void *table;
        yyc_removal_cause cause = kind == TRIM_AGE ? YYC_REMOVED_EXPIRED : YYC_REMOVED_EVICTED;
        queue_release = yyc__mc_detach_all_locked(c, async, cause, &list, &table);
        yyc__mc_unlock(c);
        free(table);
        release_trimmed(c, queue_release, list);
        return;
    }
    bool over = over_limit_locked(c, kind, limit, age, now);
    bool scan = kind == TRIM_AGE && c->map.policy != YYC__POLICY_LRU;
    yyc__mc_unlock(c);
    if (scan) {
        trim_age_scan(c, age, now, on_worker);
        return;
    }
    if (!over) return;

    const struct timespec pause = {0, 10 * 1000 * 1000};
    for (;;) {
        if (lock_for_trim(c, on_worker)) {
            bool finished = !over_limit_locked(c, kind, limit, age, now);
            if (!finished) {
                yyc__lru_node *n = yyc__lru_map_evict(&c->map, c->count_limit, c->cost_limit);
                if (n) {
                    if (c->expiry.live) yyc__expiry_forget(&c->expiry, n);
                    yyc__mc_set_cause_locked(
                        c, n, kind == TRIM_AGE ? YYC_REMOVED_EXPIRED : YYC_REMOVED_EVICTED);
                }
                if (tail) tail->next = n;
                else list = n;
                tail = n;
            } else {
                queue_release = stash_trimmed_locked(c, &list, tail, on_worker);
            }
            yyc__mc_unlock(c);
            if (finished) break;
        } else {
            nanosleep(&pause, NULL);
        }
    }
    release_trimmed(c, queue_release, list);
}

/* The age trim of SIEVE and S3-FIFO, whose tail is not the least recently used entry: a scan of
 * the whole list, AGE_SCAN_STEP entries per lock acquisition (locked like trim: see
 * lock_for_trim). The caller runs it inside a callback scope of c. */
#define AGE_SCAN_STEP 64
static void trim_age_scan(yyc_memcache *c, double age, double now, bool on_worker) {
    const struct timespec pause = {0, 10 * 1000 * 1000};
    yyc__lru_node *list = NULL, *tail = NULL;
    bool begin = true, queue_release = false;
    for (;;) {
        if (lock_for_trim(c, on_worker)) {
            yyc__lru_node *before = tail;
            bool finished =
                yyc__lru_map_expire_step(&c->map, begin, now, age, AGE_SCAN_STEP, &list, &tail);
            begin = false;
            for (yyc__lru_node *n = before ? before->next : list; n; n = n->next) {
                if (c->expiry.live) yyc__expiry_forget(&c->expiry, n);
                yyc__mc_set_cause_locked(c, n, YYC_REMOVED_EXPIRED);
            }
            if (finished) queue_release = stash_trimmed_locked(c, &list, tail, on_worker);
            yyc__mc_unlock(c);
            if (finished) break;
        } else {
            nanosleep(&pause, NULL);
        }
    }
    release_trimmed(c, queue_release, list);
}

/* A trim from a public call: on the caller's thread, in a callback scope. */
static void trim_in_scope(yyc_memcache *c, trim_kind kind, size_t limit, double age) {
    yyc__mc_scope scope;
    yyc__mc_scope_enter(&scope, c);
    trim(c, kind, limit, age, false);
    yyc__mc_scope_exit(&scope);
}

void yyc_memcache_trim_to_count(yyc_memcache *c, size_t count) {
    if (!c) return;
    trim_in_scope(c, TRIM_COUNT, count, 0.0);
}

void yyc_memcache_trim_to_cost(yyc_memcache *c, size_t cost) {
    if (!c) return;
    trim_in_scope(c, TRIM_COST, cost, 0.0);
}

void yyc_memcache_trim_to_age(yyc_memcache *c, double seconds) {
    if (!c) return;
    trim_in_scope(c, TRIM_AGE, 0, seconds);
}

/* The deferred cost trim queued by set (runs on the worker). */
void yyc__mc_cost_trim_job(void *arg) {
    yyc_memcache *c = arg;
    yyc__mc_scope scope;
    yyc__mc_scope_enter(&scope, c);
    yyc__mc_lock(c);
    c->cost_trim_pending = false;
    size_t limit = c->cost_limit;
    yyc__mc_unlock(c);
    trim(c, TRIM_COST, limit, 0.0, true);
    yyc__mc_scope_exit(&scope);
}

/* The auto-trim timer (runs on the worker): cost, count, then age, as YYMemoryCache does. */
void yyc__mc_auto_trim_fire(void *arg) {
    yyc_memcache *c = arg;
#ifdef YYC_TESTING
    atomic_fetch_add(&c->auto_trim_fires, 1);
#endif
    yyc__mc_scope scope;
    yyc__mc_scope_enter(&scope, c);
    yyc__mc_purge_expired(c, true);
    yyc__mc_lock(c);
    size_t cost = c->cost_limit, count = c->count_limit;
    double age = c->age_limit;
    yyc__mc_unlock(c);
    /* "No limit" values never trim: skip them without taking the lock again. */
    if (cost != SIZE_MAX) trim(c, TRIM_COST, cost, 0.0, true);
    if (count != SIZE_MAX) trim(c, TRIM_COUNT, count, 0.0, true);
    if (!(age >= DBL_MAX) && !isnan(age)) trim(c, TRIM_AGE, 0, age, true);
    yyc__mc_scope_exit(&scope);
}
