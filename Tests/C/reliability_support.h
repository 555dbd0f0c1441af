/*
 * reliability_support.h - shared helpers of the reliability tests (issue 7): self-checking
 * values, child processes re-executed from the test binary, manifest inspection.
 *
 * Values. Every value the reliability tests write is derived from (key, version): a 32-byte
 * header {magic "YYCV", version, fnv1a64(key), length, 0} followed by a body from a PRNG seeded
 * with (key hash, version). Its length is derived from (key, version) too: odd versions are
 * "large" (20481 .. 120480 bytes, above the 20480-byte inline threshold, so they live in
 * data/), even versions are "small" (32 .. 181 bytes, sometimes exactly 20480: the largest
 * inline value). rel_value_check() recognises a complete value and returns its version; a torn
 * value, a value of another key, a truncated or extended one is rejected.
 *
 * Children. A test that needs other processes re-executes its own binary
 * (/proc/self/exe --child NAME ARGS...) instead of forking after the library may have started
 * its worker thread: a forked child would inherit a worker that does not exist. REL_TEST_MAIN
 * dispatches "--child" to the file's table of child entry points and otherwise runs cmocka like
 * YYC_TEST_MAIN. Children report through their exit status and print diagnostics on stderr.
 *
 * Everything here is static inline so that each test file uses only what it needs.
 */
#ifndef YYCACHE_RELIABILITY_SUPPORT_H
#define YYCACHE_RELIABILITY_SUPPORT_H

#include "test_support.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <sqlite3.h>

#if defined(__SANITIZE_THREAD__)
#define REL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define REL_TSAN 1
#endif
#endif
#ifndef REL_TSAN
#define REL_TSAN 0
#endif

#if REL_TSAN
/* TSan sleeps a second at every process exit by default (atexit_sleep_ms=1000, to let threads
 * finish); these tests start and end hundreds of short processes, so they turn it off. An
 * explicit TSAN_OPTIONS still wins. */
__attribute__((visibility("default"))) const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "atexit_sleep_ms=0"; }
#endif

/* The inline threshold the reliability tests use (YYDiskCache's default). */
#define REL_THRESHOLD 20480u

/* ---------------------------------------------------------------- PRNG and hashing */

static inline uint64_t rel_splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A uniform-ish number in [lo, hi]. */
static inline uint64_t rel_rand_range(uint64_t *s, uint64_t lo, uint64_t hi) {
    return lo + rel_splitmix64(s) % (hi - lo + 1);
}

static inline uint64_t rel_fnv1a64(const char *key) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ---------------------------------------------------------------- self-checking values */

#define REL_VALUE_MAGIC 0x56435959u /* "YYCV" little-endian */
#define REL_HEADER_LEN 32u

typedef struct rel_header {
    uint32_t magic;
    uint32_t zero;
    uint64_t version;
    uint64_t key_hash;
    uint64_t length;
} rel_header;

static inline size_t rel_value_len(const char *key, uint64_t version) {
    uint64_t s = rel_fnv1a64(key) ^ (version * 0xD6E8FEB86659FD93ull);
    uint64_t r = rel_splitmix64(&s);
    if (version & 1) return (size_t)(REL_THRESHOLD + 1 + r % 100000);
    if (r % 16 == 0) return REL_THRESHOLD; /* the largest inline value */
    return (size_t)(REL_HEADER_LEN + r % 150);
}

static inline void rel_fill_body(unsigned char *body, size_t n, uint64_t key_hash,
                                 uint64_t version) {
    uint64_t s = key_hash * 31 + version;
    size_t i = 0;
    while (i + 8 <= n) {
        uint64_t r = rel_splitmix64(&s);
        memcpy(body + i, &r, 8);
        i += 8;
    }
    if (i < n) {
        uint64_t r = rel_splitmix64(&s);
        memcpy(body + i, &r, n - i);
    }
}

/* A freshly allocated value for (key, version); *len receives its length. free() it. */
static inline unsigned char *rel_value_make(const char *key, uint64_t version, size_t *len) {
    size_t n = rel_value_len(key, version);
    unsigned char *v = malloc(n);
    if (!v) abort();
    rel_header h = {REL_VALUE_MAGIC, 0, version, rel_fnv1a64(key), n};
    memcpy(v, &h, sizeof h);
    rel_fill_body(v + REL_HEADER_LEN, n - REL_HEADER_LEN, h.key_hash, version);
    *len = n;
    return v;
}

/* Checks that (value, len) is a complete value written for key. Returns its version (> 0), or 0
 * with a reason in why (static string) when it is torn, foreign or malformed. */
