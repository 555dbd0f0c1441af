import Foundation
import Testing

@testable import YYCache

/// Single-flight loading on DiskCache: 64 tasks missing on one key run the loader once and
/// get one value; a throwing loader fails all 64 with its own error, stores nothing, and the
/// next call loads again. The loader waits (bounded) until every caller awaits it, so the
/// callers are known to overlap.
@Suite struct DiskCacheLoadingTests {
    struct LoadFailed: Error, Equatable {}

    final class Runs: Sendable {
        let count = Protected(0)
        func increment() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    /// Waits until `count` callers await the load of `key` (60 s at most).
    private static func waitForCallers(_ disk: DiskCache, _ key: String, _ count: Int) async throws {
        let core = try disk.withCore { UInt(bitPattern: $0) }
        let slot = DiskCacheLoads.Slot(core: core, key: key)
        for _ in 0..<60_000 where DiskCacheLoads.shared.callers(of: slot) < count {
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    @Test func sixtyFourTasksRunOneLoad() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        let runs = Runs()
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    try await disk.value(String.self, forKey: "k") {
                        runs.increment()
                        try await Self.waitForCallers(disk, "k", 64)
                        return "loaded"
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(runs.value == 1)
        #expect(values == Array(repeating: "loaded", count: 64))
        #expect(try await disk.value(String.self, forKey: "k") == "loaded")
        let stats = disk.statistics
        #expect(stats.loads == 1 && stats.loadFailures == 0 && stats.insertions == 1)
        // A hit does not load.
        let again = try await disk.value(String.self, forKey: "k") {
            runs.increment()
            return "again"
        }
        #expect(again == "loaded" && runs.value == 1)
    }

    @Test func aThrowingLoaderFailsEveryCallerAndStoresNothing() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        let runs = Runs()
        let failures = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    do {
                        _ = try await disk.value(Int.self, forKey: "k") {
                            runs.increment()
                            try await Self.waitForCallers(disk, "k", 64)
                            throw LoadFailed()
                        }
                        return false
                    } catch {
                        return error is LoadFailed  // the loader's own error, unwrapped
                    }
                }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(failures == 64)
        #expect(runs.value == 1)
        #expect(await !disk.containsValue(forKey: "k"))
        #expect(disk.statistics.loadFailures == 1)
        let value = try await disk.value(Int.self, forKey: "k") {
            runs.increment()
            return 7
        }
        #expect(value == 7 && runs.value == 2)
    }

    @Test func anExpiredEntryIsLoadedAgain() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try await disk.setValue("stale", forKey: "k", timeToLive: .zero)
        let value = try await disk.value(String.self, forKey: "k") { "fresh" }
        #expect(value == "fresh")
        #expect(disk.statistics.removals[.expired] == 1)
    }

    /// API.md: a loader call on a missing key is one miss and one load (the task's second look
    /// used to count a second miss), and the stored value one insertion.
    @Test func aLoadingCallCountsOneMissOneLoadOneInsertion() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        #expect(try await disk.value(String.self, forKey: "k") { "loaded" } == "loaded")
        let stats = disk.statistics
        #expect(stats.misses == 1 && stats.hits == 0)
        #expect(stats.loads == 1 && stats.insertions == 1)
    }

    /// A set made while the loader ran (after the miss) is newer: the loaded value is returned
    /// to its caller but not stored over it.
    @Test func aLoadedValueNeverOverwritesASetMadeAfterTheMiss() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        let value = try await disk.value(String.self, forKey: "k") {
            try await disk.setValue("set", forKey: "k")
            return "loaded"
        }
        #expect(value == "loaded")
        #expect(try await disk.value(String.self, forKey: "k") == "set")
    }
}
