/*
 * status.c - status messages, the thread-local last error, and small shared utilities.
 */
#include "platform/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef YYC_VERSION_STRING
#define YYC_VERSION_STRING "0.2.0"
#endif

const char *yyc_strerror(int status) {
    switch (status) {
#define YYC__STATUS_MESSAGE(name, value, message) \
    case value: return message;
        YYC_STATUS_MAP(YYC__STATUS_MESSAGE)
#undef YYC__STATUS_MESSAGE
    default: return "unknown status";
    }
}

const char *yyc_status_name(int status) {
    switch (status) {
#define YYC__STATUS_NAME(name, value, message) \
    case value: return #name;
        YYC_STATUS_MAP(YYC__STATUS_NAME)
#undef YYC__STATUS_NAME
    default: return "UNKNOWN";
    }
}

const char *yyc_version(void) { return YYC_VERSION_STRING; }

void yyc_free(void *p) { free(p); }

/* ---- the thread-local last error ---- */

static _Thread_local yyc_error last_error;

void yyc_last_error(yyc_error *out) {
    if (out) *out = last_error;
}

int yyc__error(int code, int sqlite_code, int sys_errno, const char *fmt, ...) {
    last_error.code = code;
    last_error.sqlite_code = sqlite_code;
    last_error.sys_errno = sys_errno;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error.message, sizeof last_error.message, fmt, ap);
    va_end(ap);
    return code;
}

void yyc__error_restore(const yyc_error *saved) { last_error = *saved; }

int yyc__status_from_errno(int err) {
    switch (err) {
    case ENOSPC:
    case EFBIG:
#ifdef EDQUOT
    case EDQUOT:
#endif
        return YYC_ENOSPC;
    case EACCES:
    case EPERM:
    case EROFS: return YYC_EPERM;
    case ENOMEM: return YYC_ENOMEM;
    case ENOENT: return YYC_NOTFOUND;
    case ENAMETOOLONG:
    case EINVAL: return YYC_EINVAL;
    default: return YYC_EIO;
    }
}

double yyc__monotonic_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double yyc__monotonic_coarse_now(void) {
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
#else
    return yyc__monotonic_now();
#endif
}
