import Foundation
import Testing

@testable import YYCache

/// A small deterministic generator (SplitMix64), so the random sequence is the same every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private struct LoadFailed: Error {}

/// `statistics` against a model's counts after a fixed-seed random sequence, and the rules
/// (expired entries are misses, subscript reads count, contains does not, reset, hit ratio).
@Suite struct MemoryCacheStatisticsTests {
    static let policies: [EvictionPolicy] = [.lru, .sieve, .s3fifo, .tinyLFU]

    @Test(arguments: policies)
    func statisticsEqualAModelsCountsAfterARandomSequence(policy: EvictionPolicy) throws {
        let cache = MemoryCache<Int, Int>(policy: policy)
        cache.releasesValuesAsynchronously = false
        cache.autoTrimPeriod = nil
        var present = [Int: Bool]()  // key -> live (false: stored with a zero time to live)
        var want = CacheStatistics()
        func removed(_ cause: CacheRemovalCause, _ n: Int = 1) { want.removals[cause, default: 0] += n }
        var random = SeededGenerator(state: 20_261_201)
        for round in 0..<5000 {
            let key = Int.random(in: 0..<16, using: &random)
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<25:
                if present[key] != nil { removed(.replaced) }
                want.insertions += 1
                cache[key] = round
                present[key] = true
            case 25..<32:  // expired at once: stored, never returned
                if present[key] != nil { removed(.replaced) }
                want.insertions += 1
                cache.setValue(round, forKey: key, timeToLive: .zero)
                present[key] = false
            case 32..<55:
                let live = present[key] == true
                if live { want.hits += 1 } else { want.misses += 1 }
                if present[key] == false { removed(.expired) }
                #expect((Bool.random(using: &random) ? cache[key] : cache.value(forKey: key)) != nil || !live)
                if !live { present[key] = nil }
            case 55..<65:  // a loader, failing on odd rounds
                let fails = round % 2 == 1
                if present[key] == true {
                    want.hits += 1
                } else {
                    if present[key] == false { removed(.expired) }
                    want.misses += 1
                    if fails {
                        want.loadFailures += 1
                    } else {
                        want.loads += 1
                        want.insertions += 1
                    }
                    present[key] = fails ? nil : true
                }
                _ = try? cache.value(forKey: key) {
                    if fails { throw LoadFailed() }
                    return round
                }
            case 65..<75:
                if present[key] != nil { removed(.explicit) }
                present[key] = nil
                cache.removeValue(forKey: key)
            case 75..<85:  // counts nothing, but drops an expired entry
                if present[key] == false {
                    removed(.expired)
                    present[key] = nil
                }
                #expect(cache.containsValue(forKey: key) == (present[key] == true))
            case 85..<90:
                removed(.expired, present.values.filter { !$0 }.count)
                present = present.filter { $0.value }
                let target = Int.random(in: 0..<8, using: &random)
                let before = present.count
                if before > target { removed(.evicted, before - target) }
                cache.trim(toCount: target)
                let left = Set(cache.keys)  // the policy's victims are gone
                present = present.filter { left.contains($0.key) }
                #expect(left.count == min(target, before) && present.count == left.count)
            case 90..<95:
                removed(.explicit, present.count)
                present = [:]
                cache.removeAllValues()
            default:
                removed(.memoryPressure, present.count)
                present = [:]
                cache.handleMemoryWarning()
            }
            let got = cache.statistics
            var comparable = got
            comparable.totalLoadTime = want.totalLoadTime
            #expect(comparable == want, "round \(round)")
            if comparable != want { return }
        }
        #expect(want.hits > 100 && want.removals[.expired, default: 0] > 50)
    }

    @Test func expiredEntriesCountAsMissesAndSubscriptReadsCount() {
        let cache = MemoryCache<String, Int>()
        cache["a"] = 1
        cache.setValue(2, forKey: "b", timeToLive: .zero)
        _ = cache["a"]
        _ = cache.value(forKey: "b")
        _ = cache.containsValue(forKey: "a")
        _ = cache.timeToLive(forKey: "a")
        let s = cache.statistics
        #expect(s.hits == 1 && s.misses == 1)
        #expect(s.insertions == 2)
        #expect(s.removals[.expired] == 1)
        #expect(s.hitRatio == 0.5)
    }

    @Test func resetSetsEveryCounterToZero() throws {
        let cache = MemoryCache<String, Int>()
        cache["a"] = 1
        _ = cache["a"]
        _ = cache["b"]
        _ = try cache.value(forKey: "c") {
            usleep(1000)
            return 3
        }
        #expect(cache.statistics.loads == 1)
        #expect(cache.statistics.totalLoadTime > .zero)
        cache.resetStatistics()
        #expect(cache.statistics == CacheStatistics())
        #expect(cache.statistics.hitRatio == 0)
    }
}
