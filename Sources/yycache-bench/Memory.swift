// Memory workloads: YYCache's memory benchmark (set fresh, set without resize, get sequential,
// get random, get with ~50 % misses) and the mixed 90/10 Zipf workload, for MemoryCache and the
// alternatives a Swift user would pick: NSCache, a Dictionary behind a Mutex (the no-eviction
// ceiling) and a Dictionary behind an NSLock (YYCache's own reference point).

import Foundation
import Synchronization
import YYCache

/// A key type of the benchmark: String ("key_<i>") or Int (8 bytes), and its Foundation object
/// for NSCache (NSString / NSNumber).
protocol BenchKey: Hashable, Sendable {
    associatedtype Object: AnyObject
    static func make(_ i: Int) -> Self
    static func makeObject(_ i: Int) -> Object
}

extension String: BenchKey {
    static func make(_ i: Int) -> String { "key_\(i)" }
    static func makeObject(_ i: Int) -> NSString { NSString(string: "key_\(i)") }
}

extension Int: BenchKey {
    static func make(_ i: Int) -> Int { i }
    static func makeObject(_ i: Int) -> NSNumber { NSNumber(value: i) }
}

/// One system under test. A fresh instance per repetition.
protocol MemSystem: AnyObject, SendableMetatype {
    associatedtype K
    associatedtype V
    static var id: String { get }
    static var name: String { get }
    static func makeKey(_ i: Int) -> K
    static func makeValue(_ i: Int) -> V
    init()
    func set(_ key: K, _ value: V)
    /// The value's byte count on a hit, -1 on a miss.
    func get(_ key: K) -> Int
    /// Empties the cache the way YYCache's benchmark does before "set without resize".
    func clear(_ keys: [K])
}

final class MemoryCacheSystem<Key: BenchKey & CacheKey>: MemSystem {
    static var id: String { "swift-memorycache" }
    static var name: String { "Swift MemoryCache" }
    static func makeKey(_ i: Int) -> Key { Key.make(i) }
    static func makeValue(_ i: Int) -> Data { smallValue(i) }
    let cache = MemoryCache<Key, Data>()
    init() {}
    @inline(__always) func set(_ key: Key, _ value: Data) { cache.setValue(value, forKey: key) }
    @inline(__always) func get(_ key: Key) -> Int { cache.value(forKey: key)?.count ?? -1 }
    func clear(_ keys: [Key]) { for k in keys { cache.removeValue(forKey: k) } }  // as YY: one by one
}

/// An eviction policy of a ``MemoryCachePolicySystem``.
protocol BenchPolicy {
    static var policy: EvictionPolicy { get }
    static var suffix: String { get }
}
enum SievePolicy: BenchPolicy {
    static var policy: EvictionPolicy { .sieve }
    static var suffix: String { "sieve" }
}
enum S3FIFOPolicy: BenchPolicy {
    static var policy: EvictionPolicy { .s3fifo }
    static var suffix: String { "s3fifo" }
}
enum TinyLFUPolicy: BenchPolicy {
    static var policy: EvictionPolicy { .tinyLFU }
    static var suffix: String { "tinylfu" }
}

/// MemoryCache with the eviction policy P (ids swift-memorycache-sieve, -s3fifo, -tinylfu).
final class MemoryCachePolicySystem<Key: BenchKey & CacheKey, P: BenchPolicy>: MemSystem {
    static var id: String { "swift-memorycache-\(P.suffix)" }
    static var name: String { "Swift MemoryCache .\(P.suffix)" }
    static func makeKey(_ i: Int) -> Key { Key.make(i) }
    static func makeValue(_ i: Int) -> Data { smallValue(i) }
    let cache = MemoryCache<Key, Data>(policy: P.policy)
    init() {}
    @inline(__always) func set(_ key: Key, _ value: Data) { cache.setValue(value, forKey: key) }
    @inline(__always) func get(_ key: Key) -> Int { cache.value(forKey: key)?.count ?? -1 }
    func clear(_ keys: [Key]) { for k in keys { cache.removeValue(forKey: k) } }
}

final class DictMutexSystem<Key: BenchKey>: MemSystem, @unchecked Sendable {
    static var id: String { "swift-dict-mutex" }
    static var name: String { "Swift Dictionary+Mutex" }
    static func makeKey(_ i: Int) -> Key { Key.make(i) }
    static func makeValue(_ i: Int) -> Data { smallValue(i) }
    let dict = Mutex<[Key: Data]>([:])
    init() {}
    @inline(__always) func set(_ key: Key, _ value: Data) { dict.withLock { $0[key] = value } }
    @inline(__always) func get(_ key: Key) -> Int { dict.withLock { $0[key]?.count ?? -1 } }
    func clear(_ keys: [Key]) { dict.withLock { $0.removeAll(keepingCapacity: true) } }
}

