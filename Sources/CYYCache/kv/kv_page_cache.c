/*
 * kv_page_cache.c - the size of the manifest connection's page cache (SQLite's cache_size).
 *
 * SQLite keeps 2,000 KiB of pages per connection by default. At a million entries the key index
 * alone is several times that, so a lookup of a random key reads most of its path through the
 * file system again. The owner chooses the size (a disk cache: yyc_diskcache_set_page_cache_size);
 * it is applied to the open connection and again at every open (a lazy reopen, a rebuild).
 * Memory-mapped I/O (mmap_size) is never turned on: a truncated or failing file would raise SIGBUS.
 *
 * Owner: the caller's thread, like the rest of yyc_kv (kv_internal.h).
 */
#include "kv/kv_internal.h"
#include "kv/kv_private.h"

#include <stdio.h>

void yyc__kv_apply_page_cache(yyc_kv *kv, sqlite3 *db) {
    if (!db || kv->page_cache_kib <= 0) return;
    char sql[64];
    snprintf(sql, sizeof sql, "pragma cache_size = -%lld;", (long long)kv->page_cache_kib);
    sqlite3_exec(db, sql, NULL, NULL, NULL); /* (best effort: the size is a hint) */
}

void yyc__kv_set_page_cache_kib(yyc_kv *kv, int64_t kib) {
    kv->page_cache_kib = kib > 0 ? kib : 0;
    if (!kv->db) return;
    if (kib > 0) yyc__kv_apply_page_cache(kv, kv->db);
    else sqlite3_exec(kv->db, "pragma cache_size = -2000;", NULL, NULL, NULL); /* the default */
}

int64_t yyc__kv_page_cache_kib(const yyc_kv *kv) { return kv->page_cache_kib; }

#ifdef YYC_TESTING
int64_t yyc__kv_testing_cache_size_pragma(yyc_kv *kv) {
    sqlite3_stmt *s = NULL;
    int64_t v = 0;
    if (kv->db && sqlite3_prepare_v2(kv->db, "pragma cache_size;", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

int64_t yyc__kv_testing_mmap_size_pragma(yyc_kv *kv) {
    sqlite3_stmt *s = NULL;
    int64_t v = -1;
    if (kv->db && sqlite3_prepare_v2(kv->db, "pragma mmap_size;", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}
#endif
