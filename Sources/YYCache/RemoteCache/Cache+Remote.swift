import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Three tiers: memory, then disk, then Redis. The rules are the C core's (cache.c, "Three
// tiers"): Redis is the truth; the near tiers hold copies that the remote's invalidation link
// drops; they are served only while the link's epoch is the one whose flush this cache has done;
// a Redis hit is copied near only if the link was up before the read and nothing changed by the
// time the copy is stored; a set writes Redis, then disk, then memory (if the memory write
// generation taken before the Redis write is unchanged; otherwise both near tiers forget the
// key); a value Redis refused stays near (the two-level cache goes on while Redis is down).
extension Cache {
    /// Opens the cache named `name` (as ``init(name:memoryCost:)``) with `remote` as its third
    /// tier: memory, then disk, then Redis; writes go to every tier; a near miss that hits
    /// Redis back-fills the near tiers (with the remaining time to live).
    ///
    /// Coherence: a set or remove by another cache (any process) on the same Redis and
    /// namespace makes this cache drop the key from its memory and disk tiers when Redis's
    /// invalidation arrives; after that, no read here returns the old value. While the
    /// invalidation link is down the near tiers hold nothing that came from Redis. Failures of
    /// Redis (unreachable, full) do not fail the calls: they go on with the near tiers and are
    /// reported through ``didReportError`` (and the remote's ``RemoteCache/didReportError``).
    /// Opening empties the near tiers: nothing vouches for what they held.
    ///
    /// - Throws: The errors of ``init(name:memoryCost:)``.
    public convenience init(name: String, remote: RemoteCache) throws {
        try self.init(name: name)
        try attachRemote(remote)
    }

    /// A three-tier cache from the given tiers (see ``init(name:remote:)``). Empties them.
    public convenience init(memoryCache: MemoryCache<String, Value>, diskCache: DiskCache, remote: RemoteCache) {
        self.init(memoryCache: memoryCache, diskCache: diskCache)
        try? attachRemote(remote)
    }

    /// The third tier, or `nil` for a two-level cache.
    public var remote: RemoteCache? { remoteTier?.remote }

    private func attachRemote(_ remote: RemoteCache) throws {
        let tier = CacheRemoteTier(remote: remote, memoryCache: memoryCache, diskCache: diskCache)
        remoteTier = tier
        try tier.flush(epoch: remote.invalidationEpoch)
    }

    /// Reports a failure of Redis to the cache's error handler.
    func reportRemote(_ error: any Error) {
        guard let error = error as? CacheError else { return }
        diskCache.didReportError?(error)
    }

    // MARK: The three-tier halves of the calls (Cache.swift and Cache+Async.swift call them).

    func remoteValue(forKey key: String, tier: CacheRemoteTier<Value>) throws -> Value? {
        let epoch = tier.remote.invalidationEpoch
        let trusted = tier.isTrusted(epoch)
        if trusted, let value = memoryValue(forKey: key) {
            counters.hit()
            return value
        }
        let generation = memoryCache.writeGeneration(forKey: key)
        if trusted, let found = try? diskCache.dataAndTimeToLive(forKey: key) {
            counters.hit()
            return try backFill(found.0, forKey: key, generation: generation, timeToLive: found.1)
        }
        guard let value = try fetchFromRemote(key, tier: tier, epoch: epoch, generation: generation) else {
            counters.miss()
            return nil
        }
        counters.hit()
        return value
    }

    /// Reads `key` from Redis (a failure is reported and is a miss) and copies it near under the
    /// rules above: `epoch` was read before the Redis read and `generation` before that.
    private func fetchFromRemote(_ key: String, tier: CacheRemoteTier<Value>, epoch: UInt64, generation: UInt64)
        throws -> Value?
    {
        let found: (Data, Double)?
        do {
            found = try tier.remote.dataAndTimeToLive(forKey: key)
        } catch {
            reportRemote(error)
            found = nil
        }
        guard let (data, ttl) = found else { return nil }
        let value = try diskCache.decode(Value.self, from: data)
        guard tier.isTrusted(epoch), epoch % 2 == 1 else { return value }
        do {
            try diskCache.store(data, forKey: key, extendedData: nil, timeToLive: ttl)
        } catch {
            return value
        }
        if memoryCache.writeGeneration(forKey: key) != generation || tier.remote.invalidationEpoch != epoch {
            tier.drop(key)
            return value
        }
        memoryCache.setValue(
            value, forKey: key, cost: cost(of: value, byteCount: data.count), ifGeneration: generation,
            timeToLive: ttl)
        if tier.remote.invalidationEpoch != epoch { tier.drop(key) }
        return value
    }

    // MARK: Loading (Cache+Loading.swift calls these inside the load's single flight).
    //
    // As in C's yyc_cache_get_or_load: another instance may have loaded the key since this
    // caller's miss, so Redis is read first; else the loaded value goes to Redis only if the key
    // has none there (SET NX: a set made meanwhile by any process is newer and stays), and near
    // under the rules of a back-fill (the link up and trusted at `epoch`, read before the Redis
    // read; no write or invalidation of the key since `generation`, read before the miss).

