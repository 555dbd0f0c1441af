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

    // Issue 12 item 7: keys are compared as bytes, as YYCache's were.

    static let composed = "caf\u{E9}"  // é as one scalar (NFC)
    static let decomposed = "cafe\u{301}"  // e + combining acute accent (NFD)

    @Test func canonicallyEquivalentStringsAreTwoMemoryCacheEntries() {
        #expect(Self.composed == Self.decomposed)  // Swift's == is canonical equivalence
        #expect(bytes(Self.composed) != bytes(Self.decomposed))
        let cache = MemoryCache<String, Int>()
        cache[Self.composed] = 1
        #expect(cache[Self.decomposed] == nil)
        #expect(!cache.containsValue(forKey: Self.decomposed))
        cache[Self.decomposed] = 2
        #expect(cache.totalCount == 2)
        #expect(cache[Self.composed] == 1)
        #expect(cache[Self.decomposed] == 2)
        cache.removeValue(forKey: Self.decomposed)
        #expect(cache[Self.composed] == 1)
    }

    @Test func canonicallyEquivalentStringsAreTwoEntriesOnDiskAndInTheTwoLevelCache() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.appending("disk"), inlineThreshold: 4)  // files too
        try disk.setData(Data("one".utf8), forKey: Self.composed)
        #expect(try disk.data(forKey: Self.decomposed) == nil)
        try disk.setData(Data("two".utf8), forKey: Self.decomposed)
        #expect(try disk.totalCount() == 2)
        #expect(try disk.data(forKey: Self.composed) == Data("one".utf8))
        let cache = try Cache<Int>(path: folder.appending("cache"))
        try cache.setValue(1, forKey: Self.composed)
        #expect(try cache.value(forKey: Self.decomposed) == nil)
        try cache.setValue(2, forKey: Self.decomposed)
        #expect(try cache.value(forKey: Self.composed) == 1)
        #expect(cache.memoryCache.totalCount == 2)
        #expect(try cache.diskCache.totalCount() == 2)
    }

    @Test func normalizedKeysShareAnEntry() {
        // The documented way to merge canonically equivalent keys: normalize them first.
        let cache = MemoryCache<String, Int>()
        cache[Self.composed.precomposedStringWithCanonicalMapping] = 1
        #expect(cache[Self.decomposed.precomposedStringWithCanonicalMapping] == 1)
    }

    @Test func equalKeyBytesImplyEqualKeys() {
        // CacheKey's rule: one entry never stands for two different keys.
        let strings = [Self.composed, Self.decomposed, "", "a", "a\0", "\u{1F1EB}\u{1F1F7}", "\r\n", "\n"]
        for a in strings {
            for b in strings where bytes(a) == bytes(b) {
                #expect(a == b)
                #expect(a.hashValue == b.hashValue)
                #expect(Substring(a) == Substring(b))
            }
            #expect(bytes(Substring(a)) == bytes(a))
        }
        let datas = [Data(), Data([0]), Data([0, 0]), Data([1])]
        for a in datas { for b in datas where bytes(a) == bytes(b) { #expect(a == b) } }
        #expect(bytes(Data([1, 2])) == bytes([UInt8]([1, 2])))
    }
}
