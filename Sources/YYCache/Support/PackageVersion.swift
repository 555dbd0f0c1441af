// Not named YYCacheVersion: the symbol-graph tools drop a type named <Module>Version (the name
// of the version symbols of Apple framework headers), so DocC would not show it.

/// The version of this package.
///
/// One number names a release of the whole package: this constant, the C library's
/// `yyc_version()`, `yycache --version`, the CMake package (`find_package(YYCache 0.2)`),
/// `yycache.pc` and `CHANGELOG.md` all say the same (`make version-check` fails otherwise).
///
/// ```swift
/// print("YYCache \(PackageVersion.string)")
/// ```
public enum PackageVersion {
    /// The version as `"MAJOR.MINOR.PATCH"` ([Semantic Versioning](https://semver.org): before
    /// 1.0, a new minor version may change the API).
    public static let string = "0.2.0"
}
