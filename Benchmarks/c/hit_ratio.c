/*
 * hit_ratio.c - the hit-ratio part of `make bench`: replays access traces through the real C
 * memory cache (yyc_memcache, one get per request and a set on a miss, every entry of size 1,
 * a count limit of 2%, 10% and 30% of the trace's distinct keys) under each eviction policy,
 * next to reference models of the three policies written here independently of the library
 * (plain arrays indexed by dense key ids, O(1) per request):
 *   LRU: a doubly linked list in access order.
 *   SIEVE (NSDI'24, Algorithm 1): a FIFO list, a visited bit per entry and a hand.
 *   S3-FIFO as libCacheSim 0.3.5's S3FIFO.c: a small FIFO of size / 10, a main FIFO of the
 *     rest, a ghost FIFO of 9 size / 10 keys; a hit adds 1 to a frequency capped at 3; a miss
 *     looks the key up in the ghost (taking it out) before evicting; evict from main while main
 *     is over its size or the small FIFO is empty (its tail goes round again with frequency - 1
 *     while that is > 0), else from the small FIFO (its tail moves to main with frequency 0 at
 *     frequency >= 2, else leaves with its key to the ghost); a key found in the ghost goes to
 *     main, as does every new key before the first eviction once the small FIFO is full.
 * The cache's hit count must EQUAL the model's; any difference is printed and the program
 * exits with status 3.
 *
 * Usage: yycache-hit-ratio [--quick] [--trace NAME=PATH]... [--zipf] [--write-zipf PATH]
 *   --zipf replays Zipf(0.99) over 100,000 keys, 1,000,000 requests (--quick: 10,000 and
 *   100,000); --write-zipf writes that trace to PATH in the raw format (for the Caffeine run).
 *   PATH: an .xz file (decompressed with `xz -dc`, Debian xz-utils) or a raw file of
 *   big-endian signed 32-bit keys, one per request (cache2k's format).
 * Output: one JSON object per line:
 *   {"group":"hitratio","trace":T,"requests":N,"distinct":D,"size_pct":P,"size":S,
 *    "policy":"lru|sieve|s3fifo|tinylfu","hits":H,"model_hits":M (TinyLFU:
 * H),"hit_ratio":R,"seconds":X}
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <yycache/yycache.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "hit-ratio: out of memory\n");
        exit(2);
    }
    return p;
}

/* ---- traces ---- */

typedef struct {
    const char *name;
    int32_t *keys; /* the requests */
    size_t n;
    uint32_t *ids; /* dense ids 0..distinct-1, for the models */
    size_t distinct;
} trace;

static void load(trace *t, const char *path) {
    size_t len = strlen(path);
    FILE *f;
    bool piped = len > 3 && strcmp(path + len - 3, ".xz") == 0;
    if (piped) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "xz -dc -- '%s'", path);
        f = popen(cmd, "r");
    } else {
        f = fopen(path, "rb");
    }
    if (!f) {
        fprintf(stderr, "hit-ratio: cannot read %s\n", path);
        exit(2);
    }
    size_t cap = 1 << 20, n = 0;
    int32_t *keys = xmalloc(cap * sizeof *keys);
    unsigned char b[4];
    while (fread(b, 1, 4, f) == 4) {
        if (n == cap) {
            cap *= 2;
            keys = realloc(keys, cap * sizeof *keys);
            if (!keys) exit(2);
        }
        keys[n++] =
            (int32_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]);
    }
    int rc = piped ? pclose(f) : fclose(f);
    if (rc != 0 || n == 0) {
        fprintf(stderr, "hit-ratio: %s: reading failed (is xz installed? Debian: xz-utils)\n",
                path);
        exit(2);
    }
    t->keys = keys;
    t->n = n;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void densify(trace *t) {
    int32_t *sorted = xmalloc(t->n * sizeof *sorted);
    memcpy(sorted, t->keys, t->n * sizeof *sorted);
    qsort(sorted, t->n, sizeof *sorted, cmp_i32);
    size_t d = 0;
    for (size_t i = 0; i < t->n; i++)
        if (i == 0 || sorted[i] != sorted[d - 1]) sorted[d++] = sorted[i];
    t->ids = xmalloc(t->n * sizeof *t->ids);
    for (size_t i = 0; i < t->n; i++) {
        int32_t *p = bsearch(&t->keys[i], sorted, d, sizeof *sorted, cmp_i32);
        t->ids[i] = (uint32_t)(p - sorted);
    }
    t->distinct = d;
    free(sorted);
}

