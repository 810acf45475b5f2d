"""The BMP client (docs/bmp.md) feeding a real collector: pmacct's
`pmbmpd`, listening on the loopback of Petrel's namespace and logging
every message it gets as JSON lines, while BIRD sends Petrel a table.

- Initiation (sysDescr), a Peer Up of the Loc-RIB instance (RFC 9069) and
  of the BIRD session with its address, AS and BGP identifier; a second
  BIRD over IPv6 (the per-peer header's V flag, an IPv6 local address).
- Post-policy Route Monitoring (L flag) of BIRD's routes: exactly those
  Petrel holds from BIRD, its import filter having refused one; with their
  AS path and next hop.
- Loc-RIB Route Monitoring: exactly the prefixes of Petrel's table, its own
  [[originate]] route included.
- Statistics Reports; GET /api/bmp and the petrel_bmp_* metrics.
- BIRD's session shut: a Peer Down with BIRD's NOTIFICATION (reason 3),
  BIRD's prefixes withdrawn from the Loc-RIB; back up: a second Peer Up
  and its routes again.
- The collector stopped and started again: Petrel connects again after
  its back-off and sends Initiation, the Peer Ups and the whole table.
- Petrel stopped: the Loc-RIB instance's Peer Down (reason 6), a
  Termination.
"""

from __future__ import annotations

import json
import time

import lab as L
from conftest import require

PETREL_ASN = 65001
BIRD_ASN = 65002
BIRD6_ASN = 65003                # a second BIRD, over IPv6 (the V flag)
HOLD = 9
PREFIXES = L.sample_prefixes(9, v4=4, v6=3)
REFUSED = PREFIXES[0]            # the import filter refuses it
ORIGINATED = "203.0.113.0/24"    # Petrel's own: Loc-RIB only
PREFIXES6 = L.sample_prefixes(10, v4=0, v6=2)
BMP_PORT = 11019


