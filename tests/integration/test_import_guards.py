"""Import guards against a scripted peer (table/import.h, docs/export.md):

- NLRI of a family the session did not negotiate (RFC 4760) is ignored:
  never in the table or the kernel, counted as `unnegotiated_family`, the
  session stays up;
- an external peer's empty AS_PATH, or one whose first AS is not the
  peer's (enforce_first_as), is treated as withdraw (RFC 7606 section 7.2),
  counted, the session stays up; a route server's session
  (enforce_first_as = false) takes a path that does not start with its AS;
- max_prefixes: past the limit the peer gets NOTIFICATION Cease / Maximum
  Number of Prefixes Reached with AFI, SAFI and the limit (RFC 4486 section
  4), its routes leave the table and the kernel, and the session is started
  again after max_prefixes_restart seconds (or, with 0, only after a
  reload); with max_prefixes_action = "warn" the session stays up and the
  crossing is logged;
- damp_oscillations: after three sessions in a row that the peer ended soon
  after they came up, the next one waits (4 s, doubling).

SKIPs while the petrel binary is missing (set PETREL, or build it).
"""

from __future__ import annotations

import ipaddress
import json
import signal
import struct
import time

import lab as L
import speaker as S
from test_petrel import start_petrel

PETREL_ASN = 65001
PEER_ASN = 65020
TABLE = 102   # kernel table of these tests
METRIC = 32
V4 = ("ipv4-unicast",)


class KernelPetrel(L.Petrel):
    def config(self) -> str:
        return super().config() + f"\n[kernel]\nenabled = true\ntable = {TABLE}\nmetric = {METRIC}\n"


def kernel_routes(node: L.Node, v6: bool = False) -> set[str]:
    cmd = ["ip", "-j"] + (["-6"] if v6 else []) + ["route", "show", "table", str(TABLE), "proto", "bgp"]
    p = node.run(cmd, check=False)
    if p.returncode != 0:
        return set()   # the kernel makes the table with its first route
    return {r["dst"] if "/" in r["dst"] else r["dst"] + ("/128" if v6 else "/32")
            for r in json.loads(p.stdout or "[]")}


def upd(prefixes: list[str], next_hop: str, path: list[int] | None) -> bytes:
    """IPv4 prefixes with this AS_PATH (one AS_SEQUENCE; None: empty)."""
    attrs = S.attribute(S.ORIGIN, b"\x00") + \
        (S.as_path(path) if path is not None else S.attribute(S.AS_PATH, b"")) + \
        S.attribute(S.NEXT_HOP, ipaddress.IPv4Address(next_hop).packed)
    return S.update(attrs=attrs, nlri=b"".join(S.encode_prefix(p) for p in prefixes))


def table_routes(petrel: L.Petrel, prefix: str) -> list[str]:
    got = petrel.api(f"/api/routes?prefix={prefix}") or {}
    return [r["peer"] for pr in got.get("prefixes", []) for r in pr["routes"]]


def established(petrel: L.Petrel, name: str) -> bool:
    st = petrel.api_peer(name) or {}
    return str(st.get("state", "")).lower() == "established"


