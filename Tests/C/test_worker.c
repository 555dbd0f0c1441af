/* test_worker.c - the background worker: jobs, drain, timers. */
#include "test_support.h"

#include <fcntl.h>
#include <float.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "platform/internal.h"

static atomic_int counter;
static atomic_bool ran_on_worker;

static void count_job(void *arg) {
    (void)arg;
    atomic_store(&ran_on_worker, yyc__worker_is_current());
    usleep(1000);
    atomic_fetch_add(&counter, 1);
}

static void jobs_run_on_the_queue_thread_in_the_background(void **state) {
    (void)state;
    static int owner;
    atomic_store(&counter, 0);
    atomic_store(&ran_on_worker, false);
    for (int i = 0; i < 50; i++)
        assert_int_equal(yyc__worker_async(YYC__QUEUE_MEMORY, &owner, count_job, NULL), YYC_OK);
    assert_true(WAIT_UNTIL(atomic_load(&counter) == 50, 30));
    yyc__worker_drain(&owner);
    assert_true(atomic_load(&ran_on_worker));
    assert_false(yyc__worker_is_current());
}

/* A gate a job waits at until the test opens it: a background job blocked deterministically. */
typedef struct gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    bool open;
    atomic_bool reached;
} gate;
#define GATE_INIT \
    { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false }

static void gate_job(void *arg) {
    gate *g = arg;
    atomic_store(&g->reached, true);
    pthread_mutex_lock(&g->m);
    while (!g->open) pthread_cond_wait(&g->c, &g->m);
    pthread_mutex_unlock(&g->m);
}

static void gate_open(gate *g) {
    pthread_mutex_lock(&g->m);
    g->open = true;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
}

static bool gate_is_open(gate *g) {
    pthread_mutex_lock(&g->m);
    bool open = g->open;
    pthread_mutex_unlock(&g->m);
    return open;
}

static atomic_int owner_jobs_ran;
static atomic_bool owner_job_on_worker;
static void owner_job(void *arg) {
    (void)arg;
    atomic_store(&owner_job_on_worker, yyc__worker_is_current());
    atomic_fetch_add(&owner_jobs_ran, 1);
}

typedef struct drainer {
    const void *owner;
    atomic_bool done;
} drainer;

static void *drain_thread(void *arg) {
    drainer *d = arg;
    yyc__worker_drain(d->owner);
    atomic_store(&d->done, true);
    return NULL;
}

static void drain_waits_only_for_its_own_owner(void **state) {
    (void)state;
    /* Owner A's job blocks the disk queue; owner B's job is queued behind it. B's drain must
     * not wait for A: it runs B's queued job itself. */
    static gate g = GATE_INIT;
    static int a, b;
    atomic_store(&owner_jobs_ran, 0);
    assert_int_equal(yyc__worker_async(YYC__QUEUE_DISK, &a, gate_job, &g), YYC_OK);
    assert_true(WAIT_UNTIL(atomic_load(&g.reached), 30));
    assert_int_equal(yyc__worker_async(YYC__QUEUE_DISK, &b, owner_job, NULL), YYC_OK);
    drainer d = {.owner = &b};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, drain_thread, &d), 0);
    bool drained = WAIT_UNTIL(atomic_load(&d.done), 30);
    bool a_still_blocked = !gate_is_open(&g);
    gate_open(&g);
    pthread_join(th, NULL);
    yyc__worker_drain(&a);
    assert_true(drained);
    assert_true(a_still_blocked);
    assert_int_equal(atomic_load(&owner_jobs_ran), 1);
    assert_false(atomic_load(&owner_job_on_worker)); /* run by the drain, on its thread */
}

static atomic_int values_released;
static atomic_bool released_on_worker;
static void count_release(void *ctx, void *value) {
    (void)ctx;
    (void)value;
    atomic_store(&released_on_worker, yyc__worker_is_current());
    atomic_fetch_add(&values_released, 1);
}

typedef struct freer {
    yyc_memcache *c;
    atomic_bool done;
} freer;

static void *free_thread(void *arg) {
    freer *f = arg;
    yyc_memcache_free(f->c);
    atomic_store(&f->done, true);
    return NULL;
}

