/*
 * test_disk_cache.c - yyc_diskcache (YYDiskCache): spec 1.5 / 4, its deviations, faults and
 * concurrency. Every test works in its own temporary folder.
 */
#include "test_kv_support.h"

#include "kv/kv_private.h"            /* yyc__kv_testing_set_default_busy_timeout */
#include "disk/disk_cache_internal.h" /* the core's lock, held by a test thread */

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/statvfs.h>

/* --- helpers --- */

static yyc_diskcache *open_dc(const char *dir, size_t threshold) {
    yyc_diskcache *dc = NULL;
    assert_int_equal(yyc_diskcache_open(dir, threshold, &dc), YYC_OK);
    assert_non_null(dc);
    return dc;
}

static int64_t dc_count(yyc_diskcache *dc) {
    int64_t n = -1;
    assert_int_equal(yyc_diskcache_total_count(dc, &n), YYC_OK);
    return n;
}

static int64_t dc_cost(yyc_diskcache *dc) {
    int64_t n = -1;
    assert_int_equal(yyc_diskcache_total_cost(dc, &n), YYC_OK);
    return n;
}

typedef struct hook_log {
    atomic_int calls;
    atomic_int corrupt;
    atomic_int last_code;
    yyc_diskcache *reenter; /* when set, the hook calls back into the cache */
    atomic_int reentered;
} hook_log;

static void record_hook(void *ctx, const yyc_error *e) {
    hook_log *log = ctx;
    log->calls++;
    log->last_code = e->code;
    if (e->code == YYC_ECORRUPT) log->corrupt++;
    if (log->reenter) {
        int64_t n;
        /* Deadlocks (or fails the error-checking mutex) if called under the lock. */
        if (yyc_diskcache_total_count(log->reenter, &n) == YYC_OK) log->reentered++;
    }
}

/* --- open and sharing --- */

static void disk_cache_open_returns_one_shared_core_per_canonical_path(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-shared");
    char p[4096], q[4096];
    snprintf(p, sizeof p, "%s/cache", dir);
    snprintf(q, sizeof q, "%s/cache/../cache/", dir);
    yyc_diskcache *a = open_dc(p, 100);
    yyc_diskcache *b = open_dc(q, 5000); /* same folder: the first threshold wins */
    assert_ptr_equal(a, b);
    assert_int_equal(yyc_diskcache_inline_threshold(b), 100);
    char *canon = realpath(p, NULL);
    assert_string_equal(yyc_diskcache_path(a), canon);
    free(canon);
    assert_ptr_equal(yyc_diskcache_retain(a), a);
    tk_set_str(a, "k", "v");
    tk_check_str(b, "k", "v");
    /* Limits and name belong to the core. */
    yyc_diskcache_set_count_limit(a, 7);
    assert_int_equal(yyc_diskcache_count_limit(b), 7);
    yyc_diskcache_release(a);
    yyc_diskcache_release(a);
    tk_check_str(b, "k", "v"); /* one reference left */
    yyc_diskcache_release(b);
    /* A new core afterwards reads the same data, with fresh settings. */
    yyc_diskcache *c = open_dc(p, 100);
    tk_check_str(c, "k", "v");
    assert_int_equal(yyc_diskcache_count_limit(c), INT64_MAX);
    yyc_diskcache_release(c);
    yyc_diskcache_release(NULL);
    test_rm_rf(dir);
    free(dir);
}

typedef struct open_race {
    const char *path;
    yyc_diskcache *got;
    pthread_barrier_t *barrier;
} open_race;

static void *open_racer(void *arg) {
    open_race *r = arg;
    pthread_barrier_wait(r->barrier);
    if (yyc_diskcache_open(r->path, 20480, &r->got) != YYC_OK) r->got = NULL;
    return NULL;
}

static void disk_cache_concurrent_opens_of_one_path_share_one_core(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-race");
    enum { T = 8 };
    pthread_t th[T];
    open_race r[T];
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, T);
    for (int i = 0; i < T; i++) {
        r[i] = (open_race){.path = dir, .barrier = &barrier};
        pthread_create(&th[i], NULL, open_racer, &r[i]);
    }
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < T; i++) {
        assert_non_null(r[i].got);
        assert_ptr_equal(r[i].got, r[0].got);
    }
    for (int i = 0; i < T; i++) yyc_diskcache_release(r[i].got);
    test_rm_rf(dir);
    free(dir);
}

