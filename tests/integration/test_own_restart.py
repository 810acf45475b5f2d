"""Petrel restarting with its forwarding kept (docs/graceful-restart.md,
"Petrel restarting"), against a real BIRD 2 with `graceful restart on`.

BIRD ("bird") announces routes; Petrel installs them in its namespace's
kernel (table TABLE) and announces a route of its own ([[originate]]) to
BIRD. Petrel is stopped, once with SIGTERM (a planned restart: graceful
restart is on) and once with SIGKILL (a crash), its routes referring to
nexthop objects or carrying their gateways, and started again while
BIRD announces a changed set (one route dropped):
 - Petrel's kernel routes stay while it is away and across its start (a
   watcher polls every 100 ms and sees none missing); `ip monitor route`
   sees no change of an unchanged prefix at all (no removal, no re-add);
 - BIRD, as the helper, keeps Petrel's route while Petrel is away and
   after (a watcher polls BIRD every 100 ms and never sees it missing);
 - the new Petrel finds its routes, defers its kernel changes (log
   `graceful-restart-deferral`), and at BIRD's End-of-RIB removes the
   route BIRD no longer sends (log `graceful-restart-selection`, reason
   end-of-rib), having advertised the Restart State bit and the
   Forwarding State bits (BIRD shows them), and sends its UPDATEs once
   the selection is done.
A stop with SIGINT then withdraws everything: the kernel routes go.
A graceful restart peer that never comes up holds the kernel changes
until `selection_deferral_time` runs out.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

import lab as L
from conftest import require
from test_graceful_restart import GrBird, KernelWatcher
from test_http import http_get
from test_kernel import KernelPetrel, routes

OWN = "198.19.200.0/24"   # Petrel's own route, kept by BIRD while Petrel is away


def kernel(me: L.Node) -> set[str]:
    return set(routes(me)) | set(routes(me, v6=True))


def bird_has_own(bird: L.Bird) -> bool:
    return OWN in bird.received_prefixes("ipv4-unicast")


class BirdWatcher(KernelWatcher):
    """Polls BIRD's routes from Petrel every 100 ms (bounded by `limit`
    seconds) and remembers Petrel's route if it is ever missing."""

    def __init__(self, bird: L.Bird, limit: float = 120):
        self.bird = bird
        super().__init__(bird.node, {OWN}, limit)

    def have(self) -> set[str]:
        return self.bird.received_prefixes("ipv4-unicast")


def start_lab(lab, absent: bool = False, deferral: int = 60, objects: bool = True):
    """BIRD announcing 4 IPv4 and 2 IPv6 routes into Petrel's kernel, and
    Petrel's own route at BIRD. absent: Petrel also has a graceful restart
    peer that never comes up (a lab node with no BGP daemon)."""
    me, bn = lab.node("petrel"), lab.node("bird")
    require("bird")
    announce = L.sample_prefixes(bn.index, v4=4, v6=2)
    bird = GrBird(bn, L.Session(65002, 65001, me.v4, bn.v4, passive=True, announce=announce))
    bird.start()
    peers = [L.PetrelPeer("bird", bn.v4, 65002, me.v4, export_policy="all")]
    if absent:
        peers.append(L.PetrelPeer("absent", lab.node("absent").v4, 65003, me.v4))
    petrel = KernelPetrel(me, peers, 65001, router_toml=f"selection_deferral_time = {deferral}",
                          extra_toml=f'[[originate]]\nprefix = "{OWN}"\n')
    petrel.nexthop_objects = objects
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    bird.wait_established(30)
    L.wait_until(lambda: kernel(me) == set(announce), 20, f"BIRD's routes in Petrel's kernel: {announce}")
    L.wait_until(lambda: bird_has_own(bird), 20, "BIRD has Petrel's route")
    return me, bn, bird, petrel, announce


def announce_fewer(bn: L.Node, bird: L.Bird, kept: list[str]) -> None:
    """BIRD's set changes while Petrel is away (no session: nothing sent)."""
    bird.session.announce = tuple(kept)
    with open(bn.path("bird.conf"), "w") as f:
        f.write(bird.config())
    bird.birdc("configure")


