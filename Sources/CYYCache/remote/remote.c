/*
 * remote.c - the remote tier object (yycache/remote.h): the calls, each one or two pipelined
 * commands on a pooled connection within the connect + command timeout, the statistics and the
 * error hook.
 *
 * Redis keys are the namespace, ":", then the key's bytes (prefix built once at open). Commands
 * are argument vectors (redisAppendCommandArgv): a key or value is never parsed as text.
 */
#include "remote/remote_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void yyc__remote_report(yyc_remote *r, const yyc_error *e) {
    yyc__remote_lock(r);
    yyc_error_hook hook = r->hook;
    void *ctx = r->hook_ctx;
    /* The invalidation thread's call is counted apart: a hook that replaces the hook (or drops
     * the last reference) from that thread must not wait for itself. */
    bool on_thread = r->thread_started && pthread_equal(pthread_self(), r->thread);
    int *calls = on_thread ? &r->thread_hook_calls : &r->hook_calls;
    if (hook) ++*calls;
    yyc__remote_unlock(r);
    if (!hook) return;
    yyc_error saved;
    yyc_last_error(&saved);
    hook(ctx, e);
    yyc__error_restore(&saved);
    yyc__remote_lock(r);
    --*calls;
    pthread_cond_broadcast(&r->calls_cond);
    yyc__remote_unlock(r);
}

/* Counts and reports the error just recorded; returns its code. */
static int failed(yyc_remote *r) {
    yyc_error e;
    yyc_last_error(&e);
    if (e.code == YYC_EIO) atomic_fetch_add_explicit(&r->errors, 1, memory_order_relaxed);
    yyc__remote_report(r, &e);
    return e.code;
}

/* The Redis key of key: the prefix then the key (in buf when it fits, else malloc'd: *owned). */
typedef struct redis_key {
    char buf[256];
    char *str;
    size_t len;
    bool owned;
} redis_key;

static int make_key(yyc_remote *r, const char *key, redis_key *k) {
    size_t n = strlen(key);
    k->len = r->prefix_len + n;
    k->owned = k->len > sizeof k->buf;
    k->str = k->owned ? malloc(k->len) : k->buf;
    if (!k->str) return yyc__error(YYC_ENOMEM, 0, 0, "remote: out of memory");
    memcpy(k->str, r->prefix, r->prefix_len);
    memcpy(k->str + r->prefix_len, key, n);
    return YYC_OK;
}

static void free_key(redis_key *k) {
    if (k->owned) free(k->str);
}

/* Runs count pipelined commands; YYC_OK with every reply (a Redis error reply included), or the
 * error recorded (not yet reported). A connection that failed after idling in the pool is
 * replaced once (commands here may run twice safely); a timeout is never retried. */
static int run(yyc_remote *r, int count, const int *argc, const char **const *argv,
               const size_t *const *lens, redisReply **replies) {
    yyc__remote_lock(r);
    double connect_s = r->connect_timeout, command_s = r->command_timeout;
    yyc__remote_unlock(r);
    double deadline = yyc__monotonic_now() + connect_s + command_s;
    for (int attempt = 0;; attempt++) {
        bool reused = false;
        double timeout = -1;
        redisContext *c = yyc__remote_pool_take(r, deadline, &reused, &timeout);
        if (!c) return YYC_EIO;
        double left = deadline - yyc__monotonic_now();
        yyc__remote_conn_timeout(c, fmin(command_s, fmax(left, 0.001)), &timeout);
        if (yyc__remote_conn_run(c, count, argc, argv, lens, replies) == REDIS_OK) {
            yyc__remote_pool_give(r, c, timeout, false);
            return YYC_OK;
        }
        int err = errno;
        bool timed_out = c->err == REDIS_ERR_IO && (err == EAGAIN || err == EWOULDBLOCK);
        yyc__error(YYC_EIO, 0, err, "remote: %s", timed_out ? "command timed out" : c->errstr);
        yyc__remote_pool_give(r, c, timeout, true);
        if (!reused || timed_out || attempt == 1) return YYC_EIO;
    }
}

/* A Redis error reply as YYC_EIO (recorded). */
static int reply_error(const char *what, const redisReply *reply) {
    return yyc__error(YYC_EIO, 0, 0, "remote %s: the server answered %.200s", what,
                      reply->str ? reply->str : "an error");
}

