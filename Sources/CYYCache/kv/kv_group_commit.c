/*
 * kv_group_commit.c - several writes of a yyc_kv in one transaction: the disk cache's group
 * commit (yyc__kv_save_each: each write succeeds or fails by itself) and its deferred batches
 * (yyc__kv_apply_batch: all or nothing).
 *
 * One commit costs SQLite far more than one row (the WAL frame, the wal-index, the locks), so
 * writes that arrive together share one. The rules of a single save still hold inside the
 * transaction: the whole transaction runs under the folder flock; a file value is placed under
 * a fresh name before its row names it; the file a row named before is deleted only after the
 * commit (kv->batch collects them); a rollback deletes the files the transaction placed (no
 * row names them then) and leaves the previous rows and files as they were.
 *
 * A write that fails in the group commit: a statement that fails inside a transaction leaves
 * the transaction open for most errors, but its half-done effects (an INSERT OR REPLACE that
 * deleted the old row, say) must not be committed with the others. So the whole transaction is
 * rolled back (the rollback hook drops its counted changes, batch_end its placed files), the
 * failed write keeps its error, and the others are tried together again without it: a failure
 * costs one transaction more, and the writes that do not fail pay no SAVEPOINT and RELEASE
 * each (two statements per write, a tenth of a shared commit of two small writes). For the
 * errors after which SQLite rolls the whole transaction back itself (a full disk, I/O errors)
 * the failed write is dropped the same way; for a COMMIT that fails, the writes that had not
 * failed by themselves are done again one by one, so no write fails because of another one.
 *
 * Owner: the caller's thread, like the rest of the yyc_kv (disk_cache.c's mutex serialises it).
 */
#include "kv/kv_internal.h"

#include "kv/kv_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SQL_BEGIN "begin immediate;"
#define SQL_COMMIT "commit;"

/* Runs one fixed statement through the statement cache (after a db_check). */
static int exec_checked(yyc_kv *kv, const char *sql, const char *what) {
    sqlite3_stmt *s;
    int rc = yyc__kv_prepare_checked(kv, sql, &s);
    if (rc != YYC_OK) return rc;
    return yyc__kv_step_done(kv, s, what);
}

/* Whether the batch's transaction is still open and usable. */
static bool txn_open(const yyc_kv *kv) {
    return kv->db && !kv->rebuild_pending && !sqlite3_get_autocommit(kv->db);
}

/* Takes the folder lock and opens the write transaction with room for n writes' files. On
 * failure nothing is held or changed; *lock_failed tells whether the folder lock failed. */
static int batch_begin(yyc_kv *kv, yyc__kv_batch *b, size_t n, bool *lock_failed) {
    *lock_failed = false;
    *b = (yyc__kv_batch){.cap = n};
    b->old = calloc(n, sizeof *b->old);
    b->placed = calloc(n, sizeof *b->placed);
    int rc = YYC_OK;
    if (!b->old || !b->placed) rc = yyc__kv_report(kv, true, YYC_ENOMEM, 0, ENOMEM, "batch");
    if (rc == YYC_OK) *lock_failed = (rc = yyc__kv_folder_lock(kv)) != YYC_OK;
    if (rc != YYC_OK) {
        free(b->old);
        free(b->placed);
        return rc;
    }
    rc = yyc__kv_db_check(kv);
    if (rc == YYC_OK) rc = exec_checked(kv, SQL_BEGIN, "begin batch");
    if (rc != YYC_OK) {
        if (kv->db && !sqlite3_get_autocommit(kv->db))
            sqlite3_exec(kv->db, "rollback;", NULL, NULL, NULL);
        yyc__kv_folder_unlock(kv);
        free(b->old);
        free(b->placed);
        return rc;
    }
    kv->batch = b;
    return YYC_OK;
}

/* Commits (commit true and the transaction usable) or rolls back, then deletes the files the
 * outcome made unreferenced, and releases the folder lock. Returns YYC_OK when committed. */
static int batch_end(yyc_kv *kv, yyc__kv_batch *b, bool commit) {
    assert(kv->batch == b && kv->lock_depth > 0);
    int rc = YYC_EIO; /* (not committed: the caller's error stands) */
    if (commit && txn_open(kv)) rc = exec_checked(kv, SQL_COMMIT, "commit batch");
    kv->batch = NULL;
    if (rc == YYC_OK) {
        for (size_t i = 0; i < b->n_old; i++) yyc__kv_file_ref_delete(kv, &b->old[i]);
    } else {
        if (kv->db && !sqlite3_get_autocommit(kv->db))
            sqlite3_exec(kv->db, "rollback;", NULL, NULL, NULL);
        for (size_t i = 0; i < b->n_old; i++) yyc__kv_file_ref_forget(&b->old[i]);
        for (size_t i = 0; i < b->n_placed; i++)
            yyc__kv_drop_unsaved_file_locked(kv, b->placed[i].key, b->placed[i].name);
    }
    yyc__kv_folder_unlock(kv);
    free(b->old);
    free(b->placed);
    return rc;
}

/* Inside the transaction: deletes key's row; its file goes after the commit. */
static int remove_in_batch(yyc_kv *kv, const char *key) {
    if (!key || !*key) return YYC_OK;
    sqlite3_stmt *s, *del;
    int rc = yyc__kv_prepare_checked(kv, SQL_ROWS_KEY, &s);
    if (rc != YYC_OK) return rc;
    yyc__kv_bind_key(s, 1, key);
    int src = sqlite3_step(s);
    int64_t rowid = 0;
    file_ref f = {0};
    if (src == SQLITE_ROW) {
        rowid = sqlite3_column_int64(s, 0);
        const char *name = (const char *)sqlite3_column_text(s, 1);
        if (yyc_kv_filename_is_valid(name)) yyc__kv_file_ref_capture(kv, name, &f);
    }
    yyc__stmt_done(s);
    if (src == SQLITE_DONE) return YYC_OK;
    if (src != SQLITE_ROW) return yyc__kv_sqlite_fail(kv, src, "list row to remove");
    rc = yyc__kv_prepare_checked(kv, SQL_DELETE_ROWID, &del);
    if (rc == YYC_OK) {
        sqlite3_bind_int64(del, 1, rowid);
        rc = yyc__kv_step_done(kv, del, "remove row");
    }
    if (rc == YYC_OK) yyc__kv_delete_after_commit(kv, &f);
    else yyc__kv_file_ref_forget(&f);
    return rc;
}

