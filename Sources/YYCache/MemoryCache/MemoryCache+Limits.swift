import CYYCache
import Dispatch

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension MemoryCache {
    /// The maximum number of entries (a soft limit). Default `Int.max`: no limit.
    ///
    /// When a set makes the count exceed the limit, the least recently used entry is evicted
    /// before the set returns (one per set); the auto-trim and ``trim(toCount:)`` remove the
    /// rest. A negative limit is stored as 0.
    ///
    /// The corresponding C functions are `yyc_memcache_count_limit` and
    /// `yyc_memcache_set_count_limit`.
    public var countLimit: Int {
        get { afterReleasing(MemoryCacheLimit.fromC(yyc_memcache_count_limit(handle))) }
        set {
            yyc_memcache_set_count_limit(handle, MemoryCacheLimit.toC(newValue))
            releaseHandedBackValues()
        }
    }

    /// The maximum total cost (a soft limit). Default `Int.max`: no limit.
    ///
    /// When a set makes the total cost exceed the limit, a trim is scheduled on the background
    /// worker, so ``totalCost`` may exceed the limit for a moment (as in YYMemoryCache). A
    /// negative limit is stored as 0.
    ///
    /// The corresponding C functions are `yyc_memcache_cost_limit` and
    /// `yyc_memcache_set_cost_limit`.
    public var costLimit: Int {
        get { afterReleasing(MemoryCacheLimit.fromC(yyc_memcache_cost_limit(handle))) }
        set {
            yyc_memcache_set_cost_limit(handle, MemoryCacheLimit.toC(newValue))
            releaseHandedBackValues()
        }
    }

    /// The maximum time since an entry was last read or set, enforced by the auto-trim and
    /// ``trim(toAge:)-(Duration)``. Default `nil`: no limit. A negative duration is stored as zero.
    ///
    /// The corresponding C functions are `yyc_memcache_age_limit` and
    /// `yyc_memcache_set_age_limit`.
    public var maximumAge: Duration? {
        get { DurationLimit.limitDuration(seconds: afterReleasing(yyc_memcache_age_limit(handle))) }
        set {
            yyc_memcache_set_age_limit(handle, DurationLimit.limitSeconds(newValue))
            releaseHandedBackValues()
        }
    }

    /// The time between background trims (cost, then count, then age). Default 5 seconds;
    /// `nil` (or zero) pauses the auto-trim. A change takes effect at once.
    ///
    /// The corresponding C functions are `yyc_memcache_auto_trim_interval` and
    /// `yyc_memcache_set_auto_trim_interval`.
    public var autoTrimPeriod: Duration? {
        get { DurationLimit.periodDuration(seconds: afterReleasing(yyc_memcache_auto_trim_interval(handle))) }
        set {
            yyc_memcache_set_auto_trim_interval(handle, DurationLimit.periodSeconds(newValue))
            releaseHandedBackValues()
        }
    }

    /// YYCache's spelling of ``maximumAge``: seconds, `.greatestFiniteMagnitude` (also
    /// `.infinity` and NaN) for no limit.
    @available(*, deprecated, message: "use maximumAge (a Duration; nil: no limit)")
    public var ageLimit: TimeInterval {
        get { afterReleasing(yyc_memcache_age_limit(handle)) }
        set {
            yyc_memcache_set_age_limit(handle, newValue)
            releaseHandedBackValues()
        }
    }

    /// YYCache's spelling of ``autoTrimPeriod``: seconds, a value `<= 0` pauses the auto-trim.
    @available(*, deprecated, message: "use autoTrimPeriod (a Duration; nil: paused)")
    public var autoTrimInterval: TimeInterval {
        get { afterReleasing(yyc_memcache_auto_trim_interval(handle)) }
        set {
            yyc_memcache_set_auto_trim_interval(handle, newValue)
            releaseHandedBackValues()
        }
    }

    /// Evicts least recently used entries until at most `count` remain. 0 (or a negative
    /// count) removes everything; `Int.max` does nothing.
    ///
    /// Runs on the calling thread, one eviction per lock acquisition, so other threads
    /// interleave. Evicted values are released per ``releasesValuesAsynchronously`` (on the
    /// calling thread for values that are not `Sendable`).
    ///
    /// - Parameters:
    ///   - count: The number of entries to keep at most.
    /// - Complexity: O(*k*) for *k* evicted entries.
    ///
    /// The corresponding C function is `yyc_memcache_trim_to_count`.
    public func trim(toCount count: Int) {
        yyc_memcache_trim_to_count(handle, MemoryCacheLimit.toC(count))
        releaseHandedBackValues()
    }

    /// Evicts least recently used entries until the total cost is at most `cost`. 0 (or a
    /// negative cost) removes everything; `Int.max` does nothing.
    ///
    /// - Parameters:
    ///   - cost: The total cost to keep at most.
    /// - Complexity: O(*k*) for *k* evicted entries.
    ///
    /// The corresponding C function is `yyc_memcache_trim_to_cost`.
    public func trim(toCost cost: Int) {
        yyc_memcache_trim_to_cost(handle, MemoryCacheLimit.toC(cost))
        releaseHandedBackValues()
    }

    /// Evicts every entry not read or set in the last `age`. Zero (or a negative age) removes
    /// everything.
    ///
    /// - Parameters:
    ///   - age: The time since the last access to keep entries for.
    /// - Complexity: O(*k*) for *k* evicted entries.
    ///
    /// The corresponding C function is `yyc_memcache_trim_to_age`.
    public func trim(toAge age: Duration) {
        yyc_memcache_trim_to_age(handle, max(0, age.seconds))
        releaseHandedBackValues()
    }

    /// YYCache's spelling of ``trim(toAge:)-(Duration)``: seconds; `.greatestFiniteMagnitude`
    /// does nothing.
    @available(*, deprecated, message: "use trim(toAge:) with a Duration")
    public func trim(toAge age: TimeInterval) {
        yyc_memcache_trim_to_age(handle, age)
        releaseHandedBackValues()
    }
}

