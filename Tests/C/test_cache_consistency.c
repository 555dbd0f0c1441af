/*
 * test_cache_consistency.c - the two-level cache's guarantee (cache.h) under concurrency: once a
 * set or remove has returned, no later get returns an older value or the removed one, and once
 * every thread is quiet the memory tier holds nothing but the disk's value.
 *
 * Each test attacks it the way the issue measured it: readers reading through memory while
 * memory is being evicted (a small count limit and an evictor thread; evictions are not
 * writes), a writer setting increasing versions, removers racing back-fills. Counts are asserted
 * to be zero, never timed.
 *
 * Environment: YYC_CONSISTENCY_ROUNDS (default 400; `make soak` raises it) scales every test.
 */
#include "test_support.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>

#if defined(__SANITIZE_THREAD__)
#define CONSISTENCY_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CONSISTENCY_TSAN 1
#endif
#endif
#ifndef CONSISTENCY_TSAN
#define CONSISTENCY_TSAN 0
#endif

/* Rounds per test: YYC_CONSISTENCY_ROUNDS (`make soak`: 1000), else 120 (100 under TSan, ~10x
 * slower). */
static long rounds(void) {
    const char *s = getenv("YYC_CONSISTENCY_ROUNDS");
    long n = s && *s ? atol(s) : 0;
    if (n <= 0) n = CONSISTENCY_TSAN ? 100 : 120;
    return n;
}

typedef struct fixture {
    char *dir;
    yyc_cache *cache;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->dir = test_temp_dir("consistency");
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

/* Values are versions: 8 bytes, native order. */
static int set_version(yyc_cache *c, const char *key, uint64_t v) {
    return yyc_cache_set(c, key, &v, sizeof v);
}

/* The version get returns: YYC_OK and *out, or the status (-1 for a value of the wrong size).
 * No cmocka assert: threads call it (cmocka's asserts work on the test's thread only). */
static int get_version(yyc_cache *c, const char *key, uint64_t *out) {
    void *value = NULL;
    size_t len = 0;
    int rc = yyc_cache_get(c, key, &value, &len);
    if (rc == YYC_OK) {
        if (len == sizeof *out) memcpy(out, value, sizeof *out);
        else rc = -1;
    }
    yyc_free(value);
    return rc;
}

/* Failures seen by threads (asserted zero by the test's thread). */
static atomic_long thread_errors;

/* What the memory tier alone holds for key: YYC_OK and *out, or YYC_NOTFOUND. */
static int memory_version(yyc_cache *c, const char *key, uint64_t *out) {
    void *held = NULL;
    int rc = yyc_memcache_get(yyc_cache_memory(c), key, strlen(key), &held);
    if (rc == YYC_OK) {
        /* The memory tier's values are cache.c's buffers: a refcount, the disk deadline, a
         * length, the bytes. */
        struct {
            atomic_size_t refs;
            int64_t expiry_ms;
            size_t len;
            unsigned char data[];
        } *b = held;
        assert_int_equal(b->len, sizeof *out);
        memcpy(out, b->data, sizeof *out);
        /* Drop the reference get handed us, as the cache's release callback would. */
        if (atomic_fetch_sub(&b->refs, 1) == 1) free(b);
    }
    return rc;
}

/* ---------------------------------------------------------------- stale reads, continuously */

#define KEYS 4
static const char *const key_names[KEYS] = {"k0", "k1", "k2", "k3"};

typedef struct shared {
    yyc_cache *cache;
    long sets;                    /* the writer's number of sets per key */
    _Atomic uint64_t acked[KEYS]; /* the last version whose set returned, per key */
    atomic_bool done;
    atomic_long reads, stale, worst;
} shared;

static void *writer_main(void *arg) {
    shared *s = arg;
    for (long v = 1; v <= s->sets; v++) {
        for (int k = 0; k < KEYS; k++) {
            if (set_version(s->cache, key_names[k], (uint64_t)v) != YYC_OK)
                atomic_fetch_add(&thread_errors, 1);
            atomic_store(&s->acked[k], (uint64_t)v);
        }
    }
    atomic_store(&s->done, true);
    return NULL;
}

static void *reader_main(void *arg) {
    shared *s = arg;
    unsigned k = 0;
    while (!atomic_load(&s->done)) {
        k = (k + 1) % KEYS;
        uint64_t floor = atomic_load(&s->acked[k]); /* before the read starts */
        uint64_t v = 0;
        int rc = get_version(s->cache, key_names[k], &v);
        atomic_fetch_add(&s->reads, 1);
        if ((rc == YYC_NOTFOUND && floor > 0) || (rc == YYC_OK && v < floor)) {
            atomic_fetch_add(&s->stale, 1);
            long behind = rc == YYC_OK ? (long)(floor - v) : (long)floor;
            long worst = atomic_load(&s->worst);
            while (behind > worst && !atomic_compare_exchange_weak(&s->worst, &worst, behind)) {
            }
        } else if (rc != YYC_OK && rc != YYC_NOTFOUND) {
            atomic_fetch_add(&thread_errors, 1);
        }
    }
    return NULL;
}

/* Evicts every entry of the memory tier again and again: evictions, not writes. */
static void *evictor_main(void *arg) {
    shared *s = arg;
    while (!atomic_load(&s->done)) {
        yyc_memcache_trim_to_count(yyc_cache_memory(s->cache), 0);
        usleep(100); /* long enough for a stale back-fill to be read, if there is one */
    }
    return NULL;
}

static void reads_never_return_a_version_older_than_the_last_acknowledged_set(void **state) {
    fixture *f = *state;
    shared s = {.cache = f->cache, .sets = 5 * rounds()};
    yyc_memcache_set_count_limit(yyc_cache_memory(f->cache), KEYS / 2); /* evicts on set */
    pthread_t writer, readers[2], evictor;
    assert_int_equal(pthread_create(&writer, NULL, writer_main, &s), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&readers[i], NULL, reader_main, &s), 0);
    assert_int_equal(pthread_create(&evictor, NULL, evictor_main, &s), 0);
    pthread_join(writer, NULL);
    for (int i = 0; i < 2; i++) pthread_join(readers[i], NULL);
    pthread_join(evictor, NULL);
    fprintf(stderr, "consistency: %ld reads, %ld stale (up to %ld versions behind)\n",
            atomic_load(&s.reads), atomic_load(&s.stale), atomic_load(&s.worst));
    assert_int_equal(atomic_load(&thread_errors), 0);
    assert_int_equal(atomic_load(&s.stale), 0);
    /* Quiet: memory holds the last version or nothing, and reads return it. */
    for (int k = 0; k < KEYS; k++) {
        uint64_t v = 0;
        if (memory_version(f->cache, key_names[k], &v) == YYC_OK) assert_int_equal(v, s.sets);
        assert_int_equal(get_version(f->cache, key_names[k], &v), YYC_OK);
        assert_int_equal(v, s.sets);
    }
}

