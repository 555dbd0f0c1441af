/*
 * lru_map.c - hash-indexed doubly linked LRU list. See lru_map.h for the contract and the
 * invariants. No locks here: the caller holds the owner's lock.
 */
#include "memory/lru_map.h"

#include <assert.h>
#include <bsd/stdlib.h> /* arc4random_buf */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- private prototypes --- */

static bool start_resize(yyc__lru_map *m, size_t new_slots, bool growing);
static bool grow_if_needed(yyc__lru_map *m);
static void shrink_if_sparse(yyc__lru_map *m);
static yyc__lru_node *new_node(const yyc__lru_map *m, const void *key, size_t key_len);
static void link_head(yyc__lru_map *m, yyc__lru_node *n);
static void link_before(yyc__lru_map *m, yyc__lru_node *n, yyc__lru_node *at);
static void list_remove(yyc__lru_map *m, yyc__lru_node *n);
static void unlink_hashed(yyc__lru_map *m, yyc__lru_node *n, uint64_t h);
static void cost_add(yyc__lru_map *m, size_t cost);
static void cost_sub(yyc__lru_map *m, size_t cost);
static bool s3_small_full_before_eviction(const yyc__lru_map *m);
static void tl_account(yyc__lru_map *m, const yyc__lru_node *n, int sign);

/* --- hash (wyhash final v4 construction, written from its description) --- */

static const uint64_t P0 = 0xa0761d6478bd642full;
static const uint64_t P1 = 0xe7037ed1a0b428dbull;
static const uint64_t P2 = 0x8ebc6af09c88c6e3ull;
static const uint64_t P3 = 0x589965cc75374cc3ull;

static inline void mum(uint64_t *a, uint64_t *b) {
#ifdef __SIZEOF_INT128__
    __uint128_t r = (__uint128_t)*a * *b;
    *a = (uint64_t)r;
    *b = (uint64_t)(r >> 64);
#else
    uint64_t ha = *a >> 32, hb = *b >> 32, la = (uint32_t)*a, lb = (uint32_t)*b;
    uint64_t rh = ha * hb, rm0 = ha * lb, rm1 = hb * la, rl = la * lb;
    uint64_t t = rl + (rm0 << 32), c = t < rl;
    uint64_t lo = t + (rm1 << 32);
    c += lo < t;
    uint64_t hi = rh + (rm0 >> 32) + (rm1 >> 32) + c;
    *a = lo;
    *b = hi;
#endif
}

static inline uint64_t mix(uint64_t a, uint64_t b) {
    mum(&a, &b);
    return a ^ b;
}

static inline uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t rd3(const uint8_t *p, size_t k) {
    return ((uint64_t)p[0] << 16) | ((uint64_t)p[k >> 1] << 8) | p[k - 1];
}

/* The seed as the hash uses it (mixed once per map rather than once per call). */
static inline uint64_t mixed_seed(uint64_t seed) { return seed ^ mix(seed ^ P0, P1); }

/* yyc__hash_bytes with the seed already mixed; inlined into the map's hot paths. */
static inline __attribute__((always_inline)) uint64_t hash_mixed(const void *key, size_t len,
                                                                 uint64_t seed) {
    const uint8_t *p = key;
    uint64_t a, b;
    if (len <= 16) {
        if (len >= 4) {
            size_t off = (len >> 3) << 2;
            a = (rd32(p) << 32) | rd32(p + off);
            b = (rd32(p + len - 4) << 32) | rd32(p + len - 4 - off);
        } else if (len > 0) {
            a = rd3(p, len);
            b = 0;
        } else {
            a = b = 0;
        }
    } else {
        size_t i = len;
        if (i > 48) {
            uint64_t s1 = seed, s2 = seed;
            do {
                seed = mix(rd64(p) ^ P1, rd64(p + 8) ^ seed);
                s1 = mix(rd64(p + 16) ^ P2, rd64(p + 24) ^ s1);
                s2 = mix(rd64(p + 32) ^ P3, rd64(p + 40) ^ s2);
                p += 48;
                i -= 48;
            } while (i > 48);
            seed ^= s1 ^ s2;
        }
        while (i > 16) {
            seed = mix(rd64(p) ^ P1, rd64(p + 8) ^ seed);
            i -= 16;
            p += 16;
        }
        a = rd64(p + i - 16);
        b = rd64(p + i - 8);
    }
    a ^= P1;
    b ^= seed;
    mum(&a, &b);
    return mix(a ^ P0 ^ (uint64_t)len, b ^ P1);
}

uint64_t yyc__hash_bytes(const void *key, size_t len, uint64_t seed) {
    return hash_mixed(key, len, mixed_seed(seed));
}

static inline __attribute__((always_inline)) uint64_t map_hash(const yyc__lru_map *m,
                                                               const void *key, size_t len) {
    return hash_mixed(key, len, m->hseed);
}

/* --- totals --- */

/* Exact two-word sums (lo, hi): removals stay exact after a sum passes SIZE_MAX. */
static inline void sum_add(size_t *lo, size_t *hi, size_t v) {
    *lo += v;
    if (*lo < v) (*hi)++;
}

static inline void sum_sub(size_t *lo, size_t *hi, size_t v) {
    if (*lo < v) (*hi)--;
    *lo -= v;
}

static void cost_add(yyc__lru_map *m, size_t cost) { sum_add(&m->cost_lo, &m->cost_hi, cost); }
static void cost_sub(yyc__lru_map *m, size_t cost) { sum_sub(&m->cost_lo, &m->cost_hi, cost); }

/* --- links (the prev link carries the policy's bits) --- */

static inline yyc__lru_node *prev_of(const yyc__lru_node *n) { return yyc__lru_node_prev(n); }

static inline void set_prev(yyc__lru_node *n, yyc__lru_node *p) {
    n->prev_bits = (uintptr_t)p | (n->prev_bits & YYC__NODE_BITS);
}

static inline bool in_small(const yyc__lru_map *m, const yyc__lru_node *n) {
    return m->policy == YYC__POLICY_S3FIFO && !(n->prev_bits & YYC__S3_MAIN);
}

/* --- slots --- */

/* A slot (0 = empty):
 *   bits  0-43  the node pointer >> 4 (nodes are 16-byte aligned; user-space pointers on the
 *               platforms we build for fit in 48 bits: new_node refuses, as out of memory, a node
 *               that would not);
 *   bits 44-50  the distance from the entry's home slot (DIST_MAX = that or more: rehash the
 *               key; 127, or 3 in test builds so that the tests exercise this path);
 *   bits 51-63  a 13-bit tag: the hash bits just below the ones that index the table.
 * A table of 2^k slots indexes with the hash's top k bits (home = h >> (64 - k)), so the tag's
 * top bit is the next index bit: doubling the table moves an entry to home * 2 + that bit, and
 * halving it moves the home's low bit into the tag, without reading the node. Each doubling so
 * consumes a tag bit: a table's slots have tag_bits valid bits (left-aligned, the rest ignored);
 * when a doubling would leave fewer than MIN_TAG_BITS, that migration rehashes the keys (reads
 * the nodes) and restores all 13 bits. */
#define PTR_FIELD_BITS 44
#define PTR_FIELD_MASK ((UINT64_C(1) << PTR_FIELD_BITS) - 1)
#define DIST_SHIFT 44
#ifdef YYC_TESTING
#define DIST_MAX 3u /* test builds: distances of 3 or more take the rare "rehash the key" path */
#else
#define DIST_MAX 127u
#endif
#define TAG_SHIFT 51
#define TAG_BITS 13u
#define TAG_MASK ((UINT64_C(1) << TAG_BITS) - 1)
#define MIN_TAG_BITS 8u

/* One table as the slot functions see it. */
typedef struct table {
    uint64_t *t;
    size_t mask;        /* slots - 1 */
    unsigned shift;     /* 64 - log2(slots): home = h >> shift */
    uint64_t tag_match; /* the valid tag bits, in slot position */
} table;

/* The tag is the slot's top TAG_BITS bits; its valid bits are the top tag_bits of those. */
_Static_assert(TAG_SHIFT + TAG_BITS == 64, "the tag is the top of the slot");
static inline table table_of(uint64_t *t, size_t mask, unsigned shift, unsigned tag_bits) {
    table v = {t, mask, shift, ~(~UINT64_C(0) >> tag_bits)};
    return v;
}

static inline unsigned log2_of(size_t slots) {
    return (unsigned)__builtin_ctzll((unsigned long long)slots);
}

