import Foundation
import Synchronization
import Testing

@testable import YYCache

/// The loaders of the three caches (`MemoryCache`, `DiskCache`, `Cache`) seen through one shape,
/// so that one test checks one rule on all of them.
private struct Loaders: Sendable {
    let kind: String
    let load: @Sendable (String, @escaping @Sendable () async throws -> Int) async throws -> Int
    let loadBlocking: @Sendable (String, () throws -> Int) throws -> Int
    let stored: @Sendable (String) throws -> Int?
    /// How many async callers await the load of a key under way.
    let callers: @Sendable (String) -> Int

    static let kinds = ["MemoryCache", "DiskCache", "Cache"]

    init(_ kind: String, folder: borrowing TemporaryFolder) throws {
        self.kind = kind
        switch kind {
        case "MemoryCache":
            let cache = MemoryCache<String, Int>()
            load = { key, body in try await cache.value(forKey: key, orLoad: body) }
            loadBlocking = { key, body in try cache.value(forKey: key, orLoad: body) }
            stored = { cache.value(forKey: $0) }
            callers = { cache.asyncLoads.callers(of: $0) }
        case "DiskCache":
            let disk = try DiskCache(path: folder.path)
            load = { key, body in try await disk.value(Int.self, forKey: key, orLoad: body) }
            loadBlocking = { key, body in try disk.value(Int.self, forKey: key, orLoad: body) }
            stored = { try disk.value(Int.self, forKey: $0) }
            let core = try disk.withCore { UInt(bitPattern: $0) }
            callers = { DiskCacheLoads.shared.callers(of: DiskCacheLoads.Slot(core: core, key: $0)) }
        default:
            let cache = try Cache<Int>(path: folder.path)
            load = { key, body in try await cache.value(forKey: key, orLoad: body) }
            loadBlocking = { key, body in try cache.value(forKey: key, orLoad: body) }
            stored = { try cache.value(forKey: $0) }
            callers = { cache.asyncLoads.callers(of: $0) }
        }
    }
}

/// A gate a loader waits at (cooperatively: a cancelled task leaves it with `CancellationError`).
private final class Gate: Sendable {
    private let open = Atomic<Bool>(false)
    private let enteredCount = Atomic<Int>(0)
    private let cancellation = Atomic<Bool>(false)

    /// How many loads reached the gate.
    var entered: Int { enteredCount.load(ordering: .sequentiallyConsistent) }
    /// Whether a load left the gate cancelled.
    var sawCancellation: Bool { cancellation.load(ordering: .sequentiallyConsistent) }

    func release() { open.store(true, ordering: .sequentiallyConsistent) }

    /// Waits until released; records a cancellation on the way out.
    func wait() async throws {
        enteredCount.add(1, ordering: .sequentiallyConsistent)
        do {
            while !open.load(ordering: .sequentiallyConsistent) { try await Task.sleep(for: .milliseconds(1)) }
        } catch {
            cancellation.store(true, ordering: .sequentiallyConsistent)
            throw error
        }
    }
}

/// The result of `task`, or `nil` if it has not finished within a minute: a liveness wait for
/// calls that hung before they were fixed (the task is then left behind).
private func outcome<T: Sendable>(of task: Task<T, any Error>) async -> Result<T, any Error>? {
    let done = Mutex<Result<T, any Error>?>(nil)
    let watcher = Task {
        let result: Result<T, any Error>
        do { result = .success(try await task.value) } catch { result = .failure(error) }
        done.withLock { $0 = result }
    }
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(60)
    while clock.now < deadline {
        if let result = done.withLock({ $0 }) { return result }
        try? await Task.sleep(for: .milliseconds(2))
    }
    _ = watcher
    return nil
}

/// The code of the ``CacheError`` that `result` failed with, if it did.
private func code<T>(of result: Result<T, any Error>) -> CacheError.Code? {
    guard case .failure(let error) = result else { return nil }
    return (error as? CacheError)?.code
}

/// The result of `body` run on a thread of its own (not the cooperative pool's, which a call that
/// hung would starve), or `nil` if it has not finished within a minute (the thread is then left
/// behind).
private func outcome<T: Sendable>(onThread body: @escaping @Sendable () throws -> T) async -> Result<T, any Error>? {
    let done = Mutex<Result<T, any Error>?>(nil)
    let thread = Thread {
        let result = Result { try body() }
        done.withLock { $0 = result }
    }
    thread.start()
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(60)
    while clock.now < deadline {
        if let result = done.withLock({ $0 }) { return result }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return nil
}

/// Polls `condition` without blocking a pool thread, for up to a minute.
private func eventuallyAsync(_ condition: () throws -> Bool) async rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(60)
    while clock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return try condition()
}