static void disk_cache_defaults_and_limit_setters(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-defaults");
    yyc_diskcache *dc = open_dc(dir, 20480);
    assert_int_equal(yyc_diskcache_count_limit(dc), INT64_MAX);
    assert_int_equal(yyc_diskcache_cost_limit(dc), INT64_MAX);
    assert_true(yyc_diskcache_age_limit(dc) == DBL_MAX);
    assert_int_equal(yyc_diskcache_free_disk_space_limit(dc), 0);
    assert_true(yyc_diskcache_auto_trim_interval(dc) == 60.0);
    assert_false(yyc_diskcache_error_logs_enabled(dc));
    assert_null(yyc_diskcache_copy_name(dc));
    yyc_diskcache_set_count_limit(dc, -5);
    assert_int_equal(yyc_diskcache_count_limit(dc), 0);
    yyc_diskcache_set_cost_limit(dc, -1);
    assert_int_equal(yyc_diskcache_cost_limit(dc), 0);
    yyc_diskcache_set_age_limit(dc, -3);
    assert_true(yyc_diskcache_age_limit(dc) == 0);
    yyc_diskcache_set_free_disk_space_limit(dc, 1234);
    assert_int_equal(yyc_diskcache_free_disk_space_limit(dc), 1234);
    yyc_diskcache_set_auto_trim_interval(dc, 0); /* paused: nothing is trimmed */
    assert_true(yyc_diskcache_auto_trim_interval(dc) == 0);
    yyc_diskcache_set_error_logs_enabled(dc, true);
    assert_true(yyc_diskcache_error_logs_enabled(dc));
    yyc_diskcache_set_error_logs_enabled(dc, false);
    yyc_diskcache_set_name(dc, "images");
    char *name = yyc_diskcache_copy_name(dc);
    assert_string_equal(name, "images");
    yyc_free(name);
    yyc_diskcache_set_name(dc, NULL);
    assert_null(yyc_diskcache_copy_name(dc));
    yyc_diskcache *bad = (yyc_diskcache *)1;
    assert_int_equal(yyc_diskcache_open("", 1, &bad), YYC_EINVAL);
    assert_null(bad);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* --- storage choice --- */

static void disk_cache_values_above_the_threshold_go_to_md5_named_files(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-threshold");
    yyc_diskcache *dc = open_dc(dir, 20480);
    enum { T = 20480 };
    char *buf = malloc(T + 1);
    tk_fill(buf, T + 1, 3);
    assert_int_equal(yyc_diskcache_set(dc, "at", buf, T, NULL, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_set(dc, "above", buf, T + 1, NULL, 0), YYC_OK);
    char rel[64];
    assert_false(tk_exists(dir, tk_md5_rel(rel, "at")));
    assert_int_equal(tk_file_size(dir, tk_md5_rel(rel, "above")), T + 1);
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    void *v;
    size_t len;
    assert_int_equal(yyc_diskcache_get(dc, "above", &v, &len), YYC_OK);
    assert_int_equal(len, T + 1);
    assert_memory_equal(v, buf, len);
    yyc_free(v);
    assert_int_equal(dc_cost(dc), 2 * T + 1);
    /* The value moving to inline deletes its file, and back. */
    tk_set_str(dc, "above", "small now");
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    tk_check_str(dc, "above", "small now");
    assert_int_equal(yyc_diskcache_set(dc, "above", buf, T + 1, NULL, 0), YYC_OK);
    assert_int_equal(tk_count_entries(dir, "data"), 1);
    yyc_diskcache_release(dc);
    free(buf);
    test_rm_rf(dir);
    free(dir);
}

static void disk_cache_threshold_zero_stores_files_and_size_max_stores_inline(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-types");
    char files[4096], inl[4096];
    snprintf(files, sizeof files, "%s/files", dir);
    snprintf(inl, sizeof inl, "%s/inline", dir);
    yyc_diskcache *f = open_dc(files, 0);
    tk_set_str(f, "tiny", "x");
    assert_int_equal(yyc_diskcache_set(f, "empty", NULL, 0, NULL, 0), YYC_OK);
    assert_int_equal(tk_count_entries(files, "data"), 2);
    tk_check_str(f, "tiny", "x");
    tk_check_str(f, "empty", "");
    yyc_diskcache *s = open_dc(inl, SIZE_MAX);
    char big[100000];
    tk_fill(big, sizeof big, 5);
    assert_int_equal(yyc_diskcache_set_with_filename(s, "big", big, sizeof big, NULL, 0, "name"),
                     YYC_OK);
    assert_int_equal(tk_count_entries(inl, "data"), 0);
    void *v;
    size_t len;
    assert_int_equal(yyc_diskcache_get(s, "big", &v, &len), YYC_OK);
    assert_int_equal(len, sizeof big);
    assert_memory_equal(v, big, len);
    yyc_free(v);
    yyc_diskcache_release(f);
    yyc_diskcache_release(s);
    test_rm_rf(dir);
    free(dir);
}

static void disk_cache_empty_keys_and_empty_values(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-empty");
    yyc_diskcache *dc = open_dc(dir, 10);
    assert_int_equal(yyc_diskcache_set(dc, "", "v", 1, NULL, 0), YYC_EINVAL);
    assert_int_equal(yyc_diskcache_set(dc, NULL, "v", 1, NULL, 0), YYC_EINVAL);
    void *v = (void *)1;
    size_t len = 3;
    assert_int_equal(yyc_diskcache_get(dc, "", &v, &len), YYC_NOTFOUND);
    assert_null(v);
    assert_false(yyc_diskcache_contains(dc, ""));
    assert_int_equal(yyc_diskcache_remove(dc, ""), YYC_OK);
    /* Deviation: an empty value is stored and reads back empty (not a miss). */
    tk_set_str(dc, "k", "old");
    assert_int_equal(yyc_diskcache_set(dc, "k", NULL, 0, NULL, 0), YYC_OK);
    assert_true(yyc_diskcache_contains(dc, "k"));
    assert_int_equal(yyc_diskcache_get(dc, "k", &v, &len), YYC_OK);
    assert_int_equal(len, 0);
    assert_null(v);
    assert_int_equal(yyc_diskcache_set(dc, "k", NULL, 5, NULL, 0), YYC_EINVAL);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_cache_extended_data_is_stored_and_read_without_touching_access_time(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-ext");
    yyc_diskcache *dc = open_dc(dir, 4);
    assert_int_equal(yyc_diskcache_set(dc, "small", "ab", 2, "meta", 4), YYC_OK);
    assert_int_equal(yyc_diskcache_set(dc, "large", "abcdefgh", 8, "meta2", 5), YYC_OK);
    tk_set_str(dc, "plain", "p");
    tk_exec(dir, "update manifest set last_access_time = 100");
    void *ext;
    size_t len;
    assert_int_equal(yyc_diskcache_get_extended_data(dc, "small", &ext, &len), YYC_OK);
    assert_int_equal(len, 4);
    assert_memory_equal(ext, "meta", 4);
    yyc_free(ext);
    assert_int_equal(yyc_diskcache_get_extended_data(dc, "large", &ext, &len), YYC_OK);
    assert_memory_equal(ext, "meta2", 5);
    yyc_free(ext);
    assert_int_equal(yyc_diskcache_get_extended_data(dc, "plain", &ext, &len), YYC_OK);
    assert_null(ext);
    assert_int_equal(len, 0);
    assert_int_equal(yyc_diskcache_get_extended_data(dc, "missing", &ext, &len), YYC_NOTFOUND);
    assert_true(yyc_diskcache_contains(dc, "small"));
    assert_int_equal(tk_int(dir, "select count(*) from manifest where last_access_time = 100"), 3);
    tk_check_str(dc, "small", "ab"); /* get refreshes it (written later: at the latest at close) */
    yyc_diskcache_release(dc);
    assert_int_equal(tk_int(dir, "select count(*) from manifest where last_access_time = 100"), 2);
    test_rm_rf(dir);
    free(dir);
}

/* --- file names --- */

typedef struct name_ctx {
    yyc_diskcache *dc;
    const char *mode;
    atomic_int calls;
    atomic_int reentered;
} name_ctx;

static bool name_fn(void *ctx, const char *key, char out[256]) {
    name_ctx *c = ctx;
    c->calls++;
    /* Called without the lock: calling back into the cache must work. */
    if (c->dc) {
        (void)yyc_diskcache_contains(c->dc, key);
        c->reentered++;
    }
    if (strcmp(c->mode, "prefix") == 0) {
        snprintf(out, 256, "custom-%s", key);
        return true;
    }
    if (strcmp(c->mode, "decline") == 0) return false;
    if (strcmp(c->mode, "empty") == 0) {
        out[0] = '\0';
        return true;
    }
    if (strcmp(c->mode, "unterminated") == 0) {
        memset(out, 'x', 256);
        return true;
    }
    snprintf(out, 256, "%s", c->mode); /* a fixed (possibly bad) name */
    return true;
}

static void disk_cache_file_names_come_from_the_function_and_are_validated(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-names");
    yyc_diskcache *dc = open_dc(dir, 2);
    name_ctx ctx = {.dc = dc, .mode = "prefix"};
    yyc_diskcache_set_filename_fn(dc, name_fn, &ctx);
    tk_set_str(dc, "a", "value");
    assert_true(tk_exists(dir, "data/custom-a"));
    assert_int_equal(ctx.reentered, 1);
    tk_set_str(dc, "i", "v"); /* inline: the function is not asked */
    assert_int_equal(ctx.calls, 1);
    char rel[64];
    ctx.mode = "decline";
    tk_set_str(dc, "b", "value");
    assert_true(tk_exists(dir, tk_md5_rel(rel, "b")));
    ctx.mode = "empty";
    tk_set_str(dc, "c", "value");
    assert_true(tk_exists(dir, tk_md5_rel(rel, "c")));
    int files = tk_count_entries(dir, "data");
    char long_name[301];
    memset(long_name, 'n', 300);
    long_name[300] = '\0';
    const char *bad[] = {"a/b", "..", ".", "../escape", "unterminated"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ctx.mode = bad[i];
        assert_int_equal(yyc_diskcache_set(dc, "bad", "value", 5, NULL, 0), YYC_EINVAL);
    }
    assert_false(yyc_diskcache_contains(dc, "bad"));
    /* Explicit names: validated as well, and they override the function. */
    ctx.mode = "prefix";
    assert_int_equal(yyc_diskcache_set_with_filename(dc, "bad", "value", 5, NULL, 0, long_name),
                     YYC_EINVAL);
    assert_int_equal(yyc_diskcache_set_with_filename(dc, "bad", "value", 5, NULL, 0, "x/y"),
                     YYC_EINVAL);
    assert_int_equal(yyc_diskcache_set_with_filename(dc, "bad", "value", 5, NULL, 0, ".."),
                     YYC_EINVAL);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_EINVAL);
    assert_false(yyc_diskcache_contains(dc, "bad"));
    assert_int_equal(tk_count_entries(dir, "data"), files);
    int calls = ctx.calls;
    assert_int_equal(yyc_diskcache_set_with_filename(dc, "d", "value", 5, NULL, 0, "explicit"),
                     YYC_OK);
    assert_true(tk_exists(dir, "data/explicit"));
    assert_int_equal(ctx.calls, calls);
    assert_int_equal(yyc_diskcache_set_with_filename(dc, "e", "value", 5, NULL, 0, NULL), YYC_OK);
    assert_true(tk_exists(dir, tk_md5_rel(rel, "e"))); /* NULL: md5, not the function */
    tk_check_str(dc, "d", "value");
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* --- removal and trims --- */

typedef struct progress_log {
    yyc_diskcache *dc;
    int calls;
    int64_t last;
    int64_t total;
    bool ok;
} progress_log;

static void on_progress(void *ctx, int64_t removed, int64_t total) {
    progress_log *p = ctx;
    if (removed < p->last || removed > total || (p->calls && total != p->total)) p->ok = false;
    int64_t n;
    /* The lock is released between batches: calling in must not deadlock. */
    if (yyc_diskcache_total_count(p->dc, &n) != YYC_OK || n != total - removed) p->ok = false;
    p->calls++;
    p->last = removed;
    p->total = total;
}

static void disk_cache_remove_all_and_remove_all_with_progress(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-removeall");
    yyc_diskcache *dc = open_dc(dir, 8);
    char key[16];
    for (int i = 0; i < 70; i++) {
        snprintf(key, sizeof key, "k%d", i);
        tk_set_str(dc, key, (i % 2) ? "a larger value" : "small");
    }
    progress_log p = {.dc = dc, .ok = true};
    assert_int_equal(yyc_diskcache_remove_all_progress(dc, on_progress, &p), YYC_OK);
    assert_true(p.ok);
    assert_int_equal(p.calls, 3);
    assert_int_equal(p.last, 70);
    assert_int_equal(dc_count(dc), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "k%d", i);
        tk_set_str(dc, key, "a larger value");
    }
    assert_int_equal(yyc_diskcache_remove_all(dc), YYC_OK);
    assert_int_equal(dc_count(dc), 0);
    assert_int_equal(tk_count_entries(dir, "data"), 0);
    assert_true(WAIT_UNTIL(tk_count_entries(dir, "trash") == 0, 10));
    tk_set_str(dc, "after", "works again");
    tk_check_str(dc, "after", "works again");
    assert_int_equal(yyc_diskcache_remove(dc, "after"), YYC_OK);
    assert_false(yyc_diskcache_contains(dc, "after"));
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_cache_trims_follow_yydiskcache_sentinels_and_lru_order(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-trims");
    yyc_diskcache *dc = open_dc(dir, 20480);
    char key[16];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "k%d", i);
        tk_set_str(dc, key, "0123456789");
    }
    /* k0..k9 accessed at increasing times, all in the past. */
    int64_t now = (int64_t)time(NULL);
    char sql[256];
    snprintf(sql, sizeof sql,
             "update manifest set last_access_time = %lld + 100 * cast(substr(key, 2) as integer)",
             (long long)(now - 2000));
    tk_exec(dir, sql);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, INT64_MAX), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_cost(dc, INT64_MAX), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_age(dc, DBL_MAX), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_age(dc, INFINITY), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_free_space(dc, 0), YYC_OK);
    assert_int_equal(dc_count(dc), 10);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, 8), YYC_OK);
    assert_false(yyc_diskcache_contains(dc, "k0"));
    assert_false(yyc_diskcache_contains(dc, "k1"));
    assert_true(yyc_diskcache_contains(dc, "k2"));
    assert_int_equal(yyc_diskcache_trim_to_cost(dc, 65), YYC_OK); /* 8 x 10 bytes -> 6 */
    assert_int_equal(dc_cost(dc), 60);
    assert_false(yyc_diskcache_contains(dc, "k3"));
    /* Age counts from the last access: k4 (now-1600), k5 (now-1500) are older than 1450 s. */
    assert_int_equal(yyc_diskcache_trim_to_age(dc, 1450), YYC_OK);
    assert_int_equal(dc_count(dc), 4);
    assert_true(yyc_diskcache_contains(dc, "k6"));
    /* Free space: a target already met does nothing; an unreachable one empties the cache. */
    assert_int_equal(yyc_diskcache_trim_to_free_space(dc, 1), YYC_OK);
    assert_int_equal(dc_count(dc), 4);
    assert_int_equal(yyc_diskcache_trim_to_free_space(dc, INT64_MAX / 2), YYC_OK);
    assert_int_equal(dc_count(dc), 0);
    tk_set_str(dc, "x", "y");
    assert_int_equal(yyc_diskcache_trim_to_count(dc, 0), YYC_OK);
    assert_int_equal(dc_count(dc), 0);
    tk_set_str(dc, "x", "y");
    assert_int_equal(yyc_diskcache_trim_to_age(dc, 0), YYC_OK);
    assert_int_equal(dc_count(dc), 0);
    tk_set_str(dc, "x", "y");
    assert_int_equal(yyc_diskcache_trim_to_cost(dc, 0), YYC_OK);
    assert_int_equal(dc_count(dc), 0);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_cache_free_space_trim_measures_the_cache_file_system(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-free");
    yyc_diskcache *dc = open_dc(dir, 100);
    char buf[4000];
    char key[16];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "k%d", i);
        tk_fill(buf, sizeof buf, (unsigned)i);
        assert_int_equal(yyc_diskcache_set(dc, key, buf, sizeof buf, NULL, 0), YYC_OK);
    }
    struct statvfs sv;
    assert_int_equal(statvfs(dir, &sv), 0);
    int64_t free_now = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
    /* Ask for 100 MB more than is free: more than the cache holds, so everything goes (other
     * processes writing meanwhile cannot make that flaky). */
    assert_int_equal(yyc_diskcache_trim_to_free_space(dc, free_now + 100000000), YYC_OK);
    assert_int_equal(dc_count(dc), 0);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_cache_auto_trim_enforces_limits_on_its_interval(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-auto");
    yyc_diskcache *dc = open_dc(dir, 20480);
    char key[16];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "k%d", i);
        tk_set_str(dc, key, "0123456789");
    }
    /* Limits alone do nothing until a trim runs (YYDiskCache never trims in set). */
    yyc_diskcache_set_count_limit(dc, 6);
    yyc_diskcache_set_cost_limit(dc, 45);
    assert_int_equal(dc_count(dc), 10);
    yyc_diskcache_set_auto_trim_interval(dc, 0.05);
    assert_true(WAIT_UNTIL(dc_count(dc) == 4, 10));
    /* Paused: a lower limit is not applied. */
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    yyc_diskcache_set_count_limit(dc, 1);
    usleep(300000);
    assert_int_equal(dc_count(dc), 4);
    /* Age limit. */
    yyc_diskcache_set_count_limit(dc, INT64_MAX);
    yyc_diskcache_set_cost_limit(dc, INT64_MAX);
    tk_exec(dir, "update manifest set last_access_time = 1000 where key in ('k6', 'k7')");
    yyc_diskcache_set_age_limit(dc, 3600);
    yyc_diskcache_set_auto_trim_interval(dc, 0.05);
    assert_true(WAIT_UNTIL(dc_count(dc) == 2, 10));
    assert_true(yyc_diskcache_contains(dc, "k9"));
    yyc_diskcache_release(dc); /* cancels the timer */
    test_rm_rf(dir);
    free(dir);
}

