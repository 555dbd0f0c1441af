#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// `localizedDescription` (and so `print(error.localizedDescription)`, alerts and logs that use
// it) shows the code and the message instead of Foundation's "The operation could not be
// completed. (YYCache.CacheError error 1.)".
extension CacheError: LocalizedError {
    /// The same text as ``description``: the code's name, the message and the SQLite code when
    /// there is one (never keys or values). Not translated.
    public var errorDescription: String? { description }
}
