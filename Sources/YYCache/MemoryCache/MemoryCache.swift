import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A fast, thread-safe, in-memory key-value cache with least-recently-used eviction
/// (YYMemoryCache).
///
/// Entries live in the C core's hash table threaded onto a doubly linked list in access order;
/// lookups, inserts and removals are O(1). Limits on count, cost and age are soft: count eviction
/// happens during `setValue` (one entry per call), cost eviction runs in the background, and an
/// auto-trim runs every ``autoTrimPeriod``.
///
/// Storage depends on `Value`: values of up to 64 bytes (`Int`,
/// `Data`, `String`, small structs) are copied into the C entry itself; class instances are
/// owned by the C core through retain/release callbacks; larger values are boxed in a class
/// owned the same way. A lookup copies (or retains) the value under the cache's lock, so a
/// concurrent replacement can never free it under the reader (YYCache's PR #153 race). No user
/// code (value `deinit`, event handlers) runs while the lock is held, so both may call back into
/// the cache.
///
/// ```swift
/// let cache = MemoryCache<String, Image>(name: "thumbnails")
/// cache.countLimit = 500
/// cache.setValue(image, forKey: url.absoluteString, cost: image.byteCount)
/// if let hit = cache["https://example.com/a.png"] { show(hit) }
/// ```
///
/// The type is `Sendable` when `Value` is: all shared state lives behind the C cache's pthread
/// mutex (`yyc_memcache.lock`), except ``name`` and the event handlers, which are Swift-only
/// and kept behind a lock of their own.
///
/// ## Values that are not `Sendable`
///
/// A value is never released, copied or destroyed on a thread other than the caller's unless
/// `Value` is `Sendable` (so a non-`Sendable` value's `deinit` never runs concurrently with
/// the code that owns the cache). Which rule applies is fixed where the cache is created:
///
/// - `init(name:)` where `Value: Sendable` is statically known gives YYMemoryCache's
///   behaviour: values are released on the library's background worker by default
///   (``releasesValuesAsynchronously``), and the entries removed by background trims (the cost
///   limit, the auto-trim) are released there too.
/// - `init(name:)` for any other `Value` (a non-`Sendable` class, or a generic `Value` not
///   constrained to `Sendable`) releases values only in the calls of the cache's users, on
///   their thread: a removed, replaced, evicted or trimmed value is released before the call
///   returns, and the entries that the background worker evicts (cost limit, auto-trim) are
///   only unlinked there; their values are handed back and released by the next call to
///   ``value(forKey:)``, ``setValue(_:forKey:cost:)``, ``removeValue(forKey:)``,
///   ``removeAllValues()``, a trim, ``handleMemoryWarning()`` or ``handleEnterBackground()``,
///   or by the cache's `deinit`, whichever comes first. Nothing else changes: limits, trims
///   and the auto-trim work as above.
///
/// ``releasesValuesAsynchronously`` and ``releasesValuesOnMainThread`` exist only where
/// `Value: Sendable` (they send values to other threads). Setting either one on a cache created
/// in a generic context switches it to the first behaviour.
///
/// Keys live in the C core as bytes. ``keys`` and ``didRemoveValue`` rebuild keys of the
/// library's own ``CacheKey`` types (`String`, `Substring`, `Int`, `Int64`, `UInt64`, `UUID`,
/// `Data`, `[UInt8]`) from those bytes; a cache keyed by any other type keeps each key next to
/// its value instead (every value is then boxed with its key: one allocation per set, as for
/// large values).
///
/// Values stored inline are moved in and out of the C entries with `memcpy` only when Swift
/// says the type is bitwise takable (most Swift types); other types (values holding a `weak`
/// reference, C++ types with a copy or move constructor or a destructor, imported with C++
/// interoperability) are boxed, so no user code ever runs under the cache's lock (see
/// `MemoryCacheStorage`).
///
/// The corresponding C type is `yyc_memcache`.
public final class MemoryCache<Key: CacheKey, Value> {
    /// Swift-only properties (the C core does not know them).
    struct State {
        var name: String?
    }