/* ---------------------------------------------------------------- one race per round */

/* Readers read "key" through the cache without pause while the test's thread, round after
 * round, empties the memory tier (an eviction, so the readers' next reads go to the disk) and
 * then sets a new version, removes the key or removes everything. `acked` says what the last
 * returned operation left: 2v after a set of version v, 2v + 1 after the removal of version v.
 * A read that returns version v with 2v < acked (as read before it started), or nothing while
 * acked is even and no removal has begun, broke the guarantee. After each round the test waits
 * until every reader has finished a read that began after the operation returned, then checks the
 * memory tier. */
typedef enum race_op { RACE_SET, RACE_REMOVE, RACE_REMOVE_ALL } race_op;

#define RACE_READERS 2

typedef struct race {
    yyc_cache *cache;
    atomic_uint_fast64_t acked;
    atomic_uint_fast64_t removal_begun; /* 2v + 1 once the removal of version v has begun */
    atomic_bool done;
    atomic_long reads[RACE_READERS]; /* reads finished, per reader */
    atomic_long bad_reads;
    atomic_long next_reader;
} race;

static void *race_reader(void *arg) {
    race *r = arg;
    long me = atomic_fetch_add(&r->next_reader, 1);
    while (!atomic_load(&r->done)) {
        uint64_t floor = atomic_load(&r->acked), v = 0;
        int rc = get_version(r->cache, "key", &v);
        /* Nothing is a right answer before the first set, while floor is odd, or once a
         * removal has begun. */
        bool missing_is_right =
            floor == 0 || floor % 2 == 1 || atomic_load(&r->removal_begun) > floor;
        if (rc == YYC_OK ? 2 * v < floor : rc == YYC_NOTFOUND ? !missing_is_right : true)
            atomic_fetch_add(&r->bad_reads, 1);
        atomic_fetch_add(&r->reads[me], 1);
    }
    return NULL;
}

/* Returns once every reader has finished a read that started after this call began. */
static void wait_for_readers(race *r) {
    long seen[RACE_READERS];
    for (int i = 0; i < RACE_READERS; i++) seen[i] = atomic_load(&r->reads[i]);
    for (int i = 0; i < RACE_READERS; i++)
        while (atomic_load(&r->reads[i]) < seen[i] + 2) sched_yield();
}

/* Runs rounds() rounds of op; returns how many left the memory tier disagreeing with the last
 * operation (or a read did), adding the readers' bad reads. */
