import Foundation
import Testing

@testable import YYCache

/// Issue 7's table of hostile and odd inputs, Swift side (the C side is Tests/C/test_bad_input.c):
/// each row runs in a fresh folder and must end with its expected, clear outcome; rows that are
/// refused also check that nothing was written.
@Suite struct BadInputTests {
    enum Outcome: Equatable, Sendable, CustomStringConvertible {
        case ok
        case missing
        case threw(CacheError.Code)

        var description: String {
            switch self {
            case .ok: "ok"
            case .missing: "missing"
            case .threw(let code): "threw \(code)"
            }
        }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let expected: Outcome
        let run: @Sendable (_ folder: String) throws -> Outcome
        var testDescription: String { name }
    }

    /// A value above the 20480-byte inline threshold, so that it goes to a named file.
    static let large = Data(repeating: 0x42, count: 20481)

    /// Writes a large value through a cache whose `fileName` function returns `name`; a refused
    /// write must leave no entry and no data file behind.
    static func writeLarge(named name: String, in folder: String) throws -> Outcome {
        let disk = try DiskCache(path: folder)
        disk.fileName = { _ in name }
        do {
            try disk.setData(large, forKey: "k")
        } catch let error as CacheError {
            let files = try FileManager.default.contentsOfDirectory(atPath: folder + "/data")
            return try disk.totalCount() == 0 && files.isEmpty ? .threw(error.code) : .ok
        }
        return try disk.data(forKey: "k") == large ? .ok : .missing
    }

