/*
 * test_policies.c - the memory cache's eviction policies (SIEVE, S3-FIFO beside LRU): the order
 * properties the papers promise, the S3-FIFO ghost queue on its own, and randomized runs
 * against the straightforward models of policy_models.h (same evictions, fixed seeds).
 * Policy-independent behaviour (limits, trims, release, events) runs for every policy in
 * test_memory_cache*.c.
 */
#include "test_support.h"

#include <math.h>
#include "policy_models.h"

#include "memory/lru_map.h"
#include "memory/s3fifo_ghost.h"

bool yyc__memcache_check(yyc_memcache *c);

static yyc_memcache *new_cache(yyc_eviction_policy policy, size_t count_limit) {
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    assert_int_equal(yyc_memcache_set_policy(c, policy), YYC_OK);
    assert_int_equal(yyc_memcache_policy(c), policy);
    yyc_memcache_set_count_limit(c, count_limit);
    yyc_memcache_set_auto_trim_interval(c, 0); /* only the test evicts */
    return c;
}

static void set(yyc_memcache *c, const char *key) {
    assert_int_equal(yyc_memcache_set(c, key, strlen(key), NULL, 0), YYC_OK);
    assert_true(yyc__memcache_check(c));
}

static void get(yyc_memcache *c, const char *key) {
    void *v;
    assert_int_equal(yyc_memcache_get(c, key, strlen(key), &v), YYC_OK);
}

static bool has(yyc_memcache *c, const char *key) {
    return yyc_memcache_contains(c, key, strlen(key));
}

/* --- choosing a policy --- */

static void policy_is_lru_by_default_and_fixed_once_the_cache_holds_entries(void **state) {
    (void)state;
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    assert_int_equal(yyc_memcache_policy(c), YYC_EVICT_LRU);
    assert_int_equal(yyc_memcache_set_policy(c, (yyc_eviction_policy)4), YYC_EINVAL);
    assert_int_equal(yyc_memcache_set_policy(c, YYC_EVICT_SIEVE), YYC_OK);
    set(c, "a");
    assert_int_equal(yyc_memcache_set_policy(c, YYC_EVICT_S3FIFO), YYC_EINVAL);
    assert_int_equal(yyc_memcache_policy(c), YYC_EVICT_SIEVE);
    yyc_memcache_remove_all(c);
    assert_int_equal(yyc_memcache_set_policy(c, YYC_EVICT_S3FIFO), YYC_OK); /* empty again */
    assert_int_equal(yyc_memcache_set_policy(NULL, YYC_EVICT_LRU), YYC_EINVAL);
    assert_int_equal(yyc_memcache_policy(NULL), YYC_EVICT_LRU);
    yyc_memcache_free(c);
    yyc_inline_value_type type = {.size = 8};
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_OK);
    assert_int_equal(yyc_memcache_set_policy(c, YYC_EVICT_S3FIFO), YYC_OK);
    yyc_memcache_free(c);
}

/* --- SIEVE --- */

static void sieve_visited_entry_survives_one_sweep(void **state) {
    (void)state;
    yyc_memcache *c = new_cache(YYC_EVICT_SIEVE, 3);
    set(c, "a");
    set(c, "b");
    set(c, "c");
    get(c, "a"); /* the oldest, visited */
    set(c, "d"); /* the hand clears a's bit and evicts b */
    assert_true(has(c, "a"));
    assert_false(has(c, "b"));
    assert_true(has(c, "c") && has(c, "d"));
    yyc_memcache_free(c);
}

static void sieve_hand_moves_on_from_where_it_stopped(void **state) {
    (void)state;
    yyc_memcache *c = new_cache(YYC_EVICT_SIEVE, 3);
    set(c, "a");
    set(c, "b");
    set(c, "c");
    get(c, "a");
    set(c, "d"); /* evicts b; the hand rests on c */
    get(c, "c");
    set(c, "e"); /* from c (visited: cleared) on to d: a, the oldest and unvisited, stays */
    assert_false(has(c, "d"));
    assert_true(has(c, "a") && has(c, "c") && has(c, "e"));
    yyc_memcache_free(c);
}

