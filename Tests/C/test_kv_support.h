/*
 * test_kv_support.h - helpers shared by the KV storage and disk cache tests: a second, raw
 * SQLite connection on a cache's manifest, small file-system probes, and string values in a
 * disk cache.
 */
#ifndef YYCACHE_TEST_KV_SUPPORT_H
#define YYCACHE_TEST_KV_SUPPORT_H

#include "test_support.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>

/* YYKVStorage's seven columns, named (as YYKVStorage's own statements name them). */
#define TK_COLS \
    "(key, filename, size, inline_data, modification_time, last_access_time, extended_data)"

/* "<dir>/<name>" in a static buffer (one at a time per call site: copy if you need two). */
static inline const char *tk_join(char *buf, size_t size, const char *dir, const char *name) {
    int n = snprintf(buf, size, "%s/%s", dir, name);
    assert_true(n > 0 && (size_t)n < size);
    return buf;
}

/* A raw connection on dir/manifest.sqlite (no busy timeout unless asked). */
static inline sqlite3 *tk_raw_open(const char *dir) {
    char p[4096];
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(tk_join(p, sizeof p, dir, "manifest.sqlite"), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 2000);
    return db;
}

static inline void tk_raw_exec(sqlite3 *db, const char *sql) {
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) fprintf(stderr, "raw exec failed (%d): %s\n", rc, err ? err : "");
    sqlite3_free(err);
    assert_int_equal(rc, SQLITE_OK);
}

/* The first column of the first row of sql, as int64 (0 when there is no row or it is NULL). */
static inline int64_t tk_raw_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    int rc = sqlite3_step(s);
    assert_true(rc == SQLITE_ROW || rc == SQLITE_DONE);
    int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_finalize(s);
    return v;
}

/* The manifest's count and total cost summed by a raw connection, the cost as the library
 * counts it (a size that is not a positive integer costs 0; saturated at INT64_MAX). */
static inline void tk_scan_totals(const char *dir, int64_t *count, int64_t *cost) {
    sqlite3 *db = tk_raw_open(dir);
    *count = tk_raw_int(db, "select count(*) from manifest;");
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "select total(case when typeof(size) = 'integer' and "
                                        "size > 0 then size else 0 end) from manifest;",
                                        -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    double t = sqlite3_column_double(s, 0);
    *cost = t >= 9223372036854775807.0 ? INT64_MAX : (int64_t)t;
    sqlite3_finalize(s);
    sqlite3_close(db);
}

static inline int64_t tk_int(const char *dir, const char *sql) {
    sqlite3 *db = tk_raw_open(dir);
    int64_t v = tk_raw_int(db, sql);
    sqlite3_close(db);
    return v;
}

static inline void tk_exec(const char *dir, const char *sql) {
    sqlite3 *db = tk_raw_open(dir);
    tk_raw_exec(db, sql);
    sqlite3_close(db);
}

/* Number of entries in dir/sub (excluding . and ..), -1 if it cannot be opened. */
static inline int tk_count_entries(const char *dir, const char *sub) {
    char p[4096];
    DIR *d = opendir(tk_join(p, sizeof p, dir, sub));
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static inline bool tk_exists(const char *dir, const char *rel) {
    char p[4096];
    struct stat st;
    return lstat(tk_join(p, sizeof p, dir, rel), &st) == 0;
}

/* Writes a file with content (creating or truncating). */
static inline void tk_write_file(const char *path, const void *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* Size of a file, -1 if missing. */
static inline long long tk_file_size(const char *dir, const char *rel) {
    char p[4096];
    struct stat st;
    if (lstat(tk_join(p, sizeof p, dir, rel), &st) != 0) return -1;
    return (long long)st.st_size;
}

/* A "data/<md5(key)>" relative path. */
static inline const char *tk_md5_rel(char out[64], const char *key) {
    char md5[33];
    yyc_kv_md5_filename(key, md5);
    snprintf(out, 64, "data/%s", md5);
    return out;
}

/* Deterministic bytes for a key and a length. */
static inline void tk_fill(void *buf, size_t len, unsigned seed) {
    unsigned char *p = buf;
    for (size_t i = 0; i < len; i++) p[i] = (unsigned char)(seed * 31u + i * 7u + (i >> 8));
}

/* Stores the string value (without its NUL) for key; asserts success. */
static inline void tk_set_str(yyc_diskcache *dc, const char *key, const char *value) {
    assert_int_equal(yyc_diskcache_set(dc, key, value, strlen(value), NULL, 0), YYC_OK);
}

/* Asserts that key reads back exactly the string value. */
static inline void tk_check_str(yyc_diskcache *dc, const char *key, const char *value) {
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_diskcache_get(dc, key, &v, &len), YYC_OK);
    assert_int_equal(len, strlen(value));
    assert_memory_equal(v, value, len);
    yyc_free(v);
}

#endif /* YYCACHE_TEST_KV_SUPPORT_H */