static inline uint64_t rel_value_check(const char *key, const void *value, size_t len,
                                       const char **why) {
    rel_header h;
    if (len < REL_HEADER_LEN || !value) {
        *why = "shorter than a header";
        return 0;
    }
    memcpy(&h, value, sizeof h);
    if (h.magic != REL_VALUE_MAGIC || h.zero != 0) {
        *why = "bad magic (not a value written by the test)";
        return 0;
    }
    if (h.key_hash != rel_fnv1a64(key)) {
        *why = "another key's value";
        return 0;
    }
    if (h.version == 0) {
        *why = "version 0";
        return 0;
    }
    if (h.length != len) {
        *why = len < h.length ? "truncated (shorter than its header says)"
                              : "extended (longer than its header says)";
        return 0;
    }
    if (rel_value_len(key, h.version) != len) {
        *why = "length does not match its (key, version)";
        return 0;
    }
    size_t n = len - REL_HEADER_LEN;
    unsigned char *expect = malloc(n ? n : 1);
    if (!expect) abort();
    rel_fill_body(expect, n, h.key_hash, h.version);
    bool same = memcmp(expect, (const unsigned char *)value + REL_HEADER_LEN, n) == 0;
    free(expect);
    if (!same) {
        *why = "body differs (torn or mixed write)";
        return 0;
    }
    *why = NULL;
    return h.version;
}

/* Extended data of a value: {key hash, version}, so a row whose value and extended data come
 * from different writes is caught. */
typedef struct rel_ext {
    uint64_t key_hash;
    uint64_t version;
} rel_ext;

static inline rel_ext rel_ext_make(const char *key, uint64_t version) {
    rel_ext e = {rel_fnv1a64(key), version};
    return e;
}

/* ---------------------------------------------------------------- child processes */

typedef int (*rel_child_fn)(int argc, char **argv);
typedef struct rel_child {
    const char *name;
    rel_child_fn fn;
} rel_child;

static inline int rel_dispatch(const rel_child *children, int argc, char **argv) {
    for (const rel_child *c = children; c->name; c++)
        if (strcmp(c->name, argv[0]) == 0) return c->fn(argc, argv);
    fprintf(stderr, "unknown child %s\n", argv[0]);
    return 127;
}

#define REL_TEST_MAIN(tests, children)                         \
    int main(int argc, char **argv) {                          \
        if (argc > 2 && strcmp(argv[1], "--child") == 0)       \
            return rel_dispatch(children, argc - 2, argv + 2); \
        if (argc > 1) cmocka_set_test_filter(argv[1]);         \
        return cmocka_run_group_tests(tests, NULL, NULL);      \
    }

/* Starts /proc/self/exe --child args[0] args[1] ... (args NULL-terminated). Returns the pid. */
static inline pid_t rel_spawn(const char *const *args) {
    const char *argv[32];
    int n = 0;
    argv[n++] = "/proc/self/exe";
    argv[n++] = "--child";
    for (int i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
    argv[n] = NULL;
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return -1;
    exe[len] = '\0';
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        execv(exe, (char *const *)argv);
        _exit(126);
    }
    return pid;
}

/* Waits for pid for at most `seconds` (polling); on timeout kills it with SIGKILL.
 * Returns the wait status, or -1 on timeout. */
static inline int rel_wait(pid_t pid, double seconds) {
    double deadline = test_now() + seconds;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return status;
        if (r < 0 && errno != EINTR) return -1;
        if (test_now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        usleep(1000);
    }
}

/* Runs a child to completion and returns its exit code (128 + signal if killed by one, -1 on
 * timeout). */
static inline int rel_run(const char *const *args, double seconds) {
    pid_t pid = rel_spawn(args);
    if (pid < 0) return -1;
    int st = rel_wait(pid, seconds);
    if (st == -1) return -1;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

/* A check inside a child process: on failure prints the location and message and exits 1. */
#define REL_CHECK(cond, ...)                                                         \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK FAILED: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            fflush(stderr);                                                          \
            _exit(1);                                                                \
        }                                                                            \
    } while (0)

/* Known bugs. A test (or a check inside one) that fails because of a bug already reported is
 * kept but skipped - printing the bug's id - unless YYC_RUN_KNOWN_BUGS=1 is set, so that
 * `make test` stays green and the fix can be proven by running it. */
static inline bool rel_run_known_bugs(void) {
    const char *s = getenv("YYC_RUN_KNOWN_BUGS");
    return s && *s && strcmp(s, "0") != 0;
}