static void sieve_unvisited_entry_is_evicted_before_older_visited_ones(void **state) {
    (void)state;
    yyc_memcache *c = new_cache(YYC_EVICT_SIEVE, 4);
    set(c, "a");
    set(c, "b");
    set(c, "c");
    set(c, "d");
    get(c, "a");
    get(c, "b");
    get(c, "d");
    set(c, "e");
    assert_false(has(c, "c"));
    assert_int_equal(yyc_memcache_total_count(c), 4);
    /* Every entry visited: the hand clears them all, wraps, and evicts where it started. */
    yyc_memcache_free(c);
    c = new_cache(YYC_EVICT_SIEVE, 3);
    set(c, "a");
    set(c, "b");
    set(c, "c");
    get(c, "a");
    get(c, "b");
    get(c, "c");
    set(c, "d");
    assert_false(has(c, "a"));
    assert_true(has(c, "b") && has(c, "c") && has(c, "d"));
    yyc_memcache_free(c);
}

static void sieve_and_s3fifo_contains_is_not_a_hit(void **state) {
    (void)state;
    for (int p = YYC_EVICT_SIEVE; p <= YYC_EVICT_S3FIFO; p++) {
        yyc_memcache *c = new_cache((yyc_eviction_policy)p, 3);
        set(c, "a");
        set(c, "b");
        set(c, "c");
        for (int i = 0; i < 3; i++) assert_true(has(c, "a"));
        set(c, "d");
        assert_false(has(c, "a"));
        yyc_memcache_free(c);
    }
}

/* --- S3-FIFO --- */

/* Inserts key through find_or_insert_within (limit 10, no cost limit) and returns the node;
 * *evicted gets the key evicted for it ("" if none). */
static yyc__lru_node *s3_insert(yyc__lru_map *m, const char *key, char *evicted) {
    bool inserted;
    yyc__lru_node *ev;
    yyc__lru_node *n =
        yyc__lru_map_find_or_insert_within(m, key, strlen(key), 10, SIZE_MAX, &inserted, &ev);
    assert_non_null(n);
    assert_true(inserted);
    evicted[0] = '\0';
    if (ev) {
        memcpy(evicted, ev->key, ev->key_len);
        evicted[ev->key_len] = '\0';
        yyc__lru_node_free(ev);
    }
    assert_true(yyc__lru_map_check(m));
    return n;
}

static bool in_main(yyc__lru_map *m, const char *key) {
    yyc__lru_node *n = yyc__lru_map_find(m, key, strlen(key));
    assert_non_null(n);
    return (n->prev_bits & YYC__S3_MAIN) != 0;
}

/* libCacheSim 0.3.5's S3FIFO.c: before the first eviction, a new key goes to main once the
 * small queue (10% of the capacity) is full. */
static void s3fifo_fills_main_once_the_small_queue_is_full_before_the_first_eviction(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    yyc__lru_map_set_policy(&m, YYC__POLICY_S3FIFO);
    char key[16], ev[16];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "k%d", i);
        s3_insert(&m, key, ev);
        assert_string_equal(ev, "");
        assert_int_equal(in_main(&m, key), i > 0); /* the small queue's size is 1 */
    }
    assert_int_equal(m.small_count, 1);
    /* After an eviction new keys go to the small queue again. */
    s3_insert(&m, "n1", ev);
    assert_string_equal(ev, "k0"); /* the small queue's tail, never hit */
    assert_false(in_main(&m, "n1"));
    s3_insert(&m, "n2", ev);
    assert_string_equal(ev, "n1");
    assert_false(in_main(&m, "n2"));
    yyc__lru_map_destroy(&m);
}

/* A key hit twice in the small queue moves to main with its frequency reset (libCacheSim makes
 * a new main object); once at two hits, not at one. */
