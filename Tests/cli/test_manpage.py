#!/usr/bin/env python3
"""The yycache(1) manual page and the bash completion say what the tool's own help says.

    python3 Tests/cli/test_manpage.py --binary build/dev/Sources/yycache-cli/yycache \
        [--build-dir build/dev] [-v] [-k PATTERN]

The commands come from the command table in Sources/yycache-cli/main.c and from `yycache --help`;
each command's usage line and options from `yycache help COMMAND`. The manual page
(Sources/yycache-cli/yycache.1) must render with `man --warnings -l` without a warning, list every
command with the same usage line and the same options, and the completion
(Sources/yycache-cli/yycache.bash-completion) must offer every command and each command's
options. With --build-dir, `cmake --install` of the YYCache_Tools component must put both where
man and bash-completion look. Standard library only; needs man (man-db) and bash.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
CLI_DIR = os.path.join(SOURCE, "Sources", "yycache-cli")
MAN_PAGE = os.path.join(CLI_DIR, "yycache.1")
COMPLETION = os.path.join(CLI_DIR, "yycache.bash-completion")
MAIN_C = os.path.join(CLI_DIR, "main.c")

BINARY = None  # set in main()
BUILD_DIR = None

SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "EXIT STATUS",
            "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"]

# A value for each option that takes one, to check the tool accepts what the page documents.
OPTION_VALUES = {"--limit": "1", "--sort": "key", "--count": "1", "--size": "1", "--age": "1",
                 "--output": "out", "-o": "out", "-n": "1", "--remote": "unix:///nonexistent/redis.sock"}

LONG_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


def run(args, env=None, check=True, cwd=None):
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args!r} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def help_text(*args):
    return run([BINARY, *args]).stdout


def table_commands():
    """The names in main.c's command table ({"name", cmd_name, ...})."""
    with open(MAIN_C) as f:
        return re.findall(r'^\s*\{"([a-z]+)", cmd_[a-z_]+,', f.read(), re.M)


def help_commands():
    """The commands `yycache --help` lists (two-space indented "NAME PATH ..." lines)."""
    return re.findall(r"^  ([a-z]+) PATH", help_text("--help"), re.M)


def usage(command):
    first = help_text("help", command).splitlines()[0]
    assert first.startswith("usage: yycache "), first
    return first[len("usage: "):]


def described_long_options(command):
    """The long options `yycache help COMMAND` describes: those of its usage line, those that
    start a line, and --long of "-x/--long" (not those named in passing, such as clear's
    mention of 'verify --repair')."""
    text = help_text("help", command)
    lines = text.splitlines()
    found = set(LONG_OPTION.findall(lines[0]))
    found |= set(re.findall(r"^\s+(--[a-z][a-z-]*)", text, re.M))
    found |= set(re.findall(r"(?<![\w-])-[a-zA-Z]/(--[a-z][a-z-]*)", text))
    return found


def normalize(text):
    return " ".join(text.split())


