#!/usr/bin/env bash
# check-version.sh - every place that states the package version says the same.
#
#   scripts/check-version.sh [<cmake-build-dir>]
#
# The version lives in CMakeLists.txt's project(VERSION). The others must agree with it:
#   Sources/CYYCache/platform/status.c         the YYC_VERSION_STRING fallback (SwiftPM builds without it)
#   Sources/YYCache/Support/PackageVersion.swift  PackageVersion.string
#   CHANGELOG.md                      the newest release heading, "## [X.Y.Z] - date"
#   Sources/yycache-cli/yycache.1     the manual page's .TH source "YYCache X.Y.Z" and its
#                                     example of `yycache --version`
#   README.md, cmake/YYCacheConfig.cmake.in   find_package(YYCache X.Y ...) examples (major.minor)
#   README.md                         the SwiftPM example's .package(..., from: "X.Y.Z"), if any
# and, with a configured and built CMake build dir:
#   <build>/yycache.pc                Version:
#   <build>/Sources/yycache-cli/yycache --version   "yycache X.Y.Z"
# Exit status 1 with one line per disagreement.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-}"

v=$(sed -n '/^project(YYCache/,/)/s/^ *VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
if ! [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "version-check: no MAJOR.MINOR.PATCH in CMakeLists.txt's project(VERSION): '$v'" >&2
    exit 1
fi
mm=${v%.*}
bad=0
check() { # check <what> <found> <expected>
    if [ "$2" != "$3" ]; then
        echo "version-check: $1 says '$2', CMakeLists.txt says '$3'" >&2
        bad=1
    fi
}

check "Sources/CYYCache/platform/status.c (YYC_VERSION_STRING fallback)" \
    "$(sed -n 's/^#define YYC_VERSION_STRING "\(.*\)"/\1/p' Sources/CYYCache/platform/status.c)" "$v"
swift_version=$(sed -n 's/^ *public static let string = "\(.*\)"/\1/p' \
    Sources/YYCache/Support/PackageVersion.swift)
check "Sources/YYCache/Support/PackageVersion.swift (PackageVersion.string)" "$swift_version" "$v"
check "CHANGELOG.md (newest release heading)" \
    "$(sed -n 's/^## \[\([0-9][^]]*\)\].*/\1/p' CHANGELOG.md | head -n 1)" "$v"
man=Sources/yycache-cli/yycache.1
check "$man (.TH source)" "$(sed -n 's/^\.TH .*"YYCache \([^"]*\)".*/\1/p' "$man")" "$v"
check "$man (--version example)" \
    "$(sed -n 's/^\.BR "yycache \([0-9.]*\)" \.$/\1/p' "$man")" "$v"
for f in README.md cmake/YYCacheConfig.cmake.in; do
    found=$(grep -o 'find_package(YYCache [0-9][0-9.]*' "$f" | sed 's/.* //' | sort -u | tr '\n' ' ')
    check "$f (find_package(YYCache X.Y), major.minor)" "${found% }" "$mm"
done
# A SwiftPM example that names a release (.package(..., from: "X.Y.Z")) names this one; the README
# may instead depend on a branch or revision while no release is tagged.
readme_from=$({ grep -o 'from: "[0-9][0-9.]*"' README.md || true; } | sed 's/from: "\(.*\)"/\1/' | sort -u | tr '\n' ' ' \
    | sed 's/ $//')
[ -z "$readme_from" ] || check "README.md (.package(..., from: \"X.Y.Z\"))" "$readme_from" "$v"

if [ -n "$build" ]; then
    check "$build/yycache.pc (Version:)" "$(sed -n 's/^Version: *//p' "$build/yycache.pc")" "$v"
    cli="$build/Sources/yycache-cli/yycache"
    check "$cli --version" "$("$cli" --version)" "yycache $v"
fi

[ $bad -eq 0 ] || exit 1
echo "version-check: $v in CMakeLists.txt, status.c, PackageVersion.swift, CHANGELOG.md," \
     "yycache.1, README.md and YYCacheConfig.cmake.in ($mm)" \
     "${build:+and in $build/yycache.pc and yycache --version}"
