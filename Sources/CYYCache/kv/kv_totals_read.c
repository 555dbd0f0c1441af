/*
 * kv_totals_read.c - reading the count and total cost (kv_totals.c carries them): inside the
 * caller's transaction, the carried totals when SQLite's data version shows only this
 * connection's commits since they were right, else one scan of the manifest.
 * Owner: the caller's thread, like the rest of yyc_kv.
 */
#include "kv/kv_internal.h"

#define SQL_TOTALS_SCAN "select count(*), yyc_cost_total(size) from manifest;"
/* A deferred BEGIN takes its snapshot at the first read: this is one. */
#define SQL_TOTALS_PROBE "select 1 from manifest limit 1;"

/* *acc += d; false (and *acc unchanged) on overflow. */
static bool add_to(int64_t *acc, int64_t d) {
    int64_t r;
    if (__builtin_add_overflow(*acc, d, &r)) return false;
    *acc = r;
    return true;
}

/* Sums the manifest: *count, *cost (saturated). Returns YYC_OK or a reported error. */
static int scan(yyc_kv *kv, int64_t *count, int64_t *cost) {
    sqlite3_stmt *s;
    int rc = yyc__kv_prepare_checked(kv, SQL_TOTALS_SCAN, &s);
    if (rc != YYC_OK) return rc;
    int src = sqlite3_step(s);
    if (src == SQLITE_ROW) {
        *count = sqlite3_column_int64(s, 0);
        *cost = sqlite3_column_int64(s, 1);
    }
    yyc__stmt_done(s);
    kv->totals.scans++;
    return src == SQLITE_ROW ? YYC_OK : yyc__kv_sqlite_fail(kv, src, "sum the manifest");
}

/* The open transaction's own changes on top of a committed total, clamped to [0, INT64_MAX]. */
static int64_t with_txn(int64_t committed, int64_t txn) {
    int64_t r;
    if (__builtin_add_overflow(committed, txn, &r)) return txn > 0 ? INT64_MAX : 0;
    return r < 0 ? 0 : r;
}

/* The invariants of struct yyc__kv_totals (kv_internal.h). */
static inline bool totals_ok(const yyc__kv_totals *t) { /* (asserts only) */
    return (!t->known || (t->count >= 0 && t->cost >= 0 && t->cost < INT64_MAX)) &&
           (t->on || (!t->known && t->commits == 0));
}

int yyc__kv_totals_read(yyc_kv *kv, int64_t *count, int64_t *cost) {
    assert(kv->db && !sqlite3_get_autocommit(kv->db));
    *count = *cost = 0;
    yyc__kv_totals *t = &kv->totals;
    assert(totals_ok(t));
    sqlite3_stmt *p;
    int rc = yyc__kv_prepare_checked(kv, SQL_TOTALS_PROBE, &p);
    if (rc != YYC_OK) return rc;
    int src = sqlite3_step(p);
    yyc__stmt_done(p);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return yyc__kv_sqlite_fail(kv, src, "read the manifest");
    yyc__kv_txn_settle(kv); /* (inside a later transaction: a commit seen has succeeded) */
    uint32_t version = 0;
    bool versioned = t->on && sqlite3_file_control(kv->db, "main", SQLITE_FCNTL_DATA_VERSION,
                                                   &version) == SQLITE_OK;
    if (versioned && t->known && !t->done_lost && version == t->version + t->commits) {
        int64_t c = t->count, s = t->cost;
        if (add_to(&c, t->done_count) && add_to(&s, t->done_cost) && c >= 0 && s >= 0 &&
            s < INT64_MAX) {
            t->count = c;
            t->cost = s;
            t->version = version;
            t->commits = 0;
            t->done_count = t->done_cost = 0;
            *count = with_txn(t->count, t->txn_count);
            *cost = with_txn(t->cost, t->txn_cost);
            assert(totals_ok(t));
            return YYC_OK;
        }
    }
    int64_t c = 0, s = 0;
    rc = scan(kv, &c, &s);
    t->known = false;
    t->commits = 0;
    t->done_count = t->done_cost = 0;
    t->done_lost = false;
    if (rc != YYC_OK) return rc;
    *count = c;
    *cost = s;
    /* The scan saw this transaction's own changes: the committed totals are the scan without
     * them (they join at its commit). */
    if (versioned && !t->txn_lost && s < INT64_MAX && add_to(&c, -t->txn_count) &&
        add_to(&s, -t->txn_cost) && c >= 0 && s >= 0) {
        t->known = true;
        t->count = c;
        t->cost = s;
        t->version = version;
    }
    assert(totals_ok(t));
    return YYC_OK;
}

#ifdef YYC_TESTING
uint64_t yyc__kv_totals_scans(const yyc_kv *kv) { return kv->totals.scans; }
#endif
