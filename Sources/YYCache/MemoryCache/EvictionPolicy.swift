import CYYCache

/// Which entry a ``MemoryCache`` gives up when it is over its count or cost limit (or trimmed
/// to a count or cost), chosen when the cache is created.
///
/// Every policy keeps the same limits, trims, age limit, release modes and events, and costs
/// the same memory per entry; ``MemoryCache/containsValue(forKey:)`` never counts as a use.
///
/// The corresponding C type is `yyc_eviction_policy`.
public enum EvictionPolicy: Sendable, Hashable {
    /// Exact least-recently-used order, YYMemoryCache's (the default): every read moves the
    /// entry to the front of a list.
    case lru
    /// SIEVE (NSDI'24): a read only sets a "visited" bit, so reads are the cheapest; eviction
    /// sweeps a hand over a FIFO queue and evicts the first unvisited entry.
    case sieve
    /// S3-FIFO (SOSP'23), as its authors' reference implementation (libCacheSim's): a small
    /// FIFO queue for new keys (10% of the capacity), a main FIFO queue for keys read at least
    /// twice, and a ghost queue of recently evicted keys' hashes. Scan and loop resistant: a
    /// burst of one-time keys does not flush the frequently used ones.
    case s3fifo
    /// Window TinyLFU with an adaptive window (Caffeine's policy): new keys enter a small LRU
    /// window; leaving it, a key is admitted to the main space (a segmented LRU) only if a
    /// compact frequency sketch finds it more frequent than the entry it would displace, so a
    /// new key may be evicted at once (reported ``CacheRemovalCause/evicted``). The window's
    /// size adapts to the workload by hill climbing on the hit rate. Entries are weighed by
    /// cost when a cost limit is set.
    case tinyLFU
}

extension EvictionPolicy {
    /// The C constant (`YYC_EVICT_*`).
    @usableFromInline
    var cValue: yyc_eviction_policy {
        switch self {
        case .lru: YYC_EVICT_LRU
        case .sieve: YYC_EVICT_SIEVE
        case .s3fifo: YYC_EVICT_S3FIFO
        case .tinyLFU: YYC_EVICT_TINYLFU
        }
    }

    /// The policy of a C constant (LRU for an unknown one).
    init(cValue: yyc_eviction_policy) {
        switch cValue {
        case YYC_EVICT_SIEVE: self = .sieve
        case YYC_EVICT_S3FIFO: self = .s3fifo
        case YYC_EVICT_TINYLFU: self = .tinyLFU
        default: self = .lru
        }
    }
}
