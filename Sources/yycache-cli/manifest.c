/*
 * manifest.c - read-only access to a cache folder for stats, ls and verify.
 *
 * The manifest is opened with sqlite3 directly, SQLITE_OPEN_READONLY, never through the
 * library: nothing here writes a row, rebuilds a manifest, empties trash/ or touches data/.
 * Every open checks that the manifest's schema is YYKVStorage's (schema_is_cache), so a folder
 * that merely holds some file named manifest.sqlite is never taken for a cache. No symbolic link
 * inside the folder is followed (data/, trash/, the manifest and its -wal are opened or looked at
 * with O_NOFOLLOW, AT_SYMLINK_NOFOLLOW or SQLITE_OPEN_NOFOLLOW).
 *
 * A reader of a WAL database normally creates the -wal and -shm companion files when they are
 * missing (and leaves them behind). To leave an idle folder exactly as it was, a folder without
 * manifest.sqlite-wal is read with `immutable=1` (no locks, no companion files); if a writer
 * appeared meanwhile (a -wal now exists, or manifest.sqlite changed), the snapshot is thrown away
 * and everything is read again through an ordinary read-only connection. A folder that is in use
 * (its -wal exists) is always read through the ordinary read-only connection.
 */
#include "cli.h"

#include <yycache/yycache.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS 5000

/* ---- paths ---- */

/* path + "/" + name, or NULL (out of memory, reported). Free with free(). */
static char *join(const char *path, const char *name) {
    size_t a = strlen(path), b = strlen(name);
    char *s = malloc(a + b + 2);
    if (!s) {
        cli_error(path, "out of memory");
        return NULL;
    }
    memcpy(s, path, a);
    s[a] = '/';
    memcpy(s + a + 1, name, b + 1);
    return s;
}

int64_t cli_file_size_at(int root_fd, const char *name) {
    struct stat st;
    if (fstatat(root_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) return 0;
    return (int64_t)st.st_size;
}

int64_t cli_count_entries_at(int root_fd, const char *name) {
    int fd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return 0;
    }
    int64_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

/* The folder and its manifest file, looked at without following a link inside the folder. */
static bool check_folder_and_manifest(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        cli_error(path, "%s", strerror(errno));
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        cli_error(path, "%s", strerror(ENOTDIR));
        return false;
    }
    int root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        cli_error(path, "%s", strerror(errno));
        return false;
    }
    int rc = fstatat(root_fd, "manifest.sqlite", &st, AT_SYMLINK_NOFOLLOW);
    int err = errno;
    close(root_fd);
    if (rc != 0 && err == ENOENT) {
        cli_error(path, "not a cache folder (no manifest.sqlite)");
        return false;
    }
    if (rc != 0) {
        cli_error(path, "cannot read manifest.sqlite: %s", strerror(err));
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        cli_error(path, "not a cache folder (manifest.sqlite is %s)",
                  S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file");
        return false;
    }
    return true;
}

/* ---- the read-only connection ---- */

typedef struct ro_conn {
    sqlite3 *db;
    bool immutable;
    struct stat db_stat; /* manifest.sqlite when opened immutable */
    char *db_path, *wal_path;
} ro_conn;

/* "file:" URI for a path: every byte but unreserved characters and '/' percent-encoded. */
static char *file_uri(const char *db_path, const char *query) {
    size_t n = strlen(db_path);
    char *uri = malloc(5 + 3 * n + strlen(query) + 1);
    if (!uri) return NULL;
    char *p = uri;
    p += sprintf(p, "file:");
    for (const unsigned char *s = (const unsigned char *)db_path; *s; s++) {
        if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
            strchr("/-._~", *s))
            *p++ = (char)*s;
        else p += sprintf(p, "%%%02X", *s);
    }
    strcpy(p, query);
    return uri;
}

static void ro_close(ro_conn *c) {
    if (c->db) sqlite3_close(c->db);
    free(c->db_path);
    free(c->wal_path);
    memset(c, 0, sizeof *c);
}

/* Whether the open database's schema is YYKVStorage's (see cli_identify_cache). When it is not,
 * the reason is written to why; when the schema could not be read at all, why is empty and *rc
 * is the SQLite error. */
