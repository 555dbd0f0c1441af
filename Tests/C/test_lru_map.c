/*
 * test_lru_map.c - unit tests of the private LRU map (hash table + intrusive LRU list).
 * Every mutation is followed by the invariant checker.
 */
#include "test_support.h"

#include "memory/lru_map.h"

#define CHECKED(m) assert_true(yyc__lru_map_check(m))

static yyc__lru_node *ins(yyc__lru_map *m, const char *key, size_t cost) {
    yyc__lru_node *n = yyc__lru_map_insert(m, key, strlen(key), (void *)key, cost, 0.0);
    assert_non_null(n);
    CHECKED(m);
    return n;
}

static yyc__lru_node *find(yyc__lru_map *m, const char *key) {
    return yyc__lru_map_find(m, key, strlen(key));
}

/* Asserts the list order from head to tail equals keys[] (and backwards from the tail). */
static void assert_order(const yyc__lru_map *m, const char *const *keys, size_t n) {
    size_t i = 0;
    for (const yyc__lru_node *p = m->head; p; p = p->next, i++) {
        assert_true(i < n);
        assert_int_equal(p->key_len, strlen(keys[i]));
        assert_memory_equal(p->key, keys[i], p->key_len);
    }
    assert_int_equal(i, n);
    for (const yyc__lru_node *p = m->tail; p; p = yyc__lru_node_prev(p)) {
        i--;
        assert_memory_equal(p->key, keys[i], p->key_len);
    }
    assert_int_equal(yyc__lru_map_count(m), n);
}

static void lru_map_starts_empty(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    CHECKED(&m);
    assert_int_equal(yyc__lru_map_count(&m), 0);
    assert_int_equal(yyc__lru_map_total_cost(&m), 0);
    assert_null(m.head);
    assert_null(yyc__lru_map_find(&m, "a", 1));
    assert_null(yyc__lru_map_find(&m, "", 0));
    assert_null(yyc__lru_map_pop_tail(&m));
    yyc__lru_map_destroy(&m);
    CHECKED(&m);
}

static void lru_map_insert_then_find_returns_node(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    yyc__lru_node *a = ins(&m, "alpha", 3);
    yyc__lru_node *b = ins(&m, "beta", 4);
    assert_ptr_equal(find(&m, "alpha"), a);
    assert_ptr_equal(find(&m, "beta"), b);
    assert_null(find(&m, "gamma"));
    assert_null(find(&m, "alph"));
    assert_string_equal((const char *)a->value, "alpha");
    assert_int_equal(yyc__lru_map_total_cost(&m), 7);
    const char *order[] = {"beta", "alpha"};
    assert_order(&m, order, 2);
    yyc__lru_map_destroy(&m);
}

static void lru_map_new_entries_go_to_head(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    ins(&m, "1", 0);
    ins(&m, "2", 0);
    ins(&m, "3", 0);
    const char *order[] = {"3", "2", "1"};
    assert_order(&m, order, 3);
    yyc__lru_map_destroy(&m);
}

static void lru_map_move_to_head_reorders_list(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    yyc__lru_node *n1 = ins(&m, "1", 0);
    yyc__lru_node *n2 = ins(&m, "2", 0);
    yyc__lru_node *n3 = ins(&m, "3", 0);
    yyc__lru_map_move_to_head(&m, n1); /* tail to head */
    CHECKED(&m);
    const char *o1[] = {"1", "3", "2"};
    assert_order(&m, o1, 3);
    yyc__lru_map_move_to_head(&m, n3); /* middle to head */
    CHECKED(&m);
    const char *o2[] = {"3", "1", "2"};
    assert_order(&m, o2, 3);
    yyc__lru_map_move_to_head(&m, n3); /* head stays */
    CHECKED(&m);
    assert_order(&m, o2, 3);
    yyc__lru_map_move_to_head(&m, n2);
    CHECKED(&m);
    const char *o3[] = {"2", "3", "1"};
    assert_order(&m, o3, 3);
    yyc__lru_map_destroy(&m);
}

