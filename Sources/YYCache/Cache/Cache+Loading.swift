#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Loading with single flight on the two-level cache: concurrent callers in this process that
// miss on the same key (in both tiers) run the loader once and all receive its value or its
// error; the value is stored in both tiers like setValue(_:forKey:) (each tier's default time
// to live), unless a write of the key came in since the miss (that write stays in both tiers:
// a loaded value never replaces it); an error stores nothing. With a remote tier the loaded value
// goes to Redis too, only if the key has none there (RemoteCache/Cache+Remote.swift).
extension Cache {
    /// The value for `key` from memory or disk, or the one `load` produces, stored in both
    /// tiers and returned. Concurrent callers of the same missing key run `load` once (on the
    /// first caller's thread; the others sleep until it finishes, on no cache lock) and all get
    /// its value or its error, unwrapped; a failed load stores nothing and the next call runs
    /// it again. Callers of other keys are not delayed. An expired entry is a miss.
    ///
    /// - Parameters:
    ///   - key: A non-empty key without NUL bytes.
    ///   - load: Produces the value on a miss; runs with no lock held and may use the cache
    ///     (asking for its own key fails at once with ``CacheError/Code/recursiveLoad``).
    /// - Returns: The stored or loaded value.
    /// - Throws: `load`'s error; ``CacheError`` (the tiers' errors, ``CacheError/Code/encoding``).
    @_disfavoredOverload
    public func value(forKey key: String, orLoad load: () throws -> Value) throws -> Value {
        let generation = memoryCache.writeGeneration(forKey: key)  // before the miss
        if let value = try value(forKey: key) { return value }
        guard CStrings.isStorableKey(key) else {
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        let marker = LoadScope.Marker(owner: self, key: key.utf8)
        try LoadScope.check(marker)
        return try flights.run(key) {
            try LoadScope.run(marker) {
                // A load that finished between this caller's miss and its flight stored the value
                // (with a remote tier: maybe another instance's, in Redis).
                let epoch = remoteTier?.remote.invalidationEpoch ?? 0
                if let value = try loadedMeanwhile(forKey: key, generation: generation, epoch: epoch) {
                    return value
                }
                let clock = ContinuousClock()
                let start = clock.now
                let value: Value
                do {
                    value = try load()
                } catch {
                    counters.load(ok: false, clock.now - start)
                    throw error
                }
                counters.load(ok: true, clock.now - start)
                try storeLoaded(value, forKey: key, generation: generation, epoch: epoch)
                return value
            }
        }
    }

    /// The async twin of `value(forKey:orLoad:)`: one task per missing key, which every
    /// concurrent caller awaits; no thread of the cooperative pool blocks. A cancelled caller
    /// returns `CancellationError` at once; the load goes on for the others and its value is
    /// stored; when every caller has been cancelled, the load's task is cancelled too. A loader
    /// that asks for its own key fails at once with ``CacheError/Code/recursiveLoad`` (see
    /// "Expiry and loading").
    ///
    /// - Parameters:
    ///   - key: A non-empty key without NUL bytes.
    ///   - load: Produces the value on a miss.
    /// - Returns: The stored or loaded value.
    /// - Throws: `load`'s error; `CancellationError`; ``CacheError``.
    public func value(forKey key: String, orLoad load: @Sendable @escaping () async throws -> Value)
        async throws -> Value
    {
        let generation = memoryCache.writeGeneration(forKey: key)  // before the miss
        if let value = try await value(forKey: key) { return value }
        guard CStrings.isStorableKey(key) else {
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        let marker = LoadScope.Marker(owner: self, key: key.utf8)
        try LoadScope.check(marker)
        return try await asyncLoads.value(for: key) { [self] in
            try await LoadScope.run(marker) {
                let epoch = remoteTier?.remote.invalidationEpoch ?? 0
                if let value = try await loadedMeanwhile(forKey: key, generation: generation, epoch: epoch) {
                    return value
                }
                let clock = ContinuousClock()
                let start = clock.now
                let value: Value
                do {
                    value = try await load()
                } catch {
                    counters.load(ok: false, clock.now - start)
                    throw error
                }
                counters.load(ok: true, clock.now - start)
                // Stored even when every caller has left meanwhile (the load is done).
                try await Task { try await storeLoaded(value, forKey: key, generation: generation, epoch: epoch) }
                    .value
                return value
            }
        }
    }
}

extension Cache {
    /// Stores a loaded value: on disk only if the key has no value there when it commits (a
    /// write since the miss stays), then in memory unless the key was written since
    /// `generation` (taken before the miss). With a remote tier: Redis first, if the key has
    /// no value there (`epoch`: the invalidation link's, read before the flight's Redis read).
    func storeLoaded(_ value: Value, forKey key: String, generation: UInt64, epoch: UInt64) throws {
        if let tier = remoteTier {
            return try remoteStoreLoaded(value, forKey: key, generation: generation, epoch: epoch, tier: tier)
        }
        let data = try diskCache.encode(value)
        guard try diskCache.store(data, forKey: key, extendedData: nil, timeToLive: nil, ifAbsent: true)
        else { return }
        storeInMemory(
            value, byteCount: data.count, forKey: key, generation: generation,
            timeToLive: memoryTimeToLive(nil))
    }

    /// The async twin of `storeLoaded(_:forKey:generation:epoch:)` (the disk and Redis writes
    /// off the cooperative pool).
    func storeLoaded(_ value: Value, forKey key: String, generation: UInt64, epoch: UInt64) async throws {
        if remoteTier != nil {
            return try await RemoteCache.onQueue {
                try self.storeLoaded(value, forKey: key, generation: generation, epoch: epoch)
            }
        }
        let data = try diskCache.encode(value)
        let disk = diskCache
        let stored = try await disk.onDiskQueue {
            try disk.store(data, forKey: key, extendedData: nil, timeToLive: nil, ifAbsent: true)
        }
        guard stored else { return }
        storeInMemory(
            value, byteCount: data.count, forKey: key, generation: generation,
            timeToLive: memoryTimeToLive(nil))
    }
}
