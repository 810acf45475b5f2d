"""[kernel], [rpki], [http] and [log] changed by SIGHUP with a live BIRD peer
(docs/operations.md, "Reloads").

BIRD announces 300 IPv4 and 20 IPv6 prefixes to Petrel, whose [kernel]
installs them. A watcher polls Petrel's routes (`ip route show table all
proto bgp`) every 100 ms while each change is applied, and `ip monitor
route` records every addition and removal in the kernel's order.

- [kernel] table 254 -> 200: the routes appear in table 200 and leave the
  main table, and no poll finds a prefix in neither. Then metric 32 -> 64
  in table 200, likewise; then nexthop_objects off (same table and metric:
  taken over in place), likewise.
- [rpki]: an RTR cache (StayRTR) added: /api/rpki shows it and the routes
  are marked as its VRPs say; reject_invalid on: the invalid ones leave the
  kernel; the cache removed: RPKI is off again (no marks), the routes back.
- [http] moved to another port: the new one answers, the old one refuses;
  new limits on the same port (the socket handed on); an address that
  cannot be bound keeps the running server and logs why; off, then on.
- [log] level debug and format text in the file: the level changes, and
  --log-format json on the command line wins (the log stays JSON).

Through all of it the BIRD session is never reset: one session-up in
Petrel's log, BIRD's protocol up since the same time, Petrel's uptime of
the session growing.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import socket
import threading
import time

import pytest

import lab as L
from conftest import require
from test_rpki import Cache, write_vrps

PETREL_ASN = 65001
BIRD_ASN = 65002
HOLD = 9
HTTP_PORT, HTTP_PORT2 = 8179, 8180
CACHE_PORT = 18290
V4 = tuple(f"10.{60 + i // 256}.{i % 256}.0/24" for i in range(300))
V6 = tuple(str(ipaddress.ip_network(f"fd00:60:{i:x}::/48")) for i in range(20))
INVALID = {p for p in V4 if p.startswith("10.61.")}  # 44 of them (see vrps below)


class SectionsPetrel(L.Petrel):
    """Petrel with [kernel], [log] and [rpki] as the test sets them."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.kernel = {"enabled": "true", "table": "254", "metric": "32"}
        self.log_level = ""
        self.caches: list[int] = []
        self.reject_invalid = False
        self.http_listen = f"127.0.0.1:{self.http_port}"
        self.http_limits = ""  # more keys of [http]

    def config(self) -> str:
        text = super().config().replace(f'listen = "127.0.0.1:{self.http_port}"',
                                        f'listen = "{self.http_listen}"\n{self.http_limits}', 1)
        lines = [text, "[kernel]", *(f"{k} = {v}" for k, v in self.kernel.items())]
        if self.log_level:
            lines += ["[log]", 'format = "text"', f'level = "{self.log_level}"']
        lines += ["[rpki]", f"reject_invalid = {'true' if self.reject_invalid else 'false'}"]
        for port in self.caches:
            lines += ["[[rpki.cache]]", 'address = "127.0.0.1"', f"port = {port}"]
        return "\n".join(lines) + "\n"


def reload(petrel: L.Petrel) -> None:
    """Writes the configuration, sends SIGHUP and waits for "reloaded"."""
    before = len(petrel.events("reloaded"))
    with open(petrel.conf, "w") as f:
        f.write(petrel.config())
    petrel.proc.send_signal(signal.SIGHUP)
    L.wait_until(lambda: len(petrel.events("reloaded")) > before, 10, "petrel read its configuration again")


def kernel_routes(node: L.Node) -> dict[str, set[tuple[str, int]]]:
    """Petrel's routes in every table: prefix -> {(table, metric)}."""
    res: dict[str, set[tuple[str, int]]] = {}
    for v6 in (False, True):
        p = node.run(["ip", "-j", *(["-6"] if v6 else []), "route", "show", "table", "all", "proto", "bgp"],
                     check=False)
        for r in json.loads(p.stdout or "[]"):
            res.setdefault(r["dst"], set()).add((str(r.get("table", "main")), int(r.get("metric", 0))))
    return res


