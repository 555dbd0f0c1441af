/// Single flight for the async loaders of ``MemoryCache``, ``DiskCache`` and ``Cache``
/// (`value(forKey:orLoad:)`): one load per key runs in a task of its own, which every concurrent
/// caller of the key awaits, so no thread of the cooperative pool blocks.
///
/// The cancellation rule of every async loader (stated for users in the "Expiry and loading"
/// article) lives here:
/// - a cancelled caller returns `CancellationError` at once; it does not wait for the load;
/// - the load goes on for the callers that remain, and its value is stored;
/// - when every caller of a load has been cancelled, the load's task is cancelled, and the next
///   caller of the key starts a new load.
///
/// Thread-safe; the lock is held only to look up or record a flight or a caller, never while a
/// load runs or a caller resumes.
final class AsyncLoadFlights<Key: Hashable & Sendable, Value>: @unchecked Sendable {
    // @unchecked Sendable: all state is behind `state`'s lock; values are handed from the
    // load's task to its callers only where `Value: Sendable` (the methods that start loads).

    /// One load under way: its task and the callers still waiting for it.
    private struct Flight {
        let key: Key
        var task: Task<Void, Never>?
        var callers: Set<UInt64>
    }

    private struct State {
        /// Every flight with callers, by id.
        var flights: [UInt64: Flight] = [:]
        /// The flight later callers of a key join.
        var current: [Key: UInt64] = [:]
        /// Callers suspended until their flight delivers.
        var suspended: [UInt64: CheckedContinuation<Value, any Error>] = [:]
        /// Outcomes that came before their caller suspended.
        var early: [UInt64: Result<Value, any Error>] = [:]
        var lastID: UInt64 = 0
    }
    private let state = Protected(State())

    /// How many callers await the load of `key` under way (0: none under way). For tests.
    func callers(of key: Key) -> Int {
        state.withLock { state in state.current[key].flatMap { state.flights[$0]?.callers.count } ?? 0 }
    }

    /// The caller `waiter` of flight `id` was cancelled: it leaves with `CancellationError`,
    /// and the flight's task is cancelled if it was the last caller.
    private func leave(_ waiter: UInt64, flight id: UInt64) {
        let (continuation, abandoned) = state.withLock {
            state -> (CheckedContinuation<Value, any Error>?, Task<Void, Never>?) in
            guard var flight = state.flights[id], flight.callers.remove(waiter) != nil else {
                return (nil, nil)  // its outcome is already in
            }
            var abandoned: Task<Void, Never>?
            if flight.callers.isEmpty {
                state.flights[id] = nil
                if state.current[flight.key] == id { state.current[flight.key] = nil }
                abandoned = flight.task
            } else {
                state.flights[id] = flight
            }
            guard let continuation = state.suspended.removeValue(forKey: waiter) else {
                state.early[waiter] = .failure(CancellationError())
                return (nil, abandoned)
            }
            return (continuation, abandoned)
        }
        continuation?.resume(throwing: CancellationError())
        abandoned?.cancel()
    }
}

extension AsyncLoadFlights where Value: Sendable {
    /// Joins the load of `key` under way or, if there is none (or with `replacing`: always),
    /// starts `load` in a task of its own, and awaits its outcome under the rule above.
    ///
    /// - Throws: The load's error, or `CancellationError` when the caller is cancelled.
    func value(
        for key: Key, replacing: Bool = false, load: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        guard let value = try await join(key, replacing: replacing, start: load) else {
            preconditionFailure("a flight was started")
        }
        return value.value
    }

    /// Joins the load of `key` under way and awaits it; `nil` if there is none.
    func joinIfRunning(_ key: Key) async throws -> Value? {
        try await join(key, replacing: false, start: nil)?.value
    }

    /// A value in a box, so that `nil` means "no flight" even when `Value` is optional.
    struct Delivered: Sendable {
        let value: Value
    }

    private func join(
        _ key: Key, replacing: Bool, start: (@Sendable () async throws -> Value)?
    ) async throws -> Delivered? {
        try Task.checkCancellation()
        let joined = state.withLock { state -> (flight: UInt64, waiter: UInt64)? in
            state.lastID += 1
            let waiter = state.lastID
            if !replacing, let id = state.current[key] {
                state.flights[id]?.callers.insert(waiter)
                return (id, waiter)
            }
            guard let start else { return nil }
            state.lastID += 1
            let id = state.lastID
            // The task cannot finish before the flight is recorded: finish takes this lock.
            let task = Task { [self] in
                let result: Result<Value, any Error>
                do {
                    result = .success(try await start())
                } catch {
                    result = .failure(error)
                }
                finish(id, with: result)
            }
            state.flights[id] = Flight(key: key, task: task, callers: [waiter])
            state.current[key] = id
            return (id, waiter)
        }
        guard let joined else { return nil }
        let value = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let early = state.withLock { state -> Result<Value, any Error>? in
                    if let early = state.early.removeValue(forKey: joined.waiter) { return early }
                    state.suspended[joined.waiter] = continuation
                    return nil
                }
                if let early { continuation.resume(with: early) }
            }
        } onCancel: {
            leave(joined.waiter, flight: joined.flight)
        }
        return Delivered(value: value)
    }

    /// The load `id` finished: its callers get `result`, and later callers start a new load.
    private func finish(_ id: UInt64, with result: Result<Value, any Error>) {
        let continuations = state.withLock { state -> [CheckedContinuation<Value, any Error>] in
            guard let flight = state.flights.removeValue(forKey: id) else { return [] }  // every caller left
            if state.current[flight.key] == id { state.current[flight.key] = nil }
            var continuations: [CheckedContinuation<Value, any Error>] = []
            for waiter in flight.callers {
                if let continuation = state.suspended.removeValue(forKey: waiter) {
                    continuations.append(continuation)
                } else {
                    state.early[waiter] = result
                }
            }
            return continuations
        }
        for continuation in continuations { continuation.resume(with: result) }
    }
}
