/*
 * tinylfu_sketch.h - Window TinyLFU's frequency sketch (private; not API): a 4-bit count-min
 * sketch with periodic halving, as Caffeine 3's FrequencySketch (block-based: the four counters
 * of a key lie in one 64-byte block of the table).
 *
 * The table has len 64-bit words (a power of two >= 8), each 16 four-bit counters; a key's
 * 64-bit hash picks a block of 8 words with its low 32 bits and, with its high 32 bits, one
 * counter in each of four pairs of words of that block. increment adds 1 to each of the four
 * that is below 15; frequency is the smallest of the four (0..15). After sample_size (3 x the
 * capacity) increments that changed a counter, every counter is halved ("reset": the sketch
 * ages), and size becomes (size - odd counters / 4) / 2, as Caffeine's. Caffeine halves after
 * 10 x the capacity: halving 3 times as often lets an old working set's counts fade sooner
 * (on the hit-ratio report's traces: +1.2 points on orm-busy at 2 % and on the moving working
 * set at 10 %, +0.7 on web12 at 2 %; -0.6 on the reversing loop at 10 %, -0.5 on Zipf at 2 %).
 *
 * Thread safety: none (the owner's lock). Ownership: the sketch owns its table.
 *
 * Invariants (yyc__sketch_check in test builds): table is NULL iff len == 0 (not initialized:
 * increment does nothing, frequency is 0); otherwise len is a power of two >= 8, block_mask is
 * len / 8 - 1, capacity >= 1, sample_size == 3 x capacity, and size < sample_size.
 */
#ifndef YYCACHE_TINYLFU_SKETCH_H
#define YYCACHE_TINYLFU_SKETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct yyc__sketch {
    uint64_t *table;    /* len words of 16 four-bit counters, or NULL */
    size_t len;         /* words (a power of two >= 8), 0 before the first ensure */
    size_t block_mask;  /* len / 8 - 1 */
    size_t size;        /* increments since the last halving (Caffeine's "size") */
    size_t capacity;    /* the capacity given to the ensure that made the table (at least 1) */
    size_t sample_size; /* 3 x capacity: increments between halvings */
} yyc__sketch;

/* Sizes the sketch for capacity entries (words = the power of two >= capacity, at least 8; at
 * most 2^30). Does nothing if it is already that large; else starts over with a new, zeroed
 * table (the counts are lost, as Caffeine's ensureCapacity). If memory runs out the sketch
 * keeps its old table (or stays uninitialized): a hint, never a failure. */
void yyc__sketch_ensure(yyc__sketch *s, size_t capacity);

/* Counts one access to the key with this hash. */
void yyc__sketch_increment(yyc__sketch *s, uint64_t hash);

/* The key's estimated recent access count, 0..15. */
unsigned yyc__sketch_frequency(const yyc__sketch *s, uint64_t hash);

/* Frees the table; the sketch is left uninitialized. */
void yyc__sketch_destroy(yyc__sketch *s);

static inline bool yyc__sketch_ready(const yyc__sketch *s) { return s->table != NULL; }

#ifdef YYC_TESTING
bool yyc__sketch_check(const yyc__sketch *s);
#endif

#endif /* YYCACHE_TINYLFU_SKETCH_H */