def bmp_log(path: str) -> list[dict]:
    """pmbmpd's JSON lines, in order (a half-written last line is left out)."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except FileNotFoundError:
        pass
    return out


def routes_seen(msgs: list[dict], loc: bool, peer_ip: str | None = None, post: bool = True) -> dict[str, dict]:
    """The routes a station holds after these messages: prefix -> the last
    announcement (a withdrawal removes it; a Peer Down all of the peer's,
    RFC 7854 section 4.9). loc: the Loc-RIB's, else the post-policy (or,
    post False, the pre-policy) Adj-RIB-In of peer_ip."""
    held: dict[str, dict] = {}
    for m in msgs:
        if m.get("bmp_msg_type") == "peer_down" and not loc and m.get("peer_ip") == peer_ip:
            held.clear()
        if m.get("bmp_msg_type") != "route_monitor":
            continue
        if bool(m.get("is_loc")) != loc:
            continue
        if not loc and (m.get("peer_ip") != peer_ip or bool(m.get("is_post")) != post):
            continue
        if m.get("log_type") == "update":
            held[m["ip_prefix"]] = m
        elif m.get("log_type") == "withdraw":
            held.pop(m["ip_prefix"], None)
    return held


def api_routes(petrel: L.Petrel) -> dict[str, list[dict]]:
    """prefix -> every route Petrel holds for it (from the API)."""
    out = {}
    listing = petrel.api("/api/routes") or {}
    for p in listing.get("prefixes", []):
        detail = petrel.api(f"/api/routes/{p['prefix']}")
        out[detail["prefix"]] = detail["routes"]
    return out


def as_path_text(route: dict) -> str:
    parts = []
    for seg in route["attributes"].get("as_path", []):
        parts.append(" ".join(str(a) for a in seg["asns"]))
    return " ".join(parts)


def test_bmp_feeds_pmbmpd(lab):
    require("bird")
    require("pmbmpd")
    me, bn, b6 = lab.node("petrel"), lab.node("bird"), lab.node("bird6")
    msglog = me.path("bmp.json")
    collector = me.popen(["pmbmpd", "-L", "127.0.0.1", "-l", str(BMP_PORT), "-o", msglog], me.path("pmbmpd.log"))
    L.wait_until(lambda: me.run(["ss", "-Hltn", "sport", f"= :{BMP_PORT}"], check=False).stdout.strip()
                 or collector.poll() is not None, 10, "pmbmpd listening")
    assert collector.poll() is None, open(me.path("pmbmpd.log")).read()

    filt = ('[[filter]]\nname = "in"\ndefault = "accept"\n'
            f'[[filter.rule]]\nprefixes = ["{REFUSED}"]\naction = "reject"\n')
    extra = (f'{filt}\n[[originate]]\nprefix = "{ORIGINATED}"\nnext_hop = "{me.v4}"\n\n'
             f'[[bmp]]\naddress = "127.0.0.1"\nport = {BMP_PORT}\nstatistics_interval = 1\n')
    bird = L.Bird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD, announce=PREFIXES)).start()
    bird6 = L.Bird(b6, L.Session(BIRD6_ASN, PETREL_ASN, me.v6, b6.v6, hold_time=HOLD, announce=PREFIXES6)).start()
    petrel = L.Petrel(me, [L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD, import_policy="in"),
                           L.PetrelPeer("bird6", b6.v6, BIRD6_ASN, me.v6, hold_time=HOLD)],
                      PETREL_ASN, extra_toml=extra).start()
    bird.wait_established(30)
    bird6.wait_established(30)
    L.wait_until(lambda: len((petrel.api("/api/routes") or {}).get("prefixes", [])) ==
                 len(PREFIXES) + len(PREFIXES6), 30,
                 "Petrel holds the BIRDs' routes but the refused one, and its own")
    held = api_routes(petrel)
    from_bird = {p: r for p, rs in held.items() for r in rs if r["peer_address"] == bn.v4}
    from_bird6 = {p: r for p, rs in held.items() for r in rs if r["peer_address"] == b6.v6}
    assert set(from_bird) == set(PREFIXES) - {REFUSED}, held
    assert set(from_bird6) == set(PREFIXES6), held
    assert ORIGINATED in held

    # pmbmpd got the Peer Ups and every route.
    def fed():
        msgs = bmp_log(msglog)
        post = routes_seen(msgs, loc=False, peer_ip=bn.v4)
        post6 = routes_seen(msgs, loc=False, peer_ip=b6.v6)
        loc = routes_seen(msgs, loc=True)
        return msgs if set(post) == set(from_bird) and set(post6) == set(from_bird6) and set(loc) == set(held) \
            else None
    try:
        msgs = L.wait_until(fed, 20, "pmbmpd holds Petrel's routes")
    except Exception:
        msgs = bmp_log(msglog)
        raise AssertionError(f"pmbmpd logged: {msgs[-40:]}\npetrel: {petrel.log_text()[-3000:]}")
    init = [m for m in msgs if m.get("bmp_msg_type") == "init"]
    assert init and init[0]["bmp_init_info_sysdescr"].startswith("Petrel "), init
    ups = [m for m in msgs if m.get("bmp_msg_type") == "peer_up"]
    loc_up = [m for m in ups if m.get("is_loc")]
    assert len(loc_up) == 1 and loc_up[0]["peer_asn"] == PETREL_ASN and loc_up[0]["bgp_id"] == me.v4, ups
    # (One each, unless a connection collision made a session flap as it
    # came up: then one per session, each with a Peer Down between.)
    bird_up = [m for m in ups if m.get("peer_ip") == bn.v4]
    assert bird_up, ups
    for u in bird_up:
        assert u["peer_asn"] == BIRD_ASN and u["bgp_id"] == bn.v4, u
        assert u["local_ip"] == me.v4 and 179 in (u["local_port"], u["remote_port"]), u
    bird6_up = [m for m in ups if m.get("peer_ip") == b6.v6]
    assert bird6_up and all(u["peer_asn"] == BIRD6_ASN and u["local_ip"] == me.v6 for u in bird6_up), ups
    downs = [m for m in msgs if m.get("bmp_msg_type") == "peer_down"]
    assert len(downs) == len(ups) - 3, msgs
    # Peer Up comes before the peer's routes (RFC 7854 section 3.3).
    first_route = min(i for i, m in enumerate(msgs) if m.get("bmp_msg_type") == "route_monitor"
                      and m.get("peer_ip") == bn.v4)
    assert msgs.index(bird_up[0]) < first_route

    # Exactly the routes Petrel holds, with their attributes.
    post = routes_seen(msgs, loc=False, peer_ip=bn.v4)
    assert set(post) == set(from_bird)
    for p, m in post.items():
        r = from_bird[p]
        assert m.get("as_path", "") == as_path_text(r), (m, r)
        assert m.get("bgp_nexthop") == r["next_hop"], (m, r)
    assert not any(m.get("ip_prefix") == REFUSED for m in msgs if m.get("bmp_msg_type") == "route_monitor")
    for p, m in routes_seen(msgs, loc=False, peer_ip=b6.v6).items():
        assert m.get("as_path") == str(BIRD6_ASN) and m.get("bgp_nexthop") == from_bird6[p]["next_hop"], m
    loc = routes_seen(msgs, loc=True)
    assert set(loc) == set(held)
    assert loc[ORIGINATED].get("as_path", "") == "" and loc[ORIGINATED]["bgp_nexthop"] == me.v4, loc[ORIGINATED]

    # Statistics Reports: the peer's Adj-RIB-In and the Loc-RIB.
    def stats():
        ms = [m for m in bmp_log(msglog) if m.get("bmp_msg_type") == "stats"]
        rib_in = [m for m in ms if m.get("peer_ip") == bn.v4 and m.get("counter_type") == 7]
        loc_rib = [m for m in ms if m.get("is_loc") and m.get("counter_type") == 8]
        rejected = [m for m in ms if m.get("peer_ip") == bn.v4 and m.get("counter_type") == 0]
        duplicates = [m for m in ms if m.get("peer_ip") == bn.v4 and m.get("counter_type") == 1]
        return (rib_in, loc_rib, rejected, duplicates) if rib_in and loc_rib and rejected and duplicates else None
    rib_in, loc_rib, rejected, duplicates = L.wait_until(stats, 10, "Statistics Reports")
    assert duplicates[-1]["counter_value"] == petrel.api_peer("bird")["duplicate_announcements"], duplicates[-1]
    assert rib_in[-1]["counter_value"] == len(from_bird), rib_in[-1]
    assert loc_rib[-1]["counter_value"] == len(held), loc_rib[-1]
    assert rejected[-1]["counter_value"] == 1, rejected[-1]

    # The API and the metrics.
    api = petrel.api("/api/bmp")
    assert api is not None and len(api["stations"]) == 1, api
    st = api["stations"][0]
    assert st["station"] == f"127.0.0.1:{BMP_PORT}" and st["state"] == "up", st
    # Initiation, three Peer Ups, Route Monitoring (packed: several routes a message).
    assert st["messages"] >= 5 and st["bytes"] > 0 and st["drops"] == 0 and st["connects"] == 1, st
    metrics = me.run(["curl", "-s", f"http://127.0.0.1:{petrel.http_port}/metrics"], check=False).stdout
    assert f'petrel_bmp_up{{station="127.0.0.1:{BMP_PORT}"}} 1' in metrics, metrics[-2000:]
    assert f'petrel_bmp_drops_total{{station="127.0.0.1:{BMP_PORT}"}} 0' in metrics
    page = me.run(["curl", "-s", f"http://127.0.0.1:{petrel.http_port}/"], check=False).stdout
    assert "BMP stations" in page and f"127.0.0.1:{BMP_PORT}" in page, page[-2000:]

    # BIRD shuts its session: a Peer Down with its NOTIFICATION, and its
    # routes leave the Loc-RIB.
    before = len([m for m in bmp_log(msglog) if m.get("bmp_msg_type") == "peer_down"])
    bird.birdc("disable", "peer")
    def down():
        ms = bmp_log(msglog)
        d = [m for m in ms if m.get("bmp_msg_type") == "peer_down"][before:]
        return (d, ms) if d and set(routes_seen(ms, loc=True)) == {ORIGINATED, *PREFIXES6} else None
    d, msgs = L.wait_until(down, 20, "a Peer Down and the Loc-RIB withdrawals")
    assert len(d) == 1 and d[0]["peer_ip"] == bn.v4 and d[0]["reason_type"] == 3, d

    # BIRD back: a second Peer Up and its routes again (those the table
    # had before the Peer Up was read included).
    bird.birdc("enable", "peer")
    bird.wait_established(30)
    # (A collision may make it flap once more as it comes up: what counts is
    # the last Peer Up and what follows it.)
    def again():
        ms = bmp_log(msglog)
        u = [i for i, m in enumerate(ms) if m.get("bmp_msg_type") == "peer_up" and m.get("peer_ip") == bn.v4]
        d = [i for i, m in enumerate(ms) if m.get("bmp_msg_type") == "peer_down" and m.get("peer_ip") == bn.v4]
        up_last = u and u[-1] > d[-1]
        return ms if up_last and set(routes_seen(ms, loc=False, peer_ip=bn.v4)) == set(from_bird) else None
    msgs = L.wait_until(again, 30, "a second Peer Up and BIRD's routes again")
    assert set(routes_seen(msgs, loc=True)) == set(held)

    # The station goes away and comes back (a new collector, a new log):
    # Petrel connects again after its back-off and sends the whole table.
    lab.stop_process(collector)
    L.wait_until(lambda: (petrel.api("/api/bmp") or {"stations": [{}]})["stations"][0].get("state") != "up", 10,
                 "Petrel sees the station gone")
    msglog2 = me.path("bmp2.json")
    collector = me.popen(["pmbmpd", "-L", "127.0.0.1", "-l", str(BMP_PORT), "-o", msglog2], me.path("pmbmpd2.log"))
    def resynced():
        ms = bmp_log(msglog2)
        return ms if (set(routes_seen(ms, loc=False, peer_ip=bn.v4)) == set(from_bird)
                      and set(routes_seen(ms, loc=False, peer_ip=b6.v6)) == set(from_bird6)
                      and set(routes_seen(ms, loc=True)) == set(held)) else None
    msgs = L.wait_until(resynced, 30, "the whole table at the new collector")
    assert [m["bmp_msg_type"] for m in msgs if m.get("bmp_msg_type") in ("init", "peer_up")][:4] == \
        ["init", "peer_up", "peer_up", "peer_up"], msgs[:5]
    st = petrel.api("/api/bmp")["stations"][0]
    assert st["state"] == "up" and st["connects"] == 2 and st["drops"] == 0, st

    # Petrel stops: a Termination.
    msglog = msglog2
    petrel.stop()
    L.wait_until(lambda: any(m.get("bmp_msg_type") == "term" for m in bmp_log(msglog)), 10, "a Termination")
    last = [m for m in bmp_log(msglog) if m.get("bmp_msg_type") in ("peer_down", "term")][-2:]
    assert last[0]["bmp_msg_type"] == "peer_down" and last[0].get("peer_type") == 3 and last[0]["reason_type"] == 6, last
    assert petrel.events("bmp-terminated")


def test_bmp_pre_policy_with_pmbmpd(lab):
    """Pre-policy monitoring (monitoring = ["pre-policy"]): each UPDATE as
    BIRD sent it, the route the import filter refuses included. The station
    connects after the session is up: Petrel keeps no pre-policy Adj-RIB-In,
    so it asks BIRD for its routes again (ROUTE-REFRESH) and the station
    gets all of them."""
    require("bird")
    require("pmbmpd")
    me, bn = lab.node("petrel"), lab.node("bird")
    filt = ('[[filter]]\nname = "in"\ndefault = "accept"\n'
            f'[[filter.rule]]\nprefixes = ["{REFUSED}"]\naction = "reject"\n')
    extra = (f'{filt}\n[[bmp]]\naddress = "127.0.0.1"\nport = {BMP_PORT}\nmonitoring = ["pre-policy"]\n'
             'statistics_interval = 0\n')
    bird = L.Bird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD, announce=PREFIXES)).start()
    petrel = L.Petrel(me, [L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD, import_policy="in")],
                      PETREL_ASN, extra_toml=extra).start()
    bird.wait_established(30)
    L.wait_until(lambda: len((petrel.api("/api/routes") or {}).get("prefixes", [])) == len(PREFIXES) - 1, 30,
                 "Petrel holds BIRD's routes but the refused one")
    # Only now the collector: the routes came before it.
    msglog = me.path("bmp-pre.json")
    me.popen(["pmbmpd", "-L", "127.0.0.1", "-l", str(BMP_PORT), "-o", msglog], me.path("pmbmpd-pre.log"))

    def fed():
        ms = bmp_log(msglog)
        pre = routes_seen(ms, loc=False, peer_ip=bn.v4, post=False)
        return (ms, pre) if set(pre) == set(PREFIXES) else None
    msgs, pre = L.wait_until(fed, 30, "pmbmpd holds every route BIRD sent, pre-policy")
    assert REFUSED in pre and pre[REFUSED].get("as_path") == str(BIRD_ASN), pre[REFUSED]
    # Nothing post-policy or Loc-RIB: only what was asked for.
    assert not any(m.get("is_post") or m.get("is_loc") for m in msgs if m.get("bmp_msg_type") == "route_monitor")
    assert petrel.wait_events("bmp-refresh", peer="bird"), "no ROUTE-REFRESH for the pre-policy station"
    # A new UPDATE from BIRD reaches the station as it came.
    bird.birdc("disable", "peer")
    bird.birdc("enable", "peer")
    bird.wait_established(30)
    L.wait_until(lambda: len([m for m in bmp_log(msglog) if m.get("bmp_msg_type") == "peer_up"]) >= 2, 20,
                 "a second Peer Up")
    L.wait_until(lambda: set(routes_seen(bmp_log(msglog), loc=False, peer_ip=bn.v4, post=False)) == set(PREFIXES),
                 20, "every route again after the session came back")

