"""RPKI origin validation against real RTR caches (StayRTR).

StayRTR serves a VRP JSON file the test writes, on loopback inside
Petrel's namespace. Petrel takes the full set (Reset Query), then an
incremental change when the file changes (Serial Query), keeps the data
while the cache is gone and resynchronises when it is back; with two
caches it fails over to the second and back to the first. Routes from a
real BIRD peer are marked valid, invalid and not found as the VRPs say,
and changing the VRPs changes the marks.
"""
from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import subprocess

import pytest

import lab as L

PETREL_ASN = 65001
BIRD_ASN = 65002
HOLD = 9
HTTP_PORT = 8179
CACHE_PORTS = (18282, 18283)


@pytest.fixture(autouse=True)
def _needs():
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    if shutil.which("stayrtr") is None:
        pytest.skip("stayrtr not found (apt-get install stayrtr; see scripts/install-deps.sh)")


class RpkiPetrel(L.Petrel):
    """Petrel with [[rpki.cache]] entries on loopback in its namespace."""

    def __init__(self, *a, caches: list[tuple[int, int]], reject_invalid: bool = False, **kw):
        super().__init__(*a, **kw)
        self.caches = caches
        self.reject_invalid = reject_invalid

    def config(self) -> str:
        lines = [super().config(), "[rpki]", f"reject_invalid = {'true' if self.reject_invalid else 'false'}"]
        for port, pref in self.caches:
            lines += ["[[rpki.cache]]", 'address = "127.0.0.1"', f"port = {port}", f"preference = {pref}"]
        return "\n".join(lines) + "\n"


class Cache:
    """A StayRTR process serving `path` on 127.0.0.1:port inside `node`."""

    def __init__(self, node: L.Node, port: int, path: str):
        self.node, self.port, self.path = node, port, path
        self.proc: subprocess.Popen | None = None

    refresh = 1  # seconds between StayRTR's reads of its file

    def listen(self) -> list[str]:
        """StayRTR's listener options."""
        return ["-bind", f"127.0.0.1:{self.port}"]

    def args(self) -> list[str]:
        """StayRTR's command line."""
        return ["stayrtr", *self.listen(), "-cache", self.path, "-checktime=false", "-refresh", str(self.refresh),
                "-metrics.addr", "", "-rtr.refresh", "60", "-rtr.retry", "5", "-rtr.expire", "600"]

    def start(self) -> "Cache":
        self.proc = self.node.popen(self.args(), self.node.path(f"stayrtr-{self.port}.log"))
        L.wait_until(lambda: self.node.run(["ss", "-Hltn", f"sport = :{self.port}"], check=False).stdout.strip(),
                     10, f"stayrtr listening on {self.port}")
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


def write_vrps(path: str, vrps: list[tuple[str, int, int]]) -> None:
    roas = [{"prefix": p, "maxLength": m, "asn": f"AS{a}"} for p, m, a in vrps]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"metadata": {"generated": 1700000000}, "roas": roas}, f)
    os.replace(tmp, path)


def http_text(node: L.Node, path: str) -> str:
    import http.client

    class _Conn(http.client.HTTPConnection):
        def connect(self):
            s = node.socket(socket.AF_INET)
            s.settimeout(5)
            s.connect((self.host, self.port))
            self.sock = s

    conn = _Conn("127.0.0.1", HTTP_PORT, timeout=5)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        assert r.status == 200, (path, r.status)
        return r.read().decode()
    finally:
        conn.close()


def rpki(petrel: L.Petrel) -> dict:
    got = petrel.api("/api/rpki")
    assert isinstance(got, dict), got
    return got


def vrp_count(petrel: L.Petrel) -> int:
    v = rpki(petrel)["vrps"]
    return v.get("ipv4", 0) + v.get("ipv6", 0)


def cache_of(petrel: L.Petrel, port: int) -> dict:
    return next(c for c in rpki(petrel)["caches"] if c["cache"].endswith(f":{port}"))


