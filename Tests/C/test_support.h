/*
 * test_support.h - shared helpers for the C tests (cmocka).
 *
 * Every test file ends with YYC_TEST_MAIN(tests): run with no argument it runs every case; with
 * one argument it runs only the case of that name (how ctest gets one entry per case).
 */
#ifndef YYCACHE_TEST_SUPPORT_H
#define YYCACHE_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ftw.h>

#include <cmocka.h>

#include <yycache/yycache.h>

#define YYC_TEST_MAIN(tests)                              \
    int main(int argc, char **argv) {                     \
        if (argc > 1) cmocka_set_test_filter(argv[1]);    \
        return cmocka_run_group_tests(tests, NULL, NULL); \
    }

/* Whether this is a soak run (`make soak` sets YYC_SOAK=1): stress tests pick their long rounds
 * with TEST_SOAK_OR(quick, soak), so `make test` stays fast and runs every case all the same. */
static inline int test_soak(void) {
    const char *s = getenv("YYC_SOAK");
    return s && *s && strcmp(s, "0") != 0;
}
#define TEST_SOAK_OR(quick, soak) (test_soak() ? (soak) : (quick))

/* Seconds on CLOCK_MONOTONIC. */
static inline double test_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Polls cond (an expression) every millisecond until it holds or `seconds` pass; evaluates to
 * whether it held. Use instead of sleeping a fixed guess. */
#define WAIT_UNTIL(cond, seconds)                   \
    ({                                              \
        double deadline__ = test_now() + (seconds); \
        bool ok__ = (cond);                         \
        while (!ok__ && test_now() < deadline__) {  \
            usleep(1000);                           \
            ok__ = (cond);                          \
        }                                           \
        ok__;                                       \
    })

static int test_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes a folder tree (no symlink is followed). */
static inline void test_rm_rf(const char *path) {
    nftw(path, test_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Creates a fresh temporary folder for one test; the caller frees the string after
 * test_rm_rf. */
static inline char *test_temp_dir(const char *tag) {
    const char *base = getenv("TMPDIR");
    char templ[4096];
    snprintf(templ, sizeof templ, "%s/yyc-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    char *dir = mkdtemp(templ);
    assert_non_null(dir);
    return strdup(dir);
}

/* A two-level cache in a fresh temporary folder (*dir: free it with test_cache_close). */
static inline yyc_cache *test_cache_open(const char *tag, char **dir) {
    *dir = test_temp_dir(tag);
    yyc_cache *c = NULL;
    assert_int_equal(yyc_cache_open(*dir, &c), YYC_OK);
    return c;
}

/* Frees a cache of test_cache_open and removes its folder. */
static inline void test_cache_close(yyc_cache *c, char *dir) {
    yyc_cache_free(c);
    test_rm_rf(dir);
    free(dir);
}

#endif /* YYCACHE_TEST_SUPPORT_H */
