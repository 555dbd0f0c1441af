/* test_cache.c - the two-level cache from C: read-through, back-fill, write-through, removal. */
#include "test_support.h"

typedef struct fixture {
    char *dir;
    yyc_cache *cache;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->dir = test_temp_dir("cache");
    assert_int_equal(yyc_cache_open(f->dir, &f->cache), YYC_OK);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    yyc_cache_free(f->cache);
    test_rm_rf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void expect_cached(yyc_cache *c, const char *key, const char *expected) {
    void *value = NULL;
    size_t len = 0;
    assert_int_equal(yyc_cache_get(c, key, &value, &len), YYC_OK);
    assert_int_equal(len, strlen(expected));
    assert_memory_equal(value, expected, len);
    yyc_free(value);
}

static void set_writes_through_to_both_tiers(void **state) {
    fixture *f = *state;
    assert_int_equal(yyc_cache_set(f->cache, "greeting", "hello", 5), YYC_OK);
    assert_true(yyc_memcache_contains(yyc_cache_memory(f->cache), "greeting", 8));
    assert_true(yyc_diskcache_contains(yyc_cache_disk(f->cache), "greeting"));
    expect_cached(f->cache, "greeting", "hello");
}

static void disk_hit_is_back_filled_into_memory(void **state) {
    fixture *f = *state;
    assert_int_equal(yyc_diskcache_set(yyc_cache_disk(f->cache), "only-on-disk", "abc", 3, NULL, 0), YYC_OK);
    assert_false(yyc_memcache_contains(yyc_cache_memory(f->cache), "only-on-disk", 12));
    expect_cached(f->cache, "only-on-disk", "abc");
    assert_true(yyc_memcache_contains(yyc_cache_memory(f->cache), "only-on-disk", 12));
    /* Now served from memory even after the disk forgets it. */
    assert_int_equal(yyc_diskcache_remove(yyc_cache_disk(f->cache), "only-on-disk"), YYC_OK);
    expect_cached(f->cache, "only-on-disk", "abc");
}

static void value_survives_a_new_cache_on_the_same_path(void **state) {
    fixture *f = *state;
    char big[30000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
    assert_int_equal(yyc_cache_set(f->cache, "small", "s", 1), YYC_OK);
    assert_int_equal(yyc_cache_set(f->cache, "big", big, sizeof big), YYC_OK);
    yyc_cache_free(f->cache);
    assert_int_equal(yyc_cache_open(f->dir, &f->cache), YYC_OK);
    assert_false(yyc_memcache_contains(yyc_cache_memory(f->cache), "small", 5));
    expect_cached(f->cache, "small", "s");
    void *value = NULL;
    size_t len = 0;
    assert_int_equal(yyc_cache_get(f->cache, "big", &value, &len), YYC_OK);
    assert_int_equal(len, sizeof big);
    assert_memory_equal(value, big, len);
    yyc_free(value);
}

static void remove_clears_both_tiers(void **state) {
    fixture *f = *state;
    assert_int_equal(yyc_cache_set(f->cache, "k", "v", 1), YYC_OK);
    assert_true(yyc_cache_contains(f->cache, "k"));
    assert_int_equal(yyc_cache_remove(f->cache, "k"), YYC_OK);
    assert_false(yyc_cache_contains(f->cache, "k"));
    assert_false(yyc_memcache_contains(yyc_cache_memory(f->cache), "k", 1));
    assert_false(yyc_diskcache_contains(yyc_cache_disk(f->cache), "k"));
    void *value = (void *)1;
    size_t len = 7;
    assert_int_equal(yyc_cache_get(f->cache, "k", &value, &len), YYC_NOTFOUND);
    assert_null(value);
    assert_int_equal(len, 0);
    assert_int_equal(yyc_cache_remove(f->cache, "never-set"), YYC_OK);
}

static void remove_all_clears_both_tiers(void **state) {
    fixture *f = *state;
    char key[32];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "key_%d", i);
        assert_int_equal(yyc_cache_set(f->cache, key, key, strlen(key)), YYC_OK);
    }
    assert_int_equal(yyc_cache_remove_all(f->cache), YYC_OK);
    assert_int_equal(yyc_memcache_total_count(yyc_cache_memory(f->cache)), 0);
    int64_t count = -1;
    assert_int_equal(yyc_diskcache_total_count(yyc_cache_disk(f->cache), &count), YYC_OK);
    assert_int_equal(count, 0);
    assert_false(yyc_cache_contains(f->cache, "key_5"));
}