static void lru_map_pop_tail_evicts_least_recent_first(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    yyc__lru_node *a = ins(&m, "a", 1);
    ins(&m, "b", 2);
    ins(&m, "c", 3);
    yyc__lru_map_move_to_head(&m, a);
    CHECKED(&m);
    yyc__lru_node *t = yyc__lru_map_pop_tail(&m);
    CHECKED(&m);
    assert_memory_equal(t->key, "b", 1);
    assert_null(t->next);
    assert_null(find(&m, "b"));
    assert_int_equal(yyc__lru_map_total_cost(&m), 4);
    yyc__lru_node_free(t);
    t = yyc__lru_map_pop_tail(&m);
    CHECKED(&m);
    assert_memory_equal(t->key, "c", 1);
    yyc__lru_node_free(t);
    t = yyc__lru_map_pop_tail(&m);
    CHECKED(&m);
    assert_ptr_equal(t, a);
    yyc__lru_node_free(t);
    assert_null(yyc__lru_map_pop_tail(&m));
    assert_int_equal(yyc__lru_map_count(&m), 0);
    assert_int_equal(yyc__lru_map_total_cost(&m), 0);
    CHECKED(&m);
    yyc__lru_map_destroy(&m);
}

static void lru_map_remove_head_middle_and_tail_keeps_links(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    yyc__lru_node *n[5];
    const char *keys[] = {"k0", "k1", "k2", "k3", "k4"};
    for (int i = 0; i < 5; i++) n[i] = ins(&m, keys[i], (size_t)i);
    yyc__lru_map_remove(&m, n[2]); /* middle */
    CHECKED(&m);
    yyc__lru_map_remove(&m, n[4]); /* head */
    CHECKED(&m);
    yyc__lru_map_remove(&m, n[0]); /* tail */
    CHECKED(&m);
    const char *order[] = {"k3", "k1"};
    assert_order(&m, order, 2);
    assert_int_equal(yyc__lru_map_total_cost(&m), 4);
    assert_null(find(&m, "k2"));
    yyc__lru_map_remove(&m, n[1]);
    yyc__lru_map_remove(&m, n[3]);
    CHECKED(&m);
    assert_null(m.head);
    assert_null(m.tail);
    yyc__lru_map_destroy(&m);
}

static void lru_map_empty_key_and_nul_bytes_are_distinct_keys(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    static const char k0[] = "";
    static const char k1[] = "a";
    static const char k2[] = {'a', '\0'};
    static const char k3[] = {'a', '\0', 'b'};
    static const char k4[] = {'\0'};
    static const char k5[] = {'\0', '\0'};
    const char *keys[] = {k0, k1, k2, k3, k4, k5};
    size_t lens[] = {0, 1, 2, 3, 1, 2};
    yyc__lru_node *nodes[6];
    for (int i = 0; i < 6; i++) {
        assert_null(yyc__lru_map_find(&m, keys[i], lens[i]));
        nodes[i] = yyc__lru_map_insert(&m, keys[i], lens[i], NULL, 0, 0.0);
        assert_non_null(nodes[i]);
        CHECKED(&m);
    }
    for (int i = 0; i < 6; i++) assert_ptr_equal(yyc__lru_map_find(&m, keys[i], lens[i]), nodes[i]);
    /* A NULL pointer with length 0 is the empty key. */
    assert_ptr_equal(yyc__lru_map_find(&m, NULL, 0), nodes[0]);
    assert_int_equal(yyc__lru_map_count(&m), 6);
    yyc__lru_map_destroy(&m);
}

