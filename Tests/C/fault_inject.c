/*
 * fault_inject.c - the --wrap wrappers and the shim VFS of fault_inject.h.
 *
 * Wrapped symbols (keep in sync with FAULT_WRAPPED in Tests/C/CMakeLists.txt): open, openat,
 * __open_2, __openat_2 (the _FORTIFY_SOURCE forms), mkdir, mkdirat, write, pwrite, fsync,
 * fdatasync, rename, renameat, renameat2, link, linkat, unlink, unlinkat, flock, stat, fstat,
 * fstatat, read, realpath, statvfs, fstatvfs, sqlite3_open_v2, sqlite3_prepare_v2,
 * sqlite3_prepare_v3, sqlite3_step, sqlite3_exec, sqlite3_wal_checkpoint_v2. A symbol the
 * library does not reference costs nothing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fault_inject.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* --- the errors of each kind --- */

#define E(...) \
    { __VA_ARGS__ }
static const struct {
    const char *name;
    int count;
    int errors[3];
    bool sqlite; /* errors are SQLite result codes, not errno values */
} kinds[FI_KIND_COUNT] = {
    [FI_OPEN] = {"open", 2, E(EIO, ENOSPC), false},
    [FI_OPENAT] = {"openat", 3, E(EIO, ENOSPC, EMFILE), false},
    [FI_MKDIR] = {"mkdir", 2, E(ENOSPC, EIO), false},
    [FI_MKDIRAT] = {"mkdirat", 2, E(ENOSPC, EIO), false},
    [FI_WRITE] = {"write", 3, E(ENOSPC, EIO, EINTR), false},
    [FI_PWRITE] = {"pwrite", 3, E(ENOSPC, EIO, EINTR), false},
    [FI_FSYNC] = {"fsync", 1, E(EIO), false},
    [FI_FDATASYNC] = {"fdatasync", 1, E(EIO), false},
    [FI_RENAME] = {"rename", 2, E(ENOSPC, EIO), false},
    [FI_RENAMEAT] = {"renameat", 2, E(ENOSPC, EIO), false},
    [FI_RENAMEAT2] = {"renameat2", 2, E(ENOSPC, EIO), false},
    [FI_LINK] = {"link", 2, E(ENOSPC, EIO), false},
    [FI_LINKAT] = {"linkat", 2, E(ENOSPC, EIO), false},
    [FI_UNLINK] = {"unlink", 1, E(EIO), false},
    [FI_UNLINKAT] = {"unlinkat", 1, E(EIO), false},
    [FI_FLOCK] = {"flock", 2, E(EINTR, ENOLCK), false},
    [FI_STAT] = {"stat", 2, E(EIO, ENOMEM), false},
    [FI_FSTAT] = {"fstat", 2, E(EIO, ENOMEM), false},
    [FI_FSTATAT] = {"fstatat", 2, E(EIO, ENOMEM), false},
    [FI_READ] = {"read", 2, E(EIO, EINTR), false},
    [FI_REALPATH] = {"realpath", 2, E(EIO, ENOMEM), false},
    [FI_SQLITE_OPEN] = {"sqlite3_open_v2", 2, E(SQLITE_CANTOPEN, SQLITE_NOMEM), true},
    [FI_SQLITE_PREPARE] = {"sqlite3_prepare", 2, E(SQLITE_NOMEM, SQLITE_IOERR), true},
    [FI_SQLITE_STEP] = {"sqlite3_step", 3, E(SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY), true},
    [FI_SQLITE_EXEC] = {"sqlite3_exec", 2, E(SQLITE_FULL, SQLITE_IOERR), true},
    [FI_SQLITE_CHECKPOINT] = {"sqlite3_wal_checkpoint_v2", 2, E(SQLITE_IOERR, SQLITE_BUSY), true},
    [FI_VFS_OPEN] = {"vfs.xOpen", 1, E(SQLITE_CANTOPEN), true},
    [FI_VFS_DELETE] = {"vfs.xDelete", 1, E(SQLITE_IOERR_DELETE), true},
    [FI_VFS_WRITE] = {"vfs.xWrite", 2, E(SQLITE_FULL, SQLITE_IOERR_WRITE), true},
    [FI_VFS_TRUNCATE] = {"vfs.xTruncate", 1, E(SQLITE_IOERR_TRUNCATE), true},
    [FI_VFS_SYNC] = {"vfs.xSync", 1, E(SQLITE_IOERR_FSYNC), true},
    [FI_VFS_LOCK] = {"vfs.xLock", 2, E(SQLITE_IOERR_LOCK, SQLITE_BUSY), true},
    [FI_VFS_SHMMAP] = {"vfs.xShmMap", 2, E(SQLITE_IOERR_SHMMAP, SQLITE_NOMEM), true},
};

