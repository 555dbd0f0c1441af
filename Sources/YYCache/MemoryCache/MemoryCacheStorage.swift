import CYYCache

/// How a ``MemoryCache`` stores its values in the C core, decided per `Value` type.
///
/// Every property is a static computation on `Value`'s layout, so a specialized get or set
/// folds it to a constant and keeps only one path:
///
/// - **object**: class instances (one strong reference) are handed to the C core as they are,
///   owned through its retain/release callbacks (`yyc_memcache_new`).
/// - **inline**: bitwise-takable values of at most ``inlineMaximum`` bytes (alignment at most
///   16) are copied into the C entry itself (`yyc_memcache_new_inline`): no allocation per value and no extra
///   cache line per lookup. Trivial values (`_isPOD`) are plain bytes with no callbacks; others
///   (`Data`, `String`, structs holding references) are copied out under the lock by a copy
///   callback (which retains the references they hold) and destroyed off the lock.
/// - **boxed**: larger values, and values that are not bitwise takable, live in a
///   ``MemoryCacheBox`` owned like an object.
///
/// Inline values are moved in and out of the C entry with `memcpy`, and copied out under the
/// C cache's lock: both are sound only for bitwise-takable types (`_isBitwiseTakable`), whose
/// copy runs no user code (it only retains the references the value holds). Most native Swift
/// types are. Two kinds are not, and are boxed: values holding a `weak` reference, and C++
/// types imported with C++ interoperability that have a copy constructor, move constructor or
/// destructor (such as `std.string`). For a boxed value the C core only retains and releases
/// the box, and the value's copy (a C++ copy constructor) runs in ``MemoryCache/value(forKey:)``
/// after the lock is released.
@usableFromInline
enum MemoryCacheStorage<Value> {
    /// `YYC_MEMCACHE_INLINE_MAX`: the largest value stored inline, in bytes. A computed
    /// constant rather than the imported macro so that every check folds (tested to match).
    @inlinable
    static var inlineMaximum: Int { 64 }

    /// Whether values are class instances stored directly (see ``MemoryCacheBox``).
    @inlinable
    static var storesObjects: Bool { MemoryCacheBox<Value>.canStoreDirectly }

    /// Whether values are stored inline in the C entry.
    @inlinable
    static var storesInline: Bool {
        !storesObjects && _isBitwiseTakable(Value.self) && MemoryLayout<Value>.size <= inlineMaximum
            && MemoryLayout<Value>.alignment <= 16
    }

    /// Whether inline values are plain bytes (no copy or destroy callback).
    @inlinable
    static var isTrivial: Bool { _isPOD(Value.self) }

    /// The byte count of an inline value in the C core (at least 1: an empty type takes one
    /// byte there, which nothing reads).
    @inlinable
    static var inlineSize: Int { Swift.max(1, MemoryLayout<Value>.size) }
}
