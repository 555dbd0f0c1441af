/*
 * test_trim_batches.c - the disk cache's cost, count and age trims run in short batches and
 * release the core's mutex between them (disk_cache_trims.c, trim_in_batches_locked): another
 * thread's get and set complete in the middle of a long trim; a removal by another call between
 * two batches is reported once with its own cause while the trim's evictions keep theirs; a
 * close between two batches ends the trim with YYC_ECLOSED.
 */
#include "test_kv_support.h"

#include "platform/internal.h"
#include "kv/kv_private.h"

#include <pthread.h>
#include <sys/stat.h>

/* Testing (disk_cache_registry.c): a function run between two batches of every trim, no lock held.
 */
void yyc__diskcache_set_trim_batch_hook(yyc_diskcache *dc, void (*fn)(void *ctx), void *ctx);

enum { N = 500, KEEP = 10 };

typedef struct probe {
    yyc_diskcache *dc;
    int batches_seen; /* hook calls */
    int get_rc, set_rc;
    bool value_ok;
    bool joined; /* the other thread finished (false: it was blocked, i.e. the lock was held) */
} probe;

static void key_of(char *key, size_t size, int i) { snprintf(key, size, "k%04d", i); }

/* A disk cache in dir (auto-trim off) holding k0000..k<N-1>, each key its own value. */
static yyc_diskcache *filled_cache(const char *dir) {
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 1024, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    char key[32];
    for (int i = 0; i < N; i++) {
        key_of(key, sizeof key, i);
        assert_int_equal(yyc_diskcache_set(dc, key, key, strlen(key), NULL, 0), YYC_OK);
    }
    return dc;
}

/* Reads the most recently written key (its value is the key). */
static void *get_newest(void *arg) {
    probe *p = arg;
    char key[32];
    key_of(key, sizeof key, N - 1);
    void *v = NULL;
    size_t len = 0;
    p->get_rc = yyc_diskcache_get(p->dc, key, &v, &len);
    p->value_ok = p->get_rc == YYC_OK && len == strlen(key) && memcmp(v, key, len) == 0;
    yyc_free(v);
    return NULL;
}

/* Another thread: reads the most recently written key and writes a new one. */
static void *other_thread(void *arg) {
    probe *p = arg;
    get_newest(p);
    p->set_rc = yyc_diskcache_set(p->dc, "written-mid-trim", "x", 1, NULL, 0);
    return NULL;
}

/* Between two batches: the other thread's get and set must complete now. A deadline only keeps
 * a held lock from hanging the test (it would block forever). */
static void between_batches(void *ctx) {
    probe *p = ctx;
    if (p->batches_seen++ != 0) return;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_thread, p), 0);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 60;
    p->joined = pthread_timedjoin_np(t, NULL, &deadline) == 0;
    if (!p->joined) pthread_detach(t);
}

