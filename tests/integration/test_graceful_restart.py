"""Graceful restart with Petrel as the helper (docs/graceful-restart.md),
against a real BIRD 2 with `graceful restart on`.

BIRD ("bird") announces routes; Petrel installs them in its namespace's
kernel (table TABLE) and passes them to a second BIRD ("watcher"). BIRD is
killed with SIGKILL:
 - it comes back (with -R, graceful restart recovery: R and F bits set)
   and announces a changed set: the routes stay in Petrel's table and
   kernel meanwhile, the watcher is sent no withdrawal, the unchanged
   routes are not touched in the kernel (`ip monitor route` sees nothing of
   them) nor sent again, and those not announced again go at BIRD's
   End-of-RIB;
 - it does not come back within its restart time: the routes go then;
 - without graceful restart (Petrel's `graceful_restart = false`) the
   routes go at once.
"""

from __future__ import annotations

import os
import re
import signal
import struct
import threading
import time

import pytest

import lab as L
from conftest import require
from test_kernel import KernelPetrel, routes

TABLE = 100


class GrBird(L.Bird):
    """BIRD with `graceful restart on` (and its restart time); started with
    -R after a crash, it recovers gracefully (Restart State and Forwarding
    State bits set)."""
    restart_time = 120
    recovery = False

    def config(self) -> str:
        text = super().config()
        text = text.replace("  passive ", f"  graceful restart on;\n  graceful restart time {self.restart_time};\n"
                                          "  passive ", 1)
        # recovery ends at the neighbours' End-of-RIB, or after this at most
        return "graceful restart wait 15;\n" + text

    def start(self) -> "GrBird":
        conf = self.node.path("bird.conf")
        with open(conf, "w") as f:
            f.write(self.config())
        self.node.run(["bird", "-p", "-c", conf])
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        self.proc = self.node.popen(["bird", "-f", *(["-R"] if self.recovery else []), "-c", conf, "-s", self.sock,
                                     "-P", self.node.path("bird.pid")], self.log)
        L.wait_until(lambda: os.path.exists(self.sock) or self._check_alive(), 10, "bird control socket")
        return self


def import_stats(bird: L.Bird) -> dict[str, int]:
    """BIRD's received import updates and withdraws over its session, summed over channels."""
    out = bird.birdc("show", "protocols", "all", bird.proto)
    got = {"updates": 0, "withdraws": 0}
    for kind in got:
        for m in re.finditer(rf"Import {kind}:\s+(\d+)", out):
            got[kind] += int(m.group(1))
    return got


class KernelWatcher:
    """Polls the kernel's routes of Petrel's table every 100 ms (bounded by
    `limit` seconds) and remembers every watched prefix ever missing."""

    def __init__(self, node: L.Node, watched: set[str], limit: float = 120):
        self.node, self.watched, self.limit = node, watched, limit
        self.missing: set[str] = set()
        self.polls = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        end = time.monotonic() + self.limit
        while not self._stop.is_set() and time.monotonic() < end:
            self.missing |= self.watched - self.have()
            self.polls += 1
            self._stop.wait(0.1)

    def have(self) -> set[str]:
        return set(routes(self.node)) | set(routes(self.node, v6=True))

    def stop(self) -> None:
        self._stop.set()
        self._t.join(10)


def peer_gr(petrel: L.Petrel, name: str) -> dict:
    p = petrel.api_peer(name)
    assert p is not None
    return p["graceful_restart"]