/* --- close --- */

static void disk_cache_close_makes_every_call_return_closed(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-close");
    yyc_diskcache *a = open_dc(dir, 20480);
    yyc_diskcache *b = open_dc(dir, 20480);
    assert_ptr_equal(a, b);
    tk_set_str(a, "k", "v");
    yyc_diskcache_close(a);
    yyc_diskcache_close(a); /* idempotent */
    void *v;
    size_t len;
    int64_t n;
    assert_false(yyc_diskcache_contains(b, "k"));
    assert_int_equal(yyc_diskcache_get(b, "k", &v, &len), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_get_extended_data(b, "k", &v, &len), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_set(b, "k", "v", 1, NULL, 0), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_set(b, "", "v", 1, NULL, 0), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_set_with_filename(b, "k", "v", 1, NULL, 0, "f"), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_remove(b, "k"), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_remove_all(b), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_remove_all_progress(b, NULL, NULL), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_total_count(b, &n), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_total_cost(b, &n), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_trim_to_count(b, 1), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_trim_to_cost(b, 1), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_trim_to_age(b, 1), YYC_ECLOSED);
    assert_int_equal(yyc_diskcache_trim_to_free_space(b, 1), YYC_ECLOSED);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_ECLOSED);
    /* Settings still answer; the path is forgotten: a new open makes a new core. */
    yyc_diskcache_set_count_limit(b, 3);
    assert_int_equal(yyc_diskcache_count_limit(b), 3);
    yyc_diskcache *c = open_dc(dir, 20480);
    assert_ptr_not_equal(c, a);
    tk_check_str(c, "k", "v");
    yyc_diskcache_release(a);
    yyc_diskcache_release(b);
    tk_check_str(c, "k", "v");
    yyc_diskcache_release(c);
    test_rm_rf(dir);
    free(dir);
}

