/*
 * fuzz_memcache.c - libFuzzer target: random operation sequences against yyc_memcache, checked
 * against a simple model (issue 7, fuzzing). Built and run by `make fuzz` / `make fuzz-smoke`.
 *
 * The input bytes are a small program. Byte 0 configures the cache (value callbacks on or off,
 * release policy); then each operation is an opcode byte, a key byte and its arguments (a byte
 * past the end reads as 0). Keys come from a small alphabet: 8 awkward ones (empty - passed as
 * "" or as NULL -, "a", "a\0", "a\0b", "b", non-UTF-8, two 300-byte keys differing in the last
 * byte) and 56 short numeric ones, so that fills grow and trims shrink the hash table.
 *
 * Operations: set (fresh value, shared value or NULL; small, large and saturating costs), get,
 * contains, remove, remove-all, fill and drop runs of keys, trims by count / cost / age, the
 * count / cost / age limits, the auto-trim interval (kept paused: a firing timer would make the
 * run depend on time), the release policy, the memory-warning and enter-background events with
 * handlers that call back into the cache, misuse (NULL cache, NULL key with a length, a NULL
 * out pointer, a 4 GiB key length), a drain of the background worker, and times to live: sets
 * with one (0, 1e6 s, 2e6 s or none), moves of the deadlines' clock by 0.5e6 or 1e6 s (the
 * test-build hook; real time never matters at that scale) and time_to_live reads. Once a time
 * to live was set, every check first runs a trim within its limit (which must remove exactly
 * the expired entries) and the model drops the entries whose deadline has passed; the model's
 * trims and background cost trims drop them first too, as the cache's do.
 *
 * Removal events, statistics, loading and keys: 1 input in 2 installs a removal listener from
 * the start (byte 0, bit 3), which checks each event's value against its key's stores and
 * counts events per value: after a drain every value's stores equal its events plus the entries
 * holding it. Statistics are modelled exactly (hits and misses of get, get-or-load and read-all;
 * insertions; the removals sum to insertions minus the entries left, since the last reset).
 * get-or-load runs a loader that succeeds with a fresh value or fails (by a byte); keys are
 * compared with the model in LRU order (most recent stamp first); a reset zeroes the counters.
 *
 * Policies: byte 0, bits 4-5, picks LRU, SIEVE, S3-FIFO or TinyLFU. LRU's victims are modelled
 * exactly; for the others the model drops, after each operation that may evict, the entries the
 * cache no longer holds, and checks that the limits hold and that a set or a count trim evicted
 * exactly the surplus; yyc__memcache_check walks each policy's own invariants.
 *
 * The model is an array of entries with an access stamp (the LRU tail is the smallest stamp).
 * After every operation: total count, total cost (an exact 128-bit sum saturated at SIZE_MAX),
 * presence of every key (contains does not touch the LRU order), yyc__memcache_check (the map's
 * invariants), and every value's reference count is at least the number of entries holding it
 * (exactly that after a drain). A set that goes over the cost limit queues a background trim:
 * the harness drains the worker and expects the least recently used entries to be gone. Values
 * are reference-counted objects; a release of an object nobody retained, or a retain of a
 * freed one, aborts. At the end the cache is freed and every count must be back to 0.
 */
#include <yycache/yycache.h>

#include "platform/internal.h" /* yyc__worker_drain */

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool yyc__memcache_check(yyc_memcache *c); /* YYC_TESTING hooks (memory_cache.c) */
void yyc__memcache_testing_advance_clock(double seconds);

#define MK_SPECIAL 8
#define MK_KEYS 64
#define MV_MAGIC 0x4d43564fu
#define MV_DEAD 0xdeadbeefu

typedef struct mv {
    uint32_t magic;
    uint32_t id;
    atomic_int refs; /* references the cache holds (retain - release) */
    atomic_int released_total;
    atomic_int stores; /* times a set or a load stored it */
    atomic_int events; /* removal events that named it */
} mv;

typedef struct mentry {
    bool present;
    mv *val; /* NULL value allowed */
    size_t cost;
    uint64_t stamp;  /* last set or get: the smallest stamp is the LRU tail */
    double deadline; /* time to live: expired once ttl_clock >= deadline (set: INFINITY = none) */
} mentry;

typedef struct mstate {
    const uint8_t *data;
    size_t size, pos;
    long op_index;
    const char *op_name;
    yyc_memcache *c;
    bool owned; /* value callbacks given: reference counts are checked */
    mentry m[MK_KEYS];
    uint64_t clock;
    yyc_eviction_policy policy; /* byte 0, bits 4-5 */
    double ttl_clock;           /* seconds the deadlines' clock was moved
                                   (yyc__memcache_testing_advance_clock) */
    bool ttl_used;              /* a time to live was set: checks purge expired entries first */
    size_t count_limit, cost_limit;
    double age_limit, interval;
    bool async, rm_on_warning, rm_on_background;
    bool warning_handler, background_handler;
    int handler_depth;
    mv **objs;
    size_t nobjs, cap;
    char keybuf[MK_KEYS][320];
    size_t keylen[MK_KEYS];
    bool listening;          /* a removal listener is installed */
    atomic_long null_stores; /* NULL (or non-pointer) values stored, and their events */
    atomic_long null_events;
    uint64_t hits, misses, insertions, loads, load_failures; /* since the last reset */
    size_t count_at_reset;
} mstate;

