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
        try await disk.trim(toAge: .seconds(Int64.max))
        #expect(try await disk.totalCount() == 3)
        try await disk.trim(toAge: .zero)
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
        // One async disk call per cooperative-pool thread, each held inside the disk work (in
        // the fileName function, which the write calls with no lock held) until a gate opens.
        // Only a task running on the pool opens the gate, once every call is held. If the
        // async twins ran the disk work on the calling pool thread, every pool thread would be
        // held and the opener could never run: the holds would time out (a liveness bound,
        // not a performance one) and the test fails.
        let width = ProcessInfo.processInfo.activeProcessorCount  // the cooperative pool's width
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path, inlineThreshold: 0)  // every write names a file
        let held = LockedBox(0)
        let timedOut = LockedBox(0)
        let gate = DispatchSemaphore(value: 0)
        disk.fileName = { key in
            held.value += 1
            if gate.wait(timeout: .now() + 30) == .timedOut { timedOut.value += 1 }
            return nil
        }
        let payload = bytes(10)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<width {
                group.addTask { try await disk.setData(payload, forKey: "k\(i)") }
            }
            group.addTask {
                let clock = ContinuousClock()
                let deadline = clock.now + .seconds(30)
                while held.value < width && clock.now < deadline {
                    try await Task.sleep(for: .milliseconds(1))
                }
                for _ in 0..<width { gate.signal() }
            }
            try await group.waitForAll()
        }
        #expect(held.value == width)
        #expect(timedOut.value == 0)
        #expect(try await disk.totalCount() == width)
    }
}

struct Progress: Sendable {
    var removed: Int
    var total: Int
}
