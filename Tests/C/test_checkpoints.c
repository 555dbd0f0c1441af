/*
 * test_checkpoints.c - the manifest's WAL checkpoints run on the checkpoint queue, never as a
 * whole inside a caller's commit, and still keep the WAL bounded (kv_checkpoints.c); they
 * survive a close with one queued, a fork while one runs, another process writing the folder,
 * and a full disk. Every test works in its own temporary folder.
 */
#include "test_kv_support.h"

#include "platform/internal.h"
#include "kv/kv_private.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define MIB (1024 * 1024)

#include "tsan_fork_children.h"

static yyc_kv *open_kv(const char *dir) {
    yyc_kv *kv = NULL;
    assert_int_equal(yyc_kv_open(dir, YYC_KV_SQLITE, &kv), YYC_OK);
    return kv;
}

/* Saves fresh keys prefix<i> (i from *next) of `len` bytes inline until `bytes` were written. */
static void save_fresh(yyc_kv *kv, const char *prefix, int *next, size_t len, long long bytes) {
    static char value[32 * 1024];
    assert_true(len <= sizeof value);
    for (long long done = 0; done < bytes; done += (long long)len) {
        char key[48];
        int i = (*next)++;
        snprintf(key, sizeof key, "%s%d", prefix, i);
        memset(value, 'a' + i % 26, len);
        assert_int_equal(yyc_kv_save(kv, key, value, len, NULL, NULL, 0), YYC_OK);
    }
}

static void expect_kv_value(yyc_kv *kv, const char *key, size_t len, char fill) {
    yyc_kv_item *item = NULL;
    assert_int_equal(yyc_kv_get_item(kv, key, &item), YYC_OK);
    assert_int_equal(item->value_len, len);
    for (size_t i = 0; i < len; i++)
        if (((const char *)item->value)[i] != fill) fail_msg("%s: byte %zu differs", key, i);
    yyc_kv_item_free(item);
}

static long long wal_size(const char *dir) { return tk_file_size(dir, "manifest.sqlite-wal"); }
static long long db_size(const char *dir) { return tk_file_size(dir, "manifest.sqlite"); }

/* Holds the checkpoint queue until opened. */
static void hold_queue(void *arg) {
    atomic_bool *open = arg;
    while (!atomic_load(open)) usleep(1000);
}

/* A single writer saving small values as fast as it can: the WAL must stay near the cap
 * (1,000 pages, as SQLite's own auto-checkpoint) plus one transaction, never grow with the number
 * of saves (a passive checkpoint that cannot catch up with the writer grew it to 878 MB in 40,000
 * saves once, so ~20 KB a save: 12,000 saves in `make test` would pass the bound many times over;
 * `make soak` makes the 40,000). */
static void kv_a_writer_that_never_pauses_keeps_the_wal_bounded(void **state) {
    (void)state;
    char *dir = test_temp_dir("ckpt-tight");
    yyc_kv *kv = NULL;
    assert_int_equal(yyc_kv_open(dir, YYC_KV_SQLITE, &kv), YYC_OK);
    static char value[200];
    long long peak = 0;
    const int saves = TEST_SOAK_OR(12000, 40000);
    for (int i = 0; i < saves; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i % 5000);
        memset(value, 'a' + i % 26, sizeof value);
        assert_int_equal(yyc_kv_save(kv, key, value, sizeof value, NULL, NULL, 0), YYC_OK);
        if (i % 16 == 0) {
            int64_t size = 0;
            assert_int_equal(yyc__kv_wal_size(kv, &size), YYC_OK);
            if (size > peak) peak = size;
        }
    }
    yyc_kv_close(kv);
    long long bound = 1000LL * (4096 + 24) + 256 * 1024; /* threshold, header, a transaction */
    if (peak > bound) fail_msg("the WAL reached %lld bytes (bound %lld)", peak, bound);
    test_rm_rf(dir);
    free(dir);
}

/* While the checkpoint queue is held, no commit may copy the WAL into the manifest: SQLite's
 * own auto-checkpoint would, inside the commit that leaves 1,000 pages. The fresh rows reach the
 * database file only through a checkpoint, so its size shows whether one ran. */
