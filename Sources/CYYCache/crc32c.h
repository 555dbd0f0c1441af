/*
 * crc32c.h - CRC-32C (Castagnoli) of value bytes, for the manifest's per-value checksum
 * (private; not API).
 *
 * Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at run time), else a
 * portable slice-by-8 table. Thread safety: reentrant.
 */
#ifndef YYCACHE_CRC32C_H
#define YYCACHE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of len bytes (the standard one: initial value and final xor 0xFFFFFFFF;
 * crc32c("123456789") == 0xE3069283). */
uint32_t yyc__crc32c(const void *data, size_t len);

#endif /* YYCACHE_CRC32C_H */
