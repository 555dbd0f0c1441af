import Dispatch

/// Forwards the C core's events to a ``MemoryCache``'s handlers, and copies and destroys its
/// inline values (the typed half of ``MemoryCacheCallbacks``).
final class MemoryCacheEvents<Key: CacheKey, Value>: MemoryCacheCallbacks, @unchecked Sendable {
    // @unchecked Sendable: `cache` is written once, in MemoryCache.init, before the hooks are
    // installed; afterwards it is only read.

    /// The cache, not retained. `unowned(unsafe)` rather than `weak`: a weakly referenced object
    /// gets a reference-count side table, which sends every retain of the cache through the
    /// runtime's slow path. Safe because the cache owns this object and the C core calls the
    /// event hooks only from `handleMemoryWarning()` / `handleEnterBackground()`, on a live cache.
    unowned(unsafe) var cache: MemoryCache<Key, Value>?

    override func memoryWarning() {
        guard let cache else { return }
        cache.state.withLock { $0.didReceiveMemoryWarning }?(cache)
    }

    override func enterBackground() {
        guard let cache else { return }
        cache.state.withLock { $0.didEnterBackground }?(cache)
    }

    override func copyValue(to dst: UnsafeMutableRawPointer, from src: UnsafeRawPointer) {
        dst.assumingMemoryBound(to: Value.self)
            .initialize(to: src.assumingMemoryBound(to: Value.self).pointee)
    }

    override func destroyValue(_ value: UnsafeMutableRawPointer) {
        let typed = value.assumingMemoryBound(to: Value.self)
        if releasesOnMainThread.load(ordering: .relaxed) && !MainQueue.isCurrent {
            // The C core frees the bytes when we return: move the value to the heap and end its
            // life on the main queue. The address travels as an integer (Value need not be
            // Sendable, but no other thread touches it after the cache dropped it).
            let moved = UnsafeMutablePointer<Value>.allocate(capacity: 1)
            moved.moveInitialize(from: typed, count: 1)
            let bits = UInt(bitPattern: moved)
            DispatchQueue.main.async {
                let pointer = UnsafeMutablePointer<Value>(bitPattern: bits)!
                pointer.deinitialize(count: 1)
                pointer.deallocate()
            }
        } else {
            typed.deinitialize(count: 1)
        }
    }
}