def where(node: L.Node) -> dict[tuple[str, int], int]:
    """How many of BIRD's prefixes each (table, metric) holds."""
    counts: dict[tuple[str, int], int] = {}
    for prefix, places in kernel_routes(node).items():
        if prefix in V4 or prefix in V6:
            for place in places:
                counts[place] = counts.get(place, 0) + 1
    return counts


class Watcher:
    """Polls Petrel's routes every 100 ms on a thread (at most `seconds`),
    noting each poll in which one of `wanted` is in none of the places."""

    def __init__(self, node: L.Node, wanted: set[str], seconds: float = 30):
        self.node, self.wanted, self.seconds = node, wanted, seconds
        self.polls: list[dict[tuple[str, int], int]] = []
        self.gaps: list[set[str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for _ in range(int(self.seconds / 0.1)):
            if self._stop.is_set():
                return
            routes = kernel_routes(self.node)
            missing = {p for p in self.wanted if not routes.get(p)}
            if missing:
                self.gaps.append(missing)
            counts: dict[tuple[str, int], int] = {}
            for p in self.wanted:
                for place in routes.get(p, ()):
                    counts[place] = counts.get(place, 0) + 1
            self.polls.append(counts)
            time.sleep(0.1)

    def __enter__(self) -> "Watcher":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)


class RouteMonitor:
    """`ip monitor route` in the node while a change is applied: every
    addition and removal of a route of ours, in the kernel's order, so that
    a moment without a route is seen however short (the polls above see
    what stays for a while)."""

    def __init__(self, node: L.Node, name: str):
        self.node, self.log = node, node.path(f"monitor-{name}.log")
        self.proc = node.popen(["ip", "monitor", "route"], self.log)
        time.sleep(0.2)  # subscribed before anything changes

    def stop(self) -> list[tuple[bool, str, tuple[str, int]]]:
        """Ends it; (added, prefix, (table, metric)) for each event of ours."""
        L.Lab.stop_process(self.proc)
        events = []
        with open(self.log) as f:
            for line in f:
                tok = line.split()
                if not tok or line[0].isspace():
                    continue
                deleted = tok[0] == "Deleted"
                if deleted:
                    tok = tok[1:]
                if "proto" not in tok or tok[tok.index("proto") + 1] != "bgp":
                    continue
                table = tok[tok.index("table") + 1] if "table" in tok else "main"
                metric = int(tok[tok.index("metric") + 1]) if "metric" in tok else 0
                events.append((not deleted, tok[0], (table, metric)))
        return events


def gaps_in(events, start: dict[str, set[tuple[str, int]]], wanted: set[str]) -> list[str]:
    """The prefixes of `wanted` that the events (from `start`) ever leave
    with no route."""
    places = {p: set(start.get(p, ())) for p in wanted}
    gone = []
    for added, prefix, place in events:
        if prefix not in places:
            continue
        if added:
            places[prefix].add(place)
        else:
            places[prefix].discard(place)
            if not places[prefix]:
                gone.append(prefix)
    return gone


def assert_session_kept(petrel: L.Petrel, bird: L.Bird, since: float, uptime0: int, t0: float) -> None:
    assert len(petrel.events("session-up", peer="bird")) == 1, petrel.events("session-up")
    assert not petrel.events("session-down"), petrel.events("session-down")
    assert bird.state().established and L.same_moment(bird.since(), since), (bird.since(), since)
    p = petrel.api_peer("bird")
    assert p is not None and p["state"].lower() == "established", p
    # the same session: its uptime went on from where it was
    assert p["uptime_seconds"] >= uptime0 + int(time.monotonic() - t0) - 2, (p["uptime_seconds"], uptime0)


def move_kernel(petrel: L.Petrel, node: L.Node, change: dict, old: tuple[str, int], new: tuple[str, int],
                wanted: set[str]) -> Watcher:
    """Applies `change` to [kernel] by SIGHUP while a Watcher polls; returns
    it once every prefix is at `new` and none at `old`."""
    monitor = RouteMonitor(node, f"{new[0]}-{new[1]}-{len(change)}")
    start = kernel_routes(node)
    with Watcher(node, wanted) as w:
        time.sleep(0.3)  # a few polls before
        petrel.kernel.update(change)
        reload(petrel)
        L.wait_until(lambda: (lambda c: c.get(new) == len(wanted) and (old == new or not c.get(old)))(where(node)),
                     20, f"every route at {new}, none at {old}: {where(node)}")
        time.sleep(0.3)  # a few polls after
    events = monitor.stop()
    if old != new:  # every route added at new and removed at old, none left without one meanwhile
        assert sum(1 for a, p, place in events if a and place == new and p in wanted) >= len(wanted), events[:5]
        assert sum(1 for a, p, place in events if not a and place == old and p in wanted) == len(wanted), events[:5]
    gone = gaps_in(events, start, wanted)
    assert not gone, f"{len(gone)} prefixes were left without a route for a moment, e.g. {gone[:5]}"
    assert len(w.polls) >= 5, w.polls
    assert not w.gaps, f"polls where a prefix had no route: {len(w.gaps)}, e.g. {sorted(w.gaps[0])[:5]}"
    assert w.polls[0].get(old) == len(wanted), w.polls[0]
    assert w.polls[-1] == {new: len(wanted)}, w.polls[-1]
    return w


def marks(petrel: L.Petrel, prefix: str) -> str | None:
    """BIRD's route's RPKI state from the API (None: unchecked)."""
    got = petrel.api(f"/api/routes/{prefix}")
    assert isinstance(got, dict) and got["routes"], got
    return got["routes"][0].get("rpki")


def refused(node: L.Node, port: int) -> bool:
    s = node.socket(socket.AF_INET)
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
    except ConnectionRefusedError:
        return True
    finally:
        s.close()
    return False


def test_sections_change_live_without_a_session_reset(lab):
    require("bird")
    if shutil.which("stayrtr") is None:
        pytest.skip("stayrtr not found (apt-get install stayrtr; see scripts/install-deps.sh)")
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me, bn = lab.node("petrel"), lab.node("bird")
    bird = L.Bird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD, passive=True,
                                announce=V4 + V6)).start()
    petrel = SectionsPetrel(me, [L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD)], PETREL_ASN,
                            http_port=HTTP_PORT)
    petrel.start()
    bird.wait_established(30)
    wanted = set(V4) | set(V6)
    main = ("main", 32)
    L.wait_until(lambda: where(me) == {main: len(wanted)}, 30, f"BIRD's routes in the main table: {where(me)}")
    since = bird.since()
    uptime0, t0 = petrel.api_peer("bird")["uptime_seconds"], time.monotonic()

    # ---- [kernel]: another table, another metric, then nexthop objects off
    move_kernel(petrel, me, {"table": "200"}, main, ("200", 32), wanted)
    st = petrel.api("/api/kernel")
    assert st["table"] == 200 and st["metric"] == 32 and st["running"], st
    assert petrel.events("kernel-reloaded", table=200)
    move_kernel(petrel, me, {"metric": "64"}, ("200", 32), ("200", 64), wanted)
    assert len(json.loads(me.run(["ip", "-j", "nexthop", "show", "proto", "186"]).stdout or "[]")) == 2
    move_kernel(petrel, me, {"nexthop_objects": "false"}, ("200", 64), ("200", 64), wanted)
    L.wait_until(lambda: json.loads(me.run(["ip", "-j", "nexthop", "show", "proto", "186"]).stdout or "[]") == [],
                 10, "no nexthop object of ours left")
    assert all(r.get("nhid") is None for r in json.loads(
        me.run(["ip", "-j", "route", "show", "table", "200", "proto", "bgp"]).stdout)), "routes still on objects"
    assert petrel.api("/api/kernel")["nexthop_objects"] is False
    assert_session_kept(petrel, bird, since, uptime0, t0)

    # ---- [rpki]: a cache added, reject_invalid, the cache removed
    assert petrel.api("/api/rpki")["enabled"] is False
    assert marks(petrel, V4[0]) is None  # unchecked, as without RPKI
    vrps = me.path("vrps.json")
    write_vrps(vrps, [("10.60.0.0/16", 24, BIRD_ASN), ("10.61.0.0/16", 24, 64999)])
    cache = Cache(me, CACHE_PORT, vrps).start()
    petrel.caches = [CACHE_PORT]
    reload(petrel)
    L.wait_until(lambda: petrel.api("/api/rpki")["vrps"].get("ipv4") == 2, 15, "the cache's two VRPs")
    r = petrel.api("/api/rpki")
    assert r["enabled"] and [c["cache"] for c in r["caches"]] == [f"127.0.0.1:{CACHE_PORT}"], r
    L.wait_until(lambda: (marks(petrel, "10.60.1.0/24"), marks(petrel, "10.61.1.0/24"), marks(petrel, V6[0]))
                 == ("valid", "invalid", "not-found"), 10, "routes marked as the VRPs say")
    petrel.reject_invalid = True
    reload(petrel)
    L.wait_until(lambda: where(me) == {("200", 64): len(wanted) - len(INVALID)}, 10,
                 f"the invalid routes out of the kernel: {where(me)}")
    assert petrel.api("/api/rpki")["reject_invalid"] is True
    petrel.caches = []
    petrel.reject_invalid = False
    reload(petrel)
    assert petrel.api("/api/rpki")["enabled"] is False
    L.wait_until(lambda: marks(petrel, "10.61.1.0/24") is None and marks(petrel, "10.60.1.0/24") is None, 10,
                 "no RPKI marks")
    L.wait_until(lambda: where(me) == {("200", 64): len(wanted)}, 10, f"every route back: {where(me)}")
    petrel.wait_events("rpki-stopped")
    L.wait_until(lambda: cache.proc.poll() is None and not me.run(
        ["ss", "-Htn", "state", "established", f"dport = :{CACHE_PORT}"]).stdout.strip(), 5, "RTR connection closed")
    cache.stop()
    assert_session_kept(petrel, bird, since, uptime0, t0)

    # ---- [http]: another port; new limits on it; an address not on the host
    petrel.http_listen = f"127.0.0.1:{HTTP_PORT2}"
    reload(petrel)
    petrel.http_port = HTTP_PORT2
    assert petrel.api_peer("bird") is not None
    assert refused(me, HTTP_PORT)
    petrel.http_limits = "max_connections = 9"
    reload(petrel)
    petrel.wait_events("http-listening", max_connections=9)
    assert petrel.api_peer("bird") is not None
    petrel.http_listen = "192.0.2.1:8181"
    reload(petrel)
    ev = petrel.wait_events("reload-http-failed")[-1]
    assert "192.0.2.1:8181" in ev["msg"] and "stays as it was" in ev["msg"], ev
    assert petrel.api_peer("bird") is not None  # the running server answers on
    assert refused(me, HTTP_PORT)
    # off, and on again
    petrel.http_listen = ""
    reload(petrel)
    assert refused(me, HTTP_PORT2)
    petrel.http_listen = f"127.0.0.1:{HTTP_PORT2}"
    reload(petrel)
    assert petrel.api_peer("bird") is not None

    # ---- [log]: the level from the file; the command line's --log-format
    # json wins over the file's text
    petrel.log_level = "debug"
    reload(petrel)
    ev = petrel.wait_events("reload-log")[-1]
    assert ev["format"] == "json" and ev["level"] == "debug", ev

    assert_session_kept(petrel, bird, since, uptime0, t0)
    assert petrel.alive()
