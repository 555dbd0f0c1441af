/*
 * memory_cache_reads.c - gets that do not take the mutex (SIEVE, S3-FIFO, TinyLFU): the reader
 * stripes, the exclusion of shared readers by the lock's holder, and TinyLFU's read buffers.
 *
 * The protocol (memory_cache_internal.h, "shared reads"): a reader adds 1 to its stripe's
 * readers, then reads `writer` and shared_reads (sequentially consistent, so that either the
 * reader sees `writer` set or the holder sees the reader's count: never neither); the holder
 * sets `writer`, then waits for every stripe's count to be 0. A reader that sees `writer` set
 * (or shared reads switched off) undoes its count and takes the mutex like any call.
 *
 * The struct, its invariants and the shared helpers: memory_cache_internal.h.
 */
#include "memory/memory_cache_internal.h"

#include <sched.h>
#include <unistd.h>

/* Threads are numbered in the order of their first shared get (0: not yet), so that the first
 * threads of a process read in different stripes whatever their pthread_t. */
static atomic_uint thread_numbers;
static _Thread_local unsigned thread_number;

/* This thread's stripe. */
static inline yyc__mc_stripe *my_stripe(yyc_memcache *c) {
    unsigned n = thread_number;
    if (__builtin_expect(n == 0, 0)) {
        n = atomic_fetch_add_explicit(&thread_numbers, 1, memory_order_relaxed) + 1;
        if (n == 0) n = 1; /* after 2^32 threads */
        thread_number = n;
    }
    return &c->stripes[n & c->stripe_mask];
}

/* Applies the TinyLFU hits buffered on s (under lock, no reader inside). */
static void drain_locked(yyc_memcache *c, yyc__mc_stripe *s) {
    size_t n = atomic_load_explicit(&s->pending, memory_order_relaxed);
    if (n > YYC__MC_READ_BUFFER) n = YYC__MC_READ_BUFFER;
    for (size_t i = 0; i < n; i++)
        yyc__lru_map_tinylfu_hit(&c->map,
                                 atomic_load_explicit(&s->buffer[i], memory_order_relaxed));
    atomic_store_explicit(&s->pending, 0, memory_order_relaxed);
}

/* Moves s's unfolded counts to its folded ones (under lock, shared readers excluded). */
static void fold_locked(yyc__mc_stripe *s) {
    uint64_t v = atomic_load_explicit(&s->state, memory_order_relaxed);
    uint64_t h = v >> 16 & YYC__MC_FIELD, m = v >> 40 & YYC__MC_FIELD;
    atomic_fetch_sub_explicit(&s->state, h * YYC__MC_HIT + m * YYC__MC_MISS, memory_order_relaxed);
    s->hits += h;
    s->misses += m;
}

void yyc__mc_exclude_readers_locked(yyc_memcache *c) {
    yyc__assert_held(&c->lock);
    assert(c->stripes && !c->excluding);
    c->excluding = true;
    atomic_store_explicit(&c->writer, true, memory_order_seq_cst);
    /* Every set of a shared-read policy comes here: one pass of a few instructions per stripe
     * (a stripe's pending count is final once its readers were seen at 0, as a reader that
     * enters now sees `writer` and leaves without buffering). */
    unsigned to_fold = 0, to_drain = 0;
    yyc__mc_stripe *s = c->stripes;
    for (unsigned i = 0; i <= c->stripe_mask; i++, s++) {
        uint64_t v = atomic_load_explicit(&s->state, memory_order_seq_cst);
        if (__builtin_expect((v & YYC__MC_READERS) != 0, 0)) {
            /* A reader inside runs a lookup and a retain or copy callback: short, so spin;
             * yield when it was descheduled meanwhile. */
            for (unsigned spins = 0; ((v = atomic_load_explicit(&s->state, memory_order_seq_cst)) &
                                      YYC__MC_READERS) != 0;
                 spins++) {
                if (spins >= 64) sched_yield();
            }
        }
        to_fold |= (unsigned)((v & YYC__MC_FOLD_BITS) != 0) << i;
        to_drain |= (unsigned)(atomic_load_explicit(&s->pending, memory_order_relaxed) != 0) << i;
    }
    /* Only once every stripe is empty: a reader still inside on a later stripe reads the links
     * the drain moves. */
    for (; to_fold; to_fold &= to_fold - 1) fold_locked(&c->stripes[__builtin_ctz(to_fold)]);
    for (; to_drain; to_drain &= to_drain - 1)
        drain_locked(c, &c->stripes[__builtin_ctz(to_drain)]);
}

