/*
 * yycache/cache.h - the two-level cache (YYCache): a memory cache in front of a disk cache.
 *
 * Reads go to memory first, then to disk; a disk hit is copied back into memory. Writes and
 * removals go to disk first, then to memory. The memory cache holds its own copies of the bytes
 * (reference-counted buffers released through the core's callbacks); an entry's cost is the
 * value's length in bytes, and the memory tier's cost limit defaults to a quarter of
 * yyc_available_memory() (change it through yyc_cache_memory).
 *
 * Consistency guarantee: once yyc_cache_set or yyc_cache_remove on a key (or
 * yyc_cache_remove_all) has returned, no later yyc_cache_get on that key through this
 * yyc_cache returns an older value or the removed one, whatever other threads are doing; once
 * every call has returned, the memory tier holds no value other than the disk's (a key is in
 * memory with the disk's value, or not at all). A failed disk write never removes a value
 * that another thread set meanwhile. Calls that overlap are ordered as if one ran before the
 * other. This holds for the calls of this API; writes made directly to the tiers
 * (yyc_cache_memory / yyc_cache_disk), to another yyc_cache on the same path or from another
 * process bypass it (the memory tier may keep serving what it holds).
 *
 * Thread safety: every function is thread-safe (each tier has its own lock; the cache adds
 * none). Blocking: every call may touch the disk, except yyc_cache_memory / yyc_cache_disk and a
 * get served from memory. Errors: calls returning an error record details for yyc_last_error().
 */
#ifndef YYCACHE_CACHE_H
#define YYCACHE_CACHE_H

#include "disk_cache.h"
#include "memory_cache.h"
#include "remote.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct yyc_cache yyc_cache;

/* Opens a two-level cache on path (disk threshold 20480; the disk core is shared per path).
 * Returns: YYC_OK, YYC_EINVAL (out is NULL, NULL or empty path), YYC_ENOMEM, the errors of
 * yyc_diskcache_open. Ownership: path copied; *out transferred (yyc_cache_free; NULL on error). */
YYC_API int yyc_cache_open(const char *path, yyc_cache **out);

/* Frees the memory tier (waiting for its values to be released) and drops this cache's
 * reference to the disk core (the last one closes the storage). NULL is fine. Must not be called
 * while another thread still uses the cache. */
YYC_API void yyc_cache_free(yyc_cache *c);

/* The tiers (borrowed; valid until yyc_cache_free; NULL for a NULL cache). Configure limits
 * through them. Never touch the disk. */
YYC_API yyc_memcache *yyc_cache_memory(yyc_cache *c);
YYC_API yyc_diskcache *yyc_cache_disk(yyc_cache *c);

/* Returns: YYC_OK (*out_value transferred, yyc_free; may be NULL when *out_len == 0),
 * YYC_NOTFOUND (also for an empty key), YYC_EINVAL (NULL cache, key or output), YYC_ENOMEM,
 * errors of the disk tier. *out_value / *out_len are NULL / 0 on anything but YYC_OK.
 * Ownership: key is borrowed. */
YYC_API int yyc_cache_get(yyc_cache *c, const char *key, void **out_value, size_t *out_len);
/* Copies the value into both tiers (disk first; memory with cost len). If the disk write fails,
 * the disk keeps its previous value, the key is removed from the memory tier unless another
 * write on it came in meanwhile, and the disk's error is returned. If another write on the key
 * overlaps, the memory tier may forget the key instead of storing the value (the next get reads
 * the disk). Returns: YYC_OK, YYC_EINVAL (NULL cache or key, empty key, NULL value with
 * len > 0), YYC_ENOMEM, errors of the disk tier. Ownership: key and value are copied. */
YYC_API int yyc_cache_set(yyc_cache *c, const char *key, const void *value, size_t len);
/* yyc_cache_set with a time to live for both tiers, in seconds (>= 0; INFINITY: never, whatever
 * the tiers' defaults), counted from now. A later get that fills memory from disk (here or
 * after a yyc_cache_set) gives the memory entry the disk entry's remaining time to live, so
 * memory never serves a value the disk has let expire. Returns: as yyc_cache_set, and
 * YYC_EINVAL for a NaN or negative time to live (nothing stored). */
YYC_API int yyc_cache_set_with_ttl(yyc_cache *c, const char *key, const void *value, size_t len,
                                   double ttl_seconds);
/* Loading with single flight: memory, then disk, then load (yyc_diskcache_load_fn, the disk
 * tier's yyc_diskcache_get_or_load: concurrent callers of one missing key in this process run
 * it once and all get its value or its error; the value is stored on disk, with the disk's
 * default time to live; an error stores nothing; a loaded value never replaces a write of the key
 * made after the miss: that write stays in both tiers). A value found on disk or loaded is
 * filled into memory as by yyc_cache_get. Returns: YYC_OK (*out_value transferred, yyc_free; NULL
 * when *out_len is 0), the load's error, YYC_EINVAL (NULL argument, empty key), YYC_ERECURSIVE
 * (called by the load of key, on its thread: at once), errors of the tiers.
 * Blocking: as yyc_diskcache_get_or_load (a memory hit does not touch the disk). */
