/*
 * memory_cache.c - thread-safe in-memory LRU cache (YYMemoryCache) over lru_map.
 *
 * One mutex per cache guards everything below. User code (release/destroy callbacks, event
 * handlers) never runs under it; only the retain and copy callbacks do (see memory_cache.h).
 * Removed values go either to a local list released after unlocking (synchronous policy) or to
 * the cache's "garbage" (asynchronous policy): detached nodes chained through node->next plus
 * replaced values in a small array, drained by one release job on the background worker. Jobs
 * are coalesced: at most one release job and one cost-trim job are queued per cache at a time.
 *
 * Two value modes, fixed at creation: pointer values (yyc_memcache_new; the node's value field,
 * owned through retain/release) and inline values (yyc_memcache_new_inline; value_size bytes in
 * the node - in its value field when they fit, else after the key - copied out by get,
 * destroyed when dropped). Both are handled through a value's "slot": the address of its stored
 * representation (&node->value, or the inline bytes), which is also what the garbage array
 * holds a copy of (one element per stride).
 *
 * Callbacks may free the cache (a value holding the last reference to the cache's owner). Every
 * stretch of code that runs callbacks and may touch the cache after them is a "callback scope"
 * (a frame in a thread-local chain): yyc_memcache_free called inside one only marks the
 * outermost scope of that cache on this thread, which frees the cache when it ends.
 */
#include "expiry.h"
#include "internal.h"
#include "lru_map.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Stripes of the write generations (a power of two). */
#define YYC__GENERATION_STRIPES 256u

/* Invariants (under lock):
 *   - map holds every entry; in pointer mode each node's value was returned by cb.retain (or is
 *     NULL); in inline mode each node's value bytes hold a value owned by the cache (moved in by
 *     set_inline, to be passed to itype.destroy exactly once).
 *   - garbage_head..garbage_tail (chained through next, tail->next == NULL) and garbage_vals
 *     hold values detached but not yet released; release_pending is true iff a release job is
 *     queued or about to be queued, and that job will take everything found in the garbage.
 *   - cost_trim_pending is true while a cost-trim job is queued (cleared when it starts).
 *   - garbage_vals holds garbage_nvals slots, garbage_stride bytes apart.
 *   - cb, itype, inline_values, value_size, value_align, garbage_stride and timer never change
 *     after creation, so they may be read without the lock.
 *   - Write generations (memory_cache.h): a key's generation is generation_epoch +
 *     generations[stripe(key)]; both only grow, each write on a key adds 1 to one of them
 *     (remove_all to the epoch, other writes to the key's stripe) once tracks_generations is
 *     set, so a generation never repeats. tracks_generations only goes from false to true.
 *   - Expiry: expiry records exactly the map's nodes that have a time to live (every node that
 *     leaves the map is forgotten there in the same critical section, or the whole structure is
 *     cleared with the map); default_ttl is INFINITY (none) or >= 0. No read returns a node
 *     whose deadline has passed (ttl_now() >= deadline): it is unlinked on that read. */
struct yyc_memcache {
    pthread_mutex_t lock;
    yyc__lru_map map;
    size_t count_limit;
    size_t cost_limit;
    double age_limit;
    double auto_trim_interval;
    bool release_async;
    bool remove_all_on_memory_warning;
    bool remove_all_on_enter_background;
    bool release_pending;
    bool cost_trim_pending;
    yyc__lru_node *garbage_head;
    yyc__lru_node *garbage_tail;
    unsigned char *garbage_vals;
    size_t garbage_nvals;
    size_t garbage_cap;
    yyc_memcache_event_fn memory_warning_fn;
    void *memory_warning_ctx;
    yyc_memcache_event_fn enter_background_fn;
    void *enter_background_ctx;
    yyc_value_callbacks cb;      /* pointer mode */
    yyc_inline_value_type itype; /* inline mode */
    bool inline_values;
    size_t value_size;     /* inline mode: bytes per value */
    size_t value_align;    /* inline mode: their alignment in the node */
    size_t garbage_stride; /* bytes per garbage_vals element */
    yyc__timer *timer;
    bool tracks_generations;
    uint64_t generation_epoch;
    uint64_t generations[YYC__GENERATION_STRIPES];
    bool freeing;                 /* free_now has started (on some thread) */
    yyc_memcache_free_fn free_fn; /* called once the cache is gone (set_free_handler) */
    void *free_ctx;
    yyc__expiry expiry;    /* deadlines of the entries with a time to live (expiry.h) */
    double default_ttl;    /* seconds given to sets without their own; INFINITY: none */
#ifdef YYC_TESTING
    atomic_uint auto_trim_fires;
#endif
};

/* --- private prototypes --- */

static void lock(yyc_memcache *c);
static void unlock(yyc_memcache *c);
static bool stash_list_locked(yyc_memcache *c, yyc__lru_node *head, yyc__lru_node *tail);
static int stash_slot_locked(yyc_memcache *c, const void *slot);
static void schedule_release(yyc_memcache *c);
static void release_job(void *arg);
static void release_list(yyc_memcache *c, yyc__lru_node *list);
static void release_value(yyc_memcache *c, void *value);
static void drop_slot(yyc_memcache *c, void *slot);
static void cost_trim_job(void *arg);
static void auto_trim_fire(void *arg);
static void free_now(yyc_memcache *c);

typedef enum trim_kind { TRIM_COUNT, TRIM_COST, TRIM_AGE } trim_kind;
static void trim(yyc_memcache *c, trim_kind kind, size_t limit, double age, bool on_worker);
static void trim_age_scan(yyc_memcache *c, double age, double now, bool on_worker);

