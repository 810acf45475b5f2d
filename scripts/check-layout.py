#!/usr/bin/env python3
"""Checks the layout: every #include follows the one table of modules in
docs/ARCHITECTURE.md ("Modules and what they may depend on"), and pure
modules hold no I/O and read no clock.

The table (between the `check-layout` marker and the first line that is not
a table row) gives, for each folder, which modules it may include and
whether it is pure. From it:

1. Every source file (.h .hpp .cpp .cc .c) belongs to the row of the
   longest folder that holds it; a file in no row fails.
2. Every `#include "path"` names a file of the repository that belongs to
   the file's own module or to one its row lists; anything else fails.
3. A pure module includes no socket, event-loop, libmnl, HTTP or toml++
   header and never reads a clock.

No path is exempt: what must do I/O (the kernel driver, tools) has a row of
its own that says so. Text after // on a line is ignored, so a comment may
name what it avoids. Standard library only.

Usage: check-layout.py [--root DIR] [--table FILE] | --selftest
Prints every offence as file:line: what: text; exits 1 if any.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".c")
MARKER = "<!-- check-layout"

BANNED_HEADER = re.compile(
    r"#\s*include\s*<(sys/socket\.h|sys/un\.h|sys/epoll\.h|sys/select\.h|poll\.h|netdb\.h|"
    r"netinet/[^>]*|arpa/[^>]*|ev\.h|ev\+\+\.h|libmnl/[^>]*|toml\+\+/[^>]*|microhttpd\.h)>")
CLOCK_READ = re.compile(
    r"(system_clock|steady_clock|high_resolution_clock|utc_clock|tai_clock|gps_clock|file_clock)::now"
    r"|\bclock_gettime\b|\bgettimeofday\b|\btimespec_get\b"
    r"|(^|[^A-Za-z0-9_.>])(std::)?time\s*\(|std::clock\s*\(|\bev_now\b|\bev_time\b")
LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


class Row:
    def __init__(self, folder: str, may: list[str], pure: bool, line: int):
        self.folder = folder  # "fib/driver" (no trailing slash)
        self.may = may
        self.pure = pure
        self.line = line


def parse_table(text: str, where: str) -> list[Row]:
    """The rows of the table after the marker; raises ValueError on a
    malformed table (a check that cannot read its rules must fail)."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.strip().startswith(MARKER)), None)
    if start is None:
        raise ValueError(f"{where}: no '{MARKER}' marker before the layout table")
    rows: list[Row] = []
    i = start + 1
    while i < len(lines) and not lines[i].strip().startswith("|"):
        i += 1
    header = True
    for n in range(i, len(lines)):
        l = lines[n].strip()
        if not l.startswith("|"):
            break
        cells = [c.strip() for c in l.strip("|").split("|")]
        if header:
            if [c.lower() for c in cells[:3]] != ["folder", "may include", "pure"]:
                raise ValueError(f"{where}:{n + 1}: the table's columns must be: folder | may include | pure")
            header = False
            continue
        if set(l) <= set("|-: "):
            continue
        if len(cells) < 3:
            raise ValueError(f"{where}:{n + 1}: a row needs three cells")
        folders = re.findall(r"`([^`]+)`", cells[0])
        if not folders:
            raise ValueError(f"{where}:{n + 1}: no `folder/` in the first cell")
        may = [] if cells[1] in ("", "-", "—") else [m.strip().strip("`").rstrip("/") for m in cells[1].split(",")]
        if cells[2] not in ("yes", "no"):
            raise ValueError(f"{where}:{n + 1}: pure must be yes or no, not {cells[2]!r}")
        for f in folders:
            rows.append(Row(f.rstrip("/"), may, cells[2] == "yes", n + 1))
    if not rows:
        raise ValueError(f"{where}: the layout table has no rows")
    names = {r.folder for r in rows}
    for r in rows:
        for m in r.may:
            if m not in names:
                raise ValueError(f"{where}:{r.line}: '{r.folder}/' may include '{m}', which has no row")
    return rows


def module_of(path: str, rows: list[Row]) -> Row | None:
    best = None
    for r in rows:
        if path.startswith(r.folder + "/") and (best is None or len(r.folder) > len(best.folder)):
            best = r
    return best


