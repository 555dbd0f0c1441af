/*
 * memory_cache.c - the memory cache (YYMemoryCache in C): creation and free, with the callback
 * scopes that put off a free asked for by a callback; the settings, the eviction policy, events,
 * memory pressure, the removal listener, statistics and the test hooks.
 *
 * The struct, its invariants and the shared helpers: memory_cache_internal.h.
 */
#include "memory/memory_cache_internal.h"

/* --- callback scopes (deferred free) --- */

static _Thread_local yyc__mc_scope *innermost_scope;

void yyc__mc_scope_enter(yyc__mc_scope *s, yyc_memcache *c) {
    *s = (yyc__mc_scope){.cache = c, .outer = innermost_scope};
    innermost_scope = s;
}

void yyc__mc_scope_exit(yyc__mc_scope *s) {
    assert(innermost_scope == s);
    innermost_scope = s->outer;
    if (s->free_at_end) yyc__mc_free_now(s->cache);
}

/* The outermost scope of c on this thread, or NULL. */
static yyc__mc_scope *outermost_scope_of(const yyc_memcache *c) {
    yyc__mc_scope *found = NULL;
    for (yyc__mc_scope *s = innermost_scope; s; s = s->outer)
        if (s->cache == c) found = s;
    return found;
}
/* --- construction --- */

/* The alignment of an inline value: type->align, or by default the largest power of two that
 * divides size, at most 16. 0 if type is invalid. */
static size_t inline_align(const yyc_inline_value_type *type) {
    if (type->size < 1 || type->size > YYC_MEMCACHE_INLINE_MAX) return 0;
    size_t align = type->align;
    if (align == 0) {
        align = (size_t)1 << __builtin_ctzll((unsigned long long)type->size);
        if (align > 16) align = 16;
    }
    if (align > 16 || (align & (align - 1)) != 0) return 0;
    return align;
}

#ifdef YYC_TESTING
/* Test builds: the policy new caches get (Tests/C/policy_support.h runs suites per policy). */
static _Atomic int testing_default_policy = YYC_EVICT_LRU;
void yyc__memcache_testing_default_policy(yyc_eviction_policy policy) {
    atomic_store(&testing_default_policy, (int)policy);
}
#endif