void yyc__mc_set_policy_locked(yyc_memcache *c, yyc__policy policy) {
    yyc__assert_held(&c->lock);
    assert(yyc__lru_map_count(&c->map) == 0);
    yyc__lru_map_set_policy(&c->map, policy);
    if (policy != YYC__POLICY_LRU && !c->stripes) {
        /* As many stripes as processors (a power of two, at most YYC__MC_STRIPES): every lock
         * taken reads each of them, and no more readers than processors run at once. */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned n = 1;
        while (n < YYC__MC_STRIPES && (long)n < cpus) n *= 2;
        /* Without memory for the stripes every get takes the mutex, as with LRU. */
        size_t bytes = n * sizeof(yyc__mc_stripe);
        c->stripes = aligned_alloc(_Alignof(yyc__mc_stripe), bytes);
        if (c->stripes) {
            memset(c->stripes, 0, bytes);
            c->stripe_mask = n - 1;
        }
    }
    /* Readers are excluded (the lock was taken with shared reads on) or cannot be inside (they
     * were off). */
    atomic_store_explicit(&c->shared_reads, policy != YYC__POLICY_LRU && c->stripes != NULL,
                          memory_order_seq_cst);
}

void yyc__mc_shared_stats_locked(yyc_memcache *c, uint64_t *hits, uint64_t *misses) {
    yyc__assert_held(&c->lock);
    *hits = *misses = 0;
    for (unsigned i = 0; c->stripes && i <= c->stripe_mask; i++) {
        fold_locked(&c->stripes[i]);
        *hits += c->stripes[i].hits;
        *misses += c->stripes[i].misses;
    }
}

void yyc__mc_shared_stats_reset_locked(yyc_memcache *c) {
    yyc__assert_held(&c->lock);
    for (unsigned i = 0; c->stripes && i <= c->stripe_mask; i++) {
        fold_locked(&c->stripes[i]);
        c->stripes[i].hits = c->stripes[i].misses = 0;
    }
}

/* Records a hit on n by the policy, concurrently with other readers (inside a stripe). */
static inline void shared_touch(yyc_memcache *c, yyc__mc_stripe *s, yyc__lru_node *n,
                                yyc__policy policy, bool *drain) {
    uintptr_t bits = __atomic_load_n(&n->prev_bits, __ATOMIC_RELAXED);
    switch (policy) {
    case YYC__POLICY_SIEVE: /* a store only when the bit is not set yet: hot nodes stay shared */
        if (!(bits & YYC__SIEVE_VISITED))
            __atomic_fetch_or(&n->prev_bits, YYC__SIEVE_VISITED, __ATOMIC_RELAXED);
        break;
    case YYC__POLICY_S3FIFO: /* frequency + 1, at most 3 */
        while ((bits & YYC__S3_FREQ) != YYC__S3_FREQ &&
               !__atomic_compare_exchange_n(&n->prev_bits, &bits, bits + 1, true, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED)) {
        }
        break;
    case YYC__POLICY_TINYLFU: {
        /* A slot claimed with a load and a store rather than an atomic add (a third of a single
         * thread's hit cost went to locked instructions): two readers of one stripe may claim
         * the same slot, or move pending back; each loses a hit at worst (the buffer is lossy).
         * A slot below pending was always written in this round: pending only grows past k
         * through a reader that loaded k, which writes slot k before it leaves, and the drain
         * runs with no reader inside. */
        size_t i = atomic_load_explicit(&s->pending, memory_order_relaxed);
        if (i < YYC__MC_READ_BUFFER) {
            atomic_store_explicit(&s->buffer[i], n, memory_order_relaxed);
            atomic_store_explicit(&s->pending, i + 1, memory_order_relaxed);
        }
        *drain = i + 1 >= YYC__MC_READ_BUFFER; /* full: drain it (or lose later hits) */
        break;
    }
    case YYC__POLICY_LRU: break; /* never shared */
    }
    (void)c;
}

/* Leaves s counting a hit or a miss (unit, at bit shift). Returns whether the count is due to
 * be folded (the caller then tries the lock, whose holder folds it): every YYC__MC_FOLD_STEP + 1
 * counts past YYC__MC_FOLD_AT, so a busy lock only delays it. */
