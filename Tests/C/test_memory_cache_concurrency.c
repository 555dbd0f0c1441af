/*
 * test_memory_cache_concurrency.c - yyc_memcache under contention: mixed operations from eight
 * threads, and YYCache's PR #153 scenario (a reader dereferencing a value while another thread
 * replaces it), gets racing expiry. Run under ASan and TSan; a lifetime tracker catches leaks and
 * double releases. With SIEVE, S3-FIFO and TinyLFU gets run in parallel without the mutex
 * (memory_cache_reads.c): these races are what that path must survive.
 */
#include "policy_support.h"

#include <pthread.h>
#include <stdatomic.h>

#include "platform/internal.h" /* yyc__worker_async, to wait for the background worker */

bool yyc__memcache_check(yyc_memcache *c); /* test hook (memory_cache.c, YYC_TESTING) */
void yyc__memcache_testing_advance_clock(double seconds); /* memory_cache_expiry.c */

#define TRACKED_MAGIC 0x5eed5eedu
/* Seconds each race runs, under each of the four policies (`make soak`: 2). */
#define RUN_SECONDS TEST_SOAK_OR(0.5, 2.0)

typedef struct tracked {
    atomic_int refs;
    atomic_uint magic;
    int id;
} tracked;

static atomic_long live;       /* tracked values alive */
static atomic_long bad_derefs; /* a reader saw a dead value */

static tracked *tracked_new(int id) {
    tracked *v = malloc(sizeof *v);
    assert_non_null(v);
    atomic_init(&v->refs, 1);
    atomic_init(&v->magic, TRACKED_MAGIC);
    v->id = id;
    atomic_fetch_add(&live, 1);
    return v;
}

static void tracked_drop(tracked *v) {
    if (atomic_load(&v->magic) != TRACKED_MAGIC) atomic_fetch_add(&bad_derefs, 1);
    if (atomic_fetch_sub(&v->refs, 1) == 1) {
        atomic_store(&v->magic, 0);
        free(v);
        atomic_fetch_sub(&live, 1);
    }
}

static void *t_retain(void *ctx, void *value) {
    (void)ctx;
    tracked *v = value;
    if (atomic_load(&v->magic) != TRACKED_MAGIC) atomic_fetch_add(&bad_derefs, 1);
    atomic_fetch_add(&v->refs, 1);
    return v;
}

static void t_release(void *ctx, void *value) {
    (void)ctx;
    tracked_drop(value);
}

static yyc_memcache *new_cache(void) {
    atomic_store(&live, 0);
    atomic_store(&bad_derefs, 0);
    yyc_value_callbacks cb = {t_retain, t_release, NULL};
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(&cb, &c), YYC_OK);
    return c;
}

/* Reads key and dereferences the value the way a user would, then drops the reference. */
static void read_and_use(yyc_memcache *c, const char *key, size_t len) {
    void *out = NULL;
    if (yyc_memcache_get(c, key, len, &out) != YYC_OK) return;
    tracked *v = out;
    if (atomic_load(&v->magic) != TRACKED_MAGIC || v->id < 0) atomic_fetch_add(&bad_derefs, 1);
    tracked_drop(v);
}

