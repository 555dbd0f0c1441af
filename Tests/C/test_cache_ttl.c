/*
 * test_cache_ttl.c - the two-level cache's time to live (cache.h yyc_cache_set_with_ttl): both
 * tiers expire together, and a back-fill from disk keeps the disk entry's remaining time to
 * live. Both clocks are the test builds' (memory: monotonic seconds; disk: frozen unix ms),
 * moved together, never slept. Every test works in its own temporary folder.
 */
#include "test_kv_support.h"

#include "kv/kv_private.h"

#include <math.h>

void yyc__memcache_testing_advance_clock(double seconds);

static void advance(double seconds) {
    yyc__memcache_testing_advance_clock(seconds);
    yyc__kv_testing_advance_clock((int64_t)llround(seconds * 1000));
}

/* A cache in a fresh folder, both test clocks frozen (moved only by advance). */
static yyc_cache *frozen_cache(char **dir) {
    yyc__kv_testing_freeze_clock(true);
    return test_cache_open("cttl", dir);
}

static bool readable(yyc_cache *c, const char *key) {
    void *v = NULL;
    size_t len = 0;
    int rc = yyc_cache_get(c, key, &v, &len);
    assert_true(rc == YYC_OK || rc == YYC_NOTFOUND);
    yyc_free(v);
    return rc == YYC_OK;
}

static void cache_time_to_live_applies_to_both_tiers(void **state) {
    (void)state;
    char *dir;
    yyc_cache *c = frozen_cache(&dir);
    assert_int_equal(yyc_cache_set_with_ttl(c, "k", "v", 1, 10), YYC_OK);
    assert_int_equal(yyc_cache_set_with_ttl(c, "never", "v", 1, INFINITY), YYC_OK);
    assert_int_equal(yyc_cache_set_with_ttl(c, "bad", "v", 1, -1), YYC_EINVAL);
    double mem = 0, disk = 0;
    assert_int_equal(yyc_memcache_time_to_live(yyc_cache_memory(c), "k", 1, &mem), YYC_OK);
    assert_int_equal(yyc_diskcache_time_to_live(yyc_cache_disk(c), "k", &disk), YYC_OK);
    assert_true(mem > 9.9 && mem <= 10 && disk > 9.9 && disk <= 10);
    advance(10);
    assert_false(readable(c, "k"));
    assert_false(yyc_diskcache_contains(yyc_cache_disk(c), "k"));
    assert_true(readable(c, "never"));
    test_cache_close(c, dir);
}

static void cache_back_fill_keeps_the_remaining_time_to_live(void **state) {
    (void)state;
    char *dir;
    yyc_cache *c = frozen_cache(&dir);
    yyc_memcache_set_default_time_to_live(yyc_cache_memory(c), 1000); /* not for back-fills */
    assert_int_equal(yyc_cache_set_with_ttl(c, "k", "v", 1, 10), YYC_OK);
    yyc_memcache_remove_all(yyc_cache_memory(c));
    advance(4);
    assert_true(readable(c, "k")); /* from disk, filled into memory */
    double mem = 0;
    assert_int_equal(yyc_memcache_time_to_live(yyc_cache_memory(c), "k", 1, &mem), YYC_OK);
    assert_true(mem > 5.9 && mem <= 6.0);
    advance(6);
    assert_false(yyc_memcache_contains(yyc_cache_memory(c), "k", 1)); /* memory let it go too */
    assert_false(readable(c, "k"));
    /* A value without a time to live is filled without one (not the memory default). */
    assert_int_equal(yyc_cache_set_with_ttl(c, "n", "v", 1, INFINITY), YYC_OK);
    yyc_memcache_remove_all(yyc_cache_memory(c));
    assert_true(readable(c, "n"));
    assert_int_equal(yyc_memcache_time_to_live(yyc_cache_memory(c), "n", 1, &mem), YYC_OK);
    assert_true(isinf(mem));
    test_cache_close(c, dir);
}

/* Only the wall clock moves (a forward step, as after an NTP correction): the disk's deadline
 * has passed, and the memory copy, which carries it, is no longer served either. */
static void cache_a_forward_wall_clock_step_expires_the_memory_copy_with_the_disk(void **state) {
    (void)state;
    char *dir;
    yyc_cache *c = frozen_cache(&dir);
    assert_int_equal(yyc_cache_set_with_ttl(c, "k", "v", 1, 10), YYC_OK);
    assert_true(readable(c, "k"));
    yyc__kv_testing_advance_clock(10 * 1000); /* the monotonic clock stays */
    assert_false(yyc_cache_contains(c, "k"));
    assert_false(readable(c, "k"));
    test_cache_close(c, dir);
}

/* The disk tier's default time to live reaches the memory copy of a plain set. */
static void cache_the_disk_tiers_default_time_to_live_reaches_the_memory_copy(void **state) {
    (void)state;
    char *dir;
    yyc_cache *c = frozen_cache(&dir);
    yyc_diskcache_set_default_time_to_live(yyc_cache_disk(c), 10);
    assert_int_equal(yyc_cache_set(c, "k", "v", 1), YYC_OK);
    double mem = 0;
    assert_int_equal(yyc_memcache_time_to_live(yyc_cache_memory(c), "k", 1, &mem), YYC_OK);
    assert_true(mem > 9.9 && mem <= 10);
    advance(10);
    assert_false(yyc_cache_contains(c, "k"));
    assert_false(readable(c, "k"));
    test_cache_close(c, dir);
}

/* A hostile REAL expiry in the row: the back-filled memory copy keeps it as the disk reads it
 * (it used to be copied as "never expires"). */
static void cache_a_back_fill_of_a_real_expiry_keeps_it(void **state) {
    (void)state;
    char *dir;
    yyc_cache *c = frozen_cache(&dir);
    assert_int_equal(yyc_cache_set_with_ttl(c, "k", "v", 1, 1000), YYC_OK);
    char sql[160];
    snprintf(sql, sizeof sql, "update manifest set yyc_expiry_ms = %lld.5 where key = 'k';",
             (long long)yyc__kv_now_ms() + 10 * 1000);
    tk_exec(dir, sql);
    yyc_memcache_remove_all(yyc_cache_memory(c));
    double disk = 0;
    assert_int_equal(yyc_diskcache_time_to_live(yyc_cache_disk(c), "k", &disk), YYC_OK);
    assert_true(disk > 9.9 && disk <= 10.001);
    assert_true(readable(c, "k")); /* back-filled */
    advance(11);
    assert_false(readable(c, "k"));
    test_cache_close(c, dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(cache_a_forward_wall_clock_step_expires_the_memory_copy_with_the_disk),
    cmocka_unit_test(cache_the_disk_tiers_default_time_to_live_reaches_the_memory_copy),
    cmocka_unit_test(cache_a_back_fill_of_a_real_expiry_keeps_it),
    cmocka_unit_test(cache_time_to_live_applies_to_both_tiers),
    cmocka_unit_test(cache_back_fill_keeps_the_remaining_time_to_live),
};

YYC_TEST_MAIN(tests)
