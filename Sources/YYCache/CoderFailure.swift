import Foundation

/// Describes coder errors without the values they may quote (messages never contain keys or
/// values): the error's kind and coding path only.
enum CoderFailure {
    static func describe(_ error: any Error) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.isEmpty ? "top level" : codingPath.map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case let DecodingError.typeMismatch(type, context):
            return "type mismatch (expected \(type)) at \(path(context.codingPath))"
        case let DecodingError.valueNotFound(type, context):
            return "missing \(type) at \(path(context.codingPath))"
        case let DecodingError.keyNotFound(key, context):
            return "missing key \"\(key.stringValue)\" at \(path(context.codingPath))"
        case let DecodingError.dataCorrupted(context):
            return "corrupted data at \(path(context.codingPath))"
        case let EncodingError.invalidValue(_, context):
            return "invalid value at \(path(context.codingPath))"
        default:
            return String(describing: type(of: error))
        }
    }
}
