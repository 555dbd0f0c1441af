import CYYCache
import Foundation
import Synchronization
import Testing

@testable import YYCache

@Suite struct CacheTests {
    /// A set made while the loader ran (after the miss) is newer: both tiers keep it (the
    /// loaded value used to replace it in both).
    @Test func aLoadedValueNeverOverwritesASetMadeAfterTheMiss() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<String>(path: folder.path)
        let value = try cache.value(forKey: "k") {
            try cache.setValue("set", forKey: "k")
            return "loaded"
        }
        #expect(value == "loaded")
        #expect(try cache.value(forKey: "k") == "set")
        cache.memoryCache.removeAllValues()
        #expect(try cache.value(forKey: "k") == "set")
        #expect(cache.statistics.insertions == 1)
    }

    /// The disk tier's default time to live reaches the memory copy of a plain set.
    @Test func theDiskTiersDefaultTimeToLiveReachesTheMemoryCopy() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<String>(path: folder.path)
        cache.diskCache.defaultTimeToLive = .seconds(10)
        try cache.setValue("v", forKey: "k")
        let left = try #require(cache.memoryCache.timeToLive(forKey: "k"))
        #expect(left > .seconds(9) && left <= .seconds(10))
    }

    @Test func setThenGetReturnsTheValueFromMemory() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Profile>(path: folder.path)
        let ada = Profile(name: "Ada", age: 36, scores: [1], flags: ["x": true])
        try cache.setValue(ada, forKey: "ada")
        #expect(cache.memoryCache.containsValue(forKey: "ada"))
        #expect(cache.diskCache.containsValue(forKey: "ada"))
        #expect(try cache.value(forKey: "ada") == ada)
        #expect(cache.containsValue(forKey: "ada"))
        #expect(try cache.value(forKey: "missing") == nil)
        #expect(!cache.containsValue(forKey: "missing"))
    }

    @Test func aDiskHitIsBackFilledIntoMemory() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<String>(path: folder.path)
        try cache.diskCache.setValue("from disk", forKey: "k")
        #expect(!cache.memoryCache.containsValue(forKey: "k"))
        #expect(try cache.value(forKey: "k") == "from disk")
        #expect(cache.memoryCache.value(forKey: "k") == "from disk")
        // Back-filled with its encoded size as the cost.
        #expect(cache.memoryCache.totalCost == (try cache.diskCache.data(forKey: "k"))?.count)
    }

    // MARK: Memory cost

    @Test func memoryCostOfAnEntryIsItsEncodedSize() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Data>(path: folder.path)
        try cache.setValue(Data(count: 1000), forKey: "a")
        #expect(cache.memoryCache.totalCost == 1000)
        try cache.setValue(Data(count: 10), forKey: "a")
        #expect(cache.memoryCache.totalCost == 10)
        let strings = try Cache<String>(path: folder.appending("strings"))
        try strings.setValue(String(repeating: "x", count: 500), forKey: "s")
        let encoded = try #require(try strings.diskCache.data(forKey: "s"))
        #expect(strings.memoryCache.totalCost == encoded.count)
        #expect(encoded.count >= 500)
    }

    @Test func aCostFunctionReplacesTheEncodedSize() throws {
        let folder = TemporaryFolder()
        let seen = Mutex<[Int]>([])
        let cache = try Cache<[Int]>(path: folder.path) { value, encodedByteCount in
            seen.withLock { $0.append(encodedByteCount) }
            return value.count == 0 ? -5 : value.count * 1000
        }
        try cache.setValue([1, 2, 3], forKey: "a")
        #expect(cache.memoryCache.totalCost == 3000)
        try cache.setValue([], forKey: "empty")
        #expect(cache.memoryCache.totalCost == 3000)  // a negative cost counts as 0
        cache.memoryCache.removeAllValues()
        #expect(try cache.value(forKey: "a") == [1, 2, 3])  // back-filled with the function's cost
        #expect(cache.memoryCache.totalCost == 3000)
        let sizes = seen.withLock { $0 }
        #expect(sizes.count == 3)
        #expect(sizes[0] == (try cache.diskCache.data(forKey: "a"))?.count)
        #expect(sizes[2] == sizes[0])
    }

    @Test func theMemoryTierIsBoundedByDefaultAtAQuarterOfAvailableMemory() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Data>(path: folder.path)
        let available = yyc_available_memory()
        #expect(available > 0)
        #expect(cache.memoryCache.costLimit == Int(available / 4))
        // And the limit works on real costs: trimming to it keeps what fits.
        for i in 0..<10 { try cache.setValue(Data(count: 100), forKey: "k\(i)") }
        cache.memoryCache.trim(toCost: 350)
        #expect(cache.memoryCache.totalCount == 3)
        #expect(try cache.value(forKey: "k0") == Data(count: 100))  // still on disk
    }

    @Test func readsPreferMemory() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<String>(path: folder.path)
        try cache.setValue("both", forKey: "k")
        cache.memoryCache.setValue("memory only", forKey: "k")
        #expect(try cache.value(forKey: "k") == "memory only")
    }

    @Test func containsChecksEitherTierWithoutTouchingLRU() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        cache.memoryCache.setValue(1, forKey: "memory")
        try cache.diskCache.setValue(2, forKey: "disk")
        #expect(cache.containsValue(forKey: "memory"))
        #expect(cache.containsValue(forKey: "disk"))
        #expect(!cache.memoryCache.containsValue(forKey: "disk"))  // contains does not back-fill
    }

    @Test func aNewCacheOnTheSamePathReadsWhatWasWritten() throws {
        let folder = TemporaryFolder()
        do {
            let writer = try Cache<[String: Int]>(path: folder.path)
            try writer.setValue(["a": 1], forKey: "dict")
        }
        let reader = try Cache<[String: Int]>(path: folder.path)
        #expect(!reader.memoryCache.containsValue(forKey: "dict"))
        #expect(try reader.value(forKey: "dict") == ["a": 1])
    }

    @Test func removalsReachBothTiers() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        try cache.setValue(1, forKey: "a")
        try cache.setValue(2, forKey: "b")
        try cache.setValue(3, forKey: "c")
        try cache.removeValue(forKey: "a")
        #expect(!cache.memoryCache.containsValue(forKey: "a"))
        #expect(!cache.diskCache.containsValue(forKey: "a"))
        try cache.setValue(nil, forKey: "b")
        #expect(!cache.containsValue(forKey: "b"))
        try cache.removeAllValues()
        #expect(cache.memoryCache.totalCount == 0)
        #expect(try cache.diskCache.totalCount() == 0)
        #expect(try cache.value(forKey: "c") == nil)
    }

    @Test func emptyKeyWritesThrowReadsMissRemovalsDoNothing() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        let error = #expect(throws: CacheError.self) { try cache.setValue(1, forKey: "") }
        #expect(error?.code == .invalidArgument)
        #expect(cache.memoryCache.totalCount == 0)  // nothing half-written
        #expect(try cache.value(forKey: "") == nil)
        #expect(!cache.containsValue(forKey: ""))
        try cache.removeValue(forKey: "")
    }

    @Test func aFailedDiskWriteLeavesNoValueInMemory() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Double>(path: folder.path)
        try cache.setValue(1, forKey: "k")
        cache.diskCache.close()
        let error = #expect(throws: CacheError.self) { try cache.setValue(2, forKey: "k") }
        #expect(error?.code == .closed)
        #expect(cache.memoryCache.value(forKey: "k") == nil)
    }

    /// Another writer's set lands while this set's disk write is in flight (from the file name
    /// function, which runs during the write), then this write fails: memory must keep the
    /// newer value.
    @Test func aFailedDiskWriteNeverRemovesANewerValue() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Data>(path: folder.path)
        let big = Data(count: 30_000)  // above the inline threshold: the file name function runs
        let newer = Data([2])
        final class Once: Sendable { let done = Atomic<Bool>(false) }
        let once = Once()
        cache.diskCache.fileName = { key in
            guard !once.done.exchange(true, ordering: .sequentiallyConsistent) else { return nil }
            try? cache.setValue(newer, forKey: key)  // the other writer (inline: no file name)
            return "../not-a-file-name"  // makes this write fail
        }
        defer { cache.diskCache.fileName = nil }
        let error = #expect(throws: CacheError.self) { try cache.setValue(big, forKey: "k") }
        #expect(error?.code == .invalidArgument)
        #expect(cache.memoryCache.value(forKey: "k") == newer)
        #expect(try cache.value(forKey: "k") == newer)
        #expect(try cache.diskCache.data(forKey: "k") == newer)
    }

    @Test func decodingFailuresThrowDecoding() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Profile>(path: folder.path)
        try cache.diskCache.setData(Data("[]".utf8), forKey: "k")
        let error = #expect(throws: CacheError.self) { try cache.value(forKey: "k") }
        #expect(error?.code == .decoding)
    }

    @Test func dataValuesAreStoredAsTheyAre() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Data>(path: folder.path)
        try cache.setValue(Data([1, 2, 3]), forKey: "raw")
        #expect(try cache.diskCache.data(forKey: "raw") == Data([1, 2, 3]))
        let reader = try Cache<Data>(path: folder.path + "/")
        #expect(try reader.value(forKey: "raw") == Data([1, 2, 3]))
    }

    @Test func nameIsTheLastPathComponent() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.appending("thumbs/"))
        #expect(cache.name == "thumbs")
        #expect(cache.memoryCache.name == "thumbs")
        #expect(cache.diskCache.path == folder.appending("thumbs/"))
        #expect(cache.description.contains("thumbs"))
    }

    @Test func emptyNameOrPathThrowsInvalidArgument() {
        let nameError = #expect(throws: CacheError.self) { try Cache<Int>(name: "") }
        #expect(nameError?.code == .invalidArgument)
        let pathError = #expect(throws: CacheError.self) { try Cache<Int>(path: "") }
        #expect(pathError?.code == .invalidArgument)
    }

    // MARK: Name resolution

    @Test func absoluteXDGCacheHomeWins() {
        let directory = CacheDirectory.resolve(
            environment: ["XDG_CACHE_HOME": "/xdg/cache", "HOME": "/home/ada"], passwordHome: { "/pw" })
        #expect(directory == "/xdg/cache")
    }

    @Test func relativeOrEmptyXDGCacheHomeIsIgnored() {
        for xdg in ["relative/cache", ""] {
            let directory = CacheDirectory.resolve(
                environment: ["XDG_CACHE_HOME": xdg, "HOME": "/home/ada"], passwordHome: { "/pw" })
            #expect(directory == "/home/ada/.cache")
        }
    }

    @Test func homeIsUsedWithoutXDGCacheHome() {
        #expect(
            CacheDirectory.resolve(environment: ["HOME": "/home/ada/"], passwordHome: { nil }) == "/home/ada/.cache")
    }

    @Test func thePasswordDatabaseIsTheLastResort() {
        #expect(CacheDirectory.resolve(environment: [:], passwordHome: { "/pw/home" }) == "/pw/home/.cache")
        #expect(CacheDirectory.resolve(environment: ["HOME": ""], passwordHome: { nil }) == nil)
        #expect(CacheDirectory.passwordDatabaseHome()?.hasPrefix("/") == true)
    }

    @Test func initWithNameUsesTheResolvedDirectory() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(name: "named", environment: ["XDG_CACHE_HOME": folder.path])
        #expect(cache.name == "named")
        #expect(cache.diskCache.path == folder.appending("named"))
        try cache.setValue(5, forKey: "k")
        #expect(FileManager.default.fileExists(atPath: folder.appending("named/manifest.sqlite")))

        let viaHome = try Cache<Int>(name: "other", environment: ["HOME": folder.path])
        #expect(viaHome.diskCache.path == folder.appending(".cache/other"))
    }

    @Test func aNameIsOnePathComponentAndCannotEscapeTheCacheDirectory() throws {
        let folder = TemporaryFolder()
        let inside = folder.appending("xdg")
        try FileManager.default.createDirectory(atPath: inside, withIntermediateDirectories: true)
        let environment = ["XDG_CACHE_HOME": inside]
        for name in ["../escaped", "..", ".", "a/b", "/abs", "a\0b", ""] {
            let error = #expect(throws: CacheError.self, "\(name)") {
                try Cache<Int>(name: name, environment: environment)
            }
            #expect(error?.code == .invalidArgument)
        }
        // Nothing was created, inside or outside the cache directory.
        #expect(try FileManager.default.contentsOfDirectory(atPath: inside).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["xdg"])
        // Dots inside a name are fine.
        let dotted = try Cache<Int>(name: "a..b.c", environment: environment)
        #expect(dotted.diskCache.path == inside + "/a..b.c")
    }

    @Test func theDefaultTimeToLiveAndTheTimeLeftHoldForBothTiers() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        #expect(cache.defaultTimeToLive == nil)
        cache.defaultTimeToLive = .seconds(600)
        #expect(cache.defaultTimeToLive == .seconds(600))
        #expect(cache.diskCache.defaultTimeToLive == .seconds(600))
        #expect(cache.memoryCache.defaultTimeToLive == .seconds(600))
        try cache.setValue(1, forKey: "k")
        let left = try #require(cache.timeToLive(forKey: "k"))
        #expect(left > .seconds(590) && left <= .seconds(600))
        let memoryLeft = try #require(cache.memoryCache.timeToLive(forKey: "k"))
        #expect(memoryLeft > .seconds(590) && memoryLeft <= .seconds(600))
        #expect(cache.timeToLive(forKey: "missing") == nil)
        cache.defaultTimeToLive = nil
        try cache.setValue(2, forKey: "forever")
        #expect(cache.timeToLive(forKey: "forever") == nil)
    }

    @Test func theRemovalListenerReportsEachRemovalOnce() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        let seen = Mutex<[String]>([])
        cache.didRemoveEntry = { key, cause in seen.withLock { $0.append("\(key) \(cause)") } }
        cache.memoryCache.countLimit = 1  // memory drops values that stay on disk: not removals
        try cache.setValue(1, forKey: "a")
        try cache.setValue(2, forKey: "b")
        try cache.setValue(3, forKey: "a")
        try cache.removeValue(forKey: "b")
        try cache.setValue(4, forKey: "gone", timeToLive: .zero)
        #expect(try cache.value(forKey: "gone") == nil)
        #expect(try cache.value(forKey: "a") == 3)
        #expect(seen.withLock { $0 } == ["a replaced", "b explicit", "gone expired"])
    }

    @Test func twoCachesWithTheSameNameShareOneDiskCore() throws {
        let folder = TemporaryFolder()
        let environment = ["XDG_CACHE_HOME": folder.path]
        let first = try Cache<Int>(name: "shared", environment: environment)
        let second = try Cache<Int>(name: "shared", environment: environment)
        try first.setValue(1, forKey: "k")
        #expect(try second.value(forKey: "k") == 1)
        first.diskCache.countLimit = 3
        #expect(second.diskCache.countLimit == 3)
        #expect(first.memoryCache !== second.memoryCache)
    }

    // MARK: Async twins

    @Test func asyncTwinsReadThroughAndWriteThrough() async throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Profile>(path: folder.path)
        let ada = Profile(name: "Ada", age: 36, scores: [], flags: [:])
        try await cache.setValue(ada, forKey: "ada")
        #expect(try await cache.value(forKey: "ada") == ada)
        #expect(await cache.containsValue(forKey: "ada"))
        cache.memoryCache.removeAllValues()
        #expect(await cache.containsValue(forKey: "ada"))  // from disk
        #expect(try await cache.value(forKey: "ada") == ada)
        #expect(cache.memoryCache.containsValue(forKey: "ada"))  // back-filled
        try await cache.removeValue(forKey: "ada")
        #expect(await !cache.containsValue(forKey: "ada"))
        try await cache.setValue(ada, forKey: "again")
        try await cache.setValue(nil, forKey: "again")
        #expect(try await cache.value(forKey: "again") == nil)
        try await cache.setValue(ada, forKey: "last")
        try await cache.removeAllValues()
        #expect(try await cache.diskCache.totalCount() == 0)
        await #expect(throws: CacheError.self) { try await cache.setValue(ada, forKey: "") }
    }

    /// A memory hit of the async twins runs on the caller's executor: awaited from an actor, it
    /// never leaves the actor (its executor is asked to run nothing; a twin that hopped to the
    /// global executor would have to be enqueued there again to return).
    @Test func asyncMemoryHitsDoNotHopOffTheCallersExecutor() async throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        try await cache.setValue(7, forKey: "k")
        let probe = ExecutorProbe()
        let (value, contained, hops) = try await probe.memoryHit(cache)
        #expect(value == 7)
        #expect(contained)
        #expect(hops == 0, "the memory hit left the caller's executor \(hops) times")
        // The probe does see hops: a miss asks the disk on the disk queue and comes back.
        let (missing, missHops) = try await probe.read(cache, "absent")
        #expect(missing == nil)
        #expect(missHops > 0)
    }

    /// A disk hit of the async twins that waits for no lock is read on the caller's executor too
    /// (no hop to the disk queue and back), for Cache and for DiskCache.
    @Test func asyncDiskHitsThatWaitForNoLockDoNotHop() async throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        try await cache.setValue(7, forKey: "k")
        cache.memoryCache.removeAllValues()
        let probe = ExecutorProbe()
        let (fromDisk, hops) = try await probe.read(cache, "k")
        #expect(fromDisk == 7)
        #expect(hops == 0, "the disk hit left the caller's executor \(hops) times")
        #expect(cache.memoryCache.containsValue(forKey: "k"))  // back-filled as before
        let (data, diskHops) = try await probe.read(cache.diskCache, "k")
        #expect(data != nil)
        #expect(diskHops == 0, "DiskCache's hit left the caller's executor \(diskHops) times")
        let (none, diskMissHops) = try await probe.read(cache.diskCache, "absent")
        #expect(none == nil)
        #expect(diskMissHops > 0)  // (the probe sees hops)
    }

    @Test func cancelledAsyncCallsDoNothing() async throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var cancelled = 0
            do { try await cache.setValue(1, forKey: "k") } catch is CancellationError { cancelled += 1 }
            do { _ = try await cache.value(forKey: "k") } catch is CancellationError { cancelled += 1 }
            do { try await cache.removeValue(forKey: "k") } catch is CancellationError { cancelled += 1 }
            do { try await cache.removeAllValues() } catch is CancellationError { cancelled += 1 }
            return cancelled
        }
        #expect(try await task.value == 4)
        #expect(cache.memoryCache.totalCount == 0)
        #expect(try await cache.diskCache.totalCount() == 0)
    }

    // MARK: Another process

    /// The child half of ``aValueWrittenHereIsReadInAnotherProcess()``: does nothing unless
    /// that test started this process with the environment variables below.
    @Test func childProcessReadsAndWrites() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let path = environment["YYCACHE_TEST_CHILD_PATH"] else { return }
        let cache = try Cache<String>(path: path)
        #expect(try cache.value(forKey: "from parent") == "hello child")
        try cache.setValue("hello parent", forKey: "from child")
    }

    @Test func aValueWrittenHereIsReadInAnotherProcess() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<String>(path: folder.path)
        try cache.setValue("hello child", forKey: "from parent")

        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = ["--testing-library", "swift-testing", "--filter", "childProcessReadsAndWrites"]
        var environment = ProcessInfo.processInfo.environment
        environment["YYCACHE_TEST_CHILD_PATH"] = folder.path
        child.environment = environment
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        let finished = eventually(timeout: .seconds(60)) { !child.isRunning }
        if !finished { child.terminate() }
        #expect(finished)
        child.waitUntilExit()
        #expect(child.terminationStatus == 0)

        #expect(try cache.value(forKey: "from child") == "hello parent")
    }
}

