import Foundation
import Synchronization
import Testing

@testable import YYCache

@Suite struct MemoryCacheTests {
    @Test func setThenGetReturnsValue() {
        let cache = MemoryCache<String, Int>()
        cache.setValue(42, forKey: "answer")
        #expect(cache.value(forKey: "answer") == 42)
        #expect(cache.containsValue(forKey: "answer"))
        #expect(cache.totalCount == 1)
    }

    @Test func missingKeyReturnsNil() {
        let cache = MemoryCache<String, Int>()
        #expect(cache.value(forKey: "nothing") == nil)
        #expect(!cache.containsValue(forKey: "nothing"))
    }

    @Test func setReplacesValueAndCost() {
        let cache = MemoryCache<String, String>()
        cache.setValue("a", forKey: "k", cost: 10)
        cache.setValue("b", forKey: "k", cost: 3)
        #expect(cache.value(forKey: "k") == "b")
        #expect(cache.totalCount == 1)
        #expect(cache.totalCost == 3)
    }

    @Test func settingNilRemovesTheValue() {
        let cache = MemoryCache<String, Int>()
        cache.setValue(1, forKey: "k")
        cache.setValue(nil, forKey: "k")
        #expect(cache.value(forKey: "k") == nil)
        #expect(cache.totalCount == 0)
    }