static inline size_t home_of(uint64_t h, const table *v) { return (size_t)(h >> v->shift); }
static inline uint64_t tag_of(uint64_t h, const table *v) {
    return (h >> (v->shift - TAG_BITS)) & TAG_MASK;
}
static inline yyc__lru_node *slot_node(uint64_t s) {
    return (yyc__lru_node *)(uintptr_t)((s & PTR_FIELD_MASK) << 4);
}
static inline size_t slot_dist_field(uint64_t s) { return (size_t)((s >> DIST_SHIFT) & DIST_MAX); }
static inline uint64_t slot_tag(uint64_t s) { return s >> TAG_SHIFT; }
static inline uint64_t slot_make(const yyc__lru_node *n, size_t dist, uint64_t tag) {
    uint64_t d = dist < DIST_MAX ? dist : DIST_MAX;
    return ((uint64_t)(uintptr_t)n >> 4) | (d << DIST_SHIFT) | (tag << TAG_SHIFT);
}
/* Same slot with another distance. */
static inline uint64_t slot_with_dist(uint64_t s, size_t dist) {
    uint64_t d = dist < DIST_MAX ? dist : DIST_MAX;
    return (s & ~((uint64_t)DIST_MAX << DIST_SHIFT)) | (d << DIST_SHIFT);
}

static inline uint64_t node_hash(const yyc__lru_map *m, const yyc__lru_node *n) {
    return map_hash(m, n->key, n->key_len);
}

/* The distance of the entry in slot s at position pos of table v, from its key. Out of line:
 * inlined, its hash took the registers of every probe loop (finds spilled to the stack). */
static __attribute__((noinline, cold)) size_t slot_dist_rehash(const yyc__lru_map *m, uint64_t s,
                                                               size_t pos, const table *v) {
    return (pos - home_of(node_hash(m, slot_node(s)), v)) & v->mask;
}

/* The exact distance of the entry in slot s at position pos of table v. */
static inline size_t slot_dist(const yyc__lru_map *m, uint64_t s, size_t pos, const table *v) {
    size_t d = slot_dist_field(s);
    if (d < DIST_MAX) return d;
    return slot_dist_rehash(m, s, pos, v); /* rare */
}

/* Key equality with the common short lengths inlined (integer keys are 8 bytes). */
static inline bool key_eq(const unsigned char *a, const unsigned char *b, size_t len) {
    if (len >= 8 && len <= 16) {
        uint64_t x0, y0, x1, y1;
        memcpy(&x0, a, 8);
        memcpy(&y0, b, 8);
        memcpy(&x1, a + len - 8, 8);
        memcpy(&y1, b + len - 8, 8);
        return ((x0 ^ y0) | (x1 ^ y1)) == 0;
    }
    if (len >= 4 && len < 8) {
        uint32_t x0, y0, x1, y1;
        memcpy(&x0, a, 4);
        memcpy(&y0, b, 4);
        memcpy(&x1, a + len - 4, 4);
        memcpy(&y1, b + len - 4, 4);
        return ((x0 ^ y0) | (x1 ^ y1)) == 0;
    }
    return len == 0 || memcmp(a, b, len) == 0;
}

/* Searches table v for key (hash h). For the old table of a migration, start is the slot where
 * migration began (it was empty) and the lo slots from there on are migrated (skipped); both
 * are 0 for the current table. Returns the slot index, or SIZE_MAX if absent. When want is not
 * NULL, looks for that node (by pointer) instead of comparing keys. */
static inline __attribute__((always_inline)) size_t probe(const yyc__lru_map *m, const table *v,
                                                          size_t start, size_t lo, uint64_t h,
                                                          const void *key, size_t key_len,
                                                          const yyc__lru_node *want) {
    const uint64_t *t = v->t;
    size_t mask = v->mask;
    size_t pos = home_of(h, v), dist = 0;
    size_t rel = (pos - start) & mask; /* index relative to start */
    if (rel < lo) {
        dist = lo - rel;
        pos = (start + lo) & mask;
    }
    uint64_t tag = tag_of(h, v) << TAG_SHIFT;
    for (;;) {
        uint64_t s = t[pos];
        if (!s) return SIZE_MAX;
        size_t sd = slot_dist_field(s);
        if (sd < dist) { /* Robin Hood: the key would have taken this slot */
            if (sd < DIST_MAX || slot_dist(m, s, pos, v) < dist) return SIZE_MAX;
        }
        if (((s ^ tag) & v->tag_match) == 0) {
            const yyc__lru_node *n = slot_node(s);
            if (want ? n == want : (n->key_len == key_len && key_eq(n->key, key, key_len)))
                return pos;
        }
        pos = (pos + 1) & mask;
        dist++;
        if (dist > mask) return SIZE_MAX; /* whole table seen (only when it is full) */
    }
}

/* Places node n (home slot home, 13-bit tag) in table v by Robin Hood insertion. The table has
 * an empty slot. */
static void place(const yyc__lru_map *m, const table *v, const yyc__lru_node *n, size_t home,
                  uint64_t tag) {
    uint64_t *t = v->t;
    size_t pos = home, dist = 0;
    uint64_t cur = slot_make(n, 0, tag);
    for (;;) {
        uint64_t s = t[pos];
        if (!s) {
            t[pos] = slot_with_dist(cur, dist);
            return;
        }
        size_t sd = slot_dist_field(s);
        if (sd == DIST_MAX) sd = slot_dist(m, s, pos, v);
        if (sd < dist) { /* take the slot from the richer entry, carry it on */
            t[pos] = slot_with_dist(cur, dist);
            cur = s;
            dist = sd;
        }
        pos = (pos + 1) & v->mask;
        dist++;
    }
}

/* Empties slot pos of table v and shifts the following run back (backward-shift deletion).
 * Slots of a migrated region are 0, so the shift never enters it. */
static void erase_slot(const yyc__lru_map *m, const table *v, size_t pos) {
    uint64_t *t = v->t;
    for (;;) {
        size_t next = (pos + 1) & v->mask;
        uint64_t s = t[next];
        if (!s || slot_dist_field(s) == 0) break;
        size_t sd = slot_dist(m, s, next, v);
        t[pos] = slot_with_dist(s, sd - 1);
        pos = next;
    }
    t[pos] = 0;
}

static inline table cur_table(const yyc__lru_map *m) {
    return table_of(m->slots, m->mask, m->shift, m->tag_bits);
}

static inline table old_table(const yyc__lru_map *m) {
    return table_of(m->old, m->old_mask, m->old_shift, m->old_tag_bits);
}

/* --- table --- */

void yyc__lru_map_init(yyc__lru_map *m) {
    memset(m, 0, sizeof *m);
    arc4random_buf(&m->seed, sizeof m->seed);
    m->hseed = mixed_seed(m->seed);
    m->value_align = 1;
    m->lim_count = m->lim_cost = SIZE_MAX;
}

#ifdef YYC_TESTING
void yyc__lru_map_testing_seed(yyc__lru_map *m, uint64_t seed) {
    assert(m->count == 0);
    m->seed = seed;
    m->hseed = mixed_seed(seed);
    if (m->policy == YYC__POLICY_TINYLFU) m->tl.rng = seed | 1;
}
#endif

void yyc__lru_map_init_inline(yyc__lru_map *m, size_t value_size, size_t value_align) {
    assert(value_size >= 1 && value_size <= YYC__LRU_MAX_VALUE_SIZE);
    assert(value_align >= 1 && value_align <= YYC__LRU_MAX_VALUE_ALIGN &&
           (value_align & (value_align - 1)) == 0);
    yyc__lru_map_init(m);
    m->value_size = (uint32_t)value_size;
    m->value_align = (uint32_t)value_align;
}

/* Clears m as after init, keeping the seed, the value layout, the limits and the policy (the
 * ghost queue and TinyLFU's sketch are forgotten). */
static void reset_keeping_seed(yyc__lru_map *m) {
    uint64_t seed = m->seed, hseed = m->hseed;
    uint32_t value_size = m->value_size, value_align = m->value_align;
    yyc__policy policy = m->policy;
    size_t lim_count = m->lim_count, lim_cost = m->lim_cost;
    uint64_t rng = m->tl.rng;
    yyc__ghost_destroy(&m->ghost);
    yyc__sketch_destroy(&m->tl.sketch);
    memset(m, 0, sizeof *m);
    m->lim_count = lim_count;
    m->lim_cost = lim_cost;
    m->seed = seed;
    m->hseed = hseed;
    m->value_size = value_size;
    m->value_align = value_align;
    m->policy = policy;
    m->tl.rng = rng;
}

void yyc__lru_map_set_policy(yyc__lru_map *m, yyc__policy policy) {
    assert(m->count == 0);
    assert(policy == YYC__POLICY_LRU || policy == YYC__POLICY_SIEVE ||
           policy == YYC__POLICY_S3FIFO || policy == YYC__POLICY_TINYLFU);
    yyc__ghost_destroy(&m->ghost);
    yyc__sketch_destroy(&m->tl.sketch);
    memset(&m->tl, 0, sizeof m->tl);
    if (policy == YYC__POLICY_TINYLFU) m->tl.rng = m->seed | 1;
    m->policy = policy;
    m->hand = m->main_head = m->sweep = NULL;
    m->small_count = m->small_cost_lo = m->small_cost_hi = 0;
    m->s3_evicted = false;
}

