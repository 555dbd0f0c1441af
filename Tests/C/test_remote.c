/*
 * test_remote.c - the remote tier (yycache/remote.h) against a real redis-server
 * (redis_support.h): URLs, get/set/ttl/remove/contains, binary keys and values, namespaces,
 * corrupt and foreign values, value size limit, authentication (password, ACL user).
 */
#include "redis_support.h"

#include "remote/remote_internal.h"

#include <dirent.h>
#include <math.h>

typedef struct hook_log {
    int count;
    int last_code;
} hook_log;

static void log_hook(void *ctx, const yyc_error *e) {
    hook_log *log = ctx;
    __atomic_add_fetch(&log->count, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&log->last_code, e->code, __ATOMIC_SEQ_CST);
}

static yyc_remote *open_remote(const test_redis *s, const char *ns) {
    yyc_remote *r = NULL;
    int rc = yyc_remote_open(s->url, ns, &r);
    if (rc != YYC_OK) {
        yyc_error e;
        yyc_last_error(&e);
        print_message("open: %s\n", e.message);
    }
    assert_int_equal(rc, YYC_OK);
    /* Generous: the tests run on loaded machines. */
    assert_int_equal(yyc_remote_set_timeouts(r, 10, 10), YYC_OK);
    return r;
}

static void expect_remote_value(yyc_remote *r, const char *key, const void *want, size_t want_len) {
    void *v = NULL;
    size_t n = 0;
    assert_int_equal(yyc_remote_get(r, key, &v, &n), YYC_OK);
    assert_int_equal(n, want_len);
    if (n) assert_memory_equal(v, want, n);
    yyc_free(v);
}

static void expect_remote_miss(yyc_remote *r, const char *key) {
    void *v = (void *)1;
    size_t n = 1;
    assert_int_equal(yyc_remote_get(r, key, &v, &n), YYC_NOTFOUND);
    assert_null(v);
    assert_int_equal(n, 0);
}

static void urls_are_parsed_and_bad_ones_refused(void **state) {
    (void)state;
    yyc__remote_url u;
    assert_int_equal(yyc__remote_url_parse("redis://localhost", &u), YYC_OK);
    assert_string_equal(u.host, "localhost");
    assert_int_equal(u.port, 6379);
    assert_null(u.password);
    yyc__remote_url_free(&u);
    assert_int_equal(yyc__remote_url_parse("redis://al%40ce:p%3Aw@10.0.0.1:7000/3", &u), YYC_OK);
    assert_string_equal(u.user, "al@ce");
    assert_string_equal(u.password, "p:w");
    assert_string_equal(u.host, "10.0.0.1");
    assert_int_equal(u.port, 7000);
    assert_int_equal(u.db, 3);
    yyc__remote_url_free(&u);
    assert_int_equal(yyc__remote_url_parse("redis://:secret@[::1]:6380", &u), YYC_OK);
    assert_null(u.user);
    assert_string_equal(u.password, "secret");
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 6380);
    yyc__remote_url_free(&u);
    assert_int_equal(yyc__remote_url_parse("unix://bob:pw@/run/redis/r.sock?db=2", &u), YYC_OK);
    assert_string_equal(u.unix_path, "/run/redis/r.sock");
    assert_string_equal(u.user, "bob");
    assert_int_equal(u.db, 2);
    yyc__remote_url_free(&u);
    assert_int_equal(yyc__remote_url_parse("unix:///tmp/a.sock", &u), YYC_OK);
    assert_string_equal(u.unix_path, "/tmp/a.sock");
    assert_null(u.user);
    yyc__remote_url_free(&u);
    const char *bad[] = {"http://x",      "redis://",        "redis://h:0",     "redis://h:99999",
                         "redis://h:x",   "redis://h/db",    "redis://[::1",    "unix://rel.sock",
                         "unix:///s?x=1", "redis://u:%zz@h", "redis://u:%00@h", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(yyc__remote_url_parse(bad[i], &u), YYC_EINVAL);
        assert_null(u.host);
    }
    /* The password never appears in an error message. */
    yyc_remote *r = NULL;
    assert_int_equal(yyc_remote_open("redis://u:hunter2@h:0", "ns", &r), YYC_EINVAL);
    yyc_error e;
    yyc_last_error(&e);
    assert_null(strstr(e.message, "hunter2"));
    assert_int_equal(yyc_remote_open("redis://h", "", &r), YYC_EINVAL);
    assert_null(r);
}

