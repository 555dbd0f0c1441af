/*
 * lru_map.h - hash-indexed doubly linked LRU list (private; not API).
 *
 * An open-addressing hash table (Robin Hood linear probing, seeded 64-bit wyhash-style hash)
 * whose nodes are also threaded onto an intrusive doubly linked list in access order: head =
 * most recently used, tail = least recently used. One allocation per entry: the node with the
 * key bytes inline. Keys are arbitrary byte strings (zero length and NUL bytes allowed, at most
 * UINT32_MAX bytes). Insert, find, move-to-head, unlink and pop-tail are O(1); the table doubles
 * with the entry count (and halves when pop_tail leaves it 1/8 full), and rehashes
 * incrementally (a few slots per mutating call), so no call stalls on a full rehash (which, at a
 * million entries, would hold the owner's lock for milliseconds).
 *
 * A table slot is 8 bytes: the node pointer, the entry's distance from its home slot and a
 * 13-bit tag of hash bits. A lookup reads slots until the tag matches and only then touches a
 * node (to compare keys), so misses and neighbours in the probe run cost no node access; Robin
 * Hood ordering ends a miss after a few slots. Nodes do not store their hash: removing an entry
 * rehashes its key, while resizing mostly does not (the slot has the bits it needs; see
 * lru_map.c).
 *
 * Eviction policies share the table and the one list; they differ only in what a hit does
 * (yyc__lru_map_touch) and which node yyc__lru_map_evict picks (set once with
 * yyc__lru_map_set_policy, while the map is empty):
 *   - LRU (the default): the list is in access order; a hit moves the node to the head; evict
 *     takes the tail.
 *   - SIEVE (Zhang et al., NSDI'24): the list is in insertion order (head = newest); a hit sets
 *     the node's visited bit; evict moves a hand from where it stopped (else the tail) toward
 *     the head, clearing visited bits and wrapping to the tail past the head, and takes the first
 *     unvisited node; the hand stops at that node's neighbour toward the head.
 *   - S3-FIFO, as libCacheSim 0.3.5's S3FIFO.c (its authors' reference; the variant that
 *     inserts into main while the small queue is full before the first eviction), rule for
 *     rule. The list is the small queue (head .. the node before main_head) followed by the
 *     main queue (main_head .. tail), both in insertion order. The capacity C is the count
 *     limit (entries), else the cost limit (cost), else the current count (entries); the small
 *     queue's size is C / 10 and main's C - C / 10, measured in the same unit. A new key goes to
 *     main's head if its hash is in the ghost queue (which then forgets it; looked up before
 *     the eviction that makes room for it), else to main's head too while no eviction has
 *     happened yet and the small queue is at its size, else to the small queue's head. A hit
 *     adds 1 to the node's 2-bit frequency (at most 3: libCacheSim's uncapped counter is only
 *     ever compared with 2 and capped at 3). evict evicts from main when main is over its size
 *     or the small queue is empty, else from the small queue: its tail with frequency >= 2
 *     moves to main's head with frequency 0, until a tail with frequency < 2 is evicted (its
 *     hash to the ghost queue, which remembers 9 C / 10 hashes, or 9 / 10 of the count when C
 *     is a cost) or the small queue is empty (then main). From main's tail: frequency > 0 goes
 *     back to main's head with frequency - 1, else it is evicted. One deviation: libCacheSim
 *     refuses (does not insert) a new object as large as the small queue (with unit sizes:
 *     every key, when C < 20); here every key is admitted.
 *   - Window TinyLFU, after Caffeine 3 (BoundedLocalCache's policy), with the deviations
 *     listed last: the list is the window (head .. the node before main_head, LRU order), then
 *     main's protected segment (main_head .. the node before prob_head) and its probation
 *     segment (prob_head .. tail), each in LRU order (most recent first). Capacity C and
 *     weights: the cost limit and costs when there is a cost limit, else the count limit and 1
 *     per entry, else the current count (unbounded: no hill climbing, no ghost queue). The
 *     window starts at 10 % of C (rounded up), protected at 80 % of the rest. A new key is
 *     counted in the sketch and goes to the window's head, unless its hash is in the ghost
 *     queue (which then forgets it): then it goes to probation's head, marked (node bit 2),
 *     when the ghost score is >= 0, and otherwise 1 time in 64 (so that the score stays
 *     measured). A hit counts the key in the sketch and moves it to its segment's head (a
 *     probation entry: to protected's head, unless heavier than protected's maximum); a marked
 *     node's first hit adds 2 to the ghost score, its eviction before any hit subtracts 1
 *     (the score stays within -64 .. 64: sending refused keys to main pays while at least a
 *     third of them are hit). evict first moves the window's oldest entries to
 *     probation's head while the window (with the incoming key) weighs more than its maximum;
 *     they are the candidates, oldest first (none: when the eviction makes room for a new key,
 *     the window's oldest entry is). The victim is probation's oldest (else protected's, else
 *     the window's; a trim, making room for no new key, takes the window's before
 *     protected's). Candidate and victim the same entry, or a candidate heavier than C: it is
 *     evicted. Else the victim is evicted if the candidate's sketch frequency exceeds the
 *     victim's by 2 or more (the candidate stays where it is), or, when the candidate's
 *     frequency is >= 6, with probability 1/128 (Caffeine's defence against hash flooding);
 *     else the candidate is evicted and its hash goes to the ghost queue (which remembers the
 *     C newest such hashes, the count + 1 when C is a cost). Caffeine's maintenance after a
 *     write (here: after an insert): the window's excess moves to probation's head (not as
 *     candidates), then the hill climber samples the hit rate over 10 x the sketch's capacity
 *     in accesses and moves the window's maximum by a step (3 % of C at first, reversed when
 *     the hit rate fell, decaying by 0.98 a sample), moving entries between the window and
 *     main accordingly; protected's excess is demoted to probation's head. The sketch is sized
 *     for C when the map is half full (Caffeine's rule) and halves its counters every 3 x C
 *     increments; a map with neither limit has none (every frequency reads 0: candidates
 *     lose).
 *     Deviations from Caffeine, each measured on the hit-ratio report (Benchmarks/README.md):
 *     the window starts at 10 % (Caffeine: 1 %), the climber's step is 3 % (6.25 %) and never
 *     restarts (Caffeine resets it to 6.25 % after a 5-point change in the hit rate), the
 *     sketch halves every 3 x C increments (10 x C), a candidate must beat the victim by 2
 *     (by 1), and the ghost queue and its score are new: a refused key requested again soon
 *     skips the second duel (recency-friendly traces, where Caffeine's admission refuses each
 *     new key once more), and stops doing so while such keys are evicted unhit (loops).
 * The policy's per-node state lives in the low bits of the node's prev link (nodes are 16-byte
 * aligned), so every policy's node is the LRU node: no byte more per entry (TinyLFU's sketch
 * takes 8 bytes per entry of capacity and its ghost queue about 14 per entry of capacity, in the
 * map, as S3-FIFO's ghost queue).
 *
 * Used by memory_cache.c (values, costs, times) and by the disk storage's statement cache
 * (keyed by SQL text; value = the sqlite3_stmt).
 *
 * Thread safety: none. No function locks; the caller holds the owner's lock around every call,
 * including reads (find, count, iteration).
 * Ownership: the map owns its nodes and its slot array; it never touches the values (they are
 * opaque pointers, or inline bytes, owned by the caller).
 *
 * A node returned by unlink / pop_tail / detach_all is owned by the caller, who frees it with
 * yyc__lru_node_free (after using its value).
 *
 * Inline values: a map made with yyc__lru_map_init_inline carries value_size bytes of value per
 * node (still one allocation per entry: node, key, value): in the node's value field when they
 * fit there (at most pointer size and alignment), else after the key at value_align. The map
 * never reads or writes those bytes (a new node's are uninitialized, its value field NULL); the
 * caller reaches them with yyc__lru_node_value.
 *
 * Typical use (statement cache):
 *
 *     yyc__lru_map map;
 *     yyc__lru_map_init(&map);
 *     yyc__lru_node *n = yyc__lru_map_find(&map, sql, len);
 *     if (n) yyc__lru_map_move_to_head(&map, n);
 *     else if (!(n = yyc__lru_map_insert(&map, sql, len, stmt, 0, 0.0))) ...ENOMEM...
 *     for (n = map.head; n; n = n->next) finalize(n->value);   // walk MRU -> LRU
 *     yyc__lru_map_destroy(&map);                              // frees nodes, not values
 */
