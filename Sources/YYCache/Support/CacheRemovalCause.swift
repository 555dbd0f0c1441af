import CYYCache

/// Why an entry left a cache; delivered with the entry, after it left, outside every lock (see
/// ``MemoryCache/didRemoveValue``).
///
/// The corresponding C type is `yyc_removal_cause` (`YYC_REMOVED_*`).
public enum CacheRemovalCause: Sendable, Hashable, CaseIterable {
    /// Removed by the program: `removeValue(forKey:)`, `setValue(nil, ...)`, `removeAllValues()`
    /// (one per entry).
    case explicit
    /// A set on the same key replaced the value.
    case replaced
    /// Its time to live passed (found by a read, or removed by a trim or the auto-trim), or the
    /// maximum age or `trim(toAge:)` removed it.
    case expired
    /// The count or cost limit, `trim(toCount:)`, `trim(toCost:)` (or, on disk, the free-space
    /// limit) removed it.
    case evicted
    /// `handleMemoryWarning()`, `handleEnterBackground()` or system memory pressure removed it.
    case memoryPressure
}

extension CacheRemovalCause {
    /// The cause of a C constant (`.explicit` for an unknown one).
    package init(cValue: yyc_removal_cause) {
        switch cValue {
        case YYC_REMOVED_REPLACED: self = .replaced
        case YYC_REMOVED_EXPIRED: self = .expired
        case YYC_REMOVED_EVICTED: self = .evicted
        case YYC_REMOVED_MEMORY_PRESSURE: self = .memoryPressure
        default: self = .explicit
        }
    }

    /// The C constant (`YYC_REMOVED_*`), also the index of the cause in
    /// `yyc_cache_statistics.removals`.
    package var cValue: yyc_removal_cause {
        switch self {
        case .explicit: YYC_REMOVED_EXPLICIT
        case .replaced: YYC_REMOVED_REPLACED
        case .expired: YYC_REMOVED_EXPIRED
        case .evicted: YYC_REMOVED_EVICTED
        case .memoryPressure: YYC_REMOVED_MEMORY_PRESSURE
        }
    }
}