void yyc__lru_map_destroy(yyc__lru_map *m) {
    yyc__lru_node *n = m->head;
    while (n) {
        yyc__lru_node *next = n->next;
        free(n);
        n = next;
    }
    free(m->slots);
    free(m->old);
    reset_keeping_seed(m);
}

/* --- incremental resize --- */

/* Moves the entry of the next old slot (if any) into the current table. Returns the cost of
 * the step: 1 for a slot, + 1 for a moved entry, + 3 more when its node had to be read. */
static size_t migrate_slot(yyc__lru_map *m) {
    table ov = old_table(m), nv = cur_table(m);
    size_t i = (m->migrate_start + m->migrate_pos) & m->old_mask;
    uint64_t s = m->old[i];
    size_t cost = 1;
    if (s) {
        const yyc__lru_node *n = slot_node(s);
        if (m->migrate_rehash) {
            uint64_t h = node_hash(m, n);
            place(m, &nv, n, home_of(h, &nv), tag_of(h, &nv));
            cost += 4;
        } else {
            size_t d = slot_dist_field(s);
            if (d == DIST_MAX) {
                d = slot_dist(m, s, i, &ov);
                cost += 3;
            }
            size_t home = (i - d) & m->old_mask;
            uint64_t tag = slot_tag(s), new_home, new_tag;
            if (nv.mask > m->old_mask) { /* doubling: the tag's top bit is the next index bit */
                new_home = ((uint64_t)home << 1) | (tag >> (TAG_BITS - 1));
                new_tag = (tag << 1) & TAG_MASK;
            } else { /* halving: the home's low bit becomes the tag's top bit */
                new_home = home >> 1;
                new_tag = ((uint64_t)(home & 1) << (TAG_BITS - 1)) | (tag >> 1);
            }
            place(m, &nv, n, (size_t)new_home, new_tag);
            cost += 1;
        }
    }
    m->old[i] = 0;
    m->migrate_pos++;
    if (m->migrate_pos > m->old_mask) {
        free(m->old);
        m->old = NULL;
        m->old_mask = 0;
        m->old_shift = 0;
        m->old_tag_bits = 0;
        m->migrate_pos = 0;
        m->migrate_start = 0;
        m->migrate_rehash = false;
    }
    return cost;
}

/* A bounded step of migration, done by every mutating call: about 32 units of work (see
 * migrate_slot). Growing from S to 2S slots moves <= 4S/5 entries over the >= 4S/5 inserts
 * before the next growth, so migration always finishes in time; empty slots are cheap, so a
 * shrink of a sparse table finishes quickly. */
static void migrate_some(yyc__lru_map *m) {
    size_t budget = 32;
    while (m->old && budget > 0) {
        size_t cost = migrate_slot(m);
        budget = cost >= budget ? 0 : budget - cost;
    }
}

/* Starts moving to a table of new_slots slots (a power of two; growing: twice the current
 * one, else half of it). A previous migration still under way is finished first (rare: the
 * steps above normally complete it in time). Returns false, changing nothing, if the
 * allocation fails. */
static bool start_resize(yyc__lru_map *m, size_t new_slots, bool growing) {
    while (m->old) migrate_slot(m);
    uint64_t *t = calloc(new_slots, sizeof *t);
    if (!t) return false;
    unsigned shift = 64 - log2_of(new_slots);
    if (!m->slots) {
        m->slots = t;
        m->mask = new_slots - 1;
        m->shift = shift;
        m->tag_bits = TAG_BITS;
        return true;
    }
    /* Migrate from an empty slot on: no probe run of old crosses it (old takes no inserts, and
     * a backward shift never fills an empty slot), so the runs never wrap around the boundary
     * between the migrated and the unmigrated slots. */
    size_t start = 0;
    while (m->slots[start]) start++; /* the load is < 1: an empty slot exists */
    unsigned bits = m->tag_bits;
    m->old = m->slots;
    m->old_mask = m->mask;
    m->old_shift = m->shift;
    m->old_tag_bits = bits;
    m->migrate_start = start;
    m->migrate_pos = 0;
    m->migrate_rehash = growing && bits <= MIN_TAG_BITS;
    m->slots = t;
    m->mask = new_slots - 1;
    m->shift = shift;
    if (m->migrate_rehash) m->tag_bits = TAG_BITS;
    else m->tag_bits = growing ? bits - 1 : (bits < TAG_BITS ? bits + 1 : TAG_BITS);
    return true;
}

/* Makes room for one more entry: keeps the load <= 4/5 of the current table (growing stops at
 * 2^32 slots). Returns false if there is no room at all (first table or a full one could not
 * be allocated). */
static bool grow_if_needed(yyc__lru_map *m) {
    if (!m->slots) return start_resize(m, YYC__LRU_MIN_BUCKETS, true);
    size_t slots = m->mask + 1;
    if (m->count + 1 > slots / 5 * 4 + (slots % 5) * 4 / 5 && slots <= (size_t)UINT32_MAX &&
        slots <= SIZE_MAX / 2 / sizeof(uint64_t)) {
        if (start_resize(m, slots * 2, true)) return true;
    }
    /* An allocation failed (or the table is at its largest): fill up, keeping one slot empty.
     * Entries still in old were counted, and all of them must fit in the current table. */
    return m->count + 1 <= m->mask;
}

/* Halves the table when it is at most 1/8 full; hysteresis (grow at 4/5, shrink at 1/8 to
 * 1/4) keeps the cost amortized O(1). Called by pop_tail only: an LRU eviction loop (a trim)
 * gives memory back, while removals by key keep the capacity as Swift's Dictionary does, so
 * that emptying a cache key by key and refilling it does not resize twice. */
static void shrink_if_sparse(yyc__lru_map *m) {
    size_t slots = m->mask + 1;
    if (!m->old && slots > YYC__LRU_MIN_BUCKETS && m->count <= slots / 8)
        (void)start_resize(m, slots / 2, false);
}

#ifdef YYC_TESTING
/* Test builds: the next n node allocations fail (fault injection for the ENOMEM paths). */
static atomic_int fail_allocs;
void yyc__lru_testing_fail_allocs(int n) { fail_allocs = n; }
#endif

static yyc__lru_node *new_node(const yyc__lru_map *m, const void *key, size_t key_len) {
    if (key_len > UINT32_MAX) return NULL;
#ifdef YYC_TESTING
    for (int left = atomic_load(&fail_allocs); left > 0;)
        if (atomic_compare_exchange_weak(&fail_allocs, &left, left - 1)) return NULL;
#endif
    size_t size = offsetof(yyc__lru_node, key) + key_len;
    if (m->value_size && !yyc__lru_value_in_field(m->value_size, m->value_align)) {
        if (key_len > SIZE_MAX - sizeof(yyc__lru_node) - 2 * YYC__LRU_MAX_VALUE_SIZE) return NULL;
        size = yyc__lru_value_offset(key_len, m->value_size, m->value_align) + m->value_size;
    }
    if (size < sizeof(yyc__lru_node)) size = sizeof(yyc__lru_node);
    /* 16-byte alignment (the slot drops the pointer's low 4 bits): malloc's where it aligns
     * to 16 (glibc on LP64), else posix_memalign. */
    void *p = NULL;
#if defined(__BIGGEST_ALIGNMENT__) && __BIGGEST_ALIGNMENT__ >= 16 && defined(__GLIBC__)
    p = malloc(size);
    if (!p) return NULL;
#else
    if (posix_memalign(&p, 16, size) != 0) return NULL;
#endif
    yyc__lru_node *n = p;
    if (((uint64_t)(uintptr_t)n >> (PTR_FIELD_BITS + 4)) || ((uintptr_t)n & 15)) {
        /* cannot be encoded in a slot */
        free(n);
        return NULL;
    }
    n->prev_bits = 0;
    n->next = NULL;
    n->value = NULL;
    n->cost = 0;
    n->time = 0.0;
    n->key_len = (uint32_t)key_len;
    if (key_len) memcpy(n->key, key, key_len);
    return n;
}

static void link_head(yyc__lru_map *m, yyc__lru_node *n) {
    set_prev(n, NULL);
    n->next = m->head;
    if (m->head) set_prev(m->head, n);
    else m->tail = n;
    m->head = n;
}

/* Links n just before at (toward the head), or at the tail when at is NULL. */
static void link_before(yyc__lru_map *m, yyc__lru_node *n, yyc__lru_node *at) {
    if (!at) {
        set_prev(n, m->tail);
        n->next = NULL;
        if (m->tail) m->tail->next = n;
        else m->head = n;
        m->tail = n;
        return;
    }
    yyc__lru_node *p = prev_of(at);
    set_prev(n, p);
    n->next = at;
    set_prev(at, n);
    if (p) p->next = n;
    else m->head = n;
}