#ifndef YYCACHE_LRU_MAP_H
#define YYCACHE_LRU_MAP_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memory/s3fifo_ghost.h"
#include "memory/tinylfu_sketch.h"

/* One entry: 44 bytes + key on LP64 (a node with a key of up to 12 bytes is one 64-byte malloc
 * chunk), + padding and value_size bytes in a map with inline values larger than a pointer.
 * The list links belong to the map: read next (to iterate: n = map.head; n; n = n->next) and
 * prev only through yyc__lru_node_prev, never write them. value, time and the key bytes may be
 * read; value and time may be written by the caller (the map never reads them). Change cost
 * only through yyc__lru_map_set_cost so that the total stays right. */
typedef struct yyc__lru_node {
    uintptr_t prev_bits;        /* the node toward the head (NULL at the head) | policy bits:
                                 * SIEVE bit 0 = visited; S3-FIFO bits 0-1 = frequency,
                                 * bit 2 = in the main queue; TinyLFU bits 0-1 = segment,
                                 * bit 2 = back from the ghost, not hit since; LRU none */
    struct yyc__lru_node *next; /* toward the tail (less recent); NULL at the tail */
    void *value;                /* opaque, owned by the caller (or small inline value bytes) */
    size_t cost;                /* counted in the map's total cost */
    double time;                /* caller's timestamp (memory cache: monotonic seconds) */
    uint32_t key_len;           /* bytes in key */
    unsigned char key[];        /* the key, copied; not NUL-terminated */
} yyc__lru_node;

