import CYYCache

// Loading with single flight (memory_cache.h "Loading with single flight").
extension MemoryCache {
    /// How a loader call starts: a hit, the caller's own load, or another caller's load to wait
    /// for (whose waiter the C core now holds), or a failure of the lookup itself.
    enum LoadStart {
        case hit(Value)
        case load(OpaquePointer)
        case join
        case failed(Int32)
    }

    /// `yyc_memcache_begin_load` for `key`, with `waiter` as the callback's context if the
    /// caller joins another caller's load. `blocking`: the caller will block its thread.
    func beginLoad(forKey key: Key, waiter: MemoryCacheLoadWaiter, blocking: Bool) -> LoadStart {
        let handle = self.handle
        let context = waiter.register()
        var flight: OpaquePointer?
        var start: LoadStart
        if Self.storesValuesInline {
            start = .join
            withUnsafeTemporaryAllocation(
                byteCount: MemoryCacheStorage<Value>.inlineSize, alignment: MemoryLayout<Value>.alignment
            ) { buffer in
                let bytes = buffer.baseAddress!
                let status = key.withCacheKeyBytes {
                    yyc_memcache_begin_load(
                        handle, $0.baseAddress, $0.count, bytes, memoryCacheLoaded, context, blocking, &flight)
                }
                // A hit copied the value into our buffer (a copy we own).
                start =
                    status == 0 ? .hit(bytes.assumingMemoryBound(to: Value.self).move()) : Self.started(status, flight)
            }
        } else {
            var out: UnsafeMutableRawPointer?
            let status = key.withCacheKeyBytes {
                yyc_memcache_begin_load(
                    handle, $0.baseAddress, $0.count, &out, memoryCacheLoaded, context, blocking, &flight)
            }
            start = status == 0 ? .hit(Self.takeValue(retained: out!)) : Self.started(status, flight)
        }
        if case .join = start {} else { MemoryCacheLoadWaiter.unregister(context) }  // no callback
        return start
    }

    /// The start for a status other than a hit.
    private static func started(_ status: Int32, _ flight: OpaquePointer?) -> LoadStart {
        if status == Int32(bitPattern: YYC_NOTFOUND.rawValue) {
            if let flight { return .load(flight) }
            return .join
        }
        return .failed(status)
    }

    /// Ends the caller's load: stores the value (with `cost` and the default time to live) and
    /// hands it to the waiters, or hands them the loader's error and stores nothing.
    func finishLoad(_ flight: OpaquePointer, key: Key, result: Result<Value, any Error>, cost: Int, took: Duration) {
        let handle = self.handle
        let cCost = cost > 0 ? cost : 0
        let (seconds, attoseconds) = took.components
        let nanoseconds =
            UInt64(clamping: max(0, seconds)) &* 1_000_000_000 &+ UInt64(clamping: max(0, attoseconds / 1_000_000_000))
        switch result {
        case .success(let value):
            if Self.storesValuesInline {
                // A copy moves into the cache (the C core destroys it if the store fails).
                withUnsafeTemporaryAllocation(
                    byteCount: MemoryCacheStorage<Value>.inlineSize, alignment: MemoryLayout<Value>.alignment
                ) { buffer in
                    let bytes = buffer.baseAddress!
                    bytes.initializeMemory(as: Value.self, to: value)
                    _ = yyc_memcache_finish_load_inline(handle, flight, 0, bytes, cCost, nil, nanoseconds)
                }
            } else {
                let object = Self.object(for: value, key: key)
                withExtendedLifetime(object) {
                    _ = yyc_memcache_finish_load(
                        handle, flight, 0, Unmanaged.passUnretained(object).toOpaque(), cCost, nil, nanoseconds)
                }
            }
        case .failure(let error):
            let failure = MemoryCacheLoadFailure(error)
            let status = CacheError.Code.io.rawValue  // any failure status: the waiters get `error`
            withExtendedLifetime(failure) {
                let pointer = Unmanaged.passUnretained(failure).toOpaque()
                if Self.storesValuesInline {
                    _ = yyc_memcache_finish_load_inline(handle, flight, status, nil, 0, pointer, nanoseconds)
                } else {
                    _ = yyc_memcache_finish_load(handle, flight, status, nil, 0, pointer, nanoseconds)
                }
            }
        }
    }

    /// The error of a lookup that failed before any load (`.recursiveLoad`: the loader asked for
    /// its own key; `.outOfMemory`).
    static func loadStartError(_ status: Int32) -> CacheError {
        CacheError(code: CacheError.Code(rawValue: status), message: String(cString: yyc_strerror(status)))
    }

