import CxxStdlib
import Testing

@testable import YYCache

/// Issue 12 item 6: C++ types imported with C++ interoperability are not bitwise takable
/// (`std.string` keeps a pointer into itself for short strings), so a `MemoryCache` must not
/// move them with `memcpy` nor copy them under its lock: it boxes them.
@Suite struct CxxValueTests {
    @Test func cxxStringsAreBoxedNotStoredInline() {
        #expect(!_isBitwiseTakable(std.string.self))
        #expect(MemoryLayout<std.string>.size <= 64)  // small enough to be inline otherwise
        #expect(!MemoryCache<Int, std.string>.storesValuesInline)
        #expect(!MemoryCache<Int, std.string>.storesObjectsDirectly)
    }

    @Test func cxxStringValuesRoundTripThroughReplaceEvictAndRemove() {
        let cache = MemoryCache<Int, std.string>()
        func text(_ i: Int) -> String { i % 2 == 0 ? "s\(i)" : String(repeating: "long-\(i)-", count: 8) }
        for i in 0..<200 { cache[i] = std.string(text(i)) }  // short strings use the SSO buffer
        for i in 0..<200 { #expect(cache[i].map { String($0) } == text(i)) }
        for i in 0..<50 { cache[i] = std.string(text(i + 1)) }  // replaced
        for i in 0..<50 { #expect(cache[i].map { String($0) } == text(i + 1)) }
        let held = cache[199]
        cache.trim(toCount: 100)
        cache.countLimit = 100
        cache[1_000] = std.string("evicts one")
        #expect(cache.totalCount == 100)
        #expect(cache[1_000].map { String($0) } == "evicts one")
        cache.trim(toCount: 10)
        cache.removeValue(forKey: 1_000)
        #expect(cache[1_000] == nil)
        #expect(cache.totalCount == 9)
        cache.removeAllValues()
        #expect(held.map { String($0) } == text(199))  // a copy outlives its entry
    }
}