/* Both constructors: pointer mode when itype is NULL, inline mode otherwise (validated). */
static int new_cache(const yyc_value_callbacks *cb, const yyc_inline_value_type *itype,
                     yyc_memcache **out) {
    yyc_memcache *c = calloc(1, sizeof *c);
    if (!c) return YYC_ENOMEM;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
#if !defined(NDEBUG) && (!defined(__OPTIMIZE__) || defined(YYC_TESTING))
    /* Debug and test builds catch relocking and foreign unlocks (asserted in lock/unlock).
     * Not optimized builds without NDEBUG (SwiftPM's release configuration defines none): an
     * error-checking mutex costs ~30 instructions per lock + unlock on every call. */
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
#endif
    int rc = pthread_mutex_init(&c->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    if (rc != 0) {
        free(c);
        return YYC_ENOMEM;
    }
    if (itype) {
        c->inline_values = true;
        c->itype = *itype;
        c->value_size = itype->size;
        c->value_align = inline_align(itype);
        c->garbage_stride = (c->value_size + c->value_align - 1) & ~(c->value_align - 1);
        yyc__lru_map_init_inline(&c->map, c->value_size, c->value_align);
    } else {
        if (cb) c->cb = *cb;
        c->garbage_stride = sizeof(void *);
        yyc__lru_map_init(&c->map);
    }
#ifdef YYC_TESTING
    yyc__mc_lock(c);
    yyc__mc_set_policy_locked(c, (yyc__policy)atomic_load(&testing_default_policy));
    yyc__mc_unlock(c);
#endif
    c->count_limit = SIZE_MAX;
    c->cost_limit = SIZE_MAX;
    c->age_limit = DBL_MAX;
    c->auto_trim_interval = 5.0;
    c->release_async = true;
    c->remove_all_on_memory_warning = true;
    c->remove_all_on_enter_background = true;
    yyc__expiry_init(&c->expiry);
    c->default_ttl = INFINITY;
    /* Last: the timer may fire (on the worker) as soon as it exists. */
    if (yyc__timer_new(YYC__QUEUE_MEMORY, yyc__mc_auto_trim_fire, c, c->auto_trim_interval,
                       &c->timer) != YYC_OK) {
        pthread_mutex_destroy(&c->lock);
        free(c);
        return YYC_ENOMEM;
    }
    *out = c;
    return YYC_OK;
}

int yyc_memcache_new(const yyc_value_callbacks *cb, yyc_memcache **out) {
    if (!out) return YYC_EINVAL;
    *out = NULL;
    return new_cache(cb, NULL, out);
}

int yyc_memcache_new_inline(const yyc_inline_value_type *type, yyc_memcache **out) {
    if (!out) return YYC_EINVAL;
    *out = NULL;
    if (!type || inline_align(type) == 0) return YYC_EINVAL;
    return new_cache(NULL, type, out);
}

void yyc_memcache_free(yyc_memcache *c) {
    if (!c) return;
    /* Called by one of c's callbacks (or inside the free itself): the scope that runs the
     * callback frees c when it has finished with it. */
    yyc__mc_scope *running = outermost_scope_of(c);
    if (running) {
        running->free_at_end = true;
        return;
    }
    yyc__mc_free_now(c);
}

void yyc_memcache_set_free_handler(yyc_memcache *c, yyc_memcache_free_fn fn, void *ctx) {
    if (!c) return;
    yyc__mc_lock(c);
    c->free_fn = fn;
    c->free_ctx = ctx;
    yyc__mc_unlock(c);
}

/* Frees c now (no scope of c is running on this thread). The free is a scope itself: a
 * callback that frees c again meanwhile on this thread only marks it, and the mark is ignored;
 * on another thread (a release job the free is waiting for), its yyc__mc_free_now returns at once.
 */
void yyc__mc_free_now(yyc_memcache *c) {
    yyc__mc_lock(c);
    bool already = c->freeing;
    c->freeing = true;
    yyc__mc_unlock(c);
    if (already) return;            /* the thread freeing c waits for this thread's job to end */
    yyc__memory_pressure_forget(c); /* first: waits for the pressure watcher's handling of c */
    yyc_memcache_set_removal_listener(c, NULL, NULL); /* a free reports nothing */
    yyc__mc_scope scope;
    yyc__mc_scope_enter(&scope, c);
    yyc__timer_free(c->timer); /* waits for a running auto-trim */
    c->timer = NULL;
    yyc_memcache_remove_all(c);
    yyc__worker_drain(c); /* cost trims and release jobs: queued ones run on this thread */
    /* Anything stashed after the drain looked (a release callback that re-entered the cache)
     * is released here. */
    for (;;) {
        yyc__mc_lock(c);
        bool empty = !c->garbage_head && c->garbage_nvals == 0 && yyc__lru_map_count(&c->map) == 0;
        yyc__mc_unlock(c);
        if (empty) break;
        yyc_memcache_remove_all(c);
        yyc__worker_drain(c);
        yyc__mc_release_job(c);
    }
    assert(innermost_scope == &scope);
    innermost_scope = scope.outer; /* not yyc__mc_scope_exit: its free_at_end means this free */
    yyc_memcache_free_fn free_fn = c->free_fn;
    void *free_ctx = c->free_ctx;
    free(c->garbage_vals);
    yyc__expiry_destroy(&c->expiry);
    yyc__lru_map_destroy(&c->map);
    free(c->stripes);
    pthread_mutex_destroy(&c->lock);
    free(c);
    if (free_fn) free_fn(free_ctx);
}
/* --- settings (limits, release policy, event reactions) --- */

#define ACCESSORS(name, type, field, null_value)            \
    void yyc_memcache_set_##name(yyc_memcache *c, type v) { \
        if (!c) return;                                     \
        yyc__mc_lock(c);                                    \
        c->field = v;                                       \
        yyc__mc_unlock(c);                                  \
    }                                                       \
    type yyc_memcache_##name(yyc_memcache *c) {             \
        if (!c) return null_value;                          \
        yyc__mc_lock(c);                                    \
        type v = c->field;                                  \
        yyc__mc_unlock(c);                                  \
        return v;                                           \
    }

ACCESSORS(count_limit, size_t, count_limit, SIZE_MAX)
ACCESSORS(cost_limit, size_t, cost_limit, SIZE_MAX)
ACCESSORS(age_limit, double, age_limit, DBL_MAX)
ACCESSORS(release_asynchronously, bool, release_async, true)
ACCESSORS(remove_all_on_memory_warning, bool, remove_all_on_memory_warning, true)
ACCESSORS(remove_all_on_enter_background, bool, remove_all_on_enter_background, true)

#undef ACCESSORS

/* --- eviction policy --- */

int yyc_memcache_set_policy(yyc_memcache *c, yyc_eviction_policy policy) {
    if (!c || (policy != YYC_EVICT_LRU && policy != YYC_EVICT_SIEVE && policy != YYC_EVICT_S3FIFO &&
               policy != YYC_EVICT_TINYLFU))
        return YYC_EINVAL;
    yyc__mc_lock(c);
    int rc = YYC_OK;
    if (yyc__lru_map_count(&c->map) != 0) rc = YYC_EINVAL; /* in use: too late */
    else yyc__mc_set_policy_locked(c, (yyc__policy)policy);
    yyc__mc_unlock(c);
    return rc;
}

yyc_eviction_policy yyc_memcache_policy(yyc_memcache *c) {
    if (!c) return YYC_EVICT_LRU;
    yyc__mc_lock(c);
    yyc_eviction_policy p = (yyc_eviction_policy)c->map.policy;
    yyc__mc_unlock(c);
    return p;
}

/* --- system memory pressure (the watcher in memory_pressure.c runs this handler) --- */

static void pressure_handler(void *c) { yyc_memcache_handle_memory_warning(c); }