    /// The C cache (`yyc_memcache *`), owned; freed in `deinit`.
    @usableFromInline
    let handle: OpaquePointer

    /// The C callbacks' context; it must outlive `handle` (which retains it until freed).
    @usableFromInline
    let events: MemoryCacheEvents<Key, Value>

    /// Whether values are class instances stored in the C core as they are, without a box
    /// (see ``MemoryCacheBox``): the C core's retain/release callbacks then own the objects
    /// themselves, which saves an allocation per set and a retain/release pair per get.
    /// A static property, so a specialized get or set folds it to a constant.
    @inlinable
    static var storesObjectsDirectly: Bool {
        MemoryCacheStorage<Value>.storesObjects && !storesKeysWithValues
    }

    /// Whether values are stored inline in the C entries (see `MemoryCacheStorage`); folds
    /// to a constant like ``storesObjectsDirectly``.
    @inlinable
    static var storesValuesInline: Bool {
        MemoryCacheStorage<Value>.storesInline && !storesKeysWithValues
    }

    /// Whether each value is stored with its key in a ``MemoryCacheKeyedBox``: keys of a type
    /// that cannot be rebuilt from their bytes (``CacheKeyRebuild``), so that ``keys`` and
    /// removal events can return them. Folds to a constant like ``storesObjectsDirectly``.
    @inlinable
    static var storesKeysWithValues: Bool { !CacheKeyRebuild<Key>.isSupported }

    let state: Protected<State>

    /// The async loads under way (``value(forKey:cost:orLoad:)``, async).
    let asyncLoads = AsyncLoadFlights<Key, Value>()

    /// Creates an empty cache for values that may not be `Sendable`: YYMemoryCache's defaults
    /// (no count, cost or age limit, an auto-trim every 5 seconds, remove-all on memory warning
    /// and when entering the background), except that values are released only on the threads
    /// of the cache's callers (see "Values that are not `Sendable`" above):
    /// ``releasesValuesAsynchronously`` is `false`.
    ///
    /// Where `Value` is known to be `Sendable`, the overload in the `Value: Sendable` extension
    /// is chosen instead.
    ///
    /// - Parameters:
    ///   - name: A name for debugging (``description``).
    /// - Complexity: O(1).
    ///
    /// The corresponding C function is `yyc_memcache_new` (or `yyc_memcache_new_inline`),
    /// followed by `yyc_memcache_set_release_asynchronously(false)`.
    @inlinable
    public convenience init(name: String? = nil) {
        // Inlined so that the inline-value operations are specialized for Value here.
        let needsOps = Self.storesValuesInline && !MemoryCacheStorage<Value>.isTrivial
        self.init(
            name: name, inlineOps: needsOps ? MemoryCacheInlineOps(for: Value.self) : .none,
            releasesOnCallersOnly: true)
    }

