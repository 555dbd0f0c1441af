import CYYCache

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

    /// ``MemoryCache/didRemoveValue``. Kept here, not in the cache, because removal events may
    /// run on the background worker while the cache is being deinitialized (its free waits for
    /// them): they touch only this object, which outlives the C cache.
    let removalHandler = Protected<(@Sendable (Key, Value, CacheRemovalCause) -> Void)?>(nil)

    override func removed(key: UnsafeRawBufferPointer, value: UnsafeMutableRawPointer, cause: yyc_removal_cause) {
        guard let handler = removalHandler.withLock({ $0 }) else { return }
        handler(
            MemoryCache<Key, Value>.key(fromBytes: key, borrowedValue: value),
            MemoryCache<Key, Value>.copyValue(borrowed: value), CacheRemovalCause(cValue: cause))
    }

    override func memoryWarning() {
        guard let cache else { return }
        cache.state.withLock { $0.didReceiveMemoryWarning }?(cache)
    }

    override func enterBackground() {
        guard let cache else { return }
        cache.state.withLock { $0.didEnterBackground }?(cache)
    }
}
