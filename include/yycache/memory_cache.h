/*
 * yycache/memory_cache.h - a thread-safe in-memory LRU cache (YYMemoryCache).
 *
 * Think of a yyc_memcache pointer as an object. Constructors: yyc_memcache_new() and
 * yyc_memcache_new_inline().
 * Destructor: yyc_memcache_free(). Every other function is a method.
 *
 * Keys are byte strings (zero length included; NUL bytes allowed; below 4 GiB) copied into the
 * cache. Values come in one of two modes, fixed when the cache is created:
 *   - pointer values (yyc_memcache_new; yyc_memcache_set / yyc_memcache_get): opaque pointers
 *     owned through the retain/release callbacks given at creation; a NULL value is stored as is
 *     and never passed to retain or release.
 *   - inline values (yyc_memcache_new_inline; yyc_memcache_set_inline / yyc_memcache_get_inline):
 *     fixed-size byte blobs (1 to YYC_MEMCACHE_INLINE_MAX bytes) copied into the entry itself,
 *     so an entry is one allocation with no separate value object. Optional copy/destroy
 *     callbacks make them owned values (e.g. a struct holding reference-counted pointers).
 * Calling a function of the other mode returns YYC_EINVAL; every other function (contains,
 * remove, limits, trims, events, free) works the same in both modes, and "released" below
 * means "destroyed" for inline values.
 * Lookups, inserts and removals are O(1); entries live in a hash table threaded onto a doubly
 * linked list in access order (head = most recently used), or in insertion order for the SIEVE
 * and S3-FIFO eviction policies (yyc_memcache_set_policy).
 *
 * Beyond YYMemoryCache (sections at the end): a removal listener told why each entry left,
 * exact statistics, single-flight loading (get-or-load) and snapshots of the keys.
 *
 * Limits (count, cost, age) are soft, as in YYMemoryCache: count eviction happens during set
 * (one entry per set), cost eviction is deferred to the background worker, and an auto-trim
 * runs every auto_trim_interval seconds (default 5) in the order cost, count, age.
 *
 * Thread safety: every function is thread-safe; each cache has one pthread mutex taken at the
 * top of each call. No callback (retain and copy excepted, see below) runs while the mutex is
 * held, so a release or destroy callback or an event handler may call back into the same cache.
 * With the SIEVE, S3-FIFO and TinyLFU policies a get does not take the mutex: gets on several
 * threads run in parallel (they exclude only the calls that take the mutex), so retain and copy
 * may run on several threads at once for one cache.
 * Blocking: never touches disk. Trims may sleep 10 ms between lock attempts when contended (on
 * the caller's thread only: background trims never sleep).
 * Misuse: a NULL cache returns YYC_EINVAL (or 0 / false / no-op for functions without status).
 */
#ifndef YYCACHE_MEMORY_CACHE_H
#define YYCACHE_MEMORY_CACHE_H

#include "removal_cause.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct yyc_memcache yyc_memcache;

/* How the cache owns values. A NULL callbacks pointer, or NULL members, means values are not
 * owned (retain returns the value itself, release does nothing).
 *
 * retain runs under the cache's mutex (in get, so that the caller's reference cannot be
 * released by a concurrent set: this closes YYCache's PR #153 use-after-free); it must be
 * cheap and must not call into the cache. With the SIEVE, S3-FIFO and TinyLFU policies a get
 * retains while excluding every writer but not other gets: retain must be thread-safe (an
 * atomic reference count). release never runs under the mutex. */
typedef struct yyc_value_callbacks {
    void *(*retain)(void *ctx, void *value); /* returns the retained value (usually value) */
    void (*release)(void *ctx, void *value); /* drops one reference */
    void *ctx;                               /* passed to both; owned by the caller */
} yyc_value_callbacks;

/* Creates a cache with YYMemoryCache's defaults: no count/cost/age limit, auto-trim every 5 s,
 * remove-all on memory warning and on enter-background, asynchronous release.
 * Returns: YYC_OK, YYC_EINVAL (out is NULL), YYC_ENOMEM.
 * Ownership: *out is transferred to the caller (free with yyc_memcache_free); cb is copied. */
YYC_API int yyc_memcache_new(const yyc_value_callbacks *cb, yyc_memcache **out);

/* Inline values. The largest inline value, in bytes. */
#define YYC_MEMCACHE_INLINE_MAX 64

