import CYYCache
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import YYCache

/// A value stored inline that holds a class reference (16 bytes, not trivial).
private struct SmallHolder {
    let tracked: Tracked
    let extra: Int
}

/// Exactly the inline maximum (64 bytes), holding a class reference.
private struct MaxHolder {
    let tracked: Tracked
    let pad: (Int, Int, Int, Int, Int, Int, Int)
}

/// One word more than the inline maximum: boxed.
private struct LargeHolder {
    let tracked: Tracked
    let pad: (Int, Int, Int, Int, Int, Int, Int, Int)
}

private struct Point: Equatable {
    var x: Double
    var y: Double
}

private struct Empty: Equatable {}

private final class WeakTarget: Sendable {}

/// A small value holding a weak reference: not bitwise takable for Swift, so it is boxed.
private struct WeakHolder {
    weak var target: WeakTarget?
}

/// The lifetime scenario shared by every storage kind: each value's class reference must be
/// released exactly once after replacement, count eviction, removal, trims, removeAll and the
/// cache's deinit, with both release policies.
private func checkLifetimes<V: Sendable>(
    _: V.Type, asynchronously: Bool, make: (Int, LifetimeTracker) -> V, id: (V) -> Int
) {
    let tracker = LifetimeTracker()
    do {
        let cache = MemoryCache<Int, V>()
        cache.releasesValuesAsynchronously = asynchronously
        for i in 0..<100 { cache.setValue(make(i, tracker), forKey: i, cost: 1) }
        for i in 0..<20 { cache.setValue(make(i + 1_000, tracker), forKey: i, cost: 1) }  // replaced
        #expect(cache.value(forKey: 3).map(id) == 1_003)
        #expect(cache.value(forKey: 50).map(id) == 50)
        #expect(cache.value(forKey: 500) == nil)
        #expect(eventually { tracker.liveCount == 100 })

        let held = cache.value(forKey: 60)  // a copy outlives its entry
        cache.removeValue(forKey: 60)
        #expect(eventually { tracker.liveCount == 100 })
        #expect(held.map(id) == 60)

        cache.countLimit = 99
        cache.setValue(make(200, tracker), forKey: 200, cost: 1)  // evicts one entry on set
        #expect(cache.totalCount == 99)
        cache.countLimit = .max
        cache.trim(toCount: 70)
        cache.trim(toCost: 60)
        #expect(cache.totalCount == 60)
        #expect(eventually { tracker.liveCount == 61 })  // 60 entries + held
        cache.removeAllValues()
        #expect(eventually { tracker.liveCount == 1 })
        for i in 0..<10 { cache.setValue(make(i, tracker), forKey: i, cost: 1) }
        _ = held
    }  // the cache's deinit destroys the last ten before it returns
    #expect(tracker.liveCount == 0)
    let destroyed = tracker.destroyed.load(ordering: .relaxed)
    let created = tracker.created.load(ordering: .relaxed)
    #expect(destroyed == created)
}

@Suite struct MemoryCacheStorageTests {
    @Test func storageIsChosenByTheValueLayout() {
        #expect(MemoryCacheStorage<Int>.inlineMaximum == Int(YYC_MEMCACHE_INLINE_MAX))
        #expect(MemoryCache<String, Tracked>.storesObjectsDirectly)
        #expect(!MemoryCache<String, Tracked>.storesValuesInline)
        for inline in [
            MemoryCache<String, Int>.storesValuesInline, MemoryCache<String, Data>.storesValuesInline,
            MemoryCache<String, String>.storesValuesInline, MemoryCache<Int, Point>.storesValuesInline,
            MemoryCache<Int, Empty>.storesValuesInline, MemoryCache<Int, SmallHolder>.storesValuesInline,
            MemoryCache<Int, MaxHolder>.storesValuesInline, MemoryCache<Int, Tracked?>.storesValuesInline,
        ] {
            #expect(inline)
        }
        #expect(!MemoryCache<Int, LargeHolder>.storesValuesInline)
        #expect(!MemoryCache<Int, LargeHolder>.storesObjectsDirectly)
        #expect(MemoryCacheStorage<Int>.isTrivial && MemoryCacheStorage<Point>.isTrivial)
        #expect(!MemoryCacheStorage<Data>.isTrivial && !MemoryCacheStorage<SmallHolder>.isTrivial)
        #expect(MemoryLayout<MaxHolder>.size == MemoryCacheStorage<MaxHolder>.inlineMaximum)
    }

