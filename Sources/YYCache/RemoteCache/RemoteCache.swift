import CYYCache
import Dispatch

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A cache shared by processes and machines, on Redis: the C core's `yyc_remote`.
///
/// Values are bytes under ``RemoteConfiguration/namespace``; each carries a small header with a
/// CRC-32C, so a value this library did not write (or one damaged in Redis) is a miss reported
/// as ``CacheError/Code/corrupt`` through ``didReportError``, never returned. Values are limited
/// to 64 MiB (``CacheError/Code/tooLarge``).
///
/// Connections are pooled (up to 8) and thread-safe; every call returns within
/// ``RemoteConfiguration/connectTimeout`` + ``RemoteConfiguration/commandTimeout``, with a
/// ``CacheError/Code/io`` error when Redis is unreachable, slow, full or refuses the
/// credentials; after a failed connect, calls fail at once for a back-off of 50 ms doubling up
/// to 1 s, and the next call after it reconnects. A server that closes connections never raises
/// SIGPIPE in the process.
///
/// Put it behind a ``Cache`` (``Cache/init(name:remote:)``) for memory and disk tiers that stay
/// coherent with every other cache on the same Redis and namespace.
///
/// The async twins run the network call on a dispatch queue, never on the cooperative pool.
public final class RemoteCache: Sendable {
    /// The configuration it was opened with.
    public let configuration: RemoteConfiguration

    /// The C object (`yyc_remote *`); closed by `deinit` (a ``Cache`` holds its own reference).
    nonisolated(unsafe) let pointer: OpaquePointer

    /// The error handler's box, the context of the C error hook.
    private let reports: RemoteErrorReports

    /// The queue of the async twins.
    static let queue = DispatchQueue(label: "yycache.remote", qos: .utility, attributes: .concurrent)

    /// Connects to Redis (one connection, checking the credentials) and starts the invalidation
    /// link.
    ///
    /// - Parameters:
    ///   - configuration: The URL, namespace, timeouts and default time to live.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a bad URL, an empty namespace or one with
    ///   NUL, or timeouts that are not positive; ``CacheError/Code/io`` when Redis is unreachable,
    ///   does not answer in time or refuses the credentials.
    ///
    /// The corresponding C function is `yyc_remote_open`.
    public init(_ configuration: RemoteConfiguration) throws {
        guard !configuration.namespace.isEmpty, !configuration.namespace.utf8.contains(0),
            !configuration.url.utf8.contains(0)
        else {
            throw CacheError.invalidArgument("the namespace is empty or the url or namespace contains NUL")
        }
        let connect = configuration.connectTimeout.seconds
        let command = configuration.commandTimeout.seconds
        guard connect > 0, command > 0, connect.isFinite, command.isFinite else {
            throw CacheError.invalidArgument("the timeouts must be positive")
        }
        if let ttl = configuration.defaultTimeToLive, !(ttl.seconds >= 0) {
            throw CacheError.invalidArgument("the default time to live is negative")
        }
        var opened: OpaquePointer?
        let status = yyc_remote_open(configuration.url, configuration.namespace, &opened)
        guard status == 0, let opened else { throw CacheError.lastError(status: status) }
        yyc_remote_set_timeouts(opened, connect, command)
        self.pointer = opened
        self.configuration = configuration
        self.reports = RemoteErrorReports()
        yyc_remote_set_error_hook(opened, remoteErrorHook, Unmanaged.passUnretained(reports).toOpaque())
    }

    deinit {
        yyc_remote_set_error_hook(pointer, nil, nil)
        yyc_remote_close(pointer)
    }

    /// Called with every failure of a call (``CacheError/Code/io``) and every corrupt value found
    /// (``CacheError/Code/corrupt``), on the calling thread, and with the invalidation link's
    /// failures, on its thread. Default `nil`.
    ///
    /// The corresponding C function is `yyc_remote_set_error_hook`.
    public var didReportError: (@Sendable (CacheError) -> Void)? {
        get { reports.handler.withLock { $0 } }
        set { reports.handler.withLock { $0 = newValue } }
    }

    /// The counters (never blocks).
    public var statistics: RemoteStatistics {
        var c = yyc_remote_statistics()
        yyc_remote_get_statistics(pointer, &c)
        return RemoteStatistics(c)
    }

    /// The invalidation link's epoch (`yyc_remote_invalidation_epoch`): odd while it is up.
    var invalidationEpoch: UInt64 { yyc_remote_invalidation_epoch(pointer) }

    /// The bytes stored for `key`.
    ///
    /// - Parameters:
    ///   - key: The key (keys that are empty or contain NUL are never stored: `nil`).
    /// - Returns: The bytes, or `nil` on a miss (a value this library did not write included).
    /// - Throws: ``CacheError`` (``CacheError/Code/io``).
    ///
    /// The corresponding C function is `yyc_remote_get`.
    @_disfavoredOverload
    public func data(forKey key: String) throws -> Data? {
        try dataAndTimeToLive(forKey: key)?.0
    }

