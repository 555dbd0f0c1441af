/*
 * stmt_cache.h - prepared SQLite statements keyed by their SQL text (private; not API).
 *
 * YYKVStorage cached statements but never reset them after use, so a SELECT that stopped on a
 * row kept its read transaction open and WAL checkpoints could not complete (YYCache #115,
 * PR #129), and it closed the connection without finalizing them (#166, #168). Here every
 * statement handed out must be given back with yyc__stmt_done (reset) before the calling
 * function returns, and yyc__stmt_cache_clear finalizes all of them before the connection is
 * closed. Bindings are not cleared (a few hundred instructions per save): every caller
 * binds every parameter of a statement before each step. A binding left from an earlier call
 * may point to memory that is gone; SQLite reads a bound value only while stepping.
 *
 * Thread safety: none; the caller holds the owner's lock (yyc_kv is single-threaded).
 * Ownership: the cache owns its statements; callers borrow them between get and done.
 */
#ifndef YYCACHE_STMT_CACHE_H
#define YYCACHE_STMT_CACHE_H

#include <sqlite3.h>

#include "memory/lru_map.h"

#define YYC__STMT_FAST_SLOTS 64

typedef struct yyc__stmt_cache {
    sqlite3 *db;      /* borrowed: the connection the statements belong to */
    yyc__lru_map map; /* SQL text (without NUL) -> sqlite3_stmt*; every value is non-NULL */
    /* The statements of string literals by the literal's address (yyc__stmt_cache_get_literal:
     * a hit hashes and compares no text). Invariant: each slot is empty (sql NULL) or holds a
     * literal whose text is a key of map, with map's statement for it. */
    struct {
        const char *sql;
        sqlite3_stmt *stmt;
    } fast[YYC__STMT_FAST_SLOTS];
} yyc__stmt_cache;

/* Makes an empty cache for db. Allocates nothing. */
void yyc__stmt_cache_init(yyc__stmt_cache *c, sqlite3 *db);

/* The prepared statement for sql, preparing and caching it on first use.
 * Returns: SQLITE_OK (*out set; give it back with yyc__stmt_done), an SQLite error code from
 * sqlite3_prepare_v2 (nothing cached), or SQLITE_NOMEM. */
int yyc__stmt_cache_get(yyc__stmt_cache *c, const char *sql, sqlite3_stmt **out);

/* The same for a string literal (static storage, never changed: its address stands for its
 * text). Never pass text built at run time: another text could later sit at the same address. */
int yyc__stmt_cache_get_literal(yyc__stmt_cache *c, const char *sql, sqlite3_stmt **out);

/* Resets the statement, ending any read transaction it holds (bindings stay: the next user
 * rebinds every parameter). NULL is fine. */
void yyc__stmt_done(sqlite3_stmt *stmt);

/* Finalizes every cached statement and empties the cache (before sqlite3_close). */
void yyc__stmt_cache_clear(yyc__stmt_cache *c);

#endif /* YYCACHE_STMT_CACHE_H */
