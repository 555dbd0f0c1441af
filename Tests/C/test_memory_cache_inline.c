/*
 * test_memory_cache_inline.c - yyc_memcache with inline values (yyc_memcache_new_inline):
 * round trips at every size, alignment, copy on get, destroy exactly once and never under the
 * lock (on every path that drops a value), ENOMEM ownership, wrong-mode calls, concurrency.
 * Background work is awaited with WAIT_UNTIL (a deadline), never with a fixed sleep.
 */
#include "policy_support.h"

#include <float.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Test hooks compiled into yycache_testing (YYC_TESTING). */
bool yyc__memcache_check(yyc_memcache *c);
void yyc__lru_testing_fail_allocs(int n);

#define WAIT_SECONDS 10.0

/* --- an owned inline value: a reference-counted object plus a tag, 16 bytes --- */

#define OBJ_MAGIC 0x0b1ec7u

typedef struct obj {
    atomic_int refs;
    unsigned magic;
} obj;

typedef struct value {
    obj *o;
    uint64_t tag;
} value;

typedef struct tracker {
    atomic_long live;      /* objects not yet freed */
    atomic_long copies;    /* copy callbacks run */
    atomic_long destroys;  /* destroy callbacks run */
    atomic_int on_caller;  /* destroys on the thread `caller` */
    atomic_int off_caller; /* destroys on another thread */
    atomic_int misaligned; /* callbacks given a pointer not aligned to 8 */
    pthread_t caller;
    yyc_memcache *reenter; /* if set, destroy calls into this cache (fails if under the lock) */
    atomic_int reentered;
} tracker;

static value value_new(tracker *t, uint64_t tag) {
    obj *o = malloc(sizeof *o);
    assert_non_null(o);
    atomic_init(&o->refs, 1);
    o->magic = OBJ_MAGIC;
    atomic_fetch_add(&t->live, 1);
    value v = {o, tag};
    return v;
}

/* Ends the life of one value (drops its reference). */
static void value_drop(tracker *t, value *v) {
    assert_int_equal(v->o->magic, OBJ_MAGIC);
    int before = atomic_fetch_sub(&v->o->refs, 1);
    assert_true(before >= 1);
    if (before == 1) {
        v->o->magic = 0;
        free(v->o);
        atomic_fetch_sub(&t->live, 1);
    }
}

static void t_copy(void *ctx, void *dst, const void *src) {
    tracker *t = ctx;
    if (((uintptr_t)dst | (uintptr_t)src) & 7) atomic_fetch_add(&t->misaligned, 1);
    const value *s = src;
    assert_int_equal(s->o->magic, OBJ_MAGIC);
    atomic_fetch_add(&s->o->refs, 1);
    memcpy(dst, src, sizeof(value));
    atomic_fetch_add(&t->copies, 1);
}

static void t_destroy(void *ctx, void *bytes) {
    tracker *t = ctx;
    if ((uintptr_t)bytes & 7) atomic_fetch_add(&t->misaligned, 1);
    if (pthread_equal(pthread_self(), t->caller)) atomic_fetch_add(&t->on_caller, 1);
    else atomic_fetch_add(&t->off_caller, 1);
    if (t->reenter) {
        /* Under the cache's lock these calls would deadlock (the test builds' error-checking
         * mutex turns a relock into an assertion failure). */
        value got;
        if (yyc_memcache_get_inline(t->reenter, "k0", 2, &got) == YYC_OK) value_drop(t, &got);
        yyc_memcache_contains(t->reenter, "k0", 2);
        (void)yyc_memcache_total_count(t->reenter);
        atomic_fetch_add(&t->reentered, 1);
    }
    value v;
    memcpy(&v, bytes, sizeof v);
    atomic_fetch_add(&t->destroys, 1); /* before the drop: once live is 0, counters are final */
    value_drop(t, &v);
}

static yyc_memcache *new_owned_cache(tracker *t) {
    memset(t, 0, sizeof *t);
    t->caller = pthread_self();
    yyc_inline_value_type type = {sizeof(value), _Alignof(value), t_copy, t_destroy, t};
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_OK);
    assert_non_null(c);
    return c;
}

