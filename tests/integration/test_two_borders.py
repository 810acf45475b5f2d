"""Two borders and an IGP: next hops resolved through the kernel (docs/kernel.md).

    host h ── A (Petrel, AS 65000) ══ bridge ══ B (BIRD 2, AS 65000) ── ub (BIRD, AS 65002)
                 │   │                              │
                 │   └──────── igp veth ────────────┘
                 └── bridge ── ua (BIRD, AS 65001)

A and B are the borders of AS 65000, in an iBGP session over the lab's
bridge. Each has an eBGP upstream: ua on the bridge beside A, ub behind B
on a link of its own (10.72.2.0/24). Both upstreams announce DEST
(203.0.113.0/24, with 203.0.113.1 on the loopback of each), ua with
a longer AS_PATH. B passes ub's route on to A with its next hop unchanged
(10.72.2.2, ub's address on B's link): A has no interface there; it
reaches it only through a static kernel route over the "IGP" link to B
(10.72.2.0/24 via 10.72.22.2 dev igp), which stands for the IGP.

- A resolves 10.72.2.2 recursively through the static route, prefers B's
  route (shorter AS_PATH) and installs it with the static route's gateway:
  the host's ping goes A -> B -> ub (the reply arrives with TTL 62: B and
  A forwarded it) and not via ua (63).
- The static route is removed: B's route no longer resolves, is not
  eligible, and A installs ua's (TTL 63), which it passes on to B with
  itself as the next hop (`next_hop = "self"`). Added again: back through
  B.
- The IGP link goes down while the host pings every 2 ms: the kernel
  drops the routes and objects through it, A moves to ua; the packets
  lost meanwhile measure the loss window (printed; docs/performance.md).
  The link comes back (and its static route): back through B.

SKIPs while the petrel binary is missing (set PETREL, or build it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest

import lab as L

METRIC = 32
DEST = "203.0.113.0/24"
DEST_HOST = "203.0.113.1"
HOST_NET = "10.72.9"    # .1 A, .2 the host
UB_NET = "10.72.2"      # .1 B, .2 ub
IGP_NET = "10.72.22"    # .1 A, .2 B
UB_NEXT_HOP = f"{UB_NET}.2"


def sh(ns: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return L.run(["ip", "netns", "exec", ns, *cmd], check=check)


def link(a: L.Node, a_dev: str, b: L.Node, b_dev: str, net: str) -> None:
    """A veth pair between two nodes: a gets net.1/24, b net.2/24."""
    sh(a.ns, "ip", "link", "add", a_dev, "type", "veth", "peer", "name", b_dev, "netns", b.ns)
    for node, dev, me in ((a, a_dev, 1), (b, b_dev, 2)):
        sh(node.ns, "ip", "addr", "add", f"{net}.{me}/24", "dev", dev)
        sh(node.ns, "ip", "link", "set", "dev", dev, "up")


def host_behind(lab: L.Lab, router: L.Node) -> str:
    ns = f"{lab.id}host"
    lab._add_ns(ns)
    inner = f"{lab.id[-6:]}hh"[:15]
    sh(router.ns, "ip", "link", "add", "host0", "type", "veth", "peer", "name", inner, "netns", ns)
    sh(router.ns, "ip", "addr", "add", f"{HOST_NET}.1/24", "dev", "host0")
    sh(router.ns, "ip", "link", "set", "host0", "up")
    sh(ns, "ip", "addr", "add", f"{HOST_NET}.2/24", "dev", inner)
    sh(ns, "ip", "link", "set", inner, "up")
    sh(ns, "ip", "link", "set", "lo", "up")
    sh(ns, "ip", "route", "add", "default", "via", f"{HOST_NET}.1")
    return ns


def destination(node: L.Node, back_via: str) -> None:
    """DEST_HOST on the loopback, and the way back to the host."""
    sh(node.ns, "ip", "addr", "add", f"{DEST_HOST}/32", "dev", "lo")
    sh(node.ns, "ip", "link", "set", "dev", "lo", "up")
    sh(node.ns, "ip", "route", "add", f"{HOST_NET}.0/24", "via", back_via)


class Upstream(L.Bird):
    """An eBGP upstream announcing DEST, its path prepended `prepend` times."""

    prepend = 0
    peer_address = ""
    local_address = ""

    def config(self) -> str:
        pre = " ".join(f"bgp_path.prepend({self.session.local_asn});" for _ in range(self.prepend))
        return f"""log "{self.node.path('bird-daemon.log')}" all;