/* Releases, trims and frees of a memory cache while the disk queue is blocked: they must all
 * complete. Returns false (after unblocking nothing) if one did not. */
static bool memory_cache_work_completes(void) {
    static int value;
    yyc_value_callbacks cb = {.release = count_release};
    yyc_memcache *c = NULL;
    if (yyc_memcache_new(&cb, &c) != YYC_OK) return false;
    atomic_store(&values_released, 0);
    atomic_store(&released_on_worker, false);
    /* An asynchronous release. */
    yyc_memcache_set(c, "k", 1, &value, 0);
    yyc_memcache_remove(c, "k", 1);
    bool released = WAIT_UNTIL(atomic_load(&values_released) == 1, 30);
    bool on_worker = atomic_load(&released_on_worker);
    /* The auto-trim timer (age limit 0 evicts everything). */
    yyc_memcache_set(c, "k", 1, &value, 0);
    yyc_memcache_set_age_limit(c, 0);
    yyc_memcache_set_auto_trim_interval(c, 0.001);
    bool trimmed = WAIT_UNTIL(atomic_load(&values_released) == 2, 30);
    /* A free with a value pending. */
    yyc_memcache_set_auto_trim_interval(c, 0);
    yyc_memcache_set(c, "k", 1, &value, 0);
    freer f = {.c = c};
    pthread_t th;
    if (pthread_create(&th, NULL, free_thread, &f) != 0) return false;
    bool freed = WAIT_UNTIL(atomic_load(&f.done), 30);
    if (freed) pthread_join(th, NULL);
    else pthread_detach(th);
    print_message("released %d (on worker %d), trimmed %d, freed %d\n", released, on_worker,
                  trimmed, freed);
    return released && on_worker && trimmed && freed && atomic_load(&values_released) == 3;
}

static void a_blocked_disk_job_delays_neither_memory_releases_nor_frees(void **state) {
    (void)state;
    static gate g = GATE_INIT;
    static int disk_owner;
    assert_int_equal(yyc__worker_async(YYC__QUEUE_DISK, &disk_owner, gate_job, &g), YYC_OK);
    assert_true(WAIT_UNTIL(atomic_load(&g.reached), 30));
    bool completed = memory_cache_work_completes();
    bool disk_still_blocked = !gate_is_open(&g);
    gate_open(&g);
    yyc__worker_drain(&disk_owner);
    assert_true(completed);
    assert_true(disk_still_blocked);
}

/* The same with a real disk job: an orphan sweep (queued by an open) that needs the folder lock
 * another process holds. */
