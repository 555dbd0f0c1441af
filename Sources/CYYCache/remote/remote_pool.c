/*
 * remote_pool.c - the connections of a yyc_remote: up to YYC_REMOTE_POOL_SIZE, opened when
 * needed, kept while they work; a back-off after a failed connect (50 ms doubling to 1 s) during
 * which calls fail at once instead of each waiting for a connect timeout.
 */
#include "remote/remote_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#define BACKOFF_FIRST 0.05
#define BACKOFF_MAX 1.0

bool yyc__remote_wait_until_locked(yyc_remote *r, pthread_cond_t *cond, double deadline) {
    yyc__assert_held(&r->lock);
    double left = deadline - yyc__monotonic_now();
    if (left <= 0) return false;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double whole = floor(left);
    ts.tv_sec += (time_t)whole;
    ts.tv_nsec += (long)((left - whole) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cond, &r->lock, &ts);
    return true;
}

redisContext *yyc__remote_pool_take(yyc_remote *r, double deadline, bool *reused, double *timeout) {
    *reused = false;
    yyc__remote_lock(r);
    for (;;) {
        if (r->idle_count > 0) {
            r->idle_count--;
            redisContext *c = r->idle[r->idle_count];
            *timeout = r->idle_timeout[r->idle_count];
            yyc__remote_unlock(r);
            *reused = true;
            return c;
        }
        if (r->open_count < YYC_REMOTE_POOL_SIZE) break;
        if (!yyc__remote_wait_until_locked(r, &r->pool_cond, deadline)) {
            yyc__remote_unlock(r);
            yyc__error(YYC_EIO, 0, ETIMEDOUT, "remote: every connection stayed busy");
            return NULL;
        }
    }
    double now = yyc__monotonic_now();
    if (now < r->backoff_until) {
        double wait = r->backoff_until - now;
        yyc__remote_unlock(r);
        yyc__error(YYC_EIO, 0, ECONNREFUSED,
                   "remote: the server was unreachable; next attempt in %.0f ms", wait * 1000);
        return NULL;
    }
    r->open_count++; /* reserved while connecting, unlocked */
    double connect_s = r->connect_timeout, command_s = r->command_timeout;
    yyc__remote_unlock(r);

    redisContext *c = yyc__remote_connect(&r->url, connect_s, command_s, deadline);

    yyc__remote_lock(r);
    if (c) {
        r->backoff = 0;
        r->backoff_until = 0;
        *timeout = -1; /* set by the caller's first command */
    } else {
        r->open_count--;
        r->backoff = r->backoff == 0 ? BACKOFF_FIRST : fmin(r->backoff * 2, BACKOFF_MAX);
        r->backoff_until = yyc__monotonic_now() + r->backoff;
        pthread_cond_signal(&r->pool_cond);
    }
    yyc__remote_unlock(r);
    if (c) atomic_fetch_add_explicit(&r->connects, 1, memory_order_relaxed);
    return c;
}

void yyc__remote_pool_give(yyc_remote *r, redisContext *c, double timeout, bool broken) {
    yyc__remote_lock(r);
    if (broken) {
        r->open_count--;
    } else {
        assert(r->idle_count < YYC_REMOTE_POOL_SIZE);
        r->idle_timeout[r->idle_count] = timeout;
        r->idle[r->idle_count++] = c;
        c = NULL;
    }
    pthread_cond_signal(&r->pool_cond);
    assert(r->idle_count <= r->open_count && r->open_count <= YYC_REMOTE_POOL_SIZE);
    yyc__remote_unlock(r);
    if (c) redisFree(c);
}

void yyc__remote_pool_close(yyc_remote *r) {
    yyc__remote_lock(r);
    int n = r->idle_count;
    redisContext *idle[YYC_REMOTE_POOL_SIZE];
    for (int i = 0; i < n; i++) idle[i] = r->idle[i];
    r->open_count -= n;
    r->idle_count = 0;
    yyc__remote_unlock(r);
    for (int i = 0; i < n; i++) redisFree(idle[i]);
}
