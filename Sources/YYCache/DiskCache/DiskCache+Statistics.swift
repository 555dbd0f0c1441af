import CYYCache

// Removal events and statistics (disk_cache.h "Removal events", "Statistics"): both belong to
// the core, like the limits: every DiskCache object on the path sees, sets and resets the same.
extension DiskCache {
    /// Called once for every entry that a call of this process removes, with its key and why it
    /// left: `.explicit` (`removeValue(forKey:)`, a `nil` set,
    /// `removeAllValues`: one per entry), `.replaced` (a set on a key that had a value),
    /// `.expired` (its time to live, the maximum age, `trim(toAge:)`), `.evicted` (the count,
    /// cost and free-space limits, `trim(toCount:)`, `trim(toCost:)`). Default `nil`.
    ///
    /// The handler runs after the entry left (a read no longer finds it), with no lock held,
    /// on the thread of the call that removed it (the library's background worker for the
    /// auto-trim), before that call returns; it may use the cache. Removals by other processes
    /// sharing the folder are not reported. Shared by every object on the path. After
    /// ``close()`` the getter answers `nil` and the setter does nothing.
    ///
    /// The corresponding C function is `yyc_diskcache_set_removal_listener`.
    public var didRemoveEntry: (@Sendable (String, CacheRemovalCause) -> Void)? {
        get { withOpenCore { DiskCacheRemovalHub.hub(for: $0).handler(of: $0) } ?? nil }
        set { _ = withOpenCore { DiskCacheRemovalHub.hub(for: $0).set(newValue, on: $0) } }
    }

    /// The core's counters in this process since it was opened or last reset: hits and misses
    /// of `data(forKey:)` and `value(_:forKey:)` (an expired entry is a miss;
    /// `containsValue(forKey:)` and `extendedData(forKey:)` count nothing), insertions (sets
    /// that stored a value), removals by cause (as ``didRemoveEntry`` reports them, handler or
    /// not), and the loader counts of `value(_:forKey:orLoad:)`. Shared by every object on the
    /// path. Zero after ``close()``.
    ///
    /// The corresponding C function is `yyc_diskcache_statistics`.
    public var statistics: CacheStatistics {
        withOpenCore { core -> CacheStatistics in
            var s = yyc_cache_statistics()
            _ = yyc_diskcache_statistics(core, &s)
            return CacheStatistics(s)
        } ?? CacheStatistics()
    }

    /// Sets every counter of ``statistics`` to zero, for every object on the path.
    ///
    /// The corresponding C function is `yyc_diskcache_reset_statistics`.
    public func resetStatistics() {
        _ = withOpenCore { yyc_diskcache_reset_statistics($0) }
    }
}