static inline bool leave_counting(yyc_memcache *c, yyc__mc_stripe *s, uint64_t unit,
                                  unsigned shift) {
    (void)c;
    uint64_t was = atomic_fetch_add_explicit(&s->state, unit - 1, memory_order_release);
    uint64_t count = (was >> shift & YYC__MC_FIELD) + 1;
    return __builtin_expect(count >= YYC__MC_FOLD_AT && (count & YYC__MC_FOLD_STEP) == 0, 0);
}

/* A spin-wait hint to the processor. */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Times a get waits for a writer to leave before it takes the mutex, and the pauses of each
 * wait: a writer holds the lock for a lookup and a relink or two, while a get that queues on
 * the mutex behind it may sleep and be woken (microseconds: two threads ran slower than one). */
#define WRITER_WAITS 2u
#define WRITER_WAIT_SPINS 128u

/* A reader that entered s and saw a writer (or shared reads off): leaves, waits a little for
 * the writer to go and enters again. Returns whether it is inside (else: take the mutex). */
static __attribute__((noinline, cold)) bool wait_for_writer(yyc_memcache *c, yyc__mc_stripe *s) {
    for (unsigned waits = 0;; waits++) {
        atomic_fetch_sub_explicit(&s->state, 1, memory_order_release);
        if (!atomic_load_explicit(&c->shared_reads, memory_order_relaxed) || waits == WRITER_WAITS)
            return false;
        for (unsigned spins = 0;
             spins < WRITER_WAIT_SPINS && atomic_load_explicit(&c->writer, memory_order_relaxed);
             spins++)
            cpu_relax();
        atomic_fetch_add_explicit(&s->state, 1, memory_order_seq_cst);
        if (!atomic_load_explicit(&c->writer, memory_order_seq_cst) &&
            atomic_load_explicit(&c->shared_reads, memory_order_seq_cst))
            return true;
    }
}

int yyc__mc_shared_get(yyc_memcache *c, const void *key, size_t key_len, void *out,
                       bool inline_mode) {
    yyc__mc_stripe *s = my_stripe(c);
    atomic_fetch_add_explicit(&s->state, 1, memory_order_seq_cst);
    if (__builtin_expect(atomic_load_explicit(&c->writer, memory_order_seq_cst) ||
                             !atomic_load_explicit(&c->shared_reads, memory_order_seq_cst),
                         0) &&
        !wait_for_writer(c, s))
        return YYC__MC_USE_LOCK;
    /* Inside: no holder of the lock changes the map until this reader leaves. */
    yyc__lru_node *n = yyc__lru_map_find(&c->map, key, key_len);
    if (!n) {
        if (leave_counting(c, s, YYC__MC_MISS, 40) && yyc__mc_try_lock(c)) yyc__mc_unlock(c);
        return YYC_NOTFOUND;
    }
    if (__builtin_expect(c->expiry.live != 0, 0) && yyc__mc_expired(c, n)) {
        /* The locked path removes it and counts the miss. */
        atomic_fetch_sub_explicit(&s->state, 1, memory_order_release);
        return YYC__MC_USE_LOCK;
    }
    /* Copied or retained before leaving: no set can replace and drop the value meanwhile. An
     * object is prefetched first and retained last, so that its likely cache miss overlaps the
     * rest of the hit (as in the locked get). */
    void *v = NULL;
    if (inline_mode) {
        const void *slot = yyc__lru_node_value(n, c->value_size, c->value_align);
        if (c->itype.copy) c->itype.copy(c->itype.ctx, out, slot);
        else yyc__mc_copy_bytes(out, slot, c->value_size);
    } else {
        v = n->value;
        if (v && c->cb.retain) __builtin_prefetch(v, 1);
    }
    /* The entry's time: written only when the coarse clock has moved, so that a hot node's line
     * is not written by every hit. */
    double now = yyc__mc_clock_now(), was;
    __atomic_load(&n->time, &was, __ATOMIC_RELAXED);
    if (was != now) __atomic_store(&n->time, &now, __ATOMIC_RELAXED);
    bool drain = false;
    shared_touch(c, s, n, c->map.policy, &drain);
    if (v && c->cb.retain) v = c->cb.retain(c->cb.ctx, v);
    if (!inline_mode) *(void **)out = v;
    drain |= leave_counting(c, s, YYC__MC_HIT, 16);
    if (__builtin_expect(drain, 0) && yyc__mc_try_lock(c)) yyc__mc_unlock(c); /* drains, folds */
    return YYC_OK;
}
