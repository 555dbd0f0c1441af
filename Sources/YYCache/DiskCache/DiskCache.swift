import CYYCache
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A thread-safe disk cache (YYDiskCache): small values inline in SQLite, large ones in files,
/// `Codable` archiving, count/cost/age/free-space limits and `async` twins.
///
/// Values up to ``inlineThreshold`` bytes are stored in the SQLite manifest; larger ones go to
/// `data/<md5(key)>` (or the name ``fileName`` returns). `Data` values are stored as they are;
/// other values go through ``coder`` (``JSONCacheCoder`` by default).
///
/// All `DiskCache` objects on one path in a process share one C core (one SQLite connection,
/// one lock): its limits, ``name``, ``errorLogsEnabled`` and auto-trim belong to the core;
/// ``coder`` and ``fileName`` belong to each object. ``close()`` closes this object only.
///
/// Keys are non-empty strings without NUL bytes: a write with another key throws
/// ``CacheError/Code/invalidArgument``, a read returns `nil`, a removal does nothing. Misses
/// return `nil`; failures throw ``CacheError``.
///
/// ```swift
/// let disk = try DiskCache(path: folder)
/// try disk.setValue(Profile(name: "Ada"), forKey: "profile")
/// let profile = try disk.value(Profile.self, forKey: "profile")
/// let avatar = try await disk.data(forKey: "avatar")   // off the cooperative pool
/// ```
///
/// ## Synchronous and async spellings
///
/// Every blocking method has an async twin with the same name, labels and defaults, which
/// runs the disk work off the cooperative pool. Swift chooses by context: in an `async`
/// function or closure the twin is chosen and needs `await` (there `try disk.setData(...)`
/// without `await` does not compile, on purpose: the synchronous call would block a pool
/// thread); in synchronous code the synchronous method is chosen.
///
/// One exception comes from the compiler: in top-level code (`main.swift`), Swift 6.3 ranks
/// overloads as if the code were synchronous, so `try await disk.trim(toCount: 0)` there binds
/// to the synchronous method (with the warning "no 'async' operations occur within 'await'
/// expression"). Top-level code runs on the main thread, not on the pool; to use the twins
/// there, call them from an `async` function, a `@main` type or a `Task`.
///
/// The corresponding C type is `yyc_diskcache`.
public final class DiskCache: Sendable {
    // Sendable: the core's state is guarded by the C core's pthread mutex (`yyc_diskcache.lock`,
    // taken by every yyc_diskcache_* call); whether this object is open and its calls in flight
    // are one atomic (`gate`); its other state (coder, fileName, error subscriptions) is in
    // `state`, behind a lock.

    /// The C core (`yyc_diskcache *`): one reference, dropped (``releaseCore(_:)``) by the last
    /// of `close()`, the end of the last call in flight after it, or `deinit`; used only by
    /// calls that got through `gate` before that. (An opaque pointer is not `Sendable`; the C
    /// core is thread-safe.)
    nonisolated(unsafe) let handle: OpaquePointer

    /// Bit 0: closed (set once by `close()`); bit 1: `handle` released; the rest: the calls in
    /// flight, in units of 4. An atomic rather than `state`'s lock: every call passes it twice,
    /// and two lock round trips cost about 150 instructions per call.
    let gate = Atomic<Int>(0)

    struct State {
        var coder: any CacheCoder = defaultCacheCoder
        var fileName: (@Sendable (String) -> String?)?
        /// This object's subscriptions to the core's error reports (see ``DiskCacheErrorHub``),
        /// each with what ends it (finishes a stream; nothing for the handler).
        var errorSubscriptions: [UInt64: @Sendable () -> Void] = [:]
        var didReportError: (@Sendable (CacheError) -> Void)?
        var didReportErrorSubscription: UInt64?
    }

    let state: Protected<State>

    /// The path, exactly as given to the initializer. (The shared core is found through the
    /// canonical path.)
    public let path: String

    /// The core's inline threshold in bytes: larger values go to files. 0 means every value in
    /// a file, `Int.max` every value in SQLite. When this object joined a core that was already
    /// open, it is that core's threshold.
    public let inlineThreshold: Int

    /// Opens the disk cache at `path` with an inline threshold of 20480 bytes (YYDiskCache's
    /// default), or joins the core already open for that path in this process.
    ///
    /// Blocking: opens or creates the folder and its manifest, and may wait up to the busy
    /// timeout (5 seconds) for another process that holds the manifest; in async code, create the
    /// cache off the cooperative pool if that matters (there is no async initializer).
    ///
    /// - Parameters:
    ///   - path: The cache folder; created if needed.
    /// - Throws: ``CacheError`` (``CacheError/Code/invalidArgument`` for an empty path, the
    ///   storage's open errors).
    ///
    /// The corresponding C function is `yyc_diskcache_open`.
    public convenience init(path: String) throws {
        try self.init(path: path, inlineThreshold: 20480)
    }

