#!/usr/bin/env bash
# format.sh - the committed source formats, applied to the whole tree or checked.
#
#   scripts/format.sh          rewrites in place: clang-format (.clang-format) on every C source
#                              and header, `swift format` (.swift-format) on every Swift file
#   scripts/format.sh --check  changes nothing; prints each difference and exits 1 if there is
#                              one (clang-format --dry-run -Werror, swift format lint --strict)
#
# The files: the tracked *.c and *.h (every one of them is ours: include/, Sources/, Tests/,
# Benchmarks/), Package.swift and the tracked *.swift; without git, the same found with find.
# Environment: CLANG_FORMAT (default clang-format; Debian package clang-format, which
# `make deps` installs), SWIFT (default swift: its `swift format` is the toolchain's
# swift-format). Other versions of either may format some lines differently: the tree is kept
# formatted with Debian 12's clang-format 14 and Swift 6.3's swift-format.
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT="${CLANG_FORMAT:-clang-format}"
SWIFT="${SWIFT:-swift}"
check=false
case "${1:-}" in
    --check) check=true ;;
    "") ;;
    *) echo "usage: scripts/format.sh [--check]" >&2; exit 2 ;;
esac

list() { # list <pattern>... : NUL-separated names of the tree's files that match
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -z -- "$@"
    else
        local names=() p
        for p in "$@"; do names+=(-o -name "$p"); done
        find . \( -name build -o -name '.build*' -o -name '.git' \) -prune \
            -o -type f \( "${names[@]:1}" \) -printf '%P\0'
    fi
}
mapfile -d '' c_files < <(list '*.c' '*.h')
mapfile -d '' swift_files < <(list '*.swift')

command -v "$CLANG_FORMAT" >/dev/null \
    || { echo "format: $CLANG_FORMAT not found (Debian: apt-get install clang-format)" >&2; exit 1; }
"$SWIFT" format --version >/dev/null 2>&1 \
    || { echo "format: '$SWIFT format' not found (a Swift 6 toolchain has it)" >&2; exit 1; }

status=0
if $check; then
    "$CLANG_FORMAT" --dry-run -Werror "${c_files[@]}" || status=1
    "$SWIFT" format lint --strict --parallel "${swift_files[@]}" || status=1
    if [ $status -ne 0 ]; then
        echo "format: the files above differ from .clang-format / .swift-format;" \
             "scripts/format.sh rewrites them" >&2
    else
        echo "format: ${#c_files[@]} C files and ${#swift_files[@]} Swift files are formatted" \
             "($("$CLANG_FORMAT" --version | sed 's/.*version //'), swift-format $("$SWIFT" format --version))"
    fi
else
    "$CLANG_FORMAT" -i "${c_files[@]}"
    "$SWIFT" format format --in-place --parallel "${swift_files[@]}"
    echo "format: formatted ${#c_files[@]} C files and ${#swift_files[@]} Swift files"
fi
exit $status
