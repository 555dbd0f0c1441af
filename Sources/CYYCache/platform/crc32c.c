/*
 * crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78).
 *
 * Hardware path (SSE4.2): the crc32 instruction has a latency of 3 cycles but issues every
 * cycle, so one dependency chain runs at a third of its speed. Large inputs are cut into three
 * adjacent blocks whose CRCs run as three independent chains (the second and third from 0);
 * the partial CRCs are then combined: CRC is linear over GF(2), so
 *     crc(s, A|B) = shift_|B|(crc(s, A)) ^ crc(0, B)
 * where shift_n (appending n zero bytes to the register) is a 32x32 bit matrix, applied with
 * four 256-entry tables. Blocks of LONG_BLOCK bytes, then SHORT_BLOCK, then one chain.
 */
#include "platform/crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82F63B78u

/* Block sizes of the three-chain hardware loop (powers of two: see build_shift). */
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256

static uint32_t table[8][256];
/* shift_*[k][i]: the register i << 8k after LONG_BLOCK / SHORT_BLOCK zero bytes. */
static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* A 32x32 matrix over GF(2): m[j] is the image of bit j. */
static uint32_t mat_apply(const uint32_t m[32], uint32_t v) {
    uint32_t r = 0;
    for (int j = 0; v; j++, v >>= 1)
        if (v & 1) r ^= m[j];
    return r;
}

/* The tables of the operator "append 2^log2_bytes zero bytes", by repeated squaring of the
 * one-byte operator. */
static void build_shift(uint32_t out[4][256], int log2_bytes) {
    uint32_t m[32], sq[32];
    for (int j = 0; j < 32; j++) {
        uint32_t v = 1u << j;
        m[j] = (v >> 8) ^ table[0][v & 0xff];
    }
    for (int i = 0; i < log2_bytes; i++) {
        for (int j = 0; j < 32; j++) sq[j] = mat_apply(m, m[j]);
        memcpy(m, sq, sizeof m);
    }
    for (int k = 0; k < 4; k++)
        for (uint32_t i = 0; i < 256; i++) out[k][i] = mat_apply(m, i << (8 * k));
}

static void build_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
    build_shift(shift_long, __builtin_ctz(LONG_BLOCK));
    build_shift(shift_short, __builtin_ctz(SHORT_BLOCK));
}

static uint32_t crc_soft(uint32_t crc, const unsigned char *p, size_t len) {
    while (len && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);
#endif
        w ^= crc;
        crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
              table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
              table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_HW 1
#include <cpuid.h>

/* cpuid directly (header-only), not __builtin_cpu_supports: that one needs libgcc's
 * __cpu_model, which not every link (SwiftPM's, with compiler-rt) provides. */
static int cpu_has_sse42(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    return (c & bit_SSE4_2) != 0;
}

static inline uint64_t load64(const unsigned char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline uint32_t shift_apply(const uint32_t t[4][256], uint32_t c) {
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

/* The register after the 3 * block bytes at p: three chains, combined. */
__attribute__((target("sse4.2"), always_inline)) static inline uint64_t
crc_hw_3way(uint64_t c0, const unsigned char *p, size_t block, const uint32_t shift[4][256]) {
    uint64_t c1 = 0, c2 = 0;
    const unsigned char *end = p + block;
#pragma GCC unroll 4
    for (; p < end; p += 8) {
        c0 = __builtin_ia32_crc32di(c0, load64(p));
        c1 = __builtin_ia32_crc32di(c1, load64(p + block));
        c2 = __builtin_ia32_crc32di(c2, load64(p + 2 * block));
    }
    c0 = shift_apply(shift, (uint32_t)c0) ^ c1;
    return shift_apply(shift, (uint32_t)c0) ^ c2;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
                                                         size_t len) {
    uint64_t c = crc;
    while (len && ((uintptr_t)p & 7)) {
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
        len--;
    }
    while (len >= 3 * LONG_BLOCK) {
        c = crc_hw_3way(c, p, LONG_BLOCK, shift_long);
        p += 3 * LONG_BLOCK;
        len -= 3 * LONG_BLOCK;
    }
    while (len >= 3 * SHORT_BLOCK) {
        c = crc_hw_3way(c, p, SHORT_BLOCK, shift_short);
        p += 3 * SHORT_BLOCK;
        len -= 3 * SHORT_BLOCK;
    }
    while (len >= 8) {
        c = __builtin_ia32_crc32di(c, load64(p));
        p += 8;
        len -= 8;
    }
    while (len--) c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return (uint32_t)c;
}

/* Whether the CPU has the crc32 instruction (cpuid once; benign race: every thread computes
 * the same answer). */
static int hw_available(void) {
    static int hw = -1;
    int use = __atomic_load_n(&hw, __ATOMIC_RELAXED);
    if (use < 0) {
        use = cpu_has_sse42();
        __atomic_store_n(&hw, use, __ATOMIC_RELAXED);
    }
    return use;
}
#endif

uint32_t yyc__crc32c(const void *data, size_t len) {
    const unsigned char *p = data;
    if (len == 0) return 0;
#ifdef HAVE_HW
    if (hw_available()) {
        if (len >= 3 * SHORT_BLOCK) pthread_once(&table_once, build_tables); /* shift tables */
        return ~crc_hw(0xFFFFFFFFu, p, len);
    }
#endif
    pthread_once(&table_once, build_tables);
    return ~crc_soft(0xFFFFFFFFu, p, len);
}

#ifdef YYC_TESTING
uint32_t yyc__crc32c_soft(const void *data, size_t len) {
    if (len == 0) return 0;
    pthread_once(&table_once, build_tables);
    return ~crc_soft(0xFFFFFFFFu, data, len);
}

bool yyc__crc32c_hw_available(void) {
#ifdef HAVE_HW
    return hw_available() != 0;
#else
    return false;
#endif
}
#endif