static bool bad_key(const char *key) { return !key || !*key; }

int yyc__remote_get_reply(const redisReply *got, const redisReply *ttl, void **value, size_t *len,
                          double *ttl_seconds) {
    int rc;
    if (got->type == REDIS_REPLY_ERROR && strncmp(got->str, "WRONGTYPE", 9) == 0)
        rc = yyc__error(YYC_ECORRUPT, 0, 0, "remote get: not a string value (a foreign key)");
    else if (got->type == REDIS_REPLY_ERROR) rc = reply_error("get", got);
    else if (ttl && ttl->type == REDIS_REPLY_ERROR) rc = reply_error("get", ttl);
    else if (got->type == REDIS_REPLY_NIL ||
             (ttl && ttl->type == REDIS_REPLY_INTEGER && ttl->integer == -2))
        rc = YYC_NOTFOUND; /* absent, or expired between the two commands */
    else if (got->type != REDIS_REPLY_STRING)
        rc = yyc__error(YYC_ECORRUPT, 0, 0, "remote get: not a string value (a foreign key)");
    else {
        const char *bytes, *why = NULL;
        size_t n;
        rc = yyc__remote_value_decode(got->str, (size_t)got->len, &bytes, &n, &why);
        if (rc != YYC_OK) {
            rc = yyc__error(YYC_ECORRUPT, 0, 0, "remote get: %s", why);
        } else if (n && !(*value = malloc(n))) {
            rc = yyc__error(YYC_ENOMEM, 0, 0, "remote get: out of memory");
        } else {
            if (n) memcpy(*value, bytes, n);
            *len = n;
            if (ttl_seconds && ttl && ttl->type == REDIS_REPLY_INTEGER && ttl->integer >= 0)
                *ttl_seconds = (double)ttl->integer / 1000.0;
        }
    }
    return rc;
}

int yyc_remote_get_with_ttl(yyc_remote *r, const char *key, void **value, size_t *len,
                            double *ttl_seconds) {
    if (!value || !len) return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_get: NULL output");
    *value = NULL;
    *len = 0;
    if (ttl_seconds) *ttl_seconds = INFINITY;
    if (!r || bad_key(key)) return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_get: NULL or empty");
    redis_key k;
    if (make_key(r, key, &k) != YYC_OK) return failed(r);
    const char *get_argv[2] = {"GET", k.str}, *ttl_argv[2] = {"PTTL", k.str};
    size_t klens[2] = {3, k.len}, tlens[2] = {4, k.len};
    const int argc[2] = {2, 2};
    const char **const argv[2] = {get_argv, ttl_argv};
    const size_t *const lens[2] = {klens, tlens};
    redisReply *replies[2] = {NULL, NULL};
    int rc = run(r, ttl_seconds ? 2 : 1, argc, argv, lens, replies);
    free_key(&k);
    if (rc != YYC_OK) return failed(r);
    rc = yyc__remote_get_reply(replies[0], replies[1], value, len, ttl_seconds);
    for (int i = 0; i < 2; i++)
        if (replies[i]) freeReplyObject(replies[i]);
    if (rc == YYC_OK) {
        atomic_fetch_add_explicit(&r->hits, 1, memory_order_relaxed);
        return YYC_OK;
    }
    if (rc == YYC_NOTFOUND || rc == YYC_ECORRUPT)
        atomic_fetch_add_explicit(&r->misses, 1, memory_order_relaxed);
    if (rc == YYC_NOTFOUND) return YYC_NOTFOUND;
    if (rc == YYC_ECORRUPT) {
        atomic_fetch_add_explicit(&r->corrupt, 1, memory_order_relaxed);
        failed(r);
        return YYC_NOTFOUND; /* a miss, reported as corrupt */
    }
    return failed(r);
}

int yyc_remote_get(yyc_remote *r, const char *key, void **value, size_t *len) {
    return yyc_remote_get_with_ttl(r, key, value, len, NULL);
}

/* SET, or SET NX when if_absent (a key that has a value keeps it; still YYC_OK). *stored (may
 * be NULL): whether Redis stored it (SET NX answers nil when it did not). */