/* Checks that dc holds `expected` entries, then releases it and removes its folder. */
static void release_holding(yyc_diskcache *dc, char *dir, int64_t expected) {
    int64_t count = -1;
    assert_int_equal(yyc_diskcache_total_count(dc, &count), YYC_OK);
    assert_int_equal(count, expected);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

typedef enum { BY_COUNT, BY_COST, BY_AGE } trim_by;

static void run_trim(trim_by by) {
    char *dir = test_temp_dir("trim-batches");
    yyc_diskcache *dc = filled_cache(dir);
    char key[32];
    /* Distinct access times, oldest first (the age trim keeps the last KEEP). */
    tk_exec(dir, "update manifest set last_access_time = 1000 + cast(substr(key, 2) as integer);");
    probe p = {.dc = dc};
    yyc__diskcache_set_trim_batch_hook(dc, between_batches, &p);
    int rc;
    if (by == BY_COUNT) rc = yyc_diskcache_trim_to_count(dc, KEEP);
    else if (by == BY_COST) rc = yyc_diskcache_trim_to_cost(dc, KEEP * 5); /* 5 bytes each */
    else {
        tk_exec(dir, "update manifest set last_access_time = strftime('%s', 'now') "
                     "where cast(substr(key, 2) as integer) >= "
                     "490;");
        rc = yyc_diskcache_trim_to_age(dc, 3600);
    }
    assert_int_equal(rc, YYC_OK);
    yyc__diskcache_set_trim_batch_hook(dc, NULL, NULL);
    assert_true(p.batches_seen >= 1); /* more than one batch: the lock was released between */
    assert_true(p.joined);
    assert_int_equal(p.get_rc, YYC_OK);
    assert_true(p.value_ok);
    assert_int_equal(p.set_rc, YYC_OK);
    /* The trim still did all of its work: what is left fits. */
    int64_t count = -1;
    assert_int_equal(yyc_diskcache_total_count(dc, &count), YYC_OK);
    assert_true(count <= KEEP + 1);
    key_of(key, sizeof key, N - 1);
    assert_true(yyc_diskcache_contains(dc, key));
    key_of(key, sizeof key, 0);
    assert_false(yyc_diskcache_contains(dc, key));
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void a_get_and_a_set_complete_between_batches_of_a_long_count_trim(void **state) {
    (void)state;
    run_trim(BY_COUNT);
}

static void a_get_and_a_set_complete_between_batches_of_a_long_cost_trim(void **state) {
    (void)state;
    run_trim(BY_COST);
}

static void a_get_and_a_set_complete_between_batches_of_a_long_age_trim(void **state) {
    (void)state;
    run_trim(BY_AGE);
}

/* ---------------------------------------------------------------- events across batches */

enum { MAX_EVENTS = 2 * N };

typedef struct events {
    pthread_mutex_t lock;
    char *keys[MAX_EVENTS];
    yyc_removal_cause causes[MAX_EVENTS];
    int n;
} events;

static void on_removed(void *ctx, const char *key, yyc_removal_cause cause) {
    events *e = ctx;
    pthread_mutex_lock(&e->lock);
    if (e->n < MAX_EVENTS) {
        e->keys[e->n] = strdup(key);
        e->causes[e->n++] = cause;
    }
    pthread_mutex_unlock(&e->lock);
}

typedef struct remover {
    yyc_diskcache *dc;
    int calls;
    int remove_rc;
} remover;

/* Between the first two batches: another call removes the newest key (no trim takes it). */
static void remove_between_batches(void *ctx) {
    remover *r = ctx;
    if (r->calls++ != 0) return;
    char key[32];
    key_of(key, sizeof key, N - 1);
    r->remove_rc = yyc_diskcache_remove(r->dc, key);
}

static void a_removal_between_batches_is_reported_once_with_its_own_cause(void **state) {
    (void)state;
    char *dir = test_temp_dir("trim-batches-events");
    yyc_diskcache *dc = filled_cache(dir);
    char key[32];
    tk_exec(dir, "update manifest set last_access_time = 1000 + cast(substr(key, 2) as integer);");
    events e = {.n = 0};
    pthread_mutex_init(&e.lock, NULL);
    yyc_diskcache_set_removal_listener(dc, on_removed, &e);
    remover r = {.dc = dc, .remove_rc = -1};
    yyc__diskcache_set_trim_batch_hook(dc, remove_between_batches, &r);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, KEEP), YYC_OK);
    yyc__diskcache_set_trim_batch_hook(dc, NULL, NULL);
    assert_true(r.calls >= 1);
    assert_int_equal(r.remove_rc, YYC_OK);
    /* Every key that is gone was reported exactly once: the newest as removed, every other as
     * evicted; the keys left were not reported. */
    int evicted = 0, explicit_removals = 0;
    for (int i = 0; i < N; i++) {
        key_of(key, sizeof key, i);
        int seen = 0;
        for (int j = 0; j < e.n; j++) {
            if (strcmp(e.keys[j], key) != 0) continue;
            seen++;
            if (i == N - 1) {
                assert_int_equal(e.causes[j], YYC_REMOVED_EXPLICIT);
                explicit_removals++;
            } else {
                assert_int_equal(e.causes[j], YYC_REMOVED_EVICTED);
                evicted++;
            }
        }
        assert_int_equal(seen, yyc_diskcache_contains(dc, key) ? 0 : 1);
    }
    assert_int_equal(explicit_removals, 1);
    assert_int_equal(evicted, N - 1 - KEEP);
    assert_int_equal(e.n, N - KEEP);
    yyc_diskcache_set_removal_listener(dc, NULL, NULL);
    for (int j = 0; j < e.n; j++) free(e.keys[j]);
    pthread_mutex_destroy(&e.lock);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* Between the first two batches: the cache is closed (by another call of this thread). */
static void close_between_batches(void *ctx) {
    remover *r = ctx;
    if (r->calls++ != 0) return;
    yyc_diskcache_close(r->dc);
}

static void a_close_between_batches_ends_the_trim_with_closed(void **state) {
    (void)state;
    char *dir = test_temp_dir("trim-batches-close");
    yyc_diskcache *dc = filled_cache(dir);
    remover r = {.dc = dc};
    yyc__diskcache_set_trim_batch_hook(dc, close_between_batches, &r);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, KEEP), YYC_ECLOSED);
    assert_int_equal(r.calls, 1);
    int64_t count = 0;
    assert_int_equal(yyc_diskcache_total_count(dc, &count), YYC_ECLOSED);
    yyc_diskcache_release(dc);
    /* The batches done stay done, the rest is there: the folder opens with what was left. */
    assert_int_equal(yyc_diskcache_open(dir, 1024, &dc), YYC_OK);
    assert_int_equal(yyc_diskcache_total_count(dc, &count), YYC_OK);
    assert_true(count > KEEP && count < N);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* Testing (disk_cache.c): stops the access-time timer. */
