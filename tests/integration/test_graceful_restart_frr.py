"""Graceful restart with Petrel as the helper (docs/graceful-restart.md),
against FRR's bgpd (Debian's frr 8.4) with `bgp graceful-restart`.

FRR ("frr", bgpd alone) announces routes; Petrel installs them in its
namespace's kernel (table TABLE). bgpd is killed with SIGKILL:
 - it is started again (`preserve-fw-state`: the Forwarding State bit of
   each family set; bgpd 8.4 has no -K option) announcing a changed set:
   the routes stay in Petrel's table and kernel meanwhile (a watcher polls
   the kernel every 100 ms and sees none missing), unchanged routes are
   not touched in the kernel (`ip monitor route`), and after FRR's
   End-of-RIB exactly FRR's new set remains;
 - it does not come back within its restart time: the routes go then.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

import lab as L
from conftest import require
from test_graceful_restart import KernelWatcher, peer_gr
from test_kernel import KernelPetrel, routes


class GrFrr(L.Frr):
    """bgpd with `bgp graceful-restart`; started with -K after a crash."""
    restart_time = 120
    recovery = False

    def config(self) -> str:
        text = super().config()
        return text.replace(f" bgp router-id {self.node.v4}\n",
                            f" bgp router-id {self.node.v4}\n bgp graceful-restart\n"
                            f" bgp graceful-restart restart-time {self.restart_time}\n"
                            " bgp graceful-restart preserve-fw-state\n", 1)

    def start(self) -> "GrFrr":
        conf = self.node.path("frr.conf")
        with open(conf, "w") as f:
            f.write(self.config())
        sock = os.path.join(self.vty_dir, "bgpd.vty")
        if os.path.exists(sock):
            os.unlink(sock)
        self.proc = self.node.popen(
            ["/usr/lib/frr/bgpd", "-f", conf, "-i", self.node.path("bgpd.pid"),
             "-z", self.node.path("zserv.api"), "--vty_socket", self.vty_dir,
             "-P", "0", "-S", "-Z"], self.log)
        L.wait_until(lambda: os.path.exists(sock) or self._check_alive(), 10, "bgpd vty socket")
        return self


def kernel(me: L.Node) -> set[str]:
    return set(routes(me)) | set(routes(me, v6=True))


def start_lab(lab, restart_time: int = 120):
    require("frr")
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me, fn = lab.node("petrel"), lab.node("frr")
    announce = L.sample_prefixes(fn.index, v4=4, v6=2)
    frr = GrFrr(fn, L.Session(65002, 65001, me.v4, fn.v4, passive=True, announce=announce))
    frr.restart_time = restart_time
    frr.start()
    petrel = KernelPetrel(me, [L.PetrelPeer("frr", fn.v4, 65002, me.v4)], 65001)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    frr.wait_established(30)
    L.wait_until(lambda: kernel(me) == set(announce), 20, f"FRR's routes in Petrel's kernel: {announce}")
    gr = peer_gr(petrel, "frr")
    assert gr["enabled"] and gr["negotiated"] and gr["peer_restart_time"] == restart_time, gr
    assert "ipv4-unicast" in gr["peer_families"] and "ipv6-unicast" in gr["peer_families"], gr
    return me, frr, petrel, announce


def test_helper_keeps_routes_while_frr_restarts(lab):
    me, frr, petrel, announce = start_lab(lab)
    kept = [p for i, p in enumerate(announce) if i not in (1, 4)]   # one v4, one v6 dropped
    added = "198.19.77.0/28"
    monitor = me.popen(["timeout", "120", "ip", "-o", "monitor", "route"], me.path("monitor.log"))
    kw = KernelWatcher(me, set(kept), limit=120)
    try:
        time.sleep(0.5)   # the monitor listens
        frr.stop(signal.SIGKILL)
        st = L.wait_until(lambda: (lambda g: g if g["state"] == "restarting" else None)(peer_gr(petrel, "frr")),
                          10, "Petrel keeps FRR's routes (state restarting)")
        assert st["stale_routes_total"] == len(announce), st
        time.sleep(1.5)
        assert kernel(me) == set(announce)

        frr.session.announce = (*kept, added)
        frr.recovery = True
        frr.start()
        frr.wait_established(30)
        L.wait_until(lambda: kernel(me) == set(kept) | {added}, 30,
                     f"Petrel's kernel after FRR's End-of-RIB: {set(kept) | {added}}")
        gr = L.wait_until(lambda: (lambda g: g if g["state"] == "none" else None)(peer_gr(petrel, "frr")),
                          10, "graceful restart over")
        assert gr["stale_routes_total"] == 0 and gr["restarts"] == 1 and gr["expired"] == 0, gr
        assert petrel.wait_events("graceful-restart-end-of-rib", 2), petrel.log_text()[-3000:]
        time.sleep(1)   # anything late would show in the monitor
    finally:
        kw.stop()
        L.Lab.stop_process(monitor)
    assert kw.polls > 10 and not kw.missing, (kw.polls, kw.missing)
    with open(me.path("monitor.log")) as f:
        churn = [line for line in f if any(p.split("/")[0] + "/" in line for p in kept)]
    assert churn == [], churn
    assert kernel(me) == set(kept) | {added}
    # FRR came back with the Forwarding State bit of both families (without
    # it Petrel would have dropped the stale routes at once, RFC 4724 4.2)
    assert all(f["forwarding_preserved"] for f in gr["peer_families"].values()), gr
    back = petrel.events("graceful-restart-back", peer="frr")
    assert back and back[0]["waiting_for_end_of_rib"] == "ipv4-unicast,ipv6-unicast", back
    eor = petrel.events("graceful-restart-end-of-rib", peer="frr")
    assert sorted(e["stale_routes_withdrawn"] for e in eor) == ["1", "1"], eor


def test_helper_removes_routes_when_frr_does_not_return(lab):
    me, frr, petrel, announce = start_lab(lab, restart_time=3)
    t0 = time.monotonic()
    frr.stop(signal.SIGKILL)
    L.wait_until(lambda: peer_gr(petrel, "frr")["state"] == "restarting", 10, "routes kept")
    assert kernel(me) == set(announce)
    L.wait_until(lambda: not kernel(me), 15, "routes gone after the restart time")
    assert time.monotonic() - t0 >= 2.5
    gr = peer_gr(petrel, "frr")
    assert gr["state"] == "none" and gr["expired"] == 1 and gr["stale_routes_total"] == 0, gr
    assert petrel.events("graceful-restart-expired"), petrel.log_text()[-2000:]
