/*
 * test_group_commit.c - concurrent sets of one disk cache share commits (issue 14, item 4),
 * with real threads, and each still gets its own result.
 *
 * The sharing is made certain, not left to timing: a step filter (fault_inject.h) holds the
 * first writer inside its row write, with the core's lock held, until every other writer thread
 * is asleep waiting for that lock (its /proc state); then it lets go. A group commit writes all
 * the waiting writers' rows in one transaction; without it each waiter commits its own. The
 * filter counts the transactions the row writes went to: an upsert stepped in autocommit mode
 * is one transaction, an upsert inside a transaction is counted by the COMMIT that ends it.
 *
 * A "poison" key's row write fails in the filter (as a full disk would fail it), and in one
 * case SQLite's whole transaction is rolled back first (as SQLite does after some I/O errors):
 * only that writer fails; every other set returns YYC_OK and reads back, also after a reopen,
 * and data/ holds exactly the files the rows name (replaced files deleted after the commit,
 * the poisoned writer's file not left behind); and the others still share one commit (the
 * shared transaction is tried again without the poisoned write, not each write alone).
 */
#include "test_kv_support.h"

#include "fault_inject.h"
#include "kv/kv_private.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#define THRESHOLD 1024
#define WRITERS 6 /* besides the gate writer */

/* ---------------------------------------------------------------- the step filter */

typedef struct counters {
    atomic_int gate_armed;   /* the gate key's row write waits for the other writers */
    atomic_int gate_entered; /* it is waiting now (or has waited) */
    atomic_int poison;       /* 0: none; 1: a poison key's row write fails; 2: after a rollback */
    atomic_long row_writes, autocommit_rows, commits;
    atomic_int ready; /* writers about to call set */
    pid_t tids[WRITERS];
    int nwriters;
} counters;

static counters C;

/* Whether thread tid of this process is asleep (S), i.e. blocked on the core's lock. */
static bool thread_sleeping(pid_t tid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'S';
}

static bool all_writers_waiting(void) {
    if (atomic_load(&C.ready) < C.nwriters) return false;
    for (int i = 0; i < C.nwriters; i++)
        if (!thread_sleeping(C.tids[i])) return false;
    return true;
}

static int filter(void *ctx, struct sqlite3_stmt *s) {
    (void)ctx;
    const char *sql = sqlite3_sql(s);
    if (!sql) return 0;
    if (strcmp(sql, "commit;") == 0) atomic_fetch_add(&C.commits, 1);
    if (strncmp(sql, "insert or replace into manifest", 31) != 0) return 0;
    char *x = sqlite3_expanded_sql(s);
    bool gate = x && strstr(x, "'gate'");
    bool poison = x && strstr(x, "'poison'");
    sqlite3_free(x);
    if (gate && atomic_exchange(&C.gate_armed, 0)) {
        atomic_store(&C.gate_entered, 1);
        /* (twice in a row: a writer seen asleep is blocked, not just descheduled) */
        bool all = WAIT_UNTIL(all_writers_waiting() && (usleep(2000), all_writers_waiting()), 30.0);
        if (!all) fprintf(stderr, "filter: the writers did not all block (continuing)\n");
    }
    if (poison && atomic_load(&C.poison)) {
        if (atomic_load(&C.poison) == 2) {
            sqlite3 *db = sqlite3_db_handle(s);
            if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "rollback;", NULL, NULL, NULL);
        }
        return SQLITE_FULL;
    }
    atomic_fetch_add(&C.row_writes, 1);
    if (sqlite3_get_autocommit(sqlite3_db_handle(s))) atomic_fetch_add(&C.autocommit_rows, 1);
    return 0;
}

/* ---------------------------------------------------------------- writers */

typedef struct writer {
    yyc_diskcache *dc;
    int index; /* -1: the gate writer */
    char key[32];
    size_t len;
    unsigned seed;
    double ttl; /* > 0: set with this time to live */
    int status;
    pthread_t thread;
} writer;

static void fill(unsigned char *p, size_t n, unsigned seed) {
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (unsigned char)x;
    }
}

