import CYYCache
import Dispatch

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Async twins, one per synchronous method (same labels and defaults): in async code they are
// the ones chosen, and they need `await` (see "Synchronous and async spellings" on DiskCache).
// Each checks for cancellation before it starts, then runs the blocking call on a
// dispatch queue behind a continuation, so the cooperative pool never waits for a lock or a
// busy timeout. The exception is a read that can be answered at once (yyc_diskcache_try_get: the
// core's lock is free and the value is there): it runs in the calling task, since a hop to the
// queue and back costs more than the read. Coding (CPU work, not I/O) runs in the calling task.
// Sequential awaits are ordered; calls from concurrent tasks run concurrently, serialized by the
// core's lock.
extension DiskCache {
    /// The queue that runs the blocking halves of the async twins (shared by every DiskCache).
    static let asyncQueue = DispatchQueue(label: "yycache.disk", qos: .utility, attributes: .concurrent)

    /// Runs `work` on ``asyncQueue`` and returns its result.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before `work` starts; whatever
    ///   `work` throws.
    func onDiskQueue<R: Sendable>(_ work: @escaping @Sendable () throws -> R) async throws -> R {
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { continuation in
            DiskCache.asyncQueue.async {
                continuation.resume(with: Result { try work() })
            }
        }
    }

    /// Whether `key` has a value, without changing the access time; runs off the cooperative
    /// pool. A task cancelled before the call starts gets `false`.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: `true` if a value is stored; `false` on a miss, an error or after ``close()``.
    ///
    /// The corresponding C function is `yyc_diskcache_contains`.
    public func containsValue(forKey key: String) async -> Bool {
        (try? await onDiskQueue { self.containsValue(forKey: key) }) ?? false
    }

    /// The bytes stored for `key`; the async twin of ``data(forKey:)``.
    ///
    /// A hit that needs no lock another thread holds is read in the calling task, without a hop
    /// (as fast as the synchronous call); a miss, or a read that would wait (for a write, a trim,
    /// another process's lock), runs on a dispatch queue off the cooperative pool.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: The bytes, or `nil` on a miss.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// Like the synchronous call, it runs on the caller's executor (a hit needs no hop).
    ///
    /// The corresponding C functions are `yyc_diskcache_try_get`, then `yyc_diskcache_get`.
    nonisolated(nonsending)
        public func data(forKey key: String) async throws -> Data?
    {
        try Task.checkCancellation()
        if let hit = dataAtOnce(forKey: key) { return hit }
        return try await onDiskQueue { try self.data(forKey: key) }
    }

    /// The bytes stored for `key` if they can be read without waiting for a lock; `nil` for
    /// anything else (a miss included: the caller asks again the way that may wait).
    func dataAtOnce(forKey key: String) -> Data? {
        readAtOnce(forKey: key, timeToLive: false)?.0
    }

    /// ``dataAtOnce(forKey:)`` with the entry's remaining time to live in seconds (`.infinity`:
    /// none), as `dataAndTimeToLive(forKey:)` gives them.
    func dataAndTimeToLiveAtOnce(forKey key: String) -> (Data, Double)? {
        readAtOnce(forKey: key, timeToLive: true)
    }

    private func readAtOnce(forKey key: String, timeToLive: Bool) -> (Data, Double)? {
        guard CStrings.isStorableKey(key) else { return nil }
        return withOpenCore { core -> (Data, Double)? in
            var bytes: UnsafeMutableRawPointer?
            var count = 0
            var seconds = Double.infinity
            let hit = key.withCString { key in
                timeToLive
                    ? yyc_diskcache_try_get(core, key, &bytes, &count, &seconds)
                    : yyc_diskcache_try_get(core, key, &bytes, &count, nil)
            }
            return hit ? (CStrings.takeData(bytes, count: count), seconds) : nil
        } ?? nil
    }

    /// Stores bytes for `key`; the async twin of ``setData(_:forKey:extendedData:)``.
    ///
    /// - Parameters:
    ///   - data: The bytes, or `nil` to remove the value.
    ///   - key: A non-empty key without NUL bytes.
    ///   - extendedData: Extra bytes stored with the value.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// The corresponding C function is `yyc_diskcache_set_with_filename`.
    public func setData(_ data: Data?, forKey key: String, extendedData: Data? = nil) async throws {
        try await onDiskQueue { try self.setData(data, forKey: key, extendedData: extendedData) }
    }

    /// The decoded value for `key`; the async twin of ``value(_:forKey:)``.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - key: The key.
    /// - Returns: The value, or `nil` on a miss.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError`` (including
    ///   ``CacheError/Code/decoding``).
    ///
    /// The corresponding C function is `yyc_diskcache_get`.
    nonisolated(nonsending)
        public func value<T: Decodable>(_ type: T.Type, forKey key: String) async throws -> T?
    {
        guard let data = try await data(forKey: key) else { return nil }
        return try decode(type, from: data)
    }

