/*
 * test_bad_input.c - a table of bad inputs across the C API, each with its expected status
 * (issue 7).
 *
 * Every row runs in its own forked child (the parent never touches the library, so the fork
 * inherits no library thread) with a fresh temporary folder, so that a crash, a hang or a
 * debug-build assertion is reported as that row's outcome instead of ending the test. Rows:
 *   EXACT(s)  the call returns s;
 *   MISUSE(s) a contract violation (a NULL handle or out-pointer): the library returns s in
 *             release builds; in debug builds (NDEBUG undefined) YYC__MISUSE's assert may
 *             abort instead, which is also accepted.
 * A row's function returns the status of the call under test, after checking any side effect
 * (CHECK returns ROW_CHECK_FAILED when one is wrong).
 *
 * A second case is a fuzz smoke: fixed-seed random byte strings interpreted as operation
 * sequences on yyc_kv (bad inputs among them) and checked against a model
 * (reliability_fuzz.h, also usable as a libFuzzer target).
 *
 * Notes on what cannot be expressed:
 *   - Keys of the disk API are C strings: a key with an embedded NUL is the key up to the NUL
 *     (the row "key_with_nul_is_truncated_at_the_nul" documents it). Only the memory cache takes
 *     (pointer, length) keys.
 *   - A length above 2 GiB with a small buffer is only passed where the library must refuse
 *     before reading (inline values: SQLite's blob limit). The buffer is 3 GiB of PROT_NONE
 *     address space, so any read would crash the row. A file value of that length would be
 *     read by design, so it is not tested.
 */
#include "reliability_fuzz.h"
#include "reliability_support.h"

#include <float.h>
#include <math.h>
#include <sys/mman.h>

#define ROW_CHECK_FAILED 99
#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "  row check failed at line %d: %s\n", __LINE__, #cond); \
            return ROW_CHECK_FAILED;                                                 \
        }                                                                            \
    } while (0)

typedef enum { K_EXACT, K_MISUSE } row_kind;

typedef struct row {
    const char *name;
    int (*fn)(const char *dir);
    int expect;
    row_kind kind;
} row;

/* ---------------------------------------------------------------- fixtures */

static yyc_diskcache *dc_open(const char *dir, size_t threshold) {
    yyc_diskcache *dc = NULL;
    if (yyc_diskcache_open(dir, threshold, &dc) != YYC_OK) {
        fprintf(stderr, "  open failed: %s\n", rel_last_error());
        _exit(98);
    }
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    return dc;
}

static yyc_kv *kv_open(const char *dir, yyc_kv_type type) {
    yyc_kv *kv = NULL;
    if (yyc_kv_open(dir, type, &kv) != YYC_OK) {
        fprintf(stderr, "  kv open failed: %s\n", rel_last_error());
        _exit(98);
    }
    return kv;
}

/* Three entries: "a" (1 byte), "b" (2 bytes), "c" (30000 bytes, a file). */
static yyc_diskcache *dc_filled(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    static char big[30000];
    if (yyc_diskcache_set(dc, "a", "1", 1, NULL, 0) != YYC_OK ||
        yyc_diskcache_set(dc, "b", "22", 2, NULL, 0) != YYC_OK ||
        yyc_diskcache_set(dc, "c", big, sizeof big, NULL, 0) != YYC_OK)
        _exit(98);
    return dc;
}

static int64_t dc_count(yyc_diskcache *dc) {
    int64_t n = -1;
    if (yyc_diskcache_total_count(dc, &n) != YYC_OK) return -1;
    return n;
}

/* 3 GiB of address space that faults on any access. */
static void *unreadable_3gib(void) {
    void *p =
        mmap(NULL, (size_t)3 << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) _exit(97);
    return p;
}

