/*
 * fuzz_manifest.c - libFuzzer target: arbitrary manifest CONTENTS (issue 11, item 8).
 *
 * Each input builds a cache folder whose manifest has YYKVStorage's schema but rows no library
 * writes - every column may be NULL, an integer (negative, 0, INT64_MIN/MAX), a real, text or a
 * BLOB; keys may repeat (NULL, BLOBs) and rows may name the same file, a file of another row, a
 * missing file, a link to a file outside the folder, or a name that is no file name at all
 * ("../outside/victim", "/etc/passwd") - and data/ files that are present or missing. Then it
 * runs every KV operation and the disk cache's trims on it and checks, against a simple model:
 *   - nothing crashes (ASan/UBSan) or hangs (libFuzzer's -timeout: every loop must be bounded);
 *   - statuses are ones the headers allow;
 *   - the totals: yyc_kv_count is the number of rows, yyc_kv_size the saturating sum of the
 *     sizes that are positive integers (computed here from a raw connection);
 *   - each removal leaves none of the rows it was asked to remove (by its own rule, checked
 *     with SQL on the raw connection), and a save reads back;
 *   - after remove-all (slow and fast) the count is 0;
 *   - no file outside the cache folder is touched (a victim file and its folder are checked).
 *
 * Input: byte 0 = number of rows (mod 25); per row 7 column values (one selector byte, maybe
 * one more); then a byte of which data files exist (f0..f3, and a link) and their sizes; the
 * rest are (operation, argument) pairs, at most 40.
 */
#include "reliability_support.h"

#include <yycache/yycache.h>

#include "kv/kv_private.h"

#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fm {
    const uint8_t *data;
    size_t size, pos;
    char root[4096], dir[4096], outside[4096];
    yyc_kv *kv;
    sqlite3 *raw;
    int op;
} fm;

static uint8_t next(fm *m) { return m->pos < m->size ? m->data[m->pos++] : 0; }

#define FM_CHECK(m, cond, ...)                                             \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "fuzz_manifest: op %d: %s: ", (m)->op, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, " [%s]\n", rel_last_error());                  \
            abort();                                                       \
        }                                                                  \
    } while (0)

static const char *const names[] = {
    "a",
    "b",
    "c",
    "key",
    "",
    "f0",
    "f1",
    "f2",
    "f3",
    "link",
    "../outside/victim",
    "/etc/passwd",
    ".",
    "..",
    "x/y",
    "manifest.sqlite",
    "space.reserve",
};
#define NNAMES (sizeof names / sizeof *names)
/* Keys the operations use (text keys; "" included). */
static const char *const keys[] = {"a", "b", "c", "key", "", "f1", "..", "link"};
#define NKEYS (sizeof keys / sizeof *keys)

static const int64_t extremes[] = {INT64_MAX, INT64_MIN, INT64_MAX - 1,    0,
                                   -1,        1,         (int64_t)1 << 53, INT64_MAX / 2 + 1};

/* Binds a value chosen by the input to parameter i. */
static void bind_value(fm *m, sqlite3_stmt *s, int i) {
    uint8_t sel = next(m);
    uint8_t b = next(m);
    int64_t now = (int64_t)time(NULL);
    switch (sel % 8) {
    case 0: sqlite3_bind_null(s, i); break;
    case 1: sqlite3_bind_int64(s, i, (int64_t)b - 128); break;
    case 2: sqlite3_bind_int64(s, i, extremes[b % (sizeof extremes / sizeof *extremes)]); break;
    case 3: {
        static const double reals[] = {1e300, -1e300, 0.5, -2.5, 9.3e18};
        sqlite3_bind_double(s, i, reals[b % 5]);
        break;
    }
    case 4: sqlite3_bind_text(s, i, names[b % NNAMES], -1, SQLITE_STATIC); break;
    case 5: {
        uint8_t blob[8];
        size_t n = b % 9;
        for (size_t j = 0; j < n; j++) blob[j] = next(m);
        sqlite3_bind_blob(s, i, blob, (int)n, SQLITE_TRANSIENT);
        break;
    }
    case 6: sqlite3_bind_text(s, i, keys[b % NKEYS], -1, SQLITE_STATIC); break;
    default: sqlite3_bind_int64(s, i, now - (int64_t)b * 1000); break;
    }
}

