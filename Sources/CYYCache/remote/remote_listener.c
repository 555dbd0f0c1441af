/*
 * remote_listener.c - the invalidation thread of a yyc_remote (see remote.h, "Invalidation").
 *
 * Two connections of its own: `sub`, subscribed to __redis__:invalidate, and `track`, which ran
 * CLIENT TRACKING ON REDIRECT <sub's id> BCAST PREFIX <namespace:> (RESP2: the messages come to
 * the subscriber as pub/sub messages; works on hiredis 0.14 and 1.x). The thread polls sub and a
 * wake-up pipe; after HEARTBEAT seconds of silence it PINGs both connections, and a PING on sub
 * still unanswered at the next heartbeat means the link is down (a paused or unreachable server).
 *
 * The link's epoch (remote.h) grows when the link comes up and when it goes down; each change is
 * followed by a YYC_REMOTE_FLUSH to the listeners. Listeners run on this thread with no lock
 * held; listener_calls lets yyc_remote_remove_listener wait for a call under way.
 */
#include "remote/remote_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEARTBEAT 1.0 /* seconds of silence before a PING; as long again for its answer */
#define LINK_BACKOFF_FIRST 0.05
#define LINK_BACKOFF_MAX 1.0

/* Calls every listener with the event (no lock held during the calls). */
static void notify(yyc_remote *r, yyc_remote_event event, const char *key, size_t key_len) {
    uint64_t epoch = atomic_load_explicit(&r->epoch, memory_order_acquire);
    remote_listener_entry local[8], *list = local;
    yyc__remote_lock(r);
    int n = r->listener_count;
    if (n > 8 && !(list = malloc(sizeof *list * (size_t)n))) {
        list = local;
        n = 8; /* out of memory: the first 8 (never happens in practice) */
    }
    if (n) memcpy(list, r->listeners, sizeof *list * (size_t)n);
    r->listener_calls++;
    yyc__remote_unlock(r);
    for (int i = 0; i < n; i++) list[i].fn(list[i].ctx, event, key, key_len, epoch);
    yyc__remote_lock(r);
    r->listener_calls--;
    pthread_cond_broadcast(&r->calls_cond);
    yyc__remote_unlock(r);
    if (list != local) free(list);
}

/* One command on a connection of the link, a Redis error refused with `what`. */
static int link_command(redisContext *c, int argc, const char **argv, const size_t *lens,
                        const char *what, long long *integer) {
    redisReply *reply = NULL;
    if (yyc__remote_conn_run(c, 1, &argc, &argv, &lens, &reply) != REDIS_OK)
        return yyc__error(YYC_EIO, 0, errno, "remote invalidation link: %s: %s", what, c->errstr);
    int rc = YYC_OK;
    if (reply->type == REDIS_REPLY_ERROR)
        rc = yyc__error(YYC_EIO, 0, 0, "remote invalidation link: %s refused: %.160s", what,
                        reply->str);
    else if (integer && reply->type == REDIS_REPLY_INTEGER) *integer = reply->integer;
    freeReplyObject(reply);
    return rc;
}

/* Opens sub and track. */
static int link_open(yyc_remote *r, redisContext **sub, redisContext **track) {
    yyc__remote_lock(r);
    double connect_s = r->connect_timeout, command_s = r->command_timeout;
    yyc__remote_unlock(r);
    double deadline = yyc__monotonic_now() + connect_s + command_s;
    *sub = yyc__remote_connect(&r->url, connect_s, command_s, deadline);
    if (!*sub) return YYC_EIO;
    long long id = -1;
    const char *id_argv[2] = {"CLIENT", "ID"};
    size_t id_lens[2] = {6, 2};
    int rc = link_command(*sub, 2, id_argv, id_lens, "CLIENT ID", &id);
    if (rc != YYC_OK) return rc;
    const char *sub_argv[2] = {"SUBSCRIBE", "__redis__:invalidate"};
    size_t sub_lens[2] = {9, 20};
    if ((rc = link_command(*sub, 2, sub_argv, sub_lens, "SUBSCRIBE", NULL)) != YYC_OK) return rc;
    deadline = yyc__monotonic_now() + connect_s + command_s;
    *track = yyc__remote_connect(&r->url, connect_s, command_s, deadline);
    if (!*track) return YYC_EIO;
    char id_text[24];
    int id_len = snprintf(id_text, sizeof id_text, "%lld", id);
    const char *track_argv[8] = {"CLIENT", "TRACKING", "ON",     "REDIRECT",
                                 id_text,  "BCAST",    "PREFIX", r->prefix};
    size_t track_lens[8] = {6, 8, 2, 8, (size_t)id_len, 5, 6, r->prefix_len};
    return link_command(*track, 8, track_argv, track_lens, "CLIENT TRACKING", NULL);
}

