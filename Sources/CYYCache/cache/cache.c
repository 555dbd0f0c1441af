/*
 * cache.c - the two-level cache (YYCache): memory tier in front of the disk tier.
 *
 * The memory tier stores reference-counted byte buffers (one allocation: header + bytes); the
 * callbacks below retain and release them, so a value read from memory is copied out while the
 * caller holds a reference and can never be freed under it.
 *
 * Consistency (the guarantee of cache.h): the disk is the truth and memory holds copies, each
 * put there by a conditional call of the memory cache (memory_cache.h, write generations):
 *   - get: memory hit, else g = the key's generation, read the disk, and back-fill only if the
 *     generation is still g: no set or remove touched the key since, so the value read is still
 *     the disk's (every write changes the disk before it changes the generation).
 *   - set: g = generation, write the disk, then store in memory only if the generation is still
 *     g; if another write came in between, its disk write may have gone first or second, so
 *     memory forgets the key (the next read takes the disk's value). A failed disk write (the
 *     disk keeps its previous value) forgets the key only if the generation is still g, so it
 *     never drops what a newer set put there.
 *   - remove / remove_all: the disk first, then memory (changing the generation, so a read that
 *     started before cannot back-fill the removed value).
 * Expiry (one rule, kv_private.h's yyc__kv_expired): each memory copy carries the deadline of
 * its disk entry (`expiry_ms`, unix milliseconds on the disk's expiry clock; 0: never) - the
 * set's own time to live or the disk tier's default, or the row's when back-filled - and a
 * memory hit whose deadline has passed is no hit: the copy is forgotten and the read goes to
 * the disk, which decides by the same clock. The memory tier's own time to live (monotonic) is
 * set too, so that expired copies leave memory without a read; a wall-clock step can make the
 * two disagree, and then the deadline decides.
 * The cost of a memory entry is the value's length; the memory tier's cost limit defaults to a
 * quarter of yyc_available_memory().
 */
#include "platform/internal.h"

#include "disk/disk_cache_private.h"
#include "kv/kv_private.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define YYC_CACHE_INLINE_THRESHOLD 20480

struct yyc_cache {
    yyc_memcache *memory;
    yyc_diskcache *disk;
    /* yyc_cache_statistics' own counters (relaxed atomics: exact, no lock): reads served by
     * either tier, by neither, and values stored through this cache. */
    atomic_uint_fast64_t hits, misses, insertions;
};

typedef struct bytes {
    atomic_size_t refs;
    int64_t expiry_ms; /* the disk entry's deadline (yyc__kv_expired; 0: never); immutable */
    size_t len;
    unsigned char data[];
} bytes;

static void *bytes_retain(void *ctx, void *value) {
    (void)ctx;
    atomic_fetch_add_explicit(&((bytes *)value)->refs, 1, memory_order_relaxed);
    return value;
}

static void bytes_release(void *ctx, void *value) {
    (void)ctx;
    bytes *b = value;
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) free(b);
}

static bytes *bytes_new(const void *data, size_t len, int64_t expiry_ms) {
    if (len > SIZE_MAX - sizeof(bytes)) return NULL;
    bytes *b = malloc(sizeof(bytes) + len);
    if (!b) return NULL;
    atomic_init(&b->refs, 1);
    b->expiry_ms = expiry_ms;
    b->len = len;
    if (len) memcpy(b->data, data, len);
    return b;
}

static const yyc_value_callbacks bytes_callbacks = {bytes_retain, bytes_release, NULL};

/* The memory tier's default cost limit: a quarter of the memory available (no limit when
 * unknown). */
static size_t default_memory_cost_limit(void) {
    uint64_t available = yyc_available_memory();
    if (available == 0 || available / 4 > SIZE_MAX) return SIZE_MAX;
    return (size_t)(available / 4);
}

