/*
 * remote_conn.c - one connection to Redis: connect (with AUTH and SELECT), socket timeouts, and
 * pipelined commands run with SIGPIPE kept away from the host process.
 *
 * SIGPIPE: hiredis writes with write(2) (0.14) or send(2) without MSG_NOSIGNAL, and a write to a
 * connection the server closed raises SIGPIPE, whose default action kills the process. So every
 * write runs with SIGPIPE blocked in the calling thread (pthread_sigmask: per thread, so other
 * threads and the host's handlers are untouched); a SIGPIPE the write raised is then pending on
 * this thread and is taken back with sigtimedwait (zero timeout) before the old mask returns.
 * When the thread already blocked SIGPIPE, nothing is changed or taken (a pending SIGPIPE may be
 * the host's own).
 */
#include "remote/remote_internal.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>

static struct timeval timeval_of(double seconds) {
    if (!(seconds > 0.001)) seconds = 0.001;
    struct timeval tv;
    tv.tv_sec = (time_t)seconds;
    tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
    return tv;
}

void yyc__remote_conn_timeout(redisContext *c, double seconds, double *current) {
    if (*current == seconds) return;
    redisSetTimeout(c, timeval_of(seconds));
    *current = seconds;
}

/* SIGPIPE blocked while a write may happen (see the file comment). */
typedef struct sigpipe_guard {
    sigset_t old;
    bool changed;
} sigpipe_guard;

static void sigpipe_block(sigpipe_guard *g) {
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &g->old);
    g->changed = !sigismember(&g->old, SIGPIPE);
}

/* failed: whether a write may have raised SIGPIPE (only then is one taken back). */
static void sigpipe_restore(sigpipe_guard *g, bool failed) {
    if (!g->changed) return;
    if (failed) {
        sigset_t pipe_only;
        sigemptyset(&pipe_only);
        sigaddset(&pipe_only, SIGPIPE);
        const struct timespec zero = {0, 0};
        int saved = errno;
        while (sigtimedwait(&pipe_only, NULL, &zero) == -1 && errno == EINTR) {
        }
        errno = saved;
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

int yyc__remote_conn_run(redisContext *c, int count, const int *argc, const char **const *argv,
                         const size_t *const *argvlen, redisReply **replies) {
    for (int i = 0; i < count; i++) replies[i] = NULL;
    for (int i = 0; i < count; i++)
        if (redisAppendCommandArgv(c, argc[i], argv[i], argvlen[i]) != REDIS_OK) return REDIS_ERR;
    sigpipe_guard g;
    sigpipe_block(&g);
    int rc = REDIS_OK;
    for (int i = 0; i < count && rc == REDIS_OK; i++) {
        void *reply = NULL;
        rc = redisGetReply(c, &reply);
        replies[i] = reply;
    }
    sigpipe_restore(&g, rc != REDIS_OK);
    if (rc != REDIS_OK) {
        for (int i = 0; i < count; i++) {
            if (replies[i]) freeReplyObject(replies[i]);
            replies[i] = NULL;
        }
    }
    return rc;
}

int yyc__remote_conn_flush(redisContext *c) {
    sigpipe_guard g;
    sigpipe_block(&g);
    int done = 0, rc = REDIS_OK;
    while (!done && rc == REDIS_OK) rc = redisBufferWrite(c, &done);
    sigpipe_restore(&g, rc != REDIS_OK);
    return rc;
}

/* A command during the handshake; a Redis error reply is refused with `what`. */
static int handshake(redisContext *c, int argc, const char **argv, const size_t *lens,
                     const char *what) {
    redisReply *reply = NULL;
    if (yyc__remote_conn_run(c, 1, &argc, &argv, &lens, &reply) != REDIS_OK)
        return yyc__error(YYC_EIO, 0, errno, "remote: %s: %s", what, c->errstr);
    int rc = YYC_OK;
    if (reply->type == REDIS_REPLY_ERROR)
        rc = yyc__error(YYC_EIO, 0, 0, "remote: %s refused: %.160s", what, reply->str);
    freeReplyObject(reply);
    return rc;
}

redisContext *yyc__remote_connect(const yyc__remote_url *url, double connect_s, double command_s,
                                  double deadline) {
    double left = deadline - yyc__monotonic_now();
    if (left <= 0) {
        yyc__error(YYC_EIO, 0, ETIMEDOUT, "remote: connect: timed out");
        return NULL;
    }
    struct timeval tv = timeval_of(fmin(connect_s, left));
    redisContext *c = url->unix_path ? redisConnectUnixWithTimeout(url->unix_path, tv)
                                     : redisConnectWithTimeout(url->host, url->port, tv);
    if (!c) {
        yyc__error(YYC_ENOMEM, 0, 0, "remote: connect: out of memory");
        return NULL;
    }
    if (c->err) {
        yyc__error(YYC_EIO, 0, errno, "remote: connect to %s: %s",
                   url->unix_path ? url->unix_path : url->host, c->errstr);
        redisFree(c);
        return NULL;
    }
    double current = -1;
    yyc__remote_conn_timeout(c, fmin(command_s, fmax(deadline - yyc__monotonic_now(), 0.001)),
                             &current);
    int rc = YYC_OK;
    if (url->user || url->password) {
        const char *argv[3] = {"AUTH", url->user, url->password ? url->password : ""};
        size_t lens[3] = {4, url->user ? strlen(url->user) : 0, strlen(argv[2])};
        if (url->user) {
            rc = handshake(c, 3, argv, lens, "authentication");
        } else {
            const char *argv2[2] = {"AUTH", argv[2]};
            size_t lens2[2] = {4, lens[2]};
            rc = handshake(c, 2, argv2, lens2, "authentication");
        }
    }
    if (rc == YYC_OK && url->db != 0) {
        char db[16];
        int n = snprintf(db, sizeof db, "%d", url->db);
        const char *argv[2] = {"SELECT", db};
        size_t lens[2] = {6, (size_t)n};
        rc = handshake(c, 2, argv, lens, "SELECT");
    }
    if (rc != YYC_OK) {
        redisFree(c);
        return NULL;
    }
    return c;
}