static char *long_string(size_t n, char c) {
    char *s = malloc(n + 1);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* ---------------------------------------------------------------- status helpers */

static int strerror_of_unknown_code(const char *dir) {
    (void)dir;
    CHECK(yyc_strerror(-1) != NULL && strcmp(yyc_strerror(-1), "unknown status") == 0);
    CHECK(strcmp(yyc_strerror(12345), "unknown status") == 0);
    CHECK(strcmp(yyc_status_name(999), "UNKNOWN") == 0);
    CHECK(strcmp(yyc_status_name(-7), "UNKNOWN") == 0);
    yyc_free(NULL);
    return YYC_OK;
}

/* ---------------------------------------------------------------- memory cache */

static int mem_null_cache_set(const char *dir) {
    (void)dir;
    return yyc_memcache_set(NULL, "k", 1, NULL, 0);
}
static int mem_null_cache_get(const char *dir) {
    (void)dir;
    void *v = (void *)1;
    return yyc_memcache_get(NULL, "k", 1, &v);
}
static int mem_null_cache_remove(const char *dir) {
    (void)dir;
    return yyc_memcache_remove(NULL, "k", 1);
}
static int mem_null_cache_getters(const char *dir) {
    (void)dir;
    CHECK(yyc_memcache_total_count(NULL) == 0);
    CHECK(yyc_memcache_total_cost(NULL) == 0);
    CHECK(!yyc_memcache_contains(NULL, "k", 1));
    CHECK(yyc_memcache_count_limit(NULL) == SIZE_MAX);
    yyc_memcache_remove_all(NULL);
    yyc_memcache_free(NULL);
    return YYC_OK;
}
static int mem_new_null_out(const char *dir) {
    (void)dir;
    return yyc_memcache_new(NULL, NULL);
}
static int mem_null_key_with_length(const char *dir) {
    (void)dir;
    yyc_memcache *c;
    CHECK(yyc_memcache_new(NULL, &c) == YYC_OK);
    int s = yyc_memcache_set(c, NULL, 5, NULL, 0);
    CHECK(yyc_memcache_total_count(c) == 0);
    yyc_memcache_free(c);
    return s;
}
static int mem_empty_key_is_a_key(const char *dir) {
    (void)dir;
    yyc_memcache *c;
    CHECK(yyc_memcache_new(NULL, &c) == YYC_OK);
    int s = yyc_memcache_set(c, NULL, 0, (void *)0x1, 0);
    CHECK(yyc_memcache_contains(c, "", 0));
    yyc_memcache_free(c);
    return s;
}
static int mem_cost_overflow_saturates(const char *dir) {
    (void)dir;
    yyc_memcache *c;
    CHECK(yyc_memcache_new(NULL, &c) == YYC_OK);
    yyc_memcache_set_release_asynchronously(c, false);
    CHECK(yyc_memcache_set(c, "a", 1, NULL, SIZE_MAX) == YYC_OK);
    int s = yyc_memcache_set(c, "b", 1, NULL, SIZE_MAX);
    CHECK(yyc_memcache_total_cost(c) == SIZE_MAX);
    yyc_memcache_free(c);
    return s;
}
static int mem_nan_and_negative_infinite_ages(const char *dir) {
    (void)dir;
    yyc_memcache *c;
    CHECK(yyc_memcache_new(NULL, &c) == YYC_OK);
    yyc_memcache_set_release_asynchronously(c, false);
    CHECK(yyc_memcache_set(c, "a", 1, NULL, 0) == YYC_OK);
    yyc_memcache_set_age_limit(c, NAN);
    yyc_memcache_trim_to_age(c, NAN); /* NaN: no limit, nothing removed */
    CHECK(yyc_memcache_total_count(c) == 1);
    yyc_memcache_set_auto_trim_interval(c, NAN);
    yyc_memcache_set_auto_trim_interval(c, -INFINITY);
    yyc_memcache_trim_to_age(c, INFINITY);
    CHECK(yyc_memcache_total_count(c) == 1);
    yyc_memcache_trim_to_age(c, -INFINITY); /* <= 0: everything */
    CHECK(yyc_memcache_total_count(c) == 0);
    yyc_memcache_free(c);
    return YYC_OK;
}

/* ---------------------------------------------------------------- disk cache: handles */

static int dc_open_empty_path(const char *dir) {
    (void)dir;
    yyc_diskcache *dc = NULL;
    int s = yyc_diskcache_open("", REL_THRESHOLD, &dc);
    CHECK(dc == NULL);
    return s;
}
static int dc_open_null_path(const char *dir) {
    (void)dir;
    yyc_diskcache *dc = NULL;
    return yyc_diskcache_open(NULL, REL_THRESHOLD, &dc);
}
static int dc_open_null_out(const char *dir) {
    return yyc_diskcache_open(dir, REL_THRESHOLD, NULL);
}
static int dc_open_path_too_long(const char *dir) {
    char *p = long_string(5000, 'p');
    memcpy(p, dir, strlen(dir));
    p[strlen(dir)] = '/';
    yyc_diskcache *dc = NULL;
    int s = yyc_diskcache_open(p, REL_THRESHOLD, &dc);
    free(p);
    return s;
}
static int dc_open_on_a_regular_file(const char *dir) {
    char *p = rel_path(dir, "file");
    CHECK(rel_write_file(p, "x", 1));
    yyc_diskcache *dc = NULL;
    int s = yyc_diskcache_open(p, REL_THRESHOLD, &dc);
    CHECK(dc == NULL);
    size_t len;
    unsigned char *got = rel_read_file(p, &len);
    CHECK(got && len == 1 && got[0] == 'x'); /* untouched */
    free(got);
    free(p);
    return s;
}
static int dc_null_set(const char *dir) {
    (void)dir;
    return yyc_diskcache_set(NULL, "k", "v", 1, NULL, 0);
}
static int dc_null_get(const char *dir) {
    (void)dir;
    void *v = NULL;
    size_t n = 0;
    return yyc_diskcache_get(NULL, "k", &v, &n);
}
static int dc_null_remove(const char *dir) {
    (void)dir;
    return yyc_diskcache_remove(NULL, "k");
}
static int dc_null_remove_all(const char *dir) {
    (void)dir;
    return yyc_diskcache_remove_all(NULL);
}
static int dc_null_total_count(const char *dir) {
    (void)dir;
    int64_t n;
    return yyc_diskcache_total_count(NULL, &n);
}
static int dc_null_trim(const char *dir) {
    (void)dir;
    return yyc_diskcache_trim_to_count(NULL, 1);
}
static int dc_null_contains(const char *dir) {
    (void)dir;
    CHECK(!yyc_diskcache_contains(NULL, "k")); /* release builds: false */
    return YYC_OK;
}
static int dc_release_and_close_null(const char *dir) {
    (void)dir;
    yyc_diskcache_release(NULL); /* documented: NULL is fine */
    yyc_kv_close(NULL);
    yyc_cache_free(NULL);
    return YYC_OK;
}
static int dc_get_null_out(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    size_t n;
    return yyc_diskcache_get(dc, "k", NULL, &n);
}
static int dc_after_close(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    yyc_diskcache_close(dc);
    yyc_diskcache_close(dc); /* idempotent */
    CHECK(!yyc_diskcache_contains(dc, "k"));
    int s = yyc_diskcache_set(dc, "k", "v", 1, NULL, 0);
    yyc_diskcache_release(dc);
    return s;
}

/* ---------------------------------------------------------------- disk cache: keys */

static int dc_set_empty_key(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    int s = yyc_diskcache_set(dc, "", "v", 1, NULL, 0);
    CHECK(dc_count(dc) == 0);
    yyc_diskcache_release(dc);
    return s;
}
static int dc_get_empty_key(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    void *v = NULL;
    size_t n = 0;
    int s = yyc_diskcache_get(dc, "", &v, &n);
    CHECK(v == NULL);
    CHECK(!yyc_diskcache_contains(dc, ""));
    yyc_diskcache_release(dc);
    return s;
}
static int dc_remove_empty_key(const char *dir) {
    yyc_diskcache *dc = dc_filled(dir);
    int s = yyc_diskcache_remove(dc, "");
    CHECK(dc_count(dc) == 3);
    yyc_diskcache_release(dc);
    return s;
}
static int dc_set_null_key(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    return yyc_diskcache_set(dc, NULL, "v", 1, NULL, 0);
}
static int dc_huge_key_round_trips(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    char *key = long_string((size_t)1 << 20, 'k');
    key[12345] = 'x';
    int s = yyc_diskcache_set(dc, key, "value", 5, NULL, 0);
    if (s == YYC_OK) {
        void *v = NULL;
        size_t n = 0;
        CHECK(yyc_diskcache_get(dc, key, &v, &n) == YYC_OK && n == 5 && memcmp(v, "value", 5) == 0);
        yyc_free(v);
        key[12345] = 'k'; /* a different 1 MiB key */
        CHECK(!yyc_diskcache_contains(dc, key));
        key[12345] = 'x';
        CHECK(yyc_diskcache_remove(dc, key) == YYC_OK);
        CHECK(dc_count(dc) == 0);
    }
    free(key);
    yyc_diskcache_release(dc);
    return s;
}
static int dc_huge_key_large_value(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    char *key = long_string((size_t)1 << 20, 'q');
    static char big[40000];
    big[7] = 7;
    int s = yyc_diskcache_set(dc, key, big, sizeof big, NULL, 0);
    void *v = NULL;
    size_t n = 0;
    CHECK(yyc_diskcache_get(dc, key, &v, &n) == YYC_OK && n == sizeof big &&
          memcmp(v, big, n) == 0);
    yyc_free(v);
    free(key);
    yyc_diskcache_release(dc);
    return s;
}
static int key_with_nul_is_truncated_at_the_nul(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    int s = yyc_diskcache_set(dc, "a\0b", "v", 1, NULL, 0);
    CHECK(yyc_diskcache_contains(dc, "a")); /* the C string "a\0b" is "a" */
    CHECK(dc_count(dc) == 1);
    yyc_diskcache_release(dc);
    return s;
}
static int non_utf8_key_round_trips(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    const char *key = "\xff\xfe\x80 \xc3\x28";
    int s = yyc_diskcache_set(dc, key, "v", 1, NULL, 0);
    void *v = NULL;
    size_t n = 0;
    CHECK(yyc_diskcache_get(dc, key, &v, &n) == YYC_OK && n == 1);
    yyc_free(v);
    CHECK(!yyc_diskcache_contains(dc, "\xff\xfe\x80 \xc3"));
    yyc_diskcache_release(dc);
    return s;
}
static int path_like_key_stays_inside(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    static char big[30000];
    int s = yyc_diskcache_set(dc, "../../escape", big, sizeof big, NULL, 0);
    char *p = rel_path(dir, "../escape");
    struct stat sb;
    CHECK(stat(p, &sb) != 0);
    free(p);
    CHECK(yyc_diskcache_contains(dc, "../../escape"));
    yyc_diskcache_release(dc);
    return s;
}

/* ---------------------------------------------------------------- disk cache: values */

static int empty_value_from_null(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    CHECK(yyc_diskcache_set(dc, "k", "old", 3, NULL, 0) == YYC_OK);
    int s = yyc_diskcache_set(dc, "k", NULL, 0, NULL, 0);
    void *v = (void *)1;
    size_t n = 99;
    CHECK(yyc_diskcache_get(dc, "k", &v, &n) == YYC_OK && n == 0);
    yyc_free(v);
    yyc_diskcache_release(dc);
    return s;
}
static int empty_value_from_pointer_in_a_file_cache(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, 0); /* threshold 0: every value in a file */
    int s = yyc_diskcache_set(dc, "k", "x", 0, NULL, 0);
    void *v = NULL;
    size_t n = 99;
    CHECK(yyc_diskcache_get(dc, "k", &v, &n) == YYC_OK && n == 0);
    yyc_free(v);
    yyc_diskcache_release(dc);
    return s;
}
static int null_value_with_length(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    int s = yyc_diskcache_set(dc, "k", NULL, 5, NULL, 0);
    CHECK(dc_count(dc) == 0);
    yyc_diskcache_release(dc);
    return s;
}
static int inline_value_over_3gib_is_refused_unread(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, SIZE_MAX); /* everything inline */
    return yyc_diskcache_set(dc, "k", unreadable_3gib(), (size_t)3 << 30, NULL, 0);
}
static int extended_data_over_3gib_is_refused_unread(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    return yyc_diskcache_set(dc, "k", "v", 1, unreadable_3gib(), (size_t)3 << 30);
}
static int kv_sqlite_value_over_3gib_is_refused_unread(const char *dir) {
    yyc_kv *kv = kv_open(dir, YYC_KV_SQLITE);
    int s = yyc_kv_save(kv, "k", unreadable_3gib(), (size_t)3 << 30, NULL, NULL, 0);
    int64_t n = -1;
    CHECK(yyc_kv_count(kv, &n) == YYC_OK && n == 0);
    yyc_kv_close(kv);
    return s;
}
static int kv_value_of_size_max_is_refused_unread(const char *dir) {
    yyc_kv *kv = kv_open(dir, YYC_KV_SQLITE);
    int s = yyc_kv_save(kv, "k", unreadable_3gib(), SIZE_MAX, NULL, NULL, 0);
    yyc_kv_close(kv);
    return s;
}

