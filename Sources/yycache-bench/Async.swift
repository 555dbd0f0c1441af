// The async twins against the sync calls (group "async", Swift only): Cache<Data>'s
// value(forKey:) on small (100-byte) values, 20 x --disk-keys reads per repetition (20,000 by
// default), every key present:
//   - mem_hit: every read is a memory hit;
//   - disk_read: every read goes to the disk (the memory tier's count limit is 0, so nothing
//     stays there: each read is a disk read plus a refused or evicted back-fill).
// Rows: the sync call; the async twin awaited from the main actor (top-level code, an app's UI
// code); the async twin awaited from a task on the global executor.

#if !YYCB_NO_CACHE
    import Foundation
    import YYCache

    let asyncSyncID = "swift-cache-sync"
    let asyncMainID = "swift-cache-async-main"
    let asyncTaskID = "swift-cache-async-task"

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
        guard !ids.isEmpty else { return }
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
            for id in ids {
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
        cache.diskCache.close()
        if errors > 0 {
            FileHandle.standardError.write(Data("yycache-bench: async: \(errors) unexpected misses\n".utf8))
        }
    }
#else
    @MainActor
    func benchAsync() async {
        for id in ["swift-cache-sync", "swift-cache-async-main", "swift-cache-async-task"] where opt.wanted(id) {
            emitNotAvailable(group: "async", id: id, system: id, reason: "Cache not in the YYCache module yet")
        }
    }
#endif
