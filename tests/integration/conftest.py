"""pytest wiring for the interop lab.

The whole suite skips, loudly, when the lab cannot run here (not root, no
network namespaces); a test that needs a daemon that is not installed skips
with the package to install.
"""

from __future__ import annotations

import os
import re
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lab as L  # noqa: E402

_UNAVAILABLE: str | None = None
try:
    L.check_available()
except L.LabUnavailable as e:
    _UNAVAILABLE = str(e)

BINARIES = {
    "bird": ("bird", "bird2"),
    "frr": ("/usr/lib/frr/bgpd", "frr"),
    "gobgp": ("gobgpd", "gobgpd"),
    "openbgpd": ("bgpctl", "openbgpd"),
    "bgpdump": ("bgpdump", "bgpdump"),   # reads MRT files (test_mrt_dump.py)
    "pmbmpd": ("pmbmpd", "pmacct"),      # a BMP collector (test_bmp.py)
    "tmux": ("tmux", "tmux"),            # a terminal for petrel top (test_top.py)
}


def pytest_report_header(config):
    if _UNAVAILABLE:
        bar = "!" * 72
        return [bar, f"INTEROP LAB UNAVAILABLE: {_UNAVAILABLE}",
                "every integration test will be SKIPPED", bar]
    return ["interop lab: network namespaces available"]


def pytest_collection_modifyitems(config, items):
    if _UNAVAILABLE:
        mark = pytest.mark.skip(reason=f"interop lab unavailable: {_UNAVAILABLE}")
        for item in items:
            item.add_marker(mark)


def pytest_terminal_summary(terminalreporter):
    if _UNAVAILABLE:
        terminalreporter.write_line(
            f"INTEROP LAB UNAVAILABLE ({_UNAVAILABLE}): integration tests skipped",
            red=True, bold=True)


def require(kind: str) -> None:
    binary, package = BINARIES[kind]
    if shutil.which(binary) is None and not os.path.exists(binary):
        pytest.skip(f"{kind}: `{binary}` not found (apt-get install {package}; "
                    f"see scripts/install-deps.sh)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


LOG_TAIL_LINES = 80


_TIMESTAMP = re.compile(r'^(time="[^"]*"|\{"ts":"[^"]*",)\s*')


def collapse_repeats(lines: list[str]) -> list[str]:
    """Runs of lines that differ only in their leading timestamp become the
    first of them and a count: StayRTR, polling its file every second,
    writes one line a second that would push everything else out of the
    tail."""
    out: list[str] = []
    key, repeats = None, 0
    for line in lines:
        k = _TIMESTAMP.sub("", line)
        if k == key:
            repeats += 1
            continue
        if repeats:
            out.append(f"    ... the line above {repeats} more time(s)\n")
        out.append(line)
        key, repeats = k, 0
    if repeats:
        out.append(f"    ... the line above {repeats} more time(s)\n")
    return out


def print_log_tails(root: str) -> None:
    """Prints the last lines of every log under `root` (a failed test's
    daemons: Petrel, BIRD, FRR, StayRTR ...), so that a failure in CI,
    whose machine is gone afterwards, can still be explained."""
    for dirpath, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if not name.endswith(".log"):
                continue
            path = os.path.join(dirpath, name)
            try:
                with open(path, errors="replace") as f:
                    lines = f.readlines()
            except OSError:
                continue
            lines = collapse_repeats(lines)
            print(f"===== {os.path.relpath(path, root)}: last {min(len(lines), LOG_TAIL_LINES)} "
                  f"of {len(lines)} lines (repeats collapsed) =====")
            print("".join(lines[-LOG_TAIL_LINES:]), end="")


@pytest.fixture
def lab(request):
    with L.Lab() as the_lab:
        yield the_lab
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            print_log_tails(the_lab.tmp)


def pytest_sessionfinish(session, exitstatus):
    # under meson, report "skipped" (77) rather than "ok" when nothing could run
    code = os.environ.get("PETREL_SKIP_EXIT")
    if _UNAVAILABLE and code and exitstatus == 0:
        session.exitstatus = int(code)