void yyc__diskcache_testing_pause_access_times(yyc_diskcache *dc);

static void count_hand_overs(void *ctx) { (*(int *)ctx)++; }

/* Many access times noted by reads are written before the trim decides, a chunk (256) per
 * transaction with the lock handed over between chunks; the decision sees all of them. */
static void a_trim_writes_many_noted_access_times_in_chunks_and_decides_on_all(void **state) {
    (void)state;
    char *dir = test_temp_dir("trim-atimes");
    yyc_diskcache *dc = filled_cache(dir);
    yyc__diskcache_testing_pause_access_times(dc);
    char key[32];
    tk_exec(dir, "update manifest set last_access_time = 1000 + cast(substr(key, 2) as integer);");
    /* Reads of the 300 oldest: now the most recent. */
    for (int i = 0; i < 300; i++) {
        key_of(key, sizeof key, i);
        void *v = NULL;
        size_t len = 0;
        assert_int_equal(yyc_diskcache_get(dc, key, &v, &len), YYC_OK);
        yyc_free(v);
    }
    int hand_overs = 0;
    yyc__diskcache_set_trim_batch_hook(dc, count_hand_overs, &hand_overs);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, N - 10), YYC_OK);
    yyc__diskcache_set_trim_batch_hook(dc, NULL, NULL);
    assert_true(hand_overs >= 1); /* (one batch of rows: the hand-over was between chunks) */
    for (int i = 0; i < N; i++) {
        key_of(key, sizeof key, i);
        bool gone = i >= 300 && i < 310;
        assert_int_equal(yyc_diskcache_contains(dc, key), !gone);
    }
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* A job that holds the checkpoint queue until released. */
typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open;
} gate;

static void wait_at_gate(void *arg) {
    gate *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->open) pthread_cond_wait(&g->cond, &g->lock);
    pthread_mutex_unlock(&g->lock);
}

