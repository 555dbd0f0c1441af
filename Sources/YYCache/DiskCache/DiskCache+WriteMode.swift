import CYYCache

// The write mode (immediate or deferred) and the commit of deferred writes.
extension DiskCache {
    /// When writes reach the disk; shared by every object on the path. Default
    /// ``DiskWriteMode/immediate``.
    ///
    /// Setting ``DiskWriteMode/immediate`` commits the queued writes first; if that commit
    /// fails, the mode stays deferred, the writes stay queued, and the error is reported to
    /// ``didReportError`` and ``reportedErrors(bufferSize:)`` (call `flush()` to get it
    /// thrown). After ``close()`` the getter answers ``DiskWriteMode/immediate`` and the setter
    /// does nothing.
    ///
    /// Blocking: setting ``DiskWriteMode/immediate`` commits the queued writes on the calling
    /// thread (in async code, `try await flush()` first: the setter then has little or nothing to
    /// commit).
    ///
    /// The corresponding C functions are `yyc_diskcache_write_mode` and
    /// `yyc_diskcache_set_write_mode`.
    public var writeMode: DiskWriteMode {
        get {
            withOpenCore { core -> DiskWriteMode in
                var delay = 0.0
                guard yyc_diskcache_write_mode(core, &delay) == YYC_WRITE_DEFERRED else { return .immediate }
                return .deferred(maxDelay: .nanoseconds(Int64((delay * 1e9).rounded())))
            } ?? .immediate
        }
        set {
            _ = withOpenCore { core in
                switch newValue {
                case .immediate:
                    yyc_diskcache_set_write_mode(core, YYC_WRITE_IMMEDIATE, 0)
                case .deferred(let maxDelay):
                    yyc_diskcache_set_write_mode(core, YYC_WRITE_DEFERRED, Self.seconds(maxDelay))
                }
            }
        }
    }

    /// Commits every queued write now, in one transaction. Does nothing in
    /// ``DiskWriteMode/immediate`` mode.
    ///
    /// - Throws: ``CacheError`` (``CacheError/Code/closed`` after ``close()``; the commit's error,
    ///   in which case the writes stay queued for a later try).
    ///
    /// The corresponding C function is `yyc_diskcache_flush`.
    public func flush() throws {
        try withCore { core in try CacheError.check(yyc_diskcache_flush(core)) }
    }

    /// Commits every queued write; the async twin of ``flush()``.
    ///
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// The corresponding C function is `yyc_diskcache_flush`.
    public func flush() async throws {
        try await onDiskQueue { try self.flush() }
    }

    /// `duration` in seconds.
    static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
    }
}
