/*
 * test_disk_cache_registry.c - the per-path registry of yyc_diskcache: its lock covers only its
 * bookkeeping, so an open or close stuck in the storage holds up nothing but opens of the same
 * path; opens of one path share one core created once; a failed open fails the opens waiting
 * for it and leaves nothing registered; open/close storms leak and race nothing.
 *
 * Ordering is asserted with a gate (the test hook blocks an opener or a closer where it works
 * with no lock held) and with flags, never with durations. Every test works in its own
 * temporary folder.
 */
#include "test_kv_support.h"

#include "platform/internal.h" /* yyc__worker_async: run an open on the library's worker thread */
#include "kv/kv_private.h"     /* yyc__kv_testing_set_default_busy_timeout */

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

/* Test hooks of disk_cache_registry.c (YYC_TESTING). */
void yyc__diskcache_set_test_hook(void (*fn)(void *ctx, const char *path, bool closing), void *ctx);
long yyc__diskcache_registry_waiters(const char *canonical_path);
int yyc__diskcache_registry_size(void);

/* Generous bound for polling a condition that must come true (not a timing assertion). */
#define EVENTUALLY 120.0

/* --- the gate: blocks the opener (or closer) of one path in the test hook --- */

typedef struct gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    char path[PATH_MAX]; /* canonical path the gate applies to */
    bool on_close;       /* block closes (true) or opens (false) of that path */
    bool armed;
    bool open;
    int reached;
    atomic_int creations; /* opens of path that created a core */
    atomic_int closings;  /* closes of path that closed a core */
} gate;

static void gate_init(gate *g, const char *canonical_path, bool on_close) {
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->m, NULL);
    pthread_cond_init(&g->c, NULL);
    snprintf(g->path, sizeof g->path, "%s", canonical_path);
    g->on_close = on_close;
    g->armed = true;
}

static void gate_destroy(gate *g) {
    pthread_mutex_destroy(&g->m);
    pthread_cond_destroy(&g->c);
}

static void gate_hook(void *ctx, const char *path, bool closing) {
    gate *g = ctx;
    if (strcmp(path, g->path) != 0) return;
    if (closing) g->closings++;
    else g->creations++;
    pthread_mutex_lock(&g->m);
    if (g->armed && closing == g->on_close) {
        g->armed = false; /* blocks one caller */
        g->reached++;
        pthread_cond_broadcast(&g->c);
        while (!g->open) pthread_cond_wait(&g->c, &g->m);
    }
    pthread_mutex_unlock(&g->m);
}

/* Returns once a caller is blocked in the gate. */
static void gate_wait_reached(gate *g) {
    pthread_mutex_lock(&g->m);
    while (g->reached == 0) pthread_cond_wait(&g->c, &g->m);
    pthread_mutex_unlock(&g->m);
}

static void gate_release(gate *g) {
    pthread_mutex_lock(&g->m);
    g->open = true;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
}

/* Re-arms a released gate for the next caller. */
static void gate_rearm(gate *g, bool on_close) {
    pthread_mutex_lock(&g->m);
    g->on_close = on_close;
    g->armed = true;
    g->open = false;
    g->reached = 0;
    pthread_mutex_unlock(&g->m);
}

/* --- threads that open, close or release --- */

typedef enum { DO_OPEN, DO_CLOSE, DO_RELEASE } action;

typedef struct call {
    action what;
    const char *path;
    yyc_diskcache *dc; /* DO_OPEN: result; else the core acted on */
    int rc;
    yyc_error err;
    atomic_bool done;
    pthread_barrier_t *barrier; /* optional start line */
    pthread_t th;
} call;

static void *call_main(void *arg) {
    call *c = arg;
    if (c->barrier) pthread_barrier_wait(c->barrier);
    switch (c->what) {
    case DO_OPEN:
        c->rc = yyc_diskcache_open(c->path, 100, &c->dc);
        yyc_last_error(&c->err);
        break;
    case DO_CLOSE: yyc_diskcache_close(c->dc); break;
    case DO_RELEASE: yyc_diskcache_release(c->dc); break;
    }
    c->done = true;
    return NULL;
}