    @Test func removeValueRemovesOnlyThatKey() {
        let cache = MemoryCache<String, Int>()
        cache.setValue(1, forKey: "a")
        cache.setValue(2, forKey: "b")
        cache.removeValue(forKey: "a")
        cache.removeValue(forKey: "missing")
        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.value(forKey: "b") == 2)
        #expect(cache.totalCount == 1)
    }

    @Test func removeAllValuesEmptiesTheCache() {
        let cache = MemoryCache<Int, Int>()
        for i in 0..<100 { cache.setValue(i, forKey: i, cost: 1) }
        cache.removeAllValues()
        #expect(cache.totalCount == 0)
        #expect(cache.totalCost == 0)
        #expect(cache.value(forKey: 5) == nil)
    }

    @Test func subscriptGetsSetsAndRemoves() {
        let cache = MemoryCache<String, [Int]>()
        cache["list"] = [1, 2]
        #expect(cache["list"] == [1, 2])
        cache["list"] = nil
        #expect(cache["list"] == nil)
        #expect(cache.totalCount == 0)
    }

    @Test func valuesOfAnyTypeRoundTrip() {
        struct Point: Equatable { var x: Double, y: Double }
        let cache = MemoryCache<String, Point>()
        cache["p"] = Point(x: 1, y: 2)
        #expect(cache["p"] == Point(x: 1, y: 2))
        let optional = MemoryCache<String, Int?>()
        optional.setValue(.some(nil), forKey: "stored nil")
        #expect(optional.containsValue(forKey: "stored nil"))
    }

    @Test func defaultsMatchYYMemoryCache() {
        let cache = MemoryCache<String, Int>()
        #expect(cache.name == nil)
        #expect(cache.countLimit == .max)
        #expect(cache.costLimit == .max)
        #expect(cache.maximumAge == nil)
        #expect(cache.autoTrimPeriod == .seconds(5))
        #expect(cache.shouldRemoveAllValuesOnMemoryWarning)
        #expect(cache.shouldRemoveAllValuesWhenEnteringBackground)
        #expect(cache.didReceiveMemoryWarning == nil)
        #expect(cache.didEnterBackground == nil)
        #expect(cache.releasesValuesAsynchronously)
        #expect(!cache.releasesValuesOnMainThread)
    }

    @Test func propertiesReadBackWhatWasSet() {
        let cache = MemoryCache<String, Int>(name: "first")
        #expect(cache.name == "first")
        cache.name = "second"
        #expect(cache.name == "second")
        #expect(cache.description.contains("second"))
        cache.countLimit = 10
        cache.costLimit = 20
        cache.maximumAge = .seconds(30)
        cache.autoTrimPeriod = .milliseconds(500)
        cache.shouldRemoveAllValuesOnMemoryWarning = false
        cache.shouldRemoveAllValuesWhenEnteringBackground = false
        cache.releasesValuesAsynchronously = false
        cache.releasesValuesOnMainThread = true
        #expect(cache.countLimit == 10)
        #expect(cache.costLimit == 20)
        #expect(cache.maximumAge == .seconds(30))
        #expect(cache.autoTrimPeriod == .milliseconds(500))
        #expect(!cache.shouldRemoveAllValuesOnMemoryWarning)
        #expect(!cache.shouldRemoveAllValuesWhenEnteringBackground)
        #expect(!cache.releasesValuesAsynchronously)
        #expect(cache.releasesValuesOnMainThread)
    }

    // MARK: LRU order

    @Test func getMovesTheEntryToMostRecent() {
        let cache = MemoryCache<String, Int>()
        cache["a"] = 1
        cache["b"] = 2
        cache["c"] = 3
        _ = cache["a"]
        cache.trim(toCount: 2)
        #expect(cache["b"] == nil)
        #expect(cache["a"] == 1)
        #expect(cache["c"] == 3)
    }

    @Test func setOnAnExistingKeyMovesItToMostRecent() {
        let cache = MemoryCache<String, Int>()
        cache["a"] = 1
        cache["b"] = 2
        cache["a"] = 10
        cache.trim(toCount: 1)
        #expect(cache["a"] == 10)
        #expect(cache["b"] == nil)
    }

    @Test func containsDoesNotChangeTheLRUOrder() {
        let cache = MemoryCache<String, Int>()
        cache["a"] = 1
        cache["b"] = 2
        #expect(cache.containsValue(forKey: "a"))
        cache.trim(toCount: 1)
        #expect(!cache.containsValue(forKey: "a"))
        #expect(cache.containsValue(forKey: "b"))
    }

    @Test func trimsEvictFromTheLeastRecentEnd() {
        let cache = MemoryCache<Int, Int>()
        for i in 0..<10 { cache.setValue(i, forKey: i, cost: 1) }
        cache.trim(toCount: 7)
        #expect((0..<3).allSatisfy { !cache.containsValue(forKey: $0) })
        cache.trim(toCost: 5)
        #expect((0..<5).allSatisfy { !cache.containsValue(forKey: $0) })
        #expect((5..<10).allSatisfy { cache.containsValue(forKey: $0) })
        #expect(cache.totalCost == 5)
    }

    // MARK: Limits

    @Test func countLimitEvictsTheLeastRecentEntryOnSet() {
        let cache = MemoryCache<String, Int>()
        cache.countLimit = 2
        cache["a"] = 1
        cache["b"] = 2
        cache["c"] = 3
        #expect(cache.totalCount == 2)
        #expect(cache["a"] == nil)
        #expect(cache["b"] == 2)
        #expect(cache["c"] == 3)
    }

    @Test func costLimitIsEnforcedByABackgroundTrim() {
        let cache = MemoryCache<Int, Int>()
        cache.costLimit = 10
        for i in 0..<6 { cache.setValue(i, forKey: i, cost: 5) }
        // Cost eviction is deferred to the background worker (YYCache issue #54): poll for it.
        #expect(eventually { cache.totalCost <= 10 })
        #expect(cache.containsValue(forKey: 5))
        #expect(!cache.containsValue(forKey: 0))
    }

    @Test func ageTrimEvictsEntriesNotAccessedRecently() {
        let cache = MemoryCache<String, Int>()
        cache["old"] = 1
        usleep(300_000)  // the entry's age is what is under test, not a guess at background work
        cache["new"] = 2
        cache.trim(toAge: .milliseconds(200))
        #expect(cache["old"] == nil)
        #expect(cache["new"] == 2)
    }

    @Test func maximumAgeIsEnforcedByTheAutoTrim() {
        let cache = MemoryCache<String, Int>()
        cache.maximumAge = .milliseconds(50)
        cache.autoTrimPeriod = .milliseconds(50)
        cache["k"] = 1
        #expect(eventually { cache.totalCount == 0 })
    }

    @Test func zeroTrimTargetsRemoveEverything() {
        let cache = MemoryCache<Int, Int>()
        func fill() { for i in 0..<5 { cache.setValue(i, forKey: i, cost: 2) } }
        fill()
        cache.trim(toCount: 0)
        #expect(cache.totalCount == 0)
        fill()
        cache.trim(toCost: 0)
        #expect(cache.totalCount == 0)
        fill()
        cache.trim(toAge: .zero)
        #expect(cache.totalCount == 0)
        fill()
        cache.trim(toAge: .seconds(-1))
        #expect(cache.totalCount == 0)
    }

    @Test func intMaxMeansNoLimitAndNeverTraps() {
        let cache = MemoryCache<Int, Int>()
        cache.countLimit = .max
        cache.costLimit = .max
        cache.maximumAge = nil
        #expect(cache.countLimit == .max)
        #expect(cache.costLimit == .max)
        cache.setValue(1, forKey: 1, cost: .max)
        cache.setValue(2, forKey: 2, cost: .max)
        cache.setValue(3, forKey: 3, cost: .max)
        #expect(cache.totalCost == .max)  // saturates instead of wrapping
        cache.trim(toCount: .max)
        cache.trim(toCost: .max)
        cache.trim(toAge: .seconds(Int64.max))
        #expect(cache.totalCount == 3)
    }

    @Test func negativeLimitsAndCostsCountAsZero() {
        let cache = MemoryCache<Int, Int>()
        cache.countLimit = -3
        cache.costLimit = -3
        #expect(cache.countLimit == 0)
        #expect(cache.costLimit == 0)
        let other = MemoryCache<Int, Int>()
        other.setValue(1, forKey: 1, cost: -100)
        #expect(other.totalCost == 0)
        other.trim(toCount: -1)
        #expect(other.totalCount == 0)
    }

    // MARK: Events

    @Test func memoryWarningCallsTheHandlerBeforeRemovingAll() {
        let cache = MemoryCache<String, Int>()
        let seen = LockedBox<Int?>(nil)
        cache.didReceiveMemoryWarning = { cache in seen.value = cache.totalCount }
        cache["a"] = 1
        cache["b"] = 2
        cache.handleMemoryWarning()
        #expect(seen.value == 2)
        #expect(cache.totalCount == 0)
    }

    @Test func enterBackgroundCallsTheHandlerBeforeRemovingAll() {
        let cache = MemoryCache<String, Int>()
        let seen = LockedBox<Int?>(nil)
        cache.didEnterBackground = { cache in seen.value = cache.totalCount }
        cache["a"] = 1
        cache.handleEnterBackground()
        #expect(seen.value == 1)
        #expect(cache.totalCount == 0)
    }

    @Test func eventFlagsOffKeepTheValues() {
        let cache = MemoryCache<String, Int>()
        cache.shouldRemoveAllValuesOnMemoryWarning = false
        cache.shouldRemoveAllValuesWhenEnteringBackground = false
        let calls = LockedBox(0)
        cache.didReceiveMemoryWarning = { _ in calls.value += 1 }
        cache.didEnterBackground = { _ in calls.value += 10 }
        cache["a"] = 1
        cache.handleMemoryWarning()
        cache.handleEnterBackground()
        #expect(calls.value == 11)
        #expect(cache["a"] == 1)
    }

    @Test func handlersMayUseTheCache() {
        let cache = MemoryCache<String, Int>()
        cache.shouldRemoveAllValuesOnMemoryWarning = false
        cache.didReceiveMemoryWarning = { cache in
            cache["written by handler"] = cache["a"].map { $0 + 1 }
        }
        cache["a"] = 1
        cache.handleMemoryWarning()
        #expect(cache["written by handler"] == 2)
    }

    @Test func handlerDoesNotKeepTheCacheAlive() {
        let tracker = LifetimeTracker()
        weak var weakCache: MemoryCache<String, Tracked>?
        do {
            let cache = MemoryCache<String, Tracked>()
            cache.didReceiveMemoryWarning = { _ in }
            cache["a"] = tracker.make(1)
            weakCache = cache
        }
        #expect(weakCache == nil)
        #expect(tracker.liveCount == 0)
    }

    // MARK: Bad input

    @Test func emptyKeyIsAValidKey() {
        let cache = MemoryCache<String, Int>()
        cache[""] = 7
        #expect(cache[""] == 7)
        #expect(cache.containsValue(forKey: ""))
        cache.removeValue(forKey: "")
        #expect(cache[""] == nil)
    }

    @Test func oneMebibyteKeyWorks() {
        let cache = MemoryCache<String, Int>()
        let big = String(repeating: "k", count: 1 << 20)
        cache[big] = 1
        #expect(cache[big] == 1)
        #expect(cache[String(repeating: "k", count: (1 << 20) - 1)] == nil)
    }

    @Test func keysWithNULBytesAreDistinct() {
        let cache = MemoryCache<String, Int>()
        cache["a\0b"] = 1
        cache["a"] = 2
        cache["a\0c"] = 3
        #expect(cache["a\0b"] == 1)
        #expect(cache["a"] == 2)
        #expect(cache["a\0c"] == 3)
        #expect(cache.totalCount == 3)
    }
}

/// A value shared with @Sendable handlers in tests (an NSLock, which ThreadSanitizer sees;
/// `Mutex` waits with raw futex calls that it does not).
final class LockedBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
