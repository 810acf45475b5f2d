"""Two Petrel daemons route for each other (docs/kernel.md).

Petrel A (AS 65001) and Petrel B (AS 65002) are lab nodes on the lab's
bridge, peering over eBGP: one session over IPv4 for ipv4-unicast, one
over IPv6 (global addresses) for ipv6-unicast. Behind each is a third
network with a host on it (a namespace of its own, joined to its router
by a veth pair). Each router originates its network ([[originate]]) and
installs the other's into its kernel ([kernel]).

The routes go into the main table (254): it is the table a router's own
forwarding looks in, so no `ip rule` is needed, and the routers have no
other route to the far networks (no default route), so a ping that gets
through went along Petrel's routes. Forwarding is switched on inside the
router namespaces only.

Then a ping from the host behind A reaches the host behind B, over IPv4
and over IPv6, and back. When A stops, its routes go from its kernel and
the ping no longer gets through.

SKIPs while the petrel binary is missing (set PETREL, or build it).
"""

from __future__ import annotations

import json
import os
import signal

import pytest

import lab as L

METRIC = 32

# the network behind each router: (IPv4 /24, IPv6 /64); .1 the router, .2 the host
NETS = {"a": ("10.71.1", "fd00:71:1:"), "b": ("10.71.2", "fd00:71:2:")}


def host_behind(lab: L.Lab, router: L.Node, key: str) -> str:
    """A namespace joined to `router` by a veth pair, with the address .2
    of the router's network and a default route through the router (.1).
    Returns the namespace's name; the lab removes it."""
    v4, v6 = NETS[key]
    ns = f"{lab.id}s{router.index}"
    lab._add_ns(ns)   # registered: Lab.close() deletes it
    inner, outer = f"{lab.id[-6:]}h{router.index}"[:15], f"stub{router.index}"
    L.run(["ip", "netns", "exec", router.ns, "ip", "link", "add", outer, "type", "veth",
           "peer", "name", inner])
    L.run(["ip", "netns", "exec", router.ns, "ip", "link", "set", inner, "netns", ns])
    for where, dev, me in ((router.ns, outer, 1), (ns, inner, 2)):
        L.run(["ip", "netns", "exec", where, "ip", "addr", "add", f"{v4}.{me}/24", "dev", dev])
        L.run(["ip", "netns", "exec", where, "ip", "-6", "addr", "add", f"{v6}:{me}/64",
               "dev", dev, "nodad"])
        L.run(["ip", "netns", "exec", where, "ip", "link", "set", dev, "up"])
    L.run(["ip", "netns", "exec", ns, "ip", "route", "add", "default", "via", f"{v4}.1"])
    L.run(["ip", "netns", "exec", ns, "ip", "-6", "route", "add", "default", "via", f"{v6}:1"])
    for k in ("net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"):
        router.run(["sysctl", "-qw", k])
    return ns


def bgp_routes(node: L.Node, v6: bool) -> dict[str, list[str]]:
    """Petrel's routes in the main table: prefix -> gateways."""
    out = node.run(["ip", "-j"] + (["-6"] if v6 else []) +
                   ["route", "show", "table", "main", "proto", "bgp"]).stdout or "[]"
    res = {}
    for r in json.loads(out):
        if r.get("metric", 0) == METRIC:
            res[r["dst"]] = sorted([h["gateway"] for h in r["nexthops"]] if "nexthops" in r
                                   else [r.get("gateway", "")])
    return res


def ping(ns: str, address: str, count: int = 1) -> bool:
    p = L.run(["ip", "netns", "exec", ns, "ping", "-n", "-q", "-c", str(count), "-W", "1",
               address], check=False, timeout=5)
    return p.returncode == 0


class RouterPetrel(L.Petrel):
    nexthop_objects = True  # False: routes carry their gateways

    def config(self) -> str:
        return (super().config() + f"\n[kernel]\nenabled = true\ntable = 254\nmetric = {METRIC}\n"
                + ("" if self.nexthop_objects else "nexthop_objects = false\n"))


def router(node: L.Node, asn: int, other: L.Node, other_asn: int, key: str,
           objects: bool = True) -> RouterPetrel:
    v4, v6 = NETS[key]
    peers = [
        L.PetrelPeer("v4", other.v4, other_asn, node.v4, families=("ipv4-unicast",),
                     export_policy="all"),
        L.PetrelPeer("v6", other.v6, other_asn, node.v6, families=("ipv6-unicast",),
                     export_policy="all"),
    ]
    originate = (f'[[originate]]\nprefix = "{v4}.0/24"\n\n'
                 f'[[originate]]\nprefix = "{v6}:/64"\n')
    r = RouterPetrel(node, peers, asn, extra_toml=originate)
    r.nexthop_objects = objects
    return r


@pytest.mark.parametrize("mode", ["objects", "gateways"])
def test_two_petrels_route_for_each_other(lab, mode):
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    a, b = lab.node("a"), lab.node("b")
    ha, hb = host_behind(lab, a, "a"), host_behind(lab, b, "b")
    # nothing routes between the hosts yet
    assert not ping(ha, NETS["b"][0] + ".2")

    objects = mode == "objects"
    pa, pb = router(a, 65001, b, 65002, "a", objects), router(b, 65002, a, 65001, "b", objects)
    try:
        pa.start()
        pb.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))

    want = [
        (a, {NETS["b"][0] + ".0/24": [b.v4]}, {NETS["b"][1] + ":/64": [b.v6]}),
        (b, {NETS["a"][0] + ".0/24": [a.v4]}, {NETS["a"][1] + ":/64": [a.v6]}),
    ]
    for node, w4, w6 in want:
        L.wait_until(lambda: bgp_routes(node, False) == w4 and bgp_routes(node, True) == w6,
                     20, f"{node.name}'s kernel routes {w4} {w6}: "
                         f"{bgp_routes(node, False)} {bgp_routes(node, True)}")

    # the originated networks themselves are not installed (they are
    # connected): each router has exactly the other's routes, checked above
    for src, dst in ((ha, NETS["b"]), (hb, NETS["a"])):
        for address in (dst[0] + ".2", dst[1] + ":2"):
            L.wait_until(lambda: ping(src, address), 5, f"ping {address} from {src}")

    # the API's figures are the installer's last published status: give it
    # a moment to catch up with the kernel (it did, as the pings show)
    L.wait_until(lambda: (pa.api("/api/kernel") or {}).get("routes", {}).get("installed") == 2, 10,
                 "A's /api/kernel showing its 2 installed routes")
    st = pa.api("/api/kernel")
    assert st and st["routes"]["installed"] == 2 and st["routes"]["refused"] == 0, st
    assert st["nexthop_objects"] == objects and st["nexthop_object_count"] == (2 if objects else 0), st

    # A stops: its routes leave its kernel (a plain stop, SIGINT, removes
    # them; SIGTERM would keep them for a graceful restart), so A's host
    # reaches B's no longer
    pa.stop(signal.SIGINT)
    assert bgp_routes(a, False) == {} and bgp_routes(a, True) == {}
    assert a.run(["ip", "nexthop", "show", "proto", "186"]).stdout == ""  # objects gone too
    assert not ping(ha, NETS["b"][0] + ".2")
    assert not ping(ha, NETS["b"][1] + ":2")
