/*
 * kv_manifest.c - the KV storage's SQLite manifest connection: opening it (0600, never through a
 * link, WAL pragmas, the checksum columns, the yyc_cost_total aggregate, the schema check), the
 * lazy reopen (yyc__kv_db_check), the rebuild in place of a corrupt or foreign manifest, the
 * statement cache (yyc__kv_prepare*), the mapping of SQLite and errno failures to statuses and
 * their reporting, checkpoints and VACUUM.
 *
 * Owner: the caller's thread. The caller serialises every call on one yyc_kv (disk_cache.c's
 * mutex), and everything here touches only kv->db, kv->stmts and the reporting and reopen fields
 * of that yyc_kv (see struct yyc_kv in kv_internal.h). The rebuild in place and yyc__kv_vacuum
 * take the folder flock themselves (they change the manifest file for every process). The
 * connection is NOMUTEX: it is never used by two threads at once (the sweeps open their own).
 */
#include "kv/kv_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static int rebuild_in_place(yyc_kv *kv);
/* --- the manifest connection --- */

void yyc__kv_db_close(yyc_kv *kv) {
    if (!kv->db) return;
    yyc__kv_totals_reset(kv, false);
    yyc__kv_txn_reset(kv);
    yyc__kv_read_hold_detach(kv);
    yyc__kv_checkpoints_stop(kv);
    yyc__stmt_cache_clear(&kv->stmts);
    if (sqlite3_close(kv->db) != SQLITE_OK) {
        /* Only an ad-hoc statement left behind by a bug can cause this: finalize and retry. */
        sqlite3_stmt *s;
        while ((s = sqlite3_next_stmt(kv->db, NULL)) != NULL) sqlite3_finalize(s);
        sqlite3_close_v2(kv->db);
    }
    kv->db = NULL;
}

/* Whether the manifest has a checksum column (check_sql selects it), adding it (add_sql) when
 * missing. */
static bool ensure_crc_column(sqlite3 *db, const char *check_sql, const char *add_sql) {
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, check_sql, -1, &s, NULL);
    sqlite3_finalize(s);
    if (rc == SQLITE_OK) return true;
    if (sqlite3_exec(db, add_sql, NULL, NULL, NULL) == SQLITE_OK) return true;
    /* Another process may have added it meanwhile. */
    s = NULL;
    rc = sqlite3_prepare_v2(db, check_sql, -1, &s, NULL);
    sqlite3_finalize(s);
    return rc == SQLITE_OK;
}

/* The column numbers of key, filename and size in manifest (any order: the schema check only
 * names them; size -1 when missing). Returns false if key or filename is missing. */
/* Whether s contains the upper-case word w, in any case. */
static bool contains_ci(const char *s, const char *w) {
    size_t n = strlen(w);
    for (; *s; s++)
        if (sqlite3_strnicmp(s, w, (int)n) == 0) return true;
    return false;
}

/* Whether a column of declared type decl keeps the integers stored in it as integers: SQLite's
 * affinity rules (datatype3.html, 3.1), in their order: INTEGER, NUMERIC and BLOB affinity do;
 * TEXT and REAL affinity do not (REAL: a read returns a real). */
static bool keeps_integers(const char *decl) {
    if (!decl || !*decl) return true; /* (BLOB) */
    if (contains_ci(decl, "INT")) return true;
    if (contains_ci(decl, "CHAR") || contains_ci(decl, "CLOB") || contains_ci(decl, "TEXT"))
        return false;
    if (contains_ci(decl, "BLOB")) return true;
    return !(contains_ci(decl, "REAL") || contains_ci(decl, "FLOA") || contains_ci(decl, "DOUB"));
}

