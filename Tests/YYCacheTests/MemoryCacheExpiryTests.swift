import Foundation
import Testing

@testable import YYCache

/// A value too large to be stored inline: it is boxed.
private struct Big: Equatable {
    var a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0, i = 0
    init(_ v: Int) { a = v }
}

/// Time to live on MemoryCache in its three value modes and every policy. No clock is moved
/// (the Swift build has no test hooks): a zero time to live is expired at once, a long one
/// (an hour) never within a test. The boundary itself is tested in C
/// (Tests/C/test_memory_cache_ttl.c, with a movable clock).
@Suite struct MemoryCacheExpiryTests {
    static let policies: [EvictionPolicy] = [.lru, .sieve, .s3fifo, .tinyLFU]
    static let hour = Duration.seconds(3600)

    @Test(arguments: policies)
    func expiredEntryIsNeverReturnedInAnyValueMode(policy: EvictionPolicy) {
        let tracker = LifetimeTracker()
        do {
            let inline = MemoryCache<String, Int>(policy: policy)
            let objects = MemoryCache<String, Tracked>(policy: policy)
            let boxed = MemoryCache<String, Big>(policy: policy)
            objects.releasesValuesAsynchronously = false
            inline.setValue(1, forKey: "gone", timeToLive: .zero)
            objects.setValue(tracker.make(1), forKey: "gone", timeToLive: .zero)
            boxed.setValue(Big(1), forKey: "gone", timeToLive: .zero)
            inline.setValue(2, forKey: "kept", timeToLive: Self.hour)
            objects.setValue(tracker.make(2), forKey: "kept", timeToLive: Self.hour)
            boxed.setValue(Big(2), forKey: "kept", timeToLive: Self.hour)
            #expect(inline.totalCount == 2 && objects.totalCount == 2 && boxed.totalCount == 2)
            #expect(inline.value(forKey: "gone") == nil)
            #expect(objects["gone"] == nil)
            #expect(!boxed.containsValue(forKey: "gone"))
            #expect(inline.totalCount == 1 && objects.totalCount == 1 && boxed.totalCount == 1)
            #expect(tracker.liveCount == 1)  // the expired object was released by the read
            #expect(inline["kept"] == 2)
            #expect(objects["kept"]?.id == 2)
            #expect(boxed["kept"] == Big(2))
        }
        #expect(tracker.liveCount == 0)
    }

    @Test(arguments: policies)
    func defaultTimeToLiveAppliesToSubscriptAndPlainSets(policy: EvictionPolicy) {
        let cache = MemoryCache<String, Int>(policy: policy)
        #expect(cache.defaultTimeToLive == nil)
        cache.defaultTimeToLive = .zero
        #expect(cache.defaultTimeToLive == .zero)
        cache["subscript"] = 1
        cache.setValue(2, forKey: "plain")
        cache.setValue(3, forKey: "never", timeToLive: nil)  // explicit nil: never expires
        #expect(cache["subscript"] == nil)
        #expect(cache.value(forKey: "plain") == nil)
        #expect(cache["never"] == 3)
        #expect(cache.timeToLive(forKey: "never") == nil)
        cache.defaultTimeToLive = Self.hour
        #expect(cache.defaultTimeToLive == Self.hour)
        cache["later"] = 4
        let left = cache.timeToLive(forKey: "later")
        #expect(left != nil && left! > .seconds(3590) && left! <= Self.hour)
        cache.defaultTimeToLive = .seconds(-5)  // counts as zero
        #expect(cache.defaultTimeToLive == .zero)
        cache.defaultTimeToLive = nil
        #expect(cache.defaultTimeToLive == nil)
    }

    @Test(arguments: policies)
    func laterSetReplacesTheTimeToLive(policy: EvictionPolicy) {
        let cache = MemoryCache<String, Int>(policy: policy)
        cache.setValue(1, forKey: "a", timeToLive: Self.hour)
        cache.setValue(2, forKey: "a", timeToLive: .zero)
        #expect(cache["a"] == nil)
        cache.setValue(1, forKey: "b", timeToLive: .zero)
        cache.setValue(2, forKey: "b")  // no default: none
        #expect(cache["b"] == 2)
        #expect(cache.timeToLive(forKey: "b") == nil)
        #expect(cache.timeToLive(forKey: "missing") == nil)
    }

    @Test(arguments: policies)
    func everyTrimRemovesExpiredEntriesEvenWithinItsLimit(policy: EvictionPolicy) {
        let trims: [(MemoryCache<Int, Int>) -> Void] = [
            { $0.trim(toCount: 1000) }, { $0.trim(toCost: 1000) }, { $0.trim(toAge: .seconds(1e9)) },
        ]
        for trim in trims {
            let cache = MemoryCache<Int, Int>(policy: policy)
            for i in 0..<100 { cache.setValue(i, forKey: i, cost: 1, timeToLive: i % 2 == 0 ? .zero : nil) }
            #expect(cache.totalCount == 100)
            trim(cache)
            #expect(cache.totalCount == 50)
            #expect(cache.totalCost == 50)
            for i in 0..<100 { #expect(cache.containsValue(forKey: i) == (i % 2 == 1)) }
        }
    }

    @Test func valuesNotKnownSendableExpireOnTheCallersThread() {
        let tracker = LifetimeTracker()
        func fill<V>(_ cache: MemoryCache<Int, V>, _ make: (Int) -> V) {
            for i in 0..<10 { cache.setValue(make(i), forKey: i, timeToLive: .zero) }
        }
        do {
            let cache = MemoryCache<Int, Tracked>.makeGeneric()
            fill(cache, tracker.make)
            #expect(tracker.liveCount == 10)
            cache.trim(toCount: 100)
            #expect(cache.totalCount == 0)
            #expect(tracker.liveCount == 0)  // released in the trim, on this thread
        }
    }
}

extension MemoryCache {
    /// A cache made in a generic context (values released on callers' threads only).
    fileprivate static func makeGeneric() -> MemoryCache<Key, Value> { MemoryCache<Key, Value>() }
}
