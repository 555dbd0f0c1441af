/* test_worker.c - the background worker: jobs, drain, timers. */
#include "test_support.h"

#include <float.h>
#include <pthread.h>
#include <stdatomic.h>

#include "internal.h"

static atomic_int counter;
static atomic_bool ran_on_worker;

static void count_job(void *arg) {
    (void)arg;
    atomic_store(&ran_on_worker, yyc__worker_is_current());
    usleep(1000);
    atomic_fetch_add(&counter, 1);
}

static void jobs_run_off_the_calling_thread_and_drain_waits_for_them(void **state) {
    (void)state;
    static int owner;
    atomic_store(&counter, 0);
    for (int i = 0; i < 50; i++) assert_int_equal(yyc__worker_async(&owner, count_job, NULL), YYC_OK);
    yyc__worker_drain(&owner);
    assert_int_equal(atomic_load(&counter), 50);
    assert_true(atomic_load(&ran_on_worker));
    assert_false(yyc__worker_is_current());
}

static int order_log[8];
static atomic_int order_len;
static void log_job(void *arg) { order_log[atomic_fetch_add(&order_len, 1)] = (int)(intptr_t)arg; }

static void jobs_run_in_fifo_order(void **state) {
    (void)state;
    static int owner;
    atomic_store(&order_len, 0);
    for (intptr_t i = 0; i < 8; i++) yyc__worker_async(&owner, log_job, (void *)i);
    yyc__worker_drain(&owner);
    for (int i = 0; i < 8; i++) assert_int_equal(order_log[i], i);
}

static int inner_owner;
static atomic_int inner_ran;
static void inner_job(void *arg) { (void)arg; atomic_fetch_add(&inner_ran, 1); }
static void outer_job(void *arg) {
    (void)arg;
    for (int i = 0; i < 5; i++) yyc__worker_async(&inner_owner, inner_job, NULL);
    yyc__worker_drain(&inner_owner); /* on the worker: runs them inline instead of deadlocking */
    assert_int_equal(atomic_load(&inner_ran), 5);
}

static void drain_from_the_worker_thread_runs_jobs_inline(void **state) {
    (void)state;
    static int outer_owner;
    atomic_store(&inner_ran, 0);
    yyc__worker_async(&outer_owner, outer_job, NULL);
    yyc__worker_drain(&outer_owner);
    assert_int_equal(atomic_load(&inner_ran), 5);
}

static atomic_int fired;
static void tick(void *arg) { (void)arg; atomic_fetch_add(&fired, 1); }

static void timer_fires_repeatedly_and_stops_when_freed(void **state) {
    (void)state;
    atomic_store(&fired, 0);
    yyc__timer *t = NULL;
    assert_int_equal(yyc__timer_new(tick, NULL, 0.01, &t), YYC_OK);
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
    assert_int_equal(yyc__timer_new(tick, NULL, 0, &zero), YYC_OK);
    assert_int_equal(yyc__timer_new(tick, NULL, -1, &negative), YYC_OK);
    /* A job queued after the timers runs once the worker has looked at them. */
    static int owner;
    yyc__worker_async(&owner, count_job, NULL);
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
    assert_int_equal(yyc__timer_new(tick, NULL, DBL_MAX, &t), YYC_OK);
    yyc__timer_set_interval(t, 1e300);
    static int owner;
    atomic_store(&counter, 0);
    yyc__worker_async(&owner, count_job, NULL);
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
    assert_int_equal(yyc__timer_new(free_self, NULL, 0.005, &self_freeing), YYC_OK);
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
    cmocka_unit_test(jobs_run_off_the_calling_thread_and_drain_waits_for_them),
    cmocka_unit_test(jobs_run_in_fifo_order),
    cmocka_unit_test(drain_from_the_worker_thread_runs_jobs_inline),
    cmocka_unit_test(timer_fires_repeatedly_and_stops_when_freed),
    cmocka_unit_test(paused_timer_never_fires),
    cmocka_unit_test(timer_may_free_itself_from_its_callback),
    cmocka_unit_test(huge_intervals_pause_the_timer),
    cmocka_unit_test(status_messages_come_from_one_table),
    cmocka_unit_test(last_error_is_per_thread),
};

YYC_TEST_MAIN(tests)
