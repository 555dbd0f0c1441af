/*
 * test_memory_cache_keys.c - yyc_memcache_copy_keys (memory_cache.h "Keys"): a snapshot in the
 * policy's order (LRU: most recently used first; SIEVE and S3-FIFO: newest insertion first),
 * expired entries excluded and reported, the empty key, an empty cache, no hit counted.
 */
#include "policy_support.h"

#include <stdatomic.h>

bool yyc__memcache_check(yyc_memcache *c);
void yyc__memcache_testing_advance_clock(double seconds);

static yyc_memcache *new_cache(void) {
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    yyc_memcache_set_release_asynchronously(c, false);
    yyc_memcache_set_auto_trim_interval(c, 0);
    return c;
}

/* The keys as one string, comma-separated ("" for none). */
static void keys_text(yyc_memcache *c, char *out, size_t cap) {
    yyc_memcache_key *keys = (yyc_memcache_key *)1;
    size_t n = 99;
    assert_int_equal(yyc_memcache_copy_keys(c, &keys, &n), YYC_OK);
    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        assert_non_null(keys[i].bytes);
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%.*s", i ? "," : "", (int)keys[i].len,
                 (const char *)keys[i].bytes);
    }
    if (n == 0) assert_null(keys);
    yyc_free(keys);
}

static void put(yyc_memcache *c, const char *key) {
    assert_int_equal(yyc_memcache_set(c, key, strlen(key), (void *)1, 0), YYC_OK);
}

static void lru_keys_are_most_recently_used_first(void **state) {
    (void)state;
    yyc_memcache *c = new_cache();
    put(c, "a");
    put(c, "b");
    put(c, "c");
    void *v;
    assert_int_equal(yyc_memcache_get(c, "a", 1, &v), YYC_OK);
    char text[64];
    keys_text(c, text, sizeof text);
    assert_string_equal(text, "a,c,b");
    keys_text(c, text, sizeof text); /* not a use: the same order again */
    assert_string_equal(text, "a,c,b");
    yyc_memcache_free(c);
}

static void sieve_and_s3fifo_keys_are_newest_insertion_first(void **state) {
    (void)state;
    for (int p = YYC_EVICT_SIEVE; p <= YYC_EVICT_S3FIFO; p++) {
        yyc_memcache *c = new_cache();
        assert_int_equal(yyc_memcache_set_policy(c, (yyc_eviction_policy)p), YYC_OK);
        put(c, "a");
        put(c, "b");
        put(c, "c");
        void *v;
        assert_int_equal(yyc_memcache_get(c, "a", 1, &v), YYC_OK); /* a hit moves nothing */
        char text[64];
        keys_text(c, text, sizeof text);
        assert_string_equal(text, "c,b,a");
        yyc_memcache_free(c);
    }
}

static int expired_reports;
static void count_expired(void *ctx, const void *key, size_t key_len, void *value,
                          yyc_removal_cause cause) {
    (void)ctx, (void)key, (void)key_len, (void)value;
    if (cause == YYC_REMOVED_EXPIRED) expired_reports++;
}

static void expired_entries_are_left_out_and_reported(void **state) {
    (void)state;
    yyc_memcache *c = new_cache();
    yyc_memcache_set_removal_listener(c, count_expired, NULL);
    expired_reports = 0;
    put(c, "stays");
    assert_int_equal(yyc_memcache_set_with_ttl(c, "goes", 4, (void *)1, 0, 1.0), YYC_OK);
    assert_int_equal(yyc_memcache_set(c, "", 0, (void *)1, 0), YYC_OK); /* the empty key */
    yyc__memcache_testing_advance_clock(1.0);
    yyc_memcache_key *keys;
    size_t n;
    assert_int_equal(yyc_memcache_copy_keys(c, &keys, &n), YYC_OK);
    assert_int_equal(n, 2);
    bool saw_empty = false, saw_stays = false;
    for (size_t i = 0; i < n; i++) {
        saw_empty |= keys[i].len == 0;
        saw_stays |= keys[i].len == 5 && memcmp(keys[i].bytes, "stays", 5) == 0;
    }
    assert_true(saw_empty && saw_stays);
    yyc_free(keys);
    assert_int_equal(expired_reports, 1);
    assert_int_equal(yyc_memcache_total_count(c), 2);
    yyc_cache_statistics s;
    assert_int_equal(yyc_memcache_statistics(c, &s), YYC_OK);
    assert_int_equal(s.hits + s.misses, 0);
    yyc_memcache_free(c);
}

