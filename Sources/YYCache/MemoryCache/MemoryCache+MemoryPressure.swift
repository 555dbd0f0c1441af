import CYYCache

extension MemoryCache where Value: Sendable {
    /// Whether the cache answers the system's memory pressure: on Linux, when the kernel reports
    /// that tasks stall on memory, a background thread calls ``handleMemoryWarning()`` on every
    /// cache that answers (``didReceiveMemoryWarning``, then remove-all if
    /// ``shouldRemoveAllValuesOnMemoryWarning``), as iOS's memory warnings do for YYMemoryCache.
    ///
    /// Available only where `Value` is `Sendable`: the handling runs on the watcher's thread,
    /// which ``didReceiveMemoryWarning`` receives the cache on, and values that are not
    /// `Sendable` must not cross threads. Default `true` on Linux for a cache created where
    /// `Value` is known to be `Sendable`; `false` for one created in a generic context (see
    /// "Values that are not `Sendable`" on ``MemoryCache``; the removed values are then still
    /// released in the callers' calls), and where the platform has no pressure-stall
    /// information (not Linux).
    ///
    /// What is watched, in this order: systemd's `$MEMORY_PRESSURE_WATCH` (with
    /// `$MEMORY_PRESSURE_WRITE`), the process's cgroup v2 `memory.pressure`, then
    /// `/proc/pressure/memory`, with an event when tasks stalled for 200 ms of a 2 s window.
    /// The thread runs only while some cache answers; where no source is usable (no PSI in the
    /// kernel, or `$MEMORY_PRESSURE_WATCH=/dev/null`) nothing happens. The handler runs on the
    /// watcher's thread, with no lock held; the cache's `deinit` waits for a handling of that
    /// cache in progress.
    ///
    /// The corresponding C functions are `yyc_memcache_set_responds_to_system_memory_pressure`
    /// and `yyc_memcache_responds_to_system_memory_pressure` (`yycache/memory_pressure.h`, which
    /// describes the sources in full).
    public var respondsToSystemMemoryPressure: Bool {
        get { afterReleasing(yyc_memcache_responds_to_system_memory_pressure(handle)) }
        set {
            let status = yyc_memcache_set_responds_to_system_memory_pressure(handle, newValue)
            // Only allocation can fail; Swift treats running out of memory as fatal too.
            if status != 0 { fatalError("yyc_memcache_set_responds_to_system_memory_pressure failed") }
        }
    }
}

extension MemoryCache {
    /// Opts a new cache in, on Linux, unless its values are released only in the callers'
    /// calls (`Value` not known to be `Sendable`). Called by the designated initializer.
    static func answerSystemMemoryPressureByDefault(
        _ handle: OpaquePointer, releasesOnCallersOnly: Bool
    ) {
        #if os(Linux)
            if !releasesOnCallersOnly {
                _ = yyc_memcache_set_responds_to_system_memory_pressure(handle, true)
            }
        #endif
    }
}
