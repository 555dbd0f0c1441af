/*
 * test_crash_consistency.c - the disk cache survives SIGKILL at any moment (issue 7).
 *
 * A harness (this binary re-executed as "--child harness") opens a yyc_diskcache and loops
 * forever writing, replacing and removing small (inline) and large (data/ file) values that
 * check themselves (reliability_support.h), with occasional remove-all (fast and slow), trims,
 * reads and contains - verifying every read against what it knows it wrote. Before each call
 * it appends a BEGIN record to a log, after it an END record (plain write(2) to an O_APPEND
 * file: the page cache survives SIGKILL, so no fsync is needed against a process crash; a power
 * cut is out of scope). The test kills the harness with SIGKILL after a random delay, then a
 * fresh process ("--child check") reopens the cache and checks, against the log:
 *   - the cache opens;
 *   - no manifest row names a missing data file (after the startup reconciliation);
 *   - every key reads either nothing or a complete value of a version that may be there: the
 *     last acknowledged one, or the one whose write was cut (a miss is allowed only for a key
 *     that was absent, or whose write/remove was cut); extended data matches the value;
 *   - an interrupted remove-all is all-or-nothing, and no value from before a completed
 *     remove-all ever comes back;
 *   - trash/ is emptied by the next open (polled with a deadline).
 * The checker then logs what it saw (OBSERVE records), so the next cycle starts from a known
 * state.
 *
 * A second, deterministic test interposes the file-system calls that mutate the namespace
 * (open with O_CREAT, rename*, unlink*, mkdir*, rmdir) in this binary - the library is linked in
 * statically and SQLite resolves them through the executable too - and kills the harness
 * before or after the Nth such call during one operation, for every N, for remove-all and
 * other operations that touch files.
 *
 * A third runs the same mixed workload in one process for a while and checks that the heap
 * does not grow (soak).
 *
 * Environment: YYC_SOAK_CYCLES (default 30) raises the number of random kill cycles;
 * YYC_CRASH_SEED sets the seed (printed on failure); YYC_SOAK_OPS (default 5000) the length of
 * the memory-growth workload; YYC_CRASHPOINT_STRIDE samples the crash points.
 */
#include "reliability_support.h"

#include <dlfcn.h>
#include <malloc.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>

/* ---------------------------------------------------------------- the log */

#define NKEYS 40
#define ALL_KEYS 0xFFFFu

enum { REC_BEGIN = 1, REC_END = 2, REC_OBSERVE = 3, REC_SESSION = 4 };
enum {
    OP_NONE = 0,
    OP_SET = 1,
    OP_REMOVE = 2,
    OP_REMOVE_ALL = 3,
    OP_REMOVE_ALL_SLOW = 4,
    OP_TRIM = 5,
    OP_FLUSH = 6,
    OP_COUNT = 7
};
static const char *const op_names[OP_COUNT] = {
    "none", "set", "remove", "remove_all", "remove_all_progress", "trim", "flush"};

#define REC_MAGIC 0x4C435959u /* "YYCL" */

typedef struct rec {
    uint32_t magic;
    uint32_t status;
    uint64_t version;
    uint16_t key;
    uint8_t kind;
    uint8_t op;
    uint32_t check;
} rec;

static uint32_t rec_sum(const rec *r) {
    const unsigned char *p = (const unsigned char *)r;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < offsetof(rec, check); i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

static void key_name(unsigned k, char out[16]) { snprintf(out, 16, "key-%02u", k); }

static int log_open(const char *path) {
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror("open log");
        _exit(2);
    }
    /* Drop a record cut by a kill (never seen in practice: records are 32 bytes). */
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size % (off_t)sizeof(rec) != 0)
        if (ftruncate(fd, st.st_size - st.st_size % (off_t)sizeof(rec)) != 0) _exit(2);
    return fd;
}

static void log_rec(int fd, int kind, int op, unsigned key, uint64_t version, int status) {
    rec r;
    memset(&r, 0, sizeof r);
    r.magic = REC_MAGIC;
    r.status = (uint32_t)status;
    r.version = version;
    r.key = (uint16_t)key;
    r.kind = (uint8_t)kind;
    r.op = (uint8_t)op;
    r.check = rec_sum(&r);
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r) {
        perror("write log");
        _exit(2);
    }
}

/* What the log allows for each key. */
typedef struct key_state {
    uint64_t acked;    /* last acknowledged version, 0 = absent */
    uint64_t inflight; /* a version whose write began and has not been acknowledged, or 0 */
    bool may_absent;   /* a remove, remove-all or trim touching the key began unacknowledged */
} key_state;

typedef struct replay {
    key_state k[NKEYS];
    bool remove_all_open; /* a fast remove-all began and was not acknowledged */
    int open_op;          /* op of the last BEGIN without END */
    uint64_t max_version;
    long begins[OP_COUNT]; /* calls started, by op */
    long cut[OP_COUNT];    /* calls cut by a kill, by op */
    long sessions, bad_records;
} replay;

static void replay_close_open_op(replay *r) {
    if (r->open_op != OP_NONE) r->cut[r->open_op]++;
    r->open_op = OP_NONE;
}