    /// Creates the cache; `inlineOps` are the value type's operations when values are stored
    /// inline and not trivial (``MemoryCacheInlineOps/none`` otherwise). With
    /// `releasesOnCallersOnly`, values are released only in the callers' calls (synchronous
    /// release, background evictions handed back).
    @usableFromInline
    init(
        name: String?, inlineOps: MemoryCacheInlineOps, releasesOnCallersOnly: Bool,
        policy: EvictionPolicy = .lru
    ) {
        let events = MemoryCacheEvents<Key, Value>(
            inlineOps: inlineOps, storesInline: Self.storesValuesInline,
            inlineSize: MemoryCacheStorage<Value>.inlineSize,
            inlineAlignment: MemoryLayout<Value>.alignment, releasesOnCallersOnly: releasesOnCallersOnly)
        var handle: OpaquePointer?
        let status: Int32
        if Self.storesValuesInline {
            var type = events.inlineValueType(
                size: MemoryCacheStorage<Value>.inlineSize, alignment: MemoryLayout<Value>.alignment,
                trivial: MemoryCacheStorage<Value>.isTrivial, directCopy: memoryCacheDirectCopy(for: Value.self))
            status = yyc_memcache_new_inline(&type, &handle)
        } else {
            var callbacks = events.valueCallbacks()
            status = yyc_memcache_new(&callbacks, &handle)
        }
        guard status == 0, let handle else {
            // Only allocation can fail; Swift treats running out of memory as fatal too.
            fatalError("yyc_memcache_new failed: \(String(cString: yyc_strerror(status)))")
        }
        if releasesOnCallersOnly { yyc_memcache_set_release_asynchronously(handle, false) }
        yyc_memcache_set_policy(handle, policy.cValue)  // cannot fail on a new cache
        self.handle = handle
        self.events = events
        self.state = Protected(State(name: name))
        events.retainUntilFreed(by: handle)
        events.installEventHandlers(on: handle)
        Self.answerSystemMemoryPressureByDefault(handle, releasesOnCallersOnly: releasesOnCallersOnly)
    }

    deinit {
        // Removes every entry and returns once every value has been released (values sent to
        // the main queue by `releasesValuesOnMainThread` are released later, on that queue).
        // Values handed back by the worker (callers-only release) are released here, on the
        // thread that drops the cache.
        // When a value released by this cache held the last reference to it, this deinit runs
        // inside that release: the C core then frees the cache once it has finished releasing,
        // and keeps `events` alive until then.
        yyc_memcache_free(handle)
        events.releaseHandedBackValues()
    }

    /// Releases, on the calling thread, the values the C core handed back instead of releasing
    /// them (callers-only release; see "Values that are not `Sendable`"). One atomic load when
    /// there are none.
    @inlinable
    func releaseHandedBackValues() {
        if events.hasHandedBackValues { events.releaseHandedBackValues() }
    }

    /// `result`, once the values handed back to this thread are released: every call of the
    /// cache ends so (a cache of values that are not `Sendable` keeps what the worker removed
    /// only until its owner's next call, whichever call that is).
    @inlinable
    func afterReleasing<R>(_ result: R) -> R {
        releaseHandedBackValues()
        return result
    }

    /// A name for debugging; it appears in ``description``. Default `nil`.
    public var name: String? {
        get { afterReleasing(state.withLock { $0.name }) }
        set {
            state.withLock { $0.name = newValue }
            releaseHandedBackValues()
        }
    }

    /// The number of entries.
    ///
    /// - Complexity: O(1).
    ///
    /// The corresponding C function is `yyc_memcache_total_count`.
    public var totalCount: Int {
        afterReleasing(MemoryCacheLimit.fromC(yyc_memcache_total_count(handle)))
    }

    /// The sum of the entries' costs; saturates at `Int.max`.
    ///
    /// - Complexity: O(1).
    ///
    /// The corresponding C function is `yyc_memcache_total_cost`.
    public var totalCost: Int {
        afterReleasing(MemoryCacheLimit.fromC(yyc_memcache_total_cost(handle)))
    }

    /// Whether the cache has a value for `key`. Changes neither the LRU order nor the entry's
    /// access time.
    ///
    /// - Parameters:
    ///   - key: The key; any key is valid, the empty one included.
    /// - Returns: `true` if an entry exists.
    /// - Complexity: O(1) (plus the key's byte length, for hashing).
    ///
    /// The corresponding C function is `yyc_memcache_contains`.
    @inlinable
    public func containsValue(forKey key: Key) -> Bool {
        let handle = self.handle  // the closure then captures a pointer, not self (no retain)
        return afterReleasing(key.withCacheKeyBytes { yyc_memcache_contains(handle, $0.baseAddress, $0.count) })
    }

