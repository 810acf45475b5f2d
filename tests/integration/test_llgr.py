"""Long-lived graceful restart (RFC 9494) with Petrel as the helper
(docs/graceful-restart.md, "Long-lived graceful restart"), against real
BIRD 2s.

BIRD ("bird", `graceful restart on`, restart time 3 s, `long lived graceful
restart on`, long-lived stale time 60 s) announces routes, one of them
with NO_LLGR. Petrel (`long_lived_stale_time = 8`) installs them in its
kernel and passes them to two more BIRDs: "llgrw" negotiates LLGR, "plain"
does not. BIRD is killed with SIGKILL and not started again:
 - for the restart time the routes are kept stale (as with graceful
   restart alone);
 - then they are long-lived stale: still in Petrel's table and kernel
   (the NO_LLGR one gone), sent to "llgrw" with LLGR_STALE (65535:6),
   withdrawn from "plain";
 - after Petrel's long-lived stale time (8 s, shorter than BIRD's 60) they
   are gone everywhere.
"""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

import lab as L
from conftest import require
from test_graceful_restart import GrBird, peer_gr
from test_kernel import KernelPetrel, routes

LLST = 8           # Petrel's long_lived_stale_time
RESTART_TIME = 3   # BIRD's graceful restart time


class LlgrBird(GrBird):
    """GrBird with `long lived graceful restart on` and, for one prefix,
    the NO_LLGR community on its route."""
    no_llgr: str = ""

    def config(self) -> str:
        text = super().config()
        text = text.replace("  passive ", "  long lived graceful restart on;\n  long lived stale time 60;\n"
                                          "  passive ", 1)
        if self.no_llgr:
            text = text.replace(f"route {self.no_llgr} blackhole;",
                                f"route {self.no_llgr} blackhole {{ bgp_community.add((65535,7)); }};")
        return text


class Watcher(L.Bird):
    """A BIRD that only receives: with `llgr` it negotiates LLGR (and
    graceful restart, which LLGR needs), without it neither."""
    llgr = False

    def config(self) -> str:
        mode = "aware" if self.llgr else "off"
        return super().config().replace(
            "  passive ", f"  graceful restart {mode};\n  long lived graceful restart {mode};\n  passive ", 1)

    def communities(self, prefix: str) -> str:
        return self.birdc("show", "route", prefix, "all")


def all_routes(node: L.Node) -> set[str]:
    return set(routes(node)) | set(routes(node, v6=True))


def received(b: L.Bird) -> set[str]:
    return b.received_prefixes("ipv4-unicast") | b.received_prefixes("ipv6-unicast")


def start_lab(lab):
    """BIRD, the two watchers and Petrel, with BIRD's routes everywhere."""
    require("bird")
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me, bn, ln, pn = lab.node("petrel"), lab.node("bird"), lab.node("llgrw"), lab.node("plain")
    announce = L.sample_prefixes(bn.index, v4=3, v6=2)
    bird = LlgrBird(bn, L.Session(65002, 65001, me.v4, bn.v4, passive=True, announce=announce))
    bird.restart_time = RESTART_TIME
    bird.no_llgr = announce[0]
    bird.start()
    llgrw = Watcher(ln, L.Session(65003, 65001, me.v4, ln.v4, passive=True))
    llgrw.llgr = True
    llgrw.start()
    plain = Watcher(pn, L.Session(65004, 65001, me.v4, pn.v4, passive=True)).start()
    watchers = [L.PetrelPeer(name, n.v4, asn, me.v4, import_policy="none", export_policy="all")
                for name, n, asn in (("llgrw", ln, 65003), ("plain", pn, 65004))]
    petrel = KernelPetrel(me, [L.PetrelPeer("bird", bn.v4, 65002, me.v4), *watchers], 65001,
                          router_toml=f"long_lived_stale_time = {LLST}\n")
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    L.wait_until(lambda: all_routes(me) == set(announce), 30, f"BIRD's routes in Petrel's kernel: {announce}")
    for w in (llgrw, plain):
        w.wait_established(30)
        L.wait_until(lambda w=w: received(w) == set(announce), 20, f"{w.node.name} has BIRD's routes")

    gr = peer_gr(petrel, "bird")
    assert gr["negotiated"] and gr["long_lived_negotiated"], gr
    assert gr["long_lived_stale_time"] == LLST, gr
    assert gr["peer_long_lived_families"]["ipv4-unicast"]["stale_time"] == 60, gr
    assert peer_gr(petrel, "llgrw")["long_lived_negotiated"], peer_gr(petrel, "llgrw")
    assert not peer_gr(petrel, "plain")["long_lived_negotiated"], peer_gr(petrel, "plain")

    return me, bird, llgrw, plain, petrel, announce