static int set_impl(yyc_remote *r, const char *key, const void *value, size_t len,
                    double ttl_seconds, bool if_absent, bool *stored_out) {
    if (stored_out) *stored_out = false;
    if (!r || bad_key(key)) return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_set: NULL or empty");
    if (!value && len) return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_set: NULL value");
    if (isnan(ttl_seconds) || ttl_seconds < 0)
        return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_set: negative or NaN time to live");
    char *stored;
    size_t stored_len;
    int rc = yyc__remote_value_encode(value, len, &stored, &stored_len);
    if (rc != YYC_OK) return rc;
    redis_key k;
    if (make_key(r, key, &k) != YYC_OK) {
        free(stored);
        return failed(r);
    }
    char ms[32];
    int ms_len = 0;
    if (ttl_seconds > 0 && isfinite(ttl_seconds)) {
        double m = ceil(ttl_seconds * 1000.0);
        if (m > 9.0e15) m = 9.0e15;
        ms_len = snprintf(ms, sizeof ms, "%.0f", m);
    }
    const char *argv[6] = {"SET", k.str, stored, "NX", "PX", ms};
    size_t lens[6] = {3, k.len, stored_len, 2, 2, (size_t)ms_len};
    if (!if_absent) { /* no NX: PX and its value move up one */
        argv[3] = "PX", lens[3] = 2;
        argv[4] = ms, lens[4] = (size_t)ms_len;
    }
    const int argc = 3 + (if_absent ? 1 : 0) + (ms_len ? 2 : 0);
    const char **const argvs[1] = {argv};
    const size_t *const lenss[1] = {lens};
    redisReply *reply = NULL;
    rc = run(r, 1, &argc, argvs, lenss, &reply);
    free(stored);
    free_key(&k);
    if (rc == YYC_OK) {
        if (reply->type == REDIS_REPLY_ERROR) rc = reply_error("set", reply);
        else if (stored_out) *stored_out = reply->type != REDIS_REPLY_NIL;
        freeReplyObject(reply);
    }
    return rc == YYC_OK ? YYC_OK : failed(r);
}

int yyc_remote_set(yyc_remote *r, const char *key, const void *value, size_t len,
                   double ttl_seconds) {
    return set_impl(r, key, value, len, ttl_seconds, false, NULL);
}

int yyc_remote_set_if_absent(yyc_remote *r, const char *key, const void *value, size_t len,
                             double ttl_seconds, bool *stored) {
    return set_impl(r, key, value, len, ttl_seconds, true, stored);
}

/* One command on a key whose reply is an integer (DEL, EXISTS). */
static int key_command(yyc_remote *r, const char *cmd, const char *key, long long *out) {
    redis_key k;
    if (make_key(r, key, &k) != YYC_OK) return failed(r);
    const char *argv[2] = {cmd, k.str};
    size_t lens[2] = {strlen(cmd), k.len};
    const int argc = 2;
    const char **const argvs[1] = {argv};
    const size_t *const lenss[1] = {lens};
    redisReply *reply = NULL;
    int rc = run(r, 1, &argc, argvs, lenss, &reply);
    free_key(&k);
    if (rc == YYC_OK) {
        if (reply->type == REDIS_REPLY_INTEGER) *out = reply->integer;
        else rc = reply_error(cmd, reply);
        freeReplyObject(reply);
    }
    return rc == YYC_OK ? YYC_OK : failed(r);
}

int yyc_remote_remove(yyc_remote *r, const char *key) {
    if (!r || bad_key(key)) return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_remove: NULL or empty");
    long long n = 0;
    return key_command(r, "DEL", key, &n);
}

int yyc_remote_contains(yyc_remote *r, const char *key, bool *out) {
    if (out) *out = false;
    if (!r || bad_key(key) || !out)
        return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_contains: NULL or empty");
    long long n = 0;
    int rc = key_command(r, "EXISTS", key, &n);
    *out = rc == YYC_OK && n > 0;
    return rc;
}