/* ---------------------------------------------------------------- file names */

static int set_with_filename(const char *dir, const char *name) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    static char big[30000];
    int s = yyc_diskcache_set_with_filename(dc, "k", big, sizeof big, NULL, 0, name);
    if (s != YYC_OK) CHECK(dc_count(dc) == 0);
    yyc_diskcache_release(dc);
    return s;
}
static int filename_with_slash(const char *dir) { return set_with_filename(dir, "a/b"); }
static int filename_dotdot(const char *dir) { return set_with_filename(dir, ".."); }
static int filename_dot(const char *dir) { return set_with_filename(dir, "."); }
static int filename_escaping(const char *dir) { return set_with_filename(dir, "../../escape"); }
static int filename_300_bytes(const char *dir) {
    char *name = long_string(300, 'n');
    int s = set_with_filename(dir, name);
    free(name);
    return s;
}
static int filename_255_bytes(const char *dir) {
    char *name = long_string(255, 'n');
    int s = set_with_filename(dir, name);
    free(name);
    return s;
}
static int filename_empty_means_md5(const char *dir) {
    int s = set_with_filename(dir, "");
    char name[33];
    yyc_kv_md5_filename("k", name);
    char *data = rel_path(dir, "data");
    char *p = rel_path(data, name);
    struct stat sb;
    CHECK(stat(p, &sb) == 0);
    free(p);
    free(data);
    return s;
}