static void kv_commits_leave_checkpoints_to_the_checkpoint_queue(void **state) {
    (void)state;
    char *dir = test_temp_dir("ckpt-queue");
    yyc_kv *kv = open_kv(dir);
    yyc__kv_set_checkpoint_pages(kv, YYC__KV_CHECKPOINT_PAGES, 1000000); /* no cap here */
    static atomic_bool open, blocker;
    atomic_store(&open, false);
    int on_worker0, on_caller0;
    yyc__kv_checkpoint_counts(&on_worker0, &on_caller0);
    assert_int_equal(yyc__worker_async(YYC__QUEUE_CHECKPOINT, &blocker, hold_queue, &open), YYC_OK);
    long long db_before = db_size(dir);
    int next = 0;
    save_fresh(kv, "k", &next, 2000, 8LL * MIB); /* about 2,000 pages, twice the old interval */
    long long db_held = db_size(dir), wal_held = wal_size(dir);
    int on_worker_held, on_caller_held;
    yyc__kv_checkpoint_counts(&on_worker_held, &on_caller_held);
    atomic_store(&open, true);
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    int on_worker, on_caller;
    yyc__kv_checkpoint_counts(&on_worker, &on_caller);
    /* With the writer paused, the queued job copied the whole WAL: the next commit restarts it
     * and truncates it to journal_size_limit. */
    save_fresh(kv, "k", &next, 2000, 2000);
    long long wal_after = wal_size(dir), db_after = db_size(dir);
    for (int i = 0; i < next; i += 97) {
        char key[48];
        snprintf(key, sizeof key, "k%d", i);
        expect_kv_value(kv, key, 2000, (char)('a' + i % 26));
    }
    yyc_kv_close(kv);
    if (db_held != db_before)
        fail_msg("a commit checkpointed: the manifest grew from %lld to %lld bytes", db_before,
                 db_held);
    assert_true(wal_held >= 8LL * MIB);
    assert_int_equal(on_caller_held, on_caller0);
    assert_int_equal(on_worker_held, on_worker0);
    assert_int_equal(on_worker, on_worker0 + 1); /* one job at a time: exactly one was queued */
    assert_true(db_after > db_before + 4LL * MIB);
    assert_true(wal_after <= YYC__KV_WAL_LIMIT_BYTES);
    test_rm_rf(dir);
    free(dir);
}

/* A close with a checkpoint queued (behind a held queue) runs it on the closing thread before
 * it frees anything the job uses (AddressSanitizer reports the job's access otherwise); the job
 * never runs again on the worker, and the close, the last connection, deletes the WAL. */