@pytest.mark.parametrize("mode", ["objects", "gateways"])
@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_petrel_restarts_with_its_kernel_routes_kept(lab, how, mode):
    me, bn, bird, petrel, announce = start_lab(lab, objects=mode == "objects")
    dropped = announce[1]
    kept = [p for p in announce if p != dropped]
    monitor = me.popen(["timeout", "120", "ip", "-o", "monitor", "route"], me.path(f"monitor-{how}.log"))
    kw = KernelWatcher(me, set(kept), limit=120)
    bw = BirdWatcher(bird)
    try:
        time.sleep(0.5)   # the monitor is listening
        if how == "sigterm":
            assert petrel.stop(signal.SIGTERM) == 0, petrel.log_text()[-2000:]
            assert petrel.events("graceful-restart-stop", peer="bird"), petrel.log_text()[-2000:]
            stopped = petrel.events("kernel-stopped")
            assert stopped and stopped[-1]["routes_removed"] == "0", stopped
        else:
            petrel.stop(signal.SIGKILL)
        # away: the kernel keeps every route, BIRD keeps Petrel's
        assert kernel(me) == set(announce)
        time.sleep(1.5)
        assert kernel(me) == set(announce)
        assert bird_has_own(bird), "BIRD dropped Petrel's route while Petrel was away"

        announce_fewer(bn, bird, kept)   # meanwhile: one route fewer

        os.replace(petrel.log, petrel.log + ".1")   # events() reads the new process's lines only
        petrel.start()
        bird.wait_established(30)
        # BIRD saw the Restart State bit and the Forwarding State bits
        caps = bird.birdc("show", "protocols", "all", bird.proto)
        theirs = caps[caps.index("Neighbor capabilities"):]
        assert "Restart recovery" in theirs and "AF preserved: ipv4 ipv6" in theirs, theirs
        deferral = petrel.wait_events("graceful-restart-deferral", 1, 10)
        assert deferral[0]["ipv4_routes_found"] == "4" and deferral[0]["ipv6_routes_found"] == "2", deferral
        L.wait_until(lambda: kernel(me) == set(kept), 30, f"the kernel after BIRD's End-of-RIB: {kept}")
        sel = petrel.wait_events("graceful-restart-selection", 2, 10)
        assert {e["reason"] for e in sel} == {"end-of-rib"}, sel
        # Petrel's UPDATEs waited for the selection (RFC 4724 section 4.1)
        assert petrel.events("graceful-restart-export-deferred", peer="bird"), petrel.log_text()[-2000:]
        export = petrel.wait_events("graceful-restart-export", 1, 5, peer="bird")
        # ... and the kernel's update: forwarding first (section 4.1)
        updated = petrel.wait_events("graceful-restart-forwarding-updated", 2, 5)
        assert max(e["ts"] for e in updated) <= export[0]["ts"], (updated, export)
        L.wait_until(lambda: bird_has_own(bird), 10, "BIRD has Petrel's route after the restart")
        time.sleep(1)   # anything late would show in the monitor
    finally:
        kw.stop()
        bw.stop()
        L.Lab.stop_process(monitor)
    assert kw.polls > 10 and not kw.missing, (kw.polls, kw.missing)
    assert bw.polls > 10 and not bw.missing, "BIRD dropped Petrel's route at some moment"
    with open(me.path(f"monitor-{how}.log")) as f:
        lines = f.read().splitlines()
    churn = [line for line in lines if any(p.split("/")[0] + "/" in line for p in kept)]
    assert churn == [], churn
    assert any(dropped.split("/")[0] + "/" in line and line.startswith("Deleted") for line in lines), lines
    st = L.wait_until(lambda: (lambda k: k if k and k["routes"]["stale"] == 0 else None)(petrel.api("/api/kernel")),
                      5, "/api/kernel: no stale route")
    assert st["routes"]["installed"] == len(kept) and st["deferred"] == [] and st["stale_removal"], st

    # a plain stop withdraws everything
    assert petrel.stop(signal.SIGINT) == 0, petrel.log_text()[-2000:]
    assert kernel(me) == set()
    L.wait_until(lambda: not bird_has_own(bird), 10, "BIRD drops Petrel's route after a plain stop")


def test_selection_deferral_timer_ends_the_wait_for_a_peer_that_never_comes(lab):
    """A graceful restart peer that never comes up holds the kernel changes
    until selection_deferral_time: the route BIRD no longer sends stays
    until then (with BIRD's End-of-RIB long arrived), and goes after."""
    me, bn, bird, petrel, announce = start_lab(lab, absent=True, deferral=6)
    dropped = announce[0]
    kept = [p for p in announce if p != dropped]
    assert petrel.stop(signal.SIGTERM) == 0, petrel.log_text()[-2000:]
    announce_fewer(bn, bird, kept)
    os.replace(petrel.log, petrel.log + ".1")
    t0 = time.monotonic()
    petrel.start()
    bird.wait_established(30)
    petrel.wait_events("end-of-rib", 2, 10, peer="bird")
    # BIRD's routes are in the plan (published within 250 ms): one stale
    st = L.wait_until(lambda: (lambda k: k if k and k["routes"]["stale"] == 1 else None)(petrel.api("/api/kernel")),
                      3, "/api/kernel: BIRD's routes wanted again, one stale")
    assert sorted(st["deferred"]) == ["ipv4-unicast", "ipv6-unicast"], st
    _, _, body = http_get(me, "/metrics")
    assert 'petrel_kernel_deferred{family="ipv4-unicast"} 1' in body.decode(), body.decode()
    assert kernel(me) == set(announce), "a change before the deferral ended"
    L.wait_until(lambda: kernel(me) == set(kept), 15, f"the kernel after the deferral timer: {kept}")
    assert time.monotonic() - t0 >= 5
    sel = petrel.events("graceful-restart-selection")
    assert len(sel) == 2 and {e["reason"] for e in sel} == {"selection-deferral-timer"}, sel
    assert all(e["still_waiting_for"] == "absent" for e in sel), sel
    st = L.wait_until(lambda: (lambda k: k if k and k["deferred"] == [] else None)(petrel.api("/api/kernel")),
                      5, "/api/kernel: nothing deferred")
    assert st["routes"]["stale"] == 0 and st["routes"]["installed"] == len(kept), st
    _, _, body = http_get(me, "/metrics")
    assert 'petrel_kernel_deferred{family="ipv6-unicast"} 0' in body.decode(), body.decode()