/* Zipf(0.99) over `universe` keys by inverse CDF (splitmix64), ranks shuffled to keys. */
static void make_zipf(trace *t, size_t universe, size_t requests, uint64_t seed) {
    double *cdf = xmalloc(universe * sizeof *cdf);
    double sum = 0;
    for (size_t i = 0; i < universe; i++) cdf[i] = (sum += 1.0 / pow((double)(i + 1), 0.99));
    uint64_t s = seed;
#define NEXT()                                                                       \
    (s += 0x9E3779B97F4A7C15ull, z = s, z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull, \
     z = (z ^ (z >> 27)) * 0x94D049BB133111EBull, z ^ (z >> 31))
    uint64_t z;
    int32_t *perm = xmalloc(universe * sizeof *perm);
    for (size_t i = 0; i < universe; i++) perm[i] = (int32_t)(i * 2654435761u & 0x7fffffff);
    for (size_t i = universe; i > 1; i--) {
        size_t j = (size_t)(NEXT() % i);
        int32_t x = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = x;
    }
    t->keys = xmalloc(requests * sizeof *t->keys);
    for (size_t r = 0; r < requests; r++) {
        double u = (double)(NEXT() >> 11) * (1.0 / 9007199254740992.0) * sum;
        size_t lo = 0, hi = universe - 1;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cdf[mid] < u) lo = mid + 1;
            else hi = mid;
        }
        t->keys[r] = perm[lo];
    }
#undef NEXT
    t->n = requests;
    free(cdf);
    free(perm);
}

/* ---- reference models (ids are dense; -1 = none) ---- */

typedef struct {
    int32_t head, tail; /* head = newest */
    size_t n;
} list;

typedef struct {
    int policy; /* 0 LRU, 1 SIEVE, 2 S3-FIFO */
    size_t size;
    int32_t *prev, *next; /* prev: toward the head */
    uint8_t *where;       /* 0 absent, 1 in the LRU/SIEVE list or S3-FIFO's small queue, 2 main */
    uint8_t *bits;        /* SIEVE visited, S3-FIFO frequency */
    list q, small;        /* LRU/SIEVE: q; S3-FIFO: small and q (main) */
    int32_t hand;
    /* S3-FIFO ghost: a FIFO of (id, stamp) with lazy deletion; ghost_stamp[id] is the stamp of
     * id's live entry, 0 if none. */
    uint32_t *ring_id, *ring_stamp, *ghost_stamp;
    size_t ring_head, ring_tail, ghost_n;
    uint32_t stamp;
    bool has_evicted;
} model;

static void list_push_head(model *m, list *l, int32_t x) {
    m->prev[x] = -1;
    m->next[x] = l->head;
    if (l->head >= 0) m->prev[l->head] = x;
    else l->tail = x;
    l->head = x;
    l->n++;
}

static void list_unlink(model *m, list *l, int32_t x) {
    if (m->prev[x] >= 0) m->next[m->prev[x]] = m->next[x];
    else l->head = m->next[x];
    if (m->next[x] >= 0) m->prev[m->next[x]] = m->prev[x];
    else l->tail = m->prev[x];
    l->n--;
}

static void model_init(model *m, int policy, size_t size, size_t distinct, size_t requests) {
    memset(m, 0, sizeof *m);
    m->policy = policy;
    m->size = size;
    m->prev = xmalloc(distinct * sizeof *m->prev);
    m->next = xmalloc(distinct * sizeof *m->next);
    m->where = calloc(distinct, 1);
    m->bits = calloc(distinct, 1);
    m->q.head = m->q.tail = m->small.head = m->small.tail = -1;
    m->hand = -1;
    if (policy == 2) {
        m->ring_id = xmalloc(requests * sizeof *m->ring_id);
        m->ring_stamp = xmalloc(requests * sizeof *m->ring_stamp);
        m->ghost_stamp = calloc(distinct, sizeof *m->ghost_stamp);
    }
}

