#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A ``CacheCoder`` that stores values as JSON (`JSONEncoder`/`JSONDecoder`). The default coder.
///
/// Top-level fragments (a bare string, number or boolean) are supported. Non-finite floating
/// point values, which JSON cannot express, are written as the strings `"inf"`, `"-inf"` and
/// `"nan"` so that they round-trip too. Dates use `JSONEncoder`'s default strategy.
public struct JSONCacheCoder: CacheCoder {
    // Both are Sendable and configured once; encode/decode may run concurrently.
    private let encoder: JSONEncoder
    private let decoder: JSONDecoder

    /// Creates a JSON coder.
    public init() {
        let encoder = JSONEncoder()
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        self.encoder = encoder
        self.decoder = decoder
    }

    /// Encodes `value` as JSON.
    ///
    /// - Parameters:
    ///   - value: The value.
    /// - Returns: UTF-8 JSON.
    /// - Throws: `EncodingError`.
    /// - Complexity: O(*n*) in the size of the value.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        try encoder.encode(value)
    }

    /// Decodes a value from JSON.
    ///
    /// - Parameters:
    ///   - type: The type.
    ///   - data: UTF-8 JSON.
    /// - Returns: The value.
    /// - Throws: `DecodingError`.
    /// - Complexity: O(*n*) in the size of the data.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decoder.decode(type, from: data)
    }
}
