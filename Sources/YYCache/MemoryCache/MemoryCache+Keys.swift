import CYYCache

// Keys (memory_cache.h "Keys").
extension MemoryCache {
    /// A snapshot of the keys of the live entries, first the entry the eviction policy keeps
    /// longest: for ``EvictionPolicy/lru`` the most recently used first; for
    /// ``EvictionPolicy/sieve`` and ``EvictionPolicy/s3fifo`` the newest insertion first (their
    /// queues' order, which a read does not change; for S3-FIFO the small queue, then the main
    /// one); for ``EvictionPolicy/tinyLFU`` the admission window, then the protected and the
    /// probation segments, each most recently used first. Expired entries are left out (and removed, reported ``CacheRemovalCause/expired``).
    /// Not a use: changes no order, time or statistic.
    ///
    /// - Complexity: O(*n*), under the cache's lock for one pass over the entries.
    ///
    /// The corresponding C functions are `yyc_memcache_copy_keys` and, for key types that are
    /// kept with their values (see `CacheKeyRebuild`), `yyc_memcache_copy_entries`.
    public var keys: [Key] {
        defer { releaseHandedBackValues() }
        var count = 0
        if Self.storesKeysWithValues {
            var entries: UnsafeMutablePointer<yyc_memcache_entry>?
            guard yyc_memcache_copy_entries(handle, &entries, &count) == 0, let entries else { return [] }
            defer { yyc_free(entries) }
            return (0..<count).map { i in
                // A reference retained for us: the box keeps the key.
                let box = Unmanaged<MemoryCacheKeyedBox<Key, Value>>.fromOpaque(entries[i].value!)
                    .takeRetainedValue()
                return box.key
            }
        }
        var keys: UnsafeMutablePointer<yyc_memcache_key>?
        guard yyc_memcache_copy_keys(handle, &keys, &count) == 0, let keys else { return [] }
        defer { yyc_free(keys) }
        return (0..<count).map { i in
            CacheKeyRebuild<Key>.key(from: UnsafeRawBufferPointer(start: keys[i].bytes, count: keys[i].len))
        }
    }
}
