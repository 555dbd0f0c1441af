/// The operations on one inline `Value` type that the C core's copy and destroy callbacks need
/// (see ``MemoryCacheStorage``): closures made by an `@inlinable` initializer, so that they are
/// specialized for `Value` where the cache is created (a `MemoryCache<String, Data>` copies a
/// `Data` with inlined code, without a value-witness call). Trivial values need none.
///
/// Every closure takes raw pointers to the value's bytes: in a C entry, in the C core's garbage,
/// in a caller's buffer, or in a heap cell made by `moveToHeap`.
@usableFromInline
struct MemoryCacheInlineOps: Sendable {
    /// Initializes the first pointer with a copy of the value at the second. Runs under the C
    /// cache's lock: it only retains what the value holds.
    @usableFromInline let copy: @Sendable (UnsafeMutableRawPointer, UnsafeRawPointer) -> Void
    /// Deinitializes the value in place.
    @usableFromInline let destroy: @Sendable (UnsafeMutableRawPointer) -> Void
    /// Moves the value into a new heap cell and returns it (to destroy it later elsewhere).
    @usableFromInline let moveToHeap: @Sendable (UnsafeMutableRawPointer) -> UnsafeMutableRawPointer
    /// Deinitializes the value in a heap cell made by `moveToHeap` and frees the cell.
    @usableFromInline let destroyHeap: @Sendable (UnsafeMutableRawPointer) -> Void

    /// The operations for `Value`.
    @inlinable
    init<Value>(for _: Value.Type) {
        copy = { dst, src in
            dst.assumingMemoryBound(to: Value.self).initialize(to: src.assumingMemoryBound(to: Value.self).pointee)
        }
        destroy = { $0.assumingMemoryBound(to: Value.self).deinitialize(count: 1) }
        moveToHeap = { value in
            let cell = UnsafeMutablePointer<Value>.allocate(capacity: 1)
            cell.moveInitialize(from: value.assumingMemoryBound(to: Value.self), count: 1)
            return UnsafeMutableRawPointer(cell)
        }
        destroyHeap = { cell in
            let typed = cell.assumingMemoryBound(to: Value.self)
            typed.deinitialize(count: 1)
            typed.deallocate()
        }
    }

    /// No operations (pointer caches and trivial values, whose C type has no callbacks).
    @usableFromInline
    static let none = MemoryCacheInlineOps(for: Void.self)
}
