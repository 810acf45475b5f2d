"""Routes into the Linux kernel (docs/kernel.md), against the real kernel.

The installer on its own (`fib-sync`, built beside the daemon in
BUILD/fib/) in a lab node's namespace: routes appear in
`ip route show table N proto bgp`, change and go; a foreign route in the
same table is never touched; a restart keeps the routes still right and
removes stale ones. Then the daemon with `[kernel]` on and a real BIRD
peer in a second namespace: BIRD's routes appear in Petrel's namespace's
kernel table, and go when Petrel stops.

SKIPs while the binaries are missing (set PETREL, or build them).
"""

from __future__ import annotations

import json
import os
import re
import signal

import pytest

import lab as L
from conftest import require

TABLE = 100
METRIC = 32


def fib_sync_binary() -> str:
    return os.path.join(os.path.dirname(os.path.dirname(L.petrel_binary())), "tools", "fib", "fib-sync")


class FibSync(str):
    """The fib-sync binary, with the mode it runs in: `objects` (routes
    refer to kernel nexthop objects, the default) or `gateways`."""
    objects: bool


@pytest.fixture(params=["objects", "gateways"])
def fib_sync(request):
    b = fib_sync_binary()
    if not os.path.exists(b):
        pytest.skip(f"fib-sync not found at {b} (build it, or set PETREL)")
    f = FibSync(b)
    f.objects = request.param == "objects"
    return f


def our_nexthops(node: L.Node) -> list[dict]:
    """The kernel's nexthop objects of protocol bgp."""
    out = node.run(["ip", "-j", "nexthop", "show", "proto", "186"]).stdout  # (iproute2 6.1: no name here)
    return json.loads(out or "[]")


def routes(node: L.Node, v6: bool = False) -> dict[str, object]:
    """Our routes (proto bgp, our table and metric): prefix -> sorted
    gateways, or the route's type when it is not unicast."""
    cmd = ["ip", "-j"] + (["-6"] if v6 else []) + ["route", "show", "table", str(TABLE),
                                                     "proto", "bgp"]
    p = node.run(cmd, check=False)
    if p.returncode != 0 and "table does not exist" in p.stderr:
        return {}   # the kernel makes a table with its first route
    assert p.returncode == 0, p.stderr
    out = p.stdout or "[]"
    res: dict[str, object] = {}
    for r in json.loads(out):
        if r.get("metric", 0) != METRIC:
            continue
        dst = r["dst"]
        if "/" not in dst and dst != "default":
            dst += "/128" if v6 else "/32"
        if r.get("type", "unicast") != "unicast":
            res[dst] = r["type"]
        elif "nexthops" in r:
            res[dst] = sorted(h["gateway"] for h in r["nexthops"])
        else:
            res[dst] = [r["gateway"]] if "gateway" in r else []
    return res