static bool escaping_name(void *ctx, const char *key, char out[256]) {
    (void)ctx;
    (void)key;
    strcpy(out, "../outside");
    return true;
}
static int filename_fn_escaping(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    yyc_diskcache_set_filename_fn(dc, escaping_name, NULL);
    static char big[30000];
    int s = yyc_diskcache_set(dc, "k", big, sizeof big, NULL, 0);
    char *p = rel_path(dir, "outside");
    struct stat sb;
    CHECK(stat(p, &sb) != 0);
    free(p);
    /* Small values do not use the file name: they still work. */
    CHECK(yyc_diskcache_set(dc, "small", "v", 1, NULL, 0) == YYC_OK);
    yyc_diskcache_release(dc);
    return s;
}
static int filename_validity_predicate(const char *dir) {
    (void)dir;
    char *n255 = long_string(255, 'a'), *n256 = long_string(256, 'a');
    CHECK(!yyc_kv_filename_is_valid(NULL));
    CHECK(!yyc_kv_filename_is_valid(""));
    CHECK(!yyc_kv_filename_is_valid("."));
    CHECK(!yyc_kv_filename_is_valid(".."));
    CHECK(!yyc_kv_filename_is_valid("a/b"));
    CHECK(!yyc_kv_filename_is_valid("/abs"));
    CHECK(yyc_kv_filename_is_valid("..."));
    CHECK(yyc_kv_filename_is_valid(".hidden"));
    CHECK(yyc_kv_filename_is_valid(n255));
    CHECK(!yyc_kv_filename_is_valid(n256));
    free(n255);
    free(n256);
    char md5[33];
    yyc_kv_md5_filename("", md5);
    CHECK(strcmp(md5, "d41d8cd98f00b204e9800998ecf8427e") == 0);
    return YYC_OK;
}
static int kv_file_type_without_filename(const char *dir) {
    yyc_kv *kv = kv_open(dir, YYC_KV_FILE);
    int s = yyc_kv_save(kv, "k", "v", 1, NULL, NULL, 0);
    yyc_kv_close(kv);
    return s;
}
static int kv_open_bad_type(const char *dir) {
    yyc_kv *kv = NULL;
    int s = yyc_kv_open(dir, (yyc_kv_type)7, &kv);
    CHECK(kv == NULL);
    return s;
}
static int kv_null_handle_save(const char *dir) {
    (void)dir;
    return yyc_kv_save(NULL, "k", "v", 1, NULL, NULL, 0);
}