static void start(call *c, action what, const char *path, yyc_diskcache *dc) {
    c->what = what;
    c->path = path;
    c->dc = dc;
    c->rc = -1;
    c->done = false;
    assert_int_equal(pthread_create(&c->th, NULL, call_main, c), 0);
}

static void join(call *c) { assert_int_equal(pthread_join(c->th, NULL), 0); }

/* --- helpers --- */

/* "<dir>/<name>", created, as a canonical path (malloc'd). */
static char *make_subdir(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_int_equal(mkdir(p, 0700), 0);
    char *canon = realpath(p, NULL);
    assert_non_null(canon);
    return canon;
}

static yyc_diskcache *open_ok(const char *path) {
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(path, 100, &dc), YYC_OK);
    assert_non_null(dc);
    return dc;
}

/* A full round trip on another path: open, write, read, close, release. */
static void use_other_path(const char *path) {
    yyc_diskcache *dc = open_ok(path);
    tk_set_str(dc, "other", "path");
    tk_check_str(dc, "other", "path");
    yyc_diskcache_close(dc);
    yyc_diskcache_release(dc);
    dc = open_ok(path); /* and a last-reference teardown */
    tk_check_str(dc, "other", "path");
    yyc_diskcache_release(dc);
}

/* --- tests --- */

static void registry_other_paths_open_and_close_while_an_open_is_stuck(void **state) {
    (void)state;
    char *dir = test_temp_dir("reg-stuck");
    char *a = make_subdir(dir, "a");
    char *b = make_subdir(dir, "b");
    gate g;
    gate_init(&g, a, false);
    yyc__diskcache_set_test_hook(gate_hook, &g);

    call first = {0}, second = {0};
    start(&first, DO_OPEN, a, NULL);
    gate_wait_reached(&g); /* the first open of A is stuck before its storage opens */
    start(&second, DO_OPEN, a, NULL);
    assert_true(WAIT_UNTIL(yyc__diskcache_registry_waiters(a) == 1, EVENTUALLY));

    use_other_path(b); /* would wait for A's open if the registry lock covered it */
    assert_false(first.done);
    assert_false(second.done);

    gate_release(&g);
    join(&first);
    join(&second);
    assert_int_equal(first.rc, YYC_OK);
    assert_int_equal(second.rc, YYC_OK);
    assert_ptr_equal(first.dc, second.dc);
    assert_int_equal(g.creations, 1);
    tk_set_str(first.dc, "k", "v");
    tk_check_str(second.dc, "k", "v");
    yyc_diskcache_release(first.dc);
    yyc_diskcache_release(second.dc);
    assert_int_equal(yyc__diskcache_registry_size(), 0);

    yyc__diskcache_set_test_hook(NULL, NULL);
    gate_destroy(&g);
    test_rm_rf(dir);
    free(a);
    free(b);
    free(dir);
}

static void registry_concurrent_opens_of_one_path_share_one_core_created_once(void **state) {
    (void)state;
    char *dir = test_temp_dir("reg-once");
    char *a = make_subdir(dir, "a");
    enum { T = 8 };
    /* Unblocked: all start together. */
    gate g;
    gate_init(&g, a, false);
    g.armed = false;
    yyc__diskcache_set_test_hook(gate_hook, &g);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, T);
    call c[T];
    memset(c, 0, sizeof c);
    for (int i = 0; i < T; i++) {
        c[i].barrier = &barrier;
        start(&c[i], DO_OPEN, a, NULL);
    }
    for (int i = 0; i < T; i++) join(&c[i]);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < T; i++) {
        assert_int_equal(c[i].rc, YYC_OK);
        assert_ptr_equal(c[i].dc, c[0].dc);
    }
    assert_int_equal(g.creations, 1);
    for (int i = 0; i < T; i++) yyc_diskcache_release(c[i].dc);
    assert_int_equal(yyc__diskcache_registry_size(), 0);
    assert_int_equal(g.closings, 1);

    /* Blocked: every other open provably waits for the one that creates the core. */
    gate_rearm(&g, false);
    g.creations = 0;
    for (int i = 0; i < T; i++) c[i].barrier = NULL;
    start(&c[0], DO_OPEN, a, NULL);
    gate_wait_reached(&g);
    for (int i = 1; i < T; i++) start(&c[i], DO_OPEN, a, NULL);
    assert_true(WAIT_UNTIL(yyc__diskcache_registry_waiters(a) == T - 1, EVENTUALLY));
    for (int i = 0; i < T; i++) assert_false(c[i].done);
    gate_release(&g);
    for (int i = 0; i < T; i++) join(&c[i]);
    for (int i = 0; i < T; i++) {
        assert_int_equal(c[i].rc, YYC_OK);
        assert_ptr_equal(c[i].dc, c[0].dc);
    }
    assert_int_equal(g.creations, 1);
    assert_int_equal(yyc__diskcache_registry_waiters(a), 0);
    for (int i = 0; i < T; i++) yyc_diskcache_release(c[i].dc);
    assert_int_equal(yyc__diskcache_registry_size(), 0);

    yyc__diskcache_set_test_hook(NULL, NULL);
    gate_destroy(&g);
    test_rm_rf(dir);
    free(a);
    free(dir);
}

