import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A two-level cache (YYCache): a ``MemoryCache`` in front of a ``DiskCache``.
///
/// Reads go to memory, then to disk; a disk hit is copied back into memory. Writes and
/// removals go to disk, then to memory. Each tier has its own lock, and the `Cache` adds none.
/// Configure limits on ``memoryCache`` and ``diskCache`` directly.
///
/// **Consistency.** Once a `setValue(_:forKey:)` or `removeValue(forKey:)` on a key (or a
/// `removeAllValues()`) has returned, no later read of that key through this `Cache`
/// returns an older value or the removed one, whatever other threads or tasks are doing, sync
/// and async twins alike; once every call has returned, the memory tier holds nothing but the
/// disk's value (a key is in memory with the disk's value, or not at all). A failed disk
/// write never removes a value another call set meanwhile. Calls that overlap are ordered as if
/// one ran before the other. Writes made directly to ``memoryCache`` or ``diskCache``, through
/// another `Cache` on the same folder or by another process bypass this (the memory tier may
/// keep serving what it holds).
///
/// **Memory cost.** An entry's cost in ``memoryCache`` is its encoded size in bytes (the bytes
/// stored on disk), or what ``memoryCost`` says; ``memoryCache``'s ``MemoryCache/costLimit``
/// starts at a quarter of the memory available to the process (the cgroup's limit when one is
/// set, else physical memory; `yyc_available_memory`), so the memory tier is bounded by default.
///
/// Two `Cache(name:)` (or `Cache(path:)`) objects on the same folder share one disk core.
///
/// ```swift
/// let cache = try Cache<Article>(name: "articles")   // ~/.cache/articles
/// try cache.setValue(article, forKey: article.id)
/// let cached = try await cache.value(forKey: id)
/// ```
///
/// Keys follow the disk rules: an empty key (or one with NUL bytes) makes writes throw
/// ``CacheError/Code/invalidArgument``, reads return `nil` and removals do nothing.
public final class Cache<Value: Codable & Sendable>: Sendable {
    // Sendable: it holds only immutable references to two Sendable caches (MemoryCache is
    // Sendable because Value is) and a Sendable closure.

    /// The cache's name: the last path component of its folder.
    public let name: String

    /// The memory tier. Its ``MemoryCache/name`` is the cache's name.
    public let memoryCache: MemoryCache<String, Value>

    /// The disk tier (inline threshold 20480 bytes), shared with every other cache on the path.
    public let diskCache: DiskCache

    /// The memory cost of an entry, from its value and its encoded size in bytes; `nil` (the
    /// default) means the encoded size itself. A negative result counts as 0.
    public let memoryCost: (@Sendable (_ value: Value, _ encodedByteCount: Int) -> Int)?

    /// The counters of ``statistics`` (atomic: no lock).
    let counters = CacheCounters()

    /// Watches the wall clock for steps (Cache+WallClockSteps.swift).
    let wallClock = WallClockSteps()

    /// The blocking and the async loads under way (``value(forKey:orLoad:)``).
    let flights = BlockingLoadFlights<String, Value>()
    let asyncLoads = AsyncLoadFlights<String, Value>()

    /// The third tier (RemoteCache/Cache+Remote.swift), or `nil`: set once, by the initializer
    /// that takes a remote, before the cache is shared.
    nonisolated(unsafe) var remoteTier: CacheRemoteTier<Value>?

    /// Opens the cache named `name` in the user's cache directory: `$XDG_CACHE_HOME/<name>`
    /// when `XDG_CACHE_HOME` is an absolute path, else `$HOME/.cache/<name>`, else
    /// `<home directory from the password database>/.cache/<name>`.
    ///
    /// - Parameters:
    ///   - name: The folder's name: one path component (not empty, not `.` or `..`, without `/`
    ///     or NUL), so the cache stays inside the cache directory.
    ///   - memoryCost: The memory cost of an entry (see ``memoryCost``); `nil`: its encoded size.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a name that is not one folder name (or
    ///   no home directory at all), and the errors of ``DiskCache/init(path:)``.
    public convenience init(
        name: String, memoryCost: (@Sendable (_ value: Value, _ encodedByteCount: Int) -> Int)? = nil
    ) throws {
        try self.init(name: name, environment: ProcessInfo.processInfo.environment, memoryCost: memoryCost)
    }

    /// ``init(name:memoryCost:)`` with the environment as a parameter (tests use it so that they
    /// never change the process's environment).
    convenience init(
        name: String, environment: [String: String],
        memoryCost: (@Sendable (_ value: Value, _ encodedByteCount: Int) -> Int)? = nil
    ) throws {
        guard CacheDirectory.isFolderName(name) else {
            throw CacheError.invalidArgument(
                "a cache name is one folder name: not empty, not \".\" or \"..\", without \"/\" or NUL")
        }
        guard let directory = CacheDirectory.resolve(environment: environment) else {
            throw CacheError.invalidArgument(
                "no cache directory: XDG_CACHE_HOME, HOME and the password database give none")
        }
        try self.init(path: CacheDirectory.join(directory, name), memoryCost: memoryCost)
    }

