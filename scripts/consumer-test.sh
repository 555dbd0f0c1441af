#!/usr/bin/env bash
# consumer-test.sh - proves the installed package works for a C consumer outside the source tree.
#
#   scripts/consumer-test.sh <shared-build-dir> [<static-build-dir>]
#
# For each (already built) CMake build dir: `cmake --install` into a temporary prefix, check
# what was installed (public headers only, no module map; library; CMake package; yycache.pc;
# the license in share/doc/yycache),
# move the prefix elsewhere (nothing may hard-code the install path), then build and run
# Tests/CMakeConsumer/main.c twice: with its CMakeLists.txt (find_package(YYCache)) and with
# `pkg-config --cflags --libs yycache` (`--static` for a static library). (README.md's examples
# are built by scripts/readme-examples.py, the `readme` step.)
# Environment: CC (default cc), CMAKE (default cmake), KEEP=1 keeps the temporary folder.
set -euo pipefail

src="$(cd "$(dirname "$0")/.." && pwd)"
CC="${CC:-cc}"
CMAKE="${CMAKE:-cmake}"
[ $# -ge 1 ] || { echo "usage: $0 <shared-build-dir> [<static-build-dir>]" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/yycache-consumer.XXXXXX")"
if [ "${KEEP:-0}" = 1 ]; then echo "consumer: keeping $work"; else trap 'rm -rf "$work"' EXIT; fi

fail() { echo "consumer: FAIL: $*" >&2; exit 1; }

# run <log> <command...>: quiet on success, shows the log on failure.
run() {
    local log="$1"; shift
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        fail "$*"
    fi
}

check_tree() {
    local prefix="$1" kind="$2" libdir
    libdir="$(dirname "$(find "$prefix" -name yycache.pc -print -quit)")/.."
    [ -f "$libdir/pkgconfig/yycache.pc" ] || fail "$kind: no yycache.pc installed"
    if find "$prefix" -name module.modulemap | grep -q .; then
        fail "$kind: module.modulemap was installed (it is for SwiftPM only)"
    fi
    diff <(cd "$src/include/yycache" && printf "%s\n" *.h) <(cd "$prefix/include/yycache" && ls) \
        >/dev/null || fail "$kind: installed headers differ from include/yycache/*.h:" \
        "$(ls "$prefix/include/yycache")"
    local f
    for f in YYCacheConfig.cmake YYCacheConfigVersion.cmake YYCacheTargets.cmake FindLibBSD.cmake \
        FindLibMD.cmake; do
        [ -f "$libdir/cmake/YYCache/$f" ] || fail "$kind: $f not installed"
    done
    for f in LICENSE NOTICE; do
        [ -f "$prefix/share/doc/yycache/$f" ] || fail "$kind: share/doc/yycache/$f not installed"
    done
    if [ "$kind" = shared ]; then
        ls "$libdir"/libyycache.so.* >/dev/null 2>&1 || fail "shared: no versioned libyycache.so.*"
        [ -L "$libdir/libyycache.so" ] || fail "shared: no libyycache.so development link"
    else
        [ -f "$libdir/libyycache.a" ] || fail "static: no libyycache.a"
    fi
}

consume() {
    local build="$1" kind="$2"
    local stage="$work/stage-$kind" prefix="$work/moved-$kind"
    [ -f "$build/CMakeCache.txt" ] || fail "$build is not a configured CMake build directory"

    # The library's own components (a tool in the same build has its own install rules and need
    # not be built for this).
    run "$work/install-$kind.log" "$CMAKE" --install "$build" --prefix "$stage" \
        --component YYCache_Runtime
    run "$work/install-dev-$kind.log" "$CMAKE" --install "$build" --prefix "$stage" \
        --component YYCache_Development
    mv "$stage" "$prefix" # relocated: nothing may depend on the path it was installed to
    check_tree "$prefix" "$kind"

    local pcdir version
    pcdir="$(dirname "$(find "$prefix" -name yycache.pc -print -quit)")"
    version="$(PKG_CONFIG_PATH="$pcdir" pkg-config --modversion yycache)"

    # 1. CMake: find_package(YYCache <version>) from the moved prefix.
    local bdir="$work/cmake-$kind"
    run "$work/cmake-configure-$kind.log" env CC="$CC" "$CMAKE" -S "$src/Tests/CMakeConsumer" \
        -B "$bdir" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Debug \
        -DYYCACHE_CONSUMER_REQUIRE_VERSION="$version"
    run "$work/cmake-build-$kind.log" "$CMAKE" --build "$bdir"
    run "$work/cmake-run-$kind.log" "$bdir/yycache_consumer"
    [ "$kind" = shared ] && sed 's/^/    /' "$work/cmake-run-$kind.log"
    echo "consumer: $kind library, CMake find_package(YYCache $version): ok"

    # The version file refuses another major version.
    local next_major=$(( ${version%%.*} + 1 )).0
    if env CC="$CC" "$CMAKE" -S "$src/Tests/CMakeConsumer" -B "$work/cmake-badversion-$kind" \
        -DCMAKE_PREFIX_PATH="$prefix" -DYYCACHE_CONSUMER_REQUIRE_VERSION="$next_major" \
        >"$work/cmake-badversion-$kind.log" 2>&1; then
        fail "$kind: find_package(YYCache $next_major) accepted version $version"
    fi
    grep -q "compatible with requested version" "$work/cmake-badversion-$kind.log" \
        || { cat "$work/cmake-badversion-$kind.log" >&2; fail "$kind: unexpected find_package error"; }

    # 2. pkg-config (relocatable through ${pcfiledir}); --static for the static library.
    local flags bin="$work/pkgconfig-$kind" static_flag=""
    [ "$kind" = static ] && static_flag="--static"
    flags="$(PKG_CONFIG_PATH="$pcdir" pkg-config $static_flag --cflags --libs yycache)" \
        || fail "$kind: pkg-config yycache failed"
    # shellcheck disable=SC2086 # flags are meant to split
    run "$work/pkgconfig-build-$kind.log" "$CC" -std=c99 -Wall -Wextra -pedantic -Werror \
        "-DYYC_CONSUMER_EXPECTED_VERSION=\"$version\"" \
        "$src/Tests/CMakeConsumer/main.c" -o "$bin" $flags
    if [ "$kind" = static ]; then
        if readelf -d "$bin" | grep -q 'NEEDED.*libyycache'; then
            fail "static: the pkg-config --static program still needs libyycache.so"
        fi
        run "$work/pkgconfig-run-$kind.log" "$bin"
    else
        run "$work/pkgconfig-run-$kind.log" env \
            LD_LIBRARY_PATH="$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=libdir yycache)" "$bin"
    fi
    echo "consumer: $kind library, pkg-config ${static_flag:+$static_flag }yycache ($version): ok"
}

consume "$1" shared
if [ $# -ge 2 ]; then
    consume "$2" static
fi