/* The type of an inline cache's values: size bytes each, stored in the entry at align.
 *
 * copy runs under the cache's mutex, in yyc_memcache_get_inline, to copy the stored value out
 * (src: the entry's bytes; dst: the caller's buffer): it makes dst an independent value the
 * caller owns (e.g. increments the reference counts the value holds). It must be cheap and must
 * not call into the cache. NULL: the bytes are copied with memcpy (plain data). With the SIEVE,
 * S3-FIFO and TinyLFU policies copy may run on several threads at once (see the top of the
 * file): it must be thread-safe, as Swift and atomic reference counts are.
 * destroy never runs under the mutex: it ends the life of a value the cache drops (removed,
 * replaced, evicted, trimmed, or left at free), given the address of its bytes (in the entry or
 * in the cache's garbage; aligned to align). It runs where the release policy says (the calling
 * thread, or the background worker). Its bytes are freed right after it returns: destroy must
 * not keep the pointer (it may move the bytes elsewhere). It may call back into the cache.
 * NULL: nothing to do. Each value moved into the cache is passed to destroy exactly once. */
typedef struct yyc_inline_value_type {
    size_t size;  /* bytes per value, 1 .. YYC_MEMCACHE_INLINE_MAX */
    size_t align; /* alignment of the stored bytes: a power of two <= 16, or 0 for the largest
                   * power of two that divides size (at most 16) */
    void (*copy)(void *ctx, void *dst, const void *src); /* NULL: memcpy */
    void (*destroy)(void *ctx, void *value);             /* NULL: nothing */
    void *ctx; /* passed to both; borrowed until the cache is freed (see yyc_memcache_free) */
} yyc_inline_value_type;

/* Creates a cache of inline values of the given type, with the same defaults as
 * yyc_memcache_new. Use yyc_memcache_set_inline / yyc_memcache_get_inline with it.
 * Returns: YYC_OK, YYC_EINVAL (out or type is NULL, size is 0 or above YYC_MEMCACHE_INLINE_MAX,
 * align is not 0 or a power of two up to 16), YYC_ENOMEM.
 * Ownership: *out is transferred to the caller (free with yyc_memcache_free); type is copied. */
YYC_API int yyc_memcache_new_inline(const yyc_inline_value_type *type, yyc_memcache **out);

/* Eviction policies: which entry a count or cost limit (or a count/cost trim) removes.
 *   YYC_EVICT_LRU (the default): the least recently used (YYMemoryCache's order); every hit
 *     (get, or set on an existing key) moves the entry to the head of a list.
 *   YYC_EVICT_SIEVE (NSDI'24): a FIFO queue where a hit only sets a "visited" bit; eviction
 *     moves a hand from the oldest entry toward the newest, clearing visited bits, and evicts
 *     the first unvisited entry. The cheapest hit; not scan resistant.
 *   YYC_EVICT_S3FIFO (SOSP'23), as its authors' reference (libCacheSim 0.3.5's S3FIFO.c): a
 *     small FIFO queue (10% of the capacity) for new keys, a main FIFO queue and a ghost queue
 *     of the hashes of keys recently evicted from the small one (90% of the capacity; 8-14 bytes
 *     each). A hit adds 1 to a 2-bit frequency. A small-queue entry hit at least twice moves to
 *     main when it reaches the queue's end, else it is evicted; a key that comes back while in
 *     the ghost queue goes straight to main, as do new keys while the small queue is full
 *     before the first eviction; main is evicted from while it is over 90% of the capacity and
 *     gives each entry one more round per remaining frequency. Scan and loop resistant. The
 *     capacity is the count limit; with only a cost limit, the cost limit, measured in cost;
 *     with neither (explicit trims), the current count.
 *   YYC_EVICT_TINYLFU: Window TinyLFU after Caffeine 3: new keys enter an LRU admission window
 *     (1% of the capacity to start), and the window's oldest entry then competes with the
 *     oldest entry of the main space (a segmented LRU: probation, and protected for entries hit
 *     there, 80% of main): the one a 4-bit count-min sketch of recent accesses (halved every
 *     10 x capacity accesses) finds less frequent is evicted, so a new key may be evicted at
 *     once when it is colder than the main space (randomly admitted now and then when warm, so
 *     that colliding keys cannot lock it out). The window's share adapts by hill climbing on
 *     the hit rate, so recency-friendly and frequency-friendly workloads both do well. The
 *     capacity, and every entry's weight, is the cost when a cost limit is set, else the count
 *     limit (entries); with neither, the current count. The sketch takes 8 bytes per entry of
 *     capacity (allocated when the cache is half full; with cost weights, sized by the count);
 *     a cache with neither limit has no sketch, and its trims take the oldest entries.
 * With every policy, contains never counts as a hit; limits, trims, the age limit (since the
 * last access or set: SIEVE, S3-FIFO and TinyLFU find old entries by scanning the whole list, 64
 * entries per lock acquisition), release modes and events behave the same, and an entry costs the
 * same memory (the policy's bits live in the entry's list link). A new key set at the count limit
 * evicts one entry before it is inserted, so it is never its own victim (except with a count
 * limit of 0). */