static void contains_does_not_back_fill(void **state) {
    fixture *f = *state;
    assert_int_equal(yyc_diskcache_set(yyc_cache_disk(f->cache), "d", "1", 1, NULL, 0), YYC_OK);
    assert_true(yyc_cache_contains(f->cache, "d"));
    assert_false(yyc_memcache_contains(yyc_cache_memory(f->cache), "d", 1));
}

static void empty_value_round_trips(void **state) {
    fixture *f = *state;
    assert_int_equal(yyc_cache_set(f->cache, "empty", NULL, 0), YYC_OK);
    void *value = (void *)1;
    size_t len = 99;
    assert_int_equal(yyc_cache_get(f->cache, "empty", &value, &len), YYC_OK);
    assert_int_equal(len, 0);
    yyc_free(value);
    yyc_memcache_remove_all(yyc_cache_memory(f->cache)); /* now from disk */
    assert_int_equal(yyc_cache_get(f->cache, "empty", &value, &len), YYC_OK);
    assert_int_equal(len, 0);
    yyc_free(value);
}

static void bad_input_gets_a_clear_status(void **state) {
    fixture *f = *state;
    void *value = NULL;
    size_t len = 0;
    assert_int_equal(yyc_cache_set(f->cache, "", "x", 1), YYC_EINVAL);
    assert_int_equal(yyc_cache_get(f->cache, "", &value, &len), YYC_NOTFOUND);
    assert_false(yyc_cache_contains(f->cache, ""));
    assert_int_equal(yyc_cache_remove(f->cache, ""), YYC_OK);
    assert_int_equal(yyc_cache_set(f->cache, "k", NULL, 3), YYC_EINVAL);
    assert_int_equal(yyc_cache_set(NULL, "k", "x", 1), YYC_EINVAL);
    assert_int_equal(yyc_cache_get(NULL, "k", &value, &len), YYC_EINVAL);
    assert_int_equal(yyc_cache_remove_all(NULL), YYC_EINVAL);
    assert_false(yyc_cache_contains(NULL, "k"));
    yyc_cache *none = (yyc_cache *)1;
    assert_int_equal(yyc_cache_open("", &none), YYC_EINVAL);
    assert_null(none);
    assert_int_equal(yyc_cache_open(NULL, &none), YYC_EINVAL);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_EINVAL);
    yyc_cache_free(NULL);
}

static void two_caches_on_one_path_share_the_disk_core(void **state) {
    fixture *f = *state;
    yyc_cache *other = NULL;
    assert_int_equal(yyc_cache_open(f->dir, &other), YYC_OK);
    assert_ptr_equal(yyc_cache_disk(other), yyc_cache_disk(f->cache));
    assert_int_equal(yyc_cache_set(f->cache, "shared", "yes", 3), YYC_OK);
    expect_cached(other, "shared", "yes");
    yyc_cache_free(other);
    expect_cached(f->cache, "shared", "yes");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(set_writes_through_to_both_tiers, setup, teardown),
    cmocka_unit_test_setup_teardown(disk_hit_is_back_filled_into_memory, setup, teardown),
    cmocka_unit_test_setup_teardown(value_survives_a_new_cache_on_the_same_path, setup, teardown),
    cmocka_unit_test_setup_teardown(remove_clears_both_tiers, setup, teardown),
    cmocka_unit_test_setup_teardown(remove_all_clears_both_tiers, setup, teardown),
    cmocka_unit_test_setup_teardown(contains_does_not_back_fill, setup, teardown),
    cmocka_unit_test_setup_teardown(empty_value_round_trips, setup, teardown),
    cmocka_unit_test_setup_teardown(bad_input_gets_a_clear_status, setup, teardown),
    cmocka_unit_test_setup_teardown(two_caches_on_one_path_share_the_disk_core, setup, teardown),
};

YYC_TEST_MAIN(tests)
