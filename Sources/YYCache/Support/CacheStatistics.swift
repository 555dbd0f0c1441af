import CYYCache

/// A snapshot of a cache's counters since its creation or its last `resetStatistics()`. Every
/// counter is exact (no sampling) and costs no extra lock.
///
/// A read that finds a live entry is one hit; one that does not (an expired entry included) is
/// one miss. A loader call on a missing key is one miss plus one load (or one load failure) for
/// the caller that runs the loader, and one miss for each caller that waits for it.
///
/// The corresponding C type is `yyc_cache_statistics`.
public struct CacheStatistics: Sendable, Equatable {
    /// Reads that found a live entry.
    public var hits: Int
    /// Reads that found none (expired entries included).
    public var misses: Int
    /// Sets that stored a value (a new key or a replacement; loaded values too).
    public var insertions: Int
    /// Entries that left, by cause; a cause that never happened may be absent or 0.
    public var removals: [CacheRemovalCause: Int]
    /// Loader runs that returned a value.
    public var loads: Int
    /// Loader runs that threw.
    public var loadFailures: Int
    /// The time every loader run took, both kinds.
    public var totalLoadTime: Duration

    /// `hits / (hits + misses)`, or 0 when both are 0.
    public var hitRatio: Double {
        let reads = hits + misses
        return reads == 0 ? 0 : Double(hits) / Double(reads)
    }

    /// Statistics with every counter given (each removal cause 0 unless listed).
    ///
    /// - Parameters:
    ///   - hits: Reads that found a live entry.
    ///   - misses: Reads that did not.
    ///   - insertions: Sets that stored a value.
    ///   - removals: Entries that left, by cause.
    ///   - loads: Loader runs that returned a value.
    ///   - loadFailures: Loader runs that threw.
    ///   - totalLoadTime: Their total duration.
    public init(
        hits: Int = 0, misses: Int = 0, insertions: Int = 0,
        removals: [CacheRemovalCause: Int] = [:], loads: Int = 0, loadFailures: Int = 0,
        totalLoadTime: Duration = .zero
    ) {
        self.hits = hits
        self.misses = misses
        self.insertions = insertions
        self.removals = removals
        self.loads = loads
        self.loadFailures = loadFailures
        self.totalLoadTime = totalLoadTime
    }

    /// The statistics of a C snapshot (every cause listed in ``removals``, zeros included).
    ///
    /// - Parameters:
    ///   - c: A snapshot filled by a `yyc_*_statistics` call.
    package init(_ c: yyc_cache_statistics) {
        var removals: [CacheRemovalCause: Int] = [:]
        withUnsafeBytes(of: c.removals) { raw in
            let counts = raw.bindMemory(to: UInt64.self)
            for cause in CacheRemovalCause.allCases {
                removals[cause] = Int(clamping: counts[Int(cause.cValue.rawValue)])
            }
        }
        self.init(
            hits: Int(clamping: c.hits), misses: Int(clamping: c.misses),
            insertions: Int(clamping: c.insertions), removals: removals,
            loads: Int(clamping: c.loads), loadFailures: Int(clamping: c.load_failures),
            totalLoadTime: .nanoseconds(Int64(clamping: c.total_load_time_ns)))
    }

    /// Equal when every counter is, a cause absent from one side counting as 0.
    public static func == (a: CacheStatistics, b: CacheStatistics) -> Bool {
        a.hits == b.hits && a.misses == b.misses && a.insertions == b.insertions
            && a.loads == b.loads && a.loadFailures == b.loadFailures
            && a.totalLoadTime == b.totalLoadTime
            && CacheRemovalCause.allCases.allSatisfy { a.removals[$0, default: 0] == b.removals[$0, default: 0] }
    }
}
