/*
 * yycache/yycache.h - umbrella header of the YYCache C library.
 *
 * Anything not declared in the headers in include/yycache/ is not API and may change without
 * notice. Each header states, for its declarations, the status codes returned, who owns what,
 * thread safety and whether a call may block or touch the disk.
 * Compiles on its own as C99 and as C++.
 *
 * Background threads: the library starts (lazily) three threads of its own, one for memory caches
 * (asynchronous releases, deferred and automatic trims), one for disk maintenance (trash
 * emptying, orphan sweeps, disk auto-trims) and one for the disk manifests' WAL checkpoints
 * (kv_storage.h), so that disk work never delays memory releases and no checkpoint waits behind
 * a sweep. They block every signal. One more, the memory-pressure watcher (memory_pressure.h), runs
 * only while a memory cache has opted in to system memory pressure.
 *
 * fork() without exec: the child may create and use NEW objects of every kind (memory caches,
 * disk caches and KV storages - on any folder, the parent's included, as a second process -
 * and two-level caches); they get their own background threads, started lazily. Objects that
 * existed at the fork belong to the parent: the child must not use, free or close them (their
 * memory is the child's copy, reclaimed when it exits or execs; an open SQLite connection must
 * never be used on both sides of a fork). The parent's pending background work (releases,
 * trims, trash emptying) stays the parent's: the child never runs it. Caveat: SQLite's own
 * process-wide mutexes are not fork-aware, so a child that uses disk caches should be forked
 * while no other thread of the parent is inside a disk call (the library's disk-maintenance
 * thread included: fork before opening disk caches, or exec). The checkpoint thread never is: a
 * fork waits until it has left SQLite (pthread_atfork).
 */
#ifndef YYCACHE_YYCACHE_H
#define YYCACHE_YYCACHE_H

#include "status.h"
#include "removal_cause.h"
#include "memory_cache.h"
#include "memory_pressure.h"
#include "kv_storage.h"
#include "disk_cache.h"
#include "cache.h"
#include "remote.h"

#endif /* YYCACHE_YYCACHE_H */
