import CYYCache

/// The counters of a ``RemoteCache`` (`yyc_remote_statistics`).
public struct RemoteStatistics: Sendable, Hashable {
    /// Reads that found a value.
    public var hits: UInt64
    /// Reads that found none (corrupt values included).
    public var misses: UInt64
    /// Values found with a bad header or checksum: written by something else, or damaged.
    public var corruptValues: UInt64
    /// Calls that failed with ``CacheError/Code/io`` (unreachable, timeout, refused).
    public var errors: UInt64
    /// Connections opened (the invalidation link's not counted).
    public var connects: UInt64
    /// Keys invalidated by Redis (written by any client, expired or evicted).
    public var invalidations: UInt64
    /// Times the invalidation link went down.
    public var linkDowns: UInt64
    /// Whether the invalidation link is up now.
    public var invalidationLinkUp: Bool

    init(_ c: yyc_remote_statistics) {
        hits = c.hits
        misses = c.misses
        corruptValues = c.corrupt_values
        errors = c.errors
        connects = c.connects
        invalidations = c.invalidations
        linkDowns = c.link_downs
        invalidationLinkUp = c.invalidation_up
    }
}
