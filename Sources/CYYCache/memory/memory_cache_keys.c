/*
 * memory_cache_keys.c - enumeration: copying the keys (and entries with retained values)
 * out, expired entries left out.
 *
 * The struct, its invariants and the shared helpers: memory_cache_internal.h.
 */
#include "memory/memory_cache_internal.h"

/* --- keys --- */

/* Both copies: a key array (values NULL) or an entry array with retained values. */
static int copy_keys_impl(yyc_memcache *c, bool with_values, void **out, size_t *out_count) {
    yyc__mc_scope scope;
    yyc__mc_scope_enter(&scope, c);
    yyc__mc_purge_expired(c, false); /* removed, and reported, as by a trim */
    yyc__mc_lock(c);
    double now = c->expiry.live ? yyc__mc_ttl_now() : 0; /* one clock reading for both passes */
    size_t count = 0, bytes = 0;
    for (yyc__lru_node *n = c->map.head; n; n = n->next) {
        if (yyc__mc_expired_at_locked(c, n, now)) continue; /* expired since the purge */
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
                if (yyc__mc_expired_at_locked(c, n, now)) continue;
                if (n->key_len) memcpy(at, n->key, n->key_len);
                if (with_values) {
                    yyc_memcache_entry *e = (yyc_memcache_entry *)array + i;
                    *e = (yyc_memcache_entry){.key = at, .key_len = n->key_len};
                    yyc__mc_copy_out_locked(c, &e->value, &n->value);
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
    yyc__mc_unlock(c);
    yyc__mc_scope_exit(&scope);
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
