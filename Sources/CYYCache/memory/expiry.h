/*
 * expiry.h - the memory cache's time-to-live deadlines (private; not API).
 *
 * Only entries that have a time to live are recorded here, so an entry without one costs no
 * byte and no work beyond one test of `live` (a field of the cache next to the map). Two parts:
 *   - an index: an open-addressing table (linear probing, backward-shift deletion) from the
 *     node pointer to its deadline, the source of truth. A read of an entry with a time to live
 *     probes it once (one likely cache miss, on entries with a time to live only).
 *   - a min-heap of (deadline, node) ordered by deadline, so that removing the expired entries
 *     costs O(expired * log n), never a scan of every entry. Heap entries are lazy: forgetting
 *     a node leaves its heap entry behind; pop_due skips an entry unless the index still maps
 *     its node to its deadline, so a stale entry never dereferences its node (which may be
 *     freed). A stale entry whose address was reused by a new node with exactly the same
 *     deadline expires that node at its own deadline, which is right. The heap is rebuilt from
 *     the index when stale entries outnumber the live ones (amortized O(1) per operation), so
 *     it holds at most 2 * live + 64 entries.
 * Bytes per entry with a time to live: 16 in the heap (32 while stale ones wait) + 16 / load
 * factor (1/4 .. 1/2) in the index: 48-96 B; without one: 0.
 *
 * Thread safety: none; the owner (memory_cache.c) holds its mutex around every call.
 * Ownership: the structure owns its arrays; it never frees or reads a node (pointers are keys).
 *
 * Invariants (yyc__expiry_check in test builds): live is the number of non-NULL index slots;
 * the index has mask + 1 slots (a power of two >= 16) or is NULL with mask 0 and live 0;
 * live <= (mask + 1) / 2; every node of the index sits in its probe run from its home slot;
 * the heap is a min-heap on deadline; every index entry (node, d) has a heap entry (d, node);
 * heap_len <= 2 * live + 64 after every operation.
 */
#ifndef YYCACHE_EXPIRY_H
#define YYCACHE_EXPIRY_H

#include <stdbool.h>
#include <stddef.h>

#include "memory/lru_map.h"

typedef struct yyc__expiry_entry {
    double deadline;     /* seconds on the owner's clock; the entry is expired when now >= it */
    yyc__lru_node *node; /* NULL: an empty index slot */
} yyc__expiry_entry;

typedef struct yyc__expiry {
    yyc__expiry_entry *index; /* node -> deadline (see above); NULL until first use */
    size_t mask;              /* index slots - 1 (0 while index is NULL) */
    size_t live;              /* nodes with a deadline */
    yyc__expiry_entry *heap;  /* min-heap on deadline, lazy (see above) */
    size_t heap_len;
    size_t heap_cap;
} yyc__expiry;

/* An empty structure; allocates nothing. */
void yyc__expiry_init(yyc__expiry *e);

/* Frees both arrays; the structure is left empty, as after init. */
void yyc__expiry_destroy(yyc__expiry *e);

/* Makes room so that the next yyc__expiry_set cannot fail. Returns false if memory ran out
 * (nothing changed). */
bool yyc__expiry_reserve(yyc__expiry *e);

/* Records node's deadline (replacing any earlier one). Precondition: yyc__expiry_reserve
 * returned true since the last set (asserted); then it cannot fail. */
void yyc__expiry_set(yyc__expiry *e, yyc__lru_node *node, double deadline);

/* Whether node has a deadline; if so *deadline receives it. O(1). */
bool yyc__expiry_deadline(const yyc__expiry *e, const yyc__lru_node *node, double *deadline);

/* Forgets node's deadline (a no-op if it has none): call it whenever node leaves the map. */
void yyc__expiry_forget(yyc__expiry *e, const yyc__lru_node *node);

/* Forgets every deadline, keeping the arrays (after the map was emptied). */
void yyc__expiry_clear(yyc__expiry *e);

/* The node with the earliest deadline <= now, forgotten (the caller unlinks it from the map),
 * or NULL if no deadline has passed. O(log n) amortized per node returned. */
yyc__lru_node *yyc__expiry_pop_due(yyc__expiry *e, double now);

#ifdef YYC_TESTING
/* Checks the invariants above (O(n)); prints the first broken one and returns false. */
bool yyc__expiry_check(const yyc__expiry *e);
#endif

#endif /* YYCACHE_EXPIRY_H */
