/*
 * policy_models.h - straightforward models of the eviction policies for the tests, written from
 * the papers, independently of lru_map.c: plain arrays of int keys, index 0 = the newest, O(n)
 * per operation. The memory cache must evict exactly what these evict.
 *
 *   LRU: a hit moves the key to the front; eviction takes the back.
 *   SIEVE (NSDI'24, Algorithm 1): a hit sets visited; eviction starts at the hand (else the
 *     back), clears visited keys moving toward the front (wrapping to the back), evicts the
 *     first unvisited key, and leaves the hand on the key in front of it.
 *   S3-FIFO as libCacheSim 0.3.5's S3FIFO.c: queues S and M, ghost G of keys (oldest first),
 *     capacity C (a count), |S| target C / 10, M's size C - C / 10. A hit: freq = min(freq + 1,
 *     3). A set of a new key looks it up in G (and takes it out) before evicting. Insert: a key
 *     that was in G goes to M's front; else, before the first eviction, to M's front when
 *     |S| >= C / 10; else to S's front (freq 0). Evict: if S is empty or (M is not empty and
 *     |M| > C - C / 10): take M's back t: if freq(t) > 0, freq(t) -= 1 and t goes to M's front
 *     (repeat), else evict t. Else take S's back t: if freq(t) >= 2 move t to M's front with
 *     freq 0 and repeat (back to the first choice once S is empty), else evict t, append it to
 *     G and drop G's oldest while |G| > 9 C / 10.
 */
#ifndef YYCACHE_POLICY_MODELS_H
#define YYCACHE_POLICY_MODELS_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int *keys;
    unsigned char *bits; /* SIEVE visited, S3-FIFO freq */
    size_t n;
} model_list;

typedef struct {
    int policy; /* 0 LRU, 1 SIEVE, 2 S3-FIFO (the YYC_EVICT_* values) */
    size_t capacity;
    model_list main;  /* LRU and SIEVE: the only list; S3-FIFO: M */
    model_list small; /* S3-FIFO: S */
    int *ghost;       /* S3-FIFO: G, oldest first */
    size_t ghost_n;
    bool has_evicted; /* S3-FIFO: evict has run */
    bool has_hand;
    int hand; /* SIEVE: the key the hand is on */
    size_t max;
} policy_model;

static void model_list_init(model_list *l, size_t max) {
    l->keys = calloc(max + 1, sizeof *l->keys);
    l->bits = calloc(max + 1, 1);
    l->n = 0;
}

static void model_init(policy_model *m, int policy, size_t capacity, size_t universe) {
    memset(m, 0, sizeof *m);
    m->policy = policy;
    m->capacity = capacity;
    m->max = universe;
    model_list_init(&m->main, universe);
    model_list_init(&m->small, universe);
    m->ghost = calloc(universe + 1, sizeof *m->ghost);
}

static void model_free(policy_model *m) {
    free(m->main.keys);
    free(m->main.bits);
    free(m->small.keys);
    free(m->small.bits);
    free(m->ghost);
}

static long list_find(const model_list *l, int key) {
    for (size_t i = 0; i < l->n; i++)
        if (l->keys[i] == key) return (long)i;
    return -1;
}

static void list_take(model_list *l, size_t i, int *key, unsigned char *bits) {
    *key = l->keys[i];
    *bits = l->bits[i];
    memmove(l->keys + i, l->keys + i + 1, (l->n - i - 1) * sizeof *l->keys);
    memmove(l->bits + i, l->bits + i + 1, l->n - i - 1);
    l->n--;
}

static void list_push_front(model_list *l, int key, unsigned char bits) {
    memmove(l->keys + 1, l->keys, l->n * sizeof *l->keys);
    memmove(l->bits + 1, l->bits, l->n);
    l->keys[0] = key;
    l->bits[0] = bits;
    l->n++;
}

static bool model_contains(const policy_model *m, int key) {
    return list_find(&m->main, key) >= 0 || list_find(&m->small, key) >= 0;
}

static size_t model_count(const policy_model *m) { return m->main.n + m->small.n; }

