"""Configuration reload (SIGHUP) with live peers (docs/export.md, "Reload").

BIRD announces 256 prefixes to Petrel, which passes them on to GoBGP.

- Export: GoBGP's export filter changes to one that takes the lower half;
  after SIGHUP GoBGP holds exactly that half, and Petrel sent only the
  withdrawals of the other half (GoBGP counts 128 withdrawn prefixes, and
  Petrel wrote one UPDATE). Back to "all": only the other half is
  announced again, nothing withdrawn.
- Import: BIRD's import filter changes the same way; Petrel asks BIRD for
  a ROUTE-REFRESH, and the refused half leaves Petrel's table (and
  GoBGP); back to "all" brings it back.
- [[originate]]: an entry added on reload is announced, one removed is
  withdrawn.
- An invalid file changes nothing: the error is logged with
  file:line:column:key.
"""

from __future__ import annotations

import json
import signal

import lab as L
from test_export import gobgp_routes

PETREL_ASN = 65001
BIRD_ASN = 65002
GOBGP_ASN = 65004
HOLD = 9
V4 = ("ipv4-unicast",)
PREFIXES = tuple(f"10.50.{i}.0/24" for i in range(256))
LOWER = {p for p in PREFIXES if int(p.split(".")[2]) < 128}
FILTER = '[[filter]]\nname = "lower"\n[[filter.rule]]\nprefixes = ["10.50.0.0/17 le 24"]\naction = "accept"\n'


def petrel_config(petrel: L.Petrel, bird_import: str, gobgp_export: str) -> str:
    for p in petrel.peers:
        if p.name == "bird":
            p.import_policy = bird_import
        if p.name == "gobgp":
            p.export_policy = gobgp_export
    return petrel.config()


def reload(petrel: L.Petrel, text: str) -> None:
    """Writes the configuration and sends SIGHUP; waits for the log line
    that says it was read ("reloaded" or "reload-failed")."""
    before = len(petrel.events("reloaded")) + len(petrel.events("reload-failed"))
    with open(petrel.conf, "w") as f:
        f.write(text)
    petrel.proc.send_signal(signal.SIGHUP)
    L.wait_until(lambda: len(petrel.events("reloaded")) + len(petrel.events("reload-failed")) > before,
                 10, "petrel read its configuration again")


def gobgp_counters(g: L.GoBgp) -> dict:
    """GoBGP's received-message counters for its neighbour Petrel."""
    data = json.loads(g.gobgp("neighbor", g._nbr(), "-j"))
    return data["state"]["messages"]["received"]


def updates_sent(petrel: L.Petrel, peer: str) -> int:
    p = petrel.api_peer(peer)
    assert p is not None
    return int(p["messages"]["out"]["update"]) if "messages" in p else -1


def wait_holds(g: L.GoBgp, want: set[str], timeout: float = 20) -> None:
    L.wait_until(lambda: set(gobgp_routes(g, "ipv4-unicast")) == want or (g._check_alive() and False),
                 timeout, f"GoBGP holds {len(want)} prefixes")


def test_reload_changes_export_and_import_policies(lab):
    me, bn, gn = lab.node("petrel"), lab.node("bird"), lab.node("gobgp")
    bird = L.Bird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD, families=V4,
                                announce=PREFIXES)).start()
    gobgp = L.GoBgp(gn, L.Session(GOBGP_ASN, PETREL_ASN, me.v4, gn.v4, hold_time=HOLD, families=V4)).start()
    petrel = L.Petrel(me, [
        L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD, families=V4),
        L.PetrelPeer("gobgp", gn.v4, GOBGP_ASN, me.v4, hold_time=HOLD, families=V4, export_policy="all"),
    ], PETREL_ASN, extra_toml=FILTER).start()
    bird.wait_established(30)
    gobgp.wait_established(30)
    wait_holds(gobgp, set(PREFIXES), 30)
    L.wait_until(lambda: updates_sent(petrel, "gobgp") > 0, 5, "Petrel's counters")

    # Export: only the difference goes out.
    sent0, got0 = updates_sent(petrel, "gobgp"), gobgp_counters(gobgp)
    reload(petrel, petrel_config(petrel, "all", "lower"))
    wait_holds(gobgp, LOWER)
    ev = petrel.wait_events("reload-peer", peer="gobgp")[-1]
    assert ev["export"] == "all -> policy lower", ev
    got1 = gobgp_counters(gobgp)
    assert got1.get("withdraw_prefix", 0) - got0.get("withdraw_prefix", 0) == 128, (got0, got1)
    # 128 withdrawn /24s fit one UPDATE; nothing was announced again.
    L.wait_until(lambda: updates_sent(petrel, "gobgp") - sent0 == 1, 5, "one UPDATE sent")
    assert got1["update"] - got0["update"] == 1, (got0, got1)
    assert petrel.api_peer("gobgp")["update_prefixes"]["ipv4-unicast"]["advertised"] == 128

    # Back to all: the upper half is announced, nothing withdrawn.
    sent1 = updates_sent(petrel, "gobgp")
    reload(petrel, petrel_config(petrel, "all", "all"))
    wait_holds(gobgp, set(PREFIXES))
    got2 = gobgp_counters(gobgp)
    assert got2.get("withdraw_prefix", 0) == got1.get("withdraw_prefix", 0), (got1, got2)
    L.wait_until(lambda: updates_sent(petrel, "gobgp") - sent1 == 1, 5, "one UPDATE sent")

    # Import: Petrel asks BIRD to send its routes again (ROUTE-REFRESH);
    # the refused half leaves the table and GoBGP.
    refused0 = petrel.api_peer("bird")["update_prefixes"]["ipv4-unicast"]["refused"]
    reload(petrel, petrel_config(petrel, "lower", "all"))
    ev = petrel.wait_events("reload-peer", peer="bird")[-1]
    assert ev["import"] == "all -> policy lower", ev
    assert "ROUTE-REFRESH sent" in ev["msg"], ev
    wait_holds(gobgp, LOWER)
    fam = petrel.api_peer("bird")["update_prefixes"]["ipv4-unicast"]
    assert fam["received"] == 128, fam
    assert fam["refused"] - refused0 == 128, fam
    assert int(petrel.api_peer("bird")["messages"]["out"]["route-refresh"]) >= 1
    reload(petrel, petrel_config(petrel, "all", "all"))
    wait_holds(gobgp, set(PREFIXES))

    # [[originate]]: a new entry is announced, a removed one withdrawn.
    petrel.extra_toml = FILTER + '[[originate]]\nprefix = "192.0.2.0/24"\n'
    reload(petrel, petrel.config())
    wait_holds(gobgp, set(PREFIXES) | {"192.0.2.0/24"})
    assert gobgp_routes(gobgp, "ipv4-unicast")["192.0.2.0/24"]["as_path"] == [PETREL_ASN]
    petrel.extra_toml = FILTER
    reload(petrel, petrel.config())
    wait_holds(gobgp, set(PREFIXES))

    # An invalid file changes nothing and says where it is wrong.
    good = petrel_config(petrel, "all", "all")
    reload(petrel, good.replace('export = "all"', 'export = "nosuch"', 1).replace("hold_time = 9", "hold_time = 2", 1))
    errors = [e["error"] for e in petrel.events("reload-failed")]
    assert any(e.startswith(f"{petrel.conf}:") and "peer[0].hold_time" in e for e in errors), errors
    assert petrel.api_peer("bird")["state"].lower() == "established"
    assert len(gobgp_routes(gobgp, "ipv4-unicast")) == 256
