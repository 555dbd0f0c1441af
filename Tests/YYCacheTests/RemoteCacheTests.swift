import Foundation
import Synchronization
import Testing

@testable import YYCache

@Suite(.enabled(if: RedisServer.isAvailable, "no redis-server installed (make deps installs it)"))
struct RemoteCacheTests {
    @Test func dataRoundTripsWithATimeToLiveAndRemovals() throws {
        let server = try RedisServer()
        let remote = try RemoteCache(RemoteConfiguration(url: server.url, namespace: "swift"))
        #expect(try remote.data(forKey: "k") == nil)
        let bytes = Data([0, 1, 2, 255, 13, 10])
        try remote.setData(bytes, forKey: "k")
        #expect(try remote.data(forKey: "k") == bytes)
        #expect(try remote.containsData(forKey: "k"))
        try remote.setData(Data("short".utf8), forKey: "t", timeToLive: .milliseconds(20))
        #expect(eventually { (try? remote.containsData(forKey: "t")) == false })
        try remote.removeData(forKey: "k")
        #expect(try remote.data(forKey: "k") == nil)
        #expect(throws: CacheError.self) { try remote.setData(Data(), forKey: "") }
        #expect(remote.statistics.hits == 1)
        #expect(remote.statistics.invalidationLinkUp)
    }