router id {self.node.v4};
protocol device {{ scan time 10; }}
protocol static {{ ipv4; route {DEST} blackhole; }}
protocol bgp peer {{
  local {self.local_address} as {self.session.local_asn};
  neighbor {self.peer_address} as {self.session.peer_asn};
  hold time 9; keepalive time 3; connect delay time 1; connect retry time 1;
  error wait time 1, 2;
  ipv4 {{ import none; export filter {{ {pre} accept; }}; }};
}}
"""


class BorderB(L.Bird):
    """The other border: eBGP with ub, iBGP with A (next hop unchanged), and
    ub's route in its kernel so that it forwards to ub."""

    a_address = ""

    def config(self) -> str:
        return f"""log "{self.node.path('bird-daemon.log')}" all;
router id {self.node.v4};
protocol device {{ scan time 10; }}
protocol kernel {{ ipv4 {{ export all; }}; }}
protocol bgp ub {{
  local {UB_NET}.1 as 65000;
  neighbor {UB_NET}.2 as 65002;
  hold time 9; keepalive time 3; connect delay time 1; connect retry time 1;
  error wait time 1, 2;
  ipv4 {{ import all; export none; }};
}}
protocol bgp a {{
  local {self.node.v4} as 65000;
  neighbor {self.a_address} as 65000;
  hold time 9; keepalive time 3; connect delay time 1; connect retry time 1;
  error wait time 1, 2;
  ipv4 {{ import all; export all; next hop keep on; }};
}}
"""


def kernel_route(node: L.Node) -> list[str]:
    """The gateways of Petrel's route to DEST in A's main table."""
    out = node.run(["ip", "-j", "route", "show", "table", "main", "proto", "bgp", DEST]).stdout or "[]"
    for r in json.loads(out):
        if r.get("metric", 0) == METRIC:
            if "nexthops" in r:
                return sorted(f"{h.get('gateway', '')}@{h.get('dev', '')}" for h in r["nexthops"])
            return [f"{r.get('gateway', '')}@{r.get('dev', '')}"]
    return []


def reply_ttl(ns: str) -> int:
    """The TTL of the reply to one ping from the host to DEST_HOST (0: none)."""
    p = L.run(["ip", "netns", "exec", ns, "ping", "-n", "-c", "1", "-W", "1", DEST_HOST],
              check=False, timeout=5)
    m = re.search(r"ttl=(\d+)", p.stdout or "")
    return int(m.group(1)) if m else 0


VIA_B = 62   # ub's reply, forwarded by B and A
VIA_UA = 63  # ua's reply, forwarded by A alone