static void replay_log(const char *path, replay *r) {
    memset(r, 0, sizeof *r);
    size_t len = 0;
    unsigned char *buf = rel_read_file(path, &len);
    if (!buf) return;
    for (size_t off = 0; off + sizeof(rec) <= len; off += sizeof(rec)) {
        rec x;
        memcpy(&x, buf + off, sizeof x);
        if (x.magic != REC_MAGIC || x.check != rec_sum(&x)) {
            r->bad_records++;
            continue;
        }
        if (x.version > r->max_version) r->max_version = x.version;
        key_state *ks = x.key < NKEYS ? &r->k[x.key] : NULL;
        switch (x.kind) {
        case REC_SESSION:
            replay_close_open_op(r);
            r->sessions++;
            break;
        case REC_OBSERVE:
            replay_close_open_op(r);
            r->remove_all_open = false;
            if (ks) {
                ks->acked = x.version;
                ks->inflight = 0;
                ks->may_absent = false;
            }
            break;
        case REC_BEGIN:
            replay_close_open_op(r);
            r->open_op = x.op;
            if (x.op < OP_COUNT) r->begins[x.op]++;
            if (x.op == OP_SET && ks) ks->inflight = x.version;
            if (x.op == OP_REMOVE && ks) ks->may_absent = true;
            if (x.op == OP_REMOVE_ALL || x.op == OP_REMOVE_ALL_SLOW || x.op == OP_TRIM)
                for (int i = 0; i < NKEYS; i++) r->k[i].may_absent = true;
            if (x.op == OP_REMOVE_ALL) r->remove_all_open = true;
            break;
        case REC_END:
            r->open_op = OP_NONE;
            if (x.status != YYC_OK) break; /* the harness stops at the first error */
            if (x.op == OP_SET && ks) {
                ks->acked = x.version;
                ks->inflight = 0;
                ks->may_absent = false;
            }
            if (x.op == OP_REMOVE && ks) {
                ks->acked = 0;
                ks->inflight = 0;
                ks->may_absent = false;
            }
            if (x.op == OP_REMOVE_ALL || x.op == OP_REMOVE_ALL_SLOW) {
                for (int i = 0; i < NKEYS; i++) {
                    r->k[i].acked = 0;
                    r->k[i].inflight = 0;
                    r->k[i].may_absent = false;
                }
                r->remove_all_open = false;
            }
            /* OP_TRIM: every key stays may_absent until its OBSERVE record. */
            break;
        default: r->bad_records++;
        }
    }
    free(buf);
}

static bool state_allows(const key_state *ks, uint64_t seen) {
    if (seen == 0) return ks->acked == 0 || ks->may_absent || ks->inflight != 0;
    return seen == ks->acked || seen == ks->inflight;
}

static bool state_exact(const key_state *ks) { return !ks->may_absent && ks->inflight == 0; }

/* ---------------------------------------------------------------- crash points */

/* When > 0, the countdown of namespace-changing file-system calls (each counts twice: before
 * and after the call); the process kills itself with SIGKILL when it reaches 0. */
static atomic_long crash_countdown;

static void crash_point(void) {
    if (atomic_load(&crash_countdown) > 0 && atomic_fetch_sub(&crash_countdown, 1) == 1)
        raise(SIGKILL);
}

#define REAL(name)                        \
    static __typeof__(&name) real_##name; \
    if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

int rename(const char *a, const char *b) {
    REAL(rename);
    crash_point();
    int r = real_rename(a, b);
    crash_point();
    return r;
}

int renameat(int da, const char *a, int db, const char *b) {
    REAL(renameat);
    crash_point();
    int r = real_renameat(da, a, db, b);
    crash_point();
    return r;
}

int renameat2(int da, const char *a, int db, const char *b, unsigned flags) {
    REAL(renameat2);
    crash_point();
    int r = real_renameat2(da, a, db, b, flags);
    crash_point();
    return r;
}

int unlink(const char *p) {
    REAL(unlink);
    crash_point();
    int r = real_unlink(p);
    crash_point();
    return r;
}

int unlinkat(int d, const char *p, int flags) {
    REAL(unlinkat);
    crash_point();
    int r = real_unlinkat(d, p, flags);
    crash_point();
    return r;
}

int rmdir(const char *p) {
    REAL(rmdir);
    crash_point();
    int r = real_rmdir(p);
    crash_point();
    return r;
}

int mkdir(const char *p, mode_t m) {
    REAL(mkdir);
    crash_point();
    int r = real_mkdir(p, m);
    crash_point();
    return r;
}

int mkdirat(int d, const char *p, mode_t m) {
    REAL(mkdirat);
    crash_point();
    int r = real_mkdirat(d, p, m);
    crash_point();
    return r;
}

int open(const char *p, int flags, ...) {
    REAL(open);
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    bool creates = (flags & O_CREAT) != 0;
    if (creates) crash_point();
    int r = real_open(p, flags, mode);
    if (creates) crash_point();
    return r;
}

int openat(int d, const char *p, int flags, ...) {
    REAL(openat);
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    bool creates = (flags & O_CREAT) != 0;
    if (creates) crash_point();
    int r = real_openat(d, p, flags, mode);
    if (creates) crash_point();
    return r;
}

/* SQLite is a shared library: its file calls do not reach the definitions above, so they
 * are routed through the unix VFS's documented system-call overrides instead (creating and
 * deleting the -wal/-shm files, truncating and writing them: a kill between two WAL frames). */
static sqlite3_syscall_ptr sq_open, sq_unlink, sq_mkdir, sq_rmdir, sq_ftruncate, sq_pwrite64;

static int cp_open(const char *p, int flags, int mode) {
    bool creates = (flags & O_CREAT) != 0;
    if (creates) crash_point();
    int r = ((int (*)(const char *, int, int))sq_open)(p, flags, mode);
    if (creates) crash_point();
    return r;
}
static int cp_unlink(const char *p) {
    crash_point();
    int r = ((int (*)(const char *))sq_unlink)(p);
    crash_point();
    return r;
}
static int cp_mkdir(const char *p, mode_t m) {
    crash_point();
    int r = ((int (*)(const char *, mode_t))sq_mkdir)(p, m);
    crash_point();
    return r;
}
static int cp_rmdir(const char *p) {
    crash_point();
    int r = ((int (*)(const char *))sq_rmdir)(p);
    crash_point();
    return r;
}
static int cp_ftruncate(int fd, off_t len) {
    crash_point();
    int r = ((int (*)(int, off_t))sq_ftruncate)(fd, len);
    crash_point();
    return r;
}
static ssize_t cp_pwrite64(int fd, const void *buf, size_t n, off_t off) {
    ssize_t r = ((ssize_t(*)(int, const void *, size_t, off_t))sq_pwrite64)(fd, buf, n, off);
    crash_point(); /* after each write: the next one (or the commit) never happens */
    return r;
}