int fi_error_count(fi_kind k) { return k < FI_KIND_COUNT ? kinds[k].count : 0; }
int fi_error_of(fi_kind k, int i) {
    return k < FI_KIND_COUNT ? kinds[k].errors[(unsigned)i % (unsigned)kinds[k].count] : 0;
}
bool fi_error_is_transient(fi_kind k, int error) {
    return k < FI_KIND_COUNT && (kinds[k].sqlite ? (error & 0xff) == SQLITE_BUSY : error == EINTR);
}
const char *fi_kind_name(fi_kind k) { return k < FI_KIND_COUNT ? kinds[k].name : "?"; }
const char *fi_error_name(fi_kind k, int error) {
    if (k >= FI_KIND_COUNT) return "?";
    if (kinds[k].sqlite) return sqlite3_errstr(error);
    switch (error) {
    case EIO: return "EIO";
    case ENOSPC: return "ENOSPC";
    case EINTR: return "EINTR";
    case EMFILE: return "EMFILE";
    case ENOLCK: return "ENOLCK";
    default: return strerror(error);
    }
}

/* --- arming --- */

/* armed is read by every thread (atomically); the rest only by the armed thread, or after
 * fi_disarm by the thread that armed. */
static int armed;
static pthread_t armed_thread;
static long calls, fail_at;
static int error_index;
static bool persistent;
static bool other_threads; /* count the calls of every thread but the armer */
static bool fired;
static fi_kind fired_kind;
static int fired_error;
static fi_kind *log_kinds;
static long log_len, log_cap;
static int64_t fake_free = -1;

void fi_arm(long at, int err_index) { fi_arm_from(at, err_index, false); }

void fi_arm_from(long at, int err_index, bool every_later) {
    fi_arm_threads(at, err_index, every_later, false);
}

void fi_arm_threads(long at, int err_index, bool every_later, bool others) {
    other_threads = others;
    armed_thread = pthread_self();
    calls = 0;
    fail_at = at;
    error_index = err_index;
    persistent = every_later;
    fired = false;
    log_len = 0;
    __atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
}

long fi_disarm(void) {
    __atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
    return calls;
}

fi_kind fi_logged_kind(long n) { return n >= 1 && n <= log_len ? log_kinds[n - 1] : FI_KIND_COUNT; }

bool fi_fired(fi_kind *kind, int *error) {
    if (fired) {
        if (kind) *kind = fired_kind;
        if (error) *error = fired_error;
    }
    return fired;
}

void fi_set_fake_free_bytes(int64_t bytes) {
    __atomic_store_n(&fake_free, bytes, __ATOMIC_RELAXED);
}

