/*
 * deferred_writes.c - the queue of a disk cache's deferred writes: a seeded, chained hash map
 * from key to its last queued write, its entries bump-allocated in chunks in the order they were
 * queued (see deferred_writes.h).
 */
#include "disk/deferred_writes.h"

#include <assert.h>
#include <bsd/stdlib.h> /* arc4random_buf */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

/* Entries of at most CHUNK_BYTES / 4 share chunks of CHUNK_BYTES (below glibc's default mmap
 * threshold: the heap hands them back at the next batch without new page faults); a larger one
 * gets a chunk of its own. */
#define CHUNK_BYTES ((size_t)64 << 10)

struct yyc__deferred_chunk {
    struct yyc__deferred_chunk *next; /* the next chunk allocated (queue order) */
    size_t size, used;                /* bytes of data; bytes handed out */
    alignas(max_align_t) unsigned char data[];
};

void yyc__deferred_init(yyc__deferred *d) { *d = (yyc__deferred){0}; }

void yyc__deferred_clear(yyc__deferred *d) {
    for (yyc__deferred_chunk *c = d->first; c;) {
        yyc__deferred_chunk *next = c->next;
        free(c);
        c = next;
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

/* size bytes (a multiple of max_align_t's alignment) at the end of the chunks, or NULL. */
static void *bump(yyc__deferred *d, size_t size) {
    yyc__deferred_chunk *c = d->last;
    if (!c || c->size - c->used < size) {
        size_t room = size > CHUNK_BYTES / 4 ? size : CHUNK_BYTES;
        if (room > SIZE_MAX - sizeof *c) return NULL;
        c = malloc(sizeof *c + room);
        if (!c) return NULL;
        *c = (yyc__deferred_chunk){.size = room};
        if (d->last) d->last->next = c;
        else d->first = c;
        d->last = c;
        d->held += room;
    }
    void *p = c->data + c->used;
    c->used += size;
    return p;
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
    size_t size = round_up(name_at + name_len);
    yyc__deferred_entry *e = bump(d, size);
    if (!e) return false;
    char *base = (char *)e;
    e->hash = hash_key(d->seed, key, key_len);
    e->size = size;
    e->dead = false;
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
            old->dead = true; /* (its room stays held until the queue is cleared) */
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
    for (const yyc__deferred_chunk *c = d->first; c; c = c->next) {
        for (size_t at = 0; at < c->used;) {
            const yyc__deferred_entry *e = (const yyc__deferred_entry *)(c->data + at);
            if (!e->dead) fn(ctx, e);
            at += e->size;
        }
    }
}

#ifdef YYC_TESTING
void yyc__deferred_check(const yyc__deferred *d) {
    size_t count = 0, bytes = 0, live = 0, held = 0;
    assert(d->nbuckets == 0 || (d->nbuckets & (d->nbuckets - 1)) == 0);
    for (size_t i = 0; i < d->nbuckets; i++) {
        for (const yyc__deferred_entry *e = d->buckets[i]; e; e = e->next) {
            assert((e->hash & (d->nbuckets - 1)) == i);
            assert(!e->dead && yyc__deferred_find(d, e->key) == e);
            count++;
            bytes += e->len + e->extended_len;
        }
    }
    assert(count == d->count && bytes == d->bytes);
    for (const yyc__deferred_chunk *c = d->first; c; c = c->next) {
        assert(c->used <= c->size && (c->next != NULL) == (c != d->last));
        held += c->size;
        for (size_t at = 0; at < c->used;) {
            const yyc__deferred_entry *e = (const yyc__deferred_entry *)(c->data + at);
            assert(e->size > 0 && e->size <= c->used - at);
            live += !e->dead; /* (a live entry is the one its key finds) */
            assert(e->dead || yyc__deferred_find(d, e->key) == e);
            at += e->size;
        }
    }
    assert(live == d->count && held == d->held);
    (void)count;
    (void)bytes;
    (void)live;
    (void)held;
}
#endif
