/*
 * memory_cache_expiry.c - time to live: the removal of expired entries (on a read that finds
 * one, by the trims, the auto-trim and enumeration), the default time to live, and the clock
 * tests move.
 *
 * The struct, its invariants and the shared helpers: memory_cache_internal.h.
 */
#include "memory/memory_cache_internal.h"

#ifdef YYC_TESTING
/* Test builds: seconds added to the deadlines' clock (yyc__mc_ttl_now; moved by tests instead of
 * sleeping). Ages (yyc__mc_clock_now) do not move: the age limit's tests and fuzzing rely on real
 * time. */
_Atomic double yyc__mc_testing_clock_offset;
void yyc__memcache_testing_advance_clock(double seconds) {
    double old = atomic_load(&yyc__mc_testing_clock_offset);
    while (!atomic_compare_exchange_weak(&yyc__mc_testing_clock_offset, &old, old + seconds)) {
    }
}
#endif

/* --- expired entries --- */

/* Unlinks the expired node n (under the lock), then unlocks; its value follows the release
 * policy, as a removed one's (released in a callback scope: the caller must not touch c after
 * this returns, since a release callback may have freed it). */
__attribute__((noinline, cold)) void yyc__mc_drop_expired_and_unlock(yyc_memcache *c,
                                                                     yyc__lru_node *n) {
    yyc__lru_map_unlink(&c->map, n);
    yyc__expiry_forget(&c->expiry, n);
    yyc__mc_set_cause_locked(c, n, YYC_REMOVED_EXPIRED);
    yyc__mc_unlock_and_release(c, n);
}

/* Removes every expired entry: EXPIRE_STEP per lock acquisition, O(expired) work (expiry.h).
 * on_worker: as for trim. */
#define EXPIRE_STEP 256
void yyc__mc_purge_expired(yyc_memcache *c, bool on_worker) {
    for (;;) {
        yyc__lru_node *list = NULL, *tail = NULL;
        size_t taken = 0;
        bool queue_release = false;
        yyc__mc_lock(c);
        if (c->expiry.live) {
            double now = yyc__mc_ttl_now();
            yyc__lru_node *n;
            while (taken < EXPIRE_STEP && (n = yyc__expiry_pop_due(&c->expiry, now))) {
                yyc__lru_map_unlink(&c->map, n);
                yyc__mc_set_cause_locked(c, n, YYC_REMOVED_EXPIRED);
                if (tail) tail->next = n;
                else list = n;
                tail = n;
                taken++;
            }
        }
        if (list && c->release_async && !on_worker) {
            queue_release = yyc__mc_stash_list_locked(c, list, tail);
            list = NULL;
        }
        yyc__mc_unlock(c);
        if (queue_release) yyc__mc_schedule_release(c);
        yyc__mc_release_list(c, list);
        if (taken < EXPIRE_STEP) return;
    }
}

void yyc_memcache_set_default_time_to_live(yyc_memcache *c, double seconds) {
    if (!c) return;
    if (isnan(seconds)) seconds = INFINITY;
    if (seconds < 0) seconds = 0;
    yyc__mc_lock(c);
    c->default_ttl = seconds;
    yyc__mc_unlock(c);
}

double yyc_memcache_default_time_to_live(yyc_memcache *c) {
    if (!c) return INFINITY;
    yyc__mc_lock(c);
    double v = c->default_ttl;
    yyc__mc_unlock(c);
    return v;
}

int yyc_memcache_time_to_live(yyc_memcache *c, const void *key, size_t key_len,
                              double *out_seconds) {
    if (out_seconds) *out_seconds = 0;
    if (!c || !out_seconds || (!key && key_len > 0)) return YYC_EINVAL;
    yyc__mc_lock(c);
    yyc__lru_node *n = yyc__lru_map_find(&c->map, key, key_len);
    double deadline = INFINITY, now = 0;
    if (n && c->expiry.live && yyc__expiry_deadline(&c->expiry, n, &deadline)) {
        now = yyc__mc_ttl_now();
        if (now >= deadline) {
            yyc__mc_drop_expired_and_unlock(c, n);
            return YYC_NOTFOUND;
        }
    }
    yyc__mc_unlock(c);
    if (!n) return YYC_NOTFOUND;
    *out_seconds = deadline < INFINITY ? deadline - now : INFINITY;
    return YYC_OK;
}