static void lru_map_key_of_one_mebibyte_is_copied(void **state) {
    (void)state;
    size_t len = 1u << 20;
    unsigned char *key = malloc(len);
    assert_non_null(key);
    for (size_t i = 0; i < len; i++) key[i] = (unsigned char)(i * 131u);
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    yyc__lru_node *n = yyc__lru_map_insert(&m, key, len, NULL, 0, 0.0);
    assert_non_null(n);
    CHECKED(&m);
    assert_ptr_equal(yyc__lru_map_find(&m, key, len), n);
    assert_null(yyc__lru_map_find(&m, key, len - 1));
    key[len - 1] ^= 1;
    assert_null(yyc__lru_map_find(&m, key, len));
    key[len - 1] ^= 1;
    memset(key, 0, len); /* the map copied the key */
    assert_null(yyc__lru_map_find(&m, key, len));
    free(key);
    yyc__lru_map_destroy(&m);
}

static void lru_map_find_or_insert_returns_existing_node(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    bool inserted = false;
    yyc__lru_node *a = yyc__lru_map_find_or_insert(&m, "k", 1, &inserted);
    assert_non_null(a);
    assert_true(inserted);
    assert_null(a->value);
    assert_int_equal(a->cost, 0);
    CHECKED(&m);
    ins(&m, "other", 0);
    yyc__lru_node *b = yyc__lru_map_find_or_insert(&m, "k", 1, &inserted);
    assert_false(inserted);
    assert_ptr_equal(a, b);
    const char *order[] = {"other", "k"}; /* not moved */
    assert_order(&m, order, 2);
    yyc__lru_map_destroy(&m);
}

static void lru_map_set_cost_updates_total(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    yyc__lru_node *a = ins(&m, "a", 10);
    ins(&m, "b", 5);
    yyc__lru_map_set_cost(&m, a, 3);
    CHECKED(&m);
    assert_int_equal(yyc__lru_map_total_cost(&m), 8);
    assert_int_equal(a->cost, 3);
    yyc__lru_map_destroy(&m);
}

static void lru_map_cost_total_saturates_and_stays_exact(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    yyc__lru_node *a = ins(&m, "a", SIZE_MAX - 1);
    assert_int_equal(yyc__lru_map_total_cost(&m), SIZE_MAX - 1);
    yyc__lru_node *b = ins(&m, "b", 5);
    assert_int_equal(yyc__lru_map_total_cost(&m), SIZE_MAX); /* saturated, not wrapped to 3 */
    yyc__lru_node *c = ins(&m, "c", SIZE_MAX);
    assert_int_equal(yyc__lru_map_total_cost(&m), SIZE_MAX);
    yyc__lru_map_remove(&m, c);
    CHECKED(&m);
    assert_int_equal(yyc__lru_map_total_cost(&m), SIZE_MAX);
    yyc__lru_map_remove(&m, a); /* exact again: only b's 5 remains */
    CHECKED(&m);
    assert_int_equal(yyc__lru_map_total_cost(&m), 5);
    yyc__lru_map_set_cost(&m, b, SIZE_MAX);
    ins(&m, "d", 1);
    assert_int_equal(yyc__lru_map_total_cost(&m), SIZE_MAX);
    yyc__lru_map_set_cost(&m, b, 2);
    CHECKED(&m);
    assert_int_equal(yyc__lru_map_total_cost(&m), 3);
    yyc__lru_map_destroy(&m);
}

static void lru_map_detach_all_returns_whole_list(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    char key[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "key%d", i);
        assert_non_null(yyc__lru_map_insert(&m, key, strlen(key), NULL, 1, 0.0));
    }
    uint64_t seed = m.seed;
    void *table = NULL;
    yyc__lru_node *list = yyc__lru_map_detach_all(&m, &table);
    CHECKED(&m);
    assert_int_equal(yyc__lru_map_count(&m), 0);
    assert_int_equal(yyc__lru_map_total_cost(&m), 0);
    assert_int_equal(m.seed, seed);
    assert_non_null(table);
    size_t n = 0;
    int expect = 999; /* head first: most recent insert */
    while (list) {
        yyc__lru_node *next = list->next;
        snprintf(key, sizeof key, "key%d", expect--);
        assert_memory_equal(list->key, key, list->key_len);
        yyc__lru_node_free(list);
        list = next;
        n++;
    }
    assert_int_equal(n, 1000);
    free(table);
    /* The map is usable again. */
    ins(&m, "again", 1);
    assert_non_null(find(&m, "again"));
    yyc__lru_map_destroy(&m);
}