/* The map. Embed it in the owner (no allocation until the first insert).
 *
 * Invariants (checked by yyc__lru_map_check in test builds):
 *   - slots is NULL and mask is 0 iff the map has never held an entry since init or since
 *     detach_all; otherwise slots has mask + 1 entries, a power of two >= YYC__LRU_MIN_BUCKETS.
 *   - A slot is 0 (empty) or encodes (node, dist, tag): node is in the slot
 *     (home + dist) & mask, where home = hash >> shift (the hash's top bits); the stored dist
 *     is min(dist, 127); the tag's top tag_bits bits are the hash bits just below the index
 *     bits. Robin Hood order: along every probe run, an entry's dist is at most one more than
 *     the previous slot's (so a lookup stops at the first slot whose dist is below its own probe
 *     distance, or at an empty slot).
 *   - Load: count <= (mask + 1) * 4 / 5 once the table is allocated (after a failed growth the
 *     table may fill up to mask entries; an empty slot always remains).
 *   - Incremental resize (so that no single call rehashes the whole table): while old is not
 *     NULL the table is migrating from old (old_mask + 1 slots) to slots, slot by slot from
 *     migrate_start (a slot that was empty, so no probe run of old crosses it). The migrate_pos
 *     slots from migrate_start on (circularly) are migrated and 0; the other entries of old keep
 *     their Robin Hood order relative to their home in old (a lookup whose home is in the
 *     migrated range starts probing just after it, with the corresponding distance). New
 *     entries always go to slots. Every mutating call migrates a few old slots; when
 *     migrate_pos passes old_mask, old is freed.
 *   - every node is in exactly one slot of the two tables and on the LRU list exactly once; no
 *     other node is in either.
 *   - head->prev == NULL, tail->next == NULL, and for every node n: n->next->prev == n and
 *     n->prev->next == n when those neighbours exist; head == NULL iff tail == NULL iff
 *     count == 0.
 *   - count is the number of nodes; no two nodes have equal keys.
 *   - the exact sum of the nodes' costs is cost_hi * 2^(bits of size_t) + cost_lo (so removals
 *     stay exact after the sum passes SIZE_MAX); yyc__lru_map_total_cost saturates it.
 *   - time order is the caller's business: the map never compares times (except in
 *     yyc__lru_map_expire_step, given the caller's clock).
 *   - policy state (yyc__lru_map_check_policy): LRU: no node has policy bits, hand and
 *     main_head are NULL, the ghost is empty. SIEVE: only bit 0 is used; hand is NULL or a node
 *     of the list. S3-FIFO: only bits 0-2 are used; the nodes without the main bit come first
 *     (the small queue), main_head is the first node with it (NULL if none); small_count and
 *     small_cost are the small queue's count and exact cost sum; hand is NULL.
 *     TinyLFU: only bits 0-2 are used (bits 0-1: the segment, never 3); window nodes come
 *     first, then protected, then probation; main_head is the first non-window node,
 *     tl.prob_head the first probation node (NULL if none); the tl counts and cost sums are
 *     the segments'; tl.cand is NULL or a probation node with tl.ncand - 1 probation nodes
 *     toward the head; |tl.ghost_score| <= 64; tl.denied is false between calls; hand is NULL;
 *     the ghost is empty when there is no limit. Other policies: the tl fields are zero.
 *   - sweep is NULL or a node of the list. */
