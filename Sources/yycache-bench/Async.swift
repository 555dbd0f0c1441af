// The async twins against the sync calls (group "async", Swift only): Cache<Data>'s
// value(forKey:) on small (100-byte) values, 20 x --disk-keys reads per repetition (20,000 by
// default), every key present:
//   - mem_hit: every read is a memory hit;
//   - disk_read: every read goes to the disk (the memory tier's count limit is 0, so nothing
//     stays there: each read is a disk read plus a refused or evicted back-fill).
// Rows: the sync call; the async twin awaited from the main actor (top-level code, an app's UI
// code); the async twin awaited from a task on the global executor. Then the same for the disk
// tier alone, DiskCache's data(forKey:) (workload disk_read: every read a disk hit), sync, async
// from a task, and the sync call sent to a dispatch queue behind a continuation from a task (a
// hop per read: what the async twin did before it read hits in place).

#if !YYCB_NO_CACHE
    import Foundation
    import YYCache

    let asyncSyncID = "swift-cache-sync"
    let asyncMainID = "swift-cache-async-main"
    let asyncTaskID = "swift-cache-async-task"
    let diskSyncID = "swift-diskcache-sync"
    let diskTaskID = "swift-diskcache-async-task"
    let diskHopID = "swift-diskcache-async-hop"
    let hopQueue = DispatchQueue(label: "yycache-bench.hop", qos: .utility, attributes: .concurrent)

    // Synchronous helpers: in an async function the async twins win overload resolution.

    func syncReads(_ cache: Cache<Data>, _ keys: [String], _ order: [Int], _ reads: Int) -> Int {
        var misses = 0
        for i in 0..<reads where (try? cache.value(forKey: keys[order[i % order.count]])) == nil {
            misses += 1
        }
        return misses
    }

    func makeAsyncBenchCache(_ dir: String, _ keys: [String], _ bytes: [UInt8]) throws -> Cache<Data> {
        let cache = try Cache<Data>(path: dir)
        for i in 0..<keys.count { try cache.setValue(Data(bytes[(i * 100)..<(i * 100 + 100)]), forKey: keys[i]) }
        return cache
    }

    /// One read loop: `reads` reads of keys[order[i % n]].
    @MainActor
    func asyncReadsOnMainActor(_ cache: Cache<Data>, _ keys: [String], _ order: [Int], _ reads: Int) async -> Int {
        var misses = 0
        for i in 0..<reads where (try? await cache.value(forKey: keys[order[i % order.count]])) == nil {
            misses += 1
        }
        return misses
    }

    func syncDiskReads(_ disk: DiskCache, _ keys: [String], _ order: [Int], _ reads: Int) -> Int {
        var misses = 0
        for i in 0..<reads where (try? disk.data(forKey: keys[order[i % order.count]])) == nil {
            misses += 1
        }
        return misses
    }

    func asyncDiskReadsOnTask(_ disk: DiskCache, _ keys: [String], _ order: [Int], _ reads: Int) async -> Int {
        var misses = 0
        for i in 0..<reads where (try? await disk.data(forKey: keys[order[i % order.count]])) == nil {
            misses += 1
        }
        return misses
    }

    func hopDiskReadsOnTask(_ disk: DiskCache, _ keys: [String], _ order: [Int], _ reads: Int) async -> Int {
        var misses = 0
        for i in 0..<reads {
            let key = keys[order[i % order.count]]
            let data = await withCheckedContinuation { (done: CheckedContinuation<Data?, Never>) in
                hopQueue.async { done.resume(returning: try? disk.data(forKey: key)) }
            }
            if data == nil { misses += 1 }
        }
        return misses
    }

    func asyncReadsOnTask(_ cache: Cache<Data>, _ keys: [String], _ order: [Int], _ reads: Int) async -> Int {
        var misses = 0
        for i in 0..<reads where (try? await cache.value(forKey: keys[order[i % order.count]])) == nil {
            misses += 1
        }
        return misses
    }

    @MainActor
    func benchAsync() async {
        let ids = [asyncSyncID, asyncMainID, asyncTaskID].filter(opt.wanted)
        let diskIDs = [diskSyncID, diskTaskID, diskHopID].filter(opt.wanted)
        guard !ids.isEmpty || !diskIDs.isEmpty else { return }
        let n = opt.diskKeys
        let reads = 20 * n
        let keys = (0..<n).map { "key_\($0)" }
        let bytes = patternBytes(n * 100)
        let order = shuffled(n, seed: opt.seed &+ seedDiskOrder)
        let dir = "\(opt.dir ?? NSTemporaryDirectory())/swift-async-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cache: Cache<Data>
        do {
            cache = try makeAsyncBenchCache(dir, keys, bytes)
        } catch {
            for id in ids + diskIDs {
                emitNotAvailable(
                    group: "async", id: id, system: id,
                    reason: "failed: \(error)".replacingOccurrences(of: "\"", with: "'"))
            }
            return
        }
        var errors = 0
        for id in ids {
            var series = [Series("mem_hit"), Series("disk_read")]
            for (w, inMemory) in [true, false].enumerated() {
                cache.memoryCache.countLimit = inMemory ? .max : 0
                if inMemory {
                    _ = syncReads(cache, keys, order, n)  // fills the memory tier
                } else {
                    cache.memoryCache.removeAllValues()
                }
                for rep in 0..<(opt.warmup + opt.reps) {
                    let t0 = now()
                    var misses = 0
                    switch id {
                    case asyncSyncID:
                        misses = syncReads(cache, keys, order, reads)
                    case asyncMainID:
                        misses = await asyncReadsOnMainActor(cache, keys, order, reads)
                    default:
                        misses = await Task.detached { await asyncReadsOnTask(cache, keys, order, reads) }.value
                    }
                    series[w].record(rep: rep, ops: reads, seconds: now() - t0)
                    errors += misses
                }
            }
            let system = [
                asyncSyncID: "Swift Cache value(forKey:), sync",
                asyncMainID: "Swift Cache value(forKey:), async from the main actor",
                asyncTaskID: "Swift Cache value(forKey:), async from a task",
            ][id]!
            for s in series { emit(group: "async", id: id, system: system, s) }
        }
        for id in diskIDs {
            let disk = cache.diskCache
            var series = Series("disk_read")
            for rep in 0..<(opt.warmup + opt.reps) {
                let t0 = now()
                let misses: Int
                switch id {
                case diskSyncID: misses = syncDiskReads(disk, keys, order, reads)
                case diskTaskID:
                    misses = await Task.detached { await asyncDiskReadsOnTask(disk, keys, order, reads) }.value
                default: misses = await Task.detached { await hopDiskReadsOnTask(disk, keys, order, reads) }.value
                }
                series.record(rep: rep, ops: reads, seconds: now() - t0)
                errors += misses
            }
            let system = [
                diskSyncID: "Swift DiskCache data(forKey:), sync",
                diskTaskID: "Swift DiskCache data(forKey:), async from a task",
                diskHopID: "Swift DiskCache data(forKey:), sync on a dispatch queue from a task (a hop per read)",
            ][id]!
            emit(group: "async", id: id, system: system, series)
        }
        cache.diskCache.close()
        if errors > 0 {
            FileHandle.standardError.write(Data("yycache-bench: async: \(errors) unexpected misses\n".utf8))
        }
    }
#else
    @MainActor
    func benchAsync() async {
        for id in [
            "swift-cache-sync", "swift-cache-async-main", "swift-cache-async-task", "swift-diskcache-sync",
            "swift-diskcache-async-task", "swift-diskcache-async-hop",
        ] where opt.wanted(id) {
            emitNotAvailable(group: "async", id: id, system: id, reason: "Cache not in the YYCache module yet")
        }
    }
#endif