#define MCHECK(s, cond, ...)                                                          \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "fuzz_memcache: operation %ld (%s): %s: ", (s)->op_index, \
                    (s)->op_name, #cond);                                             \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            abort();                                                                  \
        }                                                                             \
    } while (0)

static uint8_t mbyte(mstate *s) { return s->pos < s->size ? s->data[s->pos++] : 0; }

/* ---------------------------------------------------------------- values */

static void *mv_retain(void *ctx, void *value) {
    (void)ctx;
    mv *v = value;
    if (v->magic != MV_MAGIC) {
        fprintf(stderr, "fuzz_memcache: retain of a value that is not live (magic %#x)\n",
                v->magic);
        abort();
    }
    atomic_fetch_add(&v->refs, 1);
    return v;
}

static void mv_release(void *ctx, void *value) {
    mstate *s = ctx;
    mv *v = value;
    if (v->magic != MV_MAGIC) {
        fprintf(stderr, "fuzz_memcache: release of a value that is not live (magic %#x)\n",
                v->magic);
        abort();
    }
    int before = atomic_fetch_sub(&v->refs, 1);
    if (before <= 0) {
        fprintf(stderr, "fuzz_memcache: value %u released more often than retained\n", v->id);
        abort();
    }
    atomic_fetch_add(&v->released_total, 1);
    /* One value in five calls back into the cache from its release (allowed: release never
     * runs under the cache's mutex; it may run on the worker thread). */
    if (v->id % 5 == 0) (void)yyc_memcache_total_count(s->c);
}

static mv *mv_new(mstate *s) {
    if (s->nobjs == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->objs = realloc(s->objs, s->cap * sizeof *s->objs);
        if (!s->objs) abort();
    }
    mv *v = calloc(1, sizeof *v);
    if (!v) abort();
    v->magic = MV_MAGIC;
    v->id = (uint32_t)s->nobjs;
    atomic_init(&v->refs, 0);
    atomic_init(&v->released_total, 0);
    s->objs[s->nobjs++] = v;
    return v;
}

/* ---------------------------------------------------------------- model */

static size_t model_count(const mstate *s) {
    size_t n = 0;
    for (int k = 0; k < MK_KEYS; k++) n += s->m[k].present;
    return n;
}

static size_t model_cost(const mstate *s) {
    unsigned __int128 sum = 0;
    for (int k = 0; k < MK_KEYS; k++)
        if (s->m[k].present) sum += s->m[k].cost;
    return sum > SIZE_MAX ? SIZE_MAX : (size_t)sum;
}

static void model_remove(mstate *s, int k) { memset(&s->m[k], 0, sizeof s->m[k]); }

static void model_remove_all(mstate *s) {
    for (int k = 0; k < MK_KEYS; k++) model_remove(s, k);
}

/* Evicts the least recently used entry. */
/* Drops the entries whose time to live has passed (what every trim does first). */
static void model_purge_expired(mstate *s) {
    for (int k = 0; k < MK_KEYS; k++)
        if (s->m[k].present && s->ttl_clock >= s->m[k].deadline) model_remove(s, k);
}

/* Other policies than LRU: the model does not know their victims, so after anything that may
 * evict it drops the live entries the cache no longer holds (expired ones are left to the
 * purges) and the caller checks the limits and how many left. Returns how many it dropped. */
static size_t model_sync_evictions(mstate *s) {
    size_t dropped = 0;
    for (int k = 0; k < MK_KEYS; k++)
        if (s->m[k].present && s->ttl_clock < s->m[k].deadline &&
            !yyc_memcache_contains(s->c, s->keybuf[k], s->keylen[k])) {
            model_remove(s, k);
            dropped++;
        }
    return dropped;
}

/* A trim to a count or cost limit n > 0 (after the model's purge of expired entries): LRU
 * evicts the tail until within it; other policies were synced: within it, and (count) by
 * exactly the surplus. */
static void model_trim(mstate *s, bool by_count, size_t n);

static void model_pop_tail(mstate *s) {
    int tail = -1;
    for (int k = 0; k < MK_KEYS; k++)
        if (s->m[k].present && (tail < 0 || s->m[k].stamp < s->m[tail].stamp)) tail = k;
    if (tail >= 0) model_remove(s, tail);
}

