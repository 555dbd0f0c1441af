/*
 * test_remote_cache.c - the three-tier yyc_cache (memory, disk, Redis) against a real
 * redis-server: back-fill, coherence between two instances (one process, and two processes
 * through fork/exec with a set/remove/get stress bounded by the stated staleness bound), near
 * entries not served while the invalidation link is down, and the near tiers going on while
 * Redis is full or gone.
 *
 * The two-process case re-executes this binary as "--child ..." (see main).
 */
#include "redis_support.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <sys/mman.h>

/* The staleness bound the README states: a value older than this is never read. */
#define STALENESS_BOUND 1.0

typedef struct hook_log {
    atomic_int count;
    atomic_int last_code;
} hook_log;

static void log_hook(void *ctx, const yyc_error *e) {
    hook_log *log = ctx;
    atomic_fetch_add(&log->count, 1);
    atomic_store(&log->last_code, e->code);
}

typedef struct instance {
    char folder[64];
    yyc_cache *cache;
    yyc_remote *remote;
} instance;

static void open_instance(instance *in, const char *url, const char *ns) {
    snprintf(in->folder, sizeof in->folder, "/tmp/yyc-rcache-XXXXXX");
    assert_non_null(mkdtemp(in->folder));
    assert_int_equal(yyc_cache_open(in->folder, &in->cache), YYC_OK);
    assert_int_equal(yyc_remote_open(url, ns, &in->remote), YYC_OK);
    /* Generous: the tests run on loaded machines (the fault cases set short ones). */
    assert_int_equal(yyc_remote_set_timeouts(in->remote, 10, 10), YYC_OK);
    assert_int_equal(yyc_cache_set_remote(in->cache, in->remote), YYC_OK);
}

static void close_instance(instance *in) {
    yyc_remote_set_error_hook(in->remote, NULL, NULL);
    yyc_remote_close(in->remote); /* the cache keeps its own reference */
    yyc_cache_free(in->cache);
    test_rm_rf(in->folder);
}

/* The cache's value for key as a string ("" for a miss). */
static char *get_text(yyc_cache *c, const char *key, char *buf, size_t cap) {
    void *v = NULL;
    size_t n = 0;
    buf[0] = '\0';
    if (yyc_cache_get(c, key, &v, &n) == YYC_OK) {
        snprintf(buf, cap, "%.*s", (int)n, (const char *)v);
        if (n == 0) snprintf(buf, cap, "(empty)");
    }
    yyc_free(v);
    return buf;
}

static void set_text(yyc_cache *c, const char *key, const char *text) {
    assert_int_equal(yyc_cache_set(c, key, text, strlen(text)), YYC_OK);
}

static bool remote_has(yyc_remote *r, const char *key) {
    void *v = NULL;
    size_t n = 0;
    bool found = yyc_remote_get(r, key, &v, &n) == YYC_OK;
    yyc_free(v);
    return found;
}

static uint64_t invalidations(yyc_remote *r) {
    yyc_remote_statistics st;
    yyc_remote_get_statistics(r, &st);
    return st.invalidations;
}