/* One point reached: true when it must fail, with *error the errno / result code to fail with. */
static bool point(fi_kind k, int *error) {
    if (!__atomic_load_n(&armed, __ATOMIC_ACQUIRE) ||
        !pthread_equal(pthread_self(), armed_thread) != other_threads)
        return false;
    long n = ++calls;
    if (fail_at == 0) {
        if (log_len == log_cap) {
            long cap = log_cap ? log_cap * 2 : 256;
            fi_kind *p = realloc(log_kinds, (size_t)cap * sizeof *p);
            if (!p) abort();
            log_kinds = p;
            log_cap = cap;
        }
        log_kinds[log_len++] = k;
        return false;
    }
    if (n < fail_at || (n > fail_at && !persistent)) return false;
    /* A persistent fault is a broken or full disk: an interruption or a busy lock is transient
     * (failing every retry of one would only make the caller's retry loop spin or wait). */
    if (n > fail_at && fi_error_is_transient(k, fi_error_of(k, error_index))) return false;
    if (n == fail_at) {
        fired = true;
        fired_kind = k;
        fired_error = fi_error_of(k, error_index);
    }
    *error = fi_error_of(k, error_index);
    return true;
}

/* For libc wrappers: sets errno and evaluates to true when the point fails. */
#define FAIL_ERRNO(k)                \
    ({                               \
        int e__;                     \
        bool f__ = point((k), &e__); \
        if (f__) errno = e__;        \
        f__;                         \
    })

/* --- libc --- */

int __real_open(const char *path, int flags, ...);
int __real_openat(int dirfd, const char *path, int flags, ...);
int __real___open_2(const char *path, int flags);
int __real___openat_2(int dirfd, const char *path, int flags);
int __real_mkdir(const char *path, mode_t mode);
int __real_mkdirat(int dirfd, const char *path, mode_t mode);
ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t off);
int __real_fsync(int fd);
int __real_fdatasync(int fd);
int __real_rename(const char *from, const char *to);
int __real_renameat(int fromfd, const char *from, int tofd, const char *to);
int __real_renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags);
int __real_link(const char *from, const char *to);
int __real_linkat(int fromfd, const char *from, int tofd, const char *to, int flags);
int __real_unlink(const char *path);
int __real_unlinkat(int dirfd, const char *path, int flags);
int __real_flock(int fd, int op);
int __real_stat(const char *path, struct stat *out);
int __real_fstat(int fd, struct stat *out);
int __real_fstatat(int dirfd, const char *path, struct stat *out, int flags);
ssize_t __real_read(int fd, void *buf, size_t n);
char *__real_realpath(const char *path, char *out);
int __real_statvfs(const char *path, struct statvfs *out);
int __real_fstatvfs(int fd, struct statvfs *out);

