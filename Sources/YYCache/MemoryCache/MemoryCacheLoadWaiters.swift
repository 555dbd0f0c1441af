import CYYCache

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A caller of ``MemoryCache/value(forKey:cost:orLoad:)`` waiting for another caller's load of
/// the same key: the context of the C core's `yyc_memcache_loaded_fn`, which the thread that
/// finishes the load calls once with the result (the value borrowed for the call).
/// Non-generic, because a `@convention(c)` function cannot mention generic parameters; the
/// subclasses keep the result and wake their caller (a blocked thread, or a suspended task).
///
/// The C core holds one reference (taken in ``register()``) until it has called back.
class MemoryCacheLoadWaiter: @unchecked Sendable {
    // @unchecked Sendable: the subclasses' state is guarded by `mutex`.
    let mutex: UnsafeMutablePointer<pthread_mutex_t>
    let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        precondition(pthread_mutex_init(mutex, nil) == 0 && pthread_cond_init(condition, nil) == 0)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// The result of the load: `status` 0 with `value` (borrowed), or the failure's status and
    /// the loader's error object (a ``MemoryCacheLoadFailure``, borrowed), if it gave one.
    func deliver(status: Int32, value: UnsafeMutableRawPointer?, error: UnsafeMutableRawPointer?) {}

    /// The context for `yyc_memcache_begin_load`: a reference the C core owns until it calls
    /// back (``unregister(_:)`` drops it if the caller did not join).
    final func register() -> UnsafeMutableRawPointer { Unmanaged.passRetained(self).toOpaque() }

    /// Drops the reference ``register()`` made, when `yyc_memcache_begin_load` did not join.
    static func unregister(_ context: UnsafeMutableRawPointer) {
        Unmanaged<MemoryCacheLoadWaiter>.fromOpaque(context).release()
    }

    /// The error a failed load gives its waiters: the loader's own, or one for the C status.
    static func failure(status: Int32, error: UnsafeMutableRawPointer?) -> any Error {
        if let error { return Unmanaged<MemoryCacheLoadFailure>.fromOpaque(error).takeUnretainedValue().error }
        return CacheError(code: CacheError.Code(rawValue: status), message: String(cString: yyc_strerror(status)))
    }
}

/// The `yyc_memcache_loaded_fn` of every ``MemoryCacheLoadWaiter``: delivers, then drops the C
/// core's reference.
let memoryCacheLoaded: yyc_memcache_loaded_fn = { ctx, status, value, error in
    let waiter = Unmanaged<MemoryCacheLoadWaiter>.fromOpaque(ctx!)
    waiter.takeUnretainedValue().deliver(status: status, value: value, error: error)
    waiter.release()
}

/// The loader's error on its way to the waiters (the C core passes it as an opaque pointer,
/// borrowed from the loading caller for the callbacks).
final class MemoryCacheLoadFailure {
    let error: any Error
    init(_ error: any Error) { self.error = error }
}

/// A blocked thread waiting for a load (the synchronous loader call).
final class MemoryCacheBlockingLoadWaiter<Key: CacheKey, Value>: MemoryCacheLoadWaiter, @unchecked Sendable {
    // @unchecked Sendable: `outcome` is guarded by `mutex`. A non-Sendable Value only reaches
    // another thread if the cache itself was shared unsoundly.
    private var outcome: Result<Value, any Error>?

    override func deliver(status: Int32, value: UnsafeMutableRawPointer?, error: UnsafeMutableRawPointer?) {
        let result: Result<Value, any Error> =
            status == 0
            ? .success(MemoryCache<Key, Value>.copyValue(borrowed: value!))
            : .failure(Self.failure(status: status, error: error))
        pthread_mutex_lock(mutex)
        outcome = result
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Blocks until the load has finished, then returns its result.
    func wait() -> Result<Value, any Error> {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while outcome == nil { pthread_cond_wait(condition, mutex) }
        return outcome!
    }
}

/// A suspended task waiting for a load (the async loader call). Cancelling the task resumes it
/// with `CancellationError` at once; the load goes on for the others.
final class MemoryCacheAsyncLoadWaiter<Key: CacheKey, Value: Sendable>: MemoryCacheLoadWaiter, @unchecked Sendable {
    // @unchecked Sendable: every stored property is guarded by `mutex`.
    private var outcome: Result<Value, any Error>?
    private var continuation: CheckedContinuation<Value, any Error>?
    private var finished = false  // the continuation was resumed (or the task cancelled first)

    override func deliver(status: Int32, value: UnsafeMutableRawPointer?, error: UnsafeMutableRawPointer?) {
        let result: Result<Value, any Error> =
            status == 0
            ? .success(MemoryCache<Key, Value>.copyValue(borrowed: value!))
            : .failure(Self.failure(status: status, error: error))
        resume(with: result)
    }

    /// Resumes the task with `result`, or keeps it for ``value()``; only the first result counts.
    private func resume(with result: Result<Value, any Error>) {
        pthread_mutex_lock(mutex)
        if finished {
            pthread_mutex_unlock(mutex)
            return
        }
        guard let continuation else {
            outcome = result
            pthread_mutex_unlock(mutex)
            return
        }
        self.continuation = nil
        finished = true
        pthread_mutex_unlock(mutex)
        continuation.resume(with: result)
    }

    /// Suspends until the load has finished (or the task is cancelled), without blocking the
    /// thread.
    func value() async throws -> Value {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                pthread_mutex_lock(mutex)
                if let outcome, !finished {
                    finished = true
                    pthread_mutex_unlock(mutex)
                    continuation.resume(with: outcome)
                } else if finished {
                    pthread_mutex_unlock(mutex)
                    continuation.resume(throwing: CancellationError())
                } else {
                    self.continuation = continuation
                    pthread_mutex_unlock(mutex)
                }
            }
        } onCancel: {
            self.cancel()
        }
    }

    private func cancel() {
        pthread_mutex_lock(mutex)
        if outcome != nil || finished {  // the result is in: it wins
            pthread_mutex_unlock(mutex)
            return
        }
        let continuation = self.continuation
        self.continuation = nil
        finished = true
        pthread_mutex_unlock(mutex)
        continuation?.resume(throwing: CancellationError())
    }
}
