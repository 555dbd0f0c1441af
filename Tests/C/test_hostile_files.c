/*
 * test_hostile_files.c - links and names planted in a cache folder never make the library
 * read, write or delete anything outside it; new folders are 0700 and files 0600 (issue 7).
 *
 * Every case builds an "outside" folder next to the cache with files whose content is known,
 * plants links (in data/, in trash/, in place of data/, trash/ or the manifest) or manifest
 * rows naming paths outside, drives writes, reads, removals, trims, remove-all and the trash
 * emptying, and then proves the outside folder is byte-for-byte unchanged.
 */
#include "reliability_support.h"

typedef struct fixture {
    char *root;    /* temporary folder holding both */
    char *cache;   /* root/cache */
    char *outside; /* root/outside: must never change */
} fixture;

/* outside/ holds: victim.txt, dir/a.txt, dir/b.txt, dir2/c.txt */
static void make_outside(const char *outside) {
    assert_int_equal(mkdir(outside, 0700), 0);
    char *p = rel_path(outside, "victim.txt");
    assert_true(rel_write_file(p, "precious victim", 15));
    free(p);
    p = rel_path(outside, "dir");
    assert_int_equal(mkdir(p, 0700), 0);
    char *q = rel_path(p, "a.txt");
    assert_true(rel_write_file(q, "precious a", 10));
    free(q);
    q = rel_path(p, "b.txt");
    assert_true(rel_write_file(q, "precious b", 10));
    free(q);
    free(p);
    p = rel_path(outside, "dir2");
    assert_int_equal(mkdir(p, 0700), 0);
    q = rel_path(p, "c.txt");
    assert_true(rel_write_file(q, "precious c", 10));
    free(q);
    free(p);
}

static void expect_file(const char *dir, const char *name, const char *content) {
    char *p = rel_path(dir, name);
    size_t len = 0;
    unsigned char *got = rel_read_file(p, &len);
    if (!got) fail_msg("outside file %s is gone", p);
    if (len != strlen(content) || memcmp(got, content, len) != 0)
        fail_msg("outside file %s changed: now \"%.*s\"", p, (int)len, (const char *)got);
    free(got);
    free(p);
}

static void expect_outside_unchanged(const fixture *f) {
    expect_file(f->outside, "victim.txt", "precious victim");
    expect_file(f->outside, "dir/a.txt", "precious a");
    expect_file(f->outside, "dir/b.txt", "precious b");
    expect_file(f->outside, "dir2/c.txt", "precious c");
    assert_int_equal(rel_count_entries(f->outside, NULL), 3);
    char *d = rel_path(f->outside, "dir");
    assert_int_equal(rel_count_entries(d, NULL), 2);
    free(d);
    d = rel_path(f->outside, "dir2");
    assert_int_equal(rel_count_entries(d, NULL), 1);
    free(d);
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->root = test_temp_dir("hostile");
    f->cache = rel_path(f->root, "cache");
    f->outside = rel_path(f->root, "outside");
    make_outside(f->outside);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    test_rm_rf(f->root);
    free(f->root);
    free(f->cache);
    free(f->outside);
    free(f);
    return 0;
}

static yyc_diskcache *open_ok(const char *dir) {
    yyc_diskcache *dc = NULL;
    int s = yyc_diskcache_open(dir, REL_THRESHOLD, &dc);
    if (s != YYC_OK) fail_msg("open: %s", rel_last_error());
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    return dc;
}

static int put(yyc_diskcache *dc, const char *key, uint64_t version) {
    size_t len;
    unsigned char *v = rel_value_make(key, version, &len);
    int s = yyc_diskcache_set(dc, key, v, len, NULL, 0);
    free(v);
    return s;
}

static uint64_t read_version(yyc_diskcache *dc, const char *key) {
    void *v = NULL;
    size_t len = 0;
    int s = yyc_diskcache_get(dc, key, &v, &len);
    uint64_t ver = 0;
    if (s == YYC_OK) {
        const char *why = NULL;
        ver = rel_value_check(key, v, len, &why);
        if (!ver) fail_msg("%s returned a wrong value (%zu bytes): %s", key, len, why);
    } else if (s != YYC_NOTFOUND) {
        fail_msg("get %s: %s", key, rel_last_error());
    }
    yyc_free(v);
    return ver;
}

/* data/<md5(key)> */
static char *value_file(const fixture *f, const char *key) {
    char name[33];
    yyc_kv_md5_filename(key, name);
    char *data = rel_path(f->cache, "data");
    char *p = rel_path(data, name);
    free(data);
    return p;
}

