import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Time to live (disk_cache.h "Time to live"): strict expiry counted from the write, stored in
// the manifest (a column YYKVStorage ignores), so it holds after a reopen and for every process.
extension DiskCache {
    /// The time to live that sets without their own get (`setData(_:forKey:extendedData:)`,
    /// `setValue(_:forKey:extendedData:)` and their async twins): `nil` (the default)
    /// for none. Shared by every object on the path, like the limits. Entries already stored
    /// keep theirs. A negative duration counts as zero.
    ///
    /// Unlike ``maximumAge`` (since the last access, enforced by trims), a time to live is strict:
    /// an entry past it is never returned by any read (`data(forKey:)`,
    /// `value(_:forKey:)`, `containsValue(forKey:)`,
    /// `extendedData(forKey:)`, `timeToLive(forKey:)`); the read that finds it removes
    /// it, and every trim (also one within its limit) and the auto-trim remove all expired
    /// entries. After ``close()`` the getter answers `nil` and the setter does nothing.
    ///
    /// The corresponding C functions are `yyc_diskcache_default_time_to_live` and
    /// `yyc_diskcache_set_default_time_to_live`.
    public var defaultTimeToLive: Duration? {
        get {
            withOpenCore { Self.ttlDuration(seconds: yyc_diskcache_default_time_to_live($0)) }
                ?? nil
        }
        set {
            let seconds = Self.ttlSeconds(newValue)
            _ = withOpenCore { yyc_diskcache_set_default_time_to_live($0, seconds) }
        }
    }

    /// Stores `data` for `key` with its own time to live, counted from now (rounded up to a
    /// millisecond), like `setData(_:forKey:extendedData:)` otherwise.
    ///
    /// - Parameters:
    ///   - data: The bytes (`Data()` for an empty value).
    ///   - key: A non-empty key without NUL bytes.
    ///   - extendedData: Extra bytes stored with the value.
    ///   - timeToLive: How long the entry may be returned; `nil`: it never expires (whatever
    ///     ``defaultTimeToLive`` says). A negative duration counts as zero.
    /// - Throws: The errors of `setData(_:forKey:extendedData:)`.
    /// - Complexity: O(*n*) in the value's size.
    ///
    /// The corresponding C function is `yyc_diskcache_set_with_filename_and_ttl`.
    @_disfavoredOverload
    public func setData(
        _ data: Data, forKey key: String, extendedData: Data? = nil,
        timeToLive: Duration?
    ) throws {
        try store(
            data, forKey: key, extendedData: extendedData,
            timeToLive: Self.ttlSeconds(timeToLive))
    }

    /// Stores `value` for `key`, encoded with ``coder``, with its own time to live, like
    /// `setData(_:forKey:extendedData:timeToLive:)`.
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - key: A non-empty key without NUL bytes.
    ///   - extendedData: Extra bytes stored with the value.
    ///   - timeToLive: How long the entry may be returned; `nil`: it never expires.
    /// - Throws: ``CacheError/Code/encoding`` when the coder fails (the previous value stays),
    ///   and the errors of `setData(_:forKey:extendedData:)`.
    ///
    /// The corresponding C function is `yyc_diskcache_set_with_filename_and_ttl`.
    @_disfavoredOverload
    public func setValue<T: Encodable>(
        _ value: T, forKey key: String, extendedData: Data? = nil,
        timeToLive: Duration?
    ) throws {
        try setData(encode(value), forKey: key, extendedData: extendedData, timeToLive: timeToLive)
    }

    /// The time `key`'s entry has left to live, or `nil` if it has no time to live, there is no
    /// entry (an expired one is removed), or after an error. Does not change the access time.
    ///
    /// Blocking: reads the manifest (waiting for the core's lock, and for removing an expired
    /// entry, the folder lock); there is no async twin.
    ///
    /// The corresponding C function is `yyc_diskcache_time_to_live`.
    @_disfavoredOverload
    public func timeToLive(forKey key: String) -> Duration? {
        guard CStrings.isStorableKey(key) else { return nil }
        return withOpenCore { core -> Duration? in
            var seconds = 0.0
            let status = key.withCString { yyc_diskcache_time_to_live(core, $0, &seconds) }
            guard status == 0 else { return nil }
            return Self.ttlDuration(seconds: seconds)
        } ?? nil
    }

    /// Stores bytes with a time to live; the async twin of
    /// `setData(_:forKey:extendedData:timeToLive:)`.
    ///
    /// - Parameters:
    ///   - data: The bytes.
    ///   - key: A non-empty key without NUL bytes.
    ///   - extendedData: Extra bytes stored with the value.
    ///   - timeToLive: How long the entry may be returned; `nil`: it never expires.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// The corresponding C function is `yyc_diskcache_set_with_filename_and_ttl`.
    public func setData(
        _ data: Data, forKey key: String, extendedData: Data? = nil,
        timeToLive: Duration?
    ) async throws {
        try await onDiskQueue {
            try self.setData(data, forKey: key, extendedData: extendedData, timeToLive: timeToLive)
        }
    }

    /// Stores an encoded value with a time to live; the async twin of
    /// `setValue(_:forKey:extendedData:timeToLive:)`.
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - key: A non-empty key without NUL bytes.
    ///   - extendedData: Extra bytes stored with the value.
    ///   - timeToLive: How long the entry may be returned; `nil`: it never expires.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError`` (including
    ///   ``CacheError/Code/encoding``).
    ///
    /// The corresponding C function is `yyc_diskcache_set_with_filename_and_ttl`.
    public func setValue<T: Encodable>(
        _ value: T, forKey key: String, extendedData: Data? = nil,
        timeToLive: Duration?
    ) async throws {
        try Task.checkCancellation()
        let data = try encode(value)
        try await setData(data, forKey: key, extendedData: extendedData, timeToLive: timeToLive)
    }

    /// Seconds for the C core: `.infinity` for `nil`, at least 0.
    static func ttlSeconds(_ duration: Duration?) -> Double {
        guard let duration else { return .infinity }
        let (whole, atto) = duration.components
        return max(0, Double(whole) + Double(atto) * 1e-18)
    }

    /// A duration from the C core's seconds: `nil` for infinity.
    static func ttlDuration(seconds: Double) -> Duration? {
        seconds.isFinite ? .seconds(seconds) : nil
    }

    /// The bytes stored for `key` (as `data(forKey:)`, refreshing the access time) and
    /// the time the entry has left to live (`.infinity`: none), read one after the other; `nil`
    /// on a miss. For the two-level cache's back-fill.
    /// An entry that is gone by the second read (expired or removed meanwhile) has 0 left.
    func dataAndTimeToLive(forKey key: String) throws -> (Data, Double)? {
        guard let data = try data(forKey: key) else { return nil }
        let seconds = try withCore { core -> Double in
            var seconds = 0.0
            let status = key.withCString { yyc_diskcache_time_to_live(core, $0, &seconds) }
            if status == 1 { return 0 }  // YYC_NOTFOUND: gone since the read
            try CacheError.check(status)
            return seconds
        }
        return (data, seconds)
    }
}
