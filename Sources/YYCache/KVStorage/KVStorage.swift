import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Key-value storage on SQLite and files (YYKVStorage): the layer under ``DiskCache``.
///
/// A storage folder holds `manifest.sqlite` (one row per key: size, times, extended data and
/// either the value inline or a file name) and `data/` (one file per value stored outside
/// SQLite). The layout is byte-compatible with YYKVStorage, so existing folders open.
///
/// `KVStorage` is **not thread-safe**: use one object from one thread at a time (it is not
/// `Sendable`). ``DiskCache`` adds the lock, limits and archiving; prefer it.
///
/// It has no async twins: they would have to run the blocking work on another thread, and a
/// non-`Sendable` object cannot be sent there. Every method blocks on the disk; in async code,
/// use ``DiskCache`` (whose twins run off the cooperative pool) or keep the storage inside an
/// actor of your own (whose methods then block that actor's thread while they run).
///
/// Keys are non-empty strings without NUL bytes: a write with another key throws
/// ``CacheError/Code/invalidArgument``, a read returns `nil`, a removal does nothing.
///
/// ```swift
/// let storage = try KVStorage(path: folder, type: .mixed)
/// try storage.saveItem(key: "a", value: Data("small".utf8))                  // inline
/// try storage.saveItem(key: "b", value: bigData, filename: "b.bin")         // file
/// let info = try storage.itemInfo(forKey: "b")   // size, times, no value
/// ```
///
/// The corresponding C type is `yyc_kv`.
public final class KVStorage {
    /// The C storage (`yyc_kv *`), owned; closed in `deinit`.
    let handle: OpaquePointer

    /// The folder, as given to ``init(path:type:)``.
    public let path: String

    /// Where values are kept.
    public let type: KVStorageType

