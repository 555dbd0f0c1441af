// Disk workloads: YYCache's disk benchmark (write, replace, read in random order, read again,
// read misses) with small (100-byte) and large (100 KB) values, for DiskCache, Cache and a
// file-per-key cache written the way a Swift user would (Data.write(options: .atomic), i.e. a
// temporary file renamed over the key's file; Data(contentsOf:) to read).

import Foundation
import YYCache

protocol DiskSystem: AnyObject {
    static var id: String { get }
    static var name: String { get }
    init(dir: String) throws
    func put(_ key: String, _ value: Data) throws
    /// true on a hit, false on a miss.
    func get(_ key: String) throws -> Bool
    func close()
}

#if !YYCB_NO_DISKCACHE
    final class DiskCacheSystem: DiskSystem {
        static var id: String { "swift-diskcache" }
        static var name: String { "Swift DiskCache" }
        let cache: DiskCache
        init(dir: String) throws { cache = try DiskCache(path: dir) }
        func put(_ key: String, _ value: Data) throws { try cache.setData(value, forKey: key) }
        func get(_ key: String) throws -> Bool { try cache.data(forKey: key) != nil }
        func close() { cache.close() }
    }
#endif

#if !YYCB_NO_CACHE
    final class CacheSystem: DiskSystem {
        static var id: String { "swift-cache" }
        static var name: String { "Swift Cache (memory+disk)" }
        let cache: Cache<Data>
        init(dir: String) throws { cache = try Cache<Data>(path: dir) }
        func put(_ key: String, _ value: Data) throws { try cache.setValue(value, forKey: key) }
        func get(_ key: String) throws -> Bool { try cache.value(forKey: key) != nil }
        func close() { cache.diskCache.close() }
    }
#endif

final class FilePerKeySystem: DiskSystem {
    static var id: String { "swift-file-per-key" }
    static var name: String { "file-per-key, Data.write(.atomic) (Swift)" }
    let dir: URL
    init(dir: String) throws { self.dir = URL(fileURLWithPath: dir, isDirectory: true) }
    func put(_ key: String, _ value: Data) throws {
        try value.write(to: dir.appendingPathComponent(key), options: .atomic)
    }
    func get(_ key: String) throws -> Bool {
        guard let d = try? Data(contentsOf: dir.appendingPathComponent(key)) else { return false }
        return d.count >= 0
    }
    func close() {}
}

func runDisk<S: DiskSystem>(_: S.Type, group: String, large: Bool) {
    guard opt.wanted(S.id) else { return }
    let n = opt.diskKeys
    let keys = (0..<(2 * n)).map { "key_\($0)" }
    let values: [Data]
    if large {
        let one = Data(patternBytes(102_400))
        values = Array(repeating: one, count: n)
    } else {
        let bytes = patternBytes(n * 100)
        values = (0..<n).map { Data(bytes[($0 * 100)..<($0 * 100 + 100)]) }
    }
    let order = shuffled(n, seed: opt.seed &+ seedDiskOrder)
    let base = opt.dir ?? NSTemporaryDirectory()
    let fm = FileManager.default
    var s = [Series("write"), Series("replace"), Series("read_random"), Series("read_again"), Series("read_miss")]
    var errors = 0
    for rep in 0..<(opt.warmup + opt.reps) {
        let dir = "\(base)/swift-\(group)-\(S.id)-\(getpid())-\(rep)"
        try? fm.removeItem(atPath: dir)
        do {
            try fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let c = try S(dir: dir)
            for phase in 0..<2 {
                let t0 = now()
                for i in 0..<n {
                    do { try c.put(keys[i], values[i]) } catch { errors += 1 }
                }
                s[phase].record(rep: rep, ops: n, seconds: now() - t0)
            }
            for phase in 2..<4 {
                let t0 = now()
                for i in 0..<n {
                    if (try? c.get(keys[order[i]])) != true { errors += 1 }
                }
                s[phase].record(rep: rep, ops: n, seconds: now() - t0)
            }
            let t0 = now()
            for i in 0..<n {
                if (try? c.get(keys[n + order[i]])) != false { errors += 1 }
            }
            s[4].record(rep: rep, ops: n, seconds: now() - t0)
            c.close()
        } catch {
            emitNotAvailable(
                group: group, id: S.id, system: S.name,
                reason: "failed: \(error)".replacingOccurrences(of: "\"", with: "'"))
            try? fm.removeItem(atPath: dir)
            return
        }
        try? fm.removeItem(atPath: dir)
    }
    if errors > 0 {
        FileHandle.standardError.write(Data("yycache-bench: \(group)/\(S.id): \(errors) unexpected results\n".utf8))
    }
    for series in s { emit(group: group, id: S.id, system: S.name, series) }
}

func benchDisk(group: String, large: Bool) {
    #if !YYCB_NO_DISKCACHE
        runDisk(DiskCacheSystem.self, group: group, large: large)
    #else
        if opt.wanted("swift-diskcache") {
            emitNotAvailable(
                group: group, id: "swift-diskcache", system: "Swift DiskCache",
                reason: "DiskCache not in the YYCache module yet")
        }
    #endif
    #if !YYCB_NO_CACHE
        runDisk(CacheSystem.self, group: group, large: large)
    #else
        if opt.wanted("swift-cache") {
            emitNotAvailable(
                group: group, id: "swift-cache", system: "Swift Cache (memory+disk)",
                reason: "Cache not in the YYCache module yet")
        }
    #endif
    runDisk(FilePerKeySystem.self, group: group, large: large)
}
