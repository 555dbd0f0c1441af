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
 * Why SAVEPOINTs for the group commit: a statement that fails inside a transaction leaves the
 * transaction open for most errors, but its half-done effects (an INSERT OR REPLACE that deleted
 * the old row, say) would be committed with the others. ROLLBACK TO the write's own savepoint
 * undoes exactly that write. For the errors after which SQLite rolls the whole transaction back
 * itself (a full disk, I/O errors), and for a COMMIT that fails, the writes that had not failed
 * by themselves are done again one by one, so no write fails because of another one.
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
#define SQL_SAVEPOINT "savepoint yyc_write;"
#define SQL_RELEASE "release yyc_write;"
#define SQL_ROLLBACK_TO "rollback to yyc_write;"

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
    if (w->status != YYC_OK) yyc_last_error(&w->error);
}

static void set_status(yyc__kv_write *w, int status) {
    w->status = status;
    if (status != YYC_OK) yyc_last_error(&w->error);
}

size_t yyc__kv_save_each(yyc_kv *kv, yyc__kv_write *const *writes, size_t n) {
    size_t failed = 0;
    yyc__kv_batch b;
    bool lock_failed = false;
    int begin = n > 1 ? batch_begin(kv, &b, n, &lock_failed) : YYC_EINVAL;
    if (lock_failed) { /* every write needed that lock now: each fails as it would alone */
        for (size_t i = 0; i < n; i++) set_status(writes[i], begin);
        return n;
    }
    if (begin == YYC_OK) {
        size_t done = 0; /* writes[0..done) went through the transaction */
        bool usable = true;
        for (; done < n && usable; done++) {
            yyc__kv_write *w = writes[done];
            if (!txn_open(kv) || exec_checked(kv, SQL_SAVEPOINT, "savepoint") != YYC_OK) {
                usable = false;
                break;
            }
            yyc__kv_rows_mark(kv); /* (the totals and the watch follow the savepoint) */
            set_status(w, write_in_batch(kv, w));
            if (w->status != YYC_OK) w->replaced = false; /* (rolled back to its savepoint) */
            if (!txn_open(kv)) {
                usable = false; /* SQLite rolled the transaction back: w's error stands */
            } else if (w->status == YYC_OK) {
                usable = exec_checked(kv, SQL_RELEASE, "release savepoint") == YYC_OK;
            } else {
                usable = exec_checked(kv, SQL_ROLLBACK_TO, "roll back a write") == YYC_OK;
                if (usable) yyc__kv_rows_rewind(kv);
                usable = usable && exec_checked(kv, SQL_RELEASE, "release savepoint") == YYC_OK;
            }
            yyc__kv_rows_unmark(kv);
        }
        if (batch_end(kv, &b, usable) == YYC_OK) {
            for (size_t i = 0; i < n; i++) failed += writes[i]->status != YYC_OK;
            return failed;
        }
        /* Nothing committed: the writes that did not fail by themselves go again, alone. */
        for (size_t i = 0; i < n; i++) {
            yyc__kv_write *w = writes[i];
            w->replaced = false; /* (its save in the transaction was rolled back) */
            if (i >= done || w->status == YYC_OK) write_alone(kv, w);
            failed += w->status != YYC_OK;
        }
        return failed;
    }
    for (size_t i = 0; i < n; i++) {
        write_alone(kv, writes[i]);
        failed += writes[i]->status != YYC_OK;
    }
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
        if (rc != YYC_OK) writes[i]->error = e;
    }
    return rc;
}