typedef enum yyc_eviction_policy {
    YYC_EVICT_LRU = 0,
    YYC_EVICT_SIEVE = 1,
    YYC_EVICT_S3FIFO = 2,
    YYC_EVICT_TINYLFU = 3
} yyc_eviction_policy;

/* Chooses the cache's eviction policy. Call it right after creation (either constructor): it
 * is refused once the cache holds an entry.
 * Returns: YYC_OK, YYC_EINVAL (NULL cache, unknown policy, or the cache holds entries). */
YYC_API int yyc_memcache_set_policy(yyc_memcache *c, yyc_eviction_policy policy);

/* The cache's eviction policy (YYC_EVICT_LRU for NULL). */
YYC_API yyc_eviction_policy yyc_memcache_policy(yyc_memcache *c);

/* Cancels the auto-trim timer, removes every entry, waits until every value (including those
 * handed to the background worker earlier; still queued ones are released on the calling
 * thread) has been released, then frees the cache and calls the free handler, if any.
 * NULL is fine. Must not be called while another thread still uses the cache.
 * From inside one of the cache's own callbacks (a release or destroy callback, an event
 * handler: a value that held the last reference to the cache's owner), on the thread running
 * it, the free is deferred: it returns at once, and the call that ran the callback frees the
 * cache (as above) when it has finished with it, before it returns - yyc_memcache_remove, for
 * example, or the background worker's release job. The caller must not use the cache after
 * yyc_memcache_free, but the callbacks' contexts must stay valid until the free handler runs.
 * A second yyc_memcache_free of the cache from one of its callbacks while it is being freed
 * (the callback runs on the freeing thread or on the background worker) is ignored.
 * A cache opted in to system memory pressure is opted out first: the free waits while the
 * watcher's thread runs the cache's memory-warning handling (memory_pressure.h). */
YYC_API void yyc_memcache_free(yyc_memcache *c);

/* Called once the cache is gone: at the end of yyc_memcache_free, or of the call that ran a
 * callback which freed the cache (see yyc_memcache_free), on that thread. No callback of the
 * cache runs after it starts, so it may free the contexts of the value callbacks, of the inline
 * value type, of the event handlers and of the removal listener. */
typedef void (*yyc_memcache_free_fn)(void *ctx);

/* Sets the free handler (NULL fn: none, the default). Thread-safe.
 * Ownership: ctx is borrowed until the handler is called or replaced. */
YYC_API void yyc_memcache_set_free_handler(yyc_memcache *c, yyc_memcache_free_fn fn, void *ctx);

/* Inserts or replaces the value for key and makes the entry the most recently used (a hit,
 * for SIEVE and S3-FIFO; see yyc_eviction_policy).
 * The cache takes one reference to value (retain is called, under the lock). A replaced value
 * is released per the release policy. If the total cost exceeds the cost limit a background
 * trim is scheduled; if the count exceeds the count limit, the least recently used entry (the
 * policy's victim) is evicted before returning (one entry per call). value may be NULL (stored as
 * NULL). Total cost saturates at SIZE_MAX instead of wrapping. Returns: YYC_OK, YYC_EINVAL (NULL
 * cache, NULL key with key_len > 0, or an inline cache), YYC_ETOOBIG (key of 4 GiB or more; checked
 * before the key is read), YYC_ENOMEM. Ownership: key is copied; value is retained. */
YYC_API int yyc_memcache_set(yyc_memcache *c, const void *key, size_t key_len, void *value,
                             size_t cost);

/* yyc_memcache_set for an inline cache: value points to size bytes (the type's), which are
 * moved into the entry. Everything else (replacement, limits, eviction, release policy) is as
 * in yyc_memcache_set; a replaced value is destroyed per the release policy, never under the
 * lock. No callback runs under the lock.
 * Returns: YYC_OK, YYC_EINVAL (NULL cache or value, NULL key with key_len > 0, or a pointer
 * cache), YYC_ETOOBIG (key of 4 GiB or more), YYC_ENOMEM.
 * Ownership: key is copied. value's bytes are moved: on YYC_OK the cache owns the value (the
 * caller must not destroy its bytes; the buffer itself stays the caller's); on any error the
 * value was not taken and the caller still owns it. */
YYC_API int yyc_memcache_set_inline(yyc_memcache *c, const void *key, size_t key_len,
                                    const void *value, size_t cost);

