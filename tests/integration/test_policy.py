"""The policy language (docs/policy.md) end to end, with real BIRD peers.

An upstream BIRD (AS 65002) announces four IPv4 prefixes, shaping each
with its export filter: PLAIN with its AS alone, LEAKED with AS 64999 at
the origin, TAGGED with community (65002,666), LONG with AS 64998 at the
origin. Petrel (AS 65001) imports through a chain of two policies:

  - "cone": an AS-path regular expression refuses anything whose origin is
    64999 (`_64999$`: the boundary `_` keeps 164999 out);
  - "tag": routes carrying 65002:666 get 65001:666 and LOCAL_PREF 50;
    the rest is accepted as it came.

and exports to a downstream BIRD (AS 65003) through "to-down": PLAIN
prepended twice with our AS and tagged 65001:1; routes tagged 65001:666 on
import are not exported; the rest goes as the rules of BGP make it.

Checked at the downstream BIRD (the AS paths and communities it holds)
and in Petrel's API (what the import policy did). Then a reload takes the
prepend off, and only PLAIN changes at the downstream.

A second test imports through a term with an exception (`unless`): the
upstream's routes are refused unless in a prefix set, checked at the
downstream BIRD, then the set grows by a reload.

SKIPs while BIRD or the petrel binary is missing.
"""

from __future__ import annotations

import os
import re

import pytest

import lab as L
from conftest import require
from test_reload import reload

PETREL_ASN, UP_ASN, DOWN_ASN = 65001, 65002, 65003
PLAIN, LEAKED, TAGGED, LONG = "198.51.100.0/24", "203.0.113.0/24", "100.64.1.0/24", "100.64.2.0/24"
V4 = ("ipv4-unicast",)

SETS_AND_IMPORT = """
[[as_set]]
name = "leakers"
asns = [64999]

[[policy]]
name = "cone"

[[policy.term]]
name = "leak"
match = { as_path = "_64999$" }
then = "reject"

[[policy]]
name = "tag"
default = "accept"

[[policy.term]]
name = "blackholed-upstream"
match = { community = ["65002:666"] }
set = { community_add = ["65001:666"], local_pref = 50 }
then = "accept"
"""

EXPORT_PREPEND = f"""
[[policy]]
name = "to-down"
default = "accept"

[[policy.term]]
name = "keep-666-home"
match = {{ community = ["65001:666"] }}
then = "reject"

[[policy.term]]
name = "prepend-plain"
match = {{ prefix = ["{PLAIN}"] }}
set = {{ prepend = 2, community_add = ["65001:1"] }}
then = "accept"
"""

# Defined beside the rest, named by no peer: for the dry run.
CANDIDATE = """
[[policy]]
name = "to-down-v2"
default = "accept"
"""

EXPORT_PLAIN = """
[[policy]]
name = "to-down"
default = "accept"

[[policy.term]]
name = "keep-666-home"
match = { community = ["65001:666"] }
then = "reject"
"""


class ShapingBird(L.Bird):
    """The upstream: each prefix leaves with the path and communities the
    module docstring says."""

    def config(self) -> str:
        shape = (f"if net = {LEAKED} then bgp_path.prepend(64999); "
                 f"if net = {LONG} then bgp_path.prepend(64998); "
                 f"if net = {TAGGED} then bgp_community.add((65002,666)); accept;")
        conf = super().config()
        conf = conf.replace("export all;", f"export filter {{ {shape} }};")
        return re.sub(r"(bgp_next_hop = [^;]+;) accept;", rf"\1 {shape}", conf)


def at_bird(bird: L.Bird, prefix: str) -> tuple[str, str] | None:
    """(AS path, communities) of BIRD's route to `prefix`, or None."""
    try:
        out = bird.birdc("show", "route", "all", prefix)
    except L.LabError:  # "Network not found"
        return None
    m = re.search(r"BGP\.as_path:\s*([^\n]*)", out)
    if not m:
        return None
    c = re.search(r"BGP\.community:\s*([^\n]*)", out)
    return m.group(1).strip(), c.group(1).strip() if c else ""