    static let rows: [Row] = [
        // Memory cache: any key, odd limits and costs.
        Row(name: "memory cache accepts the empty key", expected: .ok) { _ in
            let cache = MemoryCache<String, Int>()
            cache[""] = 1
            return cache[""] == 1 ? .ok : .missing
        },
        Row(name: "memory cache keeps a key with a NUL apart from its prefix", expected: .ok) { _ in
            let cache = MemoryCache<String, Int>()
            cache["a\0b"] = 1
            return cache["a"] == nil && cache["a\0b"] == 1 ? .ok : .missing
        },
        Row(name: "memory cache takes a 1 MiB key", expected: .ok) { _ in
            let cache = MemoryCache<String, Int>()
            let key = String(repeating: "k", count: 1 << 20)
            cache[key] = 7
            return cache[key] == 7 && cache.totalCount == 1 ? .ok : .missing
        },
        Row(name: "memory cache takes keys that are not UTF-8", expected: .ok) { _ in
            let cache = MemoryCache<Data, Int>()
            cache[Data([0xFF, 0xFE, 0x00])] = 1
            return cache[Data([0xFF, 0xFE, 0x00])] == 1 && cache[Data([0xFF, 0xFE])] == nil
                ? .ok : .missing
        },
        Row(name: "memory cache counts a negative cost as zero", expected: .ok) { _ in
            let cache = MemoryCache<String, Int>()
            cache.setValue(1, forKey: "k", cost: -5)
            return cache.totalCost == 0 && cache["k"] == 1 ? .ok : .missing
        },
        Row(name: "memory cache stores a negative count limit as zero", expected: .ok) { _ in
            let cache = MemoryCache<String, Int>()
            cache.countLimit = -1
            return cache.countLimit == 0 ? .ok : .missing
        },
        Row(name: "memory cache totals saturate instead of wrapping", expected: .ok) { _ in
            let cache = MemoryCache<String, Int>()
            cache.setValue(1, forKey: "a", cost: .max)
            cache.setValue(2, forKey: "b", cost: .max)
            return cache.totalCost == .max && cache.totalCount == 2 ? .ok : .missing
        },
        Row(name: "memory cache trim to a NaN age removes nothing", expected: .ok) { _ in
            let cache = MemoryCache<String, Int>()
            cache["k"] = 1
            var legacy = seconds(cache)  // (a Duration cannot be NaN)
            legacy.ageLimit = .nan
            legacy.trim(toAge: .nan)
            return cache["k"] == 1 ? .ok : .missing
        },
        Row(name: "memory cache trim to minus infinity removes everything", expected: .missing) { _ in
            let cache = MemoryCache<String, Int>()
            cache["k"] = 1
            seconds(cache).trim(toAge: -.infinity)
            return cache["k"] == nil ? .missing : .ok
        },
        // Disk cache: keys, values, file names, limits, state.
        Row(name: "disk write with the empty key is refused", expected: .threw(.invalidArgument)) {
            let disk = try DiskCache(path: $0)
            do { try disk.setData(Data("v".utf8), forKey: "") } catch let e as CacheError {
                return try disk.totalCount() == 0 ? .threw(e.code) : .ok
            }
            return .ok
        },
        Row(name: "disk read with the empty key is a miss", expected: .missing) {
            try DiskCache(path: $0).data(forKey: "") == nil ? .missing : .ok
        },
        Row(name: "disk removal of the empty key does nothing", expected: .ok) {
            let disk = try DiskCache(path: $0)
            try disk.setData(Data("v".utf8), forKey: "k")
            try disk.removeValue(forKey: "")
            return try disk.totalCount() == 1 ? .ok : .missing
        },
        Row(name: "disk key with a NUL byte is refused", expected: .threw(.invalidArgument)) {
            let disk = try DiskCache(path: $0)
            try disk.setData(Data("v".utf8), forKey: "a")
            do { try disk.setData(Data("w".utf8), forKey: "a\0b") } catch let e as CacheError {
                return try disk.data(forKey: "a") == Data("v".utf8) ? .threw(e.code) : .ok
            }
            return .ok
        },
        Row(name: "disk stores an empty value and reads it back empty", expected: .ok) {
            let disk = try DiskCache(path: $0)
            try disk.setData(Data(), forKey: "empty")
            return try disk.data(forKey: "empty") == Data() ? .ok : .missing
        },
        Row(name: "file name with a slash is refused", expected: .threw(.invalidArgument)) {
            try writeLarge(named: "a/b", in: $0)
        },
        Row(name: "file name .. is refused", expected: .threw(.invalidArgument)) {
            try writeLarge(named: "..", in: $0)
        },
        Row(name: "file name . is refused", expected: .threw(.invalidArgument)) {
            try writeLarge(named: ".", in: $0)
        },
        Row(name: "file name of 300 bytes is refused", expected: .threw(.invalidArgument)) {
            try writeLarge(named: String(repeating: "n", count: 300), in: $0)
        },
        Row(name: "file name with a NUL is refused", expected: .threw(.invalidArgument)) {
            try writeLarge(named: "a\0b", in: $0)
        },
        Row(name: "empty file name falls back to md5 of the key", expected: .ok) {
            let outcome = try writeLarge(named: "", in: $0)
            // md5("k") = 8ce4b16b22b58894aa86c421e8759df3
            let named = FileManager.default.fileExists(atPath: $0 + "/data/8ce4b16b22b58894aa86c421e8759df3")
            return named ? outcome : .missing
        },
        Row(name: "disk trim to a negative count removes everything", expected: .ok) {
            let disk = try DiskCache(path: $0)
            try disk.setData(Data("v".utf8), forKey: "k")
            try disk.trim(toCount: -1)
            return try disk.totalCount() == 0 ? .ok : .missing
        },
        Row(name: "disk trim to a NaN age removes nothing", expected: .ok) {
            let disk = try DiskCache(path: $0)
            try disk.setData(Data("v".utf8), forKey: "k")
            try seconds(disk).trim(toAge: .nan)
            return try disk.totalCount() == 1 ? .ok : .missing
        },
        Row(name: "disk Int.max limits mean no limit", expected: .ok) {
            let disk = try DiskCache(path: $0)
            disk.countLimit = .max
            disk.costLimit = .max
            try disk.setData(Data("v".utf8), forKey: "k")
            try disk.trim(toCount: .max)
            try disk.trim(toCost: .max)
            try disk.trim(toAge: .seconds(Int64.max))
            return try disk.totalCount() == 1 ? .ok : .missing
        },
        Row(name: "a value that does not decode throws decoding", expected: .threw(.decoding)) {
            let disk = try DiskCache(path: $0)
            try disk.setData(Data("not json".utf8), forKey: "k")
            _ = try disk.value([Int].self, forKey: "k")
            return .ok
        },
        Row(name: "a closed disk cache throws closed", expected: .threw(.closed)) {
            let disk = try DiskCache(path: $0)
            disk.close()
            try disk.setData(Data("v".utf8), forKey: "k")
            return .ok
        },
        Row(name: "a regular file as the cache folder is refused", expected: .threw(.io)) {
            let file = $0 + "/file"
            _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
            _ = try DiskCache(path: file)
            return .ok
        },
        // KV storage and the two-level cache.
        Row(name: "storage with an empty path is refused", expected: .threw(.invalidArgument)) { _ in
            _ = try KVStorage(path: "", type: .mixed)
            return .ok
        },
        Row(name: "storage path longer than PATH_MAX is refused", expected: .threw(.invalidArgument)) {
            _ = try KVStorage(path: $0 + "/" + String(repeating: "p/", count: 2100), type: .mixed)
            return .ok
        },
        Row(name: "file storage needs a file name", expected: .threw(.invalidArgument)) {
            let storage = try KVStorage(path: $0, type: .file)
            try storage.saveItem(key: "k", value: Data("v".utf8))
            return .ok
        },
        Row(name: "storage refuses an item without a value", expected: .threw(.invalidArgument)) {
            let storage = try KVStorage(path: $0, type: .mixed)
            try storage.saveItem(KVStorageItem(key: "k"))
            return .ok
        },
        Row(name: "storage refuses a file name with a slash", expected: .threw(.invalidArgument)) {
            let storage = try KVStorage(path: $0, type: .mixed)
            try storage.saveItem(key: "k", value: Data("v".utf8), filename: "x/y")
            return .ok
        },
        Row(name: "storage answers an empty key list with nothing", expected: .ok) {
            let storage = try KVStorage(path: $0, type: .mixed)
            try storage.removeItems(forKeys: [])
            return try storage.items(forKeys: []).isEmpty && storage.itemValues(forKeys: []).isEmpty
                ? .ok : .missing
        },
        Row(name: "a two-level cache with an empty name is refused", expected: .threw(.invalidArgument)) { _ in
            _ = try Cache<Int>(name: "")
            return .ok
        },
    ]

    @Test(arguments: rows)
    func badInputGetsItsExpectedOutcome(_ row: Row) throws {
        let folder = TemporaryFolder()
        let outcome: Outcome
        do {
            outcome = try row.run(folder.path)
        } catch let error as CacheError {
            outcome = .threw(error.code)
        }
        #expect(outcome == row.expected, "\(row.name)")
    }
}