static void *writer_main(void *arg) {
    writer *w = arg;
    unsigned char *v = malloc(w->len ? w->len : 1);
    assert_non_null(v);
    fill(v, w->len, w->seed);
    if (w->index >= 0) {
        C.tids[w->index] = (pid_t)syscall(SYS_gettid);
        atomic_fetch_add(&C.ready, 1);
    }
    w->status = w->ttl > 0 ? yyc_diskcache_set_with_ttl(w->dc, w->key, v, w->len, &w->seed,
                                                        sizeof w->seed, w->ttl)
                           : yyc_diskcache_set(w->dc, w->key, v, w->len, &w->seed, sizeof w->seed);
    free(v);
    return NULL;
}

static void expect_bytes(yyc_diskcache *dc, const char *key, size_t len, unsigned seed) {
    void *got = NULL;
    size_t got_len = 0;
    int rc = yyc_diskcache_get(dc, key, &got, &got_len);
    if (rc != YYC_OK) fail_msg("%s: get returns %s", key, yyc_status_name(rc));
    unsigned char *want = malloc(len ? len : 1);
    assert_non_null(want);
    fill(want, len, seed);
    if (got_len != len || memcmp(got, want, len) != 0)
        fail_msg("%s: reads %zu other bytes (expected %zu)", key, got_len, len);
    free(want);
    yyc_free(got);
}

/* data/ holds exactly the files the rows name. */
static void expect_no_stray_files(const char *dir) {
    int64_t named = tk_int(dir, "select count(*) from manifest where filename is not null and "
                                "filename != '';");
    int files = tk_count_entries(dir, "data");
    if (files != (int)named)
        fail_msg("data/ holds %d files but the rows name %lld", files, (long long)named);
}

/* The gated run: the gate writer holds the lock inside its row write until the WRITERS others
 * wait; writer i writes key w<i> (large when i is odd: a file, replacing a file written before)
 * or, for i == poison_index, the key "poison". */
static void gated_run(const char *dir, int poison_mode, int poison_index) {
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, THRESHOLD, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    writer ws[WRITERS + 1];
    memset(ws, 0, sizeof ws);
    for (int i = 0; i < WRITERS; i++) { /* the values being replaced */
        writer *w = &ws[i + 1];
        *w = (writer){.dc = dc, .index = i, .len = i % 2 ? 3000 : 100, .seed = 100u + (unsigned)i};
        snprintf(w->key, sizeof w->key, "w%d", i);
        writer_main(w);
        assert_int_equal(w->status, YYC_OK);
    }
    memset(&C, 0, sizeof C);
    C.nwriters = WRITERS;
    atomic_store(&C.poison, poison_mode);
    atomic_store(&C.gate_armed, 1);
    fi_set_step_filter(filter, NULL);

    ws[0] = (writer){.dc = dc, .index = -1, .len = 100, .seed = 7};
    snprintf(ws[0].key, sizeof ws[0].key, "gate");
    assert_int_equal(pthread_create(&ws[0].thread, NULL, writer_main, &ws[0]), 0);
    assert_true(WAIT_UNTIL(atomic_load(&C.gate_entered), 30.0));
    for (int i = 0; i < WRITERS; i++) {
        writer *w = &ws[i + 1];
        *w = (writer){.dc = dc, .index = i, .len = i % 2 ? 5000 : 200, .seed = 200u + (unsigned)i};
        snprintf(w->key, sizeof w->key, i == poison_index ? "poison" : "w%d", i);
        assert_int_equal(pthread_create(&w->thread, NULL, writer_main, w), 0);
    }
    for (int i = 0; i <= WRITERS; i++) pthread_join(ws[i].thread, NULL);
    fi_set_step_filter(NULL, NULL);

    long transactions = atomic_load(&C.autocommit_rows) + atomic_load(&C.commits);
    fprintf(stderr, "%ld row writes in %ld transactions (%ld autocommit, %ld commits)\n",
            atomic_load(&C.row_writes), transactions, atomic_load(&C.autocommit_rows),
            atomic_load(&C.commits));
    for (int i = 0; i <= WRITERS; i++) {
        writer *w = &ws[i];
        bool poisoned = w->index >= 0 && w->index == poison_index;
        if (poisoned && w->status == YYC_OK) fail_msg("the poisoned write returned YYC_OK");
        if (!poisoned && w->status != YYC_OK)
            fail_msg("%s failed (%s) although only another writer's row failed", w->key,
                     yyc_status_name(w->status));
    }
    /* The writers that waited shared a commit: the gate's own, then one for all of them, also
     * when one of them failed (and SQLite rolled their transaction back): the others are tried
     * together again without it (a rolled-back transaction commits nothing: not counted). */
    if (transactions > 2)
        fail_msg("%d writes that waited together took %ld transactions: no commit was shared",
                 WRITERS + 1, transactions);
    /* The totals the core carries (O(1), kv_totals.c) count exactly the committed rows: not the
     * rolled-back transaction's, not the failed write's. */
    int64_t count = -1, cost = -1, scan_count = -2, scan_cost = -2;
    assert_int_equal(yyc_diskcache_total_count(dc, &count), YYC_OK);
    assert_int_equal(yyc_diskcache_total_cost(dc, &cost), YYC_OK);
    tk_scan_totals(dir, &scan_count, &scan_cost);
    assert_int_equal(count, scan_count);
    assert_int_equal(cost, scan_cost);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i <= WRITERS; i++) {
            writer *w = &ws[i];
            if (w->index >= 0 && w->index == poison_index) {
                void *got = NULL;
                size_t n = 0;
                assert_int_equal(yyc_diskcache_get(dc, "poison", &got, &n), YYC_NOTFOUND);
                /* its key's previous value (w<i>) is untouched */
                char key[32];
                snprintf(key, sizeof key, "w%d", w->index);
                expect_bytes(dc, key, w->index % 2 ? 3000 : 100, 100u + (unsigned)w->index);
            } else {
                expect_bytes(dc, w->key, w->len, w->seed);
            }
        }
        expect_no_stray_files(dir);
        yyc_diskcache_release(dc); /* and again from a fresh core: it was committed */
        dc = NULL;
        if (pass == 0) {
            assert_int_equal(yyc_diskcache_open(dir, THRESHOLD, &dc), YYC_OK);
            yyc_diskcache_set_auto_trim_interval(dc, 0);
        }
    }
}

