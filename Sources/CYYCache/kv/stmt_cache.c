/*
 * stmt_cache.c - prepared SQLite statements keyed by their SQL text, on the project's lru_map.
 */
#include "kv/stmt_cache.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

void yyc__stmt_cache_init(yyc__stmt_cache *c, sqlite3 *db) {
    c->db = db;
    yyc__lru_map_init(&c->map);
    memset(c->fast, 0, sizeof c->fast);
}

int yyc__stmt_cache_get(yyc__stmt_cache *c, const char *sql, sqlite3_stmt **out) {
    *out = NULL;
    size_t len = strlen(sql);
    yyc__lru_node *n = yyc__lru_map_find(&c->map, sql, len);
    if (n) {
        *out = n->value;
        return SQLITE_OK;
    }
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v3(c->db, sql, (int)len + 1, SQLITE_PREPARE_PERSISTENT, &stmt, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(stmt);
        return rc;
    }
    if (!stmt) return SQLITE_MISUSE; /* empty SQL text */
    if (!yyc__lru_map_insert(&c->map, sql, len, stmt, 0, 0.0)) {
        sqlite3_finalize(stmt);
        return SQLITE_NOMEM;
    }
    *out = stmt;
    return SQLITE_OK;
}

int yyc__stmt_cache_get_literal(yyc__stmt_cache *c, const char *sql, sqlite3_stmt **out) {
    size_t slot = (size_t)(((uintptr_t)sql * UINT64_C(0x9E3779B97F4A7C15)) >> 58);
    _Static_assert(YYC__STMT_FAST_SLOTS == 64, "the slot is the top 6 bits of the hash");
    if (c->fast[slot].sql == sql) {
        *out = c->fast[slot].stmt;
        assert(strcmp(sqlite3_sql(*out), sql) == 0);
        return SQLITE_OK;
    }
    int rc = yyc__stmt_cache_get(c, sql, out);
    if (rc == SQLITE_OK) {
        c->fast[slot].sql = sql;
        c->fast[slot].stmt = *out;
    }
    return rc;
}

void yyc__stmt_done(sqlite3_stmt *stmt) {
    if (stmt) sqlite3_reset(stmt);
}

void yyc__stmt_cache_clear(yyc__stmt_cache *c) {
    for (yyc__lru_node *n = c->map.head; n; n = n->next) sqlite3_finalize(n->value);
    yyc__lru_map_destroy(&c->map);
    memset(c->fast, 0, sizeof c->fast);
}
