/*
 * yycache/removal_cause.h - why an entry left a cache, and the counters of a cache's use.
 *
 * Shared by every cache type: the memory cache's removal listener and statistics
 * (memory_cache.h) use them, and the disk and two-level caches may too.
 *
 * Thread safety: plain types and a pure function; nothing here locks or blocks.
 */
#ifndef YYCACHE_REMOVAL_CAUSE_H
#define YYCACHE_REMOVAL_CAUSE_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why an entry left a cache (Swift: CacheRemovalCause). Values are stable (ABI) and index
 * yyc_cache_statistics.removals. */
typedef enum yyc_removal_cause {
    YYC_REMOVED_EXPLICIT = 0,       /* remove, remove_all (also a set of NULL in Swift) */
    YYC_REMOVED_REPLACED = 1,       /* a set on the same key replaced the value */
    YYC_REMOVED_EXPIRED = 2,        /* its time to live passed, or the age limit / trim_to_age */
    YYC_REMOVED_EVICTED = 3,        /* count or cost limit, trim_to_count, trim_to_cost */
    YYC_REMOVED_MEMORY_PRESSURE = 4 /* handle_memory_warning, handle_enter_background */
} yyc_removal_cause;

/* The number of causes (the length of yyc_cache_statistics.removals). */
#define YYC_REMOVAL_CAUSE_COUNT 5

/* A snapshot of a cache's counters since its creation or its last statistics reset. Every
 * counter is exact (no sampling).
 *   hits, misses: reads that found / did not find a live entry (an expired entry is a miss).
 *   insertions: sets that stored a value (a new key or a replacement; loaded values too).
 *   removals[cause]: entries that left, by yyc_removal_cause.
 *   loads, load_failures: loader runs that returned a value / failed.
 *   total_load_time_ns: the sum of every loader run's duration (both kinds), in nanoseconds
 *     on CLOCK_MONOTONIC. */
typedef struct yyc_cache_statistics {
    uint64_t hits;
    uint64_t misses;
    uint64_t insertions;
    uint64_t removals[YYC_REMOVAL_CAUSE_COUNT];
    uint64_t loads;
    uint64_t load_failures;
    uint64_t total_load_time_ns;
} yyc_cache_statistics;

/* hits / (hits + misses), or 0 when both are 0. s must not be NULL. */
static inline double yyc_cache_statistics_hit_ratio(const yyc_cache_statistics *s) {
    uint64_t reads = s->hits + s->misses;
    return reads ? (double)s->hits / (double)reads : 0.0;
}

#ifdef __cplusplus
}
#endif

#endif /* YYCACHE_REMOVAL_CAUSE_H */
