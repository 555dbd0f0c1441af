import Foundation
import Synchronization
import Testing

@testable import YYCache

/// Attacks ``Cache``'s guarantee: once a set or remove has returned, no later read returns an
/// older value or the removed one, and once every call has returned the memory tier holds
/// nothing but the disk's value. Each round empties the memory tier (an eviction, not a write:
/// `trim(toCount: 0)`), so the reader goes to the disk while the writer runs.
///
/// `YYC_CONSISTENCY_ROUNDS` (default 200) sets the number of rounds; `make soak` raises it.
@Suite struct CacheConsistencyTests {
    static var rounds: Int {
        Int(ProcessInfo.processInfo.environment["YYC_CONSISTENCY_ROUNDS"] ?? "") ?? 200
    }

    /// What memory alone holds, and what a read returns, once the round's calls have returned.
    static func settled(_ cache: Cache<Int>) throws -> (memory: Int?, read: Int?) {
        (cache.memoryCache.value(forKey: "k"), try cache.value(forKey: "k"))
    }

    @Test func asyncReaderAndWriterNeverLeaveMemoryStale() async throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        var stale = 0
        for version in 1...Self.rounds {
            cache.memoryCache.trim(toCount: 0)
            async let read = cache.value(forKey: "k")
            async let write: Void = cache.setValue(version, forKey: "k")
            _ = try await (read, write)
            let (memory, value) = try Self.settled(cache)
            if (memory != nil && memory != version) || value != version { stale += 1 }
        }
        #expect(stale == 0, "\(stale) of \(Self.rounds) rounds left an older version")
    }

    @Test func asyncRemovedKeyNeverComesBack() async throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        var resurrected = 0
        for version in 1...Self.rounds {
            try await cache.setValue(version, forKey: "k")
            cache.memoryCache.trim(toCount: 0)
            async let read = cache.value(forKey: "k")
            async let remove: Void = cache.removeValue(forKey: "k")
            _ = try await (read, remove)
            let (memory, value) = try Self.settled(cache)
            if memory != nil || value != nil { resurrected += 1 }
        }
        #expect(resurrected == 0, "\(resurrected) of \(Self.rounds) removed keys came back")
    }

    @Test func asyncRemoveAllIsNeverUndoneByAReader() async throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        var resurrected = 0
        for version in 1...Self.rounds {
            try await cache.setValue(version, forKey: "k")
            cache.memoryCache.trim(toCount: 0)
            async let read = cache.value(forKey: "k")
            async let removeAll: Void = cache.removeAllValues()
            _ = try await (read, removeAll)
            let (memory, value) = try Self.settled(cache)
            if memory != nil || value != nil { resurrected += 1 }
        }
        #expect(resurrected == 0, "\(resurrected) of \(Self.rounds) removed keys came back")
    }

    /// Threads reading without pause while this thread sets increasing versions and removes:
    /// `acked` is 2v after the set of version v returned, 2v + 1 after its removal returned; a
    /// read that returns v with 2v < acked (read before it started), or nothing while acked is
    /// even and no removal has begun, broke the guarantee.
    @Test func threadsNeverReadAnOlderOrRemovedVersion() throws {
        let folder = TemporaryFolder()
        let cache = try Cache<Int>(path: folder.path)
        let acked = Atomic<Int>(0)
        let removalBegun = Atomic<Int>(0)
        let done = Atomic<Bool>(false)
        let badReads = Atomic<Int>(0)
        let reads = Atomic<Int>(0)
        let errors = Atomic<Int>(0)
        let rounds = 10 * Self.rounds
        onThreads(3) { index in
            if index == 0 {
                defer { done.store(true, ordering: .sequentiallyConsistent) }
                do {
                    for version in 1...rounds {
                        cache.memoryCache.trim(toCount: 0)
                        try cache.setValue(version, forKey: "k")
                        acked.store(2 * version, ordering: .sequentiallyConsistent)
                        if version % 3 == 0 {
                            cache.memoryCache.trim(toCount: 0)
                            removalBegun.store(2 * version + 1, ordering: .sequentiallyConsistent)
                            try cache.removeValue(forKey: "k")
                            acked.store(2 * version + 1, ordering: .sequentiallyConsistent)
                        }
                    }
                } catch {
                    errors.add(1, ordering: .relaxed)
                }
                return
            }
            while !done.load(ordering: .sequentiallyConsistent) {
                let floor = acked.load(ordering: .sequentiallyConsistent)
                do {
                    let value = try cache.value(forKey: "k")
                    let missingIsRight =
                        floor == 0 || floor % 2 == 1
                        || removalBegun.load(ordering: .sequentiallyConsistent) > floor
                    if let value, 2 * value < floor { badReads.add(1, ordering: .relaxed) }
                    if value == nil, !missingIsRight { badReads.add(1, ordering: .relaxed) }
                } catch {
                    errors.add(1, ordering: .relaxed)
                }
                reads.add(1, ordering: .relaxed)
            }
        }
        #expect(errors.load(ordering: .relaxed) == 0)
        #expect(
            badReads.load(ordering: .relaxed) == 0,
            "\(badReads.load(ordering: .relaxed)) of \(reads.load(ordering: .relaxed)) reads were stale")
        let (memory, value) = try Self.settled(cache)
        let last = rounds % 3 == 0 ? nil : rounds
        #expect(memory == nil || memory == last)
        #expect(value == last)
    }
}
