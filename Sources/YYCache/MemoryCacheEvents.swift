/// Forwards the C core's events to a ``MemoryCache``'s handlers.
@usableFromInline
final class MemoryCacheEvents<Key: CacheKey, Value>: MemoryCacheCallbacks, @unchecked Sendable {
    // @unchecked Sendable: `cache` is written once, in MemoryCache.init, before the hooks are
    // installed; afterwards it is only read.

    /// The cache, not retained. `unowned(unsafe)` rather than `weak`: a weakly referenced object
    /// gets a reference-count side table, which sends every retain of the cache through the
    /// runtime's slow path. Safe because the cache owns this object and the C core calls the
    /// event hooks only from `handleMemoryWarning()` / `handleEnterBackground()`, on a live cache,
    /// or from the memory-pressure watcher's thread, whose handling of the cache
    /// `yyc_memcache_free` (the cache's `deinit`) waits for: the object stays allocated until
    /// the hook has returned.
    unowned(unsafe) var cache: MemoryCache<Key, Value>?

    override func memoryWarning() {
        guard let cache else { return }
        cache.state.withLock { $0.didReceiveMemoryWarning }?(cache)
    }

    override func enterBackground() {
        guard let cache else { return }
        cache.state.withLock { $0.didEnterBackground }?(cache)
    }
}
