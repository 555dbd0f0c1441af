/*
 * yycache/status.h - status codes, error details and shared helpers.
 *
 * Every fallible function of the library returns an int status: YYC_OK (0), YYC_NOTFOUND
 * for a miss (not an error), or a positive YYC_E* error code. The codes come from one
 * X-macro table, YYC_STATUS_MAP, which also generates yyc_strerror() and yyc_status_name().
 *
 * Thread safety: everything in this header may be called from any thread.
 */
#ifndef YYCACHE_STATUS_H
#define YYCACHE_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Export macro: the library is built with hidden visibility; only YYC_API symbols leave it. */
#if defined(_WIN32) && defined(YYC_SHARED)
#ifdef YYC_BUILDING
#define YYC_API __declspec(dllexport)
#else
#define YYC_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define YYC_API __attribute__((visibility("default")))
#else
#define YYC_API
#endif

/* XX(NAME, value, message). Values are stable: they are part of the ABI and of the Swift
 * CacheError.Code mirror. Append only. */
#define YYC_STATUS_MAP(XX)                                                    \
    XX(OK, 0, "success")                                                      \
    XX(NOTFOUND, 1, "no value for the key")                                   \
    XX(EINVAL, 2, "invalid argument")                                         \
    XX(ENOMEM, 3, "out of memory")                                            \
    XX(EIO, 4, "input/output error")                                          \
    XX(ESQLITE, 5, "SQLite error")                                            \
    XX(EBUSY, 6, "the database is busy or locked by another connection")      \
    XX(ECLOSED, 7, "the cache is closed")                                     \
    XX(ECORRUPT, 8, "the cache data is corrupt")                              \
    XX(ETOOBIG, 9, "value or key too large")                                  \
    XX(ENOSPC, 10, "no space left on the device or over the file size limit") \
    XX(EPERM, 11, "permission denied or read-only file system")               \
    XX(ERECURSIVE, 12, "a loader asked for the key it is loading")

typedef enum yyc_status {
#define YYC__STATUS_ENUM(name, value, message) YYC_##name = value,
    YYC_STATUS_MAP(YYC__STATUS_ENUM)
#undef YYC__STATUS_ENUM
} yyc_status;

/* A static, human-readable message for a status. Unknown codes give "unknown status".
 * Returns: a static string (never NULL, never freed). */
YYC_API const char *yyc_strerror(int status);

/* The status's name without the prefix: "OK", "NOTFOUND", "EINVAL", ... or "UNKNOWN".
 * Returns: a static string. */
YYC_API const char *yyc_status_name(int status);

/* Details of the last failure on the calling thread.
 *
 * Every disk call (yyc_kv_*, yyc_diskcache_*, yyc_cache_*) that returns an error status
 * (anything but YYC_OK and YYC_NOTFOUND) first records the details in a thread-local
 * yyc_error, filled while the object's lock is still held, so another thread's error can
 * never replace yours (the race sqlite3_errmsg documents). A successful call does not clear it.
 * The message never contains keys or values. */
typedef struct yyc_error {
    int code;          /* the YYC_* status returned */
    int sqlite_code;   /* extended SQLite result code, 0 if SQLite was not involved */
    int sys_errno;     /* errno of a failed system call, 0 if none */
    char message[256]; /* NUL-terminated description, e.g. "open data file: No space left" */
} yyc_error;

/* Copies the calling thread's last error into *out (all zero / empty if none yet).
 * Ownership: out is caller-owned. Thread safety: reads thread-local state only. */
YYC_API void yyc_last_error(yyc_error *out);

/* Frees a buffer the library handed out (values, item lists, strings). NULL is fine.
 * Never pass memory from another allocator. */
YYC_API void yyc_free(void *p);

/* The library's version as "MAJOR.MINOR.PATCH". Returns: a static string. */
YYC_API const char *yyc_version(void);

#ifdef __cplusplus
}
#endif

#endif /* YYCACHE_STATUS_H */