def test_rpki_cache_full_incremental_restart_failover(lab):
    me = lab.node("petrel")
    path1, path2 = me.path("vrps1.json"), me.path("vrps2.json")
    first = [("192.0.2.0/24", 24, 64500), ("2001:db8::/32", 48, 64501), ("198.51.100.0/24", 24, 64502)]
    write_vrps(path1, first)
    write_vrps(path2, first[:1])
    c1 = Cache(me, CACHE_PORTS[0], path1).start()
    petrel = RpkiPetrel(me, [], PETREL_ASN, http_port=HTTP_PORT, caches=[(CACHE_PORTS[0], 1), (CACHE_PORTS[1], 2)])
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))

    # ---- the full set
    L.wait_until(lambda: vrp_count(petrel) == 3, 15, "three VRPs from cache 1")
    r = rpki(petrel)
    assert r["enabled"] is True and r["vrps"] == {**r["vrps"], "ipv4": 2, "ipv6": 1}, r
    assert r["vrps"]["source"].endswith(f":{CACHE_PORTS[0]}"), r
    c = cache_of(petrel, CACHE_PORTS[0])
    assert c["state"] == "in-sync" and c["active"] and c["vrps"] == 3 and c["expire"] == 600, c
    petrel.wait_events("rpki-reset", announced=3)

    # ---- an incremental change: one withdrawn, one announced
    write_vrps(path1, first[1:] + [("203.0.113.0/24", 24, 64503)])
    ev = petrel.wait_events("rpki-update", timeout=15, announced=1, withdrawn=1)
    assert ev[0]["cache"].endswith(f":{CACHE_PORTS[0]}"), ev
    L.wait_until(lambda: rpki(petrel)["vrps"]["ipv4"] == 2 and cache_of(petrel, CACHE_PORTS[0])["serial"] == 1,
                 10, "the update published")

    # ---- cache 1 goes away: the data is kept (cache 2 is not running either)
    c1.stop()
    petrel.wait_events("rpki-cache-failed", timeout=10)
    assert vrp_count(petrel) == 3, rpki(petrel)
    # ---- cache 2 appears: failover to it (its own, smaller set)
    c2 = Cache(me, CACHE_PORTS[1], path2).start()
    L.wait_until(lambda: rpki(petrel)["vrps"]["source"].endswith(f":{CACHE_PORTS[1]}"), 20, "failover to cache 2")
    assert vrp_count(petrel) == 1, rpki(petrel)
    # ---- cache 1 back (a new StayRTR session id): back to it, by preference
    c1 = Cache(me, CACHE_PORTS[0], path1).start()
    # cache 1 is retried by its back-off, which reached 16-32 s (1 s
    # doubling, at most 60 s, +-25 %) while it was down; under the
    # sanitizers the down time is longer: up to one full step of 75 s
    L.wait_until(lambda: rpki(petrel)["vrps"]["source"].endswith(f":{CACHE_PORTS[0]}"), 90, "back on cache 1")
    assert vrp_count(petrel) == 3, rpki(petrel)
    L.wait_until(lambda: cache_of(petrel, CACHE_PORTS[1])["state"] == "down", 10, "cache 2 closed")

    # ---- metrics
    metrics = http_text(me, "/metrics")
    assert 'petrel_rpki_vrps{family="ipv4"} 2\n' in metrics, metrics
    assert 'petrel_rpki_vrps{family="ipv6"} 1\n' in metrics, metrics
    assert f'petrel_rpki_cache_state{{cache="127.0.0.1:{CACHE_PORTS[0]}",state="in-sync"}} 1\n' in metrics, metrics
    assert f'petrel_rpki_cache_state{{cache="127.0.0.1:{CACHE_PORTS[1]}",state="down"}} 1\n' in metrics, metrics
    c1.stop()
    c2.stop()
    assert petrel.alive()


def marks(petrel: L.Petrel, prefix: str) -> list[tuple[str, str]]:
    got = petrel.api(f"/api/routes/{prefix}")
    if not isinstance(got, dict):
        return []
    return [(r["peer"], r["rpki"]) for r in got["routes"]]


def best_flags(petrel: L.Petrel, prefixes) -> dict:
    """{prefix: whether BIRD's route to it is the best} from the API."""
    res = {}
    for p in prefixes:
        got = petrel.api(f"/api/routes/{p}")
        res[p] = bool(isinstance(got, dict) and got["routes"] and got["routes"][0]["best"])
    return res