/// The rules every loader follows: a loader that asks for its own key fails at once with
/// ``CacheError/Code/recursiveLoad`` and leaves the key usable; a cancelled waiter returns
/// `CancellationError` at once while the load goes on for the others and is stored; a load
/// whose every waiter was cancelled is cancelled.
@Suite struct LoaderRulesTests {
    @Test(arguments: Loaders.kinds)
    func anAsyncLoaderAskingForItsOwnKeyFailsAtOnceAndTheKeyStaysUsable(kind: String) async throws {
        let folder = TemporaryFolder()
        let loaders = try Loaders(kind, folder: folder)
        let recursive = Task { try await loaders.load("k") { try await loaders.load("k") { 1 } } }
        let result = try #require(await outcome(of: recursive), "the recursive load hung")
        #expect(code(of: result) == .recursiveLoad)
        #expect(try loaders.stored("k") == nil)
        #expect(try await loaders.load("k") { 2 } == 2)
        #expect(try loaders.stored("k") == 2)
    }

    @Test(arguments: Loaders.kinds)
    func aBlockingLoaderAskingForItsOwnKeyFailsAtOnceAndTheKeyStaysUsable(kind: String) async throws {
        let folder = TemporaryFolder()
        let loaders = try Loaders(kind, folder: folder)
        let result = try #require(
            await outcome(onThread: { try loaders.loadBlocking("k") { try loaders.loadBlocking("k") { 1 } } }),
            "the recursive load hung")
        #expect(code(of: result) == .recursiveLoad)
        #expect(try loaders.loadBlocking("k") { 2 } == 2)
        // Through an async loader too (a blocking call inside an async load of the same key).
        let mixed = Task { try await loaders.load("m") { try loaders.loadBlocking("m") { 1 } } }
        let mixedResult = try #require(await outcome(of: mixed), "the mixed recursive load hung")
        #expect(code(of: mixedResult) == .recursiveLoad)
        #expect(try await loaders.load("m") { 3 } == 3)
    }

    @Test(arguments: Loaders.kinds)
    func aCancelledWaiterReturnsAtOnceAndTheLoadGoesOnForTheOthers(kind: String) async throws {
        let folder = TemporaryFolder()
        let loaders = try Loaders(kind, folder: folder)
        let gate = Gate()
        defer { gate.release() }
        // The first caller starts the load; the second joins it.
        let first = Task {
            try await loaders.load("k") {
                try await gate.wait()
                return 7
            }
        }
        #expect(await eventuallyAsync { gate.entered == 1 })
        let second = Task { try await loaders.load("k") { 0 } }
        #expect(await eventuallyAsync { loaders.callers("k") == 2 })
        // The caller whose call started the load is cancelled: it returns at once...
        first.cancel()
        let firstResult = try #require(await outcome(of: first), "the cancelled caller waited for the load")
        #expect(throws: CancellationError.self) { try firstResult.get() }
        #expect(!gate.sawCancellation)
        // ... and the load goes on for the other caller, and its value is stored.
        gate.release()
        let secondResult = try #require(await outcome(of: second))
        #expect(try secondResult.get() == 7)
        #expect(try loaders.stored("k") == 7)
        #expect(gate.entered == 1)
    }

    @Test(arguments: Loaders.kinds)
    func aLoadWhoseEveryWaiterWasCancelledIsCancelled(kind: String) async throws {
        let folder = TemporaryFolder()
        let loaders = try Loaders(kind, folder: folder)
        let gate = Gate()
        defer { gate.release() }
        let callers = (0..<3).map { _ in
            Task {
                try await loaders.load("k") {
                    try await gate.wait()
                    return 7
                }
            }
        }
        #expect(await eventuallyAsync { gate.entered == 1 })
        for caller in callers { caller.cancel() }
        for caller in callers {
            let result = try #require(await outcome(of: caller), "a cancelled caller waited for the load")
            #expect(throws: CancellationError.self) { try result.get() }
        }
        #expect(await eventuallyAsync { gate.sawCancellation })
        #expect(try loaders.stored("k") == nil)
        // A later caller loads again.
        #expect(try await loaders.load("k") { 8 } == 8)
    }
}