/* ---------------------------------------------------------------- lists */

static int kv_remove_keys_empty_list(const char *dir) {
    yyc_kv *kv = kv_open(dir, YYC_KV_MIXED);
    int s = yyc_kv_remove_keys(kv, NULL, 0);
    yyc_kv_close(kv);
    return s;
}
static int kv_remove_keys_null_list(const char *dir) {
    yyc_kv *kv = kv_open(dir, YYC_KV_MIXED);
    int s = yyc_kv_remove_keys(kv, NULL, 3);
    yyc_kv_close(kv);
    return s;
}
static int kv_get_items_empty_list(const char *dir) {
    yyc_kv *kv = kv_open(dir, YYC_KV_MIXED);
    yyc_kv_item **items = (yyc_kv_item **)1;
    size_t n = 99;
    int s = yyc_kv_get_items(kv, NULL, 0, &items, &n);
    CHECK(n == 0);
    yyc_kv_items_free(items, n);
    yyc_kv_close(kv);
    return s;
}

/* ---------------------------------------------------------------- limits */

static int kv_remove_larger_than_int64_min(const char *dir) {
    yyc_kv *kv = kv_open(dir, YYC_KV_MIXED);
    CHECK(yyc_kv_save(kv, "a", "1", 1, NULL, NULL, 0) == YYC_OK);
    int s = yyc_kv_remove_larger_than(kv, INT64_MIN); /* <= 0: everything */
    int64_t n = -1;
    CHECK(yyc_kv_count(kv, &n) == YYC_OK && n == 0);
    yyc_kv_close(kv);
    return s;
}
static int kv_remove_earlier_than_int64_min(const char *dir) {
    yyc_kv *kv = kv_open(dir, YYC_KV_MIXED);
    CHECK(yyc_kv_save(kv, "a", "1", 1, NULL, NULL, 0) == YYC_OK);
    int s = yyc_kv_remove_earlier_than(kv, INT64_MIN); /* <= 0: nothing */
    int64_t n = -1;
    CHECK(yyc_kv_count(kv, &n) == YYC_OK && n == 1);
    yyc_kv_close(kv);
    return s;
}
static int kv_fit_size_int64_min(const char *dir) {
    yyc_kv *kv = kv_open(dir, YYC_KV_MIXED);
    CHECK(yyc_kv_save(kv, "a", "1", 1, NULL, NULL, 0) == YYC_OK);
    int s = yyc_kv_remove_to_fit_size(kv, INT64_MIN);
    int64_t n = -1;
    CHECK(yyc_kv_count(kv, &n) == YYC_OK && n == 0);
    yyc_kv_close(kv);
    return s;
}
static int dc_negative_limits_read_back_as_zero(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    yyc_diskcache_set_count_limit(dc, INT64_MIN);
    CHECK(yyc_diskcache_count_limit(dc) == 0);
    yyc_diskcache_set_cost_limit(dc, -1);
    CHECK(yyc_diskcache_cost_limit(dc) == 0);
    yyc_diskcache_set_free_disk_space_limit(dc, INT64_MIN);
    CHECK(yyc_diskcache_free_disk_space_limit(dc) == 0);
    yyc_diskcache_set_age_limit(dc, -INFINITY);
    CHECK(yyc_diskcache_age_limit(dc) == 0);
    yyc_diskcache_set_count_limit(dc, INT64_MAX);
    CHECK(yyc_diskcache_count_limit(dc) == INT64_MAX);
    yyc_diskcache_release(dc);
    return YYC_OK;
}
static int dc_nan_age_limit_is_not_zero(const char *dir) {
    yyc_diskcache *dc = dc_open(dir, REL_THRESHOLD);
    yyc_diskcache_set_age_limit(dc, NAN);
    double a = yyc_diskcache_age_limit(dc);
    /* NaN must not become "remove everything": either kept as no limit or stored as NaN. */
    CHECK(isnan(a) || a > 0);
    yyc_diskcache_set_auto_trim_interval(dc, NAN);
    yyc_diskcache_set_auto_trim_interval(dc, -INFINITY);
    yyc_diskcache_release(dc);
    return YYC_OK;
}
static int dc_trim_to_age_nan_removes_nothing(const char *dir) {
    yyc_diskcache *dc = dc_filled(dir);
    int s = yyc_diskcache_trim_to_age(dc, NAN);
    CHECK(dc_count(dc) == 3);
    yyc_diskcache_release(dc);
    return s;
}
static int dc_trim_to_age_negative_infinity_removes_all(const char *dir) {
    yyc_diskcache *dc = dc_filled(dir);
    int s = yyc_diskcache_trim_to_age(dc, -INFINITY);
    CHECK(dc_count(dc) == 0);
    yyc_diskcache_release(dc);
    return s;
}
static int dc_trim_to_age_infinity_and_dbl_max_remove_nothing(const char *dir) {
    yyc_diskcache *dc = dc_filled(dir);
    int s = yyc_diskcache_trim_to_age(dc, INFINITY);
    CHECK(yyc_diskcache_trim_to_age(dc, DBL_MAX) == YYC_OK);
    CHECK(dc_count(dc) == 3);
    yyc_diskcache_release(dc);
    return s;
}
static int dc_trim_to_count_int64_min_removes_all(const char *dir) {
    yyc_diskcache *dc = dc_filled(dir);
    int s = yyc_diskcache_trim_to_count(dc, INT64_MIN);
    CHECK(dc_count(dc) == 0);
    yyc_diskcache_release(dc);
    return s;
}
static int dc_trim_to_cost_int64_max_removes_nothing(const char *dir) {
    yyc_diskcache *dc = dc_filled(dir);
    int s = yyc_diskcache_trim_to_cost(dc, INT64_MAX);
    CHECK(yyc_diskcache_trim_to_count(dc, INT64_MAX) == YYC_OK);
    CHECK(dc_count(dc) == 3);
    yyc_diskcache_release(dc);
    return s;
}
static int dc_trim_to_free_space_negative_removes_nothing(const char *dir) {
    yyc_diskcache *dc = dc_filled(dir);
    int s = yyc_diskcache_trim_to_free_space(dc, INT64_MIN);
    CHECK(dc_count(dc) == 3);
    yyc_diskcache_release(dc);
    return s;
}
static int dc_trim_to_free_space_int64_max_removes_all(const char *dir) {
    yyc_diskcache *dc = dc_filled(dir);
    int s = yyc_diskcache_trim_to_free_space(dc, INT64_MAX);
    CHECK(dc_count(dc) == 0);
    yyc_diskcache_release(dc);
    return s;
}