/* --- errors and faults --- */

static void disk_cache_errors_reach_the_hook_after_the_lock_is_released(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-hook");
    yyc_diskcache *dc = open_dc(dir, 20480);
    hook_log log = {.reenter = dc};
    yyc_diskcache_set_error_hook(dc, record_hook, &log);
    assert_int_equal(yyc_diskcache_set(dc, "", "v", 1, NULL, 0), YYC_EINVAL);
    assert_int_equal(log.calls, 1);
    assert_int_equal(log.last_code, YYC_EINVAL);
    assert_int_equal(log.reentered, 1);
    assert_int_equal(yyc_diskcache_set_with_filename(dc, "k", "v", 30000, NULL, 0, "a/b"),
                     YYC_EINVAL);
    assert_int_equal(log.calls, 2);
    yyc_diskcache_set_error_hook(dc, NULL, NULL);
    assert_int_equal(yyc_diskcache_set(dc, "", "v", 1, NULL, 0), YYC_EINVAL);
    assert_int_equal(log.calls, 2);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_cache_garbage_manifest_is_rebuilt_and_reported_through_the_hook(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-garbage");
    yyc_diskcache *dc = open_dc(dir, 4);
    tk_set_str(dc, "a", "inline");
    tk_set_str(dc, "b", "in a file");
    yyc_diskcache_release(dc);
    char p[4096], junk[4096];
    tk_fill(junk, sizeof junk, 11);
    tk_write_file(tk_join(p, sizeof p, dir, "manifest.sqlite"), junk, sizeof junk);
    assert_int_equal(yyc_diskcache_open(dir, 4, &dc), YYC_OK);
    yyc_error e;
    yyc_last_error(&e);
    assert_int_equal(e.code, YYC_ECORRUPT);
    /* The rebuild happened before any hook could be set: the event waits for one. */
    hook_log log = {0};
    yyc_diskcache_set_error_hook(dc, record_hook, &log);
    assert_int_equal(log.corrupt, 1);
    assert_int_equal(dc_count(dc), 0);
    assert_false(yyc_diskcache_contains(dc, "b"));
    tk_set_str(dc, "c", "works afterwards");
    tk_check_str(dc, "c", "works afterwards");
    assert_int_equal(log.corrupt, 1);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_cache_a_data_file_deleted_behind_its_back_is_a_miss(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-missing");
    yyc_diskcache *dc = open_dc(dir, 4);
    tk_set_str(dc, "k", "in a file");
    char p[4096], rel[64];
    assert_int_equal(unlink(tk_join(p, sizeof p, dir, tk_md5_rel(rel, "k"))), 0);
    assert_true(yyc_diskcache_contains(dc, "k")); /* the row alone says yes */
    void *v;
    size_t len;
    assert_int_equal(yyc_diskcache_get(dc, "k", &v, &len), YYC_NOTFOUND);
    assert_false(yyc_diskcache_contains(dc, "k"));
    assert_int_equal(dc_count(dc), 0);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_cache_a_locked_manifest_gives_busy_and_keeps_the_data(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-busy");
    yyc__kv_testing_set_default_busy_timeout(200);
    yyc_diskcache *dc = open_dc(dir, 4);
    yyc__kv_testing_set_default_busy_timeout(0);
    tk_set_str(dc, "a", "A");
    tk_set_str(dc, "b", "in a file");
    sqlite3 *other = tk_raw_open(dir);
    tk_raw_exec(other, "begin exclusive; insert into manifest (key, size) values ('z', 0);");
    /* Refused after the busy timeout (5 s, shortened here), not at once and not forever; tests
     * never assert on durations, only on the outcome. */
    assert_int_equal(yyc_diskcache_set(dc, "c", "C", 1, NULL, 0), YYC_EBUSY);
    tk_raw_exec(other, "rollback");
    sqlite3_close(other);
    tk_check_str(dc, "a", "A");
    tk_check_str(dc, "b", "in a file");
    tk_set_str(dc, "c", "C");
    assert_int_equal(dc_count(dc), 3);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static void disk_cache_totals_above_2_gib_do_not_wrap(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-2gib");
    yyc_diskcache *dc = open_dc(dir, 20480);
    tk_exec(dir,
            "insert into manifest " TK_COLS " values ('a', 'fa', 2147483647, null, 1, 1, null);"
            "insert into manifest " TK_COLS " values ('b', 'fb', 2147483647, null, 1, 1, null);"
            "insert into manifest " TK_COLS " values ('c', 'fc', 4000000000, null, 1, 1, null);");
    assert_int_equal(dc_cost(dc), INT64_C(8294967294));
    assert_int_equal(dc_count(dc), 3);
    assert_int_equal(yyc_diskcache_trim_to_cost(dc, INT64_C(5000000000)), YYC_OK);
    assert_int_equal(dc_cost(dc), INT64_C(4000000000));
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* --- concurrency --- */

enum { KEYS_PER_THREAD = 40, THREADS = 8, SMALL = 60, LARGE = 3000, THRESHOLD = 1000 };

typedef struct worker_state {
    yyc_diskcache *dc;
    int id;
    double deadline;
    int version[KEYS_PER_THREAD]; /* -1: absent */
    size_t len[KEYS_PER_THREAD];
    int errors;
    long ops;
} worker_state;

static unsigned value_seed(int thread, int key, int version) {
    return (unsigned)(thread * 1000003 + key * 1009 + version * 7919);
}

static bool value_matches(const void *v, size_t len, unsigned seed) {
    unsigned char buf[LARGE];
    tk_fill(buf, len, seed);
    return len == 0 || memcmp(v, buf, len) == 0;
}

static void *mixed_worker(void *arg) {
    worker_state *w = arg;
    unsigned r = (unsigned)w->id * 7777u + 1u;
    unsigned char buf[LARGE];
    char key[32];
    while (test_now() < w->deadline) {
        int k = (int)(rand_r(&r) % KEYS_PER_THREAD);
        int op = (int)(rand_r(&r) % 10);
        snprintf(key, sizeof key, "t%d-k%d", w->id, k);
        w->ops++;
        if (op < 4) {
            int version = w->version[k] + 1;
            if (version < 1) version = 1;
            size_t len = (rand_r(&r) % 2) ? LARGE : SMALL;
            tk_fill(buf, len, value_seed(w->id, k, version));
            if (yyc_diskcache_set(w->dc, key, buf, len, &version, sizeof version) != YYC_OK) {
                w->errors++;
                continue;
            }
            w->version[k] = version;
            w->len[k] = len;
        } else if (op < 7) {
            void *v = NULL;
            size_t len = 0;
            int rc = yyc_diskcache_get(w->dc, key, &v, &len);
            if (w->version[k] < 0) {
                if (rc != YYC_NOTFOUND) w->errors++;
            } else if (rc != YYC_OK || len != w->len[k] ||
                       !value_matches(v, len, value_seed(w->id, k, w->version[k]))) {
                w->errors++;
            }
            yyc_free(v);
        } else if (op == 7) {
            if (yyc_diskcache_remove(w->dc, key) != YYC_OK) w->errors++;
            w->version[k] = -1;
        } else if (op == 8) {
            /* Trims that run their queries but cannot evict anything of ours. */
            int rc = YYC_OK;
            switch (rand_r(&r) % 4) {
            case 0: rc = yyc_diskcache_trim_to_count(w->dc, INT64_MAX - 1); break;
            case 1: rc = yyc_diskcache_trim_to_cost(w->dc, INT64_MAX - 1); break;
            case 2: rc = yyc_diskcache_trim_to_age(w->dc, 1e9); break;
            default: rc = yyc_diskcache_trim_to_free_space(w->dc, 1); break;
            }
            if (rc != YYC_OK) w->errors++;
        } else {
            bool has = yyc_diskcache_contains(w->dc, key);
            if (has != (w->version[k] >= 0)) w->errors++;
            int64_t n;
            if (yyc_diskcache_total_count(w->dc, &n) != YYC_OK) w->errors++;
        }
    }
    return NULL;
}

static void disk_cache_eight_threads_mixing_operations_lose_no_write(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-threads");
    /* Two handles on one path share the core; half the threads use each. */
    yyc_diskcache *h1 = open_dc(dir, THRESHOLD);
    yyc_diskcache *h2 = open_dc(dir, THRESHOLD);
    assert_ptr_equal(h1, h2);
    pthread_t th[THREADS];
    worker_state *w = calloc(THREADS, sizeof *w);
    double deadline = test_now() + 2.0;
    for (int i = 0; i < THREADS; i++) {
        w[i].dc = (i % 2) ? h2 : h1;
        w[i].id = i;
        w[i].deadline = deadline;
        for (int k = 0; k < KEYS_PER_THREAD; k++) w[i].version[k] = -1;
        pthread_create(&th[i], NULL, mixed_worker, &w[i]);
    }
    long ops = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ops += w[i].ops;
    }
    int64_t expect_count = 0, expect_cost = 0, expect_files = 0;
    char key[32];
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(w[i].errors, 0);
        for (int k = 0; k < KEYS_PER_THREAD; k++) {
            snprintf(key, sizeof key, "t%d-k%d", i, k);
            void *v = NULL;
            size_t len = 0;
            int rc = yyc_diskcache_get(h1, key, &v, &len);
            if (w[i].version[k] < 0) {
                assert_int_equal(rc, YYC_NOTFOUND);
                continue;
            }
            assert_int_equal(rc, YYC_OK);
            assert_int_equal(len, w[i].len[k]);
            assert_true(value_matches(v, len, value_seed(i, k, w[i].version[k])));
            yyc_free(v);
            void *ext;
            size_t ext_len;
            assert_int_equal(yyc_diskcache_get_extended_data(h2, key, &ext, &ext_len), YYC_OK);
            assert_int_equal(ext_len, sizeof(int));
            assert_memory_equal(ext, &w[i].version[k], sizeof(int));
            yyc_free(ext);
            expect_count++;
            expect_cost += (int64_t)len;
            if (len > THRESHOLD) expect_files++;
        }
    }
    assert_true(ops > 100);
    assert_int_equal(dc_count(h1), expect_count);
    assert_int_equal(dc_cost(h2), expect_cost);
    assert_int_equal(tk_int(dir, "select count(*) from manifest"), expect_count);
    assert_int_equal(tk_int(dir, "select sum(size) from manifest"), expect_cost);
    assert_int_equal(tk_int(dir, "select count(*) from manifest where filename is not null"),
                     expect_files);
    assert_int_equal(tk_count_entries(dir, "data"), (int)expect_files);
    free(w);
    yyc_diskcache_release(h1);
    yyc_diskcache_release(h2);
    test_rm_rf(dir);
    free(dir);
}

typedef struct churn_state {
    yyc_diskcache *dc;
    int id;
    double deadline;
    atomic_int *errors;
} churn_state;

static void *churn_worker(void *arg) {
    churn_state *c = arg;
    unsigned r = (unsigned)c->id * 31u + 7u;
    unsigned char buf[LARGE];
    char key[32];
    while (test_now() < c->deadline) {
        snprintf(key, sizeof key, "k%u", rand_r(&r) % 64);
        int rc = YYC_OK;
        switch (c->id) {
        case 0: /* the evictor */
            switch (rand_r(&r) % 6) {
            case 0: rc = yyc_diskcache_trim_to_count(c->dc, 20); break;
            case 1: rc = yyc_diskcache_trim_to_cost(c->dc, 20000); break;
            case 2: rc = yyc_diskcache_remove_all(c->dc); break;
            case 3: rc = yyc_diskcache_remove_all_progress(c->dc, NULL, NULL); break;
            case 4: rc = yyc_diskcache_trim_to_age(c->dc, 0.5); break;
            default: rc = yyc_diskcache_remove(c->dc, key); break;
            }
            usleep(2000);
            break;
        default: {
            size_t len = (rand_r(&r) % 2) ? LARGE : SMALL;
            tk_fill(buf, len, 1);
            if (rand_r(&r) % 2) {
                rc = yyc_diskcache_set(c->dc, key, buf, len, NULL, 0);
            } else {
                void *v = NULL;
                size_t got = 0;
                rc = yyc_diskcache_get(c->dc, key, &v, &got);
                if (rc == YYC_OK && got != SMALL && got != LARGE) rc = YYC_EIO;
                if (rc == YYC_NOTFOUND) rc = YYC_OK;
                yyc_free(v);
            }
        }
        }
        if (rc != YYC_OK) {
            (*c->errors)++;
            fprintf(stderr, "churn worker %d: %s\n", c->id, yyc_status_name(rc));
        }
    }
    return NULL;
}

static void disk_cache_evicting_trims_race_with_writers_without_errors(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-churn");
    yyc_diskcache *dc = open_dc(dir, THRESHOLD);
    yyc_diskcache_set_auto_trim_interval(dc, 0.01);
    yyc_diskcache_set_count_limit(dc, 30);
    atomic_int errors = 0;
    pthread_t th[6];
    churn_state c[6];
    double deadline = test_now() + 1.5;
    for (int i = 0; i < 6; i++) {
        c[i] = (churn_state){.dc = dc, .id = i, .deadline = deadline, .errors = &errors};
        pthread_create(&th[i], NULL, churn_worker, &c[i]);
    }
    for (int i = 0; i < 6; i++) pthread_join(th[i], NULL);
    assert_int_equal(errors, 0);
    /* Quiesce the auto-trim: a firing already under way finds no limit to enforce, and the
     * count below waits for it to release the lock. */
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    yyc_diskcache_set_count_limit(dc, INT64_MAX);
    (void)dc_count(dc);
    /* The manifest and the data folder agree. */
    int64_t files = tk_int(dir, "select count(*) from manifest where filename is not null");
    assert_int_equal(tk_count_entries(dir, "data"), (int)files);
    assert_int_equal(dc_cost(dc), tk_int(dir, "select sum(size) from manifest"));
    yyc_diskcache_release(dc);
    assert_true(WAIT_UNTIL(tk_count_entries(dir, "trash") == 0, 10));
    test_rm_rf(dir);
    free(dir);
}

typedef struct lifecycle_state {
    const char *path;
    int id;
    double deadline;
    atomic_int *errors;
    atomic_long *opens;
} lifecycle_state;

static void *lifecycle_worker(void *arg) {
    lifecycle_state *l = arg;
    unsigned r = (unsigned)l->id * 131u + 3u;
    char key[32], value[2000];
    memset(value, 'v', sizeof value);
    while (test_now() < l->deadline) {
        yyc_diskcache *dc = NULL;
        if (yyc_diskcache_open(l->path, 1000, &dc) != YYC_OK) {
            (*l->errors)++;
            continue;
        }
        (*l->opens)++;
        yyc_diskcache_set_auto_trim_interval(dc, 0.001 * (rand_r(&r) % 3));
        for (int i = 0; i < 5; i++) {
            snprintf(key, sizeof key, "k%u", rand_r(&r) % 16);
            size_t len = (rand_r(&r) % 2) ? sizeof value : 10;
            int rc = yyc_diskcache_set(dc, key, value, len, NULL, 0);
            void *v = NULL;
            size_t got;
            int rc2 = yyc_diskcache_get(dc, key, &v, &got);
            yyc_free(v);
            /* Another thread may close the shared core at any moment. */
            if ((rc != YYC_OK && rc != YYC_ECLOSED) ||
                (rc2 != YYC_OK && rc2 != YYC_NOTFOUND && rc2 != YYC_ECLOSED))
                (*l->errors)++;
        }
        if (rand_r(&r) % 4 == 0) yyc_diskcache_close(dc);
        if (rand_r(&r) % 8 == 0) {
            yyc_diskcache_retain(dc);
            yyc_diskcache_release(dc);
        }
        yyc_diskcache_release(dc);
    }
    return NULL;
}

static void disk_cache_opens_closes_and_releases_race_safely(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-lifecycle");
    atomic_int errors = 0;
    atomic_long opens = 0;
    enum { T = 6 };
    pthread_t th[T];
    lifecycle_state l[T];
    double deadline = test_now() + 1.5;
    for (int i = 0; i < T; i++) {
        l[i] = (lifecycle_state){
            .path = dir, .id = i, .deadline = deadline, .errors = &errors, .opens = &opens};
        pthread_create(&th[i], NULL, lifecycle_worker, &l[i]);
    }
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    assert_int_equal(errors, 0);
    assert_true(opens > T);
    /* Everything was released: a fresh open works and the folder is consistent. */
    yyc_diskcache *dc = open_dc(dir, 1000);
    int64_t files = tk_int(dir, "select count(*) from manifest where filename is not null");
    assert_int_equal(tk_count_entries(dir, "data"), (int)files);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

/* yyc_diskcache_try_get: a hit (with its time to live, counted as a hit); a miss, an expired
 * entry and an empty key are declined, uncounted, for yyc_diskcache_get to answer. */
static void disk_cache_try_get_serves_hits_and_leaves_the_rest_to_get(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-try-get");
    yyc_diskcache *dc = open_dc(dir, 20480);
    tk_set_str(dc, "k", "value");
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "ttl", "v", 1, NULL, 0, 100), YYC_OK);
    assert_int_equal(yyc_diskcache_set_with_ttl(dc, "gone", "v", 1, NULL, 0, 0), YYC_OK);
    static char big[30000];
    memset(big, 'b', sizeof big);
    assert_int_equal(yyc_diskcache_set(dc, "file", big, sizeof big, NULL, 0), YYC_OK);
    void *v = NULL;
    size_t len = 0;
    double ttl = 0;
    assert_true(yyc_diskcache_try_get(dc, "k", &v, &len, &ttl));
    assert_int_equal(len, 5);
    assert_memory_equal(v, "value", 5);
    assert_true(isinf(ttl));
    yyc_free(v);
    assert_true(yyc_diskcache_try_get(dc, "ttl", &v, &len, &ttl));
    assert_true(ttl > 0 && ttl <= 100);
    yyc_free(v);
    assert_true(yyc_diskcache_try_get(dc, "file", &v, &len, NULL)); /* a value in a file */
    assert_int_equal(len, sizeof big);
    assert_memory_equal(v, big, sizeof big);
    yyc_free(v);
    yyc_cache_statistics st;
    assert_int_equal(yyc_diskcache_statistics(dc, &st), YYC_OK);
    assert_int_equal(st.hits, 3);
    const char *declined[] = {"absent", "gone", ""};
    for (size_t i = 0; i < sizeof declined / sizeof *declined; i++) {
        v = (void *)1;
        assert_false(yyc_diskcache_try_get(dc, declined[i], &v, &len, &ttl));
        assert_null(v);
        assert_int_equal(len, 0);
    }
    assert_int_equal(yyc_diskcache_statistics(dc, &st), YYC_OK);
    assert_int_equal(st.hits, 3);
    assert_int_equal(st.misses, 0);
    /* The expired entry is still there for get to find and remove. */
    assert_int_equal(dc_count(dc), 4);
    assert_int_equal(yyc_diskcache_get(dc, "gone", &v, &len), YYC_NOTFOUND);
    assert_int_equal(dc_count(dc), 3);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

typedef struct lock_holder {
    yyc_diskcache *dc;
    atomic_bool holding, release;
} lock_holder;

static void *hold_core_lock(void *arg) {
    lock_holder *h = arg;
    yyc__dc_lock(&h->dc->lock); /* as a write waiting for the folder lock would */
    atomic_store(&h->holding, true);
    while (!atomic_load(&h->release)) usleep(1000);
    yyc__dc_unlock(&h->dc->lock);
    return NULL;
}

/* While another thread holds the core's lock, yyc_diskcache_try_get declines at once (a caller
 * that waited would never return here: the holder lets go only after the call). */
static void disk_cache_try_get_never_waits_for_the_lock(void **state) {
    (void)state;
    char *dir = test_temp_dir("dc-try-lock");
    yyc_diskcache *dc = open_dc(dir, 20480);
    tk_set_str(dc, "k", "value");
    lock_holder h = {.dc = dc};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_core_lock, &h), 0);
    assert_true(WAIT_UNTIL(atomic_load(&h.holding), 30.0));
    void *v = (void *)1;
    size_t len = 1;
    assert_false(yyc_diskcache_try_get(dc, "k", &v, &len, NULL));
    assert_null(v);
    atomic_store(&h.release, true);
    pthread_join(t, NULL);
    assert_true(yyc_diskcache_try_get(dc, "k", &v, &len, NULL));
    yyc_free(v);
    yyc_diskcache_release(dc);
    test_rm_rf(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(disk_cache_try_get_serves_hits_and_leaves_the_rest_to_get),
    cmocka_unit_test(disk_cache_try_get_never_waits_for_the_lock),
    cmocka_unit_test(disk_cache_open_returns_one_shared_core_per_canonical_path),
    cmocka_unit_test(disk_cache_concurrent_opens_of_one_path_share_one_core),
    cmocka_unit_test(disk_cache_defaults_and_limit_setters),
    cmocka_unit_test(disk_cache_values_above_the_threshold_go_to_md5_named_files),
    cmocka_unit_test(disk_cache_threshold_zero_stores_files_and_size_max_stores_inline),
    cmocka_unit_test(disk_cache_empty_keys_and_empty_values),
    cmocka_unit_test(disk_cache_extended_data_is_stored_and_read_without_touching_access_time),
    cmocka_unit_test(disk_cache_file_names_come_from_the_function_and_are_validated),
    cmocka_unit_test(disk_cache_remove_all_and_remove_all_with_progress),
    cmocka_unit_test(disk_cache_trims_follow_yydiskcache_sentinels_and_lru_order),
    cmocka_unit_test(disk_cache_free_space_trim_measures_the_cache_file_system),
    cmocka_unit_test(disk_cache_auto_trim_enforces_limits_on_its_interval),
    cmocka_unit_test(disk_cache_close_makes_every_call_return_closed),
    cmocka_unit_test(disk_cache_errors_reach_the_hook_after_the_lock_is_released),
    cmocka_unit_test(disk_cache_garbage_manifest_is_rebuilt_and_reported_through_the_hook),
    cmocka_unit_test(disk_cache_a_data_file_deleted_behind_its_back_is_a_miss),
    cmocka_unit_test(disk_cache_a_locked_manifest_gives_busy_and_keeps_the_data),
    cmocka_unit_test(disk_cache_totals_above_2_gib_do_not_wrap),
    cmocka_unit_test(disk_cache_eight_threads_mixing_operations_lose_no_write),
    cmocka_unit_test(disk_cache_evicting_trims_race_with_writers_without_errors),
    cmocka_unit_test(disk_cache_opens_closes_and_releases_race_safely),
};

YYC_TEST_MAIN(tests)
