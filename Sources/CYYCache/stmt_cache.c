/*
 * stmt_cache.c - prepared SQLite statements keyed by their SQL text, on the project's lru_map.
 */
#include "stmt_cache.h"

#include <string.h>

void yyc__stmt_cache_init(yyc__stmt_cache *c, sqlite3 *db) {
    c->db = db;
    yyc__lru_map_init(&c->map);
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

void yyc__stmt_done(sqlite3_stmt *stmt) {
    if (stmt) sqlite3_reset(stmt);
}

void yyc__stmt_cache_clear(yyc__stmt_cache *c) {
    for (yyc__lru_node *n = c->map.head; n; n = n->next) sqlite3_finalize(n->value);
    yyc__lru_map_destroy(&c->map);
}