def up_petrel_down(lab, up_kind: type, announce: tuple[str, ...], import_policy: str, export_policy: str,
                   extra_toml: str) -> tuple[L.Bird, L.Bird, L.Petrel]:
    """The lab of this file: the upstream BIRD (of class `up_kind`)
    announcing `announce`, Petrel importing from it through
    `import_policy` (a name, or a TOML array of names) and exporting to
    the downstream BIRD through `export_policy`; all sessions up."""
    require("bird")
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me, un, dn = lab.node("petrel"), lab.node("up"), lab.node("down")
    up = up_kind(un, L.Session(UP_ASN, PETREL_ASN, me.v4, un.v4, passive=True, families=V4,
                               announce=announce)).start()
    down = L.Bird(dn, L.Session(DOWN_ASN, PETREL_ASN, me.v4, dn.v4, passive=True, families=V4)).start()
    petrel = L.Petrel(me, [
        L.PetrelPeer("up", un.v4, UP_ASN, me.v4, families=V4, import_policy="IMPORT-CHAIN"),
        L.PetrelPeer("down", dn.v4, DOWN_ASN, me.v4, families=V4, export_policy=export_policy),
    ], PETREL_ASN, extra_toml=extra_toml)
    # PetrelPeer quotes its policy; a chain is an array of names.
    petrel.config = (lambda original: lambda: original().replace('"IMPORT-CHAIN"', import_policy))(petrel.config)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    up.wait_established(30)
    down.wait_established(30)
    return up, down, petrel