/* A save of w with its expiry; w->replaced tells whether it replaced a row of its key. */
static int save_one(yyc_kv *kv, yyc__kv_write *w) {
    w->replaced = false;
    int rc = yyc__kv_save_with_expiry(kv, w->key, w->value, w->len, w->filename, w->extended,
                                      w->extended_len, w->expiry_ms);
    w->replaced = rc == YYC_OK && yyc__kv_last_save_replaced(kv);
    return rc;
}

/* One write inside the transaction. */
static int write_in_batch(yyc_kv *kv, yyc__kv_write *w) {
    if (w->remove) return remove_in_batch(kv, w->key);
    return save_one(kv, w);
}

/* One write alone, in its own transaction. */
static void write_alone(yyc_kv *kv, yyc__kv_write *w) {
    w->status = w->remove ? yyc_kv_remove(kv, w->key) : save_one(kv, w);
    if (w->status != YYC_OK && w->error) yyc_last_error(w->error);
}

static void set_status(yyc__kv_write *w, int status) {
    w->status = status;
    if (status != YYC_OK && w->error) yyc_last_error(w->error);
}

/* One try of the group commit: writes[0..m) in one transaction, in order, until one fails.
 * Returns m when all of them were written and committed; the index of the write that failed
 * (the transaction rolled back; that write keeps its status, the others are as if not tried); or
 * SIZE_MAX when nothing was committed for another reason (BEGIN or COMMIT failed, SQLite rolled
 * the transaction back after a write that succeeded, the folder lock failed: *lock_failed).
 * Writes [0..i) that were written have status YYC_OK (committed only when m is returned). */
static size_t try_together(yyc_kv *kv, yyc__kv_write *const *writes, size_t m, int *begin_rc,
                           bool *lock_failed) {
    yyc__kv_batch b;
    *begin_rc = batch_begin(kv, &b, m, lock_failed);
    if (*begin_rc != YYC_OK) return SIZE_MAX;
    size_t i = 0;
    bool usable = true;
    for (; i < m && usable; i++) {
        yyc__kv_write *w = writes[i];
        set_status(w, write_in_batch(kv, w));
        if (w->status != YYC_OK) break;
        usable = txn_open(kv); /* (false: SQLite rolled it back) */
    }
    bool all = i == m && usable;
    int end = batch_end(kv, &b, all);
    if (all && end == YYC_OK) return m;
    for (size_t j = 0; j < m; j++) writes[j]->replaced = false; /* (rolled back) */
    return all || usable == false ? SIZE_MAX : i;
}

size_t yyc__kv_save_each(yyc_kv *kv, yyc__kv_write *const *writes, size_t n) {
    /* The writes still to commit; each try that a write fails drops that write (it failed by
     * itself: it keeps its error) and tries the others together again. No SAVEPOINT per write:
     * the statements a batch needs are BEGIN, the writes and COMMIT. */
    yyc__kv_write **left = n > 1 ? malloc(n * sizeof *left) : NULL;
    size_t m = n, failed = 0;
    if (left) {
        memcpy(left, writes, n * sizeof *left);
        while (m > 1) {
            int begin_rc;
            bool lock_failed;
            size_t r = try_together(kv, left, m, &begin_rc, &lock_failed);
            if (r == m) {
                free(left);
                return failed;
            }
            if (lock_failed) { /* every write needed that lock now: each fails as alone */
                for (size_t i = 0; i < m; i++) set_status(left[i], begin_rc);
                free(left);
                return failed + m;
            }
            if (r == SIZE_MAX) break; /* the others go alone */
            failed++;
            memmove(&left[r], &left[r + 1], (m - r - 1) * sizeof *left);
            m--;
        }
    }
    yyc__kv_write *const *rest = left ? left : writes;
    for (size_t i = 0; i < m; i++) {
        write_alone(kv, rest[i]);
        failed += rest[i]->status != YYC_OK;
    }
    free(left);
    return failed;
}

int yyc__kv_apply_batch(yyc_kv *kv, yyc__kv_write *const *writes, size_t n) {
    if (n == 0) return YYC_OK;
    yyc__kv_batch b;
    bool lock_failed;
    int rc = batch_begin(kv, &b, n, &lock_failed);
    for (size_t i = 0; rc == YYC_OK && i < n; i++) {
        rc = write_in_batch(kv, writes[i]);
        if (rc == YYC_OK && !txn_open(kv))
            rc = yyc__kv_report(kv, true, YYC_EIO, 0, 0, "batch transaction rolled back");
    }
    if (kv->batch == &b) {
        int end = batch_end(kv, &b, rc == YYC_OK);
        if (rc == YYC_OK) rc = end;
    }
    yyc_error e;
    if (rc != YYC_OK) yyc_last_error(&e);
    for (size_t i = 0; i < n; i++) {
        if (rc != YYC_OK) writes[i]->replaced = false; /* (rolled back: nothing was replaced) */
        writes[i]->status = rc;
        if (rc != YYC_OK && writes[i]->error) *writes[i]->error = e;
    }
    return rc;
}
