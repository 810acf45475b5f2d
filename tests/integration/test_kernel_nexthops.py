"""Next hops further than one link, and IPv4 over IPv6 next hops, in the
kernel (docs/kernel.md, "Next-hop resolution" and "RFC 8950").

(a) Recursive next hops. Petrel (node a, AS 65001) peers with BIRD 2
(node b, AS 65002) over eBGP on the lab's bridge. BIRD announces
prefixes 10.72.{100..119}.0/24 with a NEXT_HOP of 10.72.9.1, an address
that is not on any of Petrel's links: node c (on the bridge too) holds it
and 10.72.100.1 on a dummy interface, and Petrel's namespace reaches it
only through a static route ("the IGP"): 10.72.9.1/32 via c. Petrel
installs the prefixes via c (the static route's gateway), and a ping
from a's namespace to 10.72.100.1 gets through. Node d holds the same
addresses; the static route is changed to go via d: Petrel's routes
follow (with nexthop objects: the next hop's group replaced in place, a
few requests, the routes' nhid unchanged; without: one request per
route). The static route removed: the next hop resolves no longer and
the routes leave the kernel; back, they come back. Run with and without
nexthop objects. The same through an ECMP static route: both gateways;
and over IPv6.

(b) RFC 8950. BIRD (node b) sends IPv4 routes (10.73.{0..9}.0/24) over an
IPv6-only session with the extended next hop capability; Petrel installs
them via BIRD's IPv6 address (RTA_VIA, `via inet6` in `ip route`), and a
ping from a's namespace to 10.73.0.1 (held by b) gets through.

SKIPs while the petrel binary or BIRD is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

import lab as L

METRIC = 32
FAR_NH = "10.72.9.1"
PREFIXES = [f"10.72.{100 + i}.0/24" for i in range(20)]
PREFIXES_8950 = [f"10.73.{i}.0/24" for i in range(10)]


def need_tools():
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    if not shutil.which("bird"):
        pytest.skip("bird (BIRD 2) is not installed")


class AnnouncingBird(L.Bird):
    """BIRD with its own configuration: static routes announced to Petrel
    with the given NEXT_HOP (None: BIRD's own), over an IPv4 or an
    IPv6-only session (then IPv4 with the extended next hop, RFC 8950)."""

    def __init__(self, node, session, prefixes, next_hop=None, v6_session=False):
        super().__init__(node, session)
        self.prefixes = prefixes
        self.next_hop = next_hop
        self.v6_session = v6_session

    def config(self) -> str:
        s = self.session
        routes = " ".join(f"route {p} blackhole;" for p in self.prefixes)
        export = (f"export filter {{ bgp_next_hop = {self.next_hop}; accept; }};" if self.next_hop
                  else "export all;")
        ver = "ipv6" if ":" in self.prefixes[0] else "ipv4"
        ext = "extended next hop on;" if self.v6_session and ver == "ipv4" else ""
        channel = f"{ver} {{ import none; {export} {ext} }};"
        return "\n".join([
            f'log "{self.node.path("bird-daemon.log")}" all;',
            f"router id {self.node.v4};",
            "protocol device { scan time 1; }",
            f"protocol static static_{ver} {{ {ver}; {routes} }}",
            f"protocol bgp {self.proto} {{",
            f"  local {s.local_address} as {s.local_asn};",
            f"  neighbor {s.peer_address} as {s.peer_asn};",
            "  hold time 9; keepalive time 3; connect delay time 1; connect retry time 1;",
            "  error wait time 1, 2;",
            f"  {channel}",
            "}",
        ]) + "\n"


class RouterPetrel(L.Petrel):
    nexthop_objects = True

    def config(self) -> str:
        return (super().config() + f"\n[kernel]\nenabled = true\ntable = 254\nmetric = {METRIC}\n"
                + ("" if self.nexthop_objects else "nexthop_objects = false\n"))


def bgp_routes(node: L.Node, v6: bool = False) -> dict[str, list[str]]:
    """Petrel's routes of a family in the main table: prefix -> sorted
    gateways (an IPv6 gateway of RTA_VIA as `ip -j` shows it)."""
    out = node.run(["ip", "-j"] + (["-6"] if v6 else []) +
                   ["route", "show", "table", "main", "proto", "bgp"]).stdout or "[]"
    res = {}
    for r in json.loads(out):
        if r.get("metric", 0) != METRIC:
            continue
        hops = r.get("nexthops") or [r]
        gws = []
        for h in hops:
            via = h.get("via")
            gws.append(via["host"] if isinstance(via, dict) else h.get("gateway", ""))
        res[r["dst"]] = sorted(gws)
    return res


def nhids(node: L.Node) -> dict[str, int]:
    """The nexthop object each of Petrel's routes refers to (0: none)."""
    out = node.run(["ip", "-j", "route", "show", "table", "main", "proto", "bgp"]).stdout or "[]"
    return {r["dst"]: r.get("nhid", 0) for r in json.loads(out) if r.get("metric", 0) == METRIC}


def ping(node: L.Node, address: str) -> bool:
    p = node.run(["ping", "-n", "-q", "-c", "1", "-W", "1", address], check=False, timeout=5)
    return p.returncode == 0


def holder(node: L.Node, addresses: list[str]) -> None:
    """Gives the node the addresses (on its loopback: no dummy module is
    needed)."""
    for a in addresses:
        node.run(["ip", "addr", "add", a, "dev", "lo"])


def start_pair(a: L.Node, bird: AnnouncingBird, peer: L.PetrelPeer, objects: bool = True) -> RouterPetrel:
    """BIRD, then Petrel with its one peer; the session Established."""
    bird.start()
    pa = RouterPetrel(a, [peer], 65001)
    pa.nexthop_objects = objects
    try:
        pa.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    bird.wait_established()
    return pa


def api_nexthop(p: L.Petrel, address: str) -> dict:
    st = p.api("/api/nexthops") or {}
    return next((n for n in st.get("nexthops", []) if n["address"] == address), {})


@pytest.mark.parametrize("mode", ["objects", "gateways"])
def test_recursive_next_hop_follows_the_igp_route(lab, mode):
    need_tools()
    a, b, c, d = lab.node("a"), lab.node("b"), lab.node("c"), lab.node("d")
    for far in (c, d):
        holder(far, [f"{FAR_NH}/32", "10.72.100.1/24"])
    # the "IGP": the only way from a to the far next hop is this static route
    a.run(["ip", "route", "add", f"{FAR_NH}/32", "via", c.v4, "proto", "static"])
    assert not ping(a, "10.72.100.1")

    bird = AnnouncingBird(b, L.Session(65002, 65001, a.v4, b.v4, families=("ipv4-unicast",)),
                          PREFIXES, next_hop=FAR_NH)
    pa = start_pair(a, bird, L.PetrelPeer("b", b.v4, 65002, a.v4, families=("ipv4-unicast",)),
                    mode == "objects")

    want_c = {p: [c.v4] for p in PREFIXES}
    L.wait_until(lambda: bgp_routes(a) == want_c, 20, f"routes via c: {bgp_routes(a)}")
    L.wait_until(lambda: ping(a, "10.72.100.1"), 5, "ping 10.72.100.1 through c")
    if pa.nexthop_objects:
        objs = a.run(["ip", "nexthop", "show", "proto", "186"]).stdout
        assert c.v4 in objs, objs
    nh = api_nexthop(pa, FAR_NH)
    assert nh.get("resolution") == "recursive" and nh.get("via_route") == f"{FAR_NH}/32", nh
    assert [h["gateway"] for h in nh["via"]] == [c.v4], nh

    # the IGP route moves to d: every route follows (the API's status is
    # published every 250 ms: the installation counted first)
    L.wait_until(lambda: (pa.api("/api/kernel") or {}).get("requests", 0) >= len(PREFIXES), 5,
                 "the installation's requests counted")
    time.sleep(0.6)
    before = pa.api("/api/kernel")["requests"]
    nhids_before = nhids(a)
    a.run(["ip", "route", "replace", f"{FAR_NH}/32", "via", d.v4, "proto", "static"])
    want_d = {p: [d.v4] for p in PREFIXES}
    L.wait_until(lambda: bgp_routes(a) == want_d, 20, f"routes via d: {bgp_routes(a)}")
    c.run(["ip", "addr", "del", "10.72.100.1/24", "dev", "lo"])  # c no longer answers: the ping goes through d
    L.wait_until(lambda: ping(a, "10.72.100.1"), 5, "ping 10.72.100.1 through d")
    # With nexthop objects the routes refer to one group per BGP next hop,
    # replaced in place: a few object requests (the new member, the group,
    # the old member's deletion), no route request, the same group id.
    # Without, each route is replaced: one request per route. (The API's
    # status is published every 250 ms: waited for.)
    def requests() -> int:
        return (pa.api("/api/kernel") or {}).get("requests", 0) - before
    if pa.nexthop_objects:
        L.wait_until(lambda: requests() >= 2, 10, f"the group's replacement counted: {requests()}")
        time.sleep(0.6)
        assert requests() <= 4, requests()
        assert nhids(a) == nhids_before and len(set(nhids_before.values()) - {0}) == 1, (nhids_before, nhids(a))
    else:
        L.wait_until(lambda: requests() >= len(PREFIXES), 10, f"the replacements counted: {requests()}")
        time.sleep(0.6)
        assert requests() <= len(PREFIXES) + 4, requests()
    assert api_nexthop(pa, FAR_NH)["via"][0]["gateway"] == d.v4

    # the IGP route goes: the next hop resolves no longer, the routes leave
    a.run(["ip", "route", "del", f"{FAR_NH}/32"])
    L.wait_until(lambda: bgp_routes(a) == {}, 20, f"routes gone: {bgp_routes(a)}")
    L.wait_until(lambda: api_nexthop(pa, FAR_NH).get("resolution") == "unresolved", 5,
                 "next hop unresolved in /api/nexthops")
    st = pa.api("/api/kernel")
    assert st["routes"]["unresolved"] == len(PREFIXES), st
    # and comes back: so do they
    a.run(["ip", "route", "add", f"{FAR_NH}/32", "via", d.v4, "proto", "static"])
    L.wait_until(lambda: bgp_routes(a) == want_d, 20, f"routes back via d: {bgp_routes(a)}")


def test_recursive_next_hop_through_an_ecmp_route(lab):
    """The IGP route to the next hop has two gateways: Petrel's routes get
    both (a group of two members with nexthop objects)."""
    need_tools()
    a, b, c, d = lab.node("a"), lab.node("b"), lab.node("c"), lab.node("d")
    for far in (c, d):
        holder(far, [f"{FAR_NH}/32", "10.72.100.1/24"])
    a.run(["ip", "route", "add", f"{FAR_NH}/32", "proto", "static",
           "nexthop", "via", c.v4, "nexthop", "via", d.v4])
    bird = AnnouncingBird(b, L.Session(65002, 65001, a.v4, b.v4, families=("ipv4-unicast",)),
                          PREFIXES[:4], next_hop=FAR_NH)
    pa = start_pair(a, bird, L.PetrelPeer("b", b.v4, 65002, a.v4, families=("ipv4-unicast",)))
    want = {p: sorted([c.v4, d.v4]) for p in PREFIXES[:4]}
    L.wait_until(lambda: bgp_routes(a) == want, 20, f"routes via c and d: {bgp_routes(a)}")
    L.wait_until(lambda: ping(a, "10.72.100.1"), 5, "ping 10.72.100.1 through c or d")
    nh = api_nexthop(pa, FAR_NH)
    assert sorted(h["gateway"] for h in nh["via"]) == sorted([c.v4, d.v4]), nh
    # one gateway goes from the IGP route: the group follows
    a.run(["ip", "route", "replace", f"{FAR_NH}/32", "via", d.v4, "proto", "static"])
    want = {p: [d.v4] for p in PREFIXES[:4]}
    L.wait_until(lambda: bgp_routes(a) == want, 20, f"routes via d alone: {bgp_routes(a)}")


def test_recursive_ipv6_next_hop(lab):
    """The same over IPv6: BIRD's IPv6 prefixes with a next hop behind a
    static IPv6 route via c, installed via c's address; a ping through."""
    need_tools()
    a, b, c = lab.node("a"), lab.node("b"), lab.node("c")
    holder(c, ["fd00:72::9/128", "fd00:72:100::1/64"])
    a.run(["ip", "-6", "route", "add", "fd00:72::9/128", "via", c.v6, "proto", "static"])
    prefixes = [f"fd00:72:{100 + i}::/64" for i in range(4)]
    bird = AnnouncingBird(b, L.Session(65002, 65001, a.v6, b.v6, families=("ipv6-unicast",)),
                          prefixes, next_hop="fd00:72::9")
    pa = start_pair(a, bird, L.PetrelPeer("b", b.v6, 65002, a.v6, families=("ipv6-unicast",)))
    want = {p: [c.v6] for p in prefixes}
    L.wait_until(lambda: bgp_routes(a, True) == want, 20, f"IPv6 routes via c: {bgp_routes(a, True)}")
    L.wait_until(lambda: ping(a, "fd00:72:100::1"), 5, "ping fd00:72:100::1 through c")
    assert api_nexthop(pa, "fd00:72::9").get("resolution") == "recursive"


def test_unresolved_next_hop_leaves_best_path(lab):
    need_tools()
    a, b = lab.node("a"), lab.node("b")
    bird = AnnouncingBird(b, L.Session(65002, 65001, a.v4, b.v4, families=("ipv4-unicast",)),
                          PREFIXES[:2], next_hop=FAR_NH)
    pa = start_pair(a, bird, L.PetrelPeer("b", b.v4, 65002, a.v4, families=("ipv4-unicast",)))
    L.wait_until(lambda: api_nexthop(pa, FAR_NH).get("resolution") == "unresolved", 10,
                 "the next hop tracked, unresolved (no route to it in a's namespace)")
    # RFC 4271 section 9.1.2.1: a route whose next hop does not resolve is
    # no candidate for best path
    routes = L.wait_until(lambda: pa.api(f"/api/routes/{PREFIXES[0]}"), 10, "the route in the table")
    assert not any(r.get("best") for r in routes.get("routes", [])), routes


def test_rfc8950_ipv4_over_ipv6_next_hop(lab):
    need_tools()
    a, b = lab.node("a"), lab.node("b")
    holder(b, ["10.73.0.1/24"])
    assert not ping(a, "10.73.0.1")
    bird = AnnouncingBird(b, L.Session(65002, 65001, a.v6, b.v6, families=("ipv4-unicast",)),
                          PREFIXES_8950, v6_session=True)
    pa = start_pair(a, bird, L.PetrelPeer("b", b.v6, 65002, a.v6, families=("ipv4-unicast",),
                                          extra=('extended_next_hop = ["ipv4-unicast"]',)))
    want = {p: [b.v6] for p in PREFIXES_8950}
    L.wait_until(lambda: bgp_routes(a) == want, 20, f"routes via inet6 {b.v6}: {bgp_routes(a)}")
    shown = a.run(["ip", "route", "show", "10.73.0.0/24"]).stdout
    assert f"via inet6 {b.v6}" in shown, shown
    L.wait_until(lambda: ping(a, "10.73.0.1"), 5, "ping 10.73.0.1 over the IPv6 next hop")
    L.wait_until(lambda: (pa.api("/api/kernel") or {}).get("routes", {}).get("installed") == len(PREFIXES_8950),
                 5, "/api/kernel showing the routes installed")
    assert pa.api("/api/kernel")["routes"]["unresolved"] == 0
