/*
 * memory_cache_release.c - releasing removed values with no lock held: right after unlocking
 * (synchronous release) or in one coalesced job on the background worker (the garbage).
 *
 * The struct, its invariants and the shared helpers: memory_cache_internal.h.
 */
#include "memory/memory_cache_internal.h"

/* --- releasing values --- */

static void release_value(yyc_memcache *c, void *value) {
    if (value && c->cb.release) c->cb.release(c->cb.ctx, value);
}

/* Drops the value stored in slot (no lock held): release in pointer mode, destroy inline. */
void yyc__mc_drop_slot(yyc_memcache *c, void *slot) {
    if (c->inline_values) {
        if (c->itype.destroy) c->itype.destroy(c->itype.ctx, slot);
    } else {
        void *value;
        memcpy(&value, slot, sizeof value);
        release_value(c, value);
    }
}

/* Releases every value of a detached list (chained through next) and frees the nodes; with a
 * removal listener, reports each entry with its cause first. */
void yyc__mc_release_list(yyc_memcache *c, yyc__lru_node *list) {
    yyc_memcache_removal_fn fn = NULL;
    void *ctx = NULL;
    if (list && atomic_load_explicit(&c->listening, memory_order_relaxed)) {
        yyc__mc_lock(c);
        fn = c->removal_fn;
        ctx = c->removal_ctx;
        yyc__mc_unlock(c);
    }
    yyc_removal_cause cause = YYC_REMOVED_EXPLICIT;
    while (list) {
        yyc__lru_node *next = list->next;
        if ((list->prev_bits & ~YYC__NODE_BITS) == 0) cause = (yyc_removal_cause)list->prev_bits;
        void *slot = yyc__mc_node_slot(c, list);
        if (fn) {
            void *value = slot;
            if (!c->inline_values) memcpy(&value, slot, sizeof value);
            fn(ctx, list->key, list->key_len, value, cause);
        }
        yyc__mc_drop_slot(c, slot);
        yyc__lru_node_free(list);
        list = next;
    }
}

/* Appends a detached list to the garbage. Returns true if the caller must schedule the release
 * job after unlocking. */
bool yyc__mc_stash_list_locked(yyc_memcache *c, yyc__lru_node *head, yyc__lru_node *tail) {
    yyc__assert_held(&c->lock);
    if (!head) return false;
    if (c->garbage_tail) c->garbage_tail->next = head;
    else c->garbage_head = head;
    c->garbage_tail = tail;
    if (c->release_pending) return false;
    c->release_pending = true;
    return true;
}

/* Adds a replaced value (a copy of its slot) to the garbage. Returns 1 if the caller must
 * schedule the release job, 0 if nothing more is needed, -1 if memory ran out (the caller drops
 * the value itself after unlocking). */
int yyc__mc_stash_slot_locked(yyc_memcache *c, const void *slot) {
    yyc__assert_held(&c->lock);
    if (c->garbage_nvals == c->garbage_cap) {
        size_t cap = c->garbage_cap ? c->garbage_cap * 2 : 16;
        unsigned char *vals = realloc(c->garbage_vals, cap * c->garbage_stride);
        if (!vals) return -1;
        c->garbage_vals = vals;
        c->garbage_cap = cap;
    }
    memcpy(c->garbage_vals + c->garbage_nvals++ * c->garbage_stride, slot,
           c->inline_values ? c->value_size : sizeof(void *));
    if (c->release_pending) return 0;
    c->release_pending = true;
    return 1;
}

/* Queues the release job to run YYC__MC_RELEASE_DELAY from now (called without the lock, after a
 * stash asked for it): what is removed meanwhile joins the same job, so a stream of replacing
 * sets wakes the worker about once a millisecond instead of once per set (each wake-up costs the
 * setter a system call and the lock a second user). If the worker cannot take it, the job runs
 * right here. */
void yyc__mc_schedule_release(yyc_memcache *c) {
    if (yyc__worker_async_after(YYC__QUEUE_MEMORY, c, yyc__mc_release_job, c,
                                YYC__MC_RELEASE_DELAY) != YYC_OK)
        yyc__mc_release_job(c);
}

/* Takes the whole garbage under the lock, then releases it with no lock held. */
void yyc__mc_release_job(void *arg) {
    yyc_memcache *c = arg;
    yyc__mc_scope scope;
    yyc__mc_scope_enter(&scope, c);
    yyc__mc_lock(c);
    yyc__lru_node *list = c->garbage_head;
    unsigned char *vals = c->garbage_vals;
    size_t nvals = c->garbage_nvals;
    c->garbage_head = c->garbage_tail = NULL;
    c->garbage_vals = NULL;
    c->garbage_nvals = c->garbage_cap = 0;
    c->release_pending = false;
    yyc__mc_unlock(c);
    yyc__mc_release_list(c, list);
    for (size_t i = 0; i < nvals; i++) yyc__mc_drop_slot(c, vals + i * c->garbage_stride);
    free(vals);
    yyc__mc_scope_exit(&scope);
}

/* Unlocks c (held by the caller); the detached node n (NULL: none) then follows the release
 * policy: queued for the worker, or released here in a callback scope. The caller must not
 * touch c after this returns: a release callback may have freed it. */
void yyc__mc_unlock_and_release(yyc_memcache *c, yyc__lru_node *n) {
    bool queue_release = false;
    if (n && c->release_async) {
        queue_release = yyc__mc_stash_list_locked(c, n, n);
        n = NULL;
    }
    yyc__mc_unlock(c);
    if (queue_release) yyc__mc_schedule_release(c);
    if (n) {
        yyc__mc_scope scope;
        yyc__mc_scope_enter(&scope, c);
        yyc__mc_release_list(c, n);
        yyc__mc_scope_exit(&scope);
    }
}