/*
 * folder.c - the inspector's changes made outside the library, under the library's folder lock:
 * verify --repair and vacuum.
 *
 * The folder protocol (kv_storage.c, folder_lock): every process using a cache folder holds an
 * exclusive flock on the folder around each change of a row and of a data file. Here it is
 * taken on our own descriptor of the folder, waiting at most CLI_LOCK_TIMEOUT_MS, and held for
 * one problem at a time, so live writers wait for one unlink, not for the whole repair. Under
 * it, data/ is opened again (O_DIRECTORY|O_NOFOLLOW) and every decision is taken again from the
 * live manifest and that descriptor, because what the scan saw may be stale by then; every file
 * operation is an *at() call relative to it and never follows a link. The library is not
 * called while the lock is held: a yyc_kv takes the same flock on its own descriptor, so it
 * would wait for us.
 *
 * Rows are removed with SQLite directly (by rowid, in one write transaction that reads the row
 * again), because no library call removes "this row, if it is still the broken one".
 *
 * Single-threaded, like the whole inspector.
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Deepest folder nesting a stray folder's removal descends into. */
#define MAX_TREE_DEPTH 64

/* ---- the folder lock ---- */

static double monotonic_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Takes the folder lock on root_fd, waiting at most CLI_LOCK_TIMEOUT_MS. Returns 0 or an errno
 * value (EWOULDBLOCK: another process held it all that time). */
static int lock_folder(int root_fd) {
    double deadline = monotonic_seconds() + CLI_LOCK_TIMEOUT_MS / 1000.0;
    const struct timespec pause = {0, 2 * 1000 * 1000};
    for (;;) {
        if (flock(root_fd, LOCK_EX | LOCK_NB) == 0) return 0;
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK || monotonic_seconds() >= deadline) return errno;
        nanosleep(&pause, NULL);
    }
}

static void unlock_folder(int root_fd) { flock(root_fd, LOCK_UN); }

static const char *lock_failure(int err) {
    return err == EWOULDBLOCK ? "another process held the folder lock for 5 s" : strerror(err);
}

/* ---- the manifest, read-write ---- */

/* path/manifest.sqlite opened read-write (never created, never through a link), or NULL with the
 * error printed. */
static sqlite3 *open_manifest_rw(const char *path) {
    size_t n = strlen(path) + sizeof "/manifest.sqlite";
    char *db_path = malloc(n);
    if (!db_path) {
        cli_error(path, "out of memory");
        return NULL;
    }
    snprintf(db_path, n, "%s/manifest.sqlite", path);
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE;
#ifdef SQLITE_OPEN_NOFOLLOW
    flags |= SQLITE_OPEN_NOFOLLOW;
#endif
    int rc = sqlite3_open_v2(db_path, &db, flags, NULL);
    free(db_path);
    if (rc != SQLITE_OK) {
        cli_error(path, "cannot open manifest.sqlite for writing: %s",
                  db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, CLI_LOCK_TIMEOUT_MS);
    return db;
}

/* Whether a row names the file `name` now (compared as the library reads file names: as text,
 * whatever the column's type): 1 yes, 0 no, -1 error. */
static int row_names_file(sqlite3 *db, const char *name) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM manifest WHERE CAST(filename AS TEXT) = ?1 LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* ---- outcomes ---- */

static void resolved(cli_problem *p, const char *why) {
    p->outcome = REPAIR_RESOLVED;
    p->reason = why;
}

static void not_fixed(cli_problem *p, const char *why) {
    p->outcome = REPAIR_NOT_FIXED;
    p->reason = why;
}

/* ---- stray entries of data/ ---- */

/* Removes dir_fd/name without following a link: a file or a link is unlinked, a folder emptied
 * recursively (up to MAX_TREE_DEPTH levels) and removed. Returns 0 or the first errno value. */
static int remove_tree_at(int dir_fd, const char *name, int depth) {
    if (unlinkat(dir_fd, name, 0) == 0) return 0;
    if (errno != EISDIR) return errno;
    if (depth >= MAX_TREE_DEPTH) return ELOOP;
    int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int err = errno;
        close(fd);
        return err;
    }
    int first = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        int err = remove_tree_at(dirfd(d), e->d_name, depth + 1);
        if (err && err != ENOENT && !first) first = err;
    }
    closedir(d);
    if (unlinkat(dir_fd, name, AT_REMOVEDIR) != 0 && !first) first = errno;
    return first;
}