/* Looks key up; on a hit the entry becomes the most recently used and its time is refreshed.
 * An expired entry (see "Time to live") is a miss, and is removed.
 * Returns: YYC_OK (*out_value holds a reference retained under the lock and transferred to the
 * caller, who must release it), YYC_NOTFOUND (*out_value = NULL), YYC_EINVAL (also for an
 * inline cache).
 * Ownership: key is borrowed. */
YYC_API int yyc_memcache_get(yyc_memcache *c, const void *key, size_t key_len, void **out_value);

/* yyc_memcache_get for an inline cache: on a hit, copies the value into out_value (size bytes,
 * aligned as the type says) with the type's copy callback (under the lock) or memcpy.
 * Returns: YYC_OK (out_value holds a value the caller owns: destroy it when done),
 * YYC_NOTFOUND (out_value untouched), YYC_EINVAL (NULL cache or out_value, NULL key with
 * key_len > 0, or a pointer cache).
 * Ownership: key is borrowed. */
YYC_API int yyc_memcache_get_inline(yyc_memcache *c, const void *key, size_t key_len,
                                    void *out_value);

/* Time to live: expiry counted from the write, strict and per entry (the age limit below is
 * YYMemoryCache's softer "since last access, enforced by trims").
 * An entry set with a time to live of t seconds expires t seconds after that set, on
 * CLOCK_MONOTONIC (nanosecond resolution): from then on no call returns it or reports it
 * present (get, get_inline, contains, time_to_live); the read that finds it expired removes it
 * (its value released per the release policy, as a removed one's, never under the lock), and
 * every trim (trim_to_count/cost/age, also one within its limit) and the auto-trim remove all
 * expired entries first, in O(expired) work (entries are kept in deadline order; no scan of the
 * cache). A later set on the key replaces the time to live with its own (or with none).
 * Expiry, like eviction, does not change write generations.
 * Cost: an entry without a time to live costs nothing more (no byte, one test on a get); an
 * entry with one costs ~48-96 bytes in a side table and one table probe per read.
 *
 * yyc_memcache_set_with_ttl / yyc_memcache_set_inline_with_ttl: yyc_memcache_set /
 * yyc_memcache_set_inline with an explicit time to live in seconds: >= 0 (0: expired at once:
 * the entry is stored, never returned, removed by the next read or trim), or INFINITY (never
 * expires, whatever the default).
 * Returns: as the plain calls, and YYC_EINVAL for a NaN or negative time to live (nothing
 * stored; an inline value is not taken). YYC_ENOMEM leaves the cache unchanged.
 * Ownership and thread safety: as the plain calls. */
YYC_API int yyc_memcache_set_with_ttl(yyc_memcache *c, const void *key, size_t key_len, void *value,
                                      size_t cost, double ttl_seconds);
YYC_API int yyc_memcache_set_inline_with_ttl(yyc_memcache *c, const void *key, size_t key_len,
                                             const void *value, size_t cost, double ttl_seconds);

/* The time to live every other set gets (yyc_memcache_set, set_inline and the _if_generation
 * calls): seconds, INFINITY (the default) for none. Setting NaN means none; a negative value
 * means 0. Entries already stored keep theirs. The getter returns INFINITY for a NULL cache.
 * Thread-safe; takes the lock. */
YYC_API void yyc_memcache_set_default_time_to_live(yyc_memcache *c, double seconds);
YYC_API double yyc_memcache_default_time_to_live(yyc_memcache *c);

/* The remaining time to live of key's entry, in seconds (> 0), or INFINITY if it has none.
 * Not a hit: changes neither the policy's order nor the entry's access time.
 * Returns: YYC_OK (*out_seconds set), YYC_NOTFOUND (no entry, or an expired one, which this
 * call removes; *out_seconds = 0), YYC_EINVAL (NULL cache or out_seconds, NULL key with
 * key_len > 0). Ownership: key is borrowed. Thread-safe; takes the lock. */
YYC_API int yyc_memcache_time_to_live(yyc_memcache *c, const void *key, size_t key_len,
                                      double *out_seconds);

/* Write generations: conditional writes for a caller that fills the cache from a slower store
 * it also writes (the two-level cache, yyc_cache, does). A key's generation is a number that
 * changes every time the key is written through this cache: set, set_inline, remove (even of an
 * absent key), remove_all (also when a memory warning or entering the background calls it), and
 * the conditional calls below when they store or remove. Evictions (count limit, trims, the
 * auto-trim) and reads do not change it.
 * Keys share their generation with the others of one of 256 stripes (by a seeded hash), so a
 * generation may also change when another key is written: a conditional call may refuse
 * although the key itself was not written (never the reverse).
 * The pattern: g = yyc_memcache_generation(key); read the store; then
 * yyc_memcache_set_if_generation(key, value, g): the value is stored only if no write on the key
 * happened meanwhile, so a fill can never overwrite a newer value or bring back a removed one.
 * Tracking starts with the first call of yyc_memcache_generation (before it, writes do not hash
 * their key a second time); it costs one hash of the key per write after that.
 *
 * yyc_memcache_generation returns key's current generation (0 for a NULL cache, or a NULL key
 * with key_len > 0). Thread-safe; takes the lock; never fails. Ownership: key is borrowed. */
