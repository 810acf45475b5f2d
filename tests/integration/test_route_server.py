"""Route-server mode (RFC 7947, docs/export.md "Route-server mode"):
Petrel (AS 65000) as the route server of four BIRD members on one LAN.

- A (AS 65001) announces an IPv4 and an IPv6 prefix with MED 77 and the
  community (65001,100). B, a route-server client, gets them as A sent
  them: AS_PATH "65001", A's next hop (IPv6: A's global and link-local
  addresses), the MED and the community (sections 2.2.1, 2.2.2.1, 2.2.3,
  2.2.4). C, an external peer
  that is not a route-server client, gets Petrel's AS first, Petrel's next
  hop and no MED (RFC 4271).
- Path hiding (section 2.3): A and D (AS 65004, a longer path) announce the
  same prefix; A's is the best and carries (65001,666), which B's and C's
  export filter refuses. B, a client, gets D's path; C does not get the
  prefix at all; A itself, whose own route is the best, gets D's.
"""

from __future__ import annotations

import re
import time
from typing import Optional

import lab as L

RS_ASN = 65000
A_ASN, B_ASN, C_ASN, D_ASN = 65001, 65002, 65003, 65004
HOLD = 9
P4 = "10.71.0.0/24"       # A's, with MED and (65001,100)
P6 = "2001:db8:71::/48"   # A's, the same in IPv6
HIDDEN = "10.72.0.0/24"   # A's tagged (65001,666), and D's with a longer path


class Member(L.Bird):
    """A member's BIRD: takes a first AS other than the route server's
    (RFC 7947 section 2.2.2.2), and runs `tag` (filter statements) on what
    it exports."""

    tag = ""

    def config(self) -> str:
        conf = super().config().replace("  passive off;", "  passive off;\n  enforce first as off;")
        conf = conf.replace("export all;", f"export filter {{ {self.tag}accept; }};")
        # BIRD's own IPv6 next hop: the global address and, on the shared
        # LAN, the link-local one (RFC 2545 section 3).
        conf = conf.replace(f"bgp_next_hop = {self.node.v6}; ", "")
        return conf.replace("export filter { accept", f"export filter {{ {self.tag}accept")


def member(node: L.Node, rs: L.Node, asn: int, announce: tuple[str, ...], tag: str = "") -> Member:
    m = Member(node, L.Session(asn, RS_ASN, rs.v4, node.v4, hold_time=HOLD, announce=announce))
    m.tag = tag
    return m.start()


def route_from_rs(bird: L.Bird, prefix: str) -> Optional[dict[str, str]]:
    """The BGP attributes of BIRD's route to `prefix` learned from Petrel
    (BGP.as_path, BGP.next_hop, ... without "BGP."), or None."""
    # ("Network not found" is an error exit.)
    out = L.run(["birdc", "-s", bird.sock, "show", "route", "all", prefix, "protocol", bird.proto],
                check=False, timeout=10).stdout
    if "BGP.as_path" not in out:
        return None
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^\s+BGP\.(\w+):\s*(.*)$", out, re.M)}


def wait_route(bird: L.Bird, prefix: str, as_path: str) -> dict[str, str]:
    return L.wait_until(lambda: (lambda r: r if r and r.get("as_path") == as_path else None)(
        route_from_rs(bird, prefix)), 40, f"{bird.node.name} holds {prefix} with AS_PATH {as_path}")


def test_route_server_clients_get_routes_unchanged_and_unhidden(lab):
    rs, an, bn, cn, dn = (lab.node(n) for n in ("rs", "a", "b", "c", "d"))
    client = ("route_server_client = true",)
    petrel = L.Petrel(rs, [
        L.PetrelPeer("a", an.v4, A_ASN, rs.v4, hold_time=HOLD, export_policy="all", extra=client),
        L.PetrelPeer("b", bn.v4, B_ASN, rs.v4, hold_time=HOLD, export_policy="no-666", extra=client),
        L.PetrelPeer("c", cn.v4, C_ASN, rs.v4, hold_time=HOLD, export_policy="no-666"),
        L.PetrelPeer("d", dn.v4, D_ASN, rs.v4, hold_time=HOLD, export_policy="all", extra=client),
    ], RS_ASN, extra_toml="\n".join([
        "[[filter]]", 'name = "no-666"', 'default = "accept"',
        "[[filter.rule]]", 'communities = ["65001:666"]', 'action = "reject"',
    ])).start()
    a = member(an, rs, A_ASN, (P4, P6, HIDDEN), f"bgp_med = 77; bgp_community = add(bgp_community, (65001,100)); "
               f"if net = {HIDDEN} then bgp_community = add(bgp_community, (65001,666)); ")
    b = member(bn, rs, B_ASN, ())
    c = member(cn, rs, C_ASN, ())
    d = member(dn, rs, D_ASN, (HIDDEN,), f"bgp_path.prepend({D_ASN}); ")
    for m in (a, b, c, d):
        m.wait_established(30)
    # enforce_first_as defaults to off for a route-server client.
    assert petrel.api_peer("b")["as_path_checks"]["enforce_first_as"] is False
    assert petrel.api_peer("c")["as_path_checks"]["enforce_first_as"] is True

    # B, a client: A's routes as A sent them.
    r4 = wait_route(b, P4, f"{A_ASN}")
    assert r4["next_hop"] == an.v4, r4
    assert r4["med"] == "77", r4
    assert r4["community"] == "(65001,100)", r4
    r6 = wait_route(b, P6, f"{A_ASN}")
    # A's global and link-local addresses, as A sent them (B is on the LAN).
    assert r6["next_hop"] == f"{an.v6} {an.ll}", r6
    assert r6["med"] == "77", r6

    # C, not a client: Petrel's AS first, Petrel's next hop, no MED.
    c4 = wait_route(c, P4, f"{RS_ASN} {A_ASN}")
    assert c4["next_hop"] == rs.v4, c4
    assert "med" not in c4, c4
    assert c4["community"] == "(65001,100)", c4
    c6 = wait_route(c, P6, f"{RS_ASN} {A_ASN}")
    assert c6["next_hop"] == f"{rs.v6} {rs.ll}", c6

    # Path hiding: A's best path refused by B's filter hides nothing from B.
    hb = wait_route(b, HIDDEN, f"{D_ASN} {D_ASN}")
    assert hb["next_hop"] == dn.v4, hb
    assert "65001,666" not in hb.get("community", ""), hb
    # A gets D's path for its own prefix (its own route is the best).
    ha = wait_route(a, HIDDEN, f"{D_ASN} {D_ASN}")
    assert ha["next_hop"] == dn.v4, ha
    # D, a client, gets A's routes unchanged too, tag and all.
    hd = wait_route(d, HIDDEN, f"{A_ASN}")
    assert "(65001,666)" in hd["community"], hd
    # C, with the same filter but not a client, gets nothing for it: the
    # best path is refused and Petrel's one best path hides D's. (B and A
    # got theirs from the same table change; C stays without it for 3 s.)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert route_from_rs(c, HIDDEN) is None
        time.sleep(0.5)
    assert c.received_prefixes("ipv4-unicast") == {P4}
