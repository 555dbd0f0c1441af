import CYYCache

// Time to live (memory_cache.h "Time to live"): strict expiry counted from the write.
extension MemoryCache {
    /// The time to live that sets without their own get (``setValue(_:forKey:cost:)`` and
    /// subscript writes): `nil` (the default) for none. Entries already stored keep theirs.
    /// A negative duration counts as zero (such entries are expired as soon as they are
    /// stored).
    ///
    /// Unlike ``maximumAge`` (since the last access, enforced by trims), a time to live is strict:
    /// an entry past it is never returned by any read (``value(forKey:)``, the subscript,
    /// ``containsValue(forKey:)``, ``timeToLive(forKey:)``); the read that finds it removes it,
    /// and every trim (also one within its limit) and the auto-trim remove all expired entries.
    ///
    /// The corresponding C functions are `yyc_memcache_set_default_time_to_live` and
    /// `yyc_memcache_default_time_to_live`.
    public var defaultTimeToLive: Duration? {
        get { afterReleasing(Self.duration(seconds: yyc_memcache_default_time_to_live(handle))) }
        set {
            yyc_memcache_set_default_time_to_live(handle, Self.seconds(newValue))
            releaseHandedBackValues()
        }
    }

    /// Stores `value` for `key` with its own time to live, counted from now, like
    /// ``setValue(_:forKey:cost:)`` otherwise.
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key; any key is valid, the empty one included.
    ///   - cost: The entry's cost (for ``costLimit``); a negative cost counts as 0.
    ///   - timeToLive: How long the entry may be returned; `nil`: it never expires (whatever
    ///     ``defaultTimeToLive`` says). A negative duration counts as zero.
    /// - Complexity: O(log *n*) amortized for an entry with a time to live (its deadline is
    ///   kept in deadline order), else O(1).
    ///
    /// The corresponding C functions are `yyc_memcache_set_with_ttl` and
    /// `yyc_memcache_set_inline_with_ttl`.
    @inlinable
    public func setValue(_ value: Value, forKey key: Key, cost: Int = 0, timeToLive: Duration?) {
        store(value, forKey: key, cost: cost, timeToLive: Self.seconds(timeToLive))
    }

    /// The time `key`'s entry has left to live, or `nil` if it has no time to live or there is
    /// no entry (an expired entry is removed). Not a hit: changes neither the eviction order
    /// nor the access time.
    ///
    /// The corresponding C function is `yyc_memcache_time_to_live`.
    public func timeToLive(forKey key: Key) -> Duration? {
        let handle = self.handle
        var seconds = 0.0
        let status = key.withCacheKeyBytes {
            yyc_memcache_time_to_live(handle, $0.baseAddress, $0.count, &seconds)
        }
        releaseHandedBackValues()
        guard status == 0 else { return nil }
        return Self.duration(seconds: seconds)
    }

    /// Seconds for the C core: `.infinity` for `nil`, at least 0.
    @inlinable
    static func seconds(_ duration: Duration?) -> Double {
        guard let duration else { return .infinity }
        let (whole, atto) = duration.components
        return max(0, Double(whole) + Double(atto) * 1e-18)
    }

    /// A duration from the C core's seconds: `nil` for infinity.
    static func duration(seconds: Double) -> Duration? {
        seconds.isFinite ? .seconds(seconds) : nil
    }
}