static void kv_close_runs_a_queued_checkpoint_itself(void **state) {
    (void)state;
    char *dir = test_temp_dir("ckpt-close");
    yyc_kv *kv = open_kv(dir);
    static atomic_bool open, blocker;
    atomic_store(&open, false);
    assert_int_equal(yyc__worker_async(YYC__QUEUE_CHECKPOINT, &blocker, hold_queue, &open), YYC_OK);
    int on_worker0, on_caller0;
    yyc__kv_checkpoint_counts(&on_worker0, &on_caller0);
    int next = 0;
    int64_t wal = 0;
    while (wal < 2 * YYC__KV_CHECKPOINT_PAGES * 4096) { /* past the trigger, under the cap */
        save_fresh(kv, "k", &next, 2000, 2000);
        assert_int_equal(yyc__kv_wal_size(kv, &wal), YYC_OK);
    }
    yyc_kv_close(kv);
    int on_worker_closed, on_caller_closed;
    yyc__kv_checkpoint_counts(&on_worker_closed, &on_caller_closed);
    atomic_store(&open, true);
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    int on_worker, on_caller;
    yyc__kv_checkpoint_counts(&on_worker, &on_caller);
    assert_int_equal(on_caller_closed, on_caller0 + 1);
    assert_int_equal(on_worker, on_worker0);
    assert_false(tk_exists(dir, "manifest.sqlite-wal"));
    kv = open_kv(dir);
    for (int i = 0; i < next; i += 37) {
        char key[48];
        snprintf(key, sizeof key, "k%d", i);
        expect_kv_value(kv, key, 2000, (char)('a' + i % 26));
    }
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* A trim ends with a truncating checkpoint, which SQLite fails at once with SQLITE_BUSY while
 * another connection checkpoints - our own background job included. So the trim first runs the
 * queued job itself (here: behind a held queue) or waits for the running one (here: one queued by
 * every commit, started at once on the other thread), and the WAL is still truncated. */
static void kv_trim_truncates_the_wal_while_background_checkpoints_run(void **state) {
    (void)state;
    char *dir = test_temp_dir("ckpt-trim");
    yyc_kv *kv = open_kv(dir);
    static atomic_bool open, blocker;
    atomic_store(&open, false);
    int next = 0;
    save_fresh(kv, "k", &next, 2000, 300 * 1000);
    for (int round = 0; round < 2; round++) { /* the WAL copied whole, then restarted */
        yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
        save_fresh(kv, "k", &next, 2000, 2000);
    }
    /* The file empty (a restart keeps its size up to journal_size_limit): from here its size
     * counts the frames written. */
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    yyc__kv_checkpoint(kv);
    assert_int_equal(wal_size(dir), 0);
    assert_int_equal(yyc__worker_async(YYC__QUEUE_CHECKPOINT, &blocker, hold_queue, &open), YYC_OK);
    int64_t pages = 0;
    while (pages < YYC__KV_CHECKPOINT_PAGES + 8) { /* a job queued behind the holder */
        save_fresh(kv, "k", &next, 2000, 2000);
        assert_int_equal(yyc__kv_wal_size(kv, &pages), YYC_OK);
        pages /= 4096 + 24;
    }
    int on_worker0, on_caller0;
    yyc__kv_checkpoint_counts(&on_worker0, &on_caller0);
    assert_int_equal(yyc_kv_remove_to_fit_count(kv, 10), YYC_OK);
    long long held_wal = wal_size(dir);
    int on_worker_held, on_caller_held;
    yyc__kv_checkpoint_counts(&on_worker_held, &on_caller_held);
    atomic_store(&open, true);
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    int on_worker, on_caller;
    yyc__kv_checkpoint_counts(&on_worker, &on_caller);
    if (held_wal != 0) fail_msg("the trim left a WAL of %lld bytes", held_wal);
    assert_int_equal(on_caller_held, on_caller0 + 1); /* the queued job, run by the trim */
    assert_int_equal(on_worker, on_worker0);
    /* Now with a job started after every commit. */
    yyc__kv_set_checkpoint_pages(kv, 1, 1000);
    int kept = 0;
    for (int round = 0; round < 40; round++) {
        save_fresh(kv, "r", &next, 300, 300 * 20);
        kept += 10;
        assert_int_equal(yyc_kv_remove_to_fit_count(kv, kept), YYC_OK);
        long long wal = wal_size(dir);
        if (wal != 0) fail_msg("round %d: the trim left a WAL of %lld bytes", round, wal);
    }
    int64_t count = 0;
    assert_int_equal(yyc_kv_count(kv, &count), YYC_OK);
    assert_int_equal(count, kept);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* ---- fork */

/* In a child forked right after commits that each queued a checkpoint (one is usually running
 * then): no checkpoint job was inside SQLite at the fork, and the child opens, writes and reads a
 * cache of its own, with no job of the parent's in its queues. (A forked child must not open the
 * parent's folder: SQLite's per-file lock bookkeeping is inherited while the locks are not.)
 * Returns the exit status. */
static int fork_child(const char *own_dir) {
    alarm(120); /* a deadlock kills the child: the parent sees the signal */
    if (yyc__kv_checkpoint_jobs_in_sqlite() != 0) return 3;
    yyc_kv *kv = NULL;
    if (yyc_kv_open(own_dir, YYC_KV_SQLITE, &kv) != YYC_OK) return 4;
    yyc__kv_set_checkpoint_pages(kv, 1, 8);
    static char value[300];
    memset(value, 'c', sizeof value);
    for (int i = 0; i < 100; i++) {
        char key[32];
        snprintf(key, sizeof key, "c%d", i);
        if (yyc_kv_save(kv, key, value, sizeof value, NULL, NULL, 0) != YYC_OK) return 5;
    }
    yyc_kv_item *item = NULL;
    if (yyc_kv_get_item(kv, "c99", &item) != YYC_OK || item->value_len != sizeof value) return 6;
    yyc_kv_item_free(item);
    yyc_kv_close(kv);
    return 0;
}

static void kv_fork_while_a_checkpoint_runs_leaves_the_child_a_working_cache(void **state) {
    (void)state;
    char *dir = test_temp_dir("ckpt-fork");
    yyc_kv *kv = open_kv(dir);
    yyc__kv_set_checkpoint_pages(kv, 1, 200); /* a job after every commit */
    int next = 0;
    /* The checkpoint queue's thread is up and has run a job before the first fork: a fork while
     * a new thread is still starting inside AddressSanitizer's runtime left that child hanging
     * (child 0, twice under ASan: the sanitizer's state, not the cache's). Every later fork
     * follows commits that queued a job, as before. */
    save_fresh(kv, "p", &next, 300, 300 * 5);
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    const int fork_count = TEST_SOAK_OR(20, 60); /* `make soak` forks 60 times */
    for (int forks = 0; forks < fork_count; forks++) {
        save_fresh(kv, "p", &next, 300, 300 * 5);
        char own[64];
        snprintf(own, sizeof own, "%s/child-%d", dir, forks);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) _exit(fork_child(own));
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("child %d: %s %d", forks, WIFEXITED(status) ? "exit" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
    for (int i = 0; i < next; i += 7) {
        char key[32];
        snprintf(key, sizeof key, "p%d", i);
        expect_kv_value(kv, key, 300, (char)('a' + i % 26));
    }
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* ---- another process */

/* Another process saves its own keys into the same folder while ours save with a checkpoint
 * queued after every commit: both sets of keys read back from both sides, and the WAL is gone
 * after the last close. */
static void kv_another_process_writing_the_folder_while_checkpoints_run_loses_nothing(void **s) {
    (void)s;
    char *dir = test_temp_dir("ckpt-mp");
    yyc_kv_close(open_kv(dir)); /* (the folder exists before either side writes) */
    enum { N = 3000 };
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(300);
        yyc_kv *kv = NULL;
        if (yyc_kv_open(dir, YYC_KV_SQLITE, &kv) != YYC_OK) _exit(4);
        static char value[300];
        for (int i = 0; i < N; i++) {
            char key[32];
            snprintf(key, sizeof key, "c%d", i);
            memset(value, 'A' + i % 26, sizeof value);
            if (yyc_kv_save(kv, key, value, sizeof value, NULL, NULL, 0) != YYC_OK) _exit(5);
        }
        yyc_kv_close(kv);
        _exit(0);
    }
    yyc_kv *kv = open_kv(dir);
    yyc__kv_set_checkpoint_pages(kv, 1, 400);
    int next = 0;
    save_fresh(kv, "p", &next, 300, 300LL * N);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < N; i += 7) {
        char key[32];
        snprintf(key, sizeof key, "c%d", i);
        expect_kv_value(kv, key, 300, (char)('A' + i % 26));
        snprintf(key, sizeof key, "p%d", i);
        expect_kv_value(kv, key, 300, (char)('a' + i % 26));
    }
    int64_t count = 0;
    assert_int_equal(yyc_kv_count(kv, &count), YYC_OK);
    assert_int_equal(count, 2 * N);
    yyc_kv_close(kv);
    assert_false(tk_exists(dir, "manifest.sqlite-wal"));
    test_rm_rf(dir);
    free(dir);
}

/* ---- full disk */

/* The child: an 8 MB tmpfs, most of it taken by a filler file; fresh rows fill the rest until a
 * save fails with YYC_ENOSPC. Background checkpoints copy into a database file that must grow, so
 * they fail on the full disk too. Every acknowledged row still reads (before and after a reopen),
 * and once space is freed saves work again and the WAL restarts. */
static int full_disk_child(const char *dir) {
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", dir, "tmpfs", 0, "size=8m,mode=0700") != 0) {
        fprintf(stderr, "full disk: cannot mount a tmpfs here (%s): skipped\n", strerror(errno));
        return 77;
    }
    char cache[4096], filler[4096];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(filler, sizeof filler, "%s/filler", dir);
    /* Leave about 1.5 MB: the WAL (journal_size_limit 1 MB) and the database share it. */
    int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return 10;
    static char chunk[4096];
    for (int i = 0; i < 1660; i++)
        if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) return 11;
    close(fd);
    yyc_kv *kv = NULL;
    if (yyc_kv_open(cache, YYC_KV_SQLITE, &kv) != YYC_OK) return 12;
    yyc__kv_set_checkpoint_pages(kv, 16, 1000);
    static char value[1000];
    int saved = 0, rc = YYC_OK;
    for (; saved < 100000; saved++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", saved);
        memset(value, 'a' + saved % 26, sizeof value);
        rc = yyc_kv_save(kv, key, value, sizeof value, NULL, NULL, 0);
        if (rc != YYC_OK) break;
    }
    if (rc != YYC_ENOSPC) {
        fprintf(stderr, "full disk: save %d gave %s\n", saved, yyc_status_name(rc));
        return 13;
    }
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < saved; i++) {
            char key[32];
            snprintf(key, sizeof key, "k%d", i);
            yyc_kv_item *item = NULL;
            if (yyc_kv_get_item(kv, key, &item) != YYC_OK || item->value_len != sizeof value ||
                ((char *)item->value)[0] != 'a' + i % 26) {
                fprintf(stderr, "full disk: k%d lost (round %d)\n", i, round);
                return 14;
            }
            yyc_kv_item_free(item);
        }
        if (round == 0) {
            yyc_kv_close(kv);
            kv = NULL;
            if (unlink(filler) != 0) return 15; /* the disk has room again */
            if (yyc_kv_open(cache, YYC_KV_SQLITE, &kv) != YYC_OK) return 16;
            yyc__kv_set_checkpoint_pages(kv, 16, 1000);
        }
    }
    for (int i = 0; i < 2000; i++) {
        char key[32];
        snprintf(key, sizeof key, "m%d", i % 50);
        rc = yyc_kv_save(kv, key, value, sizeof value, NULL, NULL, 0);
        if (rc != YYC_OK) {
            fprintf(stderr, "full disk: save after freeing space: %s\n", yyc_status_name(rc));
            return 17;
        }
    }
    /* With the writer paused, the job copies the whole WAL; the commit after the one that finds
     * it done restarts it (and truncates it to journal_size_limit). */
    for (int round = 0; round < 2; round++) {
        yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
        if (yyc_kv_save(kv, "last", value, sizeof value, NULL, NULL, 0) != YYC_OK) return 18;
    }
    int64_t wal = 0;
    if (yyc__kv_wal_size(kv, &wal) != YYC_OK || wal > YYC__KV_WAL_LIMIT_BYTES) {
        fprintf(stderr, "full disk: the WAL stayed at %lld bytes\n", (long long)wal);
        return 19;
    }
    yyc_kv_close(kv);
    return 0;
}

static void kv_background_checkpoints_on_a_full_disk_lose_no_acknowledged_row(void **state) {
    (void)state;
    char *dir = test_temp_dir("ckpt-full");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(full_disk_child(dir));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) {
        test_rm_rf(dir);
        free(dir);
        skip();
    }
    assert_int_equal(WEXITSTATUS(status), 0);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(kv_a_writer_that_never_pauses_keeps_the_wal_bounded),
    cmocka_unit_test(kv_commits_leave_checkpoints_to_the_checkpoint_queue),
    cmocka_unit_test(kv_close_runs_a_queued_checkpoint_itself),
    cmocka_unit_test(kv_trim_truncates_the_wal_while_background_checkpoints_run),
    cmocka_unit_test(kv_fork_while_a_checkpoint_runs_leaves_the_child_a_working_cache),
    cmocka_unit_test(kv_another_process_writing_the_folder_while_checkpoints_run_loses_nothing),
    cmocka_unit_test(kv_background_checkpoints_on_a_full_disk_lose_no_acknowledged_row),
};

YYC_TEST_MAIN(tests)
