#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Rebuilds a key from the bytes the C core keeps, for the key types of the library's own
/// ``CacheKey`` conformances (`String`, `Substring`, `Int`, `Int64`, `UInt64`, `UUID`, `Data`,
/// `[UInt8]`), whose bytes say everything about the key. Other key types cannot be rebuilt
/// (``CacheKey`` only turns keys into bytes): a ``MemoryCache`` keeps such keys next to their
/// values (``MemoryCacheKeyedBox``) so that ``MemoryCache/keys`` and removal events can return
/// them.
@usableFromInline
enum CacheKeyRebuild<Key: CacheKey> {
    /// Whether keys of this type are rebuilt from their bytes. A comparison of metatypes, so a
    /// specialized cache folds it to a constant.
    @inlinable
    static var isSupported: Bool {
        Key.self == String.self || Key.self == Int.self || Key.self == Int64.self
            || Key.self == UInt64.self || Key.self == UUID.self || Key.self == Data.self
            || Key.self == [UInt8].self || Key.self == Substring.self
    }

    /// The key whose ``CacheKey/withCacheKeyBytes(_:)`` gives `bytes`. Only when
    /// ``isSupported``.
    static func key(from bytes: UnsafeRawBufferPointer) -> Key {
        if Key.self == String.self { return String(decoding: bytes, as: UTF8.self) as! Key }
        if Key.self == Substring.self { return Substring(String(decoding: bytes, as: UTF8.self)) as! Key }
        if Key.self == Int.self { return bytes.loadUnaligned(as: Int.self) as! Key }
        if Key.self == Int64.self { return bytes.loadUnaligned(as: Int64.self) as! Key }
        if Key.self == UInt64.self { return bytes.loadUnaligned(as: UInt64.self) as! Key }
        if Key.self == UUID.self { return UUID(uuid: bytes.loadUnaligned(as: uuid_t.self)) as! Key }
        if Key.self == Data.self { return Data(bytes) as! Key }
        if Key.self == [UInt8].self { return [UInt8](bytes) as! Key }
        preconditionFailure("CacheKeyRebuild: \(Key.self) cannot be rebuilt from its bytes")
    }
}