    @Test func trivialInlineValuesRoundTrip() {
        let ints = MemoryCache<String, Int>()
        for i in 0..<1_000 { ints["key_\(i)"] = i * 3 }
        for i in 0..<1_000 { #expect(ints["key_\(i)"] == i * 3) }
        #expect(ints["absent"] == nil)
        ints["key_1"] = -1
        #expect(ints["key_1"] == -1)
        ints["key_1"] = nil
        #expect(ints["key_1"] == nil)
        #expect(ints.totalCount == 999)

        let points = MemoryCache<Int, Point>()
        points[1] = Point(x: 1.5, y: -2)
        #expect(points[1] == Point(x: 1.5, y: -2))
        let bytes = MemoryCache<Int, UInt8>()  // size 1
        bytes[7] = 200
        #expect(bytes[7] == 200)
        let empties = MemoryCache<String, Empty>()  // size 0: one byte in the C core
        empties[""] = Empty()
        #expect(empties[""] == Empty())
        #expect(empties["x"] == nil)
    }

    @Test func referenceHoldingInlineValuesRoundTrip() {
        let datas = MemoryCache<String, Data>()
        let big = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0) })  // heap storage
        datas["small"] = Data([1, 2, 3, 4])
        datas["big"] = big
        #expect(datas["small"] == Data([1, 2, 3, 4]))
        let copy = datas["big"]
        datas.removeAllValues()
        #expect(copy == big)  // the copy holds its own reference
        let strings = MemoryCache<Int, String>()
        strings[1] = "short"
        strings[2] = String(repeating: "long string ", count: 100)
        #expect(strings[1] == "short")
        #expect(strings[2] == String(repeating: "long string ", count: 100))
        // [UInt8], like Data and String, has a copy callback of its own (no generic hop).
        let arrays = MemoryCache<String, [UInt8]>()
        let bytes = [UInt8](repeating: 7, count: 1_000)
        arrays["a"] = bytes
        let arrayCopy = arrays["a"]
        arrays.removeAllValues()
        #expect(arrayCopy == bytes)
        let optionals = MemoryCache<Int, Tracked?>()
        let tracker = LifetimeTracker()
        optionals.setValue(.some(tracker.make(1)), forKey: 1)
        optionals.setValue(.some(nil), forKey: 2)  // a stored nil is a value, not a removal
        #expect(optionals[1]??.id == 1)
        #expect(optionals.containsValue(forKey: 2))
        let stored = optionals.value(forKey: 2)
        #expect(stored != nil && stored! == nil)
    }

    @Test(arguments: [false, true])
    func objectValuesAreReleasedExactlyOnce(asynchronously: Bool) {
        checkLifetimes(Tracked.self, asynchronously: asynchronously, make: { $1.make($0) }, id: { $0.id })
    }

    @Test(arguments: [false, true])
    func inlineValuesAreDestroyedExactlyOnce(asynchronously: Bool) {
        checkLifetimes(
            SmallHolder.self, asynchronously: asynchronously,
            make: { SmallHolder(tracked: $1.make($0), extra: $0) }, id: { $0.tracked.id })
    }

    @Test(arguments: [false, true])
    func inlineValuesOfTheMaximumSizeAreDestroyedExactlyOnce(asynchronously: Bool) {
        checkLifetimes(
            MaxHolder.self, asynchronously: asynchronously,
            make: { MaxHolder(tracked: $1.make($0), pad: (1, 2, 3, 4, 5, 6, 7)) }, id: { $0.tracked.id })
    }

    @Test(arguments: [false, true])
    func boxedValuesAreReleasedExactlyOnce(asynchronously: Bool) {
        checkLifetimes(
            LargeHolder.self, asynchronously: asynchronously,
            make: { LargeHolder(tracked: $1.make($0), pad: (0, 0, 0, 0, 0, 0, 0, 0)) }, id: { $0.tracked.id })
    }

    @Test func inlineDestroyRunsOffTheLockAndMayUseTheCache() {
        let tracker = LifetimeTracker()
        let cache = MemoryCache<String, SmallHolder>()
        cache.releasesValuesAsynchronously = false
        cache["other"] = SmallHolder(tracked: tracker.make(0), extra: 0)
        let sawOther = Atomic<Bool>(false)
        let tracked = Tracked(1, tracker: tracker) { [weak cache] in
            guard let cache else { return }
            sawOther.store(cache["other"] != nil, ordering: .relaxed)  // would deadlock under the lock
            cache["from-deinit"] = nil
        }
        cache["k"] = SmallHolder(tracked: tracked, extra: 1)
        _ = consume tracked
        cache["k"] = SmallHolder(tracked: tracker.make(2), extra: 2)  // replaced: destroyed now
        #expect(tracker.liveCount == 2)
        let saw = sawOther.load(ordering: .relaxed)
        #expect(saw)
    }

    @Test func inlineAndBoxedValuesAreDestroyedOnTheMainQueueWhenAsked() async throws {
        try #require(await mainQueueRuns(), "the test runner does not service the main queue")
        let tracker = LifetimeTracker()
        let small = MemoryCache<Int, SmallHolder>()
        let large = MemoryCache<Int, LargeHolder>()
        small.releasesValuesOnMainThread = true
        large.releasesValuesOnMainThread = true
        await Task.detached {
            #expect(!onMainQueue())
            for async in [true, false] {
                small.releasesValuesAsynchronously = async
                large.releasesValuesAsynchronously = async
                small[1] = SmallHolder(tracked: tracker.make(1), extra: 0)
                small[1] = SmallHolder(tracked: tracker.make(2), extra: 0)  // replaced
                small.removeValue(forKey: 1)  // removed
                large[1] = LargeHolder(tracked: tracker.make(3), pad: (0, 0, 0, 0, 0, 0, 0, 0))
                large.removeValue(forKey: 1)
            }
        }.value
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while tracker.liveCount > 0 && clock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(tracker.liveCount == 0)
        let onMain = tracker.deinitsOnMainThread.load(ordering: .relaxed)
        #expect(onMain == 6)
    }

    @Test func inlineAndBoxedValuesSurviveConcurrentSetGetAndRemoveOnSharedKeys() {
        let tracker = LifetimeTracker()
        do {
            let datas = MemoryCache<String, Data>()
            let holders = MemoryCache<Int, SmallHolder>()
            holders.countLimit = 20
            let large = MemoryCache<Int, LargeHolder>()
            large.countLimit = 20
            let wrong = Atomic<Int>(0)
            let keys = (0..<32).map { "key_\($0)" }
            onThreads(4) { thread in
                var random = SystemRandomNumberGenerator()
                for i in 0..<5_000 {
                    let k = Int.random(in: 0..<keys.count, using: &random)
                    switch (i &+ thread) % 6 {
                    case 0:
                        datas[keys[k]] = Data(repeating: UInt8(k), count: 1 + k * 10)
                        holders[k] = SmallHolder(tracked: tracker.make(k), extra: k)
                        large[k] = LargeHolder(tracked: tracker.make(k), pad: (k, 0, 0, 0, 0, 0, 0, 0))
                    case 1:
                        datas.removeValue(forKey: keys[k])
                        holders.removeValue(forKey: k)
                        large.removeValue(forKey: k)
                    case 2 where i % 1_000 == 0:
                        holders.removeAllValues()
                        large.removeAllValues()
                    default:
                        if let d = datas[keys[k]], d != Data(repeating: UInt8(k), count: 1 + k * 10) {
                            wrong.add(1, ordering: .relaxed)
                        }
                        if let h = holders[k], h.tracked.id != k || h.extra != k {
                            wrong.add(1, ordering: .relaxed)
                        }
                        if let h = large[k], h.tracked.id != k || h.pad.0 != k {
                            wrong.add(1, ordering: .relaxed)
                        }
                    }
                }
            }
            let wrongCount = wrong.load(ordering: .relaxed)
            #expect(wrongCount == 0)
            holders.removeAllValues()
            large.removeAllValues()
        }
        // A finished thread may still hold its closure (and so the caches) for a moment.
        #expect(eventually { tracker.liveCount == 0 })
    }

    @Test func valuesHoldingWeakReferencesKeepThemThroughCopiesAndEviction() {
        let cache = MemoryCache<Int, WeakHolder>()
        // Swift does not report a struct holding a weak reference as bitwise takable, so it is
        // boxed rather than moved with memcpy (trusting the compiler, not the Linux runtime).
        #expect(!_isBitwiseTakable(WeakHolder.self))
        #expect(!MemoryCacheStorage<WeakHolder>.storesInline)
        var target: WeakTarget? = WeakTarget()
        let id = ObjectIdentifier(target!)
        for i in 0..<64 { cache.setValue(WeakHolder(target: target), forKey: i) }
        cache.setValue(WeakHolder(target: target), forKey: 0)  // replaced: the old copy is destroyed
        cache.trim(toCount: 32)  // evicted copies are destroyed
        #expect(cache.value(forKey: 63)?.target.map(ObjectIdentifier.init) == id)
        target = nil  // the last strong reference: every stored weak reference reads nil now
        #expect(cache.value(forKey: 63).map { $0.target == nil } == true)
        #expect(cache.value(forKey: 0).map { $0.target == nil } == true)
        cache.removeAllValues()
        #expect(cache.totalCount == 0)
    }
}
