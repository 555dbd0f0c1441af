// Statistics of the two-level cache, counted by this object's calls.
extension Cache {
    /// This cache's counters since it was created or last reset: hits (reads served by either
    /// tier), misses (by neither), insertions (values stored), the loads of
    /// `value(forKey:orLoad:)`, and the removals by cause of the disk tier (every entry leaves
    /// the disk; see ``DiskCache/statistics``, which also counts other objects on the path).
    /// Per-tier counts are ``memoryCache`` and ``diskCache``'s own. Exact; no lock.
    public var statistics: CacheStatistics {
        var statistics = counters.snapshot()
        statistics.removals = diskCache.statistics.removals
        return statistics
    }

    /// Sets this cache's own counters to zero (not the tiers').
    public func resetStatistics() {
        counters.reset()
    }
}
