/*
 * kv_sqlite.c - the bottom of the KV storage: the statuses of SQLite and errno failures, their
 * reporting (the thread's last error, the hook, the log), and the statement helpers every other
 * kv file uses (prepare from the statement cache, bind a key, step to the end).
 *
 * Calls nothing of kv/ but the transaction tracker (a failed statement makes the transaction's
 * counted changes unsure) and the statement cache. Owner: the caller's thread, as all of yyc_kv.
 */
#include "kv/kv_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Formats an error; records it as the thread's last error when `record` (the call is going to
 * return it), sends it to the hook, and prints it when logs are on. Returns code. */
int yyc__kv_report(yyc_kv *kv, bool record, int code, int sqlite_code, int sys_errno,
                   const char *fmt, ...) {
    yyc_error e = {.code = code, .sqlite_code = sqlite_code, .sys_errno = sys_errno};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    if (record) yyc__error(code, sqlite_code, sys_errno, "%s", e.message);
    if ((kv->probing || kv->quiet_corrupt) && code == YYC_ECORRUPT) return code;
    if (kv->quiet_full && code == YYC_ENOSPC) return code;
    if (kv->logs) {
        fprintf(stderr, "yycache: kv storage: %s (%s, sqlite %d, errno %d)\n", e.message,
                yyc_status_name(code), sqlite_code, sys_errno);
    }
    if (kv->hook) {
        /* A library call in the hook that fails must not replace the error this call is
         * about to return. */
        yyc_error saved;
        yyc_last_error(&saved);
        kv->hook(kv->hook_ctx, &e);
        yyc__error_restore(&saved);
    } else if (code == YYC_ECORRUPT) {
        kv->pending_event = e; /* delivered when a hook is set */
        kv->has_pending_event = true;
    }
    return code;
}

static int errno_status(int err) {
    int s = yyc__status_from_errno(err);
    return s == YYC_NOTFOUND ? YYC_EIO : s;
}

int yyc__kv_errno_fail(yyc_kv *kv, int err, const char *what) {
    return yyc__kv_report(kv, true, errno_status(err), 0, err, "%s: %s", what, strerror(err));
}

/* Whether a failed manifest write is explained by a full file system or by the process's
 * file-size limit (RLIMIT_FSIZE) being reached by the database or its WAL. */
static bool manifest_looks_full(yyc_kv *kv) {
    struct statvfs sv;
    if (fstatvfs(kv->root_fd, &sv) == 0 && sv.f_bavail == 0) return true;
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return false;
    static const char *const names[] = {MANIFEST_NAME, MANIFEST_NAME "-wal"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        struct stat st;
        /* Within two WAL frames of the largest page size of the limit. */
        if (fstatat(kv->root_fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            (uint64_t)st.st_size + 2 * (65536 + 24) >= (uint64_t)rl.rlim_cur)
            return true;
    }
    return false;
}

int yyc__kv_status_from_sqlite(yyc_kv *kv, int rc, int sys_errno) {
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return YYC_EBUSY;
    case SQLITE_FULL: return YYC_ENOSPC;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return YYC_ECORRUPT;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH: return YYC_EPERM;
    case SQLITE_TOOBIG: return YYC_ETOOBIG;
    case SQLITE_NOMEM: return YYC_ENOMEM;
    case SQLITE_CANTOPEN:
        if (sys_errno == EACCES || sys_errno == EPERM || sys_errno == EROFS) return YYC_EPERM;
        if (faccessat(kv->root_fd, ".", W_OK, AT_EACCESS) != 0) return YYC_EPERM;
        return YYC_EIO;
    case SQLITE_IOERR:
        if (sys_errno == ENOSPC || sys_errno == EFBIG || sys_errno == EDQUOT) return YYC_ENOSPC;
        if (sys_errno == EACCES || sys_errno == EPERM || sys_errno == EROFS) return YYC_EPERM;
        /* SQLite reports a write that hit RLIMIT_FSIZE (EFBIG) as SQLITE_IOERR_WRITE, and its
         * saved errno is often already overwritten (unixGetLastError reads errno late). */
        if (manifest_looks_full(kv)) return YYC_ENOSPC;
        return YYC_EIO;
    default: return YYC_ESQLITE;
    }
}

/* Maps an SQLite failure to a status, records and reports it. Corruption of an open manifest
 * schedules a rebuild at the next call. */
int yyc__kv_sqlite_fail(yyc_kv *kv, int rc, const char *what) {
    int ext = kv->db ? sqlite3_extended_errcode(kv->db) : rc;
    if ((ext & 0xff) != (rc & 0xff)) ext = rc;
    int sys = kv->db ? sqlite3_system_errno(kv->db) : 0;
    int code = yyc__kv_status_from_sqlite(kv, rc, sys);
    if (code == YYC_ECORRUPT && kv->db) kv->rebuild_pending = true;
    yyc__kv_txn_statement_failed(kv);
    return yyc__kv_report(kv, true, code, ext, sys, "%s: %s", what, sqlite3_errstr(rc));
}

/* The cached statement for sql; caller has passed db_check. */
int yyc__kv_prepare_checked(yyc_kv *kv, const char *sql, sqlite3_stmt **out) {
    int src = yyc__stmt_cache_get_literal(&kv->stmts, sql, out);
    if (src != SQLITE_OK) return yyc__kv_sqlite_fail(kv, src, "prepare");
    return YYC_OK;
}

/* Binds a key with its length. SQLITE_STATIC is safe: SQLite reads a bound value only while
 * the statement steps, every statement is reset before the call that bound it returns, and
 * every use of a cached statement binds all of its parameters again before stepping. */
int yyc__kv_bind_key(sqlite3_stmt *s, int idx, const char *key) {
    return sqlite3_bind_text64(s, idx, key, strlen(key), SQLITE_STATIC, SQLITE_UTF8);
}

/* Steps a statement that returns no row (or whose rows are ignored) and gives it back. */
int yyc__kv_step_done(yyc_kv *kv, sqlite3_stmt *s, const char *what) {
    int rc = sqlite3_step(s);
    while (rc == SQLITE_ROW) rc = sqlite3_step(s);
    int out = rc == SQLITE_DONE ? YYC_OK : yyc__kv_sqlite_fail(kv, rc, what);
    yyc__stmt_done(s);
    return out;
}