/* The WAL after a long trim is truncated on the checkpoint queue, not by the trimming call:
 * right after the trim the WAL still holds its frames (no other connection reads, so a
 * truncation on the caller's thread would have emptied it), and once the queue is idle it is
 * empty. */
static void a_long_trim_truncates_the_wal_on_the_checkpoint_queue(void **state) {
    (void)state;
    char *dir = test_temp_dir("trim-wal");
    yyc_diskcache *dc = filled_cache(dir);
    char wal[4096];
    tk_join(wal, sizeof wal, dir, "manifest.sqlite-wal");
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    /* (the queue is held up while the trim runs, so that its job cannot race the check) */
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
    assert_int_equal(yyc__worker_async(YYC__QUEUE_CHECKPOINT, &g, wait_at_gate, &g), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, KEEP), YYC_OK);
    struct stat st;
    assert_int_equal(stat(wal, &st), 0);
    assert_true(st.st_size > 0);
    pthread_mutex_lock(&g.lock);
    g.open = true;
    pthread_cond_signal(&g.cond);
    pthread_mutex_unlock(&g.lock);
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    assert_int_equal(stat(wal, &st), 0);
    assert_int_equal(st.st_size, 0);
    release_holding(dc, dir, KEEP);
}

/* The copy of the WAL's last pages that a commit makes when the last background checkpoint
 * left only a few behind (kv_checkpoints.c) fsyncs the manifest twice (15-20 ms on ext4): a
 * trim's commit leaves it to be run without the core's lock, so that another thread's get
 * completes while it runs. The hook runs when the copy begins; a deadline only keeps a held
 * lock from hanging the test. */
typedef struct tail_probe {
    probe p;
    int copies; /* tail copies begun */
} tail_probe;

static void on_tail_copy(void *ctx) {
    tail_probe *t = ctx;
    if (t->copies++ != 0) return;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, get_newest, &t->p), 0);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    t->p.joined = pthread_timedjoin_np(th, NULL, &deadline) == 0;
    if (!t->p.joined) pthread_detach(th);
}

static void a_get_completes_while_a_trim_copies_the_wal_tail(void **state) {
    (void)state;
    char *dir = test_temp_dir("trim-tail");
    /* The checkpoint queue held until the WAL has more than a checkpoint's worth of pages. */
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
    assert_int_equal(yyc__worker_async(YYC__QUEUE_CHECKPOINT, &g, wait_at_gate, &g), YYC_OK);
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 1024, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    char key[32];
    /* (well below the 1,000 pages at which a writer waits for the job) */
    for (int i = 0; tk_file_size(dir, "manifest.sqlite-wal") < 300LL * (4096 + 24); i++) {
        key_of(key, sizeof key, i);
        assert_int_equal(yyc_diskcache_set(dc, key, key, strlen(key), NULL, 0), YYC_OK);
    }
    key_of(key, sizeof key, N - 1);
    assert_int_equal(yyc_diskcache_set(dc, key, key, strlen(key), NULL, 0), YYC_OK);
    /* A reader of this snapshot keeps the WAL from restarting, not the checkpoint from copying
     * all of it: the trim's commit then leaves a few pages beyond what the checkpoint copied. */
    sqlite3 *reader = tk_raw_open(dir);
    tk_raw_exec(reader, "begin;");
    assert_true(tk_raw_int(reader, "select count(*) from manifest;") > 1);
    pthread_mutex_lock(&g.lock);
    g.open = true;
    pthread_cond_signal(&g.cond);
    pthread_mutex_unlock(&g.lock);
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    tail_probe t = {.p = {.dc = dc}};
    yyc__kv_testing_set_tail_copy_hook(on_tail_copy, &t);
    int64_t count = 0;
    assert_int_equal(yyc_diskcache_total_count(dc, &count), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, count - 1), YYC_OK);
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    yyc__kv_testing_set_tail_copy_hook(NULL, NULL);
    tk_raw_exec(reader, "commit;");
    sqlite3_close(reader);
    assert_int_equal(t.copies, 1);
    assert_true(t.p.joined);
    assert_int_equal(t.p.get_rc, YYC_OK);
    assert_true(t.p.value_ok);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* Reads made while a trim runs: counted hand-overs of a trim whose hook reads more keys than an
 * access-time chunk at each of them, against the same trim with a hook that reads nothing. The
 * reads' access times are written after the trim, so both trims hand the lock over as often (a
 * trim that wrote them before every batch handed over once more per batch and, beside a thread
 * reading in a loop, took 40 s for 1,000 evictions). */