/* Whether n is one of the candidates after the first (the ncand - 1 nodes toward the head from
 * tl.cand: the window's excess moved to probation's head, judged one by one). O(ncand). */
static bool tl_in_candidates(const yyc__lru_map *m, const yyc__lru_node *n) {
    const yyc__lru_node *c = m->tl.cand;
    for (size_t i = 1; i < m->tl.ncand && c; i++) {
        c = prev_of(c);
        if (c == n) return true;
    }
    return false;
}

/* Takes n off the list (its bits and the totals stay), moving every cursor that points at it
 * to its neighbour toward the head (where the cursor would have gone next). */
static void list_remove(yyc__lru_map *m, yyc__lru_node *n) {
    yyc__lru_node *p = prev_of(n);
    if (m->hand == n) m->hand = p;
    if (m->sweep == n) m->sweep = p;
    if (m->main_head == n) m->main_head = n->next;
    if (m->tl.prob_head == n) m->tl.prob_head = n->next;
    if (m->tl.cand == n) { /* the next candidate is the one toward the head */
        m->tl.ncand--;
        m->tl.cand = m->tl.ncand ? p : NULL;
    } else if (m->tl.ncand > 1 && (n->prev_bits & YYC__TL_SEG) == YYC__TL_PROBATION &&
               tl_in_candidates(m, n)) {
        m->tl.ncand--; /* (a hit or a removal took one of the later candidates) */
    }
    if (p) p->next = n->next;
    else m->head = n->next;
    if (n->next) set_prev(n->next, p);
    else m->tail = p;
}

/* find_hashed's search of the table being migrated from (out of line: a migration is brief,
 * and a second inlined probe made every find save and spill more registers). */
static __attribute__((noinline)) yyc__lru_node *find_in_old(const yyc__lru_map *m, const void *key,
                                                            size_t key_len, uint64_t h) {
    table ov = old_table(m);
    size_t pos = probe(m, &ov, m->migrate_start, m->migrate_pos, h, key, key_len, NULL);
    return pos != SIZE_MAX ? slot_node(m->old[pos]) : NULL;
}

static inline __attribute__((always_inline)) yyc__lru_node *
find_hashed(const yyc__lru_map *m, const void *key, size_t key_len, uint64_t h) {
    if (!m->slots) return NULL;
    table v = cur_table(m);
    size_t pos = probe(m, &v, 0, 0, h, key, key_len, NULL);
    if (pos != SIZE_MAX) return slot_node(m->slots[pos]);
    return m->old ? find_in_old(m, key, key_len, h) : NULL;
}

/* Adds n (hash h) to the table and at the list head (S3-FIFO: at the head of its queue;
 * ghost_hit: whether the ghost queue had h, taken out by the caller; -1: look it up here).
 * Returns false (nothing changed) if there is no room. */
static bool add_node(yyc__lru_map *m, yyc__lru_node *n, uint64_t h, int ghost_hit) {
    migrate_some(m);
    if (!grow_if_needed(m)) return false;
    table v = cur_table(m);
    place(m, &v, n, home_of(h, &v), tag_of(h, &v));
    if (m->policy == YYC__POLICY_S3FIFO && ghost_hit < 0) ghost_hit = yyc__ghost_take(&m->ghost, h);
    if (m->policy == YYC__POLICY_S3FIFO && (ghost_hit || s3_small_full_before_eviction(m))) {
        n->prev_bits |= YYC__S3_MAIN; /* seen again while in the ghost queue: main */
        link_before(m, n, m->main_head);
        m->main_head = n;
    } else {
        link_head(m, n);
        if (m->policy == YYC__POLICY_TINYLFU) {
            m->tl.cand = NULL; /* candidates are judged within the eviction that follows a move */
            m->tl.ncand = 0;
            tl_account(m, n, 1);
        }
        if (m->policy == YYC__POLICY_S3FIFO) {
            m->small_count++;
            sum_add(&m->small_cost_lo, &m->small_cost_hi, n->cost);
        }
    }
    m->count++;
    cost_add(m, n->cost);
    return true;
}

yyc__lru_node *yyc__lru_map_find(const yyc__lru_map *m, const void *key, size_t key_len) {
    if (!m->slots || key_len > UINT32_MAX) return NULL;
    return find_hashed(m, key, key_len, map_hash(m, key, key_len));
}

yyc__lru_node *yyc__lru_map_insert(yyc__lru_map *m, const void *key, size_t key_len, void *value,
                                   size_t cost, double time) {
    if (key_len > UINT32_MAX) return NULL; /* before hashing: the key is never read */
    yyc__lru_node *n = new_node(m, key, key_len);
    if (!n) return NULL;
    n->value = value;
    n->cost = cost;
    n->time = time;
    if (!add_node(m, n, map_hash(m, key, key_len), -1)) {
        free(n);
        return NULL;
    }
    return n;
}

yyc__lru_node *yyc__lru_map_find_or_insert(yyc__lru_map *m, const void *key, size_t key_len,
                                           bool *inserted) {
    *inserted = false;
    if (key_len > UINT32_MAX) return NULL;
    uint64_t h = map_hash(m, key, key_len);
    yyc__lru_node *n = find_hashed(m, key, key_len, h);
    if (n) return n;
    n = new_node(m, key, key_len);
    if (!n) return NULL;
    if (!add_node(m, n, h, -1)) {
        free(n);
        return NULL;
    }
    *inserted = true;
    return n;
}

void yyc__lru_map_set_cost(yyc__lru_map *m, yyc__lru_node *n, size_t cost) {
    cost_sub(m, n->cost);
    cost_add(m, cost);
    if (m->policy == YYC__POLICY_TINYLFU) {
        tl_account(m, n, -1);
        size_t old = n->cost;
        n->cost = cost;
        tl_account(m, n, 1);
        n->cost = old;
    }
    if (in_small(m, n)) {
        sum_sub(&m->small_cost_lo, &m->small_cost_hi, n->cost);
        sum_add(&m->small_cost_lo, &m->small_cost_hi, cost);
    }
    n->cost = cost;
}

/* Takes n (whose slot is already erased) off the list and updates the totals. */
static void unlink_from_list(yyc__lru_map *m, yyc__lru_node *n) {
    if (m->policy == YYC__POLICY_TINYLFU) tl_account(m, n, -1);
    list_remove(m, n);
    if (in_small(m, n)) {
        m->small_count--;
        sum_sub(&m->small_cost_lo, &m->small_cost_hi, n->cost);
    }
    m->count--;
    cost_sub(m, n->cost);
    n->next = NULL;
    n->prev_bits = 0;
}

/* Takes n out of the table and the list and updates the totals. */
static void unlink_node(yyc__lru_map *m, yyc__lru_node *n) { unlink_hashed(m, n, node_hash(m, n)); }

/* unlink_node with n's hash already known. */
static void unlink_hashed(yyc__lru_map *m, yyc__lru_node *n, uint64_t h) {
    table v = cur_table(m);
    size_t pos = probe(m, &v, 0, 0, h, NULL, 0, n);
    if (pos != SIZE_MAX) {
        erase_slot(m, &v, pos);
    } else { /* n is in the map: then it is in old */
        table ov = old_table(m);
        pos = probe(m, &ov, m->migrate_start, m->migrate_pos, h, NULL, 0, n);
        erase_slot(m, &ov, pos);
    }
    unlink_from_list(m, n);
}

void yyc__lru_map_unlink(yyc__lru_map *m, yyc__lru_node *n) {
    unlink_node(m, n);
    migrate_some(m);
}

yyc__lru_node *yyc__lru_map_unlink_key(yyc__lru_map *m, const void *key, size_t key_len) {
    if (!m->slots || key_len > UINT32_MAX) return NULL;
    /* One hash and one probe: the slot found is the one erased (find + unlink would rehash
     * the key and probe again to find the node's slot). */
    uint64_t h = map_hash(m, key, key_len);
    table v = cur_table(m);
    size_t pos = probe(m, &v, 0, 0, h, key, key_len, NULL);
    if (pos == SIZE_MAX) {
        if (!m->old) return NULL;
        v = old_table(m);
        pos = probe(m, &v, m->migrate_start, m->migrate_pos, h, key, key_len, NULL);
        if (pos == SIZE_MAX) return NULL;
    }
    yyc__lru_node *n = slot_node(v.t[pos]);
    erase_slot(m, &v, pos);
    unlink_from_list(m, n);
    migrate_some(m);
    return n;
}

void yyc__lru_map_remove(yyc__lru_map *m, yyc__lru_node *n) {
    yyc__lru_map_unlink(m, n);
    free(n);
}