    /// The value for `key`, or `nil`. A hit makes the entry the most recently used and
    /// refreshes its access time.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: The value, or `nil` on a miss.
    /// - Complexity: O(1) (plus the key's byte length, for hashing).
    ///
    /// The corresponding C function is `yyc_memcache_get`.
    @inlinable @inline(__always)
    public func value(forKey key: Key) -> Value? {
        let handle = self.handle  // the closure then captures a pointer, not self (no retain)
        if Self.storesValuesInline {
            // The C core copies the value into our buffer under its lock (a copy we own). The
            // closure returns nothing: returning the value through withUnsafeTemporaryAllocation
            // costs an outlined copy and destroy of a Result per call.
            var result: Value? = nil
            withUnsafeTemporaryAllocation(
                byteCount: MemoryCacheStorage<Value>.inlineSize, alignment: MemoryLayout<Value>.alignment
            ) { buffer in
                let bytes = buffer.baseAddress!
                let status = key.withCacheKeyBytes {
                    yyc_memcache_get_inline(handle, $0.baseAddress, $0.count, bytes)
                }
                if status == 0 { result = bytes.assumingMemoryBound(to: Value.self).move() }
            }
            releaseHandedBackValues()
            return result
        }
        releaseHandedBackValues()
        var out: UnsafeMutableRawPointer?
        let status = key.withCacheKeyBytes { yyc_memcache_get(handle, $0.baseAddress, $0.count, &out) }
        guard status == 0, let out else { return nil }
        // The C core retained the object under its lock and transferred that reference to us.
        return Self.takeValue(retained: out)
    }

    /// Stores `value` for `key` (replacing any previous value) and makes the entry the most
    /// recently used; `nil` removes the entry.
    ///
    /// If the total cost then exceeds ``costLimit``, a background trim is scheduled; if the
    /// count exceeds ``countLimit``, the least recently used entry is evicted before returning.
    /// A replaced or evicted value is released per ``releasesValuesAsynchronously``.
    ///
    /// - Parameters:
    ///   - value: The value, or `nil` to remove the entry.
    ///   - key: The key; any key is valid, the empty one included.
    ///   - cost: The entry's cost (for ``costLimit``); a negative cost counts as 0.
    /// - Complexity: O(1) amortized.
    ///
    /// The corresponding C function is `yyc_memcache_set`.
    @inlinable
    public func setValue(_ value: Value?, forKey key: Key, cost: Int = 0) {
        guard let value else {
            removeValue(forKey: key)
            return
        }
        store(value, forKey: key, cost: cost, timeToLive: nil)
    }

    /// Stores `value` for `key` with `seconds` to live (>= 0, or `.infinity` for never), or
    /// with the cache's ``defaultTimeToLive`` when `seconds` is `nil`. Shared by the sets
    /// (inlined, so `nil` folds away for the plain set).
    ///
    /// The corresponding C functions are `yyc_memcache_set`, `yyc_memcache_set_inline` (for
    /// `nil`), `yyc_memcache_set_with_ttl` and `yyc_memcache_set_inline_with_ttl`.
    @inlinable
    func store(_ value: Value, forKey key: Key, cost: Int, timeToLive seconds: Double?) {
        let cCost = cost > 0 ? cost : 0
        let handle = self.handle  // the closures then capture a pointer, not self (no retain)
        if Self.storesValuesInline {
            // A copy of the value is moved into the C entry; on failure (ENOMEM, which leaves
            // the cache unchanged) it is still ours to destroy.
            withUnsafeTemporaryAllocation(
                byteCount: MemoryCacheStorage<Value>.inlineSize, alignment: MemoryLayout<Value>.alignment
            ) { buffer in
                let bytes = buffer.baseAddress!
                let typed = bytes.initializeMemory(as: Value.self, to: value)
                let status = key.withCacheKeyBytes {
                    if let seconds {
                        return yyc_memcache_set_inline_with_ttl(
                            handle, $0.baseAddress, $0.count, bytes, cCost, seconds)
                    }
                    return yyc_memcache_set_inline(handle, $0.baseAddress, $0.count, bytes, cCost)
                }
                if status != 0 { typed.deinitialize(count: 1) }
            }
            releaseHandedBackValues()
            return
        }
        // The C core takes its own reference (retain callback) before set returns; ours ends
        // after the call. ENOMEM is the only failure and leaves the cache unchanged. Class
        // instances are stored as they are, other values in a box.
        let object = Self.object(for: value, key: key)
        withExtendedLifetime(object) {
            let pointer = Unmanaged.passUnretained(object).toOpaque()
            _ = key.withCacheKeyBytes {
                if let seconds {
                    return yyc_memcache_set_with_ttl(handle, $0.baseAddress, $0.count, pointer, cCost, seconds)
                }
                return yyc_memcache_set(handle, $0.baseAddress, $0.count, pointer, cCost)
            }
        }
        releaseHandedBackValues()
    }