/* ---------------------------------------------------------------- two-level cache */

static int cache_open_empty_path(const char *dir) {
    (void)dir;
    yyc_cache *c = NULL;
    return yyc_cache_open("", &c);
}
static int cache_open_null_path(const char *dir) {
    (void)dir;
    yyc_cache *c = NULL;
    return yyc_cache_open(NULL, &c);
}
static int cache_null_handle_set(const char *dir) {
    (void)dir;
    return yyc_cache_set(NULL, "k", "v", 1);
}
static int cache_empty_key_set(const char *dir) {
    yyc_cache *c = NULL;
    CHECK(yyc_cache_open(dir, &c) == YYC_OK);
    int s = yyc_cache_set(c, "", "v", 1);
    CHECK(!yyc_cache_contains(c, ""));
    yyc_cache_free(c);
    return s;
}

/* ---------------------------------------------------------------- the table */

#define EXACT(fn, s) \
    { #fn, fn, s, K_EXACT }
#define MISUSE(fn, s) \
    { #fn, fn, s, K_MISUSE }

static const row rows[] = {
    EXACT(strerror_of_unknown_code, YYC_OK),
    MISUSE(mem_null_cache_set, YYC_EINVAL),
    MISUSE(mem_null_cache_get, YYC_EINVAL),
    MISUSE(mem_null_cache_remove, YYC_EINVAL),
    EXACT(mem_null_cache_getters, YYC_OK),
    MISUSE(mem_new_null_out, YYC_EINVAL),
    EXACT(mem_null_key_with_length, YYC_EINVAL),
    EXACT(mem_empty_key_is_a_key, YYC_OK),
    EXACT(mem_cost_overflow_saturates, YYC_OK),
    EXACT(mem_nan_and_negative_infinite_ages, YYC_OK),
    EXACT(dc_open_empty_path, YYC_EINVAL),
    MISUSE(dc_open_null_path, YYC_EINVAL),
    MISUSE(dc_open_null_out, YYC_EINVAL),
    EXACT(dc_open_path_too_long, YYC_EINVAL),
    EXACT(dc_open_on_a_regular_file, YYC_EIO),
    MISUSE(dc_null_set, YYC_EINVAL),
    MISUSE(dc_null_get, YYC_EINVAL),
    MISUSE(dc_null_remove, YYC_EINVAL),
    MISUSE(dc_null_remove_all, YYC_EINVAL),
    MISUSE(dc_null_total_count, YYC_EINVAL),
    MISUSE(dc_null_trim, YYC_EINVAL),
    MISUSE(dc_null_contains, YYC_OK),
    EXACT(dc_release_and_close_null, YYC_OK),
    MISUSE(dc_get_null_out, YYC_EINVAL),
    EXACT(dc_after_close, YYC_ECLOSED),
    EXACT(dc_set_empty_key, YYC_EINVAL),
    EXACT(dc_get_empty_key, YYC_NOTFOUND),
    EXACT(dc_remove_empty_key, YYC_OK),
    MISUSE(dc_set_null_key, YYC_EINVAL),
    EXACT(dc_huge_key_round_trips, YYC_OK),
    EXACT(dc_huge_key_large_value, YYC_OK),
    EXACT(key_with_nul_is_truncated_at_the_nul, YYC_OK),
    EXACT(non_utf8_key_round_trips, YYC_OK),
    EXACT(path_like_key_stays_inside, YYC_OK),
    EXACT(empty_value_from_null, YYC_OK),
    EXACT(empty_value_from_pointer_in_a_file_cache, YYC_OK),
    EXACT(null_value_with_length, YYC_EINVAL),
    EXACT(inline_value_over_3gib_is_refused_unread, YYC_ETOOBIG),
    EXACT(extended_data_over_3gib_is_refused_unread, YYC_ETOOBIG),
    EXACT(kv_sqlite_value_over_3gib_is_refused_unread, YYC_ETOOBIG),
    EXACT(kv_value_of_size_max_is_refused_unread, YYC_ETOOBIG),
    EXACT(filename_with_slash, YYC_EINVAL),
    EXACT(filename_dotdot, YYC_EINVAL),
    EXACT(filename_dot, YYC_EINVAL),
    EXACT(filename_escaping, YYC_EINVAL),
    EXACT(filename_300_bytes, YYC_EINVAL),
    EXACT(filename_255_bytes, YYC_OK),
    EXACT(filename_empty_means_md5, YYC_OK),
    EXACT(filename_fn_escaping, YYC_EINVAL),
    EXACT(filename_validity_predicate, YYC_OK),
    EXACT(kv_file_type_without_filename, YYC_EINVAL),
    EXACT(kv_open_bad_type, YYC_EINVAL),
    MISUSE(kv_null_handle_save, YYC_EINVAL),
    EXACT(kv_remove_keys_empty_list, YYC_OK),
    EXACT(kv_remove_keys_null_list, YYC_EINVAL),
    EXACT(kv_get_items_empty_list, YYC_OK),
    EXACT(kv_remove_larger_than_int64_min, YYC_OK),
    EXACT(kv_remove_earlier_than_int64_min, YYC_OK),
    EXACT(kv_fit_size_int64_min, YYC_OK),
    EXACT(dc_negative_limits_read_back_as_zero, YYC_OK),
    EXACT(dc_nan_age_limit_is_not_zero, YYC_OK),
    EXACT(dc_trim_to_age_nan_removes_nothing, YYC_OK),
    EXACT(dc_trim_to_age_negative_infinity_removes_all, YYC_OK),
    EXACT(dc_trim_to_age_infinity_and_dbl_max_remove_nothing, YYC_OK),
    EXACT(dc_trim_to_count_int64_min_removes_all, YYC_OK),
    EXACT(dc_trim_to_cost_int64_max_removes_nothing, YYC_OK),
    EXACT(dc_trim_to_free_space_negative_removes_nothing, YYC_OK),
    EXACT(dc_trim_to_free_space_int64_max_removes_all, YYC_OK),
    EXACT(cache_open_empty_path, YYC_EINVAL),
    MISUSE(cache_open_null_path, YYC_EINVAL),
    MISUSE(cache_null_handle_set, YYC_EINVAL),
    EXACT(cache_empty_key_set, YYC_EINVAL),
};

/* Rows whose current outcome is a known bug: reported, not failed (see the issue 7 report). */
static const char *const known_bugs[][2] = {
    {NULL, NULL},
};

static const char *known_bug(const char *name) {
    for (size_t i = 0; known_bugs[i][0]; i++)
        if (strcmp(known_bugs[i][0], name) == 0) return known_bugs[i][1];
    return NULL;
}

/* Runs one row in a child; returns a description of the outcome in out, and whether it is the
 * expected one. */
static bool run_row(const row *r, char *out, size_t out_len) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        char *dir = test_temp_dir("badinput");
        int s = r->fn(dir);
        test_rm_rf(dir);
        _exit(s == ROW_CHECK_FAILED ? 200 : 100 + s);
    }
    int st = rel_wait(pid, 60.0);
    bool debug = true;
#ifdef NDEBUG
    debug = false;
#endif
    if (st == -1) {
        snprintf(out, out_len, "hung (killed after 60 s)");
        return false;
    }
    if (WIFSIGNALED(st)) {
        snprintf(out, out_len, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
        return r->kind == K_MISUSE && debug && WTERMSIG(st) == SIGABRT;
    }
    int code = WEXITSTATUS(st);
    if (code == 200) {
        snprintf(out, out_len, "a side-effect check failed");
        return false;
    }
    if (code < 100) {
        snprintf(out, out_len, "child exited %d (a sanitizer report or fixture failure)", code);
        return false;
    }
    snprintf(out, out_len, "%s", yyc_status_name(code - 100));
    return code - 100 == r->expect;
}

static void every_bad_input_gets_its_expected_status(void **state) {
    (void)state;
    size_t n = sizeof rows / sizeof rows[0];
    int failures = 0, known = 0;
    for (size_t i = 0; i < n; i++) {
        char outcome[128];
        bool ok = run_row(&rows[i], outcome, sizeof outcome);
        const char *bug = ok ? NULL : known_bug(rows[i].name);
        fprintf(stderr, "%-4s %-55s expected %s%-9s got %s%s%s\n",
                ok    ? "ok"
                : bug ? "BUG"
                      : "FAIL",
                rows[i].name, rows[i].kind == K_MISUSE ? "(misuse) " : "",
                yyc_status_name(rows[i].expect), outcome, bug ? "  known bug " : "",
                bug ? bug : "");
        if (!ok && !bug) failures++;
        if (bug) known++;
    }
    fprintf(stderr, "%zu bad inputs: %d unexpected outcomes, %d known bugs\n", n, failures, known);
    assert_int_equal(failures, 0);
}

/* ---------------------------------------------------------------- fuzz smoke */

/* Runs one fuzz input in a forked child; on failure saves it as a file to replay. */
static bool fuzz_input_passes(const uint8_t *data, size_t len, const char *label) {
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        /* The first byte picks the target: yyc_kv or yyc_diskcache. */
        if (len > 0 && data[0] % 2) rel_fuzz_disk_one(data + 1, len - 1);
        else rel_fuzz_kv_one(len ? data + 1 : data, len ? len - 1 : 0);
        _exit(0);
    }
    int st = rel_wait(pid, 120.0);
    if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0) return true;
    const char *base = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/yyc-fuzz-failure-%s.bin", base && *base ? base : "/tmp", label);
    rel_write_file(path, data, len);
    fprintf(stderr,
            "fuzz input %s failed (wait status %#x); saved as %s (copy it into "
            "Tests/C/fuzz_corpus/kv/ to keep it as a regression test)\n",
            label, st, path);
    return false;
}