    /// A value stored since this caller's miss (`epoch`: the link's epoch, read first).
    func loadedMeanwhile(forKey key: String, generation: UInt64, epoch: UInt64) throws -> Value? {
        guard let tier = remoteTier else { return memoryValue(forKey: key) }
        if tier.isTrusted(epoch), let value = memoryValue(forKey: key) { return value }
        return try fetchFromRemote(key, tier: tier, epoch: epoch, generation: generation)
    }

    /// The async twin (the Redis read off the cooperative pool).
    func loadedMeanwhile(forKey key: String, generation: UInt64, epoch: UInt64) async throws -> Value? {
        guard remoteTier != nil else { return memoryValue(forKey: key) }
        return try await RemoteCache.onQueue {
            try self.loadedMeanwhile(forKey: key, generation: generation, epoch: epoch)
        }
    }

    /// Stores a loaded value in Redis if the key has none there, then near (see above).
    func remoteStoreLoaded(
        _ value: Value, forKey key: String, generation: UInt64, epoch: UInt64, tier: CacheRemoteTier<Value>
    ) throws {
        let data = try diskCache.encode(value)
        var storedInRedis = false
        do {
            storedInRedis = try tier.remote.setDataIfAbsent(data, forKey: key)
        } catch let error as CacheError where error.code == .tooLarge || error.code == .invalidArgument {
            throw error
        } catch {
            reportRemote(error)
        }
        guard epoch % 2 == 1, tier.isTrusted(epoch),
            try diskCache.store(data, forKey: key, extendedData: nil, timeToLive: nil, ifAbsent: true)
        else {
            if storedInRedis { counters.insertion() }
            return
        }
        if memoryCache.writeGeneration(forKey: key) != generation || tier.remote.invalidationEpoch != epoch {
            counters.insertion()
            tier.drop(key)
            return
        }
        storeInMemory(
            value, byteCount: data.count, forKey: key, generation: generation, timeToLive: memoryTimeToLive(nil))
        if tier.remote.invalidationEpoch != epoch { tier.drop(key) }
    }

    func remoteStore(_ value: Value, forKey key: String, timeToLive: Double?, tier: CacheRemoteTier<Value>) throws {
        guard CStrings.isStorableKey(key) else {
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        let data = try diskCache.encode(value)
        let epoch = tier.remote.invalidationEpoch
        let generation = memoryCache.writeGeneration(forKey: key)
        var keptByRedis = true
        do {
            let ttl = timeToLive.flatMap { $0.isFinite ? Duration.seconds(max($0, 0.001)) : nil }
            try tier.remote.setData(data, forKey: key, timeToLive: ttl)
        } catch let error as CacheError where error.code == .tooLarge || error.code == .invalidArgument {
            throw error
        } catch {
            keptByRedis = false
            reportRemote(error)
        }
        do {
            if let timeToLive {
                try diskCache.store(data, forKey: key, extendedData: nil, timeToLive: timeToLive)
            } else {
                try diskCache.setData(data, forKey: key)
            }
        } catch {
            tier.drop(key)
            throw error
        }
        counters.insertion()
        let stored = memoryCache.setValue(
            value, forKey: key, cost: cost(of: value, byteCount: data.count), ifGeneration: generation,
            timeToLive: timeToLive)
        let vouched = epoch % 2 == 1 && tier.isTrusted(epoch)
        if !stored || tier.remote.invalidationEpoch != epoch || (keptByRedis && !vouched) {
            tier.drop(key)
        }
    }

    /// The Redis half of a removal (a failure is reported; the near tiers are then emptied of
    /// the key as in a two-level cache).
    func removeFromRemote(_ key: String, tier: CacheRemoteTier<Value>) {
        do { try tier.remote.removeData(forKey: key) } catch { reportRemote(error) }
    }

    func remoteContains(forKey key: String, tier: CacheRemoteTier<Value>) -> Bool {
        guard CStrings.isStorableKey(key) else { return false }
        if tier.isTrusted(tier.remote.invalidationEpoch),
            memoryContains(key) || diskCache.containsValue(forKey: key)
        {
            return true
        }
        return (try? tier.remote.containsData(forKey: key)) ?? false
    }

    /// The Redis half of a remove-all (a failure is reported).
    func removeAllFromRemote(tier: CacheRemoteTier<Value>) {
        do { try tier.remote.removeAllData() } catch { reportRemote(error) }
    }
}

/// The third tier of one ``Cache``: the remote, and the listener on its invalidation link that
/// drops keys from the near tiers.
final class CacheRemoteTier<Value: Codable & Sendable>: Sendable {
    let remote: RemoteCache
    let memoryCache: MemoryCache<String, Value>
    let diskCache: DiskCache
    /// Which link epoch's flush is done, and whether the near tiers are unserved (see
    /// `markUnserved`).
    private let state = Protected(NearState())
    /// The C listener's context and id.
    private let listener: RemoteListener
    nonisolated(unsafe) private var listenerID: UInt64 = 0