static bool schema_is_cache(sqlite3 *db, char *why, size_t why_size, int *rc) {
    static const char *const checks[] = {
        /* the table (not a view) */
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'manifest' COLLATE NOCASE",
        /* the primary key: key, alone */
        "SELECT 1 FROM (SELECT sum(pk > 0) AS keys, max(pk = 1 AND name = 'key' COLLATE NOCASE)"
        " AS is_key FROM pragma_table_info('manifest')) WHERE keys = 1 AND is_key = 1",
        /* the index of the LRU order */
        "SELECT 1 FROM sqlite_master WHERE type = 'index' AND"
        " name = 'last_access_time_idx' COLLATE NOCASE AND tbl_name = 'manifest' COLLATE NOCASE",
    };
    static const char *const failures[] = {
        "manifest.sqlite has no table named manifest",
        "the primary key of table manifest is not its key column",
        "manifest.sqlite has no index last_access_time_idx",
    };
    why[0] = '\0';
    *rc = SQLITE_OK;
    for (size_t i = 0; i < sizeof checks / sizeof *checks; i++) {
        sqlite3_stmt *st = NULL;
        int r = sqlite3_prepare_v2(db, checks[i], -1, &st, NULL);
        if (r == SQLITE_OK) r = sqlite3_step(st);
        sqlite3_finalize(st);
        if (r == SQLITE_DONE) {
            snprintf(why, why_size, "%s", failures[i]);
            return false;
        }
        if (r != SQLITE_ROW) {
            *rc = r;
            return false;
        }
        if (i == 0) {
            /* every column YYKVStorage reads and writes, and a rowid (verify --repair) */
            r = sqlite3_prepare_v2(db,
                                   "SELECT rowid, key, filename, size, inline_data,"
                                   " modification_time, last_access_time, extended_data"
                                   " FROM manifest LIMIT 0",
                                   -1, &st, NULL);
            sqlite3_finalize(st);
            if (r == SQLITE_ERROR) {
                snprintf(why, why_size, "table manifest: %s", sqlite3_errmsg(db));
                return false;
            }
            if (r != SQLITE_OK) {
                *rc = r;
                return false;
            }
        }
    }
    return true;
}

/* The failure of ro_open or of a read function, printed by with_manifest only if no retry
 * follows. */
static char read_error[512];

static bool read_failed(const char *reason) {
    snprintf(read_error, sizeof read_error, "%s", reason);
    return false;
}

static bool sql_failed(sqlite3 *db) {
    snprintf(read_error, sizeof read_error, "cannot read manifest.sqlite: %s", sqlite3_errmsg(db));
    return false;
}

/* Opens path/manifest.sqlite read-only (immutable when allowed and no -wal exists) and checks
 * that its schema is a cache manifest's. On failure returns false with the reason in read_error
 * and c->db closed; the caller still calls ro_snapshot_valid (a writer may have made the
 * immutable reading fail) and ro_close. */
