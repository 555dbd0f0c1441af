/*
 * yycache/yycache.h - umbrella header of the YYCache C library.
 *
 * Anything not declared in the headers in include/yycache/ is not API and may change without
 * notice. Each header states, for its declarations, the status codes returned, who owns what,
 * thread safety and whether a call may block or touch the disk.
 * Compiles on its own as C99 and as C++.
 */
#ifndef YYCACHE_YYCACHE_H
#define YYCACHE_YYCACHE_H

#include "status.h"
#include "memory_cache.h"
#include "kv_storage.h"
#include "disk_cache.h"
#include "cache.h"

#endif /* YYCACHE_YYCACHE_H */