def test_two_borders_follow_the_igp(lab):
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    a, b, ua, ub = lab.node("a"), lab.node("b"), lab.node("ua"), lab.node("ub")
    h = host_behind(lab, a)
    link(a, "igp", b, "igp", IGP_NET)
    link(b, "toub", ub, "tob", UB_NET)
    for n in (a, b):
        n.run(["sysctl", "-qw", "net.ipv4.ip_forward=1"])
    # The "IGP": A reaches B's upstream link over the IGP link; B and ub
    # know the way back to the host.
    static = ["ip", "route", "add", f"{UB_NET}.0/24", "via", f"{IGP_NET}.2", "dev", "igp", "proto", "static"]
    a.run(static)
    sh(b.ns, "ip", "route", "add", f"{HOST_NET}.0/24", "via", f"{IGP_NET}.1")
    destination(ub, f"{UB_NET}.1")
    destination(ua, a.v4)

    up_a = Upstream(ua, L.Session(65001, 65000, a.v4, ua.v4))
    up_a.prepend, up_a.peer_address, up_a.local_address = 2, a.v4, ua.v4
    up_b = Upstream(ub, L.Session(65002, 65000, f"{UB_NET}.1", f"{UB_NET}.2"))
    up_b.peer_address, up_b.local_address = f"{UB_NET}.1", f"{UB_NET}.2"
    border_b = BorderB(b, L.Session(65000, 65000, a.v4, b.v4))
    border_b.a_address = a.v4
    peers = [
        L.PetrelPeer("ua", ua.v4, 65001, a.v4, families=("ipv4-unicast",)),
        L.PetrelPeer("b", b.v4, 65000, a.v4, families=("ipv4-unicast",), export_policy="all",
                     extra=('next_hop = "self"',)),
    ]
    pa = L.Petrel(a, peers, 65000,
                  extra_toml=f"[kernel]\nenabled = true\ntable = 254\nmetric = {METRIC}\n")
    for d in (up_a, up_b, border_b):
        d.start()
    try:
        pa.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))

    def route_from(peer: str) -> dict:
        got = pa.api(f"/api/routes/{DEST.replace('/', '%2F')}") or {}
        for r in got.get("routes", []):
            if r.get("peer") == peer:
                return r
        return {}

    # Both routes arrive; B's (AS_PATH 65002) beats ua's (65001 65001 65001)
    # and is installed through the static route's gateway.
    L.wait_until(lambda: route_from("ua") and route_from("b"), 30, "both routes to DEST at A")
    L.wait_until(lambda: kernel_route(a) == [f"{IGP_NET}.2@igp"], 20,
                 f"DEST through the IGP link at A: {kernel_route(a)}")
    assert route_from("b").get("eligible") is True, route_from("b")
    L.wait_until(lambda: reply_ttl(h) == VIA_B, 10, "the host's ping through B")
    nh = {n["address"]: n for n in (pa.api("/api/nexthops") or {}).get("nexthops", [])}
    assert UB_NEXT_HOP in nh, nh
    assert nh[UB_NEXT_HOP].get("resolution") == "recursive", nh[UB_NEXT_HOP]

    # The IGP route goes: B's next hop does not resolve, its route is not
    # eligible, and ua's is installed.
    a.run(["ip", "route", "del", f"{UB_NET}.0/24"])
    L.wait_until(lambda: kernel_route(a) == [f"{ua.v4}@{L.IFNAME}"], 20,
                 f"DEST through ua at A: {kernel_route(a)}")
    assert route_from("b").get("eligible") is False, route_from("b")
    L.wait_until(lambda: reply_ttl(h) == VIA_UA, 10, "the host's ping through ua")
    # A's best is now ua's, which it passes to B with itself as the next
    # hop (peer.next_hop = "self"), not ua's address.
    L.wait_until(lambda: f"BGP.next_hop: {a.v4}" in border_b.birdc("show", "route", DEST, "protocol", "a", "all"),
                 10, "ua's route at B with A as its next hop: "
                     + border_b.birdc("show", "route", DEST, "protocol", "a", "all"))

    # It comes back: so does B's route.
    a.run(static)
    L.wait_until(lambda: kernel_route(a) == [f"{IGP_NET}.2@igp"], 20,
                 f"DEST through the IGP link again: {kernel_route(a)}")
    L.wait_until(lambda: reply_ttl(h) == VIA_B, 10, "the host's ping through B again")

    # The IGP link goes down under a ping every 2 ms: the loss window.
    count, interval = 3000, 0.002
    ping = subprocess.Popen(["ip", "netns", "exec", h, "ping", "-n", "-q", "-i", str(interval),
                             "-c", str(count), "-W", "1", DEST_HOST],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1.5)
    a.run(["ip", "link", "set", "igp", "down"])
    try:
        out, _ = ping.communicate(timeout=30)
    finally:
        if ping.poll() is None:
            ping.kill()
    m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
    assert m, out
    sent, got = int(m.group(1)), int(m.group(2))
    print(f"two borders: IGP link down, loss window {(sent - got) * interval * 1000:.0f} ms "
          f"({sent - got} of {sent} pings every {interval * 1000:.0f} ms lost)")
    assert kernel_route(a) == [f"{ua.v4}@{L.IFNAME}"], kernel_route(a)
    assert reply_ttl(h) == VIA_UA
    # the last pings got through (the traffic moved; it was not lost for good)
    assert got > 0 and sent - got < sent // 2, out

    # The link and its IGP route come back: so does the path through B.
    a.run(["ip", "link", "set", "igp", "up"])
    L.wait_until(lambda: a.run(static, check=False).returncode == 0 or
                 "File exists" in (a.run(static, check=False).stderr or ""), 10, "the static route again")
    L.wait_until(lambda: kernel_route(a) == [f"{IGP_NET}.2@igp"], 20,
                 f"DEST through the IGP link after the link came back: {kernel_route(a)}")
    L.wait_until(lambda: reply_ttl(h) == VIA_B, 10, "the host's ping through B after the link came back")
    pa.stop()
