/*
 * test_checkpoints.c - the manifest's WAL stays bounded under a writer that never pauses.
 * Checkpoints are SQLite's own auto-checkpoint (every 1,000 pages, inside the commit that
 * crosses it): moving them to a background thread was tried and measured 30-60 % slower small
 * saves on tmpfs, because a WAL that restarts less often grows larger and a concurrent
 * checkpoint competes with the writer. Every test works in its own temporary folder.
 */
#include "test_kv_support.h"

#include "internal.h"
#include "kv_private.h"

/* A single writer saving small values as fast as it can: the WAL must stay near SQLite's
 * auto-checkpoint threshold (1,000 pages) plus one transaction, never grow with the number of
 * saves (a checkpoint that cannot catch up with the writer grew it to 878 MB in 40,000 saves). */
static void kv_a_writer_that_never_pauses_keeps_the_wal_bounded(void **state) {
    (void)state;
    char *dir = test_temp_dir("ckpt-tight");
    yyc_kv *kv = NULL;
    assert_int_equal(yyc_kv_open(dir, YYC_KV_SQLITE, &kv), YYC_OK);
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
    long long bound = 1000LL * (4096 + 24) + 256 * 1024; /* threshold, header, a transaction */
    if (peak > bound) fail_msg("the WAL reached %lld bytes (bound %lld)", peak, bound);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(kv_a_writer_that_never_pauses_keeps_the_wal_bounded),
};

YYC_TEST_MAIN(tests)