    /// Stores an encoded value for `key`; the async twin of ``setValue(_:forKey:extendedData:)``.
    ///
    /// - Parameters:
    ///   - value: The value, or `nil` to remove it.
    ///   - key: A non-empty key without NUL bytes.
    ///   - extendedData: Extra bytes stored with the value.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError`` (including
    ///   ``CacheError/Code/encoding``).
    ///
    /// The corresponding C function is `yyc_diskcache_set_with_filename`.
    public func setValue<T: Encodable>(_ value: T?, forKey key: String, extendedData: Data? = nil) async throws {
        guard let value else {
            try await removeValue(forKey: key)
            return
        }
        try Task.checkCancellation()
        let data = try encode(value)
        try await setData(data, forKey: key, extendedData: extendedData)
    }

    /// The extended data stored with `key`'s value; the async twin of ``extendedData(forKey:)``.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: The extended data, or `nil`.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// The corresponding C function is `yyc_diskcache_get_extended_data`.
    public func extendedData(forKey key: String) async throws -> Data? {
        try await onDiskQueue { try self.extendedData(forKey: key) }
    }

    /// Removes `key`'s value; the async twin of ``removeValue(forKey:)``.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// The corresponding C function is `yyc_diskcache_remove`.
    public func removeValue(forKey key: String) async throws {
        try await onDiskQueue { try self.removeValue(forKey: key) }
    }

    /// Removes every value; the async twin of ``removeAllValues()``.
    ///
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// The corresponding C function is `yyc_diskcache_remove_all`.
    public func removeAllValues() async throws {
        try await onDiskQueue { try self.removeAllValues() }
    }

    /// Removes every value in batches (rows and files), reporting progress between batches.
    ///
    /// Slower than ``removeAllValues()-31f0j``, but the core's lock is released between batches, so
    /// other calls interleave.
    ///
    /// - Parameters:
    ///   - progress: Receives the number removed so far and the total at the start, with
    ///     counts that increase to `(total, total)`. It runs on a background thread.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    /// - Complexity: O(*n*).
    ///
    /// The corresponding C function is `yyc_diskcache_remove_all_progress`.
    public func removeAllValues(progress: @escaping @Sendable (_ removed: Int, _ total: Int) -> Void) async throws {
        try await onDiskQueue {
            try self.withCore { core in
                let box = ProgressCallback(progress)
                let status = withExtendedLifetime(box) {
                    yyc_diskcache_remove_all_progress(
                        core, diskCacheProgress, Unmanaged.passUnretained(box).toOpaque())
                }
                try CacheError.check(status)
            }
        }
    }

    /// The number of stored values; the async twin of ``totalCount()``.
    ///
    /// - Returns: The count.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// The corresponding C function is `yyc_diskcache_total_count`.
    public func totalCount() async throws -> Int {
        try await onDiskQueue { try self.totalCount() }
    }

    /// The total size of the stored values in bytes; the async twin of ``totalCost()``.
    ///
    /// - Returns: The size.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// The corresponding C function is `yyc_diskcache_total_cost`.
    public func totalCost() async throws -> Int {
        try await onDiskQueue { try self.totalCost() }
    }

    /// The async twin of ``trim(toCount:)``.
    ///
    /// - Parameters:
    ///   - count: The number of values to keep at most.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// The corresponding C function is `yyc_diskcache_trim_to_count`.
    public func trim(toCount count: Int) async throws {
        try await onDiskQueue { try self.trim(toCount: count) }
    }

    /// The async twin of ``trim(toCost:)``.
    ///
    /// - Parameters:
    ///   - cost: The total size to keep at most, in bytes.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// The corresponding C function is `yyc_diskcache_trim_to_cost`.
    public func trim(toCost cost: Int) async throws {
        try await onDiskQueue { try self.trim(toCost: cost) }
    }

    /// The async twin of the synchronous `trim(toAge:)` with a `Duration`.
    ///
    /// - Parameters:
    ///   - age: The time since the last access to keep values for.
    /// - Throws: `CancellationError` if cancelled before it starts; ``CacheError``.
    ///
    /// The corresponding C function is `yyc_diskcache_trim_to_age`.
    public func trim(toAge age: Duration) async throws {
        try await onDiskQueue { try self.trim(toAge: age) }
    }

    /// The async twin of the deprecated `trim(toAge:)` that takes seconds.
    @available(*, deprecated, message: "use trim(toAge:) with a Duration")
    public func trim(toAge age: TimeInterval) async throws {
        try await onDiskQueue { try self.trim(toAge: age) }
    }
}

/// Carries a progress closure through the C core's `void *ctx`.
private final class ProgressCallback {
    let call: @Sendable (Int, Int) -> Void
    init(_ call: @escaping @Sendable (Int, Int) -> Void) { self.call = call }
}

private func diskCacheProgress(_ ctx: UnsafeMutableRawPointer?, _ removed: Int64, _ total: Int64) {
    guard let ctx else { return }
    Unmanaged<ProgressCallback>.fromOpaque(ctx).takeUnretainedValue().call(Int(removed), Int(total))
}
