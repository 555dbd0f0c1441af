import Foundation

/// A key of a ``MemoryCache``: any hashable value that can present itself as bytes.
///
/// The C core hashes and compares keys as byte strings, so two keys are the same entry exactly
/// when their bytes are equal. Conforming types must therefore produce equal bytes for equal
/// values (and, ideally, different bytes for different values).
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
