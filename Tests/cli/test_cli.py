#!/usr/bin/env python3
"""Tests of the `yycache` inspector, driven as a real process on real cache folders.

    python3 Tests/cli/test_cli.py --binary build/dev/Sources/yycache-cli/yycache [-v] [-k PATTERN]
    YYCACHE_BIN=.build/debug/yycache python3 Tests/cli/test_cli.py

Standard library only (unittest, subprocess, json, sqlite3, tempfile). Every test works in its
own temporary folder. Manifests are edited directly with sqlite3 only to set up situations
(access times, broken rows) or to build a folder exactly as YYKVStorage (Objective-C) writes it.
"""

import argparse
import fcntl
import hashlib
import json
import os
import re
import sqlite3
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BINARY = None  # set in main()

INLINE_THRESHOLD = 20480

# Values the live writer stores beside the repair loop (bounded: make test; raise it by hand).
WRITER_VALUES = int(os.environ.get("YYCACHE_CLI_WRITER_VALUES", "60"))

# The schema as YYKVStorage creates it (spec section 2.2), byte for byte.
YYKVSTORAGE_SCHEMA = """
pragma journal_mode = wal;
pragma synchronous = normal;
create table if not exists manifest (key text, filename text, size integer, inline_data blob,
  modification_time integer, last_access_time integer, extended_data blob, primary key(key));
create index if not exists last_access_time_idx on manifest(last_access_time);
"""

COMMANDS = ["stats", "ls", "get", "set", "rm", "trim", "clear", "vacuum", "verify"]

# The testing-only pause of verify --repair between its scan and its repairs (main.c).
PAUSE_ENV = "YYCACHE_TESTING_PAUSE_BEFORE_REPAIR"
PAUSED_LINE = b"yycache: testing: paused before repair\n"


def md5_name(key: bytes) -> str:
    return hashlib.md5(key).hexdigest()


class InspectorTestCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="yycache-cli-test-")
        self.tmp = self._tmp.name
        self.cache = os.path.join(self.tmp, "cache")

    def tearDown(self):
        self._tmp.cleanup()

    # ---- helpers ----

    def run_cli(self, *args, input=b"", expect=None):
        """Runs the inspector; args may be str or bytes. Checks the exit status when given."""
        proc = subprocess.run([BINARY, *args], input=input, capture_output=True, timeout=60)
        if expect is not None:
            self.assertEqual(
                proc.returncode, expect,
                f"yycache {args!r} exited {proc.returncode}\nstdout: {proc.stdout[:2000]!r}\n"
                f"stderr: {proc.stderr[:2000]!r}")
        return proc

    def set_value(self, key, value: bytes, path=None):
        self.run_cli("set", path or self.cache, key, "-", input=value, expect=0)

    def get_value(self, key, path=None) -> bytes:
        return self.run_cli("get", path or self.cache, key, expect=0).stdout

    def ls_json(self, *extra, path=None):
        out = self.run_cli("ls", path or self.cache, "--json", *extra, expect=0).stdout
        return json.loads(out.decode("utf-8"))

    def stats_json(self, path=None):
        return json.loads(self.run_cli("stats", path or self.cache, "--json", expect=0).stdout)

    def verify_json(self, *extra, expect=None):
        proc = self.run_cli("verify", self.cache, "--json", *extra, expect=expect)
        return json.loads(proc.stdout)

    def sql(self, statement, params=(), path=None):
        db = sqlite3.connect(os.path.join(path or self.cache, "manifest.sqlite"))
        try:
            rows = db.execute(statement, params).fetchall()
            db.commit()
            return rows
        finally:
            db.close()

    def set_access_times(self, times: dict):
        for key, t in times.items():
            self.sql("update manifest set last_access_time = ? where key = ?", (t, key))

    def snapshot(self, path):
        """path itself and every entry under it with its type, size, mtime and content digest
        (links are recorded with their target, never followed)."""
        st = os.lstat(path)
        result = {".": (st.st_mode, st.st_mtime_ns)}
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                full = os.path.join(root, name)
                st = os.lstat(full)
                digest = None
                if os.path.islink(full):
                    digest = os.readlink(full)
                elif os.path.isfile(full):
                    with open(full, "rb") as f:
                        digest = hashlib.sha256(f.read()).hexdigest()
                result[os.path.relpath(full, path)] = (st.st_mode, st.st_size, st.st_mtime_ns,
                                                       digest)
        return result

    def make_sentinel(self, names=()):
        """A folder outside the cache holding files (those named by names among them, so that
        a delete through a link named data/ would hit them) and a subfolder."""
        sentinel = os.path.join(self.tmp, "sentinel")
        os.makedirs(os.path.join(sentinel, "sub"))
        for name in list(names) + ["precious.txt", os.path.join("sub", "deep.txt")]:
            os.makedirs(os.path.dirname(os.path.join(sentinel, name)), exist_ok=True)
            with open(os.path.join(sentinel, name), "wb") as f:
                f.write(b"precious " + name.encode())
        return sentinel

    def repair_paused(self, during, *extra):
        """Runs verify --repair --json with the testing pause, calls during() while it waits
        between its scan and its repairs, and returns (exit status, report)."""
        env = dict(os.environ, **{PAUSE_ENV: "1"})
        proc = subprocess.Popen([BINARY, "verify", self.cache, "--repair", "--json", *extra],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
        try:
            self.assertEqual(proc.stderr.readline(), PAUSED_LINE)
            during()
            out, err = proc.communicate(b"\n", timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertIn(proc.returncode, (0, 1), err)
        return proc.returncode, json.loads(out)

    def make_yykvstorage_folder(self, path):
        """A folder as YYKVStorage writes it: one inline row, one file row with a custom file
        name, one row with an empty file name (inline, as YYKVStorage reads it)."""
        os.makedirs(os.path.join(path, "data"))
        os.makedirs(os.path.join(path, "trash"))
        db = sqlite3.connect(os.path.join(path, "manifest.sqlite"))
        db.executescript(YYKVSTORAGE_SCHEMA)
        now = int(time.time())
        file_value = bytes(range(256)) * 100
        with open(os.path.join(path, "data", "custom-name.bin"), "wb") as f:
            f.write(file_value)
        rows = [
            ("inline-key", None, 5, b"small", now - 100, now - 100, None),
            ("file-key", "custom-name.bin", len(file_value), None, now - 50, now - 50, b"ext"),
            ("empty-filename-key", "", 3, b"abc", now - 10, now - 10, None),
        ]
        db.executemany("insert into manifest values (?, ?, ?, ?, ?, ?, ?)", rows)
        db.commit()
        db.close()
        return file_value


class HelpAndUsage(InspectorTestCase):
    def test_version_prints_the_library_version(self):
        out = self.run_cli("--version", expect=0).stdout.decode()
        self.assertRegex(out, r"^yycache \d+\.\d+\.\d+\n$")

    def test_general_help_lists_every_command(self):
        out = self.run_cli("--help", expect=0).stdout.decode()
        for cmd in COMMANDS:
            self.assertIn(cmd, out)
        self.assertEqual(self.run_cli("help", expect=0).stdout.decode(), out)

    def test_every_command_has_help_both_ways(self):
        for cmd in COMMANDS:
            via_help = self.run_cli("help", cmd, expect=0).stdout.decode()
            via_option = self.run_cli(cmd, "--help", expect=0).stdout.decode()
            self.assertTrue(via_help.startswith(f"usage: yycache {cmd} "), via_help)
            self.assertEqual(via_help, via_option)
            self.assertEqual(self.run_cli(cmd, "-h", expect=0).stdout.decode(), via_help)

    def test_read_only_commands_say_so_in_their_help(self):
        for cmd in ["stats", "ls", "verify"]:
            self.assertIn("SQLITE_OPEN_READONLY", self.run_cli(cmd, "--help", expect=0).stdout.decode())

    def test_usage_errors_exit_2_with_a_message(self):
        self.set_value("k", b"v")
        cases = [
            (),
            ("frobnicate",),
            ("help", "frobnicate"),
            ("stats",),
            ("stats", self.cache, "extra"),
            ("ls", self.cache, "--sort", "colour"),
            ("ls", self.cache, "--limit", "-3"),
            ("ls", self.cache, "--limit"),
            ("ls", self.cache, "--no-such-option"),
            ("get", self.cache),
            ("rm", self.cache),
            ("trim", self.cache),
            ("trim", self.cache, "--size", "10Q"),
            ("trim", self.cache, "--size", "0x10"),
            ("trim", self.cache, "--size", "1e3"),
            ("trim", self.cache, "--count", "1.5"),
            ("trim", self.cache, "--age", "soon"),
            ("set", self.cache, ""),
        ]
        for args in cases:
            proc = self.run_cli(*args)
            self.assertEqual(proc.returncode, 2, args)
            self.assertRegex(proc.stderr, rb"^(yycache|usage: yycache)", args)
            self.assertEqual(proc.stdout, b"", args)


class FolderErrors(InspectorTestCase):
    def test_a_missing_folder_is_an_error_naming_the_path(self):
        missing = os.path.join(self.tmp, "nowhere")
        for cmd in ["stats", "ls", "verify", "clear"]:
            proc = self.run_cli(cmd, missing, expect=2)
            self.assertTrue(proc.stderr.decode().startswith(f"yycache: {missing}: "), proc.stderr)
        self.run_cli("get", missing, "k", expect=2)
        self.run_cli("rm", missing, "k", expect=2)
        self.assertFalse(os.path.exists(missing), "a failed command must not create the folder")

    def test_a_folder_without_manifest_is_not_a_cache_folder(self):
        os.makedirs(self.cache)
        open(os.path.join(self.cache, "notes.txt"), "w").close()
        for args in [("stats",), ("ls",), ("verify",), ("clear",), ("trim", "--count", "1")]:
            proc = self.run_cli(args[0], self.cache, *args[1:], expect=2)
            self.assertIn(b"not a cache folder", proc.stderr)
        proc = self.run_cli("set", self.cache, "k", "-", input=b"v", expect=2)
        self.assertIn(b"not a cache folder", proc.stderr)
        self.assertEqual(os.listdir(self.cache), ["notes.txt"])

    def test_a_regular_file_as_path_is_an_error(self):
        path = os.path.join(self.tmp, "file")
        open(path, "w").close()
        self.run_cli("stats", path, expect=2)

    def test_a_garbage_manifest_is_reported_and_left_alone_by_read_only_commands(self):
        os.makedirs(self.cache)
        with open(os.path.join(self.cache, "manifest.sqlite"), "wb") as f:
            f.write(b"this is not a database" * 100)
        before = self.snapshot(self.cache)
        for cmd in ["stats", "ls", "verify"]:
            proc = self.run_cli(cmd, self.cache, expect=2)
            self.assertTrue(proc.stderr.startswith(f"yycache: {self.cache}: ".encode()), proc.stderr)
        self.assertEqual(self.snapshot(self.cache), before)

    def test_a_writing_command_on_a_garbage_manifest_changes_nothing(self):
        os.makedirs(os.path.join(self.cache, "data"))
        with open(os.path.join(self.cache, "manifest.sqlite"), "wb") as f:
            f.write(b"this is not a database" * 100)
        with open(os.path.join(self.cache, "data", "file"), "wb") as f:
            f.write(b"someone's data")
        before = self.snapshot(self.cache)
        proc = self.run_cli("get", self.cache, "k", expect=2)
        self.assertIn(b"not a cache folder", proc.stderr)
        self.assertNotIn(b"replaced", proc.stderr)
        self.assertEqual(self.snapshot(self.cache), before)


class NonCacheFolders(InspectorTestCase):
    """Folders that are not caches, each with something to lose in data/."""

    def write_file(self, relpath, content):
        full = os.path.join(self.cache, relpath)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(content)

    def sqlite_manifest(self, script):
        os.makedirs(self.cache, exist_ok=True)
        db = sqlite3.connect(os.path.join(self.cache, "manifest.sqlite"))
        db.executescript(script)
        db.commit()
        db.close()

    def fixtures(self):
        """(name, builder) pairs; each builder fills self.cache (which does not exist yet)."""
        def foreign_db():
            self.sqlite_manifest("create table songs (title text, artist text);"
                                 "insert into songs values ('a', 'b');")
            self.write_file("data/track01.flac", b"music" * 1000)

        def foreign_table_named_manifest():
            self.sqlite_manifest("create table manifest (path text primary key, sha text);"
                                 "insert into manifest values ('x', 'y');")
            self.write_file("data/x", b"file x")

        def view_named_manifest():
            self.sqlite_manifest("create table t (key text, filename text, size integer,"
                                 " inline_data blob, modification_time integer,"
                                 " last_access_time integer, extended_data blob);"
                                 "create view manifest as select * from t;")
            self.write_file("data/keep", b"keep")

        def manifest_without_index():
            self.sqlite_manifest("create table manifest (key text, filename text, size integer,"
                                 " inline_data blob, modification_time integer,"
                                 " last_access_time integer, extended_data blob,"
                                 " primary key(key));")
            self.write_file("data/keep", b"keep")

        def random_file():
            self.write_file("manifest.sqlite", os.urandom(8192))
            self.write_file("data/photo.jpg", os.urandom(50000))

        def empty_manifest_file():
            self.write_file("manifest.sqlite", b"")
            self.write_file("data/notes.txt", b"notes")

        def empty_folder():
            os.makedirs(self.cache)

        def only_data():
            self.write_file("data/report.pdf", b"%PDF" * 100)
            os.makedirs(os.path.join(self.cache, "data", "sub"))

        def manifest_is_a_link():
            real = os.path.join(self.tmp, "real-cache")
            self.set_value("k", b"v" * 30000, path=real)
            os.makedirs(self.cache)
            os.symlink(os.path.join(real, "manifest.sqlite"),
                       os.path.join(self.cache, "manifest.sqlite"))
            self.write_file("data/mine", b"mine")

        return [("foreign SQLite database", foreign_db),
                ("foreign table named manifest", foreign_table_named_manifest),
                ("view named manifest", view_named_manifest),
                ("manifest table without YYKVStorage's index", manifest_without_index),
                ("random bytes named manifest.sqlite", random_file),
                ("empty file named manifest.sqlite", empty_manifest_file),
                ("empty folder", empty_folder),
                ("folder with only data/", only_data),
                ("manifest.sqlite is a link", manifest_is_a_link)]

    def test_no_command_changes_a_folder_that_is_not_a_cache(self):
        commands = [("clear",), ("rm", "k"), ("trim", "--count", "0"), ("trim", "--age", "0"),
                    ("get", "k"), ("verify", "--repair"), ("vacuum",), ("stats",), ("ls",),
                    ("verify",)]
        for name, build in self.fixtures():
            with self.subTest(folder=name):
                shutil.rmtree(self.cache, ignore_errors=True)
                build()
                before = self.snapshot(self.cache)
                outside = self.snapshot(self.tmp)
                for args in commands:
                    proc = self.run_cli(args[0], self.cache, *args[1:])
                    self.assertEqual(proc.returncode, 2, (name, args, proc.stderr))
                    self.assertIn(b"not a cache folder", proc.stderr, (name, args))
                    self.assertEqual(self.snapshot(self.cache), before, (name, args))
                if name != "empty folder":  # set may make a cache of an empty folder only
                    self.run_cli("set", self.cache, "k", "-", input=b"v", expect=2)
                    self.assertEqual(self.snapshot(self.cache), before, name)
                self.assertEqual(self.snapshot(self.tmp), outside, name)


class SetAndGet(InspectorTestCase):
    def test_set_creates_a_cache_and_get_returns_the_bytes(self):
        self.set_value("greeting", b"hello\x00world\n")
        self.assertEqual(self.get_value("greeting"), b"hello\x00world\n")
        self.assertTrue(os.path.isfile(os.path.join(self.cache, "manifest.sqlite")))

    def test_set_reads_a_file_argument(self):
        src = os.path.join(self.tmp, "value.bin")
        payload = os.urandom(50000)
        with open(src, "wb") as f:
            f.write(payload)
        self.run_cli("set", self.cache, "from-file", src, expect=0)
        self.assertEqual(self.get_value("from-file"), payload)

    def test_set_reads_standard_input_when_the_file_is_absent(self):
        self.run_cli("set", self.cache, "k", input=b"piped", expect=0)
        self.assertEqual(self.get_value("k"), b"piped")

    def test_set_of_an_unreadable_file_is_an_error(self):
        self.set_value("k", b"v")
        proc = self.run_cli("set", self.cache, "k2", os.path.join(self.tmp, "missing"), expect=2)
        self.assertIn(b"missing", proc.stderr)

    def test_values_up_to_20480_bytes_are_inline_and_larger_ones_in_md5_named_files(self):
        self.set_value("at-threshold", b"a" * INLINE_THRESHOLD)
        self.set_value("above-threshold", b"b" * (INLINE_THRESHOLD + 1))
        self.set_value("empty", b"")
        entries = {e["key"]: e for e in self.ls_json()}
        self.assertEqual(entries["at-threshold"]["storage"], "inline")
        self.assertIsNone(entries["at-threshold"]["filename"])
        above = entries["above-threshold"]
        self.assertEqual(above["storage"], "file")
        self.assertEqual(above["filename"], md5_name(b"above-threshold"))
        data_file = os.path.join(self.cache, "data", above["filename"])
        self.assertEqual(os.path.getsize(data_file), INLINE_THRESHOLD + 1)
        self.assertEqual(entries["empty"]["size"], 0)
        self.assertEqual(self.get_value("empty"), b"")
        self.assertEqual(self.get_value("above-threshold"), b"b" * (INLINE_THRESHOLD + 1))

    def test_set_replaces_a_file_value_with_an_inline_one(self):
        self.set_value("k", b"x" * 30000)
        self.set_value("k", b"small")
        self.assertEqual(self.get_value("k"), b"small")
        self.assertEqual(os.listdir(os.path.join(self.cache, "data")), [])

    def test_get_writes_to_a_file_with_o(self):
        self.set_value("k", b"payload")
        out = os.path.join(self.tmp, "out.bin")
        proc = self.run_cli("get", self.cache, "k", "-o", out, expect=0)
        self.assertEqual(proc.stdout, b"")
        with open(out, "rb") as f:
            self.assertEqual(f.read(), b"payload")

    def test_get_of_a_missing_key_exits_1_and_creates_no_output_file(self):
        self.set_value("k", b"v")
        out = os.path.join(self.tmp, "out.bin")
        proc = self.run_cli("get", self.cache, "nope", "-o", out, expect=1)
        self.assertEqual(proc.stdout, b"")
        self.assertIn(b"no such key", proc.stderr)
        self.assertTrue(proc.stderr.startswith(f"yycache: {self.cache}: ".encode()))
        self.assertFalse(os.path.exists(out))

    def test_a_key_starting_with_a_dash_works_after_double_dash(self):
        self.run_cli("set", self.cache, "--", "-dash", "-", input=b"d", expect=0)
        self.assertEqual(self.run_cli("get", self.cache, "--", "-dash", expect=0).stdout, b"d")

    def test_get_refreshes_the_access_time_and_ls_does_not(self):
        self.set_value("k", b"v")
        self.set_access_times({"k": 1000})
        self.ls_json()
        self.run_cli("ls", self.cache, expect=0)
        self.run_cli("stats", self.cache, expect=0)
        self.assertEqual(self.ls_json()[0]["last_access_time"], 1000)
        self.get_value("k")
        self.assertGreater(self.ls_json()[0]["last_access_time"], 1000)


class Listing(InspectorTestCase):
    def fill(self):
        sizes = {"alpha": 10, "bravo": 30000, "charlie": 5, "delta": 25000}
        for key, size in sizes.items():
            self.set_value(key, b"z" * size)
        self.set_access_times({"alpha": 4000, "bravo": 1000, "charlie": 3000, "delta": 2000})
        return sizes

    def test_ls_sorts_by_key_by_default(self):
        self.fill()
        self.assertEqual([e["key"] for e in self.ls_json()], ["alpha", "bravo", "charlie", "delta"])

    def test_ls_sorts_by_access_least_recent_first(self):
        self.fill()
        keys = [e["key"] for e in self.ls_json("--sort", "access")]
        self.assertEqual(keys, ["bravo", "delta", "charlie", "alpha"])

    def test_ls_sorts_by_size_largest_first(self):
        self.fill()
        keys = [e["key"] for e in self.ls_json("--sort", "size")]
        self.assertEqual(keys, ["bravo", "delta", "alpha", "charlie"])

    def test_ls_limit_applies_after_sorting(self):
        self.fill()
        keys = [e["key"] for e in self.ls_json("--sort=size", "--limit", "2")]
        self.assertEqual(keys, ["bravo", "delta"])
        self.assertEqual(self.ls_json("--limit", "0"), [])

    def test_ls_json_has_every_field(self):
        sizes = self.fill()
        for e in self.ls_json():
            self.assertEqual(e["size"], sizes[e["key"]])
            self.assertEqual(e["storage"], "file" if sizes[e["key"]] > INLINE_THRESHOLD else "inline")
            for field in ["modification_time", "last_access_time", "extended_data_size"]:
                self.assertIsInstance(e[field], int)

    def test_ls_human_output_has_one_line_per_entry_with_human_sizes(self):
        self.fill()
        lines = self.run_cli("ls", self.cache, expect=0).stdout.decode().splitlines()
        self.assertEqual(len(lines), 4)
        self.assertRegex(lines[1], r"29\.3 KiB .* file +bravo$")
        exact = self.run_cli("ls", self.cache, "--bytes", expect=0).stdout.decode().splitlines()
        self.assertRegex(exact[1], r"^ *30000 ")

    def test_ls_of_an_empty_cache_is_empty(self):
        self.set_value("k", b"v")
        self.run_cli("rm", self.cache, "k", expect=0)
        self.assertEqual(self.ls_json(), [])
        self.assertEqual(self.run_cli("ls", self.cache, expect=0).stdout, b"")

    def test_keys_with_any_bytes_are_escaped_in_json_and_printed_safely(self):
        keys = [b"line\nbreak", b"tab\there", b'quote"back\\slash', b"\xff\xfeinvalid",
                "caf\u00e9 \u6f22\u5b57 \U0001f600".encode(), b"bell\x07\x7f", b"\xc0\xafoverlong"]
        for i, key in enumerate(keys):
            self.set_value(key, b"v%d" % i)
        entries = self.ls_json()
        self.assertEqual(len(entries), len(keys))
        found = set()
        for e in entries:
            # key_hex (the exact bytes) is present exactly when the key is not valid UTF-8.
            exact = bytes.fromhex(e["key_hex"]) if "key_hex" in e else e["key"].encode("utf-8")
            found.add(exact)
        self.assertEqual(found, set(keys))
        by_key = {bytes.fromhex(e["key_hex"]) if "key_hex" in e else e["key"].encode(): e
                  for e in entries}
        self.assertNotIn("key_hex", by_key["caf\u00e9 \u6f22\u5b57 \U0001f600".encode()])
        # Each byte of an invalid sequence is written as \u00XX (its Latin-1 reading).
        self.assertEqual(by_key[b"\xff\xfeinvalid"]["key"], "\u00ff\u00feinvalid")
        self.assertEqual(by_key[b"\xc0\xafoverlong"]["key"], "\u00c0\u00afoverlong")
        self.assertEqual(by_key[b"line\nbreak"]["key"], "line\nbreak")
        human = self.run_cli("ls", self.cache, expect=0).stdout
        self.assertEqual(len(human.splitlines()), len(keys))
        self.assertNotIn(b"\x07", human)
        self.assertNotIn(b"\xff", human)
        self.assertIn(b"line\\nbreak", human)
        self.assertIn(b"\\xff\\xfeinvalid", human)
        self.assertIn("caf\u00e9 \u6f22\u5b57 \U0001f600".encode(), human)
        for key in keys:
            self.assertEqual(self.get_value(key), b"v%d" % keys.index(key))


class Stats(InspectorTestCase):
    def test_stats_reports_counts_sizes_and_the_inline_file_split(self):
        self.set_value("small1", b"a" * 100)
        self.set_value("small2", b"b" * 200)
        self.set_value("big", b"c" * 30000)
        self.set_access_times({"small1": 1000, "small2": 2000, "big": 3000})
        s = self.stats_json()
        self.assertEqual(s["count"], 3)
        self.assertEqual(s["total_size"], 30300)
        self.assertEqual((s["inline_count"], s["inline_size"]), (2, 300))
        self.assertEqual((s["file_count"], s["file_size"]), (1, 30000))
        self.assertEqual((s["oldest_access"], s["newest_access"]), (1000, 3000))
        self.assertEqual(s["manifest_size"], os.path.getsize(os.path.join(self.cache, "manifest.sqlite")))
        self.assertIsInstance(s["wal_size"], int)
        self.assertEqual(s["trash_entries"], 0)
        self.assertEqual(s["path"], self.cache)

    def test_stats_human_output_uses_human_sizes_and_bytes_gives_exact_ones(self):
        self.set_value("big", b"c" * 30000)
        out = self.run_cli("stats", self.cache, expect=0).stdout.decode()
        self.assertRegex(out, r"total size: +29\.3 KiB")
        self.assertRegex(out, r"entries: +1\n")
        exact = self.run_cli("stats", self.cache, "--bytes", expect=0).stdout.decode()
        self.assertRegex(exact, r"total size: +30000\n")

    def test_stats_of_an_empty_cache_has_no_access_times(self):
        self.set_value("k", b"v")
        self.run_cli("clear", self.cache, expect=0)
        s = self.stats_json()
        self.assertEqual((s["count"], s["total_size"]), (0, 0))
        self.assertIsNone(s["oldest_access"])
        self.assertIsNone(s["newest_access"])


class WalAndVacuum(InspectorTestCase):
    def test_stats_shows_the_size_of_the_wal(self):
        self.set_value("k1", b"v")
        db = sqlite3.connect(os.path.join(self.cache, "manifest.sqlite"))
        try:
            db.execute("pragma wal_autocheckpoint = 0")
            db.execute("insert into manifest (key, filename, size, inline_data, modification_time,"
                       " last_access_time, extended_data) values ('k2', null, 3, x'010203', 1, 1,"
                       " null)")
            db.commit()
            wal = os.path.getsize(os.path.join(self.cache, "manifest.sqlite-wal"))
            self.assertGreater(wal, 0)
            self.assertEqual(self.stats_json()["wal_size"], wal)
            human = self.run_cli("stats", self.cache, "--bytes", expect=0).stdout.decode()
            self.assertRegex(human, rf"\nWAL: +{wal} \(manifest.sqlite-wal")
        finally:
            db.close()

    def test_vacuum_gives_back_the_space_of_removed_rows_and_keeps_the_rest(self):
        for i in range(120):
            self.set_value(f"k{i:03}", bytes([i]) * 20000)  # inline: 2.4 MB in the manifest
        self.set_value("file", b"f" * 30000)
        self.set_access_times({"file": int(time.time()) + 100, "k119": int(time.time()) + 100})
        self.run_cli("trim", self.cache, "--count", "2", expect=0)
        before = os.path.getsize(os.path.join(self.cache, "manifest.sqlite"))
        self.assertGreater(before, 2_000_000)

        report = json.loads(self.run_cli("vacuum", self.cache, "--json", expect=0).stdout)
        after = os.path.getsize(os.path.join(self.cache, "manifest.sqlite"))
        self.assertEqual(report["manifest_size_after"], after)
        self.assertLess(after, 200_000)
        self.assertGreaterEqual(report["manifest_size_before"], before)
        self.assertEqual((report["wal_size_after"], report["wal_kept"]), (0, False))
        self.assertEqual(self.get_value("k119"), bytes([119]) * 20000)
        self.assertEqual(self.get_value("file"), b"f" * 30000)
        self.assertEqual(sorted(e["key"] for e in self.ls_json()), ["file", "k119"])
        self.assertTrue(self.verify_json(expect=0)["ok"])

    def test_vacuum_prints_the_sizes_before_and_after(self):
        self.set_value("k", b"v")
        out = self.run_cli("vacuum", self.cache, "--bytes", expect=0).stdout.decode()
        size = os.path.getsize(os.path.join(self.cache, "manifest.sqlite"))
        self.assertRegex(out, rf"manifest.sqlite: +\d+ -> {size}\n")
        self.assertRegex(out, r"manifest.sqlite-wal: +\d+ -> 0\n")


class PluralForms(InspectorTestCase):
    def test_counts_of_one_are_singular_and_others_plural(self):
        self.set_value("big", b"b" * 30000)
        with open(os.path.join(self.cache, "data", ".yyc-tmp-0123456789abcdef"), "wb") as f:
            f.write(b"write in progress")
        self.sql("update manifest set size = 1 where key = 'big'")
        out = self.run_cli("verify", self.cache, expect=1).stdout.decode()
        self.assertIn("the manifest says 1 byte, the file has 30000", out)
        self.assertIn("1 row, 2 entries in data/: 1 problem (run with --repair to fix it)\n", out)
        self.assertIn("(1 recent temporary file skipped: a write in progress)\n", out)
        out = self.run_cli("verify", self.cache, "--repair", expect=0).stdout.decode()
        self.assertIn("1 row, 2 entries in data/: 1 problem: 1 fixed, 0 left alone", out)

        self.set_value("a", b"1")
        self.set_value("b", b"2")
        with open(os.path.join(self.cache, "data", "stray"), "wb") as f:
            f.write(b"x")
        os.remove(os.path.join(self.cache, "data", ".yyc-tmp-0123456789abcdef"))
        out = self.run_cli("verify", self.cache, expect=1).stdout.decode()
        self.assertIn("2 rows, 1 entry in data/: 1 problem", out)
        os.remove(os.path.join(self.cache, "data", "stray"))
        self.sql("update manifest set size = 9")
        out = self.run_cli("verify", self.cache, expect=1).stdout.decode()
        self.assertIn("2 rows, 0 entries in data/: 2 problems (run with --repair to fix them)\n",
                      out)
        self.run_cli("verify", self.cache, "--repair", expect=0)

        self.set_value("a", b"1")
        self.set_value("b", b"2")
        self.assertIn("removed 1 entry (1 B); 1 entry (1 B) left",
                      self.run_cli("trim", self.cache, "--count", "1", expect=0).stdout.decode())
        stats = self.run_cli("stats", self.cache, expect=0).stdout.decode()
        self.assertRegex(stats, r"inline: +1 entry, ")
        self.assertRegex(stats, r"in data/: +0 entries, ")
        cleared = self.run_cli("clear", self.cache, expect=0).stdout.decode()
        self.assertIn("removed 1 entry\n", cleared)


class ReadOnlyGuarantees(InspectorTestCase):
    def test_read_only_commands_leave_an_idle_folder_byte_for_byte_unchanged(self):
        self.set_value("small", b"s")
        self.set_value("big", b"b" * 30000)
        with open(os.path.join(self.cache, "data", "stray"), "wb") as f:
            f.write(b"stray")  # verify must report it, not delete it
        os.makedirs(os.path.join(self.cache, "trash", "OLD"), exist_ok=True)
        before = self.snapshot(self.cache)
        self.run_cli("stats", self.cache, expect=0)
        self.run_cli("stats", self.cache, "--json", expect=0)
        self.run_cli("ls", self.cache, "--sort", "access", expect=0)
        self.run_cli("ls", self.cache, "--json", expect=0)
        self.run_cli("verify", self.cache, expect=1)
        self.run_cli("verify", self.cache, "--json", expect=1)
        self.assertEqual(self.snapshot(self.cache), before)

    def test_read_only_commands_see_uncheckpointed_writes_of_a_cache_in_use(self):
        self.set_value("k1", b"v")
        db = sqlite3.connect(os.path.join(self.cache, "manifest.sqlite"))
        try:
            db.execute("pragma wal_autocheckpoint = 0")
            db.execute("insert into manifest (key, filename, size, inline_data, modification_time,"
                       " last_access_time, extended_data) values ('k2', null, 2, x'0102', 1, 1, null)")
            db.commit()  # the row lives in the -wal until a checkpoint; the connection stays open
            self.assertGreater(os.path.getsize(os.path.join(self.cache, "manifest.sqlite-wal")), 0)
            self.assertEqual(self.stats_json()["count"], 2)
            self.assertEqual([e["key"] for e in self.ls_json()], ["k1", "k2"])
            self.assertTrue(self.verify_json(expect=0)["ok"])
        finally:
            db.close()


class Removal(InspectorTestCase):
    def test_rm_removes_rows_and_files(self):
        self.set_value("small", b"s")
        self.set_value("big", b"b" * 30000)
        self.set_value("keep", b"k")
        self.run_cli("rm", self.cache, "small", "big", expect=0)
        self.assertEqual([e["key"] for e in self.ls_json()], ["keep"])
        self.assertEqual(os.listdir(os.path.join(self.cache, "data")), [])
        self.run_cli("get", self.cache, "big", expect=1)

    def test_rm_of_a_missing_key_is_not_an_error(self):
        self.set_value("k", b"v")
        self.run_cli("rm", self.cache, "nope", expect=0)
        self.run_cli("rm", self.cache, "nope", "k", expect=0)
        self.assertEqual(self.ls_json(), [])

    def test_clear_removes_every_entry_and_file(self):
        for i in range(40):
            self.set_value(f"k{i}", b"x" * (30000 if i % 4 == 0 else 10))
        out = self.run_cli("clear", self.cache, expect=0).stdout.decode()
        self.assertIn("40", out)
        self.assertEqual(self.ls_json(), [])
        self.assertEqual(os.listdir(os.path.join(self.cache, "data")), [])
        self.set_value("after", b"a")
        self.assertEqual(self.get_value("after"), b"a")


class Trim(InspectorTestCase):
    def fill(self):
        # Oldest first: k0 (100 bytes) ... k4; k4 holds a file value.
        sizes = [100, 200, 300, 400, 30000]
        for i, size in enumerate(sizes):
            self.set_value(f"k{i}", b"x" * size)
        now = int(time.time())
        self.set_access_times({f"k{i}": now - 10000 + i * 1000 for i in range(5)})

    def keys(self):
        return sorted(e["key"] for e in self.ls_json())

    def test_trim_to_a_count_evicts_least_recently_used_first(self):
        self.fill()
        out = self.run_cli("trim", self.cache, "--count", "3", expect=0).stdout.decode()
        self.assertIn("removed 2 entries", out)
        self.assertEqual(self.keys(), ["k2", "k3", "k4"])

    def test_trim_to_a_size_accepts_suffixes(self):
        self.fill()
        self.run_cli("trim", self.cache, "--size", "10M", expect=0)
        self.assertEqual(len(self.keys()), 5)
        self.run_cli("trim", self.cache, "--size", "30K", expect=0)  # 30720 >= 300 + 400 + 30000
        self.assertEqual(self.keys(), ["k2", "k3", "k4"])
        self.run_cli("trim", self.cache, "--size", "30.4KB", expect=0)  # 30400 bytes
        self.assertEqual(self.keys(), ["k3", "k4"])
        self.run_cli("trim", self.cache, "--size", "0", expect=0)
        self.assertEqual(self.keys(), [])
        self.assertEqual(os.listdir(os.path.join(self.cache, "data")), [])

    def test_trim_by_age_removes_entries_not_accessed_recently(self):
        self.fill()  # accessed 10000, 9000, 8000, 7000 and 6000 seconds ago
        self.run_cli("trim", self.cache, "--age", "8500", expect=0)
        self.assertEqual(self.keys(), ["k2", "k3", "k4"])
        self.run_cli("trim", self.cache, "--age", "2h", expect=0)  # 7200 s
        self.assertEqual(self.keys(), ["k3", "k4"])

    def test_trim_options_combine(self):
        self.fill()
        self.run_cli("trim", self.cache, "--count", "4", "--age", "7500", "--bytes", expect=0)
        self.assertEqual(self.keys(), ["k3", "k4"])

    def test_trim_reports_exact_bytes_with_bytes(self):
        self.fill()
        out = self.run_cli("trim", self.cache, "--count", "4", "--bytes", expect=0).stdout.decode()
        self.assertIn("removed 1 entry (100)", out)


class Verify(InspectorTestCase):
    def test_a_consistent_folder_verifies_clean(self):
        self.set_value("small", b"s")
        self.set_value("big", b"b" * 30000)
        report = self.verify_json(expect=0)
        self.assertEqual((report["ok"], report["rows"], report["files"]), (True, 2, 1))
        self.assertEqual(report["problems"], [])
        self.assertIn("no problems", self.run_cli("verify", self.cache, expect=0).stdout.decode())

    def test_verify_repair_after_deleting_a_data_file(self):
        self.set_value("big", b"b" * 30000)
        self.set_value("keep", b"k" * 30000)
        os.remove(os.path.join(self.cache, "data", md5_name(b"big")))
        report = self.verify_json(expect=1)
        self.assertFalse(report["ok"])
        self.assertEqual(len(report["problems"]), 1)
        problem = report["problems"][0]
        self.assertEqual((problem["kind"], problem["key"]), ("missing_file", "big"))
        self.assertEqual(problem["filename"], md5_name(b"big"))
        self.assertFalse(problem["fixed"])
        self.assertEqual(self.stats_json()["count"], 2, "verify without --repair changed the folder")

        repaired = self.verify_json("--repair", expect=0)
        self.assertTrue(repaired["ok"])
        self.assertTrue(repaired["problems"][0]["fixed"])
        self.assertEqual([e["key"] for e in self.ls_json()], ["keep"])
        self.assertTrue(self.verify_json(expect=0)["ok"])

    def test_verify_repair_after_dropping_a_stray_file_into_data(self):
        self.set_value("big", b"b" * 30000)
        stray = os.path.join(self.cache, "data", "stray-file")
        with open(stray, "wb") as f:
            f.write(b"0123456789")
        os.makedirs(os.path.join(self.cache, "data", "stray-dir", "sub"))
        report = self.verify_json(expect=1)
        self.assertEqual([(p["kind"], p["filename"]) for p in report["problems"]],
                         [("stray_file", "stray-dir"), ("stray_file", "stray-file")])
        self.assertEqual(report["problems"][1]["actual_size"], 10)
        self.assertTrue(report["problems"][0]["is_dir"])
        human = self.run_cli("verify", self.cache, expect=1).stdout.decode()
        self.assertIn("stray file: data/stray-file", human)

        out = self.run_cli("verify", self.cache, "--repair", expect=0).stdout.decode()
        self.assertIn("fixed", out)
        self.assertEqual(os.listdir(os.path.join(self.cache, "data")), [md5_name(b"big")])
        self.assertEqual(self.get_value("big"), b"b" * 30000)

    def test_verify_repair_removes_rows_whose_size_does_not_match(self):
        self.set_value("inline", b"12345")
        self.set_value("file", b"f" * 30000)
        self.set_value("fine", b"ok")
        self.sql("update manifest set size = 6 where key = 'inline'")
        with open(os.path.join(self.cache, "data", md5_name(b"file")), "ab") as f:
            f.write(b"extra")
        report = self.verify_json(expect=1)
        mismatches = {p["key"]: p for p in report["problems"]}
        self.assertEqual(set(mismatches), {"inline", "file"})
        self.assertEqual(mismatches["inline"]["kind"], "size_mismatch")
        self.assertEqual((mismatches["inline"]["size"], mismatches["inline"]["actual_size"]), (6, 5))
        self.assertEqual(mismatches["file"]["actual_size"], 30005)
        self.verify_json("--repair", expect=0)
        self.assertEqual([e["key"] for e in self.ls_json()], ["fine"])
        self.assertEqual(os.listdir(os.path.join(self.cache, "data")), [])

    def test_recent_temporary_files_of_writes_in_progress_are_not_stray(self):
        self.set_value("k", b"v")
        tmp = os.path.join(self.cache, "data", ".yyc-tmp-0011223344556677")
        open(tmp, "wb").close()
        report = self.verify_json("--repair", expect=0)
        self.assertEqual(report["recent_temp_files"], 1)
        self.assertTrue(os.path.exists(tmp))
        old = time.time() - 3600
        os.utime(tmp, (old, old))
        report = self.verify_json("--repair", expect=0)
        self.assertEqual([p["kind"] for p in report["problems"]], ["stray_file"])
        self.assertFalse(os.path.exists(tmp))

    def test_rows_with_unsafe_file_names_are_reported_and_never_touched(self):
        self.set_value("k", b"v")
        outside = os.path.join(self.tmp, "outside")
        with open(outside, "wb") as f:
            f.write(b"precious")
        self.sql("insert into manifest (key, filename, size, inline_data, modification_time,"
                 " last_access_time, extended_data) "
                 "values ('evil', '../../outside', 8, null, 1, 1, null)")
        report = self.verify_json("--repair", expect=1)
        self.assertEqual([(p["kind"], p["fixed"]) for p in report["problems"]],
                         [("invalid_filename", False)])
        self.assertTrue(os.path.exists(outside))


class RepairUnderTheFolderProtocol(InspectorTestCase):
    """verify --repair on hostile folders and on caches in use (issue 11, item 6)."""

    def data(self, name=""):
        return os.path.join(self.cache, "data", name) if name else os.path.join(self.cache, "data")

    def write_stray(self, name, content=b"stray"):
        with open(self.data(name), "wb") as f:
            f.write(content)

    def test_verify_never_follows_a_data_link_and_repair_leaves_its_target_alone(self):
        self.set_value("big", b"b" * 30000)
        self.set_value("small", b"s")
        sentinel = self.make_sentinel([md5_name(b"big"), "stray-looking"])
        os.rename(self.data(), os.path.join(self.tmp, "old-data"))
        os.symlink(sentinel, self.data())
        before = self.snapshot(sentinel)

        report = self.verify_json(expect=1)
        kinds = sorted(p["kind"] for p in report["problems"])
        self.assertEqual(kinds, ["data_not_a_folder", "missing_file"])
        self.assertEqual(report["files"], 0, "verify listed the folder behind the link")

        repaired = self.verify_json("--repair", expect=0)
        outcomes = {p["kind"]: p["outcome"] for p in repaired["problems"]}
        self.assertEqual(outcomes, {"data_not_a_folder": "replaced", "missing_file": "row_removed"})
        self.assertEqual(self.snapshot(sentinel), before)
        self.assertFalse(os.path.islink(self.data()))
        self.assertEqual(os.listdir(self.data()), [])
        self.assertEqual(self.get_value("small"), b"s")
        self.assertTrue(self.verify_json(expect=0)["ok"])

    def test_repair_never_deletes_through_a_data_link_planted_after_its_scan(self):
        self.set_value("big", b"b" * 30000)
        names = ["stray-1", "stray-2"]
        for name in names:
            self.write_stray(name)
        os.makedirs(self.data("stray-dir"))
        sentinel = self.make_sentinel(names + ["stray-dir/inner"])
        before = self.snapshot(sentinel)

        def plant_link():
            os.rename(self.data(), os.path.join(self.tmp, "moved-data"))
            os.symlink(sentinel, self.data())

        status, report = self.repair_paused(plant_link)
        self.assertEqual(self.snapshot(sentinel), before)
        self.assertEqual(sorted(os.listdir(os.path.join(self.tmp, "moved-data"))),
                         sorted([md5_name(b"big")] + names + ["stray-dir"]))
        strays = [p for p in report["problems"] if p["kind"] == "stray_file"]
        self.assertEqual(len(strays), 3)
        for p in strays:
            self.assertEqual((p["fixed"], p["outcome"]), (False, "not_fixed"), p)
        self.assertEqual(status, 1)

    def test_repair_keeps_a_file_that_a_row_names_by_the_time_it_deletes(self):
        self.set_value("k", b"v")
        value = os.urandom(30000)
        self.write_stray("adopted", value)

        def adopt():  # a writer acknowledged a value stored in that file meanwhile
            self.sql("insert into manifest (key, filename, size, inline_data, modification_time,"
                     " last_access_time, extended_data) values ('late', 'adopted', ?, null, 1, 1,"
                     " null)", (len(value),))

        status, report = self.repair_paused(adopt)
        self.assertEqual(self.get_value("late"), value)
        self.assertEqual(status, 0)
        self.assertEqual([(p["filename"], p["fixed"], p["outcome"]) for p in report["problems"]],
                         [("adopted", False, "resolved")])

    def test_repair_keeps_a_value_saved_again_after_its_scan(self):
        self.set_value("k", b"old" * 10000)
        self.set_value("other", b"o")
        os.remove(self.data(md5_name(b"k")))
        new_value = os.urandom(40000)

        status, report = self.repair_paused(lambda: self.set_value("k", new_value))
        self.assertEqual(self.get_value("k"), new_value)
        self.assertEqual(status, 0)
        self.assertEqual([(p["kind"], p["fixed"], p["outcome"]) for p in report["problems"]],
                         [("missing_file", False, "resolved")])

    def test_repair_keeps_a_temporary_file_that_is_fresh_by_the_time_it_deletes(self):
        self.set_value("k", b"v")
        tmp = self.data(".yyc-tmp-00112233445566778899")
        self.write_stray(os.path.basename(tmp), b"half")
        old = time.time() - 3600
        os.utime(tmp, (old, old))

        def fresh_write():  # a new write in progress reuses the name
            with open(tmp, "wb") as f:
                f.write(b"new write in progress")

        status, report = self.repair_paused(fresh_write)
        self.assertTrue(os.path.exists(tmp))
        self.assertEqual(status, 0)
        self.assertEqual([(p["kind"], p["outcome"]) for p in report["problems"]],
                         [("stray_file", "resolved")])

    def test_repair_waits_for_the_folder_lock_and_changes_nothing_without_it(self):
        self.set_value("big", b"b" * 30000)
        self.write_stray("stray")
        os.remove(self.data(md5_name(b"big")))
        fd = os.open(self.cache, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # as the library holds it around a change
            before = self.snapshot(self.cache)
            # vacuum waits out the lock timeout at the same time as verify --repair (one wait,
            # not two, in the test's time).
            vacuum = subprocess.Popen([BINARY, "vacuum", self.cache], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE)
            try:
                report = self.verify_json("--repair")
            finally:
                _, vacuum_err = vacuum.communicate(timeout=60)
            self.assertEqual(self.snapshot(self.cache), before)
            self.assertFalse(report["ok"])
            self.assertEqual(sorted((p["kind"], p["outcome"]) for p in report["problems"]),
                             [("missing_file", "not_fixed"), ("stray_file", "not_fixed")])
            self.assertIn("folder lock", report["problems"][0]["error"])
            self.assertEqual(vacuum.returncode, 2, vacuum_err)
            self.assertIn(b"folder lock", vacuum_err)
            self.assertEqual(self.snapshot(self.cache), before)
        finally:
            os.close(fd)
        self.assertTrue(self.verify_json("--repair", expect=0)["ok"])

    def test_repair_removes_broken_rows_whose_key_is_null_or_a_blob(self):
        self.set_value("keep", b"k")
        for key in [None, b"\xffblob-key"]:
            self.sql("insert into manifest (key, filename, size, inline_data, modification_time,"
                     " last_access_time, extended_data) values (?, 'gone-' || ?, 5, null, 1, 1,"
                     " null)", (key, "x" if key is None else "y"))
        report = self.verify_json("--repair", expect=0)
        self.assertEqual([(p["kind"], p["outcome"]) for p in report["problems"]],
                         [("missing_file", "row_removed")] * 2)
        self.assertEqual([e["key"] for e in self.ls_json()], ["keep"])

    def test_repair_in_a_loop_beside_a_live_writer_loses_no_acknowledged_value(self):
        self.run_beside_a_live_writer("verify", "--repair")

    def test_vacuum_in_a_loop_beside_a_live_writer_loses_no_acknowledged_value(self):
        self.run_beside_a_live_writer("vacuum")

    def run_beside_a_live_writer(self, command, *extra):
        """Runs `yycache command PATH extra` in a loop while another thread stores values with
        `yycache set` (a process each), then checks that every acknowledged value reads back."""
        self.set_value("seed", b"s")
        acknowledged = {}
        done = threading.Event()

        def writer():
            try:
                for i in range(WRITER_VALUES):
                    key = f"k{i % 50}"  # new keys first, then new values for old keys
                    value = os.urandom(16) * (1300 + i)  # above the inline threshold
                    proc = subprocess.run([BINARY, "set", self.cache, key, "-"], input=value,
                                          capture_output=True, timeout=60)
                    if proc.returncode == 0:
                        acknowledged[key] = value
            finally:
                done.set()

        thread = threading.Thread(target=writer)
        thread.start()
        rounds = 0
        try:
            while not done.is_set() or rounds == 0:
                proc = self.run_cli(command, self.cache, *extra)
                self.assertIn(proc.returncode, (0, 1), proc.stderr)
                rounds += 1
        finally:
            thread.join()
        self.assertGreater(len(acknowledged), 0)
        for key, value in sorted(acknowledged.items()):
            self.assertEqual(self.get_value(key), value, f"{key} lost ({rounds} runs)")
        self.assertTrue(self.verify_json(expect=0)["ok"])


class Expiry(InspectorTestCase):
    """Entries with a time to live (the library's yyc_expiry_ms column, unix milliseconds): the
    CLI cannot set one, so the tests write the column directly, as the library would."""

    def expire(self, key, ms_from_now):
        self.sql("update manifest set yyc_expiry_ms = ? where key = ?",
                 (int(time.time() * 1000) + ms_from_now, key))

    def test_get_of_an_expired_entry_is_a_miss_and_removes_it(self):
        self.set_value("gone", b"v")
        self.set_value("kept", b"w")
        self.expire("gone", -1000)
        self.expire("kept", 3600 * 1000)
        proc = self.run_cli("get", self.cache, "gone", expect=1)
        self.assertIn(b"no such key", proc.stderr)
        self.assertEqual(self.get_value("kept"), b"w")
        self.assertEqual(sorted(e["key"] for e in self.ls_json()), ["kept"])

    def test_ls_shows_each_entrys_expiry(self):
        self.set_value("gone", b"v")
        self.set_value("kept", b"w" * 30000)
        self.set_value("never", b"x")
        self.expire("gone", -1000)
        self.expire("kept", 3600 * 1000)
        entries = {e["key"]: e for e in self.ls_json()}
        self.assertTrue(entries["gone"]["expired"])
        self.assertFalse(entries["kept"]["expired"])
        self.assertGreater(entries["kept"]["expiry_time_ms"], time.time() * 1000)
        self.assertIsNone(entries["never"]["expiry_time_ms"])
        self.assertFalse(entries["never"]["expired"])
        lines = {line.split()[-1]: line
                 for line in self.run_cli("ls", self.cache, expect=0).stdout.decode().splitlines()}
        self.assertRegex(lines["gone"], r" expired +inline +gone$")
        self.assertRegex(lines["never"], r" never +inline +never$")
        self.assertRegex(lines["kept"], r" \d{4}-\d\d-\d\d \d\d:\d\d:\d\d +file +kept$")

    def test_stats_counts_expired_entries(self):
        self.set_value("a", b"v")
        self.set_value("b", b"v")
        self.set_value("c", b"v")
        self.expire("a", -1000)
        self.expire("b", -1)
        self.expire("c", 3600 * 1000)
        s = self.stats_json()
        self.assertEqual((s["count"], s["expired_count"]), (3, 2))
        out = self.run_cli("stats", self.cache, expect=0).stdout.decode()
        self.assertRegex(out, r"expired: +2 entries past their time to live")

    def test_trim_expired_removes_only_the_expired_entries_and_their_files(self):
        self.set_value("gone", b"v" * 30000)
        self.set_value("also gone", b"v")
        self.set_value("kept", b"w")
        self.expire("gone", -1000)
        self.expire("also gone", -1000)
        out = self.run_cli("trim", self.cache, "--expired", expect=0).stdout.decode()
        self.assertIn("removed 2 entries", out)
        self.assertEqual([e["key"] for e in self.ls_json()], ["kept"])
        self.assertEqual(os.listdir(os.path.join(self.cache, "data")), [])
        self.assertEqual(self.stats_json()["expired_count"], 0)

    def test_a_yykvstorage_folder_without_the_column_has_no_expiry(self):
        os.makedirs(os.path.join(self.cache, "data"))
        db = sqlite3.connect(os.path.join(self.cache, "manifest.sqlite"))
        db.executescript(YYKVSTORAGE_SCHEMA)
        db.execute("insert into manifest (key, filename, size, inline_data, modification_time,"
                   " last_access_time, extended_data) values ('k', null, 1, x'01', 1, 1, null)")
        db.commit()
        db.close()
        self.assertIsNone(self.ls_json()[0]["expiry_time_ms"])
        self.assertEqual(self.stats_json()["expired_count"], 0)


class YYKVStorageFolders(InspectorTestCase):
    def test_a_folder_written_by_yykvstorage_is_listed_and_read(self):
        file_value = self.make_yykvstorage_folder(self.cache)
        entries = {e["key"]: e for e in self.ls_json()}
        self.assertEqual(set(entries), {"inline-key", "file-key", "empty-filename-key"})
        self.assertEqual(entries["inline-key"]["storage"], "inline")
        self.assertEqual(entries["empty-filename-key"]["storage"], "inline")
        self.assertEqual(entries["file-key"]["storage"], "file")
        self.assertEqual(entries["file-key"]["filename"], "custom-name.bin")
        self.assertEqual(entries["file-key"]["extended_data_size"], 3)
        s = self.stats_json()
        self.assertEqual((s["inline_count"], s["file_count"]), (2, 1))
        self.assertEqual(s["total_size"], 5 + 3 + len(file_value))
        self.assertTrue(self.verify_json(expect=0)["ok"])
        self.assertEqual(self.get_value("inline-key"), b"small")
        self.assertEqual(self.get_value("empty-filename-key"), b"abc")
        self.assertEqual(self.get_value("file-key"), file_value)

    def test_a_yykvstorage_folder_can_be_written_and_trimmed(self):
        self.make_yykvstorage_folder(self.cache)
        self.set_value("new", b"n" * 30000)
        self.run_cli("trim", self.cache, "--count", "2", expect=0)  # inline-key, file-key oldest
        self.assertEqual(sorted(e["key"] for e in self.ls_json()), ["empty-filename-key", "new"])
        self.assertFalse(os.path.exists(os.path.join(self.cache, "data", "custom-name.bin")))
        self.assertTrue(self.verify_json(expect=0)["ok"])


@unittest.skipUnless(shutil.which("redis-server"), "no redis-server installed (make deps installs it)")
class Remote(InspectorTestCase):
    """--remote URL: PATH is a namespace on a Redis server of the test's own."""

    def setUp(self):
        super().setUp()
        self.socket = os.path.join(self.tmp, "redis.sock")
        self.server = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", self.socket, "--save", "", "--dir", self.tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.socket) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.url = "unix://" + self.socket

    def tearDown(self):
        self.server.kill()
        self.server.wait()
        super().tearDown()

    def test_set_get_rm_and_stats_go_to_redis_under_the_namespace(self):
        self.run_cli("set", "--remote", self.url, "ns", "k", "-", input=b"bytes\0here", expect=0)
        self.assertEqual(self.run_cli("get", "--remote", self.url, "ns", "k", expect=0).stdout, b"bytes\0here")
        # Another namespace does not see it; nothing was written to a folder.
        self.run_cli("get", "--remote", self.url, "other", "k", expect=1)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "ns")))
        stats = json.loads(self.run_cli("stats", "--json", "--remote", self.url, "ns", expect=0).stdout)
        self.assertTrue(stats["reachable"])
        self.assertTrue(stats["invalidation_up"])
        self.run_cli("rm", "--remote", self.url, "ns", "k", expect=0)
        self.run_cli("get", "--remote", self.url, "ns", "k", expect=1)

    def test_an_unreachable_server_is_an_error_that_hides_the_password(self):
        proc = self.run_cli("get", "--remote", "unix://user:hunter2@/nonexistent/r.sock", "ns", "k", expect=2)
        self.assertIn(b"cannot reach Redis", proc.stderr)
        self.assertNotIn(b"hunter2", proc.stderr)


def main():
    global BINARY
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--binary", default=os.environ.get("YYCACHE_BIN"))
    args, rest = parser.parse_known_args()
    if not args.binary:
        sys.exit("usage: test_cli.py --binary PATH/TO/yycache [unittest options] "
                 "(or set YYCACHE_BIN)")
    BINARY = os.path.abspath(args.binary)
    if not os.access(BINARY, os.X_OK):
        sys.exit(f"test_cli.py: {BINARY}: not an executable")
    unittest.main(argv=[sys.argv[0], *rest])


if __name__ == "__main__":
    main()
