/*
 * memory_cache_internal.h - what the memory cache's files share (private; not API): the cache's
 * struct with its invariants, and the helpers more than one file uses. The files:
 *   memory_cache.c          creation, free (and the callback scopes that defer it), policy,
 *                           events, memory pressure, removal listener, statistics, test hooks;
 *   memory_cache_release.c  releasing removed values: after unlocking, or on the worker;
 *   memory_cache_entries.c  write generations, set, get, contains, remove, remove_all;
 *   memory_cache_expiry.c   time to live: expired entries' removal, the default time to live;
 *   memory_cache_trims.c    totals, limits, trims and the auto-trim;
 *   memory_cache_loading.c  loads with single flight (begin/finish_load, get_or_load);
 *   memory_cache_keys.c     copying the keys and entries out.
 *
 * YYMemoryCache in C: a thread-safe in-memory cache over lru_map (LRU by default; SIEVE,
 * S3-FIFO and TinyLFU by yyc_memcache_set_policy).
 *
 * One mutex per cache guards everything in the struct. User code (release/destroy callbacks, event
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
 * yyc_removal_cause, with no pointer bits); in a chain from yyc__mc_detach_all_locked only the
 * head carries one, and the nodes after it (whose prev links still point to a node) share it.
 * yyc__mc_release_list reads them to report each entry to the removal listener right before its
 * value is released. A replacement reported to a listener travels as a detached copy of the node
 * (key and old value), so that the event can carry the key.
 *
 * Callbacks may free the cache (a value holding the last reference to the cache's owner). Every
 * stretch of code that runs callbacks and may touch the cache after them is a "callback scope"
 * (a frame in a thread-local chain): yyc_memcache_free called inside one only marks the
 * outermost scope of that cache on this thread, which frees the cache when it ends.
 */
#ifndef YYCACHE_MEMORY_CACHE_INTERNAL_H
#define YYCACHE_MEMORY_CACHE_INTERNAL_H

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

/* Seconds a release job waits before it runs, gathering what is removed meanwhile (see
 * yyc__mc_schedule_release). */
#define YYC__MC_RELEASE_DELAY 0.001

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
 *     whose deadline has passed (yyc__mc_ttl_now() >= deadline): it is unlinked on that read.
 *   - Removal causes: every node that leaves the map is tagged with its cause (set_cause) and
 *     counted in stats.removals in the same critical section; listening == (removal_fn != NULL).
 *   - stats counts what memory_cache.h says, only under the lock.
 *   - flights lists the loads under way (begin_load .. finish_load), at most one per key.
 *   - Shared reads (memory_cache_reads.c): shared_reads is true iff stripes is allocated and the
 *     policy is SIEVE, S3-FIFO or TinyLFU; it changes only under the lock while shared readers
 *     are excluded. While a thread holds the lock with shared_reads set, excluding is true,
 *     `writer` is set and no shared reader is inside (every stripe's readers count was seen at
 *     0 after `writer` was set); each TinyLFU hit buffered by a shared reader has been applied
 *     (the buffers are drained when the lock is taken), so a buffered node is always in the
 *     map. stats.hits and stats.misses do not include the stripes' counters (summed on read). */
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
    bool freeing;                 /* yyc__mc_free_now has started (on some thread) */
    yyc_memcache_free_fn free_fn; /* called once the cache is gone (set_free_handler) */
    void *free_ctx;
    yyc__expiry expiry; /* deadlines of the entries with a time to live (expiry.h) */
    double default_ttl; /* seconds given to sets without their own; INFINITY: none */
    yyc_memcache_removal_fn removal_fn; /* the removal listener, or NULL */
    void *removal_ctx;
    atomic_bool listening;               /* removal_fn != NULL, readable without the lock */
    struct yyc_memcache_flight *flights; /* loads under way (begin_load) */
    /* Shared reads (memory_cache_reads.c). */
    atomic_bool shared_reads;       /* gets of this policy may take the shared path */
    atomic_bool writer;             /* the lock's holder excludes shared readers */
    bool excluding;                 /* under lock: this holder set `writer` */
    struct yyc__mc_stripe *stripes; /* stripe_mask + 1, or NULL (LRU: never allocated) */
    unsigned stripe_mask;           /* stripes - 1 (a power of two); fixed once allocated */
