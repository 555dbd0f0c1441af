/*
 * test_hostile_rows.c - manifest rows no library writes, a folder lock held by another process,
 * and a row refreshed by another connection during a trim (issue 11, items 4, 8, 10 and the
 * smaller contract fixes).
 *
 * Hostile rows are written with a raw SQLite connection: keys that are NULL, BLOBs or numbers,
 * sizes that are NULL, text, negative, or so large that two of them sum past INT64_MAX. Every
 * trim must terminate (each case runs under alarm(), so a hang fails it) and remove such rows
 * or leave them by rule, never spin on them. The folder lock is held by a child process; the
 * race is an uncommitted refresh of another connection that commits while a trim runs.
 */
#include "reliability_support.h"
#include "test_kv_support.h"

#include "kv/kv_private.h"

#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <sys/file.h>

void yyc__diskcache_set_busy_timeout(yyc_diskcache *dc, int ms);

/* ---------------------------------------------------------------- helpers */

typedef struct fixture {
    char *dir;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->dir = test_temp_dir("hostile-rows");
    *state = f;
    alarm(120); /* a hang fails the case instead of stalling the suite */
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    alarm(0);
    test_rm_rf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static yyc_diskcache *open_dc(const char *dir) {
    yyc_diskcache *dc = NULL;
    int s = yyc_diskcache_open(dir, 1024, &dc);
    if (s != YYC_OK) fail_msg("open: %s", rel_last_error());
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    return dc;
}

static yyc_kv *open_kv(const char *dir) {
    yyc_kv *kv = NULL;
    int s = yyc_kv_open(dir, YYC_KV_MIXED, &kv);
    if (s != YYC_OK) fail_msg("open: %s", rel_last_error());
    return kv;
}

static int64_t dc_count(yyc_diskcache *dc) {
    int64_t n = -1;
    assert_int_equal(yyc_diskcache_total_count(dc, &n), YYC_OK);
    return n;
}

/* Rows with a NULL key, BLOB keys and a number as key (sizes 1000, access times 1..5: older
 * than anything the library writes), two of them naming data files that exist. */
static void add_hostile_keys(const char *dir) {
    char p[4096];
    rel_write_file(tk_join(p, sizeof p, dir, "data/hostile-file-1"), "0123456789", 10);
    rel_write_file(tk_join(p, sizeof p, dir, "data/hostile-file-2"), "0123456789", 10);
    tk_exec(dir, "insert into manifest " TK_COLS " values "
                 "(NULL, NULL, 1000, x'00', 1, 1, NULL),"
                 "(x'6b6579', NULL, 1000, x'01', 1, 2, NULL),"
                 "(x'00ff00', 'hostile-file-1', 10, NULL, 1, 3, NULL),"
                 "(42, 'hostile-file-2', 10, NULL, 1, 4, NULL),"
                 "(x'', NULL, 1000, x'02', 1, 5, NULL);");
}

static void add_good_rows(yyc_diskcache *dc, int n) {
    for (int i = 0; i < n; i++) {
        char key[32], value[64];
        snprintf(key, sizeof key, "good-%d", i);
        memset(value, 'a' + i % 26, sizeof value);
        assert_int_equal(yyc_diskcache_set(dc, key, value, sizeof value, NULL, 0), YYC_OK);
    }
}

/* ---------------------------------------------------------------- hostile keys */

static void trim_to_cost_removes_rows_whose_key_is_null_or_a_blob(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_dc(f->dir);
    add_good_rows(dc, 3);
    add_hostile_keys(f->dir);
    assert_int_equal(dc_count(dc), 8);
    /* Everything costs more than 1 byte: the trim removes every row, hostile ones first. */
    assert_int_equal(yyc_diskcache_trim_to_cost(dc, 1), YYC_OK);
    assert_int_equal(dc_count(dc), 0);
    assert_int_equal(tk_count_entries(f->dir, "data"), 0);
    yyc_diskcache_release(dc);
}

static void trim_to_count_removes_rows_whose_key_is_null_or_a_blob(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_dc(f->dir);
    add_good_rows(dc, 3);
    add_hostile_keys(f->dir);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, 3), YYC_OK);
    assert_int_equal(dc_count(dc), 3);
    /* The five hostile rows were the least recently used. */
    for (int i = 0; i < 3; i++) {
        char key[32];
        snprintf(key, sizeof key, "good-%d", i);
        assert_true(yyc_diskcache_contains(dc, key));
    }
    assert_int_equal(tk_count_entries(f->dir, "data"), 0);
    yyc_diskcache_release(dc);
}

