/*
 * deferred_writes.c - the queue of a disk cache's deferred writes: a seeded, chained hash map
 * from key to its last queued write (see deferred_writes.h).
 */
#include "disk/deferred_writes.h"

#include <assert.h>
#include <bsd/stdlib.h> /* arc4random_buf */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

void yyc__deferred_init(yyc__deferred *d) { *d = (yyc__deferred){0}; }

void yyc__deferred_clear(yyc__deferred *d) {
    for (size_t i = 0; i < d->nbuckets; i++) {
        yyc__deferred_entry *e = d->buckets[i];
        while (e) {
            yyc__deferred_entry *next = e->next;
            free(e);
            e = next;
        }
    }
    free(d->buckets);
    uint64_t seed = d->seed;
    *d = (yyc__deferred){.seed = seed};
}

/* A 64-bit multiply-xorshift hash of the key's bytes, seeded. */
static uint64_t hash_key(uint64_t seed, const char *key, size_t len) {
    uint64_t h = seed ^ (len * 0x9E3779B97F4A7C15ull);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, key + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
    }
    uint64_t tail = 0;
    memcpy(&tail, key + i, len - i);
    h = (h ^ tail) * 0x94D049BB133111EBull;
    h ^= h >> 32;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 29);
}

static bool grow(yyc__deferred *d) {
    size_t n = d->nbuckets ? d->nbuckets * 2 : 64;
    yyc__deferred_entry **b = calloc(n, sizeof *b);
    if (!b) return false;
    for (size_t i = 0; i < d->nbuckets; i++) {
        yyc__deferred_entry *e = d->buckets[i];
        while (e) {
            yyc__deferred_entry *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(d->buckets);
    d->buckets = b;
    d->nbuckets = n;
    return true;
}

static size_t round_up(size_t n) {
    const size_t a = alignof(max_align_t);
    return (n + a - 1) & ~(a - 1);
}

bool yyc__deferred_put(yyc__deferred *d, const char *key, bool remove, const void *value,
                       size_t len, const void *extended, size_t extended_len, const char *filename,
                       int64_t expiry_ms) {
    if (remove) len = extended_len = 0, filename = NULL, expiry_ms = 0;
    if (!value) len = 0;
    if (!extended) extended_len = 0;
    if (d->seed == 0) arc4random_buf(&d->seed, sizeof d->seed);
    if (d->count >= d->nbuckets && !grow(d)) return false;
    if (len > SIZE_MAX / 4 || extended_len > SIZE_MAX / 4) return false;
    size_t key_len = strlen(key);
    size_t name_len = filename ? strlen(filename) + 1 : 0;
    /* entry + key, then the value and extended data at aligned offsets, then the file name */
    size_t value_at = round_up(sizeof(yyc__deferred_entry) + key_len + 1);
    size_t ext_at = round_up(value_at + len);
    size_t name_at = ext_at + extended_len;
    yyc__deferred_entry *e = malloc(name_at + name_len);
    if (!e) return false;
    char *base = (char *)e;
    e->hash = hash_key(d->seed, key, key_len);
    e->remove = remove;
    e->expiry_ms = expiry_ms;
    e->len = len;
    e->extended_len = extended_len;
    e->value = len ? base + value_at : NULL;
    e->extended = extended_len ? base + ext_at : NULL;
    e->filename = name_len ? base + name_at : NULL;
    memcpy(e->key, key, key_len + 1);
    if (len) memcpy(base + value_at, value, len);
    if (extended_len) memcpy(base + ext_at, extended, extended_len);
    if (name_len) memcpy(base + name_at, filename, name_len);
    yyc__deferred_entry **p = &d->buckets[e->hash & (d->nbuckets - 1)];
    for (; *p; p = &(*p)->next) {
        if ((*p)->hash == e->hash && strcmp((*p)->key, key) == 0) {
            yyc__deferred_entry *old = *p;
            e->next = old->next;
            *p = e;
            d->bytes -= old->len + old->extended_len;
            d->bytes += len + extended_len;
            free(old);
            return true;
        }
    }
    e->next = NULL;
    *p = e;
    d->count++;
    d->bytes += len + extended_len;
    return true;
}

const yyc__deferred_entry *yyc__deferred_find(const yyc__deferred *d, const char *key) {
    if (d->count == 0) return NULL;
    uint64_t h = hash_key(d->seed, key, strlen(key));
    for (const yyc__deferred_entry *e = d->buckets[h & (d->nbuckets - 1)]; e; e = e->next)
        if (e->hash == h && strcmp(e->key, key) == 0) return e;
    return NULL;
}

void yyc__deferred_each(const yyc__deferred *d, void (*fn)(void *ctx, const yyc__deferred_entry *e),
                        void *ctx) {
    for (size_t i = 0; i < d->nbuckets; i++)
        for (const yyc__deferred_entry *e = d->buckets[i]; e; e = e->next) fn(ctx, e);
}

#ifdef YYC_TESTING
void yyc__deferred_check(const yyc__deferred *d) {
    size_t count = 0, bytes = 0;
    assert(d->nbuckets == 0 || (d->nbuckets & (d->nbuckets - 1)) == 0);
    for (size_t i = 0; i < d->nbuckets; i++) {
        for (const yyc__deferred_entry *e = d->buckets[i]; e; e = e->next) {
            assert((e->hash & (d->nbuckets - 1)) == i);
            assert(yyc__deferred_find(d, e->key) == e);
            count++;
            bytes += e->len + e->extended_len;
        }
    }
    assert(count == d->count && bytes == d->bytes);
    (void)count;
    (void)bytes;
}
#endif
