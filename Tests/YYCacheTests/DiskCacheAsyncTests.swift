import Foundation
import Synchronization
import Testing

@testable import YYCache

@Suite struct DiskCacheAsyncTests {
    private func bytes(_ count: Int, _ byte: UInt8 = 0x41) -> Data { Data(repeating: byte, count: count) }

    @Test func asyncTwinsRoundTrip() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try await disk.setData(bytes(10), forKey: "d", extendedData: Data([7]))
        try await disk.setValue(Profile(name: "A", age: 1, scores: [], flags: [:]), forKey: "p")
        #expect(try await disk.data(forKey: "d") == bytes(10))
        #expect(try await disk.extendedData(forKey: "d") == Data([7]))
        #expect(try await disk.value(Profile.self, forKey: "p")?.name == "A")
        #expect(try await disk.value(Data.self, forKey: "d") == bytes(10))
        #expect(await disk.containsValue(forKey: "d"))
        #expect(await !disk.containsValue(forKey: "missing"))
        #expect(try await disk.totalCount() == 2)
        #expect(try await disk.totalCost() > 10)
        try await disk.removeValue(forKey: "d")
        #expect(try await disk.data(forKey: "d") == nil)
        try await disk.setValue(Int?.none, forKey: "p")
        #expect(try await disk.totalCount() == 0)
    }

    @Test func asyncTrimsAndRemoveAll() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        for i in 0..<10 { try await disk.setData(bytes(10), forKey: "k\(i)") }
        try await disk.trim(toCount: 6)
        #expect(try await disk.totalCount() == 6)
        try await disk.trim(toCost: 30)
        #expect(try await disk.totalCost() <= 30)
        try await disk.trim(toAge: .greatestFiniteMagnitude)
        #expect(try await disk.totalCount() == 3)
        try await disk.trim(toAge: 0)
        #expect(try await disk.totalCount() == 0)
        try await disk.setData(bytes(1), forKey: "x")
        try await disk.removeAllValues()
        #expect(try await disk.totalCount() == 0)
    }

    @Test func asyncErrorsAreThrown() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try await disk.setData(Data("{".utf8), forKey: "bad")
        await #expect(throws: CacheError.self) { try await disk.value(Int.self, forKey: "bad") }
        let one = bytes(1)
        await #expect(throws: CacheError.self) { try await disk.setData(one, forKey: "") }
        disk.close()
        do {
            _ = try await disk.data(forKey: "bad")
            Issue.record("no error")
        } catch CacheError.Code.closed {
        }
        #expect(await !disk.containsValue(forKey: "bad"))
    }

    @Test func cancelledTasksDoNotStartTheirCalls() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try await disk.setData(bytes(1), forKey: "existing")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var errors = 0
            do { try await disk.setData(Data([1]), forKey: "new") } catch is CancellationError { errors += 1 }
            do { try await disk.setValue(1, forKey: "new2") } catch is CancellationError { errors += 1 }
            do { try await disk.removeValue(forKey: "existing") } catch is CancellationError { errors += 1 }
            do { try await disk.removeAllValues() } catch is CancellationError { errors += 1 }
            do { _ = try await disk.data(forKey: "existing") } catch is CancellationError { errors += 1 }
            do { _ = try await disk.totalCount() } catch is CancellationError { errors += 1 }
            do { try await disk.trim(toCount: 0) } catch is CancellationError { errors += 1 }
            do { try await disk.removeAllValues { _, _ in } } catch is CancellationError { errors += 1 }
            let contains = await disk.containsValue(forKey: "existing")
            return (errors, contains)
        }
        let (errors, contains) = try await task.value
        #expect(errors == 8)
        #expect(!contains)
        #expect(await disk.containsValue(forKey: "existing"))
        #expect(await !disk.containsValue(forKey: "new"))
        #expect(await !disk.containsValue(forKey: "new2"))
        #expect(try await disk.totalCount() == 1)
    }

    @Test func removeAllWithProgressReportsMonotonicallyToTheTotal() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path, inlineThreshold: 50)
        for i in 0..<200 { try await disk.setData(bytes(i % 2 == 0 ? 10 : 100), forKey: "k\(i)") }
        let reports = LockedBox<[Progress]>([])
        try await disk.removeAllValues { removed, total in
            reports.value.append(Progress(removed: removed, total: total))
        }
        let seen = reports.value.map { ($0.removed, $0.total) }
        #expect(!seen.isEmpty)
        #expect(seen.allSatisfy { $0.1 == 200 })
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.0 <= $1.0 })
        #expect(seen.last?.0 == 200)
        #expect(try await disk.totalCount() == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.appending("data")).isEmpty)
    }

    @Test func asyncCallsDoNotBlockTheCooperativePool() async throws {
        // More concurrent disk calls than the pool has threads: if they blocked pool threads,
        // the ticker task below could not run until they finished.
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        let ticks = LockedBox(0)
        let payload = bytes(2_000)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<32 {
                group.addTask { try await disk.setData(payload, forKey: "k\(i)") }
            }
            group.addTask { ticks.value += 1 }
            try await group.waitForAll()
        }
        #expect(ticks.value == 1)
        #expect(try await disk.totalCount() == 32)
    }
}

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

struct Progress: Sendable {
    var removed: Int
    var total: Int
}
