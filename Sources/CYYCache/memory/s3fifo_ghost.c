/*
 * s3fifo_ghost.c - S3-FIFO's ghost queue. See s3fifo_ghost.h for the contract and invariants.
 */
#include "memory/s3fifo_ghost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GHOST_MIN_RING 16u

static inline uint64_t stored(uint64_t hash) { return hash ? hash : 1; }

static inline size_t ring_pos(const yyc__ghost *g, size_t i) {
    size_t p = g->oldest + i;
    return p >= g->ring_cap ? p - g->ring_cap : p;
}

void yyc__ghost_init(yyc__ghost *g) { memset(g, 0, sizeof *g); }

void yyc__ghost_destroy(yyc__ghost *g) {
    free(g->ring);
    free(g->index);
    yyc__ghost_init(g);
}

/* The index slot holding ring position pos (whose hash is h). The slot exists. */
static size_t slot_of_pos(const yyc__ghost *g, uint64_t h, size_t pos) {
    size_t i = (size_t)h & g->index_mask;
    while (g->index[i] != (uint32_t)(pos + 1)) i = (i + 1) & g->index_mask;
    return i;
}

/* Empties index slot i, shifting the following run back (linear-probing deletion). */
static void index_erase(yyc__ghost *g, size_t i) {
    size_t mask = g->index_mask, j = i;
    for (;;) {
        j = (j + 1) & mask;
        uint32_t e = g->index[j];
        if (!e) break;
        size_t home = (size_t)g->ring[e - 1] & mask;
        /* Move e back to i unless its home lies cyclically in (i, j]. */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            g->index[i] = e;
            i = j;
        }
    }
    g->index[i] = 0;
}

static void index_put(yyc__ghost *g, uint64_t h, size_t pos) {
    size_t i = (size_t)h & g->index_mask;
    while (g->index[i]) i = (i + 1) & g->index_mask;
    g->index[i] = (uint32_t)(pos + 1);
}

/* Forgets the oldest remembered hash (skipping holes). */
static void pop_oldest(yyc__ghost *g) {
    while (g->used && g->ring[g->oldest] == 0) {
        g->oldest = ring_pos(g, 1);
        g->used--;
    }
    if (!g->used) return;
    uint64_t h = g->ring[g->oldest];
    index_erase(g, slot_of_pos(g, h, g->oldest));
    g->ring[g->oldest] = 0;
    g->oldest = ring_pos(g, 1);
    g->used--;
    g->live--;
}

/* Moves the live hashes into a ring of new_cap slots (dropping holes) with a fresh index.
 * Returns false (nothing changed) if memory ran out. */
static bool regrow(yyc__ghost *g, size_t new_cap) {
    size_t slots = GHOST_MIN_RING;
    while (slots / 4 * 3 < new_cap) slots *= 2;
    if (new_cap > UINT32_MAX - 1) return false;
    uint64_t *ring = malloc(new_cap * sizeof *ring);
    uint32_t *index = calloc(slots, sizeof *index);
    if (!ring || !index) {
        free(ring);
        free(index);
        return false;
    }
    size_t n = 0;
    for (size_t i = 0; i < g->used; i++) {
        uint64_t h = g->ring[ring_pos(g, i)];
        if (h) ring[n++] = h;
    }
    free(g->ring);
    free(g->index);
    g->ring = ring;
    g->ring_cap = new_cap;
    g->oldest = 0;
    g->used = g->live = n;
    g->index = index;
    g->index_mask = slots - 1;
    for (size_t i = 0; i < n; i++) index_put(g, ring[i], i);
    return true;
}

bool yyc__ghost_take(yyc__ghost *g, uint64_t hash) {
    if (!g->live) return false;
    uint64_t h = stored(hash);
    for (size_t i = (size_t)h & g->index_mask; g->index[i]; i = (i + 1) & g->index_mask) {
        size_t pos = g->index[i] - 1;
        if (g->ring[pos] == h) {
            index_erase(g, i);
            g->ring[pos] = 0; /* a hole, dropped when it becomes the oldest */
            g->live--;
            return true;
        }
    }
    return false;
}

void yyc__ghost_push(yyc__ghost *g, uint64_t hash, size_t capacity) {
    if (capacity == 0) {
        while (g->live) pop_oldest(g);
        return;
    }
    while (g->used && g->ring[g->oldest] == 0) { /* leading holes first */
        g->oldest = ring_pos(g, 1);
        g->used--;
    }
    if (g->used == g->ring_cap) {
        size_t want = g->ring_cap ? g->ring_cap * 2 : GHOST_MIN_RING;
        if (g->live < g->used / 2) want = g->ring_cap; /* mostly holes: compacting is enough */
        if (!regrow(g, want)) {
            if (!g->ring_cap) return;
            pop_oldest(g); /* no memory: forget instead */
            while (g->used && g->ring[g->oldest] == 0) {
                g->oldest = ring_pos(g, 1);
                g->used--;
            }
            if (g->used == g->ring_cap) return;
        }
    }
    uint64_t h = stored(hash);
    size_t pos = ring_pos(g, g->used);
    g->ring[pos] = h;
    index_put(g, h, pos);
    g->used++;
    g->live++;
    while (g->live > capacity) pop_oldest(g);
}

#ifdef YYC_TESTING
#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: ghost invariant broken: %s\n", __FILE__, __LINE__, #cond); \
            return false;                                                                      \
        }                                                                                      \
    } while (0)

bool yyc__ghost_check(const yyc__ghost *g) {
    CHECK((g->ring == NULL) == (g->ring_cap == 0));
    CHECK((g->ring == NULL) == (g->index == NULL));
    if (!g->ring) {
        CHECK(g->used == 0 && g->live == 0);
        return true;
    }
    size_t slots = g->index_mask + 1;
    CHECK((slots & g->index_mask) == 0);
    CHECK(g->used <= g->ring_cap && g->ring_cap <= slots / 4 * 3 + 3);
    CHECK(g->oldest < g->ring_cap);
    size_t live = 0;
    for (size_t i = 0; i < g->used; i++) {
        size_t pos = ring_pos(g, i);
        uint64_t h = g->ring[pos];
        if (!h) continue;
        live++;
        /* Reachable from its home without crossing an empty slot, exactly once. */
        size_t found = 0, k = (size_t)h & g->index_mask;
        for (; g->index[k]; k = (k + 1) & g->index_mask) {
            if (g->index[k] == pos + 1) found++;
            else CHECK(g->ring[g->index[k] - 1] != h); /* no hash twice */
        }
        CHECK(found == 1);
    }
    CHECK(live == g->live);
    size_t entries = 0;
    for (size_t k = 0; k < slots; k++) {
        if (!g->index[k]) continue;
        size_t pos = g->index[k] - 1;
        CHECK(pos < g->ring_cap && ((pos + g->ring_cap - g->oldest) % g->ring_cap) < g->used);
        CHECK(g->ring[pos] != 0);
        entries++;
    }
    CHECK(entries == g->live);
    return true;
}
#undef CHECK
#endif
