#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Async twins: the memory part runs synchronously in the calling task (it never blocks for
// long), the disk part through DiskCache's async twins (off the cooperative pool). The order
// and the conditional memory updates are the sync twins' (Cache.swift), so the consistency
// guarantee holds across both.
extension Cache {
    /// Whether either tier has a value for `key`; the async twin of ``containsValue(forKey:)``.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: `true` if memory or disk has the value (`false` when the task was cancelled
    ///   before the disk check).
    ///
    /// Like the synchronous `value(forKey:)`, it runs on the caller's executor: a memory hit needs no hop.
    nonisolated(nonsending)
        public func containsValue(forKey key: String) async -> Bool
    {
        guard CStrings.isStorableKey(key) else { return false }
        if let tier = remoteTier {
            return (try? await RemoteCache.onQueue { self.remoteContains(forKey: key, tier: tier) }) ?? false
        }
        if memoryContains(key) { return true }
        return await diskCache.containsValue(forKey: key)
    }

    /// The value for `key`, from memory or disk (with back-fill); the async twin of
    /// ``value(forKey:)``.
    ///
    /// A memory hit is served in the caller's context, without a hop (the function runs on the
    /// caller's executor, like a synchronous call), and so is a disk hit that waits for no lock;
    /// a miss, or a disk read that would wait (for a write, a trim, another process's lock),
    /// runs on a dispatch queue off the cooperative pool.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: The value, or `nil`.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    nonisolated(nonsending)
        public func value(forKey key: String) async throws -> Value?
    {
        try Task.checkCancellation()
        guard CStrings.isStorableKey(key) else { return nil }
        if let tier = remoteTier {
            if tier.isTrusted(tier.remote.invalidationEpoch), let value = memoryValue(forKey: key) {
                counters.hit()
                return value
            }
            return try await RemoteCache.onQueue { try self.remoteValue(forKey: key, tier: tier) }
        }
        if let value = memoryValue(forKey: key) {
            counters.hit()
            return value
        }
        let generation = memoryCache.writeGeneration(forKey: key)
        let disk = diskCache
        // A disk hit that waits for no lock is read here too; the rest on the disk queue.
        var found = disk.dataAndTimeToLiveAtOnce(forKey: key)
        if found == nil { found = try await disk.onDiskQueue { try disk.dataAndTimeToLive(forKey: key) } }
        guard let found else {
            counters.miss()
            return nil
        }
        counters.hit()
        return try backFill(found.0, forKey: key, generation: generation, timeToLive: found.1)
    }

    /// Stores `value` on disk, then in memory; the async twin of ``setValue(_:forKey:)``.
    ///
    /// - Parameters:
    ///   - value: The value, or `nil` to remove it.
    ///   - key: A non-empty key without NUL bytes.
    /// - Throws: `CancellationError` if cancelled before it starts (nothing is written);
    ///   ``CacheError``.
    public func setValue(_ value: Value?, forKey key: String) async throws {
        try Task.checkCancellation()
        guard let value else {
            try await removeValue(forKey: key)
            return
        }
        try await store(value, forKey: key, timeToLive: nil)
    }

    /// The async twin of `store(_:forKey:timeToLive:)` (the disk write off the cooperative
    /// pool).
    func store(_ value: Value, forKey key: String, timeToLive: Double?) async throws {
        if let tier = remoteTier {
            return try await RemoteCache.onQueue {
                try self.remoteStore(value, forKey: key, timeToLive: timeToLive, tier: tier)
            }
        }
        guard CStrings.isStorableKey(key) else {
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        let data = try diskCache.encode(value)
        let generation = memoryCache.writeGeneration(forKey: key)
        do {
            try await diskCache.onDiskQueue { try self.writeToDisk(data, forKey: key, timeToLive: timeToLive) }
        } catch {
            memoryCache.removeValue(forKey: key, ifGeneration: generation)
            throw error
        }
        storeInMemory(
            value, byteCount: data.count, forKey: key, generation: generation,
            timeToLive: memoryTimeToLive(timeToLive))
    }

    /// Removes `key`'s value from both tiers; the async twin of ``removeValue(forKey:)``.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    public func removeValue(forKey key: String) async throws {
        try Task.checkCancellation()
        guard CStrings.isStorableKey(key) else { return }
        if let tier = remoteTier {  // Redis first
            try await RemoteCache.onQueue { self.removeFromRemote(key, tier: tier) }
        }
        let generation = memoryCache.writeGeneration(forKey: key)
        do {
            try await diskCache.removeValue(forKey: key)
        } catch {
            memoryCache.removeValue(forKey: key, ifGeneration: generation)
            throw error
        }
        memoryCache.removeValue(forKey: key)
    }

    /// Removes every value from both tiers; the async twin of ``removeAllValues()``.
    ///
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    public func removeAllValues() async throws {
        try Task.checkCancellation()
        if let tier = remoteTier {  // Redis first
            try await RemoteCache.onQueue { self.removeAllFromRemote(tier: tier) }
        }
        do {
            try await diskCache.removeAllValues()
        } catch {
            memoryCache.removeAllValues()
            throw error
        }
        memoryCache.removeAllValues()
    }
}
