/*
 * crc32c.h - CRC-32C (Castagnoli) of value bytes, for the manifest's per-value checksum
 * (private; not API).
 *
 * Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at run time; large inputs
 * as three interleaved chains combined at the end), else a portable slice-by-8 table. Both give
 * the same result: it is stored on disk (the manifest's value_crc32c column).
 * Thread safety: reentrant (the tables are built once, under pthread_once).
 */
#ifndef YYCACHE_CRC32C_H
#define YYCACHE_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CRC-32C of len bytes (the standard one: initial value and final xor 0xFFFFFFFF;
 * crc32c("123456789") == 0xE3069283). */
uint32_t yyc__crc32c(const void *data, size_t len);

#ifdef YYC_TESTING
/* Testing: the portable table code alone, and whether yyc__crc32c uses the hardware path. */
uint32_t yyc__crc32c_soft(const void *data, size_t len);
bool yyc__crc32c_hw_available(void);
#endif

#endif /* YYCACHE_CRC32C_H */