static bool ro_open(const char *path, bool allow_immutable, ro_conn *c) {
    memset(c, 0, sizeof *c);
    c->db_path = join(path, "manifest.sqlite");
    c->wal_path = join(path, "manifest.sqlite-wal");
    if (!c->db_path || !c->wal_path) return read_failed("out of memory");
    struct stat wal;
    c->immutable = allow_immutable && lstat(c->wal_path, &wal) != 0 && errno == ENOENT &&
                   stat(c->db_path, &c->db_stat) == 0;
    char *uri = file_uri(c->db_path, c->immutable ? "?immutable=1" : "?mode=ro");
    if (!uri) return read_failed("out of memory");
    int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
#ifdef SQLITE_OPEN_NOFOLLOW
    flags |= SQLITE_OPEN_NOFOLLOW;
#endif
    int rc = sqlite3_open_v2(uri, &c->db, flags, NULL);
    free(uri);
    char why[256] = "";
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
        /* A reader never checkpoints or deletes the WAL of a cache in use. */
        sqlite3_db_config(c->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
        if (schema_is_cache(c->db, why, sizeof why, &rc)) return true;
    }
    if (why[0]) snprintf(read_error, sizeof read_error, "not a cache folder (%s)", why);
    else if ((rc & 0xff) == SQLITE_NOTADB)
        read_failed("not a cache folder (manifest.sqlite is not an SQLite database)");
    else
        snprintf(read_error, sizeof read_error, "cannot read manifest.sqlite: %s",
                 c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
    sqlite3_close(c->db);
    c->db = NULL;
    return false;
}

/* Whether what was read is a consistent snapshot: always for an ordinary connection; for an
 * immutable one, only if no writer showed up (no -wal, manifest.sqlite unchanged). */
static bool ro_snapshot_valid(const ro_conn *c) {
    if (!c->immutable) return true;
    struct stat wal, db;
    if (!(lstat(c->wal_path, &wal) != 0 && errno == ENOENT)) return false;
    if (stat(c->db_path, &db) != 0) return false;
    return db.st_ino == c->db_stat.st_ino && db.st_size == c->db_stat.st_size &&
           db.st_mtim.tv_sec == c->db_stat.st_mtim.tv_sec &&
           db.st_mtim.tv_nsec == c->db_stat.st_mtim.tv_nsec;
}

/* Runs read(db, ctx) on a consistent snapshot of the manifest; reset(ctx) discards a partial
 * result before a second attempt. Returns false (error printed) on failure. */
typedef bool (*read_fn)(sqlite3 *db, void *ctx);

static bool with_manifest(const char *path, read_fn read, void (*reset)(void *), void *ctx) {
    for (int attempt = 0; attempt < 2; attempt++) {
        ro_conn c;
        read_error[0] = '\0';
        bool ok = ro_open(path, attempt == 0, &c) && read(c.db, ctx);
        bool valid = ro_snapshot_valid(&c);
        ro_close(&c);
        if (valid) {
            if (!ok) cli_error(path, "%s", read_error);
            return ok;
        }
        if (reset) reset(ctx); /* a writer appeared while reading without locks: read again */
    }
    return false; /* not reached: the second attempt is never immutable */
}

static bool read_nothing(sqlite3 *db, void *ctx) {
    (void)db, (void)ctx;
    return true;
}

bool cli_identify_cache(const char *path) {
    return check_folder_and_manifest(path) && with_manifest(path, read_nothing, NULL, NULL);
}

/* ---- stats ---- */

int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool read_stats(sqlite3 *db, void *ctx) {
    cli_stats *s = ctx;
    /* filename NULL or empty means inline, as YYKVStorage reads a row. */
    static const char sql[] =
        "SELECT (filename IS NULL OR filename = '') AS inl, count(*), coalesce(sum(size), 0),"
        " min(last_access_time), max(last_access_time) FROM manifest GROUP BY inl";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return sql_failed(db);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        bool inl = sqlite3_column_int(st, 0) != 0;
        int64_t count = sqlite3_column_int64(st, 1), size = sqlite3_column_int64(st, 2);
        int64_t oldest = sqlite3_column_int64(st, 3), newest = sqlite3_column_int64(st, 4);
        if (inl) {
            s->inline_count = count;
            s->inline_size = size;
        } else {
            s->file_count = count;
            s->file_size = size;
        }
        s->count += count;
        s->total_size += size;
        if (!s->has_access || oldest < s->oldest_access) s->oldest_access = oldest;
        if (!s->has_access || newest > s->newest_access) s->newest_access = newest;
        s->has_access = true;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return sql_failed(db);
    /* Expired rows: the library's expiry column (unix ms) is in the past. A folder without the
     * column (YYKVStorage's) has none. */
    static const char expired_sql[] = "SELECT count(*) FROM manifest WHERE yyc_expiry_ms <= ?1";
    if (sqlite3_prepare_v2(db, expired_sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, now_ms());
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) s->expired_count = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (rc != SQLITE_ROW) return sql_failed(db);
    }
    return true;
}

static void reset_stats(void *ctx) { memset(ctx, 0, sizeof(cli_stats)); }

bool manifest_read_stats(const char *path, cli_stats *out) {
    memset(out, 0, sizeof *out);
    return with_manifest(path, read_stats, reset_stats, out);
}

/* ---- rows ---- */

void cli_rows_free(cli_rows *rows) {
    for (size_t i = 0; i < rows->count; i++) {
        free(rows->items[i].key);
        free(rows->items[i].filename);
    }
    free(rows->items);
    rows->items = NULL;
    rows->count = 0;
}

/* A NUL-terminated copy of a text column (NULL for SQL NULL). */
static char *column_copy(sqlite3_stmt *st, int col, size_t *len, bool *oom) {
    const unsigned char *text = sqlite3_column_text(st, col);
    *len = (size_t)sqlite3_column_bytes(st, col);
    if (!text) return NULL;
    char *s = malloc(*len + 1);
    if (!s) {
        *oom = true;
        return NULL;
    }
    memcpy(s, text, *len);
    s[*len] = '\0';
    return s;
}