/* The longest probe distance of any entry in the current table (exact, rehashing keys). */
static size_t longest_probe(const yyc__lru_map *m) {
    size_t longest = 0;
    for (size_t i = 0; i <= m->mask; i++) {
        uint64_t s = m->slots[i];
        if (!s) continue;
        /* Slot layout (lru_map.c): node pointer >> 4 in the low 44 bits. */
        const yyc__lru_node *n =
            (const yyc__lru_node *)(uintptr_t)((s & ((UINT64_C(1) << 44) - 1)) << 4);
        size_t home = (size_t)(yyc__hash_bytes(n->key, n->key_len, m->seed) >> m->shift);
        size_t dist = (i - home) & m->mask;
        if (dist > longest) longest = dist;
    }
    return longest;
}

static void lru_map_table_grows_with_count_and_shrinks_after_removals(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    enum { N = 100000 };
    char key[16];
    size_t last_slots = 0;
    unsigned doublings = 0, big_partial_migrations = 0;
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "%d", i);
        assert_non_null(yyc__lru_map_insert(&m, key, strlen(key), NULL, 1, 0.0));
        size_t slots = m.mask + 1;
        assert_true(m.count * 5 <= slots * 4); /* load factor <= 4/5 */
        if (slots != last_slots) {
            if (last_slots) assert_int_equal(slots, last_slots * 2);
            last_slots = slots;
            doublings++;
            CHECKED(&m);
            /* The rehash is incremental: right after a growth most of the old table is left. */
            if (m.old && m.old_mask >= 1023) {
                assert_true(m.migrate_pos < m.old_mask / 2);
                big_partial_migrations++;
            }
        }
        if (m.old && (i % 997) == 0) CHECKED(&m); /* mid-migration states */
    }
    assert_true(big_partial_migrations >= 5);
    assert_null(m.old); /* finished before the end */
    CHECKED(&m);
    assert_true(doublings >= 13); /* 16 -> 131072 */
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "%d", i);
        yyc__lru_node *n = yyc__lru_map_find(&m, key, strlen(key));
        assert_non_null(n);
    }
    /* Probe runs stay short with the seeded hash on sequential keys. */
    assert_true(longest_probe(&m) <= 64);
    /* Removing by key keeps the capacity (refilling must not resize again)... */
    size_t full_slots = m.mask + 1;
    for (int i = 0; i < N; i += 2) {
        snprintf(key, sizeof key, "%d", i);
        yyc__lru_map_remove(&m, yyc__lru_map_find(&m, key, strlen(key)));
    }
    CHECKED(&m);
    assert_int_equal(m.mask + 1, full_slots);
    for (int i = 0; i < N; i += 2) {
        snprintf(key, sizeof key, "%d", i);
        assert_non_null(yyc__lru_map_insert(&m, key, strlen(key), NULL, 1, 0.0));
    }
    assert_int_equal(m.mask + 1, full_slots);
    CHECKED(&m);
    /* ...while evicting almost everything from the tail gives the table back. */
    for (int i = 0; i < N - 10; i++) {
        yyc__lru_node *t = yyc__lru_map_pop_tail(&m);
        assert_non_null(t);
        yyc__lru_node_free(t);
        if (m.old && (i % 1999) == 0) CHECKED(&m); /* mid-shrink states */
    }
    CHECKED(&m);
    assert_int_equal(yyc__lru_map_count(&m), 10);
    /* Shrinks while at most 1/8 full (the last halving may still be migrating). */
    assert_true(m.mask + 1 <= 8 * 16);
    yyc__lru_map_destroy(&m);
}

