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
        #expect(cache.totalCount <= 800)  // each set evicts down to the count limit under the lock
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

    /// The sets (a value) and removals (`nil`) task `task` of ``concurrentTasksShareACache()``
    /// runs, in order: each task owns its keys (`task`, `task + 8`, ...), so the final contents
    /// are known exactly and a lost, misplaced or resurrected write shows.
    private static func operations(ofTask task: Int) -> [(key: Int, value: Int?)] {
        (0..<2_000).compactMap { i in
            let key = (i % 61) * 8 + task
            switch i % 5 {
            case 0, 1, 2: return (key, task * 100_000 + i)  // set
            case 3: return (key, nil)  // remove
            default: return nil  // (a read: see the test)
            }
        }
    }

    @Test func concurrentTasksShareACache() async {
        let cache = MemoryCache<Int, Int>()
        let foreignReads = LockedBox(0)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for (key, value) in Self.operations(ofTask: task) {
                        cache[key] = value
                        // Only this task writes `key`: whatever is there is its own last write.
                        if let read = cache[key], read != value {
                            foreignReads.value += 1
                        }
                        // A neighbour's key holds only its owner's writes (key k is task k % 8's).
                        if let other = cache[key + 1], other / 100_000 != (key + 1) % 8 {
                            foreignReads.value += 1
                        }
                    }
                }
            }
        }
        var expected: [Int: Int] = [:]
        for task in 0..<8 {
            for (key, value) in Self.operations(ofTask: task) { expected[key] = value }
        }
        #expect(foreignReads.value == 0)
        #expect(cache.totalCount == expected.count)
        for key in 0..<(61 * 8) {
            #expect(cache[key] == expected[key], "key \(key)")
        }
    }
}