static void an_empty_cache_has_no_keys(void **state) {
    (void)state;
    yyc_memcache *c = new_cache();
    char text[8];
    keys_text(c, text, sizeof text);
    assert_string_equal(text, "");
    yyc_memcache_key *keys;
    size_t n;
    assert_int_equal(yyc_memcache_copy_keys(NULL, &keys, &n), YYC_EINVAL);
    assert_int_equal(yyc_memcache_copy_keys(c, NULL, &n), YYC_EINVAL);
    assert_int_equal(yyc_memcache_copy_keys(c, &keys, NULL), YYC_EINVAL);
    yyc_memcache_free(c);
}

static void every_key_of_a_large_cache_is_listed_once(void **state) {
    (void)state;
    yyc_memcache *c = new_cache();
    char key[16];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put(c, key);
    }
    yyc_memcache_key *keys;
    size_t n;
    assert_int_equal(yyc_memcache_copy_keys(c, &keys, &n), YYC_OK);
    assert_int_equal(n, 5000);
    char *seen = calloc(5000, 1);
    for (size_t i = 0; i < n; i++) {
        char text[16] = {0};
        memcpy(text, keys[i].bytes, keys[i].len);
        int k = atoi(text + 1);
        assert_true(k >= 0 && k < 5000);
        assert_int_equal(seen[k]++, 0);
    }
    free(seen);
    yyc_free(keys);
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
}

static atomic_int entry_refs;
static void *ref_retain(void *ctx, void *v) {
    (void)ctx;
    atomic_fetch_add(&entry_refs, 1);
    return v;
}
static void ref_release(void *ctx, void *v) {
    (void)ctx, (void)v;
    atomic_fetch_sub(&entry_refs, 1);
}

static void entries_come_with_retained_values(void **state) {
    (void)state;
    yyc_value_callbacks cb = {ref_retain, ref_release, NULL};
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(&cb, &c), YYC_OK);
    yyc_memcache_set_release_asynchronously(c, false);
    atomic_store(&entry_refs, 0);
    assert_int_equal(yyc_memcache_set(c, "a", 1, (void *)1, 0), YYC_OK);
    assert_int_equal(yyc_memcache_set(c, "bb", 2, (void *)2, 0), YYC_OK);
    yyc_memcache_entry *entries;
    size_t n;
    assert_int_equal(yyc_memcache_copy_entries(c, &entries, &n), YYC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(atomic_load(&entry_refs), 4); /* the cache's two and ours */
    for (size_t i = 0; i < n; i++) {
        assert_int_equal((intptr_t)entries[i].value, (intptr_t)entries[i].key_len);
        ref_release(NULL, entries[i].value);
    }
    yyc_free(entries);
    yyc_memcache_free(c);
    assert_int_equal(atomic_load(&entry_refs), 0);
    yyc_inline_value_type type = {.size = 4};
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_OK);
    assert_int_equal(yyc_memcache_copy_entries(c, &entries, &n), YYC_EINVAL);
    yyc_memcache_free(c);
}

static const struct CMUnitTest every_policy[] = {
    cmocka_unit_test(entries_come_with_retained_values),
    cmocka_unit_test(expired_entries_are_left_out_and_reported),
    cmocka_unit_test(an_empty_cache_has_no_keys),
    cmocka_unit_test(every_key_of_a_large_cache_is_listed_once),
};

static const struct CMUnitTest lru_only[] = {
    cmocka_unit_test(lru_keys_are_most_recently_used_first),
    cmocka_unit_test(sieve_and_s3fifo_keys_are_newest_insertion_first),
};

YYC_POLICY_TEST_MAIN(every_policy, lru_only)
