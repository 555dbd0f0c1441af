/*
 * main.c - a C program that uses the installed YYCache library the way a consumer would:
 * only <yycache/yycache.h> and the installed library (found by find_package(YYCache) or by
 * pkg-config yycache). Exercises the memory cache, the disk cache and the two-level cache,
 * checks every result, and exits non-zero on the first failure.
 *
 * Built by scripts/consumer-test.sh (run by `make test`) against a temporary install prefix.
 * YYC_CONSUMER_EXPECTED_VERSION, when defined, must equal yyc_version().
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#define _XOPEN_SOURCE 700       /* nftw */

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yycache/yycache.h>

static int failures;

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "consumer: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                                        \
            return;                                                                            \
        }                                                                                      \
    } while (0)

#define CHECK_STATUS(expr, expected)                                                         \
    do {                                                                                     \
        int status_ = (expr);                                                                \
        if (status_ != (expected)) {                                                         \
            fprintf(stderr, "consumer: %s:%d: %s returned %s (%s), expected %s\n", __FILE__, \
                    __LINE__, #expr, yyc_status_name(status_), yyc_strerror(status_),        \
                    yyc_status_name(expected));                                              \
            failures++;                                                                      \
            return;                                                                          \
        }                                                                                    \
    } while (0)

/* --- helpers ----------------------------------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void check_version(void) {
    const char *version = yyc_version();
    CHECK(version != NULL && version[0] != '\0');
#ifdef YYC_CONSUMER_EXPECTED_VERSION
    if (strcmp(version, YYC_CONSUMER_EXPECTED_VERSION) != 0) {
        fprintf(stderr, "consumer: yyc_version() is %s, the package says %s\n", version,
                YYC_CONSUMER_EXPECTED_VERSION);
        failures++;
        return;
    }
#endif
    CHECK(strcmp(yyc_status_name(YYC_NOTFOUND), "NOTFOUND") == 0);
    printf("consumer: libyycache %s\n", version);
}

/* --- memory cache: values are reference-counted by the caller's callbacks ------------------ */

typedef struct counted {
    int refs;
    int payload;
} counted;

static void *counted_retain(void *ctx, void *value) {
    (void)ctx;
    ((counted *)value)->refs++; /* runs under the cache's lock, one at a time here */
    return value;
}

static void counted_release(void *ctx, void *value) {
    (void)ctx;
    ((counted *)value)->refs--;
}

static void use_memory_cache(void) {
    counted a = {1, 42}, b = {1, 7};
    yyc_value_callbacks cb = {counted_retain, counted_release, NULL};
    yyc_memcache *mc = NULL;
    void *out = NULL;

    CHECK_STATUS(yyc_memcache_new(&cb, &mc), YYC_OK);
    yyc_memcache_set_release_asynchronously(mc, false);
    CHECK_STATUS(yyc_memcache_set(mc, "a", 1, &a, 10), YYC_OK);
    CHECK_STATUS(yyc_memcache_set(mc, "b", 1, &b, 5), YYC_OK);
    CHECK(yyc_memcache_total_count(mc) == 2);
    CHECK(yyc_memcache_total_cost(mc) == 15);

    CHECK_STATUS(yyc_memcache_get(mc, "a", 1, &out), YYC_OK);
    CHECK(out == &a && ((counted *)out)->payload == 42);
    counted_release(NULL, out); /* get transferred one reference to us */
    CHECK_STATUS(yyc_memcache_get(mc, "missing", 7, &out), YYC_NOTFOUND);
    CHECK(out == NULL);

    yyc_memcache_trim_to_count(mc, 1); /* evicts "b", the least recently used */
    CHECK(!yyc_memcache_contains(mc, "b", 1));
    CHECK(yyc_memcache_contains(mc, "a", 1));
    CHECK(b.refs == 1);

    yyc_memcache_free(mc); /* releases "a" before returning */
    CHECK(a.refs == 1);
    CHECK_STATUS(yyc_memcache_set(NULL, "a", 1, &a, 0), YYC_EINVAL);
    printf("consumer: memory cache ok\n");
}

