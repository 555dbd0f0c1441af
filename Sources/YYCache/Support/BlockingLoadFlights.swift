#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Single flight for the blocking loaders of ``DiskCache`` and ``Cache``
/// (`value(forKey:orLoad:)`): the first caller of a key runs the load on its own thread; callers
/// of the same key that come while it runs sleep on a condition variable (never on a cache's
/// lock) and receive its result, value or error. Callers of other keys are not delayed.
final class BlockingLoadFlights<Key: Hashable, Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `flights` and every flight's `result` are only touched while
    // `mutex` is held; a result is handed to the waiting threads (Value is Sendable).
    private final class Flight {
        var result: Result<Value, any Error>?
        var waiters = 0
    }

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let finished: UnsafeMutablePointer<pthread_cond_t>
    private var flights: [Key: Flight] = [:]

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        finished = .allocate(capacity: 1)
        finished.initialize(to: pthread_cond_t())
        precondition(pthread_mutex_init(mutex, nil) == 0 && pthread_cond_init(finished, nil) == 0)
    }

    deinit {
        pthread_cond_destroy(finished)
        pthread_mutex_destroy(mutex)
        finished.deallocate()
        mutex.deallocate()
    }

    /// How many callers wait for the load of `key` under way (0: none). For tests.
    func waiters(of key: Key) -> Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return flights[key]?.waiters ?? 0
    }

    /// Runs `load` for `key`, or waits for the run under way and returns its result.
    ///
    /// - Throws: The error of the run (this caller's or the one it waited for).
    func run(_ key: Key, _ load: () throws -> Value) throws -> Value {
        pthread_mutex_lock(mutex)
        if let flight = flights[key] {
            flight.waiters += 1
            while flight.result == nil { pthread_cond_wait(finished, mutex) }
            let result = flight.result!
            pthread_mutex_unlock(mutex)
            return try result.get()
        }
        let flight = Flight()
        flights[key] = flight
        pthread_mutex_unlock(mutex)
        let result = Result { try load() }  // no lock held
        pthread_mutex_lock(mutex)
        flight.result = result
        flights[key] = nil
        pthread_cond_broadcast(finished)
        pthread_mutex_unlock(mutex)
        return try result.get()
    }
}
