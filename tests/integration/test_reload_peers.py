"""Peers added, changed and removed by a reload (SIGHUP), with real peers
(docs/operations.md, "Reload").

BIRD "one" announces 64 prefixes to Petrel, which passes them on to GoBGP.
Each step changes the configuration and sends SIGHUP; the sessions the
step does not concern must not be reset: their `established_total` in
Petrel's API stays 1, and BIRD's and GoBGP's own views of their sessions
show the same start time as before.

- A peer added (BIRD "two", 32 more prefixes): it comes up, and GoBGP
  receives its prefixes.
- A timer changed on "two" (hold_time 9 -> 12): only "two" gets a new
  session, closed first with Cease / Other Configuration Change; the API
  shows the new hold time.
- A description and max_prefixes changed on "one": no new session; the
  API shows both.
- "two" removed: it receives Cease / Peer De-configured, its prefixes
  leave GoBGP, and the API no longer lists it.
- The same address added back under another name, passive: it comes up
  again when BIRD dials.
"""

from __future__ import annotations

import json

import lab as L
from test_export import gobgp_routes
from test_reload import reload

PETREL_ASN = 65001
ONE_ASN, TWO_ASN, GOBGP_ASN = 65002, 65003, 65004
HOLD = 9
V4 = ("ipv4-unicast",)
ONE = tuple(f"10.61.{i}.0/24" for i in range(64))
TWO = tuple(f"10.62.{i}.0/24" for i in range(32))


def gobgp_uptime(g: L.GoBgp) -> object:
    data = json.loads(g.gobgp("neighbor", g._nbr(), "-j"))
    return data["timers"]["state"].get("uptime")


def bird_log(b: L.Bird) -> str:
    """BIRD's own log (it says what each NOTIFICATION received was)."""
    with open(b.node.path("bird-daemon.log")) as f:
        return f.read()


def established_total(petrel: L.Petrel, name: str) -> int:
    p = petrel.api_peer(name)
    assert p is not None, name
    return int(p["established_total"])


def wait_gobgp(g: L.GoBgp, want: set[str], timeout: float = 20) -> None:
    L.wait_until(lambda: set(gobgp_routes(g, "ipv4-unicast")) == want, timeout, f"GoBGP holds {len(want)} prefixes")


def test_peers_added_changed_and_removed_live(lab):
    me, n1, n2, gn = lab.node("petrel"), lab.node("one"), lab.node("two"), lab.node("gobgp")
    one = L.Bird(n1, L.Session(ONE_ASN, PETREL_ASN, me.v4, n1.v4, hold_time=HOLD, families=V4, announce=ONE)).start()
    gobgp = L.GoBgp(gn, L.Session(GOBGP_ASN, PETREL_ASN, me.v4, gn.v4, hold_time=HOLD, families=V4)).start()
    two = L.Bird(n2, L.Session(TWO_ASN, PETREL_ASN, me.v4, n2.v4, hold_time=HOLD, families=V4, announce=TWO)).start()
    p_one = L.PetrelPeer("one", n1.v4, ONE_ASN, me.v4, hold_time=HOLD, families=V4)
    p_gobgp = L.PetrelPeer("gobgp", gn.v4, GOBGP_ASN, me.v4, hold_time=HOLD, families=V4, export_policy="all")
    petrel = L.Petrel(me, [p_one, p_gobgp], PETREL_ASN).start()
    one.wait_established(30)
    gobgp.wait_established(30)
    wait_gobgp(gobgp, set(ONE), 30)
    assert not two.state().established
    since_one, up_gobgp = one.since(), gobgp_uptime(gobgp)

    def others_untouched() -> None:
        assert established_total(petrel, "one") == 1
        assert established_total(petrel, "gobgp") == 1
        assert L.same_moment(one.since(), since_one), one.birdc("show", "protocols", one.proto)
        assert gobgp_uptime(gobgp) == up_gobgp

    # A peer added.
    p_two = L.PetrelPeer("two", n2.v4, TWO_ASN, me.v4, hold_time=HOLD, families=V4)
    petrel.peers = [p_one, p_gobgp, p_two]
    reload(petrel, petrel.config())
    ev = petrel.events("reloaded")[-1]
    assert ev["peers_added"] == "1" and ev["peers_removed"] == "0", ev
    two.wait_established(30)
    wait_gobgp(gobgp, set(ONE) | set(TWO))
    assert petrel.api_peer("two")["state"] == "established"
    others_untouched()

    # A timer changed: that session only starts again.
    since_two = two.since()
    p_two.hold_time = 12
    reload(petrel, petrel.config())
    assert petrel.events("reloaded")[-1]["peers_reset"] == "1"
    L.wait_until(lambda: "Received: Other configuration change" in bird_log(two), 15,
                 "BIRD two received Cease / Other Configuration Change")
    L.wait_until(lambda: established_total(petrel, "two") == 1 and not L.same_moment(two.since(), since_two)
                 and two.state().established, 30, "two established again")
    assert petrel.api_peer("two")["hold_time"] == 12
    wait_gobgp(gobgp, set(ONE) | set(TWO))
    others_untouched()

    # Keys that need no new session.
    p_one.extra = ('description = "transit A"', "max_prefixes = { ipv4-unicast = 1000 }")
    reload(petrel, petrel.config())
    ev = petrel.events("reloaded")[-1]
    assert ev["peers_updated"] == "1" and ev["peers_reset"] == "0", ev
    L.wait_until(lambda: petrel.api_peer("one")["description"] == "transit A", 5, "the new description")
    assert petrel.api_peer("one")["max_prefixes"]["limits"] == {"ipv4-unicast": 1000}
    others_untouched()

    # A peer removed.
    petrel.peers = [p_one, p_gobgp]
    reload(petrel, petrel.config())
    assert petrel.events("reloaded")[-1]["peers_removed"] == "1"
    L.wait_until(lambda: "Received: Peer de-configured" in bird_log(two), 15,
                 "BIRD two received Cease / Peer De-configured")
    wait_gobgp(gobgp, set(ONE))
    assert petrel.api_peer("two") is None
    assert [p["name"] for p in petrel.api("/api/peers")["peers"]] == ["one", "gobgp"]
    others_untouched()

    # The address back under another name, passive: BIRD dials it.
    petrel.peers = [p_one, p_gobgp, L.PetrelPeer("two-again", n2.v4, TWO_ASN, me.v4, passive=True, hold_time=HOLD,
                                                 families=V4)]
    reload(petrel, petrel.config())
    L.wait_until(lambda: (petrel.api_peer("two-again") or {}).get("state") == "established", 30,
                 "two-again established")
    wait_gobgp(gobgp, set(ONE) | set(TWO))
    others_untouched()
    # Nothing of the removed peer is left behind: no log line of a failure.
    assert not petrel.events("worker-failed"), petrel.events("worker-failed")
