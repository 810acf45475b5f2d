"""Loop checks on import beside an import filter, from a 2-octet AS peer
(RFC 6793): Petrel's own 4-octet AS is visible only in AS4_PATH, which
the daemon merges into AS_PATH through the UPDATE's AttributeSet; with an
import filter that set is built once and answers the loop check and the
filter both (daemon/peer.cpp). An UPDATE whose merged path holds
Petrel's AS is refused; another one is accepted with the filter's
LOCAL_PREF.

SKIPs while the petrel binary is missing (set PETREL, or build it).
"""

from __future__ import annotations

import ipaddress
import struct

import lab as L
import speaker as S
from test_petrel import start_petrel

PETREL_ASN = 4200000001   # 4-octet: a 2-octet peer sees AS_TRANS
PEER_ASN = 65020
FILTER = ('[[filter]]\nname = "pref"\ndefault = "accept"\n'
          '[[filter.rule]]\nprefixes = ["10.70.0.0/16 le 24"]\naction = "accept"\nset_local_pref = 50\n')


def two_octet_update(prefixes: list[str], next_hop: str, path4: list[int]) -> bytes:
    """AS_PATH in 2-octet form (AS_TRANS for every AS over 65535) and the
    real path in AS4_PATH, as a 2-octet speaker passes it on."""
    path2 = [a if a <= 0xFFFF else S.AS_TRANS for a in path4]
    as4 = bytes([S.AS_SEQUENCE, len(path4)]) + b"".join(struct.pack("!I", a) for a in path4)
    attrs = (S.attribute(S.ORIGIN, b"\x00") + S.as_path(path2, as4=False) +
             S.attribute(S.NEXT_HOP, ipaddress.IPv4Address(next_hop).packed) +
             S.attribute(S.AS4_PATH, as4, S.F_OPTIONAL | S.F_TRANSITIVE))
    return S.update(attrs=attrs, nlri=b"".join(S.encode_prefix(p) for p in prefixes))


def routes(petrel: L.Petrel, prefix: str) -> list[dict]:
    got = petrel.api(f"/api/routes?prefix={prefix}") or {}
    return [r for pr in got.get("prefixes", []) for r in pr["routes"]]


def test_a_two_octet_peers_loop_is_refused_beside_an_import_filter(lab):
    me, node = lab.node("petrel"), lab.node("peer")
    peer = L.PetrelPeer("old", node.v4, PEER_ASN, me.v4, passive=True, families=("ipv4-unicast",),
                        import_policy="pref")
    petrel = start_petrel(L.Petrel(me, [peer], PETREL_ASN, extra_toml=FILTER))
    sp = L.speaker(node, PEER_ASN, families=("ipv4-unicast",), as4=False)
    sp.connect(me.v4, local=node.v4, netns=node.ns, timeout=15, attempts=30)
    sp.start()
    sp.wait_established(10)
    looped, fine = ["10.70.1.0/24", "10.70.2.0/24"], ["10.70.3.0/24"]
    # through 4200000001 and back: a loop only the AS4_PATH shows
    sp.send(two_octet_update(looped, node.v4, [PEER_ASN, 4200000007, PETREL_ASN, 64999]))
    sp.send(two_octet_update(fine, node.v4, [PEER_ASN, 4200000007, 64999]))
    L.wait_until(lambda: routes(petrel, fine[0]), 20, "the loop-free route in Petrel's table")
    got = routes(petrel, fine[0])
    assert [(r["peer"], r["attributes"].get("local_pref")) for r in got] == [("old", 50)], got
    # the path as merged from AS_PATH and AS4_PATH
    assert got[0]["attributes"]["as_path"] == [
        {"type": "AS_SEQUENCE", "asns": [PEER_ASN, 4200000007, 64999]}], got
    for p in looped:
        assert routes(petrel, p) == [], (p, routes(petrel, p))
    st = petrel.api_peer("old") or {}
    counts = st["update_prefixes"]["ipv4-unicast"]
    assert counts["received"] == 1 and counts["refused"] == 2, counts
    assert st["loops"] == {"own_as": 1, "reflection": 0}, st
    assert petrel.alive()