/* Random operation sequences on yyc_kv and yyc_diskcache agree with a model
 * (reliability_fuzz.h; the first byte of an input picks the target): fixed-seed
 * random inputs (YYC_FUZZ_SEED, YYC_FUZZ_INPUTS: 40 in `make test`, thousands in `make soak`), then
 * every file of Tests/C/fuzz_corpus/kv/
 * (inputs that once found a bug). */
static void random_operation_sequences_agree_with_a_model(void **state) {
    (void)state;
    uint64_t seed =
        strtoull(getenv("YYC_FUZZ_SEED") ? getenv("YYC_FUZZ_SEED") : "0xF0221", NULL, 0);
    long inputs = getenv("YYC_FUZZ_INPUTS") ? atol(getenv("YYC_FUZZ_INPUTS")) : 40;
    int failures = 0;
    uint64_t rng = seed;
    for (long i = 0; i < inputs; i++) {
        size_t len = (size_t)rel_rand_range(&rng, 16, 600);
        uint8_t *buf = malloc(len);
        for (size_t j = 0; j < len; j++) buf[j] = (uint8_t)rel_splitmix64(&rng);
        char label[64];
        snprintf(label, sizeof label, "%llx-%ld", (unsigned long long)seed, i);
        failures += !fuzz_input_passes(buf, len, label);
        free(buf);
    }
    char corpus[4096];
    snprintf(corpus, sizeof corpus, "%s", __FILE__);
    char *slash = strrchr(corpus, '/');
    int replayed = 0;
    if (slash) {
        snprintf(slash + 1, sizeof corpus - (size_t)(slash + 1 - corpus), "fuzz_corpus/kv");
        DIR *d = opendir(corpus);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            char *p = rel_path(corpus, e->d_name);
            size_t len = 0;
            unsigned char *buf = rel_read_file(p, &len);
            if (buf) {
                failures += !fuzz_input_passes(buf, len, e->d_name);
                replayed++;
            }
            free(buf);
            free(p);
        }
        if (d) closedir(d);
    }
    fprintf(stderr, "fuzz smoke: %ld random inputs (seed %#llx), %d corpus inputs, %d failures\n",
            inputs, (unsigned long long)seed, replayed, failures);
    assert_int_equal(failures, 0);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_bad_input_gets_its_expected_status),
        cmocka_unit_test(random_operation_sequences_agree_with_a_model),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