static const void *key_ptr(mstate *s, int k, bool null_for_empty) {
    return (k == 0 && null_for_empty) ? NULL : s->keybuf[k];
}

/* ---------------------------------------------------------------- checks */

static void check_all(mstate *s, bool exact) {
    if (s->ttl_used) { /* expired entries leave by the next read or trim: purge them here */
        yyc_memcache_trim_to_count(s->c, SIZE_MAX);
        model_purge_expired(s);
    }
    MCHECK(s, yyc__memcache_check(s->c), "map invariants");
    size_t count = yyc_memcache_total_count(s->c), mc = model_count(s);
    MCHECK(s, count == mc, "count %zu, model %zu", count, mc);
    size_t cost = yyc_memcache_total_cost(s->c), ms = model_cost(s);
    MCHECK(s, cost == ms, "cost %zu, model %zu", cost, ms);
    for (int k = 0; k < MK_KEYS; k++) {
        bool in = yyc_memcache_contains(s->c, s->keybuf[k], s->keylen[k]);
        MCHECK(s, in == s->m[k].present, "contains(key %d) = %d, model %d", k, in, s->m[k].present);
    }
    yyc_cache_statistics st;
    MCHECK(s, yyc_memcache_statistics(s->c, &st) == YYC_OK, "statistics");
    MCHECK(s, st.hits == s->hits && st.misses == s->misses,
           "hits %llu misses %llu, model %llu %llu", (unsigned long long)st.hits,
           (unsigned long long)st.misses, (unsigned long long)s->hits,
           (unsigned long long)s->misses);
    MCHECK(s, st.insertions == s->insertions, "insertions %llu, model %llu",
           (unsigned long long)st.insertions, (unsigned long long)s->insertions);
    MCHECK(s, st.loads == s->loads && st.load_failures == s->load_failures, "loads");
    uint64_t removals = 0;
    for (int i = 0; i < YYC_REMOVAL_CAUSE_COUNT; i++) removals += st.removals[i];
    MCHECK(s, removals + mc == s->insertions + s->count_at_reset, "removals %llu, left %zu",
           (unsigned long long)removals, mc);
    if (s->listening && exact) { /* values without reference counts: counted together */
        long holding = 0;
        for (int k = 0; k < MK_KEYS; k++) holding += s->m[k].present && (!s->owned || !s->m[k].val);
        long stores = atomic_load(&s->null_stores), events = atomic_load(&s->null_events);
        MCHECK(s, stores == events + holding, "%ld uncounted stores, %ld events, %ld entries",
               stores, events, holding);
    }
    if (!s->owned) return;
    int *wants = calloc(s->nobjs + 1, sizeof *wants); /* entries holding each value */
    if (!wants) abort();
    for (int k = 0; k < MK_KEYS; k++)
        if (s->m[k].present && s->m[k].val) wants[s->m[k].val->id]++;
    for (size_t i = 0; i < s->nobjs; i++) {
        int want = wants[i];
        int refs = atomic_load(&s->objs[i]->refs);
        if (exact)
            MCHECK(s, refs == want, "value %zu: %d references after a drain, model %d", i, refs,
                   want);
        if (exact && s->listening) {
            int stores = atomic_load(&s->objs[i]->stores),
                events = atomic_load(&s->objs[i]->events);
            MCHECK(s, stores == events + want, "value %zu: %d stores, %d events, %d entries", i,
                   stores, events, want);
        } else
            MCHECK(s, refs >= want, "value %zu: %d references, %d entries hold it", i, refs, want);
    }
    free(wants);
}

/* ---------------------------------------------------------------- operations */

/* set through the API and the model: count eviction (one entry) in the call, cost trim on the
 * worker (drained here, so it has happened when the call returns). */
static void model_set(mstate *s, int k, mv *v, size_t cost, double deadline);

static void do_set_ttl(mstate *s, int k, bool null_key, mv *v, size_t cost, double ttl) {
    int st = isnan(ttl) ? yyc_memcache_set(s->c, key_ptr(s, k, null_key), s->keylen[k], v, cost)
                        : yyc_memcache_set_with_ttl(s->c, key_ptr(s, k, null_key), s->keylen[k], v,
                                                    cost, ttl);
    MCHECK(s, st == YYC_OK, "set status %s", yyc_status_name(st));
    model_set(s, k, v, cost, isnan(ttl) ? INFINITY : s->ttl_clock + ttl);
}

