import Foundation
import Synchronization
import Testing

@testable import YYCache

@Suite struct DiskCacheConcurrencyTests {
    @Test func eightTasksMixingOperationsOnOneCache() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path, inlineThreshold: 1_024)
        let small = Data(repeating: 1, count: 100)
        let large = Data(repeating: 2, count: 4_096)
        let deadline = ContinuousClock.now + .seconds(2)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var i = 0
                    while ContinuousClock.now < deadline {
                        let key = "k\((i * 13 + task) % 64)"
                        switch (i + task) % 6 {
                        case 0: try await disk.setData(small, forKey: key)
                        case 1: try await disk.setData(large, forKey: key)
                        case 2: try await disk.removeValue(forKey: key)
                        case 3 where i % 20 == 0: try await disk.trim(toCount: 48)
                        default:
                            if let data = try await disk.data(forKey: key) {
                                #expect(data == small || data == large)
                            }
                        }
                        i += 1
                    }
                }
            }
            try await group.waitForAll()
        }
        // Totals agree with what can be read back.
        let keys = (0..<64).map { "k\($0)" }
        var count = 0
        var cost = 0
        for key in keys {
            if let data = try await disk.data(forKey: key) {
                count += 1
                cost += data.count
            }
        }
        #expect(try await disk.totalCount() == count)
        #expect(try await disk.totalCost() == cost)
    }

    @Test func twoObjectsOnOnePathFromManyThreadsLoseNoWrite() throws {
        let folder = TemporaryFolder()
        let first = try DiskCache(path: folder.path)
        let second = try DiskCache(path: folder.path)
        let failures = Atomic<Int>(0)
        onThreads(8) { thread in
            let disk = thread % 2 == 0 ? first : second
            for i in 0..<100 {
                let key = "t\(thread)-\(i)"
                do {
                    try disk.setValue(i, forKey: key)
                    if try (thread % 2 == 0 ? second : first).value(Int.self, forKey: key) != i {
                        failures.add(1, ordering: .relaxed)
                    }
                } catch {
                    failures.add(1, ordering: .relaxed)
                }
            }
        }
        let observedFailures = failures.load(ordering: .relaxed)
        #expect(observedFailures == 0)
        #expect(try first.totalCount() == 800)
        #expect(try second.totalCount() == 800)
    }

    @Test func closingWhileOtherThreadsUseTheObjectIsSafe() throws {
        let folder = TemporaryFolder()
        let keeper = try DiskCache(path: folder.path)
        for _ in 0..<5 {
            let disk = try DiskCache(path: folder.path)
            onThreads(4) { thread in
                if thread == 0 {
                    usleep(2_000)
                    disk.close()
                    return
                }
                for i in 0..<200 {
                    do {
                        try disk.setData(Data([UInt8(i % 256)]), forKey: "k\(thread)")
                        _ = try disk.data(forKey: "k\(thread)")
                    } catch CacheError.Code.closed {
                        return
                    } catch {
                        Issue.record("unexpected \(error)")
                        return
                    }
                }
            }
        }
        #expect(try keeper.totalCount() <= 3)
    }
}
