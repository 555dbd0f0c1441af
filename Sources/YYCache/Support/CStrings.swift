import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Helpers that pass Swift strings and bytes to the disk layers' C functions.
enum CStrings {
    /// Whether `key` can name a row on disk: not empty and without NUL bytes (a C string would
    /// silently truncate at the first NUL and alias another key).
    @inline(__always)
    static func isStorableKey(_ key: String) -> Bool {
        // Native strings (small ones included) are scanned in place: the generic
        // `utf8.contains(0)` walks the view index by index (about 270 instructions for a
        // 9-byte key, on every disk and two-tier call).
        if let storable = key.utf8.withContiguousStorageIfAvailable({ bytes in
            !bytes.isEmpty && !bytes.contains(0)
        }) {
            return storable
        }
        return !key.isEmpty && !key.utf8.contains(0)
    }

    /// Calls `body` with NUL-terminated copies of `strings`, as a `const char *const *` array.
    ///
    /// - Parameters:
    ///   - strings: The strings; none may contain NUL (the caller filters them).
    ///   - body: Receives the pointer array and its count; the pointers are valid only during
    ///     the call.
    /// - Returns: What `body` returns.
    static func withArray<R>(
        _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>, Int) throws -> R
    ) rethrows -> R {
        var offsets: [Int] = []
        offsets.reserveCapacity(strings.count)
        var bytes: [CChar] = []
        bytes.reserveCapacity(strings.reduce(0) { $0 + $1.utf8.count + 1 })
        for string in strings {
            offsets.append(bytes.count)
            for byte in string.utf8 { bytes.append(CChar(bitPattern: byte)) }
            bytes.append(0)
        }
        return try bytes.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress!
            let pointers: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
            return try pointers.withUnsafeBufferPointer { try body($0.baseAddress!, $0.count) }
        }
    }

    /// Calls `body` with the bytes of `data` (the base address may be `nil` for empty data)
    /// and its count.
    @inline(__always)
    static func withBytes<R>(
        _ data: Data?, _ body: (UnsafeRawPointer?, Int) throws -> R
    ) rethrows -> R {
        guard let data, !data.isEmpty else { return try body(nil, 0) }
        return try data.withUnsafeBytes { try body($0.baseAddress, $0.count) }
    }

    /// Calls `body` with `string` as a C string, or `nil`.
    @inline(__always)
    static func withOptional<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) throws -> R) rethrows -> R {
        guard let string else { return try body(nil) }
        return try string.withCString { try body($0) }
    }

    /// Up to this many bytes, ``takeData(_:count:)`` copies the buffer into a new `Data` and
    /// frees it at once: cheaper than wrapping it (a wrapped buffer's `Data` costs about 1,000
    /// instructions to make and destroy, a copied 100-byte one about 100 fewer, and up to 14
    /// bytes `Data` stores the bytes inline, with no allocation at all).
    static let copiedDataMaximum = 512

    /// Wraps a buffer the C core transferred to us (freed with `yyc_free`) in `Data`: copied
    /// up to ``copiedDataMaximum`` bytes, else without copying it.
    static func takeData(_ pointer: UnsafeMutableRawPointer?, count: Int) -> Data {
        guard let pointer else { return Data() }
        guard count > 0 else {
            yyc_free(pointer)
            return Data()
        }
        if count <= copiedDataMaximum {
            defer { yyc_free(pointer) }
            return Data(bytes: pointer, count: count)
        }
        return Data(bytesNoCopy: pointer, count: count, deallocator: .custom { p, _ in yyc_free(p) })
    }
}
