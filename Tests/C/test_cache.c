/* test_cache.c - the two-level cache from C: read-through, back-fill, write-through, removal. */
#include "test_support.h"

#include <sys/stat.h>

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
    assert_int_equal(yyc_diskcache_set(yyc_cache_disk(f->cache), "only-on-disk", "abc", 3, NULL, 0),
                     YYC_OK);
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

static void memory_cost_of_an_entry_is_its_length(void **state) {
    fixture *f = *state;
    yyc_memcache *m = yyc_cache_memory(f->cache);
    char value[300] = {0};
    assert_int_equal(yyc_cache_set(f->cache, "a", value, 100), YYC_OK);
    assert_int_equal(yyc_memcache_total_cost(m), 100);
    assert_int_equal(yyc_cache_set(f->cache, "a", value, 300), YYC_OK); /* replaced */
    assert_int_equal(yyc_memcache_total_cost(m), 300);
    assert_int_equal(yyc_diskcache_set(yyc_cache_disk(f->cache), "b", value, 42, NULL, 0), YYC_OK);
    void *out = NULL;
    size_t len = 0;
    assert_int_equal(yyc_cache_get(f->cache, "b", &out, &len), YYC_OK); /* back-filled */
    yyc_free(out);
    assert_int_equal(yyc_memcache_total_cost(m), 342);
    /* So the cost limit bounds the memory tier. */
    yyc_memcache_trim_to_cost(m, 100);
    assert_int_equal(yyc_memcache_total_cost(m), 42);
}

static void memory_tier_is_bounded_by_default_by_a_quarter_of_available_memory(void **state) {
    fixture *f = *state;
    uint64_t available = yyc_available_memory();
    assert_true(available > 0);
    assert_int_equal(yyc_memcache_cost_limit(yyc_cache_memory(f->cache)), available / 4);
}

/* --- yyc_available_memory, on fixture folders */

uint64_t yyc__available_memory_under(const char *root);

/* Writes text to root/relative, creating the folders. */
static void put_file(const char *root, const char *relative, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, relative);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs(text, file);
    fclose(file);
}

static uint64_t physical(void) {
    return (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void available_memory_is_the_smallest_cgroup_v2_limit_on_the_path(void **state) {
    (void)state;
    char *root = test_temp_dir("memfix");
    put_file(root, "proc/self/cgroup", "0::/user.slice/app.scope\n");
    put_file(root, "sys/fs/cgroup/user.slice/app.scope/memory.max", "max\n");
    put_file(root, "sys/fs/cgroup/user.slice/memory.max", "1073741824\n");
    put_file(root, "sys/fs/cgroup/memory.max", "2147483648\n");
    assert_int_equal(yyc__available_memory_under(root), 1073741824ull);
    put_file(root, "sys/fs/cgroup/user.slice/app.scope/memory.max", "536870912\n");
    assert_int_equal(yyc__available_memory_under(root), 536870912ull);
    /* A limit above physical memory is no limit. */
    put_file(root, "sys/fs/cgroup/user.slice/app.scope/memory.max", "max\n");
    put_file(root, "sys/fs/cgroup/user.slice/memory.max", "max\n");
    put_file(root, "sys/fs/cgroup/memory.max", "18446744073709551615\n");
    assert_int_equal(yyc__available_memory_under(root), physical());
    test_rm_rf(root);
    free(root);
}

static void available_memory_falls_back_to_cgroup_v1_then_physical_memory(void **state) {
    (void)state;
    char *root = test_temp_dir("memfix");
    /* Hybrid: the unified hierarchy has no memory controller; v1's memory line has others too. */
    put_file(root, "proc/self/cgroup", "9:name=systemd:/\n4:cpu,memory:/box/inner\n0::/\n");
    put_file(root, "sys/fs/cgroup/memory/box/memory.limit_in_bytes", "268435456\n");
    assert_int_equal(yyc__available_memory_under(root), 268435456ull);
    /* The container's view lacks its own path: the limits of the folders that exist count. */
    put_file(root, "proc/self/cgroup", "4:memory:/not/in/this/view\n");
    put_file(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    assert_int_equal(yyc__available_memory_under(root), physical()); /* v1's "no limit" */
    put_file(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "134217728\n");
    assert_int_equal(yyc__available_memory_under(root), 134217728ull);
    /* Garbage, empty files, no /proc at all: physical memory. */
    put_file(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "12abc\n");
    assert_int_equal(yyc__available_memory_under(root), physical());
    put_file(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "");
    assert_int_equal(yyc__available_memory_under(root), physical());
    put_file(root, "proc/self/cgroup", "garbage without colons\n::\n");
    assert_int_equal(yyc__available_memory_under(root), physical());
    assert_int_equal(yyc__available_memory_under("/nonexistent-root"), physical());
    test_rm_rf(root);
    free(root);
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
    cmocka_unit_test_setup_teardown(memory_cost_of_an_entry_is_its_length, setup, teardown),
    cmocka_unit_test_setup_teardown(
        memory_tier_is_bounded_by_default_by_a_quarter_of_available_memory, setup, teardown),
    cmocka_unit_test(available_memory_is_the_smallest_cgroup_v2_limit_on_the_path),
    cmocka_unit_test(available_memory_falls_back_to_cgroup_v1_then_physical_memory),
};

YYC_TEST_MAIN(tests)