static int64_t raw_int(fm *m, const char *sql, const char *text, int64_t arg, bool with_arg) {
    sqlite3_stmt *s = NULL;
    FM_CHECK(m, sqlite3_prepare_v2(m->raw, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
             sqlite3_errmsg(m->raw));
    if (text) sqlite3_bind_text(s, 1, text, -1, SQLITE_STATIC);
    else if (with_arg) sqlite3_bind_int64(s, 1, arg);
    int rc = sqlite3_step(s);
    FM_CHECK(m, rc == SQLITE_ROW, "%s: %d", sql, rc);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* The model of the totals: the row count, and the saturating sum of positive integer sizes. */
static void check_totals(fm *m) {
    int64_t rows = raw_int(m, "select count(*) from manifest;", NULL, 0, false);
    int64_t sum = 0;
    sqlite3_stmt *s = NULL;
    FM_CHECK(m, sqlite3_prepare_v2(m->raw, "select size from manifest;", -1, &s, NULL) == SQLITE_OK,
             "prepare");
    while (sqlite3_step(s) == SQLITE_ROW) {
        if (sqlite3_column_type(s, 0) != SQLITE_INTEGER) continue;
        int64_t v = sqlite3_column_int64(s, 0);
        if (v > 0) sum = sum > INT64_MAX - v ? INT64_MAX : sum + v;
    }
    sqlite3_finalize(s);
    int64_t count = -1, total = -1;
    FM_CHECK(m, yyc_kv_count(m->kv, &count) == YYC_OK, "count");
    FM_CHECK(m, yyc_kv_size(m->kv, &total) == YYC_OK, "size");
    FM_CHECK(m, count == rows, "count %lld, rows %lld", (long long)count, (long long)rows);
    FM_CHECK(m, total == sum, "size %lld, model %lld", (long long)total, (long long)sum);
}

/* The victim outside the folder is intact and alone. */
static void check_outside(fm *m) {
    char p[4200];
    snprintf(p, sizeof p, "%s/victim", m->outside);
    size_t len = 0;
    unsigned char *v = rel_read_file(p, &len);
    FM_CHECK(m, v && len == 6 && memcmp(v, "victim", 6) == 0, "the victim outside was touched");
    free(v);
    FM_CHECK(m, rel_count_entries(m->outside, NULL) == 1, "files appeared outside");
}

static bool status_ok(int s) { return s == YYC_OK || s == YYC_NOTFOUND || s == YYC_EINVAL; }

static void build(fm *m) {
    /* The schema, made by the library itself; then the rows, through a raw connection. */
    FM_CHECK(m, yyc_kv_open(m->dir, YYC_KV_MIXED, &m->kv) == YYC_OK, "first open");
    yyc_kv_close(m->kv);
    m->kv = NULL;
    char p[4200];
    snprintf(p, sizeof p, "%s/manifest.sqlite", m->dir);
    FM_CHECK(m, sqlite3_open(p, &m->raw) == SQLITE_OK, "raw open");
    sqlite3_busy_timeout(m->raw, 5000);
    sqlite3_stmt *ins = NULL;
    FM_CHECK(m,
             sqlite3_prepare_v2(m->raw,
                                "insert or ignore into manifest (key, filename, size, inline_data, "
                                "modification_time, last_access_time, extended_data, "
                                "value_crc32c, extended_crc32c) values (?1, ?2, ?3, ?4, ?5, ?6, "
                                "?7, ?8, ?9);",
                                -1, &ins, NULL) == SQLITE_OK,
             "prepare insert: %s", sqlite3_errmsg(m->raw));
    int rows = next(m) % 25;
    for (int r = 0; r < rows; r++) {
        for (int c = 1; c <= 7; c++) bind_value(m, ins, c);
        /* The checksums: mostly absent (a row YYKVStorage wrote), else arbitrary. */
        uint8_t crc = next(m);
        if (crc % 4 == 0) sqlite3_bind_int64(ins, 8, (int64_t)crc * 2654435761u);
        else sqlite3_bind_null(ins, 8);
        if (crc % 8 == 1) sqlite3_bind_int64(ins, 9, crc);
        else sqlite3_bind_null(ins, 9);
        int rc = sqlite3_step(ins);
        FM_CHECK(m, rc == SQLITE_DONE, "insert: %s", sqlite3_errmsg(m->raw));
        sqlite3_reset(ins);
        sqlite3_clear_bindings(ins);
    }
    sqlite3_finalize(ins);
    uint8_t present = next(m);
    for (int i = 0; i < 4; i++) {
        if (!(present & (1u << i))) continue;
        unsigned char buf[64];
        size_t n = next(m) % sizeof buf;
        memset(buf, 'a' + i, n);
        snprintf(p, sizeof p, "%s/data/f%d", m->dir, i);
        FM_CHECK(m, rel_write_file(p, buf, n), "write %s", p);
    }
    if (present & 0x10) {
        char target[4200];
        snprintf(target, sizeof target, "%s/victim", m->outside);
        snprintf(p, sizeof p, "%s/data/link", m->dir);
        FM_CHECK(m, symlink(target, p) == 0, "symlink");
    }
    FM_CHECK(m, yyc_kv_open(m->dir, YYC_KV_MIXED, &m->kv) == YYC_OK, "open: %s", rel_last_error());
}

static void run_op(fm *m, uint8_t op, uint8_t arg) {
    const char *key = keys[arg % NKEYS];
    int64_t now = (int64_t)time(NULL);
    int s = YYC_OK;
    switch (op % 19) {
    case 0:
    case 1: {
        yyc_kv_item *it = NULL;
        s = op % 19 == 0 ? yyc_kv_get_item(m->kv, key, &it) : yyc_kv_get_item_info(m->kv, key, &it);
        FM_CHECK(m, status_ok(s), "get item %s", yyc_status_name(s));
        if (s == YYC_OK) {
            FM_CHECK(m, strcmp(it->key, key) == 0, "item key");
            FM_CHECK(m, (uintptr_t)it->value % _Alignof(max_align_t) == 0, "value alignment");
        }
        yyc_kv_item_free(it);
        break;
    }
    case 2: {
        void *v = NULL;
        size_t len = 0;
        s = yyc_kv_get_value(m->kv, key, &v, &len);
        FM_CHECK(m, status_ok(s), "get value %s", yyc_status_name(s));
        free(v);
        break;
    }
    case 3:
        s = yyc_kv_exists(m->kv, key);
        FM_CHECK(m, status_ok(s), "exists %s", yyc_status_name(s));
        break;
    case 4:
    case 5: {
        yyc_kv_item **items = NULL;
        size_t n = 0;
        s = op % 19 == 4 ? yyc_kv_get_items(m->kv, keys, NKEYS, &items, &n)
                         : yyc_kv_get_item_infos(m->kv, keys, NKEYS, &items, &n);
        FM_CHECK(m, s == YYC_OK, "get items %s", yyc_status_name(s));
        FM_CHECK(m, n <= NKEYS, "%zu items for %zu keys", n, NKEYS);
        yyc_kv_items_free(items, n);
        break;
    }
    case 6:
        s = yyc_kv_remove(m->kv, key);
        FM_CHECK(m, s == YYC_OK, "remove %s", yyc_status_name(s));
        if (*key) /* (removing the empty key does nothing) */
            FM_CHECK(
                m, raw_int(m, "select count(*) from manifest where key = ?1;", key, 0, false) == 0,
                "a removed key stayed");
        break;
    case 7:
        s = yyc_kv_remove_keys(m->kv, keys, NKEYS);
        FM_CHECK(m, s == YYC_OK, "remove keys %s", yyc_status_name(s));
        for (size_t i = 0; i < NKEYS; i++)
            FM_CHECK(
                m,
                raw_int(m, "select count(*) from manifest where key = ?1;", keys[i], 0, false) == 0,
                "removed key %zu stayed", i);
        break;
    case 8: {
        int64_t limit = (int64_t)(arg % 16) * 8 + 1;
        s = yyc_kv_remove_larger_than(m->kv, limit);
        FM_CHECK(m, s == YYC_OK, "remove larger %s", yyc_status_name(s));
        FM_CHECK(
            m, raw_int(m, "select count(*) from manifest where size > ?1;", NULL, limit, true) == 0,
            "a larger row stayed");
        break;
    }
    case 9: {
        int64_t t = now - (int64_t)(arg % 64) * 4000;
        s = yyc_kv_remove_earlier_than(m->kv, t);
        FM_CHECK(m, s == YYC_OK, "remove earlier %s", yyc_status_name(s));
        FM_CHECK(m,
                 raw_int(m, "select count(*) from manifest where last_access_time < ?1;", NULL, t,
                         true) == 0,
                 "an earlier row stayed");
        break;
    }
    case 10: {
        int64_t max = (int64_t)(arg % 32) * 16 + 1;
        s = yyc_kv_remove_to_fit_size(m->kv, max);
        FM_CHECK(m, s == YYC_OK, "fit size %s", yyc_status_name(s));
        int64_t total = -1;
        FM_CHECK(m, yyc_kv_size(m->kv, &total) == YYC_OK && total <= max, "size %lld > %lld",
                 (long long)total, (long long)max);
        break;
    }
    case 11: {
        int64_t max = arg % 8 + 1;
        s = yyc_kv_remove_to_fit_count(m->kv, max);
        FM_CHECK(m, s == YYC_OK, "fit count %s", yyc_status_name(s));
        int64_t count = -1;
        FM_CHECK(m, yyc_kv_count(m->kv, &count) == YYC_OK && count <= max, "count %lld > %lld",
                 (long long)count, (long long)max);
        break;
    }
    case 12: {
        int64_t before = raw_int(m, "select count(*) from manifest;", NULL, 0, false), removed = -1;
        int limit = arg % 8 + 1;
        s = yyc__kv_remove_lru_batch(m->kv, limit, &removed);
        FM_CHECK(m, s == YYC_OK, "lru batch %s", yyc_status_name(s));
        FM_CHECK(m, removed == (before < limit ? before : limit), "batch removed %lld of %lld",
                 (long long)removed, (long long)before);
        break;
    }
    case 13:
    case 14: {
        if (!*key) break;
        unsigned char v[40];
        size_t len = arg % sizeof v;
        memset(v, arg, len);
        const char *name = op % 19 == 14 ? names[arg % NNAMES] : NULL;
        s = yyc_kv_save(m->kv, key, v, len, name, NULL, 0);
        bool valid = !name || !*name || yyc_kv_filename_is_valid(name);
        FM_CHECK(m, valid ? s == YYC_OK : s == YYC_EINVAL, "save %s (name %s)", yyc_status_name(s),
                 name ? name : "-");
        if (s == YYC_OK) {
            void *got = NULL;
            size_t got_len = 0;
            s = yyc_kv_get_value(m->kv, key, &got, &got_len);
            FM_CHECK(m, s == YYC_OK && got_len == len && (len == 0 || memcmp(got, v, len) == 0),
                     "a saved value does not read back: %s", yyc_status_name(s));
            free(got);
        }
        break;
    }
    case 15: {
        s = yyc_kv_remove_all_progress(m->kv, NULL, NULL);
        FM_CHECK(m, s == YYC_OK, "remove all (progress) %s", yyc_status_name(s));
        int64_t count = -1;
        FM_CHECK(m, yyc_kv_count(m->kv, &count) == YYC_OK && count == 0,
                 "count %lld after remove all", (long long)count);
        break;
    }
    case 16:
        yyc_kv_close(m->kv);
        m->kv = NULL;
        FM_CHECK(m, yyc_kv_open(m->dir, YYC_KV_MIXED, &m->kv) == YYC_OK, "reopen: %s",
                 rel_last_error());
        break;
    case 17: {
        /* The disk cache's trims on the same folder (a second connection). */
        yyc_diskcache *dc = NULL;
        FM_CHECK(m, yyc_diskcache_open(m->dir, 20, &dc) == YYC_OK, "disk cache open: %s",
                 rel_last_error());
        yyc_diskcache_set_auto_trim_interval(dc, 0);
        int64_t cost = -1, count = -1;
        FM_CHECK(m, yyc_diskcache_total_cost(dc, &cost) == YYC_OK, "total cost");
        FM_CHECK(m, yyc_diskcache_total_count(dc, &count) == YYC_OK, "total count");
        switch (arg % 5) {
        case 0: s = yyc_diskcache_trim_to_cost(dc, cost / 2); break;
        case 1: s = yyc_diskcache_trim_to_count(dc, count / 2); break;
        case 2: s = yyc_diskcache_trim_to_age(dc, (double)(arg % 64) * 4000); break;
        case 3: s = yyc_diskcache_trim_to_free_space(dc, INT64_MAX / 4); break;
        default: s = yyc_diskcache_remove_all_progress(dc, NULL, NULL); break;
        }
        FM_CHECK(m, s == YYC_OK, "disk cache trim %d: %s", arg % 5, yyc_status_name(s));
        yyc_diskcache_release(dc);
        break;
    }
    default: break; /* 18: the totals only */
    }
    check_totals(m);
    check_outside(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fm *m = calloc(1, sizeof *m);
    if (!m) abort();
    m->data = data;
    m->size = size;
    const char *base = getenv("TMPDIR");
    snprintf(m->root, sizeof m->root, "%s/yyc-fuzz-manifest-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(m->root)) abort();
    snprintf(m->dir, sizeof m->dir, "%s/c", m->root);
    snprintf(m->outside, sizeof m->outside, "%s/outside", m->root);
    if (mkdir(m->outside, 0700) != 0) abort();
    char p[4200];
    snprintf(p, sizeof p, "%s/victim", m->outside);
    if (!rel_write_file(p, "victim", 6)) abort();
    build(m);
    check_totals(m);
    for (int i = 0; i < 40 && m->pos < m->size; i++) {
        m->op = i;
        uint8_t op = next(m), arg = next(m);
        run_op(m, op, arg);
    }
    /* Remove-all, slow then fast, on what is left. */
    m->op = -1;
    int s = yyc_kv_remove_all_progress(m->kv, NULL, NULL);
    FM_CHECK(m, s == YYC_OK, "final remove all (progress) %s", yyc_status_name(s));
    check_totals(m);
    FM_CHECK(m, raw_int(m, "select count(*) from manifest;", NULL, 0, false) == 0, "rows left");
    s = yyc_kv_remove_all(m->kv);
    FM_CHECK(m, s == YYC_OK, "final remove all %s", yyc_status_name(s));
    int64_t count = -1;
    FM_CHECK(m, yyc_kv_count(m->kv, &count) == YYC_OK && count == 0, "count after remove all");
    check_outside(m);
    yyc_kv_close(m->kv);
    sqlite3_close(m->raw);
    test_rm_rf(m->root);
    free(m);
    return 0;
}
