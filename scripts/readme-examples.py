#!/usr/bin/env python3
"""readme-examples.py - builds and runs every code block of README.md, so the README cannot rot.

    scripts/readme-examples.py <cmake-build-dir>

Every fenced block of README.md must have, on the last non-blank line before its opening fence,
one of these comments (they do not show when the Markdown is rendered):

    <!-- example: DIR/FILE -->     the block is FILE in folder DIR (app: the Swift example
                                   package; c: the C examples). A .c file is also compiled alone
                                   with -std=c99 -Wall -Wextra -pedantic -Werror and run.
    <!-- example: run in DIR -->   a sh block, run with bash -eu -o pipefail in DIR (app, c, or
                                   checkout: this source tree) once the blocks above it are done.
    <!-- example: output -->       the standard output of the last run block ends with this text.
    <!-- not run: WHY -->          not built or run (an install with sudo, say); WHY is required.

Blocks are handled in the order of the README. Before the first one, the library of
<cmake-build-dir> is installed into a temporary prefix, and the run blocks see it through
PKG_CONFIG_PATH, CMAKE_PREFIX_PATH and LD_LIBRARY_PATH, with XDG_CACHE_HOME and TMPDIR in the
temporary folder (a C example's "/tmp/..." paths are moved there too).

The Swift example package is README_APP_DIR/app (default .build/readme-app/app): its files are
those the README names (others are removed, changed ones rewritten), and a symbolic link
`yycache` next to it points at this checkout, so that `.package(path: "../yycache")` resolves
as it does for a user. The folder and its .build are kept between runs so that SwiftPM builds
only what changed. It must not be in a folder SwiftPM scans as part of this package (build/
is one: the link back to the checkout would make a loop); SwiftPM skips .build.

Environment: README (default README.md), README_APP_DIR, CMAKE (default cmake), KEEP=1 keeps the
temporary folder. Exit status 0 when every block passed, 1 otherwise.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r"^<!--\s*(example:\s*(?P<example>.*?)|not run:\s*(?P<why>.*?))\s*-->$")
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_+-]*)\s*$")
DIRS = ("app", "c", "checkout")
FILE_LANGS = {".swift": "swift", ".c": "c", ".txt": "cmake"}


class Block:
    def __init__(self, line, lang, marker, text):
        self.line, self.lang, self.marker, self.text = line, lang, marker, text

    def where(self):
        return f"README line {self.line} (```{self.lang})"


def parse(path):
    """The fenced blocks of the Markdown file at path, each with the comment before it."""
    blocks, lines = [], open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group("lang")
        prev = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        if i == len(lines):
            sys.exit(f"readme: README line {start + 1}: the block is never closed")
        blocks.append(Block(start + 1, lang, prev, "\n".join(lines[start + 1:i]) + "\n"))
        i += 1
    return blocks


def fail(message):
    print(f"readme: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def run(args, log, **kw):
    """Runs args quietly; on failure shows what it printed and stops."""
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        sys.stderr.write(r.stdout)
        fail(f"{log}: {' '.join(args)} exited with {r.returncode}")
    return r.stdout


def install(build, prefix, cmake):
    """Installs the library's runtime and development components; returns pkg-config's folder."""
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        fail(f"{build} is not a configured CMake build directory")
    for component in ("YYCache_Runtime", "YYCache_Development"):
        run([cmake, "--install", build, "--prefix", prefix, "--component", component], "install")
    for root, _, files in os.walk(prefix):
        if "yycache.pc" in files:
            return root
    fail("no yycache.pc was installed")


def prepare_app_dir(app_root, wanted):
    """Removes every file of the example package that the README does not name (its .build
    stays) and links ../yycache to this checkout."""
    app = os.path.join(app_root, "app")
    os.makedirs(app, exist_ok=True)
    for root, subdirs, files in os.walk(app, topdown=True):
        if root == app and ".build" in subdirs:
            subdirs.remove(".build")
        for name in files:
            path = os.path.join(root, name)
            if os.path.relpath(path, app) not in wanted:
                os.remove(path)
    link = os.path.join(app_root, "yycache")
    if os.path.islink(link) and os.readlink(link) != SRC:
        os.remove(link)
    if not os.path.lexists(link):
        os.symlink(SRC, link)
    return app


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} <cmake-build-dir>")
    build = os.path.abspath(sys.argv[1])
    readme = os.path.join(SRC, os.environ.get("README", "README.md"))
    cmake = os.environ.get("CMAKE", "cmake")
    app_root = os.path.abspath(os.environ.get("README_APP_DIR", os.path.join(SRC, ".build", "readme-app")))
    blocks = parse(readme)

    # Every block says what it is, before anything runs.
    for b in blocks:
        m = MARKER.match(b.marker)
        if not m:
            fail(f"{b.where()} has no <!-- example: ... --> or <!-- not run: WHY --> comment "
                 f"before it (found: {b.marker[:60]!r})")
        if m.group("why") is not None:
            if not m.group("why"):
                fail(f"{b.where()}: 'not run:' needs a reason")
            b.kind = "skip"
            continue
        what = m.group("example")
        if what == "output":
            b.kind = "output"
        elif what.startswith("run in "):
            b.kind, b.dir = "run", what[len("run in "):]
            if b.dir not in DIRS or b.lang != "sh":
                fail(f"{b.where()}: 'run in' takes a sh block and one of {', '.join(DIRS)}")
        else:
            b.kind, (b.dir, _, b.file) = "file", what.partition("/")
            want = FILE_LANGS.get(os.path.splitext(b.file)[1])
            if b.dir not in ("app", "c") or not b.file or ".." in b.file.split("/") or want != b.lang:
                fail(f"{b.where()}: 'example: {what}' is not app/FILE or c/FILE of its language")

    work = tempfile.mkdtemp(prefix="yycache-readme.", dir=os.environ.get("TMPDIR", "/tmp"))
    try:
        prefix = os.path.join(work, "prefix")
        pcdir = install(build, prefix, cmake)
        libdir = os.path.dirname(pcdir)
        app_files = {b.file for b in blocks if b.kind == "file" and b.dir == "app"}
        dirs = {"app": prepare_app_dir(app_root, app_files), "c": os.path.join(work, "c"), "checkout": SRC}
        os.makedirs(dirs["c"])
        for d in ("xdg", "tmp"):
            os.makedirs(os.path.join(work, d))
        env = dict(os.environ)
        env.pop("CC", None)  # SwiftPM reads CC too; the blocks use cc as a user's shell would
        env.update(PKG_CONFIG_PATH=pcdir, CMAKE_PREFIX_PATH=prefix, XDG_CACHE_HOME=os.path.join(work, "xdg"),
                   TMPDIR=os.path.join(work, "tmp"),
                   LD_LIBRARY_PATH=libdir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else ""))
        pc = run(["pkg-config", "--cflags", "--libs", "yycache"], "pkg-config", env=env).split()

        failed, last_stdout, counts = 0, None, {}
        for b in blocks:
            counts[b.kind] = counts.get(b.kind, 0) + 1
            if b.kind == "skip":
                continue
            if b.kind == "file":
                text = b.text
                if b.lang == "c":
                    text = text.replace('"/tmp/', '"' + env["TMPDIR"] + "/")
                path = os.path.join(dirs[b.dir], b.file)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                # An unchanged file keeps its time stamp, so SwiftPM has nothing to redo.
                if not os.path.isfile(path) or open(path, encoding="utf-8").read() != text:
                    open(path, "w", encoding="utf-8").write(text)
                if b.lang == "c":
                    exe = path[:-2] + ".strict"
                    r = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", path,
                                        *pc, "-o", exe], env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
                    if r.returncode == 0:
                        r = subprocess.run([exe], env=env, cwd=dirs["c"], stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, text=True, timeout=120)
                    if r.returncode != 0:
                        failed += 1
                        sys.stderr.write(r.stdout)
                        print(f"readme: {b.where()}: {b.file} does not build warning-free or does not "
                              f"exit 0: FAILED", file=sys.stderr)
                    else:
                        print(f"readme: {b.where()}: {b.file} builds with -Werror and runs: ok")
                continue
            if b.kind == "output":
                got = (last_stdout or "").rstrip()
                if last_stdout is None or not got.endswith(b.text.rstrip()):
                    failed += 1
                    print(f"readme: {b.where()}: the run above printed\n{got}\n--- but the README "
                          f"says it ends with\n{b.text.rstrip()}\nreadme: FAILED", file=sys.stderr)
                else:
                    print(f"readme: {b.where()}: the output matches: ok")
                continue
            t0 = time.monotonic()
            r = subprocess.run(["bash", "-eu", "-o", "pipefail", "-c", b.text], cwd=dirs[b.dir], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
            last_stdout = r.stdout
            seconds = time.monotonic() - t0
            if r.returncode != 0:
                failed += 1
                sys.stderr.write(r.stdout + r.stderr)
                print(f"readme: {b.where()}: run in {b.dir} exited with {r.returncode}: FAILED",
                      file=sys.stderr)
            else:
                print(f"readme: {b.where()}: run in {b.dir}: ok ({seconds:.0f}s)")
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        if failed:
            fail(f"{failed} block(s) failed ({len(blocks)} blocks: {summary})")
        print(f"readme: all {len(blocks)} blocks of README.md pass ({summary})")
    finally:
        if os.environ.get("KEEP") == "1":
            print(f"readme: keeping {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
