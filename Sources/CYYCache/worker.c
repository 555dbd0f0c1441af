/*
 * worker.c - the library's one background thread: deferred jobs and repeating timers.
 *
 * The thread starts lazily, on the first job or timer, and lives until the process exits.
 * Jobs run in FIFO order; due timers fire between jobs. Nothing here holds the worker's lock
 * while a job or a timer callback runs, so jobs may queue more jobs, create or free timers, and
 * call yyc__worker_drain (which then runs the owner's queued jobs inline).
 *
 * Invariants (all under worker.lock):
 *   - `head`..`tail` is the FIFO of queued jobs; `running_owner` is the owner of the job running
 *     now (valid while `job_running`).
 *   - `timers` lists every live timer; a timer being fired has `firing` set, and is freed by
 *     whoever clears `firing` last if it was cancelled meanwhile.
 */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

typedef struct job {
    struct job *next;
    const void *owner;
    yyc__job_fn fn;
    void *arg;
} job;

struct yyc__timer {
    struct yyc__timer *next;
    yyc__job_fn fire;
    void *arg;
    double interval; /* <= 0 or NaN: paused */
    double deadline; /* INFINITY while paused */
    bool firing;     /* fire() is running on the worker thread */
    bool cancelled;  /* freed by yyc__timer_free from inside fire(): the worker frees it */
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* CLOCK_MONOTONIC: work queued or timers changed */
    pthread_cond_t done; /* a job or a timer callback finished */
    job *head, *tail;
    yyc__timer *timers;
    bool job_running;
    const void *running_owner;
    pthread_t thread;
    bool started;
} worker = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t worker_once = PTHREAD_ONCE_INIT;

/* Intervals of 1e15 s (30 million years) or more never come due: treated as paused, so that a
 * huge finite interval such as DBL_MAX cannot overflow the time_t of the wait. */
#define MAX_INTERVAL 1e15

static double deadline_after(double interval) {
    if (!(interval > 0) || !(interval < MAX_INTERVAL)) return INFINITY;
    return yyc__monotonic_now() + interval;
}

static yyc__timer *earliest_timer(void) {
    yyc__timer *best = NULL;
    for (yyc__timer *t = worker.timers; t; t = t->next)
        if (!t->firing && (!best || t->deadline < best->deadline)) best = t;
    return best;
}

static void wait_until(double deadline) {
    struct timespec ts;
    double whole = floor(deadline);
    ts.tv_sec = (time_t)whole;
    ts.tv_nsec = (long)((deadline - whole) * 1e9);
    if (ts.tv_nsec >= 1000000000L) ts.tv_nsec = 999999999L;
    pthread_cond_timedwait(&worker.wake, &worker.lock, &ts);
}

static void *worker_main(void *unused) {
    (void)unused;
    pthread_mutex_lock(&worker.lock);
    for (;;) {
        job *j = worker.head;
        if (j) {
            worker.head = j->next;
            if (!worker.head) worker.tail = NULL;
            worker.job_running = true;
            worker.running_owner = j->owner;
            pthread_mutex_unlock(&worker.lock);
            j->fn(j->arg);
            free(j);
            pthread_mutex_lock(&worker.lock);
            worker.job_running = false;
            worker.running_owner = NULL;
            pthread_cond_broadcast(&worker.done);
            continue;
        }
        yyc__timer *t = earliest_timer();
        if (t && t->deadline <= yyc__monotonic_now()) {
            t->firing = true;
            pthread_mutex_unlock(&worker.lock);
            t->fire(t->arg);
            pthread_mutex_lock(&worker.lock);
            t->firing = false;
            if (t->cancelled) free(t);
            else t->deadline = deadline_after(t->interval);
            pthread_cond_broadcast(&worker.done);
            continue;
        }
        if (t && isfinite(t->deadline)) wait_until(t->deadline);
        else pthread_cond_wait(&worker.wake, &worker.lock);
    }
    return NULL;
}

