import CYYCache
import Foundation
import Synchronization
import Testing

@testable import YYCache

#if canImport(Glibc)
    import Glibc
#endif

/// Records the thread of every deinit of a ``ThreadBound`` value.
private final class DeinitLog: Sendable {
    let threads = Mutex<[UInt]>([])
    var count: Int { threads.withLock { $0.count } }
    /// The deinits that ran on a thread other than `owner`.
    func elsewhere(than owner: UInt) -> Int { threads.withLock { $0.filter { $0 != owner }.count } }
}

/// A class that is not `Sendable` (a mutable stored property): its deinit must run only on
/// the thread that owns the cache.
private final class ThreadBound {
    var touched = 0
    let log: DeinitLog
    init(_ log: DeinitLog) { self.log = log }
    deinit { log.threads.withLock { $0.append(currentThreadID()) } }
}

/// Stored inline (16 bytes, not trivial).
private struct InlineBound {
    let object: ThreadBound
    var extra = 0
}

/// Too large to be stored inline: boxed.
private struct BoxedBound {
    let object: ThreadBound
    var pad: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
}

/// What ``dropEveryWay(_:nextCall:make:)`` saw.
private struct Drops: Sendable {
    var made = 0
    var released = 0
    /// Deinits that ran on a thread other than the cache owner's.
    var releasedElsewhere = 0
    /// Values the worker's auto-trim evicted, still alive until the owner's next call.
    var evictedByTheWorkerAndKept = 0
    /// Whether every value had been released once the owner's next call returned.
    var allReleasedAfterTheNextCall = false
}

/// Runs every path that drops values (replace, count eviction, cost eviction by the background
/// worker, the three trims, the auto-trim, removeAll, memory warning, enter background, deinit)
/// on one thread that owns a cache of non-Sendable values. `nextCall` is the owner's call after
/// the worker's auto-trim: any call of the cache releases what the worker handed back.
private func dropEveryWay<V>(
    _: V.Type, nextCall: @escaping @Sendable (MemoryCache<Int, V>) -> Void,
    make: @escaping @Sendable (DeinitLog) -> V
) -> Drops {
    let log = DeinitLog()
    let result = Mutex(Drops())
    onThreads(1) { _ in
        var drops = Drops()
        func value() -> V {
            drops.made += 1
            return make(log)
        }
        do {
            let cache = MemoryCache<Int, V>()
            cache.autoTrimPeriod = .milliseconds(10)  // the worker trims all the time
            for i in 0..<10 { cache.setValue(value(), forKey: i) }
            for i in 0..<10 { cache.setValue(value(), forKey: i) }  // replaced
            cache.countLimit = 5
            for i in 10..<20 { cache.setValue(value(), forKey: i) }  // evicted by count, on set
            cache.countLimit = .max
            cache.costLimit = 10
            for i in 20..<40 { cache.setValue(value(), forKey: i, cost: 5) }  // worker's cost trim
            // Until the worker has handed back every value it evicted (it unlinks first, hands
            // back after: under TSan the calls below could otherwise overtake it).
            _ = eventually(timeout: .seconds(60)) {
                yyc_memcache_total_cost(cache.handle) <= 10
                    && drops.made - log.count - yyc_memcache_total_count(cache.handle)
                        == cache.events.handedBack.withLock { $0.count }
            }
            _ = cache.totalCost  // releases them here
            cache.costLimit = .max
            for i in 40..<60 { cache.setValue(value(), forKey: i, cost: 1) }
            cache.trim(toCount: 15)
            cache.trim(toCost: 10)
            cache.trim(toAge: .zero)
            // The auto-trim evicts these by age, on the worker; they wait for this thread.
            for i in 60..<70 { cache.setValue(value(), forKey: i) }
            cache.maximumAge = .zero
            // Until every live value is handed back: the worker takes entries out first and
            // hands their values back after, so an empty cache alone can come a moment early.
            // (Up to a minute: the worker is shared with the tests that run meanwhile, and
            // under TSan on a loaded machine it once took more than the default 10 s.)
            // (Reads the C count: every call of the cache would release them.)
            _ = eventually(timeout: .seconds(60)) {
                yyc_memcache_total_count(cache.handle) == 0
                    && drops.made - log.count == cache.events.handedBack.withLock { $0.count }
            }
            drops.evictedByTheWorkerAndKept = drops.made - log.count
            nextCall(cache)  // takes them back and releases them here
            drops.allReleasedAfterTheNextCall = log.count == drops.made
            cache.maximumAge = nil
            cache.autoTrimPeriod = nil
            for i in 0..<10 { cache.setValue(value(), forKey: i) }
            cache.removeAllValues()
            for i in 0..<10 { cache.setValue(value(), forKey: i) }
            cache.handleMemoryWarning()
            for i in 0..<10 { cache.setValue(value(), forKey: i) }
            cache.handleEnterBackground()
            for i in 0..<10 { cache.setValue(value(), forKey: i) }  // left for deinit
            cache.removeValue(forKey: 3)
        }
        drops.released = log.count
        drops.releasedElsewhere = log.elsewhere(than: currentThreadID())
        result.withLock { $0 = drops }
    }
    return result.withLock { $0 }
}

