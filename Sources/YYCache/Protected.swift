import Foundation

/// State guarded by a lock, with `Mutex`'s `withLock` shape.
///
/// Used instead of `Synchronization.Mutex` because `Mutex` on Linux waits with raw futex
/// system calls that ThreadSanitizer does not see, so every access it guards is reported as a
/// race; `NSLock` wraps a heap-allocated pthread mutex (a stable address, as NIOLock requires),
/// which ThreadSanitizer understands. Only Swift-side state lives here (names, handlers, the
/// per-object coder and file-name function, a disk cache's open/closed state); the caches'
/// data is guarded by the C core's own mutexes.
final class Protected<State>: @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched inside `lock`.
    private let lock = NSLock()
    private var state: State

    init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with exclusive access to the state.
    ///
    /// - Parameters:
    ///   - body: Reads or changes the state; must not call back into the same lock.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
