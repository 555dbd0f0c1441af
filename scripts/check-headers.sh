#!/usr/bin/env bash
# check-headers.sh - the public headers stand alone, in C99 and in C++.
#
#   scripts/check-headers.sh [<libyycache.so build dir>]
#
# 1. yycache/yycache.h, and each public header on its own, compile as the only include of a
#    C99 file with -std=c99 -Wall -Wextra -pedantic -Werror (-Wstrict-prototypes too).
# 2. The same as C++11 (-x c++ -std=c++11 -Wall -Wextra -pedantic -Werror).
# 3. With a build dir: a C++ program calling the API links against the library, which proves
#    the extern "C" guards (a missing guard gives mangled, undefined names).
# Environment: CC (default cc), CXX (default g++, else clang++ from the Swift toolchain).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
CC="${CC:-cc}"
if [ -z "${CXX:-}" ]; then
    if command -v g++ >/dev/null; then CXX=g++; else CXX=clang++; fi
fi
command -v "$CXX" >/dev/null || { echo "headers: FAIL: no C++ compiler ($CXX)" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/yycache-headers.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Also with clang when it is not already the compiler under test (the Swift toolchain has one):
# the two compilers warn about different things.
ccs=("$CC") cxxs=("$CXX")
if command -v clang >/dev/null && [ "$(basename "$CC")" != clang ]; then ccs+=(clang); fi
if command -v clang++ >/dev/null && [ "$(basename "$CXX")" != clang++ ]; then cxxs+=(clang++); fi

checked=0
for header in yycache.h $(cd "$src/include/yycache" && ls *.h | grep -vx yycache.h); do
    printf '#include <yycache/%s>\nint yyc_header_check_dummy;\n' "$header" >"$work/check.c"
    for cc in "${ccs[@]}"; do
        "$cc" -std=c99 -Wall -Wextra -pedantic -Werror -Wstrict-prototypes -fsyntax-only \
            -I"$src/include" "$work/check.c" \
            || { echo "headers: FAIL: yycache/$header is not standalone C99 ($cc)" >&2; exit 1; }
    done
    for cxx in "${cxxs[@]}"; do
        "$cxx" -x c++ -std=c++11 -Wall -Wextra -pedantic -Werror -fsyntax-only \
            -I"$src/include" "$work/check.c" \
            || { echo "headers: FAIL: yycache/$header is not valid C++11 ($cxx)" >&2; exit 1; }
    done
    checked=$((checked + 1))
done
echo "headers: $checked public headers compile alone as C99 (${ccs[*]}) and C++11 (${cxxs[*]})" \
    "with -Wall -Wextra -pedantic -Werror"

if [ $# -ge 1 ]; then
    cat >"$work/link.cpp" <<'CPP'
#include <yycache/yycache.h>
#include <cstring>
int main() {
    return std::strcmp(yyc_status_name(YYC_NOTFOUND), "NOTFOUND") == 0 && yyc_version()[0] ? 0 : 1;
}
CPP
    "$CXX" -std=c++11 -Wall -Wextra -pedantic -Werror -I"$src/include" "$work/link.cpp" \
        -L"$1" -Wl,-rpath,"$(cd "$1" && pwd)" -lyycache -o "$work/link" \
        || { echo "headers: FAIL: a C++ program does not link to libyycache (extern \"C\"?)" >&2
             exit 1; }
    "$work/link" || { echo "headers: FAIL: the C++ link check program failed" >&2; exit 1; }
    echo "headers: a C++ program links and runs against $1/libyycache.so (extern \"C\" guards)"
fi
