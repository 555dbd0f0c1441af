/*
 * kv_expiry.c - the manifest's expiry column (ours; YYKVStorage neither reads nor writes it).
 *
 * Each row may carry an expiry, in unix milliseconds on the wall clock (CLOCK_REALTIME: it is
 * stored in the file and must mean the same after a reopen and in another process), in the
 * column EXPIRY_COLUMN. NULL - every row YYKVStorage writes, and every save without a time to
 * live - never expires. A row is expired when now >= its expiry. A partial index on the column
 * (only rows that expire) makes listing the expired rows one index range, whatever the number
 * of rows that never expire.
 *
 * The row statements of the checksum variants (kv_internal.h, the _CRC ones) do the rest in
 * SQL, so that a read costs no extra statement: saves write yyc_save_expiry() (this file's
 * save_with_expiry sets it for one save), and the item, value and exists reads skip rows that
 * are not LIVE_ROW. This file adds what the disk cache needs beyond that: the expiry of one
 * row, the removal of one expired row (the read that finds it expired removes it) and of every
 * expired row (every trim).
 *
 * Thread safety: none, as for yyc_kv (the caller serialises access); the test clock is atomic.
 */
#include "kv/kv_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <time.h>

/* --- saves --- */

int yyc__kv_save_with_expiry(yyc_kv *kv, const char *key, const void *value, size_t value_len,
                             const char *filename, const void *extended, size_t extended_len,
                             int64_t expiry_ms) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    if (expiry_ms == 0)
        return yyc_kv_save(kv, key, value, value_len, filename, extended, extended_len);
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK) return rc;
    if (!kv->has_crc) /* a save would leave the row without its expiry: never expiring */
        return yyc__kv_report(kv, true, YYC_EIO, 0, 0, "manifest has no expiry column");
    kv->save_expiry_ms = expiry_ms;
    rc = yyc_kv_save(kv, key, value, value_len, filename, extended, extended_len);
    kv->save_expiry_ms = 0;
    return rc;
}

/* --- one row --- */

/* The expiry column's value as the manifest's SQL reads it (LIVE_ROW: live while NULL or
 * greater than yyc_now_ms()), in the one rule of yyc__kv_expired: NULL, TEXT and BLOB
 * (greater than any number in SQLite's order) never expire: 0; a number expires once now >=
 * it: an INTEGER as it is, a hostile REAL rounded up (now is whole milliseconds); one not
 * above 0 is long past (1). */
int64_t yyc__kv_expiry_column(sqlite3_stmt *s, int col) {
    switch (sqlite3_column_type(s, col)) {
    case SQLITE_INTEGER: {
        int64_t v = sqlite3_column_int64(s, col);
        return v > 0 ? v : 1;
    }
    case SQLITE_FLOAT: {
        double v = ceil(sqlite3_column_double(s, col));
        if (!(v > 0)) return 1;
        return v >= 9.2e18 ? INT64_MAX : (int64_t)v;
    }
    default: return 0;
    }
}

#define SQL_EXPIRY_OF "select " EXPIRY_COLUMN " from manifest where key = ?1;"

int yyc__kv_expiry_of(yyc_kv *kv, const char *key, int64_t *expiry_ms) {
    *expiry_ms = 0;
    if (!key || !*key) return YYC_NOTFOUND;
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK) return rc;
    if (!kv->has_crc) return yyc_kv_exists(kv, key); /* no column: nothing expires */
    sqlite3_stmt *s;
    rc = yyc__kv_prepare_checked(kv, SQL_EXPIRY_OF, &s);
    if (rc != YYC_OK) return rc;
    yyc__kv_bind_key(s, 1, key);
    int src = sqlite3_step(s);
    if (src == SQLITE_ROW) *expiry_ms = yyc__kv_expiry_column(s, 0);
    yyc__stmt_done(s);
    if (src == SQLITE_ROW) return YYC_OK;
    if (src == SQLITE_DONE) return YYC_NOTFOUND;
    return yyc__kv_sqlite_fail(kv, src, "read expiry");
}

#define SQL_ROWS_KEY_EXPIRED                                                       \
    "select rowid, filename, size from manifest where key = ?1 and " EXPIRY_COLUMN \
    " <= yyc_now_ms();"

static int select_key_expired(yyc_kv *kv, const void *arg, sqlite3_stmt **s, bool *adhoc) {
    *adhoc = false;
    int rc = yyc__kv_prepare_checked(kv, SQL_ROWS_KEY_EXPIRED, s);
    if (rc == YYC_OK) yyc__kv_bind_key(*s, 1, arg);
    return rc;
}

int yyc__kv_remove_if_expired(yyc_kv *kv, const char *key, bool *removed) {
    *removed = false;
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK || !kv->has_crc || !key || !*key) return rc;
    /* The delete decides, inside its transaction: a save of the key by another process since
     * the caller's read (a new row, a new expiry) is not removed. */
    int64_t n = 0;
    rc = yyc__kv_delete_selected(kv, select_key_expired, key, SIZE_MAX, &n);
    *removed = n > 0;
    return rc;
}

bool yyc__kv_take_read_found_expired(yyc_kv *kv) {
    bool found = kv->read_found_expired;
    kv->read_found_expired = false;
    return found;
}

/* --- every expired row --- */

#define SQL_ROWS_EXPIRED                                              \
    "select rowid, filename, size from manifest where " EXPIRY_COLUMN \
    " <= ?1 order by " EXPIRY_COLUMN ";"
/* Rows per transaction (like the other trims' WHERE_BATCH). */
#define EXPIRED_BATCH 256

static int select_expired(yyc_kv *kv, const void *arg, sqlite3_stmt **s, bool *adhoc) {
    *adhoc = false;
    int rc = yyc__kv_prepare_checked(kv, SQL_ROWS_EXPIRED, s);
    if (rc == YYC_OK) sqlite3_bind_int64(*s, 1, *(const int64_t *)arg);
    return rc;
}

int yyc__kv_remove_expired(yyc_kv *kv, int64_t *removed) {
    if (removed) *removed = 0;
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK || !kv->has_crc) return rc;
    int64_t now = yyc__kv_now_ms(), n = 0;
    rc = yyc__kv_delete_selected(kv, select_expired, &now, EXPIRED_BATCH, &n);
    if (n > 0) yyc__kv_checkpoint(kv);
    if (removed) *removed = n;
    return rc;
}

#define SQL_COUNT_EXPIRED "select count(*) from manifest where " EXPIRY_COLUMN " <= yyc_now_ms();"

int yyc__kv_count_expired(yyc_kv *kv, int64_t *out) {
    *out = 0;
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK || !kv->has_crc) return rc;
    sqlite3_stmt *s;
    rc = yyc__kv_prepare_checked(kv, SQL_COUNT_EXPIRED, &s);
    if (rc != YYC_OK) return rc;
    int src = sqlite3_step(s);
    if (src == SQLITE_ROW) *out = sqlite3_column_int64(s, 0);
    yyc__stmt_done(s);
    return src == SQLITE_ROW ? YYC_OK : yyc__kv_sqlite_fail(kv, src, "count expired");
}
