import Foundation

/// A two-level cache (YYCache): a ``MemoryCache`` in front of a ``DiskCache``.
///
/// Reads go to memory, then to disk; a disk hit is copied back into memory (cost 0). Writes
/// and removals go to memory, then to disk. The pair is not atomic (as in YYCache): each tier
/// has its own lock, and the `Cache` adds none. Configure limits on ``memoryCache`` and
/// ``diskCache`` directly.
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
    // Sendable because Value is).

    /// The cache's name: the last path component of its folder.
    public let name: String

    /// The memory tier. Its ``MemoryCache/name`` is the cache's name.
    public let memoryCache: MemoryCache<String, Value>

    /// The disk tier (inline threshold 20480 bytes), shared with every other cache on the path.
    public let diskCache: DiskCache

    /// Opens the cache named `name` in the user's cache directory: `$XDG_CACHE_HOME/<name>`
    /// when `XDG_CACHE_HOME` is an absolute path, else `$HOME/.cache/<name>`, else
    /// `<home directory from the password database>/.cache/<name>`.
    ///
    /// - Parameters:
    ///   - name: The folder's name; not empty.
    /// - Throws: ``CacheError/Code/invalidArgument`` for an empty name (or no home directory at
    ///   all), and the errors of ``DiskCache/init(path:)``.
    public convenience init(name: String) throws {
        try self.init(name: name, environment: ProcessInfo.processInfo.environment)
    }

    /// ``init(name:)`` with the environment as a parameter (tests use it so that they never
    /// change the process's environment).
    convenience init(name: String, environment: [String: String]) throws {
        guard !name.isEmpty, !name.utf8.contains(0) else {
            throw CacheError.invalidArgument("the cache name is empty or contains NUL")
        }
        guard let directory = CacheDirectory.resolve(environment: environment) else {
            throw CacheError.invalidArgument(
                "no cache directory: XDG_CACHE_HOME, HOME and the password database give none")
        }
        try self.init(path: CacheDirectory.join(directory, name))
    }

    /// Opens the cache whose folder is `path` (created if needed).
    ///
    /// - Parameters:
    ///   - path: The folder; not empty.
    /// - Throws: ``CacheError/Code/invalidArgument`` for an empty path, and the errors of
    ///   ``DiskCache/init(path:)``.
    public init(path: String) throws {
        guard !path.isEmpty else {
            throw CacheError.invalidArgument("the path is empty")
        }
        self.diskCache = try DiskCache(path: path)
        self.name = CacheDirectory.lastComponent(of: path)
        self.memoryCache = MemoryCache(name: name)
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
        return memoryCache.containsValue(forKey: key) || diskCache.containsValue(forKey: key)
    }

    /// The value for `key`: from memory, else from disk (and then copied into memory with
    /// cost 0).
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: The value, or `nil` when neither tier has it.
    /// - Throws: ``CacheError`` from the disk tier (``CacheError/Code/decoding`` included).
    @_disfavoredOverload
    public func value(forKey key: String) throws -> Value? {
        guard CStrings.isStorableKey(key) else { return nil }
        if let value = memoryCache.value(forKey: key) { return value }
        guard let value = try diskCache.value(Value.self, forKey: key) else { return nil }
        memoryCache.setValue(value, forKey: key)
        return value
    }

    /// Stores `value` in memory (cost 0), then on disk; `nil` removes it from both.
    ///
    /// If the disk write fails, the value is removed from memory again before the error is
    /// thrown, so the tiers never disagree: a later read finds the disk's previous value.
    ///
    /// - Parameters:
    ///   - value: The value, or `nil`.
    ///   - key: A non-empty key without NUL bytes.
    /// - Throws: ``CacheError`` (``CacheError/Code/invalidArgument`` for a bad key,
    ///   ``CacheError/Code/encoding``, the disk's errors).
    @_disfavoredOverload
    public func setValue(_ value: Value?, forKey key: String) throws {
        guard let value else {
            try removeValue(forKey: key)
            return
        }
        guard CStrings.isStorableKey(key) else {
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        memoryCache.setValue(value, forKey: key)
        do {
            try diskCache.setValue(value, forKey: key)
        } catch {
            memoryCache.removeValue(forKey: key)
            throw error
        }
    }

    /// Removes `key`'s value from memory, then from disk. An empty key does nothing.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Throws: ``CacheError`` from the disk tier.
    @_disfavoredOverload
    public func removeValue(forKey key: String) throws {
        guard CStrings.isStorableKey(key) else { return }
        memoryCache.removeValue(forKey: key)
        try diskCache.removeValue(forKey: key)
    }

    /// Removes every value from memory, then from disk.
    ///
    /// - Throws: ``CacheError`` from the disk tier.
    @_disfavoredOverload
    public func removeAllValues() throws {
        memoryCache.removeAllValues()
        try diskCache.removeAllValues()
    }
}

extension Cache: CustomStringConvertible {
    /// `<Cache<Value>: 0x...> (name)`.
    public var description: String {
        let address = "0x" + String(UInt(bitPattern: ObjectIdentifier(self).hashValue), radix: 16)
        return "<Cache<\(Value.self)>: \(address)> (\(name))"
    }
}
