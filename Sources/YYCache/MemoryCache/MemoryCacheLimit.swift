/// Conversions between Swift `Int` limits and the C core's `size_t` (imported as `Int`).
///
/// `Int.max` means "no limit" and maps to `SIZE_MAX` (the bit pattern -1); a negative Swift
/// value maps to 0; a C value above `Int.max` (SIZE_MAX included) reads back as `Int.max`.
@usableFromInline
enum MemoryCacheLimit {
    /// The `size_t` bit pattern for a Swift limit.
    @inlinable
    static func toC(_ value: Int) -> Int {
        if value == .max { return -1 }  // SIZE_MAX
        return value > 0 ? value : 0
    }

    /// The Swift limit for a `size_t` bit pattern.
    @inlinable
    static func fromC(_ value: Int) -> Int {
        value < 0 ? .max : value
    }
}