static void a_redis_hit_fills_the_near_tiers_and_writes_go_to_every_tier(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    instance a, b;
    open_instance(&a, s.url, "three");
    open_instance(&b, s.url, "three");
    char buf[64];
    uint64_t heard = invalidations(b.remote);
    set_text(a.cache, "k", "v1");
    /* (b hears of the write, and would drop a copy it read before that.) */
    assert_true(WAIT_UNTIL(invalidations(b.remote) > heard, 10));
    /* b has nothing near: Redis, then back-filled. */
    assert_false(yyc_memcache_contains(yyc_cache_memory(b.cache), "k", 1));
    assert_string_equal(get_text(b.cache, "k", buf, sizeof buf), "v1");
    assert_true(yyc_memcache_contains(yyc_cache_memory(b.cache), "k", 1));
    assert_true(yyc_diskcache_contains(yyc_cache_disk(b.cache), "k"));
    assert_true(yyc_cache_contains(b.cache, "k"));
    /* A time to live goes to Redis and the back-filled copies keep what is left of it. */
    heard = invalidations(b.remote);
    assert_int_equal(yyc_cache_set_with_ttl(a.cache, "t", "x", 1, 100), YYC_OK);
    assert_true(WAIT_UNTIL(invalidations(b.remote) > heard, 10));
    assert_string_equal(get_text(b.cache, "t", buf, sizeof buf), "x");
    double ttl = 0;
    assert_int_equal(yyc_diskcache_time_to_live(yyc_cache_disk(b.cache), "t", &ttl), YYC_OK);
    assert_true(ttl > 0 && ttl <= 100);
    /* Removals everywhere, then a miss in every tier once b's invalidation is done (counted
     * after memory, disk and memory again dropped the key: waiting only for memory to forget it
     * read the disk between the first two steps). */
    heard = invalidations(b.remote);
    assert_int_equal(yyc_cache_remove(a.cache, "k"), YYC_OK);
    void *v;
    size_t n;
    assert_int_equal(yyc_remote_get(a.remote, "k", &v, &n), YYC_NOTFOUND);
    assert_true(WAIT_UNTIL(invalidations(b.remote) > heard, 10));
    assert_false(yyc_memcache_contains(yyc_cache_memory(b.cache), "k", 1));
    assert_string_equal(get_text(b.cache, "k", buf, sizeof buf), "");
    /* remove_all empties the namespace in Redis. */
    set_text(a.cache, "r1", "x");
    assert_int_equal(yyc_cache_remove_all(b.cache), YYC_OK);
    assert_int_equal(yyc_remote_get(a.remote, "r1", &v, &n), YYC_NOTFOUND);
    assert_int_equal(yyc_cache_set_remote(a.cache, b.remote), YYC_EINVAL); /* once */
    close_instance(&a);
    close_instance(&b);
    test_redis_stop(&s);
}

static int count_load(void *ctx, const char *key, void **out_value, size_t *out_len) {
    (void)key;
    atomic_fetch_add((atomic_int *)ctx, 1);
    *out_value = malloc(6);
    memcpy(*out_value, "loaded", 6);
    *out_len = 6;
    return YYC_OK;
}

static void a_load_goes_to_redis_and_another_instance_reads_it_without_loading(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    instance a, b;
    open_instance(&a, s.url, "load");
    open_instance(&b, s.url, "load");
    atomic_int loads = 0;
    void *v = NULL;
    size_t n = 0;
    assert_int_equal(yyc_cache_get_or_load(a.cache, "k", count_load, &loads, &v, &n), YYC_OK);
    assert_int_equal(n, 6);
    yyc_free(v);
    assert_true(remote_has(a.remote, "k"));
    assert_int_equal(yyc_cache_get_or_load(b.cache, "k", count_load, &loads, &v, &n), YYC_OK);
    assert_memory_equal(v, "loaded", 6);
    yyc_free(v);
    assert_int_equal(atomic_load(&loads), 1);
    close_instance(&a);
    close_instance(&b);
    test_redis_stop(&s);
}

/* A loader during whose run the same process sets the key: the set is newer. */
static int load_after_a_set(void *ctx, const char *key, void **out, size_t *len) {
    set_text(ctx, key, "set");
    *out = strdup("loaded");
    *len = 6;
    return YYC_OK;
}

static void a_loaded_value_never_replaces_in_redis_a_set_made_after_the_miss(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    instance a, b;
    open_instance(&a, s.url, "loadset");
    open_instance(&b, s.url, "loadset");
    void *v = NULL;
    size_t n = 0;
    assert_int_equal(yyc_cache_get_or_load(a.cache, "k", load_after_a_set, a.cache, &v, &n),
                     YYC_OK);
    yyc_free(v);
    /* Redis, and so every other instance, keeps the set's value. */
    assert_int_equal(yyc_remote_get(a.remote, "k", &v, &n), YYC_OK);
    assert_int_equal(n, 3);
    assert_memory_equal(v, "set", 3);
    yyc_free(v);
    char buf[64];
    assert_string_equal(get_text(b.cache, "k", buf, sizeof buf), "set");
    close_instance(&a);
    close_instance(&b);
    test_redis_stop(&s);
}

