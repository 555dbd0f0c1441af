/*
 * fuzz_remote_url.c - libFuzzer target: the remote tier's URL parser (remote_url.c) on arbitrary
 * text.
 *
 * Input: byte 0 picks a prefix ("redis://", "unix://", or none), the rest is the text after it
 * (up to the first NUL, as a C string would end). Checks, besides no crash or over-read
 * (ASan/UBSan): the status is YYC_OK, YYC_EINVAL or YYC_ENOMEM; on YYC_OK exactly one of host
 * and socket path is set, the host is non-empty, the port in 1...65535, the db in 0...1000000, a
 * socket path absolute; on an error everything is NULL/0 and the message never contains the
 * password of the input (the text between the first ':' and the last '@' of the authority is
 * all it could be, so no message may contain any 4-byte run of it that the fixed wording
 * does not).
 */
#include "remote/remote_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...)                                     \
    do {                                                     \
        if (!(cond)) {                                       \
            fprintf(stderr, "fuzz_remote_url: %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__);                    \
            fprintf(stderr, "\n");                           \
            abort();                                         \
        }                                                    \
    } while (0)

static const char *const prefixes[] = {"redis://", "unix://", ""};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const char *prefix = prefixes[data[0] % 3];
    size_t plen = strlen(prefix), n = size - 1;
    char *url = malloc(plen + n + 1); /* exact size: ASan catches a read past the end */
    if (!url) return 0;
    memcpy(url, prefix, plen);
    memcpy(url + plen, data + 1, n);
    url[plen + n] = '\0';
    yyc__remote_url u;
    int rc = yyc__remote_url_parse(url, &u);
    CHECK(rc == YYC_OK || rc == YYC_EINVAL || rc == YYC_ENOMEM, "status %d for %s", rc, url);
    if (rc == YYC_OK) {
        CHECK((u.host != NULL) != (u.unix_path != NULL), "host %p, path %p", (void *)u.host,
              (void *)u.unix_path);
        if (u.host) {
            CHECK(u.host[0] != '\0', "empty host for %s", url);
            CHECK(u.port >= 1 && u.port <= 65535, "port %d", u.port);
        } else {
            CHECK(u.unix_path[0] == '/', "relative socket path %s", u.unix_path);
        }
        CHECK(u.db >= 0 && u.db <= 1000000, "db %d", u.db);
        /* Every string is a C string (strlen under ASan reads no further than its end). */
        if (u.user) (void)strlen(u.user);
        if (u.password) (void)strlen(u.password);
        yyc__remote_url_free(&u);
    } else {
        CHECK(!u.host && !u.unix_path && !u.user && !u.password && u.port == 0 && u.db == 0,
              "an error left parts behind for %s", url);
        yyc_error e;
        yyc_last_error(&e);
        /* The password candidate: after the scheme, between the first ':' and the last '@'. */
        const char *rest = url + plen;
        const char *at = strrchr(rest, '@');
        const char *colon = at ? memchr(rest, ':', (size_t)(at - rest)) : NULL;
        if (colon && at - colon - 1 >= 4) {
            for (const char *p = colon + 1; p + 4 <= at; p++) {
                char run[5];
                memcpy(run, p, 4);
                run[4] = '\0';
                /* Runs that are part of the fixed wording prove nothing. */
                static const char *const wording[] = {
                    "remote url: must start with redis:// or unix://",
                    "remote url: bad percent escape in the user or password",
                    "remote url: unclosed '[' in the host",
                    "remote url: junk after the IPv6 host",
                    "remote url: no host",
                    "remote url: the port is not a number in 1...65535",
                    "remote url: the db is not a number",
                    "remote url: the socket path must be absolute",
                    "remote url: the only query is ?db=N",
                    "remote url: out of memory"};
                bool fixed = false;
                for (size_t i = 0; i < sizeof wording / sizeof *wording; i++)
                    if (strstr(wording[i], run)) fixed = true;
                CHECK(fixed || !strstr(e.message, run), "the message \"%s\" holds \"%s\" of %s",
                      e.message, run, url);
            }
        }
    }
    free(url);
    return 0;
}