static bool find_manifest_columns(sqlite3 *db, int *key_col, int *name_col, int *size_col,
                                  bool *size_int) {
    *key_col = *name_col = *size_col = -1;
    *size_int = false;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "select * from manifest limit 0;", -1, &s, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return false;
    }
    for (int i = 0; i < sqlite3_column_count(s); i++) {
        const char *name = sqlite3_column_name(s, i);
        if (!name) continue;
        if (!sqlite3_stricmp(name, "key")) *key_col = i;
        if (!sqlite3_stricmp(name, "filename")) *name_col = i;
        if (!sqlite3_stricmp(name, "size")) {
            *size_col = i;
            *size_int = keeps_integers(sqlite3_column_decltype(s, i));
        }
    }
    sqlite3_finalize(s);
    return *key_col >= 0 && *name_col >= 0;
}

/* The aggregate yyc_cost_total(size): see kv_internal.h and kv_totals.c. */
static void cost_total_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    int64_t *sum = sqlite3_aggregate_context(ctx, sizeof *sum);
    if (!sum) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) return;
    int64_t v = sqlite3_value_int64(argv[0]);
    if (v > 0) *sum = *sum > INT64_MAX - v ? INT64_MAX : *sum + v;
}

static void cost_total_final(sqlite3_context *ctx) {
    int64_t *sum = sqlite3_aggregate_context(ctx, 0);
    sqlite3_result_int64(ctx, sum ? *sum : 0);
}

/* Runs a query of the schema that returns at most one row: SQLITE_ROW (a row), SQLITE_DONE
 * (none), or the error of the look-up. */
static int schema_query(sqlite3 *db, const char *sql, sqlite3_stmt **out) {
    int rc = sqlite3_prepare_v2(db, sql, -1, out, NULL);
    if (rc != SQLITE_OK) return rc;
    return sqlite3_step(*out);
}

/* Decides whether the manifest's schema is not YYKVStorage's (init_rc: the result of SQL_INIT):
 * *foreign, with what naming the offending object. Returns SQLITE_OK when decided, else the
 * SQLite error that kept it from looking (busy, out of memory, I/O: no verdict - a transient
 * failure must never get a healthy manifest rebuilt). */
