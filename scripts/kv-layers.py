#!/usr/bin/env python3
"""Checks that the files of the disk KV storage (Sources/CYYCache/kv/) call each other one way.

A file "calls" another when it names a yyc__ function the other defines (comments ignored).
Fails, naming the files, when the calls make a cycle; otherwise prints the files from the
bottom (called by others, calling none of them) to the top (the public API), which
kv_internal.h's header comment follows. Run by `make headers`.
"""
import glob
import os
import re
import sys

KV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "CYYCache", "kv")


def call_graph():
    files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(KV, "*.c")))
    text = {}
    defined = {}
    for f in files:
        s = open(os.path.join(KV, f)).read()
        s = re.sub(r"/\*.*?\*/", "", s, flags=re.S)
        s = re.sub(r"//[^\n]*", "", s)
        text[f] = s
        for m in re.finditer(r"^[A-Za-z_][\w \*]*?\b(yyc__\w+)\s*\([^;{]*\)\s*\{", s, re.M):
            defined[m.group(1)] = f
    calls = {f: set() for f in files}
    for f in files:
        for name, owner in defined.items():
            if owner != f and re.search(r"\b" + name + r"\s*\(", text[f]):
                calls[f].add(owner)
    return calls


def main():
    calls = call_graph()
    order, done, stack = [], set(), []

    def visit(f):
        if f in done:
            return True
        if f in stack:
            cycle = stack[stack.index(f):] + [f]
            print("kv-layers: the kv files call each other in a circle: " + " -> ".join(cycle),
                  file=sys.stderr)
            return False
        stack.append(f)
        ok = all(visit(g) for g in sorted(calls[f]))
        stack.pop()
        done.add(f)
        order.append(f)
        return ok

    if not all(visit(f) for f in sorted(calls)):
        return 1
    print("kv-layers: one way, bottom first: " + ", ".join(order))
    return 0


if __name__ == "__main__":
    sys.exit(main())