int yyc_cache_open(const char *path, yyc_cache **out) {
    if (!out) return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_open: out is NULL");
    *out = NULL;
    if (!path || !*path) return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_open: empty path");
    yyc_cache *c = calloc(1, sizeof *c);
    if (!c) return yyc__error(YYC_ENOMEM, 0, 0, "yyc_cache_open: out of memory");
    int rc = yyc_diskcache_open(path, YYC_CACHE_INLINE_THRESHOLD, &c->disk);
    if (rc == YYC_OK) {
        rc = yyc_memcache_new(&bytes_callbacks, &c->memory);
        if (rc != YYC_OK)
            rc = yyc__error(rc, 0, 0, "yyc_cache_open: memory cache: %s", yyc_strerror(rc));
        else yyc_memcache_set_cost_limit(c->memory, default_memory_cost_limit());
    }
    if (rc != YYC_OK) {
        yyc_cache_free(c);
        return rc;
    }
    *out = c;
    return YYC_OK;
}

void yyc_cache_free(yyc_cache *c) {
    if (!c) return;
    yyc_memcache_free(c->memory);
    yyc_diskcache_release(c->disk);
    free(c);
}

yyc_memcache *yyc_cache_memory(yyc_cache *c) { return c ? c->memory : NULL; }

yyc_diskcache *yyc_cache_disk(yyc_cache *c) { return c ? c->disk : NULL; }

/* Copies a buffer out for the caller (NULL for an empty value). */
static int copy_out(const bytes *b, void **out_value, size_t *out_len) {
    void *copy = NULL;
    if (b->len) {
        copy = malloc(b->len);
        if (!copy) return yyc__error(YYC_ENOMEM, 0, 0, "yyc_cache_get: out of memory");
        memcpy(copy, b->data, b->len);
    }
    *out_value = copy;
    *out_len = b->len;
    return YYC_OK;
}

/* A read that reached the disk tier: served by it, or by neither tier. */
static void count_read(yyc_cache *c, int rc) {
    if (rc == YYC_OK) atomic_fetch_add_explicit(&c->hits, 1, memory_order_relaxed);
    else if (rc == YYC_NOTFOUND) atomic_fetch_add_explicit(&c->misses, 1, memory_order_relaxed);
}

static void back_fill(yyc_cache *c, const char *key, size_t key_len, const void *value, size_t len,
                      uint64_t generation);

/* The memory tier's copy of key, if it holds one whose disk deadline has not passed: copied out
 * and counted as a hit. An expired copy is forgotten (unless a write replaced it since
 * *generation, read first) and is no hit. Returns YYC_OK (a hit, or a failed copy's error) or
 * YYC_NOTFOUND (go to the disk; *generation is the key's generation before this look). */
static int memory_get(yyc_cache *c, const char *key, size_t key_len, uint64_t *generation,
                      void **out_value, size_t *out_len, int *rc) {
    *generation = yyc_memcache_generation(c->memory, key, key_len);
    void *held = NULL;
    if (yyc_memcache_get(c->memory, key, key_len, &held) != YYC_OK) return YYC_NOTFOUND;
    bytes *b = held;
    if (yyc__kv_expired(b->expiry_ms, yyc__kv_now_ms())) {
        bytes_release(NULL, b);
        yyc_memcache_remove_if_generation(c->memory, key, key_len, *generation);
        return YYC_NOTFOUND;
    }
    atomic_fetch_add_explicit(&c->hits, 1, memory_order_relaxed);
    *rc = copy_out(b, out_value, out_len);
    bytes_release(NULL, b);
    return YYC_OK;
}

int yyc_cache_get(yyc_cache *c, const char *key, void **out_value, size_t *out_len) {
    if (!out_value || !out_len) return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_get: NULL output");
    *out_value = NULL;
    *out_len = 0;
    if (!c || !key) return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_get: NULL argument");
    if (!*key) return YYC_NOTFOUND;
    size_t key_len = strlen(key);

    uint64_t generation;
    int rc;
    if (memory_get(c, key, key_len, &generation, out_value, out_len, &rc) == YYC_OK) return rc;

    void *value = NULL;
    size_t len = 0;
    rc = yyc_diskcache_get(c->disk, key, &value, &len);
    count_read(c, rc);
    if (rc != YYC_OK) return rc;
    back_fill(c, key, key_len, value, len, generation);
    *out_value = value;
    *out_len = len;
    return YYC_OK;
}

