/// The object a ``MemoryCache`` hands to the C core for one value too large to be stored inline
/// (see ``MemoryCacheStorage``: more than 64 bytes, or aligned to more than 16).
///
/// The C core stores an opaque pointer per entry and owns it through the retain/release
/// callbacks installed by ``MemoryCache``, which call `swift_retain`/`swift_release` on the box
/// through `Unmanaged<AnyObject>`. Releasing the last reference destroys the box and the value.
///
/// Values that are themselves class instances skip the box (``canStoreDirectly``): the same
/// callbacks retain and release the object directly.
@usableFromInline
final class MemoryCacheBox<Value> {
    /// Whether `Value` is a class type whose instances are one strong reference (not an
    /// existential, not an optional), so that a value can be handed to the C core as it is.
    @inlinable
    static var canStoreDirectly: Bool {
        Value.self is AnyObject.Type && MemoryLayout<Value>.size == MemoryLayout<AnyObject>.size
    }

    @usableFromInline
    let value: Value

    @inlinable
    init(_ value: Value) {
        self.value = value
    }
}
