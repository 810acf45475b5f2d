"""`petrel dump` (docs/operations.md, "MRT table dumps") with a real BIRD
peer announcing IPv4 and IPv6 routes.

- The dump's answer names the file, its prefixes and routes; Debian's
  `bgpdump -m` reads the file and lists exactly the routes Petrel's API
  holds: prefix, peer address and AS, AS path, next hop.
- Petrel's own MRT reader (`mrt-extract --attributes`, tools/mrt) reads
  every RIB entry back.
- A relative FILE is made absolute against the caller's directory; no
  FILE.tmp is left behind.
- Errors: a directory that does not exist (the answer names the file and
  errno's text), a relative path in a raw request.
- ADD-PATH: BIRD sends two paths per prefix (`add paths tx`); they go in
  RIB_IPV4_UNICAST_ADDPATH records, which bgpdump lists as TABLE_DUMP2_AP
  with the path identifiers the API shows.
- A second dump while one runs is refused; the main loop keeps answering
  meanwhile (the first dump's FILE.tmp is a FIFO nobody reads yet, so its
  open blocks the dump thread until the test reads it).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import lab as L
from conftest import require

PETREL_ASN = 65001
BIRD_ASN = 65002
HOLD = 9
PREFIXES = L.sample_prefixes(7, v4=4, v6=3)
INJECTED = "203.0.113.0/24"


def ctl(petrel: L.Petrel, sock: str, *args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([petrel.binary, "-s", sock, *args], capture_output=True, text=True, timeout=30, cwd=cwd)


def ask(sock: str, req: dict, timeout: float = 10) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(sock)
        s.sendall(json.dumps(req).encode() + b"\n")
        buf = b""
        deadline = time.monotonic() + timeout
        while b"\n" not in buf:
            assert time.monotonic() < deadline, "no answer"
            chunk = s.recv(65536)
            assert chunk, "closed without an answer"
            buf += chunk
        return json.loads(buf.split(b"\n", 1)[0])


def api_routes(petrel: L.Petrel) -> set[tuple[str, str, str, str]]:
    """{(prefix, peer address, AS path, next hop)} of every route Petrel holds."""
    out = set()
    listing = petrel.api("/api/routes")
    for p in listing["prefixes"]:
        detail = petrel.api(f"/api/routes/{p['prefix']}")
        for r in detail["routes"]:
            path = []
            for seg in r["attributes"].get("as_path", []):
                asns = " ".join(str(a) for a in seg["asns"])
                path.append(asns if seg["type"] == "AS_SEQUENCE" else "{" + asns.replace(" ", ",") + "}")
            out.add((detail["prefix"], r["peer_address"], " ".join(path), r["next_hop"]))
    return out


def bgpdump_routes(path: str) -> tuple[set[tuple[str, str, str, str]], list[str]]:
    r = subprocess.run(["bgpdump", "-m", path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    got = set()
    for ln in lines:
        f = ln.split("|")
        # TABLE_DUMP2|time|B|peer ip|peer as|prefix|as path|origin|next hop|...
        assert f[0] == "TABLE_DUMP2" and f[2] == "B", ln
        got.add((f[5], f[3], f[6], f[8]))
    return got, lines


def test_mrt_dump_read_by_bgpdump_and_petrel(lab):
    require("bird")
    require("bgpdump")
    me, bn = lab.node("petrel"), lab.node("bird")
    sock = me.path("ctl.sock")
    bird = L.Bird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD, announce=PREFIXES)).start()
    petrel = L.Petrel(me, [L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD)], PETREL_ASN,
                      extra_toml=f'[control]\nsocket = "{sock}"\n').start()
    bird.wait_established(30)
    # An injected route too: our own routes' peer entry is our router id
    # and AS, their AS path empty.
    r = ctl(petrel, sock, "route", "announce", INJECTED, "next-hop", "198.51.100.1")
    assert r.returncode == 0, r
    L.wait_until(lambda: len((petrel.api("/api/routes") or {}).get("prefixes", [])) == len(PREFIXES) + 1, 30,
                 "Petrel holds BIRD's routes")
    want = api_routes(petrel)
    assert {w[0] for w in want} == set(PREFIXES) | {INJECTED}, want
    assert (INJECTED, me.v4, "", "198.51.100.1") in want, want
    assert any(":" in w[0] for w in want) and any("." in w[0] for w in want), want

    # petrel dump FILE: the answer says where and how much.
    out = me.path("table.mrt")
    r = ctl(petrel, sock, "dump", out)
    assert r.returncode == 0, r
    assert r.stdout.strip() == f"wrote {out}: {len(PREFIXES) + 1} prefixes, {len(want)} routes from 2 peers, " \
        f"{os.path.getsize(out)} bytes", r.stdout
    assert not os.path.exists(out + ".tmp")
    assert petrel.events("dump-written"), "the dump is logged"

    # (a) bgpdump lists exactly the routes the API holds.
    got, lines = bgpdump_routes(out)
    assert len(lines) == len(want), lines
    assert got == want, (got, want)
    for ln in lines:
        f = ln.split("|")
        assert f[4] == str(PETREL_ASN if f[5] == INJECTED else BIRD_ASN), ln

    # (b) Petrel's own reader reads every RIB entry back.
    extract = Path(petrel.binary).resolve().parents[1] / "tools" / "mrt" / "mrt-extract"
    if extract.exists():
        r = subprocess.run([str(extract), "--attributes", out], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r
        assert len(r.stdout.splitlines()) == len(want), r
        assert f"{2 + len(PREFIXES)} records read" in r.stderr, r.stderr

    # A relative name is the caller's directory's.
    r = ctl(petrel, sock, "dump", "relative.mrt", cwd=me.path(""))
    assert r.returncode == 0, r
    assert os.path.exists(me.path("relative.mrt")), r
    assert bgpdump_routes(me.path("relative.mrt"))[0] == want

    # Errors: a missing directory (file and errno named); a relative path
    # in a raw request.
    missing = me.path("no/such/dir/t.mrt")
    r = ctl(petrel, sock, "dump", missing)
    assert r.returncode == 1 and f"cannot open {missing}.tmp: No such file or directory" in r.stderr, r
    a = ask(sock, {"command": "dump", "file": "t.mrt"})
    assert a["ok"] is False and "absolute path" in a["error"], a

    # One dump at a time; the main loop answers meanwhile.
    slow = me.path("slow.mrt")
    os.mkfifo(slow + ".tmp")
    # The slow disk: a FIFO whose reader does not read yet, filled to the
    # brim, so the first dump's first write waits (a FIFO no one reads
    # would fail the dump's open at once).
    fd = os.open(slow + ".tmp", os.O_RDONLY | os.O_NONBLOCK)
    wr = os.open(slow + ".tmp", os.O_WRONLY | os.O_NONBLOCK)
    filler = 0
    for _ in range(1024):  # 64 KiB by default
        try:
            filler += os.write(wr, bytes(4096))
        except BlockingIOError:
            break
    os.close(wr)
    first = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    first.settimeout(10)
    first.connect(sock)
    first.sendall(json.dumps({"command": "dump", "file": slow}).encode() + b"\n")
    try:
        time.sleep(0.5)
        a = ask(sock, {"command": "dump", "file": me.path("second.mrt")})
        assert a["ok"] is False and "a dump is running already" in a["error"], a
        assert not os.path.exists(me.path("second.mrt"))
        r = ctl(petrel, sock, "route", "list")
        assert r.returncode == 0, r
    finally:
        # The reader drains the FIFO: the filler, then the dump's bytes.
        data = b""
        deadline = time.monotonic() + 20
        buf = b""
        while time.monotonic() < deadline:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                time.sleep(0.05)
                continue
            if not chunk and data:
                break
            data += chunk
            if b"\n" in buf:
                break
            try:
                first.setblocking(False)
                buf += first.recv(65536)
            except (BlockingIOError, socket.timeout):
                pass
        os.close(fd)
    first.settimeout(10)
    deadline = time.monotonic() + 10
    while b"\n" not in buf and time.monotonic() < deadline:
        chunk = first.recv(65536)
        if not chunk:
            break
        buf += chunk
    first.close()
    answer = json.loads(buf.split(b"\n", 1)[0])
    assert answer["ok"] is True and answer["routes"] == len(want), answer
    assert len(data) - filler == answer["bytes"], (len(data), filler, answer)
    # A dump after it is done runs again.
    r = ctl(petrel, sock, "dump", me.path("again.mrt"))
    assert r.returncode == 0, r


class AddPathBird(L.Bird):
    """BIRD sending every path it has (RFC 7911 `add paths tx`): two static
    protocols give it two routes, two paths, per IPv4 prefix."""

    def config(self) -> str:
        conf = super().config().replace("  ipv4 { import all; export all;", "  ipv4 { import all; export all; "
                                        "add paths tx;", 1)
        routes = " ".join(f"route {p} blackhole {{ bgp_med = 7; }};" for p in AP_PREFIXES)
        return conf + f"protocol static static_ipv4_b {{ ipv4; {routes} }}\n"


AP_PREFIXES = ("198.19.9.0/28", "198.19.9.16/28")


def test_mrt_dump_add_path(lab):
    """Routes with ADD-PATH path identifiers go in RIB_IPV4_UNICAST_ADDPATH
    records (RFC 8050): bgpdump lists them as TABLE_DUMP2_AP with the path
    identifiers Petrel's API shows."""
    require("bird")
    require("bgpdump")
    me, bn = lab.node("petrel"), lab.node("bird")
    sock = me.path("ctl.sock")
    bird = AddPathBird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD, families=("ipv4-unicast",),
                                     announce=AP_PREFIXES)).start()
    petrel = L.Petrel(me, [L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD, families=("ipv4-unicast",),
                                        extra=('add_path = { "ipv4-unicast" = "receive" }',))],
                      PETREL_ASN, extra_toml=f'[control]\nsocket = "{sock}"\n').start()
    bird.wait_established(30)

    def paths() -> set[tuple[str, int, str]] | None:
        out = set()
        for p in AP_PREFIXES:
            got = petrel.api(f"/api/routes/{p}")
            if not isinstance(got, dict) or len(got.get("routes", [])) != 2:
                return None
            for r in got["routes"]:
                out.add((p, r["path_id"], r["peer_address"]))
        return out
    want = L.wait_until(paths, 30, "Petrel holds two paths per prefix")
    assert all(pid != 0 for _, pid, _ in want), want
    out = me.path("ap.mrt")
    r = ctl(petrel, sock, "dump", out)
    assert r.returncode == 0, r
    b = subprocess.run(["bgpdump", "-m", out], capture_output=True, text=True, timeout=60)
    assert b.returncode == 0, b
    got = set()
    for ln in b.stdout.splitlines():
        f = ln.split("|")
        assert f[0] == "TABLE_DUMP2_AP", ln
        got.add((f[5], int(f[6]), f[3]))
    assert got == want, (got, want)
