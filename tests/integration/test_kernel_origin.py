"""Routes from the kernel, [[static]] routes, RTBH and carrier loss
(docs/kernel.md), against a real BIRD 2 peer.

Petrel and BIRD are lab nodes joined, for their session, by a veth pair of
their own (pb0 in Petrel's namespace, bp0 in BIRD's; 198.18.1.0/24), so
that setting pb0 down takes the carrier from both ends, as a cable pulled
out would. BIRD runs `check link on` (its own link-down ending) and is
passive; Petrel dials.

- `ip route add ... proto static` in Petrel's namespace, inside the
  [[originate]] from_kernel prefix set: announced to BIRD; deleted:
  withdrawn. One outside the set, and one of a protocol not listed, are
  not announced.
- A [[static]] blackhole with announce: in the kernel as a blackhole
  route (metric kernel.static_metric) and at BIRD; gone from the kernel
  when Petrel stops.
- A route BIRD sends with BLACKHOLE (65535:666), accepted by import "all":
  installed as a blackhole (kernel.blackhole_community = true); another
  BIRD route without it is installed through BIRD's address.
- A reload that widens the prefix set announces a route the kernel held
  all along; one that sets the static's announce to false withdraws it
  from BGP and leaves it in the kernel.
- pb0 set down: Petrel ends the session at once (link_down_ends_session,
  default for a single-hop external peer; hold time 30 s), and the session
  is Established again soon after pb0 comes back; the same when bp0 goes
  down (pb0 loses carrier).

SKIPs while the petrel binary or BIRD is missing.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

import lab as L
from conftest import require

HOLD = 30
METRIC = 32
STATIC_METRIC = 31
ME, BIRD = "198.18.1.1", "198.18.1.2"
RTBH = "192.0.2.99/32"        # BIRD sends it with BLACKHOLE
PLAIN = "198.51.100.0/24"     # BIRD sends it without
STATIC_BH = "192.0.2.66/32"   # a [[static]] blackhole, announced


class LinkBird(L.Bird):
    """BIRD on the direct link: passive, check link on, BLACKHOLE on RTBH."""

    def config(self) -> str:
        return "\n".join([
            f'log "{self.node.path("bird-daemon.log")}" all;',
            f"router id {BIRD};",
            "protocol device { scan time 10; }",
            f"protocol static s4 {{ ipv4; route {RTBH} blackhole; route {PLAIN} blackhole; }}",
            f"protocol bgp {self.proto} {{",
            f"  local {BIRD} as 65002;",
            f"  neighbor {ME} as 65001;",
            "  direct; check link on; passive on;",
            f"  hold time {HOLD}; keepalive time 10;",
            "  connect delay time 1; connect retry time 1; error wait time 1, 2;",
            "  ipv4 { import all; export filter { if net = " + RTBH +
            " then bgp_community.add((65535, 666)); accept; }; };",
            "}",
        ]) + "\n"


def direct_link(me: L.Node, bn: L.Node) -> None:
    me.run(["ip", "link", "add", "pb0", "type", "veth", "peer", "name", "bp0"])
    me.run(["ip", "link", "set", "bp0", "netns", bn.ns])
    me.run(["ip", "addr", "add", f"{ME}/24", "dev", "pb0"])
    bn.run(["ip", "addr", "add", f"{BIRD}/24", "dev", "bp0"])
    me.run(["ip", "link", "set", "pb0", "up"])
    bn.run(["ip", "link", "set", "bp0", "up"])


def kernel_routes(node: L.Node, *args: str) -> list[dict]:
    return json.loads(node.run(["ip", "-j", "route", "show", "table", "main", *args]).stdout or "[]")


def state(petrel: L.Petrel) -> str:
    p = petrel.api_peer("bird")
    return p["state"] if p else ""


def test_kernel_origin_static_rtbh_and_link_down(lab):
    require("bird")
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me, bn = lab.node("petrel"), lab.node("bird")
    direct_link(me, bn)
    bird = LinkBird(bn, L.Session(65002, 65001, ME, BIRD, passive=True)).start()
    extra = "\n".join([
        "[kernel]", "enabled = true", f"metric = {METRIC}", "blackhole_community = true",
        "", "[[prefix_set]]", 'name = "mine"', 'prefixes = ["203.0.113.0/24 le 32"]',
        "", "[[originate]]", "from_kernel = true", 'protocols = ["static"]', 'prefixes = "@mine"',
        'communities = ["65001:7"]',
        "", "[[static]]", f'prefix = "{STATIC_BH}"', "blackhole = true", "announce = true",
    ])
    petrel = L.Petrel(me, [L.PetrelPeer("bird", BIRD, 65002, ME, hold_time=HOLD, families=("ipv4-unicast",),
                                        export_policy="all")], 65001, extra_toml=extra)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    L.wait_until(lambda: state(petrel) == "established", 30, "session with BIRD")

    # [[static]] blackhole: in the kernel with the static metric, and at BIRD
    def static_bh():
        return [r for r in kernel_routes(me, "type", "blackhole", "proto", "bgp")
                if r["dst"] == STATIC_BH.split("/")[0] and r.get("metric") == STATIC_METRIC]
    L.wait_until(static_bh, 10, "the [[static]] blackhole in the kernel")
    L.wait_until(lambda: STATIC_BH in bird.received_prefixes("ipv4-unicast"), 15, "the static route at BIRD")

    # RTBH: BIRD's BLACKHOLE route installed as a blackhole; the other through BIRD
    def rtbh():
        return [r for r in kernel_routes(me, "type", "blackhole", "proto", "bgp")
                if r["dst"] == RTBH.split("/")[0] and r.get("metric") == METRIC]
    L.wait_until(rtbh, 15, "BIRD's BLACKHOLE route as a kernel blackhole")
    plain = L.wait_until(lambda: [r for r in kernel_routes(me, "proto", "bgp") if r["dst"] == PLAIN], 15,
                         "BIRD's plain route in the kernel")
    assert plain[0].get("gateway") == BIRD and plain[0].get("type", "unicast") == "unicast", plain

    # routes from the kernel: announced while the kernel holds them
    me.run(["ip", "route", "add", "203.0.113.0/24", "via", BIRD, "proto", "static"])
    me.run(["ip", "route", "add", "203.0.113.128/25", "via", BIRD, "proto", "dhcp"])   # not listed
    me.run(["ip", "route", "add", "10.99.0.0/16", "via", BIRD, "proto", "static"])     # outside the set
    L.wait_until(lambda: "203.0.113.0/24" in bird.received_prefixes("ipv4-unicast"), 10,
                 "the kernel's static route at BIRD")
    got = bird.received_prefixes("ipv4-unicast")
    assert "203.0.113.128/25" not in got and "10.99.0.0/16" not in got, got
    assert "(65001,7)" in bird.birdc("show", "route", "203.0.113.0/24", "all"), "the entry's community"
    origin = L.wait_until(lambda: (lambda o: o if o and o["from_kernel"]["originated_count"] == 1 else None)(
        petrel.api("/api/kernel/origin")), 5, "/api/kernel/origin")
    assert origin["from_kernel"]["originated"][0]["prefix"] == "203.0.113.0/24", origin
    assert origin["from_kernel"]["originated"][0]["source"] == "kernel", origin
    assert origin["static"]["installed"] == 1, origin
    me.run(["ip", "route", "del", "203.0.113.0/24", "proto", "static"])
    L.wait_until(lambda: "203.0.113.0/24" not in bird.received_prefixes("ipv4-unicast"), 10,
                 "the kernel's route withdrawn at BIRD")

    # a reload reads the kernel again: a wider set takes 10.99.0.0/16 (in the
    # kernel all along); the [[static]] route no longer announced is withdrawn
    # from BGP and stays in the kernel
    petrel.extra_toml = extra.replace('"203.0.113.0/24 le 32"', '"203.0.113.0/24 le 32", "10.0.0.0/8 le 16"') \
        .replace("announce = true", "announce = false")
    before = len(petrel.events("reloaded"))
    with open(petrel.conf, "w") as f:
        f.write(petrel.config())
    petrel.proc.send_signal(signal.SIGHUP)
    L.wait_until(lambda: len(petrel.events("reloaded")) > before, 10, "the reload")
    L.wait_until(lambda: "10.99.0.0/16" in bird.received_prefixes("ipv4-unicast"), 10,
                 "a route in the kernel all along, announced after the reload widened the set")
    L.wait_until(lambda: STATIC_BH not in bird.received_prefixes("ipv4-unicast"), 10,
                 "the static route no longer announced")
    assert static_bh(), kernel_routes(me, "type", "blackhole")

    # carrier loss: the session ends at once, not after the 30 s hold time
    t0 = time.monotonic()
    me.run(["ip", "link", "set", "pb0", "down"])
    L.wait_until(lambda: state(petrel) != "established", 5, "the session ended by the link going down")
    took = time.monotonic() - t0
    assert took < 3, took
    assert petrel.events("link-down", peer="bird"), petrel.log_text()[-2000:]
    print(f"session ended {took * 1000:.0f} ms after pb0 went down (hold time {HOLD} s)")
    me.run(["ip", "link", "set", "pb0", "up"])
    L.wait_until(lambda: state(petrel) == "established", 20, "the session back with the link")
    assert petrel.api("/api/kernel/origin")["sessions_ended_by_link_down"] == 1

    # carrier loss: BIRD's end goes down, pb0 stays up without carrier
    t0 = time.monotonic()
    bn.run(["ip", "link", "set", "bp0", "down"])
    L.wait_until(lambda: state(petrel) != "established", 5, "the session ended by the carrier loss")
    took = time.monotonic() - t0
    assert took < 3, took
    print(f"session ended {took * 1000:.0f} ms after pb0 lost carrier")
    bn.run(["ip", "link", "set", "bp0", "up"])
    L.wait_until(lambda: state(petrel) == "established", 20, "the session back with the carrier")
    assert petrel.api("/api/kernel/origin")["sessions_ended_by_link_down"] == 2

    # a plain stop removes the static route
    petrel.stop(signal.SIGINT)
    assert not static_bh(), kernel_routes(me, "type", "blackhole")
