import CYYCache

// Removal events (memory_cache.h "Removal events").
extension MemoryCache where Value: Sendable {
    /// Called once for every entry that leaves the cache, with its key, its value and why it
    /// left; default `nil`.
    ///
    /// It runs after the entry left (a read from the handler no longer finds it), with no lock
    /// held, on the thread that releases the value: the caller's thread before the call returns
    /// when ``releasesValuesAsynchronously`` is `false`, else the library's background worker;
    /// entries removed by background trims (the cost limit, the auto-trim) always on the
    /// worker. So it may call into the cache. ``removeAllValues()`` reports one
    /// ``CacheRemovalCause/explicit`` per entry; ``handleMemoryWarning()`` and
    /// ``handleEnterBackground()`` report ``CacheRemovalCause/memoryPressure``; an expired entry
    /// is reported ``CacheRemovalCause/expired`` by the read or trim that removes it. The
    /// cache's `deinit` reports nothing. Entries that leave while the handler is being set or
    /// cleared may or may not be reported.
    ///
    /// Cost: nothing while `nil`. While set, a replacement copies the entry's node (its key and
    /// old value) so that the event can carry the key.
    ///
    /// The corresponding C function is `yyc_memcache_set_removal_listener`.
    public var didRemoveValue: (@Sendable (Key, Value, CacheRemovalCause) -> Void)? {
        get { afterReleasing(events.removalHandler.withLock { $0 }) }
        set {
            events.removalHandler.withLock { $0 = newValue }
            events.listenForRemovals(on: handle, newValue != nil)
            releaseHandedBackValues()
        }
    }
}
