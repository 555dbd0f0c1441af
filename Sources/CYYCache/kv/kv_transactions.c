/*
 * kv_transactions.c - what became of this connection's row changes: SQLite's preupdate, commit
 * and rollback hooks, and the one rule that decides when a change is committed, for the two
 * concerns that follow changes (the totals, kv_totals.c; the removal watch, kv_removals.c) and
 * a save's own look at the row it replaces (kv_storage.c, while hook_key).
 *
 * The rule. SQLite's commit hook runs before the commit is durable, and a commit that then fails
 * is rolled back, which runs the rollback hook. So a commit seen (commit_seen) is known to have
 * succeeded once the connection is past it without a rollback in between: at the next row
 * change (a new transaction), at the next commit hook (a transaction without row changes came
 * between), or when a concern asks (yyc__kv_txn_settle: the totals' read, the watch's end). Then
 * each concern moves its transaction's changes to its committed ones (settle). A rollback drops
 * the transaction's changes. (No statement of ours rolls back part of a transaction: the group
 * commit rolls back its whole transaction when one write fails, kv_group_commit.c.)
 *
 * The hooks are installed for the connection's whole life (when the linked SQLite has them) and
 * run inside sqlite3_step on the caller's thread; they call nothing but sqlite3_preupdate_* and
 * the concerns' own bookkeeping. Thread safety: none, as for yyc_kv.
 */
#include "kv/kv_internal.h"

#include <string.h>

bool yyc__kv_row_hooks_available(void) {
    return sqlite3_preupdate_hook != NULL && sqlite3_preupdate_old != NULL &&
           sqlite3_preupdate_new != NULL && sqlite3_compileoption_used("ENABLE_PREUPDATE_HOOK");
}

void yyc__kv_txn_reset(yyc_kv *kv) { kv->txn = (yyc__kv_txn){0}; }

void yyc__kv_txn_settle(yyc_kv *kv) {
    if (!kv->txn.commit_seen) return;
    kv->txn.commit_seen = false;
    yyc__kv_totals_committed(kv);
    if (kv->watch.on) yyc__kv_watch_committed(kv);
}

/* The row hooks' part for a save (kv_storage.c sets hook_key while an upsert of one key
 * steps): INSERT OR REPLACE deletes the key's previous row (if any) before inserting the new
 * one, and this records that row's file name, so the save knows which file it leaves behind
 * without a lookup. Runs inside sqlite3_step; calls nothing but sqlite3_preupdate_old and
 * sqlite3_value_*. */
static void old_row_deleted(yyc_kv *kv, sqlite3 *db) {
    sqlite3_value *k = NULL, *f = NULL;
    if (sqlite3_preupdate_old(db, kv->col_key, &k) != SQLITE_OK ||
        sqlite3_preupdate_old(db, kv->col_filename, &f) != SQLITE_OK) {
        kv->old_row_failed = true;
        return;
    }
    size_t key_len = strlen(kv->hook_key);
    const void *old_key = sqlite3_value_text(k);
    if (!old_key || (size_t)sqlite3_value_bytes(k) != key_len ||
        memcmp(old_key, kv->hook_key, key_len))
        return; /* not the key's row (only a trigger someone added could delete another) */
    kv->replaced_row = true;
    const char *name = NULL;
    if (sqlite3_value_type(f) == SQLITE_TEXT) name = (const char *)sqlite3_value_text(f);
    if (name && yyc_kv_filename_is_valid(name)) /* (at most 255 bytes) */
        memcpy(kv->old_filename, name, strlen(name) + 1);
}

static void on_row_change(void *ctx, sqlite3 *db, int op, const char *db_name, const char *table,
                          sqlite3_int64 old_rowid, sqlite3_int64 new_rowid) {
    yyc_kv *kv = ctx;
    (void)old_rowid;
    (void)new_rowid;
    if (strcmp(db_name, "main") != 0 || strcmp(table, "manifest") != 0) return;
    yyc__kv_txn_settle(kv); /* (a change after a commit: a new transaction) */
    yyc__kv_totals_row_changed(kv, db, op);
    if (op != SQLITE_DELETE) return;
    if (kv->hook_key) old_row_deleted(kv, db); /* (a save: not a removal) */
    else if (kv->watch.on && kv->use_old_row_hook) yyc__kv_watch_row_deleted(kv, db);
}

static int on_commit(void *ctx) {
    yyc_kv *kv = ctx;
    /* A commit still unsettled here was followed by a transaction without a row change (its
     * first change would have settled it): it succeeded, and the changes so far are all this
     * one's. */
    yyc__kv_txn_settle(kv);
    kv->txn.commit_seen = true;
    if (kv->watch.on) yyc__kv_watch_committing(kv);
    return 0; /* the commit goes ahead */
}

static void on_rollback(void *ctx) {
    yyc_kv *kv = ctx;
    kv->txn.commit_seen = false; /* (a commit that failed is rolled back) */
    yyc__kv_totals_rolled_back(kv);
    if (kv->watch.on) yyc__kv_watch_rolled_back(kv);
}

void yyc__kv_install_row_hooks(yyc_kv *kv, sqlite3 *db) {
    if (!yyc__kv_row_hooks_available()) return;
    sqlite3_preupdate_hook(db, on_row_change, kv);
    sqlite3_commit_hook(db, on_commit, kv);
    sqlite3_rollback_hook(db, on_rollback, kv);
}

void yyc__kv_row_hook_pause(yyc_kv *kv) {
    if (kv->db && yyc__kv_row_hooks_available() && !(kv->watch.on && kv->use_old_row_hook))
        sqlite3_preupdate_hook(kv->db, NULL, NULL);
}

void yyc__kv_row_hook_resume(yyc_kv *kv) {
    if (kv->db && yyc__kv_row_hooks_available()) sqlite3_preupdate_hook(kv->db, on_row_change, kv);
    yyc__kv_totals_reset(kv, kv->totals.on);
}

void yyc__kv_txn_statement_failed(yyc_kv *kv) { yyc__kv_totals_statement_failed(kv); }