static void memory_release_completes_while_an_orphan_sweep_waits_for_another_process(void **state) {
    (void)state;
    char *dir = test_temp_dir("worker-sweep");
    yyc_kv *kv = NULL;
    assert_int_equal(yyc_kv_open(dir, YYC_KV_MIXED, &kv), YYC_OK);
    yyc_kv_close(kv);
    /* An unreferenced file older than the sweep's grace period. */
    char orphan[4200];
    snprintf(orphan, sizeof orphan, "%s/data/orphan", dir);
    FILE *f = fopen(orphan, "w");
    assert_non_null(f);
    fputs("x", f);
    fclose(f);
    struct timespec old[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
    assert_int_equal(utimensat(AT_FDCWD, orphan, old, 0), 0);

    int locked[2], finish[2];
    assert_int_equal(pipe(locked), 0);
    assert_int_equal(pipe(finish), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(120);
        close(locked[0]);
        close(finish[1]);
        int fd = open(dir, O_RDONLY | O_DIRECTORY);
        if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(2);
        char byte = 1;
        if (write(locked[1], &byte, 1) != 1) _exit(3);
        (void)!read(finish[0], &byte, 1); /* until the parent is done (or gone) */
        _exit(0);
    }
    close(locked[1]);
    close(finish[0]);
    char byte;
    assert_int_equal(read(locked[0], &byte, 1), 1);

    assert_int_equal(yyc_kv_open(dir, YYC_KV_MIXED, &kv), YYC_OK); /* queues the sweep */
    bool completed = memory_cache_work_completes();
    bool sweep_unfinished = access(orphan, F_OK) == 0; /* it cannot delete without the lock */
    close(finish[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    yyc_kv_close(kv); /* the sweep can finish now */
    close(locked[0]);
    assert_true(completed);
    assert_true(sweep_unfinished);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    test_rm_rf(dir);
    free(dir);
}

static void drain_runs_the_owners_queued_jobs_on_the_calling_thread(void **state) {
    (void)state;
    static gate g = GATE_INIT;
    static int blocker, owner;
    atomic_store(&owner_jobs_ran, 0);
    atomic_store(&owner_job_on_worker, true);
    assert_int_equal(yyc__worker_async(YYC__QUEUE_MEMORY, &blocker, gate_job, &g), YYC_OK);
    assert_true(WAIT_UNTIL(atomic_load(&g.reached), 30));
    assert_int_equal(yyc__worker_async(YYC__QUEUE_MEMORY, &owner, owner_job, NULL), YYC_OK);
    drainer d = {.owner = &owner};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, drain_thread, &d), 0);
    bool drained = WAIT_UNTIL(atomic_load(&d.done), 30); /* not behind the blocker */
    int ran = atomic_load(&owner_jobs_ran);
    gate_open(&g);
    pthread_join(th, NULL);
    yyc__worker_drain(&blocker);
    assert_true(drained);
    assert_int_equal(ran, 1);
    assert_false(atomic_load(&owner_job_on_worker));
}

static int order_log[8];
static atomic_int order_len;
static void log_job(void *arg) { order_log[atomic_fetch_add(&order_len, 1)] = (int)(intptr_t)arg; }

static void jobs_run_in_fifo_order(void **state) {
    (void)state;
    static int owner;
    atomic_store(&order_len, 0);
    for (intptr_t i = 0; i < 8; i++)
        yyc__worker_async(YYC__QUEUE_MEMORY, &owner, log_job, (void *)i);
    yyc__worker_drain(&owner);
    for (int i = 0; i < 8; i++) assert_int_equal(order_log[i], i);
}

static int inner_owner;
static atomic_int inner_ran;
static void inner_job(void *arg) {
    (void)arg;
    atomic_fetch_add(&inner_ran, 1);
}
static void outer_job(void *arg) {
    (void)arg;
    for (int i = 0; i < 5; i++) yyc__worker_async(YYC__QUEUE_MEMORY, &inner_owner, inner_job, NULL);
    yyc__worker_drain(&inner_owner); /* on the worker: runs them inline instead of deadlocking */
    assert_int_equal(atomic_load(&inner_ran), 5);
}

static void drain_from_the_worker_thread_runs_jobs_inline(void **state) {
    (void)state;
    static int outer_owner;
    atomic_store(&inner_ran, 0);
    yyc__worker_async(YYC__QUEUE_MEMORY, &outer_owner, outer_job, NULL);
    yyc__worker_drain(&outer_owner);
    assert_int_equal(atomic_load(&inner_ran), 5);
}

/* --- delayed jobs --- */

typedef struct stamp {
    _Atomic double at; /* when the job ran (monotonic seconds), 0 before */
    atomic_bool on_worker;
} stamp;

static void stamp_job(void *arg) {
    stamp *s = arg;
    atomic_store(&s->on_worker, yyc__worker_is_current());
    atomic_store(&s->at, yyc__monotonic_now());
}

/* Queues stamp_job(s) on the memory queue, delay seconds from now. */
static void stamp_after(const void *owner, stamp *s, double delay) {
    assert_int_equal(yyc__worker_async_after(YYC__QUEUE_MEMORY, owner, stamp_job, s, delay),
                     YYC_OK);
}

static void never_fires(void *arg) { (void)arg; }

static void a_delayed_job_runs_on_the_worker_once_its_delay_has_passed(void **state) {
    (void)state;
    static int owner;
    stamp s = {0};
    double t0 = yyc__monotonic_now();
    stamp_after(&owner, &s, 0.05);
    assert_true(WAIT_UNTIL(atomic_load(&s.at) != 0, 30));
    assert_true(atomic_load(&s.at) - t0 >= 0.05);
    assert_true(atomic_load(&s.on_worker));
}

static void a_job_queued_after_a_delayed_one_does_not_wait_for_it(void **state) {
    (void)state;
    static int owner;
    stamp late = {0}, now = {0};
    stamp_after(&owner, &late, 3600);
    assert_int_equal(yyc__worker_async(YYC__QUEUE_MEMORY, &owner, stamp_job, &now), YYC_OK);
    assert_true(WAIT_UNTIL(atomic_load(&now.at) != 0, 30));
    assert_true(atomic_load(&late.at) == 0);
    yyc__worker_drain(&owner); /* runs the delayed job here, at once */
    assert_true(atomic_load(&late.at) != 0);
    assert_false(atomic_load(&late.on_worker));
}

static void drain_runs_only_its_owners_delayed_jobs(void **state) {
    (void)state;
    static int mine, other;
    stamp m = {0}, o = {0};
    stamp_after(&other, &o, 3600);
    stamp_after(&mine, &m, 3600);
    yyc__worker_drain(&mine);
    assert_true(atomic_load(&m.at) != 0);
    assert_true(atomic_load(&o.at) == 0);
    yyc__worker_drain(&other);
    assert_true(atomic_load(&o.at) != 0);
}

static void wait_idle_waits_for_delayed_jobs(void **state) {
    (void)state;
    static int owner;
    stamp s = {0};
    stamp_after(&owner, &s, 0.05);
    yyc__worker_wait_idle(YYC__QUEUE_MEMORY);
    assert_true(atomic_load(&s.at) != 0);
    assert_true(atomic_load(&s.on_worker));
}

/* The thread sleeps until its next timer; a delayed job due before that wakes it. */
static void a_delayed_job_due_before_the_next_timer_wakes_the_thread(void **state) {
    (void)state;
    static int owner;
    yyc__timer *t;
    assert_int_equal(yyc__timer_new(YYC__QUEUE_MEMORY, never_fires, NULL, 3600, &t), YYC_OK);
    usleep(20000); /* the thread now sleeps until the hour is over */
    stamp s = {0};
    stamp_after(&owner, &s, 0.01);
    assert_true(WAIT_UNTIL(atomic_load(&s.at) != 0, 30));
    assert_true(atomic_load(&s.on_worker));
    yyc__timer_free(t);
}

static void a_fork_child_never_runs_its_parents_delayed_jobs(void **state) {
    (void)state;
    static int owner;
    stamp s = {0};
    stamp_after(&owner, &s, 0.05);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        usleep(200000);
        yyc__worker_wait_idle(YYC__QUEUE_MEMORY); /* nothing of the parent's to wait for */
        yyc__worker_drain(&owner);                /* nor to run */
        _exit(atomic_load(&s.at) == 0 ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(WAIT_UNTIL(atomic_load(&s.at) != 0, 30)); /* the parent's runs in the parent */
}

static atomic_int fired;
static void tick(void *arg) {
    (void)arg;
    atomic_fetch_add(&fired, 1);
}

static void timer_fires_repeatedly_and_stops_when_freed(void **state) {
    (void)state;
    atomic_store(&fired, 0);
    yyc__timer *t = NULL;
    assert_int_equal(yyc__timer_new(YYC__QUEUE_MEMORY, tick, NULL, 0.01, &t), YYC_OK);
    assert_true(WAIT_UNTIL(atomic_load(&fired) >= 3, 10));
    yyc__timer_free(t);
    int after = atomic_load(&fired);
    usleep(50000);
    assert_int_equal(atomic_load(&fired), after);
}

static void paused_timer_never_fires(void **state) {
    (void)state;
    atomic_store(&fired, 0);
    yyc__timer *zero = NULL, *negative = NULL;
    assert_int_equal(yyc__timer_new(YYC__QUEUE_MEMORY, tick, NULL, 0, &zero), YYC_OK);
    assert_int_equal(yyc__timer_new(YYC__QUEUE_MEMORY, tick, NULL, -1, &negative), YYC_OK);
    /* A job queued after the timers runs once the worker has looked at them. */
    static int owner;
    yyc__worker_async(YYC__QUEUE_MEMORY, &owner, count_job, NULL);
    yyc__worker_drain(&owner);
    usleep(30000);
    assert_int_equal(atomic_load(&fired), 0);
    yyc__timer_set_interval(zero, 0.005);
    assert_true(WAIT_UNTIL(atomic_load(&fired) >= 1, 10));
    yyc__timer_free(zero);
    yyc__timer_free(negative);
}

static void huge_intervals_pause_the_timer(void **state) {
    (void)state;
    /* DBL_MAX once overflowed the wait's time_t and made the worker spin (found by fuzzing,
     * Tests/fuzz/corpus/memcache/bug-worker-huge-interval). Now it is a pause: the timer never
     * fires, and the worker still runs jobs. */
    atomic_store(&fired, 0);
    yyc__timer *t = NULL;
    assert_int_equal(yyc__timer_new(YYC__QUEUE_MEMORY, tick, NULL, DBL_MAX, &t), YYC_OK);
    yyc__timer_set_interval(t, 1e300);
    static int owner;
    atomic_store(&counter, 0);
    yyc__worker_async(YYC__QUEUE_MEMORY, &owner, count_job, NULL);
    yyc__worker_drain(&owner);
    assert_int_equal(atomic_load(&counter), 1);
    assert_int_equal(atomic_load(&fired), 0);
    yyc__timer_set_interval(t, 0.005); /* and it still works once given a real interval */
    assert_true(WAIT_UNTIL(atomic_load(&fired) >= 1, 10));
    yyc__timer_free(t);
}

static yyc__timer *self_freeing;
static void free_self(void *arg) {
    (void)arg;
    atomic_fetch_add(&fired, 1);
    yyc__timer_free(self_freeing);
}

static void timer_may_free_itself_from_its_callback(void **state) {
    (void)state;
    atomic_store(&fired, 0);
    assert_int_equal(yyc__timer_new(YYC__QUEUE_MEMORY, free_self, NULL, 0.005, &self_freeing),
                     YYC_OK);
    assert_true(WAIT_UNTIL(atomic_load(&fired) == 1, 10));
    usleep(30000);
    assert_int_equal(atomic_load(&fired), 1);
}

static void status_messages_come_from_one_table(void **state) {
    (void)state;
    assert_string_equal(yyc_status_name(YYC_OK), "OK");
    assert_string_equal(yyc_status_name(YYC_ECLOSED), "ECLOSED");
    assert_string_equal(yyc_strerror(YYC_NOTFOUND), "no value for the key");
    assert_string_equal(yyc_strerror(12345), "unknown status");
    assert_string_equal(yyc_status_name(-1), "UNKNOWN");
}

static void last_error_is_per_thread(void **state) {
    (void)state;
    yyc__error(YYC_EIO, 0, 5, "disk said %d", 5);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_EIO);
    assert_int_equal(e.sys_errno, 5);
    assert_string_equal(e.message, "disk said 5");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(jobs_run_on_the_queue_thread_in_the_background),
    cmocka_unit_test(drain_runs_the_owners_queued_jobs_on_the_calling_thread),
    cmocka_unit_test(drain_waits_only_for_its_own_owner),
    cmocka_unit_test(a_blocked_disk_job_delays_neither_memory_releases_nor_frees),
    cmocka_unit_test(memory_release_completes_while_an_orphan_sweep_waits_for_another_process),
    cmocka_unit_test(jobs_run_in_fifo_order),
    cmocka_unit_test(drain_from_the_worker_thread_runs_jobs_inline),
    cmocka_unit_test(a_delayed_job_runs_on_the_worker_once_its_delay_has_passed),
    cmocka_unit_test(a_job_queued_after_a_delayed_one_does_not_wait_for_it),
    cmocka_unit_test(drain_runs_only_its_owners_delayed_jobs),
    cmocka_unit_test(wait_idle_waits_for_delayed_jobs),
    cmocka_unit_test(a_delayed_job_due_before_the_next_timer_wakes_the_thread),
    cmocka_unit_test(a_fork_child_never_runs_its_parents_delayed_jobs),
    cmocka_unit_test(timer_fires_repeatedly_and_stops_when_freed),
    cmocka_unit_test(paused_timer_never_fires),
    cmocka_unit_test(timer_may_free_itself_from_its_callback),
    cmocka_unit_test(huge_intervals_pause_the_timer),
    cmocka_unit_test(status_messages_come_from_one_table),
    cmocka_unit_test(last_error_is_per_thread),
};

YYC_TEST_MAIN(tests)
