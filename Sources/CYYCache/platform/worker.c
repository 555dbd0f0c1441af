/*
 * worker.c - the library's background threads: deferred jobs and repeating timers, on four
 * queues that never wait for each other. Threads by promise: work with a deadline never queues
 * behind work that may block. Each queue's promise:
 *
 *   YYC__QUEUE_MEMORY  memory caches: value releases, deferred cost trims, auto-trims. Short
 *                      jobs that never touch disk (they run the caches' release callbacks).
 *                      Promise: nothing here waits for the disk.
 *   YYC__QUEUE_DISK    disk maintenance: trash emptying, orphan sweeps, disk auto-trims, the
 *                      writes of noted access times. No promise of promptness: they may wait
 *                      for the folder lock and SQLite's busy timeout, or run for seconds (40,000
 *                      files in the trash). Nothing with a deadline runs here.
 *   YYC__QUEUE_DEADLINE  disk timers with a deadline: the deferred writes' flush (within the
 *                      max delay) and the end of a held read transaction (so that another
 *                      connection's checkpoint is not kept waiting). Promise: a callback here
 *                      never waits for a lock another thread holds - it tries the core's lock
 *                      and, when that is held, comes back a moment later
 *                      (YYC__DEADLINE_RETRY) - so one core's blocked trim or sweep never
 *                      delays another core's deadline. (A flush's commit may still wait on
 *                      SQLite's busy handler for writers of its own folder.)
 *   YYC__QUEUE_CHECKPOINT  WAL checkpoints of the manifests, queued by commits
 *                      (kv_checkpoints.c). Passive copies that wait for no lock, so a commit
 *                      past the WAL cap can wait for one without waiting behind a long sweep.
 *
 * Each queue has its own thread, started lazily by its first job or timer; it lives until the
 * process exits. A queue runs its jobs in FIFO order and fires its due timers between jobs.
 * Nothing here holds a queue's lock while a job or a timer callback runs, so jobs may queue more
 * jobs, create or free timers, and drain.
 *
 * A job may be queued with a delay (yyc__worker_async_after): it waits in the queue's `later`
 * list until it is due, then joins the FIFO's tail. Many events that each want the same short job
 * (the memory caches' releases) so cost one wake-up of the thread per delay instead of one each.
 *
 * A drain waits only for its owner: the owner's queued jobs are taken out of the queue and run
 * on the draining thread, and only a job of the owner already running on a queue's thread is
 * waited for. So freeing one cache never waits behind another cache's jobs.
 *
 * fork(): pthread_atfork handlers take every queue's lock around the fork, so no lock is held in
 * the child; the child starts with empty queues and no thread (a new one starts at the child's
 * first job or timer). The parent's queued jobs and live timers stay the parent's: the child
 * never runs them (they are kept in parent_jobs / parent_timers so they stay reachable). A
 * queue's thread frees its jobs and timers under the queue's lock, so a fork never lands inside
 * one of its allocator calls (an allocator without fork handlers, as AddressSanitizer's, would
 * leave the child's first malloc waiting forever).
 *
 * Invariants (each queue's fields under its lock):
 *   - `head`..`tail` is the FIFO of queued jobs (tail->next == NULL; both NULL when empty).
 *   - `later` lists the delayed jobs not due yet (unordered; each has its `due` time); the thread
 *     moves a job from `later` to the FIFO once the monotonic clock reaches its due time.
 *   - `sleep_until` is the time the thread's current wait ends (INFINITY: until signalled), or
 *     -INFINITY while it is not waiting: a job due before it must signal `wake`.
 *   - `running_owner` is the owner of the job running on the queue's thread, valid while
 *     `job_running`.
 *   - `timers` lists every live timer of the queue; a timer being fired has `firing` set, and is
 *     freed by whoever clears `firing` last if it was cancelled meanwhile.
 *   - `started`: the thread exists in this process (cleared in a fork child).
 */
#include "platform/internal.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

typedef struct job {
    struct job *next;
    double due; /* delayed jobs: when it joins the FIFO (monotonic seconds) */
    const void *owner;
    yyc__job_fn fn;
    void *arg;
} job;

typedef struct queue queue;