YYC_API int yyc_cache_get_or_load(yyc_cache *c, const char *key, yyc_diskcache_load_fn load,
                                  void *ctx, void **out_value, size_t *out_len);

/* Statistics of this two-level cache: yyc_cache_get_statistics fills *out. Hits are gets
 * served by either tier (memory, else disk), misses gets served by neither (a get_or_load that
 * found neither counts one miss, and its loader run one load), insertions the values stored
 * through this cache (a loaded value stored counts one), all counted by this
 * object's calls with relaxed atomics (exact; no lock); removals by cause and the loads are the
 * disk tier's (yyc_diskcache_statistics: every entry leaves the disk; other holders of the disk
 * core count there too). Per tier: yyc_memcache_statistics and yyc_diskcache_statistics.
 * Returns: YYC_OK, YYC_EINVAL (NULL argument). yyc_cache_reset_statistics zeroes this cache's
 * own counters (not the tiers'); NULL is fine. Thread-safe; never touch the disk. */
YYC_API int yyc_cache_get_statistics(yyc_cache *c, yyc_cache_statistics *out);
YYC_API void yyc_cache_reset_statistics(yyc_cache *c);

/* Memory or disk; changes neither LRU order nor access time. false for a NULL cache or key, an
 * empty key, or a disk error. */
YYC_API bool yyc_cache_contains(yyc_cache *c, const char *key);
/* Removes the key from both tiers (disk first). On a disk error the memory tier forgets the key
 * unless another write on it came in meanwhile. Returns: YYC_OK (also when absent or for an
 * empty key), YYC_EINVAL (NULL cache or key), errors of yyc_diskcache_remove. */
YYC_API int yyc_cache_remove(yyc_cache *c, const char *key);
/* Empties both tiers (disk first; memory also when the disk fails). Returns: YYC_OK, YYC_EINVAL
 * (NULL cache), errors of yyc_diskcache_remove_all. */
YYC_API int yyc_cache_remove_all(yyc_cache *c);

/* Three tiers: adds r (remote.h) as the third tier of c, behind memory and disk; c keeps its
 * own reference to r (yyc_remote_close may be called at once; yyc_cache_free drops c's). Once
 * set, for good:
 *   - get: memory, then disk, then Redis; a Redis hit is copied into disk and memory with its
 *     remaining time to live (unless the invalidation link is down, or the key changed
 *     meanwhile). A Redis failure or a corrupt value there is a miss (YYC_NOTFOUND), reported
 *     through the remote's error hook.
 *   - set (and set_with_ttl: the time to live goes to Redis too; none when NaN/INFINITY):
 *     Redis, then disk, then memory. If Redis refuses the write (unreachable, full), the value
 *     is kept in the near tiers only, the failure goes to the remote's error hook, and the call
 *     returns the disk's status: the two-level cache goes on while Redis is down. Returns also
 *     YYC_ETOOBIG for a value over YYC_REMOTE_MAX_VALUE (nothing written).
 *   - remove / remove_all: Redis (a failure reported through its hook), then disk, then memory.
 *   - contains: the near tiers, else Redis.
 *   - get_or_load: memory, disk, Redis, then the load (once per key in this process), whose
 *     value is stored in every tier.
 * Coherence: another cache (any process) with the same namespace and Redis that sets or removes
 * a key makes this cache drop it from its near tiers when the invalidation arrives (Redis sends
 * it as it applies the write; this process's invalidation thread drops the key); after that no
 * get here returns the old value. While the invalidation link is down (and from the moment it
 * is noticed: at once for a closed connection, within 2 s for a silent one) the near tiers hold
 * nothing that came from Redis: they are emptied, and emptied again when the link is back.
 * Redis-side expiry and eviction invalidate like a remove. The two-level guarantee above holds
 * with Redis as the truth, for the values Redis accepted. Attaching empties both near tiers
 * (nothing vouches for what they held). Returns: YYC_OK, YYC_EINVAL (NULL argument, or c has a
 * remote tier already), YYC_ENOMEM, errors of yyc_diskcache_remove_all. Call it before sharing c
 * between threads. */
YYC_API int yyc_cache_set_remote(yyc_cache *c, yyc_remote *r);
/* The remote tier (borrowed, valid until yyc_cache_free), or NULL. */
YYC_API yyc_remote *yyc_cache_remote(yyc_cache *c);

/* The memory the process may use, in bytes: the smallest of physical memory
 * (sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE)) and the memory limit of the process's cgroup
 * and its ancestors (cgroup v2 memory.max, "max" meaning none; else cgroup v1
 * memory.limit_in_bytes), read from /proc/self/cgroup and /sys/fs/cgroup. 0 when unknown.
 * Thread-safe; reads those files on every call (no caching: limits may change). The default
 * memory limit of the two-level caches (C and Swift) is a quarter of it. */
YYC_API uint64_t yyc_available_memory(void);

#ifdef __cplusplus
}
#endif

#endif /* YYCACHE_CACHE_H */
