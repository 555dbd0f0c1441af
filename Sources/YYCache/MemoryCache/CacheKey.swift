#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A key of a ``MemoryCache``: any hashable value that can present itself as bytes.
///
/// The C core hashes and compares keys as byte strings: two keys are the same entry exactly
/// when ``withCacheKeyBytes(_:)`` gives them equal bytes. `==` and `hashValue` are never used
/// by the caches. A conforming type must give equal bytes only to equal values (equal bytes
/// imply `==`), so that one entry never stands for two different keys; values that are `==`
/// should give equal bytes too.
///
/// `String` is the exception to the second rule, on purpose. Swift's `==` compares strings by
/// canonical equivalence, so `"caf\u{E9}" == "cafe\u{301}"` (é as one scalar, and e plus a
/// combining accent), but their UTF-8 bytes differ, and the caches keep them as **two
/// entries**: a `MemoryCache` misses where a `Dictionary` would hit. This is YYCache's
/// behaviour (its `NSString` keys compared UTF-16 code units literally, without canonical
/// equivalence, and its disk layer stores the key bytes: SQLite compares them as they are and
/// file names are the md5 of the bytes), it keeps memory and disk consistent with each other
/// and with folders written by YYCache, and it costs no normalization per lookup. To merge
/// canonically equivalent keys, normalize them before use, for example with Foundation's
/// `key.precomposedStringWithCanonicalMapping` (NFC).
///
/// The library provides conformances for `String` and `Substring` (UTF-8), `Int`, `Int64` and
/// `UInt64` (their 8 bytes in machine order), `UUID` (its 16 bytes), `Data` and `[UInt8]` (their
/// bytes as they are).
///
/// ```swift
/// struct ImageID: CacheKey {
///     var raw: UInt64
///     func withCacheKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
///         try raw.withCacheKeyBytes(body)
///     }
/// }
/// ```
public protocol CacheKey: Hashable, Sendable {
    /// Calls `body` with the key's bytes.
    ///
    /// - Parameters:
    ///   - body: A closure that receives the key's bytes. The buffer is valid only for the
    ///     duration of the call.
    /// - Returns: The value `body` returns.
    /// - Throws: Whatever `body` throws.
    /// - Complexity: O(1) for fixed-size keys and native strings; O(*n*) for strings that must
    ///   be made contiguous first.
    func withCacheKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}
