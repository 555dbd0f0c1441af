import Foundation
import Testing

@testable import YYCache

/// Removal events and statistics of DiskCache: every cause with its key, the handler and the
/// counters shared by every object on the path. Exactly-once under threads and faults is
/// tested in C (Tests/C/test_disk_cache_events.c).
@Suite struct DiskCacheEventsTests {
    /// The events a handler received, in order.
    final class Log: Sendable {
        let events = Protected<[(String, CacheRemovalCause)]>([])
        func record(_ key: String, _ cause: CacheRemovalCause) { events.withLock { $0.append((key, cause)) } }
        func count(_ key: String, _ cause: CacheRemovalCause) -> Int {
            events.withLock { $0.filter { $0.0 == key && $0.1 == cause }.count }
        }
        var total: Int { events.withLock { $0.count } }
    }

    @Test func everyCauseIsReportedWithItsKey() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        let log = Log()
        disk.didRemoveEntry = { [disk] key, cause in
            log.record(key, cause)
            if cause != .replaced { #expect(!disk.containsValue(forKey: key)) }  // no lock held
        }
        #expect(disk.didRemoveEntry != nil)
        try disk.setValue(1, forKey: "r")
        try disk.setValue(2, forKey: "r")
        try disk.setValue(3, forKey: "x")
        try disk.setValue(nil as Int?, forKey: "x")
        try disk.setData(Data([1]), forKey: "t", timeToLive: .zero)
        #expect(try disk.data(forKey: "t") == nil)
        try disk.setValue(4, forKey: "e")
        try disk.trim(toCount: 1)
        try disk.removeAllValues()
        #expect(log.count("r", .replaced) == 1)
        #expect(log.count("x", .explicit) == 1)
        #expect(log.count("t", .expired) == 1)
        #expect(log.count("r", .evicted) == 1)
        #expect(log.count("e", .explicit) == 1)
        #expect(log.total == 5)
        let stats = disk.statistics
        #expect(
            stats
                == CacheStatistics(
                    hits: stats.hits, misses: stats.misses,
                    insertions: stats.insertions,
                    removals: [.replaced: 1, .explicit: 2, .expired: 1, .evicted: 1]))
        #expect(stats.insertions == 5)
        #expect(stats.misses == 1)
        disk.didRemoveEntry = nil
        #expect(disk.didRemoveEntry == nil)
        try disk.setValue(5, forKey: "z")
        try disk.removeValue(forKey: "z")
        #expect(log.total == 5)
        #expect(disk.statistics.removals[.explicit] == 3)
    }

    @Test func handlerAndStatisticsBelongToTheCore() throws {
        let folder = TemporaryFolder()
        let first = try DiskCache(path: folder.path)
        let second = try DiskCache(path: folder.path)
        let log = Log()
        first.didRemoveEntry = { log.record($0, $1) }
        #expect(second.didRemoveEntry != nil)
        try second.setValue("v", forKey: "k")
        #expect(try second.value(String.self, forKey: "k") == "v")
        #expect(try second.value(String.self, forKey: "missing") == nil)
        try second.removeValue(forKey: "k")
        #expect(log.count("k", .explicit) == 1)
        #expect(first.statistics.hits == 1 && first.statistics.misses == 1)
        #expect(first.statistics.hitRatio == 0.5)
        second.resetStatistics()
        #expect(first.statistics == CacheStatistics())
        first.didRemoveEntry = nil
    }

    @Test func closedCacheHasNoHandlerAndZeroStatistics() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try disk.setValue(1, forKey: "k")
        disk.close()
        disk.didRemoveEntry = { _, _ in }
        #expect(disk.didRemoveEntry == nil)
        #expect(disk.statistics == CacheStatistics())
    }
}