/* Moves a fresh value with the given tag into the cache under key. */
static void put(yyc_memcache *c, tracker *t, const char *key, uint64_t tag, size_t cost) {
    value v = value_new(t, tag);
    assert_int_equal(yyc_memcache_set_inline(c, key, strlen(key), &v, cost), YYC_OK);
    if (yyc_memcache_total_count(c) <= 256) assert_true(yyc__memcache_check(c));
}

/* The tag stored under key, or UINT64_MAX on a miss (the copy is dropped). */
static uint64_t tag_of(yyc_memcache *c, tracker *t, const char *key) {
    value v;
    int s = yyc_memcache_get_inline(c, key, strlen(key), &v);
    if (s == YYC_NOTFOUND) return UINT64_MAX;
    assert_int_equal(s, YYC_OK);
    uint64_t tag = v.tag;
    value_drop(t, &v);
    return tag;
}

static void free_and_check_no_leak(yyc_memcache *c, tracker *t, long expected_destroys) {
    yyc_memcache_free(c); /* waits for every destroy */
    assert_int_equal(atomic_load(&t->live), 0);
    assert_int_equal(atomic_load(&t->destroys), expected_destroys);
    assert_int_equal(atomic_load(&t->misaligned), 0);
}

/* --- construction and modes --- */

static void inline_cache_rejects_bad_types(void **state) {
    (void)state;
    yyc_memcache *c = (yyc_memcache *)1;
    assert_int_equal(yyc_memcache_new_inline(NULL, &c), YYC_EINVAL);
    assert_null(c);
    yyc_inline_value_type type = {0, 0, NULL, NULL, NULL};
    assert_int_equal(yyc_memcache_new_inline(&type, NULL), YYC_EINVAL);
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_EINVAL); /* size 0 */
    type.size = YYC_MEMCACHE_INLINE_MAX + 1;
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_EINVAL);
    type.size = 8;
    type.align = 3;
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_EINVAL);
    type.align = 32;
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_EINVAL);
    type.align = 16;
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_OK);
    yyc_memcache_free(c);
}

static void wrong_mode_calls_return_einval(void **state) {
    (void)state;
    yyc_inline_value_type type = {8, 0, NULL, NULL, NULL};
    yyc_memcache *in = NULL, *ptr = NULL;
    assert_int_equal(yyc_memcache_new_inline(&type, &in), YYC_OK);
    assert_int_equal(yyc_memcache_new(NULL, &ptr), YYC_OK);
    uint64_t bytes = 42;
    void *out = (void *)1;
    assert_int_equal(yyc_memcache_set(in, "k", 1, &bytes, 0), YYC_EINVAL);
    assert_int_equal(yyc_memcache_get(in, "k", 1, &out), YYC_EINVAL);
    assert_null(out);
    assert_int_equal(yyc_memcache_set_inline(ptr, "k", 1, &bytes, 0), YYC_EINVAL);
    assert_int_equal(yyc_memcache_get_inline(ptr, "k", 1, &bytes), YYC_EINVAL);
    assert_int_equal(yyc_memcache_total_count(in), 0);
    assert_int_equal(yyc_memcache_total_count(ptr), 0);
    /* Bad arguments of the inline calls. */
    assert_int_equal(yyc_memcache_set_inline(NULL, "k", 1, &bytes, 0), YYC_EINVAL);
    assert_int_equal(yyc_memcache_set_inline(in, "k", 1, NULL, 0), YYC_EINVAL);
    assert_int_equal(yyc_memcache_set_inline(in, NULL, 1, &bytes, 0), YYC_EINVAL);
    assert_int_equal(yyc_memcache_get_inline(in, "k", 1, NULL), YYC_EINVAL);
    assert_int_equal(yyc_memcache_get_inline(NULL, "k", 1, &bytes), YYC_EINVAL);
    assert_int_equal(yyc_memcache_set_inline(in, "k", (size_t)UINT32_MAX + 1, &bytes, 0),
                     YYC_ETOOBIG);
    /* Mode-independent calls work on both. */
    assert_int_equal(yyc_memcache_set_inline(in, "k", 1, &bytes, 3), YYC_OK);
    assert_true(yyc_memcache_contains(in, "k", 1));
    assert_int_equal(yyc_memcache_total_cost(in), 3);
    assert_int_equal(yyc_memcache_remove(in, "k", 1), YYC_OK);
    assert_false(yyc_memcache_contains(in, "k", 1));
    yyc_memcache_free(in);
    yyc_memcache_free(ptr);
}

