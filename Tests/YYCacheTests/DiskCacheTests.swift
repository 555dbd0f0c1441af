import Foundation
import Synchronization
import Testing

@testable import YYCache

@Suite struct DiskCacheTests {
    private func bytes(_ count: Int, _ byte: UInt8 = 0x5A) -> Data { Data(repeating: byte, count: count) }

    @Test func defaultsMatchYYDiskCache() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        #expect(disk.path == folder.path)
        #expect(disk.inlineThreshold == 20480)
        #expect(disk.name == nil)
        #expect(disk.countLimit == .max)
        #expect(disk.costLimit == .max)
        #expect(disk.maximumAge == nil)
        #expect(disk.freeDiskSpaceLimit == 0)
        #expect(disk.autoTrimPeriod == .seconds(60))
        #expect(!disk.errorLogsEnabled)
        #expect(disk.coder is JSONCacheCoder)
        #expect(disk.fileName == nil)
    }

    @Test func settingsReadBack() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        disk.name = "images"
        disk.countLimit = 10
        disk.costLimit = 20
        disk.maximumAge = .seconds(30)
        disk.freeDiskSpaceLimit = 40
        disk.autoTrimPeriod = .seconds(50)
        disk.errorLogsEnabled = true
        #expect(disk.name == "images")
        #expect(disk.countLimit == 10)
        #expect(disk.costLimit == 20)
        #expect(disk.maximumAge == .seconds(30))
        #expect(disk.freeDiskSpaceLimit == 40)
        #expect(disk.autoTrimPeriod == .seconds(50))
        #expect(disk.errorLogsEnabled)
        #expect(disk.description.contains("images"))
        disk.name = nil
        #expect(disk.name == nil)
        disk.countLimit = -1
        #expect(disk.countLimit == 0)
    }

    @Test func emptyPathThrowsInvalidArgument() {
        let error = #expect(throws: CacheError.self) { try DiskCache(path: "") }
        #expect(error?.code == .invalidArgument)
    }

    @Test func openingAFileAsACacheFolderThrowsWithDetails() throws {
        let folder = TemporaryFolder()
        let file = folder.appending("plain-file")
        _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        for path in [file, file + "/below"] {
            let error = #expect(throws: CacheError.self) { try DiskCache(path: path) }
            #expect(error.map { !$0.message.isEmpty } == true)
            #expect(error.map { $0.code.rawValue > 1 && $0.code.rawValue < 1000 } == true)  // a C error
            let kvError = #expect(throws: CacheError.self) { try KVStorage(path: path, type: .mixed) }
            #expect(kvError?.code == error?.code)
        }
    }

    // 14/15 and 512/513: around Data's inline storage and the read's copy limit
    // (CStrings.copiedDataMaximum: copied below it, wrapped above).
    @Test(arguments: [0, 10, 14, 15, 512, 513, 20480, 20481, 100_000])
    func dataRoundTripsInlineAndInFiles(size: Int) throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        let value = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try disk.setData(value, forKey: "k")
        #expect(try disk.data(forKey: "k") == value)
        #expect(disk.containsValue(forKey: "k"))
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.appending("data"))
        #expect(files.count == (size > 20480 ? 1 : 0), "threshold is exclusive: \(size) bytes")
    }

    @Test func thresholdZeroStoresEverythingInFilesAndIntMaxNothing() throws {
        let files = TemporaryFolder()
        let allFiles = try DiskCache(path: files.path, inlineThreshold: 0)
        #expect(allFiles.inlineThreshold == 0)
        try allFiles.setData(bytes(5), forKey: "k")
        #expect(try FileManager.default.contentsOfDirectory(atPath: files.appending("data")).count == 1)
        #expect(try allFiles.data(forKey: "k") == bytes(5))

        let inline = TemporaryFolder()
        let allInline = try DiskCache(path: inline.path, inlineThreshold: .max)
        #expect(allInline.inlineThreshold == .max)
        try allInline.setData(bytes(100_000), forKey: "k")
        #expect(try FileManager.default.contentsOfDirectory(atPath: inline.appending("data")).isEmpty)
        #expect(try allInline.data(forKey: "k") == bytes(100_000))
    }

    @Test func emptyDataIsStoredNotAMiss() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try disk.setData(bytes(3), forKey: "k")
        try disk.setData(Data(), forKey: "k")
        #expect(try disk.data(forKey: "k") == Data())
        #expect(disk.containsValue(forKey: "k"))
    }

    @Test func settingNilDataRemovesTheValue() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try disk.setData(bytes(3), forKey: "k")
        try disk.setData(nil, forKey: "k")
        #expect(try disk.data(forKey: "k") == nil)
        try disk.setValue(1, forKey: "v")
        try disk.setValue(Int?.none, forKey: "v")
        #expect(!disk.containsValue(forKey: "v"))
    }

    @Test func codableValuesRoundTripInlineAndInFiles() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path, inlineThreshold: 64)
        let small = Profile(name: "Ada", age: 36, scores: [1], flags: [:])
        let large = Profile(name: String(repeating: "x", count: 500), age: 1, scores: [2, 3], flags: ["a": true])
        try disk.setValue(small, forKey: "small")
        try disk.setValue(large, forKey: "large")
        try disk.setValue("fragment", forKey: "string")
        try disk.setValue(7, forKey: "int")
        try disk.setValue(2.5, forKey: "double")
        try disk.setValue(false, forKey: "bool")
        try disk.setValue(["a": [1, 2]], forKey: "dict")
        #expect(try disk.value(Profile.self, forKey: "small") == small)
        #expect(try disk.value(Profile.self, forKey: "large") == large)
        #expect(try disk.value(String.self, forKey: "string") == "fragment")
        #expect(try disk.value(Int.self, forKey: "int") == 7)
        #expect(try disk.value(Double.self, forKey: "double") == 2.5)
        #expect(try disk.value(Bool.self, forKey: "bool") == false)
        #expect(try disk.value([String: [Int]].self, forKey: "dict") == ["a": [1, 2]])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.appending("data")).count == 1)
    }

    @Test func propertyListCoderWorksPerObject() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        disk.coder = PropertyListCacheCoder()
        try disk.setValue("plist", forKey: "k")
        #expect(try disk.data(forKey: "k")?.starts(with: Array("bplist".utf8)) == true)
        #expect(try disk.value(String.self, forKey: "k") == "plist")
        let other = try DiskCache(path: folder.path)  // same core, own coder (JSON)
        #expect(other.coder is JSONCacheCoder)
        #expect(throws: CacheError.self) { try other.value(String.self, forKey: "k") }
    }

    @Test func dataValuesBypassTheCoder() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        let raw = Data([0xFF, 0x00, 0x7B])
        try disk.setValue(raw, forKey: "k")
        #expect(try disk.data(forKey: "k") == raw)
        #expect(try disk.value(Data.self, forKey: "k") == raw)
        try disk.setData(raw, forKey: "d")
        #expect(try disk.value(Data.self, forKey: "d") == raw)
    }

    @Test func decodingFailureThrowsDecodingNotAMiss() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try disk.setData(Data("not json".utf8), forKey: "k")
        let error = #expect(throws: CacheError.self) { try disk.value(Profile.self, forKey: "k") }
        #expect(error?.code == .decoding)
        try disk.setValue("text", forKey: "s")
        let mismatch = #expect(throws: CacheError.self) { try disk.value(Int.self, forKey: "s") }
        #expect(mismatch?.code == .decoding)
        #expect(try disk.value(Int.self, forKey: "missing") == nil)
    }

    @Test func encodingFailureThrowsEncodingAndKeepsTheOldValue() throws {
        struct Failing: Encodable {
            func encode(to encoder: any Encoder) throws {
                throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "no"))
            }
        }
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try disk.setValue(1, forKey: "k")
        let error = #expect(throws: CacheError.self) { try disk.setValue(Failing(), forKey: "k") }
        #expect(error?.code == .encoding)
        #expect(try disk.value(Int.self, forKey: "k") == 1)
    }

    @Test func extendedDataIsStoredWithTheValue() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try disk.setData(bytes(10), forKey: "inline", extendedData: Data([1, 2]))
        try disk.setValue(bytes(30_000), forKey: "file", extendedData: Data([3]))
        try disk.setData(bytes(1), forKey: "none")
        #expect(try disk.extendedData(forKey: "inline") == Data([1, 2]))
        #expect(try disk.extendedData(forKey: "file") == Data([3]))
        #expect(try disk.extendedData(forKey: "none") == nil)
        #expect(try disk.extendedData(forKey: "missing") == nil)
        try disk.setData(bytes(1), forKey: "inline")  // replaced without extended data
        #expect(try disk.extendedData(forKey: "inline") == nil)
    }

    @Test func missesReturnNil() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        #expect(try disk.data(forKey: "none") == nil)
        #expect(try disk.value(Int.self, forKey: "none") == nil)
        #expect(try disk.extendedData(forKey: "none") == nil)
        #expect(!disk.containsValue(forKey: "none"))
        try disk.removeValue(forKey: "none")
    }

    @Test func emptyKeyWritesThrowReadsMissRemovalsDoNothing() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        let error = #expect(throws: CacheError.self) { try disk.setData(bytes(1), forKey: "") }
        #expect(error?.code == .invalidArgument)
        let valueError = #expect(throws: CacheError.self) { try disk.setValue(1, forKey: "") }
        #expect(valueError?.code == .invalidArgument)
        #expect(try disk.data(forKey: "") == nil)
        #expect(try disk.value(Int.self, forKey: "") == nil)
        #expect(try disk.extendedData(forKey: "") == nil)
        #expect(!disk.containsValue(forKey: ""))
        try disk.removeValue(forKey: "")
        #expect(try disk.totalCount() == 0)
    }

    @Test func fileNameFunctionNamesLargeValues() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path, inlineThreshold: 10)
        let calls = Atomic<Int>(0)
        disk.fileName = { key in
            calls.add(1, ordering: .relaxed)
            return key == "md5" ? nil : (key == "empty" ? "" : "custom-\(key).bin")
        }
        try disk.setData(bytes(5), forKey: "small")  // inline: the function is not called
        let observedCalls = calls.load(ordering: .relaxed)
        #expect(observedCalls == 0)
        try disk.setData(bytes(50), forKey: "big")
        try disk.setData(bytes(50), forKey: "md5")
        try disk.setData(bytes(50), forKey: "empty")
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: folder.appending("data")))
        #expect(files.contains("custom-big.bin"))
        #expect(files.count == 3)
        #expect(files.filter { $0.count == 32 && $0.allSatisfy(\.isHexDigit) }.count == 2)
        #expect(try disk.data(forKey: "big") == bytes(50))
        #expect(try disk.data(forKey: "md5") == bytes(50))
    }

    @Test(arguments: ["a/b", "..", ".", String(repeating: "n", count: 300), "nul\0byte"])
    func invalidFileNamesThrowAndWriteNothing(name: String) throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path, inlineThreshold: 10)
        disk.fileName = { _ in name }
        let error = #expect(throws: CacheError.self) { try disk.setData(bytes(50), forKey: "k") }
        #expect(error?.code == .invalidArgument)
        #expect(try disk.totalCount() == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.appending("data")).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/b"))
    }

    @Test func aDeletedDataFileReadsAsNil() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path, inlineThreshold: 0)
        try disk.setData(bytes(10), forKey: "k")
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.appending("data")) {
            try FileManager.default.removeItem(atPath: folder.appending("data/\(file)"))
        }
        #expect(try disk.data(forKey: "k") == nil)
        #expect(!disk.containsValue(forKey: "k"))
    }

    @Test func totalsCountValuesAndBytes() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        for i in 0..<10 { try disk.setData(bytes(100), forKey: "k\(i)") }
        try disk.setData(bytes(30_000), forKey: "big")
        #expect(try disk.totalCount() == 11)
        #expect(try disk.totalCost() == 31_000)
        try disk.removeValue(forKey: "big")
        #expect(try disk.totalCost() == 1_000)
        try disk.removeAllValues()
        #expect(try disk.totalCount() == 0)
        #expect(try disk.totalCost() == 0)
    }

    @Test func trimsRemoveLeastRecentlyUsedValues() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        for i in 0..<10 { try disk.setData(bytes(100), forKey: "k\(i)") }
        try disk.trim(toCount: 8)
        #expect(try disk.totalCount() == 8)
        try disk.trim(toCost: 500)
        #expect(try disk.totalCost() <= 500)
        try disk.trim(toCount: .max)
        try disk.trim(toCost: .max)
        try disk.trim(toAge: .seconds(Int64.max))
        #expect(try disk.totalCount() == 5)
        try disk.trim(toAge: .seconds(3_600))  // everything was accessed just now
        #expect(try disk.totalCount() == 5)
        try disk.trim(toAge: .zero)
        #expect(try disk.totalCount() == 0)
        for i in 0..<3 { try disk.setData(bytes(1), forKey: "k\(i)") }
        try disk.trim(toCount: 0)
        #expect(try disk.totalCount() == 0)
        for i in 0..<3 { try disk.setData(bytes(1), forKey: "k\(i)") }
        try disk.trim(toCost: 0)
        #expect(try disk.totalCount() == 0)
    }

    @Test func limitsAreEnforcedByTheAutoTrimNotByWrites() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        disk.countLimit = 2
        for i in 0..<5 { try disk.setData(bytes(1), forKey: "k\(i)") }
        #expect(try disk.totalCount() == 5)  // writes never trim (as YYDiskCache)
        disk.autoTrimPeriod = .milliseconds(50)
        #expect(eventually { (try? disk.totalCount()) == 2 })
    }

    @Test func readsRefreshTheAccessTimeSoTrimsKeepThem() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        try disk.setData(bytes(1), forKey: "read")
        try disk.setData(bytes(1), forKey: "unread")
        let start = time(nil)
        #expect(eventually(timeout: .seconds(3)) { time(nil) > start })
        #expect(disk.containsValue(forKey: "unread"))  // no access-time update
        _ = try disk.extendedData(forKey: "unread")  // no access-time update
        _ = try disk.data(forKey: "read")
        try disk.trim(toCount: 1)
        #expect(disk.containsValue(forKey: "read"))
        #expect(!disk.containsValue(forKey: "unread"))
    }

    @Test func removeAllLeavesAnEmptyUsableCache() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path, inlineThreshold: 0)
        for i in 0..<10 { try disk.setData(bytes(10), forKey: "k\(i)") }
        try disk.removeAllValues()
        #expect(try disk.totalCount() == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.appending("data")).isEmpty)
        try disk.setData(bytes(1), forKey: "again")
        #expect(try disk.data(forKey: "again") == bytes(1))
    }

    // MARK: Sharing and closing

    @Test func twoObjectsOnOnePathShareTheCore() throws {
        let folder = TemporaryFolder()
        let first = try DiskCache(path: folder.path)
        let second = try DiskCache(path: folder.path + "/", inlineThreshold: 5)
        #expect(second.path == folder.path + "/")  // as given
        #expect(second.inlineThreshold == 20480)  // the open core's threshold wins
        try first.setData(bytes(3), forKey: "k")
        #expect(try second.data(forKey: "k") == bytes(3))
        first.countLimit = 7
        first.name = "shared"
        #expect(second.countLimit == 7)
        #expect(second.name == "shared")
    }

    @Test func closeMakesThisObjectThrowClosedWhileOthersWork() throws {
        let folder = TemporaryFolder()
        let first = try DiskCache(path: folder.path)
        let second = try DiskCache(path: folder.path)
        try first.setData(bytes(3), forKey: "k")
        first.close()
        first.close()  // idempotent
        #expect(!first.containsValue(forKey: "k"))
        for call in [
            { _ = try first.data(forKey: "k") },
            { try first.setData(bytes(1), forKey: "k") },
            { try first.setValue(1, forKey: "k") },
            { _ = try first.value(Int.self, forKey: "k") },
            { _ = try first.extendedData(forKey: "k") },
            { try first.removeValue(forKey: "k") },
            { try first.removeAllValues() },
            { _ = try first.totalCount() },
            { _ = try first.totalCost() },
            { try first.trim(toCount: 1) },
            { try first.trim(toCost: 1) },
            { try first.trim(toAge: .seconds(1)) },
        ] as [() throws -> Void] {
            let error = #expect(throws: CacheError.self) { try call() }
            #expect(error?.code == .closed)
        }
        #expect(first.countLimit == .max)  // settings read as defaults after close
        #expect(try second.data(forKey: "k") == bytes(3))
        try second.setData(bytes(4), forKey: "k2")
        #expect(try second.totalCount() == 2)
    }

    @Test func aNewObjectWorksAfterTheLastOneClosed() throws {
        let folder = TemporaryFolder()
        let first = try DiskCache(path: folder.path)
        try first.setData(bytes(3), forKey: "k")
        first.close()
        let reopened = try DiskCache(path: folder.path)
        #expect(try reopened.data(forKey: "k") == bytes(3))
    }

    @Test func closedErrorsMatchInCatchClauses() throws {
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        disk.close()
        do {
            _ = try disk.data(forKey: "k")
            Issue.record("no error")
        } catch CacheError.Code.closed {
        } catch {
            Issue.record("wrong error \(error)")
        }
    }
}