def until_long_lived(petrel: L.Petrel, bird: L.Bird) -> dict:
    """Kills BIRD; returns the helper's status once its routes are long-lived stale."""
    bird.stop(signal.SIGKILL)
    L.wait_until(lambda: peer_gr(petrel, "bird")["state"] == "restarting", 10, "routes kept (restarting)")
    return L.wait_until(lambda: (lambda g: g if g["state"] == "long-lived" else None)(peer_gr(petrel, "bird")),
                        RESTART_TIME + 10, "routes long-lived stale after the restart time")


def test_long_lived_stale_routes_kept_least_preferred_and_only_for_llgr_peers(lab):
    me, bird, llgrw, plain, petrel, announce = start_lab(lab)
    no_llgr = announce[0]
    kept = set(announce) - {no_llgr}
    t0 = time.monotonic()
    st = until_long_lived(petrel, bird)
    assert time.monotonic() - t0 >= RESTART_TIME - 0.5
    assert st["stale_routes_total"] == len(kept) and st["long_lived"] == 1 and st["stale_until"], st
    assert petrel.wait_events("graceful-restart-long-lived", 1), petrel.log_text()[-2000:]

    # in Petrel's table (LLGR_STALE added, still stale) and kernel; NO_LLGR gone
    L.wait_until(lambda: all_routes(me) == kept, 5, f"Petrel's kernel without the NO_LLGR route: {kept}")
    got = petrel.api("/api/routes/" + sorted(kept)[0].replace("/", "%2F"))
    assert got and got["routes"] and got["routes"][0]["stale"], got
    assert "65535:6" in got["routes"][0]["attributes"].get("communities", []), got

    # to the LLGR peer with LLGR_STALE; withdrawn from the other
    L.wait_until(lambda: received(plain) == set(), 10, "the non-LLGR peer's routes withdrawn")
    L.wait_until(lambda: received(llgrw) == kept, 10, f"the LLGR peer keeps {kept}")
    for p in kept:
        out = llgrw.communities(p)
        assert re.search(r"\(65535,\s*6\)|llgr_stale", out, re.I), out
    assert all_routes(me) == kept

    # the long-lived stale time runs out: gone everywhere
    L.wait_until(lambda: not all_routes(me), LLST + 10, "routes gone after the long-lived stale time")
    assert time.monotonic() - t0 >= RESTART_TIME + LLST - 1
    L.wait_until(lambda: received(llgrw) == set(), 10, "the LLGR peer told")
    gr = L.wait_until(lambda: (lambda g: g if g["state"] == "none" else None)(peer_gr(petrel, "bird")), 5,
                      "LLGR over")
    assert gr["stale_routes_total"] == 0, gr
    assert petrel.events("graceful-restart-long-lived-expired"), petrel.log_text()[-2000:]


def test_peer_back_during_long_lived_stale_time(lab):
    """BIRD comes back while its routes are long-lived stale, with one route
    fewer: what it announces again replaces them (without LLGR_STALE, so the
    non-LLGR peer gets them again), the rest go at its End-of-RIB."""
    me, bird, llgrw, plain, petrel, announce = start_lab(lab)
    until_long_lived(petrel, bird)
    L.wait_until(lambda: received(plain) == set(), 10, "the non-LLGR peer's routes withdrawn")
    back = set(announce[:-1])   # the NO_LLGR route again, the last IPv6 one not
    bird.session.announce = tuple(sorted(back))
    bird.recovery = True
    bird.start()
    bird.wait_established(30)
    L.wait_until(lambda: all_routes(me) == back, 20, f"Petrel's kernel after BIRD's return: {back}")
    L.wait_until(lambda: received(plain) == back, 10, f"the non-LLGR peer has {back} again")
    L.wait_until(lambda: received(llgrw) == back, 10, f"the LLGR peer has {back}")
    for p in back:
        out = llgrw.communities(p)
        assert not re.search(r"\(65535,\s*6\)", out), out
    gr = L.wait_until(lambda: (lambda g: g if g["state"] == "none" else None)(peer_gr(petrel, "bird")), 10,
                      "graceful restart over")
    assert gr["stale_routes_total"] == 0 and gr["long_lived"] == 1, gr