static void get_set_remove_and_contains_round_trip(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    yyc_remote *r = open_remote(&s, "app");
    expect_remote_miss(r, "k");
    bool has = true;
    assert_int_equal(yyc_remote_contains(r, "k", &has), YYC_OK);
    assert_false(has);
    assert_int_equal(yyc_remote_set(r, "k", "value", 5, 0), YYC_OK);
    expect_remote_value(r, "k", "value", 5);
    assert_int_equal(yyc_remote_contains(r, "k", &has), YYC_OK);
    assert_true(has);
    assert_int_equal(yyc_remote_set(r, "k", "", 0, 0), YYC_OK); /* empty values are values */
    expect_remote_value(r, "k", "", 0);
    assert_int_equal(yyc_remote_remove(r, "k"), YYC_OK);
    expect_remote_miss(r, "k");
    assert_int_equal(yyc_remote_remove(r, "k"), YYC_OK); /* absent: fine */
    /* Bad arguments. */
    void *v;
    size_t n;
    assert_int_equal(yyc_remote_get(r, "", &v, &n), YYC_EINVAL);
    assert_int_equal(yyc_remote_set(r, "k", NULL, 3, 0), YYC_EINVAL);
    assert_int_equal(yyc_remote_set(r, "k", "x", 1, -1), YYC_EINVAL);
    assert_int_equal(yyc_remote_set(r, "k", "x", 1, NAN), YYC_EINVAL);
    assert_int_equal(yyc_remote_set_timeouts(r, 0, 1), YYC_EINVAL);
    yyc_remote_statistics st;
    assert_int_equal(yyc_remote_get_statistics(r, &st), YYC_OK);
    assert_int_equal(st.hits, 2);
    assert_int_equal(st.misses, 2);
    assert_true(st.invalidation_up);
    yyc_remote_close(r);
    test_redis_stop(&s);
}

static void a_time_to_live_is_kept_by_redis_and_read_back(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    yyc_remote *r = open_remote(&s, "ttl");
    assert_int_equal(yyc_remote_set(r, "k", "v", 1, 100), YYC_OK);
    void *v = NULL;
    size_t n = 0;
    double ttl = 0;
    assert_int_equal(yyc_remote_get_with_ttl(r, "k", &v, &n, &ttl), YYC_OK);
    yyc_free(v);
    assert_true(ttl > 0 && ttl <= 100);
    assert_int_equal(yyc_remote_set(r, "forever", "v", 1, 0), YYC_OK);
    assert_int_equal(yyc_remote_get_with_ttl(r, "forever", &v, &n, &ttl), YYC_OK);
    yyc_free(v);
    assert_true(isinf(ttl));
    assert_int_equal(yyc_remote_set(r, "short", "v", 1, 0.05), YYC_OK);
    bool has = true;
    assert_true(WAIT_UNTIL(yyc_remote_contains(r, "short", &has) == YYC_OK && !has, 10));
    expect_remote_miss(r, "short");
    yyc_remote_close(r);
    test_redis_stop(&s);
}

static void set_if_absent_stores_only_when_redis_has_no_value_and_says_which(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    yyc_remote *r = open_remote(&s, "nx");
    yyc_remote *other = open_remote(&s, "nx");
    bool stored = false;
    assert_int_equal(yyc_remote_set_if_absent(r, "k", "first", 5, 0, &stored), YYC_OK);
    assert_true(stored);
    expect_remote_value(other, "k", "first", 5);
    /* Another client's value stays; the call still succeeds and says it stored nothing. */
    assert_int_equal(yyc_remote_set(other, "k", "newer", 5, 0), YYC_OK);
    assert_int_equal(yyc_remote_set_if_absent(r, "k", "older", 5, 0, &stored), YYC_OK);
    assert_false(stored);
    expect_remote_value(r, "k", "newer", 5);
    /* A time to live goes with it; a removed key takes a value again. */
    assert_int_equal(yyc_remote_set_if_absent(r, "t", "v", 1, 100, NULL), YYC_OK);
    void *v = NULL;
    size_t n = 0;
    double ttl = 0;
    assert_int_equal(yyc_remote_get_with_ttl(r, "t", &v, &n, &ttl), YYC_OK);
    yyc_free(v);
    assert_true(ttl > 0 && ttl <= 100);
    assert_int_equal(yyc_remote_remove(other, "k"), YYC_OK);
    assert_int_equal(yyc_remote_set_if_absent(r, "k", "", 0, 0, &stored), YYC_OK);
    assert_true(stored);
    expect_remote_value(other, "k", "", 0);
    /* Bad arguments, as yyc_remote_set; stored is false on error. */
    stored = true;
    assert_int_equal(yyc_remote_set_if_absent(r, "", "x", 1, 0, &stored), YYC_EINVAL);
    assert_false(stored);
    assert_int_equal(yyc_remote_set_if_absent(r, "k", NULL, 3, 0, NULL), YYC_EINVAL);
    assert_int_equal(yyc_remote_set_if_absent(r, "k", "x", 1, -1, NULL), YYC_EINVAL);
    yyc_remote_close(other);
    yyc_remote_close(r);
    test_redis_stop(&s);
}