    /// Opens the cache whose folder is `path` (created if needed).
    ///
    /// - Parameters:
    ///   - path: The folder; not empty.
    ///   - memoryCost: The memory cost of an entry (see ``memoryCost``); `nil`: its encoded size.
    /// - Throws: ``CacheError/Code/invalidArgument`` for an empty path, and the errors of
    ///   ``DiskCache/init(path:)``.
    public init(
        path: String, memoryCost: (@Sendable (_ value: Value, _ encodedByteCount: Int) -> Int)? = nil
    ) throws {
        guard !path.isEmpty else {
            throw CacheError.invalidArgument("the path is empty")
        }
        self.diskCache = try DiskCache(path: path)
        self.name = CacheDirectory.lastComponent(of: path)
        self.memoryCost = memoryCost
        self.memoryCache = MemoryCache(name: name)
        memoryCache.costLimit = Self.defaultMemoryCostLimit
    }

    /// A cache on the given tiers (``init(memoryCache:diskCache:remote:)``); its name is the
    /// disk folder's.
    init(memoryCache: MemoryCache<String, Value>, diskCache: DiskCache) {
        self.diskCache = diskCache
        self.name = CacheDirectory.lastComponent(of: diskCache.path)
        self.memoryCost = nil
        self.memoryCache = memoryCache
    }

    /// A quarter of the memory available to the process (`Int.max`, no limit, when unknown).
    static var defaultMemoryCostLimit: Int {
        let available = yyc_available_memory()
        return available == 0 ? .max : Int(clamping: available / 4)
    }

    /// Whether either tier has a value for `key`, without changing the memory LRU order or
    /// the disk access time.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: `true` if memory or disk has the value.
    @_disfavoredOverload
    public func containsValue(forKey key: String) -> Bool {
        guard CStrings.isStorableKey(key) else { return false }
        if let remoteTier { return remoteContains(forKey: key, tier: remoteTier) }
        return memoryContains(key) || diskCache.containsValue(forKey: key)
    }

    /// The value for `key`: from memory, else from disk (and then copied into memory, unless a
    /// write on the key came in meanwhile).
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: The value, or `nil` when neither tier has it.
    /// - Throws: ``CacheError`` from the disk tier (``CacheError/Code/decoding`` included).
    @_disfavoredOverload
    @_specialize(exported:true,where Value == Data)
    public func value(forKey key: String) throws -> Value? {
        guard CStrings.isStorableKey(key) else { return nil }
        if let remoteTier { return try remoteValue(forKey: key, tier: remoteTier) }
        if let value = memoryValue(forKey: key) {
            counters.hit()
            return value
        }
        let generation = memoryCache.writeGeneration(forKey: key)
        guard let found = try diskCache.dataAndTimeToLive(forKey: key) else {
            counters.miss()
            return nil
        }
        counters.hit()
        return try backFill(found.0, forKey: key, generation: generation, timeToLive: found.1)
    }

    /// Stores `value` on disk (encoded), then in memory (cost: the encoded size, or
    /// ``memoryCost``); `nil` removes it from both.
    ///
    /// If the disk write fails, the disk keeps its previous value and memory forgets the key
    /// (unless another write on it came in meanwhile), so a later read finds the disk's value.
    /// If another write on the key overlaps, memory may forget the key instead of storing the
    /// value (the next read takes the disk's).
    ///
    /// - Parameters:
    ///   - value: The value, or `nil`.
    ///   - key: A non-empty key without NUL bytes.
    /// - Throws: ``CacheError`` (``CacheError/Code/invalidArgument`` for a bad key,
    ///   ``CacheError/Code/encoding``, the disk's errors).
    @_disfavoredOverload
    @_specialize(exported:true,where Value == Data)
    public func setValue(_ value: Value?, forKey key: String) throws {
        guard let value else {
            try removeValue(forKey: key)
            return
        }
        try store(value, forKey: key, timeToLive: nil)
    }

    /// Writes encoded data to the disk tier with a time to live in seconds (`nil`: the disk's
    /// default). Blocking; the async store runs it on the disk queue.
    func writeToDisk(_ data: Data, forKey key: String, timeToLive: Double?) throws {
        if let timeToLive {
            try diskCache.store(data, forKey: key, extendedData: nil, timeToLive: timeToLive)
        } else {
            try diskCache.setData(data, forKey: key)
        }
    }

