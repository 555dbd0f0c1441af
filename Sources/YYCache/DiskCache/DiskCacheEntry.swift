#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One entry of a ``DiskCache``, as its manifest describes it (``DiskCache/forEachEntry(_:)``,
/// ``DiskCache/entries()``). The value itself is not read.
///
/// The C counterpart is `yyc_diskcache_entry`.
public struct DiskCacheEntry: Sendable, Equatable {
    /// The key.
    public var key: String
    /// The value's size in bytes, as the manifest records it.
    public var size: Int
    /// When the value was written (the manifest's seconds).
    public var modificationDate: Date
    /// When the value was last read or written (the manifest's seconds).
    public var lastAccessDate: Date
    /// When the entry expires (its time to live), or `nil` if it never does.
    public var expirationDate: Date?
    /// The name of the value's file in `data/`, or `nil` when the value is inline.
    public var filename: String?

    /// An entry with these fields.
    public init(
        key: String, size: Int, modificationDate: Date, lastAccessDate: Date,
        expirationDate: Date? = nil, filename: String? = nil
    ) {
        self.key = key
        self.size = size
        self.modificationDate = modificationDate
        self.lastAccessDate = lastAccessDate
        self.expirationDate = expirationDate
        self.filename = filename
    }
}