def source_files(root: str) -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.split("\n")
        files = [f for f in out if f and os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build", "obj-")) and x != "debian"]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if f.endswith(SOURCE_SUFFIXES) and not f.startswith(("build", ".")))


def check(root: str, table_path: str) -> list[str]:
    with open(os.path.join(root, table_path), encoding="utf-8") as f:
        rows = parse_table(f.read(), table_path)
    files = source_files(root)
    present = set(files)
    bad: list[str] = []
    for path in files:
        row = module_of(path, rows)
        if row is None:
            bad.append(f"{path}:1: in no module of {table_path}'s layout table")
            continue
        allowed = {row.folder} | set(row.may)
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for ln, line in enumerate(text.splitlines(), 1):
            code = line.split("//", 1)[0]
            m = LOCAL_INCLUDE.match(code)
            if m:
                target = m.group(1)
                if target not in present and not os.path.exists(os.path.join(root, target)):
                    # Relative to the file: the style is includes from the root.
                    bad.append(f"{path}:{ln}: include not from the repository root: {line.strip()}")
                    continue
                dest = module_of(target, rows)
                if dest is None:
                    bad.append(f"{path}:{ln}: includes a file of no module: {line.strip()}")
                elif dest.folder not in allowed:
                    bad.append(f"{path}:{ln}: {row.folder}/ may not include {dest.folder}/: {line.strip()}")
            if row.pure:
                if BANNED_HEADER.search(code):
                    bad.append(f"{path}:{ln}: I/O header in pure module {row.folder}/: {line.strip()}")
                if CLOCK_READ.search(code):
                    bad.append(f"{path}:{ln}: clock read in pure module {row.folder}/: {line.strip()}")
    return bad


def run(root: str, table_path: str) -> int:
    try:
        bad = check(root, table_path)
    except ValueError as e:
        print(f"check-layout: {e}")
        return 1
    for b in bad:
        print(b)
    if bad:
        print(f"check-layout: FAILED, {len(bad)} offences (the rules: {table_path}, 'Modules and what they may depend on')")
        return 1
    print(f"check-layout: ok ({len(source_files(root))} files)")
    return 0


SELFTEST_TABLE = """# Fixture
<!-- check-layout: fixture -->
| folder | may include | pure |
|---|---|---|
| `base/` | — | yes |
| `proto/` | base | yes |
| `io/` | proto, base | no |
"""

SELFTEST_CASES = {
    # name: (files, expected substrings of the offences; [] = must pass)
    "clean": ({"base/a.h": '#include <vector>\n', "proto/p.cpp": '#include "base/a.h"\n// std::time(nullptr) in a comment\n',
               "io/s.cpp": '#include <sys/socket.h>\n#include "proto/p.h"\nauto t = std::chrono::steady_clock::now();\n',
               "proto/p.h": ''}, []),
    "forbidden include": ({"base/a.h": '#include "proto/p.h"\n', "proto/p.h": ''}, ["base/ may not include proto/"]),
    "upward include": ({"proto/p.cpp": '#include "io/s.h"\n', "io/s.h": ''}, ["proto/ may not include io/"]),
    "clock read": ({"proto/p.cpp": 'long f() { return std::chrono::steady_clock::now().time_since_epoch().count(); }\n'},
                   ["clock read in pure module proto/"]),
    "time()": ({"base/t.cpp": 'long g() { return time(nullptr); }\n'}, ["clock read in pure module base/"]),
    "socket header": ({"proto/n.cpp": '#include <sys/socket.h>\n'}, ["I/O header in pure module proto/"]),
    "file in no module": ({"tools/x.cpp": 'int main() {}\n'}, ["in no module"]),
    "include of no module": ({"base/a.h": '#include "elsewhere/e.h"\n', "elsewhere/e.h": ''}, ["in no module", "no module"]),
}


def selftest() -> int:
    failures = 0
    for name, (files, expect) in SELFTEST_CASES.items():
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "ARCH.md"), "w") as f:
                f.write(SELFTEST_TABLE)
            for p, body in files.items():
                os.makedirs(os.path.dirname(os.path.join(d, p)), exist_ok=True)
                with open(os.path.join(d, p), "w") as f:
                    f.write(body)
            bad = check(d, "ARCH.md")
            ok = (not bad) if not expect else all(any(e in b for b in bad) for e in expect)
            print(f"selftest {name}: {'ok' if ok else 'WRONG'}" + ("" if ok else f" (got {bad}, expected {expect})"))
            failures += not ok
    for broken in ("no table here", "<!-- check-layout -->\n| folder | may include | pure |\n|---|---|---|\n| `a/` | b | yes |\n"):
        try:
            parse_table(broken, "broken")
            print("selftest malformed table: WRONG (accepted)")
            failures += 1
        except ValueError:
            print("selftest malformed table: ok")
    print("check-layout selftest: " + ("ok" if not failures else f"{failures} FAILED"))
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--table", default="docs/ARCHITECTURE.md")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        return selftest()
    return run(os.path.realpath(a.root), a.table)


if __name__ == "__main__":
    sys.exit(main())