struct yyc__timer {
    struct yyc__timer *next;
    queue *q;
    yyc__job_fn fire;
    void *arg;
    double interval; /* <= 0 or NaN: paused */
    double deadline; /* INFINITY while paused */
    bool firing;     /* fire() is running on the queue's thread */
    bool cancelled;  /* freed by yyc__timer_free from inside fire(): the thread frees it */
};

struct queue {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* CLOCK_MONOTONIC: work queued or timers changed */
    pthread_cond_t done; /* a job or a timer callback finished */
    job *head, *tail;
    job *later;         /* delayed jobs not due yet */
    double sleep_until; /* the end of the thread's current wait; -INFINITY: not waiting */
    yyc__timer *timers;
    bool job_running;
    bool timer_firing; /* a timer's fire() runs on the queue's thread */
    const void *running_owner;
    bool started;
    job *parent_jobs;          /* fork child: the parent's queued jobs, never run here */
    yyc__timer *parent_timers; /* fork child: the parent's timers, never fired here */
};

static queue queues[YYC__QUEUE_COUNT] = {
    [YYC__QUEUE_MEMORY] = {.lock = PTHREAD_MUTEX_INITIALIZER},
    [YYC__QUEUE_DISK] = {.lock = PTHREAD_MUTEX_INITIALIZER},
    [YYC__QUEUE_DEADLINE] = {.lock = PTHREAD_MUTEX_INITIALIZER},
    [YYC__QUEUE_CHECKPOINT] = {.lock = PTHREAD_MUTEX_INITIALIZER},
};

/* The queue whose thread this is (NULL on every other thread). */
static _Thread_local queue *current_queue;
/* The timer whose fire() runs on this thread (NULL outside one). */
static _Thread_local yyc__timer *current_timer;

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

/* Intervals of 1e15 s (30 million years) or more never come due: treated as paused, so that a
 * huge finite interval such as DBL_MAX cannot overflow the time_t of the wait. */
#define MAX_INTERVAL 1e15

static void lock(queue *q) {
    int rc = pthread_mutex_lock(&q->lock);
    assert(rc == 0);
    (void)rc;
}

static void unlock(queue *q) {
    int rc = pthread_mutex_unlock(&q->lock);
    assert(rc == 0);
    (void)rc;
}

/* --- setup and fork --- */

static void init_conds(queue *q) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&q->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&q->done, NULL);
    q->sleep_until = -INFINITY;
}

/* Before fork(): no queue lock may be held by another thread at the fork. Always in queue
 * order; nothing else ever holds two queue locks. */
static void fork_prepare(void) {
    for (int i = 0; i < YYC__QUEUE_COUNT; i++) lock(&queues[i]);
}

static void fork_parent(void) {
    for (int i = YYC__QUEUE_COUNT - 1; i >= 0; i--) unlock(&queues[i]);
}

/* In the child (one thread: the one that forked, which holds every queue lock): no worker
 * thread exists here. Forget the parent's work, so that drains and timer frees of new objects
 * never wait for it, and let the next job or timer start a new thread. */
static void fork_child(void) {
    for (int i = YYC__QUEUE_COUNT - 1; i >= 0; i--) {
        queue *q = &queues[i];
        if (q->tail) {
            q->tail->next = q->parent_jobs;
            q->parent_jobs = q->head;
        }
        q->head = q->tail = NULL;
        while (q->later) {
            job *j = q->later;
            q->later = j->next;
            j->next = q->parent_jobs;
            q->parent_jobs = j;
        }
        for (yyc__timer *t = q->timers; t;) {
            yyc__timer *next = t->next;
            t->next = q->parent_timers;
            q->parent_timers = t;
            t = next;
        }
        q->timers = NULL;
        q->job_running = q->timer_firing = false;
        q->running_owner = NULL;
        q->started = false;
        init_conds(q); /* a waiter of the parent's may have left them mid-wait */
        unlock(q);
    }
    current_queue = NULL; /* if a job forked, this thread is not a worker in the child */
}

