import CYYCache

extension MemoryCache {
    /// Whether ``handleMemoryWarning()`` removes every value (after calling
    /// ``didReceiveMemoryWarning``). Default `true`.
    ///
    /// The corresponding C function is `yyc_memcache_set_remove_all_on_memory_warning`.
    public var shouldRemoveAllValuesOnMemoryWarning: Bool {
        get { afterReleasing(yyc_memcache_remove_all_on_memory_warning(handle)) }
        set {
            yyc_memcache_set_remove_all_on_memory_warning(handle, newValue)
            releaseHandedBackValues()
        }
    }

    /// Whether ``handleEnterBackground()`` removes every value (after calling
    /// ``didEnterBackground``). Default `true`.
    ///
    /// The corresponding C function is `yyc_memcache_set_remove_all_on_enter_background`.
    public var shouldRemoveAllValuesWhenEnteringBackground: Bool {
        get { afterReleasing(yyc_memcache_remove_all_on_enter_background(handle)) }
        set {
            yyc_memcache_set_remove_all_on_enter_background(handle, newValue)
            releaseHandedBackValues()
        }
    }

    /// Called by ``handleMemoryWarning()`` on its thread, before the optional remove-all, with
    /// no lock held (it may use the cache). Default `nil`. The memory-pressure watcher does not
    /// call it for a cache whose last reference is already gone.
    public var didReceiveMemoryWarning: (@Sendable (MemoryCache<Key, Value>) -> Void)? {
        get { afterReleasing(events.warningHandlers.withLock { $0.memoryWarning }) }
        set {
            events.warningHandlers.withLock {
                $0.memoryWarning = newValue
                $0.cache = $0.memoryWarning == nil && $0.enterBackground == nil ? nil : self
            }
        }
    }

    /// Called by ``handleEnterBackground()`` on its thread, before the optional remove-all,
    /// with no lock held (it may use the cache). Default `nil`.
    public var didEnterBackground: (@Sendable (MemoryCache<Key, Value>) -> Void)? {
        get { afterReleasing(events.warningHandlers.withLock { $0.enterBackground }) }
        set {
            events.warningHandlers.withLock {
                $0.enterBackground = newValue
                $0.cache = $0.memoryWarning == nil && $0.enterBackground == nil ? nil : self
            }
        }
    }

    /// Reacts to memory pressure (Linux's stand-in for UIKit's memory-warning notification):
    /// calls ``didReceiveMemoryWarning`` synchronously, then removes every value if
    /// ``shouldRemoveAllValuesOnMemoryWarning`` is `true`. The values are gone when it returns.
    ///
    /// - Complexity: O(*n*) when it removes the values.
    ///
    /// The corresponding C function is `yyc_memcache_handle_memory_warning`.
    public func handleMemoryWarning() {
        yyc_memcache_handle_memory_warning(handle)
        releaseHandedBackValues()
    }

    /// Reacts to the application entering the background: calls ``didEnterBackground``
    /// synchronously, then removes every value if
    /// ``shouldRemoveAllValuesWhenEnteringBackground`` is `true`.
    ///
    /// - Complexity: O(*n*) when it removes the values.
    ///
    /// The corresponding C function is `yyc_memcache_handle_enter_background`.
    public func handleEnterBackground() {
        yyc_memcache_handle_enter_background(handle)
        releaseHandedBackValues()
    }
}
