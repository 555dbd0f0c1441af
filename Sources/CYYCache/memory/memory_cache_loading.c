/*
 * memory_cache_loading.c - loads with single flight: begin_load / finish_load (one load per
 * key, later callers join it) and the blocking get_or_load over them.
 *
 * The struct, its invariants and the shared helpers: memory_cache_internal.h.
 */
#include "memory/memory_cache_internal.h"

/* --- loading with single flight --- */

/* A caller waiting for a load (begin_load joined a flight). */
typedef struct load_waiter {
    struct load_waiter *next;
    yyc_memcache_loaded_fn done;
    void *done_ctx;
} load_waiter;

/* A load under way: in c->flights from begin_load until finish_load takes it out (under the
 * lock); owned by the loader meanwhile. The key is copied after the struct. */
struct yyc_memcache_flight {
    struct yyc_memcache_flight *next;
    pthread_t loader;     /* the thread of begin_load */
    bool blocking;        /* begun by a blocking caller (a blocking join from loader: ERECURSIVE) */
    load_waiter *waiters; /* joined callers, newest first */
    size_t key_len;
    unsigned char key[];
};

/* The flight loading key (under lock), or NULL. */
static struct yyc_memcache_flight *find_flight_locked(yyc_memcache *c, const void *key,
                                                      size_t key_len) {
    yyc__assert_held(&c->lock);
    for (struct yyc_memcache_flight *f = c->flights; f; f = f->next)
        if (f->key_len == key_len && (key_len == 0 || memcmp(f->key, key, key_len) == 0)) return f;
    return NULL;
}

int yyc_memcache_begin_load(yyc_memcache *c, const void *key, size_t key_len, void *out_value,
                            yyc_memcache_loaded_fn done, void *done_ctx, bool blocking,
                            yyc_memcache_flight **out_flight) {
    if (out_flight) *out_flight = NULL;
    if (!c || !out_value || !out_flight || !done || (!key && key_len > 0)) return YYC_EINVAL;
    if (key_len > UINT32_MAX) return YYC_ETOOBIG;
    if (!c->inline_values) *(void **)out_value = NULL;
    yyc__lru_node *expired = NULL;
    yyc__mc_lock(c);
    yyc__lru_node *n = yyc__lru_map_find(&c->map, key, key_len);
    if (n && c->expiry.live && yyc__mc_expired_locked(c, n)) { /* reported expired; then a miss */
        yyc__lru_map_unlink(&c->map, n);
        yyc__expiry_forget(&c->expiry, n);
        yyc__mc_set_cause_locked(c, n, YYC_REMOVED_EXPIRED);
        expired = n;
        n = NULL;
    }
    int rc;
    if (n) {
        c->stats.hits++;
        yyc__mc_copy_out_locked(c, out_value, yyc__mc_node_slot(c, n));
        n->time = yyc__mc_clock_now();
        yyc__lru_map_touch(&c->map, n);
        rc = YYC_OK;
    } else {
        struct yyc_memcache_flight *f = find_flight_locked(c, key, key_len);
        if (f && blocking && f->blocking && pthread_equal(f->loader, pthread_self())) {
            rc = YYC_ERECURSIVE; /* the load of this key asks for it: it would wait for itself */
        } else if (f) {
            load_waiter *w = malloc(sizeof *w);
            if (w) {
                *w = (load_waiter){.next = f->waiters, .done = done, .done_ctx = done_ctx};
                f->waiters = w;
                c->stats.misses++;
                rc = YYC_NOTFOUND;
            } else {
                rc = YYC_ENOMEM;
            }
        } else {
            f = malloc(sizeof *f + key_len);
            if (f) {
                *f = (struct yyc_memcache_flight){.next = c->flights,
                                                  .loader = pthread_self(),
                                                  .blocking = blocking,
                                                  .key_len = key_len};
                if (key_len) memcpy(f->key, key, key_len);
                c->flights = f;
                c->stats.misses++;
                *out_flight = f;
                rc = YYC_NOTFOUND;
            } else {
                rc = YYC_ENOMEM;
            }
        }
    }
    yyc__mc_unlock_and_release(c, expired);
    return rc;
}

/* The end of every load: takes the flight out (under the lock), counts the load, and hands the
 * result to each waiter (value borrowed for the calls), with no lock held. */
static void complete_flight(yyc_memcache *c, struct yyc_memcache_flight *f, int status, void *value,
                            void *error, uint64_t load_ns) {
    yyc__mc_lock(c);
    struct yyc_memcache_flight **p = &c->flights;
    while (*p != f) p = &(*p)->next;
    *p = f->next;
    load_waiter *w = f->waiters;
    if (status == YYC_OK) c->stats.loads++;
    else c->stats.load_failures++;
    c->stats.total_load_time_ns += load_ns;
    yyc__mc_unlock(c);
    free(f);
    while (w) {
        load_waiter *next = w->next;
        w->done(w->done_ctx, status, status == YYC_OK ? value : NULL, error);
        free(w);
        w = next;
    }
}

int yyc_memcache_finish_load(yyc_memcache *c, yyc_memcache_flight *flight, int status, void *value,
                             size_t cost, void *error, uint64_t load_ns) {
    if (!c || !flight || c->inline_values) return YYC_EINVAL;
    int rc = status;
    if (status == YYC_OK) /* stored first: a caller arriving meanwhile still joins the flight */
        rc = yyc_memcache_set(c, flight->key, flight->key_len, value, cost);
    complete_flight(c, flight, status, value, error, load_ns);
    return rc;
}

