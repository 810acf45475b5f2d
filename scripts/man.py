#!/usr/bin/env python3
"""Petrel's man pages, made from what cannot drift from the program:

  man.py config docs/configuration.md OUT.scd   petrel.toml(5) from the
                                                configuration reference
  man.py cli PETREL OUT.scd                     petrel(8) from the built
                                                program's own help texts

OUT.scd is scdoc(5) source; meson runs scdoc on it (dist/meson.build).
Only the Markdown the docs use is handled: headings, paragraphs, "- "
lists, fenced code blocks, `code`, **bold**, [links](...).
"""

from __future__ import annotations

import re
import subprocess
import sys


def escape(text: str) -> str:
    """scdoc's markup characters taken literally."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def inline(text: str) -> str:
    """Markdown inline markup to scdoc: `code` and **bold** bold, links as their text."""
    out = []
    pos = 0
    pattern = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^)]+)\)")
    for m in pattern.finditer(text):
        out.append(escape(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append("*" + escape(m.group(1)) + "*")
        elif m.group(2) is not None:
            out.append("*" + escape(m.group(2)) + "*")
        else:
            out.append(escape(m.group(3).strip("`")))
        pos = m.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def markdown_to_scdoc(md: str, title: str, section: int, name: str, summary: str) -> str:
    lines = md.splitlines()
    out = [f"{title}({section})", "", "# NAME", "", f"{name} - {summary}", ""]
    i = 0
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append(inline(" ".join(para)))
            out.append("")
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            out.append("```")
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                out.append(lines[i].replace("\t", "    "))
                i += 1
            out.append("```")
            out.append("")
        elif line.startswith("#"):
            flush()
            level = len(line) - len(line.lstrip("#"))
            text = line[level:].strip()
            if level == 1:
                pass  # the page's own title
            elif level == 2:
                out.append("# " + re.sub(r"`", "", text).upper())
                out.append("")
            else:
                out.append("## " + re.sub(r"`", "", text))
                out.append("")
        elif re.match(r"^\s*([-*]|\d+\.) ", line):
            flush()
            item = [re.sub(r"^\s*([-*]|\d+\.) ", "", line)]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and not re.match(r"^\s*([-*]|\d+\.) ", lines[i]):
                item.append(lines[i].strip())
                i += 1
            out.append("- " + inline(" ".join(item)))
            continue
        elif not line.strip():
            flush()
            if out and out[-1] != "":
                out.append("")
        else:
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out).rstrip() + "\n"


def help_text(petrel: str, *args: str) -> str:
    r = subprocess.run([petrel, *args], capture_output=True, text=True, timeout=10)
    return (r.stdout or r.stderr).rstrip()


def cli_page(petrel: str) -> str:
    top = help_text(petrel, "--help")
    commands = []
    for line in top.splitlines():
        m = re.match(r"^  ([a-z]+)\b", line)
        if m and m.group(1) not in ("help",) and m.group(1) not in commands:
            commands.append(m.group(1))
    out = ["petrel(8)", "", "# NAME", "", "petrel - a BGP-4 daemon for Linux edge routers", "",
           "# SYNOPSIS", "", "```", top, "```", "", "# DESCRIPTION", "",
           "petrel runs the daemon (*petrel run*), checks its configuration, decodes BGP messages, "
           "queries a running daemon over its HTTP API and steers it over its control socket. "
           "The configuration file is described in *petrel.toml*(5).", "", "# COMMANDS", ""]
    for c in commands:
        out += [f"## {c}", "", "```", help_text(petrel, c, "--help"), "```", ""]
    out += ["# SIGNALS", "",
            "- *SIGHUP*: reload the configuration file.",
            "- *SIGTERM*: stop for a restart: graceful restart peers and the kernel keep the routes.",
            "- *SIGINT*: stop and withdraw everything.", "",
            "# SEE ALSO", "", "*petrel.toml*(5), *systemd.service*(5)", ""]
    return "\n".join(out)


def main() -> int:
    if len(sys.argv) != 4 or sys.argv[1] not in ("config", "cli"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, source, target = sys.argv[1:]
    if kind == "config":
        with open(source) as f:
            text = markdown_to_scdoc(f.read(), "petrel.toml", 5, "petrel.toml", "the configuration of petrel(8)")
    else:
        text = cli_page(source)
    with open(target, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
