// swift-tools-version:6.0
// YYCache for Linux: a C core (CYYCache) with a Swift overlay (YYCache).
import PackageDescription

let package = Package(
    name: "YYCache",
    products: [
        .library(name: "YYCache", targets: ["YYCache"]),
        .library(name: "CYYCache", targets: ["CYYCache"]),
        // The cache-folder inspector (`swift run yycache stats PATH`).
        .executable(name: "yycache", targets: ["yycache-cli"]),
    ],
    targets: [
        // The C core. Its public headers are the top-level include/ (module map included);
        // CMakeLists.txt builds the same sources for C consumers.
        .target(
            name: "CYYCache",
            path: ".",
            sources: ["Sources/CYYCache"],
            publicHeadersPath: "include",
            cSettings: [
                // Private headers are included by subsystem: "kv/kv_private.h".
                .headerSearchPath("Sources/CYYCache"),
                .define("_GNU_SOURCE"),
                .define("YYC_BUILDING"),
                // Release builds drop the core's debug-only checks (asserts, error-checking mutex).
                .define("NDEBUG", .when(configuration: .release)),
            ],
            linkerSettings: [
                .linkedLibrary("sqlite3"),
                .linkedLibrary("md"),
                .linkedLibrary("bsd"),
                // The remote tier (Sources/CYYCache/remote): hiredis 0.14 or 1.x.
                .linkedLibrary("hiredis"),
                .linkedLibrary("pthread"),
                .linkedLibrary("m"),
            ]
        ),
        // Imports FoundationEssentials (`#if canImport(FoundationEssentials)`, else Foundation on
        // Apple platforms), Dispatch and Synchronization, never full Foundation on Linux: full
        // Foundation links libFoundation.so, libFoundationInternationalization.so and the ~40 MB
        // ICU data (lib_FoundationICU.so) into every app. Essentials has all the library uses:
        // Data, Date, UUID, ProcessInfo, LocalizedError, JSON and property-list coders. The two
        // things it lacks are replaced: NSLock by a pthread mutex (Protected.swift; not Mutex,
        // which ThreadSanitizer cannot see) and Thread.isMainThread by gettid() == getpid()
        // (MainQueue.swift). `make foundation-check` fails if yycache-size-probe links full
        // Foundation. Full Foundation stays in the tests and in yycache-bench (its reference
        // point is a Dictionary behind an NSLock; it formats with String(format:)).
        .target(
            name: "YYCache",
            dependencies: ["CYYCache"],
            path: "Sources/YYCache"
        ),
        // The Swift side of `make bench` (Benchmarks/run builds and drives it).
        .executableTarget(
            name: "yycache-bench",
            dependencies: ["YYCache"],
            path: "Sources/yycache-bench"
        ),
        // The smallest program using MemoryCache and DiskCache: `make foundation-check` checks
        // from its binary that the library does not link full Foundation.
        .executableTarget(
            name: "yycache-size-probe",
            dependencies: ["YYCache"],
            path: "Sources/yycache-size-probe"
        ),
        .testTarget(
            name: "YYCacheTests",
            dependencies: ["YYCache", "CYYCache"],
            path: "Tests/YYCacheTests"
        ),
        // MemoryCache with C++ values (std.string): they must be boxed, not moved with memcpy.
        .testTarget(
            name: "YYCacheCxxTests",
            dependencies: ["YYCache"],
            path: "Tests/YYCacheCxxTests",
            swiftSettings: [.interoperabilityMode(.Cxx)]
        ),
        // The `yycache` inspector, in C; CMake builds it too (Sources/yycache-cli/CMakeLists.txt).
        .executableTarget(
            name: "yycache-cli",
            dependencies: ["CYYCache"],
            path: "Sources/yycache-cli",
            exclude: ["CMakeLists.txt", "yycache.1", "yycache.bash-completion"],
            cSettings: [.define("_GNU_SOURCE")],
            // sqlite3: read-only commands use SQLite directly. m: the core uses libm (floor) and
            // declares no link to it; Swift targets get libm from the Swift driver, C ones do not.
            linkerSettings: [.linkedLibrary("sqlite3"), .linkedLibrary("m")]
        ),
    ],
    cLanguageStandard: .c11
)
