/*
 * test_page_cache.c - the size of the manifest connection's page cache
 * (yyc_diskcache_set_page_cache_size, kv_page_cache.c): the default is SQLite's, a size is
 * rounded up to whole KiB and reaches the connection at once, 0 or less restores the default,
 * the size is kept when the connection is opened again, and memory-mapped I/O stays off. Every
 * test works in its own temporary folder.
 */
#include "test_kv_support.h"

#include "kv/kv_private.h"

void yyc__diskcache_testing_page_cache_pragmas(yyc_diskcache *dc, int64_t *cache_size,
                                               int64_t *mmap_size);

static yyc_diskcache *open_cache(const char *dir) {
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 1024, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    return dc;
}

/* The connection's cache_size pragma (negative: KiB), checking that mmap stays off. */
static int64_t cache_pragma(yyc_diskcache *dc) {
    int64_t cache = 0, mmap = -1;
    yyc__diskcache_testing_page_cache_pragmas(dc, &cache, &mmap);
    assert_int_equal(mmap, 0);
    return cache;
}

static void page_cache_size_is_sqlites_default_until_set(void **state) {
    (void)state;
    char *dir = test_temp_dir("page-cache-default");
    yyc_diskcache *dc = open_cache(dir);
    assert_int_equal(yyc_diskcache_page_cache_size(dc), YYC_DISKCACHE_DEFAULT_PAGE_CACHE_SIZE);
    assert_int_equal(yyc_diskcache_page_cache_size(dc), 2000 * 1024);
    assert_int_equal(cache_pragma(dc), -2000);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void page_cache_size_reaches_the_connection_rounded_up_to_kib(void **state) {
    (void)state;
    char *dir = test_temp_dir("page-cache-set");
    yyc_diskcache *dc = open_cache(dir);
    tk_set_str(dc, "k", "v");
    assert_int_equal(yyc_diskcache_set_page_cache_size(dc, 64 * 1024 * 1024), YYC_OK);
    assert_int_equal(yyc_diskcache_page_cache_size(dc), 64 * 1024 * 1024);
    assert_int_equal(cache_pragma(dc), -65536);
    assert_int_equal(yyc_diskcache_set_page_cache_size(dc, 1000), YYC_OK);
    assert_int_equal(yyc_diskcache_page_cache_size(dc), 1024);
    assert_int_equal(cache_pragma(dc), -1);
    assert_int_equal(yyc_diskcache_set_page_cache_size(dc, 3 * 1024 + 1), YYC_OK);
    assert_int_equal(yyc_diskcache_page_cache_size(dc), 4 * 1024);
    assert_int_equal(cache_pragma(dc), -4);
    tk_check_str(dc, "k", "v");
    /* 0 or less: the default again. */
    assert_int_equal(yyc_diskcache_set_page_cache_size(dc, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_page_cache_size(dc), YYC_DISKCACHE_DEFAULT_PAGE_CACHE_SIZE);
    assert_int_equal(cache_pragma(dc), -2000);
    assert_int_equal(yyc_diskcache_set_page_cache_size(dc, 8192), YYC_OK);
    assert_int_equal(yyc_diskcache_set_page_cache_size(dc, -5), YYC_OK);
    assert_int_equal(cache_pragma(dc), -2000);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* Every holder of the path shares the setting; a closed cache refuses it. */
static void page_cache_size_is_core_wide_and_refused_after_close(void **state) {
    (void)state;
    char *dir = test_temp_dir("page-cache-shared");
    yyc_diskcache *a = open_cache(dir), *b = open_cache(dir);
    assert_int_equal(yyc_diskcache_set_page_cache_size(a, 16 * 1024 * 1024), YYC_OK);
    assert_int_equal(yyc_diskcache_page_cache_size(b), 16 * 1024 * 1024);
    yyc_diskcache_close(a);
    assert_int_equal(yyc_diskcache_set_page_cache_size(b, 1024), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_page_cache_size(b), 0);
    yyc_diskcache_release(a);
    yyc_diskcache_release(b);
    test_rm_rf(dir);
    free(dir);
}

/* The storage applies its size again when the connection is opened again (a lazy reopen). */
static void kv_page_cache_size_survives_a_reopen_of_the_connection(void **state) {
    (void)state;
    char *dir = test_temp_dir("page-cache-reopen");
    yyc_kv *kv = NULL;
    assert_int_equal(yyc_kv_open(dir, YYC_KV_SQLITE, &kv), YYC_OK);
    assert_int_equal(yyc__kv_testing_cache_size_pragma(kv), -2000);
    yyc__kv_set_page_cache_kib(kv, 12345);
    assert_int_equal(yyc__kv_testing_cache_size_pragma(kv), -12345);
    yyc__kv_close_connection(kv);
    assert_int_equal(yyc_kv_save(kv, "k", "v", 1, NULL, NULL, 0), YYC_OK); /* (reopens) */
    assert_true(yyc__kv_is_open(kv));
    assert_int_equal(yyc__kv_testing_cache_size_pragma(kv), -12345);
    assert_int_equal(yyc__kv_testing_mmap_size_pragma(kv), 0);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(page_cache_size_is_sqlites_default_until_set),
    cmocka_unit_test(page_cache_size_reaches_the_connection_rounded_up_to_kib),
    cmocka_unit_test(page_cache_size_is_core_wide_and_refused_after_close),
    cmocka_unit_test(kv_page_cache_size_survives_a_reopen_of_the_connection),
};

YYC_TEST_MAIN(tests)