// Release policies send values to other threads: only for Sendable values.
extension MemoryCache where Value: Sendable {
    /// Whether removed, replaced, evicted and trimmed values are released on the library's
    /// background worker thread (`true`, the default) or on the calling thread before the call
    /// returns (`false`). Values evicted by a background trim are always released on the worker.
    /// The worker releases in batches, about a millisecond after the first value of a batch was
    /// removed, so that a stream of writes wakes it about once a millisecond, not once per write.
    ///
    /// Only where `Value: Sendable`: a cache of other values releases them on its callers'
    /// threads only (see "Values that are not `Sendable`" on ``MemoryCache``). A cache created
    /// by the general `init(name:)` (in a generic context) reads `false`; setting
    /// this property (either way) gives it the `Sendable` behaviour, background trims included.
    ///
    /// The corresponding C functions are `yyc_memcache_release_asynchronously` and
    /// `yyc_memcache_set_release_asynchronously`.
    public var releasesValuesAsynchronously: Bool {
        get { afterReleasing(yyc_memcache_release_asynchronously(handle)) }
        set {
            yyc_memcache_set_release_asynchronously(handle, newValue)
            allowReleasesOnAnyThread()
        }
    }

    /// Whether values are released on the main thread: a value whose release would happen
    /// elsewhere is sent to `DispatchQueue.main` and released there. Default `false`.
    ///
    /// "Main thread" means the main thread or the main queue: on Linux, `dispatchMain()` and an
    /// async `main` exit the main thread and drain the main queue on another thread, so a
    /// release already running on the main queue happens in place. The main queue must be
    /// serviced (by `dispatchMain()`, a run loop or an async `main`), or those values are never
    /// released. Swift only: the C core knows nothing of the main thread.
    ///
    /// Only where `Value: Sendable`, like ``releasesValuesAsynchronously``; setting it gives a
    /// cache created in a generic context the `Sendable` behaviour too.
    public var releasesValuesOnMainThread: Bool {
        get { afterReleasing(events.releasesOnMainThread.load(ordering: .relaxed)) }
        set {
            events.releasesOnMainThread.store(newValue, ordering: .relaxed)
            allowReleasesOnAnyThread()
        }
    }

    /// Lets the C core release values where it drops them (`Value: Sendable` is known here),
    /// after releasing those handed back so far.
    private func allowReleasesOnAnyThread() {
        events.releasesOnCallersOnly.store(false, ordering: .relaxed)
        releaseHandedBackValues()
    }
}
