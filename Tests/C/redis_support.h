/*
 * redis_support.h - a real redis-server for the remote tier's tests: started on a unix socket in
 * a temporary folder (no TCP port, --save '', no persistence), stopped, paused (SIGSTOP),
 * resumed and restarted on the same socket; admin commands through hiredis (argument vectors).
 *
 * A test calls REDIS_OR_SKIP() first: when no redis-server is installed it skips with a message
 * saying so (make deps installs it; CI has it). Any other failure to start fails the test.
 */
#ifndef YYCACHE_REDIS_SUPPORT_H
#define YYCACHE_REDIS_SUPPORT_H

#include "test_support.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define TEST_REDIS_MAX_ARGS 16

typedef struct test_redis {
    char dir[128];
    char socket[192];
    char url[224];
    pid_t pid;
    const char *extra[TEST_REDIS_MAX_ARGS]; /* extra server arguments (static strings) */
    int extra_count;
    const char *password; /* AUTH before admin commands (a --requirepass server), or NULL */
} test_redis;

/* The server binary: $YYC_REDIS_SERVER, else redis-server on PATH; NULL when there is none. */
static inline const char *test_redis_binary(void) {
    const char *env = getenv("YYC_REDIS_SERVER");
    if (env && *env) return env;
    static char found[512];
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        snprintf(found, sizeof found, "%.*s/redis-server", (int)n, p);
        if (access(found, X_OK) == 0) return found;
        p += n + (colon ? 1 : 0);
    }
    if (access("/usr/sbin/redis-server", X_OK) == 0) return "/usr/sbin/redis-server";
    return NULL;
}

#define REDIS_OR_SKIP()                                                                  \
    do {                                                                                 \
        if (!test_redis_binary()) {                                                      \
            print_message("SKIPPED: no redis-server installed (Debian: apt-get install " \
                          "redis-server; `make deps` does it as root)\n");               \
            skip();                                                                      \
        }                                                                                \
    } while (0)

/* A new connection to the server (NULL when it cannot connect). */
static inline redisContext *test_redis_connect(const test_redis *s) {
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectUnixWithTimeout(s->socket, tv);
    if (c && c->err) {
        redisFree(c);
        return NULL;
    }
    if (c) redisSetTimeout(c, tv);
    if (c && s->password) {
        const char *auth[2] = {"AUTH", s->password};
        redisReply *r = redisCommandArgv(c, 2, auth, NULL);
        if (r) freeReplyObject(r);
    }
    return c;
}

/* Runs one admin command (argument vector, lengths from strlen unless lens given); returns the
 * reply (freeReplyObject) or NULL. */
static inline redisReply *test_redis_argv(const test_redis *s, int argc, const char **argv,
                                          const size_t *lens) {
    redisContext *c = test_redis_connect(s);
    if (!c) return NULL;
    size_t own[32];
    if (!lens) {
        for (int i = 0; i < argc && i < 32; i++) own[i] = strlen(argv[i]);
        lens = own;
    }
    redisReply *reply = redisCommandArgv(c, argc, argv, lens);
    redisFree(c);
    return reply;
}

/* An admin command whose reply is not an error; fails the test otherwise. */
#define REDIS_ADMIN(s, ...)                                                              \
    do {                                                                                 \
        const char *argv__[] = {__VA_ARGS__};                                            \
        redisReply *r__ =                                                                \
            test_redis_argv((s), (int)(sizeof argv__ / sizeof argv__[0]), argv__, NULL); \
        assert_non_null(r__);                                                            \
        if (r__->type == REDIS_REPLY_ERROR) print_message("redis: %s\n", r__->str);      \
        assert_int_not_equal(r__->type, REDIS_REPLY_ERROR);                              \
        freeReplyObject(r__);                                                            \
    } while (0)

static inline bool test_redis_ping(const test_redis *s) {
    const char *argv[1] = {"PING"};
    redisReply *r = test_redis_argv(s, 1, argv, NULL);
    bool ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    return ok;
}

/* Starts the server (on s->socket, made by test_redis_init); fails the test if it does not
 * answer PING within 10 s. */
static inline void test_redis_launch(test_redis *s) {
    const char *bin = test_redis_binary();
    assert_non_null(bin);
    const char *argv[16 + TEST_REDIS_MAX_ARGS];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--unixsocket";
    argv[n++] = s->socket;
    argv[n++] = "--unixsocketperm";
    argv[n++] = "700";
    argv[n++] = "--save";
    argv[n++] = "";
    argv[n++] = "--appendonly";
    argv[n++] = "no";
    argv[n++] = "--dir";
    argv[n++] = s->dir;
    argv[n++] = "--loglevel";
    argv[n++] = "warning";
    for (int i = 0; i < s->extra_count; i++) argv[n++] = s->extra[i];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Quiet: the server's log goes to a file in its folder. */
        char log[256];
        snprintf(log, sizeof log, "%s/redis.log", s->dir);
        FILE *f = freopen(log, "a", stdout);
        (void)f;
        dup2(1, 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    s->pid = pid;
    bool up = WAIT_UNTIL(test_redis_ping(s), 10.0);
    if (!up) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        s->pid = 0;
    }
    assert_true(up);
}

/* A folder and socket path; extra: server arguments (NULL-terminated, may be NULL). */
static inline void test_redis_start(test_redis *s, const char *const *extra) {
    memset(s, 0, sizeof *s);
    for (int i = 0; extra && extra[i] && extra[i + 1]; i++)
        if (strcmp(extra[i], "--requirepass") == 0) s->password = extra[i + 1];
    snprintf(s->dir, sizeof s->dir, "/tmp/yyc-redis-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->socket, sizeof s->socket, "%s/redis.sock", s->dir);
    snprintf(s->url, sizeof s->url, "unix://%s", s->socket);
    for (int i = 0; extra && extra[i] && i < TEST_REDIS_MAX_ARGS; i++)
        s->extra[s->extra_count++] = extra[i];
    test_redis_launch(s);
}

/* Kills the server (SIGKILL: a crash, mid-operation) and reaps it. */
static inline void test_redis_kill(test_redis *s) {
    if (s->pid <= 0) return;
    kill(s->pid, SIGCONT);
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
    unlink(s->socket);
}

static inline void test_redis_pause(test_redis *s) { kill(s->pid, SIGSTOP); }
static inline void test_redis_resume(test_redis *s) { kill(s->pid, SIGCONT); }

/* Kills and starts it again on the same socket (empty: nothing is saved). */
static inline void test_redis_restart(test_redis *s) {
    test_redis_kill(s);
    test_redis_launch(s);
}

/* Kills it and removes its folder. */
static inline void test_redis_stop(test_redis *s) {
    test_redis_kill(s);
    test_rm_rf(s->dir);
}

#endif /* YYCACHE_REDIS_SUPPORT_H */
