import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Loading with single flight for async callers (the C core's blocking twin is
// `yyc_diskcache_get_or_load`): one task per core and missing key, which every concurrent
// caller awaits; no thread of the cooperative pool ever blocks.
extension DiskCache {
    /// The value stored for `key`, or the one `load` produces, stored (with
    /// ``defaultTimeToLive``) and returned. Concurrent callers in this process that miss on the
    /// same key run `load` once and all receive its value or its error (unwrapped); a failed
    /// load stores nothing, and the next call runs it again. Callers of other keys are not
    /// delayed. An expired entry is a miss (removed, reported `.expired`) and is loaded again.
    ///
    /// The load runs in a task of its own. A cancelled caller returns `CancellationError` at
    /// once; the load goes on for the others and its value is stored; when every caller has
    /// been cancelled, the load's task is cancelled too. A loader that asks for its own key
    /// fails at once with ``CacheError/Code/recursiveLoad`` (see "Expiry and loading").
    /// Statistics: the lookup counts a hit or a miss; the load adds one load or load failure
    /// and its duration. The loaded value is stored only if no write of the key came in since
    /// the miss (that write stays; the loaded value is still returned).
    ///
    /// - Parameters:
    ///   - type: The type to decode (and encode, with ``coder``; `Data` bypasses it).
    ///   - key: A non-empty key without NUL bytes.
    ///   - load: Produces the value on a miss; it may use the cache.
    /// - Returns: The stored or loaded value.
    /// - Throws: `load`'s error; `CancellationError`; ``CacheError`` (``CacheError/Code/closed``,
    ///   ``CacheError/Code/decoding``, ``CacheError/Code/encoding``, I/O and SQLite failures).
    ///
    /// The corresponding C functions are `yyc_diskcache_get_or_load` (blocking) and
    /// `yyc_diskcache_count_load`.
    public func value<T: Codable & Sendable>(
        _ type: T.Type, forKey key: String,
        orLoad load: @Sendable @escaping () async throws -> T
    )
        async throws -> T
    {
        if let value = try await value(type, forKey: key) { return value }
        guard CStrings.isStorableKey(key) else {
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        let core = try withCore { UInt(bitPattern: $0) }
        let marker = LoadScope.Marker(core: core, key: key)
        try LoadScope.check(marker)
        let data = try await DiskCacheLoads.shared.value(for: DiskCacheLoads.Slot(core: core, key: key)) {
            [self] in
            try await LoadScope.run(marker) {
                // A load that finished between the caller's miss and this task stored it. (A
                // look that counts nothing first: the caller's miss was this call's one miss.)
                if await self.containsValue(forKey: key), let data = try await self.data(forKey: key) {
                    return data
                }
                let clock = ContinuousClock()
                let start = clock.now
                let data: Data
                do {
                    data = try self.encode(try await load())
                } catch {
                    self.countLoad(ok: false, clock.now - start)
                    throw error
                }
                self.countLoad(ok: true, clock.now - start)
                // Stored even when every caller has left meanwhile (the load is done), and not
                // over a write of the key made since the miss: that one is newer.
                try await Task {
                    _ = try await self.onDiskQueue {
                        try self.store(data, forKey: key, extendedData: nil, timeToLive: nil, ifAbsent: true)
                    }
                }.value
                return data
            }
        }
        return try decode(type, from: data)
    }

    /// The blocking twin of the async ``value(_:forKey:orLoad:)``: the value stored for `key`,
    /// or the one `load` produces, stored (with ``defaultTimeToLive``) and returned. Concurrent
    /// callers in this process that miss on the same key run `load` once (on the first caller's
    /// thread; the others sleep until it finishes, on no cache lock) and all receive its value
    /// or its error (unwrapped); a failed load stores nothing. An expired entry is a miss.
    ///
    /// - Parameters:
    ///   - type: The type to decode (and encode, with ``coder``; `Data` bypasses it).
    ///   - key: A non-empty key without NUL bytes.
    ///   - load: Produces the value on a miss; it runs with no lock held and may use the cache
    ///     (asking for its own key fails at once with ``CacheError/Code/recursiveLoad``).
    /// - Returns: The stored or loaded value.
    /// - Throws: `load`'s error; ``CacheError`` (``CacheError/Code/closed``,
    ///   ``CacheError/Code/decoding``, ``CacheError/Code/encoding``, I/O and SQLite failures).
    ///
    /// The corresponding C function is `yyc_diskcache_get_or_load`.
    @_disfavoredOverload
    public func value<T: Codable & Sendable>(
        _ type: T.Type, forKey key: String, orLoad load: () throws -> T
    ) throws -> T {
        if let value = try value(type, forKey: key) { return value }
        guard CStrings.isStorableKey(key) else {
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        let core = try withCore { UInt(bitPattern: $0) }
        let marker = LoadScope.Marker(core: core, key: key)
        try LoadScope.check(marker)
        let data = try DiskCacheLoads.blocking.run(DiskCacheLoads.Slot(core: core, key: key)) {
            try LoadScope.run(marker) {
                // A load that finished between this caller's miss and its flight stored it (a
                // look that counts nothing first: the caller's miss was this call's one miss).
                if self.containsValue(forKey: key), let data = try self.data(forKey: key) {
                    return data
                }
                let clock = ContinuousClock()
                let start = clock.now
                let data: Data
                do {
                    data = try self.encode(try load())
                } catch {
                    self.countLoad(ok: false, clock.now - start)
                    throw error
                }
                self.countLoad(ok: true, clock.now - start)
                // Not over a write of the key made since the miss: that one is newer.
                _ = try self.store(data, forKey: key, extendedData: nil, timeToLive: nil, ifAbsent: true)
                return data
            }
        }
        return try decode(type, from: data)
    }

    /// Adds a finished load to the core's statistics.
    private func countLoad(ok: Bool, _ duration: Duration) {
        let (seconds, atto) = duration.components
        let ns = UInt64(clamping: seconds * 1_000_000_000 + atto / 1_000_000_000)
        _ = withOpenCore { yyc_diskcache_count_load($0, ok, ns) }
    }
}
