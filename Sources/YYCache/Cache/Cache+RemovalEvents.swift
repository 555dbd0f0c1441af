// Removal events of the two-level cache: the disk tier's, since every entry leaves the disk
// (memory evictions and memory-pressure removals leave the value on disk: not removals).
extension Cache {
    /// Called once for every entry that leaves the cache, with its key and why it left:
    /// `.explicit` (`removeValue(forKey:)`, `removeAllValues`: one per entry), `.replaced` (a
    /// set on a key that had a value), `.expired` (its time to live, the age limit),
    /// `.evicted` (the disk tier's limits and trims). Default `nil`.
    ///
    /// Each removal is reported once, by the disk tier, where the entry lives: a value dropped
    /// from memory only (the memory tier's limits, memory pressure) is still in the cache and
    /// is not reported. The same handler as ``diskCache``'s ``DiskCache/didRemoveEntry``: see
    /// there for the thread and the rules (it runs with no lock held and may use the cache).
    ///
    /// The corresponding C function is `yyc_diskcache_set_removal_listener`.
    public var didRemoveEntry: (@Sendable (String, CacheRemovalCause) -> Void)? {
        get { diskCache.didRemoveEntry }
        set { diskCache.didRemoveEntry = newValue }
    }
}
