/*
 * remote_url.c - parses "redis://[user[:password]@]host[:port][/db]" and
 * "unix://[user[:password]@]/path[?db=N]" into a yyc__remote_url.
 *
 * user and password are percent-decoded (a password may hold ":" or "@" that way); an IPv6 host
 * is written in brackets. Error messages never contain the password.
 */
#include "remote/remote_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

void yyc__remote_url_free(yyc__remote_url *u) {
    if (!u) return;
    free(u->host);
    free(u->unix_path);
    free(u->user);
    free(u->password);
    memset(u, 0, sizeof *u);
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A percent-decoded copy of s[0, n), or NULL (*rc: YYC_EINVAL for a bad escape or an encoded
 * NUL, YYC_ENOMEM). */
static char *decode(const char *s, size_t n, int *rc) {
    char *out = malloc(n + 1);
    if (!out) {
        *rc = YYC_ENOMEM;
        return NULL;
    }
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[j++] = s[i];
            continue;
        }
        int hi = i + 2 < n ? hex_value(s[i + 1]) : -1;
        int lo = i + 2 < n ? hex_value(s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            *rc = YYC_EINVAL;
            return NULL;
        }
        out[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[j] = '\0';
    return out;
}

static char *copy(const char *s, size_t n) {
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

/* A whole decimal number in [min, max] from s[0, n). */
static bool parse_int(const char *s, size_t n, long min, long max, int *out) {
    if (n == 0 || n > 9) return false;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < min || v > max) return false;
    *out = (int)v;
    return true;
}

static int fail(yyc__remote_url *u, int rc, const char *what) {
    yyc__remote_url_free(u);
    if (rc == YYC_ENOMEM) return yyc__error(YYC_ENOMEM, 0, 0, "remote url: out of memory");
    return yyc__error(YYC_EINVAL, 0, 0, "remote url: %s", what);
}

/* user[:password]@ of an authority [s, e) (if any); *rest: where the rest starts. */
static int parse_credentials(const char *s, const char *e, yyc__remote_url *u, const char **rest) {
    const char *at = NULL;
    for (const char *p = s; p < e; p++)
        if (*p == '@') at = p; /* the last one: an unencoded '@' in a password still parses */
    *rest = s;
    if (!at) return YYC_OK;
    const char *colon = memchr(s, ':', (size_t)(at - s));
    int rc = YYC_OK;
    size_t user_len = (size_t)((colon ? colon : at) - s);
    if (user_len > 0 && !(u->user = decode(s, user_len, &rc))) return rc;
    if (colon && !(u->password = decode(colon + 1, (size_t)(at - colon - 1), &rc))) return rc;
    *rest = at + 1;
    return YYC_OK;
}

static int parse_redis(const char *s, yyc__remote_url *u) {
    const char *end = s + strlen(s);
    const char *slash = strchr(s, '/');
    const char *auth_end = slash ? slash : end;
    const char *hostport;
    int rc = parse_credentials(s, auth_end, u, &hostport);
    if (rc != YYC_OK) return fail(u, rc, "bad percent escape in the user or password");
    const char *host_end, *port_start = NULL;
    if (*hostport == '[') {
        const char *close = memchr(hostport, ']', (size_t)(auth_end - hostport));
        if (!close) return fail(u, YYC_EINVAL, "unclosed '[' in the host");
        if (!(u->host = copy(hostport + 1, (size_t)(close - hostport - 1))))
            return fail(u, YYC_ENOMEM, "");
        host_end = close + 1;
        if (host_end < auth_end) {
            if (*host_end != ':') return fail(u, YYC_EINVAL, "junk after the IPv6 host");
            port_start = host_end + 1;
        }
    } else {
        const char *colon = memchr(hostport, ':', (size_t)(auth_end - hostport));
        host_end = colon ? colon : auth_end;
        if (colon) port_start = colon + 1;
        if (!(u->host = copy(hostport, (size_t)(host_end - hostport))))
            return fail(u, YYC_ENOMEM, "");
    }
    if (!u->host[0]) return fail(u, YYC_EINVAL, "no host");
    u->port = 6379;
    if (port_start && !parse_int(port_start, (size_t)(auth_end - port_start), 1, 65535, &u->port))
        return fail(u, YYC_EINVAL, "the port is not a number in 1...65535");
    if (slash && slash + 1 < end &&
        !parse_int(slash + 1, (size_t)(end - slash - 1), 0, 1000000, &u->db))
        return fail(u, YYC_EINVAL, "the db is not a number");
    return YYC_OK;
}

static int parse_unix(const char *s, yyc__remote_url *u) {
    const char *end = s + strlen(s);
    const char *query = strchr(s, '?');
    const char *path_end = query ? query : end;
    /* Credentials end at the '@' before the path's first '/'. */
    const char *first_slash = memchr(s, '/', (size_t)(path_end - s));
    const char *path;
    int rc = YYC_OK;
    if (first_slash && first_slash > s && memchr(s, '@', (size_t)(first_slash - s))) {
        rc = parse_credentials(s, first_slash, u, &path);
        if (rc != YYC_OK) return fail(u, rc, "bad percent escape in the user or password");
    } else {
        path = s;
    }
    if (*path != '/') return fail(u, YYC_EINVAL, "the socket path must be absolute");
    if (!(u->unix_path = copy(path, (size_t)(path_end - path)))) return fail(u, YYC_ENOMEM, "");
    if (query) {
        if (strncmp(query, "?db=", 4) != 0 ||
            !parse_int(query + 4, (size_t)(end - query - 4), 0, 1000000, &u->db))
            return fail(u, YYC_EINVAL, "the only query is ?db=N");
    }
    return YYC_OK;
}

int yyc__remote_url_parse(const char *url, yyc__remote_url *out) {
    memset(out, 0, sizeof *out);
    if (!url) return yyc__error(YYC_EINVAL, 0, 0, "remote url: NULL");
    if (strncmp(url, "redis://", 8) == 0) return parse_redis(url + 8, out);
    if (strncmp(url, "unix://", 7) == 0) return parse_unix(url + 7, out);
    return yyc__error(YYC_EINVAL, 0, 0, "remote url: must start with redis:// or unix://");
}
