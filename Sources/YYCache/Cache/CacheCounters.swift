import Synchronization

/// The two-level cache's own counters (``Cache/statistics``): reads that hit either tier or
/// missed both, stores, and loader runs. Atomic: no lock on any path.
final class CacheCounters: Sendable {
    private let hits = Atomic<Int>(0)
    private let misses = Atomic<Int>(0)
    private let insertions = Atomic<Int>(0)
    private let loads = Atomic<Int>(0)
    private let loadFailures = Atomic<Int>(0)
    private let loadNanoseconds = Atomic<Int>(0)

    /// A read served by either tier.
    func hit() { hits.add(1, ordering: .relaxed) }
    /// A read that neither tier could serve.
    func miss() { misses.add(1, ordering: .relaxed) }
    /// A value stored.
    func insertion() { insertions.add(1, ordering: .relaxed) }

    /// A finished loader run and its duration.
    func load(ok: Bool, _ duration: Duration) {
        if ok {
            loads.add(1, ordering: .relaxed)
        } else {
            loadFailures.add(1, ordering: .relaxed)
        }
        let (seconds, atto) = duration.components
        loadNanoseconds.add(
            Int(clamping: seconds * 1_000_000_000 + atto / 1_000_000_000),
            ordering: .relaxed)
    }

    /// The counters now (each exact; taken one after the other).
    func snapshot() -> CacheStatistics {
        CacheStatistics(
            hits: hits.load(ordering: .relaxed), misses: misses.load(ordering: .relaxed),
            insertions: insertions.load(ordering: .relaxed),
            loads: loads.load(ordering: .relaxed),
            loadFailures: loadFailures.load(ordering: .relaxed),
            totalLoadTime: .nanoseconds(loadNanoseconds.load(ordering: .relaxed)))
    }

    /// Sets every counter to 0.
    func reset() {
        hits.store(0, ordering: .relaxed)
        misses.store(0, ordering: .relaxed)
        insertions.store(0, ordering: .relaxed)
        loads.store(0, ordering: .relaxed)
        loadFailures.store(0, ordering: .relaxed)
        loadNanoseconds.store(0, ordering: .relaxed)
    }
}
