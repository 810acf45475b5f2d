"""The control socket (docs/operations.md, "The control channel") with a
real BIRD peer.

- Every `petrel` subcommand: reload (and a bad file: its errors, exit 1),
  peer disable/enable/reset/reset --soft-in/--soft-out/shutdown --message,
  route announce/withdraw/list; and the errors: unknown peer, daemon not
  running (no socket, a socket nobody answers on), permission denied (a
  user outside the socket's group).
- The socket is a Unix socket with mode 0660, and Petrel's TCP listeners
  are only BGP and HTTP: the control channel added none.
- Bounds: a line longer than 16 KiB ends its connection with an error;
  max_connections + 1 connections: the last is told and closed.
- A health-checker-like script holds one connection and announces and
  withdraws one prefix 1,000 times through the JSON interface, waiting
  for each change to reach BIRD: a packet tap in BIRD's namespace sees
  one UPDATE per command (an announcement, then a withdrawal), BIRD counts
  1,000 more of each, and the time from sending the command to the UPDATE
  arriving is printed (median, 99th percentile, maximum) for
  docs/performance.md.
- control.max_injected_routes: one route more than the bound is refused,
  a route already injected can still change; a reload raises the bound.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import time

import lab as L

PETREL_ASN = 65001
BIRD_ASN = 65002
HOLD = 9
V4 = ("ipv4-unicast",)
PREFIX = "192.0.2.0/24"
FLIPS = 1000
SPACED = 100


def ctl(petrel: L.Petrel, sock: str, *args: str, user: int | None = None) -> subprocess.CompletedProcess:
    cmd = [petrel.binary, "-s", sock, *args]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def bird_routes(bird: L.Bird) -> str:
    return bird.birdc("show", "route", "all", "protocol", bird.proto)


def bird_has(bird: L.Bird, prefix: str) -> bool:
    return prefix in bird.received_prefixes("ipv4-unicast")


class Channel:
    """One held connection, one request line out and one answer line back."""

    def __init__(self, path: str):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(10)
        self.s.connect(path)
        self.buf = b""

    def ask(self, req: dict) -> dict:
        self.s.sendall(json.dumps(req).encode() + b"\n")
        return self.answer()

    def answer(self) -> dict:
        deadline = time.monotonic() + 10
        while b"\n" not in self.buf:
            assert time.monotonic() < deadline, "no answer"
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        self.s.close()


class UpdateTap:
    """BGP UPDATEs from Petrel arriving at a node, seen by a packet socket
    in the node's namespace (IPv4, one BGP message a segment or more)."""

    def __init__(self, node: L.Node, src: str):
        self.s = node.lab.socket_in(node.ns, socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
        self.s.bind((L.IFNAME, 0))
        self.src = socket.inet_aton(src)

    def next(self, timeout: float) -> tuple[float, str]:
        """(arrival time, "announce" or "withdraw") of the next UPDATE."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, "no UPDATE arrived"
            self.s.settimeout(left)
            frame, (_, _, pkttype, _, _) = self.s.recvfrom(65536)
            now = time.monotonic()
            if pkttype == socket.PACKET_OUTGOING:
                continue
            ip = frame[14:]
            if len(ip) < 20 or ip[9] != 6 or ip[12:16] != self.src:
                continue
            tcp = ip[(ip[0] & 0x0F) * 4:]
            if 179 not in (int.from_bytes(tcp[0:2], "big"), int.from_bytes(tcp[2:4], "big")):
                continue
            data = tcp[(tcp[12] >> 4) * 4:]
            while len(data) >= 19 and data[:16] == b"\xff" * 16:
                length, kind = int.from_bytes(data[16:18], "big"), data[18]
                if kind == 2:
                    withdrawn = int.from_bytes(data[19:21], "big")
                    return now, "withdraw" if withdrawn else "announce"
                data = data[length:]


def bird_counts(bird: L.Bird) -> tuple[int, int]:
    """BIRD's received import updates and withdraws."""
    out = bird.birdc("show", "protocols", "all", bird.proto)
    u = re.search(r"Import updates:\s+(\d+)", out)
    w = re.search(r"Import withdraws:\s+(\d+)", out)
    assert u and w, out
    return int(u.group(1)), int(w.group(1))


def control_toml(sock: str, max_injected: int) -> str:
    return f'[control]\nsocket = "{sock}"\nmax_connections = 4\nmax_injected_routes = {max_injected}\n'


def tcp_listeners(node: L.Node) -> set[str]:
    out = node.run(["ss", "-Hltn"]).stdout
    return {line.split()[3] for line in out.splitlines() if line.strip()}


def test_control_channel(lab):
    me, bn = lab.node("petrel"), lab.node("bird")
    sock = me.path("ctl.sock")
    bird = L.Bird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD, families=V4)).start()
    petrel = L.Petrel(me, [L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD, families=V4,
                                     export_policy="all")],
                      PETREL_ASN, extra_toml=control_toml(sock, 2)).start()
    bird.wait_established(30)

    # A Unix socket, 0660; TCP: BGP and HTTP only.
    st = os.stat(sock)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o660, oct(st.st_mode)
    assert {a.rsplit(":", 1)[1] for a in tcp_listeners(me)} == {"179", str(petrel.http_port)}, tcp_listeners(me)

    # reload: a good file, then a bad one (its errors, exit 1, nothing changed).
    r = ctl(petrel, sock, "reload")
    assert r.returncode == 0, r
    r = subprocess.run([petrel.binary, "reload", "-c", petrel.conf], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r   # the socket's path from the file
    good = open(petrel.conf).read()
    with open(petrel.conf, "w") as f:
        f.write(good.replace(f"hold_time = {HOLD}", "hold_time = 2", 1))
    r = ctl(petrel, sock, "reload")
    assert r.returncode == 1, r
    assert "the configuration was not changed" in r.stderr and f"{petrel.conf}:" in r.stderr \
        and "peer[0].hold_time" in r.stderr, r.stderr
    with open(petrel.conf, "w") as f:
        f.write(good)

    # Errors: unknown peer, no daemon, nobody answering, permission denied, usage.
    r = ctl(petrel, sock, "peer", "nosuch", "reset")
    assert r.returncode == 1 and 'no peer is named "nosuch"' in r.stderr, r
    r = ctl(petrel, me.path("missing.sock"), "reload")
    assert r.returncode == 1 and "no control socket" in r.stderr, r
    dead = me.path("dead.sock")
    d = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    d.bind(dead)   # bound, never listening: connect is refused
    r = ctl(petrel, dead, "reload")
    d.close()
    assert r.returncode == 1 and "petrel is not running" in r.stderr, r
    os.chmod(me.path(""), 0o755)
    r = ctl(petrel, sock, "reload", user=65534)
    assert r.returncode == 1 and "permission denied" in r.stderr, r
    r = ctl(petrel, sock, "peer", "bird", "explode")
    assert r.returncode == 2, r

    # peer: disable keeps the session down, enable brings it back.
    r = ctl(petrel, sock, "peer", "bird", "disable")
    assert r.returncode == 0, r
    L.wait_until(lambda: bird.state().state != "Established", 10, "BIRD's session down")
    time.sleep(3)   # BIRD retries (error wait 1..2 s): Petrel refuses
    assert bird.state().state != "Established"
    assert petrel.events("connection-refused", peer="bird"), "BIRD's connections refused while disabled"
    assert petrel.api_peer("bird")["admin_disabled"] is True
    r = ctl(petrel, sock, "peer", "bird", "enable")
    assert r.returncode == 0, r
    bird.wait_established(30)
    assert petrel.api_peer("bird")["admin_disabled"] is False

    # shutdown with RFC 9003 text: BIRD reports it.
    r = ctl(petrel, sock, "peer", "bird", "shutdown", "--message", "maintenance window 42")
    assert r.returncode == 0, r
    L.wait_until(lambda: "maintenance window 42" in bird.birdc("show", "protocols", "all", bird.proto), 10,
                 "BIRD shows the shutdown communication")
    assert ctl(petrel, sock, "peer", "bird", "enable").returncode == 0
    bird.wait_established(30)

    # reset: down and up again; soft-in: a ROUTE-REFRESH; soft-out: ok.
    up_before = petrel.api_peer("bird")
    r = ctl(petrel, sock, "peer", "bird", "reset")
    assert r.returncode == 0, r
    L.wait_until(lambda: petrel.events("session-down", peer="bird"), 10, "the reset seen")
    bird.wait_established(30)
    L.wait_until(lambda: petrel.api_peer("bird")["state"].lower() == "established", 20, "Petrel established")
    rr0 = int(petrel.api_peer("bird")["messages"]["out"].get("route-refresh", 0))
    # (After a reset both sides dial: a collision may close the first
    # session that comes up, so these wait for one that stays.)
    r = L.wait_until(lambda: (x := ctl(petrel, sock, "peer", "bird", "reset", "--soft-in")).returncode == 0 and x,
                     20, "soft-in on an established session")
    assert "ROUTE-REFRESH sent" in r.stdout, r
    L.wait_until(lambda: int(petrel.api_peer("bird")["messages"]["out"].get("route-refresh", 0)) > rr0, 10,
                 "a ROUTE-REFRESH counted")
    r = L.wait_until(lambda: (x := ctl(petrel, sock, "peer", "bird", "reset", "--soft-out")).returncode == 0 and x,
                     20, "soft-out on an established session")
    assert "sent again" in r.stdout, r
    assert up_before is not None

    # route: announced with attributes, listed as injected, withdrawn.
    r = ctl(petrel, sock, "route", "announce", "198.51.100.0/24", "communities", "65000:7", "large-communities",
            "65000:1:2", "med", "30")
    assert r.returncode == 0, r
    L.wait_until(lambda: bird_has(bird, "198.51.100.0/24"), 10, "BIRD has the injected route")
    out = bird_routes(bird)
    assert "(65000,7)" in out and "(65000, 1, 2)" in out and "BGP.med: 30" in out, out
    r = ctl(petrel, sock, "route", "list")
    assert r.returncode == 0 and json.loads(r.stdout)[0]["origin"] == "injected", r
    api = petrel.api("/api/routes")
    assert any(rt["peer"] == "injected" for p in api["prefixes"] for rt in p["routes"]), api
    # A reload keeps injected routes.
    assert ctl(petrel, sock, "reload").returncode == 0
    time.sleep(1)
    assert bird_has(bird, "198.51.100.0/24")
    r = ctl(petrel, sock, "route", "withdraw", "198.51.100.0/24")
    assert r.returncode == 0, r
    L.wait_until(lambda: not bird_has(bird, "198.51.100.0/24"), 10, "BIRD lost the route")
    r = ctl(petrel, sock, "route", "withdraw", "198.51.100.0/24")
    assert r.returncode == 1 and "no injected route" in r.stderr, r

    # max_injected_routes = 2: a third route is refused, an injected one
    # still changes; a reload raises the bound.
    extra = ("192.0.2.128/25", "192.0.2.0/25", "203.0.113.0/24")
    assert ctl(petrel, sock, "route", "announce", extra[0]).returncode == 0
    assert ctl(petrel, sock, "route", "announce", extra[1]).returncode == 0
    r = ctl(petrel, sock, "route", "announce", extra[2])
    assert r.returncode == 1 and "at most 2 routes can be injected" in r.stderr, r
    assert ctl(petrel, sock, "route", "announce", extra[0], "med", "5").returncode == 0
    petrel.extra_toml = control_toml(sock, 3)
    with open(petrel.conf, "w") as f:
        f.write(petrel.config())
    assert ctl(petrel, sock, "reload").returncode == 0
    assert ctl(petrel, sock, "route", "announce", extra[2]).returncode == 0
    L.wait_until(lambda: all(bird_has(bird, p) for p in extra), 10, "BIRD has the three injected routes")
    for p in extra:
        assert ctl(petrel, sock, "route", "withdraw", p).returncode == 0
    L.wait_until(lambda: not any(bird_has(bird, p) for p in extra), 10, "BIRD lost them")

    # Bounds: an overlong line; one connection over max_connections.
    c = Channel(sock)
    c.s.sendall(b"x" * (20 * 1024))
    a = c.answer()
    assert a["ok"] is False and "longer than" in a["error"], a
    try:   # closed; with our bytes unread, a Unix socket reports a reset
        assert c.s.recv(10) == b""
    except ConnectionResetError:
        pass
    c.close()
    held = [Channel(sock) for _ in range(4)]
    extra = Channel(sock)
    a = extra.answer()
    assert a["ok"] is False and "too many" in a["error"], a
    extra.close()
    assert held[0].ask({"command": "routes"})["ok"] is True
    for h in held:
        h.close()

    # 1,000 flips through one held connection, each change seen arriving
    # at BIRD before the next command. (The daemon sees the closed
    # connections go on its next loop turn.)
    def fresh():
        c = Channel(sock)
        try:
            if c.ask({"command": "routes"})["ok"]:
                return c
        except ConnectionError:
            pass
        c.close()
        return None
    ch = L.wait_until(fresh, 5, "a connection is taken again")
    tap = UpdateTap(bn, me.v4)
    updates0, withdraws0 = bird_counts(bird)
    # The last SPACED flips leave 5 ms before each command: a change after
    # a quiet moment, not paced by the exporter's gap (docs/performance.md).
    latencies: list[float] = []
    spaced: list[float] = []
    t0 = time.monotonic()
    for i in range(FLIPS):
        assert time.monotonic() - t0 < 300, f"{i} flips took too long"
        for req, kind in (({"command": "announce", "prefix": PREFIX, "communities": [f"65000:{i % 1000}"]},
                           "announce"),
                          ({"command": "withdraw", "prefix": PREFIX}, "withdraw")):
            if i >= FLIPS - SPACED:
                time.sleep(0.005)
            sent = time.monotonic()
            a = ch.ask(req)
            assert a["ok"], a
            arrived, got = tap.next(10)
            assert got == kind, (i, kind, got)
            (spaced if i >= FLIPS - SPACED else latencies).append(arrived - sent)
        if i % 250 == 0:
            L.wait_until(lambda: not bird_has(bird, PREFIX), 10, f"flip {i}: BIRD lost the route")
    elapsed = time.monotonic() - t0
    L.wait_until(lambda: bird_counts(bird) == (updates0 + FLIPS, withdraws0 + FLIPS), 10,
                 f"BIRD counted {FLIPS} announcements and {FLIPS} withdrawals")
    a = ch.ask({"command": "announce", "prefix": PREFIX})
    assert a["ok"], a
    L.wait_until(lambda: bird_has(bird, PREFIX), 10, "BIRD's final state: announced")
    ch.close()
    assert bird.state().state == "Established"
    for name, got in (("back to back", latencies), ("5 ms apart", spaced)):
        got.sort()
        ms = [1000 * got[int(q * (len(got) - 1))] for q in (0.5, 0.99, 1.0)]
        print(f"command to UPDATE at BIRD, {name}: {len(got)} commands, median {ms[0]:.2f} ms, "
              f"p99 {ms[1]:.2f} ms, max {ms[2]:.2f} ms")
    print(f"{FLIPS} announce/withdraw pairs in {elapsed:.2f} s")


def test_injected_routes_survive_a_restart(lab):
    """control.injected_routes_file: what was injected comes back after a
    restart; bad lines in the file are logged by line number and skipped."""
    me, bn = lab.node("petrel"), lab.node("bird")
    sock, kept = me.path("ctl.sock"), me.path("injected.jsonl")
    bird = L.Bird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD, families=V4)).start()
    petrel = L.Petrel(me, [L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD, families=V4,
                                     export_policy="all")],
                      PETREL_ASN, extra_toml=control_toml(sock, 10) + f'injected_routes_file = "{kept}"\n').start()
    bird.wait_established(30)
    assert ctl(petrel, sock, "route", "announce", "192.0.2.0/24", "communities", "65000:7", "med", "30").returncode == 0
    assert ctl(petrel, sock, "route", "announce", "198.51.100.0/24").returncode == 0
    assert ctl(petrel, sock, "route", "announce", "203.0.113.0/24", "origin", "egp").returncode == 0
    assert ctl(petrel, sock, "route", "withdraw", "198.51.100.0/24").returncode == 0
    before = json.loads(ctl(petrel, sock, "route", "list").stdout)
    assert [r["prefix"] for r in before] == ["192.0.2.0/24", "203.0.113.0/24"], before
    L.wait_until(lambda: os.path.exists(kept) and len(open(kept).read().splitlines()) == 2, 5,
                 "the file holds the two routes")

    petrel.stop(signal.SIGINT)
    with open(kept, "a") as f:
        f.write("not json\n" + '{"command":"withdraw","prefix":"192.0.2.0/24"}\n' + "x" * 20000 + "\n")
    petrel.start()
    bird.wait_established(30)
    after = json.loads(ctl(petrel, sock, "route", "list").stdout)
    assert after == before, (before, after)
    ev = petrel.wait_events("injected-restored")[-1]
    assert ev["routes"] == "2" and ev["refused"] == "3", ev
    assert [e["line"] for e in petrel.events("injected-restore-refused")] == ["3", "4", "5"]
    L.wait_until(lambda: bird_has(bird, "192.0.2.0/24") and bird_has(bird, "203.0.113.0/24"), 10,
                 "BIRD has the restored routes")
    assert "BGP.med: 30" in bird.birdc("show", "route", "all", "192.0.2.0/24")