static void another_instances_set_and_remove_reach_the_near_tiers(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    instance a, b;
    open_instance(&a, s.url, "coh");
    open_instance(&b, s.url, "coh");
    char buf[64];
    set_text(a.cache, "k", "old");
    for (int round = 0; round < 50; round++) {
        char want[32];
        snprintf(want, sizeof want, "v%d", round);
        get_text(b.cache, "k", buf, sizeof buf); /* b holds the current value near */
        set_text(a.cache, "k", want);
        /* Once the invalidation reached b, b never returns the old value. */
        assert_true(WAIT_UNTIL(strcmp(get_text(b.cache, "k", buf, sizeof buf), want) == 0, 10));
        /* And later reads (from the near tiers now) agree. */
        assert_string_equal(get_text(b.cache, "k", buf, sizeof buf), want);
    }
    assert_int_equal(yyc_cache_remove(a.cache, "k"), YYC_OK);
    assert_true(WAIT_UNTIL(get_text(b.cache, "k", buf, sizeof buf)[0] == '\0', 10));
    close_instance(&a);
    close_instance(&b);
    test_redis_stop(&s);
}

static void near_entries_from_redis_are_not_served_while_the_link_is_down(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    instance a, b;
    open_instance(&a, s.url, "down");
    open_instance(&b, s.url, "down");
    char buf[64];
    uint64_t heard = invalidations(b.remote);
    set_text(a.cache, "k", "v1");
    /* (b hears of the write first: a late invalidation would drop the copy read below.) */
    assert_true(WAIT_UNTIL(invalidations(b.remote) > heard, 10));
    assert_string_equal(get_text(b.cache, "k", buf, sizeof buf), "v1");
    assert_true(yyc_memcache_contains(yyc_cache_memory(b.cache), "k", 1));
    /* The link goes down and cannot come back: the default user loses the channel (Redis
     * disconnects its subscribers; a new SUBSCRIBE is refused). The pool still works. */
    yyc_remote_statistics st;
    REDIS_ADMIN(&s, "ACL", "SETUSER", "default", "resetchannels");
    assert_true(WAIT_UNTIL((yyc_remote_get_statistics(b.remote, &st), st.link_downs >= 1), 10));
    assert_false(st.invalidation_up);
    /* Writes b cannot hear about: b reads Redis, never its old copy. */
    set_text(a.cache, "k", "v2");
    assert_string_equal(get_text(b.cache, "k", buf, sizeof buf), "v2");
    set_text(a.cache, "k", "v3"); /* and it did not keep v2 near */
    assert_string_equal(get_text(b.cache, "k", buf, sizeof buf), "v3");
    /* Its own writes accepted by Redis are not kept near either. */
    set_text(b.cache, "own", "b1");
    set_text(a.cache, "own", "a1");
    assert_string_equal(get_text(b.cache, "own", buf, sizeof buf), "a1");
    /* The link back: near tiers in use again. */
    REDIS_ADMIN(&s, "ACL", "SETUSER", "default", "allchannels");
    assert_true(WAIT_UNTIL((yyc_remote_get_statistics(b.remote, &st), st.invalidation_up), 10));
    assert_true(WAIT_UNTIL((get_text(b.cache, "k", buf, sizeof buf),
                            yyc_memcache_contains(yyc_cache_memory(b.cache), "k", 1)),
                           10));
    set_text(a.cache, "k", "v4");
    assert_true(WAIT_UNTIL(strcmp(get_text(b.cache, "k", buf, sizeof buf), "v4") == 0, 10));
    close_instance(&a);
    close_instance(&b);
    test_redis_stop(&s);
}

