/*
 * tinylfu_sketch.c - the 4-bit count-min sketch of Window TinyLFU. See tinylfu_sketch.h.
 */
#include "memory/tinylfu_sketch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESET_MASK UINT64_C(0x7777777777777777)
#define ONE_MASK UINT64_C(0x1111111111111111)
#define MAX_LEN ((size_t)1 << 30)
#ifndef SKETCH_SAMPLE
#define SKETCH_SAMPLE 3 /* halvings every SKETCH_SAMPLE x the capacity (Caffeine: 10) */
#endif

void yyc__sketch_ensure(yyc__sketch *s, size_t capacity) {
    size_t len = 8;
    while (len < capacity && len < MAX_LEN) len <<= 1;
    if (s->len >= len) return;
    uint64_t *t = calloc(len, sizeof *t);
    if (!t) return;
    free(s->table);
    s->table = t;
    s->len = len;
    s->block_mask = len / 8 - 1;
    s->size = 0;
    size_t cap = capacity < MAX_LEN ? capacity : MAX_LEN;
    s->capacity = cap ? cap : 1;
    s->sample_size = SKETCH_SAMPLE * s->capacity; /* Caffeine: 10 x; see tinylfu_sketch.h */
}

/* The word and the counter (0..15) of the key's i-th counter. */
static inline void locate(const yyc__sketch *s, uint64_t hash, unsigned i, size_t *word,
                          unsigned *counter) {
    uint32_t block_hash = (uint32_t)hash, counter_hash = (uint32_t)(hash >> 32);
    size_t block = ((size_t)block_hash & s->block_mask) << 3;
    uint32_t h = counter_hash >> (i << 3);
    *counter = (h >> 1) & 15;
    *word = block + (h & 1) + ((size_t)i << 1);
}

/* Halves every counter (Caffeine's reset). */
static void halve(yyc__sketch *s) {
    size_t odd = 0;
    for (size_t i = 0; i < s->len; i++) {
        odd += (size_t)__builtin_popcountll(s->table[i] & ONE_MASK);
        s->table[i] = (s->table[i] >> 1) & RESET_MASK;
    }
    s->size = (s->size - (odd >> 2)) >> 1;
}

void yyc__sketch_increment(yyc__sketch *s, uint64_t hash) {
    if (!s->table) return;
    bool added = false;
    for (unsigned i = 0; i < 4; i++) {
        size_t w;
        unsigned c;
        locate(s, hash, i, &w, &c);
        uint64_t mask = UINT64_C(0xf) << (c << 2);
        if ((s->table[w] & mask) != mask) {
            s->table[w] += UINT64_C(1) << (c << 2);
            added = true;
        }
    }
    if (added && ++s->size >= s->sample_size) halve(s);
}

unsigned yyc__sketch_frequency(const yyc__sketch *s, uint64_t hash) {
    if (!s->table) return 0;
    unsigned f = 15;
    for (unsigned i = 0; i < 4; i++) {
        size_t w;
        unsigned c;
        locate(s, hash, i, &w, &c);
        unsigned v = (unsigned)((s->table[w] >> (c << 2)) & 15);
        if (v < f) f = v;
    }
    return f;
}

void yyc__sketch_destroy(yyc__sketch *s) {
    free(s->table);
    memset(s, 0, sizeof *s);
}

#ifdef YYC_TESTING
bool yyc__sketch_check(const yyc__sketch *s) {
    bool ok = (s->table == NULL) == (s->len == 0);
    if (s->table)
        ok = ok && s->len >= 8 && (s->len & (s->len - 1)) == 0 && s->block_mask == s->len / 8 - 1 &&
             s->capacity >= 1 && s->sample_size == SKETCH_SAMPLE * s->capacity &&
             s->size < s->sample_size;
    if (!ok) fprintf(stderr, "tinylfu sketch invariant broken\n");
    return ok;
}
#endif