static uint64_t xorshift(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* --- eight threads, mixed operations --- */

enum { N_KEYS = 1000, N_THREADS = 8 };

typedef struct shared {
    yyc_memcache *c;
    double stop_at;
    atomic_long ops;
} shared;

typedef struct worker_arg {
    shared *s;
    int index;
} worker_arg;

static void *hot_key_replacer(shared *s) {
    int i = 0;
    while (test_now() < s->stop_at) {
        for (int k = 0; k < 64; k++) {
            tracked *v = tracked_new(i++);
            yyc_memcache_set(s->c, "hot", 3, v, 1);
            tracked_drop(v);
        }
        atomic_fetch_add(&s->ops, 64);
    }
    return NULL;
}

static void *trimmer(shared *s) {
    uint64_t rng = 0xfeedu;
    while (test_now() < s->stop_at) {
        switch (xorshift(&rng) % 8) {
        case 0: yyc_memcache_trim_to_count(s->c, 500 + xorshift(&rng) % 500); break;
        case 1: yyc_memcache_trim_to_cost(s->c, 20000 + xorshift(&rng) % 20000); break;
        case 2: yyc_memcache_trim_to_age(s->c, 0.5); break;
        case 3: yyc_memcache_set_release_asynchronously(s->c, xorshift(&rng) % 2); break;
        case 4:
            if (xorshift(&rng) % 16 == 0) yyc_memcache_remove_all(s->c);
            break;
        case 5: (void)yyc_memcache_total_cost(s->c); break;
        case 6: yyc_memcache_set_count_limit(s->c, 700 + xorshift(&rng) % 400); break;
        default: assert_true(yyc__memcache_check(s->c)); break;
        }
        atomic_fetch_add(&s->ops, 1);
        usleep(1000);
    }
    return NULL;
}

static void *mixer(shared *s, int index) {
    uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(index + 1);
    char key[16];
    long ops = 0;
    while (test_now() < s->stop_at) {
        for (int k = 0; k < 256; k++, ops++) {
            int id = (int)(xorshift(&rng) % N_KEYS);
            size_t len = (size_t)snprintf(key, sizeof key, "key-%d", id);
            unsigned what = (unsigned)(xorshift(&rng) % 100);
            if (what < 40) {
                read_and_use(s->c, key, len);
            } else if (what < 70) {
                tracked *v = tracked_new(id);
                yyc_memcache_set(s->c, key, len, v, (size_t)(xorshift(&rng) % 128));
                tracked_drop(v);
            } else if (what < 85) {
                yyc_memcache_remove(s->c, key, len);
            } else if (what < 95) {
                read_and_use(s->c, "hot", 3); /* PR #153: read while it is being replaced */
            } else {
                (void)yyc_memcache_contains(s->c, key, len);
            }
        }
    }
    atomic_fetch_add(&s->ops, ops);
    return NULL;
}

static void *worker_main(void *p) {
    worker_arg *a = p;
    if (a->index == 0) return hot_key_replacer(a->s);
    if (a->index == 1) return trimmer(a->s);
    return mixer(a->s, a->index);
}

static void set_flag(void *arg) { atomic_store((atomic_bool *)arg, true); }

static void eight_threads_mixing_operations_keep_totals_consistent(void **state) {
    (void)state;
    yyc_memcache *c = new_cache();
    yyc_memcache_set_count_limit(c, 900);
    yyc_memcache_set_cost_limit(c, 900 * 50); /* deferred cost trims on the worker */
    yyc_memcache_set_auto_trim_interval(c, 0.05);
    shared s = {.c = c, .stop_at = test_now() + RUN_SECONDS};
    pthread_t th[N_THREADS];
    worker_arg args[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        args[i] = (worker_arg){&s, i};
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &args[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
    assert_true(atomic_load(&s.ops) > 0);
    assert_int_equal(atomic_load(&bad_derefs), 0);

    /* Quiesce the background: pause the auto-trim, then queue a marker job. The memory queue's
     * thread runs one thing at a time in FIFO order, so when the marker runs, any auto-trim in
     * progress and every job queued before (cost trims, releases) has finished. */
    yyc_memcache_set_auto_trim_interval(c, 0);
    yyc_memcache_set_count_limit(c, SIZE_MAX);
    yyc_memcache_set_cost_limit(c, SIZE_MAX);
    atomic_bool marker = false;
    assert_int_equal(yyc__worker_async(YYC__QUEUE_MEMORY, &marker, set_flag, &marker), YYC_OK);
    assert_true(WAIT_UNTIL(atomic_load(&marker), 30.0));
    assert_true(yyc__memcache_check(c));
    size_t reachable = yyc_memcache_contains(c, "hot", 3) ? 1 : 0;
    char key[16];
    for (int id = 0; id < N_KEYS; id++) {
        size_t len = (size_t)snprintf(key, sizeof key, "key-%d", id);
        if (yyc_memcache_contains(c, key, len)) reachable++;
    }
    assert_int_equal(yyc_memcache_total_count(c), reachable);
    /* Every value still alive is held by the cache (once the async releases have run). */
    assert_true(WAIT_UNTIL(atomic_load(&live) == (long)reachable, 10.0));
    yyc_memcache_free(c);
    assert_int_equal(atomic_load(&live), 0);
    assert_int_equal(atomic_load(&bad_derefs), 0);
}

/* --- PR #153: one thread replaces a key's value while others get and dereference it --- */

typedef struct race {
    yyc_memcache *c;
    double stop_at;
    atomic_long reads;
} race;

static void *replacer(void *p) {
    race *r = p;
    int i = 0;
    while (test_now() < r->stop_at) {
        for (int k = 0; k < 128; k++) {
            tracked *v = tracked_new(i++);
            yyc_memcache_set(r->c, "k", 1, v, 0);
            tracked_drop(v);
        }
    }
    return NULL;
}

static void *reader(void *p) {
    race *r = p;
    long n = 0;
    while (test_now() < r->stop_at) {
        for (int k = 0; k < 128; k++, n++) read_and_use(r->c, "k", 1);
    }
    atomic_fetch_add(&r->reads, n);
    return NULL;
}

static void replacing_one_key_while_others_read_it_is_safe(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) { /* inline release is the dangerous case */
        yyc_memcache *c = new_cache();
        yyc_memcache_set_release_asynchronously(c, async);
        race r = {.c = c, .stop_at = test_now() + RUN_SECONDS / 2};
        pthread_t w, rd[4];
        assert_int_equal(pthread_create(&w, NULL, replacer, &r), 0);
        for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&rd[i], NULL, reader, &r), 0);
        pthread_join(w, NULL);
        for (int i = 0; i < 4; i++) pthread_join(rd[i], NULL);
        assert_true(atomic_load(&r.reads) > 0);
        assert_int_equal(atomic_load(&bad_derefs), 0);
        assert_int_equal(yyc_memcache_total_count(c), 1);
        yyc_memcache_free(c);
        assert_int_equal(atomic_load(&live), 0);
    }
}

