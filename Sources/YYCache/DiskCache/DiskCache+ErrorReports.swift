import CYYCache

// Error reports: the C core's error hook (`yyc_diskcache_set_error_hook`), for Swift users.
extension DiskCache {
    /// Called with every error and notable event the disk core reports: a corrupt value or
    /// data file found by a read (the read returns `nil` and the entry is removed), a corrupt
    /// manifest deleted and rebuilt (``CacheError/Code/corrupt``), a failure of the background
    /// auto-trim, and the errors that calls throw. Default `nil`.
    ///
    /// The reports belong to the core, like the limits: every `DiskCache` object on the path
    /// that has a handler (or a ``reportedErrors(bufferSize:)`` stream) receives the core's reports,
    /// whichever object's call found the problem. A manifest rebuilt while the folder was
    /// opened, before anyone listened, is reported to the first handler or stream when it is
    /// set. The handler runs on the thread that hit the error or on the library's background
    /// worker, with no lock held; keep it quick (it delays the call that failed). It may use
    /// the cache, but errors of those calls are reported to it too. After ``close()`` (or
    /// `deinit`) it is no longer called.
    ///
    /// The corresponding C function is `yyc_diskcache_set_error_hook`.
    public var didReportError: (@Sendable (CacheError) -> Void)? {
        get { state.withLock { $0.didReportError } }
        set {
            let old = state.withLock { state -> UInt64? in
                state.didReportError = newValue
                defer { state.didReportErrorSubscription = nil }
                if let id = state.didReportErrorSubscription { state.errorSubscriptions[id] = nil }
                return state.didReportErrorSubscription
            }
            _ = try? withCore { core in
                let hub = DiskCacheErrorHub.hub(for: core)
                if let old { hub.unsubscribe([old], from: core) }
                guard newValue != nil else { return }
                // Calls whatever handler is current, so that a report racing a change never
                // goes to a handler that was replaced.
                let id = hub.subscribe({ [weak self] error in self?.didReportError?(error) }, to: core)
                state.withLock { state in
                    state.didReportErrorSubscription = id
                    state.errorSubscriptions[id] = {}
                }
            }
        }
    }

    /// A stream of the reports ``didReportError`` receives, from now on (plus a corrupt
    /// manifest rebuilt at open when nobody listened yet). Each call makes a new stream; it
    /// keeps the newest `bufferSize` reports its consumer has not taken yet, and it finishes
    /// when this object is closed or deinitialized (at once, after ``close()``).
    ///
    /// ```swift
    /// Task {
    ///     for await error in disk.reportedErrors() where error.code == .corrupt {
    ///         log.warning("cache corruption: \(error.message)")
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - bufferSize: How many unread reports to keep (older ones are dropped). Default 64.
    /// - Returns: The stream.
    ///
    /// The corresponding C function is `yyc_diskcache_set_error_hook`.
    public func reportedErrors(bufferSize: Int = 64) -> AsyncStream<CacheError> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: CacheError.self, bufferingPolicy: .bufferingNewest(Swift.max(1, bufferSize)))
        let subscribed: Bool? = try? withCore { core in
            let hub = DiskCacheErrorHub.hub(for: core)
            let id = hub.subscribe({ continuation.yield($0) }, to: core)
            state.withLock { $0.errorSubscriptions[id] = { continuation.finish() } }
            continuation.onTermination = { [weak self] _ in self?.endErrorSubscription(id) }
            return true
        }
        if subscribed == nil { continuation.finish() }
        return stream
    }

    /// Ends subscription `id` when its stream's consumer goes away.
    private func endErrorSubscription(_ id: UInt64) {
        let wasActive = state.withLock { $0.errorSubscriptions.removeValue(forKey: id) != nil }
        guard wasActive else { return }
        _ = try? withCore { core in DiskCacheErrorHub.hub(for: core).unsubscribe([id], from: core) }
    }
}
