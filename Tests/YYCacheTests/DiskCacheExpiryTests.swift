import Foundation
import Testing

@testable import YYCache

/// Time to live on DiskCache. No clock is moved (the Swift build has no test hooks): a zero
/// time to live is expired at once, an hour never within a test. The boundary, reopens, rows
/// of YYKVStorage and faults are tested in C (Tests/C/test_disk_cache_ttl.c, with a movable
/// clock; Tests/C/test_fault_loop.c).
@Suite struct DiskCacheExpiryTests {
    static let hour = Duration.seconds(3600)

    @Test func expiredEntryIsNeverReturnedAndTheReadRemovesIt() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path, inlineThreshold: 4)
        try disk.setData(
            Data("inline".utf8).prefix(3), forKey: "small", extendedData: Data([1]),
            timeToLive: .zero)
        try disk.setData(
            Data("in a file".utf8), forKey: "large", extendedData: Data([2]),
            timeToLive: .zero)
        try disk.setValue("kept", forKey: "kept", timeToLive: Self.hour)
        #expect(try disk.totalCount() == 3)
        #expect(try disk.data(forKey: "small") == nil)
        #expect(!disk.containsValue(forKey: "large"))
        #expect(try disk.extendedData(forKey: "large") == nil)
        #expect(try disk.totalCount() == 1)  // each read removed what it found expired
        #expect(try disk.value(String.self, forKey: "kept") == "kept")
        let left = try #require(disk.timeToLive(forKey: "kept"))
        #expect(left > .seconds(3500) && left <= Self.hour)
    }

    @Test func defaultTimeToLiveAppliesToPlainSetsAndNilMeansNever() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        #expect(disk.defaultTimeToLive == nil)
        disk.defaultTimeToLive = .zero
        #expect(disk.defaultTimeToLive == .zero)
        #expect(try DiskCache(path: folder.path).defaultTimeToLive == .zero)  // per core
        try disk.setData(Data([1]), forKey: "plain")
        try disk.setValue(2, forKey: "value")
        try disk.setValue(3, forKey: "never", timeToLive: nil)
        #expect(try disk.data(forKey: "plain") == nil)
        #expect(try disk.value(Int.self, forKey: "value") == nil)
        #expect(try disk.value(Int.self, forKey: "never") == 3)
        #expect(disk.timeToLive(forKey: "never") == nil)
        disk.defaultTimeToLive = .seconds(-5)
        #expect(disk.defaultTimeToLive == .zero)
        disk.defaultTimeToLive = nil
        try disk.setValue(4, forKey: "plain")
        #expect(try disk.value(Int.self, forKey: "plain") == 4)
    }

    @Test func everyTrimWithinItsLimitRemovesExpiredEntries() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        let trims: [(DiskCache) throws -> Void] = [
            { try $0.trim(toCount: .max) }, { try $0.trim(toCost: .max) },
            { try $0.trim(toAge: .seconds(Int64.max)) },
        ]
        for trim in trims {
            try disk.setData(Data([1]), forKey: "gone", timeToLive: .zero)
            try disk.setData(Data([2]), forKey: "kept", timeToLive: Self.hour)
            #expect(try disk.totalCount() == 2)
            try trim(disk)
            #expect(try disk.totalCount() == 1)
        }
    }

    @Test func asyncTwinsStoreWithATimeToLive() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try await disk.setData(Data([1]), forKey: "gone", timeToLive: .zero)
        try await disk.setValue("v", forKey: "kept", extendedData: Data([9]), timeToLive: Self.hour)
        #expect(try await disk.data(forKey: "gone") == nil)
        #expect(try await disk.value(String.self, forKey: "kept") == "v")
        #expect(try await disk.extendedData(forKey: "kept") == Data([9]))
    }

    @Test func closedCacheThrowsClosedOnASetWithATimeToLive() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        disk.close()
        #expect(throws: CacheError.self) { try disk.setData(Data([1]), forKey: "k", timeToLive: .zero) }
        #expect(disk.defaultTimeToLive == nil)
        #expect(disk.timeToLive(forKey: "k") == nil)
    }
}