static void install_sqlite_crash_points(void) {
    sqlite3_vfs *vfs = sqlite3_vfs_find(NULL);
    if (!vfs || vfs->iVersion < 3 || !vfs->xSetSystemCall) return;
#define OVERRIDE(name, var)                                                       \
    do {                                                                          \
        var = vfs->xGetSystemCall(vfs, #name);                                    \
        if (var) vfs->xSetSystemCall(vfs, #name, (sqlite3_syscall_ptr)cp_##name); \
    } while (0)
    OVERRIDE(open, sq_open);
    OVERRIDE(unlink, sq_unlink);
    OVERRIDE(mkdir, sq_mkdir);
    OVERRIDE(rmdir, sq_rmdir);
    OVERRIDE(ftruncate, sq_ftruncate);
    OVERRIDE(pwrite64, sq_pwrite64);
#undef OVERRIDE
}

/* ---------------------------------------------------------------- the harness */

typedef struct harness {
    yyc_diskcache *dc;
    int log_fd;
    replay st;
    uint64_t rng;
    uint64_t next_version; /* even; +1 for a large value */
    char trash[4096];
} harness;

static void harness_fail(const char *what, unsigned k, int status) {
    fprintf(stderr, "harness: %s on key %u: status %s, last error %s\n", what, k,
            yyc_status_name(status), rel_last_error());
    _exit(4);
}

static void harness_open(harness *h, const char *dir, const char *log) {
    h->log_fd = log_open(log);
    replay_log(log, &h->st);
    h->next_version = (h->st.max_version | 1) + 1;
    snprintf(h->trash, sizeof h->trash, "%s/trash", dir);
    log_rec(h->log_fd, REC_SESSION, OP_NONE, ALL_KEYS, 0, 0);
    int s = yyc_diskcache_open(dir, REL_THRESHOLD, &h->dc);
    if (s != YYC_OK) harness_fail("open", ALL_KEYS, s);
    yyc_diskcache_set_auto_trim_interval(h->dc, 0); /* no evictions behind the log's back */
}

static void h_set(harness *h, unsigned k, bool large) {
    char key[16];
    key_name(k, key);
    uint64_t v = h->next_version + (large ? 1 : 0);
    h->next_version += 2;
    size_t len;
    unsigned char *value = rel_value_make(key, v, &len);
    rel_ext ext = rel_ext_make(key, v);
    log_rec(h->log_fd, REC_BEGIN, OP_SET, k, v, 0);
    int s = yyc_diskcache_set(h->dc, key, value, len, &ext, sizeof ext);
    log_rec(h->log_fd, REC_END, OP_SET, k, v, s);
    free(value);
    if (s != YYC_OK) harness_fail("set", k, s);
    h->st.k[k] = (key_state){v, 0, false};
}

static void h_remove(harness *h, unsigned k) {
    char key[16];
    key_name(k, key);
    log_rec(h->log_fd, REC_BEGIN, OP_REMOVE, k, 0, 0);
    int s = yyc_diskcache_remove(h->dc, key);
    log_rec(h->log_fd, REC_END, OP_REMOVE, k, 0, s);
    if (s != YYC_OK) harness_fail("remove", k, s);
    h->st.k[k] = (key_state){0, 0, false};
}

/* Reads key k and checks it against the harness's own knowledge. */
static void h_get(harness *h, unsigned k) {
    char key[16];
    key_name(k, key);
    key_state *ks = &h->st.k[k];
    void *value = NULL;
    size_t len = 0;
    int s = yyc_diskcache_get(h->dc, key, &value, &len);
    uint64_t seen = 0;
    if (s == YYC_OK) {
        const char *why = NULL;
        seen = rel_value_check(key, value, len, &why);
        if (!seen) {
            fprintf(stderr, "harness: key %u read a bad value (%zu bytes): %s\n", k, len, why);
            _exit(3);
        }
    } else if (s != YYC_NOTFOUND) {
        harness_fail("get", k, s);
    }
    yyc_free(value);
    bool ok = state_exact(ks) ? seen == ks->acked : state_allows(ks, seen);
    if (!ok) {
        fprintf(stderr,
                "harness: key %u read version %llu, expected %llu (inflight %llu, may be "
                "absent %d)\n",
                k, (unsigned long long)seen, (unsigned long long)ks->acked,
                (unsigned long long)ks->inflight, ks->may_absent);
        _exit(3);
    }
    if (seen) {
        void *ext = NULL;
        size_t ext_len = 0;
        s = yyc_diskcache_get_extended_data(h->dc, key, &ext, &ext_len);
        if (s != YYC_OK) harness_fail("get_extended_data", k, s);
        rel_ext want = rel_ext_make(key, seen);
        if (ext_len != sizeof want || memcmp(ext, &want, sizeof want) != 0) {
            fprintf(stderr, "harness: key %u: extended data does not match the value\n", k);
            _exit(3);
        }
        yyc_free(ext);
    }
    *ks = (key_state){seen, 0, false};
}

static void h_contains(harness *h, unsigned k) {
    key_state *ks = &h->st.k[k];
    if (!state_exact(ks)) return;
    char key[16];
    key_name(k, key);
    bool c = yyc_diskcache_contains(h->dc, key);
    if (c != (ks->acked != 0)) {
        fprintf(stderr, "harness: contains(key %u) = %d but the key is %s\n", k, c,
                ks->acked ? "present" : "absent");
        _exit(3);
    }
}

static void h_remove_all(harness *h, bool slow) {
    int op = slow ? OP_REMOVE_ALL_SLOW : OP_REMOVE_ALL;
    log_rec(h->log_fd, REC_BEGIN, op, ALL_KEYS, 0, 0);
    int s = slow ? yyc_diskcache_remove_all_progress(h->dc, NULL, NULL)
                 : yyc_diskcache_remove_all(h->dc);
    log_rec(h->log_fd, REC_END, op, ALL_KEYS, 0, s);
    if (s != YYC_OK) harness_fail(slow ? "remove_all_progress" : "remove_all", ALL_KEYS, s);
    for (int i = 0; i < NKEYS; i++) h->st.k[i] = (key_state){0, 0, false};
}

static void h_trim(harness *h, int64_t count) {
    log_rec(h->log_fd, REC_BEGIN, OP_TRIM, ALL_KEYS, (uint64_t)count, 0);
    int s = yyc_diskcache_trim_to_count(h->dc, count);
    log_rec(h->log_fd, REC_END, OP_TRIM, ALL_KEYS, (uint64_t)count, s);
    if (s != YYC_OK) harness_fail("trim_to_count", ALL_KEYS, s);
    for (unsigned k = 0; k < NKEYS; k++) {
        char key[16];
        key_name(k, key);
        key_state *ks = &h->st.k[k];
        uint64_t v = yyc_diskcache_contains(h->dc, key) ? ks->acked : 0;
        log_rec(h->log_fd, REC_OBSERVE, OP_NONE, k, v, 0);
        *ks = (key_state){v, 0, false};
    }
}

/* One random operation of the mixed workload. */
static void harness_step(harness *h) {
    unsigned k = (unsigned)rel_rand_range(&h->rng, 0, NKEYS - 1);
    unsigned r = (unsigned)rel_rand_range(&h->rng, 0, 999);
    if (r < 300) h_get(h, k);
    else if (r < 400) h_contains(h, k);
    else if (r < 560) h_set(h, k, false);
    else if (r < 800) h_set(h, k, true);
    else if (r < 960) h_remove(h, k);
    else if (r < 975) h_trim(h, (int64_t)rel_rand_range(&h->rng, 0, NKEYS));
    else if (r < 985) h_remove_all(h, r < 978);
    else {
        /* A burst of large values, so that kills land in file-heavy work more often. */
        for (int i = 0; i < 8; i++) h_set(h, (unsigned)rel_rand_range(&h->rng, 0, NKEYS - 1), true);
    }
}

/* --child harness DIR LOG SEED READY_FD: loops until killed. */
static int child_harness(int argc, char **argv) {
    if (argc != 5) return 2;
    harness h;
    memset(&h, 0, sizeof h);
    h.rng = strtoull(argv[3], NULL, 0);
    harness_open(&h, argv[1], argv[2]);
    int ready = atoi(argv[4]);
    if (ready >= 0) {
        /* The test may have stopped listening (an early kill): that is fine. */
        signal(SIGPIPE, SIG_IGN);
        ssize_t w = write(ready, "r", 1);
        (void)w;
        close(ready);
    }
    /* Keys whose state the log leaves uncertain are pinned by their first read. */
    for (unsigned k = 0; k < NKEYS; k++)
        if (!state_exact(&h.st.k[k])) h_get(&h, k);
    for (;;) harness_step(&h);
}

/* ---------------------------------------------------------------- the checker */

/* --child check DIR LOG: reopens the cache in this fresh process and checks it against the log
 * (see the file comment). Exit 0 = consistent. */
static int child_check(int argc, char **argv) {
    if (argc != 3) return 2;
    const char *dir = argv[1];
    int log_fd = log_open(argv[2]);
    replay st;
    replay_log(argv[2], &st);
    bool failed = false;

    yyc_diskcache *dc = NULL;
    int s = yyc_diskcache_open(dir, REL_THRESHOLD, &dc);
    REL_CHECK(s == YYC_OK, "the cache does not reopen after a kill: %s", rel_last_error());
    yyc_diskcache_set_auto_trim_interval(dc, 0);

    /* No row may name a missing data file once the open (and its reconciliation) is done. */
    /* (The first disk core unlinked files before deleting their rows, so this failed until
     * e6bb795 / 0b90f2c.) */
    rel_manifest_scan scan;
    bool clean =
        WAIT_UNTIL((scan = rel_scan_manifest(dir), scan.rc == SQLITE_OK && scan.missing == 0), 5.0);
    if (!clean) {
        fprintf(stderr,
                "check: %lld of %lld rows name a missing data file (first: %s; scan rc %d)\n",
                (long long)scan.missing, (long long)scan.file_rows, scan.first_missing, scan.rc);
        failed = true;
    }
    if (scan.mismatched)
        fprintf(stderr, "check: note: %lld rows' data files differ in size from the row\n",
                (long long)scan.mismatched);

    uint64_t seen[NKEYS];
    int acked_kept = 0, acked_lost = 0;
    for (unsigned k = 0; k < NKEYS; k++) {
        char key[16];
        key_name(k, key);
        const key_state *ks = &st.k[k];
        void *value = NULL;
        size_t len = 0;
        s = yyc_diskcache_get(dc, key, &value, &len);
        seen[k] = 0;
        if (s == YYC_OK) {
            const char *why = NULL;
            seen[k] = rel_value_check(key, value, len, &why);
            if (!seen[k]) {
                fprintf(stderr, "check: key %u reads a bad value (%zu bytes): %s\n", k, len, why);
                failed = true;
            }
        } else if (s != YYC_NOTFOUND) {
            fprintf(stderr, "check: get(key %u) failed: %s\n", k, rel_last_error());
            failed = true;
        }
        yyc_free(value);
        if (seen[k] && !state_allows(ks, seen[k])) {
            fprintf(stderr, "check: key %u reads version %llu; allowed: %llu%s, in flight %llu\n",
                    k, (unsigned long long)seen[k], (unsigned long long)ks->acked,
                    ks->may_absent ? " or absent" : "", (unsigned long long)ks->inflight);
            failed = true;
        } else if (!seen[k] && !state_allows(ks, 0)) {
            fprintf(stderr,
                    "check: key %u lost its acknowledged version %llu (nothing was in "
                    "flight for it)\n",
                    k, (unsigned long long)ks->acked);
            failed = true;
        }
        if (seen[k]) {
            void *ext = NULL;
            size_t ext_len = 0;
            s = yyc_diskcache_get_extended_data(dc, key, &ext, &ext_len);
            rel_ext want = rel_ext_make(key, seen[k]);
            if (s != YYC_OK || ext_len != sizeof want || memcmp(ext, &want, sizeof want) != 0) {
                fprintf(stderr,
                        "check: key %u: extended data (status %s, %zu bytes) does not "
                        "match the value's version\n",
                        k, yyc_status_name(s), ext_len);
                failed = true;
            }
            yyc_free(ext);
        }
        if (yyc_diskcache_contains(dc, key) != (seen[k] != 0))
            fprintf(stderr, "check: note: contains(key %u) disagrees with get (%s)\n", k,
                    seen[k] ? "hit" : "miss");
        if (st.remove_all_open && ks->acked) {
            if (seen[k] == ks->acked) acked_kept++;
            else if (!seen[k]) acked_lost++;
        }
    }
    if (st.remove_all_open && acked_kept && acked_lost) {
        fprintf(stderr, "check: an interrupted remove-all is half done: %d keys kept, %d lost\n",
                acked_kept, acked_lost);
        failed = true;
    }

    int64_t count = -1;
    s = yyc_diskcache_total_count(dc, &count);
    int64_t present = 0;
    for (unsigned k = 0; k < NKEYS; k++) present += seen[k] != 0;
    if (s != YYC_OK || count != present) {
        fprintf(stderr, "check: total_count %lld (status %s) but %lld keys read back\n",
                (long long)count, yyc_status_name(s), (long long)present);
        failed = true;
    }

    /* The open empties trash/ in the background: wait for it. */
    char *trash = rel_path(dir, "trash");
    bool trash_empty = WAIT_UNTIL(rel_count_entries(trash, NULL) <= 0, 10.0);
    if (!trash_empty) {
        fprintf(stderr, "check: trash/ still holds %d entries after reopen\n",
                rel_count_entries(trash, NULL));
        failed = true;
    }
    free(trash);

    scan = rel_scan_manifest(dir);
    if (scan.orphans)
        fprintf(stderr, "check: note: %lld files in data/ belong to no row (%lld temporary)\n",
                (long long)scan.orphans, (long long)scan.temps);

    for (unsigned k = 0; k < NKEYS; k++) log_rec(log_fd, REC_OBSERVE, OP_NONE, k, seen[k], 0);
    close(log_fd);
    yyc_diskcache_release(dc);
    return failed ? 1 : 0;
}

/* ---------------------------------------------------------------- deferred mode */

/* The deferred harness (--child harness-deferred): the cache in deferred mode with a short
 * maximum delay, so that background commits land all the time; sets, removes, reads (each must
 * see exactly what this process acknowledged, queued or not) and now and then a flush. The
 * checker (--child check-deferred) then requires what survived the kill to be exactly the state
 * after some prefix of the session's acknowledged writes, in order - plus, possibly, the write
 * cut by the kill (it may have been queued and committed before its END record) - and at least
 * the prefix up to the last completed flush. It rewrites the log as the state it saw (OBSERVE
 * records), so each cycle starts from a known state and the log stays short. */

#define DEFERRED_DELAY 0.005

static void h_flush(harness *h) {
    log_rec(h->log_fd, REC_BEGIN, OP_FLUSH, ALL_KEYS, 0, 0);
    int s = yyc_diskcache_flush(h->dc);
    log_rec(h->log_fd, REC_END, OP_FLUSH, ALL_KEYS, 0, s);
    if (s != YYC_OK) harness_fail("flush", ALL_KEYS, s);
}

static void harness_deferred_step(harness *h) {
    unsigned k = (unsigned)rel_rand_range(&h->rng, 0, NKEYS - 1);
    unsigned r = (unsigned)rel_rand_range(&h->rng, 0, 999);
    if (r < 300) h_get(h, k);
    else if (r < 400) h_contains(h, k);
    else if (r < 640) h_set(h, k, false);
    else if (r < 800) h_set(h, k, true);
    else if (r < 985) h_remove(h, k);
    else if (r < 990) h_flush(h);
    else
        for (int i = 0; i < 8; i++) h_set(h, (unsigned)rel_rand_range(&h->rng, 0, NKEYS - 1), true);
}

/* --child harness-deferred DIR LOG SEED READY_FD: loops until killed. */
static int child_harness_deferred(int argc, char **argv) {
    if (argc != 5) return 2;
    harness h;
    memset(&h, 0, sizeof h);
    h.rng = strtoull(argv[3], NULL, 0);
    harness_open(&h, argv[1], argv[2]);
    int s = yyc_diskcache_set_write_mode(h.dc, YYC_WRITE_DEFERRED, DEFERRED_DELAY);
    if (s != YYC_OK) harness_fail("set_write_mode", ALL_KEYS, s);
    int ready = atoi(argv[4]);
    if (ready >= 0) {
        signal(SIGPIPE, SIG_IGN);
        ssize_t w = write(ready, "r", 1);
        (void)w;
        close(ready);
    }
    for (unsigned k = 0; k < NKEYS; k++) /* (exact after a check; pinned otherwise) */
        if (!state_exact(&h.st.k[k])) h_get(&h, k);
    for (;;) harness_deferred_step(&h);
}

/* One acknowledged write of the session: key k now holds version v (0: removed). */
typedef struct acked_write {
    uint16_t k;
    uint64_t v;
} acked_write;

typedef struct session_log {
    uint64_t base[NKEYS]; /* the state the session started from (OBSERVE records) */
    acked_write *w;       /* the session's acknowledged writes, in order */
    size_t n, cap;
    size_t durable; /* writes acknowledged before the last completed flush began */
    bool has_cut;   /* a write began and was not acknowledged (the kill cut it) */
    acked_write cut;
    uint64_t max_version;
    long flushes;
} session_log;

static void session_push(session_log *L, acked_write w) {
    if (L->n == L->cap) {
        L->cap = L->cap ? L->cap * 2 : 1024;
        L->w = realloc(L->w, L->cap * sizeof *L->w);
        if (!L->w) _exit(2);
    }
    L->w[L->n++] = w;
}

static void session_replay(const char *path, session_log *L) {
    memset(L, 0, sizeof *L);
    size_t len = 0;
    unsigned char *buf = rel_read_file(path, &len);
    if (!buf) return;
    rec open = {0};
    size_t flush_begin = 0;
    for (size_t off = 0; off + sizeof(rec) <= len; off += sizeof(rec)) {
        rec x;
        memcpy(&x, buf + off, sizeof x);
        if (x.magic != REC_MAGIC || x.check != rec_sum(&x)) continue;
        if (x.version > L->max_version) L->max_version = x.version;
        switch (x.kind) {
        case REC_OBSERVE:
            if (x.key < NKEYS) L->base[x.key] = x.version;
            break;
        case REC_SESSION: /* (one session per check: the checker rewrites the log) */
            L->n = 0;
            L->durable = 0;
            open.kind = 0;
            break;
        case REC_BEGIN:
            open = x;
            if (x.op == OP_FLUSH) flush_begin = L->n;
            break;
        case REC_END:
            open.kind = 0;
            if (x.status != YYC_OK) break; /* (the harness stops at its first error) */
            if (x.op == OP_FLUSH) {
                L->durable = flush_begin;
                L->flushes++;
            } else if (x.key < NKEYS && x.op == OP_SET) {
                session_push(L, (acked_write){x.key, x.version});
            } else if (x.key < NKEYS && x.op == OP_REMOVE) {
                session_push(L, (acked_write){x.key, 0});
            }
            break;
        }
    }
    if (open.kind == REC_BEGIN && open.key < NKEYS && (open.op == OP_SET || open.op == OP_REMOVE)) {
        L->has_cut = true;
        L->cut = (acked_write){open.key, open.op == OP_SET ? open.version : 0};
    }
    free(buf);
}

/* --child check-deferred DIR LOG: the prefix property (see harness-deferred). Exit 0 = holds. */
static int child_check_deferred(int argc, char **argv) {
    if (argc != 3) return 2;
    const char *dir = argv[1];
    session_log L;
    session_replay(argv[2], &L);
    bool failed = false;
    yyc_diskcache *dc = NULL;
    int s = yyc_diskcache_open(dir, REL_THRESHOLD, &dc);
    REL_CHECK(s == YYC_OK, "the cache does not reopen after a kill: %s", rel_last_error());
    yyc_diskcache_set_auto_trim_interval(dc, 0);
    uint64_t seen[NKEYS];
    for (unsigned k = 0; k < NKEYS; k++) {
        char key[16];
        key_name(k, key);
        void *value = NULL;
        size_t len = 0;
        s = yyc_diskcache_get(dc, key, &value, &len);
        seen[k] = 0;
        if (s == YYC_OK) {
            const char *why = NULL;
            seen[k] = rel_value_check(key, value, len, &why);
            if (!seen[k]) {
                fprintf(stderr, "check: key %u reads a bad value (%zu bytes): %s\n", k, len, why);
                failed = true;
            }
            void *ext = NULL;
            size_t ext_len = 0;
            rel_ext want = rel_ext_make(key, seen[k]);
            if (seen[k] && (yyc_diskcache_get_extended_data(dc, key, &ext, &ext_len) != YYC_OK ||
                            ext_len != sizeof want || memcmp(ext, &want, sizeof want) != 0)) {
                fprintf(stderr, "check: key %u: extended data does not match the value\n", k);
                failed = true;
            }
            yyc_free(ext);
        } else if (s != YYC_NOTFOUND) {
            fprintf(stderr, "check: get(key %u) failed: %s\n", k, rel_last_error());
            failed = true;
        }
        yyc_free(value);
    }
    /* The states after 0, 1, ..., n acknowledged writes (and the cut one): which one is it? */
    uint64_t st[NKEYS];
    memcpy(st, L.base, sizeof st);
    long match = -1;
    size_t total = L.n + (L.has_cut ? 1 : 0);
    for (size_t p = 0; p <= total && match < 0; p++) {
        if (p > 0) {
            acked_write w = p <= L.n ? L.w[p - 1] : L.cut;
            st[w.k] = w.v;
        }
        if (p >= L.durable && memcmp(st, seen, sizeof st) == 0) match = (long)p;
    }
    if (match < 0) {
        fprintf(stderr,
                "check: what survived is no prefix of the %zu acknowledged writes (at "
                "least %zu flushed, %s write cut by the kill)\n",
                L.n, L.durable, L.has_cut ? "a" : "no");
        failed = true;
    }
    rel_manifest_scan scan = rel_scan_manifest(dir);
    if (scan.rc != SQLITE_OK || scan.missing) {
        fprintf(stderr, "check: %lld rows name a missing data file (scan rc %d)\n",
                (long long)scan.missing, scan.rc);
        failed = true;
    }
    yyc_diskcache_release(dc);
    /* The log becomes the state seen (and the highest version, so versions stay unique). */
    int fd = open(argv[2], O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return 2;
    close(fd);
    fd = log_open(argv[2]);
    for (unsigned k = 0; k < NKEYS; k++) log_rec(fd, REC_OBSERVE, OP_NONE, k, seen[k], 0);
    log_rec(fd, REC_OBSERVE, OP_NONE, ALL_KEYS, L.max_version, 0);
    close(fd);
    if (!failed)
        fprintf(stderr,
                "check: survived %ld of %zu acknowledged writes (%zu flushed, %ld "
                "flushes)\n",
                match > (long)L.n ? (long)L.n : match, L.n, L.durable, L.flushes);
    free(L.w);
    return failed ? 1 : 0;
}

/* ---------------------------------------------------------------- deterministic crash points */

enum {
    SC_REMOVE_ALL,
    SC_REMOVE_ALL_SLOW,
    SC_LARGE_OVER_LARGE,
    SC_SMALL_OVER_LARGE,
    SC_LARGE_OVER_SMALL,
    SC_NEW_LARGE,
    SC_REMOVE_LARGE,
    SC_TRIM,
    SC_COUNT
};
static const char *const scenario_names[SC_COUNT] = {
    "remove_all",       "remove_all_progress", "large value over a large one",
    "small over large", "large over small",    "new large value",
    "remove large",     "trim_to_count(5)"};

#define FILL_KEYS 12u /* keys 0..5 small, 6..11 large */

/* --child crashpoint DIR LOG SCENARIO N: fills 12 keys (6 small, 6 large), then performs the
 * scenario's operation with the crash countdown at N. Exit 0 when the operation (and, for a
 * remove-all, the trash emptying) finished before the countdown ran out. */
static int child_crashpoint(int argc, char **argv) {
    if (argc != 5) return 2;
    install_sqlite_crash_points();
    harness h;
    memset(&h, 0, sizeof h);
    harness_open(&h, argv[1], argv[2]);
    int scenario = atoi(argv[3]);
    long n = atol(argv[4]);
    for (unsigned k = 0; k < FILL_KEYS; k++) h_set(&h, k, k >= FILL_KEYS / 2);
    atomic_store(&crash_countdown, n);
    switch (scenario) {
    case SC_REMOVE_ALL: h_remove_all(&h, false); break;
    case SC_REMOVE_ALL_SLOW: h_remove_all(&h, true); break;
    case SC_LARGE_OVER_LARGE: h_set(&h, 6, true); break;
    case SC_SMALL_OVER_LARGE: h_set(&h, 7, false); break;
    case SC_LARGE_OVER_SMALL: h_set(&h, 0, true); break;
    case SC_NEW_LARGE: h_set(&h, 30, true); break;
    case SC_REMOVE_LARGE: h_remove(&h, 8); break;
    case SC_TRIM: h_trim(&h, 5); break;
    default: return 2;
    }
    /* Background work the operation started (trash emptying) runs under the countdown too. */
    if (!WAIT_UNTIL(rel_count_entries(h.trash, NULL) <= 0, 10.0)) {
        fprintf(stderr, "crashpoint: trash/ not emptied after %s\n", scenario_names[scenario]);
        return 5;
    }
    atomic_store(&crash_countdown, 0);
    for (unsigned k = 0; k < NKEYS; k++) h_get(&h, k);
    yyc_diskcache_release(h.dc);
    return 0;
}

/* ---------------------------------------------------------------- memory growth */

#if defined(__SANITIZE_ADDRESS__)
#define REL_ASAN 1
#else
#define REL_ASAN 0
#endif

/* Bytes the allocator has handed out and not got back (SQLite uses the system allocator). */
static size_t heap_in_use(void) {
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* --child soak DIR LOG OPS SEED: the harness's mixed workload for OPS operations in one
 * process, every read verified; the heap in use after the first fifth (SQLite's page cache and
 * the statement cache warmed up) is compared with the end. Exit 0 when it grew by at most
 * 2 MiB. Under ASan mallinfo2 means nothing: the leak check at exit stands in for it. */
static int child_soak(int argc, char **argv) {
    if (argc != 5) return 2;
    long ops = atol(argv[3]);
    harness h;
    memset(&h, 0, sizeof h);
    h.rng = strtoull(argv[4], NULL, 0);
    harness_open(&h, argv[1], argv[2]);
    close(h.log_fd); /* nobody replays this run's log: keep it from growing */
    h.log_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    long warm = ops / 5;
    for (long i = 0; i < warm; i++) harness_step(&h);
    size_t base = heap_in_use(), peak = base;
    for (long i = warm; i < ops; i++) {
        harness_step(&h);
        if (i % 1000 == 0) {
            size_t now = heap_in_use();
            if (now > peak) peak = now;
        }
    }
    size_t end = heap_in_use();
    yyc_diskcache_release(h.dc);
    size_t closed = heap_in_use();
    fprintf(stderr,
            "soak: %ld operations; heap in use after warm-up %zu KiB, peak %zu KiB, end %zu KiB, "
            "after close %zu KiB\n",
            ops, base / 1024, peak / 1024, end / 1024, closed / 1024);
    if (!REL_ASAN && end > base + (2u << 20)) {
        fprintf(stderr, "soak: the heap grew by %zu KiB\n", (end - base) / 1024);
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- tests */

static uint64_t env_u64(const char *name, uint64_t fallback) {
    const char *s = getenv(name);
    return s && *s ? strtoull(s, NULL, 0) : fallback;
}

static void print_replay(const char *log, long cycles) {
    replay st;
    replay_log(log, &st);
    fprintf(stderr,
            "crash: %ld kill cycles, %ld sessions; calls started / cut by the kill:", cycles,
            st.sessions);
    for (int op = 1; op < OP_COUNT; op++)
        fprintf(stderr, " %s %ld/%ld", op_names[op], st.begins[op], st.cut[op]);
    fputc('\n', stderr);
}

static void random_kill_cycles(const char *tag, const char *harness_child, const char *check_child);

static void random_kills_never_tear_or_lose_values(void **state) {
    (void)state;
    random_kill_cycles("crash", "harness", "check");
}

/* Deferred mode: what survives each kill is a prefix of the acknowledged writes, in order. */
static void deferred_random_kills_keep_a_prefix_of_acknowledged_writes(void **state) {
    (void)state;
    random_kill_cycles("crash-deferred", "harness-deferred", "check-deferred");
}

static void random_kill_cycles(const char *tag, const char *harness_child,
                               const char *check_child) {
    char *dir = test_temp_dir(tag);
    char *cache = rel_path(dir, "cache");
    char *log = rel_path(dir, "log");
    long cycles = (long)env_u64("YYC_SOAK_CYCLES", 30);
    uint64_t seed = env_u64("YYC_CRASH_SEED", 0x5EED0007ull);
    uint64_t rng = seed;
    fprintf(stderr, "crash: seed %#llx, %ld cycles (YYC_CRASH_SEED / YYC_SOAK_CYCLES)\n",
            (unsigned long long)seed, cycles);
    for (long i = 0; i < cycles; i++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        fcntl(fds[0], F_SETFD, FD_CLOEXEC);
        char seed_arg[32], fd_arg[16];
        snprintf(seed_arg, sizeof seed_arg, "%llu", (unsigned long long)rel_splitmix64(&rng));
        snprintf(fd_arg, sizeof fd_arg, "%d", fds[1]);
        const char *args[] = {harness_child, cache, log, seed_arg, fd_arg, NULL};
        pid_t pid = rel_spawn(args);
        assert_true(pid > 0);
        close(fds[1]);
        /* One cycle in five kills early, during the open (recovery, trash emptying). */
        bool early = rel_rand_range(&rng, 0, 4) == 0;
        if (!early) {
            struct pollfd p = {fds[0], POLLIN, 0};
            char c;
            int pr = poll(&p, 1, 60000);
            if (pr != 1 || read(fds[0], &c, 1) != 1) {
                int st = rel_wait(pid, 1.0);
                fail_msg("cycle %ld: the harness did not start (wait status %#x, seed %#llx)", i,
                         st, (unsigned long long)seed);
            }
        }
        close(fds[0]);
        usleep((useconds_t)(early ? rel_rand_range(&rng, 0, 20000)
                                  : rel_rand_range(&rng, 20000, 200000)));
        int st = 0;
        if (waitpid(pid, &st, WNOHANG) == pid)
            fail_msg("cycle %ld: the harness stopped by itself (status %#x): see its message "
                     "above (seed %#llx)",
                     i, st, (unsigned long long)seed);
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        const char *check[] = {check_child, cache, log, NULL};
        int rc = rel_run(check, 120.0);
        if (rc != 0)
            fail_msg("cycle %ld: the reopened cache is inconsistent (checker exit %d, seed "
                     "%#llx; see above)",
                     i, rc, (unsigned long long)seed);
    }
    if (strcmp(check_child, "check") == 0) print_replay(log, cycles); /* (deferred: rewritten) */
    test_rm_rf(dir);
    free(cache);
    free(log);
    free(dir);
}

/* A long mixed workload in one process does not grow the heap (make soak: YYC_SOAK_OPS). */
static void long_mixed_workload_does_not_grow_memory(void **state) {
    (void)state;
    char *dir = test_temp_dir("soak");
    char *cache = rel_path(dir, "cache");
    char *log = rel_path(dir, "log");
    char ops[32];
    snprintf(ops, sizeof ops, "%llu",
             (unsigned long long)env_u64("YYC_SOAK_OPS", REL_TSAN ? 1500 : 5000));
    const char *args[] = {"soak", cache, log, ops, "12345", NULL};
    int rc = rel_run(args, 3600.0);
    test_rm_rf(dir);
    free(cache);
    free(log);
    free(dir);
    assert_int_equal(rc, 0);
}

static void kills_at_every_file_step_leave_a_consistent_cache(void **state) {
    (void)state;
    char *dir = test_temp_dir("crashpoint");
    /* Every nth crash point, YYC_CRASHPOINT_STRIDE=n: every one under `make soak` (n = 1), every
     * second in `make test` (every third under TSan), each scenario from its own offset. */
    long stride = (long)env_u64("YYC_CRASHPOINT_STRIDE", REL_TSAN ? 3 : 2);
    if (stride < 1) stride = 1;
    for (int sc = 0; sc < SC_COUNT; sc++) {
        long n, checked = 0;
        bool finished = false;
        for (n = 1 + sc % stride; n <= 1000 && !finished; n += stride, checked++) {
            char *cache = rel_path(dir, "cache");
            char *log = rel_path(dir, "log");
            test_rm_rf(cache);
            unlink(log);
            char sc_arg[24], n_arg[24];
            snprintf(sc_arg, sizeof sc_arg, "%d", sc);
            snprintf(n_arg, sizeof n_arg, "%ld", n);
            const char *args[] = {"crashpoint", cache, log, sc_arg, n_arg, NULL};
            int rc = rel_run(args, 60.0);
            if (rc == 0) finished = true;
            else if (rc != 128 + SIGKILL)
                fail_msg("%s, crash point %ld: the harness failed by itself (exit %d)",
                         scenario_names[sc], n, rc);
            const char *check[] = {"check", cache, log, NULL};
            rc = rel_run(check, 60.0);
            if (rc != 0)
                fail_msg("%s: killed at file-system step %ld (%s the call): the reopened cache "
                         "is inconsistent (checker exit %d; see above)",
                         scenario_names[sc], (n + 1) / 2, n % 2 ? "before" : "after", rc);
            free(cache);
            free(log);
        }
        assert_true(finished);
        fprintf(stderr, "crashpoint: %s: %ld crash points checked (stride %ld)\n",
                scenario_names[sc], checked - 1, stride);
    }
    test_rm_rf(dir);
    free(dir);
}

static const rel_child children[] = {
    {"harness", child_harness},
    {"harness-deferred", child_harness_deferred},
    {"check-deferred", child_check_deferred},
    {"check", child_check},
    {"crashpoint", child_crashpoint},
    {"soak", child_soak},
    {NULL, NULL},
};

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--child") == 0)
        return rel_dispatch(children, argc - 2, argv + 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_kills_never_tear_or_lose_values),
        cmocka_unit_test(deferred_random_kills_keep_a_prefix_of_acknowledged_writes),
        cmocka_unit_test(kills_at_every_file_step_leave_a_consistent_cache),
        cmocka_unit_test(long_mixed_workload_does_not_grow_memory),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
