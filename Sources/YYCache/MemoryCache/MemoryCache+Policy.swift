import CYYCache

extension MemoryCache {
    /// Creates an empty cache that evicts by `policy`, with the other defaults of the general
    /// `init(name:)`: values are released on the callers' threads only. Where `Value` is known
    /// to be `Sendable`, the overload in the `Value: Sendable` extension is chosen instead.
    ///
    /// - Parameters:
    ///   - name: A name for debugging (``description``).
    ///   - policy: The eviction policy, fixed for the cache's life.
    /// - Complexity: O(1).
    ///
    /// The corresponding C functions are `yyc_memcache_new` (or `yyc_memcache_new_inline`) and
    /// `yyc_memcache_set_policy`.
    @inlinable
    public convenience init(name: String? = nil, policy: EvictionPolicy) {
        // Inlined so that the inline-value operations are specialized for Value here.
        let needsOps = Self.storesValuesInline && !MemoryCacheStorage<Value>.isTrivial
        self.init(
            name: name, inlineOps: needsOps ? MemoryCacheInlineOps(for: Value.self) : .none,
            releasesOnCallersOnly: true, policy: policy)
    }

    /// The eviction policy chosen at creation (``EvictionPolicy/lru`` by default).
    ///
    /// The corresponding C function is `yyc_memcache_policy`.
    public var policy: EvictionPolicy {
        afterReleasing(EvictionPolicy(cValue: yyc_memcache_policy(handle)))
    }
}

extension MemoryCache where Value: Sendable {
    /// Creates an empty cache that evicts by `policy`, with YYMemoryCache's other defaults
    /// (values released asynchronously, off the caller's thread).
    ///
    /// - Parameters:
    ///   - name: A name for debugging (``description``).
    ///   - policy: The eviction policy, fixed for the cache's life.
    /// - Complexity: O(1).
    ///
    /// The corresponding C functions are `yyc_memcache_new` (or `yyc_memcache_new_inline`) and
    /// `yyc_memcache_set_policy`.
    @inlinable
    public convenience init(name: String? = nil, policy: EvictionPolicy) {
        let needsOps = Self.storesValuesInline && !MemoryCacheStorage<Value>.isTrivial
        self.init(
            name: name, inlineOps: needsOps ? MemoryCacheInlineOps(for: Value.self) : .none,
            releasesOnCallersOnly: false, policy: policy)
    }
}