typedef struct progress_log {
    int calls;
    int64_t last_removed, last_total;
} progress_log;

static void on_progress(void *ctx, int64_t removed, int64_t total) {
    progress_log *p = ctx;
    p->calls++;
    p->last_removed = removed;
    p->last_total = total;
}

static void remove_all_with_progress_removes_rows_whose_key_is_null_or_a_blob(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_dc(f->dir);
    add_good_rows(dc, 40); /* more than one batch of 32 */
    add_hostile_keys(f->dir);
    progress_log p = {0};
    assert_int_equal(yyc_diskcache_remove_all_progress(dc, on_progress, &p), YYC_OK);
    assert_int_equal(dc_count(dc), 0);
    assert_int_equal(p.last_removed, 45);
    assert_int_equal(p.last_total, 45);
    yyc_diskcache_release(dc);

    /* The storage's own slow remove-all too. */
    yyc_kv *kv = open_kv(f->dir);
    add_hostile_keys(f->dir);
    p = (progress_log){0};
    assert_int_equal(yyc_kv_remove_all_progress(kv, on_progress, &p), YYC_OK);
    int64_t n = -1;
    assert_int_equal(yyc_kv_count(kv, &n), YYC_OK);
    assert_int_equal(n, 0);
    assert_int_equal(p.last_removed, 5);
    yyc_kv_close(kv);
}

static void auto_trim_with_hostile_keys_finishes_and_frees_the_worker(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_dc(f->dir);
    add_good_rows(dc, 2);
    add_hostile_keys(f->dir);
    yyc_diskcache_set_cost_limit(dc, 1);
    yyc_diskcache_set_auto_trim_interval(dc, 0.01);
    /* The worker thread trims the cache down to nothing and stays usable: a job queued after
     * the trims runs (with the old bug the trim spun forever holding the worker). */
    assert_true(WAIT_UNTIL(dc_count(dc) == 0, 60));
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    yyc_memcache *mc = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &mc), YYC_OK);
    yyc_memcache_free(mc); /* waits for the worker */
    yyc_diskcache_release(dc);
}

static void remove_keys_and_exact_key_remove_still_work_next_to_hostile_rows(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_dc(f->dir);
    add_good_rows(dc, 2);
    add_hostile_keys(f->dir);
    assert_int_equal(yyc_diskcache_remove(dc, "good-0"), YYC_OK);
    assert_false(yyc_diskcache_contains(dc, "good-0"));
    assert_true(yyc_diskcache_contains(dc, "good-1"));
    /* "key" as text is not the BLOB x'6b6579': removing it leaves the BLOB row. */
    assert_int_equal(yyc_diskcache_remove(dc, "key"), YYC_OK);
    assert_int_equal(dc_count(dc), 6);
    yyc_diskcache_release(dc);
}

/* ---------------------------------------------------------------- hostile sizes */

