import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension DiskCache {
    /// Whether `key` has a value. Does not change the access time.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: `true` if a value is stored; `false` for a miss, an empty key, an error, or
    ///   after ``close()``.
    ///
    /// The corresponding C function is `yyc_diskcache_contains`.
    @_disfavoredOverload
    public func containsValue(forKey key: String) -> Bool {
        guard CStrings.isStorableKey(key) else { return false }
        return withOpenCore { core in key.withCString { yyc_diskcache_contains(core, $0) } } ?? false
    }

    /// The bytes stored for `key`, as they are (no coder). Refreshes the access time. A row
    /// whose data file has disappeared is removed and reads as `nil`.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: The bytes (`Data()` for an empty value), or `nil` on a miss.
    /// - Throws: ``CacheError`` (``CacheError/Code/closed`` after ``close()``, I/O and SQLite
    ///   failures).
    /// - Complexity: O(*n*) in the value's size.
    ///
    /// The corresponding C function is `yyc_diskcache_get`.
    @_disfavoredOverload
    public func data(forKey key: String) throws -> Data? {
        try withCore { core in
            guard CStrings.isStorableKey(key) else { return nil }
            var bytes: UnsafeMutableRawPointer?
            var count = 0
            let status = key.withCString { yyc_diskcache_get(core, $0, &bytes, &count) }
            if status == 1 { return nil }  // YYC_NOTFOUND
            try CacheError.check(status)
            return CStrings.takeData(bytes, count: count)
        }
    }

    /// Stores `data` for `key` as it is (no coder), with optional extended data; `nil` removes
    /// the value. Values larger than ``inlineThreshold`` go to a file named by ``fileName`` or
    /// md5(key). An empty value is stored and reads back as `Data()`.
    ///
    /// - Parameters:
    ///   - data: The bytes, or `nil` to remove the value.
    ///   - key: A non-empty key without NUL bytes.
    ///   - extendedData: Extra bytes stored with the value (read with
    ///     ``extendedData(forKey:)-erkr``).
    /// - Throws: ``CacheError/Code/invalidArgument`` (bad key, bad file name: nothing is
    ///   written), ``CacheError/Code/closed``, ``CacheError/Code/noSpace``, I/O and SQLite
    ///   failures.
    /// - Complexity: O(*n*) in the value's size.
    ///
    /// The corresponding C function is `yyc_diskcache_set_with_filename`.
    @_disfavoredOverload
    public func setData(_ data: Data?, forKey key: String, extendedData: Data? = nil) throws {
        guard let data else {
            try removeValue(forKey: key)
            return
        }
        try store(data, forKey: key, extendedData: extendedData, timeToLive: nil)
    }

    /// Stores `data` for `key` (see ``setData(_:forKey:extendedData:)-1okrg``) with a time to
    /// live in seconds (`.infinity`: never expires), or `nil` for the core's
    /// ``defaultTimeToLive``. `ifAbsent` (a loaded value, stored after a miss; no extended data,
    /// the default time to live): only if the key has no value when the write commits, so a
    /// write since the miss stays (`yyc_diskcache_set_if_absent`). Returns whether it stored.
    @discardableResult
    func store(
        _ data: Data, forKey key: String, extendedData: Data?, timeToLive: Double?,
        ifAbsent: Bool = false
    ) throws -> Bool {
        guard CStrings.isStorableKey(key) else {
            try withCore { _ in }  // a closed cache reports .closed first
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        // The file name is computed without any lock, and only when the value goes to a file.
        var name: String?
        if data.count > inlineThreshold, let fileName {
            name = fileName(key)
            if let name, !name.isEmpty {
                let valid = !name.utf8.contains(0) && name.withCString { yyc_kv_filename_is_valid($0) }
                guard valid else {
                    throw CacheError.invalidArgument(
                        "the file name function returned an invalid name (/, NUL, . or .., over 255 bytes)")
                }
            }
        }
        return try withCore { core in
            var stored = true
            let status = key.withCString { cKey in
                CStrings.withOptional(name) { cName in
                    CStrings.withBytes(data) { bytes, count in
                        CStrings.withBytes(extendedData) { extended, extendedCount in
                            if ifAbsent {
                                yyc_diskcache_set_if_absent(core, cKey, bytes, count, cName, &stored)
                            } else if let timeToLive {
                                yyc_diskcache_set_with_filename_and_ttl(
                                    core, cKey, bytes, count, extended, extendedCount, cName,
                                    timeToLive)
                            } else {
                                yyc_diskcache_set_with_filename(
                                    core, cKey, bytes, count, extended, extendedCount, cName)
                            }
                        }
                    }
                }
            }
            try CacheError.check(status)
            return stored
        }
    }

    /// The extended data stored with `key`'s value. Does not change the access time.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Returns: The extended data, or `nil` on a miss or when the value has none.
    /// - Throws: ``CacheError`` (``CacheError/Code/closed``, SQLite failures).
    ///
    /// The corresponding C function is `yyc_diskcache_get_extended_data`.
    @_disfavoredOverload
    public func extendedData(forKey key: String) throws -> Data? {
        try withCore { core in
            guard CStrings.isStorableKey(key) else { return nil }
            var bytes: UnsafeMutableRawPointer?
            var count = 0
            let status = key.withCString { yyc_diskcache_get_extended_data(core, $0, &bytes, &count) }
            if status == 1 { return nil }  // YYC_NOTFOUND
            try CacheError.check(status)
            guard bytes != nil, count > 0 else {
                yyc_free(bytes)
                return nil
            }
            return CStrings.takeData(bytes, count: count)
        }
    }

    /// Removes `key`'s value (and its file). A missing or empty key does nothing.
    ///
    /// - Parameters:
    ///   - key: The key.
    /// - Throws: ``CacheError`` (``CacheError/Code/closed``, I/O and SQLite failures).
    ///
    /// The corresponding C function is `yyc_diskcache_remove`.
    @_disfavoredOverload
    public func removeValue(forKey key: String) throws {
        try withCore { core in
            guard CStrings.isStorableKey(key) else { return }
            try CacheError.check(key.withCString { yyc_diskcache_remove(core, $0) })
        }
    }

    /// Removes every value quickly: the manifest is recreated and `data/` moves to the trash,
    /// which the background worker empties later.
    ///
    /// - Throws: ``CacheError`` (``CacheError/Code/closed``, I/O and SQLite failures).
    ///
    /// The corresponding C function is `yyc_diskcache_remove_all`.
    @_disfavoredOverload
    public func removeAllValues() throws {
        try withCore { try CacheError.check(yyc_diskcache_remove_all($0)) }
    }

    /// The number of stored values.
    ///
    /// Constant time: the cache counts once and then keeps the count from this process's own
    /// writes and removals; after another process (or YYKVStorage, or the CLI) wrote the folder,
    /// the next call counts again.
    ///
    /// - Returns: The count.
    /// - Throws: ``CacheError`` (``CacheError/Code/closed``, SQLite failures).
    ///
    /// The corresponding C function is `yyc_diskcache_total_count`.
    @_disfavoredOverload
    public func totalCount() throws -> Int {
        try withCore { core in
            var count: Int64 = 0
            try CacheError.check(yyc_diskcache_total_count(core, &count))
            return Int(count)
        }
    }

    /// The total size of the stored values in bytes (64-bit: no wrap past 2 GiB).
    ///
    /// Constant time, like the count (see `totalCount()`).
    ///
    /// - Returns: The size.
    /// - Throws: ``CacheError`` (``CacheError/Code/closed``, SQLite failures).
    ///
    /// The corresponding C function is `yyc_diskcache_total_cost`.
    @_disfavoredOverload
    public func totalCost() throws -> Int {
        try withCore { core in
            var cost: Int64 = 0
            try CacheError.check(yyc_diskcache_total_cost(core, &cost))
            return Int(cost)
        }
    }

    /// Removes least recently accessed values until at most `count` remain. 0 (or less)
    /// removes everything; `Int.max` does nothing.
    ///
    /// Like every trim it removes at most 16 values per transaction and lets other threads'
    /// calls on the cache run between two of them, so a long trim does not stall them; closing
    /// the cache meanwhile ends it with ``CacheError/Code/closed``.
    ///
    /// - Parameters:
    ///   - count: The number of values to keep at most.
    /// - Throws: ``CacheError`` (``CacheError/Code/closed``, I/O and SQLite failures).
    ///
    /// The corresponding C function is `yyc_diskcache_trim_to_count`.
    @_disfavoredOverload
    public func trim(toCount count: Int) throws {
        try withCore { try CacheError.check(yyc_diskcache_trim_to_count($0, Int64(max(count, 0)))) }
    }

    /// Removes least recently accessed values until the total size is at most `cost` bytes.
    /// 0 (or less) removes everything; `Int.max` does nothing.
    ///
    /// - Parameters:
    ///   - cost: The total size to keep at most, in bytes.
    /// - Throws: ``CacheError`` (``CacheError/Code/closed``, I/O and SQLite failures).
    ///
    /// The corresponding C function is `yyc_diskcache_trim_to_cost`.
    @_disfavoredOverload
    public func trim(toCost cost: Int) throws {
        try withCore { try CacheError.check(yyc_diskcache_trim_to_cost($0, Int64(max(cost, 0)))) }
    }

    /// Removes every value not accessed in the last `age`. Zero (or a negative age) removes
    /// everything. Access times have one-second resolution.
    ///
    /// - Parameters:
    ///   - age: The time since the last access to keep values for.
    /// - Throws: ``CacheError`` (``CacheError/Code/closed``, I/O and SQLite failures).
    ///
    /// The corresponding C function is `yyc_diskcache_trim_to_age`.
    @_disfavoredOverload
    public func trim(toAge age: Duration) throws {
        try withCore { try CacheError.check(yyc_diskcache_trim_to_age($0, max(0, age.seconds))) }
    }

    /// YYCache's spelling of `trim(toAge:)` with a `Duration`: seconds; `.greatestFiniteMagnitude`
    /// does nothing.
    @available(*, deprecated, message: "use trim(toAge:) with a Duration")
    @_disfavoredOverload
    public func trim(toAge age: TimeInterval) throws {
        try withCore { try CacheError.check(yyc_diskcache_trim_to_age($0, age)) }
    }
}
