import CYYCache

/// Hands one disk core's error reports (the C error hook) to the Swift subscribers on that
/// core: ``DiskCache/didReportError`` handlers and ``DiskCache/reportedErrors()`` streams of
/// every `DiskCache` object sharing the core.
///
/// The C hook is installed while the core has at least one subscriber and removed with the
/// last one, so that the corruption events the core keeps while no hook is set (a manifest
/// rebuilt during the open) reach the first subscriber: the core delivers them when the hook is
/// set, on the subscribing thread.
///
/// A hub is never freed: the core copies the hook and its context under its lock and runs the
/// hook after unlocking, so a call may still use the context after the hook was replaced. Hubs
/// are kept per core address (``hub(for:)``); a core opened later at the same address reuses
/// the hub, whose subscribers all left before the old core was released.
final class DiskCacheErrorHub: Sendable {
    struct State {
        var subscribers: [UInt64: @Sendable (CacheError) -> Void] = [:]
    }

    /// The subscribers, read by the hook on any thread.
    private let state = Protected(State())
    /// Serializes installing and removing the C hook (held while the core delivers the events
    /// kept for the first subscriber; the hook itself only takes `state`).
    private let installLock = Protected(())

    private static let hubs = Protected<[UInt: DiskCacheErrorHub]>([:])
    private static let nextID = Protected<UInt64>(0)

    /// The hub of `core`, made on first use.
    static func hub(for core: OpaquePointer) -> DiskCacheErrorHub {
        hubs.withLock { hubs in
            let key = UInt(bitPattern: core)
            if let hub = hubs[key] { return hub }
            let hub = DiskCacheErrorHub()
            hubs[key] = hub
            return hub
        }
    }

    /// Adds `deliver` as a subscriber of `core` (which must be open and held by the caller);
    /// it may be called at once, on this thread, with the core's kept corruption events.
    ///
    /// - Returns: The subscription's id, for ``unsubscribe(_:from:)``.
    func subscribe(_ deliver: @escaping @Sendable (CacheError) -> Void, to core: OpaquePointer) -> UInt64 {
        let id = Self.nextID.withLock { id in
            id += 1
            return id
        }
        installLock.withLock { _ in
            let first = state.withLock { state in
                state.subscribers[id] = deliver
                return state.subscribers.count == 1
            }
            if first {
                yyc_diskcache_set_error_hook(core, diskCacheErrorHook, Unmanaged.passUnretained(self).toOpaque())
            }
        }
        return id
    }

    /// Removes the subscriptions `ids` of `core` (still held by the caller); removing the last
    /// one removes the C hook. A reported error may still reach them while this runs.
    func unsubscribe(_ ids: [UInt64], from core: OpaquePointer) {
        guard !ids.isEmpty else { return }
        installLock.withLock { _ in
            let last = state.withLock { state in
                let before = state.subscribers.count
                for id in ids { state.subscribers[id] = nil }
                return before > 0 && state.subscribers.isEmpty
            }
            if last { yyc_diskcache_set_error_hook(core, nil, nil) }
        }
    }

    /// Passes `error` to every subscriber (outside the lock: a subscriber may subscribe or
    /// unsubscribe).
    fileprivate func deliver(_ error: CacheError) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for deliver in subscribers { deliver(error) }
    }
}

/// The C error hook: runs with no lock of the core held, on the failing call's thread or on
/// the background worker (auto-trim).
private func diskCacheErrorHook(_ ctx: UnsafeMutableRawPointer?, _ error: UnsafePointer<yyc_error>?) {
    guard let ctx, let error else { return }
    Unmanaged<DiskCacheErrorHub>.fromOpaque(ctx).takeUnretainedValue().deliver(CacheError(reported: error.pointee))
}

extension CacheError {
    /// The error a C error hook reports.
    init(reported details: yyc_error) {
        var details = details
        let message = withUnsafeBytes(of: &details.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        self.init(
            code: Code(rawValue: details.code),
            sqliteCode: details.sqlite_code != 0 ? details.sqlite_code : nil,
            message: message.isEmpty ? String(cString: yyc_strerror(details.code)) : message)
    }
}