static void setup(void) {
    for (int i = 0; i < YYC__QUEUE_COUNT; i++) init_conds(&queues[i]);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static queue *queue_of(yyc__queue which) {
    pthread_once(&setup_once, setup);
    assert((unsigned)which < YYC__QUEUE_COUNT);
    return &queues[which];
}

/* --- the thread --- */

static double deadline_after(double interval) {
    if (!(interval > 0) || !(interval < MAX_INTERVAL)) return INFINITY;
    return yyc__monotonic_now() + interval;
}

static yyc__timer *earliest_timer_locked(queue *q) {
    yyc__timer *best = NULL;
    for (yyc__timer *t = q->timers; t; t = t->next)
        if (!t->firing && (!best || t->deadline < best->deadline)) best = t;
    return best;
}

static void wait_until_locked(queue *q, double deadline) {
    struct timespec ts;
    double whole = floor(deadline);
    ts.tv_sec = (time_t)whole;
    ts.tv_nsec = (long)((deadline - whole) * 1e9);
    if (ts.tv_nsec >= 1000000000L) ts.tv_nsec = 999999999L;
    pthread_cond_timedwait(&q->wake, &q->lock, &ts);
}

static void append_locked(queue *q, job *j) {
    j->next = NULL;
    if (q->tail) q->tail->next = j;
    else q->head = j;
    q->tail = j;
}

/* Moves the delayed jobs due by now to the FIFO. Returns the earliest due time of those left
 * (INFINITY: none). */
static double move_due_jobs_locked(queue *q, double now) {
    double earliest = INFINITY;
    for (job **p = &q->later; *p;) {
        job *j = *p;
        if (j->due <= now) {
            *p = j->next;
            append_locked(q, j);
        } else {
            if (j->due < earliest) earliest = j->due;
            p = &j->next;
        }
    }
    return earliest;
}

static void *worker_main(void *arg) {
    queue *q = arg;
    current_queue = q;
    lock(q);
    for (;;) {
        double next_due = q->later ? move_due_jobs_locked(q, yyc__monotonic_now()) : INFINITY;
        job *j = q->head;
        if (j) {
            q->head = j->next;
            if (!q->head) q->tail = NULL;
            q->job_running = true;
            q->running_owner = j->owner;
            unlock(q);
            j->fn(j->arg);
            lock(q);
            free(j); /* (under the lock: see fork() above) */
            q->job_running = false;
            q->running_owner = NULL;
            pthread_cond_broadcast(&q->done);
            continue;
        }
        yyc__timer *t = earliest_timer_locked(q);
        if (t && t->deadline <= yyc__monotonic_now()) {
            t->firing = q->timer_firing = true;
            unlock(q);
            current_timer = t;
            t->fire(t->arg);
            current_timer = NULL;
            lock(q);
            t->firing = q->timer_firing = false;
            if (t->cancelled) free(t);
            else t->deadline = deadline_after(t->interval);
            pthread_cond_broadcast(&q->done);
            continue;
        }
        double until = t && t->deadline < next_due ? t->deadline : next_due;
        q->sleep_until = until;
        if (isfinite(until)) wait_until_locked(q, until);
        else pthread_cond_wait(&q->wake, &q->lock);
        q->sleep_until = -INFINITY;
    }
    return NULL;
}

/* Starts q's thread unless it runs already. Returns whether it runs. */
static bool ensure_started_locked(queue *q) {
    if (q->started) return true;
    /* Signals stay with the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t tattr;
    pthread_attr_init(&tattr);
    pthread_attr_setdetachstate(&tattr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int rc = pthread_create(&thread, &tattr, worker_main, q);
    pthread_attr_destroy(&tattr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    q->started = (rc == 0);
    return q->started;
}

bool yyc__worker_is_current(void) { return current_queue != NULL; }

/* --- jobs --- */

/* Queues a job: to the FIFO when delay is not positive, else to the later list, due delay
 * seconds from now. */
static int enqueue(yyc__queue which, const void *owner, yyc__job_fn fn, void *arg, double delay) {
    queue *q = queue_of(which);
    job *j = malloc(sizeof *j);
    if (!j) return YYC_ENOMEM;
    *j = (job){.owner = owner, .fn = fn, .arg = arg};
    bool delayed = delay > 0;
    if (delayed) j->due = yyc__monotonic_now() + delay;
    lock(q);
    if (!ensure_started_locked(q)) {
        unlock(q);
        free(j);
        return YYC_ENOMEM;
    }
    if (!delayed) {
        append_locked(q, j);
        pthread_cond_signal(&q->wake);
    } else {
        j->next = q->later;
        q->later = j;
        /* A thread that wakes before the job is due finds it then; only an earlier one is
         * woken. */
        if (j->due < q->sleep_until) pthread_cond_signal(&q->wake);
    }
    unlock(q);
    return YYC_OK;
}

int yyc__worker_async(yyc__queue which, const void *owner, yyc__job_fn fn, void *arg) {
    return enqueue(which, owner, fn, arg, 0);
}

int yyc__worker_async_after(yyc__queue which, const void *owner, yyc__job_fn fn, void *arg,
                            double delay) {
    return enqueue(which, owner, fn, arg, delay);
}

/* Takes owner's queued jobs out of q, in order, then its delayed ones (run now: a drain does not
 * wait for their delay). */
static job *take_jobs_locked(queue *q, const void *owner) {
    for (job **p = &q->later; *p;) {
        job *j = *p;
        if (j->owner == owner) {
            *p = j->next;
            append_locked(q, j);
        } else {
            p = &j->next;
        }
    }
    job *mine = NULL, **mine_tail = &mine;
    job *prev = NULL;
    for (job *j = q->head; j;) {
        job *next = j->next;
        if (j->owner == owner) {
            if (prev) prev->next = next;
            else q->head = next;
            if (q->tail == j) q->tail = prev;
            j->next = NULL;
            *mine_tail = j;
            mine_tail = &j->next;
        } else {
            prev = j;
        }
        j = next;
    }
    return mine;
}

static void drain_queue(queue *q, const void *owner) {
    /* On q's own thread, a running job of owner is this thread's caller: never wait for it. */
    bool on_its_thread = current_queue == q;
    lock(q);
    for (;;) {
        if (!on_its_thread && q->job_running && q->running_owner == owner) {
            pthread_cond_wait(&q->done, &q->lock);
            continue;
        }
        job *mine = take_jobs_locked(q, owner);
        if (!mine) break;
        pthread_cond_broadcast(&q->done); /* the queue changed (yyc__worker_wait_idle) */
        unlock(q);
        while (mine) {
            job *next = mine->next;
            mine->fn(mine->arg);
            free(mine);
            mine = next;
        }
        lock(q);
    }
    unlock(q);
}

void yyc__worker_drain(const void *owner) {
    for (int i = 0; i < YYC__QUEUE_COUNT; i++) drain_queue(queue_of((yyc__queue)i), owner);
}

#ifdef YYC_TESTING
void yyc__worker_wait_idle(yyc__queue which) {
    queue *q = queue_of(which);
    assert(current_queue != q); /* its own job would wait for itself */
    lock(q);
    while (q->head || q->later || q->job_running || q->timer_firing)
        pthread_cond_wait(&q->done, &q->lock);
    unlock(q);
}
#endif

/* --- timers --- */

int yyc__timer_new(yyc__queue which, yyc__job_fn fire, void *arg, double interval,
                   yyc__timer **out) {
    *out = NULL;
    queue *q = queue_of(which);
    yyc__timer *t = calloc(1, sizeof *t);
    if (!t) return YYC_ENOMEM;
    t->q = q;
    t->fire = fire;
    t->arg = arg;
    t->interval = interval;
    t->deadline = deadline_after(interval);
    lock(q);
    if (!ensure_started_locked(q)) {
        unlock(q);
        free(t);
        return YYC_ENOMEM;
    }
    *out = t; /* before the timer can fire: fire() may read the caller's handle */
    t->next = q->timers;
    q->timers = t;
    pthread_cond_signal(&q->wake);
    unlock(q);
    return YYC_OK;
}

void yyc__timer_set_interval(yyc__timer *t, double interval) {
    if (!t) return;
    queue *q = t->q;
    lock(q);
    t->interval = interval;
    if (!t->firing) t->deadline = deadline_after(interval);
    pthread_cond_signal(&q->wake);
    unlock(q);
}

yyc__timer *yyc__timer_current(void) { return current_timer; }

void yyc__timer_free(yyc__timer *t) {
    if (!t) return;
    queue *q = t->q;
    bool on_its_thread = current_queue == q;
    lock(q);
    for (yyc__timer **p = &q->timers; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    if (t->firing && on_its_thread) {
        t->cancelled = true; /* we are inside t->fire(): the thread frees it afterwards */
        unlock(q);
        return;
    }
    while (t->firing) pthread_cond_wait(&q->done, &q->lock);
    unlock(q);
    free(t);
}