/* Back-fill the memory tier unless a set or remove came in since the disk read began,
 * with the disk entry's remaining time to live (none: never), so that memory never serves
 * a value the disk has let expire. A failed or refused back-fill loses nothing; an entry
 * gone from disk since the read (expired) is not filled. */
static void back_fill(yyc_cache *c, const char *key, size_t key_len, const void *value, size_t len,
                      uint64_t generation) {
    int64_t expiry = 0;
    if (yyc__diskcache_expiry_ms(c->disk, key, &expiry) != YYC_OK) return;
    double ttl = expiry == 0 ? INFINITY : (double)(expiry - yyc__kv_now_ms()) / 1000.0;
    if (!(ttl > 0)) return; /* (expired since the look) */
    bytes *b = bytes_new(value, len, expiry);
    if (b) {
        yyc_memcache_set_if_generation_with_ttl(c->memory, key, key_len, b, len, generation, ttl,
                                                NULL);
        bytes_release(NULL, b);
    }
}

/* Statistics (API.md): a hit in either tier is one hit; a call that found neither tier holding
 * the key is one miss, whether its value then came from this call's loader or a concurrent one
 * (the loads are the disk tier's counters); a loaded value stored is one insertion. */
int yyc_cache_get_or_load(yyc_cache *c, const char *key, yyc_diskcache_load_fn load, void *ctx,
                          void **out_value, size_t *out_len) {
    if (!out_value || !out_len)
        return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_get_or_load: NULL output");
    *out_value = NULL;
    *out_len = 0;
    if (!c || !key || !load)
        return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_get_or_load: NULL argument");
    if (!*key) return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_get_or_load: empty key");
    size_t key_len = strlen(key);
    uint64_t generation;
    int rc;
    if (memory_get(c, key, key_len, &generation, out_value, out_len, &rc) == YYC_OK) return rc;
    /* The disk tier's single flight: one load per missing key, its value stored on disk unless
     * a write of the key came in since the miss (that write stays, in both tiers: it changed
     * the generation, so the back-fill below stores nothing). */
    bool missed = false, stored = false;
    rc = yyc__diskcache_get_or_load(c->disk, key, load, ctx, out_value, out_len, &missed, &stored);
    if (rc != YYC_OK || missed) atomic_fetch_add_explicit(&c->misses, 1, memory_order_relaxed);
    else atomic_fetch_add_explicit(&c->hits, 1, memory_order_relaxed);
    if (stored) atomic_fetch_add_explicit(&c->insertions, 1, memory_order_relaxed);
    if (rc != YYC_OK) return rc;
    back_fill(c, key, key_len, *out_value, *out_len, generation);
    return YYC_OK;
}

int yyc_cache_get_statistics(yyc_cache *c, yyc_cache_statistics *out) {
    if (!c || !out) return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_get_statistics: NULL argument");
    yyc_cache_statistics disk;
    int rc = yyc_diskcache_statistics(c->disk, &disk);
    if (rc != YYC_OK) return rc;
    *out = disk; /* removals by cause and loads: the disk tier's (every entry leaves the disk) */
    out->hits = atomic_load_explicit(&c->hits, memory_order_relaxed);
    out->misses = atomic_load_explicit(&c->misses, memory_order_relaxed);
    out->insertions = atomic_load_explicit(&c->insertions, memory_order_relaxed);
    return YYC_OK;
}

void yyc_cache_reset_statistics(yyc_cache *c) {
    if (!c) return;
    atomic_store_explicit(&c->hits, 0, memory_order_relaxed);
    atomic_store_explicit(&c->misses, 0, memory_order_relaxed);
    atomic_store_explicit(&c->insertions, 0, memory_order_relaxed);
}