final class DictNSLockSystem<Key: BenchKey>: MemSystem, @unchecked Sendable {
    static var id: String { "swift-dict-nslock" }
    static var name: String { "Swift Dictionary+NSLock" }
    static func makeKey(_ i: Int) -> Key { Key.make(i) }
    static func makeValue(_ i: Int) -> Data { smallValue(i) }
    var dict: [Key: Data] = [:]
    let lock = NSLock()
    init() {}
    @inline(__always) func set(_ key: Key, _ value: Data) {
        lock.lock()
        dict[key] = value
        lock.unlock()
    }
    @inline(__always) func get(_ key: Key) -> Int {
        lock.lock()
        let r = dict[key]?.count ?? -1
        lock.unlock()
        return r
    }
    func clear(_ keys: [Key]) {
        lock.lock()
        dict.removeAll(keepingCapacity: true)
        lock.unlock()
    }
}

final class NSCacheSystem<Key: BenchKey>: MemSystem, @unchecked Sendable {
    static var id: String { "nscache" }
    static var name: String { "Foundation NSCache" }
    static func makeKey(_ i: Int) -> Key.Object { Key.makeObject(i) }
    static func makeValue(_ i: Int) -> NSData { smallValue(i) as NSData }
    let cache = NSCache<Key.Object, NSData>()
    init() {}
    @inline(__always) func set(_ key: Key.Object, _ value: NSData) { cache.setObject(value, forKey: key) }
    @inline(__always) func get(_ key: Key.Object) -> Int { cache.object(forKey: key)?.length ?? -1 }
    func clear(_ keys: [Key.Object]) { cache.removeAllObjects() }
}

func runMemory<S: MemSystem>(_: S.Type, group: String) {
    guard opt.wanted(S.id) else { return }
    let n = opt.keys
    let keys = (0..<(2 * n)).map { S.makeKey($0) }  // n..2n-1 are never set: misses
    let values = (0..<n).map { S.makeValue($0) }
    let random = shuffled(n, seed: opt.seed &+ seedRandomOrder)
    let mix = shuffled(2 * n, seed: opt.seed &+ seedMissOrder)
    var s = [
        Series("set_fresh"), Series("set_noresize"), Series("get_seq"), Series("get_random"),
        Series("get_miss50"),
    ]
    // --phase W runs only workload W (for profiling): the cache is then built once unless W is
    // one of the sets.
    let want = s.map { opt.phase == nil || opt.phase == $0.workload }
    var sink = 0
    var cache: S? = nil
    for rep in 0..<(opt.warmup + opt.reps) {
        var t0: Double
        if cache == nil || want[0] || want[1] {
            cache = nil
            let c = S()
            t0 = now()
            for i in 0..<n { c.set(keys[i], values[i]) }
            if want[0] { s[0].record(rep: rep, ops: n, seconds: now() - t0) }
            cache = c
        }
        let c = cache!
        if want[1] {
            c.clear(Array(keys[0..<n]))
            t0 = now()
            for i in 0..<n { c.set(keys[i], values[i]) }
            s[1].record(rep: rep, ops: n, seconds: now() - t0)
        }
        if want[2] {
            t0 = now()
            for i in 0..<n { sink &+= c.get(keys[i]) }
            s[2].record(rep: rep, ops: n, seconds: now() - t0)
        }
        if want[3] {
            t0 = now()
            for i in 0..<n { sink &+= c.get(keys[random[i]]) }
            s[3].record(rep: rep, ops: n, seconds: now() - t0)
        }
        if want[4] {
            t0 = now()
            for i in 0..<n { sink &+= c.get(keys[mix[i]]) }
            s[4].record(rep: rep, ops: n, seconds: now() - t0)
        }
    }
    cache = nil
    if sink == 42 { emitLine("") }  // keep the reads
    for (series, w) in zip(s, want) where w { emit(group: group, id: S.id, system: S.name, series) }
}

func benchMemory<Key: BenchKey & CacheKey>(_: Key.Type, group: String) {
    runMemory(MemoryCacheSystem<Key>.self, group: group)
    runMemory(MemoryCachePolicySystem<Key, SievePolicy>.self, group: group)
    runMemory(MemoryCachePolicySystem<Key, S3FIFOPolicy>.self, group: group)
    runMemory(MemoryCachePolicySystem<Key, TinyLFUPolicy>.self, group: group)
    runMemory(DictMutexSystem<Key>.self, group: group)
    runMemory(DictNSLockSystem<Key>.self, group: group)
    runMemory(NSCacheSystem<Key>.self, group: group)
}

// ---- mixed 90/10 Zipf, string keys, 1 and N threads ----