#ifdef YYC_TESTING
bool yyc__memcache_check(yyc_memcache *c);
unsigned yyc__memcache_auto_trim_fires(yyc_memcache *c);
#endif

/* --- time --- */

/* Entry times and trim ages. CLOCK_MONOTONIC_COARSE is CLOCK_MONOTONIC as of the last kernel
 * tick (1-10 ms resolution, never ahead of CLOCK_MONOTONIC): ~3 ns a read instead of ~25 ns,
 * which was a third of a get's cost; ages are seconds, so the resolution does not matter.
 * Every time in this file comes from here, so ages compare like with like. */
#ifdef YYC_TESTING
/* Test builds: seconds added to the deadlines' clock (ttl_now; moved by tests instead of
 * sleeping). Ages (clock_now) do not move: the age limit's tests and fuzzing rely on real time. */
static _Atomic double testing_clock_offset;
void yyc__memcache_testing_advance_clock(double seconds);
void yyc__memcache_testing_advance_clock(double seconds) {
    double old = atomic_load(&testing_clock_offset);
    while (!atomic_compare_exchange_weak(&testing_clock_offset, &old, old + seconds)) {
    }
}
#define CLOCK_OFFSET atomic_load_explicit(&testing_clock_offset, memory_order_relaxed)
#else
#define CLOCK_OFFSET 0.0
#endif

static double clock_now(void) {
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
    return yyc__monotonic_now();
}

/* Deadlines (time to live): the fine clock, so that an entry is never returned a tick after it
 * expired. Read only for entries that have a time to live. */
static double ttl_now(void) { return yyc__monotonic_now() + CLOCK_OFFSET; }

/* --- locking --- */

static void lock(yyc_memcache *c) {
    int rc = pthread_mutex_lock(&c->lock);
    assert(rc == 0);
    (void)rc;
    yyc__lock_note_acquired(&c->lock);
}

/* pthread_mutex_trylock: whether the lock was taken (then unlock it). */
static bool try_lock(yyc_memcache *c) {
    if (pthread_mutex_trylock(&c->lock) != 0) return false;
    yyc__lock_note_acquired(&c->lock);
    return true;
}

static void unlock(yyc_memcache *c) {
    yyc__lock_note_released(&c->lock);
    int rc = pthread_mutex_unlock(&c->lock);
    assert(rc == 0);
    (void)rc;
}

/* --- callback scopes (deferred free) --- */

/* A stretch of code on this thread that runs c's callbacks and may use c after them. */
typedef struct callback_scope {
    yyc_memcache *cache;
    struct callback_scope *outer;
    bool free_at_end; /* yyc_memcache_free was called inside: free the cache when it ends */
} callback_scope;

static _Thread_local callback_scope *innermost_scope;

static void scope_enter(callback_scope *s, yyc_memcache *c) {
    *s = (callback_scope){.cache = c, .outer = innermost_scope};
    innermost_scope = s;
}

/* Ends the scope; frees the cache if a callback asked for it (only ever the outermost scope of
 * the cache on this thread). Nothing may touch the cache after this. */
static void scope_exit(callback_scope *s) {
    assert(innermost_scope == s);
    innermost_scope = s->outer;
    if (s->free_at_end) free_now(s->cache);
}

/* The outermost scope of c on this thread, or NULL. */
static callback_scope *outermost_scope_of(const yyc_memcache *c) {
    callback_scope *found = NULL;
    for (callback_scope *s = innermost_scope; s; s = s->outer)
        if (s->cache == c) found = s;
    return found;
}

/* --- releasing values --- */

static void release_value(yyc_memcache *c, void *value) {
    if (value && c->cb.release) c->cb.release(c->cb.ctx, value);
}

/* The slot of n's value (see the top of the file). */
static inline void *node_slot(const yyc_memcache *c, yyc__lru_node *n) {
    if (c->inline_values) return yyc__lru_node_value(n, c->value_size, c->value_align);
    return &n->value;
}

/* Drops the value stored in slot (no lock held): release in pointer mode, destroy inline. */
static void drop_slot(yyc_memcache *c, void *slot) {
    if (c->inline_values) {
        if (c->itype.destroy) c->itype.destroy(c->itype.ctx, slot);
    } else {
        void *value;
        memcpy(&value, slot, sizeof value);
        release_value(c, value);
    }
}

/* Releases every value of a detached list (chained through next) and frees the nodes. */
static void release_list(yyc_memcache *c, yyc__lru_node *list) {
    while (list) {
        yyc__lru_node *next = list->next;
        drop_slot(c, node_slot(c, list));
        yyc__lru_node_free(list);
        list = next;
    }
}

/* Appends a detached list to the garbage. Returns true if the caller must schedule the release
 * job after unlocking. */
static bool stash_list_locked(yyc_memcache *c, yyc__lru_node *head, yyc__lru_node *tail) {
    yyc__assert_held(&c->lock);
    if (!head) return false;
    if (c->garbage_tail) c->garbage_tail->next = head;
    else c->garbage_head = head;
    c->garbage_tail = tail;
    if (c->release_pending) return false;
    c->release_pending = true;
    return true;
}

/* Adds a replaced value (a copy of its slot) to the garbage. Returns 1 if the caller must
 * schedule the release job, 0 if nothing more is needed, -1 if memory ran out (the caller drops
 * the value itself after unlocking). */
