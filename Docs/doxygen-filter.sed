# doxygen-filter.sed - Doxygen's INPUT_FILTER for include/yycache/*.h (Docs/Doxyfile).
#
# The headers use plain C comments; this turns them into Doxygen comments while Doxygen reads
# them (the files are not changed): the opening comment of a header documents the file, a
# comment that starts a line documents the declaration after it, and a comment after code on
# the same line (a struct member, an enumerator) documents that code.
1s|^/\*$|/** @file|
/^[[:space:]]*#/b
s|^\([[:space:]]*\)/\*\([[:space:]]\)|\1/**\2|
s|\([^[:space:]].*[^[:space:]]\)\([[:space:]][[:space:]]*\)/\*\([[:space:]]\)|\1\2/**<\3|
# Placeholders such as <path> or <UUID> are text, not HTML tags.
s|<\([A-Za-z][A-Za-z0-9_]*\)>|\\<\1\\>|g
