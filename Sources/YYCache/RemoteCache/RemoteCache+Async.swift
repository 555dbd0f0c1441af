#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Async twins: the network call runs on RemoteCache.queue, never on the cooperative pool.
extension RemoteCache {
    /// The async twin of ``data(forKey:)``.
    ///
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    public func data(forKey key: String) async throws -> Data? {
        try await Self.onQueue { try self.data(forKey: key) }
    }

    /// The async twin of ``setData(_:forKey:timeToLive:)``.
    ///
    /// - Throws: `CancellationError` if cancelled before it starts (nothing is written);
    ///   ``CacheError``.
    public func setData(_ data: Data, forKey key: String, timeToLive: Duration? = nil) async throws {
        try await Self.onQueue { try self.setData(data, forKey: key, timeToLive: timeToLive) }
    }

    /// The async twin of ``setDataIfAbsent(_:forKey:timeToLive:)``.
    ///
    /// - Throws: `CancellationError` if cancelled before it starts (nothing is written);
    ///   ``CacheError``.
    @discardableResult
    public func setDataIfAbsent(_ data: Data, forKey key: String, timeToLive: Duration? = nil) async throws -> Bool {
        try await Self.onQueue { try self.setDataIfAbsent(data, forKey: key, timeToLive: timeToLive) }
    }

    /// The async twin of ``removeData(forKey:)``.
    ///
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    public func removeData(forKey key: String) async throws {
        try await Self.onQueue { try self.removeData(forKey: key) }
    }

    /// The async twin of ``containsData(forKey:)``.
    ///
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    public func containsData(forKey key: String) async throws -> Bool {
        try await Self.onQueue { try self.containsData(forKey: key) }
    }

    /// The async twin of ``removeAllData()``.
    ///
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    public func removeAllData() async throws {
        try await Self.onQueue { try self.removeAllData() }
    }
}
