/*
 * fault_inject.h - fail the Nth file-system call or SQLite step the library makes (test support
 * of test_fault_loop.c only).
 *
 * How: test_fault_loop is linked with `-Wl,--wrap=<symbol>` for every libc and SQLite function
 * listed in fault_inject.c (Tests/C/CMakeLists.txt), so the library's calls (it is linked
 * statically into that one executable) go to __wrap_<symbol> here. SQLite's own file I/O, done
 * inside libsqlite3, is reached through a shim VFS registered as the default one: it forwards to
 * "unix" and counts xOpen, xDelete, xWrite, xTruncate, xSync, xLock and xShmMap.
 *
 * Each such call is a "point". While armed, only calls made on the thread that armed count (the
 * library's background worker is left alone, so counts are deterministic; fi_arm_threads
 * counts the worker's instead); the armed point fails
 * with one of the errors listed for its kind (an errno value for a libc call, a result code for
 * SQLite), without calling the real function. Every other call is forwarded unchanged. (An
 * flock that releases a lock is not a point: only taking one is. Nor is a ROLLBACK statement:
 * in WAL mode it writes nothing, so no disk fault can fail it.)
 *
 * Thread safety: arm, disarm and the queries on one thread at a time; the wrappers are safe on
 * any thread.
 */
#ifndef YYCACHE_FAULT_INJECT_H
#define YYCACHE_FAULT_INJECT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum fi_kind {
    FI_OPEN,
    FI_OPENAT,
    FI_MKDIR,
    FI_MKDIRAT,
    FI_WRITE,
    FI_PWRITE,
    FI_FSYNC,
    FI_FDATASYNC,
    FI_RENAME,
    FI_RENAMEAT,
    FI_RENAMEAT2,
    FI_LINK,
    FI_LINKAT,
    FI_UNLINK,
    FI_UNLINKAT,
    FI_FLOCK,
    FI_STAT,
    FI_FSTAT,
    FI_FSTATAT,
    FI_READ,
    FI_REALPATH,
    FI_SQLITE_OPEN,
    FI_SQLITE_PREPARE,
    FI_SQLITE_STEP,
    FI_SQLITE_EXEC,
    FI_SQLITE_CHECKPOINT,
    FI_VFS_OPEN,
    FI_VFS_DELETE,
    FI_VFS_WRITE,
    FI_VFS_TRUNCATE,
    FI_VFS_SYNC,
    FI_VFS_LOCK,
    FI_VFS_SHMMAP,
    FI_KIND_COUNT
} fi_kind;

/* Registers the shim VFS as SQLite's default (once; later calls do nothing). Call before the
 * first database is opened. */
void fi_install(void);

/* Arms counting on the calling thread: fail_at == 0 only counts (and logs each point's kind),
 * fail_at == N fails the Nth point with error number error_index of its kind (modulo the
 * number of errors of the kind). */
void fi_arm(long fail_at, int error_index);
/* The same; with every_later, every point after the Nth fails too (a disk that stays full or
 * broken), each with error number error_index of its own kind - except where that error is
 * EINTR or SQLITE_BUSY, which only the Nth gets. */
void fi_arm_from(long fail_at, int error_index, bool every_later);
/* The same, with others: the calls of every thread except the calling one count instead (the
 * library's background worker, while the caller waits for it; only one other thread may make
 * calls while armed, or the counts are not deterministic). */
void fi_arm_threads(long fail_at, int error_index, bool every_later, bool others);
/* Disarms; returns the number of points reached since fi_arm. */
long fi_disarm(void);

/* After a counting run (fail_at 0): the kind of point n (1-based), FI_KIND_COUNT if beyond. */
fi_kind fi_logged_kind(long n);
/* After a failing run: whether the armed point was reached, and its kind and error (the
 * first failure of a persistent run). */
bool fi_fired(fi_kind *kind, int *error);

/* The errors a point of this kind fails with, and names for messages. */
int fi_error_count(fi_kind kind);
int fi_error_of(fi_kind kind, int index);
const char *fi_kind_name(fi_kind kind);
/* Whether the error is a transient one (EINTR, SQLITE_BUSY): a retry may succeed. */
bool fi_error_is_transient(fi_kind kind, int error);
const char *fi_error_name(fi_kind kind, int error);

/* A filter on every sqlite3_step of every thread, armed or not: fn returns 0 to run the step,
 * or an SQLite result code that the step returns instead (the statement does not run). It may
 * block (to hold a writer inside its commit) and may use the statement's connection. NULL
 * removes it. Set it while no other thread steps. */
struct sqlite3_stmt;
typedef int (*fi_step_filter)(void *ctx, struct sqlite3_stmt *stmt);
void fi_set_step_filter(fi_step_filter fn, void *ctx);

/* statvfs/fstatvfs report this many bytes available (f_bavail) on every file system; negative
 * (the default) reports the truth. Independent of arming. */
void fi_set_fake_free_bytes(int64_t bytes);

#endif /* YYCACHE_FAULT_INJECT_H */