def bird_prefixes_and_vrps(me: L.Node, bird_node: L.Node):
    """BIRD's sample prefixes (3 IPv4 /28, 2 IPv6 /48) and a VRP file that
    makes the first IPv4 one valid, the second invalid, the third not
    found and both IPv6 ones invalid: (prefixes, v4, v6, the IPv6 /32
    over them, the file's path)."""
    prefixes = L.sample_prefixes(bird_node.index)
    v4 = [p for p in prefixes if ":" not in p]
    v6 = [p for p in prefixes if ":" in p]
    cover6 = str(ipaddress.ip_network(v6[0]).supernet(new_prefix=32))
    path = me.path("vrps.json")
    write_vrps(path, [
        (v4[0], 28, BIRD_ASN),   # valid
        (v4[1], 28, 64999),      # invalid: another origin
        # v4[2]: not found
        (cover6, 40, BIRD_ASN),  # both IPv6 /48s invalid: longer than the max length
    ])
    return prefixes, v4, v6, cover6, path


def bird_behind_a_cache(lab, import_policy: str = "all", **petrel_kw):
    """A StayRTR cache serving bird_prefixes_and_vrps' file, Petrel with it
    and BIRD announcing its sample prefixes, established: (petrel, cache,
    v4, v6, cover6, the VRP file's path)."""
    me, bird_node = lab.node("petrel"), lab.node("bird")
    prefixes, v4, v6, cover6, path = bird_prefixes_and_vrps(me, bird_node)
    cache = Cache(me, CACHE_PORTS[0], path).start()
    petrel = RpkiPetrel(me, [L.PetrelPeer("bird", bird_node.v4, BIRD_ASN, me.v4, hold_time=HOLD,
                                          import_policy=import_policy)],
                        PETREL_ASN, http_port=HTTP_PORT, caches=[(CACHE_PORTS[0], 1)], **petrel_kw)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    L.wait_until(lambda: vrp_count(petrel) == 3, 15, "VRPs from the cache")
    bird = L.Bird(bird_node, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bird_node.v4, passive=True,
                                       hold_time=HOLD, announce=prefixes)).start()
    bird.wait_established(30)
    return petrel, cache, v4, v6, cover6, path


@pytest.mark.parametrize("reject_invalid", [False, True], ids=["keep-invalid", "reject-invalid"])
def test_rpki_marks_routes_from_bird(lab, reject_invalid):
    L_require_bird()
    petrel, cache, v4, v6, cover6, path = bird_behind_a_cache(lab, reject_invalid=reject_invalid)
    want = {v4[0]: "valid", v4[1]: "invalid", v4[2]: "not-found", v6[0]: "invalid", v6[1]: "invalid"}
    L.wait_until(lambda: all(marks(petrel, p) == [("bird", s)] for p, s in want.items()), 20,
                 f"marks {want}: got {[(p, marks(petrel, p)) for p in want]}")
    L.wait_until(lambda: rpki(petrel)["routes"] == {"valid": 1, "invalid": 3, "not-found": 1}, 15,
                 "counts by state")
    assert rpki(petrel)["peers"] == [{"peer": "bird", "valid": 1, "invalid": 3, "not-found": 1}]
    # With reject_invalid an invalid route is kept but is not the best.
    assert best_flags(petrel, want) == {p: not (reject_invalid and s == "invalid") for p, s in want.items()}

    # ---- the VRPs change: the marks follow
    write_vrps(path, [
        (v4[1], 28, BIRD_ASN),   # invalid -> valid
        (v4[2], 28, 64999),      # not found -> invalid (another origin)
        (cover6, 48, BIRD_ASN),  # both IPv6 valid now
        # v4[0]: valid -> not found
    ])
    want = {v4[0]: "not-found", v4[1]: "valid", v4[2]: "invalid", v6[0]: "valid", v6[1]: "valid"}
    L.wait_until(lambda: all(marks(petrel, p) == [("bird", s)] for p, s in want.items()), 20,
                 f"marks {want}: got {[(p, marks(petrel, p)) for p in want]}")
    ev = petrel.wait_events("rpki-revalidated", count=2)
    assert int(ev[-1]["routes_changed"]) == 5, ev
    # The routes that became valid are the best again; the one that became
    # invalid no longer is (with reject_invalid).
    assert best_flags(petrel, want) == {p: not (reject_invalid and s == "invalid") for p, s in want.items()}
    cache.stop()
    assert petrel.alive()


ROV_POLICY = """
[[policy]]
name = "rov"
default = "accept"

[[policy.term]]
name = "drop-invalid"
match = { rpki = ["invalid"] }
then = "reject"

[[policy.term]]
name = "tag-valid"
match = { rpki = ["valid"] }
set = { community_add = ["65001:1"] }
then = "accept"
"""