static void sizes_summing_past_int64_max_saturate_and_cost_trims_work(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_dc(f->dir);
    add_good_rows(dc, 2);
    tk_exec(f->dir, "insert into manifest " TK_COLS " values "
                    "('huge-1', NULL, 9223372036854775807, x'00', 1, 1, NULL),"
                    "('huge-2', NULL, 9223372036854775000, x'00', 1, 2, NULL);");
    int64_t cost = 0;
    assert_int_equal(yyc_diskcache_total_cost(dc, &cost), YYC_OK);
    assert_true(cost == INT64_MAX);
    assert_int_equal(yyc_diskcache_trim_to_cost(dc, 1000), YYC_OK);
    assert_int_equal(yyc_diskcache_total_cost(dc, &cost), YYC_OK);
    assert_int_equal(cost, 128);
    assert_false(yyc_diskcache_contains(dc, "huge-1"));
    assert_false(yyc_diskcache_contains(dc, "huge-2"));
    assert_true(yyc_diskcache_contains(dc, "good-0"));
    yyc_diskcache_release(dc);
}

static void null_text_negative_and_real_sizes_cost_nothing_and_never_stall_a_trim(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_dc(f->dir);
    tk_exec(f->dir, "insert into manifest " TK_COLS " values "
                    "('null-size', NULL, NULL, x'00', 1, 1, NULL),"
                    "('text-size', NULL, 'many', x'00', 1, 2, NULL),"
                    "('negative-size', NULL, -9223372036854775807, x'00', 1, 3, NULL),"
                    "('real-size', NULL, 1e300, x'00', 1, 4, NULL),"
                    "('blob-size', NULL, x'ffff', x'00', 1, 5, NULL);");
    add_good_rows(dc, 2);
    int64_t cost = -1;
    assert_int_equal(yyc_diskcache_total_cost(dc, &cost), YYC_OK);
    assert_int_equal(cost, 128); /* only the two good rows cost something */
    /* A trim by cost removes in LRU order until the cost fits: the free rows go on the way. */
    assert_int_equal(yyc_diskcache_trim_to_cost(dc, 64), YYC_OK);
    assert_int_equal(yyc_diskcache_total_cost(dc, &cost), YYC_OK);
    assert_int_equal(cost, 64);
    assert_int_equal(dc_count(dc), 1);
    assert_true(yyc_diskcache_contains(dc, "good-1"));
    /* Trims by size and age terminate on such rows too. */
    tk_exec(f->dir, "insert into manifest " TK_COLS " values "
                    "('text-size', NULL, 'many', x'00', 1, 1, NULL),"
                    "('negative-size', NULL, -5, x'00', 1, 1, NULL),"
                    "(NULL, NULL, NULL, x'00', NULL, NULL, NULL);");
    yyc_kv *kv = open_kv(f->dir);
    /* 'many' is text, larger than any number in SQLite's order: removed as larger. */
    assert_int_equal(yyc_kv_remove_larger_than(kv, 1000), YYC_OK);
    assert_int_equal(yyc_kv_exists(kv, "text-size"), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_remove_earlier_than(kv, 10), YYC_OK);
    assert_int_equal(yyc_kv_exists(kv, "negative-size"), YYC_NOTFOUND);
    assert_int_equal(yyc_kv_remove_to_fit_count(kv, 1), YYC_OK);
    int64_t n = -1;
    assert_int_equal(yyc_kv_count(kv, &n), YYC_OK);
    assert_int_equal(n, 1);
    yyc_kv_close(kv);
    yyc_diskcache_release(dc);
}

/* ---------------------------------------------------------------- a refresh during a trim */

typedef struct trim_arg {
    yyc_kv *kv;
    int64_t cutoff;
    int rc;
} trim_arg;

static void *age_trim_thread(void *p) {
    trim_arg *a = p;
    a->rc = yyc_kv_remove_earlier_than(a->kv, a->cutoff);
    return NULL;
}

/* Another connection has refreshed a row's access time but not committed yet when the trim by
 * age starts; it commits while the trim runs. Whichever way that goes, the row either stays
 * with its file or goes with it: never a row naming a missing file (the trim used to list the
 * files of old rows and delete old rows in a second statement, which no longer matched). */