static void binary_keys_and_values_are_stored_as_given_under_the_namespace(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    yyc_remote *r = open_remote(&s, "bin");
    const char *keys[] = {"with space",       "line\r\nbreak", "*3\r\n$3\r\nDEL\r\n$1\r\nx\r\n",
                          "\xff\xfe\x01",     "glob*?[x]",     "%s%n",
                          "\xe2\x98\x83 snow"};
    unsigned char value[300];
    for (size_t i = 0; i < sizeof value; i++) value[i] = (unsigned char)(i * 7);
    value[3] = 0; /* NUL bytes in values */
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        value[0] = (unsigned char)i;
        assert_int_equal(yyc_remote_set(r, keys[i], value, sizeof value, 0), YYC_OK);
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        value[0] = (unsigned char)i;
        expect_remote_value(r, keys[i], value, sizeof value);
        /* The Redis key is exactly "bin:" + the key's bytes. */
        char full[128];
        size_t n = (size_t)snprintf(full, sizeof full, "bin:%s", keys[i]);
        const char *argv[2] = {"EXISTS", full};
        size_t lens[2] = {6, n};
        redisReply *reply = test_redis_argv(&s, 2, argv, lens);
        assert_non_null(reply);
        assert_int_equal(reply->integer, 1);
        freeReplyObject(reply);
    }
    /* Nothing else was written (no injected command ran). */
    const char *dbsize[1] = {"DBSIZE"};
    redisReply *reply = test_redis_argv(&s, 1, dbsize, NULL);
    assert_int_equal(reply->integer, (long long)(sizeof keys / sizeof keys[0]));
    freeReplyObject(reply);
    yyc_remote_close(r);
    test_redis_stop(&s);
}

static void namespaces_are_separate_and_remove_all_empties_only_its_own(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    yyc_remote *a = open_remote(&s, "a*");
    yyc_remote *b = open_remote(&s, "ab");
    assert_int_equal(yyc_remote_set(a, "k", "A", 1, 0), YYC_OK);
    assert_int_equal(yyc_remote_set(b, "k", "B", 1, 0), YYC_OK);
    for (int i = 0; i < 1200; i++) { /* more than one SCAN batch */
        char key[16];
        snprintf(key, sizeof key, "n%d", i);
        assert_int_equal(yyc_remote_set(a, key, "x", 1, 0), YYC_OK);
    }
    REDIS_ADMIN(&s, "SET", "other", "kept");
    expect_remote_value(a, "k", "A", 1);
    expect_remote_value(b, "k", "B", 1);
    assert_int_equal(yyc_remote_remove_all(a), YYC_OK);
    expect_remote_miss(a, "k");
    expect_remote_miss(a, "n7");
    expect_remote_value(b, "k", "B",
                        1); /* "a*:" is a literal prefix, not a pattern matching "ab:" */
    const char *dbsize[1] = {"DBSIZE"};
    redisReply *reply = test_redis_argv(&s, 1, dbsize, NULL);
    assert_int_equal(reply->integer, 2); /* ab:k and other */
    freeReplyObject(reply);
    yyc_remote_close(a);
    yyc_remote_close(b);
    test_redis_stop(&s);
}