yyc__lru_node *yyc__lru_map_pop_tail(yyc__lru_map *m) {
    yyc__lru_node *n = m->tail;
    if (n) {
        unlink_node(m, n);
        migrate_some(m);
        shrink_if_sparse(m); /* evictions (trims) give memory back; removals by key do not */
    }
    return n;
}

/* --- eviction policies --- */

/* SIEVE: the hand sweeps toward the head (wrapping to the tail), clearing visited bits, and
 * stops at the first unvisited node; it then rests on that node's neighbour toward the head.
 * The map is not empty. */
static yyc__lru_node *sieve_victim(yyc__lru_map *m) {
    yyc__lru_node *o = m->hand ? m->hand : m->tail;
    while (o->prev_bits & YYC__SIEVE_VISITED) {
        o->prev_bits &= ~YYC__SIEVE_VISITED;
        o = prev_of(o);
        if (!o) o = m->tail;
    }
    m->hand = prev_of(o);
    return o;
}

/* S3-FIFO's capacity C (see lru_map.h): the count limit, else the cost limit (*by_cost), else
 * the current count. */
static size_t s3_capacity(const yyc__lru_map *m, bool *by_cost) {
    *by_cost = m->lim_count == SIZE_MAX && m->lim_cost != SIZE_MAX;
    if (*by_cost) return m->lim_cost;
    return m->lim_count != SIZE_MAX ? m->lim_count : m->count;
}

/* The small queue's and main's occupancy in C's unit. */
static size_t s3_small_occupied(const yyc__lru_map *m, bool by_cost) {
    if (!by_cost) return m->small_count;
    return m->small_cost_hi ? SIZE_MAX : m->small_cost_lo;
}

static size_t s3_main_occupied(const yyc__lru_map *m, bool by_cost) {
    if (!by_cost) return m->count - m->small_count;
    size_t lo = m->cost_lo, hi = m->cost_hi;
    sum_sub(&lo, &hi, m->small_cost_lo);
    hi -= m->small_cost_hi;
    return hi ? SIZE_MAX : lo;
}

/* libCacheSim's insert rule: before the first eviction, a new key goes to main once the small
 * queue is at its size. */
static bool s3_small_full_before_eviction(const yyc__lru_map *m) {
    if (m->s3_evicted) return false;
    bool by_cost;
    size_t cap = s3_capacity(m, &by_cost);
    return s3_small_occupied(m, by_cost) >= cap / 10;
}

/* S3-FIFO: the next victim (see the top of lru_map.h). Moves nodes between and within the
 * queues on the way; terminates because each step lowers a frequency or shrinks the small
 * queue. The map is not empty. */
static yyc__lru_node *s3fifo_victim(yyc__lru_map *m) {
    bool by_cost;
    size_t cap = s3_capacity(m, &by_cost), main_size = cap - cap / 10;
    for (;;) {
        bool main_nonempty = m->count > m->small_count;
        if (m->small_count == 0 || (main_nonempty && (s3_main_occupied(m, by_cost) > main_size ||
                                                      s3_small_occupied(m, by_cost) == 0))) {
            yyc__lru_node *t = m->tail; /* main's tail */
            if (!(t->prev_bits & YYC__S3_FREQ)) return t;
            t->prev_bits--; /* frequency - 1, and back to main's head */
            if (t != m->main_head) {
                list_remove(m, t);
                link_before(m, t, m->main_head);
                m->main_head = t;
            }
            continue;
        }
        while (m->small_count > 0) {
            yyc__lru_node *small_tail = m->main_head ? prev_of(m->main_head) : m->tail;
            if ((small_tail->prev_bits & YYC__S3_FREQ) < 2) return small_tail;
            /* Accessed at least twice: to main's head (right behind it), frequency 0. */
            small_tail->prev_bits = (small_tail->prev_bits & ~YYC__S3_FREQ) | YYC__S3_MAIN;
            m->small_count--;
            sum_sub(&m->small_cost_lo, &m->small_cost_hi, small_tail->cost);
            m->main_head = small_tail;
        }
    }
}

/* --- Window TinyLFU (see the top of lru_map.h) --- */

/* The tuning (see lru_map.h); #ifndef: an ablation build (-DTL_STEP=0.0625 ...) can set
 * Caffeine's values one at a time. */
#ifndef TL_WINDOW_DIV
#define TL_WINDOW_DIV 10 /* the window starts at C / TL_WINDOW_DIV, rounded up (Caffeine: 100) */
#endif
#ifndef TL_STEP
#define TL_STEP 0.03 /* the climber's first step, a fraction of C (Caffeine: 0.0625) */
#endif
#ifndef TL_MARGIN
#define TL_MARGIN 1u /* admission: the candidate's frequency must exceed the victim's + 1 */
#endif
#ifndef TL_RESTART
#define TL_RESTART 0 /* a hit-rate change that resets the step (0: none; Caffeine: 0.05) */
#endif
#ifndef TL_GHOST
#define TL_GHOST 1 /* refused candidates' hashes go to the ghost queue (Caffeine: none) */
#endif
#define TL_SCORE_MAX 64 /* |ghost_score| bound */
#ifndef TL_SCORE_HIT
#define TL_SCORE_HIT 2 /* ghost score: + this for a hit, - 1 for an eviction unhit */
#endif
#ifndef TL_EXPLORE_MASK
#define TL_EXPLORE_MASK 63u /* with ghost_score < 0: 1 returning key in 64 still goes to main */
#endif

/* The admission jitter's xorshift. */
static uint64_t tl_random(yyc__tinylfu *t) {
    uint64_t x = t->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t->rng = x;
    return x;
}

static inline uintptr_t tl_seg(const yyc__lru_node *n) { return n->prev_bits & YYC__TL_SEG; }

static inline void tl_set_seg(yyc__lru_node *n, uintptr_t seg) {
    n->prev_bits = (n->prev_bits & ~YYC__TL_SEG) | seg;
}

/* Scores a node that came back from the ghost queue (YYC__TL_GHOSTED) on its first hit
 * (hit: +2) or its eviction without one (-1), and clears the mark. */
static void tl_score_ghosted(yyc__lru_map *m, yyc__lru_node *n, bool hit) {
    if (!(n->prev_bits & YYC__TL_GHOSTED)) return;
    n->prev_bits &= ~YYC__TL_GHOSTED;
    int *score = &m->tl.ghost_score;
    if (hit) *score = *score + TL_SCORE_HIT < TL_SCORE_MAX ? *score + TL_SCORE_HIT : TL_SCORE_MAX;
    else if (*score > -TL_SCORE_MAX) --*score;
}

static inline size_t sum_value(size_t lo, size_t hi) { return hi ? SIZE_MAX : lo; }

/* An entry's weight, the window's and protected's (in the capacity's unit). */
static inline size_t tl_weight(const yyc__lru_map *m, const yyc__lru_node *n) {
    return m->tl.by_cost ? n->cost : 1;
}
static inline size_t tl_window_weight(const yyc__lru_map *m) {
    return m->tl.by_cost ? sum_value(m->tl.win_cost_lo, m->tl.win_cost_hi) : m->tl.win_count;
}
static inline size_t tl_protected_weight(const yyc__lru_map *m) {
    return m->tl.by_cost ? sum_value(m->tl.prot_cost_lo, m->tl.prot_cost_hi) : m->tl.prot_count;
}

/* Adds (sign > 0) or removes n from its segment's totals (probation has none of its own). */
static void tl_account(yyc__lru_map *m, const yyc__lru_node *n, int sign) {
    uintptr_t seg = tl_seg(n);
    if (seg == YYC__TL_PROBATION) return;
    size_t *count = seg == YYC__TL_WINDOW ? &m->tl.win_count : &m->tl.prot_count;
    size_t *lo = seg == YYC__TL_WINDOW ? &m->tl.win_cost_lo : &m->tl.prot_cost_lo;
    size_t *hi = seg == YYC__TL_WINDOW ? &m->tl.win_cost_hi : &m->tl.prot_cost_hi;
    if (sign > 0) {
        (*count)++;
        sum_add(lo, hi, n->cost);
    } else {
        (*count)--;
        sum_sub(lo, hi, n->cost);
    }
}

/* The oldest node of each segment, or NULL. */
static inline yyc__lru_node *tl_window_lru(const yyc__lru_map *m) {
    return m->main_head ? prev_of(m->main_head) : m->tail;
}
static inline yyc__lru_node *tl_protected_lru(const yyc__lru_map *m) {
    if (!m->main_head || m->main_head == m->tl.prob_head) return NULL;
    return m->tl.prob_head ? prev_of(m->tl.prob_head) : m->tail;
}
static inline yyc__lru_node *tl_probation_lru(const yyc__lru_map *m) {
    return m->tl.prob_head ? m->tail : NULL;
}