static void worker_start(void) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&worker.wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&worker.done, NULL);

    /* Signals stay with the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t tattr;
    pthread_attr_init(&tattr);
    pthread_attr_setdetachstate(&tattr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&worker.thread, &tattr, worker_main, NULL);
    pthread_attr_destroy(&tattr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_mutex_lock(&worker.lock);
    worker.started = (rc == 0);
    pthread_mutex_unlock(&worker.lock);
}

static bool ensure_started(void) {
    pthread_once(&worker_once, worker_start);
    return worker.started; /* written once under the lock before pthread_once returns */
}

bool yyc__worker_is_current(void) {
    return ensure_started() && pthread_equal(pthread_self(), worker.thread);
}

int yyc__worker_async(const void *owner, yyc__job_fn fn, void *arg) {
    if (!ensure_started()) return YYC_ENOMEM;
    job *j = malloc(sizeof *j);
    if (!j) return YYC_ENOMEM;
    *j = (job){.owner = owner, .fn = fn, .arg = arg};
    pthread_mutex_lock(&worker.lock);
    if (worker.tail) worker.tail->next = j;
    else worker.head = j;
    worker.tail = j;
    pthread_cond_signal(&worker.wake);
    pthread_mutex_unlock(&worker.lock);
    return YYC_OK;
}

static bool owner_has_queued_job(const void *owner) {
    for (job *j = worker.head; j; j = j->next)
        if (j->owner == owner) return true;
    return false;
}

void yyc__worker_drain(const void *owner) {
    if (!ensure_started()) return;
    if (yyc__worker_is_current()) {
        /* Waiting would deadlock: take owner's jobs out of the queue and run them here. */
        job *mine = NULL, **mine_tail = &mine;
        pthread_mutex_lock(&worker.lock);
        job *prev = NULL;
        for (job *j = worker.head; j;) {
            job *next = j->next;
            if (j->owner == owner) {
                if (prev) prev->next = next;
                else worker.head = next;
                if (worker.tail == j) worker.tail = prev;
                j->next = NULL;
                *mine_tail = j;
                mine_tail = &j->next;
            } else {
                prev = j;
            }
            j = next;
        }
        pthread_mutex_unlock(&worker.lock);
        while (mine) {
            job *next = mine->next;
            mine->fn(mine->arg);
            free(mine);
            mine = next;
        }
        return;
    }
    pthread_mutex_lock(&worker.lock);
    while (owner_has_queued_job(owner) || (worker.job_running && worker.running_owner == owner))
        pthread_cond_wait(&worker.done, &worker.lock);
    pthread_mutex_unlock(&worker.lock);
}

int yyc__timer_new(yyc__job_fn fire, void *arg, double interval, yyc__timer **out) {
    *out = NULL;
    if (!ensure_started()) return YYC_ENOMEM;
    yyc__timer *t = calloc(1, sizeof *t);
    if (!t) return YYC_ENOMEM;
    t->fire = fire;
    t->arg = arg;
    t->interval = interval;
    t->deadline = deadline_after(interval);
    *out = t; /* before the timer can fire: fire() may read the caller's handle */
    pthread_mutex_lock(&worker.lock);
    t->next = worker.timers;
    worker.timers = t;
    pthread_cond_signal(&worker.wake);
    pthread_mutex_unlock(&worker.lock);
    return YYC_OK;
}

void yyc__timer_set_interval(yyc__timer *t, double interval) {
    if (!t) return;
    pthread_mutex_lock(&worker.lock);
    t->interval = interval;
    if (!t->firing) t->deadline = deadline_after(interval);
    pthread_cond_signal(&worker.wake);
    pthread_mutex_unlock(&worker.lock);
}

void yyc__timer_free(yyc__timer *t) {
    if (!t) return;
    bool on_worker = yyc__worker_is_current();
    pthread_mutex_lock(&worker.lock);
    for (yyc__timer **p = &worker.timers; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    if (t->firing && on_worker) {
        t->cancelled = true; /* we are inside t->fire(): the worker frees it afterwards */
        pthread_mutex_unlock(&worker.lock);
        return;
    }
    while (t->firing) pthread_cond_wait(&worker.done, &worker.lock);
    pthread_mutex_unlock(&worker.lock);
    free(t);
}