/* --- round trips --- */

static void plain_values_round_trip_at_sizes_one_and_max(void **state) {
    (void)state;
    size_t sizes[] = {1, 3, 8, 16, 24, YYC_MEMCACHE_INLINE_MAX};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t size = sizes[si];
        yyc_inline_value_type type = {size, 0, NULL, NULL, NULL};
        yyc_memcache *c = NULL;
        assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_OK);
        /* Keys of every length 0..40 put the value at every offset after the key. */
        for (int k = 0; k <= 40; k++) {
            char key[41];
            memset(key, 'a' + k % 26, (size_t)k);
            unsigned char v[YYC_MEMCACHE_INLINE_MAX];
            for (size_t i = 0; i < size; i++) v[i] = (unsigned char)(k * 7 + i);
            assert_int_equal(yyc_memcache_set_inline(c, key, (size_t)k, v, 1), YYC_OK);
        }
        assert_true(yyc__memcache_check(c));
        for (int k = 0; k <= 40; k++) {
            char key[41];
            memset(key, 'a' + k % 26, (size_t)k);
            unsigned char got[YYC_MEMCACHE_INLINE_MAX + 1];
            got[size] = 0xee; /* the byte after the value is not written */
            assert_int_equal(yyc_memcache_get_inline(c, key, (size_t)k, got), YYC_OK);
            for (size_t i = 0; i < size; i++) assert_int_equal(got[i], (unsigned char)(k * 7 + i));
            assert_int_equal(got[size], 0xee);
        }
        unsigned char miss[YYC_MEMCACHE_INLINE_MAX];
        memset(miss, 0x5a, sizeof miss);
        assert_int_equal(yyc_memcache_get_inline(c, "absent-key-xx", 13, miss), YYC_NOTFOUND);
        assert_int_equal(miss[0], 0x5a); /* untouched on a miss */
        /* Replacing overwrites in place. */
        unsigned char w[YYC_MEMCACHE_INLINE_MAX];
        memset(w, 0xab, size);
        assert_int_equal(yyc_memcache_set_inline(c, "ddd", 3, w, 1), YYC_OK);
        unsigned char got[YYC_MEMCACHE_INLINE_MAX];
        assert_int_equal(yyc_memcache_get_inline(c, "ddd", 3, got), YYC_OK);
        assert_memory_equal(got, w, size);
        assert_int_equal(yyc_memcache_total_count(c), 41);
        yyc_memcache_free(c);
    }
}

static void owned_values_round_trip_and_copy_runs_on_each_get(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_owned_cache(&t);
    put(c, &t, "alpha", 1, 0);
    put(c, &t, "", 2, 0); /* the empty key */
    assert_int_equal(atomic_load(&t.copies), 0);
    assert_int_equal(tag_of(c, &t, "alpha"), 1);
    assert_int_equal(tag_of(c, &t, ""), 2);
    assert_int_equal(tag_of(c, &t, "alpha"), 1);
    assert_int_equal(atomic_load(&t.copies), 3); /* one per hit */
    assert_int_equal(tag_of(c, &t, "beta"), UINT64_MAX);
    assert_int_equal(atomic_load(&t.copies), 3); /* none on a miss */
    /* A copy is independent: it outlives the entry. */
    value kept;
    assert_int_equal(yyc_memcache_get_inline(c, "alpha", 5, &kept), YYC_OK);
    yyc_memcache_set_release_asynchronously(c, false);
    assert_int_equal(yyc_memcache_remove(c, "alpha", 5), YYC_OK);
    assert_int_equal(atomic_load(&t.destroys), 1);
    assert_int_equal(kept.o->magic, OBJ_MAGIC);
    assert_int_equal(kept.tag, 1);
    value_drop(&t, &kept);
    assert_int_equal(atomic_load(&t.destroys), 1);
    assert_int_equal(atomic_load(&t.on_caller), 1); /* synchronous policy: on this thread */
    free_and_check_no_leak(c, &t, 2);
}

