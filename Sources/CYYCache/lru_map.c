/*
 * lru_map.c - hash-indexed doubly linked LRU list. See lru_map.h for the contract and the
 * invariants. No locks here: the caller holds the owner's lock.
 */
#include "lru_map.h"

#include <bsd/stdlib.h> /* arc4random_buf */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- private prototypes --- */

static void start_resize(yyc__lru_map *m, size_t new_buckets);
static void grow_if_needed(yyc__lru_map *m);
static void shrink_if_sparse(yyc__lru_map *m);
static yyc__lru_node *new_node(const void *key, size_t key_len, uint32_t hash);
static void link_head(yyc__lru_map *m, yyc__lru_node *n);
static void cost_add(yyc__lru_map *m, size_t cost);
static void cost_sub(yyc__lru_map *m, size_t cost);

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

uint64_t yyc__hash_bytes(const void *key, size_t len, uint64_t seed) {
    const uint8_t *p = key;
    uint64_t a, b;
    seed ^= mix(seed ^ P0, P1);
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

/* --- totals --- */

static void cost_add(yyc__lru_map *m, size_t cost) {
    m->cost_lo += cost;
    if (m->cost_lo < cost) m->cost_hi++;
}

static void cost_sub(yyc__lru_map *m, size_t cost) {
    if (m->cost_lo < cost) m->cost_hi--;
    m->cost_lo -= cost;
}

/* --- table --- */

void yyc__lru_map_init(yyc__lru_map *m) {
    memset(m, 0, sizeof *m);
    arc4random_buf(&m->seed, sizeof m->seed);
}

void yyc__lru_map_destroy(yyc__lru_map *m) {
    yyc__lru_node *n = m->head;
    while (n) {
        yyc__lru_node *next = n->next;
        free(n);
        n = next;
    }
    free(m->buckets);
    free(m->old);
    uint64_t seed = m->seed;
    memset(m, 0, sizeof *m);
    m->seed = seed;
}

/* --- incremental resize --- */

/* The chain slot where a node with hash h lives (or would be inserted): see the invariants. */
static inline yyc__lru_node **slot_for(const yyc__lru_map *m, uint32_t h) {
    if (m->old) {
        size_t i = h & m->old_mask;
        if (i >= m->migrate_pos) return &m->old[i];
    }
    return &m->buckets[h & m->mask];
}

/* Moves the chain of old slot migrate_pos into the current table. Returns the nodes moved. */
static size_t migrate_slot(yyc__lru_map *m) {
    yyc__lru_node *n = m->old[m->migrate_pos];
    m->old[m->migrate_pos] = NULL;
    m->migrate_pos++;
    size_t moved = 0;
    while (n) {
        yyc__lru_node *next = n->chain;
        size_t j = n->hash & m->mask;
        n->chain = m->buckets[j];
        m->buckets[j] = n;
        n = next;
        moved++;
    }
    if (m->migrate_pos > m->old_mask) {
        free(m->old);
        m->old = NULL;
        m->old_mask = 0;
        m->migrate_pos = 0;
    }
    return moved;
}

/* A bounded step of migration, done by every mutating call: about 32 units of work where a
 * slot visit costs 1 and a moved node 4 (a likely cache miss). Growing from S to 2S slots
 * moves ~S nodes over the >= S inserts before the next growth, so migration always finishes
 * in time; empty slots are cheap, so a shrink of a sparse table finishes quickly. */
static void migrate_some(yyc__lru_map *m) {
    size_t budget = 32;
    while (m->old && budget > 0) {
        size_t cost = 1 + 4 * migrate_slot(m);
        budget = cost >= budget ? 0 : budget - cost;
    }
}

/* Starts moving to a table of new_buckets slots (a power of two). A previous migration still
 * under way is finished first (rare: the steps above normally complete it in time). If the
 * allocation fails nothing changes: chains just get longer. */
static void start_resize(yyc__lru_map *m, size_t new_buckets) {
    while (m->old) migrate_slot(m);
    yyc__lru_node **nb = calloc(new_buckets, sizeof *nb);
    if (!nb) return;
    if (!m->buckets) {
        m->buckets = nb;
        m->mask = new_buckets - 1;
        return;
    }
    m->old = m->buckets;
    m->old_mask = m->mask;
    m->migrate_pos = 0;
    m->buckets = nb;
    m->mask = new_buckets - 1;
}

/* Keeps the load factor <= 1 (count <= slots of the current table). The index uses 32 hash
 * bits, so the table stops growing at 2^32 slots. */
static void grow_if_needed(yyc__lru_map *m) {
    if (!m->buckets) {
        start_resize(m, YYC__LRU_MIN_BUCKETS);
        return;
    }
    size_t buckets = m->mask + 1;
    if (m->count >= buckets && buckets <= (size_t)UINT32_MAX && buckets <= SIZE_MAX / 2)
        start_resize(m, buckets * 2);
}

/* Halves the table when it is at most 1/8 full; hysteresis (grow at 1, shrink at 1/8 to 1/4)
 * keeps the cost amortized O(1). Called by pop_tail only: an LRU eviction loop (a trim) gives
 * memory back, while removals by key keep the capacity as Swift's Dictionary does, so that
 * emptying a cache key by key and refilling it does not resize twice. */
static void shrink_if_sparse(yyc__lru_map *m) {
    size_t buckets = m->mask + 1;
    if (!m->old && buckets > YYC__LRU_MIN_BUCKETS && m->count <= buckets / 8)
        start_resize(m, buckets / 2);
}

static yyc__lru_node *new_node(const void *key, size_t key_len, uint32_t hash) {
    if (key_len > UINT32_MAX) return NULL;
    yyc__lru_node *n = malloc(sizeof *n + key_len);
    if (!n) return NULL;
    n->prev = n->next = n->chain = NULL;
    n->value = NULL;
    n->cost = 0;
    n->time = 0.0;
    n->hash = hash;
    n->key_len = (uint32_t)key_len;
    if (key_len) memcpy(n->key, key, key_len);
    return n;
}

static void link_head(yyc__lru_map *m, yyc__lru_node *n) {
    n->prev = NULL;
    n->next = m->head;
    if (m->head) m->head->prev = n;
    else m->tail = n;
    m->head = n;
}

static inline yyc__lru_node *find_hashed(const yyc__lru_map *m, const void *key, size_t key_len,
                                         uint32_t h) {
    if (!m->buckets) return NULL;
    for (yyc__lru_node *n = *slot_for(m, h); n; n = n->chain) {
        if (n->hash == h && n->key_len == key_len &&
            (key_len == 0 || memcmp(n->key, key, key_len) == 0))
            return n;
    }
    return NULL;
}

/* Adds n (already hashed) to its chain and at the list head; grows first if needed. */
static void add_node(yyc__lru_map *m, yyc__lru_node *n) {
    migrate_some(m);
    grow_if_needed(m);
    if (!m->buckets) { /* the very first table could not be allocated: chain nothing */
        return;
    }
    yyc__lru_node **slot = slot_for(m, n->hash);
    n->chain = *slot;
    *slot = n;
    link_head(m, n);
    m->count++;
    cost_add(m, n->cost);
}

yyc__lru_node *yyc__lru_map_find(const yyc__lru_map *m, const void *key, size_t key_len) {
    if (!m->buckets || key_len > UINT32_MAX) return NULL;
    return find_hashed(m, key, key_len, (uint32_t)yyc__hash_bytes(key, key_len, m->seed));
}

yyc__lru_node *yyc__lru_map_insert(yyc__lru_map *m, const void *key, size_t key_len, void *value,
                                   size_t cost, double time) {
    if (key_len > UINT32_MAX) return NULL; /* before hashing: the key is never read */
    yyc__lru_node *n = new_node(key, key_len, (uint32_t)yyc__hash_bytes(key, key_len, m->seed));
    if (!n) return NULL;
    n->value = value;
    n->cost = cost;
    n->time = time;
    add_node(m, n);
    if (!m->buckets) {
        free(n);
        return NULL;
    }
    return n;
}

yyc__lru_node *yyc__lru_map_find_or_insert(yyc__lru_map *m, const void *key, size_t key_len,
                                           bool *inserted) {
    *inserted = false;
    if (key_len > UINT32_MAX) return NULL;
    uint32_t h = (uint32_t)yyc__hash_bytes(key, key_len, m->seed);
    yyc__lru_node *n = find_hashed(m, key, key_len, h);
    if (n) return n;
    n = new_node(key, key_len, h);
    if (!n) return NULL;
    add_node(m, n);
    if (!m->buckets) {
        free(n);
        return NULL;
    }
    *inserted = true;
    return n;
}

void yyc__lru_map_move_to_head(yyc__lru_map *m, yyc__lru_node *n) {
    if (m->head == n) return;
    /* n is not the head, so n->prev != NULL. */
    n->prev->next = n->next;
    if (n->next) n->next->prev = n->prev;
    else m->tail = n->prev;
    link_head(m, n);
}

void yyc__lru_map_set_cost(yyc__lru_map *m, yyc__lru_node *n, size_t cost) {
    cost_sub(m, n->cost);
    cost_add(m, cost);
    n->cost = cost;
}

/* Takes n out of its chain and the list and updates the totals. */
static void unlink_node(yyc__lru_map *m, yyc__lru_node *n) {
    yyc__lru_node **pp = slot_for(m, n->hash);
    while (*pp != n) pp = &(*pp)->chain;
    *pp = n->chain;
    if (n->prev) n->prev->next = n->next;
    else m->head = n->next;
    if (n->next) n->next->prev = n->prev;
    else m->tail = n->prev;
    m->count--;
    cost_sub(m, n->cost);
    n->next = NULL;
    n->prev = NULL;
    n->chain = NULL;
}

void yyc__lru_map_unlink(yyc__lru_map *m, yyc__lru_node *n) {
    unlink_node(m, n);
    migrate_some(m);
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

yyc__lru_node *yyc__lru_map_detach_all(yyc__lru_map *m, void **out_table) {
    yyc__lru_node *list = m->head;
    *out_table = m->buckets;
    free(m->old); /* rare: only while a resize is under way */
    uint64_t seed = m->seed;
    memset(m, 0, sizeof *m);
    m->seed = seed;
    return list;
}

void yyc__lru_node_free(yyc__lru_node *node) { free(node); }

/* --- invariant checker --- */

#ifdef YYC_TESTING
#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: lru_map invariant broken: %s\n", __FILE__, __LINE__, \
                    #cond);                                                           \
            return false;                                                             \
        }                                                                             \
    } while (0)