/// A serial executor that counts the jobs it is given (each is one arrival on the actor).
final class CountingExecutor: SerialExecutor {
    let queue = DispatchQueue(label: "yycache-tests.counting-executor")
    let enqueued = Atomic<Int>(0)

    func enqueue(_ job: consuming ExecutorJob) {
        enqueued.add(1, ordering: .sequentiallyConsistent)
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}

/// An actor on a ``CountingExecutor``: how many times a call made on it had to come back.
actor ExecutorProbe {
    let executor = CountingExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Awaits the async `value(forKey: "k")` and `containsValue(forKey: "k")`; returns their
    /// results and the jobs the actor's executor received meanwhile.
    func memoryHit(_ cache: Cache<Int>) async throws -> (Int?, Bool, Int) {
        let before = executor.enqueued.load(ordering: .sequentiallyConsistent)
        let value = try await cache.value(forKey: "k")
        let contained = await cache.containsValue(forKey: "k")
        return (value, contained, executor.enqueued.load(ordering: .sequentiallyConsistent) - before)
    }

    /// Awaits the async `value(forKey: key)`; returns it and the jobs the actor's executor
    /// received meanwhile.
    func read(_ cache: Cache<Int>, _ key: String) async throws -> (Int?, Int) {
        let before = executor.enqueued.load(ordering: .sequentiallyConsistent)
        let value = try await cache.value(forKey: key)
        return (value, executor.enqueued.load(ordering: .sequentiallyConsistent) - before)
    }

    /// The same for DiskCache's async `data(forKey: key)`.
    func read(_ disk: DiskCache, _ key: String) async throws -> (Data?, Int) {
        let before = executor.enqueued.load(ordering: .sequentiallyConsistent)
        let data = try await disk.data(forKey: key)
        return (data, executor.enqueued.load(ordering: .sequentiallyConsistent) - before)
    }
}