static void plain_values_without_callbacks_are_copied_bytewise(void **state) {
    (void)state;
    typedef struct {
        double x;
        int32_t y;
    } point; /* 16 bytes with padding, align 8 */
    yyc_inline_value_type type = {sizeof(point), _Alignof(point), NULL, NULL, NULL};
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new_inline(&type, &c), YYC_OK);
    for (int i = 0; i < 1000; i++) {
        char key[16];
        int n = snprintf(key, sizeof key, "p%d", i);
        point p = {i * 0.5, -i};
        assert_int_equal(yyc_memcache_set_inline(c, key, (size_t)n, &p, 0), YYC_OK);
    }
    for (int i = 0; i < 1000; i++) {
        char key[16];
        int n = snprintf(key, sizeof key, "p%d", i);
        point p;
        assert_int_equal(yyc_memcache_get_inline(c, key, (size_t)n, &p), YYC_OK);
        assert_true(p.x == i * 0.5);
        assert_int_equal(p.y, -i);
    }
    yyc_memcache_set_count_limit(c, 10);
    yyc_memcache_trim_to_count(c, 10);
    assert_int_equal(yyc_memcache_total_count(c), 10);
    assert_true(yyc__memcache_check(c));
    yyc_memcache_free(c);
}

/* --- destroy: off the lock, exactly once --- */

static void replace_destroys_the_old_value_off_the_lock(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        tracker t;
        yyc_memcache *c = new_owned_cache(&t);
        yyc_memcache_set_release_asynchronously(c, async);
        t.reenter = c;
        put(c, &t, "k0", 1, 0);
        put(c, &t, "k0", 2, 0); /* replaces: the old value is destroyed, the new one kept */
        if (async) {
            assert_true(WAIT_UNTIL(atomic_load(&t.destroys) == 1, WAIT_SECONDS));
            assert_int_equal(atomic_load(&t.off_caller), 1); /* on the worker */
        } else {
            assert_int_equal(atomic_load(&t.destroys), 1); /* before set returned */
            assert_int_equal(atomic_load(&t.on_caller), 1);
        }
        assert_int_equal(atomic_load(&t.reentered), 1);
        assert_int_equal(tag_of(c, &t, "k0"), 2);
        assert_int_equal(yyc_memcache_total_count(c), 1);
        t.reenter = NULL;
        free_and_check_no_leak(c, &t, 2);
    }
}