static void s3fifo_key_hit_twice_moves_to_main_with_frequency_zero(void **state) {
    (void)state;
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    yyc__lru_map_set_policy(&m, YYC__POLICY_S3FIFO);
    char key[16], ev[16];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "k%d", i);
        s3_insert(&m, key, ev);
    }
    s3_insert(&m, "a", ev); /* evicts k0: now a is in the small queue */
    yyc__lru_node *a = yyc__lru_map_find(&m, "a", 1);
    yyc__lru_map_touch(&m, a);
    yyc__lru_map_touch(&m, a);
    yyc__lru_map_touch(&m, a);
    s3_insert(&m, "b", ev); /* a moves to main (frequency 0); the small queue is empty: main's
                             * tail k1 leaves */
    assert_string_equal(ev, "k1");
    assert_true(in_main(&m, "a"));
    assert_int_equal(a->prev_bits & YYC__S3_FREQ, 0);
    yyc__lru_node *b = yyc__lru_map_find(&m, "b", 1);
    yyc__lru_map_touch(&m, b); /* one hit: not enough */
    s3_insert(&m, "c", ev);
    assert_string_equal(ev, "b");
    assert_true(yyc__lru_map_check(&m));
    yyc__lru_map_destroy(&m);
}

static void s3fifo_key_seen_again_while_in_the_ghost_queue_goes_to_main(void **state) {
    (void)state;
    /* At the map level, where the queues can be seen. */
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    yyc__lru_map_set_policy(&m, YYC__POLICY_S3FIFO);
    char key[16], ev[16];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "k%d", i);
        s3_insert(&m, key, ev);
    }
    s3_insert(&m, "x", ev); /* k0 leaves the small queue: to the ghost */
    assert_string_equal(ev, "k0");
    assert_int_equal(yyc__ghost_count(&m.ghost), 1);
    yyc__lru_node *back = s3_insert(&m, "k0", ev);
    assert_string_equal(ev, "x"); /* the small queue's tail, to the ghost in turn */
    assert_true(back->prev_bits & YYC__S3_MAIN);
    assert_int_equal(back->prev_bits & YYC__S3_FREQ, 0);
    assert_ptr_equal(m.main_head, back);
    assert_int_equal(yyc__ghost_count(&m.ghost), 1); /* k0 taken out, x in */
    /* A key that was never evicted (or is forgotten) goes to the small queue. */
    s3_insert(&m, "zz", ev);
    assert_false(in_main(&m, "zz"));
    /* The ghost remembers 9 / 10 of the capacity. */
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof key, "s%d", i);
        s3_insert(&m, key, ev);
    }
    assert_int_equal(yyc__ghost_count(&m.ghost), 9);
    assert_true(yyc__lru_map_check(&m));
    yyc__lru_map_destroy(&m);
}

static void s3fifo_frequent_key_survives_a_scan(void **state) {
    (void)state;
    yyc_memcache *c = new_cache(YYC_EVICT_S3FIFO, 20);
    set(c, "hot");
    for (int i = 0; i < 3; i++) get(c, "hot");
    char key[16];
    for (int i = 0; i < 2000; i++) { /* a scan: every key once */
        snprintf(key, sizeof key, "scan%d", i);
        set(c, key);
        if (i % 500 == 0) get(c, "hot");
    }
    assert_true(has(c, "hot"));
    assert_int_equal(yyc_memcache_total_count(c), 20);
    yyc_memcache_free(c);
    /* The same under LRU loses it. (SIEVE keeps it here too: its hand evicts each new key
     * before it ever wraps back to the visited one; loops defeat it, not one scan.) */
    {
        c = new_cache(YYC_EVICT_LRU, 20);
        set(c, "hot");
        for (int i = 0; i < 3; i++) get(c, "hot");
        for (int i = 0; i < 2000; i++) {
            snprintf(key, sizeof key, "scan%d", i);
            set(c, key);
        }
        assert_false(has(c, "hot"));
        yyc_memcache_free(c);
    }
}

static void s3fifo_cost_limit_sizes_the_small_queue_in_cost(void **state) {
    (void)state;
    yyc_memcache *c = new_cache(YYC_EVICT_S3FIFO, SIZE_MAX);
    yyc_memcache_set_cost_limit(c, 100);
    char key[16];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(yyc_memcache_set(c, key, strlen(key), NULL, (size_t)(i % 7) + 1), YYC_OK);
        if (i % 3 == 0) get(c, key);
        if (i % 5 == 0) get(c, "k0");
        yyc_memcache_trim_to_cost(c, 100);
        assert_true(yyc_memcache_total_cost(c) <= 100);
        assert_true(yyc__memcache_check(c));
    }
    assert_true(has(c, "k0")); /* hit all along: in main */
    yyc_memcache_free(c);
}

