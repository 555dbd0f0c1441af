import CYYCache
import Foundation
import Testing

@testable import YYCache

@Suite struct CacheErrorTests {
    @Test func everyCodeEqualsItsCConstant() {
        let pairs: [(CacheError.Code, yyc_status)] = [
            (.invalidArgument, YYC_EINVAL),
            (.outOfMemory, YYC_ENOMEM),
            (.io, YYC_EIO),
            (.sqlite, YYC_ESQLITE),
            (.busy, YYC_EBUSY),
            (.closed, YYC_ECLOSED),
            (.corrupt, YYC_ECORRUPT),
            (.tooLarge, YYC_ETOOBIG),
            (.noSpace, YYC_ENOSPC),
            (.permissionDenied, YYC_EPERM),
            (.recursiveLoad, YYC_ERECURSIVE),
        ]
        for (code, status) in pairs {
            #expect(code.rawValue == Int32(status.rawValue), "\(code)")
            #expect(String(cString: yyc_status_name(code.rawValue)) != "UNKNOWN", "\(code)")
        }
    }

    @Test func swiftOnlyCodesAreOutsideTheCRange() {
        for code in [CacheError.Code.encoding, .decoding] {
            #expect(String(cString: yyc_status_name(code.rawValue)) == "UNKNOWN")
        }
        #expect(CacheError.Code.encoding != CacheError.Code.decoding)
    }

    @Test func codesMatchInCatchClauses() {
        func fail() throws { throw CacheError(code: .closed, message: "closed") }
        var matched = false
        do {
            try fail()
        } catch CacheError.Code.io {
            Issue.record("matched the wrong code")
        } catch CacheError.Code.closed {
            matched = true
        } catch {
            Issue.record("did not match")
        }
        #expect(matched)
    }

    @Test func descriptionNamesTheCodeAndSQLiteCode() {
        let error = CacheError(code: .sqlite, sqliteCode: 11, message: "database disk image is malformed")
        #expect(error.description.contains("sqlite"))
        #expect(error.description.contains("11"))
        #expect(CacheError.Code(rawValue: 77).description == "Code(77)")
    }

    @Test func lastErrorWithoutRecordedDetailsUsesTheGenericMessage() {
        // Nothing recorded ENOSPC on this thread, so the details do not belong to it.
        let error = CacheError.lastError(status: Int32(YYC_ENOSPC.rawValue))
        #expect(error.code == .noSpace)
        #expect(error.sqliteCode == nil)
        #expect(!error.message.isEmpty)
    }

    @Test func localizedDescriptionIsASentence() throws {
        let error: any Error = CacheError(code: .corrupt, message: "the manifest is malformed")
        #expect(error.localizedDescription == "The manifest is malformed.")
        let sqlite: any Error = CacheError(
            code: .sqlite, sqliteCode: 11, message: "step: database disk image is malformed")
        #expect(sqlite.localizedDescription == "Step: database disk image is malformed (SQLite result code 11).")
        let empty: any Error = CacheError(code: .closed, message: "")
        #expect(empty.localizedDescription == "The cache is closed.")
        // The debug form keeps the code's name.
        #expect("\(error)" == "CacheError(corrupt: the manifest is malformed)")
        // A real one, thrown by the disk cache.
        let folder = TemporaryFolder()
        let disk = try DiskCache(path: folder.path)
        do {
            try disk.setData(Data("v".utf8), forKey: "")
            Issue.record("no error")
        } catch {
            #expect(error.localizedDescription.first?.isUppercase == true)
            #expect(error.localizedDescription.hasSuffix("."))
            #expect(!error.localizedDescription.contains("CacheError("))
        }
    }
}