static void plant_link(const char *target, const char *link_path) {
    unlink(link_path);
    if (symlink(target, link_path) != 0) fail_msg("symlink %s: %s", link_path, strerror(errno));
}

static void expect_not_link(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) fail_msg("%s is still a link", path);
}

static void wait_trash_empty(const fixture *f) {
    char *trash = rel_path(f->cache, "trash");
    if (!WAIT_UNTIL(rel_count_entries(trash, NULL) == 0, 10.0))
        fail_msg("trash/ not emptied (%d entries)", rel_count_entries(trash, NULL));
    free(trash);
}

/* ---------------------------------------------------------------- links in data/ */

static void link_named_like_a_value_file_is_never_written_through(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_ok(f->cache);
    char *victim = rel_path(f->outside, "victim.txt");
    char *p = value_file(f, "k");
    plant_link(victim, p);
    /* Large: a file in data/, under a fresh name (the link holds md5("k"), so a variant of it;
     * the unreferenced link is left to the orphan sweep). */
    assert_int_equal(put(dc, "k", 3), YYC_OK);
    expect_outside_unchanged(f);
    assert_int_equal(read_version(dc, "k"), 3);
    /* Replacing it, and turning it inline (the old file is deleted), changes nothing outside. */
    plant_link(victim, p);
    assert_int_equal(put(dc, "k", 5), YYC_OK);
    plant_link(victim, p);
    assert_int_equal(put(dc, "k", 4), YYC_OK);
    expect_outside_unchanged(f);
    assert_int_equal(read_version(dc, "k"), 4);
    yyc_diskcache_release(dc);
    free(p);
    free(victim);
}

static void link_in_place_of_a_value_file_is_never_read_through(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_ok(f->cache);
    assert_int_equal(put(dc, "k", 3), YYC_OK);
    char *p = value_file(f, "k");
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    /* An outside file of exactly the recorded size, so that a size check cannot tell. */
    char *secret = rel_path(f->root, "secret");
    unsigned char *bytes = malloc((size_t)sb.st_size);
    memset(bytes, 'S', (size_t)sb.st_size);
    assert_true(rel_write_file(secret, bytes, (size_t)sb.st_size));
    free(bytes);
    plant_link(secret, p);
    assert_int_equal(read_version(dc, "k"), 0); /* a miss, never the secret's bytes */
    yyc_diskcache_release(dc);
    expect_outside_unchanged(f);
    struct stat ss;
    assert_int_equal(stat(secret, &ss), 0);
    assert_int_equal(ss.st_size, sb.st_size);
    free(secret);
    free(p);
}

static void remove_and_trims_never_delete_through_links(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_ok(f->cache);
    char *victim = rel_path(f->outside, "victim.txt");
    char *dir = rel_path(f->outside, "dir");
    const char *keys[] = {"r1", "r2", "r3", "r4"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(put(dc, keys[i], 3), YYC_OK);
        char *p = value_file(f, keys[i]);
        plant_link(i % 2 ? dir : victim, p);
        free(p);
    }
    assert_int_equal(yyc_diskcache_remove(dc, "r1"), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, 2), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_cost(dc, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_age(dc, 0), YYC_OK);
    expect_outside_unchanged(f);
    yyc_diskcache_release(dc);
    free(victim);
    free(dir);
}

static void remove_all_and_the_trash_never_follow_links(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_ok(f->cache);
    assert_int_equal(put(dc, "a", 3), YYC_OK);
    assert_int_equal(put(dc, "b", 2), YYC_OK);
    char *data = rel_path(f->cache, "data");
    char *trash = rel_path(f->cache, "trash");
    char *dir = rel_path(f->outside, "dir");
    char *dir2 = rel_path(f->outside, "dir2");
    char *victim = rel_path(f->outside, "victim.txt");
    /* In data/: links to an outside file and folder (moved to the trash by remove-all). */
    char *p = rel_path(data, "link-to-dir");
    plant_link(dir, p);
    free(p);
    p = value_file(f, "a");
    plant_link(victim, p);
    free(p);
    /* In trash/: a link to an outside folder, and a real folder holding a link to another. */
    p = rel_path(trash, "11111111-2222-4333-8444-555555555555");
    plant_link(dir2, p);
    free(p);
    /* Built next to the cache and renamed in whole: the trash emptying scheduled by the open
     * may run at any moment. */
    char *staging = rel_path(f->root, "REAL");
    assert_int_equal(mkdir(staging, 0700), 0);
    char *q = rel_path(staging, "inner-link");
    plant_link(dir, q);
    free(q);
    p = rel_path(trash, "REAL");
    assert_int_equal(rename(staging, p), 0);
    free(p);
    free(staging);
    assert_int_equal(yyc_diskcache_remove_all(dc), YYC_OK);
    wait_trash_empty(f);
    expect_outside_unchanged(f);
    assert_int_equal(read_version(dc, "a"), 0);
    yyc_diskcache_release(dc);
    /* The trash emptying at open, too. */
    p = rel_path(trash, "AAAAAAAA-2222-4333-8444-555555555555");
    plant_link(dir, p);
    free(p);
    dc = open_ok(f->cache);
    wait_trash_empty(f);
    yyc_diskcache_release(dc);
    expect_outside_unchanged(f);
    free(data);
    free(trash);
    free(dir);
    free(dir2);
    free(victim);
}

