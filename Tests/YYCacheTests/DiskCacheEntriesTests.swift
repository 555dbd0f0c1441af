import Foundation
import Testing

@testable import YYCache

/// Enumeration of DiskCache entries: order, metadata, expired entries left out, a throwing
/// body, a closed cache, the async stream. 100,000 entries beside a writer are walked in C
/// (Tests/C/test_disk_cache_entries.c).
@Suite struct DiskCacheEntriesTests {
    struct Stop: Error, Equatable {}

    private func filled(_ folder: borrowing TemporaryFolder) throws -> DiskCache {
        let disk = try DiskCache(path: folder.path, inlineThreshold: 8)
        try disk.setData(Data([1, 2, 3]), forKey: "first")
        try disk.setData(Data(repeating: 7, count: 100), forKey: "second", timeToLive: .seconds(3600))
        try disk.setData(Data([1]), forKey: "expired", timeToLive: .zero)
        try disk.setData(Data([4]), forKey: "third")
        return disk
    }

    @Test func entriesComeWithTheirMetadataAndWithoutExpiredOnes() throws {
        let folder = TemporaryFolder()
        let disk = try filled(folder)
        var seen: [DiskCacheEntry] = []
        try disk.forEachEntry { seen.append($0) }
        #expect(Set(seen.map(\.key)) == ["first", "second", "third"])
        let second = try #require(seen.first { $0.key == "second" })
        #expect(second.size == 100)
        #expect(second.filename != nil)
        let expiry = try #require(second.expirationDate)
        #expect(expiry > Date().addingTimeInterval(3500))
        #expect(seen.first { $0.key == "first" }?.filename == nil)
        #expect(seen.first { $0.key == "first" }?.expirationDate == nil)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.lastAccessDate <= $1.lastAccessDate })
    }

    @Test func aReadMovesTheEntryBehindTheOthersInTheWalkRightAway() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        let readAndWalk: () throws -> [String] = {
            try disk.setData(Data([1]), forKey: "read")
            try disk.setData(Data([2]), forKey: "unread")
            usleep(1_100_000)  // access times count whole seconds
            #expect(try disk.data(forKey: "read") == Data([1]))  // notes a newer access time
            var walked: [String] = []
            try disk.forEachEntry { walked.append($0.key) }
            return walked
        }
        #expect(try readAndWalk() == ["unread", "read"])
        var streamed: [String] = []
        for try await entry in disk.entries() { streamed.append(entry.key) }
        #expect(streamed == ["unread", "read"])
    }

    @Test func aThrowingBodyStopsTheWalkAndItsErrorIsRethrown() throws {
        let folder = TemporaryFolder()
        let disk = try filled(folder)
        var calls = 0
        #expect(throws: Stop.self) {
            try disk.forEachEntry { _ in
                calls += 1
                throw Stop()
            }
        }
        #expect(calls == 1)
    }

    @Test func aClosedCacheThrowsClosed() async throws {
        let folder = TemporaryFolder()
        let disk = try filled(folder)
        let other = try DiskCache(path: folder.path)
        var calls = 0
        do {
            try other.forEachEntry { _ in
                calls += 1
                other.close()  // the walk of this object ends with .closed
            }
            Issue.record("no error")
        } catch let error as CacheError {
            #expect(error.code == .closed)
        }
        #expect(calls == 1)
        do {
            try other.forEachEntry { _ in Issue.record("an entry of a closed cache") }
            Issue.record("no error")
        } catch let error as CacheError {
            #expect(error.code == .closed)
        }
        do {
            for try await _ in other.entries() { Issue.record("an entry of a closed cache") }
            Issue.record("no error")
        } catch let error as CacheError {
            #expect(error.code == .closed)
        }
        #expect(try await disk.totalCount() == 4)  // the other object still works
    }

    @Test func theAsyncStreamYieldsTheSameEntries() async throws {
        let folder = TemporaryFolder()
        let disk = try filled(folder)
        var keys: [String] = []
        for try await entry in disk.entries() { keys.append(entry.key) }
        var expected: [String] = []
        try disk.forEachEntry { expected.append($0.key) }
        #expect(keys == expected)
        #expect(keys.count == 3)
    }
}
