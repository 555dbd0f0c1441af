/// Single flight for the two-level cache's async loader (the async `Cache.value(forKey:orLoad:)`):
/// one task per key, which every concurrent caller awaits, so no thread of the cooperative pool
/// blocks and cancelling one caller does not cancel the load. A task removes itself when it
/// finishes (only itself: a later load of the key may have replaced it).
final class CacheAsyncLoads<Value: Sendable>: Sendable {
    private let tasks = Protected<[String: (id: UInt64, task: Task<Value, any Error>, callers: Int)]>([:])
    private let nextID = Protected<UInt64>(0)

    /// The load of `key` under way, or the one `start` makes (given its id) if there is none.
    func task(for key: String, start: (UInt64) -> Task<Value, any Error>) -> Task<Value, any Error> {
        let id = nextID.withLock { id in
            id += 1
            return id
        }
        return tasks.withLock { tasks in
            if let running = tasks[key] {
                tasks[key]?.callers += 1
                return running.task
            }
            let task = start(id)
            tasks[key] = (id, task, 1)
            return task
        }
    }

    /// How many callers await the load of `key` under way (0: none under way). For tests.
    func callers(of key: String) -> Int { tasks.withLock { $0[key]?.callers ?? 0 } }

    /// The load `id` of `key` finished: later callers start a new one.
    func finish(_ key: String, id: UInt64) {
        tasks.withLock { tasks in
            if tasks[key]?.id == id { tasks[key] = nil }
        }
    }
}
