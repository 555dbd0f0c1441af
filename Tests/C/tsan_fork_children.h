/*
 * tsan_fork_children.h - for the tests whose children start threads after a fork of a
 * multi-threaded parent. ThreadSanitizer kills such a child unless die_after_fork=0, and its
 * __tsan_default_options hook is not seen from an executable (the symbol is not exported), so a
 * test that includes this header runs itself again, once, with the option added. Include it in
 * one file of the test executable; it does nothing without ThreadSanitizer.
 */
#ifndef YYC_TSAN_FORK_CHILDREN_H
#define YYC_TSAN_FORK_CHILDREN_H

#ifdef __SANITIZE_THREAD__
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void allow_threads_after_fork(int argc, char **argv) {
    (void)argc;
    const char *opts = getenv("TSAN_OPTIONS");
    if (opts && strstr(opts, "die_after_fork=0")) return;
    char *with = NULL;
    if (asprintf(&with, "%s%sdie_after_fork=0", opts ? opts : "", opts && *opts ? ":" : "") < 0)
        return;
    setenv("TSAN_OPTIONS", with, 1);
    execv("/proc/self/exe", argv); /* returns only on failure: the children then report it */
    free(with);
}
#endif

#endif