/* The model of a set that stored v (a set, or a load): count eviction, the cost trim. */
static void model_set(mstate *s, int k, mv *v, size_t cost, double deadline) {
    s->insertions++;
    if (s->owned && v) atomic_fetch_add(&v->stores, 1);
    else atomic_fetch_add(&s->null_stores, 1);
    mentry *e = &s->m[k];
    e->deadline = deadline;
    e->present = true;
    e->val = v;
    e->cost = cost;
    e->stamp = ++s->clock;
    bool trim_queued = model_cost(s) > s->cost_limit;
    if (s->policy != YYC_EVICT_LRU) { /* one eviction over the count limit: the policy's */
        size_t before = model_count(s);
        if (trim_queued) yyc__worker_drain(s->c);
        else {
            size_t dropped = model_sync_evictions(s);
            if (!s->ttl_used)
                MCHECK(s, dropped == (before > s->count_limit ? 1u : 0u),
                       "%zu evicted by a set at %zu entries, limit %zu", dropped, before,
                       s->count_limit);
            return;
        }
    } else if (model_count(s) > s->count_limit) {
        model_pop_tail(s);
    }
    if (trim_queued) {
        yyc__worker_drain(s->c);
        model_purge_expired(s);
        if (s->cost_limit == 0) model_remove_all(s);
        else model_trim(s, false, s->cost_limit);
    }
}

static void model_trim(mstate *s, bool by_count, size_t n) {
    if (s->policy == YYC_EVICT_LRU) {
        while (by_count ? model_count(s) > n : model_cost(s) > n) model_pop_tail(s);
        return;
    }
    size_t before = model_count(s);
    size_t dropped = model_sync_evictions(s);
    if (by_count) {
        MCHECK(s, model_count(s) <= n, "%zu entries after a trim to %zu", model_count(s), n);
        if (!s->ttl_used)
            MCHECK(s, dropped == (before > n ? before - n : 0), "%zu evicted from %zu to %zu",
                   dropped, before, n);
    } else {
        MCHECK(s, s->ttl_used || model_cost(s) <= n, "cost %zu after a trim to %zu", model_cost(s),
               n);
    }
}

static void do_set(mstate *s, int k, bool null_key, mv *v, size_t cost) {
    do_set_ttl(s, k, null_key, v, cost, NAN);
}

static size_t pick_cost(uint8_t b) {
    switch (b % 16) {
    case 0: return 0;
    case 1: return SIZE_MAX;
    case 2: return SIZE_MAX / 2 + 1;
    case 3: return (size_t)b * 1000;
    default: return b / 16; /* 0..15 */
    }
}

static size_t pick_limit(uint8_t b) {
    static const size_t limits[] = {0, 1, 2, 3, 5, 8, 20, 100, SIZE_MAX / 2, SIZE_MAX};
    return limits[b % 10];
}

static void handler_common(mstate *s, bool warning) {
    /* The handler runs with no lock held: it may call into the cache. */
    MCHECK(s, s->handler_depth == 0, "a handler ran inside a handler");
    s->handler_depth++;
    uint8_t b = mbyte(s);
    if (s->owned || b % 2) {
        mv *v = (b % 4 == 1) ? NULL : mv_new(s);
        do_set(s, b % 8, false, v, (size_t)(b % 3));
    }
    if (b & 0x10) { /* the flag is read after the handler: change it here */
        if (warning) {
            s->rm_on_warning = !s->rm_on_warning;
            yyc_memcache_set_remove_all_on_memory_warning(s->c, s->rm_on_warning);
        } else {
            s->rm_on_background = !s->rm_on_background;
            yyc_memcache_set_remove_all_on_enter_background(s->c, s->rm_on_background);
        }
    }
    s->handler_depth--;
}

static void on_warning(yyc_memcache *c, void *ctx) {
    mstate *s = ctx;
    MCHECK(s, c == s->c, "handler got another cache");
    handler_common(s, true);
}

static void on_background(yyc_memcache *c, void *ctx) {
    mstate *s = ctx;
    MCHECK(s, c == s->c, "handler got another cache");
    handler_common(s, false);
}

/* The removal listener: runs with no lock held (it reads the cache), once per entry that left. */
static void on_removed(void *ctx, const void *key, size_t key_len, void *value,
                       yyc_removal_cause cause) {
    mstate *s = ctx;
    MCHECK(s, (unsigned)cause < YYC_REMOVAL_CAUSE_COUNT, "cause %d", (int)cause);
    MCHECK(s, key_len == 0 || key != NULL, "a NULL key of %zu bytes", key_len);
    (void)yyc_memcache_total_count(s->c);
    if (s->owned && value) {
        mv *v = value;
        MCHECK(s, v->magic == MV_MAGIC, "an event for a value that is not live");
        MCHECK(s, atomic_load(&v->refs) > 0, "an event after the value's release");
        atomic_fetch_add(&v->events, 1);
    } else {
        atomic_fetch_add(&s->null_events, 1);
    }
}

/* The loader of get-or-load: a fresh value (the caller's reference) or an error. */
typedef struct load_ctx {
    mstate *s;
    bool fail;
    mv *made;
} load_ctx;

