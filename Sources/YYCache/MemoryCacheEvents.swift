/// Forwards the C core's events to a ``MemoryCache``'s handlers.
final class MemoryCacheEvents<Key: CacheKey, Value>: MemoryCacheCallbacks, @unchecked Sendable {
    // @unchecked Sendable: `cache` is written once, in MemoryCache.init, before the hooks are
    // installed; afterwards it is only read.
    weak var cache: MemoryCache<Key, Value>?

    override func memoryWarning() {
        guard let cache else { return }
        cache.state.withLock { $0.didReceiveMemoryWarning }?(cache)
    }

    override func enterBackground() {
        guard let cache else { return }
        cache.state.withLock { $0.didEnterBackground }?(cache)
    }
}
