// Shared plumbing of the Swift benchmark: options, the deterministic data (identical to
// Benchmarks/c/bench.c: splitmix64, Fisher-Yates, inverse-CDF Zipf), timing and JSON lines.

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

struct Options {
    var group = ""  // empty: every group but footprint
    var systems: Set<String>? = nil
    var system: String? = nil
    var keytype = "str"
    var dir: String? = nil
    var phase: String? = nil  // memory groups: run only this workload (profiling)
    var keys = 200_000
    var diskKeys = 1_000
    var opsPerThread = 200_000
    var mixedMinOps = 500_000  // mixed: operations each worker runs at least (mixed_min_ops in bench.c)
    var reps = 5
    var warmup = 1
    var threads = ProcessInfo.processInfo.activeProcessorCount
    var seed: UInt64 = 42
    var zipfS = 0.99

    func wanted(_ id: String) -> Bool { systems.map { $0.contains(id) } ?? true }
}

nonisolated(unsafe) var opt = Options()

func usage() -> Never {
    FileHandle.standardError.write(
        Data(
            """
            usage: yycache-bench [--quick] [--group mem-int|mem-str|mixed|disk-small|disk-large|async|footprint]
                   [--systems id,id] [--system id --keytype str|int] [--keys N] [--disk-keys N]
                   [--ops-per-thread N] [--reps N] [--warmup N] [--threads N] [--dir PATH] [--seed N]
                   [--phase set_fresh|set_noresize|get_seq|get_random|get_miss50] (memory groups only)

            """.utf8))
    exit(2)
}

func parseOptions() {
    var args = CommandLine.arguments.dropFirst()
    func int(_ v: String) -> Int {
        guard let n = Int(v) else { usage() }
        return n
    }
    if args.contains("--quick") {  // a smoke run of seconds; explicit sizes still win
        opt.keys = 10_000
        opt.diskKeys = 50
        opt.opsPerThread = 20_000
        opt.mixedMinOps = 20_000  // one pass: a smoke run times nothing
        opt.reps = 2
        opt.warmup = 0
    }
    while let a = args.popFirst() {
        if a == "--quick" { continue }
        guard let v = args.popFirst() else { usage() }
        switch a {
        case "--group": opt.group = v
        case "--systems": opt.systems = v.isEmpty ? nil : Set(v.split(separator: ",").map(String.init))
        case "--system": opt.system = v
        case "--keytype": opt.keytype = v
        case "--keys": opt.keys = int(v)
        case "--disk-keys": opt.diskKeys = int(v)
        case "--ops-per-thread": opt.opsPerThread = int(v)
        case "--reps": opt.reps = int(v)
        case "--warmup": opt.warmup = int(v)
        case "--threads": opt.threads = int(v)
        case "--dir": opt.dir = v
        case "--phase": opt.phase = v
        case "--seed":
            guard let s = UInt64(v) else { usage() }
            opt.seed = s
        default: usage()
        }
    }
    if opt.keys < 1 || opt.diskKeys < 1 || opt.reps < 1 || opt.warmup < 0 { usage() }
}

@inline(__always)
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

// Seeds of the streams (same constants in bench.c).
let seedRandomOrder: UInt64 = 1
let seedMissOrder: UInt64 = 2
let seedDiskOrder: UInt64 = 3
let seedZipf: UInt64 = 100

struct SplitMix64 {
    var s: UInt64
    mutating func next() -> UInt64 {
        s &+= 0x9E37_79B9_7F4A_7C15
        var z = s
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func unit() -> Double { Double(next() >> 11) * (1.0 / 9_007_199_254_740_992.0) }
}

func shuffled(_ n: Int, seed: UInt64) -> [Int] {
    var a = Array(0..<n)
    var r = SplitMix64(s: seed)
    var i = n
    while i > 1 {
        let j = Int(r.next() % UInt64(i))
        a.swapAt(i - 1, j)
        i -= 1
    }
    return a
}

/// Mixed workload for one thread: key index from Zipf(s) over n keys, and whether it is a set
/// (10 %). Same stream as bench.c's zipf_ops.
func zipfOps(n: Int, count: Int, seed: UInt64) -> [(key: Int, set: Bool)] {
    var cdf = [Double](repeating: 0, count: n)
    var sum = 0.0
    for i in 0..<n {
        sum += pow(Double(i + 1), -opt.zipfS)
        cdf[i] = sum
    }
    for i in 0..<n { cdf[i] /= sum }
    var r = SplitMix64(s: seed)
    var ops: [(key: Int, set: Bool)] = []
    ops.reserveCapacity(count)
    for _ in 0..<count {
        let u = r.unit()
        var lo = 0
        var hi = n - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if cdf[mid] < u { lo = mid + 1 } else { hi = mid }
        }
        ops.append((lo, r.unit() < 0.1))
    }
    return ops
}

/// A 4-byte value holding i (little-endian), as YYCache's benchmark stores NSData(i).
func smallValue(_ i: Int) -> Data {
    withUnsafeBytes(of: UInt32(truncatingIfNeeded: i).littleEndian) { Data($0) }
}

/// The disk values: bytes (k * 31 + 7) & 0xff over a buffer; small = 100-byte slices, one per key.
func patternBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
}

struct Series {
    let workload: String
    var samples: [Double] = []
    var ops = 0
    init(_ workload: String) { self.workload = workload }
    mutating func record(rep: Int, ops: Int, seconds: Double) {
        self.ops = ops
        if rep >= opt.warmup { samples.append(seconds > 0 ? Double(ops) / seconds : 0) }
    }
}

func emitLine(_ s: String) {
    FileHandle.standardOutput.write(Data((s + "\n").utf8))
}

func emit(group: String, id: String, system: String, _ s: Series) {
    let samples = s.samples.map { String(format: "%.1f", $0) }.joined(separator: ",")
    emitLine(
        #"{"group":"\#(group)","workload":"\#(s.workload)","id":"\#(id)","system":"\#(system)","lang":"swift","ops":\#(s.ops),"samples":[\#(samples)]}"#
    )
}

func emitNotAvailable(group: String, id: String, system: String, reason: String) {
    emitLine(
        #"{"group":"\#(group)","id":"\#(id)","system":"\#(system)","lang":"swift","available":false,"reason":"\#(reason)"}"#
    )
}

func rssBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Wraps a value that is handed to benchmark threads which synchronise by themselves.
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
}

/// Runs body(t) on k threads released together; returns the wall time from release to the
/// last thread's end.
func runThreads(_ k: Int, _ body: @escaping @Sendable (Int) -> Void) -> Double {
    let go = DispatchSemaphore(value: 0)
    let ready = DispatchSemaphore(value: 0)
    let group = DispatchGroup()
    for t in 0..<k {
        group.enter()
        let thread = Thread {
            ready.signal()
            go.wait()
            body(t)
            group.leave()
        }
        thread.start()
    }
    for _ in 0..<k { ready.wait() }
    let t0 = now()
    for _ in 0..<k { go.signal() }
    group.wait()
    return now() - t0
}
