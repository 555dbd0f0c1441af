import CYYCache

// Write generations (memory_cache.h): conditional writes for a cache that fills memory from a
// slower store it also writes. ``Cache`` uses them so that a read that went to the disk never
// copies a value into memory after a newer set or a remove (see ``Cache``'s guarantee).
extension MemoryCache {
    /// The key's write generation: a number that changes whenever the key is set or removed
    /// through this cache (``setValue(_:forKey:cost:)``, ``removeValue(forKey:)``,
    /// ``removeAllValues()``, and the conditional calls below when they change something), never
    /// by evictions, trims or reads. It may also change when another key is written (keys share
    /// 256 stripes), never the reverse.
    ///
    /// The corresponding C function is `yyc_memcache_generation`.
    func writeGeneration(forKey key: Key) -> UInt64 {
        let handle = self.handle
        return key.withCacheKeyBytes { yyc_memcache_generation(handle, $0.baseAddress, $0.count) }
    }

    /// ``setValue(_:forKey:cost:)``, done only if the key's write generation is still
    /// `generation`.
    ///
    /// - Returns: Whether the value was stored (`false`: the key was written meanwhile, or
    ///   memory ran out; the cache is unchanged).
    ///
    /// The corresponding C functions are `yyc_memcache_set_if_generation` and
    /// `yyc_memcache_set_inline_if_generation`. Stores like ``setValue(_:forKey:cost:)``.
    ///
    /// `timeToLive`: seconds (`.infinity`: never), or `nil` for ``defaultTimeToLive``; with one,
    /// the C functions are the `_with_ttl` twins.
    @discardableResult
    func setValue(
        _ value: Value, forKey key: Key, cost: Int, ifGeneration generation: UInt64,
        timeToLive: Double? = nil
    ) -> Bool {
        let cCost = cost > 0 ? cost : 0
        let handle = self.handle
        var stored = false
        if Self.storesValuesInline {
            // A copy is moved into the C entry only when stored; otherwise it is still ours.
            withUnsafeTemporaryAllocation(
                byteCount: MemoryCacheStorage<Value>.inlineSize, alignment: MemoryLayout<Value>.alignment
            ) { buffer in
                let bytes = buffer.baseAddress!
                let typed = bytes.initializeMemory(as: Value.self, to: value)
                _ = key.withCacheKeyBytes {
                    if let timeToLive {
                        yyc_memcache_set_inline_if_generation_with_ttl(
                            handle, $0.baseAddress, $0.count, bytes, cCost, generation, timeToLive,
                            &stored)
                    } else {
                        yyc_memcache_set_inline_if_generation(
                            handle, $0.baseAddress, $0.count, bytes, cCost, generation, &stored)
                    }
                }
                if !stored { typed.deinitialize(count: 1) }
            }
            releaseHandedBackValues()
            return stored
        }
        // The C core retains what it stores; our reference ends after the call.
        let object = Self.object(for: value, key: key)
        withExtendedLifetime(object) {
            let pointer = Unmanaged.passUnretained(object).toOpaque()
            _ = key.withCacheKeyBytes {
                if let timeToLive {
                    yyc_memcache_set_if_generation_with_ttl(
                        handle, $0.baseAddress, $0.count, pointer, cCost, generation, timeToLive,
                        &stored)
                } else {
                    yyc_memcache_set_if_generation(
                        handle, $0.baseAddress, $0.count, pointer, cCost, generation, &stored)
                }
            }
        }
        releaseHandedBackValues()
        return stored
    }

    /// ``removeValue(forKey:)``, done only if the key's write generation is still `generation`.
    ///
    /// The corresponding C function is `yyc_memcache_remove_if_generation`.
    func removeValue(forKey key: Key, ifGeneration generation: UInt64) {
        let handle = self.handle
        _ = key.withCacheKeyBytes {
            yyc_memcache_remove_if_generation(handle, $0.baseAddress, $0.count, generation)
        }
        releaseHandedBackValues()
    }
}