/* The eviction policies (YYC_EVICT_* in memory_cache.h have the same values). */
typedef enum yyc__policy {
    YYC__POLICY_LRU = 0,
    YYC__POLICY_SIEVE = 1,
    YYC__POLICY_S3FIFO = 2,
    YYC__POLICY_TINYLFU = 3
} yyc__policy;

#define YYC__NODE_BITS ((uintptr_t)15)
#define YYC__SIEVE_VISITED ((uintptr_t)1)
#define YYC__S3_FREQ ((uintptr_t)3)
#define YYC__S3_MAIN ((uintptr_t)4)
#define YYC__TL_SEG ((uintptr_t)3) /* TinyLFU: the node's segment */
#define YYC__TL_WINDOW ((uintptr_t)0)
#define YYC__TL_PROBATION ((uintptr_t)1)
#define YYC__TL_PROTECTED ((uintptr_t)2)
#define YYC__TL_GHOSTED ((uintptr_t)4) /* TinyLFU: came back from the ghost, not hit since */

/* Window TinyLFU's state beyond the list (see the top of the file). Sizes are in the weight
 * unit of the capacity (entries, or cost with a cost limit); the segments' counts and exact
 * cost sums are both kept, so the unit may change with the limits. */
typedef struct yyc__tinylfu {
    yyc__sketch sketch;
    struct yyc__lru_node *prob_head; /* newest probation node, NULL if probation is empty */
    struct yyc__lru_node *cand;      /* oldest admission candidate not judged yet, or NULL */
    size_t ncand;                    /* candidates from cand toward prob_head (0 iff !cand) */
    size_t win_count, win_cost_lo, win_cost_hi;    /* the window's entries and cost */
    size_t prot_count, prot_cost_lo, prot_cost_hi; /* protected's */
    size_t capacity;      /* C the maxima below were set for (0: not set) */
    bool by_cost;         /* weights are costs (a cost limit is set) */
    bool bounded;         /* C is a limit (not the current count): the climber runs */
    size_t window_max;    /* the window's maximum weight */
    size_t protected_max; /* protected's maximum weight */
    double step;          /* hill climber's next step (weight, signed) */
    double prev_hit_rate; /* hit rate of the previous sample */
    long long adjustment; /* window change still to make (weight, signed) */
    size_t hits, misses;  /* accesses in the current sample */
    uint64_t rng;         /* xorshift state for the random admission */
    int ghost_score;      /* returning keys sent to main: hit minus evicted unhit, +-64 */
    bool denied;          /* the victim being evicted is a candidate admission refused */
} yyc__tinylfu;

/* The node toward the head, or NULL. */
static inline struct yyc__lru_node *yyc__lru_node_prev(const yyc__lru_node *n) {
    return (struct yyc__lru_node *)(n->prev_bits & ~YYC__NODE_BITS);
}

