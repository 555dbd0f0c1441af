import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension KVStorage {
    /// The whole item for `key`, value included; refreshes its access time. A row whose data
    /// file is missing is deleted and reads as `nil`.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: The item, or `nil` on a miss.
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_get_item`.
    public func item(forKey key: String) throws -> KVStorageItem? {
        try singleItem(forKey: key, includesValue: true)
    }

    /// The item's metadata (size, times, file name, extended data) without the value. Does
    /// not read the data file or change the access time.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: The item with a `nil` value, or `nil` on a miss.
    /// - Throws: ``CacheError`` for SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_get_item_info`.
    public func itemInfo(forKey key: String) throws -> KVStorageItem? {
        try singleItem(forKey: key, includesValue: false)
    }

    /// The value for `key`; refreshes the access time when found.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: The value (`Data()` for an empty one), or `nil` on a miss.
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_get_value`.
    public func itemValue(forKey key: String) throws -> Data? {
        guard CStrings.isStorableKey(key) else { return nil }
        var bytes: UnsafeMutableRawPointer?
        var count = 0
        let status = key.withCString { yyc_kv_get_value(handle, $0, &bytes, &count) }
        if status == 1 { return nil }  // YYC_NOTFOUND
        try CacheError.check(status)
        return CStrings.takeData(bytes, count: count)
    }

    /// The items (values included) for `keys`, in SQLite's order; missing keys are absent.
    /// Refreshes the access time of the requested keys when at least one was found.
    ///
    /// - Parameters:
    ///   - keys: The keys; an empty list returns an empty result.
    /// - Returns: The items found.
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    /// - Complexity: O(*n*) in the number of keys and the values' sizes.
    ///
    /// The corresponding C function is `yyc_kv_get_items`.
    public func items(forKeys keys: [String]) throws -> [KVStorageItem] {
        try multipleItems(forKeys: keys, includesValue: true)
    }

    /// The items' metadata, without values, for `keys`; no access-time update.
    ///
    /// - Parameters:
    ///   - keys: The keys; an empty list returns an empty result.
    /// - Returns: The items found, with `nil` values.
    /// - Throws: ``CacheError`` for SQLite failures.
    /// - Complexity: O(*n*).
    ///
    /// The corresponding C function is `yyc_kv_get_item_infos`.
    public func itemInfos(forKeys keys: [String]) throws -> [KVStorageItem] {
        try multipleItems(forKeys: keys, includesValue: false)
    }

    /// The values for `keys`, by key; missing keys are absent.
    ///
    /// - Parameters:
    ///   - keys: The keys; an empty list returns an empty dictionary.
    /// - Returns: Key to value.
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    /// - Complexity: O(*n*).
    ///
    /// The corresponding C function is `yyc_kv_get_items`.
    public func itemValues(forKeys keys: [String]) throws -> [String: Data] {
        var values: [String: Data] = [:]
        for item in try items(forKeys: keys) {
            values[item.key] = item.value ?? Data()
        }
        return values
    }

    /// Whether `key` has an item; no access-time update.
    ///
    /// - Parameters:
    ///   - key: The key; an empty one gives `false`.
    /// - Returns: `true` if a row exists.
    /// - Throws: ``CacheError`` for SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_exists`.
    public func itemExists(forKey key: String) throws -> Bool {
        guard CStrings.isStorableKey(key) else { return false }
        let status = key.withCString { yyc_kv_exists(handle, $0) }
        if status == 1 { return false }  // YYC_NOTFOUND
        try CacheError.check(status)
        return true
    }

    /// The number of items.
    ///
    /// - Returns: The row count.
    /// - Throws: ``CacheError`` for SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_count`.
    public func itemsCount() throws -> Int {
        var count: Int64 = 0
        try CacheError.check(yyc_kv_count(handle, &count))
        return Int(count)
    }

    /// The sum of the items' sizes in bytes (64-bit: it does not wrap past 2 GiB).
    ///
    /// - Returns: The total size.
    /// - Throws: ``CacheError`` for SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_size`.
    public func itemsSize() throws -> Int {
        var size: Int64 = 0
        try CacheError.check(yyc_kv_size(handle, &size))
        return Int(size)
    }

    private func singleItem(forKey key: String, includesValue: Bool) throws -> KVStorageItem? {
        guard CStrings.isStorableKey(key) else { return nil }
        var item: UnsafeMutablePointer<yyc_kv_item>?
        let status = key.withCString {
            includesValue ? yyc_kv_get_item(handle, $0, &item) : yyc_kv_get_item_info(handle, $0, &item)
        }
        if status == 1 { return nil }  // YYC_NOTFOUND
        try CacheError.check(status)
        guard let item else { return nil }
        defer { yyc_kv_item_free(item) }
        return KVStorageItem(item.pointee, includesValue: includesValue)
    }

    private func multipleItems(forKeys keys: [String], includesValue: Bool) throws -> [KVStorageItem] {
        let keys = keys.filter(CStrings.isStorableKey)
        guard !keys.isEmpty else { return [] }
        var list: UnsafeMutablePointer<UnsafeMutablePointer<yyc_kv_item>?>?
        var count = 0
        let status = CStrings.withArray(keys) { cKeys, n in
            includesValue
                ? yyc_kv_get_items(handle, cKeys, n, &list, &count)
                : yyc_kv_get_item_infos(handle, cKeys, n, &list, &count)
        }
        try CacheError.check(status)
        guard let list else { return [] }
        defer { yyc_kv_items_free(list, count) }
        return (0..<count).compactMap { index in
            list[index].map { KVStorageItem($0.pointee, includesValue: includesValue) }
        }
    }
}
