/*
 * memory_pressure.h - the memory-pressure watcher's internals shared with memory_cache.c and
 * the tests. Not API (the API is include/yycache/memory_pressure.h). The watcher knows its
 * subscribers only as opaque pointers with a handler: memory_cache.c includes this header,
 * never the other way round.
 */
#ifndef YYCACHE_MEMORY_PRESSURE_INTERNAL_H
#define YYCACHE_MEMORY_PRESSURE_INTERNAL_H

#include "platform/internal.h"

#include <yycache/memory_pressure.h>

/* What a pressure event runs on a subscriber, on the watcher's thread, with no lock held. */
typedef void (*yyc__pressure_handler)(void *subscriber);

/* Opts c in with its handler (nothing changes if it is in already). Starts the watcher with
 * the first subscriber. Returns YYC_OK or YYC_ENOMEM. */
int yyc__memory_pressure_subscribe(void *c, yyc__pressure_handler fn);

/* Whether c is opted in. */
bool yyc__memory_pressure_subscribed(const void *c);

/* Opts c out (yyc_memcache_free calls it first, before anything of c is torn down): returns
 * once no watcher thread other than the caller's is handling c, and none will. No lock of c
 * may be held. Ends the watcher with the last subscriber. */
void yyc__memory_pressure_forget(const void *c);

#ifdef YYC_TESTING
/* Testing: the watcher threads alive in this process (a stopped one counts until its thread
 * has ended), and the pressure events handled so far (every opted-in cache handled). */
int yyc__memory_pressure_testing_threads(void);
unsigned long yyc__memory_pressure_testing_events(void);

/* Wait up to `seconds` until the thread count is `threads` / the event count is at least
 * `events`. Return whether that happened. */
bool yyc__memory_pressure_testing_wait_threads(int threads, double seconds);
bool yyc__memory_pressure_testing_wait_events(unsigned long events, double seconds);
#endif

#endif /* YYCACHE_MEMORY_PRESSURE_INTERNAL_H */