/* The mode argument exists only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, last)             \
    mode_t mode = 0;                       \
    if ((flags) & (O_CREAT | O_TMPFILE)) { \
        va_list ap;                        \
        va_start(ap, last);                \
        mode = (mode_t)va_arg(ap, int);    \
        va_end(ap);                        \
    }

int __wrap_open(const char *path, int flags, ...) {
    OPEN_MODE(flags, flags);
    if (FAIL_ERRNO(FI_OPEN)) return -1;
    return __real_open(path, flags, mode);
}
int __wrap_openat(int dirfd, const char *path, int flags, ...) {
    OPEN_MODE(flags, flags);
    if (FAIL_ERRNO(FI_OPENAT)) return -1;
    return __real_openat(dirfd, path, flags, mode);
}
int __wrap___open_2(const char *path, int flags) {
    if (FAIL_ERRNO(FI_OPEN)) return -1;
    return __real___open_2(path, flags);
}
int __wrap___openat_2(int dirfd, const char *path, int flags) {
    if (FAIL_ERRNO(FI_OPENAT)) return -1;
    return __real___openat_2(dirfd, path, flags);
}
int __wrap_mkdir(const char *path, mode_t mode) {
    return FAIL_ERRNO(FI_MKDIR) ? -1 : __real_mkdir(path, mode);
}
int __wrap_mkdirat(int dirfd, const char *path, mode_t mode) {
    return FAIL_ERRNO(FI_MKDIRAT) ? -1 : __real_mkdirat(dirfd, path, mode);
}
ssize_t __wrap_write(int fd, const void *buf, size_t n) {
    return FAIL_ERRNO(FI_WRITE) ? -1 : __real_write(fd, buf, n);
}
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off) {
    return FAIL_ERRNO(FI_PWRITE) ? -1 : __real_pwrite(fd, buf, n, off);
}
int __wrap_fsync(int fd) { return FAIL_ERRNO(FI_FSYNC) ? -1 : __real_fsync(fd); }
int __wrap_fdatasync(int fd) { return FAIL_ERRNO(FI_FDATASYNC) ? -1 : __real_fdatasync(fd); }
int __wrap_rename(const char *from, const char *to) {
    return FAIL_ERRNO(FI_RENAME) ? -1 : __real_rename(from, to);
}
int __wrap_renameat(int fromfd, const char *from, int tofd, const char *to) {
    return FAIL_ERRNO(FI_RENAMEAT) ? -1 : __real_renameat(fromfd, from, tofd, to);
}
int __wrap_renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags) {
    return FAIL_ERRNO(FI_RENAMEAT2) ? -1 : __real_renameat2(fromfd, from, tofd, to, flags);
}
int __wrap_link(const char *from, const char *to) {
    return FAIL_ERRNO(FI_LINK) ? -1 : __real_link(from, to);
}
int __wrap_linkat(int fromfd, const char *from, int tofd, const char *to, int flags) {
    return FAIL_ERRNO(FI_LINKAT) ? -1 : __real_linkat(fromfd, from, tofd, to, flags);
}
int __wrap_unlink(const char *path) { return FAIL_ERRNO(FI_UNLINK) ? -1 : __real_unlink(path); }
int __wrap_unlinkat(int dirfd, const char *path, int flags) {
    return FAIL_ERRNO(FI_UNLINKAT) ? -1 : __real_unlinkat(dirfd, path, flags);
}
/* Taking a lock is a point; releasing one is not (nothing can be done about a failed unlock). */
int __wrap_flock(int fd, int op) {
    if (!(op & LOCK_UN) && FAIL_ERRNO(FI_FLOCK)) return -1;
    return __real_flock(fd, op);
}

int __wrap_stat(const char *path, struct stat *out) {
    return FAIL_ERRNO(FI_STAT) ? -1 : __real_stat(path, out);
}
int __wrap_fstat(int fd, struct stat *out) {
    return FAIL_ERRNO(FI_FSTAT) ? -1 : __real_fstat(fd, out);
}
int __wrap_fstatat(int dirfd, const char *path, struct stat *out, int flags) {
    return FAIL_ERRNO(FI_FSTATAT) ? -1 : __real_fstatat(dirfd, path, out, flags);
}
ssize_t __wrap_read(int fd, void *buf, size_t n) {
    return FAIL_ERRNO(FI_READ) ? -1 : __real_read(fd, buf, n);
}
char *__wrap_realpath(const char *path, char *out) {
    return FAIL_ERRNO(FI_REALPATH) ? NULL : __real_realpath(path, out);
}

static void fake_space(struct statvfs *out) {
    int64_t fake = __atomic_load_n(&fake_free, __ATOMIC_RELAXED);
    if (fake >= 0 && out->f_frsize > 0) {
        out->f_bavail = (fsblkcnt_t)((uint64_t)fake / out->f_frsize);
        if (out->f_bfree < out->f_bavail) out->f_bfree = out->f_bavail;
    }
}
int __wrap_statvfs(const char *path, struct statvfs *out) {
    int rc = __real_statvfs(path, out);
    if (rc == 0) fake_space(out);
    return rc;
}
int __wrap_fstatvfs(int fd, struct statvfs *out) {
    int rc = __real_fstatvfs(fd, out);
    if (rc == 0) fake_space(out);
    return rc;
}

/* --- SQLite calls made by the library --- */

int __real_sqlite3_open_v2(const char *name, sqlite3 **db, int flags, const char *vfs);
int __real_sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **out,
                              const char **tail);
int __real_sqlite3_prepare_v3(sqlite3 *db, const char *sql, int n, unsigned flags,
                              sqlite3_stmt **out, const char **tail);
