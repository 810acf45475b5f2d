#!/usr/bin/env python3
"""Checks the man pages against the code (dist/meson.build's man-pages test):
every configuration key the parser takes (the only_keys(...) lists of
daemon/config.cpp) is named in petrel.toml(5), and every command of
`petrel --help` has its section in petrel(8).

check-man.py CONFIG_CPP PETREL_TOML_5 PETREL_8 PETREL
"""

from __future__ import annotations

import re
import subprocess
import sys


def main() -> int:
    config_cpp, page5, page8, petrel = sys.argv[1:5]
    src = open(config_cpp).read()
    keys: set[str] = set()
    for m in re.finditer(r"only_keys\([^{]*\{([^}]*)\}", src):
        keys.update(re.findall(r'"([a-z0-9_]+)"', m.group(1)))
    if len(keys) < 60:
        print(f"only {len(keys)} keys found in {config_cpp}: the pattern no longer matches the parser")
        return 1
    text5 = open(page5).read().replace("\\_", "_").replace("\\-", "-")
    missing = sorted(k for k in keys if not re.search(r"(^|[^a-z0-9_])" + re.escape(k) + r"([^a-z0-9_]|$)", text5))
    text8 = open(page8).read()
    top = subprocess.run([petrel, "--help"], capture_output=True, text=True, timeout=10).stdout
    commands = [m.group(1) for m in re.finditer(r"^  ([a-z]+)\b", top, re.M) if m.group(1) != "help"]
    no_section = [c for c in commands if not re.search(r"^\.SS " + c + r"\s*$", text8, re.M)]
    for k in missing:
        print(f"{page5}: the key {k} is not described")
    for c in no_section:
        print(f"{page8}: no section for the command {c}")
    print(f"{len(keys)} keys, {len(commands)} commands checked")
    return 1 if missing or no_section or not commands else 0


if __name__ == "__main__":
    sys.exit(main())
