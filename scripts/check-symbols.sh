#!/usr/bin/env bash
# check-symbols.sh - the library exports only its public API.
#
#   scripts/check-symbols.sh <libyycache.so> [<libyycache.a>]
#
# Shared library: every dynamic symbol it defines must be a public yyc_ name (not a yyc__
# internal, which hidden visibility must keep inside), ignoring the loader's _init/_fini and the
# linker's section markers. Static archive (optional): every global symbol it defines must start
# with yyc_ (internals included), so a static link cannot collide with the program's names.
# And every YYC_API function declared in include/yycache/*.h must be defined (exported): a
# declaration without a definition is a link error waiting for the first user.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
NM="${NM:-nm}"
so="${1:?usage: $0 <libyycache.so> [<libyycache.a>]}"
status=0

exported="$("$NM" -D --defined-only "$so" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | sort -u)"
[ -n "$exported" ] || { echo "symbols: FAIL: $so exports nothing" >&2; exit 1; }
bad="$(grep -Ev '^(yyc_[a-z0-9]|_init$|_fini$|_edata$|_end$|__bss_start$)' <<<"$exported" || true)"
if [ -n "$bad" ]; then # (yyc__ internals fail here too: hidden visibility must keep them in)
    echo "symbols: FAIL: $so exports names outside the public yyc_ API:" >&2
    printf '  %s\n' $bad >&2
    status=1
fi

declared="$(grep -ho 'YYC_API[^;(]*[ *]yyc_[a-z0-9_]*[[:space:]]*(' "$src"/include/yycache/*.h \
    | grep -o 'yyc_[a-z0-9_]*[[:space:]]*($' | tr -d ' (' | sort -u)"
missing="$(comm -23 <(echo "$declared") <(grep '^yyc_' <<<"$exported"))"
count_decl="$(wc -l <<<"$declared")"
count_missing="$(grep -c . <<<"$missing" || true)"
if [ "$count_missing" -gt 0 ]; then
    echo "symbols: FAIL: declared YYC_API in include/yycache but not exported by $so:" >&2
    printf '  %s\n' $missing >&2
    status=1
fi
[ $status -ne 0 ] || echo "symbols: $so exports $(wc -l <<<"$exported") symbols, all public yyc_" \
    "names, and defines all $count_decl YYC_API functions of include/yycache"

if [ $# -ge 2 ]; then
    a="$2"
    bad="$("$NM" --defined-only --extern-only "$a" | awk 'NF >= 3 {print $3}' \
        | grep -v '^yyc_' || true)"
    if [ -n "$bad" ]; then
        echo "symbols: FAIL: $a defines global names without the yyc_ prefix:" >&2
        printf '  %s\n' $bad >&2
        status=1
    else
        echo "symbols: $a defines only yyc_-prefixed globals"
    fi
fi
exit $status
