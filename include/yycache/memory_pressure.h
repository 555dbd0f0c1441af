/*
 * yycache/memory_pressure.h - system memory pressure on Linux: memory caches that empty
 * themselves when the kernel reports memory stalls (the Linux stand-in for iOS's memory
 * warnings, which YYMemoryCache answers).
 *
 * A memory cache that opts in (yyc_memcache_set_responds_to_system_memory_pressure) gets
 * yyc_memcache_handle_memory_warning called whenever the system is under memory pressure: its
 * memory-warning handler first, then remove-all if its remove_all_on_memory_warning flag says so
 * (memory_cache.h), exactly as if the application had called it.
 *
 * The watcher: one background thread per process, started when the first cache opts in and
 * ended when the last one opts out or is freed (it blocks every signal). It waits in poll() on
 * one source, chosen when it starts, in this order:
 *   1. $MEMORY_PRESSURE_WATCH, when set (systemd's "Memory Pressure Handling" protocol, given
 *      to services with MemoryPressureWatch=): a pressure-stall (PSI) file of /proc or a
 *      cgroup (woken by POLLPRI), a FIFO or a character device (POLLIN: each wake-up, whatever
 *      was written, is one event), or an AF_UNIX stream socket (connected to; POLLIN, each read
 *      is one event). $MEMORY_PRESSURE_WRITE, base64, is decoded and written to a PSI file or a
 *      socket right after opening (for a PSI file without it: the default trigger below). Not
 *      written to a FIFO (the watcher would read it back as an event). Set to "/dev/null" or
 *      to "" the variable disables the watcher; a variable that names nothing usable (not an
 *      absolute path, missing, another kind of file, invalid base64, a refused write) leaves
 *      the process without a watcher: there is no fallback when the service manager has
 *      spoken.
 *   2. Else the process's cgroup v2 memory.pressure (the "0::" line of /proc/self/cgroup,
 *      under the cgroup2 mount of /proc/self/mountinfo), with the trigger
 *      "some 200000 2000000": an event when tasks of the cgroup were stalled on memory for
 *      200 ms within a 2 s window (systemd's default). The kernel accepts triggers from
 *      processes without CAP_SYS_RESOURCE only with windows that are multiples of 2 s, so this
 *      one works unprivileged (where the cgroup file is writable: a delegated cgroup).
 *   3. Else /proc/pressure/memory (the whole system) with the same trigger.
 * A source whose trigger write is refused (EACCES, EPERM, EINVAL...) or that does not exist is
 * skipped. Where none is usable - no PSI (a kernel without CONFIG_PSI, or psi=0), not Linux,
 * every write refused - no watcher runs: opted-in caches stay opted in and simply never hear
 * of pressure (yyc_memory_pressure_watcher_source() says YYC_MEMORY_PRESSURE_NONE). The
 * source is chosen again only when a watcher next starts (the number of opted-in caches goes
 * from 0 to 1), so changing the variables later has no effect on a running watcher. A source
 * that goes away while watched (a removed cgroup, a closed socket) ends the watcher likewise.
 *
 * Where the handling runs: on the watcher's thread, one opted-in cache after another, in no
 * particular order. The handlers run with no lock of the library held and may call into any
 * cache, free their own cache, opt caches in or out. Values removed there are released per
 * each cache's release policy (a synchronous cache releases them on the watcher's thread).
 * A handler must not call fork(): the child would carry a copy of the watcher's thread.
 *
 * fork(): the child has no watcher and no opted-in cache (the parent's caches are the parent's,
 * yycache.h); its first opt-in starts its own watcher, which reads the variables again.
 * The parent's watcher is unaffected.
 *
 * Thread safety: every function here is thread-safe (one process-wide mutex, never held while
 * a handler runs). Blocking: opting in may open and write a few files of /proc, /sys or the
 * watched path (never the cache's disk); opting out and yyc_memcache_free wait while the
 * watcher is handling that same cache on another thread (so do not call them holding a lock
 * the cache's memory-warning handler takes).
 */
#ifndef YYCACHE_MEMORY_PRESSURE_H
#define YYCACHE_MEMORY_PRESSURE_H

#include "memory_cache.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opts the cache in (on = true) or out of system memory pressure handling. The default is out
 * for caches made in C: the library starts no thread and opens no file unless asked (the Swift
 * MemoryCache opts in when it is created, on Linux). Opting in when already in, or out when
 * already out, changes nothing. The first opt-in of the process starts the watcher (see the
 * top of this file); the last opt-out ends it; yyc_memcache_free opts the cache out. After
 * opting out returns, the watcher does not start handling the cache again (a handling already
 * running on another thread has finished, unless the caller is that handling itself).
 * Returns: YYC_OK (also when no source is available: see yyc_memory_pressure_watcher_source),
 * YYC_EINVAL (NULL cache), YYC_ENOMEM (opting in). */
YYC_API int yyc_memcache_set_responds_to_system_memory_pressure(yyc_memcache *c, bool on);

/* Whether the cache is opted in (false for NULL). */
YYC_API bool yyc_memcache_responds_to_system_memory_pressure(yyc_memcache *c);

/* What the watcher of this process watches. */
typedef enum yyc_memory_pressure_source {
    YYC_MEMORY_PRESSURE_NONE = 0,            /* no watcher runs: no cache opted in, or none of
                                              * the sources below could be used */
    YYC_MEMORY_PRESSURE_SERVICE_MANAGER = 1, /* $MEMORY_PRESSURE_WATCH */
    YYC_MEMORY_PRESSURE_CGROUP = 2,          /* the process's cgroup v2 memory.pressure */
    YYC_MEMORY_PRESSURE_SYSTEM = 3           /* /proc/pressure/memory */
} yyc_memory_pressure_source;

/* The source the running watcher watches, or YYC_MEMORY_PRESSURE_NONE. */
YYC_API yyc_memory_pressure_source yyc_memory_pressure_watcher_source(void);

#ifdef __cplusplus
}
#endif

#endif /* YYCACHE_MEMORY_PRESSURE_H */
