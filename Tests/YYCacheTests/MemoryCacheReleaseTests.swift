import Dispatch
import Foundation
import Synchronization
import Testing

@testable import YYCache

@Suite struct MemoryCacheReleaseTests {
    @Test func everyValueIsReleasedExactlyOnce() {
        let tracker = LifetimeTracker()
        let cache = MemoryCache<Int, Tracked>()
        for i in 0..<200 { cache.setValue(tracker.make(i), forKey: i, cost: 1) }
        for i in 0..<50 { cache.setValue(tracker.make(i), forKey: i, cost: 1) }  // replacements
        for i in 50..<60 { cache.removeValue(forKey: i) }
        cache.trim(toCount: 150)
        cache.trim(toCost: 100)
        #expect(eventually { tracker.liveCount == 100 })
        cache.removeAllValues()
        #expect(eventually { tracker.liveCount == 0 })
        let observed1 = tracker.created.load(ordering: .relaxed)
        #expect(observed1 == 250)
        let observed2 = tracker.destroyed.load(ordering: .relaxed)
        #expect(observed2 == 250)
    }

    @Test func boxedValuesAreReleasedExactlyOnceToo() {
        // A struct is boxed; a class instance is stored directly: both paths must balance.
        struct Wrapper { let tracked: Tracked }
        #expect(!MemoryCacheBox<Wrapper>.canStoreDirectly)
        let tracker = LifetimeTracker()
        let cache = MemoryCache<Int, Wrapper>()
        for i in 0..<100 { cache.setValue(Wrapper(tracked: tracker.make(i)), forKey: i, cost: 1) }
        for i in 0..<20 { cache.setValue(Wrapper(tracked: tracker.make(i)), forKey: i, cost: 1) }
        #expect(cache.value(forKey: 3)?.tracked.id == 3)
        cache.trim(toCount: 50)
        cache.removeValue(forKey: 99)
        #expect(eventually { tracker.liveCount == 49 })
        cache.removeAllValues()
        #expect(eventually { tracker.liveCount == 0 })
    }

    @Test func classInstancesAreStoredWithoutABox() {
        protocol Marker: AnyObject {}
        final class Object: Marker {}
        #expect(MemoryCacheBox<Tracked>.canStoreDirectly)
        #expect(MemoryCacheBox<NSString>.canStoreDirectly)
        #expect(!MemoryCacheBox<Int>.canStoreDirectly)
        #expect(!MemoryCacheBox<String>.canStoreDirectly)
        #expect(!MemoryCacheBox<Tracked?>.canStoreDirectly)
        #expect(!MemoryCacheBox<any Marker>.canStoreDirectly)  // object + witness table

        // Whatever the path, existentials and optionals of classes round-trip.
        let object = Object()
        let anyObjects = MemoryCache<String, AnyObject>()
        anyObjects["k"] = object
        #expect(anyObjects["k"] === object)
        let markers = MemoryCache<String, any Marker>()
        markers["k"] = object
        #expect(markers["k"] === object)
        let optionals = MemoryCache<String, Object?>()
        optionals.setValue(.some(object), forKey: "k")
        #expect(optionals["k"]! === object)
        let strings = MemoryCache<String, NSString>()
        strings["k"] = NSString(string: "text")
        #expect(strings["k"] == NSString(string: "text"))
    }

    @Test func freeingTheCacheReleasesEveryValueBeforeDeinitReturns() {
        let tracker = LifetimeTracker()
        do {
            let cache = MemoryCache<Int, Tracked>()
            for i in 0..<100 { cache[i] = tracker.make(i) }
            for i in 0..<10 { cache.removeValue(forKey: i) }  // pending on the worker
        }
        #expect(tracker.liveCount == 0)
    }