/* Links n (off the list) at the head of probation / protected. */
static void tl_link_probation(yyc__lru_map *m, yyc__lru_node *n) {
    yyc__lru_node *at = m->tl.prob_head;
    link_before(m, n, at);
    if (m->main_head == at) m->main_head = n; /* protected is empty */
    m->tl.prob_head = n;
}
static void tl_link_protected(yyc__lru_map *m, yyc__lru_node *n) {
    link_before(m, n, m->main_head);
    m->main_head = n;
}

/* Moves n (a window or protected node) to probation's head. */
static void tl_to_probation(yyc__lru_map *m, yyc__lru_node *n) {
    tl_account(m, n, -1);
    bool adjacent = n->next == m->tl.prob_head &&
                    (tl_seg(n) == YYC__TL_PROTECTED || m->main_head == m->tl.prob_head);
    if (adjacent) { /* already where probation's head goes: only the boundaries move */
        if (m->main_head == m->tl.prob_head) m->main_head = n;
        m->tl.prob_head = n;
        tl_set_seg(n, YYC__TL_PROBATION);
        return;
    }
    list_remove(m, n);
    tl_set_seg(n, YYC__TL_PROBATION);
    tl_link_probation(m, n);
}

/* Caffeine's demoteFromMainProtected: protected's oldest to probation while it is over. */
static void tl_demote(yyc__lru_map *m) {
    for (int i = 0; i < 1000 && tl_protected_weight(m) > m->tl.protected_max; i++) {
        yyc__lru_node *n = tl_protected_lru(m);
        if (!n) break;
        tl_to_probation(m, n);
    }
}

/* The window and protected maxima for capacity cap (Caffeine's setMaximumSize). */
static void tl_set_capacity(yyc__lru_map *m, size_t cap, bool by_cost, bool bounded) {
    yyc__tinylfu *t = &m->tl;
    size_t main = cap / TL_WINDOW_DIV * (TL_WINDOW_DIV - 1) +
                  cap % TL_WINDOW_DIV * (TL_WINDOW_DIV - 1) / TL_WINDOW_DIV;
    t->capacity = cap;
    t->by_cost = by_cost;
    t->bounded = bounded;
    if (!bounded) yyc__ghost_destroy(&m->ghost); /* no limit: no ghost queue (nor sketch) */
    t->window_max = cap - main;
    t->protected_max = main / 5 * 4 + main % 5 * 4 / 5;
    t->step = -TL_STEP * (double)cap;
    t->prev_hit_rate = 0;
    t->adjustment = 0;
    t->hits = t->misses = 0;
}

/* Follows the owner's limits: C and the weights (see the top of lru_map.h). */
static void tl_sync(yyc__lru_map *m) {
    bool by_cost = m->lim_cost != SIZE_MAX;
    bool bounded = by_cost || m->lim_count != SIZE_MAX;
    size_t cap = by_cost ? m->lim_cost : bounded ? m->lim_count : m->count;
    if (cap != m->tl.capacity || by_cost != m->tl.by_cost || bounded != m->tl.bounded)
        tl_set_capacity(m, cap, by_cost, bounded);
}

/* Caffeine's increaseWindow / decreaseWindow: moves up to the adjustment's weight from main
 * to the window or back, changing the maxima by what moved. */
static void tl_increase_window(yyc__lru_map *m) {
    yyc__tinylfu *t = &m->tl;
    if (t->protected_max == 0) return;
    size_t quota =
        (size_t)t->adjustment < t->protected_max ? (size_t)t->adjustment : t->protected_max;
    t->protected_max -= quota;
    t->window_max += quota;
    tl_demote(m);
    for (int i = 0; i < 1000; i++) {
        yyc__lru_node *n = tl_probation_lru(m);
        if (!n || quota < tl_weight(m, n)) n = tl_protected_lru(m);
        if (!n || quota < tl_weight(m, n)) break;
        quota -= tl_weight(m, n);
        tl_account(m, n, -1);
        list_remove(m, n);
        tl_set_seg(n, YYC__TL_WINDOW);
        link_head(m, n);
        tl_account(m, n, 1);
    }
    t->protected_max += quota;
    t->window_max -= quota;
    t->adjustment = (long long)quota;
}

static void tl_decrease_window(yyc__lru_map *m) {
    yyc__tinylfu *t = &m->tl;
    if (t->window_max <= 1) return;
    size_t want = (size_t)-t->adjustment;
    size_t quota = want < t->window_max - 1 ? want : t->window_max - 1;
    t->protected_max += quota;
    t->window_max -= quota;
    for (int i = 0; i < 1000; i++) {
        yyc__lru_node *n = tl_window_lru(m);
        if (!n || quota < tl_weight(m, n)) break;
        quota -= tl_weight(m, n);
        tl_to_probation(m, n);
    }
    t->protected_max -= quota;
    t->window_max += quota;
    t->adjustment = -(long long)quota;
}

/* Caffeine's evictFromWindow: the window's oldest entries move to probation's head while the
 * window, with pending more, weighs more than its maximum; as the candidates of the eviction
 * under way, or (after an insert, the cache within its capacity) as plain probation entries. */
static void tl_window_overflow(yyc__lru_map *m, size_t pending, bool as_candidates) {
    yyc__tinylfu *t = &m->tl;
    for (;;) {
        size_t w = tl_window_weight(m);
        yyc__lru_node *n = tl_window_lru(m);
        if (!n || (w <= t->window_max && pending <= t->window_max - w)) break;
        tl_to_probation(m, n);
        if (!as_candidates) continue;
        if (!t->cand) t->cand = n;
        t->ncand++;
    }
}

/* Caffeine's maintenance after a write, run after each insert: evictFromWindow (the cache is
 * within its capacity: no candidates), then climb (determineAdjustment,
 * demoteFromMainProtected, the adjustment). */
static void tl_climb(yyc__lru_map *m) {
    yyc__tinylfu *t = &m->tl;
    tl_window_overflow(m, 0, false);
    if (!t->bounded) {
        tl_demote(m);
        return;
    }
    if (!yyc__sketch_ready(&t->sketch)) {
        t->prev_hit_rate = 0;
        t->hits = t->misses = 0;
    } else if (t->hits + t->misses >= 10 * t->sketch.capacity) {
        /* Caffeine's climber, with a smaller step and without its restart to the full step
         * after a 5-point change (see lru_map.h) */
        double rate = (double)t->hits / (double)(t->hits + t->misses);
        double change = rate - t->prev_hit_rate;
        double amount = change >= 0 ? t->step : -t->step;
        bool restart = TL_RESTART > 0 && (change >= TL_RESTART || change <= -TL_RESTART);
        t->step = restart ? TL_STEP * (double)t->capacity * (amount >= 0 ? 1 : -1) : 0.98 * amount;
        t->prev_hit_rate = rate;
        t->adjustment = (long long)amount;
        t->hits = t->misses = 0;
    }
    tl_demote(m);
    if (t->adjustment > 0) tl_increase_window(m);
    else if (t->adjustment < 0) tl_decrease_window(m);
}

void yyc__lru_map_tinylfu_hit(yyc__lru_map *m, yyc__lru_node *n) {
    if (yyc__sketch_ready(&m->tl.sketch)) yyc__sketch_increment(&m->tl.sketch, node_hash(m, n));
    m->tl.hits++;
    tl_score_ghosted(m, n, true);
    switch (tl_seg(n)) {
    case YYC__TL_WINDOW:
        if (n != m->head) {
            list_remove(m, n);
            link_head(m, n);
        }
        break;
    case YYC__TL_PROBATION:
        list_remove(m, n);
        if (tl_weight(m, n) > m->tl.protected_max) {
            tl_link_probation(m, n);
        } else {
            tl_set_seg(n, YYC__TL_PROTECTED);
            tl_account(m, n, 1);
            tl_link_protected(m, n);
        }
        break;
    default:
        if (n != m->main_head) {
            list_remove(m, n);
            tl_link_protected(m, n);
        }
        break;
    }
}

/* Caffeine's admit: whether the candidate beats the victim. */
static bool tl_admit(yyc__lru_map *m, const yyc__lru_node *cand, const yyc__lru_node *victim) {
    if (!yyc__sketch_ready(&m->tl.sketch)) return false; /* nothing known: keep main's */
    unsigned vf = yyc__sketch_frequency(&m->tl.sketch, node_hash(m, victim));
    unsigned cf = yyc__sketch_frequency(&m->tl.sketch, node_hash(m, cand));
    if (cf > vf + TL_MARGIN) return true;
    if (cf >= 6) return (tl_random(&m->tl) & 127) == 0; /* hash flooding defence */
    return false;
}

/* The next victim (not unlinked). inserting: the eviction makes room for a new key, of weight
 * pending (1, or 0 when weights are costs: not known yet); then, without candidates from the
 * window's excess, the window's oldest entry is the candidate (Caffeine's evictFromMain). A trim
 * (not inserting) has no candidate from the window and takes probation's oldest, then the
 * window's, then protected's (the entries hit in main go last). The map is not empty. */
