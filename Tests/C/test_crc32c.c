/*
 * test_crc32c.c - the per-value checksum (yyc__crc32c) is the standard CRC-32C, bit for bit, on
 * every path: it is stored on disk (value_crc32c), so the three-chain hardware code, the
 * portable tables and a bitwise reference must agree for every length and alignment.
 */
#include "test_support.h"

#include <pthread.h>

#include "platform/crc32c.h"

#define REF_POLY 0x82F63B78u

/* The bitwise definition, one step: the register after byte b. */
static uint32_t ref_step(uint32_t c, unsigned char b) {
    c ^= b;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ REF_POLY : c >> 1;
    return c;
}

static uint32_t ref_crc(const unsigned char *p, size_t len) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) c = ref_step(c, p[i]);
    return len ? ~c : 0;
}

/* Deterministic pseudo-random bytes (splitmix64). */
static void fill_random(unsigned char *buf, size_t len, uint64_t seed) {
    for (size_t i = 0; i < len; i++) {
        uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        buf[i] = (unsigned char)(z ^ (z >> 31));
    }
}

/* For every offset 0..15 in buf, checks both implementations against the reference for each
 * length in lens (ascending), computing the reference incrementally in one pass. */
static void check_lengths(const unsigned char *buf, size_t cap, const size_t *lens, size_t n) {
    for (size_t off = 0; off < 16; off++) {
        uint32_t c = 0xFFFFFFFFu;
        size_t done = 0;
        for (size_t i = 0; i < n; i++) {
            size_t len = lens[i];
            assert_true(off + len <= cap);
            for (; done < len; done++) c = ref_step(c, buf[off + done]);
            uint32_t want = len ? ~c : 0;
            uint32_t got = yyc__crc32c(buf + off, len);
            uint32_t soft = yyc__crc32c_soft(buf + off, len);
            if (got != want || soft != want)
                fail_msg("len %zu off %zu: want %08x, got %08x (soft %08x)", len, off, want, got,
                         soft);
        }
    }
}

static void crc32c_matches_known_vectors(void **state) {
    (void)state;
    unsigned char zeros[32] = {0}, ones[32], up[32], down[32];
    for (int i = 0; i < 32; i++) {
        ones[i] = 0xFF;
        up[i] = (unsigned char)i;
        down[i] = (unsigned char)(31 - i);
    }
    /* "123456789" is the check value of the Castagnoli CRC; the others are RFC 3720's. */
    assert_int_equal(yyc__crc32c("123456789", 9), 0xE3069283u);
    assert_int_equal(yyc__crc32c(zeros, 32), 0x8A9136AAu);
    assert_int_equal(yyc__crc32c(ones, 32), 0x62A8AB43u);
    assert_int_equal(yyc__crc32c(up, 32), 0x46DD794Eu);
    assert_int_equal(yyc__crc32c(down, 32), 0x113FDB5Cu);
    assert_int_equal(yyc__crc32c_soft("123456789", 9), 0xE3069283u);
    assert_int_equal(yyc__crc32c(NULL, 0), 0);
    assert_int_equal(yyc__crc32c_soft(NULL, 0), 0);
    assert_int_equal(ref_crc((const unsigned char *)"123456789", 9), 0xE3069283u);
}

static void crc32c_matches_reference_for_every_short_length_and_alignment(void **state) {
    (void)state;
    enum { MAX = 4100 };
    size_t cap = MAX + 16;
    unsigned char *buf = malloc(cap);
    assert_non_null(buf);
    fill_random(buf, cap, 1);
    size_t *lens = malloc((MAX + 1) * sizeof *lens);
    assert_non_null(lens);
    for (size_t i = 0; i <= MAX; i++) lens[i] = i;
    check_lengths(buf, cap, lens, MAX + 1);
    free(lens);
    free(buf);
}

/* Lengths around the hardware path's block boundaries (3 x 256 and 3 x 8192 bytes), the
 * benchmark's 100 KB value and (under `make soak`) a megabyte, at every alignment. */
