import Foundation
import Testing

@testable import YYCache

struct Profile: Codable, Equatable, Sendable {
    var name: String
    var age: Int
    var scores: [Double]
    var flags: [String: Bool]
}

@Suite struct CacheCoderTests {
    static let coders: [any CacheCoder] = [JSONCacheCoder(), PropertyListCacheCoder()]

    private func roundTrip<T: Codable & Equatable>(_ value: T, _ coder: any CacheCoder) throws {
        let data = try coder.encode(value)
        #expect(try coder.decode(T.self, from: data) == value, "\(T.self) through \(type(of: coder))")
    }

    @Test(arguments: coders)
    func topLevelFragmentsRoundTrip(coder: any CacheCoder) throws {
        try roundTrip("hello", coder)
        try roundTrip("", coder)
        try roundTrip(42, coder)
        try roundTrip(-7 as Int64, coder)
        try roundTrip(UInt64.max, coder)
        try roundTrip(3.25, coder)
        try roundTrip(true, coder)
        try roundTrip(Date(timeIntervalSince1970: 1_000), coder)
        try roundTrip(Optional<Int>.none, coder)
    }

    @Test(arguments: coders)
    func collectionsAndStructsRoundTrip(coder: any CacheCoder) throws {
        try roundTrip([1, 2, 3], coder)
        try roundTrip([String](), coder)
        try roundTrip(["a": 1, "b": 2], coder)
        try roundTrip([[1], [2, 3]], coder)
        try roundTrip(Profile(name: "Ada", age: 36, scores: [1.5, 2], flags: ["x": true]), coder)
        try roundTrip([Profile(name: "B", age: 1, scores: [], flags: [:])], coder)
        try roundTrip(Data([0, 1, 2]), coder)
    }

    @Test func jsonRoundTripsNonFiniteDoubles() throws {
        let coder = JSONCacheCoder()
        #expect(try coder.decode(Double.self, from: coder.encode(Double.infinity)) == .infinity)
        #expect(try coder.decode(Double.self, from: coder.encode(-Double.infinity)) == -.infinity)
        #expect(try coder.decode(Double.self, from: coder.encode(Double.nan)).isNaN)
    }

    @Test func propertyListCoderWritesBinaryPropertyLists() throws {
        let data = try PropertyListCacheCoder().encode(["k": 1])
        #expect(data.starts(with: Array("bplist".utf8)))
    }

    @Test func theDefaultCoderIsJSON() {
        #expect(defaultCacheCoder is JSONCacheCoder)
    }

    @Test(arguments: coders)
    func decodingTheWrongTypeThrows(coder: any CacheCoder) throws {
        let data = try coder.encode("text")
        #expect(throws: (any Error).self) { try coder.decode(Int.self, from: data) }
        #expect(throws: (any Error).self) { try coder.decode(Int.self, from: Data("garbage".utf8)) }
    }

    @Test func coderFailureDescriptionsDoNotQuoteValues() throws {
        do {
            _ = try JSONCacheCoder().decode(Profile.self, from: Data(#"{"name":"SECRET","age":"x"}"#.utf8))
            Issue.record("decoded")
        } catch {
            let text = CoderFailure.describe(error)
            #expect(!text.contains("SECRET"))
            #expect(text.contains("age") || text.contains("scores"))
        }
    }
}