#define REL_KNOWN_BUG(id)                                           \
    do {                                                            \
        if (!rel_run_known_bugs()) {                                \
            fprintf(stderr,                                         \
                    "skipped: fails today because of known bug %s " \
                    "(YYC_RUN_KNOWN_BUGS=1 runs it)\n",             \
                    id);                                            \
            skip();                                                 \
        }                                                           \
    } while (0)

/* The calling thread's last library error, as text (static buffer; not thread-safe). */
static inline const char *rel_last_error(void) {
    static char buf[400];
    yyc_error e;
    yyc_last_error(&e);
    snprintf(buf, sizeof buf, "%s (sqlite %d, errno %d: %s)", yyc_status_name(e.code),
             e.sqlite_code, e.sys_errno, e.message);
    return buf;
}

/* ---------------------------------------------------------------- files */

static inline char *rel_path(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p) abort();
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Number of entries in a folder (excluding . and ..), -1 if it cannot be listed. When
 * prefix is not NULL only names starting with it count. */
static inline int rel_count_entries(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (prefix && strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        n++;
    }
    closedir(d);
    return n;
}

static inline bool rel_write_file(const char *path, const void *buf, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    bool ok = write(fd, buf, len) == (ssize_t)len;
    close(fd);
    return ok;
}

/* Reads a whole file (malloc'ed, NUL-terminated for convenience); NULL if unreadable. */
static inline unsigned char *rel_read_file(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return NULL;
    }
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) abort();
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    *len = got;
    return buf;
}

/* ---------------------------------------------------------------- manifest inspection */

/* What a read-only look at manifest.sqlite and data/ finds. */
typedef struct rel_manifest_scan {
    int rc;             /* SQLite status of the scan (SQLITE_OK when it worked) */
    int64_t rows;       /* rows in the manifest */
    int64_t file_rows;  /* rows whose value is in data/ */
    int64_t missing;    /* file rows whose data file does not exist (or is not a regular file) */
    int64_t mismatched; /* file rows whose data file's size differs from the row's size */
    int64_t orphans;    /* regular files in data/ that no row names (temporary files included) */
    int64_t temps;      /* of those, names starting with ".yyc-tmp-" */
    char first_missing[300];
} rel_manifest_scan;

/* Scans dir/manifest.sqlite (a separate, read-only SQLite connection) against dir/data. */
static inline rel_manifest_scan rel_scan_manifest(const char *dir) {
    rel_manifest_scan r;
    memset(&r, 0, sizeof r);
    char *db_path = rel_path(dir, "manifest.sqlite");
    char *data_path = rel_path(dir, "data");
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char **names = NULL;
    size_t n_names = 0, cap = 0;
    r.rc = sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL);
    if (r.rc == SQLITE_OK) sqlite3_busy_timeout(db, 5000);
    if (r.rc == SQLITE_OK)
        r.rc = sqlite3_prepare_v2(db, "SELECT filename, size FROM manifest", -1, &st, NULL);
    int data_fd = open(data_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (r.rc == SQLITE_OK) {
        int s = sqlite3_step(st);
        if (s == SQLITE_DONE) break;
        if (s != SQLITE_ROW) {
            r.rc = s;
            break;
        }
        r.rows++;
        const char *fn = (const char *)sqlite3_column_text(st, 0);
        if (!fn || !*fn) continue;
        r.file_rows++;
        int64_t size = sqlite3_column_int64(st, 1);
        struct stat sb;
        if (data_fd < 0 || fstatat(data_fd, fn, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(sb.st_mode)) {
            if (r.missing++ == 0) snprintf(r.first_missing, sizeof r.first_missing, "%s", fn);
        } else if (sb.st_size != size) {
            r.mismatched++;
        }
        if (n_names == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            if (!names) abort();
        }
        names[n_names++] = strdup(fn);
    }
    if (st) sqlite3_finalize(st);
    if (db) sqlite3_close(db);
    if (data_fd >= 0) {
        DIR *d = fdopendir(data_fd);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            bool named = false;
            for (size_t i = 0; i < n_names && !named; i++) named = strcmp(names[i], e->d_name) == 0;
            if (named) continue;
            r.orphans++;
            if (strncmp(e->d_name, ".yyc-tmp-", 9) == 0) r.temps++;
        }
        if (d) closedir(d);
        else close(data_fd);
    }
    for (size_t i = 0; i < n_names; i++) free(names[i]);
    free(names);
    free(db_path);
    free(data_path);
    return r;
}

#endif /* YYCACHE_RELIABILITY_SUPPORT_H */