def communities(petrel: L.Petrel, prefix: str) -> list[str] | None:
    """The communities of the peer's route to `prefix`, None when absent."""
    got = petrel.api(f"/api/routes/{prefix}")
    if not isinstance(got, dict) or not got["routes"]:
        return None
    return got["routes"][0]["attributes"].get("communities", [])


def test_rpki_in_an_import_policy_follows_the_vrps(lab):
    """An import policy that asks the RPKI state (docs/policy.md): invalid
    routes refused with the term that refused them, valid ones tagged; when
    the VRPs change, Petrel asks BIRD for its routes again (ROUTE-REFRESH)
    and the verdicts follow."""
    L_require_bird()
    petrel, cache, v4, v6, cover6, path = bird_behind_a_cache(lab, import_policy="rov", extra_toml=ROV_POLICY)
    # valid: tagged; not found: as it came; invalid: refused, kept with why.
    want = {v4[0]: ["65001:1"], v4[1]: None, v4[2]: [], v6[0]: None, v6[1]: None}
    L.wait_until(lambda: {p: communities(petrel, p) for p in want} == want, 20,
                 f"routes {want}: got {[(p, communities(petrel, p)) for p in want]}")
    # (Absent routes look alike before and after they came: the refused
    # ones are waited for.)
    def kept() -> list[tuple[str, str]]:
        return sorted((r["prefix"], r["reason"]) for r in petrel.api("/api/refused?peer=bird")["refused"])
    want_kept = sorted((p, "rov.drop-invalid") for p in (v4[1], v6[0], v6[1]))
    L.wait_until(lambda: kept() == want_kept, 20, f"refused {want_kept}: {kept()}")

    # The VRPs change: BIRD is asked again and the verdicts follow.
    write_vrps(path, [
        (v4[1], 28, BIRD_ASN),   # invalid -> valid
        (v4[2], 28, 64999),      # not found -> invalid
        (cover6, 48, BIRD_ASN),  # both IPv6 valid now
        # v4[0]: valid -> not found
    ])
    want = {v4[0]: [], v4[1]: ["65001:1"], v4[2]: None, v6[0]: ["65001:1"], v6[1]: ["65001:1"]}
    L.wait_until(lambda: {p: communities(petrel, p) for p in want} == want, 30,
                 f"routes {want}: got {[(p, communities(petrel, p)) for p in want]}")
    assert petrel.wait_events("rpki-import-refresh", peer="bird"), "no ROUTE-REFRESH for the new VRPs"
    L.wait_until(lambda: kept() == [(v4[2], "rov.drop-invalid")], 20, f"refused: {kept()}")
    cache.stop()
    assert petrel.alive()


def L_require_bird():
    if shutil.which("bird") is None:
        pytest.skip("bird not found (apt-get install bird2)")


def test_rpki_silent_cache_fails_over(lab):
    """A cache that takes the connection and never answers counts as failed
    after 15 s; the next one is used."""
    me = lab.node("petrel")
    silent = me.socket(socket.AF_INET)
    silent.bind(("127.0.0.1", CACHE_PORTS[0]))
    silent.listen(4)  # the kernel completes the handshake; nothing is ever sent
    path = me.path("vrps.json")
    write_vrps(path, [("192.0.2.0/24", 24, 64500)])
    cache = Cache(me, CACHE_PORTS[1], path).start()
    petrel = RpkiPetrel(me, [], PETREL_ASN, http_port=HTTP_PORT, caches=[(CACHE_PORTS[0], 1), (CACHE_PORTS[1], 2)])
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    try:
        L.wait_until(lambda: cache_of(petrel, CACHE_PORTS[0])["state"] == "syncing", 10, "connected to the silent cache")
        assert vrp_count(petrel) == 0
        ev = petrel.wait_events("rpki-cache-failed", timeout=25, cache=f"127.0.0.1:{CACHE_PORTS[0]}")
        assert "no complete answer" in ev[0]["msg"], ev
        L.wait_until(lambda: vrp_count(petrel) == 1, 10, "VRPs from the second cache")
        assert rpki(petrel)["vrps"]["source"] == f"127.0.0.1:{CACHE_PORTS[1]}"
        assert petrel.alive()
    finally:
        cache.stop()
        silent.close()
