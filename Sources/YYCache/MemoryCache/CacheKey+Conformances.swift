#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Every conformance is @inlinable so that a MemoryCache specialized in the client module reads
// the key bytes without a witness-table call.

extension String: CacheKey {
    /// Calls `body` with the string's UTF-8 bytes, as they are (not normalized): canonically
    /// equivalent strings made of different scalars are `==` but different keys (see
    /// ``CacheKey``).
    ///
    /// Native Swift strings (small ones included) are read in place, without copying or
    /// retaining the string; bridged or non-contiguous strings are copied into contiguous
    /// storage first (on a local copy: the receiver is not changed).
    ///
    /// - Parameters:
    ///   - body: A closure that receives the UTF-8 bytes (no NUL terminator).
    /// - Returns: The value `body` returns.
    /// - Throws: Whatever `body` throws.
    /// - Complexity: O(1) for native strings, O(*n*) otherwise.
    @inlinable @inline(__always)
    public func withCacheKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        // The fast path: no copy of the string (so no retain/release of its storage).
        if let result = try utf8.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        var copy = self
        return try copy.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }
}

extension Substring: CacheKey {
    /// Calls `body` with the substring's UTF-8 bytes; equal to the bytes of `String(self)`.
    ///
    /// - Parameters:
    ///   - body: A closure that receives the UTF-8 bytes.
    /// - Returns: The value `body` returns.
    /// - Throws: Whatever `body` throws.
    /// - Complexity: O(1) for slices of native strings, O(*n*) otherwise.
    @inlinable
    public func withCacheKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var copy = self
        return try copy.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }
}

extension Int: CacheKey {
    /// Calls `body` with the integer's 8 bytes in machine order.
    ///
    /// - Parameters:
    ///   - body: A closure that receives the bytes.
    /// - Returns: The value `body` returns.
    /// - Throws: Whatever `body` throws.
    /// - Complexity: O(1).
    @inlinable
    public func withCacheKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: self, body)
    }
}

extension Int64: CacheKey {
    /// Calls `body` with the integer's 8 bytes in machine order.
    ///
    /// - Parameters:
    ///   - body: A closure that receives the bytes.
    /// - Returns: The value `body` returns.
    /// - Throws: Whatever `body` throws.
    /// - Complexity: O(1).
    @inlinable
    public func withCacheKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: self, body)
    }
}

extension UInt64: CacheKey {
    /// Calls `body` with the integer's 8 bytes in machine order.
    ///
    /// - Parameters:
    ///   - body: A closure that receives the bytes.
    /// - Returns: The value `body` returns.
    /// - Throws: Whatever `body` throws.
    /// - Complexity: O(1).
    @inlinable
    public func withCacheKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: self, body)
    }
}

extension UUID: CacheKey {
    /// Calls `body` with the UUID's 16 bytes.
    ///
    /// - Parameters:
    ///   - body: A closure that receives the bytes.
    /// - Returns: The value `body` returns.
    /// - Throws: Whatever `body` throws.
    /// - Complexity: O(1).
    @inlinable
    public func withCacheKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: uuid, body)
    }
}

extension Data: CacheKey {
    /// Calls `body` with the data's bytes.
    ///
    /// - Parameters:
    ///   - body: A closure that receives the bytes.
    /// - Returns: The value `body` returns.
    /// - Throws: Whatever `body` throws.
    /// - Complexity: O(1).
    @inlinable
    public func withCacheKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(body)
    }
}

extension Array: CacheKey where Element == UInt8 {
    /// Calls `body` with the array's bytes.
    ///
    /// - Parameters:
    ///   - body: A closure that receives the bytes.
    /// - Returns: The value `body` returns.
    /// - Throws: Whatever `body` throws.
    /// - Complexity: O(1).
    @inlinable
    public func withCacheKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(body)
    }
}
