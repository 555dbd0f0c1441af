#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Time to live on both tiers: a set with one gives the same expiry to the disk entry and the
// memory entry; a back-fill from disk gives the memory entry the disk entry's remaining time
// to live (Cache.swift, backFill), so memory never serves a value the disk has let expire.
extension Cache {
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