static void age_trim_racing_a_refresh_never_leaves_a_row_without_its_file(void **state) {
    fixture *f = *state;
    yyc_kv *kv = open_kv(f->dir);
    char value[2048];
    memset(value, 'v', sizeof value);
    for (int i = 0; i < 4; i++) {
        char key[32], name[32];
        snprintf(key, sizeof key, "old-%d", i);
        snprintf(name, sizeof name, "file-%d", i);
        assert_int_equal(yyc_kv_save(kv, key, value, sizeof value, name, NULL, 0), YYC_OK);
    }
    sqlite3 *raw = tk_raw_open(f->dir);
    tk_raw_exec(raw, "update manifest set last_access_time = 100;");
    /* The refresh, held uncommitted: it holds the write lock. */
    tk_raw_exec(raw, "begin immediate;");
    tk_raw_exec(raw, "update manifest set last_access_time = strftime('%s', 'now') "
                     "where key in ('old-1', 'old-3');");
    trim_arg a = {kv, 1000, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, age_trim_thread, &a), 0);
    usleep(300 * 1000); /* (the trim has listed its rows by now; if not, it sees the commit) */
    tk_raw_exec(raw, "commit;");
    pthread_join(t, NULL);
    assert_int_equal(a.rc, YYC_OK);
    sqlite3_close(raw);
    /* The refreshed rows stay, with their files; the others are gone, files too. */
    for (int i = 0; i < 4; i++) {
        char key[32], path[4096], name[32];
        snprintf(key, sizeof key, "old-%d", i);
        snprintf(name, sizeof name, "data/file-%d", i);
        bool row = yyc_kv_exists(kv, key) == YYC_OK;
        bool file = access(tk_join(path, sizeof path, f->dir, name), F_OK) == 0;
        assert_int_equal(row, file);
        assert_int_equal(row, i % 2 == 1);
    }
    yyc_kv_close(kv);
}

/* ---------------------------------------------------------------- the folder lock */

/* --child hold_lock DIR READY: takes the folder's flock, creates READY, and waits to be
 * killed. */
static int child_hold_lock(int argc, char **argv) {
    if (argc != 3) return 2;
    int fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REL_CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0, "lock %s", argv[1]);
    REL_CHECK(rel_write_file(argv[2], "", 0), "ready file");
    for (;;) pause();
}

typedef struct call_arg {
    yyc_diskcache *dc;
    int rc;
    bool done;
    pthread_mutex_t m;
} call_arg;

static void *remove_thread(void *p) {
    call_arg *a = p;
    int rc = yyc_diskcache_remove(a->dc, "k");
    pthread_mutex_lock(&a->m);
    a->rc = rc;
    a->done = true;
    pthread_mutex_unlock(&a->m);
    return NULL;
}

static bool call_done(call_arg *a) {
    pthread_mutex_lock(&a->m);
    bool d = a->done;
    pthread_mutex_unlock(&a->m);
    return d;
}

static void folder_lock_held_by_another_process_gives_ebusy_after_the_busy_timeout(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_dc(f->dir);
    char big[4096];
    memset(big, 'b', sizeof big);
    assert_int_equal(yyc_diskcache_set(dc, "k", big, sizeof big, NULL, 0), YYC_OK);
    yyc__diskcache_set_busy_timeout(dc, 200);
    char *ready = rel_path(f->dir, "ready");
    const char *args[] = {"hold_lock", f->dir, ready, NULL};
    pid_t pid = rel_spawn(args);
    assert_true(pid > 0);
    assert_true(WAIT_UNTIL(access(ready, F_OK) == 0, 30));

    /* Two threads on the same cache: each call gives up after the busy timeout, so the core's
     * mutex is released and the other thread's call returns too. */
    call_arg a = {.dc = dc, .rc = -1}, b = {.dc = dc, .rc = -1};
    pthread_mutex_init(&a.m, NULL);
    pthread_mutex_init(&b.m, NULL);
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, remove_thread, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, remove_thread, &b), 0);
    bool returned = WAIT_UNTIL(call_done(&a) && call_done(&b), 60);
    if (!returned) {
        kill(pid, SIGKILL); /* lets the calls finish, so the test can fail cleanly */
        rel_wait(pid, 30);
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_true(returned);
    assert_int_equal(a.rc, YYC_EBUSY);
    assert_int_equal(b.rc, YYC_EBUSY);
    assert_int_equal(yyc_diskcache_set(dc, "k", big, sizeof big, NULL, 0), YYC_EBUSY);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, 0), YYC_EBUSY);
    assert_true(yyc_diskcache_contains(dc, "k")); /* nothing happened unlocked */

    kill(pid, SIGKILL);
    rel_wait(pid, 30);
    assert_int_equal(yyc_diskcache_remove(dc, "k"), YYC_OK);
    assert_false(yyc_diskcache_contains(dc, "k"));
    yyc_diskcache_release(dc);
    pthread_mutex_destroy(&a.m);
    pthread_mutex_destroy(&b.m);
    free(ready);
}

