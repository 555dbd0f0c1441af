import Foundation
import Testing

@testable import YYCache

/// Issue 12 item 10: the C core's error hook (corruption found, manifest rebuilt, auto-trim
/// failures) reaches Swift users through `didReportError` and `reportedErrors()`.
@Suite struct DiskCacheErrorReportTests {
    /// Every report a stream holds once its cache is closed (which finishes it).
    private func drain(_ stream: AsyncStream<CacheError>) async -> [CacheError] {
        var reports: [CacheError] = []
        for await report in stream { reports.append(report) }
        return reports
    }

    /// Stores a value in a data file, then truncates the file behind the cache's back.
    private func corruptDataFile(in folder: String, key: String, through disk: DiskCache) throws {
        try disk.setData(Data(repeating: 7, count: 100), forKey: key)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder + "/data")
        #expect(files.count == 1)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: folder + "/data/" + files[0]))
    }

    @Test func aCorruptManifestRebuiltAtOpenReachesTheFirstListener() async throws {
        let folder = TemporaryFolder()
        try Data("this is not a SQLite database, not even close".utf8)
            .write(to: URL(fileURLWithPath: folder.appending("manifest.sqlite")))
        let disk = try DiskCache(path: folder.path)  // deletes and rebuilds the manifest
        let stream = disk.reportedErrors()
        disk.close()
        let reports = await drain(stream)
        #expect(reports.contains { $0.code == .corrupt }, "\(reports)")
    }

    @Test func aCorruptDataFileIsReportedToTheHandlerWhenRead() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path, inlineThreshold: 0)
        try corruptDataFile(in: folder.path, key: "k", through: disk)
        let reports = LockedBox<[CacheError]>([])
        disk.didReportError = { error in reports.value.append(error) }
        #expect(try disk.data(forKey: "k") == nil)  // a miss for the caller...
        #expect(reports.value.map(\.code) == [.corrupt])  // ...but reported
        #expect(reports.value.first?.message.isEmpty == false)
        disk.didReportError = nil
        try corruptDataFile(in: folder.path, key: "k2", through: disk)
        _ = try disk.data(forKey: "k2")
        #expect(reports.value.count == 1)  // no handler, no report
    }

    @Test func reportsReachEveryObjectOnTheSharedCore() async throws {
        let folder = TemporaryFolder()
        let first = try DiskCache(path: folder.path, inlineThreshold: 0)
        let second = try DiskCache(path: folder.path)  // the same core
        let firstReports = first.reportedErrors()
        let secondReports = second.reportedErrors()
        try corruptDataFile(in: folder.path, key: "k", through: first)
        #expect(try await second.data(forKey: "k") == nil)
        first.close()
        second.close()
        #expect(await drain(firstReports).map(\.code) == [.corrupt])
        #expect(await drain(secondReports).map(\.code) == [.corrupt])
    }

    @Test func aStreamAfterCloseIsFinishedAndAClosedCacheReportsNothing() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        disk.close()
        #expect(await drain(disk.reportedErrors()).isEmpty)
    }

    @Test func theTwoLevelCacheReportsItsDiskTiersCorruption() async throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Data>(path: folder.path)
        let reports = cache.reportedErrors()
        let big = Data(repeating: 1, count: 30_000)  // above the 20480-byte inline threshold
        try await cache.setValue(big, forKey: "k")
        cache.memoryCache.removeAllValues()
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.appending("data"))
        try Data([0]).write(to: URL(fileURLWithPath: folder.appending("data/" + files[0])))
        #expect(try await cache.value(forKey: "k") == nil)
        cache.diskCache.close()
        #expect(await drain(reports).map(\.code) == [.corrupt])
    }
}
