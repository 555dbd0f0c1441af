import Foundation
import Testing

@testable import YYCache

@Suite struct CacheKeyTests {
    private func bytes(_ key: some CacheKey) -> [UInt8] {
        key.withCacheKeyBytes { Array($0) }
    }

    @Test func stringKeysAreUTF8() {
        #expect(bytes("héllo") == Array("héllo".utf8))
        #expect(bytes("") == [])
        #expect(bytes("a\0b") == [0x61, 0, 0x62])
    }

    @Test func substringKeysMatchTheirString() {
        let text = "prefix-key-suffix"
        let slice = text.dropFirst(7).dropLast(7)
        #expect(bytes(slice) == bytes("key"))
    }

    @Test func bridgedAndNativeStringsGiveTheSameBytes() {
        let bridged = NSString(string: "naïve key") as String
        #expect(bytes(bridged) == bytes("naïve key"))
    }

    @Test func integerKeysAreTheirEightBytes() {
        #expect(bytes(1 as Int) == [1, 0, 0, 0, 0, 0, 0, 0])
        #expect(bytes(-1 as Int64) == [UInt8](repeating: 0xFF, count: 8))
        #expect(bytes(UInt64.max) == [UInt8](repeating: 0xFF, count: 8))
    }

    @Test func uuidDataAndByteArrayKeysAreTheirBytes() {
        let uuid = UUID()
        #expect(bytes(uuid).count == 16)
        #expect(bytes(uuid) == withUnsafeBytes(of: uuid.uuid) { Array($0) })
        #expect(bytes(Data([1, 2, 3])) == [1, 2, 3])
        #expect(bytes([UInt8]([0, 9])) == [0, 9])
        #expect(bytes(Data()) == [])
    }

    @Test func everyKeyTypeWorksInAMemoryCache() {
        let ints = MemoryCache<Int, String>()
        ints[-5] = "minus five"
        #expect(ints[-5] == "minus five")
        let uuids = MemoryCache<UUID, Int>()
        let id = UUID()
        uuids[id] = 1
        #expect(uuids[id] == 1)
        #expect(uuids[UUID()] == nil)
        let datas = MemoryCache<Data, Int>()
        datas[Data([0, 0])] = 2
        #expect(datas[Data([0, 0])] == 2)
        #expect(datas[Data([0])] == nil)
        let arrays = MemoryCache<[UInt8], Int>()
        arrays[[1, 2]] = 3
        #expect(arrays[[1, 2]] == 3)
        let substrings = MemoryCache<Substring, Int>()
        substrings["abc".dropFirst()] = 4
        #expect(substrings["bc"] == 4)
        let int64s = MemoryCache<Int64, Int>()
        int64s[.min] = 5
        #expect(int64s[.min] == 5)
        let uint64s = MemoryCache<UInt64, Int>()
        uint64s[.max] = 6
        #expect(uint64s[.max] == 6)
    }
}