enum { READ_N = 8000, READ_KEEP = 4000, READS_PER_HANDOVER = 300 };

typedef struct reading_probe {
    yyc_diskcache *dc;
    bool read;
    int handovers;
    int next; /* the next survivor to read (fresh keys each time: a key's access time is noted
               * once a second) */
} reading_probe;

static void read_survivors(void *ctx) {
    reading_probe *p = ctx;
    p->handovers++;
    for (int i = 0; p->read && i < READS_PER_HANDOVER; i++) {
        char key[32];
        /* the newest keys: the trim keeps them */
        key_of(key, sizeof key, READ_N - 1 - p->next++ % READ_KEEP);
        void *v = NULL;
        size_t len = 0;
        assert_int_equal(yyc_diskcache_get(p->dc, key, &v, &len), YYC_OK);
        yyc_free(v);
    }
}

static int handovers_of_a_trim(bool read) {
    char *dir = test_temp_dir("trim-reads");
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, 1024, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    yyc_diskcache_set_write_mode(dc, YYC_WRITE_DEFERRED, 60.0);
    char key[32];
    for (int i = 0; i < READ_N; i++) {
        key_of(key, sizeof key, i);
        assert_int_equal(yyc_diskcache_set(dc, key, key, strlen(key), NULL, 0), YYC_OK);
    }
    assert_int_equal(yyc_diskcache_flush(dc), YYC_OK);
    yyc_diskcache_set_write_mode(dc, YYC_WRITE_IMMEDIATE, 0);
    tk_exec(dir, "update manifest set last_access_time = 1000 + cast(substr(key, 2) as integer);");
    reading_probe p = {.dc = dc, .read = read};
    yyc__diskcache_set_trim_batch_hook(dc, read_survivors, &p);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, READ_KEEP), YYC_OK);
    yyc__diskcache_set_trim_batch_hook(dc, NULL, NULL);
    release_holding(dc, dir, READ_KEEP);
    return p.handovers;
}

static void reads_made_while_a_trim_runs_do_not_lengthen_it(void **state) {
    (void)state;
    int quiet = handovers_of_a_trim(false);
    assert_true(quiet >= (READ_N - READ_KEEP) / YYC__KV_LRU_BATCH - 1);
    assert_int_equal(handovers_of_a_trim(true), quiet);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_get_and_a_set_complete_between_batches_of_a_long_count_trim),
    cmocka_unit_test(a_get_and_a_set_complete_between_batches_of_a_long_cost_trim),
    cmocka_unit_test(a_get_and_a_set_complete_between_batches_of_a_long_age_trim),
    cmocka_unit_test(a_removal_between_batches_is_reported_once_with_its_own_cause),
    cmocka_unit_test(a_close_between_batches_ends_the_trim_with_closed),
    cmocka_unit_test(a_long_trim_truncates_the_wal_on_the_checkpoint_queue),
    cmocka_unit_test(a_trim_writes_many_noted_access_times_in_chunks_and_decides_on_all),
    cmocka_unit_test(a_get_completes_while_a_trim_copies_the_wal_tail),
    cmocka_unit_test(reads_made_while_a_trim_runs_do_not_lengthen_it),
};

YYC_TEST_MAIN(tests)