static void every_removal_path_destroys_each_value_exactly_once(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        tracker t;
        yyc_memcache *c = new_owned_cache(&t);
        yyc_memcache_set_release_asynchronously(c, async);
        yyc_memcache_set_auto_trim_interval(c, 0);
        long sets = 0;
        char key[32];
        /* Count eviction during set: one per set. */
        yyc_memcache_set_count_limit(c, 5);
        for (int i = 0; i < 20; i++, sets++) {
            snprintf(key, sizeof key, "count-%d", i);
            put(c, &t, key, (uint64_t)i, 1);
        }
        assert_int_equal(yyc_memcache_total_count(c), 5);
        assert_int_equal(tag_of(c, &t, "count-19"), 19); /* no policy evicts the new entry */
        /* Which older one went is the policy's choice: LRU's is the oldest (TinyLFU's admission
         * keeps an older one or, at random, a newcomer; this group runs under every policy). */
        if (yyc_memcache_policy(c) == YYC_EVICT_LRU)
            assert_int_equal(tag_of(c, &t, "count-14"), UINT64_MAX);
        yyc_memcache_set_count_limit(c, SIZE_MAX);
        /* remove by key, trims (count, cost, age), remove-all, the two events. */
        for (int i = 0; i < 40; i++, sets++) {
            snprintf(key, sizeof key, "more-%d", i);
            put(c, &t, key, (uint64_t)i, 1);
        }
        assert_int_equal(yyc_memcache_remove(c, "more-0", 6), YYC_OK);
        assert_int_equal(yyc_memcache_remove(c, "more-0", 6), YYC_OK); /* absent: nothing */
        yyc_memcache_trim_to_count(c, 30);
        assert_int_equal(yyc_memcache_total_count(c), 30);
        yyc_memcache_trim_to_cost(c, 20);
        assert_int_equal(yyc_memcache_total_count(c), 20);
        yyc_memcache_trim_to_age(c, DBL_MAX);
        assert_int_equal(yyc_memcache_total_count(c), 20);
        yyc_memcache_trim_to_age(c, 0); /* everything */
        assert_int_equal(yyc_memcache_total_count(c), 0);
        for (int i = 0; i < 10; i++, sets++) {
            snprintf(key, sizeof key, "all-%d", i);
            put(c, &t, key, (uint64_t)i, 1);
        }
        yyc_memcache_remove_all(c);
        for (int i = 0; i < 10; i++, sets++) {
            snprintf(key, sizeof key, "warn-%d", i);
            put(c, &t, key, (uint64_t)i, 1);
        }
        yyc_memcache_handle_memory_warning(c);
        assert_int_equal(yyc_memcache_total_count(c), 0);
        for (int i = 0; i < 10; i++, sets++) {
            snprintf(key, sizeof key, "bg-%d", i);
            put(c, &t, key, (uint64_t)i, 1);
        }
        yyc_memcache_handle_enter_background(c);
        assert_int_equal(yyc_memcache_total_count(c), 0);
        /* Everything set so far is gone: each destroyed exactly once (a second destroy would
         * fail value_drop's checks; a missing one would leave live > 0). */
        assert_true(WAIT_UNTIL(atomic_load(&t.destroys) == sets, WAIT_SECONDS));
        assert_int_equal(atomic_load(&t.live), 0);
        if (!async) assert_int_equal(atomic_load(&t.off_caller), 0);
        /* What is left at free is destroyed by free. */
        for (int i = 0; i < 7; i++, sets++) {
            snprintf(key, sizeof key, "left-%d", i);
            put(c, &t, key, (uint64_t)i, 1);
        }
        put(c, &t, "left-0", 99, 1); /* and a replaced one just before free */
        sets++;
        free_and_check_no_leak(c, &t, sets);
    }
}

static void cost_trim_on_the_worker_and_auto_trim_destroy_values(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_owned_cache(&t);
    yyc_memcache_set_release_asynchronously(c, false);
    yyc_memcache_set_cost_limit(c, 10);
    char key[32];
    for (int i = 0; i < 30; i++) {
        snprintf(key, sizeof key, "cost-%d", i);
        put(c, &t, key, (uint64_t)i, 1);
    }
    /* The deferred cost trim runs on the worker. */
    assert_true(WAIT_UNTIL(yyc_memcache_total_cost(c) <= 10, WAIT_SECONDS));
    assert_true(WAIT_UNTIL(atomic_load(&t.destroys) == 20, WAIT_SECONDS));
    assert_true(atomic_load(&t.off_caller) >= 1);
    /* The auto-trim (count limit) too. */
    yyc_memcache_set_cost_limit(c, SIZE_MAX);
    yyc_memcache_set_count_limit(c, 2);
    yyc_memcache_set_auto_trim_interval(c, 0.01);
    assert_true(WAIT_UNTIL(yyc_memcache_total_count(c) <= 2, WAIT_SECONDS));
    assert_true(WAIT_UNTIL(atomic_load(&t.destroys) == 28, WAIT_SECONDS));
    free_and_check_no_leak(c, &t, 30);
}