YYC_API uint64_t yyc_memcache_generation(yyc_memcache *c, const void *key, size_t key_len);

/* yyc_memcache_set (pointer caches) or yyc_memcache_set_inline (inline caches), done only if
 * key's generation is still `generation`; otherwise nothing changes (an inline value is then not
 * taken: the caller still owns it). *out_stored (may be NULL) says which happened.
 * Returns: what the unconditional call returns (YYC_OK also when the generation differed);
 * *out_stored is false on any error. Ownership: as in the unconditional calls. */
YYC_API int yyc_memcache_set_if_generation(yyc_memcache *c, const void *key, size_t key_len,
                                           void *value, size_t cost, uint64_t generation,
                                           bool *out_stored);
YYC_API int yyc_memcache_set_inline_if_generation(yyc_memcache *c, const void *key, size_t key_len,
                                                  const void *value, size_t cost,
                                                  uint64_t generation, bool *out_stored);

/* The same with an explicit time to live, as yyc_memcache_set_with_ttl takes it (>= 0 seconds,
 * or INFINITY: never); YYC_EINVAL for a NaN or negative one (nothing stored). For a fill that
 * keeps the remaining time to live of the value it copies (the two-level cache's back-fill). */
YYC_API int yyc_memcache_set_if_generation_with_ttl(yyc_memcache *c, const void *key,
                                                    size_t key_len, void *value, size_t cost,
                                                    uint64_t generation, double ttl_seconds,
                                                    bool *out_stored);
YYC_API int yyc_memcache_set_inline_if_generation_with_ttl(yyc_memcache *c, const void *key,
                                                           size_t key_len, const void *value,
                                                           size_t cost, uint64_t generation,
                                                           double ttl_seconds, bool *out_stored);

/* yyc_memcache_remove, done only if key's generation is still `generation` (then it changes).
 * Returns: YYC_OK (also when the generation differed or the key was absent), YYC_EINVAL. */
YYC_API int yyc_memcache_remove_if_generation(yyc_memcache *c, const void *key, size_t key_len,
                                              uint64_t generation);

/* Whether key has an entry (an expired one does not count: it is removed). Does not change
 * LRU order or the entry's time.
 * Returns: true or false (false for a NULL cache). */
YYC_API bool yyc_memcache_contains(yyc_memcache *c, const void *key, size_t key_len);

/* Removes key's entry, releasing the value per the release policy.
 * Returns: YYC_OK (also when the key was absent), YYC_EINVAL. */
YYC_API int yyc_memcache_remove(yyc_memcache *c, const void *key, size_t key_len);

/* Removes every entry; the values are released per the release policy. */
YYC_API void yyc_memcache_remove_all(yyc_memcache *c);

/* Number of entries, and the sum of their costs (saturating at SIZE_MAX). 0 for NULL. */
YYC_API size_t yyc_memcache_total_count(yyc_memcache *c);
YYC_API size_t yyc_memcache_total_cost(yyc_memcache *c);

/* Limits. SIZE_MAX (the default) means no limit for count and cost; an age of DBL_MAX or
 * +infinity (the default is DBL_MAX) means no limit; age is seconds since last access or set,
 * measured on CLOCK_MONOTONIC_COARSE (1-10 ms resolution; it costs a third of a fine clock
 * read). A NaN age is treated as no limit. Getters return the defaults
 * for a NULL cache. */
YYC_API void yyc_memcache_set_count_limit(yyc_memcache *c, size_t limit);
YYC_API size_t yyc_memcache_count_limit(yyc_memcache *c);
YYC_API void yyc_memcache_set_cost_limit(yyc_memcache *c, size_t limit);
YYC_API size_t yyc_memcache_cost_limit(yyc_memcache *c);
YYC_API void yyc_memcache_set_age_limit(yyc_memcache *c, double seconds);
YYC_API double yyc_memcache_age_limit(yyc_memcache *c);

/* Seconds between background trims (default 5). A value <= 0 or NaN pauses the auto-trim (it
 * never spins); a change takes effect at once. */
YYC_API void yyc_memcache_set_auto_trim_interval(yyc_memcache *c, double seconds);
YYC_API double yyc_memcache_auto_trim_interval(yyc_memcache *c);

