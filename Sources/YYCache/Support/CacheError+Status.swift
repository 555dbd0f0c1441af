import CYYCache

extension CacheError {
    /// The error for a failed C call, with the calling thread's `yyc_last_error` details.
    ///
    /// Must be called right after the failing C call, on the same thread and before any other
    /// library call, because the details are per thread and the next failure replaces them.
    ///
    /// - Parameters:
    ///   - status: The status the C call returned (neither `YYC_OK` nor `YYC_NOTFOUND`).
    /// - Returns: The error, with the recorded SQLite code and message when they belong to this
    ///   failure, else the status's generic message.
    static func lastError(status: Int32) -> CacheError {
        var details = yyc_error()
        yyc_last_error(&details)
        let code = Code(rawValue: status)
        guard details.code == status else {
            return CacheError(code: code, message: String(cString: yyc_strerror(status)))
        }
        let message = withUnsafeBytes(of: &details.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return CacheError(
            code: code,
            sqliteCode: details.sqlite_code != 0 ? details.sqlite_code : nil,
            message: message.isEmpty ? String(cString: yyc_strerror(status)) : message)
    }

    /// Throws the ``lastError(status:)`` for an error status; returns for `YYC_OK`.
    ///
    /// - Parameters:
    ///   - status: A C status; `YYC_NOTFOUND` must be handled by the caller before this.
    /// - Throws: ``CacheError`` for any status but `YYC_OK`.
    static func check(_ status: Int32) throws(CacheError) {
        if status != 0 { throw lastError(status: status) }
    }

    static func invalidArgument(_ message: String) -> CacheError {
        CacheError(code: .invalidArgument, message: message)
    }

    static let closedError = CacheError(code: .closed, message: "the cache is closed")
}
