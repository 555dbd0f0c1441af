// The memory copies and the wall clock. A memory copy with a time to live expires on the
// monotonic clock, its disk entry on the wall clock (the disk's deadline, which decides). When the
// wall clock steps (WallClockSteps), the cache forgets every memory copy that has a time to live
// before its next memory read, so no read serves a copy the disk has let expire (after a forward
// step) and none keeps a copy past the deadline it was given (after a backward one, the disk's
// remaining time comes back with the next back-fill). Copies without one stay.
extension Cache {
    /// The memory tier's value for `key`, after the wall-clock check.
    func memoryValue(forKey key: String) -> Value? {
        forgetTimedCopiesIfTheWallClockStepped()
        return memoryCache.value(forKey: key)
    }

    /// Whether the memory tier has `key`, after the wall-clock check.
    func memoryContains(_ key: String) -> Bool {
        forgetTimedCopiesIfTheWallClockStepped()
        return memoryCache.containsValue(forKey: key)
    }

    private func forgetTimedCopiesIfTheWallClockStepped() {
        wallClock.resynchronize {
            for key in memoryCache.keys where memoryCache.timeToLive(forKey: key) != nil {
                memoryCache.removeValue(forKey: key)
            }
        }
    }
}
