#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Time to live on both tiers: a set with one gives the same expiry to the disk entry and the
// memory entry; a back-fill from disk gives the memory entry the disk entry's remaining time
// to live (Cache.swift, backFill), so memory never serves a value the disk has let expire.
extension Cache {
    /// The time to live of values stored without one, on both tiers: reading it gives the disk
    /// tier's; setting it sets ``DiskCache/defaultTimeToLive`` and
    /// ``MemoryCache/defaultTimeToLive`` alike, so that an entry and its memory copy expire
    /// together. `nil` (the default): values stored without a time to live never expire.
    /// Applies to later writes only.
    ///
    /// Blocking: the disk tier's setting is read and written under its core's lock.
    ///
    /// The corresponding C functions are `yyc_diskcache_set_default_time_to_live` and
    /// `yyc_memcache_set_default_time_to_live`.
    public var defaultTimeToLive: Duration? {
        get { diskCache.defaultTimeToLive }
        set {
            diskCache.defaultTimeToLive = newValue
            memoryCache.defaultTimeToLive = newValue
        }
    }

    /// The time `key`'s entry has left to live, or `nil` if it has no time to live, there is no
    /// entry (an expired one is removed), or after an error. The disk entry's: the memory copy
    /// never outlives it. Does not change the access time.
    ///
    /// Blocking: reads the disk tier's manifest.
    ///
    /// The corresponding C function is `yyc_diskcache_time_to_live`.
    @_disfavoredOverload
    public func timeToLive(forKey key: String) -> Duration? {
        diskCache.timeToLive(forKey: key)
    }

    /// Stores `value` on disk, then in memory, both expiring after `timeToLive` (counted from
    /// now), like `setValue(_:forKey:)` otherwise. A later read that fills memory from disk
    /// gives the memory entry the disk entry's remaining time to live.
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - key: A non-empty key without NUL bytes.
    ///   - timeToLive: How long the entry may be returned; `nil`: it never expires, in either
    ///     tier (whatever their ``MemoryCache/defaultTimeToLive`` and
    ///     ``DiskCache/defaultTimeToLive`` say). A negative duration counts as zero.
    /// - Throws: ``CacheError`` (``CacheError/Code/invalidArgument`` for a bad key,
    ///   ``CacheError/Code/encoding``, the disk's errors).
    ///
    /// The corresponding C functions are `yyc_diskcache_set_with_filename_and_ttl` and
    /// `yyc_memcache_set_if_generation_with_ttl`.
    @_disfavoredOverload
    public func setValue(_ value: Value, forKey key: String, timeToLive: Duration?) throws {
        try store(value, forKey: key, timeToLive: DiskCache.ttlSeconds(timeToLive))
    }

    /// Stores `value` with a time to live on both tiers; the async twin of
    /// `setValue(_:forKey:timeToLive:)`.
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - key: A non-empty key without NUL bytes.
    ///   - timeToLive: How long the entry may be returned; `nil`: it never expires.
    /// - Throws: `CancellationError` if cancelled before it starts (nothing is written);
    ///   ``CacheError``.
    public func setValue(_ value: Value, forKey key: String, timeToLive: Duration?) async throws {
        try Task.checkCancellation()
        try await store(value, forKey: key, timeToLive: DiskCache.ttlSeconds(timeToLive))
    }
}