    init(remote: RemoteCache, memoryCache: MemoryCache<String, Value>, diskCache: DiskCache) {
        self.remote = remote
        self.memoryCache = memoryCache
        self.diskCache = diskCache
        let listener = RemoteListener()
        self.listener = listener
        listener.onEvent = { [weak self] key, epoch in
            guard let self else { return }
            if let key { self.invalidate(key, epoch: epoch) } else { try? self.flush(epoch: epoch) }
        }
        var id: UInt64 = 0
        yyc_remote_add_listener(
            remote.pointer, remoteListenerCallback, Unmanaged.passUnretained(listener).toOpaque(), &id)
        listenerID = id
    }

    deinit {
        yyc_remote_remove_listener(remote.pointer, listenerID)
    }

    func isTrusted(_ epoch: UInt64) -> Bool { state.withLock { $0.flushedEpoch } == epoch }

    /// Whether a failed disk removal stopped the near tiers from being served.
    private var isUnserved: Bool { state.withLock { $0.flushedEpoch } == NearState.unserved }

    /// Drops `key` from memory, disk, then memory again (a back-fill racing it is refused by its
    /// write generation or removed after it). When the disk removal fails (another process held
    /// the folder's lock past the busy timeout, or an I/O error), the near tiers are not served
    /// until a flush succeeds.
    func drop(_ key: String) {
        memoryCache.removeValue(forKey: key)
        do { try diskCache.removeValue(forKey: key) } catch { markUnserved() }
        memoryCache.removeValue(forKey: key)
    }

    /// Empties the near tiers, then records `epoch`'s flush as done (not when the disk failed,
    /// nor when a removal failed since the flush began).
    func flush(epoch: UInt64) throws {
        let marks = state.withLock { $0.unservedMarks }
        memoryCache.removeAllValues()
        do {
            try diskCache.removeAllValues()
        } catch {
            memoryCache.removeAllValues()
            throw error
        }
        memoryCache.removeAllValues()
        state.withLock {
            if $0.unservedMarks == marks, $0.flushedEpoch < epoch || $0.flushedEpoch == NearState.unserved {
                $0.flushedEpoch = epoch
            }
        }
    }

    private func markUnserved() {
        state.withLock {
            $0.unservedMarks &+= 1
            $0.flushedEpoch = NearState.unserved
        }
    }

    /// An invalidation (on the link's thread). While the near tiers are unserved, memory drops
    /// the key and the disk is emptied by a recovery flush, tried at most every
    /// `NearState.recoveryInterval`, so that a disk still locked delays the invalidations by at
    /// most one busy timeout per interval.
    func invalidate(_ key: String, epoch: UInt64) {
        let now = ContinuousClock.now
        guard isUnserved else {
            drop(key)
            if isUnserved {
                state.withLock { $0.nextRecovery = now + NearState.recoveryInterval }
            }
            return
        }
        memoryCache.removeValue(forKey: key)
        guard state.withLock({ $0.nextRecovery.map { now >= $0 } ?? true }) else { return }
        do {
            try flush(epoch: epoch)
        } catch {
            state.withLock { $0.nextRecovery = now + NearState.recoveryInterval }
        }
    }
}

/// The near tiers' standing with the invalidation link (the rules of cache.c's flushed_epoch).
struct NearState: Sendable {
    /// `flushedEpoch` while the near tiers are unserved (a disk removal failed).
    static let unserved = UInt64.max
    static let recoveryInterval = Duration.seconds(5)
    /// The link epoch whose flush is done (raised, never lowered but to `unserved`).
    var flushedEpoch: UInt64 = 0
    /// Times the near tiers became unserved (a flush that began before does not serve them).
    var unservedMarks: UInt64 = 0
    /// No recovery flush before this.
    var nextRecovery: ContinuousClock.Instant?
}

/// The context of the C listener: a key dropped (`nil`: everything, at the given epoch).
final class RemoteListener: @unchecked Sendable {
    // Set once in CacheRemoteTier.init, before the listener is added (then only read).
    var onEvent: (@Sendable (String?, UInt64) -> Void)?
}

/// The C listener (`yyc_remote_listener_fn`): runs on the invalidation thread.
private func remoteListenerCallback(
    _ ctx: UnsafeMutableRawPointer?, _ event: yyc_remote_event, _ key: UnsafePointer<CChar>?, _ length: Int,
    _ epoch: UInt64
) {
    guard let ctx else { return }
    let listener = Unmanaged<RemoteListener>.fromOpaque(ctx).takeUnretainedValue()
    if event == YYC_REMOTE_FLUSH {
        listener.onEvent?(nil, epoch)
    } else if let key {
        let bytes = UnsafeRawBufferPointer(start: key, count: length)
        listener.onEvent?(String(decoding: bytes, as: UTF8.self), epoch)
    }
}