    @Test func valuesReadFromTheCacheStayAliveAfterRemoval() {
        let tracker = LifetimeTracker()
        let cache = MemoryCache<String, Tracked>()
        cache["k"] = tracker.make(7)
        let held = cache["k"]
        cache.removeAllValues()
        _ = eventually { tracker.liveCount == 1 && tracker.destroyed.load(ordering: .relaxed) == 0 }
        #expect(held?.id == 7)
        #expect(tracker.liveCount == 1)
    }

    @Test func asynchronousReleaseHappensOffTheCallingThread() {
        let tracker = LifetimeTracker()
        let cache = MemoryCache<String, Tracked>()
        #expect(cache.releasesValuesAsynchronously)
        cache["k"] = tracker.make(1)
        cache.removeValue(forKey: "k")
        #expect(eventually { tracker.liveCount == 0 })
        let observed3 = tracker.lastDeinitThread.load(ordering: .relaxed)
        #expect(observed3 != currentThreadID())
    }

    @Test func synchronousReleaseHappensBeforeTheCallReturns() {
        let tracker = LifetimeTracker()
        let cache = MemoryCache<Int, Tracked>()
        cache.releasesValuesAsynchronously = false
        let me = currentThreadID()

        cache[1] = tracker.make(1)
        cache.removeValue(forKey: 1)  // removed
        #expect(tracker.liveCount == 0)
        let observed4 = tracker.lastDeinitThread.load(ordering: .relaxed)
        #expect(observed4 == me)

        cache[1] = tracker.make(1)
        cache[1] = tracker.make(2)  // replaced
        #expect(tracker.liveCount == 1)

        cache.countLimit = 1
        cache[2] = tracker.make(3)  // evicted on set
        #expect(tracker.liveCount == 1)

        cache.countLimit = .max
        for i in 10..<20 { cache[i] = tracker.make(i) }
        cache.trim(toCount: 5)  // trimmed
        #expect(tracker.liveCount == 5)

        cache.removeAllValues()
        #expect(tracker.liveCount == 0)
        let observed5 = tracker.lastDeinitThread.load(ordering: .relaxed)
        #expect(observed5 == me)
    }

    @Test func memoryWarningHasRemovedTheValuesWhenItReturns() {
        let tracker = LifetimeTracker()
        let cache = MemoryCache<Int, Tracked>()
        cache.releasesValuesAsynchronously = false
        for i in 0..<10 { cache[i] = tracker.make(i) }
        cache.handleMemoryWarning()
        #expect(cache.totalCount == 0)
        #expect(tracker.liveCount == 0)
    }

    @Test(arguments: [false, true])
    func releaseThatReadsTheCacheDoesNotDeadlock(asynchronously: Bool) {
        let tracker = LifetimeTracker()
        let cache = MemoryCache<String, Tracked>()
        cache.releasesValuesAsynchronously = asynchronously
        cache["other"] = tracker.make(0)
        let sawOther = Atomic<Bool>(false)
        cache["k"] = Tracked(1, tracker: tracker) { [weak cache] in
            guard let cache else { return }
            // Runs with the cache's lock released: reading and writing must not deadlock.
            sawOther.store(cache["other"] != nil, ordering: .relaxed)
            cache.setValue(nil, forKey: "missing")
            _ = cache.totalCount
        }
        cache.removeValue(forKey: "k")
        #expect(eventually { tracker.liveCount == 1 })
        let observed6 = sawOther.load(ordering: .relaxed)
        #expect(observed6)
    }

    @Test func valueDeinitThatRemovesFromTheCacheDoesNotDeadlock() {
        let tracker = LifetimeTracker()
        let cache = MemoryCache<Int, Tracked>()
        cache.releasesValuesAsynchronously = false
        for i in 0..<10 {
            cache[i] = Tracked(i, tracker: tracker) { [weak cache] in
                cache?.removeValue(forKey: i + 1)  // cascades through the chain
            }
        }
        cache.removeValue(forKey: 0)
        #expect(eventually { cache.totalCount == 0 && tracker.liveCount == 0 })
    }