def test_policy_chains_regex_tagging_and_prepend_with_bird(lab):
    _, down, petrel = up_petrel_down(lab, ShapingBird, (PLAIN, LEAKED, TAGGED, LONG), '["cone", "tag"]', "to-down",
                                     SETS_AND_IMPORT + EXPORT_PREPEND + CANDIDATE)
    me = lab.node("petrel")

    # The downstream: PLAIN prepended twice and tagged; LONG as the rules
    # make it; LEAKED refused on import; TAGGED kept home by the export
    # policy.
    want = {
        PLAIN: (f"{PETREL_ASN} {PETREL_ASN} {PETREL_ASN} {UP_ASN}", "(65001,1)"),
        LONG: (f"{PETREL_ASN} {UP_ASN} 64998", ""),
        LEAKED: None,
        TAGGED: None,
    }

    def downstream():
        return {p: at_bird(down, p) for p in want}
    L.wait_until(lambda: downstream() == want, 30, f"the downstream BIRD holds {want}: {downstream()}")

    # Petrel itself: LEAKED is not in the table, TAGGED has the import
    # policy's LOCAL_PREF and community beside the upstream's.
    assert petrel.api(f"/api/routes/{LEAKED}") is None or not petrel.api(f"/api/routes/{LEAKED}").get("routes")
    tagged = petrel.api(f"/api/routes/{TAGGED}")
    assert tagged and tagged["routes"], tagged
    attrs = tagged["routes"][0]["attributes"]
    text = str(attrs)
    assert "65001:666" in text and "65002:666" in text, attrs
    assert attrs.get("local_pref") == 50, attrs
    # Why LEAKED is missing: kept with the term that refused it
    # (peer.keep_refused), and counted on the peer.
    refused = petrel.api(f"/api/refused?prefix={LEAKED}")
    assert refused and len(refused["refused"]) == 1, refused
    r = refused["refused"][0]
    assert r["peer"] == "up" and r["reason"] == "cone.leak", r
    assert r["attributes"]["as_path"] == [{"type": "AS_SEQUENCE", "asns": [UP_ASN, 64999]}], r
    assert petrel.api(f"/api/refused?prefix={PLAIN}")["refused"] == []
    # The looking glass says it to people: no route to LEAKED in the table,
    # and the refused one with the term that refused it.
    status, body = petrel.get(f"/lg?by=exact&q={LEAKED}")
    page = body.decode()
    assert status == 200 and '<p id="lg-summary">0 prefixes, 0 routes.</p>' in page, page
    assert '<table id="lg-refused">' in page, page
    assert f"<tr><td>{LEAKED}</td><td>up</td><td class=\"n\">0</td><td>cone.leak</td><td>{UP_ASN} 64999</td>" in page, page
    # and so does the status page
    status, body = petrel.get("/")
    assert status == 200 and f"<tr><td>up</td><td>{LEAKED}</td><td>cone.leak</td></tr>" in body.decode(), body
    peer = petrel.api_peer("up")
    assert peer and peer["refused_kept"] == 1 and peer["refused_not_kept"] == 0, peer
    assert petrel.api("/api/refused?peer=nobody") is None  # a 404

    # Why, as the export gate to the downstream says it
    # (/api/routes/{prefix}/explain?peer=): the term that decided, the
    # changes, the rules' verdict and the attributes the route goes with.
    why = petrel.api(f"/api/routes/{PLAIN}/explain?peer=down")
    assert why and why["export"]["sent"] is True, why
    ex = why["export"]
    assert ex["policy"] == "to-down" and ex["policy_verdict"] == "accept", ex
    assert ex["decided_by"] == "to-down.prepend-plain" and ex["changes"] == ["to-down.prepend-plain"], ex
    assert ex["rules"] == "send" and ex["route_peer"] == "up", ex
    assert ex["attributes"]["as_path"] == [{"type": "AS_SEQUENCE", "asns": [65001, 65001, 65001, 65002]}], ex
    assert ex["attributes"]["communities"] == ["65001:1"], ex
    kept = petrel.api(f"/api/routes/{TAGGED}/explain?peer=down")["export"]
    assert kept["sent"] is False and kept["policy_verdict"] == "reject", kept
    assert kept["decided_by"] == "to-down.keep-666-home" and kept["attributes"] is None, kept
    back = petrel.api(f"/api/routes/{LONG}/explain?peer=up")["export"]
    # To the peer it came from: the rules say no (and "up" exports nothing).
    assert back["sent"] is False and back["rules"] == "to-sender" and back["policy"] == "none", back
    assert petrel.api(f"/api/routes/{PLAIN}/explain?peer=nobody") is None  # a 404
    # The same for people: petrel show route PREFIX --peer NAME.
    out = me.run([L.petrel_binary(), "show", "--http", f"127.0.0.1:{petrel.http_port}", "route", PLAIN,
                  "--peer", "down"]).stdout
    assert "To down: sent" in out and "accept by to-down.prepend-plain" in out, out
    assert "as path     65001 65001 65001 65002" in out and "65001:1" in out, out
    out = me.run([L.petrel_binary(), "show", "--http", f"127.0.0.1:{petrel.http_port}", "route", TAGGED,
                  "--peer", "down"]).stdout
    assert "To down: not sent" in out and "reject by to-down.keep-666-home" in out, out

    # A dry run (petrel policy test): "to-down-v2" instead of "to-down"
    # would send TAGGED too and PLAIN without the prepend; nothing changes.
    run = petrel.api("/api/policy/test?peer=down&direction=export&policy=to-down-v2")
    assert run and run["examined"] == 3, run
    assert (run["newly_accepted"], run["newly_refused"], run["changed"], run["unchanged_accepted"]) == (1, 0, 1, 1), run
    by_prefix = {e["prefix"]: e for e in run["examples"]}
    assert by_prefix[TAGGED]["change"] == "newly-accepted", run
    assert by_prefix[TAGGED]["before"]["decided_by"] == "to-down.keep-666-home", run
    assert by_prefix[PLAIN]["change"] == "changed", run
    assert by_prefix[PLAIN]["after"]["attributes"]["as_path"] == [
        {"type": "AS_SEQUENCE", "asns": [PETREL_ASN, UP_ASN]}], run
    # Import: without "cone", the kept refused LEAKED would come in.
    run = petrel.api("/api/policy/test?peer=up&direction=import&policy=tag")
    assert run and (run["newly_accepted"], run["newly_refused"], run["changed"]) == (1, 0, 0), run
    assert run["examples"][0]["prefix"] == LEAKED and run["examples"][0]["before"]["decided_by"] == "cone.leak", run
    out = me.run([L.petrel_binary(), "policy", "test", "--http", f"127.0.0.1:{petrel.http_port}", "--peer", "down",
                  "--direction", "export", "--policy", "to-down-v2"]).stdout
    assert "newly accepted  1" in out and f"changed         {PLAIN}" in out, out
    assert at_bird(down, TAGGED) is None  # the dry run changed nothing
    assert petrel.api("/api/policy/test?peer=down&direction=export&policy=nosuch") is None  # a 404

    # The control: the prepend off by a live reload; only PLAIN changes
    # at the downstream (Petrel sends the difference).
    petrel.extra_toml = SETS_AND_IMPORT + EXPORT_PLAIN + CANDIDATE
    reload(petrel, petrel.config())
    ev = petrel.wait_events("reload-peer", peer="down")[-1]
    assert ev["export"].startswith("policy to-down -> policy to-down"), ev
    want[PLAIN] = (f"{PETREL_ASN} {UP_ASN}", "")
    L.wait_until(lambda: downstream() == want, 30, f"after the reload the downstream holds {want}: {downstream()}")


