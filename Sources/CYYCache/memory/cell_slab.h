/*
 * cell_slab.h - fixed-size cells carved from chunked arrays, for lru_map's nodes (private; not
 * API).
 *
 * Why: a malloc'd node of a short key (52 bytes) sits at any 16-byte offset of a cache line and
 * straddles two lines at three offsets of four, behind an 8-byte malloc header. Cells of 64
 * bytes carved from 64-byte-aligned chunks make such a node exactly one line, at no more bytes
 * per entry than malloc (a cell is the node rounded up to 16 bytes, with no header).
 *
 * Size classes: cells of 64, 80, ..., YYC__SLAB_MAX_CELL bytes (16-byte steps); a cell of class
 * c holds objects of size 64 + 16 (c - 1) + 1 .. 64 + 16 c (the 64-byte class: up to 64). Each
 * chunk holds cells of one class after a 64-byte header, so cells of the 64-byte class are
 * 64-byte aligned, every cell 16-byte aligned. A cell is named by its chunk and its offset in
 * the chunk (a uint32_t, never 0: the header comes first); the owner stores the offset in the
 * object, which is how a cell finds its chunk, and the chunk its slab, without the owner.
 *
 * Lifetime and threads. The slab belongs to one owner (an lru_map) whose lock guards every call
 * except yyc__slab_free_remote. The owner hands cells out (an lru_map node unlinked and given
 * to the caller); a handed-out cell may be freed later by yyc__slab_free_remote on any thread,
 * with no lock, even after the owner dropped the slab (destroy, detach_all). So the slab is
 * reference counted: refs = 1 while an owner holds it + the cells handed out and not yet freed.
 * A remote free pushes the cell on a lock-free stack (returned; only pushes and whole-stack
 * takes, so no ABA) and drops its reference; the owner moves returned cells to its free lists
 * when a class runs out. Whoever drops the last reference frees every chunk and the slab.
 * Cells are never given back to malloc one by one: a trim keeps them for reuse; they go back
 * with the slab (map destroyed, or detach_all and then every detached node freed).
 *
 * Invariants (yyc__slab_check, test builds): every carved cell is exactly one of: live (held by
 * the owner; the owner checks each with yyc__slab_check_cell), on its class's free list, on
 * the returned stack, or handed out (refs - 1 of them); free and returned cells carry the free
 * mark and their offset; a class's current chunk is its newest, and only it has uncarved
 * cells.
 */
#ifndef YYCACHE_CELL_SLAB_H
#define YYCACHE_CELL_SLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define YYC__SLAB_MIN_CELL 64u
#define YYC__SLAB_MAX_CELL 256u

typedef struct yyc__slab yyc__slab;

/* A cell of at least size bytes (size <= YYC__SLAB_MAX_CELL, else the caller's bug), from
 * *slab, which is created on first use; *offset receives the cell's name (see above). The
 * cell's bytes are garbage. NULL if memory ran out. Owner's lock held. */
void *yyc__slab_alloc(yyc__slab **slab, size_t size, uint32_t *offset);

/* Gives back a cell the owner holds (never handed out). Owner's lock held. */
void yyc__slab_free_local(yyc__slab *s, void *cell, uint32_t offset);

/* n cells held by the owner are handed out (each to be freed by yyc__slab_free_remote). */
void yyc__slab_hand_out(yyc__slab *s, size_t n);

/* Frees a handed-out cell: any thread, no lock; the slab may have been dropped by its owner. */
void yyc__slab_free_remote(void *cell, uint32_t offset);

/* The owner drops the slab (NULL is fine). The handed cells it still holds are handed out in
 * the same step (detach_all); the others (destroy) are forgotten. */
void yyc__slab_release(yyc__slab *s, size_t handed);

#ifdef YYC_TESTING
/* Whether cell (offset) is a carved cell of s whose class is the one for size bytes. */
bool yyc__slab_check_cell(const yyc__slab *s, const void *cell, uint32_t offset, size_t size);
/* Checks the invariants above, live being the number of cells the owner holds. Prints the first
 * broken one to stderr and returns false. Owner's lock held; other threads may free remotely. */
bool yyc__slab_check(const yyc__slab *s, size_t live);
/* The number of chunks (for tests: cells are reused before a chunk is added). */
size_t yyc__slab_chunks(const yyc__slab *s);
#endif

#endif /* YYCACHE_CELL_SLAB_H */
