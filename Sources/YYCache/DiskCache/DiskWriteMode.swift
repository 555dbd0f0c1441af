/// When a ``DiskCache`` write reaches the disk.
///
/// The mode belongs to the core: every ``DiskCache`` object on one path in this process (and a
/// ``Cache`` on it) shares it.
///
/// The corresponding C type is `yyc_write_mode`.
public enum DiskWriteMode: Sendable, Hashable {
    /// A set returns after its commit, as in YYCache (the default). Sets of several threads that
    /// wait for a commit share the next one, each still with its own result.
    case immediate
    /// A set (or removal) returns once queued in memory; the queue is committed in one
    /// transaction at most `maxDelay` after its first write (clamped to 1 ms ... 1 hour), and by
    /// `DiskCache.flush()` (sync or async), ``DiskCache/close()`` and `exit()`.
    ///
    /// Reads in this process see queued writes and removals. A crash loses at most the writes
    /// acknowledged within the last `maxDelay` (plus one batch), and what survives is a prefix
    /// of this process's acknowledged writes, in order. Other processes see only committed
    /// writes.
    case deferred(maxDelay: Duration)
}
