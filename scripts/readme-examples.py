#!/usr/bin/env python3
"""readme-examples.py - builds and runs every code block of README.md, so the README cannot rot.

    scripts/readme-examples.py

Every fenced block of README.md must have, on the last non-blank line before its opening fence,
one of these comments (they do not show when the Markdown is rendered):

    <!-- example: DIR/FILE -->     the block is FILE in folder DIR (app: the Swift example
                                   package; c: the C examples). A .c file is also compiled alone
                                   with -std=c99 -Wall -Wextra -pedantic -Werror and run.
    <!-- example: run in DIR -->   a sh block, run with bash -eu -o pipefail in DIR (app, c,
                                   checkout: this source tree, or clone: a copy of it, as a user's
                                   fresh clone) once the blocks above it are done.
    <!-- example: output -->       the standard output of the last run block ends with this text.
    <!-- not run: WHY -->          not built or run (an install with sudo, say); WHY is required.

Blocks are handled in the order of the README, as a new user would run them: in a clean
environment (env -i: PATH, and USER, LOGNAME, SHELL, LANG and TERM when set, as a fresh shell has
them), with HOME a new empty folder in the temporary folder, and nothing else set for them. The
run blocks are one shell session: what a block exports (`export -p`) the blocks after it see, as
they would in the user's terminal; nothing else is carried. So the README's own install commands
put the library where its later blocks look for it (a user prefix under that HOME), and a wrong
path or a missing run path in them fails the step. A C example's "/tmp/..." paths are moved into
the temporary folder (so that runs do not meet).

The Swift example package is README_APP_DIR/app (default .build/readme-app/app): its files are
those the README names (others are removed, changed ones rewritten), and a symbolic link
`yycache` next to it points at this checkout, so that `.package(path: "../yycache")` resolves
as it does for a user. The clone is README_APP_DIR/clone: the checkout's files (git ls-files,
untracked ones included, ignored ones not), copied when they changed; its build/ stays. Both
folders are kept between runs so that SwiftPM and CMake build only what changed. They must not
be in a folder SwiftPM scans as part of this package (build/ is one: the link back to the
checkout would make a loop); SwiftPM skips .build.

Environment: README (default README.md), README_APP_DIR, KEEP=1 keeps the temporary folder (its
home/ holds what the blocks installed). Exit status 0 when every block passed, 1 otherwise.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r"^<!--\s*(example:\s*(?P<example>.*?)|not run:\s*(?P<why>.*?))\s*-->$")
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_+-]*)\s*$")
DIRS = ("app", "c", "checkout", "clone")
# What a fresh login shell has besides PATH and HOME (passed on when set).
FRESH_SHELL_VARS = ("USER", "LOGNAME", "SHELL", "LANG", "TERM")
# Variables of the shell itself that a block's `export -p` must not carry to the next block.
SHELL_OWN = re.compile(r"^declare -x (PWD|OLDPWD|SHLVL|_)(=|$)")
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


def tracked_files():
    """The checkout's files a fresh clone has (and untracked ones not ignored), relative."""
    r = subprocess.run(["git", "-C", SRC, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if r.returncode == 0:
        return [f for f in r.stdout.decode().split("\0") if f and os.path.isfile(os.path.join(SRC, f))]
    names = []  # not a git checkout: everything but build output
    for root, subdirs, files in os.walk(SRC):
        subdirs[:] = [d for d in subdirs if d not in ("build", ".git") and not d.startswith(".build")]
        names += [os.path.relpath(os.path.join(root, f), SRC) for f in files]
    return names


def remove_unwanted(folder, wanted, keep):
    """Removes every file under folder whose relative path is not in wanted; the top-level
    subfolder keep (build output) stays as it is."""
    os.makedirs(folder, exist_ok=True)
    for root, subdirs, files in os.walk(folder, topdown=True):
        if root == folder and keep in subdirs:
            subdirs.remove(keep)
        for name in files:
            path = os.path.join(root, name)
            if os.path.relpath(path, folder) not in wanted:
                os.remove(path)


def prepare_clone(clone):
    """Makes clone hold the checkout's files: copies the changed ones (an unchanged file keeps its
    time stamp, so the build in it redoes only what changed) and removes the others; clone/build
    stays."""
    wanted = set(tracked_files())
    remove_unwanted(clone, wanted, "build")
    for rel in wanted:
        src, dst = os.path.join(SRC, rel), os.path.join(clone, rel)
        with open(src, "rb") as f:
            data = f.read()
        if os.path.isfile(dst):
            with open(dst, "rb") as f:
                if f.read() == data:
                    continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)
    return clone


def session_env(env, session):
    """env with what the run blocks so far exported (the shell session's environment)."""
    r = subprocess.run(["bash", "-c", '. "$0" && env -0', session], env=env, stdout=subprocess.PIPE)
    if r.returncode != 0:
        fail("cannot read the session's environment")
    return dict(item.split("=", 1) for item in r.stdout.decode().split("\0") if "=" in item)


def prepare_app_dir(app_root, wanted):
    """Removes every file of the example package that the README does not name (its .build
    stays) and links ../yycache to this checkout."""
    app = os.path.join(app_root, "app")
    remove_unwanted(app, wanted, ".build")
    link = os.path.join(app_root, "yycache")
    if os.path.islink(link) and os.readlink(link) != SRC:
        os.remove(link)
    if not os.path.lexists(link):
        os.symlink(SRC, link)
    return app


def main():
    if len(sys.argv) != 1:
        sys.exit(f"usage: {sys.argv[0]}")
    readme = os.path.join(SRC, os.environ.get("README", "README.md"))
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
        app_files = {b.file for b in blocks if b.kind == "file" and b.dir == "app"}
        dirs = {"app": prepare_app_dir(app_root, app_files), "c": os.path.join(work, "c"), "checkout": SRC,
                "clone": prepare_clone(os.path.join(app_root, "clone"))}
        for d in ("c", "home", "tmp"):
            os.makedirs(os.path.join(work, d))
        env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": os.path.join(work, "home")}
        env.update({k: os.environ[k] for k in FRESH_SHELL_VARS if k in os.environ})
        session = os.path.join(work, "session.sh")
        open(session, "w").close()
        tmp = os.path.join(work, "tmp")

        failed, last_stdout, counts = 0, None, {}
        for b in blocks:
            counts[b.kind] = counts.get(b.kind, 0) + 1
            if b.kind == "skip":
                continue
            if b.kind == "file":
                text = b.text
                if b.lang == "c":
                    text = text.replace('"/tmp/', '"' + tmp + "/")
                path = os.path.join(dirs[b.dir], b.file)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                # An unchanged file keeps its time stamp, so SwiftPM has nothing to redo.
                if not os.path.isfile(path) or open(path, encoding="utf-8").read() != text:
                    open(path, "w", encoding="utf-8").write(text)
                if b.lang == "c":
                    # Built as the README's pkg-config line builds it, in the session's environment.
                    exe = path[:-2] + ".strict"
                    senv = session_env(env, session)
                    pc = run(["pkg-config", "--cflags", "--libs", "yycache"], "pkg-config", env=senv).split()
                    libdir = run(["pkg-config", "--variable=libdir", "yycache"], "pkg-config", env=senv).strip()
                    r = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", path,
                                        *pc, "-Wl,-rpath," + libdir, "-o", exe], env=senv,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                    if r.returncode == 0:
                        r = subprocess.run([exe], env=senv, cwd=dirs["c"], stdout=subprocess.PIPE,
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
            # One shell session: the block starts with what the blocks before it exported and
            # leaves what it exports for the next ones.
            script = (f'. "$YYCACHE_README_SESSION"\nunset YYCACHE_README_SESSION\n{b.text}\n'
                      f"export -p > {shlex.quote(session + '.new')}\n")
            r = subprocess.run(["bash", "-eu", "-o", "pipefail", "-c", script], cwd=dirs[b.dir],
                               env=dict(env, YYCACHE_README_SESSION=session),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
            if r.returncode == 0:
                with open(session + ".new") as f, open(session, "w") as out:
                    out.writelines(line for line in f if not SHELL_OWN.match(line))
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
