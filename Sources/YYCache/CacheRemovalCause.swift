/// Why an entry left a cache. Delivered with the entry, outside every lock.
///
/// The C counterpart is `yyc_removal_cause` (removal_cause.h).
public enum CacheRemovalCause: Sendable, Hashable {
    /// Removed on request: `removeValue`, `setValue(nil)`, `removeAllValues` (one per entry).
    case explicit
    /// A set on the same key replaced the value.
    case replaced
    /// Its time to live passed, or the age limit / `trim(toAge:)` removed it.
    case expired
    /// The count or cost limit, `trim(toCount:)`, `trim(toCost:)`, or the free-space limit.
    case evicted
    /// `handleMemoryWarning`, `handleEnterBackground`, or system memory pressure.
    case memoryPressure
}