/* Handles a message from sub; false for something that is not part of the protocol. */
static void handle(yyc_remote *r, redisReply *m, bool *pong) {
    if (m->type != REDIS_REPLY_ARRAY || m->elements < 2) return;
    redisReply *kind = m->element[0];
    if (kind->type != REDIS_REPLY_STRING) return;
    if (kind->len == 4 && memcmp(kind->str, "pong", 4) == 0) {
        *pong = true;
        return;
    }
    if (m->elements != 3 || kind->len != 7 || memcmp(kind->str, "message", 7) != 0) return;
    redisReply *payload = m->element[2];
    if (payload->type == REDIS_REPLY_NIL) { /* FLUSHALL / FLUSHDB */
        notify(r, YYC_REMOTE_FLUSH, NULL, 0);
        return;
    }
    redisReply *one = payload;
    size_t count = 1;
    redisReply **keys = &one;
    if (payload->type == REDIS_REPLY_ARRAY) {
        keys = payload->element;
        count = payload->elements;
    }
    for (size_t i = 0; i < count; i++) {
        redisReply *k = keys[i];
        if (k->type != REDIS_REPLY_STRING || (size_t)k->len < r->prefix_len ||
            memcmp(k->str, r->prefix, r->prefix_len) != 0)
            continue;
        notify(r, YYC_REMOTE_INVALIDATE, k->str + r->prefix_len, (size_t)k->len - r->prefix_len);
        /* Counted once the listeners have dropped the key: a caller that sees the count grow
         * knows the near copies are gone, not about to go. */
        atomic_fetch_add_explicit(&r->invalidations, 1, memory_order_release);
    }
}

/* Drains the wake-up pipe; whether the thread must stop. */
static bool should_stop(yyc_remote *r) {
    char buf[16];
    while (read(r->wake[0], buf, sizeof buf) > 0) {
    }
    yyc__remote_lock(r);
    bool stop = r->stopping;
    yyc__remote_unlock(r);
    return stop;
}

/* Runs while the link is up; returns (with the reason recorded) when it broke, or YYC_OK when
 * the thread must stop. */
static int serve(yyc_remote *r, redisContext *sub, redisContext *track) {
    bool ping_outstanding = false;
    for (;;) {
        struct pollfd fds[2] = {{sub->fd, POLLIN, 0}, {r->wake[0], POLLIN, 0}};
        int n = poll(fds, 2, (int)(HEARTBEAT * 1000));
        if (n < 0 && errno == EINTR) continue;
        if (fds[1].revents && should_stop(r)) return YYC_OK;
        if (n == 0) {
            if (ping_outstanding)
                return yyc__error(YYC_EIO, 0, ETIMEDOUT,
                                  "remote invalidation link: no answer to PING");
            if (redisAppendCommand(sub, "PING") != REDIS_OK ||
                yyc__remote_conn_flush(sub) != REDIS_OK)
                return yyc__error(YYC_EIO, 0, errno, "remote invalidation link: %s", sub->errstr);
            ping_outstanding = true;
            const char *ping[1] = {"PING"};
            size_t ping_len[1] = {4};
            int rc = link_command(track, 1, ping, ping_len, "PING", NULL);
            if (rc != YYC_OK) return rc;
            continue;
        }
        if (!fds[0].revents) continue;
        if (redisBufferRead(sub) != REDIS_OK)
            return yyc__error(YYC_EIO, 0, errno, "remote invalidation link: %s",
                              sub->errstr[0] ? sub->errstr : "connection closed");
        void *reply = NULL;
        while (redisGetReplyFromReader(sub, &reply) == REDIS_OK && reply) {
            bool pong = false;
            handle(r, reply, &pong);
            freeReplyObject(reply);
            reply = NULL;
            ping_outstanding = false; /* anything heard: the server is alive */
        }
        if (sub->err) return yyc__error(YYC_EIO, 0, 0, "remote invalidation link: %s", sub->errstr);
    }
}

static void mark_tried(yyc_remote *r) {
    yyc__remote_lock(r);
    r->link_tried = true;
    pthread_cond_broadcast(&r->calls_cond);
    yyc__remote_unlock(r);
}

static void report_last(yyc_remote *r) {
    yyc_error e;
    yyc_last_error(&e);
    yyc__remote_report(r, &e);
}