static void crc32c_matches_reference_around_block_boundaries(void **state) {
    (void)state;
    size_t lens[512];
    size_t n = 0;
    static const size_t bases[] = {
        768, 1536, 3 * 8192, 2 * 3 * 8192, 3 * 8192 + 768, 4 * 3 * 8192 + 5 * 768, 102400, 1 << 20};
    static const long deltas[] = {-9, -8, -7, -1, 0, 1, 7, 8, 9, 255, 256, 257};
    size_t base_count = sizeof bases / sizeof *bases - (test_soak() ? 0 : 1);
    for (size_t b = 0; b < base_count; b++)
        for (size_t d = 0; d < sizeof deltas / sizeof *deltas; d++)
            lens[n++] = (size_t)((long)bases[b] + deltas[d]);
    /* Sort ascending (check_lengths computes the reference in one pass). */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && lens[j - 1] > lens[j]; j--) {
            size_t t = lens[j];
            lens[j] = lens[j - 1];
            lens[j - 1] = t;
        }
    size_t cap = lens[n - 1] + 16;
    unsigned char *buf = malloc(cap);
    assert_non_null(buf);
    fill_random(buf, cap, 2);
    check_lengths(buf, cap, lens, n);
    /* Patterns that cancel badly in a wrong combination: all zeros and all ones. */
    memset(buf, 0, cap);
    check_lengths(buf, cap, lens, n);
    memset(buf, 0xFF, cap);
    check_lengths(buf, cap, lens, n);
    free(buf);
}

/* Random inputs of random lengths (up to 256 KB) at random offsets: the hardware path gives the
 * table code's result. */
static void crc32c_hardware_and_tables_agree_on_random_inputs_lengths_and_alignments(void **state) {
    (void)state;
    enum { CAP = 256 * 1024 + 64, ROUNDS = 400 };
    unsigned char *buf = malloc(CAP);
    assert_non_null(buf);
    uint64_t seed = 4;
    for (int round = 0; round < ROUNDS; round++) {
        unsigned char r[8];
        fill_random(r, sizeof r, seed++);
        uint64_t x;
        memcpy(&x, r, sizeof x);
        size_t off = (size_t)(x % 64);
        size_t len = (size_t)((x >> 8) % (round % 4 == 0 ? CAP - 64 : 8192));
        fill_random(buf + off, len, seed++);
        uint32_t want = yyc__crc32c_soft(buf + off, len), got = yyc__crc32c(buf + off, len);
        if (got != want) fail_msg("len %zu off %zu: want %08x, got %08x", len, off, want, got);
    }
    free(buf);
}

typedef struct crc_job {
    const unsigned char *buf;
    size_t len;
    uint32_t want;
    bool ok;
} crc_job;

static void *crc_thread(void *arg) {
    crc_job *j = arg;
    j->ok = true;
    for (int i = 0; i < 50; i++)
        if (yyc__crc32c(j->buf, j->len) != j->want) j->ok = false;
    return NULL;
}

/* The first calls may race to build the tables (pthread_once) and to probe the CPU. */
static void crc32c_is_the_same_on_many_threads(void **state) {
    (void)state;
    enum { N = 4, LEN = 3 * 8192 * 2 + 100 };
    unsigned char *buf = malloc(LEN);
    assert_non_null(buf);
    fill_random(buf, LEN, 3);
    crc_job jobs[N];
    pthread_t th[N];
    uint32_t want = ref_crc(buf, LEN);
    for (int i = 0; i < N; i++) {
        jobs[i] = (crc_job){.buf = buf, .len = LEN, .want = want};
        assert_int_equal(pthread_create(&th[i], NULL, crc_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_true(jobs[i].ok);
    }
    free(buf);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc32c_is_the_same_on_many_threads),
        cmocka_unit_test(crc32c_matches_known_vectors),
        cmocka_unit_test(crc32c_matches_reference_for_every_short_length_and_alignment),
        cmocka_unit_test(crc32c_matches_reference_around_block_boundaries),
        cmocka_unit_test(crc32c_hardware_and_tables_agree_on_random_inputs_lengths_and_alignments),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    if (!yyc__crc32c_hw_available()) print_message("crc32c: no hardware path on this CPU\n");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
