import CYYCache
import Testing
import YYCache

/// The Swift constant and the C library linked into this program name the same version (the
/// other copies - CMake, yycache.pc, the CLI, CHANGELOG.md - are compared by `make version-check`).
@Suite struct PackageVersionTests {
    @Test func swiftVersionIsTheLinkedCLibrarysVersion() {
        #expect(PackageVersion.string == String(cString: yyc_version()))
    }

    @Test func versionIsMajorMinorPatch() {
        let parts = PackageVersion.string.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && Int($0) != nil })
    }
}