/* Lookups, removals and reinsertion while a growth is half migrated find every key in the
 * table it is in (the old table's unmigrated half or the new one). */
static void lru_map_operations_during_migration_find_every_key(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    char key[16];
    int n = 0;
    /* Insert until a big table starts migrating. */
    for (;;) {
        snprintf(key, sizeof key, "m%d", n++);
        assert_non_null(yyc__lru_map_insert(&m, key, strlen(key), NULL, 1, 0.0));
        if (m.old && m.old_mask >= 4095) break;
    }
    assert_true(m.migrate_pos < m.old_mask / 2);
    CHECKED(&m);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "m%d", i);
        assert_non_null(yyc__lru_map_find(&m, key, strlen(key)));
    }
    snprintf(key, sizeof key, "absent");
    assert_null(yyc__lru_map_find(&m, key, strlen(key)));
    /* Remove every third key (each removal migrates a few more slots), checking as we go. */
    for (int i = 0; i < n; i += 3) {
        snprintf(key, sizeof key, "m%d", i);
        if (i % 2) { /* by node, and by key (one probe) */
            yyc__lru_node *x = yyc__lru_map_find(&m, key, strlen(key));
            assert_non_null(x);
            yyc__lru_map_remove(&m, x);
        } else {
            yyc__lru_node *x = yyc__lru_map_unlink_key(&m, key, strlen(key));
            assert_non_null(x);
            assert_int_equal(x->key_len, strlen(key));
            assert_memory_equal(x->key, key, strlen(key));
            assert_null(x->next);
            yyc__lru_node_free(x);
            assert_null(yyc__lru_map_unlink_key(&m, key, strlen(key)));
        }
        if ((i % 300) == 0) CHECKED(&m);
    }
    CHECKED(&m);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "m%d", i);
        assert_true((yyc__lru_map_find(&m, key, strlen(key)) != NULL) == (i % 3 != 0));
    }
    yyc__lru_map_destroy(&m);
}

static void lru_map_hash_depends_on_seed_and_every_byte(void **state) {
    (void)state;
    unsigned char buf[200];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)i;
    for (size_t len = 0; len <= sizeof buf; len++) {
        uint64_t h = yyc__hash_bytes(buf, len, 1);
        assert_true(h != yyc__hash_bytes(buf, len, 2));
        assert_int_equal(h, yyc__hash_bytes(buf, len, 1));
        for (size_t i = 0; i < len; i++) {
            buf[i] ^= 0x10;
            assert_true(h != yyc__hash_bytes(buf, len, 1));
            buf[i] ^= 0x10;
        }
        if (len < sizeof buf) assert_true(h != yyc__hash_bytes(buf, len + 1, 1));
    }
    yyc__lru_map a, b;
    yyc__lru_map_init(&a);
    yyc__lru_map_init(&b);
    assert_true(a.seed != b.seed); /* arc4random: equal seeds have probability 2^-64 */
}

/* --- randomized test against a simple model --- */

enum { MODEL_KEYS = 300 };

typedef struct model {
    bool present[MODEL_KEYS];
    size_t cost[MODEL_KEYS];
    uint64_t stamp[MODEL_KEYS]; /* larger = more recent */
    yyc__lru_node *node[MODEL_KEYS];
    size_t count;
    uint64_t clock;
} model;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static size_t model_key(int k, char *buf) {
    /* Varying lengths, with NUL bytes in some keys. */
    int len = snprintf(buf, 32, "%d", k);
    if (k % 7 == 0) {
        buf[len++] = '\0';
        buf[len++] = 'z';
    }
    return (size_t)len;
}

static int model_tail(const model *md) {
    int best = -1;
    for (int k = 0; k < MODEL_KEYS; k++)
        if (md->present[k] && (best < 0 || md->stamp[k] < md->stamp[best])) best = k;
    return best;
}

