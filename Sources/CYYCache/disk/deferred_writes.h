/*
 * deferred_writes.h - the queue of a disk cache's deferred writes (private; not API).
 *
 * A map from key to the last queued write of that key (a value with its extended data and file
 * name, or a removal). A later write of a key replaces the queued one in place: the queue is
 * committed in one all-or-nothing transaction (yyc__kv_apply_batch), so only each key's last
 * write matters, and whatever order the batch has, a crash leaves either all of it or none.
 *
 * Keys are hashed with a per-queue seed from arc4random_buf (crafted keys cannot make chains
 * long); the bucket array doubles when the entries outnumber it.
 *
 * Memory: each entry is one block bump-allocated at the end of a list of chunks, in the order
 * the writes were queued, so that queueing costs no malloc, a commit reads the entries front to
 * back (yyc__deferred_each) and clearing frees a few chunks. An entry replaced by a later write
 * of its key is marked dead and keeps its room until the queue is cleared: `held` (every chunk's
 * bytes, dead entries included) is what the owner bounds.
 *
 * Invariants: count is the number of live entries; bytes the sum of their value and extended
 * data lengths; every live entry is in the chain of bucket (hash & (nbuckets - 1)) and no dead
 * one is; nbuckets is 0 or a power of two; each key is in at most one live entry; the chunks
 * from first to last hold every entry, live and dead, back to back (each `size` bytes), and held
 * is the sum of their sizes.
 *
 * Thread safety: none; the owner (disk_cache.c) guards it with the core's mutex.
 */
#ifndef YYCACHE_DEFERRED_WRITES_H
#define YYCACHE_DEFERRED_WRITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One queued write: one malloc block holding the entry, the key, the value, the extended data
 * and the file name. */
typedef struct yyc__deferred_entry {
    struct yyc__deferred_entry *next; /* in its bucket */
    uint64_t hash;
    size_t size;       /* bytes of the block (to the next entry of its chunk) */
    bool dead;         /* replaced by a later write of its key */
    bool remove;       /* a removal (no value) */
    int64_t expiry_ms; /* the save's expiry (unix ms, yyc__kv_now_ms's clock; 0: never) */
    const void *value; /* NULL when len == 0 */
    size_t len;
    const void *extended; /* NULL when extended_len == 0 */
    size_t extended_len;
    const char *filename; /* NULL: inline */
    char key[];
} yyc__deferred_entry;

typedef struct yyc__deferred_chunk yyc__deferred_chunk;

typedef struct yyc__deferred {
    yyc__deferred_entry **buckets;
    size_t nbuckets;
    size_t count;
    size_t bytes;
    size_t held; /* bytes of the chunks (live and dead entries, and the rest of the last one) */
    yyc__deferred_chunk *first, *last;
    uint64_t seed;
} yyc__deferred;

/* An empty queue (allocates nothing yet). */
void yyc__deferred_init(yyc__deferred *d);
/* Frees every entry and the buckets; the queue is empty and usable again. */
void yyc__deferred_clear(yyc__deferred *d);

/* Queues a write of key (a removal when remove; else value/len, extended/extended_len,
 * filename, NULL for inline, and expiry_ms), replacing the key's queued write. Everything is
 * copied.
 * Returns false when out of memory (the queue is unchanged). */
bool yyc__deferred_put(yyc__deferred *d, const char *key, bool remove, const void *value,
                       size_t len, const void *extended, size_t extended_len, const char *filename,
                       int64_t expiry_ms);

/* The key's queued write, or NULL (borrowed until the queue changes). */
const yyc__deferred_entry *yyc__deferred_find(const yyc__deferred *d, const char *key);

/* Calls fn on every live entry, in the order they were queued (a write that replaced a queued
 * one counts from its own time). */
void yyc__deferred_each(const yyc__deferred *d, void (*fn)(void *ctx, const yyc__deferred_entry *e),
                        void *ctx);

#ifdef YYC_TESTING
/* Testing: asserts the invariants above. */
void yyc__deferred_check(const yyc__deferred *d);
#endif

#endif /* YYCACHE_DEFERRED_WRITES_H */
