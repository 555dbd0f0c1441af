#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The async loads under way, one per disk core and key (``DiskCache/value(_:forKey:orLoad:)``):
/// callers that miss on a key join its task instead of starting another. A task removes itself
/// when it finishes (only itself: a later load of the key may have replaced it).
final class DiskCacheLoads: Sendable {
    /// A key of one core (by address: every object on the path shares the core).
    struct Slot: Hashable {
        let core: UInt
        let key: String
    }

    /// Every core's loads.
    static let shared = DiskCacheLoads()

    private let tasks = Protected<[Slot: (id: UInt64, task: Task<Data, any Error>, callers: Int)]>([:])
    private let nextID = Protected<UInt64>(0)

    /// The load of `slot` under way, or the one `start` makes (given its id) if there is none.
    func task(for slot: Slot, start: (UInt64) -> Task<Data, any Error>) -> Task<Data, any Error> {
        let id = nextID.withLock { id in
            id += 1
            return id
        }
        return tasks.withLock { tasks in
            if let running = tasks[slot] {
                tasks[slot]?.callers += 1
                return running.task
            }
            let task = start(id)
            tasks[slot] = (id, task, 1)
            return task
        }
    }

    /// How many callers await the load of `slot` under way (0: none under way). For tests.
    func callers(of slot: Slot) -> Int { tasks.withLock { $0[slot]?.callers ?? 0 } }

    /// The load `id` of `slot` finished: later callers start a new one.
    func finish(_ slot: Slot, id: UInt64) {
        tasks.withLock { tasks in
            if tasks[slot]?.id == id { tasks[slot] = nil }
        }
    }
}