    /// Stores `value` on disk, then in memory, with a time to live in seconds for both tiers
    /// (`.infinity`: never), or `nil` for each tier's default.
    @_specialize(exported:true,where Value == Data)
    func store(_ value: Value, forKey key: String, timeToLive: Double?) throws {
        if let remoteTier { return try remoteStore(value, forKey: key, timeToLive: timeToLive, tier: remoteTier) }
        guard CStrings.isStorableKey(key) else {
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        let data = try diskCache.encode(value)
        let generation = memoryCache.writeGeneration(forKey: key)
        do {
            try writeToDisk(data, forKey: key, timeToLive: timeToLive)
        } catch {
            memoryCache.removeValue(forKey: key, ifGeneration: generation)
            throw error
        }
        storeInMemory(
            value, byteCount: data.count, forKey: key, generation: generation,
            timeToLive: memoryTimeToLive(timeToLive))
    }

    /// Removes `key`'s value from disk, then from memory. An empty key does nothing.
    ///
    /// If the disk fails, memory forgets the key unless another write on it came in meanwhile.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Throws: ``CacheError`` from the disk tier.
    @_disfavoredOverload
    public func removeValue(forKey key: String) throws {
        guard CStrings.isStorableKey(key) else { return }
        if let remoteTier { removeFromRemote(key, tier: remoteTier) }  // Redis first
        let generation = memoryCache.writeGeneration(forKey: key)
        do {
            try diskCache.removeValue(forKey: key)
        } catch {
            memoryCache.removeValue(forKey: key, ifGeneration: generation)
            throw error
        }
        memoryCache.removeValue(forKey: key)
    }

    /// Removes every value from disk, then from memory (from memory also when the disk fails).
    ///
    /// - Throws: ``CacheError`` from the disk tier.
    @_disfavoredOverload
    public func removeAllValues() throws {
        if let remoteTier { removeAllFromRemote(tier: remoteTier) }  // Redis first
        defer { memoryCache.removeAllValues() }
        try diskCache.removeAllValues()
    }

    // The memory halves of the reads and writes, shared by the sync and async twins (see the
    // consistency note on the type: the disk changes before memory does, and memory changes only
    // if the key's write generation, taken before the disk call, is still the same).

    /// Decodes bytes read from disk and copies the value into memory unless the key was written
    /// since `generation` was taken (before the disk read), keeping the disk entry's remaining
    /// time to live (seconds; `.infinity`: none), so memory never outlives the disk.
    func backFill(_ data: Data, forKey key: String, generation: UInt64, timeToLive: Double)
        throws -> Value
    {
        let value = try diskCache.decode(Value.self, from: data)
        if timeToLive.isFinite { wallClock.watch() }
        memoryCache.setValue(
            value, forKey: key, cost: cost(of: value, byteCount: data.count),
            ifGeneration: generation, timeToLive: timeToLive)
        return value
    }

    /// After a successful disk write: stores the value in memory unless another write on the
    /// key came in since `generation` was taken (before the disk write); then the disk's last
    /// value is unknown here, so memory forgets the key.
    /// `timeToLive`: seconds, or `nil` for the memory tier's default.
    func storeInMemory(
        _ value: Value, byteCount: Int, forKey key: String, generation: UInt64,
        timeToLive: Double? = nil
    ) {
        counters.insertion()
        if timeToLive != nil || memoryCache.defaultTimeToLive != nil { wallClock.watch() }
        let cost = cost(of: value, byteCount: byteCount)
        if !memoryCache.setValue(
            value, forKey: key, cost: cost, ifGeneration: generation,
            timeToLive: timeToLive)
        {
            memoryCache.removeValue(forKey: key)
        }
    }

    /// The memory copy's time to live for a set with `timeToLive` (seconds; `nil`: each tier's
    /// default): the set's own; without one, the disk tier's default when it has one (shorter
    /// than memory's own default, if that is set), so the copy never outlives its disk entry;
    /// `nil` (memory's default) otherwise.
    func memoryTimeToLive(_ timeToLive: Double?) -> Double? {
        if let timeToLive { return timeToLive }
        guard let disk = diskCache.defaultTimeToLive else { return nil }
        let seconds = DiskCache.ttlSeconds(disk)
        guard let memory = memoryCache.defaultTimeToLive else { return seconds }
        return min(seconds, DiskCache.ttlSeconds(memory))
    }

    /// The memory cost of a value encoded in `byteCount` bytes.
    func cost(of value: Value, byteCount: Int) -> Int {
        guard let memoryCost else { return byteCount }
        return max(0, memoryCost(value, byteCount))
    }
}

extension Cache: CustomStringConvertible {
    /// `<Cache<Value>: 0x...> (name)`.
    public var description: String {
        let address = "0x" + String(UInt(bitPattern: ObjectIdentifier(self).hashValue), radix: 16)
        return "<Cache<\(Value.self)>: \(address)> (\(name))"
    }
}