int yyc_memcache_set_responds_to_system_memory_pressure(yyc_memcache *c, bool on) {
    if (!c) return YYC_EINVAL;
    if (on) return yyc__memory_pressure_subscribe(c, pressure_handler);
    yyc__memory_pressure_forget(c);
    return YYC_OK;
}

bool yyc_memcache_responds_to_system_memory_pressure(yyc_memcache *c) {
    return c && yyc__memory_pressure_subscribed(c);
}

/* --- events --- */

void yyc_memcache_set_memory_warning_handler(yyc_memcache *c, yyc_memcache_event_fn fn, void *ctx) {
    if (!c) return;
    yyc__mc_lock(c);
    c->memory_warning_fn = fn;
    c->memory_warning_ctx = ctx;
    yyc__mc_unlock(c);
}

void yyc_memcache_set_enter_background_handler(yyc_memcache *c, yyc_memcache_event_fn fn,
                                               void *ctx) {
    if (!c) return;
    yyc__mc_lock(c);
    c->enter_background_fn = fn;
    c->enter_background_ctx = ctx;
    yyc__mc_unlock(c);
}

void yyc_memcache_handle_memory_warning(yyc_memcache *c) {
    if (!c) return;
    yyc__mc_scope scope; /* the handler or a release may free the cache */
    yyc__mc_scope_enter(&scope, c);
    yyc__mc_lock(c);
    yyc_memcache_event_fn fn = c->memory_warning_fn;
    void *ctx = c->memory_warning_ctx;
    yyc__mc_unlock(c);
    if (fn) fn(c, ctx);
    yyc__mc_lock(c);
    /* Read after the handler ran: it may have changed the flag. */
    bool remove_all = c->remove_all_on_memory_warning;
    yyc__mc_unlock(c);
    if (remove_all) yyc__mc_remove_all_because(c, YYC_REMOVED_MEMORY_PRESSURE);
    yyc__mc_scope_exit(&scope);
}

void yyc_memcache_handle_enter_background(yyc_memcache *c) {
    if (!c) return;
    yyc__mc_scope scope; /* the handler or a release may free the cache */
    yyc__mc_scope_enter(&scope, c);
    yyc__mc_lock(c);
    yyc_memcache_event_fn fn = c->enter_background_fn;
    void *ctx = c->enter_background_ctx;
    yyc__mc_unlock(c);
    if (fn) fn(c, ctx);
    yyc__mc_lock(c);
    bool remove_all = c->remove_all_on_enter_background;
    yyc__mc_unlock(c);
    if (remove_all) yyc__mc_remove_all_because(c, YYC_REMOVED_MEMORY_PRESSURE);
    yyc__mc_scope_exit(&scope);
}

/* --- removal events --- */

void yyc_memcache_set_removal_listener(yyc_memcache *c, yyc_memcache_removal_fn fn, void *ctx) {
    if (!c) return;
    yyc__mc_lock(c);
    c->removal_fn = fn;
    c->removal_ctx = ctx;
    atomic_store_explicit(&c->listening, fn != NULL, memory_order_relaxed);
    yyc__mc_unlock(c);
}

/* --- statistics --- */

int yyc_memcache_statistics(yyc_memcache *c, yyc_cache_statistics *out) {
    if (!c || !out) return YYC_EINVAL;
    yyc__mc_lock(c);
    *out = c->stats;
    uint64_t hits, misses; /* those of shared reads */
    yyc__mc_shared_stats_locked(c, &hits, &misses);
    out->hits += hits;
    out->misses += misses;
    yyc__mc_unlock(c);
    return YYC_OK;
}

void yyc_memcache_reset_statistics(yyc_memcache *c) {
    if (!c) return;
    yyc__mc_lock(c);
    memset(&c->stats, 0, sizeof c->stats);
    yyc__mc_shared_stats_reset_locked(c);
    yyc__mc_unlock(c);
}
/* --- test hooks --- */

#ifdef YYC_TESTING
/* Checks the map's invariants under the cache's lock. */
bool yyc__memcache_check(yyc_memcache *c) {
    yyc__mc_lock(c);
    bool ok = yyc__lru_map_check(&c->map) && yyc__expiry_check(&c->expiry);
    if (ok && c->garbage_tail) ok = c->garbage_tail->next == NULL;
    /* every node with a deadline is in the map, the default is none or >= 0 */
    for (size_t i = 0; ok && c->expiry.index && i <= c->expiry.mask; i++) {
        const yyc__lru_node *n = c->expiry.index[i].node;
        if (n && yyc__lru_map_find(&c->map, n->key, n->key_len) != n) {
            fprintf(stderr, "memory_cache: a deadline of a node not in the map\n");
            ok = false;
        }
    }
    if (ok && !(c->default_ttl >= 0)) ok = false;
    yyc__mc_unlock(c);
    return ok;
}

/* How many times the auto-trim timer has fired. */
unsigned yyc__memcache_auto_trim_fires(yyc_memcache *c) { return atomic_load(&c->auto_trim_fires); }
#endif