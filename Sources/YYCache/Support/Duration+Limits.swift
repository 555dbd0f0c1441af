/// The `Duration?` limits of the Swift API (``MemoryCache/maximumAge``,
/// ``DiskCache/autoTrimPeriod`` and the like) and the C core's seconds, where "no limit" is
/// `.greatestFiniteMagnitude` (or infinity, or NaN) and "paused" is `<= 0`.
enum DurationLimit {
    /// An age limit for the C core: `.greatestFiniteMagnitude` for `nil`, at least 0.
    static func limitSeconds(_ duration: Duration?) -> Double {
        guard let duration else { return .greatestFiniteMagnitude }
        return max(0, duration.seconds)
    }

    /// An age limit from the C core: `nil` for no limit.
    static func limitDuration(seconds: Double) -> Duration? {
        seconds.isFinite && seconds < .greatestFiniteMagnitude ? .seconds(seconds) : nil
    }

    /// A trim period for the C core: 0 (paused) for `nil`.
    static func periodSeconds(_ duration: Duration?) -> Double {
        guard let duration else { return 0 }
        return max(0, duration.seconds)
    }

    /// A trim period from the C core: `nil` when paused.
    static func periodDuration(seconds: Double) -> Duration? {
        seconds > 0 && seconds.isFinite ? .seconds(seconds) : nil
    }
}
