import Foundation
import Synchronization
import Testing

@testable import YYCache

@Suite struct MemoryCacheConcurrencyTests {
    @Test func eightThreadsMixingOperationsOnSharedKeys() {
        let tracker = LifetimeTracker()
        let cache = MemoryCache<String, Tracked>()
        cache.countLimit = 800
        cache.costLimit = 5_000
        let keys = (0..<1_000).map { "key-\($0)" }
        let deadline = ContinuousClock.now + .seconds(2)
        let wrongValues = Atomic<Int>(0)
        onThreads(8) { thread in
            var random = SystemRandomNumberGenerator()
            var i = 0
            while ContinuousClock.now < deadline {
                let index = Int.random(in: 0..<keys.count, using: &random)
                let key = keys[index]
                switch (i &+ thread) % 10 {
                case 0, 1, 2: cache.setValue(tracker.make(index), forKey: key, cost: index % 10)
                case 3: cache.removeValue(forKey: key)
                case 4: _ = cache.containsValue(forKey: key)
                case 5 where i % 500 == 0: cache.trim(toCount: 600)
                case 6 where i % 700 == 0: cache.trim(toCost: 3_000)
                case 7 where i % 5_000 == 0: cache.removeAllValues()
                default:
                    if let value = cache.value(forKey: key), value.id != index {
                        wrongValues.add(1, ordering: .relaxed)
                    }
                }
                i &+= 1
            }
        }
        let observed1 = wrongValues.load(ordering: .relaxed)
        #expect(observed1 == 0)
        #expect(cache.totalCount <= 1_000)
        cache.removeAllValues()
        #expect(cache.totalCount == 0)
        #expect(cache.totalCost == 0)
        #expect(eventually { tracker.liveCount == 0 })
    }

    @Test func replacingOneKeyWhileOthersReadIt() {
        // YYCache PR #153: a reader must never see a value freed by a concurrent replacement.
        let tracker = LifetimeTracker()
        let cache = MemoryCache<String, Tracked>()
        cache.releasesValuesAsynchronously = false  // frees replaced values as early as possible
        cache["hot"] = tracker.make(0)
        let deadline = ContinuousClock.now + .seconds(1)
        let reads = Atomic<Int>(0)
        onThreads(8) { thread in
            var n = 0
            while ContinuousClock.now < deadline {
                if thread == 0 {
                    n += 1
                    cache["hot"] = tracker.make(n)
                } else if let value = cache["hot"] {
                    precondition(value.id >= 0)
                    reads.add(1, ordering: .relaxed)
                }
            }
        }
        let observed2 = reads.load(ordering: .relaxed)
        #expect(observed2 > 0)
        #expect(tracker.liveCount == 1)
        cache.removeAllValues()
        #expect(tracker.liveCount == 0)
    }

    @Test func concurrentTasksShareACache() async {
        let cache = MemoryCache<Int, Int>()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for i in 0..<2_000 {
                        let key = (i * 7 + task) % 500
                        switch i % 4 {
                        case 0: cache[key] = key
                        case 1: cache.removeValue(forKey: key)
                        default:
                            if let value = cache[key] { precondition(value == key) }
                        }
                    }
                }
            }
        }
        #expect(cache.totalCount <= 500)
    }
}
