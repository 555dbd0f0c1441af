/*
 * test_remote_faults.c - the remote tier when the server fails: killed, paused (SIGSTOP) and
 * restarted mid-operation, full (maxmemory + noeviction), closing connections (never a SIGPIPE
 * in the host), and the invalidation link (keys reach the listeners; a broken link is noticed
 * and flushes).
 */
#include "redis_support.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <yycache/remote.h>

static yyc_remote *open_remote(const test_redis *s, const char *ns) {
    yyc_remote *r = NULL;
    assert_int_equal(yyc_remote_open(s->url, ns, &r), YYC_OK);
    /* Generous: the tests run on loaded machines (the fault cases set short ones). */
    assert_int_equal(yyc_remote_set_timeouts(r, 10, 10), YYC_OK);
    return r;
}

static int get_rc(yyc_remote *r, const char *key) {
    void *v = NULL;
    size_t n = 0;
    int rc = yyc_remote_get(r, key, &v, &n);
    yyc_free(v);
    return rc;
}

/* Threads that keep calling while the server is killed, paused and restarted. */
typedef struct hammer {
    yyc_remote *r;
    atomic_bool stop;
    atomic_long ok, failed, other;
} hammer;

static void *hammer_main(void *arg) {
    hammer *h = arg;
    char key[16];
    for (long i = 0; !atomic_load(&h->stop); i++) {
        snprintf(key, sizeof key, "k%ld", i % 50);
        int rc = (i % 3 == 0) ? yyc_remote_set(h->r, key, "value", 5, 0) : get_rc(h->r, key);
        if (rc == YYC_OK || rc == YYC_NOTFOUND) atomic_fetch_add(&h->ok, 1);
        else if (rc == YYC_EIO) atomic_fetch_add(&h->failed, 1);
        else atomic_fetch_add(&h->other, 1);
    }
    return NULL;
}

static void killed_paused_and_restarted_servers_give_eio_then_calls_work_again(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    signal(SIGPIPE, SIG_DFL); /* a SIGPIPE would kill this test */
    test_redis s;
    test_redis_start(&s, NULL);
    yyc_remote *r = open_remote(&s, "f");
    assert_int_equal(yyc_remote_set_timeouts(r, 0.2, 0.2), YYC_OK);
    hammer h = {.r = r};
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, hammer_main, &h);
    assert_true(WAIT_UNTIL(atomic_load(&h.ok) > 100, 10));

    /* Killed mid-operation: calls fail with YYC_EIO (none hangs: they keep coming back). */
    test_redis_kill(&s);
    long failed = atomic_load(&h.failed);
    assert_true(WAIT_UNTIL(atomic_load(&h.failed) > failed + 20, 10));
    /* Back: the pool reconnects by itself. */
    test_redis_launch(&s);
    long ok = atomic_load(&h.ok);
    assert_true(WAIT_UNTIL(atomic_load(&h.ok) > ok + 100, 10));

    /* Paused: the calls time out (YYC_EIO) instead of waiting for the server. */
    test_redis_pause(&s);
    failed = atomic_load(&h.failed);
    assert_true(WAIT_UNTIL(atomic_load(&h.failed) > failed + 8, 20));
    test_redis_resume(&s);
    ok = atomic_load(&h.ok);
    assert_true(WAIT_UNTIL(atomic_load(&h.ok) > ok + 100, 10));

    /* Restarted (empty). */
    test_redis_restart(&s);
    ok = atomic_load(&h.ok);
    assert_true(WAIT_UNTIL(atomic_load(&h.ok) > ok + 100, 10));
    atomic_store(&h.stop, true);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    assert_int_equal(atomic_load(&h.other), 0);
    assert_int_equal(yyc_remote_set(r, "after", "x", 1, 0), YYC_OK);
    assert_int_equal(get_rc(r, "after"), YYC_OK);
    yyc_remote_statistics st;
    yyc_remote_get_statistics(r, &st);
    assert_true(st.errors > 0);
    assert_true(st.link_downs >= 1);
    /* The invalidation link is back up too. */
    assert_true(WAIT_UNTIL((yyc_remote_get_statistics(r, &st), st.invalidation_up), 10));
    yyc_remote_close(r);
    test_redis_stop(&s);
}