@Suite struct MemoryCacheNonSendableTests {
    @Test func nonSendableObjectsAreReleasedOnlyOnTheOwnersThread() {
        let drops = dropEveryWay(ThreadBound.self, nextCall: { _ = $0.totalCount }, make: { ThreadBound($0) })
        #expect(drops.made > 100)
        #expect(drops.released == drops.made)
        #expect(drops.releasedElsewhere == 0)
        #expect(drops.evictedByTheWorkerAndKept == 10)
        #expect(drops.allReleasedAfterTheNextCall)
    }

    @Test func nonSendableInlineValuesAreDestroyedOnlyOnTheOwnersThread() {
        #expect(MemoryCache<Int, InlineBound>.storesValuesInline)
        let drops = dropEveryWay(
            InlineBound.self, nextCall: { _ = $0.countLimit }, make: { InlineBound(object: ThreadBound($0)) })
        #expect(drops.made > 100)
        #expect(drops.released == drops.made)
        #expect(drops.releasedElsewhere == 0)
        #expect(drops.evictedByTheWorkerAndKept == 10)
        #expect(drops.allReleasedAfterTheNextCall)
    }

    @Test func nonSendableBoxedValuesAreReleasedOnlyOnTheOwnersThread() {
        #expect(!MemoryCache<Int, BoxedBound>.storesValuesInline)
        let drops = dropEveryWay(
            BoxedBound.self, nextCall: { _ = $0.statistics }, make: { BoxedBound(object: ThreadBound($0)) })
        #expect(drops.made > 100)
        #expect(drops.released == drops.made)
        #expect(drops.releasedElsewhere == 0)
        #expect(drops.evictedByTheWorkerAndKept == 10)
        #expect(drops.allReleasedAfterTheNextCall)
    }

    @Test func aCacheMadeInAGenericContextReleasesOnCallersUntilToldOtherwise() {
        func makeCache<V>(_: V.Type) -> MemoryCache<Int, V> { MemoryCache() }
        let tracker = LifetimeTracker()
        let cache = makeCache(Tracked.self)  // Tracked is Sendable, but not known to be here
        #expect(!cache.releasesValuesAsynchronously)
        cache[1] = tracker.make(1)
        cache.removeValue(forKey: 1)
        #expect(tracker.liveCount == 0)  // released before the call returned
        #expect(tracker.lastDeinitThread.load(ordering: .relaxed) == currentThreadID())

        cache.releasesValuesAsynchronously = true  // Value: Sendable is known here
        let released = Mutex<[UInt]>([])
        for i in 0..<50 {
            cache[i] = Tracked(i, tracker: tracker) { released.withLock { $0.append(currentThreadID()) } }
        }
        cache.removeAllValues()
        #expect(eventually { tracker.liveCount == 0 })
        let threads = released.withLock { $0 }
        #expect(threads.count == 50)
        #expect(!threads.contains(currentThreadID()))  // the background worker released them
    }

    @Test func sendableValuesKeepYYMemoryCachesAsynchronousRelease() {
        let cache = MemoryCache<Int, Tracked>()
        #expect(cache.releasesValuesAsynchronously)
        let direct = cache.events.releasesOnCallersOnly.load(ordering: .relaxed)
        #expect(!direct)
        let nonSendable = MemoryCache<Int, ThreadBound>()
        let callersOnly = nonSendable.events.releasesOnCallersOnly.load(ordering: .relaxed)
        #expect(callersOnly)
    }
}