static int check_foreign_schema(sqlite3 *db, int init_rc, bool *foreign, char *what, size_t size) {
    char init_error[120] = "";
    if (init_rc == SQLITE_ERROR) snprintf(init_error, sizeof init_error, "%s", sqlite3_errmsg(db));
    *foreign = false;
    sqlite3_stmt *s = NULL;
    int rc = schema_query(db,
                          "select type, name from sqlite_master where name = 'manifest' "
                          "collate nocase and type <> 'table' limit 1;",
                          &s);
    if (rc == SQLITE_ROW) {
        snprintf(what, size, "the %s named %s", (const char *)sqlite3_column_text(s, 0),
                 (const char *)sqlite3_column_text(s, 1));
        *foreign = true;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return rc;
    if (*foreign) return SQLITE_OK;
    s = NULL;
    rc = sqlite3_prepare_v2(db, SQL_SCHEMA_CHECK, -1, &s, NULL);
    sqlite3_finalize(s);
    if (rc == SQLITE_ERROR) { /* (no such table or column) */
        snprintf(what, size, "table manifest lacks YYKVStorage's columns");
        *foreign = true;
        return SQLITE_OK;
    }
    if (rc != SQLITE_OK) return rc;
    s = NULL;
    rc = schema_query(db,
                      "select 1 from pragma_table_info('manifest') where name in "
                      "('rowid', '_rowid_', 'oid') collate nocase;",
                      &s);
    sqlite3_finalize(s);
    if (rc == SQLITE_ROW) {
        snprintf(what, size, "table manifest has a column named rowid");
        *foreign = true;
        return SQLITE_OK;
    }
    if (rc != SQLITE_DONE) return rc;
    if (init_rc == SQLITE_ERROR) {
        snprintf(what, size, "%s", init_error);
        *foreign = true;
    }
    return SQLITE_OK;
}

/* Opens and initializes the manifest once. Returns YYC_OK or a recorded error; YYC_ECORRUPT
 * means the file is not a usable manifest (the caller rebuilds). */
static int db_open_once(yyc_kv *kv) {
#ifdef YYC_TESTING
    if (kv->fail_opens > 0) {
        kv->fail_opens--;
        return yyc__kv_report(kv, true, YYC_EIO, 0, 0, "open manifest: injected failure");
    }
#endif
    /* Create the manifest ourselves: 0600, and never through a link. SQLite gives the -wal and
     * -shm files the database file's permissions. */
    for (int attempt = 0;; attempt++) {
        int fd =
            openat(kv->root_fd, MANIFEST_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            close(fd);
            break;
        }
        int err = errno;
        if (err == ELOOP && attempt == 0 && unlinkat(kv->root_fd, MANIFEST_NAME, 0) == 0) {
            continue; /* a planted link: remove the link, never its target */
        }
        if (err == EISDIR)
            return yyc__kv_report(kv, true, YYC_ECORRUPT, 0, err, "manifest is a folder");
        return yyc__kv_errno_fail(kv, err, "create manifest");
    }
    /* Links planted as the -wal or -shm file would make every open fail (SQLite refuses them
     * with SQLITE_OPEN_NOFOLLOW): remove the links themselves, never their targets. */
    static const char *const side_files[] = {MANIFEST_NAME "-wal", MANIFEST_NAME "-shm"};
    for (size_t i = 0; i < sizeof side_files / sizeof *side_files; i++) {
        struct stat st;
        if (fstatat(kv->root_fd, side_files[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(st.st_mode))
            unlinkat(kv->root_fd, side_files[i], 0);
    }
    sqlite3 *db = NULL;
    /* NOMUTEX: the owner serialises every call (yyc_kv is single-threaded and yyc_diskcache
     * holds its mutex around each call), so SQLite's own mutexes would be pure overhead. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
#ifdef SQLITE_OPEN_NOFOLLOW
    flags |= SQLITE_OPEN_NOFOLLOW;
#endif
    int rc = sqlite3_open_v2(kv->db_path, &db, flags, NULL);
    if (rc != SQLITE_OK) {
        int sys = db ? sqlite3_system_errno(db) : 0;
        int ext = db ? sqlite3_extended_errcode(db) : rc;
        sqlite3_close(db);
        return yyc__kv_report(kv, true, yyc__kv_status_from_sqlite(kv, rc, sys), ext, sys,
                              "open manifest: %s", sqlite3_errstr(rc));
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, kv->busy_timeout_ms);
    rc = sqlite3_create_function_v2(db, "yyc_cost_total", 1,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, NULL,
                                    NULL, cost_total_step, cost_total_final, NULL);
    if (rc == SQLITE_OK) rc = yyc__kv_expiry_register_functions(kv, db);
    if (rc != SQLITE_OK) {
        sqlite3_close(db);
        return yyc__kv_report(kv, true, YYC_ENOMEM, rc, 0, "register the cost sum");
    }
    /* Switching a new database to WAL (or creating the table) while another process does the
     * same can fail with SQLITE_BUSY at once: SQLite skips the busy handler where waiting could
     * deadlock. The script is idempotent, so retry it until the busy timeout has passed. */
    double deadline = yyc__monotonic_now() + kv->busy_timeout_ms / 1000.0;
    for (unsigned attempt = 0;; attempt++) {
        rc = sqlite3_exec(db, SQL_INIT, NULL, NULL, NULL);
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
        if (yyc__monotonic_now() >= deadline) break;
        usleep(1000u + (attempt < 6 ? 1000u << attempt : 50000u)); /* 2 ms .. 51 ms */
    }
    if (rc == SQLITE_OK || rc == SQLITE_ERROR) {
        /* A foreign schema - a view, index or trigger named manifest, a table named manifest
         * without YYKVStorage's columns or with a column named rowid, or anything else that
         * makes the (valid, idempotent) script fail with SQLITE_ERROR - is as unusable as
         * garbage: reported as corrupt, so that the caller rebuilds it. */
        char what[160];
        bool foreign;
        int crc = check_foreign_schema(db, rc, &foreign, what, sizeof what);
        if (crc != SQLITE_OK) {
            int sys = sqlite3_system_errno(db);
            sqlite3_close(db);
            return yyc__kv_report(kv, true, yyc__kv_status_from_sqlite(kv, crc, sys), crc, sys,
                                  "check the manifest's schema: %s", sqlite3_errstr(crc));
        }
        if (foreign) {
            sqlite3_close(db);
            return yyc__kv_report(kv, true, YYC_ECORRUPT, SQLITE_ERROR, 0,
                                  "manifest has a foreign schema: %s", what);
        }
    }
    if (rc != SQLITE_OK) {
        int ext = sqlite3_extended_errcode(db);
        int sys = sqlite3_system_errno(db);
        sqlite3_close(db);
        return yyc__kv_report(kv, true, yyc__kv_status_from_sqlite(kv, rc, sys), ext, sys,
                              "initialize manifest: %s", sqlite3_errstr(rc));
    }
    /* Cap the WAL: after each checkpoint that lets it restart, SQLite truncates it to this
     * instead of keeping its high-water mark (per connection, not stored in the file). */
    sqlite3_exec(db, "pragma journal_size_limit = " WAL_LIMIT_TEXT ";", NULL, NULL, NULL);
    /* Deleted rows are zeroed where that costs no extra page writes (SQLite may be built with
     * SECURE_DELETE, which also rewrites every freed page): a delete then needs only a few WAL
     * frames, which matters most on a full disk (see delete_rows). */
    sqlite3_exec(db, "pragma secure_delete = fast;", NULL, NULL, NULL);
    yyc__kv_apply_page_cache(kv, db);
    if (yyc__kv_checkpoints_start(kv, db) != YYC_OK) {
        sqlite3_close(db);
        return yyc__kv_report(kv, true, YYC_ENOMEM, 0, 0, "start the checkpoints");
    }
    kv->has_crc = ensure_crc_column(db, SQL_CRC_CHECK, SQL_CRC_ADD) &&
                  ensure_crc_column(db, SQL_EXT_CRC_CHECK, SQL_EXT_CRC_ADD) &&
                  yyc__kv_expiry_ensure_column(db);
#ifdef YYC_TESTING
    bool lookup_forced = kv->no_old_row_hook;
#else
    bool lookup_forced = false;
#endif
    bool columns = find_manifest_columns(db, &kv->col_key, &kv->col_filename, &kv->col_size,
                                         &kv->size_keeps_integers);
    kv->use_old_row_hook = !lookup_forced && yyc__kv_row_hooks_available() && columns;
    kv->db = db;
    yyc__kv_install_row_hooks(kv, db);
    yyc__kv_totals_reset(kv, yyc__kv_row_hooks_available() && columns && kv->col_size >= 0);
    yyc__stmt_cache_init(&kv->stmts, db);
    kv->rebuild_pending = false;
    yyc__kv_read_hold_attach(kv);
    return YYC_OK;
}

/* Opens the manifest; a corrupt one (and only a corrupt one) is rebuilt empty in place
 * (rebuild_in_place), with the data it described, and the event is reported. */
int yyc__kv_db_open_or_rebuild(yyc_kv *kv) {
    kv->probing = true;
    int rc = db_open_once(kv);
    kv->probing = false;
    if (rc != YYC_ECORRUPT) return rc;
    yyc_error first;
    yyc_last_error(&first);
    rc = rebuild_in_place(kv);
    if (rc == YYC_OK) rc = db_open_once(kv);
    if (rc != YYC_OK) return rc;
    yyc__kv_report(kv, true, YYC_ECORRUPT, first.sqlite_code, first.sys_errno,
                   "manifest was corrupt (%s): rebuilt empty in place", first.message);
    return YYC_OK;
}

/* Every operation starts here (spec 2.3): an open connection proceeds; a closed one is reopened
 * at most max_open_retries times in a row, retry_interval seconds apart. */
int yyc__kv_db_check(yyc_kv *kv) {
    if (kv->read_held && !kv->keep_read) yyc__kv_end_read(kv); /* (anything but a pure read) */
    if (kv->rebuild_pending) {
        /* SQLite reported corruption on the open manifest: it cannot be trusted any more (its
         * first page may still look fine, so probing it again would not tell). */
        kv->rebuild_pending = false;
        kv->open_error_count = 0;
        kv->last_open_error_time = 0;
        int rc = rebuild_in_place(kv);
        if (rc != YYC_OK) {
            kv->rebuild_pending = true; /* (busy, say: the next call tries again) */
            return rc;
        }
        yyc__kv_report(kv, false, YYC_ECORRUPT, SQLITE_CORRUPT, 0,
                       "manifest was corrupt: rebuilt empty in place");
    }
    if (kv->data_fd < 0) {
        int err = yyc__kv_open_data_dir(kv);
        if (err) return yyc__kv_errno_fail(kv, err, "open data folder");
    }
    if (kv->db) return YYC_OK;
    double now = yyc__monotonic_now();
    if (kv->open_error_count >= kv->max_open_retries ||
        (kv->open_error_count > 0 && now - kv->last_open_error_time < kv->retry_interval)) {
        return yyc__kv_report(kv, true, YYC_ECLOSED, 0, 0, "manifest closed: reopen limit reached");
    }
    int rc = yyc__kv_db_open_or_rebuild(kv);
    if (rc != YYC_OK) {
        kv->open_error_count++;
        kv->last_open_error_time = yyc__monotonic_now();
        return rc;
    }
    kv->open_error_count = 0;
    kv->last_open_error_time = 0;
    return YYC_OK;
}

int yyc__kv_prepare(yyc_kv *kv, const char *sql, sqlite3_stmt **out) {
    *out = NULL;
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK) return rc;
    return yyc__kv_prepare_checked(kv, sql, out);
}

/* Prepares sql_crc when the manifest has the checksum columns, else sql_plain. One db_check:
 * it runs first because it may (re)open the manifest, which sets has_crc. */
int yyc__kv_prepare2(yyc_kv *kv, const char *sql_plain, const char *sql_crc, sqlite3_stmt **out,
                     bool *with_crc) {
    *out = NULL;
    int rc = yyc__kv_db_check(kv);
    if (rc != YYC_OK) return rc;
    *with_crc = kv->has_crc;
    return yyc__kv_prepare_checked(kv, *with_crc ? sql_crc : sql_plain, out);
}

/* Rebuilds a corrupt (or foreign) manifest empty, in place, under the folder lock: SQLite's
 * reset (SQLITE_DBCONFIG_RESET_DATABASE, then VACUUM) empties the file itself instead of
 * unlinking it as YYKVStorage's _reset did, so other connections (other processes) keep the live
 * manifest: their later writes land in it, never in an unlinked file. Then data/ goes to the
 * trash (emptied in the background). The own connection is closed first; the caller reopens it
 * (db_open_once: the table is created again). Returns YYC_OK or a recorded error (the manifest
 * and data/ are then left as they were). */
static int rebuild_in_place(yyc_kv *kv) {
    yyc__kv_db_close(kv);
    int lrc = yyc__kv_folder_lock(kv);
    if (lrc != YYC_OK) return lrc; /* (reported; nothing changed) */
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
#ifdef SQLITE_OPEN_NOFOLLOW
    flags |= SQLITE_OPEN_NOFOLLOW;
#endif
    int rc = sqlite3_open_v2(kv->db_path, &db, flags, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_extended_result_codes(db, 1);
        sqlite3_busy_timeout(db, kv->busy_timeout_ms);
        /* A first read joins the WAL other connections have open (a reset before any read takes
         * the file for a rollback-journal database and waits for an exclusive lock in vain),
         * and gives the schema cookie they may have cached (garbage: none, and nobody can). */
        int64_t cookie = 0;
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db, "pragma schema_version;", -1, &s, NULL) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW)
            cookie = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        rc = sqlite3_db_config(db, SQLITE_DBCONFIG_RESET_DATABASE, 1, NULL);
        if (rc == SQLITE_OK) rc = sqlite3_exec(db, "vacuum;", NULL, NULL, NULL);
        sqlite3_db_config(db, SQLITE_DBCONFIG_RESET_DATABASE, 0, NULL);
        /* The reset restarts the cookie low: move it past every value other connections may
         * have cached, or the first one that comes back to the old value would take its stale
         * schema for the new one. Then the table at once (other readers do not wait for us). */
        char sql[96];
        snprintf(sql, sizeof sql, "pragma schema_version = %lld;", (long long)cookie + 100);
        if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
        if (rc == SQLITE_OK) rc = sqlite3_exec(db, SQL_INIT, NULL, NULL, NULL);
    }
    int status = YYC_OK;
    if (rc != SQLITE_OK) {
        int ext = db ? sqlite3_extended_errcode(db) : rc;
        int sys = db ? sqlite3_system_errno(db) : 0;
        int code = yyc__kv_status_from_sqlite(kv, rc, sys);
        /* Still unreadable after the reset (a folder in its place...): not a database at all. */
        status = yyc__kv_report(kv, true, code == YYC_ESQLITE ? YYC_ECORRUPT : code, ext, sys,
                                "rebuild manifest in place: %s", sqlite3_errstr(rc));
    }
    sqlite3_close(db);
    if (status == YYC_OK) yyc__kv_move_data_to_trash(kv, false);
    yyc__kv_folder_unlock(kv);
    if (status == YYC_OK) yyc__kv_schedule_trash_empty(kv, false);
    return status;
}