typedef struct rows_query {
    cli_sort sort;
    int64_t limit;
    cli_rows *rows;
} rows_query;

static bool read_rows(sqlite3 *db, void *ctx) {
    rows_query *q = ctx;
    static const char *const order[] = {
        [SORT_KEY] = "key ASC",
        [SORT_ACCESS] = "last_access_time ASC, rowid ASC", /* eviction order */
        [SORT_SIZE] = "size DESC, key ASC",
    };
    char sql[512];
    sqlite3_stmt *st = NULL;
    /* With the library's expiry column if the folder has it (YYKVStorage's has not). */
    for (int with_expiry = 1; with_expiry >= 0; with_expiry--) {
        snprintf(sql, sizeof sql,
                 "SELECT rowid, key, filename, size, length(CAST(inline_data AS BLOB)),"
                 " modification_time, last_access_time, length(CAST(extended_data AS BLOB)), %s"
                 " FROM manifest"
                 " ORDER BY %s LIMIT ?1",
                 with_expiry ? "yyc_expiry_ms" : "NULL", order[q->sort]);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) break;
        sqlite3_finalize(st);
        st = NULL;
    }
    if (!st) return sql_failed(db);
    sqlite3_bind_int64(st, 1, q->limit < 0 ? -1 : q->limit);
    size_t cap = 0;
    bool oom = false;
    int rc;
    while (!oom && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (q->rows->count == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            cli_row *n = realloc(q->rows->items, ncap * sizeof *n);
            if (!n) {
                oom = true;
                break;
            }
            q->rows->items = n;
            cap = ncap;
        }
        cli_row *r = &q->rows->items[q->rows->count++];
        memset(r, 0, sizeof *r);
        r->rowid = sqlite3_column_int64(st, 0);
        r->key = column_copy(st, 1, &r->key_len, &oom);
        r->filename = column_copy(st, 2, &r->filename_len, &oom);
        if (r->filename && r->filename_len == 0) { /* empty filename: inline */
            free(r->filename);
            r->filename = NULL;
        }
        r->size = sqlite3_column_int64(st, 3);
        r->inline_len = sqlite3_column_int64(st, 4);
        r->modification_time = sqlite3_column_int64(st, 5);
        r->last_access_time = sqlite3_column_int64(st, 6);
        r->extended_len = sqlite3_column_int64(st, 7);
        if (sqlite3_column_type(st, 8) == SQLITE_INTEGER) {
            int64_t expiry = sqlite3_column_int64(st, 8);
            r->expiry_ms = expiry > 0 ? expiry : 1; /* (0 or less: long past) */
        }
    }
    sqlite3_finalize(st);
    if (oom) return read_failed("out of memory");
    if (rc != SQLITE_DONE) return sql_failed(db);
    return true;
}

static void reset_rows(void *ctx) { cli_rows_free(((rows_query *)ctx)->rows); }

bool manifest_read_rows(const char *path, cli_sort sort, int64_t limit, cli_rows *out) {
    memset(out, 0, sizeof *out);
    rows_query q = {sort, limit, out};
    if (with_manifest(path, read_rows, reset_rows, &q)) return true;
    cli_rows_free(out);
    return false;
}

/* ---- verify ---- */

void verify_free(cli_verify *v) {
    for (size_t i = 0; i < v->problem_count; i++) free(v->problems[i].stray_name);
    free(v->problems);
    cli_rows_free(&v->rows);
    memset(v, 0, sizeof *v);
}

