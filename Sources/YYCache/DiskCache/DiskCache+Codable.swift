#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension DiskCache {
    /// The value stored for `key`, decoded with ``coder`` (`Data` is returned as stored, like
    /// ``data(forKey:)-95itz``). Refreshes the access time.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - key: The key.
    /// - Returns: The value, or `nil` on a miss.
    /// - Throws: ``CacheError/Code/decoding`` when the stored bytes do not decode as `type`
    ///   (not a miss), ``CacheError/Code/closed``, I/O and SQLite failures.
    /// - Complexity: O(*n*) in the value's size.
    ///
    /// The corresponding C function is `yyc_diskcache_get`.
    @_disfavoredOverload
    public func value<T: Decodable>(_ type: T.Type, forKey key: String) throws -> T? {
        guard let data = try data(forKey: key) else { return nil }
        return try decode(type, from: data)
    }

    /// Stores `value` for `key`, encoded with ``coder`` (`Data` is stored as it is, like
    /// ``setData(_:forKey:extendedData:)-1okrg``); `nil` removes the value.
    ///
    /// - Parameters:
    ///   - value: The value, or `nil` to remove it.
    ///   - key: A non-empty key without NUL bytes.
    ///   - extendedData: Extra bytes stored with the value.
    /// - Throws: ``CacheError/Code/encoding`` when the coder fails (the previous value stays),
    ///   and the errors of ``setData(_:forKey:extendedData:)-1okrg``.
    /// - Complexity: O(*n*) in the value's size.
    ///
    /// The corresponding C function is `yyc_diskcache_set_with_filename`.
    @_disfavoredOverload
    public func setValue<T: Encodable>(_ value: T?, forKey key: String, extendedData: Data? = nil) throws {
        guard let value else {
            try removeValue(forKey: key)
            return
        }
        try setData(encode(value), forKey: key, extendedData: extendedData)
    }

    /// Decodes stored bytes with this object's coder (`Data` passes through).
    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if let data = data as? T { return data }
        do {
            return try coder.decode(type, from: data)
        } catch {
            throw CacheError(
                code: .decoding,
                message: "could not decode the stored bytes as \(T.self): \(CoderFailure.describe(error))")
        }
    }

    /// Encodes a value with this object's coder (`Data` passes through).
    func encode<T: Encodable>(_ value: T) throws -> Data {
        if let data = value as? Data { return data }
        do {
            return try coder.encode(value)
        } catch {
            throw CacheError(
                code: .encoding,
                message: "could not encode a value of type \(T.self): \(CoderFailure.describe(error))")
        }
    }
}
