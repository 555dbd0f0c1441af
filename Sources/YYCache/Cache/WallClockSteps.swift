import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Tells a ``Cache`` when the wall clock stepped (an NTP correction, a date set by hand).
///
/// A memory copy's time to live counts on the monotonic clock; its disk entry's deadline is a
/// wall-clock time. The two agree while the wall clock runs with the monotonic one (a slew
/// changes the rate of both), so their difference moves only when the wall clock steps; then the
/// copies' deadlines no longer match the disk's, and the cache forgets the copies that have one
/// (the next read of each asks the disk, which decides by the wall clock).
///
/// Costs one relaxed load per memory read until the cache first holds a copy with a time to
/// live (``watch()``), then two coarse clock reads.
final class WallClockSteps: Sendable {
    /// The wall clock minus the monotonic clock, in milliseconds, when the copies were last in
    /// step with the disk.
    private let inStep: Atomic<Int64>
    private let watching = Atomic<Bool>(false)
    /// Serialises the resynchronisations (a reader that sees a step waits for the one under way).
    private let resync = Protected(())

    /// Testing: milliseconds added to the wall clock as this watch reads it.
    let testingWallClockShift = Atomic<Int64>(0)

    /// A difference that moved by no more than this is no step (the coarse clocks' resolution is
    /// 1 to 10 ms, and both are read from one timekeeping update).
    static let toleranceMilliseconds: Int64 = 20

    init() {
        inStep = Atomic(0)
        inStep.store(offset(), ordering: .relaxed)
    }

    /// The cache now holds (or may hold) a memory copy with a time to live.
    func watch() {
        if !watching.load(ordering: .relaxed) { watching.store(true, ordering: .relaxed) }
    }

    /// Runs `forget` (which drops the memory copies that have a time to live) if the wall clock
    /// stepped since the copies were last in step; a reader that arrives meanwhile waits for it.
    func resynchronize(_ forget: () -> Void) {
        guard watching.load(ordering: .relaxed), hasStepped() else { return }
        resync.withLock { _ in
            guard hasStepped() else { return }  // (another reader did it)
            let now = offset()
            forget()
            inStep.store(now, ordering: .releasing)
        }
    }

    private func hasStepped() -> Bool {
        abs(offset() - inStep.load(ordering: .acquiring)) > Self.toleranceMilliseconds
    }

    private func offset() -> Int64 {
        var wall = timespec()
        var monotonic = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &wall)
        clock_gettime(CLOCK_MONOTONIC_COARSE, &monotonic)
        let seconds = Int64(wall.tv_sec) - Int64(monotonic.tv_sec)
        let nanoseconds = Int64(wall.tv_nsec) - Int64(monotonic.tv_nsec)
        return seconds * 1000 + nanoseconds / 1_000_000
            + testingWallClockShift.load(ordering: .relaxed)
    }
}