/* --- Window TinyLFU --- */

static void key_of(int k, char *buf, size_t *len) {
    memcpy(buf, &k, sizeof k);
    *len = sizeof k;
}

static int tl_evicted_events;
static void count_evicted(void *ctx, const void *key, size_t key_len, void *value,
                          yyc_removal_cause cause) {
    (void)ctx, (void)key, (void)key_len, (void)value;
    if (cause == YYC_REMOVED_EVICTED) tl_evicted_events++;
}

/* A scan of one-time keys cannot push out keys that are hit: each new key, once it leaves the
 * admission window, is no more frequent than main's oldest and is evicted at once (cause
 * evicted, the listener told), as a new key may be at admission. */
static void
tinylfu_rejects_one_time_keys_colder_than_main_so_hot_keys_survive_a_scan(void **state) {
    (void)state;
    yyc_memcache *c = new_cache(YYC_EVICT_TINYLFU, 100);
    yyc_memcache_set_release_asynchronously(c, false); /* events before set returns */
    yyc_memcache_set_removal_listener(c, count_evicted, NULL);
    tl_evicted_events = 0;
    char key[16];
    for (int round = 0; round < 4; round++)
        for (int i = 0; i < 50; i++) {
            snprintf(key, sizeof key, "hot%d", i);
            if (round == 0) set(c, key);
            else get(c, key);
        }
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "scan%d", i);
        assert_int_equal(yyc_memcache_set(c, key, strlen(key), NULL, 0), YYC_OK);
        if (i % 512 == 0) assert_true(yyc__memcache_check(c));
        if (i % 50 == 49) /* still in use: the sketch halves its counts as it ages */
            for (int h = 0; h < 50; h++) {
                snprintf(key, sizeof key, "hot%d", h);
                void *v;
                if (yyc_memcache_get(c, key, strlen(key), &v) != YYC_OK) set(c, key);
            }
    }
    /* Admission is by estimated frequency (and the hill climber may move a hot key through
     * the window): almost all, not necessarily every one, stay. */
    int kept = 0;
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "hot%d", i);
        kept += has(c, key);
    }
    assert_true(kept >= 45);
    assert_int_equal(yyc_memcache_total_count(c), 100);
    yyc_cache_statistics st;
    assert_int_equal(yyc_memcache_statistics(c, &st), YYC_OK);
    assert_int_equal(tl_evicted_events, (int)st.insertions - 100); /* every entry that left */
    assert_int_equal(st.removals[YYC_REMOVED_EVICTED], st.insertions - 100);
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
    /* LRU loses them all. */
    c = new_cache(YYC_EVICT_LRU, 100);
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "hot%d", i);
        set(c, key);
        get(c, key);
    }
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "scan%d", i);
        assert_int_equal(yyc_memcache_set(c, key, strlen(key), NULL, 0), YYC_OK);
    }
    assert_false(has(c, "hot0"));
    yyc_memcache_free(c);
}

/* Random sets (costs 0..9), gets, removes, trims and limit changes, with and without a cost
 * limit: the segments, the candidates and the sums stay consistent (the _check walkers), the
 * limits hold, and the hill climber has run (many samples of 10 x the capacity). */