#ifdef YYC_TESTING
    atomic_uint auto_trim_fires;
#endif
};

/* Largest slot (pointer or inline value), for a replaced value kept on the stack. */
#define SLOT_MAX \
    (YYC_MEMCACHE_INLINE_MAX > sizeof(void *) ? YYC_MEMCACHE_INLINE_MAX : sizeof(void *))

/* --- time --- */

/* Entry times and trim ages. CLOCK_MONOTONIC_COARSE is CLOCK_MONOTONIC as of the last kernel
 * tick (1-10 ms resolution, never ahead of CLOCK_MONOTONIC): ~3 ns a read instead of ~25 ns,
 * which was a third of a get's cost; ages are seconds, so the resolution does not matter.
 * Every entry time and age of the memory cache comes from here, so ages compare like with like. */
static inline double yyc__mc_clock_now(void) {
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
    return yyc__monotonic_now();
}

#ifdef YYC_TESTING
/* Test builds: seconds added to the deadlines' clock (yyc__mc_ttl_now; moved by tests instead of
 * sleeping; memory_cache_expiry.c). Ages (yyc__mc_clock_now) do not move: the age limit's tests
 * and fuzzing rely on real time. */
extern _Atomic double yyc__mc_testing_clock_offset;
#define YYC__MC_CLOCK_OFFSET \
    atomic_load_explicit(&yyc__mc_testing_clock_offset, memory_order_relaxed)
#else
#define YYC__MC_CLOCK_OFFSET 0.0
#endif

/* Deadlines (time to live): the fine clock, so that an entry is never returned a tick after it
 * expired. Read only for entries that have a time to live. */
static inline double yyc__mc_ttl_now(void) { return yyc__monotonic_now() + YYC__MC_CLOCK_OFFSET; }

/* --- shared reads (memory_cache_reads.c) --- */

/* A get of a SIEVE, S3-FIFO or TinyLFU cache does not take the mutex: it enters one of
 * the reader stripes (one per processor, at most YYC__MC_STRIPES; chosen by its thread's number,
 * given at its first shared get, so that concurrent threads read in different stripes; a
 * counter on its own cache line), looks
 * the key up and records its hit there - SIEVE's visited bit and S3-FIFO's frequency with relaxed
 * atomics on the node, TinyLFU's hit in the stripe's lossy buffer, applied by the next holder of
 * the lock - and leaves. The lock's holder excludes shared readers (a brlock): it sets `writer`,
 * then waits until every stripe's readers count is 0; a reader that sees `writer` after entering
 * leaves, waits a little for `writer` to clear and enters again, and after a few such waits
 * takes the mutex instead. Reads therefore never see the map change under them, and
 * a node they find stays in the map until they leave. */
#define YYC__MC_STRIPES 16u     /* the most stripes a cache has */
#define YYC__MC_READ_BUFFER 32u /* TinyLFU hits buffered per stripe */

/* A stripe's state word: the readers inside (bits 0-15), and the hits (16-39) and misses
 * (40-63) of its gets not yet folded into hits / misses. A get enters by adding 1 and leaves by
 * adding YYC__MC_HIT - 1 or YYC__MC_MISS - 1: one atomic operation counts and leaves. The lock's
 * holder folds the counts (exactly: readers change only the low bits meanwhile) once they pass
 * YYC__MC_FOLD_AT, long before a field could overflow. */
#define YYC__MC_READERS UINT64_C(0xffff)
#define YYC__MC_HIT (UINT64_C(1) << 16)
#define YYC__MC_MISS (UINT64_C(1) << 40)
#define YYC__MC_FIELD UINT64_C(0xffffff)
#ifdef YYC_TESTING /* test builds fold often, so that the tests' counts go through it */
#define YYC__MC_FOLD_AT (UINT64_C(1) << 6)
#define YYC__MC_FOLD_STEP UINT64_C(0xf)
#else
#define YYC__MC_FOLD_AT (UINT64_C(1) << 22)
#define YYC__MC_FOLD_STEP UINT64_C(0x3ffff)
#endif
/* The bits of a state word set iff its hits or its misses are >= YYC__MC_FOLD_AT (a power of
 * two): the lock's holder tests all of a stripe's counts with one AND. */
