/*
 * bench.c - the C side of `make bench`: YYCache's own benchmark (spec section 6) ported to the
 * C API (yyc_*), plus the C "limits" (raw SQLite doing what YYKVStorage does, raw file I/O) and
 * a file-per-key cache (temporary file + rename), the PINDiskCache/EGOCache stand-in.
 *
 * No Swift runtime. Driven by Benchmarks/run, which merges this program's output with the
 * Swift executable's (yycache-bench); both generate the same keys, shuffles and Zipf streams
 * from the same seed (splitmix64, Fisher-Yates, inverse-CDF Zipf), in the same order.
 *
 * Output: one JSON object per line on stdout:
 *   {"group":G,"workload":W,"system":S,"lang":"c","ops":N,"samples":[ops/s, ...]}
 *   {"group":G,"system":S,"lang":"c","available":false,"reason":"..."}
 *   {"group":"footprint","system":S,"keytype":K,"entries":N,"rss_growth":B,"bytes_per_entry":X,...}
 *
 * Library parts that are not linked yet (the C core lands piece by piece) are detected through
 * weak references and reported as "not available" instead of failing the build.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <yycache/yycache.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- weak references: a missing part of the library links as NULL ---- */
#pragma weak yyc_memcache_new
#pragma weak yyc_memcache_free
#pragma weak yyc_memcache_set
#pragma weak yyc_memcache_get
#pragma weak yyc_memcache_remove
#pragma weak yyc_memcache_new_inline
#pragma weak yyc_memcache_set_inline
#pragma weak yyc_memcache_get_inline
#pragma weak yyc_memcache_set_policy
#pragma weak yyc_memcache_set_count_limit
#pragma weak yyc_memcache_set_release_asynchronously
#pragma weak yyc_memcache_set_with_ttl
#pragma weak yyc_memcache_get_or_load
#pragma weak yyc_diskcache_open
#pragma weak yyc_diskcache_release
#pragma weak yyc_diskcache_set
#pragma weak yyc_diskcache_get
#pragma weak yyc_diskcache_set_page_cache_size
#pragma weak yyc_cache_open
#pragma weak yyc_cache_free
#pragma weak yyc_cache_set
#pragma weak yyc_cache_get
#pragma weak yyc_free

/* ---- options ---- */
static struct {
    const char *group;
    const char *systems; /* comma-separated ids, NULL = all */
    const char *system;  /* footprint: one id */
    const char *keytype; /* footprint: str | int */
    const char *dir;
    const char *phase;  /* memory groups: run only this workload (profiling) */
    const char *policy; /* footprint: lru | sieve | s3fifo | tinylfu */
    bool full;          /* footprint: at a count limit of --keys after 2x --keys sets */
    long keys, disk_keys, ops_per_thread;
    long mixed_min_ops; /* mixed: operations each worker runs at least (its stream repeated) */
    long scale_entries; /* disk-scale: entries in the manifest */
    long page_cache;    /* yyc_diskcache page cache in bytes (0: the default) */
    int reps, warmup, threads;
    uint64_t seed;
    double zipf_s;
} opt = {.keys = 200000,
         .disk_keys = 1000,
         .ops_per_thread = 200000,
         .mixed_min_ops = 500000, /* ~50 ms or more per run */
         .scale_entries = 100000,
         .reps = 5,
         .warmup = 1,
         .threads = 2,
         .seed = 42,
         .zipf_s = 0.99,
         .keytype = "str"};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "bench-c: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("malloc");
    return p;
}

/* ---- deterministic data, shared with the Swift side (Sources/yycache-bench/Data.swift) ---- */

typedef struct {
    uint64_t s;
} rng;
static uint64_t rng_next(rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static void shuffle(uint32_t *a, size_t n, uint64_t seed) {
    rng r = {seed};
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(rng_next(&r) % i);
        uint32_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}
/* seeds of the streams (same constants in Swift) */
#define SEED_RANDOM_ORDER 1u
#define SEED_MISS_ORDER 2u
#define SEED_DISK_ORDER 3u
#define SEED_ZIPF 100u

/* Keys 0..n-1 as either 8-byte binary integers or "key_<i>" strings; extra keys n..2n-1 for
 * misses. A string key lives in a 16-byte slot with its length in the last byte (like a Swift
 * small string), so that reaching key i touches one cache line, as it does in the Swift harness. */
typedef struct {
    size_t n;
    uint64_t *ints;
    char *chars;
} keyset;

static inline const void *kp(const keyset *k, size_t i) {
    return k->ints ? (const void *)&k->ints[i] : (const void *)(k->chars + 16 * i);
}
static inline size_t kl(const keyset *k, size_t i) {
    return k->ints ? 8 : (size_t)(unsigned char)k->chars[16 * i + 15];
}

static void keyset_make(keyset *k, size_t n, bool str) {
    k->n = n;
    k->ints = NULL;
    k->chars = NULL;
    if (str) {
        k->chars = xmalloc(n * 16);
        for (size_t i = 0; i < n; i++) {
            char *p = k->chars + i * 16;
            int len = snprintf(p, 15, "key_%zu", i);
            p[15] = (char)len;
        }
    } else {
        k->ints = xmalloc(n * sizeof *k->ints);
        for (size_t i = 0; i < n; i++) k->ints[i] = i;
    }
}
static void keyset_free(keyset *k) {
    free(k->ints);
    free(k->chars);
}

static uint32_t *iota(size_t n) {
    uint32_t *a = xmalloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = (uint32_t)i;
    return a;
}

/* Mixed workload: per thread t, ops_per_thread operations; bit 31 = set, low bits = key index
 * drawn from Zipf(s) over n keys (rank 1 = key 0). 10 % sets. */
static uint32_t *zipf_ops(size_t n, size_t count, uint64_t seed) {
    double *cdf = xmalloc(n * sizeof *cdf);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += pow((double)(i + 1), -opt.zipf_s);
        cdf[i] = sum;
    }
    for (size_t i = 0; i < n; i++) cdf[i] /= sum;
    rng r = {seed};
    uint32_t *ops = xmalloc(count * sizeof *ops);
    for (size_t k = 0; k < count; k++) {
        double u = rng_unit(&r);
        size_t lo = 0, hi = n - 1; /* first index with cdf >= u */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cdf[mid] < u) lo = mid + 1;
            else hi = mid;
        }
        bool set = rng_unit(&r) < 0.1;
        ops[k] = (uint32_t)lo | (set ? 0x80000000u : 0);
    }
    free(cdf);
    return ops;
}