static void sets_that_wait_for_a_commit_share_the_next_one(void **state) {
    (void)state;
    char *dir = test_temp_dir("group-commit");
    gated_run(dir, 0, -1);
    test_rm_rf(dir);
    free(dir);
}

static void a_failing_row_write_fails_only_its_own_set(void **state) {
    (void)state;
    char *dir = test_temp_dir("group-poison");
    gated_run(dir, 1, 3); /* (a file value: its placed file must go too) */
    test_rm_rf(dir);
    free(dir);
}

static void a_rolled_back_group_commits_its_other_sets_together(void **state) {
    (void)state;
    char *dir = test_temp_dir("group-rollback");
    gated_run(dir, 2, 2);
    test_rm_rf(dir);
    free(dir);
}

/* ---------------------------------------------------------------- ttl, events, statistics */

typedef struct replaced_log {
    pthread_mutex_t lock;
    int replaced[WRITERS + 1]; /* per writer key (w<i>; [WRITERS]: the gate) */
    int other;                 /* any other event */
} replaced_log;

static void count_replaced(void *ctx, const char *key, yyc_removal_cause cause) {
    replaced_log *log = ctx;
    pthread_mutex_lock(&log->lock);
    int i = -1;
    if (cause == YYC_REMOVED_REPLACED && strcmp(key, "gate") == 0) i = WRITERS;
    else if (cause == YYC_REMOVED_REPLACED && key[0] == 'w') i = atoi(key + 1);
    if (i >= 0 && i <= WRITERS) log->replaced[i]++;
    else log->other++;
    pthread_mutex_unlock(&log->lock);
}

/* The gated run again, with times to live, a listener and statistics: writer i sets w<i>, with
 * a time to live of 60 s when i is even; the odd keys had a value before (replaced), the even
 * ones did not. One shared transaction holds them all, yet each set keeps its own time to
 * live, reports its own replacement once (and only a set that replaced a row reports one), and
 * counts one insertion. */