static void lru_map_random_operations_match_model(void **state) {
    (void)state;
    model *md = calloc(1, sizeof *md);
    assert_non_null(md);
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    char key[32];
    for (int op = 0; op < 100000; op++) {
        int k = (int)(rng() % MODEL_KEYS);
        size_t len = model_key(k, key);
        unsigned what = (unsigned)(rng() % 100);
        if (what < 35) { /* find (+ move to head on a hit, like get) */
            yyc__lru_node *n = yyc__lru_map_find(&m, key, len);
            assert_true((n != NULL) == md->present[k]);
            if (n) {
                assert_ptr_equal(n, md->node[k]);
                yyc__lru_map_move_to_head(&m, n);
                md->stamp[k] = ++md->clock;
            }
        } else if (what < 65) { /* set: insert or update cost + move to head */
            size_t cost = (size_t)(rng() % 1000);
            bool inserted;
            yyc__lru_node *n = yyc__lru_map_find_or_insert(&m, key, len, &inserted);
            assert_non_null(n);
            assert_true(inserted == !md->present[k]);
            yyc__lru_map_set_cost(&m, n, cost);
            yyc__lru_map_move_to_head(&m, n);
            if (inserted) md->count++;
            md->present[k] = true;
            md->node[k] = n;
            md->cost[k] = cost;
            md->stamp[k] = ++md->clock;
        } else if (what < 75) { /* remove */
            yyc__lru_node *n = yyc__lru_map_find(&m, key, len);
            assert_true((n != NULL) == md->present[k]);
            if (n) {
                yyc__lru_map_remove(&m, n);
                md->present[k] = false;
                md->count--;
            }
        } else if (what < 85) { /* remove by key */
            yyc__lru_node *n = yyc__lru_map_unlink_key(&m, key, len);
            assert_true((n != NULL) == md->present[k]);
            if (n) {
                assert_ptr_equal(n, md->node[k]);
                yyc__lru_node_free(n);
                md->present[k] = false;
                md->count--;
            }
        } else if (what < 98) { /* pop tail */
            int t = model_tail(md);
            yyc__lru_node *n = yyc__lru_map_pop_tail(&m);
            if (t < 0) {
                assert_null(n);
            } else {
                assert_ptr_equal(n, md->node[t]);
                yyc__lru_node_free(n);
                md->present[t] = false;
                md->count--;
            }
        } else if (what < 99) { /* detach all */
            void *table;
            yyc__lru_node *list = yyc__lru_map_detach_all(&m, &table);
            size_t n = 0;
            while (list) {
                yyc__lru_node *next = list->next;
                yyc__lru_node_free(list);
                list = next;
                n++;
            }
            free(table);
            assert_int_equal(n, md->count);
            memset(md->present, 0, sizeof md->present);
            md->count = 0;
        } else { /* insert through the plain insert when absent */
            if (!md->present[k]) {
                yyc__lru_node *n = yyc__lru_map_insert(&m, key, len, NULL, 7, 0.0);
                assert_non_null(n);
                md->present[k] = true;
                md->node[k] = n;
                md->cost[k] = 7;
                md->stamp[k] = ++md->clock;
                md->count++;
            }
        }
        CHECKED(&m);
        assert_int_equal(yyc__lru_map_count(&m), md->count);
        if (op % 1000 == 0) { /* full comparison: totals and the whole order */
            size_t total = 0;
            for (int i = 0; i < MODEL_KEYS; i++)
                if (md->present[i]) total += md->cost[i];
            assert_int_equal(yyc__lru_map_total_cost(&m), total);
            uint64_t last = UINT64_MAX;
            for (yyc__lru_node *n = m.head; n; n = n->next) {
                int idx = -1;
                for (int i = 0; i < MODEL_KEYS; i++)
                    if (md->present[i] && md->node[i] == n) idx = i;
                assert_true(idx >= 0);
                assert_true(md->stamp[idx] < last);
                last = md->stamp[idx];
            }
        }
    }
    yyc__lru_map_destroy(&m);
    free(md);
}