/* The SCAN pattern matching the prefix literally (glob characters escaped), then '*'. */
static char *scan_pattern(const yyc_remote *r, size_t *len) {
    char *p = malloc(r->prefix_len * 2 + 2);
    if (!p) return NULL;
    size_t j = 0;
    for (size_t i = 0; i < r->prefix_len; i++) {
        char c = r->prefix[i];
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') p[j++] = '\\';
        p[j++] = c;
    }
    p[j++] = '*';
    *len = j;
    return p;
}

int yyc_remote_remove_all(yyc_remote *r) {
    if (!r) return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_remove_all: NULL");
    size_t pattern_len;
    char *pattern = scan_pattern(r, &pattern_len);
    if (!pattern) return yyc__error(YYC_ENOMEM, 0, 0, "yyc_remote_remove_all: out of memory");
    char cursor[32] = "0";
    int rc = YYC_OK;
    do {
        const char *argv[6] = {"SCAN", cursor, "MATCH", pattern, "COUNT", "512"};
        size_t lens[6] = {4, strlen(cursor), 5, pattern_len, 5, 3};
        const int argc = 6;
        const char **const argvs[1] = {argv};
        const size_t *const lenss[1] = {lens};
        redisReply *reply = NULL;
        if ((rc = run(r, 1, &argc, argvs, lenss, &reply)) != YYC_OK) break;
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
            reply->element[0]->type != REDIS_REPLY_STRING ||
            reply->element[1]->type != REDIS_REPLY_ARRAY || reply->element[0]->len >= 31) {
            rc = reply_error("remove all (SCAN)", reply);
            freeReplyObject(reply);
            break;
        }
        memcpy(cursor, reply->element[0]->str, (size_t)reply->element[0]->len);
        cursor[reply->element[0]->len] = '\0';
        redisReply *keys = reply->element[1];
        if (keys->elements > 0) {
            size_t n = keys->elements + 1;
            const char **del = malloc(sizeof *del * n);
            size_t *del_lens = malloc(sizeof *del_lens * n);
            if (!del || !del_lens) {
                rc = yyc__error(YYC_ENOMEM, 0, 0, "yyc_remote_remove_all: out of memory");
            } else {
                del[0] = "UNLINK";
                del_lens[0] = 6;
                for (size_t i = 0; i < keys->elements; i++) {
                    del[i + 1] = keys->element[i]->str;
                    del_lens[i + 1] = (size_t)keys->element[i]->len;
                }
                const int del_argc = (int)n;
                const char **const dargv[1] = {del};
                const size_t *const dlens[1] = {del_lens};
                redisReply *dreply = NULL;
                rc = run(r, 1, &del_argc, dargv, dlens, &dreply);
                if (rc == YYC_OK) {
                    if (dreply->type == REDIS_REPLY_ERROR) rc = reply_error("remove all", dreply);
                    freeReplyObject(dreply);
                }
            }
            free(del);
            free(del_lens);
        }
        freeReplyObject(reply);
    } while (rc == YYC_OK && strcmp(cursor, "0") != 0);
    free(pattern);
    return rc == YYC_OK ? YYC_OK : failed(r);
}

int yyc_remote_set_timeouts(yyc_remote *r, double connect_seconds, double command_seconds) {
    if (!r || !(connect_seconds > 0) || !(command_seconds > 0) || !isfinite(connect_seconds) ||
        !isfinite(command_seconds))
        return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_set_timeouts: not > 0 and finite");
    yyc__remote_lock(r);
    r->connect_timeout = connect_seconds;
    r->command_timeout = command_seconds;
    yyc__remote_unlock(r);
    return YYC_OK;
}

int yyc_remote_get_statistics(yyc_remote *r, yyc_remote_statistics *out) {
    if (!r || !out) return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_get_statistics: NULL");
    out->hits = atomic_load_explicit(&r->hits, memory_order_relaxed);
    out->misses = atomic_load_explicit(&r->misses, memory_order_relaxed);
    out->corrupt_values = atomic_load_explicit(&r->corrupt, memory_order_relaxed);
    out->errors = atomic_load_explicit(&r->errors, memory_order_relaxed);
    out->connects = atomic_load_explicit(&r->connects, memory_order_relaxed);
    out->invalidations = atomic_load_explicit(&r->invalidations, memory_order_acquire);
    out->link_downs = atomic_load_explicit(&r->link_downs, memory_order_relaxed);
    out->invalidation_up = atomic_load_explicit(&r->epoch, memory_order_acquire) % 2 == 1;
    return YYC_OK;
}