static long race_rounds(yyc_cache *c, race_op op) {
    race r = {.cache = c};
    pthread_t readers[RACE_READERS];
    for (int i = 0; i < RACE_READERS; i++)
        assert_int_equal(pthread_create(&readers[i], NULL, race_reader, &r), 0);
    long bad_rounds = 0, n = rounds();
    uint64_t version = 0;
    for (long i = 0; i < n; i++) {
        if (op != RACE_SET || i == 0) {
            assert_int_equal(set_version(c, "key", ++version), YYC_OK);
            atomic_store(&r.acked, 2 * version);
            wait_for_readers(&r); /* let them fill memory and read again */
        }
        yyc_memcache_trim_to_count(yyc_cache_memory(c), 0);
        switch (op) {
        case RACE_SET:
            assert_int_equal(set_version(c, "key", ++version), YYC_OK);
            atomic_store(&r.acked, 2 * version);
            break;
        case RACE_REMOVE:
            atomic_store(&r.removal_begun, 2 * version + 1);
            assert_int_equal(yyc_cache_remove(c, "key"), YYC_OK);
            atomic_store(&r.acked, 2 * version + 1);
            break;
        case RACE_REMOVE_ALL:
            atomic_store(&r.removal_begun, 2 * version + 1);
            assert_int_equal(yyc_cache_remove_all(c), YYC_OK);
            atomic_store(&r.acked, 2 * version + 1);
            break;
        }
        wait_for_readers(&r);
        uint64_t in_memory = 0, read = 0;
        int mrc = memory_version(c, "key", &in_memory);
        int rc = get_version(c, "key", &read);
        if (op == RACE_SET) {
            bad_rounds +=
                (mrc == YYC_OK && in_memory != version) || rc != YYC_OK || read != version;
        } else {
            bad_rounds += mrc == YYC_OK || rc != YYC_NOTFOUND;
        }
    }
    atomic_store(&r.done, true);
    for (int i = 0; i < RACE_READERS; i++) pthread_join(readers[i], NULL);
    fprintf(stderr,
            "consistency: %ld of %ld rounds ended with memory or a read disagreeing with the last "
            "operation; %ld of %ld reads returned an older or removed version\n",
            bad_rounds, n, atomic_load(&r.bad_reads),
            atomic_load(&r.reads[0]) + atomic_load(&r.reads[1]));
    assert_int_equal(atomic_load(&thread_errors), 0);
    return bad_rounds + atomic_load(&r.bad_reads);
}

static void memory_never_keeps_a_version_older_than_the_last_set(void **state) {
    fixture *f = *state;
    long bad = race_rounds(f->cache, RACE_SET);
    assert_int_equal(bad, 0);
}

static void removed_key_never_comes_back(void **state) {
    fixture *f = *state;
    long bad = race_rounds(f->cache, RACE_REMOVE);
    assert_int_equal(bad, 0);
}

static void key_removed_by_remove_all_never_comes_back(void **state) {
    fixture *f = *state;
    long bad = race_rounds(f->cache, RACE_REMOVE_ALL);
    assert_int_equal(bad, 0);
}

/* ---------------------------------------------------------------- the memory cache's generations
 */

static void conditional_set_is_refused_after_any_write_on_the_key(void **state) {
    (void)state;
    yyc_memcache *m = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &m), YYC_OK);
    bool stored = true;
    uint64_t g = yyc_memcache_generation(m, "k", 1);
    assert_int_equal(yyc_memcache_set_if_generation(m, "k", 1, (void *)1, 5, g, &stored), YYC_OK);
    assert_true(stored);
    assert_int_equal(yyc_memcache_total_cost(m), 5);
    /* That store was a write: the same generation is refused now. */
    assert_int_equal(yyc_memcache_set_if_generation(m, "k", 1, (void *)2, 0, g, &stored), YYC_OK);
    assert_false(stored);
    void *v = NULL;
    assert_int_equal(yyc_memcache_get(m, "k", 1, &v), YYC_OK);
    assert_ptr_equal(v, (void *)1);
    /* Each kind of write changes it: set, remove (even of an absent key), remove_all. */
    g = yyc_memcache_generation(m, "k", 1);
    assert_int_equal(yyc_memcache_set(m, "k", 1, (void *)3, 0), YYC_OK);
    assert_int_equal(yyc_memcache_set_if_generation(m, "k", 1, (void *)4, 0, g, &stored), YYC_OK);
    assert_false(stored);
    g = yyc_memcache_generation(m, "absent", 6);
    assert_int_equal(yyc_memcache_remove(m, "absent", 6), YYC_OK);
    assert_int_equal(yyc_memcache_set_if_generation(m, "absent", 6, (void *)5, 0, g, &stored),
                     YYC_OK);
    assert_false(stored);
    assert_false(yyc_memcache_contains(m, "absent", 6));
    g = yyc_memcache_generation(m, "k", 1);
    yyc_memcache_remove_all(m);
    assert_int_equal(yyc_memcache_set_if_generation(m, "k", 1, (void *)6, 0, g, &stored), YYC_OK);
    assert_false(stored);
    assert_false(yyc_memcache_contains(m, "k", 1));
    /* Evictions and reads are not writes. */
    assert_int_equal(yyc_memcache_set(m, "k", 1, (void *)7, 0), YYC_OK);
    g = yyc_memcache_generation(m, "k", 1);
    assert_int_equal(yyc_memcache_get(m, "k", 1, &v), YYC_OK);
    yyc_memcache_trim_to_count(m, 0);
    assert_false(yyc_memcache_contains(m, "k", 1));
    assert_int_equal(yyc_memcache_set_if_generation(m, "k", 1, (void *)8, 0, g, &stored), YYC_OK);
    assert_true(stored);
    /* Bad arguments. */
    assert_int_equal(yyc_memcache_set_if_generation(NULL, "k", 1, NULL, 0, g, &stored), YYC_EINVAL);
    assert_false(stored);
    assert_int_equal(yyc_memcache_set_inline_if_generation(m, "k", 1, "x", 0, g, NULL), YYC_EINVAL);
    assert_int_equal(yyc_memcache_remove_if_generation(NULL, "k", 1, g), YYC_EINVAL);
    assert_int_equal(yyc_memcache_generation(NULL, "k", 1), 0);
    yyc_memcache_free(m);
}

