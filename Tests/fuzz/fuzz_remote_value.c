/*
 * fuzz_remote_value.c - libFuzzer target: hostile bytes from Redis (remote_value.c and the
 * reading of GET/PTTL replies in remote.c).
 *
 * Each input is used three ways:
 *   1. as a stored value (an exact-size copy: ASan catches any read past it) for
 *      yyc__remote_value_decode: YYC_OK only when re-encoding the decoded bytes gives the
 *      input back exactly (so nothing but a value this library wrote is accepted), with the
 *      value inside the input; else YYC_ECORRUPT with a reason and nothing returned;
 *   2. as a value to store: encode, then decode, gives the same bytes;
 *   3. as a RESP stream from a server (hiredis's reader), whose first two replies are taken as
 *      the answers to GET and PTTL for yyc__remote_get_reply: any reply of any type is a value
 *      (exactly what 1. accepts), a miss (YYC_NOTFOUND), a corrupt value (YYC_ECORRUPT) or an
 *      error reply (YYC_EIO) - never a crash, an over-read or a leak.
 */
#include "remote/remote_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...)                                       \
    do {                                                       \
        if (!(cond)) {                                         \
            fprintf(stderr, "fuzz_remote_value: %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__);                      \
            fprintf(stderr, "\n");                             \
            abort();                                           \
        }                                                      \
    } while (0)

/* 1: decode, accepted only as a value this library would have written. */
static void decode_stored(const uint8_t *data, size_t size) {
    char *stored = malloc(size ? size : 1);
    if (!stored) return;
    if (size) memcpy(stored, data, size);
    const char *value = (const char *)1, *why = NULL;
    size_t len = 99;
    int rc = yyc__remote_value_decode(stored, size, &value, &len, &why);
    if (rc == YYC_OK) {
        CHECK(size >= YYC__REMOTE_HEADER && value == stored + YYC__REMOTE_HEADER &&
                  len == size - YYC__REMOTE_HEADER,
              "value %p len %zu of %zu bytes", (const void *)value, len, size);
        char *again = NULL;
        size_t again_len = 0;
        CHECK(yyc__remote_value_encode(value, len, &again, &again_len) == YYC_OK, "re-encode");
        CHECK(again_len == size && memcmp(again, stored, size) == 0,
              "a value no encode writes was accepted");
        free(again);
    } else {
        CHECK(rc == YYC_ECORRUPT && why && !value && len == 0, "status %d", rc);
    }
    free(stored);
}

/* 2: what is stored reads back. */
static void round_trip(const uint8_t *data, size_t size) {
    char *stored = NULL;
    size_t stored_len = 0;
    CHECK(yyc__remote_value_encode(data, size, &stored, &stored_len) == YYC_OK, "encode");
    const char *value, *why = NULL;
    size_t len;
    CHECK(yyc__remote_value_decode(stored, stored_len, &value, &len, &why) == YYC_OK, "decode: %s",
          why ? why : "?");
    CHECK(len == size && (size == 0 || memcmp(value, data, size) == 0), "round trip");
    free(stored);
}

/* 3: replies from a hostile server. */
static void hostile_replies(const uint8_t *data, size_t size) {
    redisReader *reader = redisReaderCreate();
    if (!reader) return;
    redisReply *replies[2] = {NULL, NULL};
    int count = 0;
    if (redisReaderFeed(reader, (const char *)data, size) == REDIS_OK) {
        while (count < 2) {
            void *reply = NULL;
            if (redisReaderGetReply(reader, &reply) != REDIS_OK || !reply) break;
            replies[count++] = reply;
        }
    }
    if (count >= 1) {
        for (int with_ttl = 0; with_ttl < (count == 2 ? 2 : 1); with_ttl++) {
            void *value = (void *)1;
            size_t len = 99;
            double ttl = INFINITY;
            value = NULL;
            len = 0;
            int rc = yyc__remote_get_reply(replies[0], with_ttl ? replies[1] : NULL, &value, &len,
                                           with_ttl ? &ttl : NULL);
            CHECK(rc == YYC_OK || rc == YYC_NOTFOUND || rc == YYC_ECORRUPT || rc == YYC_EIO ||
                      rc == YYC_ENOMEM,
                  "status %d", rc);
            if (rc == YYC_OK) {
                const redisReply *got = replies[0];
                CHECK(got->type == REDIS_REPLY_STRING, "a value from a reply of type %d",
                      got->type);
                const char *bytes, *why;
                size_t n;
                CHECK(yyc__remote_value_decode(got->str, got->len, &bytes, &n, &why) == YYC_OK &&
                          n == len && (n == 0 || memcmp(bytes, value, n) == 0),
                      "the value is not the reply's");
                CHECK(!isnan(ttl) && (isinf(ttl) || ttl >= 0), "ttl %f", ttl);
            } else {
                CHECK(value == NULL && len == 0, "output on status %d", rc);
            }
            free(value);
        }
    }
    for (int i = 0; i < count; i++) freeReplyObject(replies[i]);
    redisReaderFree(reader);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    decode_stored(data, size);
    if (size <= 1u << 20) round_trip(data, size);
    hostile_replies(data, size);
    return 0;
}
