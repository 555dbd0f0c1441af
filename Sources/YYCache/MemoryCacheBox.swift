/// The object a ``MemoryCache`` hands to the C core for one value.
///
/// The C core stores an opaque pointer per entry and owns it through the retain/release
/// callbacks installed by ``MemoryCache``, which call `swift_retain`/`swift_release` on the box
/// through `Unmanaged<AnyObject>`. Releasing the last reference destroys the box and the value.
@usableFromInline
final class MemoryCacheBox<Value> {
    @usableFromInline
    let value: Value

    @inlinable
    init(_ value: Value) {
        self.value = value
    }
}