static void registry_a_failed_open_fails_its_waiters_and_leaves_nothing_registered(void **state) {
    (void)state;
    char *dir = test_temp_dir("reg-fail");
    char *a = make_subdir(dir, "a");
    char *b = make_subdir(dir, "b");
    /* Another connection holds A's manifest (rollback journal) exclusively: the open waits on
     * SQLite's busy timeout for real (shortened from 5 s for the test), then fails with
     * YYC_EBUSY. */
    yyc__kv_testing_set_default_busy_timeout(200);
    sqlite3 *raw = tk_raw_open(a);
    tk_raw_exec(raw, "begin exclusive");
    gate g;
    gate_init(&g, a, false);
    yyc__diskcache_set_test_hook(gate_hook, &g);

    call first = {0}, second = {0};
    start(&first, DO_OPEN, a, NULL);
    gate_wait_reached(&g);
    start(&second, DO_OPEN, a, NULL);
    assert_true(WAIT_UNTIL(yyc__diskcache_registry_waiters(a) == 1, EVENTUALLY));
    gate_release(&g); /* the first open now waits on the locked manifest */
    use_other_path(b);
    join(&first);
    join(&second);
    assert_int_equal(first.rc, YYC_EBUSY);
    assert_null(first.dc);
    assert_int_equal(first.err.code, YYC_EBUSY);
    /* The waiter saw the same failure, with the same details. */
    assert_int_equal(second.rc, first.rc);
    assert_null(second.dc);
    assert_int_equal(second.err.code, first.err.code);
    assert_int_equal(second.err.sqlite_code, first.err.sqlite_code);
    assert_string_equal(second.err.message, first.err.message);
    assert_int_equal(g.creations, 1);
    /* Nothing stays registered: the next open tries afresh and works. */
    assert_int_equal(yyc__diskcache_registry_waiters(a), -1);
    assert_int_equal(yyc__diskcache_registry_size(), 0);
    tk_raw_exec(raw, "rollback");
    sqlite3_close(raw);
    yyc__kv_testing_set_default_busy_timeout(0);
    yyc_diskcache *dc = open_ok(a);
    assert_int_equal(g.creations, 2);
    tk_set_str(dc, "k", "v");
    tk_check_str(dc, "k", "v");
    yyc_diskcache_release(dc);
    assert_int_equal(yyc__diskcache_registry_size(), 0);

    yyc__diskcache_set_test_hook(NULL, NULL);
    gate_destroy(&g);
    test_rm_rf(dir);
    free(a);
    free(b);
    free(dir);
}