/* A failure of the folder lock other than EINTR is reported and nothing proceeds unlocked: the
 * row and its file stay, no temporary file is left (the lock used to be skipped silently). */
static void folder_lock_errors_are_reported_and_nothing_proceeds_unlocked(void **state) {
    fixture *f = *state;
    yyc_kv *kv = open_kv(f->dir);
    char big[4096];
    memset(big, 'b', sizeof big);
    assert_int_equal(yyc_kv_save(kv, "k", big, sizeof big, "k-file", NULL, 0), YYC_OK);
    yyc__kv_fail_next_folder_lock(kv, ENOLCK);
    assert_int_equal(yyc_kv_remove(kv, "k"), YYC_EIO);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.sys_errno, ENOLCK);
    assert_int_equal(yyc_kv_exists(kv, "k"), YYC_OK);
    yyc__kv_fail_next_folder_lock(kv, ENOLCK);
    assert_int_equal(yyc_kv_remove_larger_than(kv, 10), YYC_EIO);
    assert_int_equal(yyc_kv_exists(kv, "k"), YYC_OK);
    yyc__kv_fail_next_folder_lock(kv, ENOLCK);
    memset(big, 'c', sizeof big);
    assert_int_equal(yyc_kv_save(kv, "k", big, sizeof big, "k-file", NULL, 0), YYC_EIO);
    char *data = rel_path(f->dir, "data");
    assert_int_equal(rel_count_entries(data, NULL), 1); /* no temporary file left */
    free(data);
    yyc_kv_item *it = NULL;
    assert_int_equal(yyc_kv_get_item(kv, "k", &it), YYC_OK);
    assert_int_equal(((unsigned char *)it->value)[0], 'b'); /* the old value */
    yyc_kv_item_free(it);
    yyc_kv_close(kv);
}

/* ---------------------------------------------------------------- items, hooks, schema */

static void kv_items_place_value_and_extended_data_at_max_align_t(void **state) {
    fixture *f = *state;
    yyc_kv *kv = open_kv(f->dir);
    const size_t align = alignof(max_align_t);
    const char *keys[] = {"a", "bb", "ccc", "dddd", "eeeee"};
    for (size_t i = 0; i < 5; i++) {
        char value[37], ext[13];
        memset(value, 'v', sizeof value);
        memset(ext, 'e', sizeof ext);
        const char *name = i % 2 ? "odd-file-name" : NULL;
        char fname[32];
        if (name) snprintf(fname, sizeof fname, "%s-%zu", name, i);
        assert_int_equal(yyc_kv_save(kv, keys[i], value, sizeof value - i, name ? fname : NULL, ext,
                                     sizeof ext - i),
                         YYC_OK);
    }
    for (size_t i = 0; i < 5; i++) {
        yyc_kv_item *item = NULL;
        assert_int_equal(yyc_kv_get_item(kv, keys[i], &item), YYC_OK);
        assert_int_equal((uintptr_t)item->value % align, 0);
        assert_int_equal((uintptr_t)item->extended_data % align, 0);
        assert_int_equal(item->value_len, 37 - i);
        assert_memory_equal(item->key, keys[i], strlen(keys[i]) + 1);
        yyc_kv_item_free(item);
        assert_int_equal(yyc_kv_get_item_info(kv, keys[i], &item), YYC_OK);
        assert_int_equal((uintptr_t)item->extended_data % align, 0);
        assert_int_equal(item->extended_len, 13 - i);
        yyc_kv_item_free(item);
    }
    yyc_kv_item **items = NULL;
    size_t n = 0;
    assert_int_equal(yyc_kv_get_items(kv, keys, 5, &items, &n), YYC_OK);
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal((uintptr_t)items[i]->value % align, 0);
        assert_int_equal((uintptr_t)items[i]->extended_data % align, 0);
        /* Readable as wider types where they start (UBSan checks the alignment). */
        assert_true(*(const uint32_t *)items[i]->extended_data == 0x65656565u);
        assert_true(*(const uint32_t *)items[i]->value == 0x76767676u);
    }
    yyc_kv_items_free(items, n);
    yyc_kv_close(kv);
}