def start_lab(lab, petrel_extra: tuple[str, ...] = (), restart_time: int = 120):
    require("bird")
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me, bn, wn = lab.node("petrel"), lab.node("bird"), lab.node("watcher")
    announce = L.sample_prefixes(bn.index, v4=4, v6=2)
    bird = GrBird(bn, L.Session(65002, 65001, me.v4, bn.v4, passive=True, announce=announce))
    bird.restart_time = restart_time
    bird.start()
    watcher = L.Bird(wn, L.Session(65003, 65001, me.v4, wn.v4, passive=True)).start()
    petrel = KernelPetrel(me, [L.PetrelPeer("bird", bn.v4, 65002, me.v4, extra=petrel_extra),
                               L.PetrelPeer("watcher", wn.v4, 65003, me.v4, import_policy="none",
                                            export_policy="all")], 65001)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    bird.wait_established(30)
    watcher.wait_established(30)
    want = set(announce)
    L.wait_until(lambda: set(routes(me)) | set(routes(me, v6=True)) == want, 20,
                 f"BIRD's routes in Petrel's kernel: {want}")
    watcher.wait_received({"ipv4-unicast": 4, "ipv6-unicast": 2}, 20)
    return me, bird, watcher, petrel, announce


def test_helper_keeps_routes_while_bird_restarts(lab):
    me, bird, watcher, petrel, announce = start_lab(lab)
    gr = peer_gr(petrel, "bird")
    assert gr["enabled"] and gr["negotiated"] and gr["state"] == "none", gr
    assert gr["peer_restart_time"] == 120 and "ipv4-unicast" in gr["peer_families"], gr
    before = import_stats(watcher)
    assert before["withdraws"] == 0, before

    kept = [p for i, p in enumerate(announce) if i != 1 and i != 4]   # one v4, one v6 dropped
    dropped = {announce[1], announce[4]}
    added = "198.19.77.0/28"
    monitor = me.popen(["ip", "-o", "monitor", "route"], me.path("monitor.log"))
    kw = KernelWatcher(me, set(kept))
    try:
        bird.stop(signal.SIGKILL)
        st = L.wait_until(lambda: (lambda g: g if g["state"] == "restarting" else None)(peer_gr(petrel, "bird")),
                          10, "Petrel keeps BIRD's routes (state restarting)")
        assert st["stale_routes_total"] == len(announce) and st["stale_until"], st
        assert petrel.wait_events("graceful-restart-helper", 1), petrel.log_text()[-2000:]
        time.sleep(1.5)   # what would have gone by now is still there
        assert set(routes(me)) | set(routes(me, v6=True)) == set(announce)
        assert import_stats(watcher)["withdraws"] == 0
        assert watcher.received_prefixes("ipv4-unicast") | watcher.received_prefixes("ipv6-unicast") == set(announce)
        updates_before = import_stats(watcher)["updates"]

        # back, with one route of each family gone and a new one
        bird.session.announce = (*kept, added)
        bird.recovery = True
        bird.start()
        bird.wait_established(30)
        L.wait_until(lambda: set(routes(me)) | set(routes(me, v6=True)) == set(kept) | {added}, 30,
                     f"Petrel's kernel after BIRD's End-of-RIB: {set(kept) | {added}}")
        gr = L.wait_until(lambda: (lambda g: g if g["state"] == "none" else None)(peer_gr(petrel, "bird")),
                          10, "graceful restart over")
        assert gr["stale_routes_total"] == 0 and gr["restarts"] == 1 and gr["expired"] == 0, gr
        assert petrel.wait_events("graceful-restart-end-of-rib", 2), petrel.log_text()[-3000:]
        L.wait_until(lambda: import_stats(watcher)["withdraws"] == len(dropped), 10,
                     f"the watcher told of the {len(dropped)} routes not announced again")
    finally:
        kw.stop()
        L.Lab.stop_process(monitor)
    assert kw.polls > 10 and not kw.missing, (kw.polls, kw.missing)
    # the unchanged routes were not sent again, nor touched in the kernel
    assert import_stats(watcher)["updates"] == updates_before + 1, import_stats(watcher)
    with open(me.path("monitor.log")) as f:
        churn = [line for line in f if any(p.split("/")[0] + "/" in line for p in kept)]
    assert churn == [], churn
    assert watcher.received_prefixes("ipv4-unicast") | watcher.received_prefixes("ipv6-unicast") == \
        set(kept) | {added}
    assert petrel.api_peer("bird")["graceful_restart"]["stale_routes_total"] == 0