/* ---- output ---- */

static bool wanted(const char *id) {
    if (!opt.systems || !*opt.systems) return true;
    size_t n = strlen(id);
    for (const char *p = opt.systems; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && memcmp(p, id, n) == 0) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

typedef struct {
    const char *workload;
    double samples[64];
    int n;
    long ops;
} series;

static void emit(const char *group, const char *id, const char *system, const series *s) {
    printf("{\"group\":\"%s\",\"workload\":\"%s\",\"id\":\"%s\",\"system\":\"%s\",\"lang\":\"c\","
           "\"ops\":%ld,\"samples\":[",
           group, s->workload, id, system, s->ops);
    for (int i = 0; i < s->n; i++) printf("%s%.1f", i ? "," : "", s->samples[i]);
    printf("]}\n");
    fflush(stdout);
}

static void emit_na(const char *group, const char *id, const char *system, const char *reason) {
    printf("{\"group\":\"%s\",\"id\":\"%s\",\"system\":\"%s\",\"lang\":\"c\",\"available\":false,"
           "\"reason\":\"%s\"}\n",
           group, id, system, reason);
    fflush(stdout);
}

static void record(series *s, int rep, long ops, double seconds) {
    s->ops = ops;
    if (rep < opt.warmup || s->n >= 64) return;
    s->samples[s->n++] = seconds > 0 ? (double)ops / seconds : 0;
}

static volatile uint64_t sink;

/* ---- memory cache ---- */

/* Values: 4-byte payloads. "owned" = what a C user who lets the cache own its values does, and
 * what the Swift overlay does with its boxes: every set allocates a reference-counted value
 * object, the cache retains it through the value callbacks, the caller drops its own reference
 * after the set, and the last release frees it. "unowned" = NULL callbacks, the payload carried
 * in the pointer itself: the bare core. "inline" = the payload stored in the entry
 * (yyc_memcache_new_inline, 4-byte values, no callbacks): what the Swift overlay does for
 * small values. */
typedef struct {
    _Atomic uint32_t rc;
    uint32_t v;
} rc_value;
static void *rc_retain(void *ctx, void *v) {
    (void)ctx;
    atomic_fetch_add_explicit(&((rc_value *)v)->rc, 1, memory_order_relaxed);
    return v;
}
static void rc_release(void *ctx, void *v) {
    (void)ctx;
    if (atomic_fetch_sub_explicit(&((rc_value *)v)->rc, 1, memory_order_acq_rel) == 1) free(v);
}
static const yyc_value_callbacks rc_callbacks = {rc_retain, rc_release, NULL};

typedef enum { MEM_OWNED, MEM_UNOWNED, MEM_INLINE } memmode;

typedef struct {
    memmode mode;
    int policy; /* yyc_eviction_policy (0: LRU) */
} memvals;

/* Sets key i to value i. */
static inline void memput(yyc_memcache *c, const keyset *ks, size_t i, const memvals *mv) {
    if (mv->mode == MEM_INLINE) {
        uint32_t v = (uint32_t)i;
        yyc_memcache_set_inline(c, kp(ks, i), kl(ks, i), &v, 0);
    } else if (mv->mode == MEM_OWNED) {
        rc_value *v = xmalloc(sizeof *v);
        atomic_init(&v->rc, 1);
        v->v = (uint32_t)i;
        yyc_memcache_set(c, kp(ks, i), kl(ks, i), v, 0);
        rc_release(NULL, v);
    } else {
        yyc_memcache_set(c, kp(ks, i), kl(ks, i), (void *)(uintptr_t)(i + 1), 0);
    }
}
static inline void memget_consume(const memvals *mv, void *v) {
    if (mv->mode == MEM_OWNED) {
        sink += ((rc_value *)v)->v;
        rc_release(NULL, v);
    } else {
        sink += (uintptr_t)v;
    }
}

/* Gets key k and uses the value (a miss does nothing). */
static inline void memget(yyc_memcache *c, const keyset *ks, size_t k, const memvals *mv) {
    if (mv->mode == MEM_INLINE) {
        uint32_t v;
        if (yyc_memcache_get_inline(c, kp(ks, k), kl(ks, k), &v) == YYC_OK) sink += v;
    } else {
        void *v;
        if (yyc_memcache_get(c, kp(ks, k), kl(ks, k), &v) == YYC_OK) memget_consume(mv, v);
    }
}

static bool memcache_available(void) {
    return yyc_memcache_new && yyc_memcache_free && yyc_memcache_set && yyc_memcache_get &&
           yyc_memcache_remove;
}

static bool memcache_inline_available(void) {
    return yyc_memcache_new_inline && yyc_memcache_set_inline && yyc_memcache_get_inline;
}

static yyc_memcache *memcache_make(const memvals *mv) {
    yyc_memcache *c = NULL;
    if (mv->mode == MEM_INLINE) {
        static const yyc_inline_value_type u32 = {sizeof(uint32_t), 0, NULL, NULL, NULL};
        if (yyc_memcache_new_inline(&u32, &c) != YYC_OK) die("yyc_memcache_new_inline");
    } else if (yyc_memcache_new(mv->mode == MEM_OWNED ? &rc_callbacks : NULL, &c) != YYC_OK) {
        die("yyc_memcache_new");
    }
    if (mv->policy && yyc_memcache_set_policy(c, (yyc_eviction_policy)mv->policy) != YYC_OK)
        die("yyc_memcache_set_policy");
    return c;
}

/* The memory groups' C systems (policy: yyc_eviction_policy; SIEVE and S3-FIFO: issue 15). */
static const struct {
    const char *id, *name;
    memmode mode;
    int policy;
} mem_systems[] = {
    {"c-memcache", "C yyc_memcache", MEM_OWNED, 0},
    {"c-memcache-unowned", "C yyc_memcache (unowned ptr)", MEM_UNOWNED, 0},
    {"c-memcache-inline", "C yyc_memcache (inline)", MEM_INLINE, 0},
    {"c-memcache-sieve", "C yyc_memcache .sieve", MEM_OWNED, 1},
    {"c-memcache-s3fifo", "C yyc_memcache .s3fifo", MEM_OWNED, 2},
    {"c-memcache-tinylfu", "C yyc_memcache .tinyLFU", MEM_OWNED, 3},
    {"c-memcache-sieve-inline", "C yyc_memcache .sieve (inline)", MEM_INLINE, 1},
    {"c-memcache-tinylfu-inline", "C yyc_memcache .tinyLFU (inline)", MEM_INLINE, 3},
};
#define N_MEM_SYSTEMS (sizeof mem_systems / sizeof *mem_systems)

static bool mem_system_available(memmode mode) {
    return memcache_available() && (mode != MEM_INLINE || memcache_inline_available());
}

static bool mem_policy_available(int policy) { return policy == 0 || yyc_memcache_set_policy; }

static void bench_memory(const char *group, bool str) {
    size_t n = (size_t)opt.keys;
    keyset ks;
    keyset_make(&ks, 2 * n, str); /* 0..n-1 present, n..2n-1 for misses */
    uint32_t *rnd = iota(n);
    shuffle(rnd, n, opt.seed + SEED_RANDOM_ORDER);
    uint32_t *mix = iota(2 * n); /* YYCache's "none exist": shuffle 2n, read the first n */
    shuffle(mix, 2 * n, opt.seed + SEED_MISS_ORDER);

    for (size_t si = 0; si < N_MEM_SYSTEMS; si++) {
        if (!wanted(mem_systems[si].id)) continue;
        if (!mem_system_available(mem_systems[si].mode) ||
            !mem_policy_available(mem_systems[si].policy)) {
            emit_na(group, mem_systems[si].id, mem_systems[si].name,
                    "yyc_memcache_* not in the linked library");
            continue;
        }
        memvals mv = {mem_systems[si].mode, mem_systems[si].policy};
        series s[5] = {{.workload = "set_fresh"},
                       {.workload = "set_noresize"},
                       {.workload = "get_seq"},
                       {.workload = "get_random"},
                       {.workload = "get_miss50"}};
        /* --phase W runs only workload W (for profiling): the cache is then built once unless
         * W is one of the sets. */
        bool want[5];
        for (int w = 0; w < 5; w++) want[w] = !opt.phase || strcmp(opt.phase, s[w].workload) == 0;
        yyc_memcache *c = NULL;
        for (int rep = 0; rep < opt.warmup + opt.reps; rep++) {
            double t0;
            if (!c || want[0] || want[1]) {
                if (c) yyc_memcache_free(c);
                c = memcache_make(&mv);
                t0 = now();
                for (size_t i = 0; i < n; i++) memput(c, &ks, i, &mv);
                if (want[0]) record(&s[0], rep, (long)n, now() - t0);
            }
            if (want[1]) {
                /* YYCache's benchmark clears by removing every key (removeAll would rebuild) */
                for (size_t i = 0; i < n; i++) yyc_memcache_remove(c, kp(&ks, i), kl(&ks, i));
                t0 = now();
                for (size_t i = 0; i < n; i++) memput(c, &ks, i, &mv);
                record(&s[1], rep, (long)n, now() - t0);
            }
            if (want[2]) {
                t0 = now();
                for (size_t i = 0; i < n; i++) memget(c, &ks, i, &mv);
                record(&s[2], rep, (long)n, now() - t0);
            }
            if (want[3]) {
                t0 = now();
                for (size_t i = 0; i < n; i++) memget(c, &ks, rnd[i], &mv);
                record(&s[3], rep, (long)n, now() - t0);
            }
            if (want[4]) {
                t0 = now();
                for (size_t i = 0; i < n; i++) memget(c, &ks, mix[i], &mv);
                record(&s[4], rep, (long)n, now() - t0);
            }
        }
        yyc_memcache_free(c);
        for (int w = 0; w < 5; w++)
            if (want[w]) emit(group, mem_systems[si].id, mem_systems[si].name, &s[w]);
    }
    free(rnd);
    free(mix);
    keyset_free(&ks);
}

/* ---- issue 13: a get with a time to live, get-or-load hits, 8 callers of one missing key ---- */

/* The loader: a fresh owned value (its reference transferred to the caller). */
static int bench_load(void *ctx, const void *key, size_t key_len, void *out_value) {
    (void)ctx, (void)key, (void)key_len;
    rc_value *v = xmalloc(sizeof *v);
    atomic_init(&v->rc, 1);
    v->v = 1;
    *(void **)out_value = v;
    return YYC_OK;
}

#define LOAD_CALLERS 8

typedef struct {
    yyc_memcache *c;
    const keyset *ks;
    size_t first, rounds;
    pthread_barrier_t *round;
} load_arg;

/* Each round, every caller asks for the same missing key at once (a fresh key per round). */
static void *load_thread(void *p) {
    load_arg *a = p;
    for (size_t r = 0; r < a->rounds; r++) {
        pthread_barrier_wait(a->round);
        void *v;
        size_t k = a->first + r;
        if (yyc_memcache_get_or_load(a->c, kp(a->ks, k), kl(a->ks, k), 0, bench_load, NULL, &v) ==
            YYC_OK)
            memget_consume(&(memvals){MEM_OWNED, 0}, v);
    }
    return NULL;
}

static void bench_modern(const char *group) {
    static const char *id = "c-memcache", *name = "C yyc_memcache";
    if (!wanted(id)) return;
    if (!memcache_available() || !yyc_memcache_set_with_ttl || !yyc_memcache_get_or_load) {
        emit_na(group, id, name,
                "yyc_memcache_set_with_ttl / get_or_load not in the linked library");
        return;
    }
    size_t n = (size_t)opt.keys, rounds = n / 50 < 1 ? 1 : n / 50;
    keyset ks;
    keyset_make(&ks, n + rounds, true); /* 0..n-1 present; n.. the rounds' missing keys */
    uint32_t *rnd = iota(n);
    shuffle(rnd, n, opt.seed + SEED_RANDOM_ORDER);
    memvals mv = {MEM_OWNED, 0};
    series s[4] = {{.workload = "get_random"},
                   {.workload = "get_ttl_random"},
                   {.workload = "load_hit_random"},
                   {.workload = "load_8t_one_missing_key"}};
    for (int rep = 0; rep < opt.warmup + opt.reps; rep++) {
        yyc_memcache *plain = memcache_make(&mv), *ttl = memcache_make(&mv);
        for (size_t i = 0; i < n; i++) {
            memput(plain, &ks, i, &mv);
            rc_value *v = xmalloc(sizeof *v);
            atomic_init(&v->rc, 1);
            v->v = (uint32_t)i;
            yyc_memcache_set_with_ttl(ttl, kp(&ks, i), kl(&ks, i), v, 0, 3600.0);
            rc_release(NULL, v);
        }
        double t0 = now();
        for (size_t i = 0; i < n; i++) memget(plain, &ks, rnd[i], &mv);
        record(&s[0], rep, (long)n, now() - t0);
        t0 = now();
        for (size_t i = 0; i < n; i++) memget(ttl, &ks, rnd[i], &mv);
        record(&s[1], rep, (long)n, now() - t0);
        t0 = now();
        for (size_t i = 0; i < n; i++) {
            void *v;
            size_t k = rnd[i];
            if (yyc_memcache_get_or_load(plain, kp(&ks, k), kl(&ks, k), 0, bench_load, NULL, &v) ==
                YYC_OK)
                memget_consume(&mv, v);
        }
        record(&s[2], rep, (long)n, now() - t0);
        pthread_barrier_t round;
        pthread_barrier_init(&round, NULL, LOAD_CALLERS);
        pthread_t threads[LOAD_CALLERS];
        load_arg args[LOAD_CALLERS];
        t0 = now();
        for (int t = 0; t < LOAD_CALLERS; t++) {
            args[t] = (load_arg){plain, &ks, n, rounds, &round};
            if (pthread_create(&threads[t], NULL, load_thread, &args[t]) != 0)
                die("pthread_create");
        }
        for (int t = 0; t < LOAD_CALLERS; t++) pthread_join(threads[t], NULL);
        record(&s[3], rep, (long)(rounds * LOAD_CALLERS), now() - t0);
        pthread_barrier_destroy(&round);
        yyc_memcache_free(plain);
        yyc_memcache_free(ttl);
    }
    for (int w = 0; w < 4; w++) emit(group, id, name, &s[w]);
    free(rnd);
    keyset_free(&ks);
}

/* ---- mixed 90/10 Zipf on 1 and N threads (string keys) ---- */

typedef struct {
    yyc_memcache *c;
    const keyset *ks;
    const memvals *mv;
    const uint32_t *ops;
    size_t count, passes;
    pthread_barrier_t *start;
    double t0, t1; /* this worker's own start and end */
} mixed_arg;

/* Each worker times itself (the main thread may read the clock after a short run is over) and
 * runs its stream `passes` times, so that a run lasts long enough to be measured. */
static void *mixed_thread(void *p) {
    mixed_arg *a = p;
    pthread_barrier_wait(a->start);
    a->t0 = now();
    for (size_t pass = 0; pass < a->passes; pass++) {
        for (size_t i = 0; i < a->count; i++) {
            uint32_t op = a->ops[i], k = op & 0x7fffffffu;
            if (op & 0x80000000u) {
                memput(a->c, a->ks, k, a->mv);
            } else {
                memget(a->c, a->ks, k, a->mv);
            }
        }
    }
    a->t1 = now();
    return NULL;
}

static void bench_mixed(const char *group) {
    size_t n = (size_t)opt.keys, per = opt.ops_per_thread < 1 ? 1 : (size_t)opt.ops_per_thread;
    size_t min_ops = opt.mixed_min_ops < 1 ? 1 : (size_t)opt.mixed_min_ops;
    size_t passes = (min_ops + per - 1) / per;
    int nt = opt.threads < 1 ? 1 : opt.threads;
    keyset ks;
    keyset_make(&ks, n, true);
    uint32_t **ops = xmalloc((size_t)nt * sizeof *ops);
    for (int t = 0; t < nt; t++) ops[t] = zipf_ops(n, per, opt.seed + SEED_ZIPF + (uint64_t)t);
    char wl_n[32];
    snprintf(wl_n, sizeof wl_n, "mixed_%dt", nt);
    for (size_t si = 0; si < N_MEM_SYSTEMS; si++) {
        if (!wanted(mem_systems[si].id)) continue;
        if (!mem_system_available(mem_systems[si].mode) ||
            !mem_policy_available(mem_systems[si].policy)) {
            emit_na(group, mem_systems[si].id, mem_systems[si].name,
                    "yyc_memcache_* not in the linked library");
            continue;
        }
        memvals mv = {mem_systems[si].mode, mem_systems[si].policy};
        series s[2] = {{.workload = "mixed_1t"}, {.workload = wl_n}};
        int counts[2] = {1, nt};
        /* one cache per system, filled once: the mixed runs replace existing keys only */
        yyc_memcache *c = memcache_make(&mv);
        for (size_t i = 0; i < n; i++) memput(c, &ks, i, &mv);
        for (int w = 0; w < (nt > 1 ? 2 : 1); w++) {
            for (int rep = 0; rep < opt.warmup + opt.reps; rep++) {
                int k = counts[w];
                pthread_barrier_t start;
                pthread_barrier_init(&start, NULL, (unsigned)k + 1);
                pthread_t *th = xmalloc((size_t)k * sizeof *th);
                mixed_arg *args = xmalloc((size_t)k * sizeof *args);
                for (int t = 0; t < k; t++) {
                    args[t] = (mixed_arg){c, &ks, &mv, ops[t], per, passes, &start, 0, 0};
                    if (pthread_create(&th[t], NULL, mixed_thread, &args[t])) die("pthread_create");
                }
                pthread_barrier_wait(&start);
                for (int t = 0; t < k; t++) pthread_join(th[t], NULL);
                double t0 = args[0].t0, t1 = args[0].t1; /* first start to last end */
                for (int t = 1; t < k; t++) {
                    if (args[t].t0 < t0) t0 = args[t].t0;
                    if (args[t].t1 > t1) t1 = args[t].t1;
                }
                record(&s[w], rep, (long)(per * passes * (size_t)k), t1 - t0);
                pthread_barrier_destroy(&start);
                free(th);
                free(args);
            }
            emit(group, mem_systems[si].id, mem_systems[si].name, &s[w]);
        }
        yyc_memcache_free(c);
    }
    for (int t = 0; t < nt; t++) free(ops[t]);
    free(ops);
    keyset_free(&ks);
}

/* ---- disk ---- */

typedef struct disk_sys {
    const char *id, *name;
    bool small, large;            /* which groups it runs in */
    const char *(*missing)(void); /* NULL if available, else why not */
    void *(*open)(const char *dir);
    int (*put)(void *ctx, const char *key, const void *v, size_t len); /* 0 = ok */
    int (*get)(void *ctx, const char *key);                            /* 1 hit, 0 miss, -1 error */
    void (*close)(void *ctx);
} disk_sys;

/* yyc_diskcache */
static const char *dc_missing(void) {
    return (yyc_diskcache_open && yyc_diskcache_set && yyc_diskcache_get && yyc_diskcache_release &&
            yyc_free)
               ? NULL
               : "yyc_diskcache_* not in the linked library";
}
static void *dc_open(const char *dir) {
    yyc_diskcache *dc = NULL;
    int rc = yyc_diskcache_open(dir, 20480, &dc);
    if (rc != YYC_OK) {
        fprintf(stderr, "bench-c: yyc_diskcache_open: %s\n", yyc_strerror(rc));
        exit(2);
    }
    if (opt.page_cache > 0 && yyc_diskcache_set_page_cache_size)
        yyc_diskcache_set_page_cache_size(dc, opt.page_cache);
    return dc;
}
static int dc_put(void *ctx, const char *key, const void *v, size_t len) {
    return yyc_diskcache_set(ctx, key, v, len, NULL, 0);
}
static int dc_get(void *ctx, const char *key) {
    void *v = NULL;
    size_t len = 0;
    int rc = yyc_diskcache_get(ctx, key, &v, &len);
    if (rc == YYC_OK) {
        sink += len;
        yyc_free(v);
        return 1;
    }
    return rc == YYC_NOTFOUND ? 0 : -1;
}
static void dc_close(void *ctx) { yyc_diskcache_release(ctx); }

/* yyc_cache (memory in front of disk) */
static const char *cache_missing(void) {
    return (yyc_cache_open && yyc_cache_set && yyc_cache_get && yyc_cache_free && yyc_free)
               ? NULL
               : "yyc_cache_* not in the linked library";
}
static void *cache_open(const char *dir) {
    yyc_cache *c = NULL;
    int rc = yyc_cache_open(dir, &c);
    if (rc != YYC_OK) {
        fprintf(stderr, "bench-c: yyc_cache_open: %s\n", yyc_strerror(rc));
        exit(2);
    }
    return c;
}
static int cache_put(void *ctx, const char *key, const void *v, size_t len) {
    return yyc_cache_set(ctx, key, v, len);
}
static int cache_get(void *ctx, const char *key) {
    void *v = NULL;
    size_t len = 0;
    int rc = yyc_cache_get(ctx, key, &v, &len);
    if (rc == YYC_OK) {
        sink += len;
        yyc_free(v);
        return 1;
    }
    return rc == YYC_NOTFOUND ? 0 : -1;
}
static void cache_close(void *ctx) { yyc_cache_free(ctx); }

/* Raw SQLite doing exactly what YYKVStorage does for inline values: same pragmas and schema,
 * cached prepared statements, autocommit INSERT OR REPLACE; a read is the full-row SELECT
 * then UPDATE last_access_time (YYDiskCache -> getItemForKey). */
typedef struct {
    sqlite3 *db;
    sqlite3_stmt *upsert, *select, *touch;
} rawsql;
static const char *no_missing(void) { return NULL; }
static void *rawsql_open(const char *dir) {
    rawsql *r = xmalloc(sizeof *r);
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.sqlite", dir);
    if (sqlite3_open_v2(path, &r->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        die("sqlite3_open_v2");
    const char *init =
        "pragma journal_mode = wal; pragma synchronous = normal; "
        "create table if not exists manifest (key text, filename text, size integer, inline_data blob, "
        "modification_time integer, last_access_time integer, extended_data blob, primary key(key)); "
        "create index if not exists last_access_time_idx on manifest(last_access_time);";
    if (sqlite3_exec(r->db, init, NULL, NULL, NULL) != SQLITE_OK) die("sqlite init");
    if (sqlite3_prepare_v2(
            r->db,
            "insert or replace into manifest (key, filename, size, inline_data, modification_time, "
            "last_access_time, extended_data) values (?1, ?2, ?3, ?4, ?5, ?6, ?7);",
            -1, &r->upsert, NULL) ||
        sqlite3_prepare_v2(
            r->db,
            "select key, filename, size, inline_data, modification_time, last_access_time, "
            "extended_data from manifest where key = ?1;",
            -1, &r->select, NULL) ||
        sqlite3_prepare_v2(r->db, "update manifest set last_access_time = ?1 where key = ?2;", -1,
                           &r->touch, NULL))
        die("sqlite prepare");
    return r;
}
static int rawsql_put(void *ctx, const char *key, const void *v, size_t len) {
    rawsql *r = ctx;
    int t = (int)time(NULL);
    sqlite3_bind_text(r->upsert, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_null(r->upsert, 2);
    sqlite3_bind_int(r->upsert, 3, (int)len);
    sqlite3_bind_blob(r->upsert, 4, v, (int)len, SQLITE_STATIC);
    sqlite3_bind_int(r->upsert, 5, t);
    sqlite3_bind_int(r->upsert, 6, t);
    sqlite3_bind_null(r->upsert, 7);
    int rc = sqlite3_step(r->upsert);
    sqlite3_reset(r->upsert);
    return rc == SQLITE_DONE ? 0 : -1;
}
static int rawsql_get(void *ctx, const char *key) {
    rawsql *r = ctx;
    sqlite3_bind_text(r->select, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(r->select), found = 0;
    if (rc == SQLITE_ROW) {
        /* build the item as YYKVStorage does: copy key, filename, value, extended data */
        const unsigned char *k = sqlite3_column_text(r->select, 0);
        const unsigned char *f = sqlite3_column_text(r->select, 1);
        int size = sqlite3_column_int(r->select, 2);
        const void *blob = sqlite3_column_blob(r->select, 3);
        int blen = sqlite3_column_bytes(r->select, 3);
        int mt = sqlite3_column_int(r->select, 4), at = sqlite3_column_int(r->select, 5);
        const void *ext = sqlite3_column_blob(r->select, 6);
        void *copy = xmalloc((size_t)blen);
        if (blen) memcpy(copy, blob, (size_t)blen);
        sink += (uint64_t)size + (uint64_t)mt + (uint64_t)at + (k ? 1 : 0) + (f ? 1 : 0) +
                (ext ? 1 : 0);
        free(copy);
        found = 1;
    } else if (rc != SQLITE_DONE) {
        found = -1;
    }
    sqlite3_reset(r->select);
    if (found == 1) {
        sqlite3_bind_int(r->touch, 1, (int)time(NULL));
        sqlite3_bind_text(r->touch, 2, key, -1, SQLITE_STATIC);
        if (sqlite3_step(r->touch) != SQLITE_DONE) found = -1;
        sqlite3_reset(r->touch);
    }
    return found;
}
static void rawsql_close(void *ctx) {
    rawsql *r = ctx;
    sqlite3_finalize(r->upsert);
    sqlite3_finalize(r->select);
    sqlite3_finalize(r->touch);
    sqlite3_close(r->db);
    free(r);
}

/* Raw file I/O: write(2) into data/<key> (O_TRUNC), read(2) it back: the limit for large values. */
typedef struct {
    char dir[4096];
    unsigned long tmp;
} filedir;
static void *files_open(const char *dir) {
    filedir *f = xmalloc(sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    f->tmp = 0;
    return f;
}
static int write_all(int fd, const void *v, size_t len) {
    const char *p = v;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}
static int files_put(void *ctx, const char *key, const void *v, size_t len) {
    filedir *f = ctx;
    char path[4352];
    snprintf(path, sizeof path, "%s/%s", f->dir, key);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    int rc = write_all(fd, v, len);
    close(fd);
    return rc;
}
static int files_get(void *ctx, const char *key) {
    filedir *f = ctx;
    char path[4352];
    snprintf(path, sizeof path, "%s/%s", f->dir, key);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    size_t len = (size_t)st.st_size, got = 0;
    char *buf = xmalloc(len);
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    close(fd);
    sink += got;
    free(buf);
    return got == len ? 1 : -1;
}
static void files_close(void *ctx) { free(ctx); }

/* File-per-key cache (PINDiskCache / EGOCache style): write a temporary file, rename it over
 * the key's file; read the file. */
static int fpk_put(void *ctx, const char *key, const void *v, size_t len) {
    filedir *f = ctx;
    char tmp[4352], path[4352];
    snprintf(tmp, sizeof tmp, "%s/.tmp-%ld-%lu", f->dir, (long)getpid(), f->tmp++);
    snprintf(path, sizeof path, "%s/%s", f->dir, key);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    int rc = write_all(fd, v, len);
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0) rc = -1;
    if (rc) unlink(tmp);
    return rc;
}

/* Raw SQLite + a file per value: the floor of a manifest-plus-files design (YYKVStorage's and
 * ours) for large values. A write is the file written to a temporary name and renamed into place
 * (as ours: never torn; YYKVStorage writes in place) then the autocommit row upsert naming it; a
 * read is the row's point select then the file's open/fstat/read/close (no access-time update,
 * which YYKVStorage commits per read and ours batches; no checksum). */
typedef struct {
    rawsql *sql;
    filedir files;
} rawsqlf;
static void *rawsqlf_open(const char *dir) {
    rawsqlf *r = xmalloc(sizeof *r);
    r->sql = rawsql_open(dir);
    snprintf(r->files.dir, sizeof r->files.dir, "%s/data", dir);
    r->files.tmp = 0;
    if (mkdir(r->files.dir, 0700) != 0 && errno != EEXIST) die("mkdir data");
    return r;
}
static int rawsqlf_put(void *ctx, const char *key, const void *v, size_t len) {
    rawsqlf *r = ctx;
    if (fpk_put(&r->files, key, v, len) != 0) return -1;
    sqlite3_stmt *u = r->sql->upsert;
    int t = (int)time(NULL);
    sqlite3_bind_text(u, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(u, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_int(u, 3, (int)len);
    sqlite3_bind_null(u, 4);
    sqlite3_bind_int(u, 5, t);
    sqlite3_bind_int(u, 6, t);
    sqlite3_bind_null(u, 7);
    int rc = sqlite3_step(u);
    sqlite3_reset(u);
    return rc == SQLITE_DONE ? 0 : -1;
}
static int rawsqlf_get(void *ctx, const char *key) {
    rawsqlf *r = ctx;
    sqlite3_stmt *s = r->sql->select;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s), found = 0;
    char name[256] = "";
    if (rc == SQLITE_ROW) {
        const unsigned char *f = sqlite3_column_text(s, 1);
        if (f) snprintf(name, sizeof name, "%s", (const char *)f);
        found = 1;
    } else if (rc != SQLITE_DONE) {
        found = -1;
    }
    sqlite3_reset(s);
    return found == 1 ? files_get(&r->files, name) : found;
}
static void rawsqlf_close(void *ctx) {
    rawsqlf *r = ctx;
    rawsql_close(r->sql);
    free(r);
}

static const disk_sys disk_systems[] = {
    {"c-diskcache", "C yyc_diskcache", true, true, dc_missing, dc_open, dc_put, dc_get, dc_close},
    {"c-cache", "C yyc_cache (memory+disk)", true, true, cache_missing, cache_open, cache_put,
     cache_get, cache_close},
    {"raw-sqlite", "raw SQLite (YYKVStorage statements)", true, false, no_missing, rawsql_open,
     rawsql_put, rawsql_get, rawsql_close},
    {"raw-files", "raw file write/read (C)", false, true, no_missing, files_open, files_put,
     files_get, files_close},
    {"raw-sqlite-files", "raw SQLite row + file (the floor of the design)", false, true, no_missing,
     rawsqlf_open, rawsqlf_put, rawsqlf_get, rawsqlf_close},
    {"c-file-per-key", "file-per-key, tmp+rename (C)", true, true, no_missing, files_open, fpk_put,
     files_get, files_close},
};

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}
static void rm_rf(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void bench_disk(const char *group, bool large) {
    size_t n = (size_t)opt.disk_keys;
    size_t vlen = large ? 102400 : 100;
    char **keys = xmalloc(2 * n * sizeof *keys);
    for (size_t i = 0; i < 2 * n; i++) {
        keys[i] = xmalloc(24);
        snprintf(keys[i], 24, "key_%zu", i);
    }
    /* small: a distinct 100-byte value per key; large: one 100 KB buffer for every key (as YY) */
    unsigned char *vals = xmalloc(large ? vlen : n * vlen);
    for (size_t i = 0; i < (large ? vlen : n * vlen); i++) vals[i] = (unsigned char)(i * 31 + 7);
    uint32_t *order = iota(n);
    shuffle(order, n, opt.seed + SEED_DISK_ORDER);
    const char *base = opt.dir ? opt.dir : "/tmp";

    for (size_t si = 0; si < sizeof disk_systems / sizeof *disk_systems; si++) {
        const disk_sys *d = &disk_systems[si];
        if (!(large ? d->large : d->small) || !wanted(d->id)) continue;
        const char *why = d->missing();
        if (why) {
            emit_na(group, d->id, d->name, why);
            continue;
        }
        series s[5] = {{.workload = "write"},
                       {.workload = "replace"},
                       {.workload = "read_random"},
                       {.workload = "read_again"},
                       {.workload = "read_miss"}};
        long errors = 0;
        for (int rep = 0; rep < opt.warmup + opt.reps; rep++) {
            char dir[4096];
            snprintf(dir, sizeof dir, "%s/c-%s-%s-%ld-%d", base, group, d->id, (long)getpid(), rep);
            rm_rf(dir);
            if (mkdir(dir, 0700) != 0) die("mkdir");
            void *ctx = d->open(dir);
            for (int phase = 0; phase < 2; phase++) { /* write, replace */
                double t0 = now();
                for (size_t i = 0; i < n; i++)
                    if (d->put(ctx, keys[i], large ? vals : vals + i * vlen, vlen)) errors++;
                record(&s[phase], rep, (long)n, now() - t0);
            }
            for (int phase = 2; phase < 4; phase++) { /* read random, read again */
                double t0 = now();
                for (size_t i = 0; i < n; i++)
                    if (d->get(ctx, keys[order[i]]) != 1) errors++;
                record(&s[phase], rep, (long)n, now() - t0);
            }
            double t0 = now();
            for (size_t i = 0; i < n; i++)
                if (d->get(ctx, keys[n + order[i]]) != 0) errors++;
            record(&s[4], rep, (long)n, now() - t0);
            d->close(ctx);
            rm_rf(dir);
        }
        if (errors)
            fprintf(stderr, "bench-c: %s/%s: %ld unexpected results\n", group, d->id, errors);
        for (int w = 0; w < 5; w++) emit(group, d->id, d->name, &s[w]);
    }
    for (size_t i = 0; i < 2 * n; i++) free(keys[i]);
    free(keys);
    free(vals);
    free(order);
}

#include "bench_writes.inc"  /* the disk-writes group */
#include "bench_latency.inc" /* the disk-latency group */
#include "bench_scale.inc"   /* the disk-scale group */
#include "bench_remote.inc"  /* the remote group (Redis) */

/* ---- footprint: resident-set growth for opt.keys entries, in this (fresh) process ---- */

static long rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    if (!f || fscanf(f, "%ld %ld", &size, &res) != 2) die("/proc/self/statm");
    fclose(f);
    return res * sysconf(_SC_PAGESIZE);
}

static void bench_footprint(void) {
    bool str = strcmp(opt.keytype, "str") == 0;
    const char *id = opt.system ? opt.system : "c-memcache-unowned";
    size_t si = 0;
    while (si < N_MEM_SYSTEMS && strcmp(mem_systems[si].id, id) != 0) si++;
    if (si == N_MEM_SYSTEMS) si = 1; /* unknown: the bare core */
    id = mem_systems[si].id;
    const char *name = mem_systems[si].name;
    /* --policy P: the same system with eviction policy P; --full: at a count limit of n, after n
     * sets, two gets of each and n sets of new keys (S3-FIFO's main queue and its ghost queue
     * are then full: the ghost is counted). */
    int policy = mem_systems[si].policy;
    if (opt.policy)
        policy = strcmp(opt.policy, "sieve") == 0     ? 1
                 : strcmp(opt.policy, "s3fifo") == 0  ? 2
                 : strcmp(opt.policy, "tinylfu") == 0 ? 3
                                                      : 0;
    static const char *const pnames[] = {"lru", "sieve", "s3fifo", "tinylfu"};
    char idbuf[128], namebuf[192];
    snprintf(idbuf, sizeof idbuf, "%s%s%s%s", id, opt.policy ? "-" : "",
             opt.policy ? pnames[policy] : "", opt.full ? "-full" : "");
    snprintf(namebuf, sizeof namebuf, "%s%s%s%s", name, opt.policy ? " ." : "",
             opt.policy ? pnames[policy] : "", opt.full ? ", at its count limit" : "");
    id = idbuf;
    name = namebuf;
    if (!mem_system_available(mem_systems[si].mode) || !mem_policy_available(policy)) {
        emit_na("footprint", id, name, "yyc_memcache_* not in the linked library");
        return;
    }
    size_t n = (size_t)opt.keys, sets = opt.full ? 2 * n : n;
    keyset ks;
    keyset_make(&ks, sets, str);
    memvals mv = {mem_systems[si].mode, policy};
    double key_bytes = 0;
    for (size_t i = sets - n; i < sets; i++) key_bytes += (double)kl(&ks, i); /* the keys kept */
    yyc_memcache *c = memcache_make(&mv);
    if (opt.full) {
        yyc_memcache_set_count_limit(c, n);
        yyc_memcache_set_release_asynchronously(c, false);
    }
    long before = rss_bytes();
    if (opt.full) { /* n keys, each read twice (S3-FIFO then fills its main queue), then n more */
        for (size_t i = 0; i < n; i++) memput(c, &ks, i, &mv);
        for (int twice = 0; twice < 2; twice++)
            for (size_t i = 0; i < n; i++) memget(c, &ks, i, &mv);
        for (size_t i = n; i < sets; i++) memput(c, &ks, i, &mv);
    } else {
        for (size_t i = 0; i < n; i++) memput(c, &ks, i, &mv);
    }
    long after = rss_bytes();
    double per = (double)(after - before) / (double)n;
    printf(
        "{\"group\":\"footprint\",\"id\":\"%s\",\"system\":\"%s\",\"lang\":\"c\",\"keytype\":\"%s\","
        "\"entries\":%zu,\"rss_growth\":%ld,\"bytes_per_entry\":%.1f,\"key_bytes_per_entry\":%.2f,"
        "\"value_bytes_per_entry\":4}\n",
        id, name, opt.keytype, n, after - before, per, key_bytes / (double)n);
    fflush(stdout);
    yyc_memcache_free(c);
    keyset_free(&ks);
}

/* ---- main ---- */

static void usage(void) {
    fprintf(
        stderr,
        "usage: yycache-bench-c [--quick] [--group mem-int|mem-str|mixed|disk-small|disk-large|disk-writes|disk-latency|disk-scale|remote|footprint]\n"
        "       [--scale-entries N] (disk-scale: entries, default 100000)\n"
        "       [--page-cache BYTES] (yyc_diskcache_set_page_cache_size; default: the library's)\n"
        "       [--systems id,id] [--system id --keytype str|int] [--keys N] [--disk-keys N]\n"
        "       [--ops-per-thread N] [--reps N] [--warmup N] [--threads N] [--dir PATH] [--seed N]\n"
        "       [--phase set_fresh|set_noresize|get_seq|get_random|get_miss50] (memory groups only)\n"
        "       [--policy lru|sieve|s3fifo|tinylfu] [--full] (footprint only)\n");
    exit(2);
}

int main(int argc, char **argv) {
    opt.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("{\"sqlite\":\"%s\",\"yycache\":\"%s\"}\n", sqlite3_libversion(), yyc_version());
        return 0;
    }
    for (int i = 1; i < argc; i++) /* --quick: a smoke run of seconds; explicit sizes still win */
        if (strcmp(argv[i], "--quick") == 0) {
            opt.keys = 10000;
            opt.disk_keys = 50;
            opt.ops_per_thread = 20000;
            opt.mixed_min_ops = 20000; /* one pass: a smoke run times nothing */
            opt.scale_entries = 2000;
            opt.reps = 2;
            opt.warmup = 0;
        }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--quick") == 0) continue;
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(a, name) == 0 && v && (i++, 1))
        if (OPT("--group")) opt.group = v;
        else if (OPT("--systems")) opt.systems = v;
        else if (OPT("--system")) opt.system = v;
        else if (OPT("--keytype")) opt.keytype = v;
        else if (OPT("--keys")) opt.keys = atol(v);
        else if (OPT("--disk-keys")) opt.disk_keys = atol(v);
        else if (OPT("--scale-entries")) opt.scale_entries = atol(v);
        else if (OPT("--page-cache")) opt.page_cache = atol(v);
        else if (OPT("--ops-per-thread")) opt.ops_per_thread = atol(v);
        else if (OPT("--reps")) opt.reps = atoi(v);
        else if (OPT("--warmup")) opt.warmup = atoi(v);
        else if (OPT("--threads")) opt.threads = atoi(v);
        else if (OPT("--dir")) opt.dir = v;
        else if (OPT("--phase")) opt.phase = v;
        else if (OPT("--policy")) opt.policy = v;
        else if (strcmp(a, "--full") == 0) opt.full = true;
        else if (OPT("--seed")) opt.seed = strtoull(v, NULL, 10);
        else usage();
#undef OPT
    }
    if (opt.keys < 1 || opt.disk_keys < 1 || opt.scale_entries < 1 || opt.reps < 1 ||
        opt.reps > 60 || opt.warmup < 0)
        usage();
    if (!opt.group) { /* every group but footprint */
        bench_memory("mem-int", false);
        bench_memory("mem-str", true);
        bench_mixed("mixed");
        bench_disk("disk-small", false);
        bench_disk("disk-large", true);
    } else if (strcmp(opt.group, "mem-int") == 0) bench_memory("mem-int", false);
    else if (strcmp(opt.group, "mem-str") == 0) bench_memory("mem-str", true);
    else if (strcmp(opt.group, "mixed") == 0) bench_mixed("mixed");
    else if (strcmp(opt.group, "mem-modern") == 0) bench_modern("mem-modern");
    else if (strcmp(opt.group, "disk-small") == 0) bench_disk("disk-small", false);
    else if (strcmp(opt.group, "disk-large") == 0) bench_disk("disk-large", true);
    else if (strcmp(opt.group, "footprint") == 0) bench_footprint();
    else if (strcmp(opt.group, "disk-writes") == 0) bench_disk_writes("disk-writes");
    else if (strcmp(opt.group, "disk-latency") == 0) bench_disk_latency("disk-latency");
    else if (strcmp(opt.group, "disk-scale") == 0) bench_disk_scale("disk-scale");
    else if (strcmp(opt.group, "remote") == 0) bench_remote("remote");
    else usage();
    return 0;
}