    @Test func theAsyncTwinsWorkOffTheCooperativePool() async throws {
        let server = try RedisServer()
        let remote = try RemoteCache(RemoteConfiguration(url: server.url, namespace: "async"))
        try await remote.setData(Data("v".utf8), forKey: "k")
        #expect(try await remote.data(forKey: "k") == Data("v".utf8))
        #expect(try await remote.containsData(forKey: "k"))
        try await remote.removeData(forKey: "k")
        #expect(try await remote.data(forKey: "k") == nil)
        // Many at once: none holds a thread of the pool while it waits for Redis.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<64 {
                group.addTask { try await remote.setData(Data([UInt8(i)]), forKey: "k\(i)") }
            }
            try await group.waitForAll()
        }
        #expect(try await remote.data(forKey: "k63") == Data([63]))
    }

    @Test func anUnreachableServerOrBadURLThrows() throws {
        #expect(throws: CacheError.self) {
            _ = try RemoteCache(RemoteConfiguration(url: "unix:///nonexistent/yyc.sock", namespace: "x"))
        }
        do {
            _ = try RemoteCache(RemoteConfiguration(url: "http://x", namespace: "x"))
            Issue.record("a bad url was accepted")
        } catch let error as CacheError {
            #expect(error.code == .invalidArgument)
        }
    }

    @Test func aForeignValueIsAMissReportedAsCorrupt() throws {
        let server = try RedisServer()
        let remote = try RemoteCache(RemoteConfiguration(url: server.url, namespace: "ns"))
        let reported = Mutex<[CacheError.Code]>([])
        remote.didReportError = { error in reported.withLock { $0.append(error.code) } }
        try server.command("SET", "ns:plain", "written by something else")
        #expect(try remote.data(forKey: "plain") == nil)
        #expect(remote.statistics.corruptValues == 1)
        #expect(reported.withLock { $0 } == [.corrupt])
        // A three-tier cache misses too, and keeps nothing near.
        let folder = TemporaryFolder()
        let cache = try Cache<String>(
            memoryCache: MemoryCache(), diskCache: DiskCache(path: folder.path), remote: remote)
        #expect(try cache.value(forKey: "plain") == nil)
        #expect(!cache.diskCache.containsValue(forKey: "plain"))
        remote.didReportError = nil
    }

    @Test func twoThreeTierCachesStayCoherent() throws {
        let server = try RedisServer()
        let folderA = TemporaryFolder()
        let folderB = TemporaryFolder()
        let a = try Cache<String>(
            memoryCache: MemoryCache(), diskCache: DiskCache(path: folderA.path),
            remote: RemoteCache(RemoteConfiguration(url: server.url, namespace: "coh")))
        let b = try Cache<String>(
            memoryCache: MemoryCache(), diskCache: DiskCache(path: folderB.path),
            remote: RemoteCache(RemoteConfiguration(url: server.url, namespace: "coh")))
        #expect(a.remote != nil)
        try a.setValue("v1", forKey: "k")
        #expect(try b.value(forKey: "k") == "v1")
        for round in 2...20 {
            try a.setValue("v\(round)", forKey: "k")
            #expect(eventually { (try? b.value(forKey: "k")) == "v\(round)" })
        }
        try a.removeValue(forKey: "k")
        #expect(eventually { (try? b.value(forKey: "k")) == .some(nil) })
        #expect(!b.containsValue(forKey: "k"))
    }

    @Test func nearCopiesAreNotServedWhileTheInvalidationLinkIsDown() throws {
        let server = try RedisServer()
        let folderA = TemporaryFolder()
        let folderB = TemporaryFolder()
        let a = try Cache<String>(
            memoryCache: MemoryCache(), diskCache: DiskCache(path: folderA.path),
            remote: RemoteCache(RemoteConfiguration(url: server.url, namespace: "down")))
        let remoteB = try RemoteCache(RemoteConfiguration(url: server.url, namespace: "down"))
        let b = try Cache<String>(memoryCache: MemoryCache(), diskCache: DiskCache(path: folderB.path), remote: remoteB)
        try a.setValue("v1", forKey: "k")
        #expect(try b.value(forKey: "k") == "v1")
        // The default user loses the invalidation channel: Redis drops the subscribers and
        // refuses them again, while plain commands go on.
        try server.command("ACL", "SETUSER", "default", "resetchannels")
        #expect(eventually { !remoteB.statistics.invalidationLinkUp })
        try a.setValue("v2", forKey: "k")
        #expect(try b.value(forKey: "k") == "v2")
        try a.setValue("v3", forKey: "k")
        #expect(try b.value(forKey: "k") == "v3")
        try server.command("ACL", "SETUSER", "default", "allchannels")
        #expect(eventually { remoteB.statistics.invalidationLinkUp })
        try a.setValue("v4", forKey: "k")
        #expect(eventually { (try? b.value(forKey: "k")) == "v4" })
    }

    @Test func asyncThreeTierCallsAgreeWithTheSyncOnes() async throws {
        let server = try RedisServer()
        let folder = TemporaryFolder()
        let remote = try RemoteCache(RemoteConfiguration(url: server.url, namespace: "acache"))
        let cache = try Cache<Int>(memoryCache: MemoryCache(), diskCache: DiskCache(path: folder.path), remote: remote)
        try await cache.setValue(7, forKey: "k")
        #expect(try await cache.value(forKey: "k") == 7)
        #expect(await cache.containsValue(forKey: "k"))
        #expect(try await remote.containsData(forKey: "k"))
        try await cache.removeValue(forKey: "k")
        #expect(try await cache.value(forKey: "k") == nil)
        #expect(try await !remote.containsData(forKey: "k"))
    }

    @Test func aDeadRedisIsReportedAndTheNearTiersGoOn() throws {
        let server = try RedisServer()
        let folder = TemporaryFolder()
        var configuration = RemoteConfiguration(url: server.url, namespace: "dead")
        configuration.commandTimeout = .milliseconds(200)
        configuration.connectTimeout = .milliseconds(200)
        let remote = try RemoteCache(configuration)
        let cache = try Cache<String>(
            memoryCache: MemoryCache(), diskCache: DiskCache(path: folder.path), remote: remote)
        let reports = Mutex(0)
        cache.didReportError = { _ in reports.withLock { $0 += 1 } }
        server.kill()
        #expect(eventually { !remote.statistics.invalidationLinkUp })
        #expect(
            eventually {
                try? cache.setValue("near", forKey: "k")
                return (try? cache.value(forKey: "k")) == "near"
            })
        #expect(reports.withLock { $0 } > 0)
        #expect(throws: CacheError.self) { try remote.data(forKey: "k") }
        cache.didReportError = nil
    }
}