typedef struct yyc__lru_map {
    uint64_t *slots;          /* the table (see above); NULL until the first insert */
    size_t mask;              /* slot count - 1 (0 while slots is NULL) */
    unsigned shift;           /* 64 - log2(slot count): an entry's home slot is hash >> shift */
    unsigned tag_bits;        /* valid bits of the slots' tags (see lru_map.c) */
    uint64_t *old;            /* table being migrated from, or NULL */
    size_t old_mask;          /* old's slot count - 1 */
    unsigned old_shift;       /* old's shift */
    unsigned old_tag_bits;    /* old's tag_bits */
    bool migrate_rehash;      /* this migration rereads the keys (restores all tag bits) */
    size_t migrate_start;     /* old slot where migration began (empty at that time) */
    size_t migrate_pos;       /* old slots migrate_start .. + migrate_pos - 1 are migrated */
    size_t count;             /* number of entries */
    size_t cost_lo;           /* low word of the exact cost sum */
    size_t cost_hi;           /* carries out of cost_lo */
    yyc__lru_node *head;      /* most recently used, NULL when empty */
    yyc__lru_node *tail;      /* least recently used, NULL when empty */
    uint64_t seed;            /* per-map hash seed from arc4random_buf */
    uint64_t hseed;           /* the seed premixed as the hash uses it */
    uint32_t value_size;      /* inline value bytes per node (0: none); fixed at init */
    uint32_t value_align;     /* their alignment in the node (a power of two, 1..16); fixed */
    yyc__policy policy;       /* fixed while the map holds entries (set_policy) */
    yyc__lru_node *hand;      /* SIEVE: the next node the hand examines; NULL: the tail */
    yyc__lru_node *main_head; /* S3-FIFO: newest node of the main queue, NULL if main is empty */
    yyc__lru_node *sweep;     /* expire_step: the next node to examine; NULL: none under way */
    size_t small_count;       /* S3-FIFO: entries in the small queue */
    size_t small_cost_lo;     /* S3-FIFO: exact cost sum of the small queue (as cost_lo/hi) */
    size_t small_cost_hi;
    yyc__ghost ghost; /* hashes of keys recently evicted from S3-FIFO's small queue, or of
                       * candidates TinyLFU's admission refused */
    size_t lim_count; /* the owner's count limit as last given to evict (SIZE_MAX: none) */
    size_t lim_cost;  /* the owner's cost limit as last given to evict (SIZE_MAX: none) */
    bool s3_evicted;  /* S3-FIFO: evict ran since the map was last empty by detach/destroy */
    yyc__tinylfu tl;  /* TinyLFU (main_head is its first main node) */
} yyc__lru_map;

/* Largest inline value (bytes) and alignment a map accepts. */
#define YYC__LRU_MAX_VALUE_SIZE 4096u
#define YYC__LRU_MAX_VALUE_ALIGN 16u

#define YYC__LRU_MIN_BUCKETS 16u

/* Makes an empty map with a fresh random seed. Cannot fail (allocates nothing). */
void yyc__lru_map_init(yyc__lru_map *m);

/* Same, for nodes that carry value_size (1..YYC__LRU_MAX_VALUE_SIZE) inline value bytes at
 * value_align (a power of two, 1..YYC__LRU_MAX_VALUE_ALIGN). Out-of-range arguments are the
 * caller's bug (asserted). destroy and detach_all keep both. */
void yyc__lru_map_init_inline(yyc__lru_map *m, size_t value_size, size_t value_align);

/* Whether inline values of this size and alignment live in the node's value field. */
static inline bool yyc__lru_value_in_field(size_t value_size, size_t value_align) {
    return value_size <= sizeof(void *) && value_align <= _Alignof(void *);
}

/* Offset of the inline value bytes in a node with a key of key_len bytes (value_size and
 * value_align as given to init_inline). The same for every map with that layout: a node's
 * value can be reached without the map (e.g. after detaching). */
static inline size_t yyc__lru_value_offset(size_t key_len, size_t value_size, size_t value_align) {
    if (yyc__lru_value_in_field(value_size, value_align)) return offsetof(yyc__lru_node, value);
    return (offsetof(yyc__lru_node, key) + key_len + value_align - 1) & ~(value_align - 1);
}

/* The inline value bytes of node n (a node of a map made with init_inline with that layout). */
static inline void *yyc__lru_node_value(yyc__lru_node *n, size_t value_size, size_t value_align) {
    return (unsigned char *)n + yyc__lru_value_offset(n->key_len, value_size, value_align);
}

/* Frees every node and the slot array; the values are not touched (walk the list first to
 * release them). The map is left empty and reusable, as after init. */
void yyc__lru_map_destroy(yyc__lru_map *m);

/* The node holding key, or NULL. Does not change the LRU order. */
yyc__lru_node *yyc__lru_map_find(const yyc__lru_map *m, const void *key, size_t key_len);

/* Inserts a new node at the head with the given value, cost and time; key is copied.
 * Precondition: key is not in the map (use find first, or find_or_insert).
 * Returns the node, or NULL if memory ran out or key_len > UINT32_MAX (the map is unchanged). */