/* --- trims interleave with foreground calls (one eviction per lock acquisition) --- */

typedef struct trim_race {
    yyc_memcache *c;
    atomic_bool done;
    atomic_long gets_during_trim;
} trim_race;

static void *getter_during_trim(void *p) {
    trim_race *t = p;
    while (!atomic_load(&t->done)) {
        read_and_use(t->c, "key-0", 5);
        atomic_fetch_add(&t->gets_during_trim, 1);
        usleep(50); /* YYCache's trylock loop sleeps 10 ms per failed try: keep it rare */
    }
    return NULL;
}

static void trim_interleaves_with_concurrent_gets(void **state) {
    (void)state;
    yyc_memcache *c = new_cache();
    char key[16];
    for (int id = 0; id < 20000; id++) {
        size_t len = (size_t)snprintf(key, sizeof key, "key-%d", id);
        tracked *v = tracked_new(id);
        assert_int_equal(yyc_memcache_set(c, key, len, v, 1), YYC_OK);
        tracked_drop(v);
    }
    read_and_use(c, "key-0", 5); /* key-0 at the head: the trim keeps it */
    trim_race t = {.c = c};
    pthread_t g;
    assert_int_equal(pthread_create(&g, NULL, getter_during_trim, &t), 0);
    assert_true(WAIT_UNTIL(atomic_load(&t.gets_during_trim) > 0, 10.0));
    yyc_memcache_trim_to_count(c, 1);
    atomic_store(&t.done, true);
    pthread_join(g, NULL);
    assert_int_equal(yyc_memcache_total_count(c), 1);
    assert_true(yyc_memcache_contains(c, "key-0", 5));
    yyc_memcache_free(c);
    assert_int_equal(atomic_load(&live), 0);
}

/* --- gets racing writers, evictions, expiry and remove_all never return an expired entry --- */

typedef struct expiry_race {
    yyc_memcache *c;
    double stop_at;
    atomic_long expired_upto; /* every "tick" value with an id <= this has expired */
    atomic_long reads, expired_hits;
} expiry_race;