/* A hit (get of a present key, or set of one). */
static void model_hit(policy_model *m, int key) {
    model_list *l = &m->main;
    long i = list_find(l, key);
    if (i < 0) {
        l = &m->small;
        i = list_find(l, key);
    }
    int k;
    unsigned char b;
    switch (m->policy) {
    case 0:
        list_take(l, (size_t)i, &k, &b);
        list_push_front(l, k, b);
        break;
    case 1: l->bits[i] = 1; break;
    case 2:
        if (l->bits[i] < 3) l->bits[i]++;
        break;
    }
}

/* Removes key (present) without it counting as an eviction. */
static void model_remove(policy_model *m, int key) {
    model_list *l = &m->main;
    long i = list_find(l, key);
    if (i < 0) {
        l = &m->small;
        i = list_find(l, key);
    }
    if (m->policy == 1 && m->has_hand && m->hand == key) { /* the hand moves toward the front */
        m->has_hand = i > 0;
        if (i > 0) m->hand = l->keys[i - 1];
    }
    int k;
    unsigned char b;
    list_take(l, (size_t)i, &k, &b);
}

/* Evicts one key (the cache is not empty) and returns it. */
static int model_evict(policy_model *m) {
    int k;
    unsigned char b;
    if (m->policy == 0) {
        list_take(&m->main, m->main.n - 1, &k, &b);
        return k;
    }
    if (m->policy == 1) {
        model_list *l = &m->main;
        long o = m->has_hand ? list_find(l, m->hand) : (long)l->n - 1;
        while (l->bits[o]) {
            l->bits[o] = 0;
            o = o > 0 ? o - 1 : (long)l->n - 1;
        }
        m->has_hand = o > 0;
        if (o > 0) m->hand = l->keys[o - 1];
        list_take(l, (size_t)o, &k, &b);
        return k;
    }
    m->has_evicted = true;
    size_t cap = m->capacity, main_size = cap - cap / 10;
    for (;;) {
        if (m->small.n == 0 || (m->main.n > 0 && m->main.n > main_size)) {
            list_take(&m->main, m->main.n - 1, &k, &b);
            if (b > 0) {
                list_push_front(&m->main, k, (unsigned char)(b - 1));
                continue;
            }
            return k;
        }
        while (m->small.n > 0) {
            list_take(&m->small, m->small.n - 1, &k, &b);
            if (b >= 2) {
                list_push_front(&m->main, k, 0);
                continue;
            }
            m->ghost[m->ghost_n++] = k;
            while (m->ghost_n > cap * 9 / 10) {
                memmove(m->ghost, m->ghost + 1, (m->ghost_n - 1) * sizeof *m->ghost);
                m->ghost_n--;
            }
            return k;
        }
    }
}

/* Takes key out of G if it is there; returns whether it was (S3-FIFO only). */
static bool model_ghost_take(policy_model *m, int key) {
    for (size_t i = 0; i < m->ghost_n; i++)
        if (m->ghost[i] == key) {
            memmove(m->ghost + i, m->ghost + i + 1, (m->ghost_n - i - 1) * sizeof *m->ghost);
            m->ghost_n--;
            return true;
        }
    return false;
}

/* Inserts a new key (not present; ghost_hit: it was taken out of G); the caller evicted first
 * if the cache was full. */
static void model_insert(policy_model *m, int key, bool ghost_hit) {
    if (m->policy == 2 && (ghost_hit || (!m->has_evicted && m->small.n >= m->capacity / 10))) {
        list_push_front(&m->main, key, 0);
        return;
    }
    list_push_front(m->policy == 2 ? &m->small : &m->main, key, 0);
}

/* The memory cache's set of a key: a hit, or (look it up in G, evict if full, then) insert. */
static void model_set(policy_model *m, int key) {
    if (model_contains(m, key)) {
        model_hit(m, key);
        return;
    }
    bool ghost_hit = m->policy == 2 && model_ghost_take(m, key);
    if (model_count(m) >= m->capacity && model_count(m) > 0) (void)model_evict(m);
    model_insert(m, key, ghost_hit);
}

/* The replay step of the benchmarks: get; on a miss, set. Returns whether it hit. */
static bool model_access(policy_model *m, int key) {
    if (model_contains(m, key)) {
        model_hit(m, key);
        return true;
    }
    model_set(m, key);
    return false;
}

#endif /* YYCACHE_POLICY_MODELS_H */
