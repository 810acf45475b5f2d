"""Link-local next hops into the kernel (docs/kernel.md, "Resolution").

Petrel peers with BIRD over link-local IPv6 only (the peer configured as
"fe80::2%lab0"); neither side has a global IPv6 address on the link, so
BIRD's IPv6 routes carry a link-local next hop (RFC 2545). Petrel must
install them `via fe80::2 dev lab0` in its kernel table, and remove them
when BIRD withdraws them.

SKIPs while the binaries are missing (set PETREL, or build them).
"""

from __future__ import annotations

import json
import os
import signal

import pytest

import lab as L
from conftest import require

TABLE = 100
METRIC = 32
PREFIXES = ["2001:db8:10::/48", "2001:db8:11::/48", "2001:db8:12::/64"]


class LinkLocalBird(L.Bird):
    """BIRD with one IPv6 session over link-local addresses, announcing
    blackhole routes; its next hop is its own (link-local) address."""

    def config(self) -> str:
        s = self.session
        # one static protocol per prefix: each can be withdrawn alone
        statics = [f"protocol static static{i} {{ ipv6; route {p} blackhole; }}"
                   for i, p in enumerate(s.announce)]
        return "\n".join([
            f'log "{self.node.path("bird-daemon.log")}" all;',
            f"router id {self.node.v4};",
            "protocol device { scan time 1; }",
            *statics,
            f"protocol bgp {self.proto} {{",
            f"  local {s.local_address} as {s.local_asn};",
            f"  neighbor {s.peer_address}%{L.IFNAME} as {s.peer_asn};",
            f'  interface "{L.IFNAME}";',
            "  passive on;",
            f"  hold time {s.hold_time}; keepalive time {max(1, s.hold_time // 3)};",
            "  connect delay time 1; error wait time 1, 2;",
            "  ipv6 { import all; export all; };",
            "}",
        ]) + "\n"


class KernelPetrel(L.Petrel):
    """`petrel run` with the kernel installer on (table TABLE, metric METRIC);
    nexthop_objects False: routes carry their gateways."""
    nexthop_objects = True

    def config(self) -> str:
        return (super().config() + f"\n[kernel]\nenabled = true\ntable = {TABLE}\nmetric = {METRIC}\n"
                + ("" if self.nexthop_objects else "nexthop_objects = false\n"))


def our_nexthops(node: L.Node) -> list[dict]:
    """The kernel's nexthop objects of protocol bgp (186)."""
    return json.loads(node.run(["ip", "-j", "nexthop", "show", "proto", "186"]).stdout or "[]")


def kernel_routes(node: L.Node) -> dict[str, tuple[str, str]]:
    """Our IPv6 routes in TABLE: prefix -> (gateway, device)."""
    p = node.run(["ip", "-j", "-6", "route", "show", "table", str(TABLE), "proto", "bgp"], check=False)
    if p.returncode != 0 and "table does not exist" in p.stderr:
        return {}
    assert p.returncode == 0, p.stderr
    return {r["dst"]: (r.get("gateway", ""), r.get("dev", ""))
            for r in json.loads(p.stdout or "[]") if r.get("metric", 0) == METRIC}


@pytest.mark.parametrize("mode", ["objects", "gateways"])
def test_link_local_next_hops_are_installed_on_the_sessions_interface(lab, mode):
    require("bird")
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me, bn = lab.node("petrel"), lab.node("bird")
    for n in (me, bn):  # link-local IPv6 only on the link
        n.run(["ip", "-6", "addr", "del", f"{n.v6}/64", "dev", L.IFNAME])
    bird = LinkLocalBird(bn, L.Session(65002, 65001, me.ll, bn.ll, passive=True,
                                       families=("ipv6-unicast",), announce=tuple(PREFIXES))).start()
    petrel = KernelPetrel(me, [L.PetrelPeer("bird", f"{bn.ll}%{L.IFNAME}", 65002, me.ll,
                                            families=("ipv6-unicast",))],
                          65001, listen=[me.v4])
    petrel.nexthop_objects = mode == "objects"
    petrel.start()
    bird.wait_established(15)

    want = {p: (bn.ll, L.IFNAME) for p in PREFIXES}
    L.wait_until(lambda: kernel_routes(me) == want, 10, f"kernel routes {want}")
    # the API publishes every 500 ms
    L.wait_until(lambda: (lambda r: r["installed"] == len(PREFIXES) and r["unresolved"] == 0)(
        petrel.api("/api/kernel")["routes"]), 5, "/api/kernel: every route installed")
    # The API and `petrel show routes` name the next hop BIRD sent: with no
    # global address on the link, "::" and its link-local one (RFC 2545)
    for p in PREFIXES:
        route = petrel.api(f"/api/routes?prefix={p}")["prefixes"][0]["routes"][0]
        assert (route["next_hop"], route["next_hop_link_local"]) == ("::", bn.ll), route
    shown = me.run([petrel.binary, "show", "--http", f"127.0.0.1:{petrel.http_port}", "routes"]).stdout
    head, *rows = shown.splitlines()
    at = head.index("NEXT HOP")
    assert {row.split()[0]: row[at:head.index("AS PATH")].strip() for row in rows} == \
        {p: f":: ({bn.ll})" for p in PREFIXES}, shown
    # objects: one, the link-local gateway on the session's interface
    objs = our_nexthops(me)
    if mode == "objects":
        assert [(o.get("gateway"), o.get("dev")) for o in objs] == [(bn.ll, L.IFNAME)], objs
    else:
        assert objs == [], objs

    # BIRD withdraws one prefix: it leaves the kernel; the others stay.
    bird.birdc("disable", "static0")
    rest = {p: v for p, v in want.items() if p != PREFIXES[0]}
    L.wait_until(lambda: kernel_routes(me) == rest, 10, f"kernel routes {rest}")
    bird.birdc("enable", "static0")
    L.wait_until(lambda: kernel_routes(me) == want, 10, "the prefix announced again")

    petrel.stop(signal.SIGINT)
    assert kernel_routes(me) == {}, "a plain stop (SIGINT) removes our routes"
    assert our_nexthops(me) == [], "and our nexthop objects"