yyc__lru_node *yyc__lru_map_insert(yyc__lru_map *m, const void *key, size_t key_len, void *value,
                                   size_t cost, double time);

/* Finds key, or inserts a new node for it at the head (value NULL, cost 0, time 0), hashing
 * the key once. *inserted tells which happened. An existing node is not moved.
 * Returns the node, or NULL (memory ran out or key too long; the map is unchanged). */
yyc__lru_node *yyc__lru_map_find_or_insert(yyc__lru_map *m, const void *key, size_t key_len,
                                           bool *inserted);

/* Makes node the most recently used (a no-op if it is already the head). LRU maps only.
 * Inline: it is most of an LRU hit's own work (a call added a tenth to it). */
static inline void yyc__lru_map_move_to_head(yyc__lru_map *m, yyc__lru_node *n) {
    assert(m->policy == YYC__POLICY_LRU);
    if (m->head == n) return;
    /* n is not the head, so its prev is not NULL. An LRU node has no policy bits. */
    yyc__lru_node *p = (yyc__lru_node *)n->prev_bits;
    p->next = n->next;
    if (n->next) n->next->prev_bits = (uintptr_t)p;
    else m->tail = p;
    n->prev_bits = 0;
    n->next = m->head;
    m->head->prev_bits = (uintptr_t)n;
    m->head = n;
}

/* Sets the eviction policy. Only while the map is empty (asserted); forgets the ghost queue. */
void yyc__lru_map_set_policy(yyc__lru_map *m, yyc__policy policy);

/* TinyLFU's hit (see the top of the file). */
void yyc__lru_map_tinylfu_hit(yyc__lru_map *m, yyc__lru_node *node);

/* Records a hit on node by the policy: LRU moves it to the head, SIEVE sets its visited bit,
 * S3-FIFO adds 1 to its frequency (at most 3), TinyLFU counts it and moves it in its segment.
 * Lookups that must not count (contains) do not call it. */
static inline void yyc__lru_map_touch_as(yyc__lru_map *m, yyc__lru_node *node, yyc__policy policy);
static inline void yyc__lru_map_touch(yyc__lru_map *m, yyc__lru_node *node) {
    yyc__lru_map_touch_as(m, node, m->policy);
}

/* yyc__lru_map_touch with the map's policy already loaded (policy == m->policy): a caller
 * that has tested it once lets the compiler drop the cases it excluded. */
static inline void yyc__lru_map_touch_as(yyc__lru_map *m, yyc__lru_node *node, yyc__policy policy) {
    assert(policy == m->policy);
    if (policy == YYC__POLICY_SIEVE) { /* the cheapest hit first */
        node->prev_bits |= YYC__SIEVE_VISITED;
        return;
    }
    switch (policy) {
    case YYC__POLICY_SIEVE: break;
    case YYC__POLICY_TINYLFU: yyc__lru_map_tinylfu_hit(m, node); break;
    case YYC__POLICY_LRU: yyc__lru_map_move_to_head(m, node); break;
    case YYC__POLICY_S3FIFO:
        if ((node->prev_bits & YYC__S3_FREQ) != YYC__S3_FREQ) node->prev_bits++;
        break;
    }
}

/* Unlinks and returns the policy's victim (owned by the caller, as after unlink), or NULL if
 * the map is empty. LRU: the tail (as pop_tail). SIEVE and S3-FIFO: see the top of the file.
 * count_limit and cost_limit are the owner's limits (SIZE_MAX: none); the map remembers them
 * (lim_count, lim_cost) for the policies' sizes (S3-FIFO's capacity C, see the top of the file).
 * May shrink the table, as pop_tail. */
yyc__lru_node *yyc__lru_map_evict(yyc__lru_map *m, size_t count_limit, size_t cost_limit);

/* find_or_insert that makes room first: when key is new and the map holds count_limit entries
 * or more, evicts one (as yyc__lru_map_evict with these limits) into *evicted before inserting
 * (so that the new node is never the victim and S3-FIFO's ghost sees the eviction first, as
 * in the papers). *evicted is NULL when nothing was evicted; the evicted node is the caller's
 * even when the insert then fails (NULL returned). */
