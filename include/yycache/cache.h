/*
 * yycache/cache.h - the two-level cache (YYCache): a memory cache in front of a disk cache.
 *
 * Reads go to memory first, then to disk; a disk hit is copied back into memory (cost 0).
 * Writes and removals go to memory first, then to disk. The memory cache holds its own copies
 * of the bytes (reference-counted buffers released through the core's callbacks).
 *
 * Thread safety: every function is thread-safe (each tier has its own lock; the pair of
 * operations is not atomic, as in YYCache). Blocking: every call may touch the disk, except
 * yyc_cache_memory / yyc_cache_disk. Errors: calls returning an error record details for
 * yyc_last_error().
 */
#ifndef YYCACHE_CACHE_H
#define YYCACHE_CACHE_H

#include "disk_cache.h"
#include "memory_cache.h"

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
/* Copies the value into both tiers (memory first). If the disk write fails, the key is also
 * removed from the memory tier (the disk keeps its previous value) and the disk's error is
 * returned. Returns: YYC_OK, YYC_EINVAL (NULL cache or key, empty key, NULL value with len > 0),
 * YYC_ENOMEM, errors of the disk tier. Ownership: key and value are copied. */
YYC_API int yyc_cache_set(yyc_cache *c, const char *key, const void *value, size_t len);
/* Memory or disk; changes neither LRU order nor access time. false for a NULL cache or key, an
 * empty key, or a disk error. */
YYC_API bool yyc_cache_contains(yyc_cache *c, const char *key);
/* Removes the key from both tiers. Returns: YYC_OK (also when absent or for an empty key),
 * YYC_EINVAL (NULL cache or key), errors of yyc_diskcache_remove. */
YYC_API int yyc_cache_remove(yyc_cache *c, const char *key);
/* Empties both tiers. Returns: YYC_OK, YYC_EINVAL (NULL cache), errors of
 * yyc_diskcache_remove_all. */
YYC_API int yyc_cache_remove_all(yyc_cache *c);

#ifdef __cplusplus
}
#endif

#endif /* YYCACHE_CACHE_H */