int __real_sqlite3_step(sqlite3_stmt *s);
int __real_sqlite3_exec(sqlite3 *db, const char *sql, int (*cb)(void *, int, char **, char **),
                        void *ctx, char **err);
int __real_sqlite3_wal_checkpoint_v2(sqlite3 *db, const char *name, int mode, int *log, int *ckpt);

int __wrap_sqlite3_open_v2(const char *name, sqlite3 **db, int flags, const char *vfs) {
    int e;
    if (point(FI_SQLITE_OPEN, &e)) {
        *db = NULL;
        return e;
    }
    return __real_sqlite3_open_v2(name, db, flags, vfs);
}
int __wrap_sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **out,
                              const char **tail) {
    int e;
    if (point(FI_SQLITE_PREPARE, &e)) {
        *out = NULL;
        return e;
    }
    return __real_sqlite3_prepare_v2(db, sql, n, out, tail);
}
int __wrap_sqlite3_prepare_v3(sqlite3 *db, const char *sql, int n, unsigned flags,
                              sqlite3_stmt **out, const char **tail) {
    int e;
    if (point(FI_SQLITE_PREPARE, &e)) {
        *out = NULL;
        return e;
    }
    return __real_sqlite3_prepare_v3(db, sql, n, flags, out, tail);
}
/* Whether sql is a ROLLBACK: never failed. In WAL mode it writes nothing (no disk error can fail
 * it), and it is what error paths rely on to leave no transaction open; failing it would only
 * test a failure that cannot happen. */
static bool is_rollback(const char *sql) {
    while (sql && (*sql == ' ' || *sql == '\n' || *sql == '\t')) sql++;
    return sql && !strncasecmp(sql, "rollback", 8);
}

/* A failed step has not run: the statement stays where it was (the caller resets it). */
static fi_step_filter step_filter;
static void *step_filter_ctx;

void fi_set_step_filter(fi_step_filter fn, void *ctx) {
    step_filter_ctx = ctx;
    __atomic_store_n(&step_filter, fn, __ATOMIC_RELEASE);
}

int __wrap_sqlite3_step(sqlite3_stmt *s) {
    int e;
    fi_step_filter filter = __atomic_load_n(&step_filter, __ATOMIC_ACQUIRE);
    if (filter && (e = filter(step_filter_ctx, s)) != 0) return e;
    if (is_rollback(sqlite3_sql(s))) return __real_sqlite3_step(s);
    return point(FI_SQLITE_STEP, &e) ? e : __real_sqlite3_step(s);
}
int __wrap_sqlite3_exec(sqlite3 *db, const char *sql, int (*cb)(void *, int, char **, char **),
                        void *ctx, char **err) {
    int e;
    if (!is_rollback(sql) && point(FI_SQLITE_EXEC, &e)) {
        if (err) *err = NULL;
        return e;
    }
    return __real_sqlite3_exec(db, sql, cb, ctx, err);
}
int __wrap_sqlite3_wal_checkpoint_v2(sqlite3 *db, const char *name, int mode, int *log, int *ckpt) {
    int e;
    if (point(FI_SQLITE_CHECKPOINT, &e)) return e;
    return __real_sqlite3_wal_checkpoint_v2(db, name, mode, log, ckpt);
}

/* --- the shim VFS: SQLite's own file I/O --- */

typedef struct shim_file {
    sqlite3_file base;
    sqlite3_file *real; /* the "unix" file, right after this struct */
} shim_file;

static sqlite3_vfs *unix_vfs;
static sqlite3_vfs shim_vfs;

#define REAL(f) (((shim_file *)(f))->real)

