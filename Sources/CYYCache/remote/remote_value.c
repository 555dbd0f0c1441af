/*
 * remote_value.c - the header every value stored in Redis carries (remote_internal.h), so that
 * a value this library did not write, or one damaged, is recognised and never returned.
 */
#include "remote/remote_internal.h"

#include "platform/crc32c.h"

#include <stdlib.h>
#include <string.h>

static const char magic[4] = {'y', 'y', 'R', 'V'};
enum { FORMAT_VERSION = 1 };

static void put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int yyc__remote_value_encode(const void *value, size_t len, char **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    if (len > YYC_REMOTE_MAX_VALUE)
        return yyc__error(YYC_ETOOBIG, 0, 0, "remote set: the value is over %u bytes",
                          (unsigned)YYC_REMOTE_MAX_VALUE);
    unsigned char *buf = malloc(YYC__REMOTE_HEADER + len);
    if (!buf) return yyc__error(YYC_ENOMEM, 0, 0, "remote set: out of memory");
    memcpy(buf, magic, 4);
    buf[4] = FORMAT_VERSION;
    buf[5] = 0; /* flags */
    buf[6] = buf[7] = 0;
    put_u32(buf + 8, (uint32_t)len);
    put_u32(buf + 12, yyc__crc32c(value, len));
    if (len) memcpy(buf + YYC__REMOTE_HEADER, value, len);
    *out = (char *)buf;
    *out_len = YYC__REMOTE_HEADER + len;
    return YYC_OK;
}

int yyc__remote_value_decode(const char *stored, size_t stored_len, const char **value, size_t *len,
                             const char **why) {
    const unsigned char *p = (const unsigned char *)stored;
    *value = NULL;
    *len = 0;
    if (stored_len < YYC__REMOTE_HEADER || memcmp(p, magic, 4) != 0) {
        *why = "no yycache header (a value this library did not write)";
        return YYC_ECORRUPT;
    }
    if (p[4] != FORMAT_VERSION || p[5] != 0 || p[6] != 0 || p[7] != 0) {
        *why = "unknown format version or flags";
        return YYC_ECORRUPT;
    }
    uint32_t n = get_u32(p + 8);
    if ((size_t)n != stored_len - YYC__REMOTE_HEADER) {
        *why = "the length in the header differs from the value's";
        return YYC_ECORRUPT;
    }
    if (get_u32(p + 12) != yyc__crc32c(p + YYC__REMOTE_HEADER, n)) {
        *why = "checksum mismatch";
        return YYC_ECORRUPT;
    }
    *value = stored + YYC__REMOTE_HEADER;
    *len = n;
    return YYC_OK;
}