/* A hook that calls a library function that fails (and records its own last error). */
static void failing_hook(void *ctx, const yyc_error *e) {
    (void)e;
    int *calls = ctx;
    (*calls)++;
    yyc_kv *other = NULL;
    assert_int_equal(yyc_kv_open("", YYC_KV_MIXED, &other), YYC_EINVAL);
}

static void error_hook_that_calls_a_failing_function_keeps_the_callers_last_error(void **state) {
    fixture *f = *state;
    yyc_kv *kv = open_kv(f->dir);
    int calls = 0;
    yyc_kv_set_error_hook(kv, failing_hook, &calls);
    assert_int_equal(yyc_kv_save(kv, "k", "v", 1, "a/b", NULL, 0), YYC_EINVAL);
    assert_int_equal(calls, 1);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_EINVAL);
    assert_non_null(strstr(e.message, "file name")); /* the save's error, not the open's */
    yyc_kv_close(kv);

    yyc_diskcache *dc = open_dc(f->dir);
    calls = 0;
    yyc_diskcache_set_error_hook(dc, failing_hook, &calls);
    char big[2000];
    memset(big, 'v', sizeof big);
    assert_int_equal(yyc_diskcache_set_with_filename(dc, "k", big, sizeof big, NULL, 0, ".."),
                     YYC_EINVAL);
    assert_true(calls >= 1);
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_EINVAL);
    assert_non_null(strstr(e.message, "file name"));
    yyc_diskcache_release(dc);
}

typedef struct event_log {
    int corrupt;
    char message[256];
} event_log;

static void log_hook(void *ctx, const yyc_error *e) {
    event_log *l = ctx;
    if (e->code == YYC_ECORRUPT) {
        l->corrupt++;
        snprintf(l->message, sizeof l->message, "%s", e->message);
    }
}

/* A view, an index or a table with a rowid column named manifest: the open rebuilds the
 * manifest and reports it (naming the object), and the cache works; it used to fail forever. */
static void foreign_object_named_manifest_is_rebuilt_and_reported(void **state) {
    fixture *f = *state;
    static const char *const schemas[] = {
        "create view manifest as select 1 as key, 2 as filename, 3 as size, 4 as inline_data, "
        "5 as modification_time, 6 as last_access_time, 7 as extended_data;",
        "create table other(a); create index manifest on other(a);",
        "create table manifest (rowid text, key text, filename text, size integer, inline_data "
        "blob, modification_time integer, last_access_time integer, extended_data blob);",
    };
    static const char *const named[] = {"view", "index", "rowid"};
    for (size_t i = 0; i < 3; i++) {
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/case-%zu", f->dir, i);
        assert_int_equal(mkdir(sub, 0700), 0);
        tk_exec(sub, schemas[i]);
        event_log log = {0};
        yyc_kv *kv = NULL;
        int s = yyc__kv_open_ex(sub, YYC_KV_MIXED, log_hook, &log, &kv);
        if (s != YYC_OK) fail_msg("case %zu: open: %s", i, rel_last_error());
        assert_int_equal(log.corrupt, 1);
        if (!strstr(log.message, named[i])) fail_msg("case %zu: message '%s'", i, log.message);
        assert_int_equal(yyc_kv_save(kv, "k", "v", 1, NULL, NULL, 0), YYC_OK);
        assert_int_equal(yyc_kv_exists(kv, "k"), YYC_OK);
        yyc_kv_close(kv);
        /* And it opens cleanly from now on. */
        log = (event_log){0};
        assert_int_equal(yyc__kv_open_ex(sub, YYC_KV_MIXED, log_hook, &log, &kv), YYC_OK);
        assert_int_equal(log.corrupt, 0);
        assert_int_equal(yyc_kv_exists(kv, "k"), YYC_OK);
        yyc_kv_close(kv);
    }
}

