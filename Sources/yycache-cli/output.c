/*
 * output.c - formatting and parsing helpers of the `yycache` inspector.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h> /* isfinite: a macro, no libm needed */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- errors ---- */

void cli_error(const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "yycache: %s: ", path);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- sizes and times ---- */

const char *fmt_size(int64_t bytes, bool exact, char buf[32]) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (exact || bytes < 1024) {
        snprintf(buf, 32, exact ? "%lld" : "%lld B", (long long)bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, 32, "%.1f %s", v, units[u]);
    return buf;
}

const char *plural(int64_t n, const char *one, const char *many) { return n == 1 ? one : many; }

const char *fmt_time(int64_t unix_seconds, char buf[32]) {
    time_t t = (time_t)unix_seconds;
    struct tm tm;
    if (!localtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        snprintf(buf, 32, "@%lld", (long long)unix_seconds);
    return buf;
}

/* ---- keys: UTF-8, terminal and JSON escaping ---- */

/* Length (1-4) of the valid, shortest-form UTF-8 sequence at s (n bytes available), or 0. */
static size_t utf8_sequence_length(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0; /* no overlong forms */
        if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90; /* no overlong forms */
        if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

bool needs_hex(const char *bytes, size_t len) {
    const unsigned char *s = (const unsigned char *)bytes;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_sequence_length(s + i, len - i);
        if (n == 0) return true;
        i += n;
    }
    return false;
}

void print_key(FILE *out, const char *bytes, size_t len, bool quoted) {
    const unsigned char *s = (const unsigned char *)bytes;
    if (quoted) fputc('"', out);
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        size_t n = utf8_sequence_length(s + i, len - i);
        if (n > 1 && !(c == 0xC2 && s[i + 1] < 0xA0)) { /* not a C1 control */
            fwrite(s + i, 1, n, out);
            i += n;
            continue;
        }
        if (c == '\\') fputs("\\\\", out);
        else if (c == '"' && quoted) fputs("\\\"", out);
        else if (c == '\n') fputs("\\n", out);
        else if (c == '\r') fputs("\\r", out);
        else if (c == '\t') fputs("\\t", out);
        else if (c >= 0x20 && c < 0x7F) fputc(c, out);
        else fprintf(out, "\\x%02x", c);
        i++;
    }
    if (quoted) fputc('"', out);
}

void print_json_string(FILE *out, const char *bytes, size_t len) {
    const unsigned char *s = (const unsigned char *)bytes;
    fputc('"', out);
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        size_t n = utf8_sequence_length(s + i, len - i);
        if (n > 1) {
            fwrite(s + i, 1, n, out);
            i += n;
            continue;
        }
        switch (c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\b': fputs("\\b", out); break;
        case '\f': fputs("\\f", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            /* Control characters, DEL, and each byte of an invalid sequence. */
            if (c < 0x20 || c >= 0x7F) fprintf(out, "\\u%04x", c);
            else fputc(c, out);
        }
        i++;
    }
    fputc('"', out);
}

void print_json_hex(FILE *out, const char *bytes, size_t len) {
    fputc('"', out);
    for (size_t i = 0; i < len; i++) fprintf(out, "%02x", (unsigned char)bytes[i]);
    fputc('"', out);
}

/* ---- parsing ---- */

bool parse_count(const char *s, int64_t *out) {
    if (!s || !isdigit((unsigned char)s[0])) return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0') return false;
    *out = v;
    return true;
}

/* A non-negative number (decimals allowed) followed by a suffix looked up in units. */
typedef struct unit {
    const char *suffix;
    double factor;
} unit;

static bool parse_scaled(const char *s, const unit *units, int64_t *out) {
    if (!s || !(isdigit((unsigned char)s[0]) || s[0] == '.')) return false;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0) return false;
    if (strspn(s, "0123456789.") != (size_t)(end - s)) return false; /* no 0x.., 1e3 */
    while (*end == ' ') end++;
    for (const unit *u = units; u->suffix; u++) {
        if (strcmp(end, u->suffix) != 0) continue;
        double r = v * u->factor;
        if (r >= 9.2e18) return false;
        *out = (int64_t)(r + 0.5);
        return true;
    }
    return false;
}

bool parse_size(const char *s, int64_t *out) {
    static const unit units[] = {
        {"", 1},       {"B", 1},        {"K", 0x1p10}, {"k", 0x1p10},   {"KiB", 0x1p10},
        {"KB", 1e3},   {"kB", 1e3},     {"M", 0x1p20}, {"MiB", 0x1p20}, {"MB", 1e6},
        {"G", 0x1p30}, {"GiB", 0x1p30}, {"GB", 1e9},   {"T", 0x1p40},   {"TiB", 0x1p40},
        {"TB", 1e12},  {NULL, 0},
    };
    return parse_scaled(s, units, out);
}

bool parse_duration(const char *s, int64_t *out) {
    static const unit units[] = {
        {"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 604800}, {NULL, 0},
    };
    return parse_scaled(s, units, out);
}
