import CYYCache

/// An error thrown by the caches: a code mirroring the C core's status, the extended SQLite
/// result code when SQLite failed, and a message that never contains keys or values.
///
/// Misses are not errors: lookups return `nil`.
///
/// ```swift
/// do {
///     try disk.setData(bytes, forKey: "avatar")
/// } catch CacheError.Code.noSpace {
///     // free some space
/// } catch let error as CacheError {
///     print(error.code, error.sqliteCode ?? 0, error.message)
/// }
/// ```
public struct CacheError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Every code except ``encoding`` and ``decoding`` has the raw value of
    /// the C status (`YYC_E...` in `yycache/status.h`) it mirrors.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The C status (`YYC_E...`) this code mirrors, or 1000/1001 for the Swift-only codes.
        public let rawValue: Int32

        /// Creates a code from a C status or a Swift-only raw value.
        ///
        /// - Parameters:
        ///   - rawValue: The status.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        init(_ status: yyc_status) { self.rawValue = Int32(bitPattern: status.rawValue) }

        /// An invalid argument: an empty key on disk, a bad file name, an empty path...
        /// (`YYC_EINVAL`).
        public static let invalidArgument = Code(YYC_EINVAL)
        /// Memory could not be allocated (`YYC_ENOMEM`).
        public static let outOfMemory = Code(YYC_ENOMEM)
        /// An input/output error (`YYC_EIO`).
        public static let io = Code(YYC_EIO)
        /// SQLite failed; ``CacheError/sqliteCode`` holds its extended result code (`YYC_ESQLITE`).
        public static let sqlite = Code(YYC_ESQLITE)
        /// The database is busy or locked by another connection (`YYC_EBUSY`).
        public static let busy = Code(YYC_EBUSY)
        /// The cache was closed (`YYC_ECLOSED`).
        public static let closed = Code(YYC_ECLOSED)
        /// The cache's data is corrupt (`YYC_ECORRUPT`).
        public static let corrupt = Code(YYC_ECORRUPT)
        /// A value or key is too large (`YYC_ETOOBIG`).
        public static let tooLarge = Code(YYC_ETOOBIG)
        /// No space left on the device, or over the file size limit (`YYC_ENOSPC`).
        public static let noSpace = Code(YYC_ENOSPC)
        /// Permission denied or read-only file system (`YYC_EPERM`).
        public static let permissionDenied = Code(YYC_EPERM)
        /// A loader asked for the key it is loading, which would wait for itself
        /// (`YYC_ERECURSIVE`): the inner call fails at once, and the key stays usable.
        public static let recursiveLoad = Code(YYC_ERECURSIVE)
        /// The cache's ``CacheCoder`` failed to encode a value (Swift only).
        public static let encoding = Code(rawValue: 1000)
        /// The cache's ``CacheCoder`` failed to decode stored bytes (Swift only). A value that
        /// fails to decode is an error, not a miss.
        public static let decoding = Code(rawValue: 1001)

        /// Whether `error` is a ``CacheError`` with this code, so that `catch` can match codes:
        /// `catch CacheError.Code.closed { ... }`.
        ///
        /// - Parameters:
        ///   - code: The code to match.
        ///   - error: The error thrown.
        /// - Returns: `true` if `error` is a ``CacheError`` whose code is `code`.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? CacheError)?.code == code
        }

        /// The code's name: `"invalidArgument"`, `"io"`, ... or `"Code(<raw>)"` for an unknown one.
        public var description: String {
            switch self {
            case .invalidArgument: "invalidArgument"
            case .outOfMemory: "outOfMemory"
            case .io: "io"
            case .sqlite: "sqlite"
            case .busy: "busy"
            case .closed: "closed"
            case .corrupt: "corrupt"
            case .tooLarge: "tooLarge"
            case .noSpace: "noSpace"
            case .permissionDenied: "permissionDenied"
            case .recursiveLoad: "recursiveLoad"
            case .encoding: "encoding"
            case .decoding: "decoding"
            default: "Code(\(rawValue))"
            }
        }
    }

    /// What failed.
    public let code: Code
    /// The extended SQLite result code, when SQLite failed.
    public let sqliteCode: Int32?
    /// A description of the failure. It never contains keys or values.
    public let message: String

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: What failed.
    ///   - sqliteCode: The extended SQLite result code, if SQLite failed.
    ///   - message: A description; must not contain keys or values.
    public init(code: Code, sqliteCode: Int32? = nil, message: String) {
        self.code = code
        self.sqliteCode = sqliteCode
        self.message = message
    }

    /// `CacheError(<code>: <message>)`, plus the SQLite code when there is one.
    public var description: String {
        if let sqliteCode {
            return "CacheError(\(code): \(message), SQLite code \(sqliteCode))"
        }
        return "CacheError(\(code): \(message))"
    }
}
