import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Enumeration (disk_cache.h "Enumeration"): the live entries, least recently used first, a page
// of at most 256 entries at a time; the core's lock is held only while a page is read.
extension DiskCache {
    /// Calls `body` with every live entry, least recently used first (expired entries are left
    /// out), reading the manifest a page at a time: a cache of any size is walked in bounded
    /// memory, and other calls (writers too) go on between pages. `body` runs with no lock
    /// held and may use the cache. Not a snapshot: an entry written or read during the walk
    /// may be seen again (its access time moved behind the walk) or not at all (removed before
    /// its page was read). Does not change access times.
    ///
    /// - Parameters:
    ///   - body: Called once per entry; an error it throws stops the walk.
    /// - Throws: What `body` throws (unwrapped); ``CacheError/Code/closed`` for a closed cache
    ///   (also when it is closed during the walk); SQLite failures.
    /// - Complexity: O(*n*) for *n* entries, O(1) memory (one page).
    ///
    /// The corresponding C functions are `yyc_diskcache_iter_open`, `yyc_diskcache_iter_next`
    /// and `yyc_diskcache_iter_free`.
    public func forEachEntry(_ body: (DiskCacheEntry) throws -> Void) throws {
        let iterator = try DiskCacheEntryIterator(self)
        while let entry = try iterator.next() { try body(entry) }
    }

    /// The live entries as an asynchronous stream, least recently used first, like
    /// ``forEachEntry(_:)``: each page is read on a dispatch queue (never on the cooperative
    /// pool) when the consumer asks for more, so at most one page is held. The stream finishes
    /// at the end, or throws ``CacheError/Code/closed`` (a closed cache) or an SQLite failure.
    /// Cancelling the consuming task ends the walk.
    ///
    /// ```swift
    /// for try await entry in disk.entries() where entry.size > 1 << 20 {
    ///     print(entry.key, entry.size)
    /// }
    /// ```
    ///
    /// - Returns: The stream.
    public func entries() -> AsyncThrowingStream<DiskCacheEntry, any Error> {
        let iterator = Protected<DiskCacheEntryIterator?>(nil)
        return AsyncThrowingStream(unfolding: { [self] in
            try await self.onDiskQueue {
                try iterator.withLock { current -> DiskCacheEntry? in
                    if current == nil { current = try DiskCacheEntryIterator(self) }
                    return try current?.next()
                }
            }
        })
    }
}