/* Release policy. true (default): removed, replaced, evicted and trimmed values are released
 * on the library's background worker thread for memory caches (which never waits for disk
 * work, see yycache.h), in batches: about a millisecond after the first of a batch was
 * removed, so that a stream of writes wakes that thread about once a millisecond rather than
 * once per write (yyc_memcache_free releases what is still waiting before it returns). false: they
 * are released on the calling thread before the call returns (after the mutex is unlocked). Values
 * evicted by a background trim are always released on the worker thread. */
YYC_API void yyc_memcache_set_release_asynchronously(yyc_memcache *c, bool async);
YYC_API bool yyc_memcache_release_asynchronously(yyc_memcache *c);

/* Evicts least recently used entries (the policy's victims) until the count / cost is at most
 * the target, or every
 * entry older than `seconds` (since last access). A target of 0 (seconds <= 0 for age) removes
 * everything. Runs on the caller's thread with YYMemoryCache's trylock loop: one eviction per
 * lock acquisition, sleeping 10 ms when the lock is contended, so other threads interleave.
 * Evicted values are released per the release policy. */
YYC_API void yyc_memcache_trim_to_count(yyc_memcache *c, size_t count);
YYC_API void yyc_memcache_trim_to_cost(yyc_memcache *c, size_t cost);
YYC_API void yyc_memcache_trim_to_age(yyc_memcache *c, double seconds);

/* Event handlers (the Linux substitute for UIKit's notifications).
 * handle_memory_warning: calls the memory-warning handler (if set) on the calling thread,
 * then removes every entry if should_remove_all_on_memory_warning (default true). Same for
 * handle_enter_background with its own handler and flag (default true). The handlers run with
 * no lock held and may call into the cache. System memory pressure calls handle_memory_warning
 * on the watcher's thread for caches that opted in (memory_pressure.h). Ownership: ctx is borrowed
 * until the handler is replaced (NULL fn removes it) or the cache is freed. */
typedef void (*yyc_memcache_event_fn)(yyc_memcache *c, void *ctx);
YYC_API void yyc_memcache_set_memory_warning_handler(yyc_memcache *c, yyc_memcache_event_fn fn,
                                                     void *ctx);
YYC_API void yyc_memcache_set_enter_background_handler(yyc_memcache *c, yyc_memcache_event_fn fn,
                                                       void *ctx);
YYC_API void yyc_memcache_set_remove_all_on_memory_warning(yyc_memcache *c, bool on);
YYC_API bool yyc_memcache_remove_all_on_memory_warning(yyc_memcache *c);
YYC_API void yyc_memcache_set_remove_all_on_enter_background(yyc_memcache *c, bool on);
YYC_API bool yyc_memcache_remove_all_on_enter_background(yyc_memcache *c);
YYC_API void yyc_memcache_handle_memory_warning(yyc_memcache *c);
YYC_API void yyc_memcache_handle_enter_background(yyc_memcache *c);

/* Removal events: a listener called once for every entry that leaves the cache, with its key,
 * its value and why it left (yyc_removal_cause): removed (remove, remove_if_generation,
 * remove_all: one YYC_REMOVED_EXPLICIT per entry), replaced by a set on its key (also when the
 * old value was NULL), expired (its time to live, found by a read or removed by a trim or the
 * auto-trim; the age limit and trim_to_age, also one with seconds <= 0), evicted (the count or
 * cost limit, trim_to_count, trim_to_cost, also to 0), or removed by handle_memory_warning /
 * handle_enter_background (YYC_REMOVED_MEMORY_PRESSURE).
 *
 * When: after the entry left (a read from the listener no longer finds it), with no lock held,
 * right before its value is released, on the thread that releases it (the release policy: the
 * calling thread before the call returns, or the background worker; background trims always on
 * the worker). So the listener may call into the cache (even free it, see yyc_memcache_free).
 * Exactly once per entry that leaves while the listener is installed; entries that leave while
 * it is being installed or removed may or may not be reported. yyc_memcache_free reports
 * nothing (the cache is going away).
 *
 * Arguments: key and key_len (borrowed for the call), value: in a pointer cache the stored
 * pointer, whose reference the cache releases right after the listener returns (retain it to
 * keep it); in an inline cache the address of the value's bytes, destroyed right after (copy
 * them with the type's copy semantics to keep the value). Both are borrowed for the call.
 *
 * Cost: nothing without a listener. With one, a replacement allocates a detached copy of the
 * entry's node (key and old value) so that the event can carry the key; if that allocation
 * fails the set returns YYC_ENOMEM (the cache is then as before the call, except for an entry
 * the count limit evicted first, which is reported).
 *
 * yyc_memcache_set_removal_listener installs fn (NULL: none, the default) with ctx.
 * Thread-safe; takes the lock. Ownership: ctx is borrowed until the free handler runs (an event
 * already under way may still reach the previous listener after this returns). */