func runMixed<S: MemSystem>(_: S.Type, ops: [[(key: Int, set: Bool)]]) {
    guard opt.wanted(S.id) else { return }
    let n = opt.keys
    let keys = UncheckedSendable(value: (0..<n).map { S.makeKey($0) })
    let values = UncheckedSendable(value: (0..<n).map { S.makeValue($0) })
    let opsBox = UncheckedSendable(value: ops)
    let nt = max(1, opt.threads)
    let counts = nt > 1 ? [1, nt] : [1]
    // One cache per system, filled once: the mixed runs replace existing keys only.
    let c = S()
    for i in 0..<n { c.set(keys.value[i], values.value[i]) }
    let box = UncheckedSendable(value: c)
    // Each worker times itself (the releasing thread may read the clock after a short run is
    // over) and runs its stream `passes` times, so that a run lasts long enough to be measured;
    // as bench.c.
    let per = max(1, opt.opsPerThread)
    let passes = (max(1, opt.mixedMinOps) + per - 1) / per
    for k in counts {
        var series = Series("mixed_\(k)t")
        for rep in 0..<(opt.warmup + opt.reps) {
            let times = UnsafeMutableBufferPointer<Double>.allocate(capacity: 2 * k)
            times.initialize(repeating: 0)
            let timesBox = UncheckedSendable(value: times)
            _ = runThreads(k) { t in
                let c = box.value
                let keys = keys.value
                let values = values.value
                var sink = 0
                let t0 = now()
                for _ in 0..<passes {
                    for op in opsBox.value[t] {
                        if op.set { c.set(keys[op.key], values[op.key]) } else { sink &+= c.get(keys[op.key]) }
                    }
                }
                timesBox.value[2 * t + 1] = now()
                timesBox.value[2 * t] = t0
                if sink == 42 { emitLine("") }
            }
            // First start to last end.
            let start = (0..<k).map { times[2 * $0] }.min() ?? 0
            let end = (0..<k).map { times[2 * $0 + 1] }.max() ?? 0
            times.deallocate()
            series.record(rep: rep, ops: per * passes * k, seconds: end - start)
        }
        emit(group: "mixed", id: S.id, system: S.name, series)
    }
}

func benchMixed() {
    let nt = max(1, opt.threads)
    let ops = (0..<nt).map { zipfOps(n: opt.keys, count: opt.opsPerThread, seed: opt.seed &+ seedZipf &+ UInt64($0)) }
    runMixed(MemoryCacheSystem<String>.self, ops: ops)
    runMixed(MemoryCachePolicySystem<String, SievePolicy>.self, ops: ops)
    runMixed(MemoryCachePolicySystem<String, S3FIFOPolicy>.self, ops: ops)
    runMixed(MemoryCachePolicySystem<String, TinyLFUPolicy>.self, ops: ops)
    runMixed(DictMutexSystem<String>.self, ops: ops)
    runMixed(DictNSLockSystem<String>.self, ops: ops)
    runMixed(NSCacheSystem<String>.self, ops: ops)
}

// ---- footprint: resident-set growth per entry, one system per (fresh) process ----

func footprint<S: MemSystem>(_: S.Type, keytype: String) {
    let n = opt.keys
    let keys = (0..<n).map { S.makeKey($0) }
    let values = (0..<n).map { S.makeValue($0) }
    let keyBytes = (0..<n).reduce(0) { $0 + (keytype == "str" ? "key_\($1)".utf8.count : 8) }
    let c = S()
    let before = rssBytes()
    for i in 0..<n { c.set(keys[i], values[i]) }
    let after = rssBytes()
    let per = Double(after - before) / Double(n)
    emitLine(
        #"{"group":"footprint","id":"\#(S.id)","system":"\#(S.name)","lang":"swift","keytype":"\#(keytype)","entries":\#(n),"rss_growth":\#(after - before),"bytes_per_entry":\#(String(format: "%.1f", per)),"key_bytes_per_entry":\#(String(format: "%.2f", Double(keyBytes) / Double(n))),"value_bytes_per_entry":4}"#
    )
    withExtendedLifetime(c) {}
    withExtendedLifetime(keys) {}
    withExtendedLifetime(values) {}
}

func benchFootprint() {
    let id = opt.system ?? "swift-dict-mutex"
    func run<Key: BenchKey & CacheKey>(_: Key.Type) {
        switch id {
        case "swift-memorycache":
            footprint(MemoryCacheSystem<Key>.self, keytype: opt.keytype)
        case "swift-memorycache-sieve":
            footprint(MemoryCachePolicySystem<Key, SievePolicy>.self, keytype: opt.keytype)
        case "swift-memorycache-s3fifo":
            footprint(MemoryCachePolicySystem<Key, S3FIFOPolicy>.self, keytype: opt.keytype)
        case "swift-memorycache-tinylfu":
            footprint(MemoryCachePolicySystem<Key, TinyLFUPolicy>.self, keytype: opt.keytype)
        case "swift-dict-mutex": footprint(DictMutexSystem<Key>.self, keytype: opt.keytype)
        case "swift-dict-nslock": footprint(DictNSLockSystem<Key>.self, keytype: opt.keytype)
        case "nscache": footprint(NSCacheSystem<Key>.self, keytype: opt.keytype)
        default: usage()
        }
    }
    if opt.keytype == "str" { run(String.self) } else { run(Int.self) }
}
