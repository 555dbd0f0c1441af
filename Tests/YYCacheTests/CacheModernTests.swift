import Foundation
import Synchronization
import Testing

@testable import YYCache

/// The two-level cache's time to live (both tiers, back-fill keeping the remaining time),
/// loaders with single flight (64 threads, 64 tasks, a throwing loader) and statistics.
@Suite struct CacheModernTests {
    static let hour = Duration.seconds(3600)
    struct LoadFailed: Error, Equatable {}

    final class Runs: Sendable {
        let count = Protected(0)
        func increment() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    /// A memory copy's time to live runs on the monotonic clock, its disk entry's deadline on the
    /// wall clock: after a step of the wall clock the copies with a deadline are forgotten (the
    /// next read asks the disk, which decides), and copies without one stay.
    @Test func aWallClockStepForgetsTheMemoryCopiesThatHaveATimeToLive() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<String>(path: folder.path)
        try cache.setValue("timed", forKey: "timed", timeToLive: Self.hour)
        try cache.setValue("never", forKey: "never")
        #expect(try cache.value(forKey: "timed") == "timed")
        #expect(cache.memoryCache.containsValue(forKey: "timed"))
        cache.wallClock.testingWallClockShift.store(2 * 3_600_000, ordering: .relaxed)  // +2 h
        #expect(cache.containsValue(forKey: "never"))  // a read: the step is seen
        #expect(!cache.memoryCache.containsValue(forKey: "timed"))
        #expect(cache.memoryCache.containsValue(forKey: "never"))
        // The disk (on the real wall clock here) still has it: read back with its deadline.
        #expect(try cache.value(forKey: "timed") == "timed")
        #expect(cache.memoryCache.containsValue(forKey: "timed"))
        // In step again: the copy stays.
        #expect(try cache.value(forKey: "timed") == "timed")
        #expect(cache.memoryCache.containsValue(forKey: "timed"))
    }

    @Test func aTimeToLiveAppliesToBothTiers() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<String>(path: folder.path)
        try cache.setValue("gone", forKey: "gone", timeToLive: .zero)
        try cache.setValue("kept", forKey: "kept", timeToLive: Self.hour)
        try cache.setValue("never", forKey: "never", timeToLive: nil)
        #expect(cache.memoryCache.value(forKey: "gone") == nil)
        #expect(try cache.diskCache.value(String.self, forKey: "gone") == nil)
        #expect(try cache.value(forKey: "gone") == nil)
        let memoryLeft = try #require(cache.memoryCache.timeToLive(forKey: "kept"))
        let diskLeft = try #require(cache.diskCache.timeToLive(forKey: "kept"))
        #expect(memoryLeft > .seconds(3500) && diskLeft > .seconds(3500))
        #expect(cache.memoryCache.timeToLive(forKey: "never") == nil)
        #expect(cache.diskCache.timeToLive(forKey: "never") == nil)
    }

    @Test func aBackFillKeepsTheRemainingTimeToLive() async throws {
        let folder = TemporaryFolder()
        let cache = try Cache<String>(path: folder.path)
        try await cache.setValue("v", forKey: "k", timeToLive: Self.hour)
        try await cache.setValue("w", forKey: "forever", timeToLive: nil)
        cache.memoryCache.defaultTimeToLive = .zero  // a back-fill must not use it
        cache.memoryCache.removeAllValues()
        #expect(try await cache.value(forKey: "k") == "v")  // from disk, filled into memory
        let left = try #require(cache.memoryCache.timeToLive(forKey: "k"))
        #expect(left > .seconds(3500) && left <= Self.hour)
        #expect(try await cache.value(forKey: "forever") == "w")
        #expect(cache.memoryCache.value(forKey: "forever") == "w")
        #expect(cache.memoryCache.timeToLive(forKey: "forever") == nil)
        // An entry that expired on disk is not filled back (and is a miss).
        try await cache.setValue("x", forKey: "brief", timeToLive: .zero)
        #expect(try await cache.value(forKey: "brief") == nil)
    }

    @Test func sixtyFourThreadsRunOneLoad() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<String>(path: folder.path)
        let runs = Runs()
        let results = Protected<[String]>([])
        onThreads(64) { _ in
            let value = try? cache.value(forKey: "k") {
                runs.increment()
                // Held until the other 63 callers wait for this load (bounded).
                _ = eventually(timeout: .seconds(60)) { cache.flights.waiters(of: "k") == 63 }
                return "loaded"
            }
            results.withLock { $0.append(value ?? "error") }
        }
        #expect(runs.value == 1)
        #expect(results.withLock { $0 } == Array(repeating: "loaded", count: 64))
        #expect(cache.statistics.loads == runs.value)
        #expect(try cache.value(forKey: "k") == "loaded")
    }

    @Test func sixtyFourTasksRunOneLoadAndAThrowingLoaderStoresNothing() async throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        let runs = Runs()
        let failures = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    do {
                        _ = try await cache.value(forKey: "k") { () async throws -> Int in
                            runs.increment()
                            // Held until all 64 callers await this load (bounded).
                            for _ in 0..<60_000 where cache.asyncLoads.callers(of: "k") < 64 {
                                try await Task.sleep(for: .milliseconds(1))
                            }
                            throw LoadFailed()
                        }
                        return false
                    } catch {
                        return error is LoadFailed
                    }
                }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(failures == 64)
        #expect(runs.value == 1)
        #expect(await !cache.containsValue(forKey: "k"))
        let value = try await cache.value(forKey: "k") { () async throws -> Int in
            runs.increment()
            return 7
        }
        #expect(value == 7 && runs.value == 2)  // the next call loads again
        let stats = cache.statistics
        #expect(stats.loads == 1 && stats.loadFailures == 1)
        #expect(stats.insertions == 1)
    }

    @Test func statisticsCountHitsInEitherTierAndMisses() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<String>(path: folder.path)
        try cache.setValue("v", forKey: "k")
        #expect(try cache.value(forKey: "k") == "v")  // memory
        cache.memoryCache.removeAllValues()
        #expect(try cache.value(forKey: "k") == "v")  // disk
        #expect(try cache.value(forKey: "missing") == nil)
        let stats = cache.statistics
        #expect(stats.hits == 2 && stats.misses == 1 && stats.insertions == 1)
        #expect(stats.hitRatio > 0.66 && stats.hitRatio < 0.67)
        cache.resetStatistics()
        #expect(cache.statistics.hits == 0 && cache.statistics.misses == 0)
    }
}