/* Gives the manifest's space back: VACUUM, then a truncating checkpoint (the WAL goes back to
 * zero bytes when no other connection reads). Best effort (another process reading may
 * postpone either); returns the VACUUM's status. */
int yyc__kv_compact(yyc_kv *kv) {
    if (!kv->db) return YYC_ECLOSED;
    yyc__kv_end_read(kv);
    int rc = sqlite3_exec(kv->db, "vacuum;", NULL, NULL, NULL);
    int status = rc == SQLITE_OK ? YYC_OK : yyc__kv_sqlite_fail(kv, rc, "vacuum");
    yyc__kv_checkpoints_wait(kv);
    sqlite3_wal_checkpoint_v2(kv->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    return status;
}

void yyc__kv_set_busy_timeout(yyc_kv *kv, int ms) {
    kv->busy_timeout_ms = ms;
    if (kv->db) sqlite3_busy_timeout(kv->db, ms);
}

int yyc__kv_wal_size(yyc_kv *kv, int64_t *out) {
    if (YYC__MISUSE(kv == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = 0;
    struct stat st;
    if (fstatat(kv->root_fd, MANIFEST_NAME "-wal", &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return YYC_OK;
        return yyc__kv_errno_fail(kv, errno, "stat the WAL");
    }
    *out = S_ISREG(st.st_mode) ? (int64_t)st.st_size : 0;
    return YYC_OK;
}

int yyc__kv_vacuum(yyc_kv *kv) {
    if (YYC__MISUSE(kv == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "storage is NULL");
    int rc = yyc__kv_folder_lock(kv);
    if (rc != YYC_OK) return rc;
    rc = yyc__kv_db_check(kv);
    if (rc == YYC_OK) rc = yyc__kv_compact(kv);
    yyc__kv_folder_unlock(kv);
    return rc;
}

bool yyc__kv_is_open(const yyc_kv *kv) { return kv->db != NULL; }

#ifdef YYC_TESTING

void yyc__kv_set_reopen_policy(yyc_kv *kv, int max_tries, double interval_seconds) {
    kv->max_open_retries = max_tries;
    kv->retry_interval = interval_seconds;
}

void yyc__kv_fail_next_opens(yyc_kv *kv, int n) { kv->fail_opens = n; }

void yyc__kv_close_connection(yyc_kv *kv) { yyc__kv_db_close(kv); }

bool yyc__kv_set_old_row_hook(yyc_kv *kv, bool on) {
    kv->no_old_row_hook = !on;
    kv->use_old_row_hook = on && kv->db && yyc__kv_row_hooks_available() &&
                           find_manifest_columns(kv->db, &kv->col_key, &kv->col_filename,
                                                 &kv->col_size, &kv->size_keeps_integers);
    return kv->use_old_row_hook;
}
#endif /* YYC_TESTING */