/* Inline values: value_size bytes per node after the key, aligned, kept through resizes,
 * detach_all and destroy (the layout survives). ASan checks that the bytes are in the node. */
static void lru_map_inline_values_follow_the_key_aligned(void **state) {
    (void)state;
    /* After the key at every alignment; then in the value field (at most pointer size). */
    size_t aligns[] = {1, 2, 8, 16, 8, 4, 1, 16};
    size_t sizes[] = {24, 25, 26, 27, 8, 4, 1, 8};
    for (size_t ai = 0; ai < 8; ai++) {
        size_t align = aligns[ai], size = sizes[ai];
        bool in_field = yyc__lru_value_in_field(size, align);
        assert_true(in_field == (ai >= 4 && ai < 7));
        yyc__lru_map m;
        yyc__lru_map_init_inline(&m, size, align);
        assert_int_equal(m.value_size, size);
        char key[64];
        for (int i = 0; i < 300; i++) {
            int n = snprintf(key, sizeof key, "%.*s%d", i % 40,
                             "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", i);
            bool inserted;
            yyc__lru_node *node = yyc__lru_map_find_or_insert(&m, key, (size_t)n, &inserted);
            assert_non_null(node);
            assert_true(inserted);
            unsigned char *v = yyc__lru_node_value(node, size, align);
            assert_int_equal((uintptr_t)v % align, 0);
            if (in_field) {
                assert_ptr_equal(v, &node->value);
            } else {
                assert_true(v >= node->key + node->key_len);
                assert_true(v < node->key + node->key_len + align);
            }
            memset(v, i & 0xff, size);
        }
        CHECKED(&m);
        for (int i = 0; i < 300; i++) {
            int n = snprintf(key, sizeof key, "%.*s%d", i % 40,
                             "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", i);
            yyc__lru_node *node = yyc__lru_map_find(&m, key, (size_t)n);
            assert_non_null(node);
            unsigned char *v = yyc__lru_node_value(node, size, align);
            for (size_t b = 0; b < size; b++) assert_int_equal(v[b], i & 0xff);
        }
        void *table;
        yyc__lru_node *list = yyc__lru_map_detach_all(&m, &table);
        free(table);
        while (list) {
            yyc__lru_node *next = list->next;
            yyc__lru_node_free(list);
            list = next;
        }
        assert_int_equal(m.value_size, size);
        assert_int_equal(m.value_align, align);
        assert_non_null(ins(&m, "again", 0));
        yyc__lru_map_destroy(&m);
        assert_int_equal(m.value_size, size);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(lru_map_inline_values_follow_the_key_aligned),
    cmocka_unit_test(lru_map_starts_empty),
    cmocka_unit_test(lru_map_insert_then_find_returns_node),
    cmocka_unit_test(lru_map_new_entries_go_to_head),
    cmocka_unit_test(lru_map_move_to_head_reorders_list),
    cmocka_unit_test(lru_map_pop_tail_evicts_least_recent_first),
    cmocka_unit_test(lru_map_remove_head_middle_and_tail_keeps_links),
    cmocka_unit_test(lru_map_empty_key_and_nul_bytes_are_distinct_keys),
    cmocka_unit_test(lru_map_key_of_one_mebibyte_is_copied),
    cmocka_unit_test(lru_map_find_or_insert_returns_existing_node),
    cmocka_unit_test(lru_map_set_cost_updates_total),
    cmocka_unit_test(lru_map_cost_total_saturates_and_stays_exact),
    cmocka_unit_test(lru_map_detach_all_returns_whole_list),
    cmocka_unit_test(lru_map_table_grows_with_count_and_shrinks_after_removals),
    cmocka_unit_test(lru_map_operations_during_migration_find_every_key),
    cmocka_unit_test(lru_map_hash_depends_on_seed_and_every_byte),
    cmocka_unit_test(lru_map_random_operations_match_model),
};

YYC_TEST_MAIN(tests)
