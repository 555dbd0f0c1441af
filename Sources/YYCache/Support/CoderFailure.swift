/// Describes coder errors without the values they may quote (messages never contain keys or
/// values): the error's kind and coding path only.
enum CoderFailure {
    static func describe(_ error: any Error) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.isEmpty ? "top level" : codingPath.map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case DecodingError.typeMismatch(let type, let context):
            return "type mismatch (expected \(type)) at \(path(context.codingPath))"
        case DecodingError.valueNotFound(let type, let context):
            return "missing \(type) at \(path(context.codingPath))"
        case DecodingError.keyNotFound(let key, let context):
            return "missing key \"\(key.stringValue)\" at \(path(context.codingPath))"
        case DecodingError.dataCorrupted(let context):
            return "corrupted data at \(path(context.codingPath))"
        case EncodingError.invalidValue(_, let context):
            return "invalid value at \(path(context.codingPath))"
        default:
            return String(describing: type(of: error))
        }
    }
}
