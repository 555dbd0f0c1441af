/*
 * test_checkpoints.c - the manifest's WAL checkpoints run on the disk queue, never inside a
 * caller's commit, and still keep the WAL bounded. Every test works in its own temporary folder.
 */
#include "test_kv_support.h"

#include "internal.h"
#include "kv_private.h"

#include <stdatomic.h>
#include <stdbool.h>

#define VALUE_BYTES (16 * 1024)
#define MIB (1024 * 1024)

static yyc_kv *open_kv(const char *dir) {
    yyc_kv *kv = NULL;
    assert_int_equal(yyc_kv_open(dir, YYC_KV_SQLITE, &kv), YYC_OK);
    return kv;
}

/* Saves values of VALUE_BYTES inline (64 keys over and over, so the manifest stays small while
 * the WAL receives every page) until `bytes` were written. */
static void save_bytes(yyc_kv *kv, long long bytes) {
    static char value[VALUE_BYTES];
    for (long long i = 0; i * VALUE_BYTES < bytes; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%lld", i % 64);
        memset(value, (int)(i & 0xff), sizeof value);
        assert_int_equal(yyc_kv_save(kv, key, value, sizeof value, NULL, NULL, 0), YYC_OK);
    }
}

static long long wal_size(const char *dir) { return tk_file_size(dir, "manifest.sqlite-wal"); }

static void kv_wal_stays_bounded_by_background_checkpoints(void **state) {
    (void)state;
    char *dir = test_temp_dir("ckpt-bounded");
    yyc_kv *kv = open_kv(dir);
    int on_worker_before, elsewhere_before;
    yyc__kv_checkpoint_counts(&on_worker_before, &elsewhere_before);
    save_bytes(kv, 48LL * MIB); /* well over ten checkpoint intervals (1000 pages each) */
    /* With no writer in the way, the checkpoint the next commit queues copies the whole WAL,
     * and the commit after it restarts the WAL and truncates it to journal_size_limit. */
    for (int round = 0; round < 2; round++) {
        yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
        save_bytes(kv, 1);
    }
    long long size = wal_size(dir);
    assert_true(size > 0);
    assert_true(size < 8LL * MIB);
    int on_worker, elsewhere;
    yyc__kv_checkpoint_counts(&on_worker, &elsewhere);
    assert_true(on_worker > on_worker_before);
    assert_int_equal(elsewhere, elsewhere_before);
    yyc_kv_close(kv);
    test_rm_rf(dir);
    free(dir);
}

/* Holds the disk queue until opened. */
static void hold_queue(void *arg) {
    atomic_bool *open = arg;
    while (!atomic_load(open)) usleep(1000);
}

static void kv_commits_leave_checkpoints_to_the_checkpoint_queue(void **state) {
    (void)state;
    char *dir = test_temp_dir("ckpt-queue");
    yyc_kv *kv = open_kv(dir);
    static atomic_bool open, blocker;
    atomic_store(&open, false);
    int on_worker_before, elsewhere_before;
    yyc__kv_checkpoint_counts(&on_worker_before, &elsewhere_before);
    assert_int_equal(yyc__worker_async(YYC__QUEUE_CHECKPOINT, &blocker, hold_queue, &open), YYC_OK);
    /* While the disk queue is held, a checkpoint could only run inside a commit: SQLite's own
     * auto-checkpoint would restart the WAL every 1000 pages (and journal_size_limit cut it
     * back). Nothing may: every page written stays in the WAL. */
    save_bytes(kv, 4LL * MIB); /* (under the cap, where a commit would wait for the queue) */
    long long held_size = wal_size(dir);
    int held_on_worker, held_elsewhere;
    yyc__kv_checkpoint_counts(&held_on_worker, &held_elsewhere);
    atomic_store(&open, true);
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    int on_worker, elsewhere;
    yyc__kv_checkpoint_counts(&on_worker, &elsewhere);
    yyc_kv_close(kv);
    assert_true(held_size >= 4LL * MIB);
    assert_int_equal(held_on_worker + held_elsewhere, on_worker_before + elsewhere_before);
    /* The commits queued exactly one checkpoint behind the holder (one at a time), which then
     * ran on the checkpoint queue's thread. */
    assert_int_equal(on_worker, on_worker_before + 1);
    assert_int_equal(elsewhere, elsewhere_before);
    test_rm_rf(dir);
    free(dir);
}

static void kv_close_runs_or_waits_for_a_queued_checkpoint(void **state) {
    (void)state;
    char *dir = test_temp_dir("ckpt-close");
    yyc_kv *kv = open_kv(dir);
    static atomic_bool open, blocker;
    atomic_store(&open, false);
    int on_worker_before, elsewhere_before;
    yyc__kv_checkpoint_counts(&on_worker_before, &elsewhere_before);
    assert_int_equal(yyc__worker_async(YYC__QUEUE_CHECKPOINT, &blocker, hold_queue, &open), YYC_OK);
    save_bytes(kv, 4LL * MIB); /* queues a checkpoint behind the holder */
    /* Close drains the kv's queued checkpoint on this thread before freeing the kv (ASan
     * reports the job's write to the flag otherwise), and the close is the last connection. */
    yyc_kv_close(kv);
    int on_worker, elsewhere;
    yyc__kv_checkpoint_counts(&on_worker, &elsewhere);
    atomic_store(&open, true);
    yyc__worker_wait_idle(YYC__QUEUE_CHECKPOINT);
    assert_int_equal(on_worker, on_worker_before);
    assert_int_equal(elsewhere, elsewhere_before + 1);
    assert_false(tk_exists(dir, "manifest.sqlite-wal"));
    test_rm_rf(dir);
    free(dir);
}

/* A single writer saving as fast as it can: SQLite's passive checkpoints on the disk thread copy
 * frames while the writer appends more, so the WAL never finishes being copied and never
 * restarts. Past YYC__KV_WAL_CAP_PAGES a commit waits for the queued checkpoint (it does not
 * run one), so the WAL stays under the cap plus one transaction, however the threads are
 * scheduled. */
static void kv_a_writer_that_outruns_the_checkpoints_keeps_the_wal_under_its_cap(void **state) {
    (void)state;
    char *dir = test_temp_dir("ckpt-cap");
    yyc_kv *kv = open_kv(dir);
    static char value[200];
    long long peak = 0;
    for (int i = 0; i < 40000; i++) {
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
    /* The cap in bytes (4 KiB pages), plus one small transaction and the WAL header. */
    long long cap = (long long)YYC__KV_WAL_CAP_PAGES * (4096 + 24) + 64 * 1024;
    if (peak > cap) fail_msg("the WAL reached %lld bytes (cap %lld)", peak, cap);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(kv_a_writer_that_outruns_the_checkpoints_keeps_the_wal_under_its_cap),
    cmocka_unit_test(kv_wal_stays_bounded_by_background_checkpoints),
    cmocka_unit_test(kv_commits_leave_checkpoints_to_the_checkpoint_queue),
    cmocka_unit_test(kv_close_runs_or_waits_for_a_queued_checkpoint),
};

YYC_TEST_MAIN(tests)