static void repair_stray(sqlite3 *db, int data_fd, cli_problem *p) {
    if (data_fd < 0) {
        not_fixed(p, "data/ is not a folder now (not followed)");
        return;
    }
    const char *name = p->stray_name;
    struct stat st;
    if (fstatat(data_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) resolved(p, "gone meanwhile");
        else not_fixed(p, strerror(errno));
        return;
    }
    if (strncmp(name, CLI_TEMP_PREFIX, strlen(CLI_TEMP_PREFIX)) == 0 &&
        time(NULL) - st.st_mtime < CLI_TEMP_GRACE_SECONDS) {
        resolved(p, "a temporary file of a write in progress now");
        return;
    }
    int named = row_names_file(db, name);
    if (named != 0) {
        if (named < 0) not_fixed(p, "cannot read manifest.sqlite");
        else resolved(p, "a row names it now");
        return;
    }
    int err = S_ISDIR(st.st_mode) ? remove_tree_at(data_fd, name, 0)
                                  : (unlinkat(data_fd, name, 0) == 0 ? 0 : errno);
    if (err == 0) p->outcome = REPAIR_DELETED;
    else if (err == ENOENT) resolved(p, "gone meanwhile");
    else not_fixed(p, strerror(err));
}

/* ---- rows ---- */

static bool same_text(const char *a, size_t a_len, const unsigned char *b, size_t b_len) {
    if (!a || !b) return !a && !b;
    return a_len == b_len && memcmp(a, b, a_len) == 0;
}

static int exec(sqlite3 *db, const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL); }

/* Inside the write transaction: whether the row is still the one the scan saw and still broken
 * (*drop_file: its file exists with the wrong length). Returns SQLITE_ROW (broken),
 * SQLITE_DONE (resolved, reason set) or an SQLite error. */
static int recheck_row(sqlite3 *db, int data_fd, int data_err, cli_problem *p, bool *drop_file) {
    const cli_row *r = p->row;
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT key, filename, size, length(CAST(inline_data AS BLOB))"
                                " FROM manifest WHERE rowid = ?1",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) return rc;
    sqlite3_bind_int64(st, 1, r->rowid);
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        if (rc == SQLITE_DONE) resolved(p, "the row is gone");
        return rc;
    }
    const unsigned char *key = sqlite3_column_text(st, 0);
    size_t key_len = (size_t)sqlite3_column_bytes(st, 0);
    const unsigned char *name = sqlite3_column_text(st, 1);
    size_t name_len = (size_t)sqlite3_column_bytes(st, 1);
    if (name && name_len == 0) name = NULL; /* empty file name: inline, as the scan reads it */
    int64_t size = sqlite3_column_int64(st, 2), inline_len = sqlite3_column_int64(st, 3);
    bool same = same_text(r->key, r->key_len, key, key_len) &&
                same_text(r->filename, r->filename_len, name, name_len) && size == r->size;
    sqlite3_finalize(st);
    *drop_file = false;
    if (!same) {
        resolved(p, "the row changed meanwhile");
        return SQLITE_DONE;
    }
    if (!r->filename) {
        if (inline_len != size) return SQLITE_ROW;
        resolved(p, "the inline data has the right length now");
        return SQLITE_DONE;
    }
    if (data_fd < 0 && data_err != ENOENT) {
        not_fixed(p, "data/ is not a folder now (not followed)");
        return SQLITE_DONE;
    }
    struct stat fst;
    if (data_fd < 0 || fstatat(data_fd, r->filename, &fst, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(fst.st_mode))
        return SQLITE_ROW; /* the file is missing (as the library sees it) */
    if ((int64_t)fst.st_size != size) {
        *drop_file = true;
        return SQLITE_ROW;
    }
    resolved(p, "the file is there with the right length now");
    return SQLITE_DONE;
}

static void repair_row(sqlite3 *db, int data_fd, int data_err, cli_problem *p) {
    int rc = exec(db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK) {
        not_fixed(p, sqlite3_errstr(rc));
        return;
    }
    bool drop_file = false;
    rc = recheck_row(db, data_fd, data_err, p, &drop_file);
    if (rc == SQLITE_ROW) {
        sqlite3_stmt *st;
        rc = sqlite3_prepare_v2(db, "DELETE FROM manifest WHERE rowid = ?1", -1, &st, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, p->row->rowid);
            rc = sqlite3_step(st);
            sqlite3_finalize(st);
        }
        if (rc == SQLITE_DONE) rc = exec(db, "COMMIT");
        if (rc != SQLITE_OK) {
            exec(db, "ROLLBACK");
            {
                not_fixed(p, sqlite3_errstr(rc));
                return;
            }
        }
        p->outcome = REPAIR_ROW_REMOVED;
        /* The library drops a file of the wrong length with its row; still under the lock, so
         * no save can have named it meanwhile, but another row may always have named it too. */
        if (drop_file && row_names_file(db, p->row->filename) == 0)
            unlinkat(data_fd, p->row->filename, 0);
        return;
    }
    exec(db, "ROLLBACK");
    if (rc != SQLITE_DONE) not_fixed(p, sqlite3_errstr(rc));
}

