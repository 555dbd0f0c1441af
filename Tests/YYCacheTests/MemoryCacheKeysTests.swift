import Foundation
import Testing

@testable import YYCache

/// `keys`: a snapshot in the policy's order, expired entries left out, every key type.
@Suite struct MemoryCacheKeysTests {
    @Test func lruKeysAreMostRecentlyUsedFirst() {
        let cache = MemoryCache<String, Int>()
        cache["a"] = 1
        cache["b"] = 2
        cache["c"] = 3
        _ = cache["a"]
        #expect(cache.keys == ["a", "c", "b"])
        #expect(cache.keys == ["a", "c", "b"])  // not a use
        #expect(cache.statistics.hits == 1)
    }

    @Test(arguments: [EvictionPolicy.sieve, .s3fifo])
    func sieveAndS3FIFOKeysAreNewestInsertionFirst(policy: EvictionPolicy) {
        let cache = MemoryCache<Int, String>(policy: policy)
        for i in 1...3 { cache[i] = "\(i)" }
        _ = cache[1]
        #expect(cache.keys == [3, 2, 1])
    }

    @Test func expiredEntriesAreLeftOut() {
        let cache = MemoryCache<String, Int>()
        cache["stays"] = 1
        cache.setValue(2, forKey: "goes", timeToLive: .zero)
        cache[""] = 3
        #expect(Set(cache.keys) == ["stays", ""])
        #expect(cache.totalCount == 2)
    }

    @Test func everyBuiltInKeyTypeComesBack() {
        let uuid = UUID()
        let uuids = MemoryCache<UUID, Int>()
        uuids[uuid] = 1
        #expect(uuids.keys == [uuid])
        let data = MemoryCache<Data, Int>()
        data[Data([0, 1, 2])] = 1
        #expect(data.keys == [Data([0, 1, 2])])
        let bytes = MemoryCache<[UInt8], Int>()
        bytes[[9, 8]] = 1
        #expect(bytes.keys == [[9, 8]])
        let ints = MemoryCache<Int64, Int>()
        ints[-5] = 1
        #expect(ints.keys == [-5])
        let unsigned = MemoryCache<UInt64, Int>()
        unsigned[.max] = 1
        #expect(unsigned.keys == [.max])
        let substrings = MemoryCache<Substring, Int>()
        substrings["hé!".dropLast()] = 1
        #expect(substrings.keys == ["hé"])
        let strings = MemoryCache<String, Int>()
        strings["caf\u{E9}"] = 1
        strings["cafe\u{301}"] = 2  // another key: its bytes differ
        #expect(
            strings.keys.map { Array($0.utf8) }.sorted { $0.count < $1.count }
                == [Array("caf\u{E9}".utf8), Array("cafe\u{301}".utf8)])
    }

    @Test func keysOfTheProgramsOwnTypeComeBack() {
        let tracker = LifetimeTracker()
        do {
            let cache = MemoryCache<ProductID, Tracked>()
            cache[ProductID(raw: 1)] = tracker.make(1)
            cache[ProductID(raw: 2)] = tracker.make(2)
            _ = cache[ProductID(raw: 1)]
            #expect(cache.keys.map(\.raw) == [1, 2])
            #expect(cache[ProductID(raw: 2)]?.id == 2)
        }
        #expect(tracker.liveCount == 0)
    }
}
