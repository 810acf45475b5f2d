"""One session flooding UPDATEs does not starve the others on its worker.

Sessions share a few worker threads (one per core, peers dealt round
robin: daemon/server.cpp). A worker reads a connection at most 16 chunks
of 64 KiB or 20 ms a wakeup (daemon/peer.cpp, kReadsPerWakeup and
kReadBudget), so that its loop's timers, and the KEEPALIVEs they send to
the worker's other sessions, get their turn. This test gives that a peer
that never lets up: a speaker that keeps Petrel's socket full of UPDATEs
for FLOOD seconds, and a second speaker ON THE SAME WORKER with a hold
time of 3 s, whose KEEPALIVEs from Petrel must keep coming (every gap
under the hold time, the session never dropped). Then every flooded
route must be in the table: the budget delays work, it loses none.
"""

from __future__ import annotations

import os
import struct
import time

import lab as L
import speaker as S
from test_petrel import PETREL_ASN, start_petrel

FLOOD = 8.0          # seconds the flooder keeps Petrel's socket full
HOLD = 3             # the watcher's hold time: a KEEPALIVE a second
PREFIXES = 16384     # the flooder's distinct /24s, announced again and again
PER_UPDATE = 800     # /24s in one UPDATE (4 octets each: under 4096)


def _flood_blob(asn: int, next_hop: str) -> bytes:
    """Every prefix announced twice, once with MED 1 and once with MED 2,
    so that each round replaces each route (implicit withdrawal)."""
    prefixes = [f"10.{i >> 8}.{i & 255}.0/24" for i in range(PREFIXES)]
    out = []
    for med in (1, 2):
        extra = S.attribute(S.MED, struct.pack("!I", med), S.F_OPTIONAL)
        for i in range(0, PREFIXES, PER_UPDATE):
            out.append(S.announce(prefixes[i:i + PER_UPDATE], next_hop, asn, extra_attrs=extra))
    return b"".join(out)


def test_a_flooding_session_does_not_starve_its_worker_neighbour(lab):
    me = lab.node("petrel")
    flood_node, watch_node = lab.node("flooder"), lab.node("watcher")
    # Peers go to workers round robin; with one worker per core the first
    # and the (cores+1)th share worker 0. The ones between stay idle.
    cores = os.cpu_count() or 1
    peers = [L.PetrelPeer("flooder", flood_node.v4, 65010, me.v4, passive=True, hold_time=90,
                          families=("ipv4-unicast",))]
    for i in range(1, cores):
        peers.append(L.PetrelPeer(f"idle{i}", f"198.51.100.{i}", 65100 + i, me.v4, passive=True,
                                  families=("ipv4-unicast",)))
    peers.append(L.PetrelPeer("watcher", watch_node.v4, 65020, me.v4, passive=True,
                              hold_time=HOLD, families=("ipv4-unicast",)))
    petrel = L.Petrel(me, peers, PETREL_ASN)
    start_petrel(petrel)

    watcher = L.speaker(watch_node, 65020, hold_time=HOLD, families=("ipv4-unicast",))
    watcher.connect(me.v4, local=watch_node.v4, netns=watch_node.ns, timeout=15, attempts=30)
    watcher.start()
    watcher.wait_established(10)
    flooder = L.speaker(flood_node, 65010, hold_time=90, families=("ipv4-unicast",))
    flooder.connect(me.v4, local=flood_node.v4, netns=flood_node.ns, timeout=15, attempts=30)
    flooder.start()
    flooder.wait_established(10)

    blob = _flood_blob(65010, flood_node.v4)
    t0 = time.monotonic()
    wall0 = time.time()   # speaker.Message.time is wall-clock time
    rounds = 0
    while time.monotonic() - t0 < FLOOD and rounds < 10000:   # bounded in time and count
        flooder.send(blob)    # blocks while Petrel's receive buffer is full
        rounds += 1
    flood_end = time.monotonic()
    assert rounds >= 2, f"only {rounds} rounds sent in {FLOOD}s"

    # all of it taken: every announcement counted, every prefix held once
    announced = rounds * 2 * PREFIXES

    def taken():
        st = petrel.api_peer("flooder") or {}
        return (st.get("update_prefixes", {}).get("ipv4-unicast", {}).get("announced") == announced
                and st["update_prefixes"]["ipv4-unicast"]["received"] == PREFIXES)
    L.wait_until(taken, 60, f"{announced} announcements of {PREFIXES} prefixes taken by Petrel")
    drained = time.time()

    kas = [m.time for m in watcher.received(S.KEEPALIVE) if m.time >= wall0]
    assert not watcher.closed.is_set(), f"the watcher's session closed: {watcher.close_reason}"
    w = petrel.api_peer("watcher")
    assert w["state"] == "established" and w["established_total"] == 1, w
    span = [wall0] + kas + [drained]
    gaps = [b - a for a, b in zip(span, span[1:])]
    assert max(gaps) < HOLD, \
        f"KEEPALIVE gaps {['%.2f' % g for g in gaps]} reach the hold time {HOLD} " \
        f"while the flooder sent {rounds} rounds ({announced} announcements) for {flood_end - t0:.1f}s"