    // A value that holds the last reference to its cache: its deinit, run by the cache's own
    // release, deinitializes the cache (and frees the C cache) in the middle of that release.

    @Test(arguments: [true, false])
    func valueHoldingTheLastReferenceToItsCacheFreesItDuringAnAutoTrim(asynchronously: Bool) {
        let tracker = LifetimeTracker()
        weak var weakCache: MemoryCache<Int, Tracked>?
        do {
            let cache = MemoryCache<Int, Tracked>()
            cache.releasesValuesAsynchronously = asynchronously
            for i in 0..<8 { cache[i] = tracker.make(i) }
            // Holds the cache strongly: the cache and this value keep each other alive.
            cache[100] = Tracked(100, tracker: tracker) { withExtendedLifetime(cache) {} }
            for i in 8..<16 { cache[i] = tracker.make(i) }
            weakCache = cache
            // The auto-trim evicts everything on the worker; the holder is in the middle, so
            // the trim goes on releasing values after the cache's last reference is gone.
            cache.countLimit = 0
            cache.autoTrimPeriod = .milliseconds(1)
        }
        #expect(eventually { weakCache == nil && tracker.liveCount == 0 })
        let destroyed = tracker.destroyed.load(ordering: .relaxed)
        #expect(destroyed == 17)
    }

    @Test func valueHoldingTheLastReferenceToItsCacheFreesItDuringAnAsynchronousRelease() {
        let tracker = LifetimeTracker()
        let blocking = DispatchSemaphore(value: 0)
        let unblock = DispatchSemaphore(value: 0)
        weak var weakCache: MemoryCache<Int, Tracked>?
        var blocked = false
        do {
            let cache = MemoryCache<Int, Tracked>()
            #expect(cache.releasesValuesAsynchronously)
            for i in 0..<8 { cache[i] = tracker.make(i) }
            cache[100] = Tracked(100, tracker: tracker) { withExtendedLifetime(cache) {} }
            cache[200] = Tracked(200, tracker: tracker) {
                blocking.signal()
                unblock.wait()
            }
            weakCache = cache
            cache.removeValue(forKey: 200)  // its release holds the worker until unblocked
            blocked = blocking.wait(timeout: .now() + 30) == .success
            cache.removeValue(forKey: 100)  // released once this scope has dropped `cache`
        }
        unblock.signal()
        #expect(blocked)
        #expect(eventually { weakCache == nil && tracker.liveCount == 0 })
        let destroyed = tracker.destroyed.load(ordering: .relaxed)
        #expect(destroyed == 10)
    }

    @Test func releasesOnTheMainThreadWhenAsked() async throws {
        try #require(await mainQueueRuns(), "the test runner does not service the main queue")
        let tracker = LifetimeTracker()
        let cache = MemoryCache<Int, Tracked>()
        cache.releasesValuesOnMainThread = true
        // From a detached task (never the main thread), with both release policies.
        await Task.detached {
            #expect(!onMainQueue())
            cache[1] = tracker.make(1)
            cache.removeValue(forKey: 1)  // async release: worker thread, then the main queue
            cache.releasesValuesAsynchronously = false
            cache[2] = tracker.make(2)
            cache.removeValue(forKey: 2)  // sync release: calling thread, then the main queue
        }.value
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while tracker.liveCount > 0 && clock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(tracker.liveCount == 0)
        let observed7 = tracker.deinitsOnMainThread.load(ordering: .relaxed)
        #expect(observed7 == 2)
    }

    @Test func mainThreadReleaseIsOffByDefault() async {
        let tracker = LifetimeTracker()
        let cache = MemoryCache<Int, Tracked>()
        cache.releasesValuesAsynchronously = false
        await Task.detached {
            cache[1] = tracker.make(1)
            cache.removeValue(forKey: 1)
        }.value
        #expect(tracker.liveCount == 0)
        let observed8 = tracker.deinitsOnMainThread.load(ordering: .relaxed)
        #expect(observed8 == 0)
    }
}
