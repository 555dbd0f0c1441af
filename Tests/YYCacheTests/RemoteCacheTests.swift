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
    /// A three-tier cache on `server` in `folder`, namespace `namespace`.
    private func threeTier(_ server: RedisServer, _ folder: borrowing TemporaryFolder, _ namespace: String)
        throws -> Cache<String>
    {
        try Cache<String>(
            memoryCache: MemoryCache(), diskCache: DiskCache(path: folder.path),
            remote: RemoteCache(RemoteConfiguration(url: server.url, namespace: namespace)))
    }

    @Test func aLoadedValueGoesToRedisWhereAnotherCacheReadsItWithoutLoading() throws {
        let server = try RedisServer()
        let folderA = TemporaryFolder()
        let folderB = TemporaryFolder()
        let a = try threeTier(server, folderA, "load")
        let b = try threeTier(server, folderB, "load")
        #expect(try a.value(forKey: "k", orLoad: { "loaded" }) == "loaded")
        #expect(try a.remote?.containsData(forKey: "k") == true)
        #expect(try b.value(forKey: "k", orLoad: { "b loaded" }) == "loaded")
        // Loaded values are kept near too (the link is up): a second read loads nothing.
        #expect(try a.value(forKey: "k", orLoad: { "again" }) == "loaded")
        #expect(a.memoryCache.value(forKey: "k") == "loaded")
    }

    @Test func anAsyncLoadedValueGoesToRedisWhereAnotherCacheReadsItWithoutLoading() async throws {
        let server = try RedisServer()
        let folderA = TemporaryFolder()
        let folderB = TemporaryFolder()
        let a = try threeTier(server, folderA, "aload")
        let b = try threeTier(server, folderB, "aload")
        #expect(try await a.value(forKey: "k", orLoad: { "loaded" }) == "loaded")
        #expect(try await a.remote?.containsData(forKey: "k") == true)
        #expect(try await b.value(forKey: "k", orLoad: { "b loaded" }) == "loaded")
        #expect(try await a.value(forKey: "k", orLoad: { "again" }) == "loaded")
        #expect(a.memoryCache.value(forKey: "k") == "loaded")
    }

    @Test func aSetByAnotherCacheDuringALoadStaysInRedisAndNear() throws {
        let server = try RedisServer()
        let folderA = TemporaryFolder()
        let folderB = TemporaryFolder()
        let folderC = TemporaryFolder()
        let a = try threeTier(server, folderA, "race")
        let b = try threeTier(server, folderB, "race")
        let c = try threeTier(server, folderC, "race")
        let remoteA = try #require(a.remote)
        let heard = remoteA.statistics.invalidations
        // b's set lands while a's loader runs, and its invalidation reaches a before the loaded
        // value is stored.
        let loaded = try a.value(forKey: "k") {
            try b.setValue("set", forKey: "k")
            _ = eventually { remoteA.statistics.invalidations > heard }
            return "loaded"
        }
        #expect(loaded == "loaded")
        #expect(remoteA.statistics.invalidations > heard)
        // Redis keeps the newer set, so every other cache reads it...
        #expect(try c.value(forKey: "k") == "set")
        // ...and a's near tiers do not keep the older loaded value either.
        #expect(try a.value(forKey: "k") == "set")
        #expect(try a.value(forKey: "k") == "set")
    }

    @Test func aSetByAnotherCacheDuringAnAsyncLoadStaysInRedisAndNear() async throws {
        let server = try RedisServer()
        let folderA = TemporaryFolder()
        let folderB = TemporaryFolder()
        let folderC = TemporaryFolder()
        let a = try threeTier(server, folderA, "arace")
        let b = try threeTier(server, folderB, "arace")
        let c = try threeTier(server, folderC, "arace")
        let remoteA = try #require(a.remote)
        let heard = remoteA.statistics.invalidations
        let loaded = try await a.value(forKey: "k") {
            try await b.setValue("set", forKey: "k")
            var waited = 0
            while remoteA.statistics.invalidations == heard, waited < 60_000 {
                try await Task.sleep(for: .milliseconds(1))
                waited += 1
            }
            return "loaded"
        }
        #expect(loaded == "loaded")
        #expect(try await c.value(forKey: "k") == "set")
        #expect(try await a.value(forKey: "k") == "set")
        #expect(try await a.value(forKey: "k") == "set")
    }

    /// Another process (the sqlite3 shell) holds the disk folder's write lock while invalidations
    /// arrive, until they all counted or past the disk's busy timeout (5 s): a key whose
    /// invalidation counted never reads its old value, also when its disk removal gave up.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3"), "no sqlite3 shell"))
    func invalidationsWhileAnotherProcessHoldsTheDiskLockLeaveNothingStale() throws {
        let server = try RedisServer()
        let folderA = TemporaryFolder()
        let folderB = TemporaryFolder()
        let a = try threeTier(server, folderA, "held")
        let b = try threeTier(server, folderB, "held")
        let remoteA = try #require(a.remote)
        let keys = ["k0", "k1", "k2"]
        for key in keys {
            let heard = remoteA.statistics.invalidations
            try b.setValue("old", forKey: key)
            #expect(eventually { remoteA.statistics.invalidations > heard })
            #expect(try a.value(forKey: key) == "old")
            #expect(a.diskCache.containsValue(forKey: key))
        }
        let marker = folderB.path + "/locked"
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        holder.arguments = [folderA.path + "/manifest.sqlite"]
        let input = Pipe()
        holder.standardInput = input
        try holder.run()
        input.fileHandleForWriting.write(Data("BEGIN IMMEDIATE;\n.system touch \(marker)\n".utf8))
        #expect(eventually { FileManager.default.fileExists(atPath: marker) })
        let heard = remoteA.statistics.invalidations
        for key in keys { try b.setValue("new", forKey: key) }
        let clock = ContinuousClock()
        let until = clock.now + .seconds(7)
        while clock.now < until, remoteA.statistics.invalidations < heard + 3 { Thread.sleep(forTimeInterval: 0.02) }
        let counted = Int(remoteA.statistics.invalidations - heard)
        try input.fileHandleForWriting.close()  // the shell ends, its transaction rolled back
        holder.waitUntilExit()
        for (i, key) in keys.enumerated() {
            let read = try a.value(forKey: key)
            if i < counted { #expect(read == "new") } else { #expect(read == "old" || read == "new") }
        }
        #expect(eventually { remoteA.statistics.invalidations >= heard + 3 })
        for key in keys { #expect(try a.value(forKey: key) == "new") }
        // The near tiers are served again once a later invalidation found the disk free.
        var round = 0
        #expect(
            eventually {
                round += 1
                let before = remoteA.statistics.invalidations
                try? b.setValue("r\(round)", forKey: "k3")
                guard eventually({ remoteA.statistics.invalidations > before }) else { return false }
                return (try? a.value(forKey: "k3")) == "r\(round)" && a.memoryCache.value(forKey: "k3") != nil
            })
    }

    @Test func aThreeTierCacheReleasedWhileInvalidationsArriveLeavesNothingBehind() throws {
        let server = try RedisServer()
        let writerFolder = TemporaryFolder()
        let writer = try threeTier(server, writerFolder, "release")
        let writing = WriterLoop()
        let thread = Thread {
            var round = 0
            while !writing.stop.load(ordering: .relaxed) {
                try? writer.setValue("v\(round)", forKey: "k\(round % 8)")
                writing.writes.add(1, ordering: .relaxed)
                round += 1
            }
            writing.done.store(true, ordering: .relaxed)
        }
        thread.start()
        defer {
            writing.stop.store(true, ordering: .relaxed)
            _ = eventually { writing.done.load(ordering: .relaxed) }
        }
        for _ in 0..<20 {
            let folder = TemporaryFolder()
            weak var released: Cache<String>?
            weak var releasedRemote: RemoteCache?
            do {
                let remote = try RemoteCache(RemoteConfiguration(url: server.url, namespace: "release"))
                var cache: Cache<String>? = Cache<String>(
                    memoryCache: MemoryCache(), diskCache: try DiskCache(path: folder.path), remote: remote)
                for i in 0..<8 { _ = try cache?.value(forKey: "k\(i)") }
                let heard = remote.statistics.invalidations
                #expect(eventually { remote.statistics.invalidations > heard + 4 })
                released = cache
                releasedRemote = remote
                cache = nil  // the last owner lets go while invalidations keep arriving
            }
            #expect(released == nil)
            #expect(eventually { releasedRemote == nil })
        }
        #expect(writing.writes.load(ordering: .relaxed) > 0)
    }
}

/// The flags of a writing thread.
private final class WriterLoop: Sendable {
    let stop = Atomic<Bool>(false)
    let done = Atomic<Bool>(false)
    let writes = Atomic<Int>(0)
}