static void *listener_main(void *arg) {
    yyc_remote *r = arg;
    double backoff = 0;
    bool reported = false; /* a failure to connect is reported once until the link comes up */
    for (;;) {
        redisContext *sub = NULL, *track = NULL;
        int rc = link_open(r, &sub, &track);
        bool stop = false;
        if (rc == YYC_OK) {
            backoff = 0;
            reported = false;
            atomic_fetch_add_explicit(&r->epoch, 1, memory_order_acq_rel); /* odd: up */
            notify(r, YYC_REMOTE_FLUSH, NULL, 0);
            mark_tried(r);
            rc = serve(r, sub, track);
            stop = rc == YYC_OK;
            atomic_fetch_add_explicit(&r->epoch, 1, memory_order_acq_rel); /* even: down */
            if (!stop) atomic_fetch_add_explicit(&r->link_downs, 1, memory_order_relaxed);
            if (!stop) report_last(r);
            notify(r, YYC_REMOTE_FLUSH, NULL, 0);
        } else {
            mark_tried(r);
            if (!reported) report_last(r);
            reported = true;
            backoff = backoff == 0 ? LINK_BACKOFF_FIRST : backoff * 2;
            if (backoff > LINK_BACKOFF_MAX) backoff = LINK_BACKOFF_MAX;
        }
        if (sub) redisFree(sub);
        if (track) redisFree(track);
        if (stop) break;
        struct pollfd wake = {r->wake[0], POLLIN, 0};
        if (poll(&wake, 1, (int)(backoff * 1000)) > 0 && should_stop(r)) break;
        yyc__remote_lock(r);
        stop = r->stopping;
        yyc__remote_unlock(r);
        if (stop) break;
    }
    yyc__remote_lock(r);
    bool destroy = r->destroy_on_exit;
    yyc__remote_unlock(r);
    if (destroy) {
        close(r->wake[0]);
        close(r->wake[1]);
        yyc__remote_free(r);
    }
    return NULL;
}

int yyc__remote_listener_start(yyc_remote *r, double deadline) {
    if (pipe(r->wake) != 0)
        return yyc__error(YYC_EIO, 0, errno, "remote: pipe for the invalidation thread failed");
    for (int i = 0; i < 2; i++) {
        int flags = fcntl(r->wake[i], F_GETFL);
        fcntl(r->wake[i], F_SETFL, flags | O_NONBLOCK);
        fcntl(r->wake[i], F_SETFD, FD_CLOEXEC);
    }
    /* The thread blocks every signal (it inherits the mask set around its creation). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&r->thread, NULL, listener_main, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        close(r->wake[0]);
        close(r->wake[1]);
        r->wake[0] = r->wake[1] = -1;
        return yyc__error(YYC_ENOMEM, 0, err, "remote: cannot start the invalidation thread");
    }
    r->thread_started = true;
    /* Wait for its first attempt (up or not: the pool works without it). */
    yyc__remote_lock(r);
    while (!r->link_tried && yyc__remote_wait_until_locked(r, &r->calls_cond, deadline)) {
    }
    yyc__remote_unlock(r);
    return YYC_OK;
}

bool yyc__remote_listener_stop(yyc_remote *r) {
    if (!r->thread_started) return true;
    bool on_thread = pthread_equal(pthread_self(), r->thread);
    yyc__remote_lock(r);
    r->stopping = true;
    r->destroy_on_exit = on_thread;
    yyc__remote_unlock(r);
    if (on_thread) {
        pthread_detach(r->thread);
        ssize_t w = write(r->wake[1], "x", 1); /* serve() returns at its next poll */
        (void)w;
        return false;
    }
    ssize_t w = write(r->wake[1], "x", 1);
    (void)w;
    pthread_join(r->thread, NULL);
    r->thread_started = false;
    close(r->wake[0]);
    close(r->wake[1]);
    return true;
}

int yyc_remote_add_listener(yyc_remote *r, yyc_remote_listener_fn fn, void *ctx, uint64_t *out_id) {
    if (!r || !fn || !out_id) return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_add_listener: NULL");
    yyc__remote_lock(r);
    if (r->listener_count == r->listener_capacity) {
        int cap = r->listener_capacity ? r->listener_capacity * 2 : 4;
        remote_listener_entry *grown = realloc(r->listeners, sizeof *grown * (size_t)cap);
        if (!grown) {
            yyc__remote_unlock(r);
            return yyc__error(YYC_ENOMEM, 0, 0, "yyc_remote_add_listener: out of memory");
        }
        r->listeners = grown;
        r->listener_capacity = cap;
    }
    uint64_t id = ++r->next_listener_id;
    r->listeners[r->listener_count++] = (remote_listener_entry){id, fn, ctx};
    yyc__remote_unlock(r);
    *out_id = id;
    return YYC_OK;
}

void yyc_remote_remove_listener(yyc_remote *r, uint64_t id) {
    if (!r) return;
    yyc__remote_lock(r);
    for (int i = 0; i < r->listener_count; i++) {
        if (r->listeners[i].id == id) {
            memmove(&r->listeners[i], &r->listeners[i + 1],
                    sizeof *r->listeners * (size_t)(r->listener_count - i - 1));
            r->listener_count--;
            break;
        }
    }
    bool on_thread = r->thread_started && pthread_equal(pthread_self(), r->thread);
    while (!on_thread && r->listener_calls > 0) pthread_cond_wait(&r->calls_cond, &r->lock);
    yyc__remote_unlock(r);
}

uint64_t yyc_remote_invalidation_epoch(yyc_remote *r) {
    return r ? atomic_load_explicit(&r->epoch, memory_order_acquire) : 0;
}
