import CYYCache

extension MemoryCache {
    /// Creates an empty cache that evicts by `policy`, with YYMemoryCache's other defaults (see
    /// ``init(name:)``).
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
            policy: policy)
    }

    /// The eviction policy chosen at creation (``EvictionPolicy/lru`` by default).
    ///
    /// The corresponding C function is `yyc_memcache_policy`.
    public var policy: EvictionPolicy {
        EvictionPolicy(cValue: yyc_memcache_policy(handle))
    }
}