/* ---------------------------------------------------------------- hostile access times */

typedef struct walk {
    int seen;
    int nulls; /* entries named null-* */
} walk;

static int count_entry(void *ctx, const yyc_diskcache_entry *e) {
    walk *w = ctx;
    w->seen++;
    if (!strncmp(e->key, "null-", 5)) w->nulls++;
    return w->seen > 100000 ? -1 : 0; /* a walk that restarts forever stops here and fails */
}

/* Access times no library writes - REAL, TEXT, NULL (more than a page of 256 of these) - among
 * ordinary rows: an enumeration lists every row exactly once and ends (a REAL or TEXT time used
 * to restart the same page forever; NULL ones past the first page were dropped). */
static void enumeration_lists_rows_with_real_text_and_null_access_times_once(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_dc(f->dir);
    add_good_rows(dc, 3);
    /* 300 of each (more than a page): page boundaries fall on NULL, REAL and TEXT times. */
    tk_exec(f->dir, "with recursive n(i) as (select 1 union all select i + 1 from n where i < 300) "
                    "insert into manifest " TK_COLS
                    " select 'null-' || i, NULL, 1, x'00', 1, NULL, NULL from n union all"
                    " select 'real-' || i, NULL, 1, x'00', 1, 1.5 + (i % 2), NULL from n union all"
                    " select 'text-' || i, NULL, 1, x'00', 1, 'soon', NULL from n;");
    int64_t rows = dc_count(dc);
    assert_int_equal(rows, 3 + 900);
    walk w = {0};
    assert_int_equal(yyc_diskcache_for_each_entry(dc, count_entry, &w), YYC_OK);
    assert_int_equal(w.seen, rows);
    assert_int_equal(w.nulls, 300);
    yyc_diskcache_release(dc);
}

/* ---------------------------------------------------------------- deadlines vs blocked work */

long yyc__kv_testing_folder_waits(void);

/* Whether a passive checkpoint of another connection copied every frame back (no reader of
 * the manifest pins an older snapshot). */
static bool checkpoint_completes(sqlite3 *db) {
    int log = -1, done = -1;
    return sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done) ==
               SQLITE_OK &&
           log == done;
}

/* Cache A's auto-trim waits (up to a 60 s busy timeout) for A's folder lock, which another
 * process holds. Meanwhile cache B's deadlines are kept: its deferred set is committed within
 * the max delay, and its held read transaction ends, so another connection's checkpoint
 * completes. Both used to wait on the one disk thread behind A's trim. (The waits are bounds
 * that keep a failure finite, never reached when it works.) */