static int stash_slot_locked(yyc_memcache *c, const void *slot) {
    yyc__assert_held(&c->lock);
    if (c->garbage_nvals == c->garbage_cap) {
        size_t cap = c->garbage_cap ? c->garbage_cap * 2 : 16;
        unsigned char *vals = realloc(c->garbage_vals, cap * c->garbage_stride);
        if (!vals) return -1;
        c->garbage_vals = vals;
        c->garbage_cap = cap;
    }
    memcpy(c->garbage_vals + c->garbage_nvals++ * c->garbage_stride, slot,
           c->inline_values ? c->value_size : sizeof(void *));
    if (c->release_pending) return 0;
    c->release_pending = true;
    return 1;
}

/* Queues the release job (called without the lock, after a stash asked for it). If the worker
 * cannot take it, the job runs right here. */
static void schedule_release(yyc_memcache *c) {
    if (yyc__worker_async(YYC__QUEUE_MEMORY, c, release_job, c) != YYC_OK) release_job(c);
}

/* Takes the whole garbage under the lock, then releases it with no lock held. */
static void release_job(void *arg) {
    yyc_memcache *c = arg;
    callback_scope scope;
    scope_enter(&scope, c);
    lock(c);
    yyc__lru_node *list = c->garbage_head;
    unsigned char *vals = c->garbage_vals;
    size_t nvals = c->garbage_nvals;
    c->garbage_head = c->garbage_tail = NULL;
    c->garbage_vals = NULL;
    c->garbage_nvals = c->garbage_cap = 0;
    c->release_pending = false;
    unlock(c);
    release_list(c, list);
    for (size_t i = 0; i < nvals; i++) drop_slot(c, vals + i * c->garbage_stride);
    free(vals);
    scope_exit(&scope);
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
void yyc__memcache_testing_default_policy(yyc_eviction_policy policy);
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
    yyc__lru_map_set_policy(&c->map, (yyc__policy)atomic_load(&testing_default_policy));
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
    if (yyc__timer_new(YYC__QUEUE_MEMORY, auto_trim_fire, c, c->auto_trim_interval, &c->timer) !=
        YYC_OK) {
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
    callback_scope *running = outermost_scope_of(c);
    if (running) {
        running->free_at_end = true;
        return;
    }
    free_now(c);
}

void yyc_memcache_set_free_handler(yyc_memcache *c, yyc_memcache_free_fn fn, void *ctx) {
    if (!c) return;
    lock(c);
    c->free_fn = fn;
    c->free_ctx = ctx;
    unlock(c);
}

/* Frees c now (no scope of c is running on this thread). The free is a scope itself: a
 * callback that frees c again meanwhile on this thread only marks it, and the mark is ignored;
 * on another thread (a release job the free is waiting for), its free_now returns at once. */
static void free_now(yyc_memcache *c) {
    lock(c);
    bool already = c->freeing;
    c->freeing = true;
    unlock(c);
    if (already) return; /* the thread freeing c waits for this thread's job to end */
    callback_scope scope;
    scope_enter(&scope, c);
    yyc__timer_free(c->timer); /* waits for a running auto-trim */
    c->timer = NULL;
    yyc_memcache_remove_all(c);
    yyc__worker_drain(c); /* cost trims and release jobs: queued ones run on this thread */
    /* Anything stashed after the drain looked (a release callback that re-entered the cache)
     * is released here. */
    for (;;) {
        lock(c);
        bool empty = !c->garbage_head && c->garbage_nvals == 0 && yyc__lru_map_count(&c->map) == 0;
        unlock(c);
        if (empty) break;
        yyc_memcache_remove_all(c);
        yyc__worker_drain(c);
        release_job(c);
    }
    assert(innermost_scope == &scope);
    innermost_scope = scope.outer; /* not scope_exit: its free_at_end means this free */
    yyc_memcache_free_fn free_fn = c->free_fn;
    void *free_ctx = c->free_ctx;
    free(c->garbage_vals);
    yyc__expiry_destroy(&c->expiry);
    yyc__lru_map_destroy(&c->map);
    pthread_mutex_destroy(&c->lock);
    free(c);
    if (free_fn) free_fn(free_ctx);
}

/* --- entries --- */

/* Largest slot (pointer or inline value), for the replaced value kept on the stack. */
#define SLOT_MAX \
    (YYC_MEMCACHE_INLINE_MAX > sizeof(void *) ? YYC_MEMCACHE_INLINE_MAX : sizeof(void *))

/* --- write generations --- */

/* The stripe counter of key's generation (under lock; tracks_generations is set). */
static uint64_t *generation_stripe_locked(yyc_memcache *c, const void *key, size_t key_len) {
    yyc__assert_held(&c->lock);
    uint64_t h = yyc__hash_bytes(key, key_len, c->map.seed);
    return &c->generations[h & (YYC__GENERATION_STRIPES - 1)];
}

/* Records a write on key (under lock). */
static void bump_generation_locked(yyc_memcache *c, const void *key, size_t key_len) {
    yyc__assert_held(&c->lock);
    if (c->tracks_generations) ++*generation_stripe_locked(c, key, key_len);
}

/* Whether key's generation is still `generation` (under lock). */
static bool generation_is_locked(yyc_memcache *c, const void *key, size_t key_len,
                                 uint64_t generation) {
    yyc__assert_held(&c->lock);
    return c->tracks_generations &&
           c->generation_epoch + *generation_stripe_locked(c, key, key_len) == generation;
}

uint64_t yyc_memcache_generation(yyc_memcache *c, const void *key, size_t key_len) {
    if (!c || (!key && key_len > 0)) return 0;
    lock(c);
    c->tracks_generations = true;
    uint64_t g = c->generation_epoch + *generation_stripe_locked(c, key, key_len);
    unlock(c);
    return g;
}

/* Every set (inline_mode is a constant in each caller, so each gets its own copy). Pointer
 * mode stores value (retained); inline mode moves value_size bytes from bytes. With
 * if_generation, stores only if key's generation is still *if_generation; *out_stored (may be
 * NULL) tells whether it stored. ttl: seconds to live (>= 0; INFINITY: never), or NaN for the
 * cache's default. */
static inline __attribute__((always_inline)) int
set_impl(yyc_memcache *c, const void *key, size_t key_len, void *value, const void *bytes,
         size_t cost, bool inline_mode, const uint64_t *if_generation, bool *out_stored,
         double ttl) {
    if (out_stored) *out_stored = false;
    if (key_len > UINT32_MAX) return YYC_ETOOBIG; /* node key lengths are 32-bit */
    yyc__lru_node *evicted = NULL;
    _Alignas(16) unsigned char old[SLOT_MAX]; /* the replaced value's slot, while have_old */
    bool have_old = false;
    bool queue_release = false, queue_trim = false;
    double now = clock_now();

    lock(c);
    uint64_t *stripe = c->tracks_generations ? generation_stripe_locked(c, key, key_len) : NULL;
    if (if_generation && !(stripe && c->generation_epoch + *stripe == *if_generation)) {
        unlock(c);
        return YYC_OK; /* written meanwhile: nothing stored (inline: the bytes were not read) */
    }
    if (isnan(ttl)) ttl = c->default_ttl;
    bool expires = ttl < INFINITY;
    if (expires && !yyc__expiry_reserve(&c->expiry)) {
        unlock(c);
        return YYC_ENOMEM; /* nothing changed */
    }
    bool inserted;
    /* A new key at the count limit evicts first (the policy never picks the new entry). */
    yyc__lru_node *n = yyc__lru_map_find_or_insert_within(&c->map, key, key_len, c->count_limit,
                                                          c->cost_limit, &inserted, &evicted);
    if (evicted && c->expiry.live) yyc__expiry_forget(&c->expiry, evicted);
    if (!n) {
        bool queue = evicted && c->release_async && stash_list_locked(c, evicted, evicted);
        if (c->release_async) evicted = NULL;
        unlock(c);
        if (queue) schedule_release(c);
        if (evicted) {
            callback_scope scope;
            scope_enter(&scope, c);
            release_list(c, evicted);
            scope_exit(&scope);
        }
        return YYC_ENOMEM; /* inline: the bytes were not read; the caller still owns them */
    }
    if (stripe) ++*stripe;
    if (inline_mode) {
        void *slot = yyc__lru_node_value(n, c->value_size, c->value_align);
        /* Without a destroy callback a replaced value needs nothing: just overwrite it. */
        if (!inserted && c->itype.destroy) {
            memcpy(old, slot, c->value_size);
            have_old = true;
        }
        memcpy(slot, bytes, c->value_size);
    } else {
        if (!inserted && n->value) {
            memcpy(old, &n->value, sizeof n->value);
            have_old = true;
        }
        n->value = (value && c->cb.retain) ? c->cb.retain(c->cb.ctx, value) : value;
    }
    n->time = now;
    if (expires) yyc__expiry_set(&c->expiry, n, ttl_now() + ttl);
    else if (!inserted && c->expiry.live) yyc__expiry_forget(&c->expiry, n);
    yyc__lru_map_set_cost(&c->map, n, cost);
    if (!inserted) yyc__lru_map_touch(&c->map, n); /* a new entry is where its policy put it */
    /* YYMemoryCache checks the cost before its count eviction: an entry evicted first for the
     * new one still counts here (with a cost limit of 0 the queued trim then empties the cache,
     * as YYMemoryCache's does). */
    size_t total_cost = yyc__lru_map_total_cost(&c->map);
    if (evicted)
        total_cost = total_cost > SIZE_MAX - evicted->cost ? SIZE_MAX : total_cost + evicted->cost;
    if (total_cost > c->cost_limit && !c->cost_trim_pending) {
        c->cost_trim_pending = true;
        queue_trim = true;
    }
    if (!evicted && yyc__lru_map_count(&c->map) > c->count_limit) {
        evicted = yyc__lru_map_evict(&c->map, c->count_limit, c->cost_limit);
        if (evicted && c->expiry.live) yyc__expiry_forget(&c->expiry, evicted);
    }
    if (c->release_async) {
        if (have_old) {
            int s = stash_slot_locked(c, old);
            if (s >= 0) have_old = false; /* else dropped inline below */
            queue_release |= (s == 1);
        }
        if (evicted) {
            queue_release |= stash_list_locked(c, evicted, evicted);
            evicted = NULL;
        }
    }
    unlock(c);

    if (queue_trim && yyc__worker_async(YYC__QUEUE_MEMORY, c, cost_trim_job, c) != YYC_OK) {
        lock(c);
        c->cost_trim_pending = false; /* the auto-trim will catch up */
        unlock(c);
    }
    if (queue_release) schedule_release(c);
    if (out_stored) *out_stored = true;
    if (have_old || evicted) {
        callback_scope scope;
        scope_enter(&scope, c);
        if (have_old) drop_slot(c, old);
        release_list(c, evicted);
        scope_exit(&scope);
    }
    return YYC_OK;
}

int yyc_memcache_set(yyc_memcache *c, const void *key, size_t key_len, void *value, size_t cost) {
    if (!c || (!key && key_len > 0) || c->inline_values) return YYC_EINVAL;
    return set_impl(c, key, key_len, value, NULL, cost, false, NULL, NULL, NAN);
}

int yyc_memcache_set_inline(yyc_memcache *c, const void *key, size_t key_len, const void *value,
                            size_t cost) {
    if (!c || (!key && key_len > 0) || !value || !c->inline_values) return YYC_EINVAL;
    return set_impl(c, key, key_len, NULL, value, cost, true, NULL, NULL, NAN);
}

static bool valid_ttl(double seconds) { return seconds >= 0; } /* false for NaN */

int yyc_memcache_set_with_ttl(yyc_memcache *c, const void *key, size_t key_len, void *value,
                              size_t cost, double ttl_seconds) {
    if (!c || (!key && key_len > 0) || c->inline_values || !valid_ttl(ttl_seconds))
        return YYC_EINVAL;
    return set_impl(c, key, key_len, value, NULL, cost, false, NULL, NULL, ttl_seconds);
}

int yyc_memcache_set_inline_with_ttl(yyc_memcache *c, const void *key, size_t key_len,
                                     const void *value, size_t cost, double ttl_seconds) {
    if (!c || (!key && key_len > 0) || !value || !c->inline_values || !valid_ttl(ttl_seconds))
        return YYC_EINVAL;
    return set_impl(c, key, key_len, NULL, value, cost, true, NULL, NULL, ttl_seconds);
}

int yyc_memcache_set_if_generation(yyc_memcache *c, const void *key, size_t key_len,
                                   void *value, size_t cost, uint64_t generation,
                                   bool *out_stored) {
    if (out_stored) *out_stored = false;
    if (!c || (!key && key_len > 0) || c->inline_values) return YYC_EINVAL;
    return set_impl(c, key, key_len, value, NULL, cost, false, &generation, out_stored, NAN);
}

int yyc_memcache_set_inline_if_generation(yyc_memcache *c, const void *key, size_t key_len,
                                          const void *value, size_t cost, uint64_t generation,
                                          bool *out_stored) {
    if (out_stored) *out_stored = false;
    if (!c || (!key && key_len > 0) || !value || !c->inline_values) return YYC_EINVAL;
    return set_impl(c, key, key_len, NULL, value, cost, true, &generation, out_stored, NAN);
}

int yyc_memcache_set_if_generation_with_ttl(yyc_memcache *c, const void *key, size_t key_len,
                                            void *value, size_t cost, uint64_t generation,
                                            double ttl_seconds, bool *out_stored) {
    if (out_stored) *out_stored = false;
    if (!c || (!key && key_len > 0) || c->inline_values || !valid_ttl(ttl_seconds))
        return YYC_EINVAL;
    return set_impl(c, key, key_len, value, NULL, cost, false, &generation, out_stored,
                    ttl_seconds);
}

int yyc_memcache_set_inline_if_generation_with_ttl(yyc_memcache *c, const void *key,
                                                   size_t key_len, const void *value, size_t cost,
                                                   uint64_t generation, double ttl_seconds,
                                                   bool *out_stored) {
    if (out_stored) *out_stored = false;
    if (!c || (!key && key_len > 0) || !value || !c->inline_values || !valid_ttl(ttl_seconds))
        return YYC_EINVAL;
    return set_impl(c, key, key_len, NULL, value, cost, true, &generation, out_stored,
                    ttl_seconds);
}

/* Unlocks c (held by the caller); the detached node n (NULL: none) then follows the release
 * policy: queued for the worker, or released here in a callback scope. The caller must not
 * touch c after this returns: a release callback may have freed it. */
static void unlock_and_release(yyc_memcache *c, yyc__lru_node *n) {
    bool queue_release = false;
    if (n && c->release_async) {
        queue_release = stash_list_locked(c, n, n);
        n = NULL;
    }
    unlock(c);
    if (queue_release) schedule_release(c);
    if (n) {
        callback_scope scope;
        scope_enter(&scope, c);
        release_list(c, n);
        scope_exit(&scope);
    }
}

/* --- expiry --- */

/* Whether n (found under the lock) has a time to live that has passed. */
static inline bool expired_locked(yyc_memcache *c, const yyc__lru_node *n) {
    double deadline;
    return c->expiry.live && yyc__expiry_deadline(&c->expiry, n, &deadline) &&
           ttl_now() >= deadline;
}

/* Unlinks the expired node n (under the lock), then unlocks; its value follows the release
 * policy, as a removed one's (released in a callback scope: the caller must not touch c after
 * this returns, since a release callback may have freed it). */
static __attribute__((noinline, cold)) void drop_expired_and_unlock(yyc_memcache *c,
                                                                    yyc__lru_node *n) {
    yyc__lru_map_unlink(&c->map, n);
    yyc__expiry_forget(&c->expiry, n);
    unlock_and_release(c, n);
}

/* Removes every expired entry: EXPIRE_STEP per lock acquisition, O(expired) work (expiry.h).
 * on_worker: as for trim. */
#define EXPIRE_STEP 256
static void purge_expired(yyc_memcache *c, bool on_worker) {
    for (;;) {
        yyc__lru_node *list = NULL, *tail = NULL;
        size_t taken = 0;
        bool queue_release = false;
        lock(c);
        if (c->expiry.live) {
            double now = ttl_now();
            yyc__lru_node *n;
            while (taken < EXPIRE_STEP && (n = yyc__expiry_pop_due(&c->expiry, now))) {
                yyc__lru_map_unlink(&c->map, n);
                if (tail) tail->next = n;
                else list = n;
                tail = n;
                taken++;
            }
        }
        if (list && c->release_async && !on_worker) {
            queue_release = stash_list_locked(c, list, tail);
            list = NULL;
        }
        unlock(c);
        if (queue_release) schedule_release(c);
        release_list(c, list);
        if (taken < EXPIRE_STEP) return;
    }
}

void yyc_memcache_set_default_time_to_live(yyc_memcache *c, double seconds) {
    if (!c) return;
    if (isnan(seconds)) seconds = INFINITY;
    if (seconds < 0) seconds = 0;
    lock(c);
    c->default_ttl = seconds;
    unlock(c);
}

double yyc_memcache_default_time_to_live(yyc_memcache *c) {
    if (!c) return INFINITY;
    lock(c);
    double v = c->default_ttl;
    unlock(c);
    return v;
}

int yyc_memcache_time_to_live(yyc_memcache *c, const void *key, size_t key_len,
                              double *out_seconds) {
    if (out_seconds) *out_seconds = 0;
    if (!c || !out_seconds || (!key && key_len > 0)) return YYC_EINVAL;
    lock(c);
    yyc__lru_node *n = yyc__lru_map_find(&c->map, key, key_len);
    double deadline = INFINITY, now = 0;
    if (n && c->expiry.live && yyc__expiry_deadline(&c->expiry, n, &deadline)) {
        now = ttl_now();
        if (now >= deadline) {
            drop_expired_and_unlock(c, n);
            return YYC_NOTFOUND;
        }
    }
    unlock(c);
    if (!n) return YYC_NOTFOUND;
    *out_seconds = deadline < INFINITY ? deadline - now : INFINITY;
    return YYC_OK;
}

/* Both gets (inline_mode is a constant in each caller, so each gets its own copy). Pointer
 * mode stores a retained reference in *(void **)out; inline mode copies the value to out. */
static inline __attribute__((always_inline)) int
get_impl(yyc_memcache *c, const void *key, size_t key_len, void *out, bool inline_mode) {
    lock(c);
    yyc__lru_node *n = yyc__lru_map_find(&c->map, key, key_len);
    if (!n) {
        unlock(c);
        return YYC_NOTFOUND;
    }
    if (__builtin_expect(c->expiry.live != 0, 0) && expired_locked(c, n)) {
        drop_expired_and_unlock(c, n);
        return YYC_NOTFOUND;
    }
    void *v = n->value;
    /* Start the loads of the value object (retained below; without callbacks the value may
     * not be a pointer at all) and of the neighbours (relinked by the move) together: on a large
     * cache each is a likely cache miss, and this way they overlap. */
    if (!inline_mode && v && c->cb.retain) __builtin_prefetch(v, 1);
    if (c->map.policy == YYC__POLICY_LRU) { /* only LRU relinks on a hit */
        if (yyc__lru_node_prev(n)) __builtin_prefetch(yyc__lru_node_prev(n), 1);
        if (n->next) __builtin_prefetch(n->next, 1);
    }
    /* Copied or retained under the lock: a concurrent set cannot destroy or release the value
     * first (YYCache PR #153). An object is retained last, after the move, so that its prefetch
     * has had time to land. */
    if (inline_mode) {
        const void *slot = yyc__lru_node_value(n, c->value_size, c->value_align);
        if (c->itype.copy) c->itype.copy(c->itype.ctx, out, slot);
        else memcpy(out, slot, c->value_size);
    }
    n->time = clock_now();
    yyc__lru_map_touch(&c->map, n);
    if (!inline_mode && v && c->cb.retain) v = c->cb.retain(c->cb.ctx, v);
    unlock(c);
    if (!inline_mode) *(void **)out = v;
    return YYC_OK;
}

int yyc_memcache_get(yyc_memcache *c, const void *key, size_t key_len, void **out_value) {
    if (out_value) *out_value = NULL;
    if (!c || !out_value || (!key && key_len > 0) || c->inline_values) return YYC_EINVAL;
    return get_impl(c, key, key_len, out_value, false);
}

int yyc_memcache_get_inline(yyc_memcache *c, const void *key, size_t key_len, void *out_value) {
    if (!c || !out_value || (!key && key_len > 0) || !c->inline_values) return YYC_EINVAL;
    return get_impl(c, key, key_len, out_value, true);
}

bool yyc_memcache_contains(yyc_memcache *c, const void *key, size_t key_len) {
    if (!c || (!key && key_len > 0)) return false;
    lock(c);
    yyc__lru_node *n = yyc__lru_map_find(&c->map, key, key_len);
    if (n && expired_locked(c, n)) {
        drop_expired_and_unlock(c, n);
        return false;
    }
    unlock(c);
    return n != NULL;
}

/* Both removes: with if_generation, only if key's generation is still *if_generation. */
static int remove_impl(yyc_memcache *c, const void *key, size_t key_len,
                       const uint64_t *if_generation) {
    if (!c || (!key && key_len > 0)) return YYC_EINVAL;
    lock(c);
    if (if_generation && !generation_is_locked(c, key, key_len, *if_generation)) {
        unlock(c);
        return YYC_OK;
    }
    bump_generation_locked(c, key, key_len);
    yyc__lru_node *n = yyc__lru_map_unlink_key(&c->map, key, key_len);
    if (n && c->expiry.live) yyc__expiry_forget(&c->expiry, n);
    unlock_and_release(c, n);
    return YYC_OK;
}

int yyc_memcache_remove(yyc_memcache *c, const void *key, size_t key_len) {
    return remove_impl(c, key, key_len, NULL);
}

int yyc_memcache_remove_if_generation(yyc_memcache *c, const void *key, size_t key_len,
                                      uint64_t generation) {
    return remove_impl(c, key, key_len, &generation);
}

/* Detaches every entry in O(1). With async release the list joins the garbage (*out_list is
 * NULL); otherwise the caller releases *out_list after unlocking. The old bucket array is
 * returned in *out_table for the caller to free after unlocking. Returns whether the release
 * job must be scheduled. */
static bool detach_all_locked(yyc_memcache *c, bool async, yyc__lru_node **out_list,
                              void **out_table) {
    yyc__assert_held(&c->lock);
    yyc__lru_node *tail = c->map.tail;
    yyc__lru_node *list = yyc__lru_map_detach_all(&c->map, out_table);
    yyc__expiry_clear(&c->expiry);
    *out_list = NULL;
    if (async) return stash_list_locked(c, list, tail);
    *out_list = list;
    return false;
}

void yyc_memcache_remove_all(yyc_memcache *c) {
    if (!c) return;
    yyc__lru_node *list;
    void *table;
    lock(c);
    c->generation_epoch++; /* a write on every key (memory_cache.h) */
    bool queue_release = detach_all_locked(c, c->release_async, &list, &table);
    unlock(c);
    free(table);
    if (queue_release) schedule_release(c);
    if (list) {
        callback_scope scope;
        scope_enter(&scope, c);
        release_list(c, list);
        scope_exit(&scope);
    }
}

/* --- totals and limits --- */

size_t yyc_memcache_total_count(yyc_memcache *c) {
    if (!c) return 0;
    lock(c);
    size_t n = yyc__lru_map_count(&c->map);
    unlock(c);
    return n;
}

size_t yyc_memcache_total_cost(yyc_memcache *c) {
    if (!c) return 0;
    lock(c);
    size_t n = yyc__lru_map_total_cost(&c->map);
    unlock(c);
    return n;
}

#define ACCESSORS(name, type, field, null_value)                                             \
    void yyc_memcache_set_##name(yyc_memcache *c, type v) {                                  \
        if (!c) return;                                                                      \
        lock(c);                                                                             \
        c->field = v;                                                                        \
        unlock(c);                                                                           \
    }                                                                                        \
    type yyc_memcache_##name(yyc_memcache *c) {                                              \
        if (!c) return null_value;                                                           \
        lock(c);                                                                             \
        type v = c->field;                                                                   \
        unlock(c);                                                                           \
        return v;                                                                            \
    }

