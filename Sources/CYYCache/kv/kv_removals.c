/*
 * kv_removals.c - which keys a call removed: the removal watch behind the disk cache's removal
 * events (disk_cache_trims.c).
 *
 * While the watch is on, the row hooks (kv_transactions.c: SQLite's preupdate hook) copy the key of
 * every manifest row this connection deletes, whatever statement deletes it (a removal, a trim, an
 * expired row, the remove-all: SQLite does not use its truncate shortcut while a preupdate hook is
 * set), and the commit and rollback hooks keep only the keys of transactions that committed: a
 * deletion rolled back (a full disk retried, a failed commit) reports nothing, its retry reports
 * once.
 * When a commit is known to have succeeded is kv_transactions.c's rule. Saves are not
 * watched (a save's own part of the row hooks, yyc__kv_old_row_deleted, tells whether it replaced a
 * row: kv->replaced_row).
 *
 * Needs the preupdate hook (kv->use_old_row_hook tells whether the linked SQLite has it);
 * without it the watch sees nothing. Thread safety: none, as for yyc_kv.
 */
#include "kv/kv_internal.h"

#include <stdlib.h>
#include <string.h>

static void drop_from(yyc__kv_removal_watch *w, size_t from) {
    for (size_t i = from; i < w->n; i++) free(w->keys[i]);
    w->n = from;
}

void yyc__kv_watch_row_deleted(yyc_kv *kv, sqlite3 *db) {
    yyc__kv_removal_watch *w = &kv->watch;
    sqlite3_value *k = NULL;
    const char *key = NULL;
    if (sqlite3_preupdate_old(db, kv->col_key, &k) == SQLITE_OK)
        key = (const char *)sqlite3_value_text(k);
    if (!key) key = ""; /* a hostile row's NULL key */
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        char **p = realloc(w->keys, cap * sizeof *p);
        if (!p) {
            w->lost = true;
            return;
        }
        w->keys = p;
        w->cap = cap;
    }
    char *copy = strdup(key);
    if (!copy) {
        w->lost = true;
        return;
    }
    w->keys[w->n++] = copy;
}

void yyc__kv_watch_committing(yyc_kv *kv) { kv->watch.at_commit = kv->watch.n; }

void yyc__kv_watch_committed(yyc_kv *kv) { kv->watch.committed = kv->watch.at_commit; }

void yyc__kv_watch_rolled_back(yyc_kv *kv) { drop_from(&kv->watch, kv->watch.committed); }

void yyc__kv_watch_removals(yyc_kv *kv) {
    yyc__kv_removal_watch *w = &kv->watch;
    assert(!w->on && w->n == 0);
    w->on = true;
    w->committed = w->at_commit = 0;
    w->lost = false;
}

size_t yyc__kv_unwatch_removals(yyc_kv *kv, char ***keys, bool *lost) {
    yyc__kv_removal_watch *w = &kv->watch;
    assert(w->on);
    /* Outside any transaction now, a commit seen and not rolled back has succeeded; inside one
     * (the commit failed and its transaction is still open) its keys are not reported. */
    if (kv->txn.commit_seen && (!kv->db || sqlite3_get_autocommit(kv->db)))
        yyc__kv_watch_committed(kv); /* (the totals settle at their next read) */
    drop_from(w, w->committed);
    w->on = false;
    *lost = w->lost;
    *keys = w->keys;
    size_t n = w->n;
    w->keys = NULL;
    w->n = w->cap = 0;
    return n;
}

bool yyc__kv_last_save_replaced(const yyc_kv *kv) {
    return kv->use_old_row_hook && kv->replaced_row;
}

bool yyc__kv_can_watch_removals(const yyc_kv *kv) { return kv->use_old_row_hook; }