    /// The value for `key`; on a miss, runs `load` and stores its value (with `cost` and
    /// ``defaultTimeToLive``), with single flight: concurrent callers that miss on the same key
    /// run `load` once, and all receive its value or its error (the loader's own error,
    /// unwrapped). An error stores nothing: the next call runs `load` again. Callers of other
    /// keys are never delayed, and no one waits on the cache's lock while `load` runs. An
    /// expired entry is a miss (reported ``CacheRemovalCause/expired``).
    ///
    /// A caller that finds another caller's load under way blocks its thread until it finishes.
    /// `load` runs on the calling thread with no lock held and may use the cache, but asking
    /// for its own key from inside `load` fails at once with ``CacheError/Code/recursiveLoad``
    /// (it would wait for itself); the key stays usable.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - cost: The cost of a loaded value (for ``costLimit``); a negative cost counts as 0.
    ///   - load: Makes the value; its error is rethrown to every caller waiting for it.
    /// - Returns: The stored or loaded value.
    /// - Throws: The error of `load` (this caller's, or the one it waited for), or a
    ///   ``CacheError`` (`.recursiveLoad`, `.outOfMemory`).
    ///
    /// The corresponding C functions are `yyc_memcache_begin_load`, `yyc_memcache_finish_load`
    /// and `yyc_memcache_finish_load_inline` (C callers that block use
    /// `yyc_memcache_get_or_load`).
    // Disfavored so that in async code `try await value(forKey:) { ... }` binds to the async
    // twin even for a closure without `await` (Swift's rule for twins; sync code still gets
    // this one, since an async call cannot be chosen there).
    @_disfavoredOverload
    public func value(forKey key: Key, cost: Int = 0, orLoad load: () throws -> Value) throws -> Value {
        defer { releaseHandedBackValues() }
        let marker = loadMarker(for: key)
        try LoadScope.check(marker)
        let waiter = MemoryCacheBlockingLoadWaiter<Key, Value>()
        switch beginLoad(forKey: key, waiter: waiter, blocking: true) {
        case .hit(let value):
            return value
        case .failed(let status):
            throw Self.loadStartError(status)
        case .join:
            return try waiter.wait().get()
        case .load(let flight):
            let start = ContinuousClock.now
            let result = Result { try LoadScope.run(marker) { try load() } }
            finishLoad(flight, key: key, result: result, cost: cost, took: start.duration(to: .now))
            return try result.get()
        }
    }

    /// The marker of this cache's load of `key` (``LoadScope``).
    func loadMarker(for key: Key) -> LoadScope.Marker {
        key.withCacheKeyBytes { LoadScope.Marker(owner: self, key: $0) }
    }
}

extension MemoryCache where Value: Sendable {
    /// The value for `key`; on a miss, awaits `load` and stores its value, with single flight
    /// (as the synchronous `value(forKey:cost:orLoad:)`, with which it shares loads): concurrent
    /// callers that miss on the same key run `load` once and all receive its value or its error;
    /// an error stores nothing.
    ///
    /// The load runs in a task of its own, and waiting never blocks a thread of the cooperative
    /// pool. A cancelled caller returns `CancellationError` at once (unless the value has already
    /// arrived); the load goes on for the others and its value is stored; when every caller has
    /// been cancelled, the load's task is cancelled too. A loader that asks for its own key
    /// fails at once with ``CacheError/Code/recursiveLoad`` (see "Expiry and loading").
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - cost: The cost of a loaded value (for ``costLimit``); a negative cost counts as 0.
    ///   - load: Makes the value.
    /// - Returns: The stored or loaded value.
    /// - Throws: The error of `load` (this caller's, or the one it waited for),
    ///   `CancellationError` for a cancelled caller, or a ``CacheError`` (`.recursiveLoad`,
    ///   `.outOfMemory`).
    ///
    /// The corresponding C functions are `yyc_memcache_begin_load`, `yyc_memcache_finish_load`
    /// and `yyc_memcache_finish_load_inline`.
    public func value(
        forKey key: Key, cost: Int = 0, orLoad load: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let marker = loadMarker(for: key)
        try LoadScope.check(marker)
        let waiter = MemoryCacheAsyncLoadWaiter<Key, Value>()
        switch beginLoad(forKey: key, waiter: waiter, blocking: false) {
        case .hit(let value):
            return value
        case .failed(let status):
            throw Self.loadStartError(status)
        case .join:
            // Another caller's load: an async one's flight (so that this caller counts for its
            // cancellation), else a blocking caller's, delivered by the C core.
            if let value = try await asyncLoads.joinIfRunning(key) { return value }
            return try await waiter.value()
        case .load(let flight):
            // This caller runs the load, in a task of its own that it awaits like the others.
            let flightBits = UInt(bitPattern: flight)
            return try await asyncLoads.value(for: key, replacing: true) { [self] in
                let start = ContinuousClock.now
                let result: Result<Value, any Error>
                do {
                    result = .success(try await LoadScope.run(marker) { try await load() })
                } catch {
                    result = .failure(error)
                }
                finishLoad(
                    OpaquePointer(bitPattern: flightBits)!, key: key, result: result, cost: cost,
                    took: start.duration(to: .now))
                return try result.get()
            }
        }
    }
}