void yyc_remote_set_error_hook(yyc_remote *r, yyc_error_hook hook, void *ctx) {
    if (!r) return;
    yyc__remote_lock(r);
    r->hook = hook;
    r->hook_ctx = ctx;
    bool on_thread = r->thread_started && pthread_equal(pthread_self(), r->thread);
    while (r->hook_calls > 0 || (!on_thread && r->thread_hook_calls > 0))
        pthread_cond_wait(&r->calls_cond, &r->lock);
    yyc__remote_unlock(r);
}

void yyc__remote_retain(yyc_remote *r) {
    atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

void yyc__remote_free(yyc_remote *r) {
    yyc__remote_pool_close(r);
    assert(r->open_count == 0);
    pthread_cond_destroy(&r->pool_cond);
    pthread_cond_destroy(&r->calls_cond);
    pthread_mutex_destroy(&r->lock);
    yyc__remote_url_free(&r->url);
    free(r->prefix);
    free(r->listeners);
    free(r);
}

static void destroy(yyc_remote *r) {
    if (yyc__remote_listener_stop(r)) yyc__remote_free(r);
}

void yyc_remote_close(yyc_remote *r) {
    if (!r) return;
    if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) destroy(r);
}

static int init_sync(yyc_remote *r) {
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) return YYC_ENOMEM;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int err = pthread_mutex_init(&r->lock, NULL);
    if (!err) err = pthread_cond_init(&r->pool_cond, &attr);
    if (!err) err = pthread_cond_init(&r->calls_cond, &attr);
    pthread_condattr_destroy(&attr);
    return err ? YYC_ENOMEM : YYC_OK;
}

int yyc_remote_open(const char *url, const char *namespace_, yyc_remote **out) {
    if (!out) return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_open: out is NULL");
    *out = NULL;
    if (!url || !namespace_ || !*namespace_)
        return yyc__error(YYC_EINVAL, 0, 0, "yyc_remote_open: NULL url or empty namespace");
    yyc_remote *r = calloc(1, sizeof *r);
    if (!r) return yyc__error(YYC_ENOMEM, 0, 0, "yyc_remote_open: out of memory");
    if (init_sync(r) != YYC_OK) {
        free(r);
        return yyc__error(YYC_ENOMEM, 0, 0, "yyc_remote_open: no mutex");
    }
    atomic_init(&r->refs, 1);
    r->wake[0] = r->wake[1] = -1;
    r->connect_timeout = 1.0;
    r->command_timeout = 0.5;
    int rc = yyc__remote_url_parse(url, &r->url);
    if (rc == YYC_OK) {
        r->prefix_len = strlen(namespace_) + 1;
        if (!(r->prefix = malloc(r->prefix_len + 1))) {
            rc = yyc__error(YYC_ENOMEM, 0, 0, "yyc_remote_open: out of memory");
        } else {
            memcpy(r->prefix, namespace_, r->prefix_len - 1);
            memcpy(r->prefix + r->prefix_len - 1, ":", 2);
        }
    }
    if (rc == YYC_OK) {
        /* One connection now: reachable, and the credentials accepted (a server that wants
         * a password answers PING with NOAUTH). */
        const char *argv[1] = {"PING"};
        const size_t lens[1] = {4};
        const int argc = 1;
        const char **const argvs[1] = {argv};
        const size_t *const lenss[1] = {lens};
        redisReply *reply = NULL;
        rc = run(r, 1, &argc, argvs, lenss, &reply);
        if (rc == YYC_OK) {
            if (reply->type == REDIS_REPLY_ERROR)
                rc =
                    yyc__error(YYC_EIO, 0, 0, "remote: authentication refused: %.160s", reply->str);
            freeReplyObject(reply);
        }
    }
    if (rc == YYC_OK)
        rc = yyc__remote_listener_start(r, yyc__monotonic_now() +
                                               2 * (r->connect_timeout + r->command_timeout));
    if (rc != YYC_OK) {
        yyc_error saved;
        yyc_last_error(&saved);
        destroy(r);
        yyc__error_restore(&saved);
        return rc;
    }
    *out = r;
    return YYC_OK;
}
