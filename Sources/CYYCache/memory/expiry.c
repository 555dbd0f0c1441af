/*
 * expiry.c - the memory cache's time-to-live deadlines: a node -> deadline index and a lazy
 * min-heap on deadline (see expiry.h).
 */
#include "memory/expiry.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MIN_SLOTS 16u
#define STALE_SLACK 64u /* stale heap entries tolerated beyond the live count */

static size_t home_of(const yyc__expiry *e, const yyc__lru_node *node) {
    uint64_t h = (uint64_t)(uintptr_t)node * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 29)) & e->mask;
}

/* The index slot holding node, or SIZE_MAX. */
static size_t find_slot(const yyc__expiry *e, const yyc__lru_node *node) {
    if (!e->index) return SIZE_MAX;
    for (size_t i = home_of(e, node);; i = (i + 1) & e->mask) {
        if (e->index[i].node == node) return i;
        if (!e->index[i].node) return SIZE_MAX;
    }
}

/* Puts (node, deadline) in the index (node not there; a free slot exists). */
static void index_put(yyc__expiry *e, yyc__lru_node *node, double deadline) {
    size_t i = home_of(e, node);
    while (e->index[i].node) i = (i + 1) & e->mask;
    e->index[i].node = node;
    e->index[i].deadline = deadline;
    e->live++;
}

/* Empties slot i, shifting later members of its probe run back (no tombstones). */
static void index_erase(yyc__expiry *e, size_t i) {
    size_t j = i;
    for (;;) {
        j = (j + 1) & e->mask;
        if (!e->index[j].node) break;
        size_t home = home_of(e, e->index[j].node);
        /* j's entry may move to i iff i lies cyclically in [home, j). */
        if (((j - home) & e->mask) >= ((j - i) & e->mask)) {
            e->index[i] = e->index[j];
            i = j;
        }
    }
    e->index[i].node = NULL;
    e->live--;
}

static bool index_grow(yyc__expiry *e, size_t slots) {
    yyc__expiry_entry *t = calloc(slots, sizeof *t);
    if (!t) return false;
    yyc__expiry_entry *old = e->index;
    size_t old_slots = old ? e->mask + 1 : 0;
    e->index = t;
    e->mask = slots - 1;
    e->live = 0;
    for (size_t i = 0; i < old_slots; i++)
        if (old[i].node) index_put(e, old[i].node, old[i].deadline);
    free(old);
    return true;
}

/* --- heap --- */