/* --- disk cache ---------------------------------------------------------------------------- */

static void use_disk_cache(const char *dir) {
    char path[4096];
    yyc_diskcache *dc = NULL;
    void *value = NULL;
    size_t len = 0;
    int64_t count = -1;
    static unsigned char big[64 * 1024]; /* above the inline threshold: stored in data/ */

    memset(big, 0xab, sizeof big);
    snprintf(path, sizeof path, "%s/disk", dir);
    CHECK_STATUS(yyc_diskcache_open(path, 20480, &dc), YYC_OK);
    CHECK_STATUS(yyc_diskcache_set(dc, "small", "hello", 5, NULL, 0), YYC_OK);
    CHECK_STATUS(yyc_diskcache_set(dc, "big", big, sizeof big, "ext", 3), YYC_OK);

    CHECK_STATUS(yyc_diskcache_get(dc, "small", &value, &len), YYC_OK);
    CHECK(len == 5 && memcmp(value, "hello", 5) == 0);
    yyc_free(value);
    value = NULL;
    CHECK_STATUS(yyc_diskcache_get(dc, "big", &value, &len), YYC_OK);
    CHECK(len == sizeof big && memcmp(value, big, sizeof big) == 0);
    yyc_free(value);
    value = NULL;
    CHECK_STATUS(yyc_diskcache_get(dc, "missing", &value, &len), YYC_NOTFOUND);

    CHECK_STATUS(yyc_diskcache_total_count(dc, &count), YYC_OK);
    CHECK(count == 2);
    CHECK_STATUS(yyc_diskcache_remove(dc, "small"), YYC_OK);
    CHECK(!yyc_diskcache_contains(dc, "small"));
    CHECK(yyc_diskcache_contains(dc, "big"));
    CHECK_STATUS(yyc_diskcache_remove_all(dc), YYC_OK);
    CHECK_STATUS(yyc_diskcache_total_count(dc, &count), YYC_OK);
    CHECK(count == 0);
    yyc_diskcache_release(dc);
    printf("consumer: disk cache ok\n");
}

/* --- two-level cache ----------------------------------------------------------------------- */

static void use_two_level_cache(const char *dir) {
    char path[4096];
    yyc_cache *c = NULL;
    void *value = NULL;
    size_t len = 0;

    snprintf(path, sizeof path, "%s/cache", dir);
    CHECK_STATUS(yyc_cache_open(path, &c), YYC_OK);
    CHECK_STATUS(yyc_cache_set(c, "key", "value", 5), YYC_OK);
    CHECK(yyc_cache_contains(c, "key"));

    /* Drop the memory tier: the read must come from disk (and back-fill memory). */
    yyc_memcache_remove_all(yyc_cache_memory(c));
    CHECK_STATUS(yyc_cache_get(c, "key", &value, &len), YYC_OK);
    CHECK(len == 5 && memcmp(value, "value", 5) == 0);
    yyc_free(value);
    value = NULL;

    CHECK_STATUS(yyc_cache_remove(c, "key"), YYC_OK);
    CHECK(!yyc_cache_contains(c, "key"));
    CHECK_STATUS(yyc_cache_get(c, "key", &value, &len), YYC_NOTFOUND);
    yyc_cache_free(c);
    printf("consumer: two-level cache ok\n");
}

int main(void) {
    char dir[] = "/tmp/yycache-consumer-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("consumer: mkdtemp");
        return 1;
    }

    check_version();
    use_memory_cache();
    use_disk_cache(dir);
    use_two_level_cache(dir);

    remove_tree(dir);
    if (failures != 0) {
        fprintf(stderr, "consumer: %d check(s) failed\n", failures);
        return 1;
    }
    printf("consumer: all checks passed\n");
    return 0;
}