static int shim_close(sqlite3_file *f) { return REAL(f)->pMethods->xClose(REAL(f)); }
static int shim_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off) {
    return REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
}
static int shim_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off) {
    int e;
    return point(FI_VFS_WRITE, &e) ? e : REAL(f)->pMethods->xWrite(REAL(f), buf, n, off);
}
static int shim_truncate(sqlite3_file *f, sqlite3_int64 size) {
    int e;
    return point(FI_VFS_TRUNCATE, &e) ? e : REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int shim_sync(sqlite3_file *f, int flags) {
    int e;
    return point(FI_VFS_SYNC, &e) ? e : REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int shim_file_size(sqlite3_file *f, sqlite3_int64 *out) {
    return REAL(f)->pMethods->xFileSize(REAL(f), out);
}
static int shim_lock(sqlite3_file *f, int level) {
    int e;
    return point(FI_VFS_LOCK, &e) ? e : REAL(f)->pMethods->xLock(REAL(f), level);
}
static int shim_unlock(sqlite3_file *f, int level) {
    return REAL(f)->pMethods->xUnlock(REAL(f), level);
}
static int shim_check_reserved(sqlite3_file *f, int *out) {
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int shim_file_control(sqlite3_file *f, int op, void *arg) {
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int shim_sector_size(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int shim_device_characteristics(sqlite3_file *f) {
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int shim_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **out) {
    int e;
    if (point(FI_VFS_SHMMAP, &e)) return e;
    return REAL(f)->pMethods->xShmMap(REAL(f), region, size, extend, out);
}
static int shim_shm_lock(sqlite3_file *f, int offset, int n, int flags) {
    return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}
static void shim_shm_barrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int shim_shm_unmap(sqlite3_file *f, int delete_flag) {
    return REAL(f)->pMethods->xShmUnmap(REAL(f), delete_flag);
}
static int shim_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **out) {
    return REAL(f)->pMethods->xFetch(REAL(f), off, n, out);
}
static int shim_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p) {
    return REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
}

static const sqlite3_io_methods shim_methods = {
    .iVersion = 3,
    .xClose = shim_close,
    .xRead = shim_read,
    .xWrite = shim_write,
    .xTruncate = shim_truncate,
    .xSync = shim_sync,
    .xFileSize = shim_file_size,
    .xLock = shim_lock,
    .xUnlock = shim_unlock,
    .xCheckReservedLock = shim_check_reserved,
    .xFileControl = shim_file_control,
    .xSectorSize = shim_sector_size,
    .xDeviceCharacteristics = shim_device_characteristics,
    .xShmMap = shim_shm_map,
    .xShmLock = shim_shm_lock,
    .xShmBarrier = shim_shm_barrier,
    .xShmUnmap = shim_shm_unmap,
    .xFetch = shim_fetch,
    .xUnfetch = shim_unfetch,
};

static int shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
                     int *out_flags) {
    (void)vfs;
    shim_file *sf = (shim_file *)f;
    sf->base.pMethods = NULL;
    sf->real = (sqlite3_file *)(sf + 1);
    int e;
    if (point(FI_VFS_OPEN, &e)) return e;
    int rc = unix_vfs->xOpen(unix_vfs, name, sf->real, flags, out_flags);
    /* (SQLite calls xClose whenever pMethods is set, even after a failed open.) */
    if (sf->real->pMethods) sf->base.pMethods = &shim_methods;
    return rc;
}

static int shim_delete(sqlite3_vfs *vfs, const char *name, int sync_dir) {
    (void)vfs;
    int e;
    return point(FI_VFS_DELETE, &e) ? e : unix_vfs->xDelete(unix_vfs, name, sync_dir);
}

static void shim_install_once(void) {
    if (sqlite3_initialize() != SQLITE_OK) abort();
    unix_vfs = sqlite3_vfs_find("unix");
    if (!unix_vfs || unix_vfs->iVersion < 1) abort();
    shim_vfs = *unix_vfs;
    shim_vfs.pNext = NULL;
    shim_vfs.zName = "yyc-fault-shim";
    shim_vfs.szOsFile = (int)sizeof(shim_file) + unix_vfs->szOsFile;
    shim_vfs.xOpen = shim_open;
    shim_vfs.xDelete = shim_delete;
    if (sqlite3_vfs_register(&shim_vfs, 1) != SQLITE_OK) abort();
}

void fi_install(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, shim_install_once);
}
