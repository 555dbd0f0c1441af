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
    /// Blocking: reads the manifest on the calling thread, a page at a time; in async code use
    /// ``entries()``, which reads each page off the cooperative pool.
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
    /// ``forEachEntry(_:)``: a page of up to 256 entries is read on a dispatch queue (never on
    /// the cooperative pool) when the consumer has taken the previous one, so at most one page is
    /// held and the walk costs one hop per page, not per entry. The stream finishes at the end,
    /// or throws ``CacheError/Code/closed`` (a closed cache) or an SQLite failure. Cancelling the
    /// consuming task ends the walk.
    ///
    /// ```swift
    /// for try await entry in disk.entries() where entry.size > 1 << 20 {
    ///     print(entry.key, entry.size)
    /// }
    /// ```
    ///
    /// - Returns: The stream.
    public func entries() -> AsyncThrowingStream<DiskCacheEntry, any Error> {
        let walk = Protected(EntryWalk())
        return AsyncThrowingStream(unfolding: { [self] in
            try Task.checkCancellation()
            if let next = walk.withLock({ $0.page.popLast() }) { return next }
            let page = try await self.onDiskQueue {
                try walk.withLock { walk -> [DiskCacheEntry] in
                    if walk.iterator == nil { walk.iterator = try DiskCacheEntryIterator(self) }
                    var page: [DiskCacheEntry] = []
                    while page.count < EntryWalk.pageSize, let entry = try walk.iterator?.next() {
                        page.append(entry)
                    }
                    return page
                }
            }
            guard let first = page.first else { return nil }
            walk.withLock { $0.page = page.dropFirst().reversed() }
            return first
        })
    }
}

/// The state of an ``DiskCache/entries()`` stream: the iterator and what is left of the page
/// read last (in reverse order, so that the next entry is the last element).
struct EntryWalk {
    /// Entries read per hop to the disk queue (the core's own page size).
    static let pageSize = 256
    var iterator: DiskCacheEntryIterator?
    var page: [DiskCacheEntry] = []
}