static void tinylfu_keeps_its_invariants_through_random_operations_and_limit_changes(void **state) {
    (void)state;
    for (int weighted = 0; weighted < 2; weighted++) {
        yyc_memcache *c = new_cache(YYC_EVICT_TINYLFU, 40);
        yyc_memcache_set_release_asynchronously(c, false);
        if (weighted) yyc_memcache_set_cost_limit(c, 150);
        uint64_t r = 777 + (uint64_t)weighted;
        char kb[8];
        size_t kl;
        for (int step = 0; step < 60000; step++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            unsigned op = (unsigned)(r >> 59);
            /* a working set that drifts: keys near step / 100 are hot */
            int k = (int)((r >> 20) % 64) + ((r >> 40) % 4 == 0 ? 0 : step / 100);
            key_of(k, kb, &kl);
            void *v;
            if (op < 16) {
                (void)yyc_memcache_get(c, kb, kl, &v);
            } else if (op < 28) {
                assert_int_equal(yyc_memcache_set(c, kb, kl, NULL, (size_t)((r >> 8) % 10)),
                                 YYC_OK);
            } else if (op < 29) {
                assert_int_equal(yyc_memcache_remove(c, kb, kl), YYC_OK);
            } else if (op < 30) {
                yyc_memcache_trim_to_count(c, (size_t)((r >> 4) % 40));
            } else if (op < 31) {
                if (weighted) yyc_memcache_trim_to_cost(c, (size_t)((r >> 4) % 150));
            } else if ((r >> 8) % 64 == 0) {
                yyc_memcache_set_count_limit(c, 20 + (size_t)((r >> 4) % 40));
            }
            if (step % 512 == 0) assert_true(yyc__memcache_check(c));
        }
        yyc_memcache_trim_to_count(c, yyc_memcache_count_limit(c));
        assert_true(yyc_memcache_total_count(c) <= yyc_memcache_count_limit(c));
        if (weighted) {
            yyc_memcache_trim_to_cost(c, 150);
            assert_true(yyc_memcache_total_cost(c) <= 150);
        }
        assert_true(yyc__memcache_check(c));
        yyc_memcache_free(c);
    }
}

/* A recency-friendly stream (every key is read twice soon after it is first set, then never
 * again): each key comes back 60 and 120 requests later, beyond the window's 10 % start. The
 * admission refuses it (its frequency does not beat main's), but a refused key that comes back
 * while its hash is in the ghost queue goes to main, where its third request may hit. Returns
 * the hits of a map seeded with `seed` (of 3 x 40,000 - 180 requests). */
static size_t tinylfu_hits_on_a_recency_stream(uint64_t seed) {
    yyc__lru_map m;
    yyc__lru_map_init(&m);
    yyc__lru_map_testing_seed(&m, seed);
    yyc__lru_map_set_policy(&m, YYC__POLICY_TINYLFU);
    enum { LIMIT = 200 };
    size_t hits = 0;
    for (int i = 0; i < 40000; i++) {
        int keys[3] = {i, i - 60, i - 120}; /* key i at i, i + 60, i + 120 */
        for (int j = 0; j < 3; j++) {
            if (keys[j] < 0) continue;
            bool inserted;
            yyc__lru_node *ev;
            yyc__lru_node *n = yyc__lru_map_find_or_insert_within(&m, &keys[j], sizeof keys[j],
                                                                  LIMIT, SIZE_MAX, &inserted, &ev);
            assert_non_null(n);
            if (!inserted) yyc__lru_map_touch(&m, n);
            hits += !inserted;
            yyc__lru_node_free(ev);
        }
        if (i == 100) assert_int_equal(m.tl.window_max, 20); /* 10 % of 200 */
    }
    assert_true(m.tl.window_max + m.tl.protected_max <= LIMIT);
    assert_true(yyc__lru_map_check(&m));
    yyc__lru_map_destroy(&m);
    return hits;
}

/* Keys refused at admission that come back soon go to main (the ghost queue): on the recency
 * stream over 8,000 requests hit (12,293 to 12,919 on these seeds; Caffeine's rules alone, with
 * their 1 % window, 4,824 on the first). Fixed seeds, so that the result repeats. */
static void tinylfu_keys_refused_then_requested_again_soon_go_to_main(void **state) {
    (void)state;
    static const uint64_t seeds[] = {1, 0x9e3779b97f4a7c15ull, 0xdeadbeefcafef00dull, 42};
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        size_t hits = tinylfu_hits_on_a_recency_stream(seeds[i]);
        if (getenv("YYC_PRINT_HITS")) print_message("seed %zu: hits %zu\n", i, hits);
        assert_true(hits > 8000);
    }
}

/* --- ghost queue --- */