/* ---------------------------------------------------------------- links in place of folders */

static void links_in_place_of_data_trash_and_manifest_are_not_followed(void **state) {
    fixture *f = *state;
    assert_int_equal(mkdir(f->cache, 0700), 0);
    char *data = rel_path(f->cache, "data");
    char *trash = rel_path(f->cache, "trash");
    char *db = rel_path(f->cache, "manifest.sqlite");
    char *dir = rel_path(f->outside, "dir");
    char *dir2 = rel_path(f->outside, "dir2");
    char *victim = rel_path(f->outside, "victim.txt");
    plant_link(dir, data);
    plant_link(dir2, trash);
    plant_link(victim, db);
    yyc_diskcache *dc = open_ok(f->cache);
    assert_int_equal(put(dc, "x", 3), YYC_OK);
    assert_int_equal(put(dc, "y", 2), YYC_OK);
    assert_int_equal(read_version(dc, "x"), 3);
    assert_int_equal(yyc_diskcache_remove(dc, "x"), YYC_OK);
    assert_int_equal(yyc_diskcache_remove_all(dc), YYC_OK);
    wait_trash_empty(f);
    yyc_diskcache_release(dc);
    expect_outside_unchanged(f);
    expect_not_link(data);
    expect_not_link(trash);
    expect_not_link(db);
    free(data);
    free(trash);
    free(db);
    free(dir);
    free(dir2);
    free(victim);
}

/* The manifest's side files: links named manifest.sqlite-wal / -shm pointing outside must not
 * make SQLite write the WAL or map the shared-memory index into someone else's file. */
static void links_in_place_of_the_wal_and_shm_are_not_followed(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_ok(f->cache);
    assert_int_equal(put(dc, "x", 2), YYC_OK);
    yyc_diskcache_release(dc); /* clean close: no -wal / -shm left */
    char *wal = rel_path(f->cache, "manifest.sqlite-wal");
    char *shm = rel_path(f->cache, "manifest.sqlite-shm");
    char *victim = rel_path(f->outside, "victim.txt");
    char *a = rel_path(f->outside, "dir/a.txt");
    plant_link(victim, wal);
    plant_link(a, shm);
    yyc_diskcache *dc2 = NULL;
    int s = yyc_diskcache_open(f->cache, REL_THRESHOLD, &dc2);
    if (s == YYC_OK) {
        yyc_diskcache_set_auto_trim_interval(dc2, 0);
        s = put(dc2, "y", 4);
        fprintf(stderr, "write with planted -wal/-shm links: %s\n", yyc_status_name(s));
        if (s == YYC_OK) assert_int_equal(read_version(dc2, "y"), 4);
        yyc_diskcache_release(dc2);
    } else {
        fprintf(stderr, "open with planted -wal/-shm links: %s (%s)\n", yyc_status_name(s),
                rel_last_error());
    }
    expect_outside_unchanged(f);
    /* And the cache works: the links are removed at open (c208c6b). Before, SQLite refused
     * them (SQLITE_CANTOPEN, ELOOP) and every open failed until someone removed them
     * (BUG-WAL-LINK). */
    assert_int_equal(s, YYC_OK);
    expect_not_link(wal);
    expect_not_link(shm);
    free(wal);
    free(shm);
    free(victim);
    free(a);
}

/* ---------------------------------------------------------------- hostile manifest rows */

/* Rows whose file name is a path ("../../outside/victim.txt", an absolute path, a folder) are
 * never joined to data/: reads miss, removals, trims and remove-all touch nothing outside. */