/* Sets keys (some with a time to live of 0: expired at once), removes, clears. */
static void *expiry_writer(void *p) {
    expiry_race *r = p;
    uint64_t rng = 0xabcdefu;
    char key[16];
    while (test_now() < r->stop_at) {
        for (int k = 0; k < 128; k++) {
            int id = (int)(xorshift(&rng) % 500);
            unsigned what = (unsigned)(xorshift(&rng) % 100);
            bool dead = what < 30;
            size_t len = (size_t)snprintf(key, sizeof key, dead ? "dead-%d" : "key-%d", id);
            if (what < 85) {
                tracked *v = tracked_new(id);
                if (dead) yyc_memcache_set_with_ttl(r->c, key, len, v, 1, 0.0);
                else yyc_memcache_set(r->c, key, len, v, 1);
                tracked_drop(v);
            } else if (what < 99) {
                yyc_memcache_remove(r->c, key, len);
            } else if (xorshift(&rng) % 8 == 0) {
                yyc_memcache_remove_all(r->c);
            }
        }
    }
    return NULL;
}

/* Sets "tick" with a time to live of 1 s, then moves the deadlines' clock 2 s on. */
static void *expirer(void *p) {
    expiry_race *r = p;
    for (long g = 1; test_now() < r->stop_at; g++) {
        tracked *v = tracked_new((int)g);
        yyc_memcache_set_with_ttl(r->c, "tick", 4, v, 1, 1.0);
        tracked_drop(v);
        usleep(200);
        yyc__memcache_testing_advance_clock(2.0);
        atomic_store(&r->expired_upto, g);
    }
    return NULL;
}

static void *expiry_reader(void *p) {
    expiry_race *r = p;
    uint64_t rng = (uint64_t)(uintptr_t)&rng | 1;
    char key[16];
    long n = 0;
    while (test_now() < r->stop_at) {
        for (int k = 0; k < 128; k++, n++) {
            int id = (int)(xorshift(&rng) % 500);
            size_t len = (size_t)snprintf(key, sizeof key, "key-%d", id);
            read_and_use(r->c, key, len);
            len = (size_t)snprintf(key, sizeof key, "dead-%d", id);
            void *out = NULL;
            if (yyc_memcache_get(r->c, key, len, &out) == YYC_OK) { /* set already expired */
                atomic_fetch_add(&r->expired_hits, 1);
                tracked_drop(out);
            }
            long upto = atomic_load(&r->expired_upto);
            if (yyc_memcache_get(r->c, "tick", 4, &out) == YYC_OK) {
                tracked *v = out;
                if (atomic_load(&v->magic) != TRACKED_MAGIC) atomic_fetch_add(&bad_derefs, 1);
                if (v->id <= upto) atomic_fetch_add(&r->expired_hits, 1); /* expired before */
                tracked_drop(v);
            }
        }
    }
    atomic_fetch_add(&r->reads, n);
    return NULL;
}

static void gets_racing_writers_evictions_and_expiry_never_return_an_expired_entry(void **state) {
    (void)state;
    for (int async = 0; async <= 1; async++) {
        yyc_memcache *c = new_cache();
        yyc_memcache_set_release_asynchronously(c, async);
        yyc_memcache_set_count_limit(c, 300); /* evictions on most sets */
        expiry_race r = {.c = c, .stop_at = test_now() + RUN_SECONDS / 2};
        pthread_t w[2], e, rd[3];
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&w[i], NULL, expiry_writer, &r), 0);
        assert_int_equal(pthread_create(&e, NULL, expirer, &r), 0);
        for (int i = 0; i < 3; i++)
            assert_int_equal(pthread_create(&rd[i], NULL, expiry_reader, &r), 0);
        for (int i = 0; i < 2; i++) pthread_join(w[i], NULL);
        pthread_join(e, NULL);
        for (int i = 0; i < 3; i++) pthread_join(rd[i], NULL);
        assert_true(atomic_load(&r.reads) > 0);
        assert_int_equal(atomic_load(&r.expired_hits), 0);
        assert_int_equal(atomic_load(&bad_derefs), 0);
        assert_true(yyc__memcache_check(c));
        yyc_memcache_free(c);
        assert_int_equal(atomic_load(&live), 0);
    }
}

/* Run under every eviction policy (policy_support.h). */
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(eight_threads_mixing_operations_keep_totals_consistent),
    cmocka_unit_test(replacing_one_key_while_others_read_it_is_safe),
    cmocka_unit_test(trim_interleaves_with_concurrent_gets),
    cmocka_unit_test(gets_racing_writers_evictions_and_expiry_never_return_an_expired_entry),
};

YYC_EVERY_POLICY_TEST_MAIN(tests)
