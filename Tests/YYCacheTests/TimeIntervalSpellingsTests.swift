import Testing
import YYCache

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// YYCache's TimeInterval spellings, deprecated beside the Duration forms, reached through a
// protocol so that the tests of what they still do build without deprecation warnings.

/// The memory cache's YYCache spellings.
protocol MemoryCacheSeconds {
    var ageLimit: TimeInterval { get set }
    var autoTrimInterval: TimeInterval { get set }
    func trim(toAge age: TimeInterval)
}

/// The disk cache's YYCache spellings.
protocol DiskCacheSeconds {
    var ageLimit: TimeInterval { get set }
    var autoTrimInterval: TimeInterval { get set }
    func trim(toAge age: TimeInterval) throws
}

extension MemoryCache: MemoryCacheSeconds {}
extension DiskCache: DiskCacheSeconds {}

/// A cache seen through its YYCache spellings.
func seconds<C: MemoryCacheSeconds>(_ cache: C) -> some MemoryCacheSeconds { cache }
func seconds<C: DiskCacheSeconds>(_ cache: C) -> some DiskCacheSeconds { cache }

@Suite struct TimeIntervalSpellingsTests {
    @Test func memorySecondsAndDurationsAreOneSetting() {
        let cache = MemoryCache<String, Int>()
        var legacy = seconds(cache)
        #expect(legacy.ageLimit == .greatestFiniteMagnitude)
        #expect(legacy.autoTrimInterval == 5)
        legacy.ageLimit = 30
        legacy.autoTrimInterval = 0.5
        #expect(cache.maximumAge == .seconds(30))
        #expect(cache.autoTrimPeriod == .seconds(0.5))
        cache.maximumAge = nil
        cache.autoTrimPeriod = nil
        #expect(legacy.ageLimit == .greatestFiniteMagnitude)
        #expect(legacy.autoTrimInterval == 0)
        legacy.ageLimit = .infinity
        #expect(cache.maximumAge == nil)
        legacy.autoTrimInterval = -1
        #expect(cache.autoTrimPeriod == nil)
    }

    @Test func memoryTrimToAgeInSecondsStillTrims() {
        let cache = MemoryCache<String, Int>()
        cache["k"] = 1
        seconds(cache).trim(toAge: .greatestFiniteMagnitude)
        #expect(cache["k"] == 1)
        seconds(cache).trim(toAge: 0)
        #expect(cache["k"] == nil)
    }

    @Test func diskSecondsAndDurationsAreOneSetting() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        var legacy = seconds(disk)
        #expect(legacy.ageLimit == .greatestFiniteMagnitude)
        #expect(legacy.autoTrimInterval == 60)
        legacy.ageLimit = 30
        legacy.autoTrimInterval = 50
        #expect(disk.maximumAge == .seconds(30))
        #expect(disk.autoTrimPeriod == .seconds(50))
        disk.maximumAge = nil
        disk.autoTrimPeriod = nil
        #expect(legacy.ageLimit == .greatestFiniteMagnitude)
        #expect(legacy.autoTrimInterval == 0)
        try disk.setData(Data("v".utf8), forKey: "k")
        try seconds(disk).trim(toAge: .greatestFiniteMagnitude)
        #expect(try disk.totalCount() == 1)
        try seconds(disk).trim(toAge: 0)
        #expect(try disk.totalCount() == 0)
    }
}
