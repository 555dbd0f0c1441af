/*
 * cell_slab.c - fixed-size cells in chunked arrays. See cell_slab.h for the contract, the
 * lifetime rules and the invariants.
 */
#include "memory/cell_slab.h"

#include <assert.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLASSES ((YYC__SLAB_MAX_CELL - YYC__SLAB_MIN_CELL) / 16 + 1)
#define HEADER 64u                     /* a chunk's header: cells start one line in */
#define FIRST_CHUNK 4096u              /* bytes of a class's first chunk (small maps stay small) */
#define LARGEST_CHUNK (256u << 10)     /* chunks double up to this */
#define FREE_MARK UINT64_C(0xf4eece11) /* odd: never a live node's next pointer */

typedef struct chunk {
    yyc__slab *slab;
    void *mem;          /* what malloc returned (the header is the first 64-byte boundary) */
    struct chunk *next; /* the slab's chunks, newest first */
    uint32_t cls;       /* the class of its cells */
    uint32_t cells;     /* capacity */
    uint32_t used;      /* cells carved so far (the others are uncarved) */
} chunk;
_Static_assert(sizeof(chunk) <= HEADER, "the chunk header fits its line");

/* The first bytes of a free (or returned) cell. */
typedef struct free_cell {
    struct free_cell *link; /* next on its free list or on the returned stack */
    uint64_t mark;          /* FREE_MARK | offset << 32 */
} free_cell;

struct yyc__slab {
    _Atomic size_t refs;           /* 1 while owned + cells handed out, not yet freed */
    _Atomic(free_cell *) returned; /* cells freed remotely, for the owner to take */
    chunk *chunks;                 /* every chunk, newest first */
    chunk *cur[CLASSES];           /* the class's newest chunk (NULL: none yet) */
    free_cell *free[CLASSES];      /* the class's free cells */
    uint32_t nchunks[CLASSES];     /* chunks of the class so far */
};

static inline uint32_t class_of(size_t size) {
    return size <= YYC__SLAB_MIN_CELL ? 0 : (uint32_t)((size - YYC__SLAB_MIN_CELL + 15) / 16);
}
static inline size_t cell_size(uint32_t cls) { return YYC__SLAB_MIN_CELL + 16u * cls; }
static inline chunk *chunk_of(const void *cell, uint32_t offset) {
    return (chunk *)((uintptr_t)cell - offset);
}

static void mark_free(free_cell *c, uint32_t offset) {
    c->mark = FREE_MARK | ((uint64_t)offset << 32);
}
static inline uint32_t offset_of_free(const free_cell *c) { return (uint32_t)(c->mark >> 32); }

/* Moves the cells freed remotely to their classes' free lists. */
static void take_returned(yyc__slab *s) {
    free_cell *c = atomic_exchange_explicit(&s->returned, NULL, memory_order_acquire);
    while (c) {
        free_cell *next = c->link;
        uint32_t cls = chunk_of(c, offset_of_free(c))->cls;
        c->link = s->free[cls];
        s->free[cls] = c;
        c = next;
    }
}

/* A new chunk for class cls, made its current one. Plain malloc, aligned by hand: with malloc's
 * own overhead (MALLOC_OVERHEAD, at most) the chunk takes exactly `bytes` (a large one: that
 * many bytes of mmap, whole pages; posix_memalign(64) would ask for more and take one more
 * page per chunk, and glibc's aligned allocations leave gaps besides). */
#define MALLOC_OVERHEAD 32u
static chunk *add_chunk(yyc__slab *s, uint32_t cls) {
    size_t bytes = (size_t)FIRST_CHUNK << (s->nchunks[cls] < 6 ? s->nchunks[cls] : 6);
    if (bytes > LARGEST_CHUNK) bytes = LARGEST_CHUNK;
    bytes -= MALLOC_OVERHEAD;
    void *p = malloc(bytes);
    if (!p) return NULL;
    uintptr_t base = ((uintptr_t)p + HEADER - 1) & ~(uintptr_t)(HEADER - 1);
    bytes -= base - (uintptr_t)p;
    chunk *k = (chunk *)base;
    k->mem = p;
    k->slab = s;
    k->next = s->chunks;
    k->cls = cls;
    k->cells = (uint32_t)((bytes - HEADER) / cell_size(cls));
    k->used = 0;
    s->chunks = k;
    s->cur[cls] = k;
    s->nchunks[cls]++;
    return k;
}

void *yyc__slab_alloc(yyc__slab **slab, size_t size, uint32_t *offset) {
    assert(size <= YYC__SLAB_MAX_CELL);
    yyc__slab *s = *slab;
    if (!s) {
        if (!(s = calloc(1, sizeof *s))) return NULL;
        atomic_init(&s->refs, 1);
        atomic_init(&s->returned, NULL);
        *slab = s;
    }
    uint32_t cls = class_of(size);
    if (!s->free[cls] && atomic_load_explicit(&s->returned, memory_order_relaxed)) take_returned(s);
    free_cell *c = s->free[cls];
    if (c) {
        s->free[cls] = c->link;
        *offset = offset_of_free(c);
        return c;
    }
    chunk *k = s->cur[cls];
    if ((!k || k->used == k->cells) && !(k = add_chunk(s, cls))) return NULL;
    size_t off = HEADER + (size_t)k->used++ * cell_size(cls);
    *offset = (uint32_t)off;
    return (unsigned char *)k + off;
}