static void a_full_or_dead_redis_is_reported_and_the_near_tiers_go_on(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    const char *extra[] = {"--maxmemory-policy", "noeviction", NULL};
    test_redis s;
    test_redis_start(&s, extra);
    instance a;
    open_instance(&a, s.url, "full");
    hook_log log = {0};
    yyc_remote_set_error_hook(a.remote, log_hook, &log);
    assert_int_equal(yyc_remote_set_timeouts(a.remote, 0.2, 0.2), YYC_OK);
    /* Full: a limit below what Redis uses already (every write refused, reads go on). */
    REDIS_ADMIN(&s, "CONFIG", "SET", "maxmemory", "1");
    assert_int_equal(yyc_remote_set(a.remote, "probe", "x", 1, 0), YYC_EIO);
    atomic_store(&log.count, 0);
    char buf[64];
    /* Redis refuses; the call succeeds on the near tiers. */
    assert_true(WAIT_UNTIL((set_text(a.cache, "k", "near only"), atomic_load(&log.count) > 0), 10));
    assert_int_equal(atomic_load(&log.last_code), YYC_EIO);
    assert_string_equal(get_text(a.cache, "k", buf, sizeof buf), "near only");
    /* Redis gone: same. */
    test_redis_kill(&s);
    yyc_remote_statistics st;
    /* (Once the link's loss is noticed: the near tiers are emptied then.) */
    assert_true(WAIT_UNTIL((yyc_remote_get_statistics(a.remote, &st), !st.invalidation_up), 10));
    /* (Until the link's flush has run, a write may still be dropped by it.) */
    assert_true(WAIT_UNTIL((set_text(a.cache, "k2", "still here"),
                            strcmp(get_text(a.cache, "k2", buf, sizeof buf), "still here") == 0),
                           10));
    assert_string_equal(get_text(a.cache, "k2", buf, sizeof buf), "still here");
    assert_int_equal(yyc_cache_remove(a.cache, "k2"), YYC_OK);
    assert_string_equal(get_text(a.cache, "k2", buf, sizeof buf), "");
    /* Back (empty): reconnects by itself; what the near tiers held is dropped on reconnect. */
    s.extra_count = 0;
    test_redis_launch(&s);
    assert_true(WAIT_UNTIL((yyc_remote_get_statistics(a.remote, &st), st.invalidation_up), 10));
    assert_true(WAIT_UNTIL(
        yyc_cache_set(a.cache, "k3", "x", 1) == YYC_OK && remote_has(a.remote, "k3"), 10));
    close_instance(&a);
    test_redis_stop(&s);
}

/* ---- two processes: a set/remove/get stress on the same keys ----
 *
 * Each key has one writer (keys of the parent: even, of the child: odd), which gives every
 * operation a version (a remove too) and, after the call returned, logs (version, time) in a
 * shared file. A read that starts at t may return a value of version v only if no operation of
 * the key with a higher version returned before t - STALENESS_BOUND. CLOCK_MONOTONIC is the
 * machine's, shared by both processes. */
#define STRESS_KEYS 8
#define STRESS_LOG 4096

typedef struct op_log {
    _Atomic uint64_t count;
    struct {
        _Atomic uint64_t version;
        _Atomic double at;
    } ops[STRESS_LOG];
} op_log;

typedef struct stress_map {
    op_log keys[STRESS_KEYS];
    atomic_long violations;
    atomic_long reads, hits;
} stress_map;

