import CYYCache

/// Forwards the C core's events to a ``MemoryCache``'s handlers.
@usableFromInline
final class MemoryCacheEvents<Key: CacheKey, Value>: MemoryCacheCallbacks, @unchecked Sendable {
    // @unchecked Sendable: every mutable property is behind a lock.

    /// The memory-warning and enter-background handlers, with the cache they receive.
    struct WarningHandlers {
        /// The cache, held weakly and only while a handler is set (a weakly referenced object
        /// gets a reference-count side table, which sends every retain of the cache through the
        /// runtime's slow path: caches without these handlers stay without one). Weak, because
        /// the memory-pressure watcher may reach a cache whose `deinit` has begun (the deinit
        /// then waits for that handling): loading the reference gives `nil` then, and the
        /// handler is not called; an unowned reference would hand the handler a cache being
        /// destroyed, and a handler that kept it would abort the process.
        weak var cache: MemoryCache<Key, Value>?
        var memoryWarning: (@Sendable (MemoryCache<Key, Value>) -> Void)?
        var enterBackground: (@Sendable (MemoryCache<Key, Value>) -> Void)?
    }
    let warningHandlers = Protected(WarningHandlers())

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
        let (cache, handler) = warningHandlers.withLock { ($0.cache, $0.memoryWarning) }
        if let cache, let handler { handler(cache) }
    }

    override func enterBackground() {
        let (cache, handler) = warningHandlers.withLock { ($0.cache, $0.enterBackground) }
        if let cache, let handler { handler(cache) }
    }
}
