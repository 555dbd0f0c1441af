#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// State guarded by a lock, with `Mutex`'s `withLock` shape.
///
/// Used instead of `Synchronization.Mutex` because `Mutex` on Linux waits with raw futex
/// system calls that ThreadSanitizer does not see, so every access it guards is reported as a
/// race; a heap-allocated pthread mutex (a stable address, as NIOLock and `NSLock` use) is one
/// ThreadSanitizer understands, and needs no Foundation. Only Swift-side state lives here
/// (names, handlers, the per-object coder and file-name function, a disk cache's open/closed
/// state); the caches' data is guarded by the C core's own mutexes.
final class Protected<State>: @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched while `mutex` is held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    // Unchecked: only `withLock` touches it, under the mutex, so Swift's dynamic exclusivity
    // check (a swift_beginAccess call per lock, about 75 instructions) can never fire.
    @exclusivity(unchecked) private var state: State

    init(_ state: State) {
        self.state = state
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    ///
    /// - Parameters:
    ///   - body: Reads or changes the state; must not call back into the same lock.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
