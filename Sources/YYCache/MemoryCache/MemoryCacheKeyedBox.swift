/// The object a ``MemoryCache`` hands to the C core for each value when its key type cannot be
/// rebuilt from the key bytes (``CacheKeyRebuild``): the value with its key, so that
/// ``MemoryCache/keys`` and removal events can return the key. Owned like ``MemoryCacheBox``.
@usableFromInline
final class MemoryCacheKeyedBox<Key: CacheKey, Value> {
    @usableFromInline
    let key: Key

    @usableFromInline
    let value: Value

    @inlinable
    init(key: Key, value: Value) {
        self.key = key
        self.value = value
    }
}