static void ghost_remembers_the_newest_hashes_up_to_its_capacity(void **state) {
    (void)state;
    yyc__ghost g;
    yyc__ghost_init(&g);
    enum { U = 300 };
    uint64_t model[4 * U];
    size_t n = 0;
    uint64_t r = 7;
    for (int step = 0; step < 20000; step++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t h = (r >> 33) % U; /* includes 0, which the ghost takes for 1 */
        if (h == 0) h = 1;
        size_t cap = 40 + (size_t)((r >> 20) % 3) * 30;
        size_t i = 0;
        while (i < n && model[i] != h) i++;
        bool in = i < n;
        if ((r >> 12) % 3 == 0) {
            assert_int_equal(yyc__ghost_take(&g, h), in);
            if (in) {
                memmove(model + i, model + i + 1, (n - i - 1) * sizeof *model);
                n--;
            }
        } else if (!in) {
            yyc__ghost_push(&g, h, cap);
            model[n++] = h;
            while (n > cap) {
                memmove(model, model + 1, (n - 1) * sizeof *model);
                n--;
            }
        }
        assert_int_equal(yyc__ghost_count(&g), n);
        if (step % 97 == 0) assert_true(yyc__ghost_check(&g));
    }
    assert_true(yyc__ghost_check(&g));
    yyc__ghost_push(&g, 1, 0);
    assert_int_equal(yyc__ghost_count(&g), 0);
    yyc__ghost_destroy(&g);
    assert_int_equal(yyc__ghost_bytes(&g), 0);
}

/* --- against the models --- */

/* Random gets, sets, removes, contains and trims through the real cache and the model of the
 * policy; after every step both hold exactly the same keys. */
static void every_policy_evicts_exactly_as_its_model(void **state) {
    (void)state;
    enum { UNIVERSE = 64, LIMIT = 20 };
    const int steps = TEST_SOAK_OR(8000, 20000); /* `make soak`: 20,000 */
    for (int p = YYC_EVICT_LRU; p <= YYC_EVICT_S3FIFO; p++) {
        for (int round = 0; round < 2; round++) {
            yyc_memcache *c = new_cache((yyc_eviction_policy)p, LIMIT);
            yyc_memcache_set_release_asynchronously(c, round == 1);
            policy_model m;
            model_init(&m, p, LIMIT, UNIVERSE);
            uint64_t r = 12345 + (uint64_t)p * 7 + (uint64_t)round;
            char kb[8];
            size_t kl;
            for (int step = 0; step < steps; step++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                unsigned op = (unsigned)(r >> 60);
                /* skewed keys: low ones are hot */
                int k = (int)(((r >> 20) % UNIVERSE) * ((r >> 40) % UNIVERSE) / UNIVERSE);
                key_of(k, kb, &kl);
                void *v;
                if (op < 7) { /* get */
                    int rc = yyc_memcache_get(c, kb, kl, &v);
                    assert_int_equal(rc == YYC_OK, model_contains(&m, k));
                    if (rc == YYC_OK) model_hit(&m, k);
                } else if (op < 13) { /* set */
                    assert_int_equal(yyc_memcache_set(c, kb, kl, NULL, 1), YYC_OK);
                    model_set(&m, k);
                } else if (op < 14) { /* remove */
                    assert_int_equal(yyc_memcache_remove(c, kb, kl), YYC_OK);
                    if (model_contains(&m, k)) model_remove(&m, k);
                } else if (op < 15) { /* contains: not a hit */
                    assert_int_equal(yyc_memcache_contains(c, kb, kl), model_contains(&m, k));
                } else if ((r >> 8) % 8 == 0) { /* a trim a few entries down */
                    size_t to = LIMIT - 1 - (size_t)((r >> 4) % 5);
                    yyc_memcache_trim_to_count(c, to);
                    while (model_count(&m) > to) (void)model_evict(&m);
                }
                assert_int_equal(yyc_memcache_total_count(c), model_count(&m));
                for (int q = 0; q < UNIVERSE; q++) {
                    key_of(q, kb, &kl);
                    if (yyc_memcache_contains(c, kb, kl) != model_contains(&m, q))
                        fail_msg("policy %d round %d step %d: key %d differs from the model", p,
                                 round, step, q);
                }
                if (step % 256 == 0) assert_true(yyc__memcache_check(c));
            }
            assert_true(yyc__memcache_check(c));
            model_free(&m);
            yyc_memcache_free(c);
        }
    }
}