def render_man_page():
    """The page as `man -l` shows it at 80 columns: (returncode, text, warnings)."""
    if not shutil.which("man"):
        raise AssertionError("man not found: install man-db (make deps)")
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C", MANPAGER="cat", PAGER="cat")
    proc = run(["man", "--warnings", "-l", MAN_PAGE], env=env, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def sections(text):
    """Section name -> its text, from the rendered page (headings start in column 0)."""
    found, name = {}, None
    for line in text.splitlines():
        heading = line and not line[0].isspace() and line.upper() == line
        if heading and not line.startswith("YYCACHE("):
            name = line.strip()
            found[name] = []
        elif name:
            found[name].append(line)
    return {k: "\n".join(v) for k, v in found.items()}


def command_entries(commands_text, commands):
    """Command name -> (its usage line, the text of its entry) from the COMMANDS section."""
    entries, current = {}, None
    for line in commands_text.splitlines():
        m = re.match(r"^ {7}yycache ([a-z]+)(\s.*)?$", line)
        if m and m.group(1) in commands:
            current = m.group(1)
            entries[current] = [normalize(line), []]
        elif current:
            entries[current][1].append(line)
    return {k: (u, "\n".join(body)) for k, (u, body) in entries.items()}


def complete(*words):
    """What _yycache offers for the words (the last one is being completed)."""
    script = (f'source "{COMPLETION}"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _yycache; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    proc = run(["bash", "--norc", "--noprofile", "-c", script, "bash", *words])
    return sorted(filter(None, proc.stdout.splitlines()))


class ManualPageTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.returncode, cls.text, cls.warnings = render_man_page()
        cls.sections = sections(cls.text)
        cls.commands = table_commands()

    def test_command_table_and_general_help_list_the_same_commands(self):
        self.assertGreater(len(self.commands), 5)
        self.assertEqual(sorted(help_commands() + ["help"]), sorted(self.commands))

    def test_manual_page_renders_at_80_columns_without_warnings(self):
        self.assertEqual(self.returncode, 0, self.warnings)
        self.assertEqual(self.warnings, "", "man --warnings -l printed warnings")
        self.assertIn("yycache - inspect and maintain", self.text)
        long_lines = [line for line in self.text.splitlines() if len(line) > 80]
        self.assertEqual(long_lines, [], "lines wider than MANWIDTH=80")

    def test_manual_page_has_the_conventional_sections_in_order(self):
        self.assertEqual([s for s in self.sections if s in SECTIONS], SECTIONS)

    def test_manual_page_lists_every_command_with_its_usage_line(self):
        entries = command_entries(self.sections["COMMANDS"], self.commands)
        self.assertEqual(sorted(entries), sorted(self.commands))
        for command in self.commands:
            with self.subTest(command=command):
                self.assertEqual(entries[command][0], normalize(usage(command)))

    def test_manual_page_documents_exactly_the_options_of_each_commands_help(self):
        entries = command_entries(self.sections["COMMANDS"], self.commands)
        for command in self.commands:
            with self.subTest(command=command):
                in_help = set(LONG_OPTION.findall(help_text("help", command)))
                line, body = entries[command]
                in_page = set(LONG_OPTION.findall(line + "\n" + body))
                self.assertEqual(in_page, in_help)

    def test_every_option_in_the_manual_page_is_accepted_by_the_tool(self):
        entries = command_entries(self.sections["COMMANDS"], self.commands)
        with tempfile.TemporaryDirectory(prefix="yycache-manpage-") as tmp:
            missing = os.path.join(tmp, "no-such-folder")
            for command in self.commands:
                if command == "help":
                    continue
                # The options of the usage line and those the entry describes (its tags); not
                # those named in passing (clear's text mentions verify's --repair).
                line, body = entries[command]
                options = set(re.findall(r"(?<![\w-])--?[a-zA-Z][a-z-]*", line.split(" ", 2)[2]))
                options |= set(re.findall(r"^ {14}(--?[a-z][a-z-]*)", body, re.M))
                options -= {"-", "--"}
                self.assertTrue(options or command in ("set", "rm", "clear"), command)
                for option in sorted(options):
                    with self.subTest(command=command, option=option):
                        args = [option] + ([OPTION_VALUES[option]] if option in OPTION_VALUES
                                           else [])
                        proc = run([BINARY, command, missing, "k", *args], check=False, cwd=tmp)
                        self.assertNotIn("unknown option", proc.stderr)
                        self.assertNotIn("needs a value", proc.stderr)

    def test_options_section_lists_the_general_options(self):
        general = help_text("--help")
        line = next(l for l in general.splitlines() if l.startswith("Options:"))
        options = set(re.findall(r"(?<![\w-])--?[a-zA-Z][a-z-]*", line))
        self.assertTrue({"--help", "--version", "--json", "--bytes", "-h"} <= options, options)
        options.add("-V")  # main.c accepts -V for --version
        page = set(re.findall(r"(?<![\w-])--?[a-zA-Z][a-z-]*", self.sections["OPTIONS"]))
        self.assertTrue(options <= page, options - page)
        self.assertEqual(run([BINARY, "-V"]).stdout, run([BINARY, "--version"]).stdout)

    def test_exit_status_section_lists_the_statuses_of_the_help(self):
        general = help_text("--help")
        statuses = set(re.findall(r"(?:Exit status: |; |^)([0-9]) ", general, re.M))
        self.assertEqual(statuses, {"0", "1", "2"})
        page = set(re.findall(r"^ {7}([0-9])\s", self.sections["EXIT STATUS"], re.M))
        self.assertEqual(page, statuses)

    def test_manual_page_names_the_tools_version(self):
        with open(MAN_PAGE) as f:
            th = next(l for l in f if l.startswith(".TH "))
        version = run([BINARY, "--version"]).stdout.split()[1]
        self.assertIn(f'"YYCache {version}"', th)
        self.assertIn(f"yycache {version}", self.sections["OPTIONS"])


class CompletionTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.commands = table_commands()

    def test_completion_offers_every_command(self):
        offered = complete("yycache", "")
        self.assertEqual(sorted(set(offered) - {"-h", "--help", "-V", "--version"}),
                         sorted(self.commands))

    def test_completion_offers_commands_by_prefix(self):
        self.assertEqual(complete("yycache", "v"), ["vacuum", "verify"])

    def test_completion_offers_each_commands_options(self):
        for command in self.commands:
            if command == "help":
                continue
            with self.subTest(command=command):
                expected = described_long_options(command) | {"--help"}
                self.assertEqual(set(complete("yycache", command, "/tmp", "--")), expected)

    def test_completion_completes_help_with_commands(self):
        self.assertEqual(complete("yycache", "help", ""), sorted(self.commands))

    def test_completion_offers_the_sort_orders(self):
        self.assertEqual(complete("yycache", "ls", "/tmp", "--sort", ""), ["access", "key", "size"])

    def test_completion_offers_no_option_after_double_dash(self):
        self.assertEqual(complete("yycache", "rm", "/tmp", "--", "--"), [])


class InstallTests(unittest.TestCase):
    def test_cmake_install_puts_the_page_and_the_completion_where_they_are_looked_for(self):
        if not BUILD_DIR:
            self.skipTest("no --build-dir")
        cmake = os.environ.get("CMAKE", "cmake")
        with tempfile.TemporaryDirectory(prefix="yycache-install-") as prefix:
            run([cmake, "--install", BUILD_DIR, "--prefix", prefix, "--component", "YYCache_Tools"])
            page = os.path.join(prefix, "share", "man", "man1", "yycache.1")
            completion = os.path.join(prefix, "share", "bash-completion", "completions", "yycache")
            tool = os.path.join(prefix, "bin", "yycache")
            for path, source in ((page, MAN_PAGE), (completion, COMPLETION)):
                with open(path, "rb") as installed, open(source, "rb") as original:
                    self.assertEqual(installed.read(), original.read(), path)
            self.assertTrue(os.access(tool, os.X_OK), tool)
            # man finds the installed page by name through MANPATH.
            env = dict(os.environ, MANPATH=os.path.join(prefix, "share", "man"), MANWIDTH="80",
                       LC_ALL="C", MANPAGER="cat", PAGER="cat")
            proc = run(["man", "yycache"], env=env)
            self.assertIn("yycache - inspect and maintain", proc.stdout)


def main():
    global BINARY, BUILD_DIR
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=os.environ.get("YYCACHE_BIN"))
    parser.add_argument("--build-dir", default=None)
    args, rest = parser.parse_known_args()
    if not args.binary:
        parser.error("--binary (or YYCACHE_BIN) is required")
    BINARY = os.path.abspath(args.binary)
    BUILD_DIR = args.build_dir
    unittest.main(argv=[sys.argv[0], *rest])


if __name__ == "__main__":
    main()