static stress_map *map_shared(const char *path, bool create) {
    int fd = open(path, O_RDWR | (create ? O_CREAT : 0), 0600);
    assert_true(fd >= 0);
    if (create) assert_int_equal(ftruncate(fd, sizeof(stress_map)), 0);
    void *p = mmap(NULL, sizeof(stress_map), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(p != MAP_FAILED);
    return p;
}

/* The highest version of key k whose operation returned before `before` (0: none known). */
static uint64_t settled_version(op_log *log, double before) {
    uint64_t n = atomic_load(&log->count);
    uint64_t lowest = n > STRESS_LOG ? n - STRESS_LOG : 0;
    for (uint64_t i = n; i > lowest; i--) {
        uint64_t slot = (i - 1) % STRESS_LOG;
        if (atomic_load(&log->ops[slot].at) < before) return atomic_load(&log->ops[slot].version);
    }
    return 0;
}

/* Runs for `seconds` (longer than the bound: a stale copy kept past it is seen). */
static void stress(const char *url, const char *folder, stress_map *map, int parity,
                   double seconds) {
    yyc_cache *c = NULL;
    yyc_remote *r = NULL;
    assert_int_equal(yyc_cache_open(folder, &c), YYC_OK);
    assert_int_equal(yyc_remote_open(url, "stress", &r), YYC_OK);
    assert_int_equal(yyc_remote_set_timeouts(r, 10, 10), YYC_OK);
    assert_int_equal(yyc_cache_set_remote(c, r), YYC_OK);
    yyc_remote_close(r);
    unsigned seed = (unsigned)getpid();
    double end = test_now() + seconds;
    while (test_now() < end) {
        int k = rand_r(&seed) % STRESS_KEYS;
        char key[8];
        snprintf(key, sizeof key, "k%d", k);
        if (k % 2 == parity && rand_r(&seed) % 3 == 0) {
            /* Versions of one writer per key; the log's count tells the next one. */
            uint64_t v = atomic_load(&map->keys[k].count) + 1;
            if (rand_r(&seed) % 4 == 0) {
                assert_int_equal(yyc_cache_remove(c, key), YYC_OK);
            } else {
                char text[24];
                int n = snprintf(text, sizeof text, "%llu", (unsigned long long)v);
                assert_int_equal(yyc_cache_set(c, key, text, (size_t)n), YYC_OK);
            }
            op_log *log = &map->keys[k];
            uint64_t slot = (v - 1) % STRESS_LOG;
            atomic_store(&log->ops[slot].version, v);
            atomic_store(&log->ops[slot].at, test_now());
            atomic_store(&log->count, v);
        } else {
            double start = test_now();
            void *value = NULL;
            size_t n = 0;
            int rc = yyc_cache_get(c, key, &value, &n);
            atomic_fetch_add(&map->reads, 1);
            if (rc == YYC_OK) {
                atomic_fetch_add(&map->hits, 1);
                char text[24] = {0};
                memcpy(text, value, n < 23 ? n : 23);
                uint64_t got = strtoull(text, NULL, 10);
                uint64_t settled = settled_version(&map->keys[k], start - STALENESS_BOUND);
                if (got < settled) {
                    atomic_fetch_add(&map->violations, 1);
                    fprintf(stderr, "stale read: %s version %llu, settled %llu\n", key,
                            (unsigned long long)got, (unsigned long long)settled);
                }
            }
            yyc_free(value);
        }
    }
    yyc_cache_free(c);
}

static void two_processes_never_read_a_value_older_than_the_staleness_bound(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    char map_path[256], parent_folder[256], child_folder[256];
    snprintf(map_path, sizeof map_path, "%s/stress.map", s.dir);
    snprintf(parent_folder, sizeof parent_folder, "%s/parent", s.dir);
    snprintf(child_folder, sizeof child_folder, "%s/child", s.dir);
    stress_map *map = map_shared(map_path, true);
    /* Four times the bound; YYC_MP_SECONDS (make soak) for longer. */
    double seconds =
        getenv("YYC_MP_SECONDS") ? atof(getenv("YYC_MP_SECONDS")) : 4 * STALENESS_BOUND;
    char seconds_text[32];
    snprintf(seconds_text, sizeof seconds_text, "%g", seconds);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_remote_cache", "--child", s.url, map_path, child_folder,
              seconds_text, (char *)NULL);
        _exit(127);
    }
    stress(s.url, parent_folder, map, 0, seconds);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    print_message("reads %ld, hits %ld\n", atomic_load(&map->reads), atomic_load(&map->hits));
    assert_int_equal(atomic_load(&map->violations), 0);
    assert_true(atomic_load(&map->hits) > 0);
    munmap(map, sizeof *map);
    test_redis_stop(&s);
}

/* ---- invalidations while another process holds the disk folder's write lock ---- */

/* The child (re-executed as "--hold-lock db in_fd out_fd"): takes SQLite's write lock on the
 * manifest (BEGIN IMMEDIATE on its own connection), says so on out_fd, and keeps it until
 * in_fd is written to or closed. */