static void foreign_and_corrupt_values_are_misses_reported_as_corrupt(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    yyc_remote *r = open_remote(&s, "ns");
    hook_log log = {0, 0};
    yyc_remote_set_error_hook(r, log_hook, &log);
    /* Written by something else. */
    REDIS_ADMIN(&s, "SET", "ns:plain", "hello");
    REDIS_ADMIN(&s, "SET", "ns:empty", "");
    REDIS_ADMIN(&s, "RPUSH", "ns:list", "a");
    /* Ours, then damaged: a flipped byte in the value, a wrong length, a future version. */
    assert_int_equal(yyc_remote_set(r, "flip", "0123456789", 10, 0), YYC_OK);
    REDIS_ADMIN(&s, "SETRANGE", "ns:flip", "20", "X");
    assert_int_equal(yyc_remote_set(r, "long", "0123456789", 10, 0), YYC_OK);
    REDIS_ADMIN(&s, "APPEND", "ns:long", "more");
    assert_int_equal(yyc_remote_set(r, "version", "0123456789", 10, 0), YYC_OK);
    REDIS_ADMIN(&s, "SETRANGE", "ns:version", "4", "\x02");
    const char *bad[] = {"plain", "empty", "list", "flip", "long", "version"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) expect_remote_miss(r, bad[i]);
    yyc_remote_statistics st;
    yyc_remote_get_statistics(r, &st);
    assert_int_equal(st.corrupt_values, 6);
    assert_int_equal(st.misses, 6);
    assert_int_equal(log.count, 6);
    assert_int_equal(log.last_code, YYC_ECORRUPT);
    /* Never removed (it may be someone else's), and a good write replaces it. */
    REDIS_ADMIN(&s, "GET", "ns:plain");
    assert_int_equal(yyc_remote_set(r, "plain", "ok", 2, 0), YYC_OK);
    expect_remote_value(r, "plain", "ok", 2);
    yyc_remote_set_error_hook(r, NULL, NULL);
    yyc_remote_close(r);
    test_redis_stop(&s);
}

static void a_value_over_the_limit_is_refused_and_nothing_is_written(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    yyc_remote *r = open_remote(&s, "big");
    size_t n = (size_t)YYC_REMOTE_MAX_VALUE + 1;
    char *big = calloc(1, n);
    assert_non_null(big);
    assert_int_equal(yyc_remote_set(r, "k", big, n, 0), YYC_ETOOBIG);
    free(big);
    expect_remote_miss(r, "k");
    yyc_remote_close(r);
    test_redis_stop(&s);
}

static void a_wrong_password_or_acl_user_is_refused_and_the_right_ones_work(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    const char *extra[] = {"--requirepass", "s3cret", NULL};
    test_redis s;
    test_redis_start(&s, extra);
    char url[320];
    yyc_remote *r = NULL;
    snprintf(url, sizeof url, "unix://:wrong@%s", s.socket);
    assert_int_equal(yyc_remote_open(url, "ns", &r), YYC_EIO);
    assert_null(r);
    yyc_error e;
    yyc_last_error(&e);
    assert_non_null(strstr(e.message, "authentication"));
    assert_null(strstr(e.message, "wrong"));
    snprintf(url, sizeof url, "unix://%s", s.socket); /* none at all */
    assert_int_equal(yyc_remote_open(url, "ns", &r), YYC_EIO);
    snprintf(url, sizeof url, "unix://:s3cret@%s", s.socket);
    assert_int_equal(yyc_remote_open(url, "ns", &r), YYC_OK);
    assert_int_equal(yyc_remote_set(r, "k", "v", 1, 0), YYC_OK);
    yyc_remote_close(r);
    /* An ACL user limited to its namespace (keys) and the invalidation channel. */
    redisContext *c = test_redis_connect(&s);
    const char *auth[2] = {"AUTH", "s3cret"};
    freeReplyObject(redisCommandArgv(c, 2, auth, NULL));
    const char *acl[] = {
        "ACL", "SETUSER", "alice", "on", ">pa:ss", "~ns:*", "&__redis__:invalidate", "+@all"};
    redisReply *reply = redisCommandArgv(c, 8, acl, NULL);
    assert_int_equal(reply->type, REDIS_REPLY_STATUS);
    freeReplyObject(reply);
    redisFree(c);
    snprintf(url, sizeof url, "unix://alice:pa%%3Ass@%s", s.socket);
    assert_int_equal(yyc_remote_open(url, "ns", &r), YYC_OK);
    assert_int_equal(yyc_remote_set(r, "k", "alice", 5, 0), YYC_OK);
    expect_remote_value(r, "k", "alice", 5);
    yyc_remote_statistics st;
    yyc_remote_get_statistics(r, &st);
    assert_true(st.invalidation_up);
    yyc_remote_close(r);
    snprintf(url, sizeof url, "unix://alice:nope@%s", s.socket);
    assert_int_equal(yyc_remote_open(url, "ns", &r), YYC_EIO);
    test_redis_stop(&s);
}

