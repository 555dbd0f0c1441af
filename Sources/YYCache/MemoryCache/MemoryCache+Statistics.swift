import CYYCache

// Statistics (memory_cache.h "Statistics").
extension MemoryCache {
    /// A snapshot of the cache's counters since its creation or the last ``resetStatistics()``:
    /// ``value(forKey:)`` and subscript reads count one hit or one miss (an expired entry is a
    /// miss); a loader call counts one hit, or one miss plus, for the caller that runs the
    /// loader, one load or one load failure and its duration; ``containsValue(forKey:)``,
    /// ``timeToLive(forKey:)`` and ``keys`` count nothing. Every stored value is an insertion,
    /// and every entry that leaves is a removal by its cause (see ``CacheRemovalCause``).
    /// Exact: counted under the cache's lock by the calls that already take it.
    ///
    /// - Complexity: O(1).
    ///
    /// The corresponding C function is `yyc_memcache_statistics`.
    public var statistics: CacheStatistics {
        var snapshot = yyc_cache_statistics()
        _ = yyc_memcache_statistics(handle, &snapshot)
        releaseHandedBackValues()
        return CacheStatistics(snapshot)
    }

    /// Sets every counter of ``statistics`` to zero.
    ///
    /// The corresponding C function is `yyc_memcache_reset_statistics`.
    public func resetStatistics() {
        yyc_memcache_reset_statistics(handle)
        releaseHandedBackValues()
    }
}
