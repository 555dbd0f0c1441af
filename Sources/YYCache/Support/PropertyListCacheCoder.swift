#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A ``CacheCoder`` that stores values as binary property lists.
///
/// Foundation's `PropertyListEncoder` refuses top-level fragments (a bare string, number, date
/// or boolean), so every value is stored wrapped in a one-element array; ``decode(_:from:)``
/// unwraps it. Bytes written by this coder are therefore read back by this coder only.
public struct PropertyListCacheCoder: CacheCoder {
    // Both are Sendable and configured once; encode/decode may run concurrently.
    private let encoder: PropertyListEncoder
    private let decoder = PropertyListDecoder()

    /// Creates a binary property-list coder.
    public init() {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        self.encoder = encoder
    }

    /// Encodes `value` as a binary property list (wrapped in a one-element array).
    ///
    /// - Parameters:
    ///   - value: The value.
    /// - Returns: The property list's bytes.
    /// - Throws: `EncodingError`.
    /// - Complexity: O(*n*) in the size of the value.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        try encoder.encode(Wrapped(value: value))
    }

    /// Decodes a value written by ``encode(_:)``.
    ///
    /// - Parameters:
    ///   - type: The type.
    ///   - data: A property list written by this coder.
    /// - Returns: The value.
    /// - Throws: `DecodingError`.
    /// - Complexity: O(*n*) in the size of the data.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decoder.decode(Unwrapped<T>.self, from: data).value
    }

    private struct Wrapped<T: Encodable>: Encodable {
        let value: T
        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(value)
        }
    }

    private struct Unwrapped<T: Decodable>: Decodable {
        let value: T
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            value = try container.decode(T.self)
            guard container.isAtEnd else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: [], debugDescription: "expected a one-element array"))
            }
        }
    }
}
