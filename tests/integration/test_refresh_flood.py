"""A ROUTE-REFRESH flood, and a ROUTE-REFRESH without the capability (issue 19).

Speaker "b" (the bystander) announces N routes to Petrel, which passes them
on to speaker "f". Then f sends REFRESHES ROUTE-REFRESH requests at once
(some 23 kB). Each used to queue the whole Adj-RIB-Out again: 1,000 of them
with 100k routes took the daemon to 1.8 GB and an OOM kill. Now requests
that come while a refresh is owed join it, and the Adj-RIB-Out is walked in
slices as the socket takes the bytes (docs/export.md, "Route refresh").
Asserted: Petrel stays up, its resident memory (VmRSS, sampled every 0.1 s
while the refresh goes out) grows by less than RSS_BOUND, b's session stays
Established, f's too, and f ends with exactly the N routes: with enhanced
route refresh (RFC 7313) every one of them is sent again between the last
BoRR and its EoRR, so a receiver that purges at the EoRR what was not sent
again loses none, and the BoRR/EoRR pairs are few (one walk, plus at most
one for requests that came during it).

A route too large for one UPDATE to a peer without extended messages is
withdrawn from it (or never sent), counted (`oversized`) and logged once.

A peer whose OPEN has no route refresh capability gets NOTIFICATION Message
Header Error / Bad Message Type (data: the type, 5) for a ROUTE-REFRESH
(RFC 5492 section 3, RFC 4271 section 6.1; docs/fsm.md).

REFRESH_FLOOD_N and REFRESH_FLOOD_COUNT override N and REFRESHES (to run
the test against an old binary at a size the machine survives).
SKIPs while the petrel binary is missing (set PETREL, or build it).
"""

from __future__ import annotations

import ipaddress
import os
import time

import lab as L
import speaker as S
from test_petrel import PETREL_ASN, start_petrel

N = int(os.environ.get("REFRESH_FLOOD_N", "50000"))        # routes f is sent
REFRESHES = int(os.environ.get("REFRESH_FLOOD_COUNT", "1000"))
RSS_BOUND = 64 << 20   # bytes Petrel's RSS may grow by while the flood is served
PER_UPDATE = 800       # /24s per UPDATE from b
B_ASN, F_ASN = 65030, 65040


def prefix(i: int) -> str:
    return f"{30 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}.0/24"


def updates(prefixes: list[str], next_hop: str, asn: int) -> bytes:
    attrs = S.attribute(S.ORIGIN, b"\x00") + S.as_path([asn]) + \
        S.attribute(S.NEXT_HOP, ipaddress.IPv4Address(next_hop).packed)
    return b"".join(S.update(attrs=attrs, nlri=b"".join(S.encode_prefix(p) for p in prefixes[i:i + PER_UPDATE]))
                    for i in range(0, len(prefixes), PER_UPDATE))


def daemon_pid(petrel: L.Petrel) -> int:
    """The petrel process: the one `ip netns exec` started, or its child."""
    pid = petrel.proc.pid
    binary = os.path.realpath(petrel.binary)
    for _ in range(3):
        if os.path.realpath(f"/proc/{pid}/exe") == binary:
            return pid
        kids = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(k) for k in f.read().split()]
        if not kids:
            break
        pid = kids[0]
    raise AssertionError(f"no petrel process under {petrel.proc.pid}")