static yyc__lru_node *tinylfu_victim(yyc__lru_map *m, bool inserting, size_t pending) {
    yyc__tinylfu *t = &m->tl;
    tl_sync(m);
    t->denied = false;
    if (!t->bounded) pending = 0;
    tl_window_overflow(m, pending, true);
    yyc__lru_node *cand = t->cand ? t->cand : inserting ? tl_window_lru(m) : NULL;
    yyc__lru_node *victim = tl_probation_lru(m);
    if (!victim) victim = inserting ? tl_protected_lru(m) : tl_window_lru(m);
    if (!victim) victim = inserting ? tl_window_lru(m) : tl_protected_lru(m);
    if (!cand || cand == victim) return victim;
    if (t->bounded && tl_weight(m, cand) > t->capacity) return cand;
    if (!tl_admit(m, cand, victim)) {
        t->denied = true; /* to the ghost queue */
        return cand;
    }
    if (cand == t->cand) { /* it stays; the next candidate is judged next time */
        t->ncand--;
        t->cand = t->ncand ? prev_of(cand) : NULL;
    }
    return victim;
}

/* Counts a key about to be inserted (Caffeine's AddTask) and sizes the sketch when the map
 * is half full. A map without limits has no sketch (no memory for it; its trims take the
 * oldest entries, the window's overflow first). Returns whether the key goes to main rather
 * than the window: its hash was in the ghost queue (taken out) and the ghost score is >= 0,
 * or, below, the 1 key in 64 that keeps the score measured. */
static bool tl_before_insert(yyc__lru_map *m, uint64_t h) {
    yyc__tinylfu *t = &m->tl;
    tl_sync(m);
    size_t weight = t->by_cost ? yyc__lru_map_total_cost(m) : m->count + 1;
    if (t->bounded && weight >= t->capacity / 2)
        yyc__sketch_ensure(&t->sketch, t->by_cost ? m->count + 1 : t->capacity);
    yyc__sketch_increment(&t->sketch, h);
    t->misses++;
    if (!t->bounded || !yyc__ghost_take(&m->ghost, h)) return false;
    return t->ghost_score >= 0 || (tl_random(t) & TL_EXPLORE_MASK) == 0;
}

/* yyc__lru_map_evict; inserting: to make room for a new key of weight pending (TinyLFU). */
static yyc__lru_node *evict_pending(yyc__lru_map *m, size_t count_limit, size_t cost_limit,
                                    bool inserting, size_t pending) {
    if (m->policy == YYC__POLICY_LRU) return yyc__lru_map_pop_tail(m);
    if (!m->tail) return NULL;
    m->lim_count = count_limit;
    m->lim_cost = cost_limit;
    if (m->policy == YYC__POLICY_S3FIFO) m->s3_evicted = true;
    yyc__lru_node *n = m->policy == YYC__POLICY_SIEVE    ? sieve_victim(m)
                       : m->policy == YYC__POLICY_S3FIFO ? s3fifo_victim(m)
                                                         : tinylfu_victim(m, inserting, pending);
    uint64_t h = node_hash(m, n);
    bool to_ghost = in_small(m, n);
    if (m->policy == YYC__POLICY_TINYLFU) {
        tl_score_ghosted(m, n, false);
        if (TL_GHOST && m->tl.denied &&
            m->tl.bounded) /* C hashes (the count + 1 when C is a cost) */
            yyc__ghost_push(&m->ghost, h, m->tl.by_cost ? m->count + 1 : m->tl.capacity);
        m->tl.denied = false;
    }
    unlink_hashed(m, n, h);
    if (to_ghost) { /* 9 C / 10 hashes (9 / 10 of the count when C is a cost) */
        bool by_cost;
        size_t cap = s3_capacity(m, &by_cost);
        if (by_cost) cap = m->count + 1;
        yyc__ghost_push(&m->ghost, h, cap / 10 * 9 + cap % 10 * 9 / 10);
    }
    migrate_some(m);
    shrink_if_sparse(m);
    return n;
}

yyc__lru_node *yyc__lru_map_evict(yyc__lru_map *m, size_t count_limit, size_t cost_limit) {
    return evict_pending(m, count_limit, cost_limit, false, 0);
}

yyc__lru_node *yyc__lru_map_find_or_insert_within(yyc__lru_map *m, const void *key, size_t key_len,
                                                  size_t count_limit, size_t cost_limit,
                                                  bool *inserted, yyc__lru_node **evicted) {
    *inserted = false;
    *evicted = NULL;
    if (key_len > UINT32_MAX) return NULL;
    uint64_t h = map_hash(m, key, key_len);
    yyc__lru_node *n = find_hashed(m, key, key_len, h);
    if (n) return n;
    m->lim_count = count_limit;
    m->lim_cost = cost_limit;
    /* S3-FIFO looks the key up in the ghost queue before evicting (libCacheSim's find, then
     * evict, then insert): the eviction's ghost push cannot push this key's hash out first. */
    int ghost_hit = m->policy == YYC__POLICY_S3FIFO ? yyc__ghost_take(&m->ghost, h) : -1;
    bool tinylfu = m->policy == YYC__POLICY_TINYLFU;
    bool to_main = false;
    if (tinylfu) to_main = tl_before_insert(m, h);
    if (m->count > 0 && m->count >= count_limit)
        *evicted = evict_pending(m, count_limit, cost_limit, true, tinylfu && !m->tl.by_cost);
    n = new_node(m, key, key_len);
    if (!n) return NULL;
    if (!add_node(m, n, h, ghost_hit)) {
        free(n);
        return NULL;
    }
    if (to_main) { /* back from the ghost queue: to main, and scored (see lru_map.h) */
        tl_to_probation(m, n);
        n->prev_bits |= YYC__TL_GHOSTED;
    }
    if (tinylfu) tl_climb(m);
    *inserted = true;
    return n;
}

bool yyc__lru_map_expire_step(yyc__lru_map *m, bool begin, double now, double age, size_t budget,
                              yyc__lru_node **list, yyc__lru_node **tail) {
    if (begin) m->sweep = m->tail;
    while (m->sweep && budget-- > 0) {
        yyc__lru_node *n = m->sweep;
        m->sweep = prev_of(n);
        if (now - n->time > age) { /* false for NaN */
            yyc__lru_map_unlink(m, n);
            if (*tail) (*tail)->next = n;
            else *list = n;
            *tail = n;
        }
    }
    return m->sweep == NULL;
}

yyc__lru_node *yyc__lru_map_detach_all(yyc__lru_map *m, void **out_table) {
    yyc__lru_node *list = m->head;
    *out_table = m->slots;
    free(m->old); /* rare: only while a resize is under way */
    reset_keeping_seed(m);
    return list;
}

yyc__lru_node *yyc__lru_map_copy_node(const yyc__lru_map *m, const yyc__lru_node *n) {
    yyc__lru_node *copy = new_node(m, n->key, n->key_len);
    if (!copy) return NULL;
    copy->value = n->value;
    copy->cost = n->cost;
    copy->time = n->time;
    if (m->value_size && !yyc__lru_value_in_field(m->value_size, m->value_align))
        memcpy(yyc__lru_node_value(copy, m->value_size, m->value_align),
               yyc__lru_node_value((yyc__lru_node *)n, m->value_size, m->value_align),
               m->value_size);
    return copy;
}

void yyc__lru_node_free(yyc__lru_node *node) { free(node); }

/* --- invariant checker --- */

#ifdef YYC_TESTING
#define CHECK(cond)                                                                              \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "%s:%d: lru_map invariant broken: %s\n", __FILE__, __LINE__, #cond); \
            return false;                                                                        \
        }                                                                                        \
    } while (0)

/* Checks one table's slots (start, lo: as for probe; 0 for the current table) and counts its
 * entries into *entries. */
static bool check_table(const yyc__lru_map *m, const table *v, size_t start, size_t lo,
                        size_t *entries) {
    const uint64_t *t = v->t;
    size_t mask = v->mask;
    CHECK(v->shift >= TAG_BITS && ((size_t)1 << (64 - v->shift)) == mask + 1);
    for (size_t r = 0; r < lo; r++) CHECK(t[(start + r) & mask] == 0);
    for (size_t i = 0; i <= mask; i++) {
        if (((i - start) & mask) < lo) continue;
        uint64_t s = t[i];
        if (!s) continue;
        const yyc__lru_node *n = slot_node(s);
        uint64_t h = node_hash(m, n);
        size_t dist = (i - home_of(h, v)) & mask;
        CHECK(slot_dist_field(s) == (dist < DIST_MAX ? dist : DIST_MAX));
        CHECK(((s ^ (tag_of(h, v) << TAG_SHIFT)) & v->tag_match) == 0);
        /* Robin Hood order: the previous slot holds an entry at most one closer to home,
         * unless it lies in the migrated region (emptied without shifting). */
        size_t prev = (i - 1) & mask;
        if (dist > 0 && !(lo > 0 && ((prev - start) & mask) < lo)) {
            CHECK(t[prev] != 0);
            CHECK(slot_dist(m, t[prev], prev, v) + 1 >= dist);
        }
        CHECK(*entries < m->count);
        (*entries)++;
    }
    return true;
}