def test_unnegotiated_family_empty_path_and_first_as(lab):
    me, node, rs_node = lab.node("petrel"), lab.node("peer"), lab.node("rs")
    petrel = start_petrel(KernelPetrel(me, [
        L.PetrelPeer("v4only", node.v4, PEER_ASN, me.v4, passive=True, families=V4),
        L.PetrelPeer("rs", rs_node.v4, 65030, me.v4, passive=True, families=V4,
                     extra=("enforce_first_as = false",)),
    ], PETREL_ASN))
    # The speaker offers both unicast families; Petrel only IPv4: the
    # session negotiates IPv4 unicast alone.
    sp = L.speaker(node, PEER_ASN, families=("ipv4-unicast", "ipv6-unicast"))
    sp.connect(me.v4, local=node.v4, netns=node.ns, timeout=15, attempts=30)
    sp.start()
    sp.wait_established(10)
    sp.send(S.announce(["2001:db8:77::/48"], node.v6, PEER_ASN))            # not negotiated
    sp.send(upd(["10.81.1.0/24"], node.v4, [65099, PEER_ASN]))              # foreign first AS
    sp.send(upd(["10.81.2.0/24"], node.v4, None))                           # empty AS_PATH
    sp.send(upd(["10.81.3.0/24", "10.81.4.0/24"], node.v4, [PEER_ASN, 64999]))  # fine
    L.wait_until(lambda: "10.81.4.0/24" in kernel_routes(me), 20, "the good routes in the kernel")
    # a route accepted first, then sent again with a foreign first AS: withdrawn
    sp.send(upd(["10.81.3.0/24"], node.v4, [64998, 64999]))
    L.wait_until(lambda: "10.81.3.0/24" not in kernel_routes(me), 20, "10.81.3.0/24 withdrawn")
    st = L.wait_until(lambda: (lambda s: s if s and s["as_path_checks"]["first_as"] == 2 else None)(
        petrel.api_peer("v4only")), 10, "first_as counted twice")
    assert st["unnegotiated_family"] == 1, st
    assert st["as_path_checks"] == {"enforce_first_as": True, "empty_as_path": 1, "first_as": 2}, st
    assert st["update_prefixes"]["ipv4-unicast"]["received"] == 1, st
    assert st["update_prefixes"]["ipv4-unicast"]["refused"] == 3, st
    assert "ipv6-unicast" not in st["update_prefixes"], st
    assert table_routes(petrel, "2001:db8:77::/48") == []
    assert kernel_routes(me, v6=True) == set()
    assert kernel_routes(me) == {"10.81.4.0/24"}
    for p in ("10.81.1.0/24", "10.81.2.0/24", "10.81.3.0/24"):
        assert table_routes(petrel, p) == [], p
    assert established(petrel, "v4only") and sp.notification is None
    # logged once per kind, the rest counted
    assert len(petrel.events("first-as", peer="v4only")) == 1
    assert len(petrel.events("unnegotiated-family", peer="v4only", family="ipv6-unicast")) == 1

    # A route server does not prepend its AS: accepted with enforce_first_as = false.
    rs = L.speaker(rs_node, 65030, families=V4)
    rs.connect(me.v4, local=rs_node.v4, netns=rs_node.ns, timeout=15, attempts=30)
    rs.start()
    rs.wait_established(10)
    rs.send(upd(["10.82.1.0/24"], rs_node.v4, [64900, 64901]))
    rs.send(upd(["10.82.2.0/24"], rs_node.v4, None))   # empty: malformed all the same
    L.wait_until(lambda: table_routes(petrel, "10.82.1.0/24") == ["rs"], 20, "the route server's route")
    st = L.wait_until(lambda: (lambda s: s if s and s["as_path_checks"]["empty_as_path"] == 1 else None)(
        petrel.api_peer("rs")), 10, "the route server's empty AS_PATH counted")
    assert st["as_path_checks"]["first_as"] == 0, st
    assert table_routes(petrel, "10.82.2.0/24") == []
    assert petrel.alive()


def prefixes(n: int, base: int = 90) -> list[str]:
    return [f"10.{base}.{i}.0/24" for i in range(n)]


def limit_petrel(me: L.Node, node: L.Node, *extra: str) -> KernelPetrel:
    return start_petrel(KernelPetrel(me, [
        L.PetrelPeer("limited", node.v4, PEER_ASN, me.v4, passive=False, families=V4,
                     extra=('max_prefixes = { "ipv4-unicast" = 5 }', *extra)),
    ], PETREL_ASN))


def accept(sp: S.Speaker, timeout: float) -> None:
    sp.accept_session(timeout=timeout, attempts=3)


def test_max_prefixes_cease_and_restart(lab):
    me, node = lab.node("petrel"), lab.node("peer")
    sp = L.speaker(node, PEER_ASN, families=V4)
    sp.listen(node.v4, netns=node.ns)   # Petrel dials
    petrel = limit_petrel(me, node, "max_prefixes_restart = 4", "max_prefixes_warn = 60")
    accept(sp, 20)
    sp.send(upd(prefixes(4), node.v4, [PEER_ASN]))   # 4 of 5: past 60 %
    L.wait_until(lambda: len(kernel_routes(me)) == 4, 20, "4 routes in the kernel")
    petrel.wait_events("max-prefixes-warning", peer="limited", family="ipv4-unicast")
    assert established(petrel, "limited")
    sp.send(upd(prefixes(2, base=91), node.v4, [PEER_ASN]))   # 6: past the limit
    n = sp.wait_notification(20)
    t_cease = time.monotonic()
    # RFC 4486 section 4: Cease / Maximum Number of Prefixes Reached, AFI 1, SAFI 1, limit 5
    assert (n.code, n.subcode) == (S.ERR_CEASE, 1), n
    assert n.data == struct.pack("!HBI", 1, 1, 5), n
    L.wait_until(lambda: kernel_routes(me) == set(), 20, "the peer's routes gone from the kernel")
    st = L.wait_until(lambda: (lambda s: s if s and s["max_prefixes"]["held_down"] else None)(
        petrel.api_peer("limited")), 10, "held down in /api/peers")
    assert st["max_prefixes"]["exceeded"] == 1 and st["max_prefixes"]["warnings"] == 1, st
    assert st["max_prefixes"]["limits"] == {"ipv4-unicast": 5}, st
    assert st["max_prefixes"]["restart_seconds"] == 4, st
    assert st["update_prefixes"]["ipv4-unicast"]["received"] == 0, st
    assert table_routes(petrel, "10.90.0.0/24") == []
    # Started again by Petrel after max_prefixes_restart (4 s), not before.
    sp2 = L.speaker(node, PEER_ASN, families=V4)
    sp.close(code=None)
    sp2.listen(node.v4, netns=node.ns)
    accept(sp2, 20)
    waited = time.monotonic() - t_cease
    assert waited >= 3.0, f"reconnected {waited:.1f}s after the Cease"
    assert not (petrel.api_peer("limited") or {})["max_prefixes"]["held_down"]
    sp2.send(upd(prefixes(3), node.v4, [PEER_ASN]))
    L.wait_until(lambda: len(kernel_routes(me)) == 3, 20, "the new session's routes")
    assert petrel.alive()


