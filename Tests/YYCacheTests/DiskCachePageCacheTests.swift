import Foundation
import Testing

@testable import YYCache

/// `DiskCache.pageCacheSize`: SQLite's default until set, rounded up to whole KiB, shared by every
/// object on the path, the default again for 0 or less, 0 after `close()`. Each test in its own
/// temporary folder.
@Suite struct DiskCachePageCacheTests {
    @Test func pageCacheSizeDefaultsToSQLitesAndRoundsUpToKiB() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        #expect(disk.pageCacheSize == 2_000 * 1_024)
        disk.pageCacheSize = 64 << 20
        #expect(disk.pageCacheSize == 64 << 20)
        let other = try DiskCache(path: folder.path)
        #expect(other.pageCacheSize == 64 << 20)
        disk.pageCacheSize = 1_000
        #expect(disk.pageCacheSize == 1_024)
        try disk.setData(Data("value".utf8), forKey: "key")
        #expect(try disk.data(forKey: "key") == Data("value".utf8))
        disk.pageCacheSize = 0
        #expect(disk.pageCacheSize == 2_000 * 1_024)
        disk.close()
        #expect(disk.pageCacheSize == 0)
    }
}
