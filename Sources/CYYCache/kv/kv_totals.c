/*
 * kv_totals.c - the manifest's count and total cost in O(1), carried by this connection.
 *
 * The totals are summed once (one scan, at the first read after the connection opened) and
 * then moved by every row change this connection makes, whatever statement makes it (a save, a
 * removal, a trim, a deferred batch, an expired row): SQLite's preupdate hook reports each row
 * inserted, deleted or updated with its size, and the commit and rollback hooks keep only the
 * changes of the transactions that committed (kv_transactions.c decides which did). Nothing is
 * written for them: a set costs what it cost before (a table kept by triggers would add a page to
 * every commit; Benchmarks/README.md, "Design measurements").
 *
 * Other connections (other processes, YYKVStorage, the CLI, a second yyc_kv) change the
 * manifest without our hooks. SQLite's data version of the file (SQLITE_FCNTL_DATA_VERSION)
 * moves by one at each commit of this connection and again whenever a transaction of this
 * connection begins after another connection's commit. So the carried totals are used only
 * when the version moved by exactly this connection's commits since they were right;
 * otherwise they are summed again, inside the transaction that reads them. A total is thus
 * never older than the transaction it is read in, and costs a scan only after another
 * connection wrote (once per such write, not once per read).
 *
 * What can make the carried changes unsure makes them unknown (summed again at the next read):
 * a statement that failed inside a transaction (it may have undone its own changes, which no
 * hook reports), a size
 * that could not be read, a total that would pass INT64_MAX (the sum saturates there, as
 * yyc_cost_total does: such totals are summed at every read). A row's cost is its size when
 * that is a positive integer, else 0 (yyc_cost_total's rule).
 *
 * Without the preupdate hook (an SQLite built without it) or a size column, every read sums.
 * Owner: the caller's thread, like the rest of yyc_kv (kv_internal.h).
 */
#include "kv/kv_internal.h"

#include <string.h>

/* The cost of a size value (yyc_cost_total's rule). */
static int64_t cost_of(sqlite3_value *v) {
    if (!v || sqlite3_value_type(v) != SQLITE_INTEGER) return 0;
    int64_t x = sqlite3_value_int64(v);
    return x > 0 ? x : 0;
}

/* *acc += d; false (and *acc unchanged) on overflow. */
static bool add_to(int64_t *acc, int64_t d) {
    int64_t r;
    if (__builtin_add_overflow(*acc, d, &r)) return false;
    *acc = r;
    return true;
}

void yyc__kv_totals_committed(yyc_kv *kv) {
    yyc__kv_totals *t = &kv->totals;
    if (!t->on) return;
    t->commits++;
    if (t->txn_lost || !add_to(&t->done_count, t->txn_count) || !add_to(&t->done_cost, t->txn_cost))
        t->done_lost = true;
    t->txn_count = t->txn_cost = 0;
    t->txn_lost = false;
}

void yyc__kv_totals_reset(yyc_kv *kv, bool on) {
    uint64_t scans = kv->totals.scans;
    kv->totals = (yyc__kv_totals){.on = on, .scans = scans};
}

void yyc__kv_totals_row_changed(yyc_kv *kv, sqlite3 *db, int op) {
    yyc__kv_totals *t = &kv->totals;
    if (!t->on) return;
    sqlite3_value *v = NULL;
    int64_t d_count = op == SQLITE_INSERT ? 1 : op == SQLITE_DELETE ? -1 : 0, d_cost = 0;
    bool ok = true;
    /* A size column of TEXT or REAL affinity holds no integer: its rows count 0, as in the sum
     * (the row being written may still show the integer it was given). */
    bool sized = kv->size_keeps_integers;
    if (sized && op == SQLITE_INSERT && kv->hook_key && sqlite3_preupdate_depth(db) == 0) {
        d_cost = kv->hook_size; /* (our upsert's own row, not a trigger's: its size is known) */
    } else if (sized && (op == SQLITE_INSERT || op == SQLITE_UPDATE)) {
        ok = sqlite3_preupdate_new(db, kv->col_size, &v) == SQLITE_OK;
        d_cost = cost_of(v);
    }
    if (sized && ok && (op == SQLITE_DELETE || op == SQLITE_UPDATE)) {
        v = NULL;
        ok = sqlite3_preupdate_old(db, kv->col_size, &v) == SQLITE_OK;
        d_cost -= cost_of(v); /* (both in [0, INT64_MAX]: no overflow) */
    }
    if (!ok || !add_to(&t->txn_count, d_count) || !add_to(&t->txn_cost, d_cost)) t->txn_lost = true;
}

void yyc__kv_totals_rolled_back(yyc_kv *kv) {
    yyc__kv_totals *t = &kv->totals;
    t->txn_count = t->txn_cost = 0;
    t->txn_lost = false;
}

void yyc__kv_totals_statement_failed(yyc_kv *kv) {
    yyc__kv_totals *t = &kv->totals;
    /* (An autocommit statement whose error SQLite answers with a statement rollback commits
     * the rest: commit_seen is then its own commit, and its changes are unsure too.) */
    t->txn_lost = true;
}
