/*
 * kv_entries.c - the manifest's entries a page at a time, least recently used first (the
 * disk cache's enumeration, disk_cache_entries.c).
 *
 * A page is one indexed query that continues after the last entry of the previous page (keyset
 * paging on (last_access_time, rowid), the order of last_access_time_idx), so a walk holds at
 * most one page in memory and no statement or transaction stays open between pages: writers
 * go on between them. Expired rows are left out (LIVE_ROW). Rows whose key is not text (a
 * hostile row) are skipped.
 *
 * Thread safety: none, as for yyc_kv (the caller serialises access).
 */
#include "kv/kv_internal.h"

#include <stdlib.h>
#include <string.h>

#define ENTRY_COLS "select rowid, key, filename, size, modification_time, last_access_time, "
/* After (?1, ?2) in the order (last_access_time, rowid); ?1 is bound with the type the row had,
 * so REAL and TEXT times compare as SQLite orders them. NULL times come first, and a row value
 * with a NULL compares to nothing: after a NULL time, the rest of the NULL ones by rowid, then
 * every other. */
#define AFTER_CURSOR "(last_access_time, rowid) > (?1, ?2)"
#define AFTER_NULL_CURSOR \
    "((last_access_time is null and rowid > ?2) or last_access_time is not null)"
#define ORDER " order by last_access_time, rowid limit ?3;"
#define SQL_ENTRIES_FIRST ENTRY_COLS "NULL from manifest" ORDER
#define SQL_ENTRIES_NEXT ENTRY_COLS "NULL from manifest where " AFTER_CURSOR ORDER
#define SQL_ENTRIES_NEXT_NULL ENTRY_COLS "NULL from manifest where " AFTER_NULL_CURSOR ORDER
#define SQL_ENTRIES_FIRST_CRC ENTRY_COLS EXPIRY_COLUMN " from manifest where " LIVE_ROW ORDER
#define SQL_ENTRIES_NEXT_CRC \
    ENTRY_COLS EXPIRY_COLUMN " from manifest where " AFTER_CURSOR " and " LIVE_ROW ORDER
#define SQL_ENTRIES_NEXT_NULL_CRC \
    ENTRY_COLS EXPIRY_COLUMN " from manifest where " AFTER_NULL_CURSOR " and " LIVE_ROW ORDER

void yyc__kv_cursor_clear(yyc__kv_cursor *cursor) {
    sqlite3_value_free(cursor->last_access_time);
    *cursor = (yyc__kv_cursor){0};
}

void yyc__kv_entries_clear(yyc__kv_entry *entries, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(entries[i].key);
        free(entries[i].filename);
        entries[i].key = entries[i].filename = NULL;
    }
}

int yyc__kv_entries_page(yyc_kv *kv, yyc__kv_cursor *cursor, size_t max, yyc__kv_entry *out,
                         size_t *n, bool *more) {
    *n = 0;
    *more = false;
    sqlite3_stmt *s;
    bool with_crc;
    int rc;
    if (!cursor->started)
        rc = yyc__kv_prepare2(kv, SQL_ENTRIES_FIRST, SQL_ENTRIES_FIRST_CRC, &s, &with_crc);
    else if (!cursor->last_access_time)
        rc = yyc__kv_prepare2(kv, SQL_ENTRIES_NEXT_NULL, SQL_ENTRIES_NEXT_NULL_CRC, &s, &with_crc);
    else rc = yyc__kv_prepare2(kv, SQL_ENTRIES_NEXT, SQL_ENTRIES_NEXT_CRC, &s, &with_crc);
    if (rc != YYC_OK) return rc;
    if (cursor->started) {
        if (cursor->last_access_time) sqlite3_bind_value(s, 1, cursor->last_access_time);
        sqlite3_bind_int64(s, 2, cursor->rowid);
    }
    sqlite3_bind_int64(s, 3, (int64_t)max);
    size_t rows = 0;
    int64_t last_rowid = 0;
    sqlite3_value *last_time = NULL; /* the last row's access time, copied (NULL: NULL) */
    int src;
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        rows++; /* the cursor moves past every row, also a skipped one */
        last_rowid = sqlite3_column_int64(s, 0);
        sqlite3_value_free(last_time);
        last_time = NULL;
        if (sqlite3_column_type(s, 5) != SQLITE_NULL &&
            !(last_time = sqlite3_value_dup(sqlite3_column_value(s, 5)))) {
            src = SQLITE_NOMEM;
            break;
        }
        if (sqlite3_column_type(s, 1) != SQLITE_TEXT) continue;
        const char *key = (const char *)sqlite3_column_text(s, 1);
        const char *name = (const char *)sqlite3_column_text(s, 2);
        yyc__kv_entry e = {.rowid = last_rowid,
                           .key = strdup(key ? key : ""),
                           .filename = name && *name ? strdup(name) : NULL,
                           .size = sqlite3_column_int64(s, 3),
                           .modification_time = sqlite3_column_int64(s, 4),
                           .last_access_time = sqlite3_column_int64(s, 5),
                           .expiry_ms = yyc__kv_expiry_column(s, 6)};
        out[(*n)++] = e;
        if (!e.key || (name && *name && !e.filename)) {
            src = SQLITE_NOMEM;
            break;
        }
    }
    yyc__stmt_done(s);
    if (src != SQLITE_DONE) {
        sqlite3_value_free(last_time);
        yyc__kv_entries_clear(out, *n);
        *n = 0;
        if (src == SQLITE_NOMEM) return yyc__kv_report(kv, true, YYC_ENOMEM, 0, 0, "copy an entry");
        return yyc__kv_sqlite_fail(kv, src, "list entries");
    }
    if (rows > 0) {
        sqlite3_value_free(cursor->last_access_time);
        *cursor =
            (yyc__kv_cursor){.started = true, .last_access_time = last_time, .rowid = last_rowid};
    }
    *more = rows == max;
    return YYC_OK;
}
