/// Single flight for the async loaders (`DiskCache.value(_:forKey:orLoad:)` and the async
/// `Cache.value(forKey:orLoad:)`): one task per key, which every concurrent caller awaits, so no
/// thread of the cooperative pool blocks and cancelling one caller does not cancel the load. A
/// task removes itself when it finishes (only itself: a later load of the key may have replaced
/// it). Thread-safe; its lock is held only to look up or record a task, never while one runs.
final class AsyncLoadFlights<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Flight {
        let id: UInt64
        let task: Task<Value, any Error>
        var callers: Int
    }
    private struct State {
        var flights: [Key: Flight] = [:]
        var lastID: UInt64 = 0
    }
    private let state = Protected(State())

    /// The load of `key` under way, or the one `start` makes (given its id) if there is none.
    func task(for key: Key, start: (UInt64) -> Task<Value, any Error>) -> Task<Value, any Error> {
        state.withLock { state in
            if let running = state.flights[key] {
                state.flights[key]?.callers += 1
                return running.task
            }
            state.lastID += 1
            let task = start(state.lastID)
            state.flights[key] = Flight(id: state.lastID, task: task, callers: 1)
            return task
        }
    }

    /// How many callers await the load of `key` under way (0: none under way). For tests.
    func callers(of key: Key) -> Int { state.withLock { $0.flights[key]?.callers ?? 0 } }

    /// The load `id` of `key` finished: later callers start a new one.
    func finish(_ key: Key, id: UInt64) {
        state.withLock { state in
            if state.flights[key]?.id == id { state.flights[key] = nil }
        }
    }
}
