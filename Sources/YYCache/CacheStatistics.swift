/// A snapshot of a cache's counters since its creation or its last `resetStatistics()`, in
/// this process. Every counter is exact (no sampling).
///
/// The C counterpart is `yyc_cache_statistics` (removal_cause.h).
public struct CacheStatistics: Sendable, Equatable {
    /// Reads that found a live entry.
    public var hits: Int
    /// Reads that found none (an expired entry is a miss).
    public var misses: Int
    /// Sets that stored a value (new or replacing).
    public var insertions: Int
    /// Entries that left the cache, by cause.
    public var removals: [CacheRemovalCause: Int]
    /// Loader runs that returned a value.
    public var loads: Int
    /// Loader runs that threw.
    public var loadFailures: Int
    /// The time every loader run took, summed.
    public var totalLoadTime: Duration

    /// `hits / (hits + misses)`, or 0 when both are 0.
    public var hitRatio: Double {
        let reads = hits + misses
        return reads == 0 ? 0 : Double(hits) / Double(reads)
    }

    /// Statistics with every counter at `0` (`removals` empty).
    public init(hits: Int = 0, misses: Int = 0, insertions: Int = 0,
                removals: [CacheRemovalCause: Int] = [:], loads: Int = 0, loadFailures: Int = 0,
                totalLoadTime: Duration = .zero) {
        self.hits = hits
        self.misses = misses
        self.insertions = insertions
        self.removals = removals
        self.loads = loads
        self.loadFailures = loadFailures
        self.totalLoadTime = totalLoadTime
    }
}
