/*
 * s3fifo_ghost.h - S3-FIFO's ghost queue: a FIFO of the hashes of recently evicted keys with
 * O(1) membership (private; not API).
 *
 * Remembers only 64-bit key hashes (never keys or values): a ring of the hashes in eviction
 * order plus an open-addressing index of ring positions, about 8 + 4 / 0.75 bytes per
 * remembered key. Two different keys with equal 64-bit hashes are taken for one another (the
 * map's seeded hash makes that ~2^-64 per pair).
 *
 * Thread safety: none; the owner's lock covers every call. Ownership: the ghost owns its two
 * arrays; nothing else.
 *
 * Invariants (checked by yyc__ghost_check in test builds):
 *   - ring is NULL iff ring_cap == 0 iff index is NULL; index has index_mask + 1 slots, a power
 *     of two with used <= ring_cap <= (index_mask + 1) * 3 / 4.
 *   - the used positions oldest, oldest + 1, ... (mod ring_cap) hold the remembered hashes,
 *     oldest first, or 0 for a hole (a hash forgotten by a take); live counts the non-holes.
 *     A remembered hash is never 0 (0 is stored as 1).
 *   - each index slot is 0 (empty) or a used non-hole ring position + 1; every non-hole
 *     position is in exactly one slot, reachable by linear probing from its hash's home
 *     (hash & index_mask) without crossing an empty slot. No hash is remembered twice.
 */
#ifndef YYCACHE_S3FIFO_GHOST_H
#define YYCACHE_S3FIFO_GHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct yyc__ghost {
    uint64_t *ring;  /* ring_cap hashes (0 = hole) */
    size_t ring_cap; /* allocated ring slots */
    size_t oldest;   /* ring position of the oldest used slot */
    size_t used;     /* used ring slots, holes included */
    size_t live;     /* remembered hashes */
    uint32_t *index; /* index_mask + 1 slots: 0 empty, else ring position + 1 */
    size_t index_mask;
} yyc__ghost;

/* An empty ghost (allocates nothing). */
void yyc__ghost_init(yyc__ghost *g);

/* Frees both arrays; the ghost is left empty, as after init. */
void yyc__ghost_destroy(yyc__ghost *g);

/* If hash is remembered, forgets it and returns true; else returns false. */
bool yyc__ghost_take(yyc__ghost *g, uint64_t hash);

/* Remembers hash as the newest entry (hash must not be remembered already), then forgets the
 * oldest entries until at most capacity remain. capacity 0 forgets everything. If memory runs
 * out the oldest entry is forgotten to make room (the ghost is a hint, never a failure). */
void yyc__ghost_push(yyc__ghost *g, uint64_t hash, size_t capacity);

/* Number of remembered hashes. */
static inline size_t yyc__ghost_count(const yyc__ghost *g) { return g->live; }

/* Bytes the ghost's arrays take (for the footprint report and tests). */
static inline size_t yyc__ghost_bytes(const yyc__ghost *g) {
    return g->ring_cap * sizeof(uint64_t) + (g->index ? (g->index_mask + 1) * sizeof(uint32_t) : 0);
}

#ifdef YYC_TESTING
/* Checks every invariant above (O(size)). Prints the first broken one to stderr. */
bool yyc__ghost_check(const yyc__ghost *g);
#endif

#endif /* YYCACHE_S3FIFO_GHOST_H */
