/*
 * kv_access_times.c - access times kept in memory and written later, in batches: a read never
 * writes the manifest (YYKVStorage's every read was an UPDATE moving the last_access_time index
 * entry, which at a large cache costs several times the read, and ends in "database is locked"
 * when processes share a folder).
 *
 * When the owner turns it on (yyc__kv_set_deferred_access_times; the disk cache does), a read
 * that would have written the access time notes key -> the current second in kv->access
 * instead. The noted times are written by yyc__kv_write_access_times, in one transaction per
 * call: from the background (the disk cache's access-time timer, a bounded number per second),
 * before every least-recently-used or age decision (the disk cache's trims), and at close. A
 * time only moves forward when written (a newer one written meanwhile by a save or by another
 * process stays), and a key removed meanwhile is simply not found.
 *
 * The map is bounded (YYC__KV_ACCESS_MAX keys): a read of a key that is not in a full map keeps
 * the key's older access time until it is read again after the next write (counted in
 * access_dropped). Access times are second-granular anyway, and the order they give is already
 * approximate; what is never lost is a value. A process that dies loses only the times it had
 * not written, and each process writes its own.
 *
 * Owner: the caller's thread, like the rest of yyc_kv (kv_internal.h).
 */
#include "kv/kv_internal.h"

#include <string.h>

#define SQL_ACCESS_WRITE                                            \
    "update manifest set last_access_time = ?1 where key = ?2 and " \
    "(last_access_time is null or last_access_time < ?1);"

void yyc__kv_set_deferred_access_times(yyc_kv *kv, bool on) {
    if (!on) yyc__kv_write_access_times(kv, SIZE_MAX);
    kv->defer_access = on;
}

void yyc__kv_note_access(yyc_kv *kv, const char *key, int64_t now) {
    size_t len = strlen(key);
    yyc__lru_node *n = yyc__lru_map_find(&kv->access, key, len);
    if (!n) {
        if (yyc__lru_map_count(&kv->access) >= YYC__KV_ACCESS_MAX) {
            kv->access_dropped++;
            return;
        }
        if (!yyc__lru_map_insert(&kv->access, key, len, NULL, 0, (double)now))
            kv->access_dropped++; /* (out of memory: the time is not noted) */
        return;
    }
    yyc__lru_map_move_to_head(&kv->access, n); /* (the oldest noted stay at the tail) */
    n->time = (double)now;
}

size_t yyc__kv_access_times_pending(const yyc_kv *kv) { return yyc__lru_map_count(&kv->access); }

int yyc__kv_write_access_times(yyc_kv *kv, size_t max) {
    if (yyc__lru_map_count(&kv->access) == 0 || max == 0) return YYC_OK;
    int rc = yyc__kv_db_check(kv); /* (ends a held read transaction) */
    if (rc != YYC_OK) return rc;   /* (kept for a later write) */
    sqlite3_stmt *s;
    rc = yyc__kv_prepare_checked(kv, SQL_ACCESS_WRITE, &s);
    if (rc != YYC_OK) return rc;
    int src = sqlite3_exec(kv->db, "begin immediate;", NULL, NULL, NULL);
    size_t n = 0;
    for (yyc__lru_node *node = kv->access.tail; node && n < max && src == SQLITE_OK;
         node = yyc__lru_node_prev(node), n++) { /* the oldest noted first */
        sqlite3_bind_int64(s, 1, (int64_t)node->time);
        sqlite3_bind_text64(s, 2, (const char *)node->key, node->key_len, SQLITE_STATIC,
                            SQLITE_UTF8);
        src = sqlite3_step(s);
        sqlite3_reset(s);
        if (src == SQLITE_DONE) src = SQLITE_OK;
    }
    yyc__stmt_done(s);
    if (src == SQLITE_OK) src = sqlite3_exec(kv->db, "commit;", NULL, NULL, NULL);
    if (src != SQLITE_OK && !sqlite3_get_autocommit(kv->db))
        sqlite3_exec(kv->db, "rollback;", NULL, NULL, NULL);
    /* Written or not, those times are forgotten: a failure (a full disk, say) loses only them. */
    for (size_t i = 0; i < n; i++) yyc__lru_node_free(yyc__lru_map_pop_tail(&kv->access));
    if (src != SQLITE_OK) return yyc__kv_sqlite_fail(kv, src, "write access times");
    return YYC_OK;
}

void yyc__kv_access_times_destroy(yyc_kv *kv) {
    yyc__lru_node *n;
    while ((n = yyc__lru_map_pop_tail(&kv->access)) != NULL) yyc__lru_node_free(n);
    yyc__lru_map_destroy(&kv->access);
}
