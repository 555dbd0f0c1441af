/* test_memory_cache_free.c - a memory cache freed from inside its own callbacks.
 *
 * A value may hold the last reference to the cache's owner (a Swift class value holding the
 * MemoryCache does), so a release callback may free the very cache that is releasing it, in the
 * middle of a remove, a remove-all, a trim, an auto-trim, a memory warning or the free itself.
 * The free is deferred to the end of the call that ran the callback: every value is still
 * released exactly once, and the free handler runs exactly once, after the last callback.
 * AddressSanitizer checks that nothing touches the cache after it is freed. */
#include "test_support.h"

#include <stdatomic.h>

typedef struct fixture {
    yyc_memcache *c;
    atomic_int released; /* values released */
    atomic_int frees;    /* free handler calls */
    atomic_int late;     /* callbacks that ran after the free handler */
    const void *killer;  /* the value whose release frees the cache */
} fixture;

static int values[8];
#define N_VALUES 8

static void release_value(void *ctx, void *value) {
    fixture *f = ctx;
    if (atomic_load(&f->frees) != 0) atomic_fetch_add(&f->late, 1);
    atomic_fetch_add(&f->released, 1);
    if (value == f->killer) yyc_memcache_free(f->c);
}

static void cache_freed(void *ctx) {
    fixture *f = ctx;
    atomic_fetch_add(&f->frees, 1);
}

static char keys[N_VALUES][2];

/* A cache holding values[0..N_VALUES) under keys "a".."h" (LRU order: "a" oldest), whose release
 * of values[killer] frees it. */
static void start(fixture *f, bool async, int killer) {
    *f = (fixture){.killer = &values[killer]};
    yyc_value_callbacks cb = {.release = release_value, .ctx = f};
    assert_int_equal(yyc_memcache_new(&cb, &f->c), YYC_OK);
    yyc_memcache_set_free_handler(f->c, cache_freed, f);
    yyc_memcache_set_auto_trim_interval(f->c, 0);
    yyc_memcache_set_release_asynchronously(f->c, async);
    for (int i = 0; i < N_VALUES; i++) {
        keys[i][0] = (char)('a' + i);
        assert_int_equal(yyc_memcache_set(f->c, keys[i], 1, &values[i], 0), YYC_OK);
    }
}

/* The cache freed itself (waited for: with asynchronous release the worker does it) and every
 * value was released once, none after the free. f->c must not be used any more. */
static void assert_freed_once(fixture *f, int released) {
    assert_true(WAIT_UNTIL(atomic_load(&f->frees) == 1, 30));
    assert_int_equal(atomic_load(&f->released), released);
    assert_int_equal(atomic_load(&f->late), 0);
    assert_int_equal(atomic_load(&f->frees), 1);
}

static void release_callback_may_free_its_cache_during_remove(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        fixture f;
        start(&f, async, 3);
        assert_int_equal(yyc_memcache_remove(f.c, keys[3], 1), YYC_OK);
        /* The free released the other values too. */
        assert_freed_once(&f, N_VALUES);
    }
}

static void release_callback_may_free_its_cache_during_replace(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        fixture f;
        start(&f, async, 2);
        static int fresh;
        assert_int_equal(yyc_memcache_set(f.c, keys[2], 1, &fresh, 0), YYC_OK);
        assert_freed_once(&f, N_VALUES + 1);
    }
}

static void release_callback_may_free_its_cache_during_remove_all(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        fixture f;
        start(&f, async, 4); /* in the middle of the list: values after it are still released */
        yyc_memcache_remove_all(f.c);
        assert_freed_once(&f, N_VALUES);
    }
}

static void release_callback_may_free_its_cache_during_a_trim(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        fixture f;
        start(&f, async, 1); /* evicted second of the six */
        yyc_memcache_trim_to_count(f.c, 2);
        assert_freed_once(&f, N_VALUES);
    }
    for (int async = 0; async <= 1; async++) {
        fixture f;
        start(&f, async, 5);
        yyc_memcache_trim_to_cost(f.c, 0); /* zero: everything at once */
        assert_freed_once(&f, N_VALUES);
    }
}

static void release_callback_may_free_its_cache_during_an_auto_trim(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        fixture f;
        start(&f, async, 0);
        /* The auto-trim runs on the worker: cost, count, then age; the count trim frees the
         * cache, the age trim after it must not touch it. */
        yyc_memcache_set_count_limit(f.c, 0);
        yyc_memcache_set_age_limit(f.c, 0);
        yyc_memcache_set_auto_trim_interval(f.c, 0.001);
        assert_freed_once(&f, N_VALUES);
    }
}

static void free_called_again_by_a_release_during_the_free_is_ignored(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        fixture f;
        start(&f, async, 6);
        yyc_memcache_free(f.c);
        /* Synchronous: the free waits for every release, whatever the policy. */
        assert_int_equal(atomic_load(&f.frees), 1);
        assert_freed_once(&f, N_VALUES);
    }
}

static void warning_frees(yyc_memcache *c, void *ctx) {
    (void)ctx;
    yyc_memcache_free(c);
}

static void memory_warning_handler_may_free_its_cache(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        fixture f;
        start(&f, async, N_VALUES); /* no killer: the handler frees it */
        yyc_memcache_set_memory_warning_handler(f.c, warning_frees, &f);
        yyc_memcache_handle_memory_warning(f.c); /* then removes everything: still alive */
        assert_freed_once(&f, N_VALUES);
    }
}

/* Inline values: the destroy callback frees the cache. */
typedef struct inline_fixture {
    yyc_memcache *c;
    atomic_int destroyed;
    atomic_int frees;
} inline_fixture;

static void destroy_value(void *ctx, void *value) {
    inline_fixture *f = ctx;
    atomic_fetch_add(&f->destroyed, 1);
    int v;
    memcpy(&v, value, sizeof v);
    if (v == 3) yyc_memcache_free(f->c);
}

static void inline_cache_freed(void *ctx) {
    inline_fixture *f = ctx;
    atomic_fetch_add(&f->frees, 1);
}

static void destroy_callback_may_free_its_inline_cache(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        inline_fixture f = {0};
        yyc_inline_value_type type = {.size = sizeof(int), .destroy = destroy_value, .ctx = &f};
        assert_int_equal(yyc_memcache_new_inline(&type, &f.c), YYC_OK);
        yyc_memcache_set_free_handler(f.c, inline_cache_freed, &f);
        yyc_memcache_set_release_asynchronously(f.c, async);
        for (int i = 0; i < N_VALUES; i++) {
            char key = (char)('a' + i);
            assert_int_equal(yyc_memcache_set_inline(f.c, &key, 1, &i, 0), YYC_OK);
        }
        yyc_memcache_remove_all(f.c);
        assert_true(WAIT_UNTIL(atomic_load(&f.frees) == 1, 30));
        assert_int_equal(atomic_load(&f.destroyed), N_VALUES);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(release_callback_may_free_its_cache_during_remove),
    cmocka_unit_test(release_callback_may_free_its_cache_during_replace),
    cmocka_unit_test(release_callback_may_free_its_cache_during_remove_all),
    cmocka_unit_test(release_callback_may_free_its_cache_during_a_trim),
    cmocka_unit_test(release_callback_may_free_its_cache_during_an_auto_trim),
    cmocka_unit_test(free_called_again_by_a_release_during_the_free_is_ignored),
    cmocka_unit_test(memory_warning_handler_may_free_its_cache),
    cmocka_unit_test(destroy_callback_may_free_its_inline_cache),
};

YYC_TEST_MAIN(tests)