/* The benchmark's hit-ratio replay (get; on a miss, set) of a Zipf(0.99) trace with a scan
 * every so often: every policy's hit count equals its model's exactly, at three sizes (`make
 * bench` checks the real traces the same way). */
static void replayed_trace_hit_counts_equal_the_models(void **state) {
    (void)state;
    enum { KEYS = 3000 };
    const int requests = TEST_SOAK_OR(16000, 40000); /* `make soak`: 40,000 */
    double *cdf = malloc(KEYS * sizeof *cdf);
    int *trace = malloc((size_t)requests * sizeof *trace);
    assert_non_null(cdf);
    assert_non_null(trace);
    double sum = 0;
    for (int i = 0; i < KEYS; i++) cdf[i] = (sum += 1.0 / pow(i + 1, 0.99));
    uint64_t r = 99;
    for (int i = 0; i < requests; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        if ((i / 1000) % 7 == 6) { /* a scan of keys never seen before */
            trace[i] = KEYS + i;
            continue;
        }
        double u = (double)(r >> 11) / 9007199254740992.0 * sum;
        int lo = 0, hi = KEYS - 1;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (cdf[mid] < u) lo = mid + 1;
            else hi = mid;
        }
        trace[i] = lo;
    }
    const size_t sizes[] = {60, 300, 900};
    for (int p = YYC_EVICT_LRU; p <= YYC_EVICT_S3FIFO; p++)
        for (int s = 0; s < 3; s++) {
            yyc_memcache *c = new_cache((yyc_eviction_policy)p, sizes[s]);
            policy_model m;
            model_init(&m, p, sizes[s], KEYS + requests);
            long hits = 0, model_hits = 0;
            for (int i = 0; i < requests; i++) {
                void *v;
                if (yyc_memcache_get(c, &trace[i], sizeof(int), &v) == YYC_OK) hits++;
                else assert_int_equal(yyc_memcache_set(c, &trace[i], sizeof(int), NULL, 1), YYC_OK);
                model_hits += model_access(&m, trace[i]);
            }
            if (hits != model_hits)
                fail_msg("policy %d size %zu: %ld hits, the model %ld", p, sizes[s], hits,
                         model_hits);
            assert_true(hits > 0);
            assert_true(yyc__memcache_check(c));
            model_free(&m);
            yyc_memcache_free(c);
        }
    free(cdf);
    free(trace);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(policy_is_lru_by_default_and_fixed_once_the_cache_holds_entries),
    cmocka_unit_test(sieve_visited_entry_survives_one_sweep),
    cmocka_unit_test(sieve_hand_moves_on_from_where_it_stopped),
    cmocka_unit_test(sieve_unvisited_entry_is_evicted_before_older_visited_ones),
    cmocka_unit_test(sieve_and_s3fifo_contains_is_not_a_hit),
    cmocka_unit_test(s3fifo_fills_main_once_the_small_queue_is_full_before_the_first_eviction),
    cmocka_unit_test(s3fifo_key_hit_twice_moves_to_main_with_frequency_zero),
    cmocka_unit_test(s3fifo_key_seen_again_while_in_the_ghost_queue_goes_to_main),
    cmocka_unit_test(s3fifo_frequent_key_survives_a_scan),
    cmocka_unit_test(s3fifo_cost_limit_sizes_the_small_queue_in_cost),
    cmocka_unit_test(tinylfu_rejects_one_time_keys_colder_than_main_so_hot_keys_survive_a_scan),
    cmocka_unit_test(tinylfu_keeps_its_invariants_through_random_operations_and_limit_changes),
    cmocka_unit_test(tinylfu_keys_refused_then_requested_again_soon_go_to_main),
    cmocka_unit_test(ghost_remembers_the_newest_hashes_up_to_its_capacity),
    cmocka_unit_test(every_policy_evicts_exactly_as_its_model),
    cmocka_unit_test(replayed_trace_hit_counts_equal_the_models),
};

YYC_TEST_MAIN(tests)
