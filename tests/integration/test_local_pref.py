"""LOCAL_PREF set by an import filter on routes from external peers
(RFC 4271 9.1.1; docs/configuration.md, `filter.rule.set_local_pref`).

Two upstreams, each a real BIRD in its own namespace, announce the same
prefixes: A (AS 65002) with a longer AS_PATH (it prepends itself twice), B
(AS 65003) with its AS alone. Petrel's import filter on A sets LOCAL_PREF
200 on some of them. Those go through A, in Petrel's own choice (the
kernel's route in Petrel's namespace has A's next hop) and at Petrel's
internal neighbour (a third BIRD, AS 65001), which receives them with
LOCAL_PREF 200 and A's longer path: both routers rank the routes alike.
The prefixes the filter leaves alone go the shorter way, through B, with
the default LOCAL_PREF (100). Then the control: a reload takes the filter
off A (Petrel asks A for its routes again with a ROUTE-REFRESH), and every
prefix goes the shorter way, through B, in the kernel and at the internal
neighbour, with LOCAL_PREF 100.

SKIPs while BIRD or the petrel binary is missing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re

import pytest

import lab as L
from conftest import require
from test_kernel import KernelPetrel, routes
from test_reload import reload

PETREL_ASN, A_ASN, B_ASN = 65001, 65002, 65003
PREFERRED = ("198.51.100.0/24", "2001:db8:100::/48")   # the filter sets LOCAL_PREF 200
PLAIN = ("203.0.113.0/24", "2001:db8:200::/48")        # the filter leaves them alone
FILTER = ('[[filter]]\nname = "prefer-a"\ndefault = "accept"\n'
          f'[[filter.rule]]\nprefixes = {json.dumps(list(PREFERRED))}\naction = "accept"\nset_local_pref = 200\n')


class PrependingBird(L.Bird):
    """An upstream that prepends its own AS twice more to what it exports
    (so Petrel receives a path of three)."""

    def config(self) -> str:
        asn = self.session.local_asn
        prepend = f"bgp_path.prepend({asn}); bgp_path.prepend({asn});"
        conf = super().config()
        conf = conf.replace("export all;", f"export filter {{ {prepend} accept; }};")
        return re.sub(r"(bgp_next_hop = [^;]+;) accept;", rf"\1 {prepend} accept;", conf)


class InternalBird(L.Bird):
    """Petrel's internal neighbour, one hop away (`direct`): next hops on
    the shared subnet are taken as they are (no IGP to resolve them)."""

    def config(self) -> str:
        return super().config().replace("  passive on;", "  passive on;\n  direct;")


def bird_route(bird: L.Bird, prefix: str) -> dict[str, str]:
    """The AS_PATH, LOCAL_PREF and next hop of BIRD's best route to
    `prefix` (empty when it has none)."""
    out = bird.birdc("show", "route", "all", prefix)
    got = {}
    for key, pat in (("as_path", r"BGP\.as_path:\s*([^\n]*)"), ("local_pref", r"BGP\.local_pref:\s*(\d+)"),
                     ("next_hop", r"BGP\.next_hop:\s*(\S+)")):
        m = re.search(pat, out)
        if m:
            got[key] = m.group(1).strip()
    return got


def test_import_filter_local_pref_makes_the_longer_path_win(lab):
    require("bird")
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me, an, bn, ibn = lab.node("petrel"), lab.node("up_a"), lab.node("up_b"), lab.node("ibgp")
    announce = PREFERRED + PLAIN
    up_a = PrependingBird(an, L.Session(A_ASN, PETREL_ASN, me.v4, an.v4, passive=True, announce=announce)).start()
    up_b = L.Bird(bn, L.Session(B_ASN, PETREL_ASN, me.v4, bn.v4, passive=True, announce=announce)).start()
    inner = InternalBird(ibn, L.Session(PETREL_ASN, PETREL_ASN, me.v4, ibn.v4, passive=True)).start()
    petrel = KernelPetrel(me, [
        L.PetrelPeer("up_a", an.v4, A_ASN, me.v4, import_policy="prefer-a"),
        L.PetrelPeer("up_b", bn.v4, B_ASN, me.v4),
        L.PetrelPeer("ibgp", ibn.v4, PETREL_ASN, me.v4, export_policy="all"),
    ], PETREL_ASN, extra_toml=FILTER)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    for b in (up_a, up_b, inner):
        b.wait_established(30)

    # Petrel's own choice, in its namespace's kernel: A where the filter set
    # LOCAL_PREF 200 (its longer path notwithstanding), B elsewhere.
    want4 = {PREFERRED[0]: [an.v4], PLAIN[0]: [bn.v4]}
    want6 = {PREFERRED[1]: [an.v6], PLAIN[1]: [bn.v6]}

    def kernel():
        return routes(me), routes(me, v6=True)
    L.wait_until(lambda: kernel() == (want4, want6), 30, f"kernel routes {want4} {want6}: {kernel()}")

    # The API says why: the degree of preference decided against B's route.
    got = petrel.api(f"/api/routes/{PREFERRED[0]}/explain")
    assert got and got["decided_by"] == "local preference", got
    by_peer = {r["peer"]: r for r in got["routes"]}
    assert by_peer["up_a"]["best"] and by_peer["up_a"]["local_pref"] == 200, got
    assert by_peer["up_a"]["as_path_length"] == 3, got
    assert by_peer["up_b"]["lost_by"] == "local preference" and by_peer["up_b"]["local_pref"] == 100, got
    plain = petrel.api(f"/api/routes/{PLAIN[0]}/explain")
    assert plain and plain["decided_by"] == "AS path length", plain

    # The internal neighbour: LOCAL_PREF 200 and A's path where Petrel chose
    # A; the default 100 and B's path elsewhere.
    a_path, b_path = f"{A_ASN} {A_ASN} {A_ASN}", f"{B_ASN}"
    want = {PREFERRED[0]: (a_path, "200"), PREFERRED[1]: (a_path, "200"),
            PLAIN[0]: (b_path, "100"), PLAIN[1]: (b_path, "100")}

    def at_inner():
        return {p: (lambda r: (r.get("as_path"), r.get("local_pref")))(bird_route(inner, p)) for p in want}
    L.wait_until(lambda: at_inner() == want, 30, f"the internal BIRD holds {want}: {at_inner()}")
    assert bird_route(inner, PREFERRED[0])["next_hop"] == an.v4
    assert bird_route(inner, PLAIN[0])["next_hop"] == bn.v4

    # The control: the filter off A's import by a live reload. A's routes
    # come again (ROUTE-REFRESH) without LOCAL_PREF, so the degree of
    # preference is the default on both sides and the shorter path, B's,
    # wins everywhere: in Petrel, in its kernel and at its internal
    # neighbour, which now gets LOCAL_PREF 100 and B's path for all four.
    petrel.peers = [dataclasses.replace(p, import_policy="all") if p.name == "up_a" else p for p in petrel.peers]
    reload(petrel, petrel.config())
    ev = petrel.wait_events("reload-peer", peer="up_a")[-1]
    assert ev["import"] == "policy prefer-a -> all", ev
    want4 = {PREFERRED[0]: [bn.v4], PLAIN[0]: [bn.v4]}
    want6 = {PREFERRED[1]: [bn.v6], PLAIN[1]: [bn.v6]}
    L.wait_until(lambda: kernel() == (want4, want6), 30, f"kernel routes {want4} {want6}: {kernel()}")
    got = petrel.api(f"/api/routes/{PREFERRED[0]}/explain")
    assert got and got["decided_by"] == "AS path length", got
    by_peer = {r["peer"]: r for r in got["routes"]}
    assert by_peer["up_b"]["best"] and by_peer["up_a"]["local_pref"] == 100, got
    want = {p: (b_path, "100") for p in PREFERRED + PLAIN}
    L.wait_until(lambda: at_inner() == want, 30, f"the internal BIRD holds {want}: {at_inner()}")
    assert bird_route(inner, PREFERRED[0])["next_hop"] == bn.v4
