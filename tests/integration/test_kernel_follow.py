"""The kernel syncer follows the table while it installs (docs/kernel.md).

A scripted speaker sends Petrel a table of many prefixes and, at once and
while Petrel's syncer is still putting the first ones into the kernel,
changes it: withdraws a third, moves another third to a second gateway,
announces more, and withdraws and announces again some prefixes it had
withdrawn. The syncer reads the table's journals between its rounds of
requests (everything they hold for it each time); when it is done, the
kernel's table must hold exactly the speaker's final routes: nothing
lost (a change read late or never) and nothing stale (a withdrawn or
moved route left behind). Both modes: nexthop objects and gateway routes.

SKIPs while the petrel binary is missing (set PETREL, or build it).
"""

from __future__ import annotations

import json
import os
import signal

import pytest

import lab as L
import speaker as S

TABLE = 100
METRIC = 32
PETREL_ASN, SPEAKER_ASN = 65001, 65002
N = 60_000          # prefixes of the first table
MORE = 6_000        # announced afterwards
PER_UPDATE = 800    # /24s per UPDATE (about 3.2 kB)
SECOND_GATEWAY = "198.18.0.200"  # on the lab's network, directly reachable


class KernelPetrel(L.Petrel):
    nexthop_objects = True

    def config(self) -> str:
        return (super().config() + f"\n[kernel]\nenabled = true\ntable = {TABLE}\nmetric = {METRIC}\n"
                + ("" if self.nexthop_objects else "nexthop_objects = false\n"))


def prefix(i: int) -> str:
    return f"{20 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}.0/24"


def kernel_routes(node: L.Node) -> dict[str, str]:
    """Our routes in table TABLE: prefix -> gateway."""
    out = node.run(["ip", "-j", "route", "show", "table", str(TABLE), "proto", "bgp"],
                   timeout=120).stdout
    res = {}
    for r in json.loads(out or "[]"):
        assert r.get("metric") == METRIC, r
        res[r["dst"]] = r.get("gateway", "?")
    return res


def updates(prefixes: list[str], gateway: str) -> bytes:
    return b"".join(S.announce(prefixes[i:i + PER_UPDATE], gateway, SPEAKER_ASN)
                    for i in range(0, len(prefixes), PER_UPDATE))


def withdrawals(prefixes: list[str]) -> bytes:
    return b"".join(S.withdraw(prefixes[i:i + PER_UPDATE]) for i in range(0, len(prefixes), PER_UPDATE))


@pytest.mark.parametrize("mode", ["objects", "gateways"])
def test_syncer_follows_changes_made_while_it_installs(lab, mode):
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me, spk = lab.node("petrel"), lab.node("speaker")
    petrel = KernelPetrel(me, [L.PetrelPeer("speaker", spk.v4, SPEAKER_ASN, me.v4, passive=True,
                                            families=("ipv4-unicast",))], PETREL_ASN)
    petrel.nexthop_objects = mode == "objects"
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    sp = L.speaker(spk, SPEAKER_ASN)
    sp.connect(me.v4, local=spk.v4, netns=spk.ns, timeout=15, attempts=30)
    sp.start()
    sp.wait_established(10)

    first = [prefix(i) for i in range(N)]
    gone = first[0::3]
    moved = first[1::3]
    more = [prefix(i) for i in range(N, N + MORE)]
    back = gone[: len(gone) // 10]  # withdrawn, then announced again
    # All in one stream: the later messages reach the table while the
    # syncer is still installing the first ones.
    sp.send(updates(first, spk.v4) + withdrawals(gone) + updates(moved, SECOND_GATEWAY)
            + updates(more, spk.v4) + updates(back, SECOND_GATEWAY))

    want = {p: spk.v4 for p in first}
    for p in gone:
        del want[p]
    want.update({p: SECOND_GATEWAY for p in moved})
    want.update({p: spk.v4 for p in more})
    want.update({p: SECOND_GATEWAY for p in back})

    samples = []  # (pending, queued) of every poll: the list's wishes count as pending

    def synced():
        st = petrel.api("/api/kernel") or {}
        r = st.get("routes", {})
        if "queued" in st:
            samples.append((r.get("pending"), st["queued"]))
        c = (petrel.petrel_received_counts() or {}).get("speaker", {}).get("ipv4-unicast")
        return st if c == len(want) and r.get("installed") == len(want) and r.get("pending") == 0 else None
    try:
        st = L.wait_until(synced, 180, f"{len(want)} routes in Petrel's table and installed, none pending")
    except TimeoutError:
        st = None  # the kernel's table below says what is wrong
    got = kernel_routes(me)
    lost = sorted(p for p in want if p not in got)
    stale = sorted(p for p in got if p not in want)
    wrong = sorted(p for p in want if p in got and got[p] != want[p])
    assert not lost and not stale and not wrong, \
        f"lost {len(lost)} {lost[:5]}, stale {len(stale)} {stale[:5]}, wrong gateway {len(wrong)} {wrong[:5]}"
    assert st is not None, petrel.api("/api/kernel")
    assert st["routes"]["refused"] == 0 and st["routes"]["unresolved"] == 0, st
    assert st["nexthop_objects"] == (mode == "objects"), st
    assert st["queued"] == 0 and samples, st
    assert all(p >= q for p, q in samples), [x for x in samples if x[0] < x[1]][:5]
    assert set(st["time_s"]) == {"journal", "plan", "encode", "sendmsg", "answers", "waiting"}, st
    assert st["time_s"]["sendmsg"] > 0, st
    petrel.stop(signal.SIGINT, timeout=120)  # a plain stop: our routes go
    assert kernel_routes(me) == {}