static void conditional_remove_keeps_a_newer_write(void **state) {
    (void)state;
    yyc_memcache *m = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &m), YYC_OK);
    assert_int_equal(yyc_memcache_set(m, "k", 1, (void *)1, 0), YYC_OK);
    uint64_t g = yyc_memcache_generation(m, "k", 1);
    assert_int_equal(yyc_memcache_set(m, "k", 1, (void *)2, 0), YYC_OK); /* the newer write */
    assert_int_equal(yyc_memcache_remove_if_generation(m, "k", 1, g), YYC_OK);
    void *v = NULL;
    assert_int_equal(yyc_memcache_get(m, "k", 1, &v), YYC_OK);
    assert_ptr_equal(v, (void *)2);
    g = yyc_memcache_generation(m, "k", 1);
    assert_int_equal(yyc_memcache_remove_if_generation(m, "k", 1, g), YYC_OK);
    assert_false(yyc_memcache_contains(m, "k", 1));
    /* ...and it was a write. */
    assert_int_equal(yyc_memcache_set_if_generation(m, "k", 1, (void *)3, 0, g, NULL), YYC_OK);
    assert_false(yyc_memcache_contains(m, "k", 1));
    yyc_memcache_free(m);
}

static int destroyed_inline;
static void count_destroy(void *ctx, void *value) {
    (void)ctx;
    (void)value;
    destroyed_inline++;
}

static void refused_inline_value_stays_the_callers(void **state) {
    (void)state;
    yyc_inline_value_type type = {.size = 8, .destroy = count_destroy};
    yyc_memcache *m = NULL;
    assert_int_equal(yyc_memcache_new_inline(&type, &m), YYC_OK);
    yyc_memcache_set_release_asynchronously(m, false);
    uint64_t g = yyc_memcache_generation(m, "k", 1);
    uint64_t one = 1, two = 2, out = 0;
    bool stored = false;
    assert_int_equal(yyc_memcache_set_inline_if_generation(m, "k", 1, &one, 0, g, &stored), YYC_OK);
    assert_true(stored);
    assert_int_equal(yyc_memcache_set_inline_if_generation(m, "k", 1, &two, 0, g, &stored), YYC_OK);
    assert_false(stored);
    assert_int_equal(destroyed_inline, 0); /* the refused value was not taken, nor destroyed */
    assert_int_equal(yyc_memcache_get_inline(m, "k", 1, &out), YYC_OK);
    assert_int_equal(out, 1);
    yyc_memcache_free(m);
    assert_int_equal(destroyed_inline, 1);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(
        reads_never_return_a_version_older_than_the_last_acknowledged_set, setup, teardown),
    cmocka_unit_test_setup_teardown(memory_never_keeps_a_version_older_than_the_last_set, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(removed_key_never_comes_back, setup, teardown),
    cmocka_unit_test_setup_teardown(key_removed_by_remove_all_never_comes_back, setup, teardown),
    cmocka_unit_test(conditional_set_is_refused_after_any_write_on_the_key),
    cmocka_unit_test(conditional_remove_keeps_a_newer_write),
    cmocka_unit_test(refused_inline_value_stays_the_callers),
};

YYC_TEST_MAIN(tests)