static void model_free(model *m) {
    free(m->prev);
    free(m->next);
    free(m->where);
    free(m->bits);
    free(m->ring_id);
    free(m->ring_stamp);
    free(m->ghost_stamp);
}

static void ghost_drop_oldest(model *m) {
    while (m->ring_head < m->ring_tail) {
        uint32_t id = m->ring_id[m->ring_head], st = m->ring_stamp[m->ring_head];
        m->ring_head++;
        if (m->ghost_stamp[id] == st) {
            m->ghost_stamp[id] = 0;
            m->ghost_n--;
            return;
        }
    }
}

static void evict(model *m) {
    if (m->policy == 0) {
        int32_t x = m->q.tail;
        list_unlink(m, &m->q, x);
        m->where[x] = 0;
        return;
    }
    if (m->policy == 1) {
        int32_t o = m->hand >= 0 ? m->hand : m->q.tail;
        while (m->bits[o]) {
            m->bits[o] = 0;
            o = m->prev[o] >= 0 ? m->prev[o] : m->q.tail;
        }
        m->hand = m->prev[o];
        list_unlink(m, &m->q, o);
        m->where[o] = 0;
        return;
    }
    m->has_evicted = true;
    size_t main_size = m->size - m->size / 10;
    for (;;) {
        if (m->small.n == 0 || m->q.n > main_size) {
            int32_t t = m->q.tail;
            list_unlink(m, &m->q, t);
            if (m->bits[t] > 0) {
                m->bits[t]--;
                list_push_head(m, &m->q, t);
                continue;
            }
            m->where[t] = 0;
            return;
        }
        while (m->small.n > 0) {
            int32_t t = m->small.tail;
            list_unlink(m, &m->small, t);
            if (m->bits[t] >= 2) {
                m->bits[t] = 0;
                list_push_head(m, &m->q, t);
                m->where[t] = 2;
                continue;
            }
            m->where[t] = 0;
            m->bits[t] = 0;
            m->ring_id[m->ring_tail] = (uint32_t)t;
            m->ring_stamp[m->ring_tail++] = ++m->stamp;
            m->ghost_stamp[t] = m->stamp;
            m->ghost_n++;
            while (m->ghost_n > m->size * 9 / 10) ghost_drop_oldest(m);
            return;
        }
    }
}

/* get; on a miss, set. Returns whether it hit. */
static bool model_access(model *m, int32_t x) {
    if (m->where[x]) {
        if (m->policy == 0) {
            list_unlink(m, &m->q, x);
            list_push_head(m, &m->q, x);
        } else if (m->policy == 1) {
            m->bits[x] = 1;
        } else if (m->bits[x] < 3) {
            m->bits[x]++;
        }
        return true;
    }
    bool ghost_hit = m->policy == 2 && m->ghost_stamp[x];
    if (ghost_hit) {
        m->ghost_stamp[x] = 0;
        m->ghost_n--;
    }
    if (m->q.n + m->small.n >= m->size) evict(m);
    m->bits[x] = 0;
    if (ghost_hit || (m->policy == 2 && !m->has_evicted && m->small.n >= m->size / 10)) {
        list_push_head(m, &m->q, x);
        m->where[x] = 2;
    } else if (m->policy == 2) {
        list_push_head(m, &m->small, x);
        m->where[x] = 1;
    } else {
        list_push_head(m, &m->q, x);
        m->where[x] = 1;
    }
    return false;
}

/* ---- the real cache ---- */

static long replay_cache(const trace *t, yyc_eviction_policy policy, size_t size, double *secs) {
    yyc_memcache *c = NULL;
    if (yyc_memcache_new(NULL, &c) != YYC_OK || yyc_memcache_set_policy(c, policy) != YYC_OK) {
        fprintf(stderr, "hit-ratio: cannot create the cache\n");
        exit(2);
    }
    yyc_memcache_set_count_limit(c, size);
    yyc_memcache_set_auto_trim_interval(c, 0);
    yyc_memcache_set_release_asynchronously(c, false);
    long hits = 0;
    double t0 = now();
    for (size_t i = 0; i < t->n; i++) {
        void *v;
        if (yyc_memcache_get(c, &t->keys[i], sizeof t->keys[i], &v) == YYC_OK) hits++;
        else if (yyc_memcache_set(c, &t->keys[i], sizeof t->keys[i], NULL, 1) != YYC_OK) exit(2);
    }
    *secs = now() - t0;
    yyc_memcache_free(c);
    return hits;
}