static void deadlines_of_one_cache_never_wait_behind_another_caches_blocked_trim(void **state) {
    fixture *f = *state;
    char *a_dir = rel_path(f->dir, "a"), *b_dir = rel_path(f->dir, "b");
    yyc_diskcache *a = open_dc(a_dir);
    char big[4096];
    memset(big, 'a', sizeof big);
    assert_int_equal(yyc_diskcache_set(a, "a1", big, sizeof big, NULL, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_set(a, "a2", big, sizeof big, NULL, 0), YYC_OK);
    yyc__diskcache_set_busy_timeout(a, 60000);
    yyc_diskcache_set_count_limit(a, 1);
    char *ready = rel_path(f->dir, "ready");
    const char *args[] = {"hold_lock", a_dir, ready, NULL};
    pid_t pid = rel_spawn(args);
    assert_true(pid > 0);
    assert_true(WAIT_UNTIL(access(ready, F_OK) == 0, 30));
    long waits = yyc__kv_testing_folder_waits();
    yyc_diskcache_set_auto_trim_interval(a, 0.01);
    assert_true(WAIT_UNTIL(yyc__kv_testing_folder_waits() > waits, 30)); /* A's trim waits */

    yyc_diskcache *b = open_dc(b_dir);
    assert_int_equal(yyc_diskcache_set(b, "k", "v0", 2, NULL, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_set_write_mode(b, YYC_WRITE_DEFERRED, 0.05), YYC_OK);
    assert_int_equal(yyc_diskcache_set(b, "d", "v", 1, NULL, 0), YYC_OK);
    bool flushed =
        WAIT_UNTIL(tk_int(b_dir, "select count(*) from manifest where key = 'd'") == 1, 15);

    void *v = NULL;
    size_t len = 0;
    assert_int_equal(yyc_diskcache_get(b, "k", &v, &len), YYC_OK); /* may hold a read */
    yyc_free(v);
    sqlite3 *db = tk_raw_open(b_dir);
    sqlite3_busy_timeout(db, 0);
    assert_int_equal(sqlite3_exec(db, "update manifest set inline_data = 'v1' where key = 'k'",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    bool read_ended = WAIT_UNTIL(checkpoint_completes(db), 15);
    sqlite3_close(db);

    kill(pid, SIGKILL);
    rel_wait(pid, 30);
    assert_true(flushed);
    assert_true(read_ended);
    yyc_diskcache_release(b);
    yyc_diskcache_release(a);
    free(ready);
    free(a_dir);
    free(b_dir);
}

/* ---------------------------------------------------------------- main */

static const rel_child children[] = {
    {"hold_lock", child_hold_lock},
    {NULL, NULL},
};

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--child") == 0)
        return rel_dispatch(children, argc - 2, argv + 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            deadlines_of_one_cache_never_wait_behind_another_caches_blocked_trim, setup, teardown),
        cmocka_unit_test_setup_teardown(
            enumeration_lists_rows_with_real_text_and_null_access_times_once, setup, teardown),
        cmocka_unit_test_setup_teardown(trim_to_cost_removes_rows_whose_key_is_null_or_a_blob,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(trim_to_count_removes_rows_whose_key_is_null_or_a_blob,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            remove_all_with_progress_removes_rows_whose_key_is_null_or_a_blob, setup, teardown),
        cmocka_unit_test_setup_teardown(auto_trim_with_hostile_keys_finishes_and_frees_the_worker,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            remove_keys_and_exact_key_remove_still_work_next_to_hostile_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(sizes_summing_past_int64_max_saturate_and_cost_trims_work,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            null_text_negative_and_real_sizes_cost_nothing_and_never_stall_a_trim, setup, teardown),
        cmocka_unit_test_setup_teardown(
            age_trim_racing_a_refresh_never_leaves_a_row_without_its_file, setup, teardown),
        cmocka_unit_test_setup_teardown(
            folder_lock_held_by_another_process_gives_ebusy_after_the_busy_timeout, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            folder_lock_errors_are_reported_and_nothing_proceeds_unlocked, setup, teardown),
        cmocka_unit_test_setup_teardown(kv_items_place_value_and_extended_data_at_max_align_t,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            error_hook_that_calls_a_failing_function_keeps_the_callers_last_error, setup, teardown),
        cmocka_unit_test_setup_teardown(foreign_object_named_manifest_is_rebuilt_and_reported,
                                        setup, teardown),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