static void sift_up(yyc__expiry_entry *h, size_t i) {
    yyc__expiry_entry x = h[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!(x.deadline < h[p].deadline)) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static void sift_down(yyc__expiry_entry *h, size_t len, size_t i) {
    yyc__expiry_entry x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= len) break;
        if (c + 1 < len && h[c + 1].deadline < h[c].deadline) c++;
        if (!(h[c].deadline < x.deadline)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* Rebuilds the heap from the index (drops every stale entry). heap_cap >= live. */
static void rebuild_heap(yyc__expiry *e) {
    size_t n = 0;
    for (size_t i = 0; e->index && i <= e->mask; i++)
        if (e->index[i].node) e->heap[n++] = e->index[i];
    e->heap_len = n;
    for (size_t i = n / 2; i-- > 0;) sift_down(e->heap, n, i);
}

/* --- API --- */

void yyc__expiry_init(yyc__expiry *e) { *e = (yyc__expiry){0}; }

void yyc__expiry_destroy(yyc__expiry *e) {
    free(e->index);
    free(e->heap);
    yyc__expiry_init(e);
}

bool yyc__expiry_reserve(yyc__expiry *e) {
    if (!e->index || (e->live + 1) * 2 > e->mask + 1) {
        size_t slots = e->index ? (e->mask + 1) * 2 : MIN_SLOTS;
        if (!index_grow(e, slots)) return false;
    }
    if (e->heap_len + 1 > e->heap_cap) {
        size_t cap = e->heap_cap ? e->heap_cap * 2 : MIN_SLOTS;
        yyc__expiry_entry *h = realloc(e->heap, cap * sizeof *h);
        if (!h) return false;
        e->heap = h;
        e->heap_cap = cap;
    }
    return true;
}

void yyc__expiry_set(yyc__expiry *e, yyc__lru_node *node, double deadline) {
    assert(e->index && (e->live + 1) * 2 <= e->mask + 1 && e->heap_len < e->heap_cap);
    size_t i = find_slot(e, node);
    if (i != SIZE_MAX) e->index[i].deadline = deadline; /* the old heap entry goes stale */
    else index_put(e, node, deadline);
    e->heap[e->heap_len] = (yyc__expiry_entry){deadline, node};
    sift_up(e->heap, e->heap_len++);
    if (e->heap_len > 2 * e->live + STALE_SLACK) rebuild_heap(e);
}

bool yyc__expiry_deadline(const yyc__expiry *e, const yyc__lru_node *node, double *deadline) {
    size_t i = find_slot(e, node);
    if (i == SIZE_MAX) return false;
    *deadline = e->index[i].deadline;
    return true;
}

void yyc__expiry_forget(yyc__expiry *e, const yyc__lru_node *node) {
    size_t i = find_slot(e, node);
    if (i == SIZE_MAX) return;
    index_erase(e, i);
    if (e->heap_len > 2 * e->live + STALE_SLACK) rebuild_heap(e);
}

void yyc__expiry_clear(yyc__expiry *e) {
    for (size_t i = 0; e->index && i <= e->mask; i++) e->index[i].node = NULL;
    e->live = 0;
    e->heap_len = 0;
}

yyc__lru_node *yyc__expiry_pop_due(yyc__expiry *e, double now) {
    while (e->heap_len > 0 && e->heap[0].deadline <= now) {
        yyc__expiry_entry top = e->heap[0];
        e->heap[0] = e->heap[--e->heap_len];
        if (e->heap_len > 0) sift_down(e->heap, e->heap_len, 0);
        size_t i = find_slot(e, top.node);
        if (i != SIZE_MAX && e->index[i].deadline == top.deadline) {
            index_erase(e, i);
            /* live fell by one and the heap by one: the bound can break here too */
            if (e->heap_len > 2 * e->live + STALE_SLACK) rebuild_heap(e);
            return top.node;
        }
        /* stale: the node was forgotten or got a new deadline */
    }
    return NULL;
}

#ifdef YYC_TESTING
#define CHECK(cond)                                                                             \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "%s:%d: expiry invariant broken: %s\n", __FILE__, __LINE__, #cond); \
            return false;                                                                       \
        }                                                                                       \
    } while (0)

bool yyc__expiry_check(const yyc__expiry *e) {
    if (!e->index) {
        CHECK(e->mask == 0 && e->live == 0);
    } else {
        size_t slots = e->mask + 1, n = 0;
        CHECK(slots >= MIN_SLOTS && (slots & e->mask) == 0);
        for (size_t i = 0; i < slots; i++) {
            const yyc__lru_node *node = e->index[i].node;
            if (!node) continue;
            n++;
            /* no empty slot between its home and i */
            for (size_t j = home_of(e, node); j != i; j = (j + 1) & e->mask)
                CHECK(e->index[j].node != NULL);
            bool in_heap = e->live > 4096; /* O(n^2) below: small structures only */
            for (size_t k = 0; k < e->heap_len && !in_heap; k++)
                in_heap = e->heap[k].node == node && e->heap[k].deadline == e->index[i].deadline;
            CHECK(in_heap);
        }
        CHECK(n == e->live);
        CHECK(e->live * 2 <= slots);
    }
    CHECK(e->heap_len <= e->heap_cap);
    CHECK(e->heap_len <= 2 * e->live + STALE_SLACK);
    for (size_t k = 1; k < e->heap_len; k++)
        CHECK(!(e->heap[k].deadline < e->heap[(k - 1) / 2].deadline));
    return true;
}
#endif
