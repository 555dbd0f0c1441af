import Foundation
import Synchronization
import Testing

@testable import YYCache

/// Every synchronous method of `DiskCache` and `Cache` in API.md has an async twin with the
/// same labels and defaults, and `try await` binds to it.
///
/// Two proofs. At build time: this file calls each twin with `await` (every default-argument
/// spelling too); a missing twin would bind the call to the synchronous method and the compiler
/// would warn "no 'async' operations occur within 'await' expression", which the Makefile's
/// `-warnings-as-errors` turns into a failed build. At run time: the calls run in a cancelled
/// task, where every async twin throws `CancellationError` before it starts (containsValue
/// answers `false`) while a synchronous method would run and succeed.
///
/// (`KVStorage` has no async twins: it is not thread-safe nor `Sendable`, so it cannot be
/// handed to another thread; use `DiskCache`, or an actor of your own, in async code.)
@Suite struct AsyncTwinsTests {
    /// Runs `body` in a task that is cancelled before it starts; returns how many of the calls
    /// `body` made threw `CancellationError`, counted by `body` through `count`.
    private func inCancelledTask(
        _ body: @escaping @Sendable (_ count: @Sendable (() async throws -> Void) async -> Void) async -> Void
    ) async -> (calls: Int, cancelled: Int) {
        let calls = Atomic<Int>(0)
        let cancelled = Atomic<Int>(0)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await body { call in
                calls.add(1, ordering: .relaxed)
                do { try await call() } catch is CancellationError {
                    cancelled.add(1, ordering: .relaxed)
                } catch {}
            }
        }
        await task.value
        return (calls.load(ordering: .relaxed), cancelled.load(ordering: .relaxed))
    }

    @Test func everyDiskCacheTwinIsBoundByAwait() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try await disk.setData(Data("v".utf8), forKey: "k")
        let data = Data("w".utf8)
        let (calls, cancelled) = await inCancelledTask { count in
            await count { _ = try await disk.data(forKey: "k") }
            await count { try await disk.setData(data, forKey: "n") }
            await count { try await disk.setData(data, forKey: "n", extendedData: data) }
            await count { try await disk.setData(nil, forKey: "k") }
            await count { _ = try await disk.value(Int.self, forKey: "k") }
            await count { try await disk.setValue(1, forKey: "n") }
            await count { try await disk.setValue(1, forKey: "n", extendedData: data) }
            await count { try await disk.setValue(Int?.none, forKey: "k") }
            await count { _ = try await disk.extendedData(forKey: "k") }
            await count { try await disk.removeValue(forKey: "k") }
            await count { try await disk.removeAllValues() }
            await count { try await disk.removeAllValues(progress: { _, _ in }) }
            await count { _ = try await disk.totalCount() }
            await count { _ = try await disk.totalCost() }
            await count { try await disk.trim(toCount: 0) }
            await count { try await disk.trim(toCost: 0) }
            await count { try await disk.trim(toAge: .zero) }
            await count { if await disk.containsValue(forKey: "k") { throw CacheError.closedError } }
        }
        #expect(calls == 18)
        #expect(cancelled == 17)  // containsValue does not throw: it answered false
        // Nothing ran: the value is still there, nothing new was written.
        #expect(try await disk.data(forKey: "k") == Data("v".utf8))
        #expect(try await disk.totalCount() == 1)
    }

    @Test func everyCacheTwinIsBoundByAwait() async throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        try await cache.setValue(7, forKey: "k")
        cache.memoryCache.removeAllValues()  // so that a read would go to disk
        let (calls, cancelled) = await inCancelledTask { count in
            await count { _ = try await cache.value(forKey: "k") }
            await count { try await cache.setValue(1, forKey: "n") }
            await count { try await cache.setValue(nil, forKey: "k") }
            await count { try await cache.removeValue(forKey: "k") }
            await count { try await cache.removeAllValues() }
            await count { try await cache.diskCache.trim(toCount: 0) }
            await count { if await cache.containsValue(forKey: "k") { throw CacheError.closedError } }
        }
        #expect(calls == 7)
        #expect(cancelled == 6)
        #expect(try await cache.value(forKey: "k") == 7)
        #expect(try await cache.diskCache.totalCount() == 1)
    }

    @Test func awaitInAnInferredAsyncClosureBindsTheTwinToo() async throws {
        // `{ try await ... }` is async because of its `await`: the twin is chosen there too.
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try await disk.setData(Data("v".utf8), forKey: "k")
        let trim = { try await disk.trim(toCount: 0) }
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await trim()
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(try await disk.totalCount() == 1)
    }
}