/* Whether node n is on m's list (O(n)). */
static bool on_list(const yyc__lru_map *m, const yyc__lru_node *n) {
    for (const yyc__lru_node *x = m->head; x; x = x->next)
        if (x == n) return true;
    return false;
}

/* TinyLFU's part of the invariants (see lru_map.h). */
static bool check_tinylfu(const yyc__lru_map *m) {
    const yyc__tinylfu *t = &m->tl;
    CHECK(m->hand == NULL && m->small_count == 0);
    CHECK(t->bounded || yyc__ghost_count(&m->ghost) == 0);
    CHECK(yyc__ghost_check(&m->ghost));
    CHECK(t->ghost_score >= -TL_SCORE_MAX && t->ghost_score <= TL_SCORE_MAX && !t->denied);
    CHECK(yyc__sketch_check(&t->sketch));
    size_t wc = 0, wlo = 0, whi = 0, pc = 0, plo = 0, phi = 0;
    uintptr_t prev_seg = YYC__TL_WINDOW;
    const yyc__lru_node *first_main = NULL, *first_prob = NULL;
    bool cand_seen = false;
    size_t after_cand = 0;
    for (const yyc__lru_node *n = m->tail; n; n = prev_of(n)) { /* tail first: see cand */
        if (n == t->cand) cand_seen = true;
        else if (cand_seen && tl_seg(n) == YYC__TL_PROBATION) after_cand++;
    }
    for (const yyc__lru_node *n = m->head; n; n = n->next) {
        uintptr_t seg = tl_seg(n);
        CHECK((n->prev_bits & YYC__NODE_BITS & ~(YYC__TL_SEG | YYC__TL_GHOSTED)) == 0);
        CHECK(seg != 3);
        /* order: window (0), protected (2), probation (1) */
        int rank = seg == YYC__TL_WINDOW ? 0 : seg == YYC__TL_PROTECTED ? 1 : 2;
        int prev_rank = prev_seg == YYC__TL_WINDOW ? 0 : prev_seg == YYC__TL_PROTECTED ? 1 : 2;
        CHECK(rank >= prev_rank);
        prev_seg = seg;
        if (seg != YYC__TL_WINDOW && !first_main) first_main = n;
        if (seg == YYC__TL_PROBATION && !first_prob) first_prob = n;
        if (seg == YYC__TL_WINDOW) {
            wc++;
            sum_add(&wlo, &whi, n->cost);
        } else if (seg == YYC__TL_PROTECTED) {
            pc++;
            sum_add(&plo, &phi, n->cost);
        }
    }
    CHECK(m->main_head == first_main);
    CHECK(t->prob_head == first_prob);
    CHECK(wc == t->win_count && wlo == t->win_cost_lo && whi == t->win_cost_hi);
    CHECK(pc == t->prot_count && plo == t->prot_cost_lo && phi == t->prot_cost_hi);
    CHECK((t->cand == NULL) == (t->ncand == 0));
    if (t->cand) {
        CHECK(cand_seen && tl_seg(t->cand) == YYC__TL_PROBATION);
        CHECK(t->ncand <= after_cand + 1);
    }
    return true;
}

/* The policy part of the invariants (see lru_map.h). */
static bool check_policy(const yyc__lru_map *m) {
    CHECK(m->sweep == NULL || on_list(m, m->sweep));
    if (m->policy != YYC__POLICY_TINYLFU)
        CHECK(m->tl.prob_head == NULL && m->tl.cand == NULL && m->tl.win_count == 0 &&
              m->tl.prot_count == 0 && m->tl.sketch.table == NULL);
    switch (m->policy) {
    case YYC__POLICY_TINYLFU: return check_tinylfu(m);
    case YYC__POLICY_LRU:
        CHECK(m->hand == NULL && m->main_head == NULL);
        CHECK(m->small_count == 0 && yyc__ghost_count(&m->ghost) == 0);
        for (const yyc__lru_node *n = m->head; n; n = n->next)
            CHECK((n->prev_bits & YYC__NODE_BITS) == 0);
        return true;
    case YYC__POLICY_SIEVE:
        CHECK(m->main_head == NULL && m->small_count == 0);
        CHECK(yyc__ghost_count(&m->ghost) == 0);
        CHECK(m->hand == NULL || on_list(m, m->hand));
        for (const yyc__lru_node *n = m->head; n; n = n->next)
            CHECK((n->prev_bits & YYC__NODE_BITS & ~YYC__SIEVE_VISITED) == 0);
        return true;
    case YYC__POLICY_S3FIFO: {
        CHECK(m->hand == NULL);
        size_t small = 0, lo = 0, hi = 0;
        bool in_main = false;
        for (const yyc__lru_node *n = m->head; n; n = n->next) {
            CHECK((n->prev_bits & YYC__NODE_BITS & ~(YYC__S3_FREQ | YYC__S3_MAIN)) == 0);
            bool main = (n->prev_bits & YYC__S3_MAIN) != 0;
            if (main && !in_main) CHECK(m->main_head == n); /* the first main node */
            CHECK(!in_main || main);                        /* small nodes come first */
            in_main = main;
            if (!main) {
                small++;
                sum_add(&lo, &hi, n->cost);
            }
        }
        CHECK(in_main || m->main_head == NULL);
        CHECK(small == m->small_count);
        CHECK(lo == m->small_cost_lo && hi == m->small_cost_hi);
        return yyc__ghost_check(&m->ghost);
    }
    }
    CHECK(!"unknown policy");
    return false;
}

bool yyc__lru_map_check(const yyc__lru_map *m) {
    CHECK((m->slots == NULL) == (m->mask == 0));
    CHECK(m->value_align >= 1 && m->value_align <= YYC__LRU_MAX_VALUE_ALIGN &&
          (m->value_align & (m->value_align - 1)) == 0);
    CHECK(m->value_size <= YYC__LRU_MAX_VALUE_SIZE);
    CHECK((m->head == NULL) == (m->tail == NULL));
    CHECK((m->head == NULL) == (m->count == 0));
    if (m->slots) {
        size_t slots = m->mask + 1;
        CHECK(slots >= YYC__LRU_MIN_BUCKETS && (slots & m->mask) == 0);
        CHECK(m->count <= m->mask); /* an empty slot always remains */
        CHECK(m->tag_bits >= MIN_TAG_BITS - 1 && m->tag_bits <= TAG_BITS);
    } else {
        CHECK(m->count == 0);
        CHECK(m->old == NULL);
    }
    if (m->old) {
        size_t old_slots = m->old_mask + 1;
        CHECK(old_slots >= YYC__LRU_MIN_BUCKETS && (old_slots & m->old_mask) == 0);
        CHECK(m->old_mask * 2 + 1 == m->mask || m->mask * 2 + 1 == m->old_mask);
        CHECK(m->migrate_pos <= m->old_mask && m->migrate_start <= m->old_mask);
    } else {
        CHECK(m->old_mask == 0 && m->migrate_pos == 0 && m->migrate_start == 0);
        CHECK(!m->migrate_rehash);
    }
    /* Walk the list: links both ways, count, cost sum, and each node findable. */
    size_t n_list = 0, lo = 0, hi = 0;
    const yyc__lru_node *prev = NULL;
    for (const yyc__lru_node *n = m->head; n; n = n->next) {
        CHECK(prev_of(n) == prev);
        CHECK(n_list < m->count); /* also stops cycles */
        n_list++;
        lo += n->cost;
        if (lo < n->cost) hi++;
        CHECK(yyc__lru_map_find(m, n->key, n->key_len) == n); /* no duplicate key before n */
        prev = n;
    }
    CHECK(prev == m->tail);
    CHECK(n_list == m->count);
    CHECK(lo == m->cost_lo && hi == m->cost_hi);
    /* Every slot is well formed; both tables hold exactly count entries. */
    size_t entries = 0;
    if (m->slots) {
        table v = cur_table(m);
        if (!check_table(m, &v, 0, 0, &entries)) return false;
    }
    if (m->old) {
        table ov = old_table(m);
        if (!check_table(m, &ov, m->migrate_start, m->migrate_pos, &entries)) return false;
    }
    CHECK(entries == m->count);
    return check_policy(m);
}
#undef CHECK
#endif /* YYC_TESTING */