def test_helper_removes_routes_when_bird_does_not_return(lab):
    me, bird, watcher, petrel, announce = start_lab(lab, restart_time=3)
    t0 = time.monotonic()
    bird.stop(signal.SIGKILL)
    L.wait_until(lambda: peer_gr(petrel, "bird")["state"] == "restarting", 10, "routes kept")
    assert set(routes(me)) | set(routes(me, v6=True)) == set(announce)
    L.wait_until(lambda: not routes(me) and not routes(me, v6=True), 15, "routes gone after the restart time")
    assert time.monotonic() - t0 >= 2.5
    gr = peer_gr(petrel, "bird")
    assert gr["state"] == "none" and gr["expired"] == 1 and gr["stale_routes_total"] == 0, gr
    L.wait_until(lambda: import_stats(watcher)["withdraws"] == len(announce), 10, "watcher told")
    assert petrel.events("graceful-restart-expired"), petrel.log_text()[-2000:]


def test_without_graceful_restart_routes_go_at_once(lab):
    me, bird, watcher, petrel, announce = start_lab(lab, petrel_extra=("graceful_restart = false",))
    gr = peer_gr(petrel, "bird")
    assert not gr["enabled"] and not gr["negotiated"], gr
    bird.stop(signal.SIGKILL)
    L.wait_until(lambda: not routes(me) and not routes(me, v6=True), 5, "routes gone at once")
    assert peer_gr(petrel, "bird")["restarts"] == 0
    L.wait_until(lambda: import_stats(watcher)["withdraws"] == len(announce), 10, "watcher told")


def test_new_connection_while_established_is_a_restart(lab):
    """RFC 4724 section 4.2: a peer that restarted and connects again before
    Petrel saw its old connection fail. The old session (graceful restart
    negotiated) ends as if its connection had failed: no NOTIFICATION, its
    routes stay, stale; the new session replaces them at its End-of-RIB."""
    import speaker as S
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me, node = lab.node("petrel"), lab.node("peer")
    v4 = ("ipv4-unicast",)
    prefixes = [f"10.71.{i}.0/24" for i in range(4)]

    def gr_speaker(restarted: bool):
        # Restart time 60 s, IPv4 unicast with forwarding kept; R bit after a restart.
        cap = S.capability(64, struct.pack("!H", (0x8000 if restarted else 0) | 60) + struct.pack("!HBB", 1, 1, 0x80))
        sp = L.speaker(node, 65002, families=v4, extra_caps=cap)
        sp.connect(me.v4, local=node.v4, netns=node.ns, timeout=15, attempts=30)
        sp.start()
        sp.wait_established(10)
        return sp

    petrel = L.Petrel(me, [L.PetrelPeer("sp", node.v4, 65002, me.v4, passive=True, families=v4)], 65001)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    first = gr_speaker(False)
    first.send_update(prefixes, node.v4)
    first.send(S.end_of_rib("ipv4-unicast"))
    L.wait_until(lambda: petrel.api_peer("sp")["update_prefixes"]["ipv4-unicast"]["received"] == 4, 10,
                 "Petrel holds the four routes")
    assert peer_gr(petrel, "sp")["negotiated"] is True

    second = gr_speaker(True)   # the old connection is still open
    first.wait_closed(10)
    assert first.notification is None, first.notification
    assert petrel.events("peer-restarted", peer="sp")
    gr = peer_gr(petrel, "sp")
    assert gr["stale_routes_total"] == 4 and gr["restarts"] == 1, gr
    assert petrel.api_peer("sp")["update_prefixes"]["ipv4-unicast"]["received"] == 4
    second.send_update(prefixes[:2], node.v4)
    second.send(S.end_of_rib("ipv4-unicast"))
    L.wait_until(lambda: petrel.api_peer("sp")["update_prefixes"]["ipv4-unicast"]["received"] == 2, 10,
                 "the routes not announced again went at the End-of-RIB")
    assert peer_gr(petrel, "sp")["stale_routes_total"] == 0
    assert petrel.api_peer("sp")["state"] == "established"
