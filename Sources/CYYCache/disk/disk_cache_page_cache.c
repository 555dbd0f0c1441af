/*
 * disk_cache_page_cache.c - the size of the manifest's page cache (kv_page_cache.c).
 *
 * Fields, lock order and invariants: disk_cache_internal.h.
 */
#include "disk/disk_cache_internal.h"

int yyc_diskcache_set_page_cache_size(yyc_diskcache *dc, int64_t bytes) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    int64_t kib = 0; /* (the default) */
    if (bytes > 0 && bytes != YYC_DISKCACHE_DEFAULT_PAGE_CACHE_SIZE)
        kib = bytes / 1024 + (bytes % 1024 != 0);
    if (dc->kv) yyc__kv_set_page_cache_kib(dc->kv, kib);
    yyc__dc_unlock_and_deliver(dc);
    return YYC_OK;
}

int64_t yyc_diskcache_page_cache_size(yyc_diskcache *dc) {
    if (!dc) return 0;
    yyc__dc_lock(&dc->lock);
    int64_t bytes = 0;
    if (!dc->closed && dc->kv) {
        int64_t kib = yyc__kv_page_cache_kib(dc->kv);
        bytes = kib > 0 ? kib * 1024 : YYC_DISKCACHE_DEFAULT_PAGE_CACHE_SIZE;
    }
    yyc__dc_unlock(&dc->lock);
    return bytes;
}

#ifdef YYC_TESTING
/* Testing: `pragma cache_size` and `pragma mmap_size` of the core's manifest connection. */
void yyc__diskcache_testing_page_cache_pragmas(yyc_diskcache *dc, int64_t *cache_size,
                                               int64_t *mmap_size);
void yyc__diskcache_testing_page_cache_pragmas(yyc_diskcache *dc, int64_t *cache_size,
                                               int64_t *mmap_size) {
    yyc__dc_lock(&dc->lock);
    *cache_size = dc->kv ? yyc__kv_testing_cache_size_pragma(dc->kv) : 0;
    *mmap_size = dc->kv ? yyc__kv_testing_mmap_size_pragma(dc->kv) : -1;
    yyc__dc_unlock(&dc->lock);
}
#endif