def rss(pid: int) -> int:
    """Resident memory in bytes (VmRSS of /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def state(petrel: L.Petrel, name: str) -> str | None:
    return (petrel.api_peer(name) or {}).get("state")


def test_a_refresh_flood_costs_one_walk_of_the_adj_rib_out(lab):
    me, b_node, f_node = lab.node("petrel"), lab.node("b"), lab.node("f")
    peers = [L.PetrelPeer("b", b_node.v4, B_ASN, me.v4, passive=True, families=("ipv4-unicast",)),
             L.PetrelPeer("f", f_node.v4, F_ASN, me.v4, passive=True, families=("ipv4-unicast",),
                          import_policy="none", export_policy="all")]
    petrel = start_petrel(L.Petrel(me, peers, PETREL_ASN))
    pid = daemon_pid(petrel)
    prefixes = [prefix(i) for i in range(N)]

    b = L.speaker(b_node, B_ASN, families=("ipv4-unicast",))
    b.connect(me.v4, local=b_node.v4, netns=b_node.ns, timeout=15, attempts=30)
    b.start()
    b.wait_established(10)
    b.send(updates(prefixes, b_node.v4, B_ASN))
    L.wait_until(lambda: (petrel.api_peer("b") or {}).get("update_prefixes", {})
                 .get("ipv4-unicast", {}).get("received") == N, 120, f"{N} routes of b in Petrel's table")

    # f says it does enhanced route refresh, so the refresh is bracketed.
    f = L.speaker(f_node, F_ASN, families=("ipv4-unicast",),
                  extra_caps=S.capability(S.CAP_ENHANCED_ROUTE_REFRESH))
    f.connect(me.v4, local=f_node.v4, netns=f_node.ns, timeout=15, attempts=30)
    f.start()
    f.wait_established(10)
    f.wait_routes({"ipv4-unicast": N}, 120)
    f.wait(lambda: "ipv4-unicast" in f.end_of_rib, 30, "End-of-RIB")
    time.sleep(1)   # the daemon settles after the initial table
    before = rss(pid)

    f.send(S.route_refresh("ipv4-unicast") * REFRESHES)
    # While the refresh goes out: the peak RSS, until f has had an EoRR and
    # nothing more came for 2 s (bounded).
    peak = before
    deadline = time.monotonic() + 120
    last_count, last_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        assert petrel.alive(), petrel.log_text()[-2000:]
        peak = max(peak, rss(pid))
        count = len(f.messages)
        if count != last_count:
            last_count, last_change = count, time.monotonic()
        subtypes = S.refresh_subtypes(f.received(S.ROUTE_REFRESH))
        if subtypes and subtypes[-1] == S.RR_EORR and time.monotonic() - last_change > 2:
            break
        time.sleep(0.1)
    subtypes = S.refresh_subtypes(f.received(S.ROUTE_REFRESH))
    print(f"RSS before {before >> 20} MiB, peak {peak >> 20} MiB; markers {subtypes}")

    assert petrel.alive(), petrel.log_text()[-2000:]
    assert peak - before < RSS_BOUND, f"RSS grew by {(peak - before) >> 20} MiB (bound {RSS_BOUND >> 20} MiB)"
    assert subtypes and subtypes[-1] == S.RR_EORR, subtypes
    assert subtypes == [S.RR_BORR, S.RR_EORR] * (len(subtypes) // 2), subtypes
    assert 1 <= len(subtypes) // 2 <= 2, f"{len(subtypes) // 2} refresh walks for {REFRESHES} requests"
    # Every route again between the last BoRR and its EoRR (RFC 7313 section 4).
    with f._cond:
        msgs = list(f.messages)
    borr = max(i for i, m in enumerate(msgs) if m.type == S.ROUTE_REFRESH and m.body[2] == S.RR_BORR)
    again: set[str] = set()
    for m in msgs[borr:]:
        if m.type == S.UPDATE:
            again.update(S.parse_update(m.body).announced.get("ipv4-unicast", []))
    assert again == set(prefixes), f"{len(set(prefixes) - again)} routes not sent again"
    assert f.counts() == {"ipv4-unicast": N, "ipv6-unicast": 0}
    assert not f.closed.is_set() and not b.closed.is_set(), (f.close_reason, b.close_reason)
    assert state(petrel, "b") == "established" and state(petrel, "f") == "established"
    got = petrel.api_peer("f") or {}
    assert got["messages"]["in"]["route-refresh"] == REFRESHES, got["messages"]
    assert got["update_prefixes"]["ipv4-unicast"]["advertised"] == N
    assert got["oversized"] == 0
    assert petrel.stop() == 0, petrel.log_text()[-2000:]


def test_a_refresh_without_the_capability_is_a_bad_message_type(lab):
    me, p_node = lab.node("petrel"), lab.node("p")
    peers = [L.PetrelPeer("p", p_node.v4, F_ASN, me.v4, passive=True, families=("ipv4-unicast",),
                          import_policy="all", export_policy="all")]
    petrel = start_petrel(L.Petrel(me, peers, PETREL_ASN))
    sp = L.speaker(p_node, F_ASN, families=("ipv4-unicast",), route_refresh=False)
    sp.connect(me.v4, local=p_node.v4, netns=p_node.ns, timeout=15, attempts=30)
    sp.start()
    sp.wait_established(10)
    sp.send(S.route_refresh("ipv4-unicast"))
    n = sp.wait_notification(10)
    assert (n.code, n.subcode, n.data) == (S.ERR_HEADER, 3, bytes([S.ROUTE_REFRESH])), n
    sent = petrel.wait_events("notification-sent", 1, timeout=10, peer="p")
    assert sent[0]["code"] == "1" and sent[0]["subcode"] == "3", sent
    assert petrel.alive()
    assert petrel.stop() == 0, petrel.log_text()[-2000:]


def test_a_route_too_large_for_a_peer_is_withdrawn_counted_and_logged_once(lab):
    """Speaker "x" (RFC 8654 extended messages) sends routes whose
    attributes (1,100 communities, some 4.4 kB) fit its session; "f",
    without extended messages, had an earlier version of one of them and
    must lose it, never get the other, see `oversized` count both, and
    Petrel logs route-oversized once."""
    me, x_node, f_node = lab.node("petrel"), lab.node("x"), lab.node("f")
    peers = [L.PetrelPeer("x", x_node.v4, B_ASN, me.v4, passive=True, families=("ipv4-unicast",)),
             L.PetrelPeer("f", f_node.v4, F_ASN, me.v4, passive=True, families=("ipv4-unicast",),
                          import_policy="none", export_policy="all")]
    petrel = start_petrel(L.Petrel(me, peers, PETREL_ASN))
    x = L.speaker(x_node, B_ASN, families=("ipv4-unicast",), extra_caps=S.capability(6))  # RFC 8654
    x.connect(me.v4, local=x_node.v4, netns=x_node.ns, timeout=15, attempts=30)
    x.start()
    x.wait_established(10)
    f = L.speaker(f_node, F_ASN, families=("ipv4-unicast",))
    f.connect(me.v4, local=f_node.v4, netns=f_node.ns, timeout=15, attempts=30)
    f.start()
    f.wait_established(10)
    x.send_update(["10.91.0.0/24", "10.91.1.0/24"], x_node.v4)
    f.wait_routes({"ipv4-unicast": 2}, 20)
    many = S.attribute(S.COMMUNITIES, b"".join((0xFDE80000 + i).to_bytes(4, "big") for i in range(1100)),
                       S.F_OPTIONAL | S.F_TRANSITIVE)
    x.send_update(["10.91.0.0/24", "10.91.2.0/24"], x_node.v4, extra_attrs=many)
    f.wait_routes({"ipv4-unicast": 1}, 20)   # 10.91.0.0/24 withdrawn, 10.91.2.0/24 never sent
    assert set(f.routes["ipv4-unicast"]) == {"10.91.1.0/24"}
    L.wait_until(lambda: (petrel.api_peer("f") or {}).get("oversized") == 2, 10, "oversized = 2 for f")
    got = petrel.api_peer("f") or {}
    assert got["update_prefixes"]["ipv4-unicast"]["advertised"] == 1
    assert (petrel.api_peer("x") or {}).get("oversized") == 0
    x.send_update(["10.91.3.0/24"], x_node.v4, extra_attrs=many)
    L.wait_until(lambda: (petrel.api_peer("f") or {}).get("oversized") == 3, 10, "oversized = 3 for f")
    logged = petrel.events("route-oversized", peer="f")
    assert len(logged) == 1, logged
    assert int(logged[0]["attribute_bytes"]) > 4096 and logged[0]["max_message"] == "4096", logged
    assert f.counts()["ipv4-unicast"] == 1 and not f.closed.is_set()
    assert petrel.stop() == 0, petrel.log_text()[-2000:]
