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
 * Removal causes: a detached node's prev link (garbage after unlinking) holds why it left (a
 * yyc_removal_cause, with no pointer bits); in a chain from detach_all only the head carries one,
 * and the nodes after it (whose prev links still point to a node) share it. release_list reads
 * them to report each entry to the removal listener right before its value is released.
 * A replacement reported to a listener travels as a detached copy of the node (key and old
 * value), so that the event can carry the key.
 *
 * Callbacks may free the cache (a value holding the last reference to the cache's owner). Every
 * stretch of code that runs callbacks and may touch the cache after them is a "callback scope"
 * (a frame in a thread-local chain): yyc_memcache_free called inside one only marks the
 * outermost scope of that cache on this thread, which frees the cache when it ends.
 */
#include "memory/expiry.h"
#include "platform/internal.h"
#include "memory/lru_map.h"
#include "memory/memory_pressure.h"

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
 *     whose deadline has passed (ttl_now() >= deadline): it is unlinked on that read.
 *   - Removal causes: every node that leaves the map is tagged with its cause (set_cause) and
 *     counted in stats.removals in the same critical section; listening == (removal_fn != NULL).
 *   - stats counts what memory_cache.h says, only under the lock.
 *   - flights lists the loads under way (begin_load .. finish_load), at most one per key. */
struct yyc_memcache {
    pthread_mutex_t lock;
    /* memory_cache.h "Statistics". Next to the lock: the calls that count take it anyway, so the
     * hot counters (hits, misses, insertions) share its cache lines instead of adding one. */
    yyc_cache_statistics stats;
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
    yyc__expiry expiry; /* deadlines of the entries with a time to live (expiry.h) */
    double default_ttl; /* seconds given to sets without their own; INFINITY: none */
    yyc_memcache_removal_fn removal_fn; /* the removal listener, or NULL */
    void *removal_ctx;
    atomic_bool listening;               /* removal_fn != NULL, readable without the lock */
    struct yyc_memcache_flight *flights; /* loads under way (begin_load) */
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
static void purge_expired(yyc_memcache *c, bool on_worker);

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

/* Tags a node that has just left the map with its removal cause and counts it (under lock;
 * see the top of the file). */
static inline void set_cause_locked(yyc_memcache *c, yyc__lru_node *n, yyc_removal_cause cause) {
    yyc__assert_held(&c->lock);
    n->prev_bits = (uintptr_t)cause;
    c->stats.removals[cause]++;
}

/* Releases every value of a detached list (chained through next) and frees the nodes; with a
 * removal listener, reports each entry with its cause first. */
static void release_list(yyc_memcache *c, yyc__lru_node *list) {
    yyc_memcache_removal_fn fn = NULL;
    void *ctx = NULL;
    if (list && atomic_load_explicit(&c->listening, memory_order_relaxed)) {
        lock(c);
        fn = c->removal_fn;
        ctx = c->removal_ctx;
        unlock(c);
    }
    yyc_removal_cause cause = YYC_REMOVED_EXPLICIT;
    while (list) {
        yyc__lru_node *next = list->next;
        if ((list->prev_bits & ~YYC__NODE_BITS) == 0) cause = (yyc_removal_cause)list->prev_bits;
        void *slot = node_slot(c, list);
        if (fn) {
            void *value = slot;
            if (!c->inline_values) memcpy(&value, slot, sizeof value);
            fn(ctx, list->key, list->key_len, value, cause);
        }
        drop_slot(c, slot);
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
    if (already) return;            /* the thread freeing c waits for this thread's job to end */
    yyc__memory_pressure_forget(c); /* first: waits for the pressure watcher's handling of c */
    yyc_memcache_set_removal_listener(c, NULL, NULL); /* a free reports nothing */
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
    if (evicted) {
        if (c->expiry.live) yyc__expiry_forget(&c->expiry, evicted);
        set_cause_locked(c, evicted, YYC_REMOVED_EVICTED);
    }
    /* With a removal listener the replaced value leaves in a copy of the node (with the key). */
    yyc__lru_node *replaced = NULL;
    if (n && !inserted && c->removal_fn && !(replaced = yyc__lru_map_copy_node(&c->map, n)))
        n = NULL; /* out of memory: nothing replaced (an evicted entry is still released) */
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
    c->stats.insertions++;
    if (replaced) {
        set_cause_locked(c, replaced, YYC_REMOVED_REPLACED);
    } else if (!inserted) {
        c->stats.removals[YYC_REMOVED_REPLACED]++;
    }
    /* A replaced value is kept in `old` for its release, unless it lives on in `replaced`. */
    if (inline_mode) {
        void *slot = yyc__lru_node_value(n, c->value_size, c->value_align);
        /* Without a destroy callback a replaced value needs nothing: just overwrite it. */
        if (!inserted && !replaced && c->itype.destroy) {
            memcpy(old, slot, c->value_size);
            have_old = true;
        }
        memcpy(slot, bytes, c->value_size);
    } else {
        if (!inserted && !replaced && n->value) {
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
        if (evicted) {
            if (c->expiry.live) yyc__expiry_forget(&c->expiry, evicted);
            set_cause_locked(c, evicted, YYC_REMOVED_EVICTED);
        }
    }
    yyc__lru_node *evicted_tail = evicted;
    if (replaced) { /* one chain to release, each node tagged with its own cause */
        replaced->next = evicted;
        evicted = replaced;
        if (!evicted_tail) evicted_tail = replaced;
    }
    if (c->release_async) {
        if (have_old) {
            int s = stash_slot_locked(c, old);
            if (s >= 0) have_old = false; /* else dropped inline below */
            queue_release |= (s == 1);
        }
        if (evicted) {
            queue_release |= stash_list_locked(c, evicted, evicted_tail);
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

int yyc_memcache_set_if_generation(yyc_memcache *c, const void *key, size_t key_len, void *value,
                                   size_t cost, uint64_t generation, bool *out_stored) {
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

int yyc_memcache_set_inline_if_generation_with_ttl(yyc_memcache *c, const void *key, size_t key_len,
                                                   const void *value, size_t cost,
                                                   uint64_t generation, double ttl_seconds,
                                                   bool *out_stored) {
    if (out_stored) *out_stored = false;
    if (!c || (!key && key_len > 0) || !value || !c->inline_values || !valid_ttl(ttl_seconds))
        return YYC_EINVAL;
    return set_impl(c, key, key_len, NULL, value, cost, true, &generation, out_stored, ttl_seconds);
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

/* Whether n has a deadline at or before now (under lock). */
static bool expired_at_locked(yyc_memcache *c, const yyc__lru_node *n, double now) {
    yyc__assert_held(&c->lock);
    double deadline;
    return c->expiry.live && yyc__expiry_deadline(&c->expiry, n, &deadline) && now >= deadline;
}

/* Unlinks the expired node n (under the lock), then unlocks; its value follows the release
 * policy, as a removed one's (released in a callback scope: the caller must not touch c after
 * this returns, since a release callback may have freed it). */
static __attribute__((noinline, cold)) void drop_expired_and_unlock(yyc_memcache *c,
                                                                    yyc__lru_node *n) {
    yyc__lru_map_unlink(&c->map, n);
    yyc__expiry_forget(&c->expiry, n);
    set_cause_locked(c, n, YYC_REMOVED_EXPIRED);
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
                set_cause_locked(c, n, YYC_REMOVED_EXPIRED);
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
        c->stats.misses++;
        unlock(c);
        return YYC_NOTFOUND;
    }
    if (__builtin_expect(c->expiry.live != 0, 0) && expired_locked(c, n)) {
        c->stats.misses++;
        drop_expired_and_unlock(c, n);
        return YYC_NOTFOUND;
    }
    c->stats.hits++;
    void *v = n->value;
    /* Start the loads of the value object (retained below; without callbacks the value may
     * not be a pointer at all) and of the neighbours (relinked by the move) together: on a large
     * cache each is a likely cache miss, and this way they overlap. */
    if (!inline_mode && v && c->cb.retain) __builtin_prefetch(v, 1);
    /* One policy test on the hit path: only LRU relinks (and prefetches the neighbours). */
    const yyc__policy policy = c->map.policy;
    const bool lru = policy == YYC__POLICY_LRU;
    if (lru) { /* an LRU node has no policy bits in prev_bits */
        if (n->prev_bits) __builtin_prefetch((void *)n->prev_bits, 1);
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
    if (lru) yyc__lru_map_move_to_head(&c->map, n); /* the default policy first */
    else yyc__lru_map_touch_as(&c->map, n, policy);
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
    if (n) {
        if (c->expiry.live) yyc__expiry_forget(&c->expiry, n);
        set_cause_locked(c, n, YYC_REMOVED_EXPLICIT);
    }
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
static bool detach_all_locked(yyc_memcache *c, bool async, yyc_removal_cause cause,
                              yyc__lru_node **out_list, void **out_table) {
    yyc__assert_held(&c->lock);
    yyc__lru_node *tail = c->map.tail;
    size_t count = yyc__lru_map_count(&c->map);
    yyc__lru_node *list = yyc__lru_map_detach_all(&c->map, out_table);
    yyc__expiry_clear(&c->expiry);
    if (list) { /* the head carries the chain's cause (see the top of the file) */
        set_cause_locked(c, list, cause);
        c->stats.removals[cause] += count - 1;
    }
    *out_list = NULL;
    if (async) return stash_list_locked(c, list, tail);
    *out_list = list;
    return false;
}

/* remove_all, reporting every entry with cause. */
static void remove_all_because(yyc_memcache *c, yyc_removal_cause cause) {
    yyc__lru_node *list;
    void *table;
    lock(c);
    c->generation_epoch++; /* a write on every key (memory_cache.h) */
    bool queue_release = detach_all_locked(c, c->release_async, cause, &list, &table);
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

void yyc_memcache_remove_all(yyc_memcache *c) {
    if (!c) return;
    remove_all_because(c, YYC_REMOVED_EXPLICIT);
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

#define ACCESSORS(name, type, field, null_value)            \
    void yyc_memcache_set_##name(yyc_memcache *c, type v) { \
        if (!c) return;                                     \
        lock(c);                                            \
        c->field = v;                                       \
        unlock(c);                                          \
    }                                                       \
    type yyc_memcache_##name(yyc_memcache *c) {             \
        if (!c) return null_value;                          \
        lock(c);                                            \
        type v = c->field;                                  \
        unlock(c);                                          \
        return v;                                           \
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

    purge_expired(c, on_worker); /* every trim, also one within its limit or to zero */
    lock(c);
    bool async = c->release_async && !on_worker;
    if (zero) {
        void *table;
        yyc_removal_cause cause = kind == TRIM_AGE ? YYC_REMOVED_EXPIRED : YYC_REMOVED_EVICTED;
        queue_release = detach_all_locked(c, async, cause, &list, &table);
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
                if (n) {
                    if (c->expiry.live) yyc__expiry_forget(&c->expiry, n);
                    set_cause_locked(c, n,
                                     kind == TRIM_AGE ? YYC_REMOVED_EXPIRED : YYC_REMOVED_EVICTED);
                }
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
            bool finished =
                yyc__lru_map_expire_step(&c->map, begin, now, age, AGE_SCAN_STEP, &list, &tail);
            begin = false;
            for (yyc__lru_node *n = before ? before->next : list; n; n = n->next) {
                if (c->expiry.live) yyc__expiry_forget(&c->expiry, n);
                set_cause_locked(c, n, YYC_REMOVED_EXPIRED);
            }
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
    if (!c || (policy != YYC_EVICT_LRU && policy != YYC_EVICT_SIEVE && policy != YYC_EVICT_S3FIFO &&
               policy != YYC_EVICT_TINYLFU))
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
    if (remove_all) remove_all_because(c, YYC_REMOVED_MEMORY_PRESSURE);
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
    if (remove_all) remove_all_because(c, YYC_REMOVED_MEMORY_PRESSURE);
    scope_exit(&scope);
}

/* --- removal events --- */

void yyc_memcache_set_removal_listener(yyc_memcache *c, yyc_memcache_removal_fn fn, void *ctx) {
    if (!c) return;
    lock(c);
    c->removal_fn = fn;
    c->removal_ctx = ctx;
    atomic_store_explicit(&c->listening, fn != NULL, memory_order_relaxed);
    unlock(c);
}

/* --- statistics --- */

int yyc_memcache_statistics(yyc_memcache *c, yyc_cache_statistics *out) {
    if (!c || !out) return YYC_EINVAL;
    lock(c);
    *out = c->stats;
    unlock(c);
    return YYC_OK;
}

void yyc_memcache_reset_statistics(yyc_memcache *c) {
    if (!c) return;
    lock(c);
    memset(&c->stats, 0, sizeof c->stats);
    unlock(c);
}

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

/* Copies a stored value out for a caller (under lock): a retained reference in *(void **)dst
 * (pointer caches) or the bytes copied with the type's copy callback (inline caches). */
static void copy_out_locked(yyc_memcache *c, void *dst, const void *src_slot) {
    yyc__assert_held(&c->lock);
    if (c->inline_values) {
        if (c->itype.copy) c->itype.copy(c->itype.ctx, dst, src_slot);
        else memcpy(dst, src_slot, c->value_size);
    } else {
        void *v;
        memcpy(&v, src_slot, sizeof v);
        *(void **)dst = (v && c->cb.retain) ? c->cb.retain(c->cb.ctx, v) : v;
    }
}

int yyc_memcache_begin_load(yyc_memcache *c, const void *key, size_t key_len, void *out_value,
                            yyc_memcache_loaded_fn done, void *done_ctx, bool blocking,
                            yyc_memcache_flight **out_flight) {
    if (out_flight) *out_flight = NULL;
    if (!c || !out_value || !out_flight || !done || (!key && key_len > 0)) return YYC_EINVAL;
    if (key_len > UINT32_MAX) return YYC_ETOOBIG;
    if (!c->inline_values) *(void **)out_value = NULL;
    yyc__lru_node *expired = NULL;
    lock(c);
    yyc__lru_node *n = yyc__lru_map_find(&c->map, key, key_len);
    if (n && c->expiry.live && expired_locked(c, n)) { /* reported expired; then a miss */
        yyc__lru_map_unlink(&c->map, n);
        yyc__expiry_forget(&c->expiry, n);
        set_cause_locked(c, n, YYC_REMOVED_EXPIRED);
        expired = n;
        n = NULL;
    }
    int rc;
    if (n) {
        c->stats.hits++;
        copy_out_locked(c, out_value, node_slot(c, n));
        n->time = clock_now();
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
    unlock_and_release(c, expired);
    return rc;
}

/* The end of every load: takes the flight out (under the lock), counts the load, and hands the
 * result to each waiter (value borrowed for the calls), with no lock held. */
static void complete_flight(yyc_memcache *c, struct yyc_memcache_flight *f, int status, void *value,
                            void *error, uint64_t load_ns) {
    lock(c);
    struct yyc_memcache_flight **p = &c->flights;
    while (*p != f) p = &(*p)->next;
    *p = f->next;
    load_waiter *w = f->waiters;
    if (status == YYC_OK) c->stats.loads++;
    else c->stats.load_failures++;
    c->stats.total_load_time_ns += load_ns;
    unlock(c);
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
        rc = set_impl(c, flight->key, flight->key_len, value, NULL, cost, false, NULL, NULL, NAN);
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
    int rc = set_impl(c, flight->key, flight->key_len, NULL, value, cost, true, NULL, NULL, NAN);
    complete_flight(c, flight, status, copy, error, load_ns);
    callback_scope scope;
    scope_enter(&scope, c);
    drop_slot(c, copy);
    if (rc != YYC_OK) drop_slot(c, (void *)value); /* not taken by the store: ours to destroy */
    scope_exit(&scope);
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
    lock(c);
    if (status == YYC_OK) copy_out_locked(c, w->out_value, c->inline_values ? value : &value);
    w->status = status;
    w->done = true;
    pthread_cond_signal(&w->cond);
    unlock(c); /* w may be gone from here on */
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
        lock(c);
        while (!w.done) pthread_cond_wait(&w.cond, &c->lock);
        unlock(c);
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

/* --- keys --- */

/* Both copies: a key array (values NULL) or an entry array with retained values. */
static int copy_keys_impl(yyc_memcache *c, bool with_values, void **out, size_t *out_count) {
    callback_scope scope;
    scope_enter(&scope, c);
    purge_expired(c, false); /* removed, and reported, as by a trim */
    lock(c);
    double now = c->expiry.live ? ttl_now() : 0; /* one clock reading for both passes */
    size_t count = 0, bytes = 0;
    for (yyc__lru_node *n = c->map.head; n; n = n->next) {
        if (expired_at_locked(c, n, now)) continue; /* expired since the purge */
        count++;
        bytes += n->key_len;
    }
    int rc = YYC_OK;
    size_t item = with_values ? sizeof(yyc_memcache_entry) : sizeof(yyc_memcache_key);
    if (count) {
        unsigned char *array =
            count <= (SIZE_MAX - bytes) / item ? malloc(count * item + bytes) : NULL;
        if (array) {
            unsigned char *at = array + count * item;
            size_t i = 0;
            for (yyc__lru_node *n = c->map.head; n && i < count; n = n->next) {
                if (expired_at_locked(c, n, now)) continue;
                if (n->key_len) memcpy(at, n->key, n->key_len);
                if (with_values) {
                    yyc_memcache_entry *e = (yyc_memcache_entry *)array + i;
                    *e = (yyc_memcache_entry){.key = at, .key_len = n->key_len};
                    copy_out_locked(c, &e->value, &n->value);
                } else {
                    yyc_memcache_key *k = (yyc_memcache_key *)array + i;
                    *k = (yyc_memcache_key){.bytes = at, .len = n->key_len};
                }
                i++;
                at += n->key_len;
            }
            *out = array;
            *out_count = count;
        } else {
            rc = YYC_ENOMEM;
        }
    }
    unlock(c);
    scope_exit(&scope);
    return rc;
}

int yyc_memcache_copy_keys(yyc_memcache *c, yyc_memcache_key **out_keys, size_t *out_count) {
    if (out_keys) *out_keys = NULL;
    if (out_count) *out_count = 0;
    if (!c || !out_keys || !out_count) return YYC_EINVAL;
    void *array = NULL;
    int rc = copy_keys_impl(c, false, &array, out_count);
    *out_keys = array;
    return rc;
}

int yyc_memcache_copy_entries(yyc_memcache *c, yyc_memcache_entry **out_entries,
                              size_t *out_count) {
    if (out_entries) *out_entries = NULL;
    if (out_count) *out_count = 0;
    if (!c || !out_entries || !out_count || c->inline_values) return YYC_EINVAL;
    void *array = NULL;
    int rc = copy_keys_impl(c, true, &array, out_count);
    *out_entries = array;
    return rc;
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
