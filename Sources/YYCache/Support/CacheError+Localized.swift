import CYYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// `localizedDescription` (and so `print(error.localizedDescription)`, alerts and logs that use
// it) reads as a sentence instead of Foundation's "The operation could not be completed.
// (YYCache.CacheError error 1.)"; `description` keeps the debug form with the code's name.
extension CacheError: LocalizedError {
    /// The message as a sentence (capitalized, with a final period), with the SQLite result code
    /// when there is one; the code's generic message when the message is empty. Never keys or
    /// values. Not translated.
    public var errorDescription: String? {
        var text = message.isEmpty ? String(cString: yyc_strerror(code.rawValue)) : message
        if code == .encoding && message.isEmpty { text = "a value could not be encoded" }
        if code == .decoding && message.isEmpty { text = "the stored bytes could not be decoded" }
        while text.last == "." { text.removeLast() }
        if let sqliteCode { text += " (SQLite result code \(sqliteCode))" }
        return text.prefix(1).uppercased() + text.dropFirst() + "."
    }
}