    /// Opens the disk cache at `path`, or joins the core already open for that path in this
    /// process (whose threshold then wins over `inlineThreshold`).
    ///
    /// Blocking: as ``init(path:)``.
    ///
    /// - Parameters:
    ///   - path: The cache folder; created if needed.
    ///   - inlineThreshold: Values larger than this many bytes go to files: 0 stores every
    ///     value in a file, `Int.max` every value in SQLite. A negative threshold counts as 0.
    /// - Throws: ``CacheError`` (``CacheError/Code/invalidArgument`` for an empty path,
    ///   ``CacheError/Code/busy``, ``CacheError/Code/permissionDenied``,
    ///   ``CacheError/Code/io``...).
    ///
    /// The corresponding C function is `yyc_diskcache_open`.
    public init(path: String, inlineThreshold: Int) throws {
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw CacheError.invalidArgument("the path is empty or contains NUL")
        }
        var handle: OpaquePointer?
        let threshold = MemoryCacheLimit.toC(inlineThreshold)
        let status = path.withCString { yyc_diskcache_open($0, threshold, &handle) }
        guard status == 0, let handle else { throw CacheError.lastError(status: status) }
        self.path = path
        self.inlineThreshold = MemoryCacheLimit.fromC(yyc_diskcache_inline_threshold(handle))
        self.handle = handle
        self.state = Protected(State())
    }

    deinit {
        // No call can be in flight: each one holds a strong reference to self.
        if gate.load(ordering: .acquiring) & 2 == 0 { releaseCore(handle) }
    }

    /// Drops this object's reference to the core: ends its error subscriptions first (the
    /// streams finish), while the core is still held.
    private func releaseCore(_ handle: OpaquePointer) {
        let subscriptions = state.withLock { state in
            defer {
                state.errorSubscriptions = [:]
                state.didReportErrorSubscription = nil
            }
            return state.errorSubscriptions
        }
        DiskCacheErrorHub.hub(for: handle).unsubscribe(Array(subscriptions.keys), from: handle)
        for finish in subscriptions.values { finish() }
        yyc_diskcache_release(handle)
    }

    /// Closes this object: its later calls throw ``CacheError/Code/closed`` (and
    /// ``containsValue(forKey:)-64hbb`` answers `false`). Calls already running finish normally. The
    /// shared core stays open for other objects on the path; when this was the last one, the
    /// core is closed and a new `DiskCache(path:)` opens a fresh one. Idempotent.
    ///
    /// Writes queued in ``DiskWriteMode/deferred(maxDelay:)`` mode are committed first, also
    /// while another object keeps the core open (a failure is reported to ``didReportError``
    /// and ``reportedErrors(bufferSize:)``, and the writes stay queued for the core's next
    /// commit).
    ///
    /// The corresponding C functions are `yyc_diskcache_flush` and `yyc_diskcache_release`.
    public func close() {
        _ = withOpenCore { yyc_diskcache_flush($0) }
        // With calls in flight, the last one to end releases the core.
        if gate.bitwiseOr(1, ordering: .acquiringAndReleasing).newValue == 1 { releaseOnce() }
    }

    /// The coder for non-`Data` values. Default ``JSONCacheCoder``. Per object.
    public var coder: any CacheCoder {
        get { state.withLock { $0.coder } }
        set { state.withLock { $0.coder = newValue } }
    }

    /// Names the data file of a value stored outside SQLite (larger than
    /// ``inlineThreshold``). It receives the key; `nil` or `""` means md5(key). A result with
    /// `/` or NUL, `.` or `..`, or more than 255 bytes makes the write throw
    /// ``CacheError/Code/invalidArgument`` and write nothing. Default `nil`. Per object; it is
    /// called without any lock held.
    public var fileName: (@Sendable (String) -> String?)? {
        get { state.withLock { $0.fileName } }
        set { state.withLock { $0.fileName = newValue } }
    }

    /// Runs `body` with the C core, keeping it alive even if ``close()`` runs meanwhile.
    ///
    /// - Throws: ``CacheError/Code/closed`` after ``close()``; whatever `body` throws.
    func withCore<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
        let before = gate.add(4, ordering: .acquiring).oldValue
        defer { endCall() }
        guard before & 1 == 0 else { throw CacheError.closedError }
        return try body(handle)
    }

    /// Like ``withCore(_:)``, but gives `nil` instead of throwing after ``close()``.
    func withOpenCore<R>(_ body: (OpaquePointer) -> R) -> R? {
        try? withCore(body)
    }

    private func endCall() {
        // After close(), the last call in flight releases the core.
        if gate.subtract(4, ordering: .acquiringAndReleasing).newValue == 1 { releaseOnce() }
    }

    /// Releases the core once it is closed with no call in flight: from close() or the end of
    /// the last call, whichever sees it first (a call that starts meanwhile sees it closed, and
    /// its end tries again).
    private func releaseOnce() {
        if gate.compareExchange(expected: 1, desired: 3, ordering: .acquiringAndReleasing).exchanged {
            releaseCore(handle)
        }
    }
}

extension DiskCache: CustomStringConvertible {
    /// `<DiskCache: 0x...> (name:path)` or `(path)`.
    public var description: String {
        let address = "0x" + String(UInt(bitPattern: ObjectIdentifier(self).hashValue), radix: 16)
        if let name { return "<DiskCache: \(address)> (\(name):\(path))" }
        return "<DiskCache: \(address)> (\(path))"
    }
}
