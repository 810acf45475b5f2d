"""A peer's withdrawal shared by the table's sweep threads, in the daemon.

Two speakers announce the same N prefixes, N above the table's
parallel_sweep_from (65,536 routes), so that when a session ends
Table::remove_peer splits the shards between the session's worker and
the table's helper thread (docs/table.md). Speaker "a" announces a
shorter AS_PATH, so its routes are the best ones. Its session ends:
Petrel must log routes-withdrawn with all N of its routes, keep the N of
speaker "b", and every prefix must have a best route again, b's (sampled
through /api/routes). Then b's session ends and nothing is left.
The table's maps are made for N prefixes at start
(router.expected_ipv4_prefixes): the daemon logs table-sized with their
bytes, and the routes go into maps that never grow.

SKIPs while the petrel binary is missing (set PETREL, or build it).
"""

from __future__ import annotations

import ipaddress

import lab as L
import speaker as S
from test_petrel import PETREL_ASN, start_petrel

N = 70_000          # prefixes each speaker announces: above parallel_sweep_from
PER_UPDATE = 800    # /24s per UPDATE (about 3.2 kB)
A_ASN, B_ASN = 65010, 65020


def prefix(i: int) -> str:
    return f"{20 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}.0/24"


def updates(prefixes: list[str], next_hop: str, path: list[int]) -> bytes:
    attrs = S.attribute(S.ORIGIN, b"\x00") + S.as_path(path) + \
        S.attribute(S.NEXT_HOP, ipaddress.IPv4Address(next_hop).packed)
    out = []
    for i in range(0, len(prefixes), PER_UPDATE):
        nlri = b"".join(S.encode_prefix(p) for p in prefixes[i:i + PER_UPDATE])
        out.append(S.update(attrs=attrs, nlri=nlri))
    return b"".join(out)


def received(petrel: L.Petrel, name: str) -> int | None:
    st = petrel.api_peer(name) or {}
    return st.get("update_prefixes", {}).get("ipv4-unicast", {}).get("received")


def best_peers(petrel: L.Petrel, prefixes: list[str]) -> dict[str, list[str]]:
    """For each prefix, the peer of its best route (/api/routes lists every route)."""
    out = {}
    for p in prefixes:
        got = petrel.api(f"/api/routes?prefix={p}") or {}
        out[p] = [r["peer"] for pr in got.get("prefixes", []) for r in pr["routes"] if r.get("best")]
    return out


def test_a_full_peers_withdrawal_beside_another_leaves_the_others_routes_best(lab):
    me, a_node, b_node = lab.node("petrel"), lab.node("a"), lab.node("b")
    peers = [L.PetrelPeer("a", a_node.v4, A_ASN, me.v4, passive=True, families=("ipv4-unicast",)),
             L.PetrelPeer("b", b_node.v4, B_ASN, me.v4, passive=True, families=("ipv4-unicast",))]
    petrel = start_petrel(L.Petrel(me, peers, PETREL_ASN, router_toml=f"expected_ipv4_prefixes = {N}"))
    sized = petrel.wait_events("table-sized", 1, timeout=10)
    # 8 shards, each made for N / 8 = 8,750 prefixes three quarters full:
    # 11,667 slots of 24 octets
    assert sized[0]["expected_ipv4_prefixes"] == str(N) and sized[0]["map_bytes"] == str(8 * 11667 * 24), sized
    prefixes = [prefix(i) for i in range(N)]
    sample = prefixes[:: N // 16]
    speakers = {}
    for name, node, asn, path in (("a", a_node, A_ASN, [A_ASN]), ("b", b_node, B_ASN, [B_ASN, 64999, 64998])):
        sp = L.speaker(node, asn, families=("ipv4-unicast",))
        sp.connect(me.v4, local=node.v4, netns=node.ns, timeout=15, attempts=30)
        sp.start()
        sp.wait_established(10)
        sp.send(updates(prefixes, node.v4, path))
        speakers[name] = sp
    for name in ("a", "b"):
        L.wait_until(lambda: received(petrel, name) == N, 120, f"{N} routes of {name} in Petrel's table")
    assert best_peers(petrel, sample) == {p: ["a"] for p in sample}

    speakers["a"].close(code=S.ERR_CEASE, subcode=2)
    gone = petrel.wait_events("routes-withdrawn", 1, timeout=30, peer="a")
    assert int(gone[0]["routes"]) == N, gone
    assert received(petrel, "b") == N
    assert best_peers(petrel, sample) == {p: ["b"] for p in sample}

    speakers["b"].close(code=S.ERR_CEASE, subcode=2)
    gone = petrel.wait_events("routes-withdrawn", 1, timeout=30, peer="b")
    assert int(gone[0]["routes"]) == N, gone
    assert best_peers(petrel, sample) == {p: [] for p in sample}
    assert petrel.alive()
    assert petrel.stop() == 0, petrel.log_text()[-2000:]