int yyc_memcache_finish_load_inline(yyc_memcache *c, yyc_memcache_flight *flight, int status,
                                    const void *value, size_t cost, void *error, uint64_t load_ns) {
    if (!c || !flight || !c->inline_values || (status == YYC_OK && !value)) return YYC_EINVAL;
    if (status != YYC_OK) {
        complete_flight(c, flight, status, NULL, error, load_ns);
        return status;
    }
    /* The waiters get a copy: the value itself moves into the cache first, where a concurrent
     * call may drop it before they are called. */
    _Alignas(16) unsigned char copy[SLOT_MAX];
    if (c->itype.copy) c->itype.copy(c->itype.ctx, copy, value);
    else memcpy(copy, value, c->value_size);
    int rc = yyc_memcache_set_inline(c, flight->key, flight->key_len, value, cost);
    complete_flight(c, flight, status, copy, error, load_ns);
    yyc__mc_scope scope;
    yyc__mc_scope_enter(&scope, c);
    yyc__mc_drop_slot(c, copy);
    if (rc != YYC_OK)
        yyc__mc_drop_slot(c, (void *)value); /* not taken by the store: ours to destroy */
    yyc__mc_scope_exit(&scope);
    return rc;
}

/* A blocking caller waiting for another caller's load (get_or_load). */
typedef struct sync_waiter {
    yyc_memcache *cache;
    void *out_value;
    pthread_cond_t cond;
    int status;
    bool done;
} sync_waiter;

/* The waiter's done callback (on the finishing thread): copies the value out under the lock,
 * then wakes the waiter. */
static void sync_waiter_done(void *ctx, int status, void *value, void *error) {
    (void)error;
    sync_waiter *w = ctx;
    yyc_memcache *c = w->cache;
    yyc__mc_lock(c);
    if (status == YYC_OK)
        yyc__mc_copy_out_locked(c, w->out_value, c->inline_values ? value : &value);
    w->status = status;
    w->done = true;
    pthread_cond_signal(&w->cond);
    yyc__mc_unlock(c); /* w may be gone from here on */
}

static uint64_t elapsed_ns(double since) {
    double d = yyc__monotonic_now() - since;
    return d > 0 ? (uint64_t)(d * 1e9) : 0;
}

/* Both blocking get-or-loads (out_value: a void ** or the inline bytes). */
static int get_or_load_impl(yyc_memcache *c, const void *key, size_t key_len, size_t cost,
                            yyc_memcache_load_fn load, void *ctx, void *out_value) {
    sync_waiter w = {.cache = c, .out_value = out_value};
    if (pthread_cond_init(&w.cond, NULL) != 0) return YYC_ENOMEM;
    yyc_memcache_flight *flight;
    int rc =
        yyc_memcache_begin_load(c, key, key_len, out_value, sync_waiter_done, &w, true, &flight);
    if (rc == YYC_NOTFOUND && flight) {
        double start = yyc__monotonic_now();
        rc = load(ctx, key, key_len, out_value);
        uint64_t ns = elapsed_ns(start);
        if (rc != YYC_OK) {
            yyc_memcache_finish_load(c, flight, rc, NULL, 0, NULL, ns);
        } else if (!c->inline_values) {
            (void)yyc_memcache_finish_load(c, flight, YYC_OK, *(void **)out_value, cost, NULL, ns);
        } else {
            /* The cache takes a copy; the caller keeps the loaded value. */
            _Alignas(16) unsigned char copy[SLOT_MAX];
            if (c->itype.copy) c->itype.copy(c->itype.ctx, copy, out_value);
            else memcpy(copy, out_value, c->value_size);
            (void)yyc_memcache_finish_load_inline(c, flight, YYC_OK, copy, cost, NULL, ns);
        }
    } else if (rc == YYC_NOTFOUND) {
        /* The mutex alone (not yyc__mc_lock, which would exclude shared readers across the
         * wait): it guards only w here, and the wait releases it. */
        pthread_mutex_lock(&c->lock);
        while (!w.done) pthread_cond_wait(&w.cond, &c->lock);
        pthread_mutex_unlock(&c->lock);
        rc = w.status;
    }
    pthread_cond_destroy(&w.cond);
    return rc;
}

int yyc_memcache_get_or_load(yyc_memcache *c, const void *key, size_t key_len, size_t cost,
                             yyc_memcache_load_fn load, void *ctx, void **out_value) {
    if (out_value) *out_value = NULL;
    if (!c || !load || !out_value || c->inline_values || (!key && key_len > 0)) return YYC_EINVAL;
    int rc = get_or_load_impl(c, key, key_len, cost, load, ctx, out_value);
    if (rc != YYC_OK) *out_value = NULL;
    return rc;
}

int yyc_memcache_get_or_load_inline(yyc_memcache *c, const void *key, size_t key_len, size_t cost,
                                    yyc_memcache_load_fn load, void *ctx, void *out_value) {
    if (!c || !load || !out_value || !c->inline_values || (!key && key_len > 0)) return YYC_EINVAL;
    return get_or_load_impl(c, key, key_len, cost, load, ctx, out_value);
}
