/*
 * kv_expiry_clock.c - the expiry clock (unix milliseconds, CLOCK_REALTIME; test builds can move
 * or freeze it) and the manifest's part of expiry that the connection sets up when it opens:
 * the `expiry` column and its partial index, and the SQL functions yyc_now_ms() and
 * yyc_save_expiry(). What reads and removes expired rows is kv_expiry.c.
 * Calls nothing else of kv/. Thread-safe (the clock); the rest runs on the opening thread.
 */
#include "kv/kv_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <time.h>

static int64_t real_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#ifdef YYC_TESTING
static _Atomic int64_t test_clock_offset_ms;
static _Atomic int64_t test_clock_frozen_ms; /* 0: the real clock runs */

void yyc__kv_testing_advance_clock(int64_t ms) { atomic_fetch_add(&test_clock_offset_ms, ms); }

void yyc__kv_testing_freeze_clock(bool frozen) {
    atomic_store(&test_clock_frozen_ms, frozen ? real_now_ms() : 0);
}
#endif

int64_t yyc__kv_now_ms(void) {
#ifdef YYC_TESTING
    int64_t frozen = atomic_load(&test_clock_frozen_ms);
    return (frozen ? frozen : real_now_ms()) + atomic_load(&test_clock_offset_ms);
#else
    return real_now_ms();
#endif
}

int64_t yyc__kv_expiry_from_ttl(double ttl_seconds) {
    if (!(ttl_seconds < INFINITY)) return 0; /* INFINITY (and NaN, refused by the callers) */
    if (ttl_seconds < 0) ttl_seconds = 0;
    int64_t now = yyc__kv_now_ms();
    double ms = ceil(ttl_seconds * 1000.0);        /* a time to live is never shortened */
    if (ms >= (double)(INT64_MAX - now)) return 0; /* beyond any clock: never */
    int64_t expiry = now + (int64_t)ms;
    return expiry > 0 ? expiry : 1; /* (0 means none) */
}

/* --- SQL functions of the manifest connection --- */

static void now_ms_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    sqlite3_result_int64(ctx, yyc__kv_now_ms());
}

static void save_expiry_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    const yyc_kv *kv = sqlite3_user_data(ctx);
    if (kv->save_expiry_ms) sqlite3_result_int64(ctx, kv->save_expiry_ms);
    else sqlite3_result_null(ctx);
}

int yyc__kv_expiry_register_functions(yyc_kv *kv, sqlite3 *db) {
    int rc = sqlite3_create_function_v2(db, "yyc_now_ms", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
                                        now_ms_fn, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function_v2(db, "yyc_save_expiry", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                        kv, save_expiry_fn, NULL, NULL, NULL);
    return rc;
}

bool yyc__kv_expiry_ensure_column(sqlite3 *db) {
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, SQL_EXPIRY_CHECK, -1, &s, NULL);
    sqlite3_finalize(s);
    if (rc != SQLITE_OK && sqlite3_exec(db, SQL_EXPIRY_ADD, NULL, NULL, NULL) != SQLITE_OK) {
        s = NULL; /* another process may have added it meanwhile */
        rc = sqlite3_prepare_v2(db, SQL_EXPIRY_CHECK, -1, &s, NULL);
        sqlite3_finalize(s);
        if (rc != SQLITE_OK) return false;
    }
    /* Idempotent; another process creating it at the same time is fine too. */
    return sqlite3_exec(db, SQL_EXPIRY_INDEX, NULL, NULL, NULL) == SQLITE_OK;
}