    /// The bytes and their remaining time to live in seconds (`.infinity`: none).
    func dataAndTimeToLive(forKey key: String) throws -> (Data, Double)? {
        guard CStrings.isStorableKey(key) else { return nil }
        var value: UnsafeMutableRawPointer?
        var length = 0
        var ttl = Double.infinity
        let status = yyc_remote_get_with_ttl(pointer, key, &value, &length, &ttl)
        if status == 1 { return nil }  // YYC_NOTFOUND
        try CacheError.check(status)
        guard let value, length > 0 else {
            yyc_free(value)
            return (Data(), ttl)
        }
        return (Data(bytesNoCopy: value, count: length, deallocator: .custom { p, _ in yyc_free(p) }), ttl)
    }

    /// Stores `data` for `key`.
    ///
    /// - Parameters:
    ///   - data: The bytes (at most 64 MiB).
    ///   - key: A non-empty key without NUL.
    ///   - timeToLive: How long Redis keeps it; `nil`: ``RemoteConfiguration/defaultTimeToLive``.
    /// - Throws: ``CacheError`` (``CacheError/Code/invalidArgument``,
    ///   ``CacheError/Code/tooLarge``, ``CacheError/Code/io``).
    ///
    /// The corresponding C function is `yyc_remote_set`.
    @_disfavoredOverload
    public func setData(_ data: Data, forKey key: String, timeToLive: Duration? = nil) throws {
        guard CStrings.isStorableKey(key) else {
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        let ttl = (timeToLive ?? configuration.defaultTimeToLive)?.seconds ?? 0
        guard ttl >= 0 else { throw CacheError.invalidArgument("the time to live is negative") }
        let status = data.withUnsafeBytes { raw in
            yyc_remote_set(pointer, key, raw.baseAddress, raw.count, ttl)
        }
        try CacheError.check(status)
    }

    /// Stores `data` for `key` only if Redis has no value for it (one atomic `SET NX`): for a
    /// value loaded after a miss, which must never replace a value another client wrote since.
    ///
    /// - Parameters:
    ///   - data: The bytes (at most 64 MiB).
    ///   - key: A non-empty key without NUL.
    ///   - timeToLive: How long Redis keeps it; `nil`: ``RemoteConfiguration/defaultTimeToLive``.
    /// - Returns: Whether it was stored (`false`: the key kept its value).
    /// - Throws: ``CacheError`` (``CacheError/Code/invalidArgument``,
    ///   ``CacheError/Code/tooLarge``, ``CacheError/Code/io``).
    ///
    /// The corresponding C function is `yyc_remote_set_if_absent`.
    @_disfavoredOverload
    @discardableResult
    public func setDataIfAbsent(_ data: Data, forKey key: String, timeToLive: Duration? = nil) throws -> Bool {
        guard CStrings.isStorableKey(key) else {
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        let ttl = (timeToLive ?? configuration.defaultTimeToLive)?.seconds ?? 0
        guard ttl >= 0 else { throw CacheError.invalidArgument("the time to live is negative") }
        var stored = false
        let status = data.withUnsafeBytes { raw in
            yyc_remote_set_if_absent(pointer, key, raw.baseAddress, raw.count, ttl, &stored)
        }
        try CacheError.check(status)
        return stored
    }

    /// Removes `key`'s value (nothing when absent).
    ///
    /// - Throws: ``CacheError`` (``CacheError/Code/io``).
    ///
    /// The corresponding C function is `yyc_remote_remove`.
    @_disfavoredOverload
    public func removeData(forKey key: String) throws {
        guard CStrings.isStorableKey(key) else { return }
        try CacheError.check(yyc_remote_remove(pointer, key))
    }

    /// Whether Redis has a value for `key` (not read or checked).
    ///
    /// - Throws: ``CacheError`` (``CacheError/Code/io``).
    ///
    /// The corresponding C function is `yyc_remote_contains`.
    @_disfavoredOverload
    public func containsData(forKey key: String) throws -> Bool {
        guard CStrings.isStorableKey(key) else { return false }
        var found = false
        try CacheError.check(yyc_remote_contains(pointer, key, &found))
        return found
    }

    /// Removes every value of the namespace.
    ///
    /// - Throws: ``CacheError`` (``CacheError/Code/io``).
    ///
    /// The corresponding C function is `yyc_remote_remove_all`.
    @_disfavoredOverload
    public func removeAllData() throws {
        try CacheError.check(yyc_remote_remove_all(pointer))
    }

    /// Runs `work` on ``queue`` (off the cooperative pool) and returns its result.
    static func onQueue<R: Sendable>(_ work: @escaping @Sendable () throws -> R) async throws -> R {
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}

/// The Swift side of the C error hook: the handler, read on any thread.
final class RemoteErrorReports: Sendable {
    let handler = Protected<(@Sendable (CacheError) -> Void)?>(nil)
}

/// The C error hook of a ``RemoteCache``.
private func remoteErrorHook(_ ctx: UnsafeMutableRawPointer?, _ error: UnsafePointer<yyc_error>?) {
    guard let ctx, let error else { return }
    let reports = Unmanaged<RemoteErrorReports>.fromOpaque(ctx).takeUnretainedValue()
    reports.handler.withLock { $0 }?(CacheError(reported: error.pointee))
}
