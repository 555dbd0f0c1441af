import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One stored item of a ``KVStorage`` (YYKVStorageItem): a plain value.
public struct KVStorageItem: Sendable, Equatable {
    /// The key.
    public var key: String
    /// The value: `nil` in "info" results, `Data()` for an empty value.
    public var value: Data?
    /// The data file's name under `data/`, or `nil` when the value is inline.
    public var filename: String?
    /// The value's size in bytes, as recorded in the manifest.
    public var size: Int
    /// When the value was saved, in unix seconds.
    public var modificationTime: Int
    /// When the value was last read or saved, in unix seconds.
    public var lastAccessTime: Int
    /// The item's extended data, or `nil` when it has none (empty extended data reads as `nil`).
    public var extendedData: Data?

    /// Creates an item, for example to pass to ``KVStorage/saveItem(_:)`` (which uses only the
    /// key, value, file name and extended data).
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - value: The value.
    ///   - filename: A file name under `data/`, or `nil` for an inline value.
    ///   - size: The value's size in bytes.
    ///   - modificationTime: Unix seconds.
    ///   - lastAccessTime: Unix seconds.
    ///   - extendedData: Extra bytes stored with the value.
    public init(
        key: String, value: Data? = nil, filename: String? = nil, size: Int = 0,
        modificationTime: Int = 0, lastAccessTime: Int = 0, extendedData: Data? = nil
    ) {
        self.key = key
        self.value = value
        self.filename = filename
        self.size = size
        self.modificationTime = modificationTime
        self.lastAccessTime = lastAccessTime
        self.extendedData = extendedData
    }

    /// Copies a C item.
    ///
    /// - Parameters:
    ///   - item: An item handed out by the C core (borrowed).
    ///   - includesValue: `false` for "info" results, whose value is `nil`.
    init(_ item: yyc_kv_item, includesValue: Bool) {
        self.key = item.key.map { String(cString: $0) } ?? ""
        if includesValue {
            self.value = item.value.map { Data(bytes: $0, count: item.value_len) } ?? Data()
        } else {
            self.value = nil
        }
        self.filename = item.filename.map { String(cString: $0) }
        self.size = Int(item.size)
        self.modificationTime = Int(item.modification_time)
        self.lastAccessTime = Int(item.last_access_time)
        if let extended = item.extended_data, item.extended_len > 0 {
            self.extendedData = Data(bytes: extended, count: item.extended_len)
        } else {
            self.extendedData = nil
        }
    }
}