#define YYC__MC_FOLD_FIELD (YYC__MC_FIELD & ~(YYC__MC_FOLD_AT - 1))
#define YYC__MC_FOLD_BITS ((YYC__MC_FOLD_FIELD << 16) | (YYC__MC_FOLD_FIELD << 40))
_Static_assert((YYC__MC_FOLD_AT & (YYC__MC_FOLD_AT - 1)) == 0, "YYC__MC_FOLD_AT: a power of two");
_Static_assert(YYC__MC_STRIPES <= 32, "exclude_readers_locked keeps a bit per stripe");

typedef struct yyc__mc_stripe {
    _Alignas(64) atomic_uint_least64_t state; /* readers inside, unfolded hits and misses */
    atomic_size_t pending;                    /* TinyLFU: slots of buffer written (<= its size) */
    uint64_t hits, misses;                    /* folded counts (under lock) */
    _Atomic(yyc__lru_node *) buffer[YYC__MC_READ_BUFFER]; /* TinyLFU: the first pending hits */
} yyc__mc_stripe;

/* Waits until no shared reader is inside, with `writer` set, and applies the buffered TinyLFU
 * hits (under lock; shared_reads is set). */
void yyc__mc_exclude_readers_locked(yyc_memcache *c);
/* Sets the map's policy (under lock, the map empty) and whether gets may read shared. */
void yyc__mc_set_policy_locked(yyc_memcache *c, yyc__policy policy);
/* The get of a shared-read policy: YYC_OK or YYC_NOTFOUND as get, or YYC__MC_USE_LOCK when the
 * caller must take the locked path (a writer holds the lock, or the entry has expired). */
#define YYC__MC_USE_LOCK 0x7fff
int yyc__mc_shared_get(yyc_memcache *c, const void *key, size_t key_len, void *out,
                       bool inline_mode);
/* The hits and misses of shared reads, summed over the stripes; zeroed (under lock). */
void yyc__mc_shared_stats_locked(yyc_memcache *c, uint64_t *hits, uint64_t *misses);
void yyc__mc_shared_stats_reset_locked(yyc_memcache *c);

/* --- locking --- */

static inline void yyc__mc_lock(yyc_memcache *c) {
    int rc = pthread_mutex_lock(&c->lock);
    assert(rc == 0);
    (void)rc;
    yyc__lock_note_acquired(&c->lock);
    if (atomic_load_explicit(&c->shared_reads, memory_order_relaxed))
        yyc__mc_exclude_readers_locked(c);
}

/* pthread_mutex_trylock: whether the lock was taken (then unlock it). */
static inline bool yyc__mc_try_lock(yyc_memcache *c) {
    if (pthread_mutex_trylock(&c->lock) != 0) return false;
    yyc__lock_note_acquired(&c->lock);
    if (atomic_load_explicit(&c->shared_reads, memory_order_relaxed))
        yyc__mc_exclude_readers_locked(c);
    return true;
}

static inline void yyc__mc_unlock(yyc_memcache *c) {
    if (c->excluding) {
        c->excluding = false;
        atomic_store_explicit(&c->writer, false, memory_order_release);
    }
    yyc__lock_note_released(&c->lock);
    int rc = pthread_mutex_unlock(&c->lock);
    assert(rc == 0);
    (void)rc;
}

/* --- callback scopes (memory_cache.c) --- */

/* A stretch of code on this thread that runs c's callbacks and may use c after them. */
typedef struct yyc__mc_scope {
    yyc_memcache *cache;
    struct yyc__mc_scope *outer;
    bool free_at_end; /* yyc_memcache_free was called inside: free the cache when it ends */
} yyc__mc_scope;

void yyc__mc_scope_enter(yyc__mc_scope *s, yyc_memcache *c);
/* Ends the scope; frees the cache if a callback asked for it (only ever the outermost scope of
 * the cache on this thread). Nothing may touch the cache after this. */