static void manifest_rows_naming_outside_paths_are_never_followed(void **state) {
    fixture *f = *state;
    yyc_diskcache *dc = open_ok(f->cache);
    assert_int_equal(put(dc, "seed", 2), YYC_OK);
    yyc_diskcache_release(dc);
    char *victim = rel_path(f->outside, "victim.txt");
    char *db_path = rel_path(f->cache, "manifest.sqlite");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "INSERT INTO manifest (key, filename, size, inline_data, "
                                        "modification_time, last_access_time, extended_data) "
                                        "VALUES (?1, ?2, 15, NULL, 1, 1, NULL)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    const char *rows[][2] = {
        {"evil-relative", "../../outside/victim.txt"},
        {"evil-absolute", victim},
        {"evil-dotdot", ".."},
        {"evil-dir", "../../outside/dir"},
    };
    for (int i = 0; i < 4; i++) {
        sqlite3_bind_text(st, 1, rows[i][0], -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, rows[i][1], -1, SQLITE_TRANSIENT);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    dc = open_ok(f->cache);
    for (int i = 0; i < 4; i++) {
        void *v = NULL;
        size_t len = 0;
        int s = yyc_diskcache_get(dc, rows[i][0], &v, &len);
        if (s == YYC_OK && len == 15 && memcmp(v, "precious victim", 15) == 0)
            fail_msg("%s read a file outside the cache", rows[i][0]);
        yyc_free(v);
        assert_true(s == YYC_NOTFOUND || s == YYC_ECORRUPT);
    }
    expect_outside_unchanged(f);
    assert_int_equal(yyc_diskcache_remove(dc, "evil-relative"), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_count(dc, 1), YYC_OK);
    assert_int_equal(yyc_diskcache_trim_to_cost(dc, 0), YYC_OK);
    assert_int_equal(yyc_diskcache_remove_all(dc), YYC_OK);
    wait_trash_empty(f);
    yyc_diskcache_release(dc);
    expect_outside_unchanged(f);
    free(db_path);
    free(victim);
}

/* ---------------------------------------------------------------- modes */

static void expect_mode(const char *path, mode_t want) {
    struct stat sb;
    if (lstat(path, &sb) != 0) fail_msg("%s: %s", path, strerror(errno));
    if ((sb.st_mode & 07777) != want)
        fail_msg("%s has mode %04o, expected %04o", path, (unsigned)(sb.st_mode & 07777),
                 (unsigned)want);
}

static void new_folders_are_0700_and_files_0600(void **state) {
    fixture *f = *state;
    mode_t old = umask(022);
    char *nested = rel_path(f->cache, "parent");
    char *cache = rel_path(nested, "cache");
    yyc_diskcache *dc = open_ok(cache);
    assert_int_equal(put(dc, "large", 3), YYC_OK);
    assert_int_equal(put(dc, "small", 2), YYC_OK);
    char *data = rel_path(cache, "data");
    char *trash = rel_path(cache, "trash");
    char *db = rel_path(cache, "manifest.sqlite");
    char *wal = rel_path(cache, "manifest.sqlite-wal");
    char *shm = rel_path(cache, "manifest.sqlite-shm");
    char name[33];
    yyc_kv_md5_filename("large", name);
    char *file = rel_path(data, name);
    expect_mode(f->cache, 0700); /* created as a missing parent */
    expect_mode(nested, 0700);
    expect_mode(cache, 0700);
    expect_mode(data, 0700);
    expect_mode(trash, 0700);
    expect_mode(db, 0600);
    expect_mode(wal, 0600);
    expect_mode(shm, 0600);
    expect_mode(file, 0600);
    /* remove-all recreates data/ and the manifest: same modes. */
    assert_int_equal(yyc_diskcache_remove_all(dc), YYC_OK);
    assert_int_equal(put(dc, "large", 5), YYC_OK);
    expect_mode(data, 0700);
    expect_mode(db, 0600);
    expect_mode(wal, 0600);
    expect_mode(shm, 0600);
    expect_mode(file, 0600);
    yyc_diskcache_release(dc);
    umask(old);
    free(nested);
    free(cache);
    free(data);
    free(trash);
    free(db);
    free(wal);
    free(shm);
    free(file);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(link_named_like_a_value_file_is_never_written_through,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(link_in_place_of_a_value_file_is_never_read_through, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(remove_and_trims_never_delete_through_links, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(remove_all_and_the_trash_never_follow_links, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(links_in_place_of_data_trash_and_manifest_are_not_followed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(links_in_place_of_the_wal_and_shm_are_not_followed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(manifest_rows_naming_outside_paths_are_never_followed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(new_folders_are_0700_and_files_0600, setup, teardown),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
