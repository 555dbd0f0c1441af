import Foundation
import Synchronization
import Testing

@testable import YYCache

/// A value too large to be stored inline: it is boxed.
private struct Large: Equatable, Sendable {
    var a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0, i = 0
    init(_ v: Int) { a = v }
}

/// A key type of the program's own: the cache cannot rebuild it from bytes, so it keeps it
/// with the value.
struct ProductID: CacheKey {
    var raw: UInt64
    func withCacheKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try raw.withCacheKeyBytes(body)
    }
}

/// What a removal handler was told, in order.
final class RemovalLog<Key: Sendable, Value: Sendable>: Sendable {
    let events = Protected<[(key: Key, value: Value, cause: CacheRemovalCause)]>([])
    func record(_ key: Key, _ value: Value, _ cause: CacheRemovalCause) {
        events.withLock { $0.append((key, value, cause)) }
    }
    var all: [(key: Key, value: Value, cause: CacheRemovalCause)] { events.withLock { $0 } }
    var causes: [CacheRemovalCause] { all.map(\.cause) }
    func count(_ cause: CacheRemovalCause) -> Int { all.filter { $0.cause == cause }.count }
}

/// `didRemoveValue`: every cause, once per entry, after the entry left, in every value mode and
/// under every policy (the C suite test_memory_cache_events covers threads, trims on the
/// worker and the auto-trim in depth).
@Suite struct MemoryCacheRemovalTests {
    static let policies: [EvictionPolicy] = [.lru, .sieve, .s3fifo, .tinyLFU]

    /// A cache whose values are released (and reported) before each call returns.
    static func recorded<Key: CacheKey, Value: Sendable>(
        _: Key.Type, _: Value.Type, policy: EvictionPolicy
    ) -> (MemoryCache<Key, Value>, RemovalLog<Key, Value>) {
        let cache = MemoryCache<Key, Value>(policy: policy)
        cache.releasesValuesAsynchronously = false
        cache.autoTrimPeriod = nil
        let log = RemovalLog<Key, Value>()
        cache.didRemoveValue = { log.record($0, $1, $2) }
        return (cache, log)
    }

