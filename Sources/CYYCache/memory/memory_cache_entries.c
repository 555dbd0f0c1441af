/*
 * memory_cache_entries.c - the entries: write generations, set (all its variants), get,
 * contains, remove and remove_all.
 *
 * The struct, its invariants and the shared helpers: memory_cache_internal.h.
 */
#include "memory/memory_cache_internal.h"

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
    yyc__mc_lock(c);
    c->tracks_generations = true;
    uint64_t g = c->generation_epoch + *generation_stripe_locked(c, key, key_len);
    yyc__mc_unlock(c);
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
    double now = yyc__mc_clock_now();

    yyc__mc_lock(c);
    uint64_t *stripe = c->tracks_generations ? generation_stripe_locked(c, key, key_len) : NULL;
    if (if_generation && !(stripe && c->generation_epoch + *stripe == *if_generation)) {
        yyc__mc_unlock(c);
        return YYC_OK; /* written meanwhile: nothing stored (inline: the bytes were not read) */
    }
    if (isnan(ttl)) ttl = c->default_ttl;
    bool expires = ttl < INFINITY;
    if (expires && !yyc__expiry_reserve(&c->expiry)) {
        yyc__mc_unlock(c);
        return YYC_ENOMEM; /* nothing changed */
    }
    bool inserted;
    /* A new key at the count limit evicts first (the policy never picks the new entry). */
    yyc__lru_node *n = yyc__lru_map_find_or_insert_within(&c->map, key, key_len, c->count_limit,
                                                          c->cost_limit, &inserted, &evicted);
    if (evicted) {
        if (c->expiry.live) yyc__expiry_forget(&c->expiry, evicted);
        yyc__mc_set_cause_locked(c, evicted, YYC_REMOVED_EVICTED);
    }
    /* With a removal listener the replaced value leaves in a copy of the node (with the key). */
    yyc__lru_node *replaced = NULL;
    if (n && !inserted && c->removal_fn && !(replaced = yyc__lru_map_copy_node(&c->map, n)))
        n = NULL; /* out of memory: nothing replaced (an evicted entry is still released) */
    if (!n) {
        bool queue = evicted && c->release_async && yyc__mc_stash_list_locked(c, evicted, evicted);
        if (c->release_async) evicted = NULL;
        yyc__mc_unlock(c);
        if (queue) yyc__mc_schedule_release(c);
        if (evicted) {
            yyc__mc_scope scope;
            yyc__mc_scope_enter(&scope, c);
            yyc__mc_release_list(c, evicted);
            yyc__mc_scope_exit(&scope);
        }
        return YYC_ENOMEM; /* inline: the bytes were not read; the caller still owns them */
    }
    if (stripe) ++*stripe;
    c->stats.insertions++;
    if (replaced) {
        yyc__mc_set_cause_locked(c, replaced, YYC_REMOVED_REPLACED);
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
        yyc__mc_copy_bytes(slot, bytes, c->value_size);
    } else {
        if (!inserted && !replaced && n->value) {
            memcpy(old, &n->value, sizeof n->value);
            have_old = true;
        }
        n->value = (value && c->cb.retain) ? c->cb.retain(c->cb.ctx, value) : value;
    }
    n->time = now;
    if (expires) yyc__expiry_set(&c->expiry, n, yyc__mc_ttl_now() + ttl);
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
            yyc__mc_set_cause_locked(c, evicted, YYC_REMOVED_EVICTED);
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
            int s = yyc__mc_stash_slot_locked(c, old);
            if (s >= 0) have_old = false; /* else dropped inline below */
            queue_release |= (s == 1);
        }
        if (evicted) {
            queue_release |= yyc__mc_stash_list_locked(c, evicted, evicted_tail);
            evicted = NULL;
        }
    }
    yyc__mc_unlock(c);

    if (queue_trim && yyc__worker_async(YYC__QUEUE_MEMORY, c, yyc__mc_cost_trim_job, c) != YYC_OK) {
        yyc__mc_lock(c);
        c->cost_trim_pending = false; /* the auto-trim will catch up */
        yyc__mc_unlock(c);
    }
    if (queue_release) yyc__mc_schedule_release(c);
    if (out_stored) *out_stored = true;
    if (have_old || evicted) {
        yyc__mc_scope scope;
        yyc__mc_scope_enter(&scope, c);
        if (have_old) yyc__mc_drop_slot(c, old);
        yyc__mc_release_list(c, evicted);
        yyc__mc_scope_exit(&scope);
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

/* Both gets (inline_mode is a constant in each caller, so each gets its own copy). Pointer
 * mode stores a retained reference in *(void **)out; inline mode copies the value to out. */
static inline __attribute__((always_inline)) int
get_impl(yyc_memcache *c, const void *key, size_t key_len, void *out, bool inline_mode) {
    if (atomic_load_explicit(&c->shared_reads, memory_order_acquire)) { /* memory_cache_reads.c */
        int rc = yyc__mc_shared_get(c, key, key_len, out, inline_mode);
        if (rc != YYC__MC_USE_LOCK) return rc;
    }
    yyc__mc_lock(c);
    yyc__lru_node *n = yyc__lru_map_find(&c->map, key, key_len);
    if (!n) {
        c->stats.misses++;
        yyc__mc_unlock(c);
        return YYC_NOTFOUND;
    }
    if (__builtin_expect(c->expiry.live != 0, 0) && yyc__mc_expired_locked(c, n)) {
        c->stats.misses++;
        yyc__mc_drop_expired_and_unlock(c, n);
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
        else yyc__mc_copy_bytes(out, slot, c->value_size);
    }
    n->time = yyc__mc_clock_now();
    if (lru) yyc__lru_map_move_to_head(&c->map, n); /* the default policy first */
    else yyc__lru_map_touch_as(&c->map, n, policy);
    if (!inline_mode && v && c->cb.retain) v = c->cb.retain(c->cb.ctx, v);
    yyc__mc_unlock(c);
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
    yyc__mc_lock(c);
    yyc__lru_node *n = yyc__lru_map_find(&c->map, key, key_len);
    if (n && yyc__mc_expired_locked(c, n)) {
        yyc__mc_drop_expired_and_unlock(c, n);
        return false;
    }
    yyc__mc_unlock(c);
    return n != NULL;
}

/* Both removes: with if_generation, only if key's generation is still *if_generation. */
static int remove_impl(yyc_memcache *c, const void *key, size_t key_len,
                       const uint64_t *if_generation) {
    if (!c || (!key && key_len > 0)) return YYC_EINVAL;
    yyc__mc_lock(c);
    if (if_generation && !generation_is_locked(c, key, key_len, *if_generation)) {
        yyc__mc_unlock(c);
        return YYC_OK;
    }
    bump_generation_locked(c, key, key_len);
    yyc__lru_node *n = yyc__lru_map_unlink_key(&c->map, key, key_len);
    if (n) {
        if (c->expiry.live) yyc__expiry_forget(&c->expiry, n);
        yyc__mc_set_cause_locked(c, n, YYC_REMOVED_EXPLICIT);
    }
    yyc__mc_unlock_and_release(c, n);
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
bool yyc__mc_detach_all_locked(yyc_memcache *c, bool async, yyc_removal_cause cause,
                               yyc__lru_node **out_list, void **out_table) {
    yyc__assert_held(&c->lock);
    yyc__lru_node *tail = c->map.tail;
    size_t count = yyc__lru_map_count(&c->map);
    yyc__lru_node *list = yyc__lru_map_detach_all(&c->map, out_table);
    yyc__expiry_clear(&c->expiry);
    if (list) { /* the head carries the chain's cause (memory_cache_internal.h) */
        yyc__mc_set_cause_locked(c, list, cause);
        c->stats.removals[cause] += count - 1;
    }
    *out_list = NULL;
    if (async) return yyc__mc_stash_list_locked(c, list, tail);
    *out_list = list;
    return false;
}

/* remove_all, reporting every entry with cause. */
void yyc__mc_remove_all_because(yyc_memcache *c, yyc_removal_cause cause) {
    yyc__lru_node *list;
    void *table;
    yyc__mc_lock(c);
    c->generation_epoch++; /* a write on every key (memory_cache.h) */
    bool queue_release = yyc__mc_detach_all_locked(c, c->release_async, cause, &list, &table);
    yyc__mc_unlock(c);
    free(table);
    if (queue_release) yyc__mc_schedule_release(c);
    if (list) {
        yyc__mc_scope scope;
        yyc__mc_scope_enter(&scope, c);
        yyc__mc_release_list(c, list);
        yyc__mc_scope_exit(&scope);
    }
}

void yyc_memcache_remove_all(yyc_memcache *c) {
    if (!c) return;
    yyc__mc_remove_all_because(c, YYC_REMOVED_EXPLICIT);
}
/* Copies a stored value out for a caller (under lock): a retained reference in *(void **)dst
 * (pointer caches) or the bytes copied with the type's copy callback (inline caches). */
void yyc__mc_copy_out_locked(yyc_memcache *c, void *dst, const void *src_slot) {
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