typedef void (*yyc_memcache_removal_fn)(void *ctx, const void *key, size_t key_len, void *value,
                                        yyc_removal_cause cause);
YYC_API void yyc_memcache_set_removal_listener(yyc_memcache *c, yyc_memcache_removal_fn fn,
                                               void *ctx);

/* Statistics (yyc_cache_statistics in removal_cause.h): counted under the cache's mutex by the
 * calls that already hold it, so they are exact and cost no extra lock or atomic operation.
 * What counts: get and get_inline: one hit or one miss (an expired entry is a miss); the
 * get-or-load calls: one hit, or one miss (also for a caller that waits for another caller's
 * load), and the caller that runs the loader adds one load or one load failure and its duration;
 * contains and time_to_live count nothing. Every set that stores a value is an insertion (the
 * loaded values too); removals are counted by cause when the entry leaves (as the listener
 * reports them, listener or not; yyc_memcache_free counts nothing).
 *
 * yyc_memcache_statistics copies a consistent snapshot (taken under the lock) into *out.
 * Returns: YYC_OK, YYC_EINVAL (NULL cache or out). Thread-safe; takes the lock. */
YYC_API int yyc_memcache_statistics(yyc_memcache *c, yyc_cache_statistics *out);

/* Sets every counter to 0. Thread-safe; takes the lock. NULL is fine. */
YYC_API void yyc_memcache_reset_statistics(yyc_memcache *c);

/* Loading with single flight: concurrent callers that miss on the same key run one load and all
 * receive its result; callers of other keys are not delayed; nobody waits on the cache's mutex
 * while a load runs (the loader runs with no lock held, waiters sleep on a condition variable of
 * their own). A loaded value is stored like a set (yyc_memcache_set / set_inline with the given
 * cost and the default time to live; an insertion, and a replacement if a set stored the key
 * meanwhile); a failure stores nothing, and the next call runs the loader again. An expired
 * entry found by the lookup is removed (reported YYC_REMOVED_EXPIRED) and a load runs.
 *
 * The two-step form (for callers that cannot block, such as Swift async code):
 *
 * yyc_memcache_begin_load looks key up. Returns:
 *   YYC_OK: a hit, as yyc_memcache_get (pointer cache: *(void **)out_value holds a reference
 *     transferred to the caller) or get_inline (the bytes copied into out_value); *out_flight
 *     is NULL.
 *   YYC_NOTFOUND with *out_flight set: no entry and no load under way: the caller is the loader.
 *     It must run its load (with no cache lock held; it may use the cache) and then call
 *     yyc_memcache_finish_load (or finish_load_inline) exactly once with the flight.
 *   YYC_NOTFOUND with *out_flight NULL: another caller's load of key is under way and the caller
 *     waits for it: done(done_ctx, status, value, error) will be called exactly once, by the
 *     thread that finishes the load, with no lock held (possibly before begin_load returns).
 *     status is the load's (YYC_OK or its error); value (YYC_OK only) is borrowed for the call:
 *     a pointer cache's value pointer (retain it to keep it) or the address of an inline value's
 *     bytes (copy them); error is the loader's error object, borrowed for the call (NULL if it
 *     gave none).
 *   YYC_ERECURSIVE: blocking is true, and the load under way was begun with blocking true on this
 *     thread: the caller is inside that load (its loader asks for its own key) and would wait
 *     for itself forever. YYC_ENOMEM. YYC_EINVAL: NULL cache or out_value or out_flight, NULL key
 *     with key_len > 0, or done is NULL. Nothing else happened on these.
 * blocking: whether the caller, if it joins, blocks its thread until done is called (as
 *   yyc_memcache_get_or_load does); false for callers that suspend instead (async tasks, which
 *   may share a thread with the loader without waiting for themselves).
 * Ownership: key is borrowed (a loader's key must stay valid until it finishes the load);
 * done_ctx is borrowed until done is called.
 *
 * yyc_memcache_finish_load (pointer caches) ends the caller's load: status YYC_OK stores value
 * (retained, like yyc_memcache_set; the caller keeps its own reference) with cost, then calls
 * every waiter's done with value; any other status stores nothing and passes status and error
 * (borrowed for the calls) to the waiters. load_ns is the load's duration for the statistics.
 * Returns: the store's status (YYC_OK, or YYC_ENOMEM: not stored, the waiters still receive the
 * value); status itself when status is not YYC_OK; YYC_EINVAL for a NULL cache or flight, or a
 * cache of the other mode (the flight is then left unfinished: a caller's bug).
 * yyc_memcache_finish_load_inline is the same for inline caches: value points to the loaded
 * value's bytes, which are moved into the cache on YYC_OK as by set_inline (if the store fails
 * the bytes are destroyed per the release policy); the waiters receive a copy made with the
 * type's copy callback before the move. Ignored (may be NULL) when status is not YYC_OK.
 * Thread-safe: any thread may finish a flight (its loader's or another).
 * Blocking: neither call waits for anything but the cache's mutex. */