# A customer-cone filter with an exception (`unless`, docs/policy.md):
# everything from external peers is refused unless it is in the customer's
# prefix set and originated by the upstream's AS. The upstream sends PLAIN
# and LONG with the same attributes (BIRD packs such prefixes in one
# UPDATE); only PLAIN is in the set.
CONE_SET = """
[[prefix_set]]
name = "customer-prefixes"
prefixes = [{prefixes}]
"""

CONE_POLICY = f"""
[[policy]]
name = "customer-cone"
default = "accept"

[[policy.term]]
name = "outside"
match = {{ peer_type = ["external"] }}
unless = {{ prefix = ["@customer-prefixes"], origin_as = [{UP_ASN}] }}
then = "reject"
"""


def test_policy_unless_keeps_routes_outside_a_prefix_set_away_with_bird(lab):
    _, down, petrel = up_petrel_down(lab, L.Bird, (PLAIN, LONG), '"customer-cone"', "all",
                                     CONE_SET.format(prefixes=f'"{PLAIN}"') + CONE_POLICY)

    # At the downstream: PLAIN (excepted), not LONG (outside the set).
    want = {PLAIN: (f"{PETREL_ASN} {UP_ASN}", ""), LONG: None}

    def downstream():
        return {p: at_bird(down, p) for p in want}
    L.wait_until(lambda: downstream() == want, 30, f"the downstream BIRD holds {want}: {downstream()}")
    refused = petrel.api(f"/api/refused?prefix={LONG}")
    assert refused and [r["reason"] for r in refused["refused"]] == ["customer-cone.outside"], refused
    assert petrel.api(f"/api/refused?prefix={PLAIN}")["refused"] == []

    # The set grows by a reload: the changed exception is a changed policy,
    # the upstream is asked for its routes again, and LONG comes through.
    petrel.extra_toml = CONE_SET.format(prefixes=f'"{PLAIN}", "{LONG}"') + CONE_POLICY
    reload(petrel, petrel.config())
    assert not petrel.events("reload-failed"), petrel.events("reload-failed")
    want[LONG] = (f"{PETREL_ASN} {UP_ASN}", "")
    L.wait_until(lambda: downstream() == want, 30, f"after the reload the downstream holds {want}: {downstream()}")
    assert petrel.api(f"/api/refused?prefix={LONG}")["refused"] == []