static void an_unreachable_server_fails_the_open_with_eio(void **state) {
    (void)state;
    yyc_remote *r = NULL;
    assert_int_equal(yyc_remote_open("unix:///nonexistent/yyc-redis.sock", "ns", &r), YYC_EIO);
    assert_null(r);
    /* A TCP port nobody listens on (refused at once). */
    assert_int_equal(yyc_remote_open("redis://127.0.0.1:1", "ns", &r), YYC_EIO);
    assert_null(r);
}

/* Threads of this process now (/proc/self/task). */
static int thread_count(void) {
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

typedef struct closing_listener {
    yyc_remote *r;
    int closed;
} closing_listener;

static void close_on_first_invalidation(void *ctx, yyc_remote_event event, const char *key,
                                        size_t key_len, uint64_t epoch) {
    (void)key, (void)key_len, (void)epoch;
    closing_listener *c = ctx;
    if (event != YYC_REMOTE_INVALIDATE || __atomic_load_n(&c->closed, __ATOMIC_SEQ_CST)) return;
    yyc_remote_close(c->r);
    __atomic_store_n(&c->closed, 1, __ATOMIC_SEQ_CST);
}

static void unhook_and_close(void *ctx, const yyc_error *e) {
    (void)e;
    closing_listener *c = ctx;
    if (__atomic_load_n(&c->closed, __ATOMIC_SEQ_CST)) return;
    yyc_remote_set_error_hook(c->r, NULL, NULL); /* must not wait for this very call */
    yyc_remote_close(c->r);
    __atomic_store_n(&c->closed, 1, __ATOMIC_SEQ_CST);
}

static void
the_last_reference_may_go_in_a_listener_or_the_hook_on_the_invalidation_thread(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    yyc_remote *writer = open_remote(&s, "app");
    int before = thread_count();
    /* A listener closes the last reference when the writer's set is invalidated. */
    closing_listener c = {open_remote(&s, "app"), 0};
    uint64_t id;
    assert_int_equal(yyc_remote_add_listener(c.r, close_on_first_invalidation, &c, &id), YYC_OK);
    assert_int_equal(yyc_remote_set(writer, "k", "v", 1, 0), YYC_OK);
    assert_true(WAIT_UNTIL(__atomic_load_n(&c.closed, __ATOMIC_SEQ_CST), 10));
    /* The thread finished the close and exited (it did not try to join itself). */
    assert_true(WAIT_UNTIL(thread_count() == before, 10));
    /* The error hook does the same when the link goes down: it also unhooks itself first. */
    closing_listener h = {open_remote(&s, "app"), 0};
    yyc_remote_set_error_hook(h.r, unhook_and_close, &h);
    REDIS_ADMIN(&s, "ACL", "SETUSER", "default", "resetchannels");
    assert_true(WAIT_UNTIL(__atomic_load_n(&h.closed, __ATOMIC_SEQ_CST), 10));
    assert_true(WAIT_UNTIL(thread_count() == before, 10));
    /* The writer, whose link also went down, still works. */
    assert_int_equal(yyc_remote_set(writer, "k", "w", 1, 0), YYC_OK);
    expect_remote_value(writer, "k", "w", 1);
    yyc_remote_close(writer);
    test_redis_stop(&s);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(urls_are_parsed_and_bad_ones_refused),
    cmocka_unit_test(get_set_remove_and_contains_round_trip),
    cmocka_unit_test(a_time_to_live_is_kept_by_redis_and_read_back),
    cmocka_unit_test(set_if_absent_stores_only_when_redis_has_no_value_and_says_which),
    cmocka_unit_test(binary_keys_and_values_are_stored_as_given_under_the_namespace),
    cmocka_unit_test(namespaces_are_separate_and_remove_all_empties_only_its_own),
    cmocka_unit_test(foreign_and_corrupt_values_are_misses_reported_as_corrupt),
    cmocka_unit_test(a_value_over_the_limit_is_refused_and_nothing_is_written),
    cmocka_unit_test(a_wrong_password_or_acl_user_is_refused_and_the_right_ones_work),
    cmocka_unit_test(an_unreachable_server_fails_the_open_with_eio),
    cmocka_unit_test(
        the_last_reference_may_go_in_a_listener_or_the_hook_on_the_invalidation_thread),
};

YYC_TEST_MAIN(tests)