/* ttl: seconds for both tiers (INFINITY: never), or NAN for each tier's default. */
static int set_impl(yyc_cache *c, const char *key, const void *value, size_t len, double ttl) {
    if (!c || !key) return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_set: NULL argument");
    if (!*key) return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_set: empty key");
    if (!value && len)
        return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_set: NULL value with a length");
    size_t key_len = strlen(key);
    /* The memory copy's deadline: the disk entry's, taken before the disk write so that it is
     * never later (the disk's default when the set gives none). */
    double disk_ttl = isnan(ttl) ? yyc_diskcache_default_time_to_live(c->disk) : ttl;
    bytes *b = bytes_new(value, len, yyc__kv_expiry_from_ttl(disk_ttl));
    if (!b) return yyc__error(YYC_ENOMEM, 0, 0, "yyc_cache_set: out of memory");
    uint64_t generation = yyc_memcache_generation(c->memory, key, key_len);
    int rc = isnan(ttl) ? yyc_diskcache_set(c->disk, key, value, len, NULL, 0)
                        : yyc_diskcache_set_with_ttl(c->disk, key, value, len, NULL, 0, ttl);
    if (rc != YYC_OK) {
        /* The disk keeps its previous value. Memory forgets the key, unless a newer write came
         * in meanwhile (then what memory holds is that write's, or nothing). */
        bytes_release(NULL, b);
        yyc_error saved;
        yyc_last_error(&saved);
        yyc_memcache_remove_if_generation(c->memory, key, key_len, generation);
        return yyc__error(saved.code ? saved.code : rc, saved.sqlite_code, saved.sys_errno, "%s",
                          saved.message);
    }
    atomic_fetch_add_explicit(&c->insertions, 1, memory_order_relaxed);
    bool stored = false;
    /* Memory's own time to live: the set's; without one, memory's default, or the disk's
     * default when that is shorter (the copy must leave memory by then). */
    if (isnan(ttl) && disk_ttl < INFINITY)
        ttl = fmin(disk_ttl, yyc_memcache_default_time_to_live(c->memory));
    if (isnan(ttl))
        yyc_memcache_set_if_generation(c->memory, key, key_len, b, len, generation, &stored);
    else
        yyc_memcache_set_if_generation_with_ttl(c->memory, key, key_len, b, len, generation, ttl,
                                                &stored);
    bytes_release(NULL, b);
    /* Another write on the key (or out of memory): which value the disk kept last is unknown
     * here, so memory forgets the key and the next read takes the disk's. */
    if (!stored) yyc_memcache_remove(c->memory, key, key_len);
    return YYC_OK;
}

int yyc_cache_set(yyc_cache *c, const char *key, const void *value, size_t len) {
    return set_impl(c, key, value, len, NAN);
}

int yyc_cache_set_with_ttl(yyc_cache *c, const char *key, const void *value, size_t len,
                           double ttl_seconds) {
    if (isnan(ttl_seconds) || ttl_seconds < 0)
        return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_set_with_ttl: negative or NaN time to live");
    return set_impl(c, key, value, len, ttl_seconds);
}

/* Memory answers alone only for a copy that never expires (no time to live: no disk deadline
 * either); a copy with a deadline is checked against the disk, which holds it by the wall
 * clock (a look at memory's time to live is no hit: no order changes). */
bool yyc_cache_contains(yyc_cache *c, const char *key) {
    if (!c || !key || !*key) return false;
    double ttl = 0;
    if (yyc_memcache_time_to_live(c->memory, key, strlen(key), &ttl) == YYC_OK && ttl == INFINITY)
        return true;
    return yyc_diskcache_contains(c->disk, key);
}

int yyc_cache_remove(yyc_cache *c, const char *key) {
    if (!c || !key) return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_remove: NULL argument");
    if (!*key) return YYC_OK;
    size_t key_len = strlen(key);
    uint64_t generation = yyc_memcache_generation(c->memory, key, key_len);
    int rc = yyc_diskcache_remove(c->disk, key);
    /* After the disk: the removal changes the key's generation, so a read that began before
     * cannot back-fill the removed value. On failure (the disk may keep the value), only if no
     * newer write came in. */
    if (rc == YYC_OK) yyc_memcache_remove(c->memory, key, key_len);
    else yyc_memcache_remove_if_generation(c->memory, key, key_len, generation);
    return rc;
}

int yyc_cache_remove_all(yyc_cache *c) {
    if (!c) return yyc__error(YYC_EINVAL, 0, 0, "yyc_cache_remove_all: NULL cache");
    int rc = yyc_diskcache_remove_all(c->disk);
    /* After the disk, as in remove; also on failure (the disk may have lost any part). */
    yyc_memcache_remove_all(c->memory);
    return rc;
}