static void registry_an_open_waits_for_a_close_of_the_same_path_only(void **state) {
    (void)state;
    char *dir = test_temp_dir("reg-closing");
    char *a = make_subdir(dir, "a");
    char *b = make_subdir(dir, "b");
    gate g;
    gate_init(&g, a, true);
    yyc__diskcache_set_test_hook(gate_hook, &g);

    /* An explicit close stuck before closing A's storage. */
    yyc_diskcache *old = open_ok(a);
    tk_set_str(old, "k", "v");
    call closer = {0}, opener = {0};
    start(&closer, DO_CLOSE, NULL, old);
    gate_wait_reached(&g);
    start(&opener, DO_OPEN, a, NULL);
    assert_true(WAIT_UNTIL(yyc__diskcache_registry_waiters(a) == 1, EVENTUALLY));
    use_other_path(b);
    assert_false(closer.done);
    assert_false(opener.done); /* never shares the half-closed core nor opens next to it */
    gate_release(&g);
    join(&closer);
    join(&opener);
    assert_int_equal(opener.rc, YYC_OK);
    assert_ptr_not_equal(opener.dc, old); /* old is still referenced: its address is unique */
    tk_check_str(opener.dc, "k", "v");
    int64_t n = 0;
    assert_int_equal(yyc_diskcache_total_count(old, &n), YYC_ECLOSED);
    yyc_diskcache_release(old);

    /* The last release of a core, stuck the same way. */
    gate_rearm(&g, true);
    yyc_diskcache *cur = opener.dc;
    tk_set_str(cur, "k2", "v2");
    call releaser = {0};
    start(&releaser, DO_RELEASE, NULL, cur);
    gate_wait_reached(&g);
    start(&opener, DO_OPEN, a, NULL);
    assert_true(WAIT_UNTIL(yyc__diskcache_registry_waiters(a) == 1, EVENTUALLY));
    use_other_path(b);
    assert_false(releaser.done);
    assert_false(opener.done);
    gate_release(&g);
    join(&releaser);
    join(&opener);
    assert_int_equal(opener.rc, YYC_OK);
    tk_check_str(opener.dc, "k", "v");
    tk_check_str(opener.dc, "k2", "v2");
    yyc_diskcache_release(opener.dc);
    assert_int_equal(yyc__diskcache_registry_size(), 0);

    yyc__diskcache_set_test_hook(NULL, NULL);
    gate_destroy(&g);
    test_rm_rf(dir);
    free(a);
    free(b);
    free(dir);
}

/* An open run as a job on the library's worker thread (where error hooks of the auto-trim run). */
typedef struct worker_open {
    const char *path;
    yyc_diskcache *dc;
    int rc;
    atomic_bool done;
} worker_open;

static void worker_open_job(void *arg) {
    worker_open *w = arg;
    w->rc = yyc_diskcache_open(w->path, 100, &w->dc);
    w->done = true;
}

static void registry_an_open_on_the_worker_thread_does_not_wait(void **state) {
    (void)state;
    char *dir = test_temp_dir("reg-worker");
    char *a = make_subdir(dir, "a");
    gate g;
    gate_init(&g, a, false);
    yyc__diskcache_set_test_hook(gate_hook, &g);
    call first = {0};
    start(&first, DO_OPEN, a, NULL);
    gate_wait_reached(&g);
    /* The opener may need the worker (its failure path drains the worker's jobs): an open on
     * the worker gives up at once instead of waiting for it. */
    worker_open w = {.path = a};
    assert_int_equal(yyc__worker_async(YYC__QUEUE_DISK, &w, worker_open_job, &w), YYC_OK);
    bool finished = WAIT_UNTIL(w.done, EVENTUALLY);
    gate_release(&g);
    assert_true(finished);
    assert_int_equal(w.rc, YYC_EBUSY);
    assert_null(w.dc);
    join(&first);
    assert_int_equal(first.rc, YYC_OK);
    /* A READY core is shared on the worker as anywhere. */
    worker_open w2 = {.path = a};
    assert_int_equal(yyc__worker_async(YYC__QUEUE_DISK, &w2, worker_open_job, &w2), YYC_OK);
    assert_true(WAIT_UNTIL(w2.done, EVENTUALLY)); /* not a drain: it could run the job here */
    yyc__worker_drain(&w2);
    assert_int_equal(w2.rc, YYC_OK);
    assert_ptr_equal(w2.dc, first.dc);
    yyc_diskcache_release(w2.dc);
    yyc_diskcache_release(first.dc);
    assert_int_equal(yyc__diskcache_registry_size(), 0);

    yyc__diskcache_set_test_hook(NULL, NULL);
    gate_destroy(&g);
    test_rm_rf(dir);
    free(a);
    free(dir);
}

/* --- storms --- */

enum { STORM_PATHS = 3, STORM_THREADS = 6, STORM_ROUNDS = 120 };