static void a_full_redis_refuses_writes_with_eio_and_reads_go_on(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    const char *extra[] = {"--maxmemory", "3mb", "--maxmemory-policy", "noeviction", NULL};
    test_redis s;
    test_redis_start(&s, extra);
    yyc_remote *r = open_remote(&s, "full");
    assert_int_equal(yyc_remote_set(r, "first", "kept", 4, 0), YYC_OK);
    static char value[64 * 1024];
    int rc = YYC_OK;
    int i = 0;
    for (; i < 1000 && rc == YYC_OK; i++) {
        char key[16];
        snprintf(key, sizeof key, "fill%d", i);
        rc = yyc_remote_set(r, key, value, sizeof value, 0);
    }
    assert_int_equal(rc, YYC_EIO);
    yyc_error e;
    yyc_last_error(&e);
    assert_non_null(strstr(e.message, "OOM"));
    void *v = NULL;
    size_t n = 0;
    assert_int_equal(yyc_remote_get(r, "first", &v, &n), YYC_OK);
    assert_memory_equal(v, "kept", 4);
    yyc_free(v);
    /* Removing makes room again. */
    assert_int_equal(yyc_remote_remove_all(r), YYC_OK);
    assert_int_equal(yyc_remote_set(r, "again", value, sizeof value, 0), YYC_OK);
    yyc_remote_close(r);
    test_redis_stop(&s);
}

/* A server that accepts and closes every connection at once (after reading nothing). */
typedef struct closing_server {
    char dir[40];
    char path[80];
    int fd;
    pthread_t thread;
    atomic_bool stop;
} closing_server;

static void *closing_main(void *arg) {
    closing_server *cs = arg;
    while (!atomic_load(&cs->stop)) {
        int c = accept(cs->fd, NULL, NULL);
        if (c >= 0) close(c);
    }
    return NULL;
}

