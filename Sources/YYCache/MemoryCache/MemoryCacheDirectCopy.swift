#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The C type of an inline value's copy callback (`yyc_inline_value_type.copy`).
typealias MemoryCacheCopyFunction =
    @convention(c) (
        UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeRawPointer?
    ) -> Void

/// A copy callback written for `Value` itself, for the common value types (`Data`, `String`,
/// `[UInt8]`): the C core calls it directly on every hit, instead of the generic callback's two
/// hops (the callbacks object, then ``MemoryCacheInlineOps``' closure), about 20 instructions
/// per hit. `nil` for other types. A comparison of metatypes, made once per cache.
func memoryCacheDirectCopy<Value>(for _: Value.Type) -> MemoryCacheCopyFunction? {
    if Value.self == Data.self { return memoryCacheCopyData }
    if Value.self == String.self { return memoryCacheCopyString }
    if Value.self == [UInt8].self { return memoryCacheCopyBytes }
    return nil
}

// The direct copy callbacks: they only retain what the value holds (atomically: under SIEVE,
// S3-FIFO and TinyLFU the C core may copy on several threads at once). It never passes NULL.

@inline(__always)
private func copyValue<T>(of _: T.Type, to dst: UnsafeMutableRawPointer?, from src: UnsafeRawPointer?) {
    dst.unsafelyUnwrapped.assumingMemoryBound(to: T.self).initialize(
        to: src.unsafelyUnwrapped.assumingMemoryBound(to: T.self).pointee)
}

private func memoryCacheCopyData(
    _: UnsafeMutableRawPointer?, _ dst: UnsafeMutableRawPointer?, _ src: UnsafeRawPointer?
) {
    copyValue(of: Data.self, to: dst, from: src)
}

private func memoryCacheCopyString(
    _: UnsafeMutableRawPointer?, _ dst: UnsafeMutableRawPointer?, _ src: UnsafeRawPointer?
) {
    copyValue(of: String.self, to: dst, from: src)
}

private func memoryCacheCopyBytes(
    _: UnsafeMutableRawPointer?, _ dst: UnsafeMutableRawPointer?, _ src: UnsafeRawPointer?
) {
    copyValue(of: [UInt8].self, to: dst, from: src)
}
