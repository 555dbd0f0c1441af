import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A walk of a disk core's entries (one C iterator). Not thread-safe: one caller at a time
/// (``DiskCache/entries()`` serializes its calls with a lock).
final class DiskCacheEntryIterator: @unchecked Sendable {
    // @unchecked Sendable: `handle` is used by one thread at a time (the callers serialize).
    private let handle: OpaquePointer
    /// The object walked: a walk ends with ``CacheError/Code/closed`` once it is closed.
    private let disk: DiskCache

    /// Starts a walk of `disk`'s core.
    ///
    /// - Throws: ``CacheError/Code/closed`` after ``DiskCache/close()``.
    init(_ disk: DiskCache) throws {
        var iterator: OpaquePointer?
        try disk.withCore { core in try CacheError.check(yyc_diskcache_iter_open(core, &iterator)) }
        guard let iterator else { throw CacheError.closedError }
        handle = iterator
        self.disk = disk
    }

    deinit { yyc_diskcache_iter_free(handle) }

    /// The next entry, or `nil` at the end.
    ///
    /// - Throws: ``CacheError`` (``CacheError/Code/closed`` when the core was closed).
    func next() throws -> DiskCacheEntry? {
        var entry: UnsafePointer<yyc_diskcache_entry>?
        let status = try disk.withCore { _ in yyc_diskcache_iter_next(handle, &entry) }
        if status == 1 { return nil }  // YYC_NOTFOUND: the end
        try CacheError.check(status)
        guard let e = entry?.pointee else { return nil }
        return DiskCacheEntry(
            key: String(cString: e.key),
            size: Int(e.size),
            modificationDate: Date(timeIntervalSince1970: TimeInterval(e.modification_time)),
            lastAccessDate: Date(timeIntervalSince1970: TimeInterval(e.last_access_time)),
            expirationDate: e.expiry_ms == 0
                ? nil : Date(timeIntervalSince1970: TimeInterval(e.expiry_ms) / 1000),
            filename: e.filename.map { String(cString: $0) })
    }
}