    @Test(arguments: policies)
    func everyCauseIsReportedOnceWithItsKeyAndValue(policy: EvictionPolicy) {
        let (cache, log) = Self.recorded(String.self, Int.self, policy: policy)
        cache["a"] = 1
        cache["a"] = 2  // 1 replaced
        cache.removeValue(forKey: "a")  // 2 explicit
        cache["b"] = 3
        cache["b"] = nil  // 3 explicit
        cache.setValue(4, forKey: "c", timeToLive: .zero)
        #expect(cache["c"] == nil)  // 4 expired
        cache["d"] = 5
        cache.trim(toAge: .zero)  // 5 expired
        cache.countLimit = 1
        cache["e"] = 6
        cache["f"] = 7  // 6 evicted
        cache.countLimit = .max
        cache.trim(toCount: 0)  // 7 evicted
        cache.setValue(8, forKey: "g", cost: 5)
        cache.trim(toCost: 1)  // 8 evicted
        cache["h"] = 9
        cache.handleMemoryWarning()  // 9 memory pressure
        cache["i"] = 10
        cache.handleEnterBackground()  // 10 memory pressure
        #expect(log.all.map(\.key) == ["a", "a", "b", "c", "d", "e", "f", "g", "h", "i"])
        #expect(log.all.map(\.value) == Array(1...10))
        #expect(
            log.causes == [
                .replaced, .explicit, .explicit, .expired, .expired, .evicted, .evicted, .evicted,
                .memoryPressure, .memoryPressure,
            ])
    }

    @Test(arguments: policies)
    func removeAllReportsOneExplicitEventPerEntry(policy: EvictionPolicy) {
        let (cache, log) = Self.recorded(Int.self, Large.self, policy: policy)
        for i in 0..<100 { cache[i] = Large(i) }
        cache.removeAllValues()
        #expect(log.all.count == 100)
        #expect(log.count(.explicit) == 100)
        #expect(Set(log.all.map(\.key)) == Set(0..<100))
        #expect(log.all.allSatisfy { $0.value == Large($0.key) })
    }

    @Test(arguments: policies)
    func objectValuesAreReportedBeforeTheyAreReleased(policy: EvictionPolicy) {
        let tracker = LifetimeTracker()
        do {
            let (cache, log) = Self.recorded(String.self, Tracked.self, policy: policy)
            cache["a"] = tracker.make(1)
            cache["a"] = tracker.make(2)
            cache.removeValue(forKey: "a")
            #expect(log.all.map(\.value.id) == [1, 2])
            #expect(log.causes == [.replaced, .explicit])
            #expect(tracker.liveCount == 2)  // the log keeps them
            log.events.withLock { $0.removeAll() }
            #expect(tracker.liveCount == 0)
        }
        #expect(tracker.liveCount == 0)
    }

    @Test(arguments: policies)
    func keysOfTheProgramsOwnTypeAreReported(policy: EvictionPolicy) {
        let (cache, log) = Self.recorded(ProductID.self, Int.self, policy: policy)
        cache[ProductID(raw: 7)] = 70
        cache[ProductID(raw: 8)] = 80
        cache[ProductID(raw: 7)] = 71
        #expect(cache[ProductID(raw: 7)] == 71)
        cache.removeAllValues()
        #expect(log.all.map(\.key.raw).sorted() == [7, 7, 8])
        #expect(log.all.first { $0.cause == .replaced }?.value == 70)
    }

    @Test func theHandlerRunsAfterTheEntryLeftAndMayUseTheCache() {
        let cache = MemoryCache<String, Int>()
        cache.releasesValuesAsynchronously = false
        let seen = Protected<[Bool]>([])
        cache.didRemoveValue = { [unowned cache] key, _, cause in
            seen.withLock { $0.append(cache.containsValue(forKey: key)) }
            if cause == .explicit { cache["refilled"] = 1 }
        }
        cache["a"] = 1
        cache.removeValue(forKey: "a")
        #expect(seen.withLock { $0 } == [false])
        #expect(cache["refilled"] == 1)
        cache.didRemoveValue = nil
        cache.removeAllValues()
        #expect(seen.withLock { $0 }.count == 1)  // no handler, no event
    }

    @Test func asynchronousReleaseReportsOnTheBackgroundWorker() {
        let cache = MemoryCache<String, Int>()  // releases asynchronously by default
        let threads = Protected<[UInt]>([])
        cache.didRemoveValue = { _, _, _ in threads.withLock { $0.append(currentThreadID()) } }
        cache["a"] = 1
        cache.removeValue(forKey: "a")
        // A liveness wait: the worker is shared with every other cache (and under TSan, with
        // the 8-thread stress running in parallel, it can be seconds behind).
        #expect(eventually(timeout: .seconds(60)) { threads.withLock { $0.count } == 1 })
        #expect(threads.withLock { $0 } != [currentThreadID()])
    }

    @Test func deinitReportsNothing() {
        let log = RemovalLog<String, Int>()
        do {
            let cache = MemoryCache<String, Int>()
            cache.didRemoveValue = { log.record($0, $1, $2) }
            cache["a"] = 1
        }
        #expect(log.all.isEmpty)
    }

    @Test func everyEntryIsReportedExactlyOnceUnderEightThreads() {
        let threads = 8
        let operations = 3000
        let cache = MemoryCache<Int, Int>()
        cache.countLimit = 40
        cache.costLimit = 30
        cache.autoTrimPeriod = .milliseconds(5)
        let reported = Protected([Int](repeating: 0, count: threads * operations))
        let stored = Atomic<Int>(0)
        let events = Atomic<Int>(0)
        cache.didRemoveValue = { _, value, _ in
            reported.withLock { $0[value] += 1 }
            events.add(1, ordering: .relaxed)
        }
        onThreads(threads) { thread in
            var random = SystemRandomNumberGenerator()
            for i in 0..<operations {
                let key = Int.random(in: 0..<64, using: &random)
                let id = thread * operations + i
                switch Int.random(in: 0..<100, using: &random) {
                case 0..<45:
                    cache.setValue(id, forKey: key, cost: 1)
                    stored.add(1, ordering: .relaxed)
                case 45..<50:
                    cache.setValue(id, forKey: key, cost: 1, timeToLive: .zero)
                    stored.add(1, ordering: .relaxed)
                case 50..<77: _ = cache[key]
                case 77..<95: cache.removeValue(forKey: key)
                case 95..<98: cache.trim(toCount: Int.random(in: 0..<32, using: &random))
                default: cache.handleMemoryWarning()
                }
            }
        }
        cache.autoTrimPeriod = nil
        cache.removeAllValues()
        let total = stored.load(ordering: .relaxed)
        // The last events run on the worker: a liveness wait, not a timing threshold.
        #expect(eventually(timeout: .seconds(60)) { events.load(ordering: .relaxed) == total })
        #expect(reported.withLock { $0.allSatisfy { $0 <= 1 } })
        let removals = cache.statistics.removals.values.reduce(0, +)
        #expect(removals == total)
        #expect(cache.statistics.insertions == total)
    }
}