    /// Opens the storage folder at `path`, creating it (and the manifest) if needed.
    ///
    /// A corrupt manifest (`SQLITE_CORRUPT`, `SQLITE_NOTADB`) is deleted and rebuilt and the open
    /// succeeds; a busy or locked one is never deleted: the open throws ``CacheError/Code/busy``.
    ///
    /// - Parameters:
    ///   - path: The folder.
    ///   - type: Where values are kept.
    /// - Throws: ``CacheError`` with ``CacheError/Code/invalidArgument`` (empty path),
    ///   ``CacheError/Code/io``, ``CacheError/Code/permissionDenied``,
    ///   ``CacheError/Code/noSpace``, ``CacheError/Code/busy`` or ``CacheError/Code/sqlite``.
    ///
    /// The corresponding C function is `yyc_kv_open`.
    public init(path: String, type: KVStorageType) throws {
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw CacheError.invalidArgument("the path is empty or contains NUL")
        }
        var handle: OpaquePointer?
        let status = path.withCString { yyc_kv_open($0, type.cValue, &handle) }
        guard status == 0, let handle else { throw CacheError.lastError(status: status) }
        self.handle = handle
        self.path = path
        self.type = type
    }

    deinit {
        yyc_kv_close(handle)
    }

    /// Whether errors are also printed to standard error. Default `false`: errors are thrown.
    ///
    /// The corresponding C function is `yyc_kv_set_error_logs_enabled`.
    public var errorLogsEnabled: Bool {
        get { yyc_kv_error_logs_enabled(handle) }
        set { yyc_kv_set_error_logs_enabled(handle, newValue) }
    }

    /// Saves an item's key, value, file name and extended data. The size and both times are
    /// set from the value and the clock (the item's own are ignored).
    ///
    /// - Parameters:
    ///   - item: The item; its value must not be `nil`.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a `nil` value and for the cases of
    ///   ``saveItem(key:value:filename:extendedData:)``, or its other errors.
    /// - Complexity: O(*n*) in the value's size.
    ///
    /// The corresponding C function is `yyc_kv_save`.
    public func saveItem(_ item: KVStorageItem) throws {
        guard let value = item.value else {
            throw CacheError.invalidArgument("the item has no value")
        }
        try saveItem(key: item.key, value: value, filename: item.filename, extendedData: item.extendedData)
    }

    /// Saves a value, in the file `data/<filename>` when a file name is given (and the type is
    /// not ``KVStorageType/sqlite``), else inline. The file is written to a temporary name and
    /// renamed, so a crash never leaves a torn value. Saving inline deletes the key's old file.
    ///
    /// - Parameters:
    ///   - key: A non-empty key without NUL bytes.
    ///   - value: The value; it may be empty.
    ///   - filename: One path component: no `/` or NUL, not `.` or `..`, at most 255 bytes.
    ///     Required for ``KVStorageType/file``, ignored for ``KVStorageType/sqlite``.
    ///   - extendedData: Extra bytes stored with the value.
    /// - Throws: ``CacheError/Code/invalidArgument`` (bad key, bad file name, no file name for
    ///   ``KVStorageType/file``: nothing is written), ``CacheError/Code/tooLarge``,
    ///   ``CacheError/Code/io``, ``CacheError/Code/noSpace``, ``CacheError/Code/sqlite``...
    /// - Complexity: O(*n*) in the value's size.
    ///
    /// The corresponding C function is `yyc_kv_save`.
    public func saveItem(key: String, value: Data, filename: String? = nil, extendedData: Data? = nil) throws {
        guard CStrings.isStorableKey(key) else {
            throw CacheError.invalidArgument("the key is empty or contains NUL")
        }
        if let filename, filename.utf8.contains(0) {
            throw CacheError.invalidArgument("the file name contains NUL")
        }
        let status = key.withCString { cKey in
            CStrings.withOptional(filename) { cName in
                CStrings.withBytes(value) { bytes, count in
                    CStrings.withBytes(extendedData) { extended, extendedCount in
                        yyc_kv_save(handle, cKey, bytes, count, cName, extended, extendedCount)
                    }
                }
            }
        }
        try CacheError.check(status)
    }

    /// Removes the item for `key` (its file too). A missing key is not an error.
    ///
    /// - Parameters:
    ///   - key: The key; an empty one does nothing.
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_remove`.
    public func removeItem(forKey key: String) throws {
        guard CStrings.isStorableKey(key) else { return }
        try CacheError.check(key.withCString { yyc_kv_remove(handle, $0) })
    }

    /// Removes the items for `keys` (their files too). Missing keys are skipped.
    ///
    /// - Parameters:
    ///   - keys: The keys; any number (the C core chunks them below SQLite's variable limit).
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    /// - Complexity: O(*n*).
    ///
    /// The corresponding C function is `yyc_kv_remove_keys`.
    public func removeItems(forKeys keys: [String]) throws {
        let keys = keys.filter(CStrings.isStorableKey)
        guard !keys.isEmpty else { return }
        try CacheError.check(CStrings.withArray(keys) { yyc_kv_remove_keys(handle, $0, $1) })
    }

    /// Removes every item larger than `size` bytes. `Int.max` removes nothing; 0 or less
    /// removes everything.
    ///
    /// - Parameters:
    ///   - size: The largest size to keep.
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_remove_larger_than`.
    public func removeItems(largerThan size: Int) throws {
        try CacheError.check(yyc_kv_remove_larger_than(handle, Int64(size)))
    }

    /// Removes every item last accessed strictly before `time` (unix seconds). 0 or less
    /// removes nothing; `Int.max` removes everything.
    ///
    /// - Parameters:
    ///   - time: Unix seconds.
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_remove_earlier_than`.
    public func removeItems(earlierThan time: Int) throws {
        try CacheError.check(yyc_kv_remove_earlier_than(handle, Int64(time)))
    }

    /// Removes least recently accessed items (ties by insertion order) until the total size is
    /// at most `size` bytes. `Int.max` removes nothing; 0 or less removes everything.
    ///
    /// - Parameters:
    ///   - size: The total size to keep at most.
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_remove_to_fit_size`.
    public func removeItemsToFit(size: Int) throws {
        try CacheError.check(yyc_kv_remove_to_fit_size(handle, Int64(size)))
    }

    /// Removes least recently accessed items until at most `count` remain. `Int.max` removes
    /// nothing; 0 or less removes everything.
    ///
    /// - Parameters:
    ///   - count: The number of items to keep at most.
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_remove_to_fit_count`.
    public func removeItemsToFit(count: Int) throws {
        try CacheError.check(yyc_kv_remove_to_fit_count(handle, Int64(count)))
    }

    /// Removes everything quickly: the manifest is recreated and `data/` moves to
    /// `trash/<UUID>`, which the background worker empties later.
    ///
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    ///
    /// The corresponding C function is `yyc_kv_remove_all`.
    public func removeAllItems() throws {
        try CacheError.check(yyc_kv_remove_all(handle))
    }

    /// Removes everything in batches (rows and files, least recently accessed first), calling
    /// `progress` after each batch with counts that increase to `(total, total)`.
    ///
    /// - Parameters:
    ///   - progress: Receives the number removed so far and the total at the start; it runs
    ///     on the calling thread and must not use this storage.
    /// - Throws: ``CacheError`` for I/O and SQLite failures.
    /// - Complexity: O(*n*).
    ///
    /// The corresponding C function is `yyc_kv_remove_all_progress`.
    public func removeAllItems(progress: (_ removed: Int, _ total: Int) -> Void) throws {
        let status = withoutActuallyEscaping(progress) { progress in
            var box = ProgressBox(progress: progress)
            return withUnsafeMutablePointer(to: &box) { pointer in
                yyc_kv_remove_all_progress(handle, kvStorageProgress, pointer)
            }
        }
        try CacheError.check(status)
    }
}

private struct ProgressBox {
    let progress: (Int, Int) -> Void
}

private func kvStorageProgress(_ ctx: UnsafeMutableRawPointer?, _ removed: Int64, _ total: Int64) {
    ctx?.assumingMemoryBound(to: ProgressBox.self).pointee.progress(Int(removed), Int(total))
}
