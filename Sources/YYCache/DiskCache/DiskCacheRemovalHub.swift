import CYYCache

/// Holds one disk core's removal listener (``DiskCache/didRemoveEntry``), shared by every
/// `DiskCache` object on the core, and hands the core's removal events (the C removal
/// listener) to it.
///
/// The C listener is installed while a handler is set and removed with it, so a core without
/// one pays nothing for the keys. A hub is never freed: the core copies the listener and its
/// context under its lock and calls it after unlocking, so a call may still use the context
/// after the listener was replaced. Hubs are kept per core address (``hub(for:)``); a core
/// opened later at the same address reuses the hub, but not its handler: ``handler(of:)``
/// answers only what the core's installed listener context confirms.
final class DiskCacheRemovalHub: Sendable {
    /// The handler, read by the listener on any thread.
    private let handler = Protected<(@Sendable (String, CacheRemovalCause) -> Void)?>(nil)

    private static let hubs = Protected<[UInt: DiskCacheRemovalHub]>([:])

    /// The hub of `core`, made on first use.
    static func hub(for core: OpaquePointer) -> DiskCacheRemovalHub {
        hubs.withLock { hubs in
            let key = UInt(bitPattern: core)
            if let hub = hubs[key] { return hub }
            let hub = DiskCacheRemovalHub()
            hubs[key] = hub
            return hub
        }
    }

    /// The current handler.
    var current: (@Sendable (String, CacheRemovalCause) -> Void)? { handler.withLock { $0 } }

    /// The handler of `core` (open and held by the caller): `nil` unless the core's listener
    /// is this hub's (a handler left from an earlier core at the same address is not it).
    func handler(of core: OpaquePointer) -> (@Sendable (String, CacheRemovalCause) -> Void)? {
        guard yyc_diskcache_removal_listener_ctx(core) == Unmanaged.passUnretained(self).toOpaque()
        else { return nil }
        return current
    }

    /// Sets the handler of `core` (open and held by the caller), installing the C listener
    /// for a handler and removing it for `nil`.
    func set(_ newValue: (@Sendable (String, CacheRemovalCause) -> Void)?, on core: OpaquePointer) {
        handler.withLock { $0 = newValue }
        if newValue != nil {
            yyc_diskcache_set_removal_listener(
                core, diskCacheRemovalListener,
                Unmanaged.passUnretained(self).toOpaque())
        } else {
            yyc_diskcache_set_removal_listener(core, nil, nil)
        }
    }

    /// Passes one event to the handler (no lock held: the handler may use the cache).
    fileprivate func deliver(_ key: String, _ cause: CacheRemovalCause) {
        current?(key, cause)
    }
}

/// The C removal listener: runs with no lock of the core held, on the removing call's thread
/// or on the background worker (auto-trim).
private func diskCacheRemovalListener(
    _ ctx: UnsafeMutableRawPointer?, _ key: UnsafePointer<CChar>?,
    _ cause: yyc_removal_cause
) {
    guard let ctx, let key else { return }
    Unmanaged<DiskCacheRemovalHub>.fromOpaque(ctx).takeUnretainedValue()
        .deliver(String(cString: key), CacheRemovalCause(cValue: cause))
}