/* ---- data/ itself ---- */

/* data/ was a link or a file: remove that entry (never its target) and make data/ an empty
 * folder, as the library does when it finds one. */
static void repair_data_folder(int root_fd, int *data_fd, cli_problem *p) {
    if (*data_fd >= 0) {
        resolved(p, "data/ is a folder now");
        return;
    }
    struct stat st;
    if (fstatat(root_fd, "data", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
        unlinkat(root_fd, "data", 0) != 0) {
        not_fixed(p, strerror(errno));
        return;
    }
    if (mkdirat(root_fd, "data", 0700) != 0 && errno != EEXIST) {
        not_fixed(p, strerror(errno));
        return;
    }
    *data_fd = openat(root_fd, "data", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*data_fd < 0) {
        not_fixed(p, strerror(errno));
        return;
    }
    p->outcome = REPAIR_REPLACED;
}

/* ---- verify --repair ---- */

bool repair_problems(const char *path, cli_verify *v) {
    int root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        cli_error(path, "%s", strerror(errno));
        return false;
    }
    sqlite3 *db = open_manifest_rw(path);
    if (!db) {
        close(root_fd);
        return false;
    }
    int lock_err = 0;
    for (size_t i = 0; i < v->problem_count; i++) {
        cli_problem *p = &v->problems[i];
        if (p->kind == PROBLEM_INVALID_FILENAME) {
            not_fixed(p, "the file name is not a single path component: fix it by hand");
            continue;
        }
        if (lock_err == 0) lock_err = lock_folder(root_fd);
        if (lock_err != 0) { /* waited once already: the rest are not fixed either */
            not_fixed(p, lock_failure(lock_err));
            continue;
        }
        int data_fd = openat(root_fd, "data", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int data_err = data_fd < 0 ? errno : 0;
        switch (p->kind) {
        case PROBLEM_DATA_NOT_FOLDER: repair_data_folder(root_fd, &data_fd, p); break;
        case PROBLEM_STRAY_FILE: repair_stray(db, data_fd, p); break;
        case PROBLEM_MISSING_FILE:
        case PROBLEM_SIZE_MISMATCH: repair_row(db, data_fd, data_err, p); break;
        case PROBLEM_INVALID_FILENAME: break;
        }
        if (data_fd >= 0) close(data_fd);
        unlock_folder(root_fd);
    }
    sqlite3_close(db);
    close(root_fd);
    return true;
}

/* ---- vacuum ---- */

bool vacuum_manifest(const char *path, cli_vacuum_sizes *out) {
    memset(out, 0, sizeof *out);
    int root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        cli_error(path, "%s", strerror(errno));
        return false;
    }
    out->manifest_before = cli_file_size_at(root_fd, "manifest.sqlite");
    out->wal_before = cli_file_size_at(root_fd, "manifest.sqlite-wal");
    int err = lock_folder(root_fd);
    if (err != 0) {
        cli_error(path, "cannot vacuum: %s", lock_failure(err));
        close(root_fd);
        return false;
    }
    sqlite3 *db = open_manifest_rw(path);
    bool ok = db != NULL;
    if (ok) {
        int rc = exec(db, "VACUUM");
        if (rc != SQLITE_OK) {
            cli_error(path, "cannot vacuum manifest.sqlite: %s", sqlite3_errmsg(db));
            ok = false;
        } else {
            /* VACUUM wrote the whole new database into the WAL: copy it back and empty the
             * WAL now. A reader in another process can hold part of it back (SQLITE_BUSY). */
            int log = 0, done = 0;
            rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &done);
            out->wal_kept = rc == SQLITE_BUSY || (rc == SQLITE_OK && log > 0);
        }
        sqlite3_close(db);
    }
    unlock_folder(root_fd);
    out->manifest_after = cli_file_size_at(root_fd, "manifest.sqlite");
    out->wal_after = cli_file_size_at(root_fd, "manifest.sqlite-wal");
    close(root_fd);
    return ok;
}