typedef struct yyc_memcache_flight yyc_memcache_flight;
typedef void (*yyc_memcache_loaded_fn)(void *done_ctx, int status, void *value, void *error);
YYC_API int yyc_memcache_begin_load(yyc_memcache *c, const void *key, size_t key_len,
                                    void *out_value, yyc_memcache_loaded_fn done, void *done_ctx,
                                    bool blocking, yyc_memcache_flight **out_flight);
YYC_API int yyc_memcache_finish_load(yyc_memcache *c, yyc_memcache_flight *flight, int status,
                                     void *value, size_t cost, void *error, uint64_t load_ns);
YYC_API int yyc_memcache_finish_load_inline(yyc_memcache *c, yyc_memcache_flight *flight,
                                            int status, const void *value, size_t cost, void *error,
                                            uint64_t load_ns);

/* The blocking form. load(ctx, key, key_len, out_value) runs on the calling thread with no lock
 * held and returns YYC_OK after storing the value in out_value (pointer caches: a reference in
 * *(void **)out_value, transferred to the call; inline caches: the bytes, moved to the call), or
 * an error status (out_value then unused).
 * yyc_memcache_get_or_load returns: YYC_OK with *out_value holding a reference transferred to
 * the caller (a hit, the caller's own load, or another caller's load it waited for); the load's
 * error status (this caller's load or the one it waited for; nothing stored); YYC_ERECURSIVE or
 * YYC_EINVAL as begin_load (also for an inline cache or a NULL load).
 * yyc_memcache_get_or_load_inline: the same for inline caches; on YYC_OK out_value holds a value
 * the caller owns (its own load's value, or a copy).
 * Blocking: a waiter sleeps until the load it waits for finishes (however long the loader
 * takes); never while holding the cache's mutex. Ownership: key is borrowed; ctx is the
 * loader's. Thread-safe. */
typedef int (*yyc_memcache_load_fn)(void *ctx, const void *key, size_t key_len, void *out_value);
YYC_API int yyc_memcache_get_or_load(yyc_memcache *c, const void *key, size_t key_len, size_t cost,
                                     yyc_memcache_load_fn load, void *ctx, void **out_value);
YYC_API int yyc_memcache_get_or_load_inline(yyc_memcache *c, const void *key, size_t key_len,
                                            size_t cost, yyc_memcache_load_fn load, void *ctx,
                                            void *out_value);

/* Keys: a snapshot of the live keys (expired entries excluded: they are removed, reported
 * YYC_REMOVED_EXPIRED), in the eviction policy's order, first the entry the policy keeps
 * longest: LRU: most recently used first. SIEVE and S3-FIFO: newest insertion first (their list
 * order; a hit does not move an entry), and for S3-FIFO the small queue before the main queue.
 * Not a hit: changes no order, time or statistic.
 * On YYC_OK, *out_keys is an array of *out_count yyc_memcache_key (NULL when the count is 0)
 * whose keys point into the same allocation: the caller frees it all with one yyc_free.
 * Returns: YYC_OK, YYC_EINVAL (NULL cache, out_keys or out_count), YYC_ENOMEM.
 * Cost: O(n) under the lock (one pass to size, one to copy). Thread-safe. */
typedef struct yyc_memcache_key {
    const void *bytes; /* len bytes, not NUL-terminated (never NULL, also when len is 0) */
    size_t len;
} yyc_memcache_key;
YYC_API int yyc_memcache_copy_keys(yyc_memcache *c, yyc_memcache_key **out_keys, size_t *out_count);

/* yyc_memcache_copy_keys with the values (pointer caches): the same snapshot, where each
 * entry's value holds a reference retained under the lock and transferred to the caller, who
 * releases every one (then frees the array with one yyc_free).
 * Returns: as yyc_memcache_copy_keys, and YYC_EINVAL for an inline cache. */
typedef struct yyc_memcache_entry {
    const void *key; /* key_len bytes in the array's allocation (never NULL) */
    size_t key_len;
    void *value; /* retained for the caller */
} yyc_memcache_entry;
YYC_API int yyc_memcache_copy_entries(yyc_memcache *c, yyc_memcache_entry **out_entries,
                                      size_t *out_count);

#ifdef __cplusplus
}
#endif

#endif /* YYCACHE_MEMORY_CACHE_H */