static void group_committed_sets_keep_their_own_time_to_live_events_and_insertions(void **state) {
    (void)state;
    char *dir = test_temp_dir("group-ttl");
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, THRESHOLD, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    replaced_log log = {.lock = PTHREAD_MUTEX_INITIALIZER};
    yyc_diskcache_set_removal_listener(dc, count_replaced, &log);
    writer ws[WRITERS + 1];
    memset(ws, 0, sizeof ws);
    for (int i = 1; i < WRITERS; i += 2) { /* the values being replaced */
        writer *w = &ws[i + 1];
        *w = (writer){
            .dc = dc, .index = i, .len = i % 4 == 1 ? 3000 : 100, .seed = 100u + (unsigned)i};
        snprintf(w->key, sizeof w->key, "w%d", i);
        writer_main(w);
        assert_int_equal(w->status, YYC_OK);
    }
    assert_int_equal(log.other, 0);
    yyc_diskcache_reset_statistics(dc);
    memset(&C, 0, sizeof C);
    C.nwriters = WRITERS;
    atomic_store(&C.gate_armed, 1);
    fi_set_step_filter(filter, NULL);
    ws[0] = (writer){.dc = dc, .index = -1, .len = 100, .seed = 7};
    snprintf(ws[0].key, sizeof ws[0].key, "gate");
    assert_int_equal(pthread_create(&ws[0].thread, NULL, writer_main, &ws[0]), 0);
    assert_true(WAIT_UNTIL(atomic_load(&C.gate_entered), 30.0));
    for (int i = 0; i < WRITERS; i++) {
        writer *w = &ws[i + 1];
        *w = (writer){.dc = dc,
                      .index = i,
                      .len = i % 4 == 0 ? 5000 : 200,
                      .seed = 200u + (unsigned)i,
                      .ttl = i % 2 == 0 ? 60 : 0};
        snprintf(w->key, sizeof w->key, "w%d", i);
        assert_int_equal(pthread_create(&w->thread, NULL, writer_main, w), 0);
    }
    for (int i = 0; i <= WRITERS; i++) pthread_join(ws[i].thread, NULL);
    fi_set_step_filter(NULL, NULL);
    for (int i = 0; i <= WRITERS; i++) assert_int_equal(ws[i].status, YYC_OK);
    long transactions = atomic_load(&C.autocommit_rows) + atomic_load(&C.commits);
    if (transactions > 2) fail_msg("no commit was shared (%ld transactions)", transactions);

    pthread_mutex_lock(&log.lock);
    for (int i = 0; i < WRITERS; i++)
        if (log.replaced[i] != i % 2)
            fail_msg("w%d: %d replaced events (expected %d)", i, log.replaced[i], i % 2);
    assert_int_equal(log.replaced[WRITERS], 0); /* the gate key was new */
    assert_int_equal(log.other, 0);
    pthread_mutex_unlock(&log.lock);
    yyc_cache_statistics s;
    assert_int_equal(yyc_diskcache_statistics(dc, &s), YYC_OK);
    assert_int_equal(s.insertions, WRITERS + 1);
    assert_int_equal(s.removals[YYC_REMOVED_REPLACED], WRITERS / 2);

    for (int i = 0; i < WRITERS; i++) {
        double ttl = 0;
        assert_int_equal(yyc_diskcache_time_to_live(dc, ws[i + 1].key, &ttl), YYC_OK);
        if (i % 2 == 0 ? !(ttl > 0 && ttl <= 60) : ttl != INFINITY)
            fail_msg("w%d: time to live %g after a group commit", i, ttl);
    }
    yyc__kv_testing_advance_clock(61 * 1000);
    for (int i = 0; i <= WRITERS; i++) {
        writer *w = &ws[i];
        bool expires = w->ttl > 0;
        void *got = NULL;
        size_t n = 0;
        int rc = yyc_diskcache_get(dc, w->key, &got, &n);
        yyc_free(got);
        if (rc != (expires ? YYC_NOTFOUND : YYC_OK))
            fail_msg("%s: get returns %s 61 s later (time to live %g)", w->key, yyc_status_name(rc),
                     w->ttl);
    }
    yyc__kv_testing_advance_clock(-61 * 1000);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* ---------------------------------------------------------------- many writers */

#define MANY_THREADS 8
#define MANY_SETS 150

typedef struct many_writer {
    yyc_diskcache *dc;
    int t;
    int failures;
    pthread_t thread;
} many_writer;

/* Value i of thread t's key k: small or large, content from (t, k, i). */
static size_t many_len(int i) { return i % 3 == 0 ? 2000 + (size_t)i : 50 + (size_t)i; }
static unsigned many_seed(int t, int k, int i) { return (unsigned)(t * 100000 + k * 1000 + i); }

static void *many_main(void *arg) {
    many_writer *m = arg;
    unsigned char buf[4096];
    for (int i = 0; i < MANY_SETS; i++) {
        int k = i % 10;
        char key[32];
        snprintf(key, sizeof key, "t%d-k%d", m->t, k);
        size_t len = many_len(i);
        unsigned seed = many_seed(m->t, k, i);
        fill(buf, len, seed);
        if (yyc_diskcache_set(m->dc, key, buf, len, &seed, sizeof seed) != YYC_OK) m->failures++;
    }
    return NULL;
}

static void many_writers_all_read_back_their_last_value(void **state) {
    (void)state;
    char *dir = test_temp_dir("group-many");
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, THRESHOLD, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    many_writer ms[MANY_THREADS];
    for (int t = 0; t < MANY_THREADS; t++) {
        ms[t] = (many_writer){.dc = dc, .t = t};
        assert_int_equal(pthread_create(&ms[t].thread, NULL, many_main, &ms[t]), 0);
    }
    for (int t = 0; t < MANY_THREADS; t++) pthread_join(ms[t].thread, NULL);
    for (int pass = 0; pass < 2; pass++) {
        for (int t = 0; t < MANY_THREADS; t++) {
            assert_int_equal(ms[t].failures, 0);
            for (int k = 0; k < 10; k++) {
                int last = MANY_SETS - 10 + k; /* the last i with i % 10 == k */
                char key[32];
                snprintf(key, sizeof key, "t%d-k%d", t, k);
                expect_bytes(dc, key, many_len(last), many_seed(t, k, last));
            }
        }
        int64_t count = 0;
        assert_int_equal(yyc_diskcache_total_count(dc, &count), YYC_OK);
        assert_int_equal(count, MANY_THREADS * 10);
        yyc_diskcache_release(dc);
        dc = NULL;
        expect_no_stray_files(dir);
        if (pass == 0) assert_int_equal(yyc_diskcache_open(dir, THRESHOLD, &dc), YYC_OK);
    }
    test_rm_rf(dir);
    free(dir);
}

/* ---------------------------------------------------------------- returning early */

/* A set returns as soon as the transaction that holds its write has committed, even while its
 * committer goes on committing later sets (under the core's lock): it waits for its own commit,
 * not for that lock. A commit takes at most CHUNK sets per transaction (disk_cache_commits.c), so
 * with EARLY + 1 sets waiting together, the oldest CHUNK commit first and the last one ("late")
 * commits in a second transaction. The first transaction's first row write waits until every
 * other set is asleep again (so that their commit must wake them); the late set's row write
 * waits until the first transaction's sets have returned: all but the committer's own, which is
 * busy committing. */
#define CHUNK 64
#define EARLY (CHUNK + 1)

static struct {
    atomic_int gate_armed, gate_entered, first_armed, late_armed;
    atomic_int ready;          /* threads that recorded their tid */
    atomic_int returned;       /* early sets that returned */
    atomic_int seen_from_late; /* early sets the late row write saw returned */
    pid_t tids[EARLY + 1];
} R;

typedef struct early_writer {
    yyc_diskcache *dc;
    char key[16];
    int slot;
    bool early;
    int status;
    pthread_t thread;
} early_writer;

/* Whether the first n writers, except the calling thread, are asleep. */
static bool others_sleeping(int n) {
    if (atomic_load(&R.ready) < n) return false;
    pid_t self = (pid_t)syscall(SYS_gettid);
    for (int i = 0; i < n; i++)
        if (R.tids[i] != self && !thread_sleeping(R.tids[i])) return false;
    return true;
}

static bool all_asleep(int n) {
    /* (twice in a row: a thread seen asleep is blocked, not just descheduled) */
    return others_sleeping(n) && (usleep(2000), others_sleeping(n));
}

static int release_filter(void *ctx, struct sqlite3_stmt *s) {
    (void)ctx;
    const char *sql = sqlite3_sql(s);
    if (!sql || strncmp(sql, "insert or replace into manifest", 31) != 0) return 0;
    char *x = sqlite3_expanded_sql(s);
    bool gate = x && strstr(x, "'gate'");
    bool late = x && strstr(x, "'late'");
    bool first = x && strstr(x, "'e0'");
    sqlite3_free(x);
    if (gate && atomic_exchange(&R.gate_armed, 0)) {
        atomic_store(&R.gate_entered, 1);
        if (!WAIT_UNTIL(all_asleep(EARLY + 1), 30.0))
            fprintf(stderr, "filter: the writers did not all block (continuing)\n");
    }
    if (first && atomic_exchange(&R.first_armed, 0) && !WAIT_UNTIL(all_asleep(EARLY + 1), 30.0))
        fprintf(stderr, "filter: the waiting writers did not all sleep (continuing)\n");
    if (late && atomic_exchange(&R.late_armed, 0)) {
        WAIT_UNTIL(atomic_load(&R.returned) >= CHUNK - 1, 10.0);
        atomic_store(&R.seen_from_late, atomic_load(&R.returned));
    }
    return 0;
}

static void *early_main(void *arg) {
    early_writer *w = arg;
    unsigned char v[100];
    fill(v, sizeof v, (unsigned)w->slot + 1);
    if (w->slot >= 0) {
        R.tids[w->slot] = (pid_t)syscall(SYS_gettid);
        atomic_fetch_add(&R.ready, 1);
    }
    w->status = yyc_diskcache_set(w->dc, w->key, v, sizeof v, NULL, 0);
    if (w->early) atomic_fetch_add(&R.returned, 1);
    return NULL;
}

static void a_set_returns_once_its_commit_is_done_while_later_sets_still_commit(void **state) {
    (void)state;
    char *dir = test_temp_dir("group-early");
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, THRESHOLD, &dc), YYC_OK);
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    memset(&R, 0, sizeof R);
    atomic_store(&R.gate_armed, 1);
    atomic_store(&R.first_armed, 1);
    atomic_store(&R.late_armed, 1);
    fi_set_step_filter(release_filter, NULL);

    static early_writer ws[EARLY + 2];
    memset(ws, 0, sizeof ws);
    early_writer *gate = &ws[EARLY + 1];
    *gate = (early_writer){.dc = dc, .key = "gate", .slot = -1};
    assert_int_equal(pthread_create(&gate->thread, NULL, early_main, gate), 0);
    assert_true(WAIT_UNTIL(atomic_load(&R.gate_entered), 30.0));
    for (int i = 0; i < EARLY; i++) { /* pushed first: the oldest */
        ws[i] = (early_writer){.dc = dc, .slot = i, .early = true};
        snprintf(ws[i].key, sizeof ws[i].key, "e%d", i);
        assert_int_equal(pthread_create(&ws[i].thread, NULL, early_main, &ws[i]), 0);
    }
    assert_true(WAIT_UNTIL(all_asleep(EARLY), 30.0));
    ws[EARLY] = (early_writer){.dc = dc, .key = "late", .slot = EARLY}; /* pushed last */
    assert_int_equal(pthread_create(&ws[EARLY].thread, NULL, early_main, &ws[EARLY]), 0);
    for (int i = 0; i < EARLY + 2; i++) pthread_join(ws[i].thread, NULL);
    fi_set_step_filter(NULL, NULL);

    for (int i = 0; i < EARLY + 2; i++) assert_int_equal(ws[i].status, YYC_OK);
    if (atomic_load(&R.late_armed)) fail_msg("the late set's row write was never seen");
    if (atomic_load(&R.seen_from_late) < CHUNK - 1)
        fail_msg("only %d of the %d sets of the first transaction returned while the second "
                 "one was being written: they waited for more than their own commit",
                 atomic_load(&R.seen_from_late), CHUNK - 1);
    for (int i = 0; i < EARLY + 2; i++) {
        void *got = NULL;
        size_t n = 0;
        assert_int_equal(yyc_diskcache_get(dc, ws[i].key, &got, &n), YYC_OK);
        unsigned char v[100];
        fill(v, sizeof v, (unsigned)ws[i].slot + 1);
        assert_int_equal(n, sizeof v);
        assert_memory_equal(got, v, sizeof v);
        free(got);
    }
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sets_that_wait_for_a_commit_share_the_next_one),
        cmocka_unit_test(a_failing_row_write_fails_only_its_own_set),
        cmocka_unit_test(a_rolled_back_group_commits_its_other_sets_together),
        cmocka_unit_test(group_committed_sets_keep_their_own_time_to_live_events_and_insertions),
        cmocka_unit_test(many_writers_all_read_back_their_last_value),
        cmocka_unit_test(a_set_returns_once_its_commit_is_done_while_later_sets_still_commit),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
