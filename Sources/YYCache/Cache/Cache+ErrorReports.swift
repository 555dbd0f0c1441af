// Error reports of the two-level cache: its disk tier's (the memory tier reports none).
extension Cache {
    /// Called with every error and notable event the disk tier reports (a corrupt value or
    /// data file found by a read, which then misses; a corrupt manifest rebuilt; a failed
    /// auto-trim; the errors calls throw). The same as ``diskCache``'s
    /// ``DiskCache/didReportError``: see there for the thread and the rules. Default `nil`.
    public var didReportError: (@Sendable (CacheError) -> Void)? {
        get { diskCache.didReportError }
        set { diskCache.didReportError = newValue }
    }

    /// A stream of the reports ``didReportError`` receives: ``diskCache``'s
    /// ``DiskCache/reportedErrors(bufferSize:)``.
    ///
    /// - Parameters:
    ///   - bufferSize: How many unread reports to keep (older ones are dropped). Default 64.
    /// - Returns: The stream; it finishes when the disk tier is closed or deinitialized.
    public func reportedErrors(bufferSize: Int = 64) -> AsyncStream<CacheError> {
        diskCache.reportedErrors(bufferSize: bufferSize)
    }
}
