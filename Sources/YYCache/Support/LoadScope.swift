/// The loads that the current task (or thread, outside tasks) is running, so that a loader
/// that asks for its own key fails at once with ``CacheError/Code/recursiveLoad`` instead of
/// waiting for itself forever. One rule for the three caches' loaders, blocking and async: a
/// load's marker is bound (as a task-local value) while its loader runs, so the loader's own
/// calls, the child tasks it awaits and the tasks it creates see it; a caller that finds its key
/// marked fails before it joins any flight, and the key stays usable.
enum LoadScope {
    /// One key of one cache (or disk core).
    struct Marker: Hashable, Sendable {
        /// The cache object or disk core, by address.
        let owner: UInt
        let key: [UInt8]

        init(owner: AnyObject, key: some Sequence<UInt8>) {
            self.owner = UInt(bitPattern: Unmanaged.passUnretained(owner).toOpaque())
            self.key = Array(key)
        }

        init(core: UInt, key: String) {
            self.owner = core
            self.key = Array(key.utf8)
        }
    }

    @TaskLocal static var running: [Marker] = []

    /// Throws ``CacheError/Code/recursiveLoad`` if the caller runs inside the load of `marker`.
    static func check(_ marker: Marker) throws {
        if running.contains(marker) { throw CacheError.recursiveLoadError }
    }

    /// Runs `body` (a loader) marked as the load of `marker`.
    static func run<R>(_ marker: Marker, _ body: () throws -> R) rethrows -> R {
        try $running.withValue(running + [marker]) { try body() }
    }

    /// Runs `body` (a loader) marked as the load of `marker`.
    static func run<R>(_ marker: Marker, _ body: () async throws -> R) async rethrows -> R {
        try await $running.withValue(running + [marker]) { try await body() }
    }
}

extension CacheError {
    /// The error of a loader that asked for the key it is loading.
    static var recursiveLoadError: CacheError {
        CacheError(
            code: .recursiveLoad, message: "a loader asked for the key it is loading, which would wait for itself")
    }
}
