/*
 * kv_removals.c - which keys a call removed: the removal watch behind the disk cache's removal
 * events (disk_cache.c).
 *
 * While the watch is on, SQLite's preupdate hook copies the key of every manifest row this
 * connection deletes, whatever statement deletes it (a removal, a trim, an expired row, the
 * remove-all: SQLite does not use its truncate shortcut while a preupdate hook is set), and the
 * commit and rollback hooks keep only the keys of transactions that committed: a deletion
 * rolled back (a full disk retried, a failed commit) reports nothing, its retry reports once.
 * A commit is known to have succeeded when the next transaction starts or the watch ends
 * without a rollback in between. Saves are not watched (a save's own preupdate hook,
 * old_row_hook, tells whether it replaced a row: kv->replaced_row).
 *
 * Needs the preupdate hook (kv->use_old_row_hook tells whether the linked SQLite has it);
 * without it the watch sees nothing. Thread safety: none, as for yyc_kv.
 */
#include "kv_internal.h"

#include <stdlib.h>
#include <string.h>

/* A commit seen and no rollback since: its keys are committed. */
static void settle(yyc__kv_removal_watch *w) {
    if (w->commit_seen) {
        w->committed = w->at_commit;
        w->commit_seen = false;
    }
}

static void drop_from(yyc__kv_removal_watch *w, size_t from) {
    for (size_t i = from; i < w->n; i++) free(w->keys[i]);
    w->n = from;
}

static void watch_preupdate(void *ctx, sqlite3 *db, int op, const char *db_name, const char *table,
                            sqlite3_int64 old_rowid, sqlite3_int64 new_rowid) {
    yyc_kv *kv = ctx;
    yyc__kv_removal_watch *w = &kv->watch;
    (void)old_rowid;
    (void)new_rowid;
    if (op != SQLITE_DELETE || strcmp(db_name, "main") != 0 || strcmp(table, "manifest") != 0)
        return;
    settle(w); /* a new transaction: the one before it committed */
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

static int watch_commit(void *ctx) {
    yyc__kv_removal_watch *w = &((yyc_kv *)ctx)->watch;
    w->at_commit = w->n;
    w->commit_seen = true;
    return 0; /* the commit goes ahead */
}

static void watch_rollback(void *ctx) {
    yyc__kv_removal_watch *w = &((yyc_kv *)ctx)->watch;
    w->commit_seen = false; /* (a commit that failed is rolled back) */
    drop_from(w, w->committed);
}

void yyc__kv_watch_attach(yyc_kv *kv) {
    if (!kv->watch.on || !kv->db || !kv->use_old_row_hook) return;
    sqlite3_preupdate_hook(kv->db, watch_preupdate, kv);
    sqlite3_commit_hook(kv->db, watch_commit, kv);
    sqlite3_rollback_hook(kv->db, watch_rollback, kv);
}

void yyc__kv_watch_removals(yyc_kv *kv) {
    yyc__kv_removal_watch *w = &kv->watch;
    assert(!w->on && w->n == 0);
    w->on = true;
    w->committed = w->at_commit = 0;
    w->commit_seen = w->lost = false;
    yyc__kv_watch_attach(kv);
}

size_t yyc__kv_unwatch_removals(yyc_kv *kv, char ***keys, bool *lost) {
    yyc__kv_removal_watch *w = &kv->watch;
    assert(w->on);
    if (kv->db && kv->use_old_row_hook) {
        sqlite3_preupdate_hook(kv->db, NULL, NULL);
        sqlite3_commit_hook(kv->db, NULL, NULL);
        sqlite3_rollback_hook(kv->db, NULL, NULL);
    }
    /* Outside any transaction now: a commit seen and not rolled back has succeeded. */
    if (kv->db && !sqlite3_get_autocommit(kv->db)) w->commit_seen = false;
    settle(w);
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