def test_max_prefixes_restart_zero_waits_for_a_reload(lab):
    me, node = lab.node("petrel"), lab.node("peer")
    sp = L.speaker(node, PEER_ASN, families=V4)
    sp.listen(node.v4, netns=node.ns)
    petrel = limit_petrel(me, node)   # max_prefixes_restart = 0 by default
    accept(sp, 20)
    sp.send(upd(prefixes(6), node.v4, [PEER_ASN]))
    n = sp.wait_notification(20)
    assert (n.code, n.subcode, n.data) == (S.ERR_CEASE, 1, struct.pack("!HBI", 1, 1, 5)), n
    sp2 = L.speaker(node, PEER_ASN, families=V4)
    sp.close(code=None)
    sp2.listen(node.v4, netns=node.ns)
    # connect_retry is 1 s: without the hold Petrel would be back at once
    assert sp2.try_accept(5) is None, "Petrel dialled again without a reload"
    assert (petrel.api_peer("limited") or {})["max_prefixes"]["held_down"]
    petrel.proc.send_signal(signal.SIGHUP)   # the operator acts
    accept(sp2, 20)
    petrel.wait_events("max-prefixes-resume", peer="limited")
    assert petrel.alive()


def test_max_prefixes_warn_keeps_the_session(lab):
    me, node = lab.node("petrel"), lab.node("peer")
    sp = L.speaker(node, PEER_ASN, families=V4)
    sp.listen(node.v4, netns=node.ns)
    petrel = limit_petrel(me, node, 'max_prefixes_action = "warn"')
    accept(sp, 20)
    sp.send(upd(prefixes(7), node.v4, [PEER_ASN]))
    L.wait_until(lambda: len(kernel_routes(me)) == 7, 20, "all 7 routes in the kernel")
    ev = petrel.wait_events("max-prefixes-exceeded", peer="limited", action="warn")
    assert ev[0]["routes"] == "7" and ev[0]["limit"] == "5", ev
    time.sleep(1)
    assert sp.notification is None and established(petrel, "limited")
    st = petrel.api_peer("limited")
    assert st["max_prefixes"]["action"] == "warn" and st["max_prefixes"]["exceeded"] == 1, st
    assert st["update_prefixes"]["ipv4-unicast"]["received"] == 7, st
    assert petrel.alive()


def test_a_peer_whose_sessions_keep_going_down_is_held_back(lab):
    """peer.damp_oscillations (RFC 4271 section 8.1.1): the peer ends three
    sessions in a row with a NOTIFICATION seconds after they came up. The
    first two cost nothing (Petrel dials again after its connect retry);
    after the third Petrel holds the next session back 4 s (logged
    `session-damped`, shown in /api/peers), then dials, and the session
    comes up and takes routes. A max_prefixes Cease (the tests above) is
    Petrel's own stop and does not count."""
    me, node = lab.node("petrel"), lab.node("peer")
    petrel = start_petrel(KernelPetrel(me, [
        L.PetrelPeer("flapping", node.v4, PEER_ASN, me.v4, passive=False, families=V4),
    ], PETREL_ASN))
    closed_at = 0.0
    for i in range(3):
        sp = L.speaker(node, PEER_ASN, families=V4)
        sp.listen(node.v4, netns=node.ns)   # Petrel dials
        accept(sp, 20)
        L.wait_until(lambda: established(petrel, "flapping"), 10, f"session {i + 1} established")
        assert not petrel.events("session-damped"), f"held back after {i} short sessions"
        sp.close()   # Cease / Administrative Shutdown, at once
        closed_at = time.monotonic()
        L.wait_until(lambda: len(petrel.events("session-down")) == i + 1, 10, f"session {i + 1} down")
    ev = petrel.wait_events("session-damped", peer="flapping")
    assert ev[0]["short_sessions"] == "3" and ev[0]["hold_seconds"] == "4", ev
    st = petrel.api_peer("flapping") or {}
    assert st["damping"]["enabled"] is True, st
    assert st["damping"]["short_sessions"] == 3, st
    assert 0 < st["damping"]["held_ms"] <= 4000, st
    sp = L.speaker(node, PEER_ASN, families=V4)
    sp.listen(node.v4, netns=node.ns)
    accept(sp, 20)
    waited = time.monotonic() - closed_at
    assert waited >= 3.5, f"dialled again {waited:.1f}s after the third short session"
    sp.send(upd(prefixes(2), node.v4, [PEER_ASN]))
    L.wait_until(lambda: len(kernel_routes(me)) == 2, 20, "the held-back session's routes")
    assert (petrel.api_peer("flapping") or {})["damping"]["held_ms"] == 0
    sp.close()
    assert petrel.alive()
