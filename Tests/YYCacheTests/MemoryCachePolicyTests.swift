import Foundation
import Testing

@testable import YYCache

/// A value too large to be stored inline: it is boxed.
private struct Large: Equatable {
    var a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0, i = 0
    init(_ v: Int) { a = v }
}

@Suite struct MemoryCachePolicyTests {
    static let policies: [EvictionPolicy] = [.lru, .sieve, .s3fifo, .tinyLFU]

    @Test func policyIsLRUByDefaultAndKeptAsChosen() {
        #expect(MemoryCache<String, Int>().policy == .lru)
        #expect(MemoryCache<String, Int>(name: "n").policy == .lru)
        for policy in Self.policies {
            let cache = MemoryCache<String, Int>(name: "p", policy: policy)
            #expect(cache.policy == policy)
            #expect(cache.name == "p")
            #expect(MemoryCache<String, Int>(policy: policy).policy == policy)
        }
    }

    @Test(arguments: policies)
    func everyPolicyKeepsItsCountLimitInEveryValueMode(policy: EvictionPolicy) {
        let tracker = LifetimeTracker()
        do {
            let inline = MemoryCache<Int, Int>(policy: policy)
            let objects = MemoryCache<Int, Tracked>(policy: policy)
            let boxed = MemoryCache<Int, Large>(policy: policy)
            for cache in [inline.countLimitSetter, objects.countLimitSetter, boxed.countLimitSetter] {
                cache(10)
            }
            objects.releasesValuesAsynchronously = false
            for i in 0..<100 {
                inline.setValue(i, forKey: i)
                objects.setValue(tracker.make(i), forKey: i)
                boxed.setValue(Large(i), forKey: i)
                _ = inline.value(forKey: i / 2)
                _ = objects.value(forKey: i / 2)
                _ = boxed.value(forKey: i / 2)
            }
            #expect(inline.totalCount == 10)
            #expect(objects.totalCount == 10)
            #expect(boxed.totalCount == 10)
            #expect(inline.value(forKey: 99) == 99)
            #expect(boxed.value(forKey: 99) == Large(99))
            #expect(tracker.liveCount == 10)  // the evicted ones were released before set returned
            objects.trim(toCount: 3)
            #expect(objects.totalCount == 3)
            #expect(tracker.liveCount == 3)
        }
        #expect(tracker.liveCount == 0)
    }

    @Test func sieveKeepsAVisitedEntryThroughOneSweep() {
        let cache = MemoryCache<String, Int>(policy: .sieve)
        cache.countLimit = 3
        cache["a"] = 1
        cache["b"] = 2
        cache["c"] = 3
        _ = cache["a"]
        cache["d"] = 4
        #expect(cache.containsValue(forKey: "a"))
        #expect(!cache.containsValue(forKey: "b"))
    }

    @Test func s3fifoKeepsAFrequentKeyThroughAScanWhereLRULosesIt() {
        for policy in [EvictionPolicy.s3fifo, .lru] {
            let cache = MemoryCache<String, Int>(policy: policy)
            cache.countLimit = 20
            cache["hot"] = 0
            for _ in 0..<3 { _ = cache["hot"] }
            for i in 0..<1000 { cache["scan\(i)"] = i }
            #expect(cache.containsValue(forKey: "hot") == (policy == .s3fifo))
            #expect(cache.totalCount == 20)
        }
    }
}

extension MemoryCachePolicyTests {
    @Test func tinyLFURejectsOneTimeKeysSoHotKeysSurviveAScanAndCountsTheRejectionsAsEvictions() {
        let cache = MemoryCache<String, Int>(policy: .tinyLFU)
        cache.countLimit = 100
        for round in 0..<4 {
            for h in 0..<50 {
                if round == 0 { cache["hot\(h)"] = h } else { _ = cache["hot\(h)"] }
            }
        }
        for i in 0..<3000 {
            cache["scan\(i)"] = i
            if i % 50 == 49 {
                for h in 0..<50 where cache["hot\(h)"] == nil { cache["hot\(h)"] = h }
            }
        }
        let kept = (0..<50).filter { cache.containsValue(forKey: "hot\($0)") }.count
        #expect(kept >= 45)  // admission is by estimated frequency: almost all stay
        #expect(cache.totalCount == 100)
        let stats = cache.statistics
        #expect(stats.removals[.evicted, default: 0] == stats.insertions - 100)
    }
}

extension MemoryCache {
    /// Sets the count limit (so caches of different value types fit in one array).
    fileprivate var countLimitSetter: (Int) -> Void { { self.countLimit = $0 } }
}