static void a_server_closing_connections_never_raises_sigpipe(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    signal(SIGPIPE, SIG_DFL); /* the default action: a SIGPIPE kills this process */
    /* A real Redis killing every client: the kept connections are dead when next written to. */
    test_redis s;
    test_redis_start(&s, NULL);
    yyc_remote *r = open_remote(&s, "pipe");
    static char value[256 * 1024]; /* larger than a socket buffer: the write hits the close */
    for (int round = 0; round < 20; round++) {
        assert_int_equal(yyc_remote_set(r, "k", value, sizeof value, 0), YYC_OK);
        REDIS_ADMIN(&s, "CLIENT", "KILL", "TYPE", "normal");
        /* The dead kept connection is replaced once: the call still works. */
        assert_int_equal(yyc_remote_set(r, "k", value, sizeof value, 0), YYC_OK);
    }
    yyc_remote_close(r);
    test_redis_stop(&s);

    /* A server that hangs up on every connection before reading: writes get EPIPE. */
    closing_server cs = {.fd = -1};
    snprintf(cs.dir, sizeof cs.dir, "/tmp/yyc-closing-XXXXXX");
    assert_non_null(mkdtemp(cs.dir));
    snprintf(cs.path, sizeof cs.path, "%s/s.sock", cs.dir);
    cs.fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", cs.path);
    assert_int_equal(bind(cs.fd, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(listen(cs.fd, 64), 0);
    pthread_create(&cs.thread, NULL, closing_main, &cs);
    char url[160];
    snprintf(url, sizeof url, "unix://%s", cs.path);
    r = NULL;
    assert_int_equal(yyc_remote_open(url, "pipe", &r), YYC_EIO); /* PING gets no answer */
    assert_null(r);
    /* The calling thread's mask is as it was, and no SIGPIPE is left pending. */
    sigset_t mask, pending;
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    assert_false(sigismember(&mask, SIGPIPE));
    sigpending(&pending);
    assert_false(sigismember(&pending, SIGPIPE));
    /* With SIGPIPE already blocked by the host: left blocked. */
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &only, NULL);
    assert_int_equal(yyc_remote_open(url, "pipe", &r), YYC_EIO);
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    assert_true(sigismember(&mask, SIGPIPE));
    /* (A SIGPIPE raised meanwhile is the host's to take.) */
    const struct timespec zero = {0, 0};
    sigtimedwait(&only, NULL, &zero);
    pthread_sigmask(SIG_UNBLOCK, &only, NULL);
    atomic_store(&cs.stop, true);
    shutdown(cs.fd, SHUT_RDWR);
    int poke = socket(AF_UNIX, SOCK_STREAM, 0);
    connect(poke, (struct sockaddr *)&addr, sizeof addr);
    close(poke);
    pthread_join(cs.thread, NULL);
    close(cs.fd);
    test_rm_rf(cs.dir);
}

/* A listener that records what it was told. */
typedef struct heard {
    pthread_mutex_t lock;
    char keys[64][32];
    int key_count;
    int flushes;
} heard;

static void on_event(void *ctx, yyc_remote_event event, const char *key, size_t key_len,
                     uint64_t epoch) {
    (void)epoch;
    heard *h = ctx;
    pthread_mutex_lock(&h->lock);
    if (event == YYC_REMOTE_FLUSH) h->flushes++;
    else if (h->key_count < 64 && key_len < 32) {
        memcpy(h->keys[h->key_count], key, key_len);
        h->keys[h->key_count++][key_len] = '\0';
    }
    pthread_mutex_unlock(&h->lock);
}

static bool heard_key(heard *h, const char *key) {
    pthread_mutex_lock(&h->lock);
    bool found = false;
    for (int i = 0; i < h->key_count; i++) found = found || strcmp(h->keys[i], key) == 0;
    pthread_mutex_unlock(&h->lock);
    return found;
}

static int flushes(heard *h) {
    pthread_mutex_lock(&h->lock);
    int n = h->flushes;
    pthread_mutex_unlock(&h->lock);
    return n;
}

static void another_instances_writes_reach_the_listeners_and_a_broken_link_flushes(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    yyc_remote *a = open_remote(&s, "inv");
    yyc_remote *b = open_remote(&s, "inv");
    yyc_remote *other = open_remote(&s, "other");
    heard h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    uint64_t id;
    assert_int_equal(yyc_remote_add_listener(b, on_event, &h, &id), YYC_OK);
    uint64_t epoch = yyc_remote_invalidation_epoch(b);
    assert_int_equal(epoch % 2, 1);
    assert_int_equal(yyc_remote_set(other, "x", "1", 1, 0), YYC_OK); /* another namespace */
    assert_int_equal(yyc_remote_set(a, "set", "1", 1, 0), YYC_OK);
    assert_int_equal(yyc_remote_remove(a, "set"), YYC_OK);
    assert_int_equal(yyc_remote_set(a, "expiring", "1", 1, 0.01), YYC_OK);
    REDIS_ADMIN(&s, "SET", "inv:by-another-client", "x");
    assert_true(WAIT_UNTIL(heard_key(&h, "set"), 10));
    assert_true(WAIT_UNTIL(heard_key(&h, "by-another-client"), 10));
    assert_true(WAIT_UNTIL(heard_key(&h, "expiring") && (get_rc(a, "expiring"), true) &&
                               heard_key(&h, "expiring"),
                           10));
    assert_false(heard_key(&h, "x"));
    /* FLUSHALL: everything. */
    int before = flushes(&h);
    REDIS_ADMIN(&s, "FLUSHALL");
    assert_true(WAIT_UNTIL(flushes(&h) > before, 10));
    /* The link's connections killed: down (flush, even epoch), then up again (flush, odd). */
    before = flushes(&h);
    REDIS_ADMIN(&s, "CLIENT", "KILL", "TYPE", "pubsub");
    assert_true(WAIT_UNTIL(flushes(&h) >= before + 2, 10));
    assert_true(WAIT_UNTIL(yyc_remote_invalidation_epoch(b) % 2 == 1, 10));
    assert_true(yyc_remote_invalidation_epoch(b) >= epoch + 2);
    yyc_remote_statistics st;
    yyc_remote_get_statistics(b, &st);
    assert_true(st.link_downs >= 1);
    /* Still delivering. */
    assert_int_equal(yyc_remote_set(a, "later", "1", 1, 0), YYC_OK);
    assert_true(WAIT_UNTIL(heard_key(&h, "later"), 10));
    yyc_remote_remove_listener(b, id);
    yyc_remote_close(a);
    yyc_remote_close(b);
    yyc_remote_close(other);
    test_redis_stop(&s);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(killed_paused_and_restarted_servers_give_eio_then_calls_work_again),
    cmocka_unit_test(a_full_redis_refuses_writes_with_eio_and_reads_go_on),
    cmocka_unit_test(a_server_closing_connections_never_raises_sigpipe),
    cmocka_unit_test(another_instances_writes_reach_the_listeners_and_a_broken_link_flushes),
};

YYC_TEST_MAIN(tests)