ACCESSORS(count_limit, size_t, count_limit, SIZE_MAX)
ACCESSORS(cost_limit, size_t, cost_limit, SIZE_MAX)
ACCESSORS(age_limit, double, age_limit, DBL_MAX)
ACCESSORS(release_asynchronously, bool, release_async, true)
ACCESSORS(remove_all_on_memory_warning, bool, remove_all_on_memory_warning, true)
ACCESSORS(remove_all_on_enter_background, bool, remove_all_on_enter_background, true)

#undef ACCESSORS

void yyc_memcache_set_auto_trim_interval(yyc_memcache *c, double seconds) {
    if (!c) return;
    lock(c);
    c->auto_trim_interval = seconds;
    /* Under our lock so the timer's interval always matches the stored one. Lock order:
     * cache, then worker (the worker never takes a cache lock while holding its own). */
    yyc__timer_set_interval(c->timer, seconds);
    unlock(c);
}

double yyc_memcache_auto_trim_interval(yyc_memcache *c) {
    if (!c) return 5.0;
    lock(c);
    double v = c->auto_trim_interval;
    unlock(c);
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
        lock(c);
        return true;
    }
    return try_lock(c);
}

/* YYMemoryCache's trim (spec 3.4): a zero limit removes everything; otherwise evict the tail,
 * one node per lock acquisition (on a caller's thread sleeping 10 ms when the lock is
 * contended, see lock_for_trim). on_worker: called from the worker (auto-trim, deferred cost
 * trim), so evicted values are released right here; otherwise they follow the release policy.
 * The caller runs it inside a callback scope of c. */