void yyc__mc_scope_exit(yyc__mc_scope *s);

/* --- values and removals --- */

/* The slot of n's value (see the top of the file). */
static inline void *yyc__mc_node_slot(const yyc_memcache *c, yyc__lru_node *n) {
    if (c->inline_values) return yyc__lru_node_value(n, c->value_size, c->value_align);
    return &n->value;
}

/* Copies an inline value's size bytes (a get's copy out, a set's copy in). The common small
 * sizes are copied inline: memcpy with a size known only at run time is a library call, a
 * twentieth of an inline get's instructions. */
static inline void yyc__mc_copy_bytes(void *dst, const void *src, size_t size) {
    switch (size) {
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    case 16: memcpy(dst, src, 16); break;
    default: memcpy(dst, src, size); break;
    }
}

/* Tags a node that has just left the map with its removal cause and counts it (under lock;
 * see the top of the file). */
static inline void yyc__mc_set_cause_locked(yyc_memcache *c, yyc__lru_node *n,
                                            yyc_removal_cause cause) {
    yyc__assert_held(&c->lock);
    n->prev_bits = (uintptr_t)cause;
    c->stats.removals[cause]++;
}

/* memory_cache_release.c */
void yyc__mc_drop_slot(yyc_memcache *c, void *slot);
void yyc__mc_release_list(yyc_memcache *c, yyc__lru_node *list);
bool yyc__mc_stash_list_locked(yyc_memcache *c, yyc__lru_node *head, yyc__lru_node *tail);
int yyc__mc_stash_slot_locked(yyc_memcache *c, const void *slot);
void yyc__mc_schedule_release(yyc_memcache *c);
void yyc__mc_release_job(void *arg);
void yyc__mc_unlock_and_release(yyc_memcache *c, yyc__lru_node *n);

/* memory_cache.c */
void yyc__mc_free_now(yyc_memcache *c);

/* memory_cache_entries.c */
void yyc__mc_copy_out_locked(yyc_memcache *c, void *dst, const void *src_slot);
bool yyc__mc_detach_all_locked(yyc_memcache *c, bool async, yyc_removal_cause cause,
                               yyc__lru_node **out_list, void **out_table);
void yyc__mc_remove_all_because(yyc_memcache *c, yyc_removal_cause cause);

/* --- expiry (memory_cache_expiry.c) --- */

/* Whether n has a time to live that has passed. Under the lock, or inside a shared read
 * (yyc__mc_shared_get: no holder of the lock changes the map or the deadlines meanwhile). */
static inline bool yyc__mc_expired(yyc_memcache *c, const yyc__lru_node *n) {
    double deadline;
    return c->expiry.live && yyc__expiry_deadline(&c->expiry, n, &deadline) &&
           yyc__mc_ttl_now() >= deadline;
}

/* yyc__mc_expired for n found under the lock. */
static inline bool yyc__mc_expired_locked(yyc_memcache *c, const yyc__lru_node *n) {
    yyc__assert_held(&c->lock);
    return yyc__mc_expired(c, n);
}

/* Whether n has a deadline at or before now (under lock). */
static inline bool yyc__mc_expired_at_locked(yyc_memcache *c, const yyc__lru_node *n, double now) {
    yyc__assert_held(&c->lock);
    double deadline;
    return c->expiry.live && yyc__expiry_deadline(&c->expiry, n, &deadline) && now >= deadline;
}

void yyc__mc_drop_expired_and_unlock(yyc_memcache *c, yyc__lru_node *n);
void yyc__mc_purge_expired(yyc_memcache *c, bool on_worker);

/* memory_cache_trims.c (jobs of the worker) */
void yyc__mc_cost_trim_job(void *arg);
void yyc__mc_auto_trim_fire(void *arg);

#ifdef YYC_TESTING
bool yyc__memcache_check(yyc_memcache *c);
unsigned yyc__memcache_auto_trim_fires(yyc_memcache *c);
void yyc__memcache_testing_advance_clock(double seconds);
void yyc__memcache_testing_default_policy(yyc_eviction_policy policy);
#endif

#endif