yyc__lru_node *yyc__lru_map_find_or_insert_within(yyc__lru_map *m, const void *key, size_t key_len,
                                                  size_t count_limit, size_t cost_limit,
                                                  bool *inserted, yyc__lru_node **evicted);

/* One bounded step of an age scan over the whole list, for policies whose tail is not the
 * least recently used (SIEVE, S3-FIFO). begin starts a scan at the tail (a scan already under
 * way restarts). Examines up to budget nodes toward the head and unlinks those with
 * now - time > age, appending them to the chain *list / *tail (through next). Returns true
 * when the scan has passed the head (nodes moved or removed meanwhile keep it going: it never
 * loops). */
bool yyc__lru_map_expire_step(yyc__lru_map *m, bool begin, double now, double age, size_t budget,
                              yyc__lru_node **list, yyc__lru_node **tail);

/* Changes node's cost, keeping the total exact. */
void yyc__lru_map_set_cost(yyc__lru_map *m, yyc__lru_node *node, size_t cost);

/* Removes node from the table and the list and updates the totals. The node is not freed: it
 * now belongs to the caller (free it with yyc__lru_node_free). Its prev link is
 * garbage; its next link is NULL (so the caller may chain detached nodes through next). */
void yyc__lru_map_unlink(yyc__lru_map *m, yyc__lru_node *node);

/* find + unlink in one hash and one probe: unlinks and returns the node holding key (owned
 * by the caller, as after unlink), or NULL (the map is unchanged) if there is none. */
yyc__lru_node *yyc__lru_map_unlink_key(yyc__lru_map *m, const void *key, size_t key_len);

/* unlink + yyc__lru_node_free (the value is not touched). */
void yyc__lru_map_remove(yyc__lru_map *m, yyc__lru_node *node);

/* Unlinks and returns the least recently used node (owned by the caller), or NULL if empty.
 * Unlike unlink, may shrink the table (evictions give memory back; removals by key keep the
 * capacity). */
yyc__lru_node *yyc__lru_map_pop_tail(yyc__lru_map *m);

/* Empties the map in O(1): returns the former list (head first, linked through next, ending in
 * NULL; owned by the caller, free each node with yyc__lru_node_free) and stores the former
 * slot array in *out_table (owned by the caller, free it with free(); may be NULL; a table
 * still being migrated from is freed here). The map is left as after init but keeps its seed. */
yyc__lru_node *yyc__lru_map_detach_all(yyc__lru_map *m, void **out_table);

/* A new node that is in no map (owned by the caller, free it with yyc__lru_node_free) with a
 * copy of n's key, value field, inline value bytes (n must be a node of m or of a map with the
 * same layout), cost and time; its links are NULL and its policy bits 0. The value itself is
 * not retained or copied by any callback: the bytes are just duplicated. NULL if memory ran
 * out. */
yyc__lru_node *yyc__lru_map_copy_node(const yyc__lru_map *m, const yyc__lru_node *n);

/* Frees a node that is not in any map. NULL is fine. */
void yyc__lru_node_free(yyc__lru_node *node);

/* Number of entries. */
static inline size_t yyc__lru_map_count(const yyc__lru_map *m) { return m->count; }

/* Sum of the entries' costs, saturated at SIZE_MAX. */
static inline size_t yyc__lru_map_total_cost(const yyc__lru_map *m) {
    return m->cost_hi ? SIZE_MAX : m->cost_lo;
}

/* The seeded hash used by the map (exposed for tests and benchmarks). */
uint64_t yyc__hash_bytes(const void *key, size_t len, uint64_t seed);

#ifdef YYC_TESTING
/* Checks every invariant above, walking the whole list and table (O(n)). Returns true if they
 * all hold; otherwise prints the first broken one to stderr and returns false. */
bool yyc__lru_map_check(const yyc__lru_map *m);

/* Makes the next n node allocations (of any map) fail, as if memory ran out. */
void yyc__lru_testing_fail_allocs(int n);

/* Replaces the random seed of an empty map (before its policy is set), so that what depends on
 * it - the hash, TinyLFU's sketch and admission jitter - repeats from run to run. */
void yyc__lru_map_testing_seed(yyc__lru_map *m, uint64_t seed);
#endif

#endif /* YYCACHE_LRU_MAP_H */