typedef struct storm {
    char **paths;
    int id;
    atomic_int *errors;
    atomic_int *opens;
} storm;

static void *storm_worker(void *arg) {
    storm *s = arg;
    unsigned r = (unsigned)s->id * 2654435761u + 7u;
    char key[32], value[300];
    memset(value, 'x', sizeof value);
    for (int round = 0; round < STORM_ROUNDS; round++) {
        yyc_diskcache *held[2] = {NULL, NULL};
        int nheld = 1 + (int)(rand_r(&r) % 2); /* sometimes two paths at once */
        for (int h = 0; h < nheld; h++) {
            const char *path = s->paths[rand_r(&r) % STORM_PATHS];
            if (yyc_diskcache_open(path, 100, &held[h]) != YYC_OK) {
                (*s->errors)++;
                held[h] = NULL;
                continue;
            }
            (*s->opens)++;
        }
        for (int h = 0; h < nheld; h++) {
            yyc_diskcache *dc = held[h];
            if (!dc) continue;
            snprintf(key, sizeof key, "k%u", rand_r(&r) % 8);
            size_t len = (rand_r(&r) % 2) ? sizeof value : 10; /* inline or a file */
            int rc = yyc_diskcache_set(dc, key, value, len, NULL, 0);
            void *v = NULL;
            size_t got = 0;
            int rc2 = yyc_diskcache_get(dc, key, &v, &got);
            yyc_free(v);
            /* Another thread may close the shared core at any moment. */
            if ((rc != YYC_OK && rc != YYC_ECLOSED) ||
                (rc2 != YYC_OK && rc2 != YYC_NOTFOUND && rc2 != YYC_ECLOSED))
                (*s->errors)++;
            switch (rand_r(&r) % 6) {
            case 0: yyc_diskcache_close(dc); break;
            case 1:
                yyc_diskcache_retain(dc);
                yyc_diskcache_release(dc);
                break;
            default: break;
            }
        }
        for (int h = 0; h < nheld; h++) yyc_diskcache_release(held[h]);
    }
    return NULL;
}

static void registry_open_close_storms_on_a_few_paths_leak_and_race_nothing(void **state) {
    (void)state;
    char *dir = test_temp_dir("reg-storm");
    char *paths[STORM_PATHS];
    for (int i = 0; i < STORM_PATHS; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        paths[i] = make_subdir(dir, name);
    }
    atomic_int errors = 0, opens = 0;
    pthread_t th[STORM_THREADS];
    storm s[STORM_THREADS];
    for (int i = 0; i < STORM_THREADS; i++) {
        s[i] = (storm){.paths = paths, .id = i, .errors = &errors, .opens = &opens};
        assert_int_equal(pthread_create(&th[i], NULL, storm_worker, &s[i]), 0);
    }
    for (int i = 0; i < STORM_THREADS; i++) pthread_join(th[i], NULL);
    assert_int_equal(errors, 0);
    assert_true(opens >= STORM_THREADS * STORM_ROUNDS);
    /* Everything was released and closed: nothing registered, every folder consistent. */
    assert_int_equal(yyc__diskcache_registry_size(), 0);
    for (int i = 0; i < STORM_PATHS; i++) {
        yyc_diskcache *dc = open_ok(paths[i]);
        int64_t files =
            tk_int(paths[i], "select count(*) from manifest where filename is not null");
        assert_int_equal(tk_count_entries(paths[i], "data"), (int)files);
        yyc_diskcache_release(dc);
        free(paths[i]);
    }
    assert_int_equal(yyc__diskcache_registry_size(), 0);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(registry_other_paths_open_and_close_while_an_open_is_stuck),
    cmocka_unit_test(registry_concurrent_opens_of_one_path_share_one_core_created_once),
    cmocka_unit_test(registry_a_failed_open_fails_its_waiters_and_leaves_nothing_registered),
    cmocka_unit_test(registry_an_open_waits_for_a_close_of_the_same_path_only),
    cmocka_unit_test(registry_an_open_on_the_worker_thread_does_not_wait),
    cmocka_unit_test(registry_open_close_storms_on_a_few_paths_leak_and_race_nothing),
};

YYC_TEST_MAIN(tests)