static void enomem_leaves_the_value_with_the_caller(void **state) {
    (void)state;
    tracker t;
    yyc_memcache *c = new_owned_cache(&t);
    yyc_memcache_set_release_asynchronously(c, false);
    value v = value_new(&t, 7);
    yyc__lru_testing_fail_allocs(1);
    assert_int_equal(yyc_memcache_set_inline(c, "new", 3, &v, 0), YYC_ENOMEM);
    yyc__lru_testing_fail_allocs(0);
    assert_int_equal(yyc_memcache_total_count(c), 0);
    assert_int_equal(atomic_load(&t.destroys), 0); /* the cache did not take it */
    assert_int_equal(v.o->magic, OBJ_MAGIC);
    /* The caller still owns it: it can store it after all, or drop it. */
    assert_int_equal(yyc_memcache_set_inline(c, "new", 3, &v, 0), YYC_OK);
    assert_int_equal(tag_of(c, &t, "new"), 7);
    value w = value_new(&t, 8);
    yyc__lru_testing_fail_allocs(1);
    assert_int_equal(yyc_memcache_set_inline(c, "other", 5, &w, 0), YYC_ENOMEM);
    yyc__lru_testing_fail_allocs(0);
    value_drop(&t, &w);
    assert_int_equal(atomic_load(&t.destroys), 0);
    assert_true(yyc__memcache_check(c));
    free_and_check_no_leak(c, &t, 1);
}

/* --- concurrency (run under TSan by make tsan) --- */

typedef struct shared {
    yyc_memcache *c;
    tracker *t;
    unsigned seed;
} shared;

static void *mixer(void *p) {
    shared *s = p;
    uint64_t x = s->seed;
    for (int i = 0; i < 20000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        char key[8];
        int n = snprintf(key, sizeof key, "k%u", (unsigned)(x >> 33) % 24);
        switch ((x >> 20) % 8) {
        case 0:
        case 1:
        case 2: {
            value v = value_new(s->t, x);
            assert_int_equal(yyc_memcache_set_inline(s->c, key, (size_t)n, &v, 1), YYC_OK);
            break;
        }
        case 3: yyc_memcache_remove(s->c, key, (size_t)n); break;
        case 4:
            if ((x >> 40) % 64 == 0) yyc_memcache_trim_to_count(s->c, 8);
            break;
        default: {
            value v;
            if (yyc_memcache_get_inline(s->c, key, (size_t)n, &v) == YYC_OK) {
                assert_int_equal(v.o->magic, OBJ_MAGIC); /* alive while we hold the copy */
                value_drop(s->t, &v);
            }
        }
        }
    }
    return NULL;
}

static void threads_setting_getting_and_removing_shared_keys_keep_values_alive(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        tracker t;
        yyc_memcache *c = new_owned_cache(&t);
        yyc_memcache_set_release_asynchronously(c, async);
        yyc_memcache_set_count_limit(c, 16);
        yyc_memcache_set_auto_trim_interval(c, 0.005);
        enum { N = 4 };
        pthread_t th[N];
        shared args[N];
        for (int i = 0; i < N; i++) {
            args[i] = (shared){c, &t, (unsigned)(i * 7919 + async)};
            assert_int_equal(pthread_create(&th[i], NULL, mixer, &args[i]), 0);
        }
        for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
        assert_true(yyc__memcache_check(c));
        yyc_memcache_free(c);
        assert_int_equal(atomic_load(&t.live), 0);
        assert_int_equal(atomic_load(&t.misaligned), 0);
    }
}

/* Run under every eviction policy (policy_support.h). */
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(inline_cache_rejects_bad_types),
    cmocka_unit_test(wrong_mode_calls_return_einval),
    cmocka_unit_test(plain_values_round_trip_at_sizes_one_and_max),
    cmocka_unit_test(owned_values_round_trip_and_copy_runs_on_each_get),
    cmocka_unit_test(plain_values_without_callbacks_are_copied_bytewise),
    cmocka_unit_test(replace_destroys_the_old_value_off_the_lock),
    cmocka_unit_test(every_removal_path_destroys_each_value_exactly_once),
    cmocka_unit_test(cost_trim_on_the_worker_and_auto_trim_destroy_values),
    cmocka_unit_test(enomem_leaves_the_value_with_the_caller),
    cmocka_unit_test(threads_setting_getting_and_removing_shared_keys_keep_values_alive),
};

YYC_EVERY_POLICY_TEST_MAIN(tests)
