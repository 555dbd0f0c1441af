import Foundation
import Synchronization
import Testing

@testable import YYCache

private struct Unavailable: Error, Equatable {
    let code: Int
}

/// A counter tasks and threads may share.
private final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

/// A flag tasks may share.
private final class Flag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .relaxed) }
    var isSet: Bool { flag.load(ordering: .relaxed) }
}

/// `value(forKey:cost:orLoad:)`, sync and async: single flight with 64 callers, errors that are
/// not stored, expired entries, cancelled waiters, a loader asking for its own key.
@Suite struct MemoryCacheLoadingTests {
    static let policies: [EvictionPolicy] = [.lru, .sieve, .s3fifo, .tinyLFU]

    /// Waits (without blocking a pool thread) until every caller has missed, so that all of them
    /// overlap the one load.
    static func waitForMisses<Key, Value>(_ cache: MemoryCache<Key, Value>, _ n: Int) async {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(60)
        while cache.statistics.misses < n && clock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
    }

    @Test(arguments: policies)
    func sixtyFourTasksRunOneLoadAndGetItsValue(policy: EvictionPolicy) async throws {
        let cache = MemoryCache<String, String>(policy: policy)
        let runs = Counter()
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    try await cache.value(forKey: "k", cost: 3) {
                        runs.add()
                        await Self.waitForMisses(cache, 64)
                        return "loaded"
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(runs.value == 1)
        #expect(results.count == 64 && results.allSatisfy { $0 == "loaded" })
        #expect(cache["k"] == "loaded")
        #expect(cache.totalCost == 3)
        #expect(cache.statistics.loads == 1 && cache.statistics.misses == 64)
    }

    @Test(arguments: policies)
    func aThrowingLoaderGivesSixtyFourErrorsStoresNothingAndRunsAgainNextTime(policy: EvictionPolicy) async throws {
        let cache = MemoryCache<Int, Data>(policy: policy)
        let runs = Counter()
        let errors = await withTaskGroup(of: (any Error)?.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    do {
                        _ = try await cache.value(forKey: 1) {
                            runs.add()
                            await Self.waitForMisses(cache, 64)
                            throw Unavailable(code: 503)
                        }
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(runs.value == 1)
        #expect(errors.count == 64)
        #expect(errors.allSatisfy { ($0 as? Unavailable) == Unavailable(code: 503) })  // unwrapped
        #expect(cache.totalCount == 0)
        let value = try await cache.value(forKey: 1) {
            runs.add()
            return Data([1])
        }
        #expect(value == Data([1]))
        #expect(runs.value == 2)
        #expect(cache.statistics.loadFailures == 1 && cache.statistics.loads == 1)
    }

    @Test func sixtyFourThreadsShareOneSynchronousLoad() {
        let cache = MemoryCache<String, Int>()
        let runs = Counter()
        let results = Protected<[Int]>([])
        onThreads(64) { _ in
            let value = try? cache.value(forKey: "k") {
                runs.add()
                _ = eventually(timeout: .seconds(60)) { cache.statistics.misses >= 64 }
                return 42
            }
            results.withLock { $0.append(value ?? -1) }
        }
        #expect(runs.value == 1)
        #expect(results.withLock { $0 } == Array(repeating: 42, count: 64))
    }

    @Test func synchronousCallersReceiveTheLoadersOwnError() {
        let cache = MemoryCache<String, Int>()
        let runs = Counter()
        let failures = Counter()
        onThreads(64) { _ in
            do {
                _ = try cache.value(forKey: "k") {
                    runs.add()
                    _ = eventually(timeout: .seconds(60)) { cache.statistics.misses >= 64 }
                    throw Unavailable(code: 1)
                }
            } catch let error as Unavailable where error.code == 1 {
                failures.add()
            } catch {}
        }
        #expect(runs.value == 1)
        #expect(failures.value == 64)
        #expect(!cache.containsValue(forKey: "k"))
        #expect((try? cache.value(forKey: "k") { 5 }) == 5)  // loads again
    }

    @Test(arguments: policies)
    func anExpiredEntryFoundByALoaderIsReportedExpiredAndTheLoadedValueStored(policy: EvictionPolicy) throws {
        let cache = MemoryCache<String, Int>(policy: policy)
        cache.releasesValuesAsynchronously = false
        let causes = Protected<[CacheRemovalCause]>([])
        cache.didRemoveValue = { _, value, cause in
            #expect(value == 1)
            causes.withLock { $0.append(cause) }
        }
        cache.setValue(1, forKey: "k", timeToLive: .zero)
        #expect(try cache.value(forKey: "k") { 2 } == 2)
        #expect(causes.withLock { $0 } == [.expired])
        #expect(cache["k"] == 2)
        #expect(try cache.value(forKey: "k") { 3 } == 2)  // a hit now
    }

    @Test func aCancelledWaiterGetsCancellationErrorAndTheLoadGoesOn() async throws {
        let cache = MemoryCache<String, Int>()
        let release = Flag()
        let loader = Task {
            try await cache.value(forKey: "k") {
                while !release.isSet { try? await Task.sleep(for: .milliseconds(1)) }
                return 7
            }
        }
        await Self.waitForMisses(cache, 1)
        let waiter = Task { try await cache.value(forKey: "k") { 0 } }
        await Self.waitForMisses(cache, 2)  // it joined the load
        waiter.cancel()
        let cancelled: Result<Int, any Error> = await waiter.result
        #expect(throws: CancellationError.self) { try cancelled.get() }
        let patient = Task { try await cache.value(forKey: "k") { 0 } }
        await Self.waitForMisses(cache, 3)
        release.set()
        #expect(try await loader.value == 7)
        #expect(try await patient.value == 7)
        #expect(cache["k"] == 7)
        #expect(cache.statistics.loads == 1)
    }

    @Test func aLoaderAskingForItsOwnKeyIsRefused() throws {
        let cache = MemoryCache<String, Int>()
        let refusal = Protected<(any Error)?>(nil)
        let value = try cache.value(forKey: "outer") { () throws -> Int in
            do {
                _ = try cache.value(forKey: "outer") { 0 }
            } catch {
                refusal.withLock { $0 = error }
            }
            _ = try cache.value(forKey: "inner") { 1 }  // other keys work
            return 2
        }
        #expect((refusal.withLock { $0 } as? CacheError)?.code == .recursiveLoad)
        #expect(value == 2)
        #expect(cache["inner"] == 1)
    }

    @Test func objectBoxedAndCustomKeyCachesLoad() async throws {
        let tracker = LifetimeTracker()
        do {
            let objects = MemoryCache<String, Tracked>()
            objects.releasesValuesAsynchronously = false
            #expect(try await objects.value(forKey: "a") { tracker.make(1) }.id == 1)
            #expect(try await objects.value(forKey: "a") { tracker.make(2) }.id == 1)
            let custom = MemoryCache<ProductID, Int>()
            #expect(try await custom.value(forKey: ProductID(raw: 3)) { 30 } == 30)
            let sync: () throws -> Int = { try custom.value(forKey: ProductID(raw: 4)) { 40 } }
            #expect(try sync() == 40)  // in a synchronous closure the synchronous twin
            #expect(custom[ProductID(raw: 3)] == 30)
        }
        #expect(tracker.liveCount == 0)
    }
}