static int hold_lock(const char *db, int in_fd, int out_fd) {
    sqlite3 *raw = NULL;
    if (sqlite3_open_v2(db, &raw, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) return 2;
    sqlite3_busy_timeout(raw, 10000);
    if (sqlite3_exec(raw, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) return 3;
    char byte = 'L';
    if (write(out_fd, &byte, 1) != 1) return 4;
    while (read(in_fd, &byte, 1) < 0 && errno == EINTR) {
    }
    sqlite3_exec(raw, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(raw);
    return 0;
}

static void expect_one_of(yyc_cache *c, const char *key, const char *a, const char *b) {
    char buf[64];
    get_text(c, key, buf, sizeof buf);
    if (strcmp(buf, a) != 0 && strcmp(buf, b) != 0)
        fail_msg("%s read \"%s\", neither \"%s\" nor \"%s\"", key, buf, a, b);
}

/* b sets k3 (version round), a hears it and reads it: whether a's memory tier kept it. */
static bool served_near_after_a_set(instance *a, instance *b, int round) {
    char v[16], buf[64];
    snprintf(v, sizeof v, "r%d", round);
    uint64_t before = invalidations(a->remote);
    set_text(b->cache, "k3", v);
    if (!WAIT_UNTIL(invalidations(a->remote) > before, 10)) return false;
    get_text(a->cache, "k3", buf, sizeof buf);
    return strcmp(buf, v) == 0 && yyc_memcache_contains(yyc_cache_memory(a->cache), "k3", 2);
}

static void
invalidations_wait_for_a_process_holding_the_disk_lock_and_nothing_stale_is_read(void **state) {
    (void)state;
    REDIS_OR_SKIP();
    test_redis s;
    test_redis_start(&s, NULL);
    instance a, b;
    open_instance(&a, s.url, "held");
    open_instance(&b, s.url, "held");
    char buf[64];
    const char *keys[3] = {"k0", "k1", "k2"};
    for (int i = 0; i < 3; i++) {
        uint64_t heard = invalidations(a.remote);
        set_text(b.cache, keys[i], "old");
        assert_true(WAIT_UNTIL(invalidations(a.remote) > heard, 10));
        /* a holds the old value near (memory and disk). */
        assert_string_equal(get_text(a.cache, keys[i], buf, sizeof buf), "old");
        assert_true(yyc_diskcache_contains(yyc_cache_disk(a.cache), keys[i]));
    }
    int to_child[2], from_child[2];
    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(from_child), 0);
    char db[256], in_fd[16], out_fd[16];
    snprintf(db, sizeof db, "%s/manifest.sqlite", a.folder);
    snprintf(in_fd, sizeof in_fd, "%d", to_child[0]);
    snprintf(out_fd, sizeof out_fd, "%d", from_child[1]);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_remote_cache", "--hold-lock", db, in_fd, out_fd,
              (char *)NULL);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    char byte;
    assert_int_equal(read(from_child[0], &byte, 1), 1); /* the child holds the lock */
    uint64_t heard = invalidations(a.remote);
    for (int i = 0; i < 3; i++) set_text(b.cache, keys[i], "new");
    /* The lock is kept until every invalidation counted, or past the disk's busy timeout (5 s),
     * so that a removal that gave up is covered too. (No reads meanwhile: a read of the disk
     * tier may itself wait for the lock.) */
    double until = test_now() + 7;
    while (test_now() < until && invalidations(a.remote) < heard + 3) usleep(20000);
    uint64_t counted = invalidations(a.remote) - heard;
    byte = 'U';
    assert_int_equal(write(to_child[1], &byte, 1), 1);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    close(to_child[1]);
    close(from_child[0]);
    /* A key whose invalidation counted while the lock was held never reads its old value (they
     * count in order); the others read old or new until theirs counts. */
    for (int i = 0; i < 3; i++) {
        if ((uint64_t)i < counted) assert_string_equal(get_text(a.cache, keys[i], buf, 64), "new");
        else expect_one_of(a.cache, keys[i], "old", "new");
    }
    print_message("invalidations counted while the lock was held: %llu of 3\n",
                  (unsigned long long)counted);
    /* The lock gone: every invalidation counts, and only the new values are read. */
    assert_true(WAIT_UNTIL(invalidations(a.remote) >= heard + 3, 30));
    for (int i = 0; i < 3; i++)
        assert_string_equal(get_text(a.cache, keys[i], buf, sizeof buf), "new");
    /* And the near tiers are served again once a later invalidation found the disk free. */
    int round = 0;
    assert_true(WAIT_UNTIL(served_near_after_a_set(&a, &b, ++round), 30));
    close_instance(&a);
    close_instance(&b);
    test_redis_stop(&s);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_redis_hit_fills_the_near_tiers_and_writes_go_to_every_tier),
    cmocka_unit_test(a_load_goes_to_redis_and_another_instance_reads_it_without_loading),
    cmocka_unit_test(a_loaded_value_never_replaces_in_redis_a_set_made_after_the_miss),
    cmocka_unit_test(another_instances_set_and_remove_reach_the_near_tiers),
    cmocka_unit_test(near_entries_from_redis_are_not_served_while_the_link_is_down),
    cmocka_unit_test(a_full_or_dead_redis_is_reported_and_the_near_tiers_go_on),
    cmocka_unit_test(two_processes_never_read_a_value_older_than_the_staleness_bound),
    cmocka_unit_test(
        invalidations_wait_for_a_process_holding_the_disk_lock_and_nothing_stale_is_read),
};

int main(int argc, char **argv) {
    if (argc == 6 && strcmp(argv[1], "--child") == 0) {
        stress_map *map = map_shared(argv[3], false);
        stress(argv[2], argv[4], map, 1, atof(argv[5]));
        return atomic_load(&map->violations) == 0 ? 0 : 1;
    }
    if (argc == 5 && strcmp(argv[1], "--hold-lock") == 0)
        return hold_lock(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
