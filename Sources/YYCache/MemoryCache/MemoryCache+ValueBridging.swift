// How values (and, for some key types, keys) cross into the C core and back; see
// ``MemoryCacheStorage``, ``MemoryCacheBox`` and ``MemoryCacheKeyedBox``. Pointer caches only,
// except `copyValue(borrowed:)` and `key(fromBytes:borrowedValue:)`, which serve both modes.
extension MemoryCache {
    /// The object the C core stores for `value` (pointer caches): the value itself when it is a
    /// class instance, else a box (with the key when keys cannot be rebuilt).
    @inlinable
    static func object(for value: Value, key: Key) -> AnyObject {
        if storesObjectsDirectly { return unsafeBitCast(value, to: AnyObject.self) }
        if storesKeysWithValues { return MemoryCacheKeyedBox(key: key, value: value) }
        return MemoryCacheBox(value)
    }

    /// The value of an object the C core handed over with a reference we now own (a get).
    @inlinable
    static func takeValue(retained pointer: UnsafeMutableRawPointer) -> Value {
        if storesObjectsDirectly {
            return unsafeBitCast(Unmanaged<AnyObject>.fromOpaque(pointer).takeRetainedValue(), to: Value.self)
        }
        if storesKeysWithValues {
            return Unmanaged<MemoryCacheKeyedBox<Key, Value>>.fromOpaque(pointer).takeRetainedValue().value
        }
        return Unmanaged<MemoryCacheBox<Value>>.fromOpaque(pointer).takeRetainedValue().value
    }

    /// A copy of a value the C core lends for the duration of a callback: the address of an
    /// inline value's bytes, or a pointer cache's object.
    static func copyValue(borrowed pointer: UnsafeMutableRawPointer) -> Value {
        if storesValuesInline { return pointer.assumingMemoryBound(to: Value.self).pointee }
        if storesObjectsDirectly {
            return unsafeBitCast(Unmanaged<AnyObject>.fromOpaque(pointer).takeUnretainedValue(), to: Value.self)
        }
        if storesKeysWithValues {
            return Unmanaged<MemoryCacheKeyedBox<Key, Value>>.fromOpaque(pointer).takeUnretainedValue().value
        }
        return Unmanaged<MemoryCacheBox<Value>>.fromOpaque(pointer).takeUnretainedValue().value
    }

    /// The key of an entry the C core reports: rebuilt from its bytes, or read from the keyed
    /// box that `value` (borrowed) points to.
    static func key(fromBytes bytes: UnsafeRawBufferPointer, borrowedValue value: UnsafeMutableRawPointer) -> Key {
        if storesKeysWithValues {
            return Unmanaged<MemoryCacheKeyedBox<Key, Value>>.fromOpaque(value).takeUnretainedValue().key
        }
        return CacheKeyRebuild<Key>.key(from: bytes)
    }
}