    /// Removes the entry for `key`, if any. The value is released per
    /// ``releasesValuesAsynchronously``.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Complexity: O(1).
    ///
    /// The corresponding C function is `yyc_memcache_remove`.
    @inlinable
    public func removeValue(forKey key: Key) {
        let handle = self.handle  // the closure then captures a pointer, not self (no retain)
        _ = key.withCacheKeyBytes { yyc_memcache_remove(handle, $0.baseAddress, $0.count) }
        releaseHandedBackValues()
    }

    /// Removes every entry. The values are released per ``releasesValuesAsynchronously``.
    ///
    /// - Complexity: O(*n*) (with asynchronous release, the releases themselves happen on the
    ///   background worker).
    ///
    /// The corresponding C function is `yyc_memcache_remove_all`.
    public func removeAllValues() {
        yyc_memcache_remove_all(handle)
        releaseHandedBackValues()
    }

    /// The value for `key`; setting `nil` removes the entry. Equivalent to ``value(forKey:)``
    /// and ``setValue(_:forKey:cost:)`` with cost 0.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Complexity: O(1).
    @inlinable
    public subscript(key: Key) -> Value? {
        get { value(forKey: key) }
        set { setValue(newValue, forKey: key) }
    }
}

// Sendable when Value is: every entry and limit is guarded by the C cache's pthread mutex
// (`yyc_memcache.lock`, taken at the top of each yyc_memcache_* call); `name` and the handlers
// are behind a Protected lock; `handle` and `events` are immutable.
extension MemoryCache: @unchecked Sendable where Value: Sendable {}

extension MemoryCache where Value: Sendable {
    /// Creates an empty cache with YYMemoryCache's defaults: no count, cost or age limit, an
    /// auto-trim every 5 seconds, remove-all on memory warning and when entering the
    /// background, values released asynchronously (on the library's background worker).
    ///
    /// Chosen wherever `Value` is known to be `Sendable`; elsewhere the general
    /// ``init(name:)`` releases values on the callers' threads only.
    ///
    /// - Parameters:
    ///   - name: A name for debugging (``description``).
    /// - Complexity: O(1).
    ///
    /// The corresponding C function is `yyc_memcache_new` (or `yyc_memcache_new_inline`).
    @inlinable
    public convenience init(name: String? = nil) {
        let needsOps = Self.storesValuesInline && !MemoryCacheStorage<Value>.isTrivial
        self.init(
            name: name, inlineOps: needsOps ? MemoryCacheInlineOps(for: Value.self) : .none,
            releasesOnCallersOnly: false)
    }
}

extension MemoryCache: CustomStringConvertible {
    /// `<MemoryCache<Key, Value>: 0x...> (name)`, or without the name.
    public var description: String {
        let address = "0x" + String(UInt(bitPattern: ObjectIdentifier(self).hashValue), radix: 16)
        let head = "<MemoryCache<\(Key.self), \(Value.self)>: \(address)>"
        if let name { return "\(head) (\(name))" }
        return head
    }
}
