import Foundation
import Testing

@testable import YYCache

/// `DiskWriteMode.deferred`: sets return once queued, this process reads them at once, and they
/// reach the disk (what another connection sees: a `KVStorage` on the same folder opens its own)
/// by `flush()`, `close()` or the background commit. Each test in its own temporary folder.
@Suite struct DiskWriteModeTests {
    /// A long delay: only the explicit commits of a test count.
    private let longDelay = DiskWriteMode.deferred(maxDelay: .seconds(3600))

    /// Whether `key` is committed: read through a connection of its own, as another process
    /// would.
    private func committed(_ key: String, in folder: borrowing TemporaryFolder) throws -> Bool {
        try KVStorage(path: folder.path, type: .mixed).itemExists(forKey: key)
    }

    @Test func writeModeDefaultsToImmediateAndReadsBack() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        #expect(disk.writeMode == .immediate)
        disk.writeMode = .deferred(maxDelay: .milliseconds(250))
        #expect(disk.writeMode == .deferred(maxDelay: .milliseconds(250)))
        disk.writeMode = .immediate
        #expect(disk.writeMode == .immediate)
    }

    @Test func readsSeeQueuedWritesAndRemovals() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        disk.writeMode = longDelay
        try disk.setData(Data("queued".utf8), forKey: "bytes", extendedData: Data("ext".utf8))
        try disk.setValue(["a": 1], forKey: "coded")
        #expect(try !committed("bytes", in: folder))
        #expect(try disk.data(forKey: "bytes") == Data("queued".utf8))
        #expect(try disk.extendedData(forKey: "bytes") == Data("ext".utf8))
        #expect(try disk.value([String: Int].self, forKey: "coded") == ["a": 1])
        #expect(disk.containsValue(forKey: "bytes"))
        try disk.removeValue(forKey: "bytes")
        #expect(try disk.data(forKey: "bytes") == nil)
        #expect(!disk.containsValue(forKey: "bytes"))
    }

    @Test func flushCommitsQueuedWrites() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path, inlineThreshold: 16)
        disk.writeMode = longDelay
        try disk.setData(Data("small".utf8), forKey: "small")
        try disk.setData(Data(repeating: 7, count: 5000), forKey: "large")  // a file
        #expect(try !committed("small", in: folder))
        #expect(try !committed("large", in: folder))
        try disk.flush()
        #expect(try committed("small", in: folder))
        #expect(try committed("large", in: folder))
        #expect(try disk.data(forKey: "large") == Data(repeating: 7, count: 5000))
    }

    @Test func asyncFlushCommitsQueuedWrites() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        disk.writeMode = longDelay
        try await disk.setData(Data("v".utf8), forKey: "k")
        #expect(try !committed("k", in: folder))
        try await disk.flush()
        #expect(try committed("k", in: folder))
    }

    @Test func aSecondObjectAndACacheOnThePathSeeQueuedWrites() throws {
        let folder = TemporaryFolder()
        let first = try DiskCache(path: folder.path)
        let second = try DiskCache(path: folder.path)
        first.writeMode = longDelay
        #expect(second.writeMode == longDelay)  // the mode belongs to the core
        try first.setValue("hello", forKey: "greeting")
        #expect(try second.value(String.self, forKey: "greeting") == "hello")
        let cache = try Cache<String>(path: folder.path)
        #expect(try cache.value(forKey: "greeting") == "hello")
        try second.removeValue(forKey: "greeting")
        #expect(try first.value(String.self, forKey: "greeting") == nil)
        #expect(try !committed("greeting", in: folder))
    }

    @Test func closeCommitsWhileAnotherObjectKeepsTheCoreOpen() throws {
        let folder = TemporaryFolder()
        let writer = try DiskCache(path: folder.path)
        let other = try DiskCache(path: folder.path)
        writer.writeMode = longDelay
        try writer.setData(Data("v".utf8), forKey: "k")
        #expect(try !committed("k", in: folder))
        writer.close()
        #expect(try committed("k", in: folder))
        #expect(try other.data(forKey: "k") == Data("v".utf8))
    }

    @Test func theQueueCommitsByItselfWithinTheDelay() async throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        disk.writeMode = .deferred(maxDelay: .milliseconds(10))
        try await disk.setData(Data("v".utf8), forKey: "k")
        var seen = false
        for _ in 0..<3000 where !seen {  // (waits for the commit; bounded at 30 s)
            seen = try committed("k", in: folder)
            if !seen { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(seen)
    }

    @Test func switchingToImmediateCommitsQueuedWrites() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        disk.writeMode = longDelay
        try disk.setData(Data("v".utf8), forKey: "k")
        disk.writeMode = .immediate
        #expect(try committed("k", in: folder))
    }
}
