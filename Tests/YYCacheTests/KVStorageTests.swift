import Foundation
import Testing

@testable import YYCache

@Suite struct KVStorageTests {
    private func data(_ count: Int, _ byte: UInt8 = 0x61) -> Data { Data(repeating: byte, count: count) }

    @Test func openKeepsPathAndType() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        #expect(storage.path == folder.path)
        #expect(storage.type == .mixed)
        #expect(!storage.errorLogsEnabled)
        storage.errorLogsEnabled = true
        #expect(storage.errorLogsEnabled)
        #expect(FileManager.default.fileExists(atPath: folder.appending("manifest.sqlite")))
        #expect(FileManager.default.fileExists(atPath: folder.appending("data")))
    }

    @Test func emptyPathThrowsInvalidArgument() {
        #expect(throws: CacheError.self) { try KVStorage(path: "", type: .sqlite) }
        do {
            _ = try KVStorage(path: "", type: .sqlite)
        } catch let error as CacheError {
            #expect(error.code == .invalidArgument)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func inlineItemRoundTripsWithExtendedData() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .sqlite)
        // The storage stamps rows with time(NULL), which reads the kernel's coarse clock: a
        // finer clock (Date) can already be in the next second.
        let before = Int(time(nil))
        try storage.saveItem(key: "k", value: Data("value".utf8), filename: "ignored", extendedData: Data([9]))
        let item = try #require(try storage.item(forKey: "k"))
        #expect(item.key == "k")
        #expect(item.value == Data("value".utf8))
        #expect(item.filename == nil)  // .sqlite ignores file names
        #expect(item.size == 5)
        #expect(item.extendedData == Data([9]))
        #expect(item.modificationTime >= before)
        #expect(item.lastAccessTime >= before)
        #expect(try storage.itemValue(forKey: "k") == Data("value".utf8))
    }

    @Test func fileItemRoundTripsThroughItsDataFile() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        try storage.saveItem(key: "big", value: data(50_000), filename: "big.bin")
        #expect(FileManager.default.fileExists(atPath: folder.appending("data/big.bin")))
        let item = try #require(try storage.item(forKey: "big"))
        #expect(item.filename == "big.bin")
        #expect(item.value == data(50_000))
        #expect(item.size == 50_000)
    }

    @Test func saveItemUsesTheItemsFieldsAndRequiresAValue() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        try storage.saveItem(
            KVStorageItem(
                key: "a", value: Data([1, 2]), filename: "a.bin", size: 999,
                modificationTime: 1, lastAccessTime: 1, extendedData: Data([3])))
        let item = try #require(try storage.itemInfo(forKey: "a"))
        #expect(item.size == 2)  // from the value, not the item
        #expect(item.modificationTime > 1)
        #expect(item.filename == "a.bin")
        #expect(item.extendedData == Data([3]))
        #expect(item.value == nil)
        #expect(throws: CacheError.self) { try storage.saveItem(KVStorageItem(key: "b")) }
    }

    @Test func fileTypeRequiresAFileName() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .file)
        let error = #expect(throws: CacheError.self) { try storage.saveItem(key: "k", value: data(3)) }
        #expect(error?.code == .invalidArgument)
        try storage.saveItem(key: "k", value: data(3), filename: "k")
        #expect(try storage.itemValue(forKey: "k") == data(3))
    }

    @Test func emptyValueIsStoredAndReadBackEmpty() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        try storage.saveItem(key: "inline", value: Data())
        try storage.saveItem(key: "file", value: Data(), filename: "empty.bin")
        #expect(try storage.itemValue(forKey: "inline") == Data())
        #expect(try storage.itemValue(forKey: "file") == Data())
        #expect(try storage.item(forKey: "inline")?.value == Data())
        #expect(try storage.itemsCount() == 2)
    }

    @Test func missesReturnNil() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        #expect(try storage.item(forKey: "none") == nil)
        #expect(try storage.itemInfo(forKey: "none") == nil)
        #expect(try storage.itemValue(forKey: "none") == nil)
        #expect(try !storage.itemExists(forKey: "none"))
        #expect(try storage.items(forKeys: ["none"]).isEmpty)
    }

    @Test func emptyKeyWritesThrowReadsMissRemovalsDoNothing() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        let error = #expect(throws: CacheError.self) { try storage.saveItem(key: "", value: data(1)) }
        #expect(error?.code == .invalidArgument)
        #expect(try storage.item(forKey: "") == nil)
        #expect(try storage.itemValue(forKey: "") == nil)
        #expect(try !storage.itemExists(forKey: ""))
        try storage.removeItem(forKey: "")
        try storage.removeItems(forKeys: [""])
        #expect(try storage.itemsCount() == 0)
    }

    @Test func keysWithNULAreRejectedNotTruncated() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .sqlite)
        try storage.saveItem(key: "a", value: data(1))
        #expect(throws: CacheError.self) { try storage.saveItem(key: "a\0b", value: data(2)) }
        #expect(try storage.itemValue(forKey: "a\0b") == nil)
        #expect(try storage.itemValue(forKey: "a") == data(1))
    }

    @Test(arguments: ["a/b", "..", ".", String(repeating: "n", count: 300), "x\0y"])
    func invalidFileNamesAreRejectedAndNothingIsWritten(name: String) throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        let error = #expect(throws: CacheError.self) {
            try storage.saveItem(key: "k", value: data(10), filename: name)
        }
        #expect(error?.code == .invalidArgument)
        #expect(try storage.itemsCount() == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.appending("data")).isEmpty)
    }

    @Test func movingAValueInlineDeletesItsOldFile() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        try storage.saveItem(key: "k", value: data(100), filename: "k.bin")
        try storage.saveItem(key: "k", value: data(5))
        #expect(!FileManager.default.fileExists(atPath: folder.appending("data/k.bin")))
        #expect(try storage.itemValue(forKey: "k") == data(5))
    }

    @Test func aMissingDataFileReadsAsNilAndRemovesTheRow() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        try storage.saveItem(key: "k", value: data(100), filename: "k.bin")
        try FileManager.default.removeItem(atPath: folder.appending("data/k.bin"))
        #expect(try storage.item(forKey: "k") == nil)
        #expect(try !storage.itemExists(forKey: "k"))
    }

    @Test func batchCallsReturnWhatExists() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        for i in 0..<5 { try storage.saveItem(key: "k\(i)", value: data(i + 1), extendedData: Data([UInt8(i)])) }
        let keys = ["k0", "k2", "k4", "missing", ""]
        let items = try storage.items(forKeys: keys)
        #expect(Set(items.map(\.key)) == ["k0", "k2", "k4"])
        #expect(items.allSatisfy { $0.value == data($0.size) })
        let infos = try storage.itemInfos(forKeys: keys)
        #expect(infos.count == 3)
        #expect(infos.allSatisfy { $0.value == nil })
        let values = try storage.itemValues(forKeys: keys)
        #expect(values == ["k0": data(1), "k2": data(3), "k4": data(5)])
        #expect(try storage.items(forKeys: []).isEmpty)
        #expect(try storage.itemValues(forKeys: []).isEmpty)
        try storage.removeItems(forKeys: ["k0", "k1", "missing"])
        #expect(try storage.itemsCount() == 3)
        try storage.removeItems(forKeys: [])
    }

    @Test func batchesLargerThanSQLitesVariableLimitWork() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .sqlite)
        let keys = (0..<40_000).map { "key\($0)" }
        for key in keys.prefix(3_000) { try storage.saveItem(key: key, value: Data(key.utf8)) }
        #expect(try storage.itemInfos(forKeys: keys).count == 3_000)
        try storage.removeItems(forKeys: keys)
        #expect(try storage.itemsCount() == 0)
    }

    @Test func itemInfoDoesNotTouchTheAccessTimeButItemDoes() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .sqlite)
        try storage.saveItem(key: "old", value: data(1))
        try storage.saveItem(key: "new", value: data(1))
        // Access times are time(NULL) seconds (a coarse clock): wait for it to tick.
        let start = try #require(try storage.itemInfo(forKey: "old")).lastAccessTime
        #expect(eventually(timeout: .seconds(3)) { time(nil) > start })
        _ = try storage.itemInfo(forKey: "old")
        _ = try storage.itemExists(forKey: "old")
        #expect(try storage.itemInfo(forKey: "old")?.lastAccessTime == start)
        _ = try storage.item(forKey: "old")
        #expect(try #require(try storage.itemInfo(forKey: "old")).lastAccessTime > start)
        // "new" is now the least recently accessed: it goes first.
        try storage.removeItemsToFit(count: 1)
        #expect(try storage.itemExists(forKey: "old"))
        #expect(try !storage.itemExists(forKey: "new"))
    }

    @Test func removalsBySizeTimeAndFit() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .sqlite)
        for i in 1...10 { try storage.saveItem(key: "k\(i)", value: data(i * 10)) }
        #expect(try storage.itemsSize() == 550)
        try storage.removeItems(largerThan: 80)  // removes 90 and 100
        #expect(try storage.itemsCount() == 8)
        try storage.removeItems(largerThan: .max)
        #expect(try storage.itemsCount() == 8)
        try storage.removeItems(earlierThan: 0)
        #expect(try storage.itemsCount() == 8)
        try storage.removeItemsToFit(size: 200)
        #expect(try storage.itemsSize() <= 200)
        try storage.removeItemsToFit(count: 2)
        #expect(try storage.itemsCount() == 2)
        try storage.removeItemsToFit(count: .max)
        try storage.removeItemsToFit(size: .max)
        #expect(try storage.itemsCount() == 2)
        try storage.removeItems(earlierThan: .max)
        #expect(try storage.itemsCount() == 0)
    }

    @Test func removeAllLeavesAnEmptyStorage() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        for i in 0..<20 { try storage.saveItem(key: "k\(i)", value: data(100), filename: "f\(i)") }
        try storage.removeAllItems()
        #expect(try storage.itemsCount() == 0)
        #expect(try storage.itemsSize() == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.appending("data")).isEmpty)
        try storage.saveItem(key: "after", value: data(1))
        #expect(try storage.itemValue(forKey: "after") == data(1))
    }

    @Test func removeAllWithProgressCountsUpToTheTotal() throws {
        let folder = TemporaryFolder()
        let storage = try KVStorage(path: folder.path, type: .mixed)
        for i in 0..<100 { try storage.saveItem(key: "k\(i)", value: data(10), filename: i % 2 == 0 ? "f\(i)" : nil) }
        var reports: [(Int, Int)] = []
        try storage.removeAllItems { removed, total in reports.append((removed, total)) }
        #expect(!reports.isEmpty)
        #expect(reports.allSatisfy { $0.1 == 100 })
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.0 <= $1.0 })
        #expect(reports.last?.0 == 100)
        #expect(try storage.itemsCount() == 0)
    }
}