void yyc__slab_free_local(yyc__slab *s, void *cell, uint32_t offset) {
    free_cell *c = cell;
    uint32_t cls = chunk_of(cell, offset)->cls;
    assert(chunk_of(cell, offset)->slab == s);
    mark_free(c, offset);
    c->link = s->free[cls];
    s->free[cls] = c;
}

void yyc__slab_hand_out(yyc__slab *s, size_t n) {
    atomic_fetch_add_explicit(&s->refs, n, memory_order_relaxed);
}

static void slab_free(yyc__slab *s) {
    chunk *k = s->chunks;
    while (k) {
        chunk *next = k->next;
        free(k->mem);
        k = next;
    }
    free(s);
}

/* Drops one reference; the last one frees the slab. */
static void unref(yyc__slab *s) {
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) slab_free(s);
}

void yyc__slab_free_remote(void *cell, uint32_t offset) {
    yyc__slab *s = chunk_of(cell, offset)->slab;
    free_cell *c = cell;
    mark_free(c, offset);
    free_cell *top = atomic_load_explicit(&s->returned, memory_order_relaxed);
    do c->link = top;
    while (!atomic_compare_exchange_weak_explicit(&s->returned, &top, c, memory_order_release,
                                                  memory_order_relaxed));
    unref(s); /* after the push: the cell is not touched again */
}

void yyc__slab_release(yyc__slab *s, size_t handed) {
    if (!s) return;
    if (handed) atomic_fetch_add_explicit(&s->refs, handed - 1, memory_order_acq_rel);
    else unref(s);
}

#ifdef YYC_TESTING
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: cell slab invariant broken: %s\n", __FILE__, __LINE__, #cond); \
            return false;                                                                          \
        }                                                                                          \
    } while (0)

/* Whether cell (offset) is a carved cell of s, of class cls if cls < CLASSES. */
static bool carved(const yyc__slab *s, const void *cell, uint32_t offset, uint32_t cls) {
    const chunk *k = chunk_of(cell, offset);
    bool found = false;
    for (const chunk *x = s->chunks; x && !found; x = x->next) found = x == k;
    if (!found || (cls < CLASSES && k->cls != cls) || offset < HEADER) return false;
    size_t size = cell_size(k->cls);
    return (offset - HEADER) % size == 0 && (offset - HEADER) / size < k->used;
}

bool yyc__slab_check_cell(const yyc__slab *s, const void *cell, uint32_t offset, size_t size) {
    return s && size <= YYC__SLAB_MAX_CELL && carved(s, cell, offset, class_of(size)) &&
           ((const free_cell *)cell)->mark != (FREE_MARK | ((uint64_t)offset << 32));
}

/* Counts the free cells of list c (a free list of class cls, or the returned stack: any class)
 * into *n, checking each. */
static bool check_free_list(const yyc__slab *s, const free_cell *c, uint32_t cls, size_t *n,
                            size_t carved_total) {
    for (; c; c = c->link) {
        CHECK((c->mark & UINT32_MAX) == FREE_MARK);
        CHECK(carved(s, c, offset_of_free(c), cls));
        CHECK(++*n <= carved_total); /* also stops cycles */
    }
    return true;
}

bool yyc__slab_check(const yyc__slab *s, size_t live) {
    if (!s) {
        CHECK(live == 0);
        return true;
    }
    size_t total = 0, chunks_of[CLASSES] = {0};
    for (const chunk *k = s->chunks; k; k = k->next) {
        CHECK(k->slab == s && k->cls < CLASSES && k->used <= k->cells);
        CHECK(k == s->cur[k->cls] || k->used == k->cells); /* only the newest has room */
        chunks_of[k->cls]++;
        total += k->used;
    }
    for (uint32_t c = 0; c < CLASSES; c++) CHECK(chunks_of[c] == s->nchunks[c]);
    size_t free_n = 0;
    for (uint32_t c = 0; c < CLASSES; c++)
        if (!check_free_list(s, s->free[c], c, &free_n, total)) return false;
    /* A cell freed remotely meanwhile is pushed on returned, then its reference dropped: for
     * that moment it counts twice, and the sum is off until the decrement lands. Read again
     * until the sum holds (a broken count stays broken). */
    for (int attempt = 0;; attempt++) {
        size_t refs = atomic_load(&s->refs), ret = 0;
        if (!check_free_list(s, atomic_load(&s->returned), CLASSES, &ret, total)) return false;
        CHECK(refs >= 1);
        if (live + free_n + ret + (refs - 1) == total) return true;
        CHECK(attempt < 100000);
        sched_yield();
    }
}

size_t yyc__slab_chunks(const yyc__slab *s) {
    size_t n = 0;
    for (const chunk *k = s ? s->chunks : NULL; k; k = k->next) n++;
    return n;
}
#undef CHECK
#endif /* YYC_TESTING */