static void trim(yyc_memcache *c, trim_kind kind, size_t limit, double age, bool on_worker) {
    double now = kind == TRIM_AGE ? clock_now() : 0.0;
    bool zero = kind == TRIM_AGE ? age <= 0 : limit == 0;
    bool queue_release = false;
    yyc__lru_node *list = NULL, *tail = NULL;

    if (!zero) purge_expired(c, on_worker); /* every trim, also one within its limit */
    lock(c);
    bool async = c->release_async && !on_worker;
    if (zero) {
        void *table;
        queue_release = detach_all_locked(c, async, &list, &table);
        unlock(c);
        free(table);
        if (queue_release) schedule_release(c);
        release_list(c, list);
        return;
    }
    bool over = over_limit_locked(c, kind, limit, age, now);
    bool scan = kind == TRIM_AGE && c->map.policy != YYC__POLICY_LRU;
    unlock(c);
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
                if (n && c->expiry.live) yyc__expiry_forget(&c->expiry, n);
                if (tail) tail->next = n;
                else list = n;
                tail = n;
            } else {
                async = c->release_async && !on_worker;
                if (async) {
                    queue_release = stash_list_locked(c, list, tail);
                    list = NULL;
                }
            }
            unlock(c);
            if (finished) break;
        } else {
            nanosleep(&pause, NULL);
        }
    }
    if (queue_release) schedule_release(c);
    release_list(c, list);
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
            bool finished = yyc__lru_map_expire_step(&c->map, begin, now, age, AGE_SCAN_STEP,
                                                     &list, &tail);
            begin = false;
            if (c->expiry.live)
                for (yyc__lru_node *n = before ? before->next : list; n; n = n->next)
                    yyc__expiry_forget(&c->expiry, n);
            if (finished && c->release_async && !on_worker) {
                queue_release = stash_list_locked(c, list, tail);
                list = NULL;
            }
            unlock(c);
            if (finished) break;
        } else {
            nanosleep(&pause, NULL);
        }
    }
    if (queue_release) schedule_release(c);
    release_list(c, list);
}