static const char *const POLICY_NAMES[] = {"lru", "sieve", "s3fifo", "tinylfu"};

static int run(trace *t) {
    densify(t);
    static const int pcts[] = {2, 10, 30};
    int mismatches = 0;
    for (int s = 0; s < 3; s++) {
        size_t size = t->distinct * (size_t)pcts[s] / 100;
        if (size < 1) size = 1;
        for (int p = 0; p < 4; p++) {
            double secs;
            long hits = replay_cache(t, (yyc_eviction_policy)p, size, &secs);
            long mh = hits; /* TinyLFU has no model here (its admission is randomized) */
            if (p < 3) {
                model m;
                model_init(&m, p, size, t->distinct, t->n);
                mh = 0;
                for (size_t i = 0; i < t->n; i++) mh += model_access(&m, (int32_t)t->ids[i]);
                model_free(&m);
            }
            if (hits != mh) {
                fprintf(stderr,
                        "hit-ratio: MISMATCH %s at %d%% (%zu entries), %s: cache %ld hits, "
                        "model %ld\n",
                        t->name, pcts[s], size, POLICY_NAMES[p], hits, mh);
                mismatches++;
            }
            printf("{\"group\":\"hitratio\",\"trace\":\"%s\",\"requests\":%zu,\"distinct\":%zu,"
                   "\"size_pct\":%d,\"size\":%zu,\"policy\":\"%s\",\"hits\":%ld,\"model_hits\":%ld,"
                   "\"hit_ratio\":%.4f,\"seconds\":%.3f}\n",
                   t->name, t->n, t->distinct, pcts[s], size, POLICY_NAMES[p], hits, mh,
                   (double)hits / (double)t->n, secs);
            fflush(stdout);
        }
    }
    return mismatches;
}

int main(int argc, char **argv) {
    int mismatches = 0;
    bool quick = false;
    for (int i = 1; i < argc; i++) quick |= strcmp(argv[i], "--quick") == 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) continue;
        if (strcmp(a, "--trace") == 0 && v && strchr(v, '=')) {
            i++;
            trace t = {0};
            char *name = strdup(v);
            *strchr(name, '=') = '\0';
            t.name = name;
            load(&t, strchr(v, '=') + 1);
            if (quick && t.n > 200000) t.n = 200000; /* a prefix */
            mismatches += run(&t);
            free(t.keys);
            free(t.ids);
            free(name);
        } else if (strcmp(a, "--zipf") == 0 || (strcmp(a, "--write-zipf") == 0 && v)) {
            trace t = {.name = "zipf-0.99"};
            size_t universe = quick ? 10000 : 100000, requests = quick ? 100000 : 1000000;
            if (strcmp(a, "--write-zipf") == 0) {
                i++;
                make_zipf(&t, universe, requests, 100);
                FILE *f = fopen(v, "wb");
                if (!f) exit(2);
                for (size_t r = 0; r < t.n; r++) {
                    uint32_t k = (uint32_t)t.keys[r];
                    unsigned char b[4] = {k >> 24, k >> 16, k >> 8, k};
                    fwrite(b, 1, 4, f);
                }
                if (fclose(f) != 0) exit(2);
            } else {
                make_zipf(&t, universe, requests, 100);
                mismatches += run(&t);
            }
            free(t.keys);
            free(t.ids);
        } else {
            fprintf(stderr, "usage: yycache-hit-ratio [--quick] [--trace NAME=PATH]... "
                            "[--zipf] [--write-zipf PATH]\n");
            return 2;
        }
    }
    if (mismatches) {
        fprintf(stderr, "hit-ratio: %d replays differ from their reference model\n", mismatches);
        return 3;
    }
    return 0;
}