def sync(node: L.Node, binary: str, lines: list[str], *extra: str) -> dict[str, int]:
    path = node.path("routes.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    mode = [] if getattr(binary, "objects", True) else ["--gateways"]
    out = node.run([binary, "--table", str(TABLE), "--metric", str(METRIC),
                    "--routes", path, *mode, *extra]).stdout
    line = out.strip().splitlines()[-1]
    c = {k: int(float(v)) for k, v in re.findall(r"(\w+)=(-?[\d.]+)", line)}
    assert c["objects_used"] == int(getattr(binary, "objects", True)), line
    return c


def test_installer_adds_changes_and_removes(lab, fib_sync):
    n = lab.node("r")
    gw1, gw2 = "198.18.0.7", "198.18.0.8"   # on the node's connected /24
    # foreign routes: same table and metric (static), same prefix other metric
    n.run(["ip", "route", "add", "203.0.113.0/24", "via", gw1, "table", str(TABLE),
           "proto", "static", "metric", str(METRIC)])
    n.run(["ip", "route", "add", "192.0.2.0/24", "via", gw1, "table", str(TABLE),
           "proto", "bgp", "metric", "99"])
    # a foreign nexthop object and a foreign route through it
    n.run(["ip", "nexthop", "add", "id", "77", "via", gw1, "dev", L.IFNAME, "proto", "static"])
    n.run(["ip", "route", "add", "10.77.0.0/16", "nhid", "77", "table", str(TABLE),
           "proto", "static", "metric", str(METRIC)])
    foreign = n.run(["ip", "route", "show", "table", str(TABLE)]).stdout
    foreign_nh = n.run(["ip", "nexthop", "show"]).stdout

    c = sync(n, fib_sync, [f"192.0.2.0/24 {gw1}", f"198.51.100.0/24 {gw1} {gw2}",
                           "203.0.113.0/24 " + gw2, "10.99.0.0/16 172.31.0.1",
                           "fd00:99::/48 fd00:bb::7", "10.98.0.0/16 unreachable"])
    assert routes(n) == {"192.0.2.0/24": [gw1], "198.51.100.0/24": [gw1, gw2],
                         "10.98.0.0/16": "unreachable"}
    assert routes(n, v6=True) == {"fd00:99::/48": ["fd00:bb::7"]}
    assert c["unresolved"] == 1, c   # 172.31.0.1 is not on a connected network
    assert c["refused"] == 1 and c["last_error"] == -17, c  # the foreign 203.0.113.0/24: EEXIST
    assert c["installed"] == 4, c
    nhs = our_nexthops(n)
    if fib_sync.objects:
        # one object per gateway (gw1, gw2, fd00:bb::7), one group for the
        # multipath route; every route of ours refers to one
        assert c["nexthop_objects"] == 4 and len(nhs) == 4, (c, nhs)
        assert sorted(len(o.get("group", [])) for o in nhs) == [0, 0, 0, 2], nhs
        ids = {o["id"] for o in nhs}
        got = json.loads(n.run(["ip", "-j", "route", "show", "table", str(TABLE), "proto", "bgp",
                                "metric", str(METRIC)]).stdout)
        assert got and all(r.get("nhid") in ids for r in got if r.get("type", "unicast") == "unicast"), got
    else:
        assert c["nexthop_objects"] == 0 and nhs == [], (c, nhs)

    # change one, drop others: replaced in place, removed
    c = sync(n, fib_sync, [f"192.0.2.0/24 {gw2}", f"198.51.100.0/24 {gw1}"])
    assert routes(n) == {"192.0.2.0/24": [gw2], "198.51.100.0/24": [gw1]}
    assert routes(n, v6=True) == {}

    # everything of ours goes, objects too; the foreign routes and the
    # foreign object are exactly as they were
    c = sync(n, fib_sync, [], "--flush")
    assert routes(n) == {}
    assert c["installed"] == 0 and c["nexthop_objects"] == 0, c
    assert our_nexthops(n) == []
    assert n.run(["ip", "route", "show", "table", str(TABLE)]).stdout == foreign
    assert n.run(["ip", "nexthop", "show"]).stdout == foreign_nh


def test_installer_restart_keeps_right_routes(lab, fib_sync):
    n = lab.node("r")
    gw = "198.18.0.7"
    first = [f"192.0.2.{i}/32 {gw}" for i in range(40)]
    c = sync(n, fib_sync, first)
    assert c["installed"] == 40 and c["requests"] == 40 + fib_sync.objects, c  # (+ the object)
    # a new run: 30 still right, 10 stale, 5 new; the right ones are not
    # touched (no request), the stale ones go only after the wanted set is in
    second = first[:30] + [f"198.51.100.{i}/32 {gw}" for i in range(5)]
    c = sync(n, fib_sync, second, "--keep-stale")
    assert c["found"] == 40 and c["requests"] == 5 and c["stale"] == 10, c
    assert len(routes(n)) == 45
    c = sync(n, fib_sync, second)
    assert c["found"] == 45 and c["requests"] == 10 and c["stale"] == 0, c
    got = routes(n)
    assert set(got) == {line.split()[0] for line in second}
    assert len(our_nexthops(n)) == int(fib_sync.objects)   # the one object, found and reused
    sync(n, fib_sync, [], "--flush")
    assert our_nexthops(n) == []


def test_installer_follows_link_changes(lab, fib_sync):
    """A route whose gateway is on a link that is down is not installed."""
    n = lab.node("r")
    n.run(["ip", "link", "set", L.IFNAME, "down"])
    c = sync(n, fib_sync, ["192.0.2.0/24 198.18.0.7"])
    assert c["unresolved"] == 1 and routes(n) == {}, c
    n.run(["ip", "link", "set", L.IFNAME, "up"])
    L.wait_until(lambda: "UP" in n.run(["ip", "-br", "link", "show", L.IFNAME]).stdout.split()[1],
                 5, "link up")
    c = sync(n, fib_sync, ["192.0.2.0/24 198.18.0.7"])
    assert routes(n) == {"192.0.2.0/24": ["198.18.0.7"]}, c


def test_installer_says_cap_net_admin_is_missing(lab, fib_sync):
    """Without CAP_NET_ADMIN the kernel refuses every route (EPERM) and the
    installer says in plain words what it needs."""
    import shutil
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv not found (util-linux)")
    n = lab.node("r")
    path = n.path("routes.txt")
    with open(path, "w") as f:
        f.write("192.0.2.0/24 198.18.0.7\n")
    p = n.run(["setpriv", "--inh-caps=-all", "--bounding-set=-net_admin", fib_sync,
               "--table", str(TABLE), "--metric", str(METRIC), "--routes", path], check=False)
    assert p.returncode == 1, p
    assert "needs CAP_NET_ADMIN" in p.stderr, p.stderr
    assert "refused=1" in p.stdout, p.stdout
    assert routes(n) == {}


# ---- the daemon with a real peer

class KernelPetrel(L.Petrel):
    """`petrel run` with the kernel installer on (table TABLE, metric METRIC);
    nexthop_objects False: `nexthop_objects = false` (routes carry gateways)."""
    nexthop_objects = True

    def config(self) -> str:
        return (super().config() + f"\n[kernel]\nenabled = true\ntable = {TABLE}\nmetric = {METRIC}\n"
                + ("" if self.nexthop_objects else "nexthop_objects = false\n"))


@pytest.mark.parametrize("mode", ["objects", "gateways"])
def test_daemon_installs_bird_routes(lab, mode):
    require("bird")
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me = lab.node("petrel")
    bn = lab.node("bird")
    announce = L.sample_prefixes(bn.index)
    bird = L.Bird(bn, L.Session(65002, 65001, me.v4, bn.v4, passive=True,
                                announce=announce)).start()
    # a foreign route in the same table, at one of BIRD's prefixes
    foreign_prefix = announce[0]
    me.run(["ip", "route", "add", foreign_prefix, "via", bn.v4, "table", str(TABLE),
            "proto", "static", "metric", str(METRIC)])
    petrel = KernelPetrel(me, [L.PetrelPeer("bird", bn.v4, 65002, me.v4)], 65001)
    petrel.nexthop_objects = mode == "objects"
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    bird.wait_established(30)

    v4 = {p: [bn.v4] for p in announce if ":" not in p and p != foreign_prefix}
    v6 = {p: [bn.v6] for p in announce if ":" in p}
    L.wait_until(lambda: routes(me) == v4 and routes(me, v6=True) == v6, 20,
                 f"BIRD's routes in table {TABLE}: {v4} {v6}")
    st = L.wait_until(lambda: (lambda s: s if s and s["routes"]["installed"] == len(v4) + len(v6)
                               and s["routes"]["refused"] == 1 else None)(petrel.api("/api/kernel")),
                      10, "/api/kernel counts")
    assert st["enabled"] and st["running"] and st["table"] == TABLE, st
    assert any(i["name"] == L.IFNAME and i["up"] for i in st["interfaces"]), st
    foreign = me.run(["ip", "route", "show", "table", str(TABLE), "proto", "static"]).stdout
    assert foreign_prefix.split("/")[0] in foreign
    # objects: one per gateway (BIRD's IPv4 and IPv6 addresses)
    assert st["nexthop_objects"] == (mode == "objects"), st
    want_objects = 2 if mode == "objects" else 0
    assert st["nexthop_object_count"] == want_objects, st
    assert sorted(o.get("gateway") for o in our_nexthops(me)) == (sorted([bn.v4, bn.v6]) if want_objects else [])

    # a plain stop (SIGINT; SIGTERM keeps them for a graceful restart)
    # removes ours (objects too) and leaves the foreign route
    petrel.stop(signal.SIGINT)
    assert routes(me) == {} and routes(me, v6=True) == {}
    assert our_nexthops(me) == []
    assert me.run(["ip", "route", "show", "table", str(TABLE), "proto", "static"]).stdout == foreign
    assert petrel.events("kernel-stopped"), petrel.log_text()[-2000:]


# ---- ECMP

class MultipathPetrel(KernelPetrel):
    def config(self) -> str:
        return super().config() + "multipath = true\n"


@pytest.mark.parametrize("mode", ["objects", "gateways"])
def test_daemon_installs_equal_paths_as_one_multipath_route(lab, mode):
    """Two BIRD routers of one neighbouring AS announce the same prefixes
    with equal attributes: with `multipath = true` each prefix is one route
    with both next hops. One router withdraws: a single path is left (the
    other's); it announces again: two."""
    require("bird")
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me = lab.node("petrel")
    b1, b2 = lab.node("bird1"), lab.node("bird2")
    announce = ("198.51.100.0/24", "2001:db8:100::/48")
    birds = [L.Bird(n, L.Session(65002, 65001, me.v4, n.v4, passive=True, announce=announce)).start()
             for n in (b1, b2)]
    petrel = MultipathPetrel(me, [L.PetrelPeer(f"bird{i + 1}", n.v4, 65002, me.v4)
                                  for i, n in enumerate((b1, b2))], 65001)
    petrel.nexthop_objects = mode == "objects"
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    for b in birds:
        b.wait_established(30)

    both = ({"198.51.100.0/24": sorted([b1.v4, b2.v4])}, {"2001:db8:100::/48": sorted([b1.v6, b2.v6])})
    one = ({"198.51.100.0/24": [b2.v4]}, {"2001:db8:100::/48": [b2.v6]})

    def now():
        return routes(me), routes(me, v6=True)
    L.wait_until(lambda: now() == both, 20, f"multipath routes {both}: {now()}")
    st = L.wait_until(lambda: (lambda s: s if s and s["routes"]["installed"] == 2 else None)(
        petrel.api("/api/kernel")), 5, "/api/kernel: 2 routes installed")
    assert st["multipath"] and st["routes"]["pending"] == 0, st
    if mode == "objects":  # a group per family over an object per gateway
        groups = [o for o in our_nexthops(me) if "group" in o]
        assert len(groups) == 2 and all(len(g["group"]) == 2 for g in groups), our_nexthops(me)
    else:
        assert our_nexthops(me) == []

    for proto in ("static_ipv4", "static_ipv6"):
        birds[0].birdc("disable", proto)
    L.wait_until(lambda: now() == one, 10, f"single paths {one}: {now()}")
    for proto in ("static_ipv4", "static_ipv6"):
        birds[0].birdc("enable", proto)
    L.wait_until(lambda: now() == both, 10, f"multipath routes again {both}: {now()}")