bool yyc__lru_map_check(const yyc__lru_map *m) {
    CHECK((m->buckets == NULL) == (m->mask == 0));
    CHECK((m->head == NULL) == (m->tail == NULL));
    CHECK((m->head == NULL) == (m->count == 0));
    if (m->buckets) {
        size_t buckets = m->mask + 1;
        CHECK(buckets >= YYC__LRU_MIN_BUCKETS && (buckets & m->mask) == 0);
    } else {
        CHECK(m->count == 0);
        CHECK(m->old == NULL);
    }
    if (m->old) {
        size_t old_buckets = m->old_mask + 1;
        CHECK(old_buckets >= YYC__LRU_MIN_BUCKETS && (old_buckets & m->old_mask) == 0);
        CHECK(m->migrate_pos <= m->old_mask);
        for (size_t i = 0; i < m->migrate_pos; i++) CHECK(m->old[i] == NULL);
    } else {
        CHECK(m->old_mask == 0 && m->migrate_pos == 0);
    }
    /* Walk the list: links both ways, count, cost sum, and each node findable in its chain. */
    size_t n_list = 0, lo = 0, hi = 0;
    const yyc__lru_node *prev = NULL;
    for (const yyc__lru_node *n = m->head; n; n = n->next) {
        CHECK(n->prev == prev);
        CHECK(n_list < m->count); /* also stops cycles */
        n_list++;
        lo += n->cost;
        if (lo < n->cost) hi++;
        CHECK(n->hash == (uint32_t)yyc__hash_bytes(n->key, n->key_len, m->seed));
        const yyc__lru_node *c = *slot_for(m, n->hash);
        while (c && c != n) c = c->chain;
        CHECK(c == n);
        CHECK(yyc__lru_map_find(m, n->key, n->key_len) == n); /* no duplicate key before n */
        prev = n;
    }
    CHECK(prev == m->tail);
    CHECK(n_list == m->count);
    CHECK(lo == m->cost_lo && hi == m->cost_hi);
    /* Every chained node is in the slot the placement rule gives; the chains of both tables
     * hold exactly count nodes. */
    size_t n_chain = 0;
    if (m->buckets) {
        for (size_t i = 0; i <= m->mask; i++) {
            for (const yyc__lru_node *c = m->buckets[i]; c; c = c->chain) {
                CHECK((c->hash & m->mask) == i);
                CHECK(!m->old || (c->hash & m->old_mask) < m->migrate_pos);
                CHECK(n_chain < m->count);
                n_chain++;
            }
        }
    }
    if (m->old) {
        for (size_t i = m->migrate_pos; i <= m->old_mask; i++) {
            for (const yyc__lru_node *c = m->old[i]; c; c = c->chain) {
                CHECK((c->hash & m->old_mask) == i);
                CHECK(n_chain < m->count);
                n_chain++;
            }
        }
    }
    CHECK(n_chain == m->count);
    return true;
}
#undef CHECK
#endif /* YYC_TESTING */
