/*
 * disk_cache_private.h - what the disk cache offers the library's other parts (private; not
 * API): the two-level cache (cache/cache.c) uses these. The disk cache's own files share
 * disk_cache_internal.h.
 */
#ifndef YYCACHE_DISK_CACHE_PRIVATE_H
#define YYCACHE_DISK_CACHE_PRIVATE_H

#include <yycache/yycache.h>

#include <stdbool.h>
#include <stdint.h>

/* yyc_diskcache_get_or_load, telling what happened: *missed (non-NULL) whether the first read
 * missed (the value then came from a load: this call's or a concurrent one's), *stored
 * (non-NULL) whether this call's loaded value was stored (false when a write of the key came in
 * since the miss: the loaded value never replaces it). */
int yyc__diskcache_get_or_load(yyc_diskcache *dc, const char *key, yyc_diskcache_load_fn load,
                               void *ctx, void **out_value, size_t *out_len, bool *missed,
                               bool *stored);

/* The expiry of key's entry (a queued write's, else its row's), as unix milliseconds on the
 * expiry clock (yyc__kv_now_ms; 0: never). Returns YYC_OK, YYC_NOTFOUND (missing or expired:
 * an expired row is removed, as a read does), YYC_ECLOSED, storage errors. */
int yyc__diskcache_expiry_ms(yyc_diskcache *dc, const char *key, int64_t *expiry_ms);

#endif /* YYCACHE_DISK_CACHE_PRIVATE_H */