/* Appends a problem; returns it, or NULL when out of memory. */
static cli_problem *add_problem(cli_verify *v, size_t *cap, cli_problem_kind kind) {
    if (v->problem_count == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        cli_problem *n = realloc(v->problems, ncap * sizeof *n);
        if (!n) return NULL;
        v->problems = n;
        *cap = ncap;
    }
    cli_problem *p = &v->problems[v->problem_count++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    return p;
}

static int compare_strings(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int compare_strays(const void *a, const void *b) {
    return strcmp(((const cli_problem *)a)->stray_name, ((const cli_problem *)b)->stray_name);
}

bool verify_scan(const char *path, cli_verify *out) {
    memset(out, 0, sizeof *out);
    if (!manifest_read_rows(path, SORT_KEY, -1, &out->rows)) return false;

    int root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        cli_error(path, "%s", strerror(errno));
        verify_free(out);
        return false;
    }
    /* data/ itself is never followed: a link (or a file) in its place is a problem, and to the
     * library (which replaces it by an empty folder) every file row's file is then missing. */
    int data_fd = openat(root_fd, "data", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int data_err = errno;
    close(root_fd);
    size_t cap = 0;
    bool oom = false;
    if (data_fd < 0 && (data_err == ELOOP || data_err == ENOTDIR)) {
        oom = add_problem(out, &cap, PROBLEM_DATA_NOT_FOLDER) == NULL;
    } else if (data_fd < 0 && data_err != ENOENT) {
        cli_error(path, "cannot open data/: %s", strerror(data_err));
        verify_free(out);
        return false;
    }
    /* Rows: every file row's file exists with the recorded length; inline lengths match. */
    char **names = calloc(out->rows.count + 1, sizeof *names);
    size_t name_count = 0;
    oom = oom || names == NULL;
    for (size_t i = 0; i < out->rows.count && !oom; i++) {
        const cli_row *r = &out->rows.items[i];
        cli_problem *p = NULL;
        if (!r->filename) {
            if (r->inline_len != r->size) {
                if (!(p = add_problem(out, &cap, PROBLEM_SIZE_MISMATCH))) oom = true;
                else p->actual_size = r->inline_len;
            }
        } else if (!yyc_kv_filename_is_valid(r->filename) ||
                   strlen(r->filename) != r->filename_len) {
            if (!(p = add_problem(out, &cap, PROBLEM_INVALID_FILENAME))) oom = true;
        } else {
            names[name_count++] = r->filename;
            struct stat st;
            if (data_fd < 0 || fstatat(data_fd, r->filename, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                !S_ISREG(st.st_mode)) {
                if (!(p = add_problem(out, &cap, PROBLEM_MISSING_FILE))) oom = true;
            } else if ((int64_t)st.st_size != r->size) {
                if (!(p = add_problem(out, &cap, PROBLEM_SIZE_MISMATCH))) oom = true;
                else p->actual_size = (int64_t)st.st_size;
            }
        }
        if (p) p->row = r;
    }

    /* Files: every entry of data/ is named by a row (recent temporary files excepted). */
    if (!oom && data_fd >= 0) {
        qsort(names, name_count, sizeof *names, compare_strings);
        DIR *dir = fdopendir(data_fd);
        if (!dir) {
            cli_error(path, "cannot list data/: %s", strerror(errno));
            close(data_fd);
            free(names);
            verify_free(out);
            return false;
        }
        data_fd = -1; /* owned by dir now */
        time_t now = time(NULL);
        struct dirent *e;
        while (!oom && (e = readdir(dir)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            out->files_checked++;
            const char *name = e->d_name;
            if (bsearch(&name, names, name_count, sizeof *names, compare_strings)) continue;
            struct stat st;
            bool have_stat = fstatat(dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) == 0;
            if (have_stat && strncmp(name, CLI_TEMP_PREFIX, strlen(CLI_TEMP_PREFIX)) == 0 &&
                now - st.st_mtime < CLI_TEMP_GRACE_SECONDS) {
                out->recent_temp_files++; /* probably a write in progress */
                continue;
            }
            cli_problem *p = add_problem(out, &cap, PROBLEM_STRAY_FILE);
            if (!p || !(p->stray_name = strdup(name))) {
                oom = true;
                break;
            }
            p->stray_is_dir = have_stat && S_ISDIR(st.st_mode);
            p->actual_size = have_stat && !p->stray_is_dir ? (int64_t)st.st_size : 0;
        }
        closedir(dir);
        /* Strays in name order, after the row problems (which follow the key order). */
        size_t first_stray = 0;
        while (first_stray < out->problem_count &&
               out->problems[first_stray].kind != PROBLEM_STRAY_FILE)
            first_stray++;
        if (out->problem_count > first_stray)
            qsort(out->problems + first_stray, out->problem_count - first_stray,
                  sizeof *out->problems, compare_strays);
    }
    if (data_fd >= 0) close(data_fd);
    free(names);
    if (oom) {
        cli_error(path, "out of memory");
        verify_free(out);
        return false;
    }
    return true;
}