static int fuzz_load(void *ctx, const void *key, size_t key_len, void *out_value) {
    (void)key, (void)key_len;
    load_ctx *l = ctx;
    if (l->fail) return YYC_EIO;
    l->made = l->s->owned ? mv_new(l->s) : NULL;
    if (l->made) mv_retain(NULL, l->made); /* the reference transferred to the caller */
    *(void **)out_value = l->made;
    return YYC_OK;
}

static void mop(mstate *s) {
    uint8_t op = mbyte(s) % 30;
    uint8_t kb = mbyte(s);
    int k = kb % MK_KEYS;
    bool null_key = (kb & 0x80) != 0; /* only used for the empty key */
    mentry *e = &s->m[k];
    bool exact = false;
    /* A trim that finds the lock taken (by a release job on the worker) sleeps 10 ms, as in
     * YYMemoryCache: that path stays reachable (1 trim in 4), the others start from a drained
     * worker so that fuzzing does not spend its time asleep. */
    if (op >= 12 && op <= 14 && (kb & 0x60) != 0x60) yyc__worker_drain(s->c);
    switch (op) {
    case 0:
    case 1:
    case 2:
    case 3: { /* set */
        s->op_name = "set";
        uint8_t vb = mbyte(s), cb = mbyte(s);
        mv *v;
        if (vb % 8 == 0) v = NULL;
        else if (vb % 8 == 1 && s->nobjs > 0) v = s->objs[(vb / 8) % s->nobjs]; /* shared */
        else v = mv_new(s);
        if (!s->owned && v == NULL && vb % 16 == 8) v = (void *)(uintptr_t)1; /* not a pointer */
        do_set(s, k, null_key, v, pick_cost(cb));
        break;
    }
    case 4:
    case 5: { /* get */
        s->op_name = "get";
        void *v = (void *)(uintptr_t)0x1234;
        int st = yyc_memcache_get(s->c, key_ptr(s, k, null_key), s->keylen[k], &v);
        MCHECK(s, st == (e->present ? YYC_OK : YYC_NOTFOUND), "get status %s, model present %d",
               yyc_status_name(st), e->present);
        if (st == YYC_OK) s->hits++;
        else s->misses++;
        if (st == YYC_OK) {
            MCHECK(s, v == (void *)e->val, "get returned %p, model %p", v, (void *)e->val);
            e->stamp = ++s->clock;
            if (s->owned && v) {
                int refs = atomic_load(&((mv *)v)->refs);
                MCHECK(s, refs >= 2, "a got value holds %d references (cache + caller)", refs);
                mv_release(s, v); /* the caller's reference */
            }
        } else {
            MCHECK(s, v == NULL, "a miss left %p in out_value", v);
        }
        break;
    }
    case 6: {
        s->op_name = "contains";
        bool in = yyc_memcache_contains(s->c, key_ptr(s, k, null_key), s->keylen[k]);
        MCHECK(s, in == e->present, "contains %d, model %d", in, e->present);
        break;
    }
    case 7:
    case 8: {
        s->op_name = "remove";
        int st = yyc_memcache_remove(s->c, key_ptr(s, k, null_key), s->keylen[k]);
        MCHECK(s, st == YYC_OK, "remove status %s", yyc_status_name(st));
        model_remove(s, k);
        break;
    }
    case 9:
        s->op_name = "remove_all";
        yyc_memcache_remove_all(s->c);
        model_remove_all(s);
        break;
    case 10: { /* fill a run of numeric keys (grows the table) */
        s->op_name = "fill";
        uint8_t n = mbyte(s) % 64, cb = mbyte(s);
        for (int i = 0; i < n; i++) {
            int kk = MK_SPECIAL + (k + i) % (MK_KEYS - MK_SPECIAL);
            do_set(s, kk, false, (cb & 1) ? mv_new(s) : NULL, (size_t)(cb >> 4));
        }
        break;
    }
    case 11: { /* drop a run of keys (remove) */
        s->op_name = "drop";
        uint8_t n = mbyte(s) % 64;
        for (int i = 0; i < n; i++) {
            int kk = (k + i) % MK_KEYS;
            MCHECK(s, yyc_memcache_remove(s->c, s->keybuf[kk], s->keylen[kk]) == YYC_OK, "remove");
            model_remove(s, kk);
        }
        break;
    }
    case 12: {
        s->op_name = "trim_to_count";
        size_t n = pick_limit(mbyte(s));
        yyc_memcache_trim_to_count(s->c, n);
        if (n != 0) model_purge_expired(s);
        if (n == 0) model_remove_all(s);
        else model_trim(s, true, n);
        break;
    }
    case 13: {
        s->op_name = "trim_to_cost";
        uint8_t b = mbyte(s);
        size_t n = b % 2 ? pick_limit(b / 2) : (size_t)b * 3;
        yyc_memcache_trim_to_cost(s->c, n);
        if (n != 0) model_purge_expired(s);
        if (n == 0) model_remove_all(s);
        else model_trim(s, false, n);
        break;
    }
    case 14: {
        s->op_name = "trim_to_age";
        /* Only ages whose outcome does not depend on time: <= 0 removes everything; an hour,
         * huge, infinite or NaN removes nothing (every entry is younger than the run). */
        static const double ages[] = {0.0, -1.0, -INFINITY, 3600.0, 1e300, INFINITY, NAN, DBL_MAX};
        double a = ages[mbyte(s) % 8];
        yyc_memcache_trim_to_age(s->c, a);
        model_purge_expired(s);
        if (a <= 0) model_remove_all(s);
        break;
    }
    case 15: {
        s->op_name = "set_count_limit";
        s->count_limit = pick_limit(mbyte(s));
        yyc_memcache_set_count_limit(s->c, s->count_limit);
        MCHECK(s, yyc_memcache_count_limit(s->c) == s->count_limit, "count limit getter");
        break; /* soft limit: nothing is evicted until the next set or trim */
    }
    case 16: {
        s->op_name = "set_cost_limit";
        uint8_t b = mbyte(s);
        s->cost_limit = b % 2 ? pick_limit(b / 2) : (size_t)b * 5;
        yyc_memcache_set_cost_limit(s->c, s->cost_limit);
        MCHECK(s, yyc_memcache_cost_limit(s->c) == s->cost_limit, "cost limit getter");
        break;
    }
    case 17: {
        /* The age limit is only applied by the auto-trim, which stays paused; the interval is
         * set only to values that keep it paused (or an interval longer than any run). */
        s->op_name = "age limit / auto-trim interval";
        static const double vals[] = {0.0, -1.0, NAN, 1e9, DBL_MAX, INFINITY, 0.5, 3600.0};
        uint8_t b = mbyte(s);
        double v = vals[b % 8];
        if (b & 8) {
            if (v > 0 && v < 1e9) v = 0.0; /* would fire during a long fuzzing session */
            yyc_memcache_set_auto_trim_interval(s->c, v);
            s->interval = v;
            double got = yyc_memcache_auto_trim_interval(s->c);
            MCHECK(s, (isnan(v) && isnan(got)) || got == v, "interval getter %g, set %g", got, v);
        } else {
            yyc_memcache_set_age_limit(s->c, v);
            s->age_limit = v;
            double got = yyc_memcache_age_limit(s->c);
            MCHECK(s, (isnan(v) && isnan(got)) || got == v, "age getter %g, set %g", got, v);
        }
        break;
    }
    case 18:
        s->op_name = "set_release_asynchronously";
        s->async = !s->async;
        yyc_memcache_set_release_asynchronously(s->c, s->async);
        MCHECK(s, yyc_memcache_release_asynchronously(s->c) == s->async, "release policy getter");
        break;
    case 19:
    case 20: {
        bool warning = op == 19;
        s->op_name = warning ? "memory warning" : "enter background";
        uint8_t b = mbyte(s);
        if (b & 1) { /* change the handler first */
            bool on = (b & 2) != 0;
            if (warning) {
                s->warning_handler = on;
                yyc_memcache_set_memory_warning_handler(s->c, on ? on_warning : NULL, s);
            } else {
                s->background_handler = on;
                yyc_memcache_set_enter_background_handler(s->c, on ? on_background : NULL, s);
            }
        }
        if (b & 4) { /* and the flag */
            bool on = (b & 8) != 0;
            if (warning) {
                s->rm_on_warning = on;
                yyc_memcache_set_remove_all_on_memory_warning(s->c, on);
                MCHECK(s, yyc_memcache_remove_all_on_memory_warning(s->c) == on, "flag getter");
            } else {
                s->rm_on_background = on;
                yyc_memcache_set_remove_all_on_enter_background(s->c, on);
                MCHECK(s, yyc_memcache_remove_all_on_enter_background(s->c) == on, "flag getter");
            }
        }
        if (warning) {
            yyc_memcache_handle_memory_warning(s->c);
            if (s->rm_on_warning) model_remove_all(s);
        } else {
            yyc_memcache_handle_enter_background(s->c);
            if (s->rm_on_background) model_remove_all(s);
        }
        break;
    }
    case 21: { /* misuse: clear errors, no change */
        s->op_name = "misuse";
        void *v = (void *)(uintptr_t)0x1234;
        char one = 'a';
        switch (mbyte(s) % 8) {
        case 0:
            MCHECK(s, yyc_memcache_set(NULL, "a", 1, NULL, 0) == YYC_EINVAL, "set on NULL");
            MCHECK(s, yyc_memcache_get(NULL, "a", 1, &v) == YYC_EINVAL && v == NULL, "get on NULL");
            MCHECK(s, yyc_memcache_remove(NULL, "a", 1) == YYC_EINVAL, "remove on NULL");
            MCHECK(s, !yyc_memcache_contains(NULL, "a", 1), "contains on NULL");
            break;
        case 1:
            MCHECK(s, yyc_memcache_total_count(NULL) == 0 && yyc_memcache_total_cost(NULL) == 0,
                   "totals of NULL");
            MCHECK(s,
                   yyc_memcache_count_limit(NULL) == SIZE_MAX &&
                       yyc_memcache_cost_limit(NULL) == SIZE_MAX &&
                       yyc_memcache_age_limit(NULL) == DBL_MAX &&
                       yyc_memcache_release_asynchronously(NULL),
                   "getters of NULL");
            yyc_memcache_remove_all(NULL);
            yyc_memcache_trim_to_count(NULL, 0);
            yyc_memcache_trim_to_cost(NULL, 0);
            yyc_memcache_trim_to_age(NULL, 0);
            yyc_memcache_handle_memory_warning(NULL);
            yyc_memcache_handle_enter_background(NULL);
            break;
        case 2:
            MCHECK(s, yyc_memcache_set(s->c, NULL, 3, NULL, 0) == YYC_EINVAL, "set with NULL key");
            MCHECK(s, yyc_memcache_get(s->c, NULL, 3, &v) == YYC_EINVAL && v == NULL,
                   "get with NULL key");
            MCHECK(s, yyc_memcache_remove(s->c, NULL, 3) == YYC_EINVAL, "remove with NULL key");
            MCHECK(s, !yyc_memcache_contains(s->c, NULL, 3), "contains with NULL key");
            break;
        case 3:
            MCHECK(s, yyc_memcache_get(s->c, s->keybuf[k], s->keylen[k], NULL) == YYC_EINVAL,
                   "get with a NULL out pointer");
            break;
        case 4:
            /* "checked before the key is read": a 1-byte buffer is enough. */
            MCHECK(s, yyc_memcache_set(s->c, &one, (size_t)UINT32_MAX + 1, NULL, 0) == YYC_ETOOBIG,
                   "a 4 GiB key");
            break;
        default:
            MCHECK(s, yyc_memcache_new(NULL, NULL) == YYC_EINVAL, "new with NULL out");
            yyc_memcache_free(NULL);
        }
        break;
    }
    case 24: { /* set with a time to live: only values whose outcome does not depend on time */
        s->op_name = "set_with_ttl";
        static const double ttls[] = {0.0, 1e6, 2e6, INFINITY};
        uint8_t vb = mbyte(s), cb = mbyte(s);
        s->ttl_used = true;
        do_set_ttl(s, k, null_key, (vb & 1) ? mv_new(s) : NULL, pick_cost(cb), ttls[vb / 2 % 4]);
        break;
    }
    case 25: { /* move the deadlines' clock by far more than a run lasts */
        s->op_name = "advance clock";
        double d = (mbyte(s) % 2 + 1) * 0.5e6;
        yyc__memcache_testing_advance_clock(d);
        s->ttl_clock += d;
        break;
    }
    case 26: {
        s->op_name = "time_to_live";
        double left = -1;
        bool live = e->present && s->ttl_clock < e->deadline;
        int st = yyc_memcache_time_to_live(s->c, key_ptr(s, k, null_key), s->keylen[k], &left);
        MCHECK(s, st == (live ? YYC_OK : YYC_NOTFOUND), "time_to_live status %s, model live %d",
               yyc_status_name(st), live);
        if (live && isinf(e->deadline)) MCHECK(s, isinf(left), "no time to live: %g", left);
        if (live && !isinf(e->deadline))
            MCHECK(s, left > 0 && left <= e->deadline - s->ttl_clock, "left %g", left);
        if (!live && e->present) model_remove(s, k); /* removed by that read */
        break;
    }
    case 27: { /* get or load */
        s->op_name = "get_or_load";
        load_ctx l = {.s = s, .fail = (mbyte(s) & 1) != 0};
        void *v = (void *)(uintptr_t)0x1234;
        size_t cost = pick_cost(mbyte(s));
        bool was = e->present;
        int st = yyc_memcache_get_or_load(s->c, key_ptr(s, k, null_key), s->keylen[k], cost,
                                          fuzz_load, &l, &v);
        if (was) {
            MCHECK(s, st == YYC_OK && v == (void *)e->val, "get_or_load hit %s",
                   yyc_status_name(st));
            s->hits++;
            e->stamp = ++s->clock;
            if (s->owned && v) mv_release(s, v);
        } else if (l.fail) {
            MCHECK(s, st == YYC_EIO && v == NULL, "get_or_load failure %s", yyc_status_name(st));
            s->misses++;
            s->load_failures++;
        } else {
            MCHECK(s, st == YYC_OK && v == (void *)l.made, "get_or_load load %s",
                   yyc_status_name(st));
            s->misses++;
            s->loads++;
            model_set(s, k, l.made, cost, INFINITY);
            if (s->owned && v) mv_release(s, v); /* the caller's reference */
        }
        break;
    }
    case 28: { /* keys: the model's present keys, most recent stamp first */
        s->op_name = "copy_keys";
        if (s->ttl_used) model_purge_expired(s); /* copy_keys removes expired entries first */
        yyc_memcache_key *keys = NULL;
        size_t n = 0;
        MCHECK(s, yyc_memcache_copy_keys(s->c, &keys, &n) == YYC_OK, "copy_keys");
        MCHECK(s, n == model_count(s), "%zu keys, model %zu", n, model_count(s));
        uint64_t last = UINT64_MAX;
        for (size_t i = 0; i < n; i++) {
            int found = -1;
            for (int kk = 0; kk < MK_KEYS && found < 0; kk++)
                if (s->m[kk].present && s->keylen[kk] == keys[i].len &&
                    memcmp(s->keybuf[kk], keys[i].bytes, keys[i].len) == 0)
                    found = kk;
            MCHECK(s, found >= 0, "key %zu is not in the model", i);
            MCHECK(s, s->policy != YYC_EVICT_LRU || s->m[found].stamp < last,
                   "key %zu out of LRU order", i);
            last = s->m[found].stamp;
        }
        yyc_free(keys);
        break;
    }
    case 29:
        s->op_name = "reset_statistics";
        yyc_memcache_reset_statistics(s->c);
        s->hits = s->misses = s->insertions = s->loads = s->load_failures = 0;
        s->count_at_reset = model_count(s);
        break;
    case 22:
        s->op_name = "drain";
        yyc__worker_drain(s->c);
        exact = true;
        break;
    default: { /* read back every key (each hit refreshes the LRU order, key order) */
        s->op_name = "read all";
        for (int i = 0; i < MK_KEYS; i++) {
            if (!s->m[i].present) continue;
            void *v = NULL;
            int st = yyc_memcache_get(s->c, s->keybuf[i], s->keylen[i], &v);
            MCHECK(s, st == YYC_OK && v == (void *)s->m[i].val, "key %d: %s", i,
                   yyc_status_name(st));
            s->hits++;
            s->m[i].stamp = ++s->clock;
            if (s->owned && v) mv_release(s, v);
        }
    }
    }
    check_all(s, exact);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mstate *s = calloc(1, sizeof *s);
    if (!s) abort();
    s->data = data;
    s->size = size;
    s->op_name = "new";
    static const char *const special[MK_SPECIAL] = {"", "a", "a\0", "a\0b", "b", "\xff\xfe"};
    static const size_t special_len[MK_SPECIAL] = {0, 1, 2, 3, 1, 2};
    for (int k = 0; k < MK_KEYS; k++) {
        if (k < 6) {
            memcpy(s->keybuf[k], special[k], special_len[k]);
            s->keylen[k] = special_len[k];
        } else if (k < MK_SPECIAL) {
            memset(s->keybuf[k], 'K', 300);
            s->keybuf[k][299] = k == 6 ? 'K' : 'x';
            s->keylen[k] = 300;
        } else {
            s->keylen[k] = (size_t)snprintf(s->keybuf[k], sizeof s->keybuf[k], "#%d", k);
        }
    }
    uint8_t cfg = mbyte(s);
    s->owned = (cfg & 3) != 0; /* 3 in 4 inputs: reference-counted values */
    yyc_value_callbacks cb = {mv_retain, mv_release, s};
    int st = yyc_memcache_new(s->owned ? &cb : NULL, &s->c);
    MCHECK(s, st == YYC_OK, "new %s", yyc_status_name(st));
    /* The auto-trim stays paused: its firing would depend on time. */
    yyc_memcache_set_auto_trim_interval(s->c, 0);
    s->count_limit = s->cost_limit = SIZE_MAX;
    s->age_limit = DBL_MAX;
    s->async = (cfg & 4) == 0;
    s->rm_on_warning = s->rm_on_background = true;
    if (!s->async) yyc_memcache_set_release_asynchronously(s->c, false);
    s->policy = (yyc_eviction_policy)((cfg >> 4) & 3); /* LRU is modelled exactly */
    st = yyc_memcache_set_policy(s->c, s->policy);
    MCHECK(s, st == YYC_OK, "set_policy %s", yyc_status_name(st));
    s->listening = (cfg & 8) != 0;
    if (s->listening) yyc_memcache_set_removal_listener(s->c, on_removed, s);
    check_all(s, true);
    while (s->pos < s->size) {
        s->op_index++;
        mop(s);
    }
    s->op_name = "free";
    yyc_memcache_free(s->c);
    for (size_t i = 0; i < s->nobjs; i++) {
        int refs = atomic_load(&s->objs[i]->refs);
        MCHECK(s, refs == 0, "value %zu: %d references left after yyc_memcache_free", i, refs);
        s->objs[i]->magic = MV_DEAD;
        free(s->objs[i]);
    }
    free(s->objs);
    free(s);
    return 0;
}