/* A trim from a public call: on the caller's thread, in a callback scope. */
static void trim_in_scope(yyc_memcache *c, trim_kind kind, size_t limit, double age) {
    callback_scope scope;
    scope_enter(&scope, c);
    trim(c, kind, limit, age, false);
    scope_exit(&scope);
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
static void cost_trim_job(void *arg) {
    yyc_memcache *c = arg;
    callback_scope scope;
    scope_enter(&scope, c);
    lock(c);
    c->cost_trim_pending = false;
    size_t limit = c->cost_limit;
    unlock(c);
    trim(c, TRIM_COST, limit, 0.0, true);
    scope_exit(&scope);
}

/* The auto-trim timer (runs on the worker): cost, count, then age, as YYMemoryCache does. */
static void auto_trim_fire(void *arg) {
    yyc_memcache *c = arg;
#ifdef YYC_TESTING
    atomic_fetch_add(&c->auto_trim_fires, 1);
#endif
    callback_scope scope;
    scope_enter(&scope, c);
    purge_expired(c, true);
    lock(c);
    size_t cost = c->cost_limit, count = c->count_limit;
    double age = c->age_limit;
    unlock(c);
    /* "No limit" values never trim: skip them without taking the lock again. */
    if (cost != SIZE_MAX) trim(c, TRIM_COST, cost, 0.0, true);
    if (count != SIZE_MAX) trim(c, TRIM_COUNT, count, 0.0, true);
    if (!(age >= DBL_MAX) && !isnan(age)) trim(c, TRIM_AGE, 0, age, true);
    scope_exit(&scope);
}

/* --- eviction policy --- */

int yyc_memcache_set_policy(yyc_memcache *c, yyc_eviction_policy policy) {
    if (!c || (policy != YYC_EVICT_LRU && policy != YYC_EVICT_SIEVE && policy != YYC_EVICT_S3FIFO))
        return YYC_EINVAL;
    lock(c);
    int rc = YYC_OK;
    if (yyc__lru_map_count(&c->map) != 0) rc = YYC_EINVAL; /* in use: too late */
    else yyc__lru_map_set_policy(&c->map, (yyc__policy)policy);
    unlock(c);
    return rc;
}

yyc_eviction_policy yyc_memcache_policy(yyc_memcache *c) {
    if (!c) return YYC_EVICT_LRU;
    lock(c);
    yyc_eviction_policy p = (yyc_eviction_policy)c->map.policy;
    unlock(c);
    return p;
}

/* --- events --- */

void yyc_memcache_set_memory_warning_handler(yyc_memcache *c, yyc_memcache_event_fn fn,
                                             void *ctx) {
    if (!c) return;
    lock(c);
    c->memory_warning_fn = fn;
    c->memory_warning_ctx = ctx;
    unlock(c);
}

void yyc_memcache_set_enter_background_handler(yyc_memcache *c, yyc_memcache_event_fn fn,
                                               void *ctx) {
    if (!c) return;
    lock(c);
    c->enter_background_fn = fn;
    c->enter_background_ctx = ctx;
    unlock(c);
}

void yyc_memcache_handle_memory_warning(yyc_memcache *c) {
    if (!c) return;
    callback_scope scope; /* the handler or a release may free the cache */
    scope_enter(&scope, c);
    lock(c);
    yyc_memcache_event_fn fn = c->memory_warning_fn;
    void *ctx = c->memory_warning_ctx;
    unlock(c);
    if (fn) fn(c, ctx);
    lock(c);
    /* Read after the handler ran: it may have changed the flag. */
    bool remove_all = c->remove_all_on_memory_warning;
    unlock(c);
    if (remove_all) yyc_memcache_remove_all(c);
    scope_exit(&scope);
}

void yyc_memcache_handle_enter_background(yyc_memcache *c) {
    if (!c) return;
    callback_scope scope; /* the handler or a release may free the cache */
    scope_enter(&scope, c);
    lock(c);
    yyc_memcache_event_fn fn = c->enter_background_fn;
    void *ctx = c->enter_background_ctx;
    unlock(c);
    if (fn) fn(c, ctx);
    lock(c);
    bool remove_all = c->remove_all_on_enter_background;
    unlock(c);
    if (remove_all) yyc_memcache_remove_all(c);
    scope_exit(&scope);
}

/* --- test hooks --- */

#ifdef YYC_TESTING
/* Checks the map's invariants under the cache's lock. */
bool yyc__memcache_check(yyc_memcache *c) {
    lock(c);
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
    unlock(c);
    return ok;
}

/* How many times the auto-trim timer has fired. */
unsigned yyc__memcache_auto_trim_fires(yyc_memcache *c) { return atomic_load(&c->auto_trim_fires); }
#endif
