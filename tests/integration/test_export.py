"""Routes passed on through Petrel between real peers (docs/export.md).

BIRD announces a table of a few thousand prefixes (with a community and a
MED) to Petrel, which passes it on to GoBGP and FRR; every prefix and the
attributes that the rules decide are checked where they arrive:

- to an external peer: Petrel's AS first in the AS_PATH, Petrel's address
  as next hop (IPv6: global, plus link-local on the shared link), no MED
  (it came from another AS), communities unchanged;
- to an internal peer: AS_PATH and next hop unchanged, LOCAL_PREF 100, the
  MED kept;
- from one internal peer to another: not sent, unless the receiver is a
  route reflector client, which gets ORIGINATOR_ID and CLUSTER_LIST;
- NO_EXPORT not to external peers; [[originate]] routes to everyone;
  export filters; our own AS in a path refused on import;
- a withdrawal at BIRD leaves every peer; BIRD going down empties them.
"""

from __future__ import annotations

import ipaddress
import json

import pytest

import lab as L

PETREL_ASN = 65001
BIRD_ASN = 65002
GOBGP_EXT_ASN = 65004
FRR_EXT_ASN = 65003
HOLD = 9
N4, N6 = 2000, 500


def table_prefixes(n4: int = N4, n6: int = N6) -> tuple[str, ...]:
    v4 = [f"10.{i // 256}.{i % 256}.0/24" for i in range(n4)]
    v6 = [f"2001:db8:{i:x}::/48" for i in range(n6)]
    return tuple(str(ipaddress.ip_network(p)) for p in v4 + v6)


class TaggingBird(L.Bird):
    """BIRD that tags what it exports: community (65002,7), MED 50, and
    NO_EXPORT on prefixes listed in `no_export`."""

    no_export: tuple[str, ...] = ()

    def config(self) -> str:
        ne = ""
        if self.no_export:
            nets = ", ".join(self.no_export)
            ne = f"if net ~ [ {nets} ] then bgp_community.add((65535,65281)); "
        tag = f"bgp_community.add((65002,7)); bgp_med = 50; {ne}"
        conf = super().config()
        conf = conf.replace("export all;", f"export filter {{ {tag}accept; }};")
        return conf.replace("export filter { bgp_next_hop", f"export filter {{ {tag}bgp_next_hop")


def gobgp_routes(g: L.GoBgp, family: str) -> dict[str, dict]:
    """prefix -> {as_path, next_hop, med, local_pref, communities, originator_id,
    cluster_list} as GoBGP holds them from Petrel."""
    afi = "ipv6" if family == "ipv6-unicast" else "ipv4"
    out = g.gobgp("neighbor", g._nbr(), "adj-in", "-a", afi, "-j", check=False)
    data = json.loads(out or "{}") or {}
    res = {}
    for prefix, paths in data.items():
        path = paths[0] if isinstance(paths, list) else paths
        info: dict = {"as_path": [], "communities": [], "med": None, "local_pref": None,
                      "next_hop": None, "originator_id": None,
                      "cluster_list": []}
        for a in path.get("attrs", []):
            t = a.get("type")
            if t == 2:  # AS_PATH
                for seg in a.get("as_paths", []):
                    info["as_path"] += seg.get("asns", [])
            elif t == 3:
                info["next_hop"] = a.get("nexthop")
            elif t == 4:
                info["med"] = a.get("metric")
            elif t == 5:
                info["local_pref"] = a.get("value")
            elif t == 8:
                info["communities"] = a.get("communities", [])
            elif t == 9:
                info["originator_id"] = a.get("value")
            elif t == 10:
                info["cluster_list"] = a.get("value", [])
            elif t == 14:
                info["next_hop"] = a.get("nexthop")
        res[str(ipaddress.ip_network(prefix))] = info
    return res


def wait_gobgp(g: L.GoBgp, family: str, want: set[str], timeout: float = 30) -> dict[str, dict]:
    last: list = [{}]

    def pred():
        g._check_alive()
        got = gobgp_routes(g, family)
        last[0] = got
        return got if set(got) == want else None
    try:
        return L.wait_until(pred, timeout, f"GoBGP holds {len(want)} {family} prefixes")
    except TimeoutError:
        got = set(last[0])
        raise AssertionError(f"GoBGP holds {len(got)} {family} prefixes, want {len(want)}; "
                             f"missing e.g. {sorted(want - got)[:3]}, extra e.g. {sorted(got - want)[:3]}") \
            from None


def split(prefixes) -> dict[str, set[str]]:
    return {"ipv4-unicast": {p for p in prefixes if ":" not in p},
            "ipv6-unicast": {p for p in prefixes if ":" in p}}


COMMUNITY_65002_7 = 65002 << 16 | 7
NO_EXPORT = 0xFFFFFF01


def start_bird(lab, node, me, prefixes, no_export=()):
    b = TaggingBird(node, L.Session(BIRD_ASN, PETREL_ASN, me.v4, node.v4, hold_time=HOLD,
                                    announce=prefixes))
    b.no_export = tuple(no_export)
    return b.start()


def test_external_and_internal_rules(lab):
    me, bn, gx, gi = lab.node("petrel"), lab.node("bird"), lab.node("gobgp-ext"), lab.node("gobgp-int")
    prefixes = table_prefixes()
    no_export = ("10.0.5.0/24", "10.0.6.0/24")
    want = split(prefixes)
    bird = start_bird(lab, bn, me, prefixes, no_export)
    ext = L.GoBgp(gx, L.Session(GOBGP_EXT_ASN, PETREL_ASN, me.v4, gx.v4, hold_time=HOLD)).start()
    inn = L.GoBgp(gi, L.Session(PETREL_ASN, PETREL_ASN, me.v4, gi.v4, hold_time=HOLD))
    inn.api_port = 50052
    inn.start()
    petrel = L.Petrel(me, [
        L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD, export_policy="all"),
        L.PetrelPeer("ext", gx.v4, GOBGP_EXT_ASN, me.v4, hold_time=HOLD, export_policy="all"),
        L.PetrelPeer("int", gi.v4, PETREL_ASN, me.v4, hold_time=HOLD, export_policy="all"),
    ], PETREL_ASN, extra_toml="\n".join([
        "[[originate]]", 'prefix = "192.0.2.0/24"', "med = 5",
        "[[originate]]", 'prefix = "2001:db8:ffff::/48"', 'communities = ["65001:9"]',
    ])).start()
    for p in (bird, ext, inn):
        p.wait_established(30)

    ours = {"ipv4-unicast": {"192.0.2.0/24"}, "ipv6-unicast": {"2001:db8:ffff::/48"}}
    # External: everything but NO_EXPORT, plus ours.
    ext4 = wait_gobgp(ext, "ipv4-unicast", (want["ipv4-unicast"] - set(no_export)) | ours["ipv4-unicast"])
    ext6 = wait_gobgp(ext, "ipv6-unicast", want["ipv6-unicast"] | ours["ipv6-unicast"])
    for p in want["ipv4-unicast"] - set(no_export):
        r = ext4[p]
        assert r["as_path"] == [PETREL_ASN, BIRD_ASN], (p, r)
        assert r["next_hop"] == me.v4, (p, r)
        assert r["med"] is None, (p, r)                      # not passed between ASes
        assert r["local_pref"] is None, (p, r)
        assert r["communities"] == [COMMUNITY_65002_7], (p, r)
    for p in want["ipv6-unicast"]:
        r = ext6[p]
        assert r["as_path"] == [PETREL_ASN, BIRD_ASN], (p, r)
        assert r["next_hop"] == me.v6, (p, r)
    o = ext4["192.0.2.0/24"]
    assert (o["as_path"], o["next_hop"], o["med"]) == ([PETREL_ASN], me.v4, 5), o
    # Petrel's own count of what each peer holds from it.
    peers = {p["name"]: p for p in petrel.api("/api/peers")["peers"]}
    adv = peers["ext"]["update_prefixes"]
    assert adv["ipv4-unicast"]["advertised"] == len(ext4), adv
    assert adv["ipv6-unicast"]["advertised"] == len(ext6), adv
    # BIRD's routes are the only ones to its prefixes: all best.
    assert peers["bird"]["update_prefixes"]["ipv4-unicast"]["best"] == N4, peers["bird"]["update_prefixes"]
    assert ext6["2001:db8:ffff::/48"]["communities"] == [PETREL_ASN << 16 | 9]

    # Internal: everything (NO_EXPORT too), path and next hop as BIRD sent them.
    int4 = wait_gobgp(inn, "ipv4-unicast", want["ipv4-unicast"] | ours["ipv4-unicast"])
    wait_gobgp(inn, "ipv6-unicast", want["ipv6-unicast"] | ours["ipv6-unicast"])
    for p in want["ipv4-unicast"]:
        r = int4[p]
        assert r["as_path"] == [BIRD_ASN], (p, r)
        assert r["next_hop"] == bn.v4, (p, r)
        assert r["med"] == 50 and r["local_pref"] == 100, (p, r)
        assert r["originator_id"] is None and not r["cluster_list"], (p, r)
    assert set(int4["10.0.5.0/24"]["communities"]) == {COMMUNITY_65002_7, NO_EXPORT}
    o = int4["192.0.2.0/24"]
    assert (o["as_path"], o["next_hop"], o["local_pref"]) == ([], me.v4, 100), o

    # BIRD gets ours and nothing of its own back.
    L.wait_until(lambda: bird.received_prefixes("ipv4-unicast") == ours["ipv4-unicast"], 10,
                 "BIRD holds our route")
    assert bird.received_prefixes("ipv6-unicast") == ours["ipv6-unicast"]
    # RFC 2545: to a peer on the same link, the global next hop and the
    # link-local one (GoBGP's JSON does not show the latter; BIRD does).
    shown = bird.birdc("show", "route", "all", "2001:db8:ffff::/48")
    assert f"BGP.next_hop: {me.v6} {me.ll}" in shown, shown

    # A withdrawal at BIRD reaches both; BIRD going away empties them of
    # its routes (ours stay).
    gone = "10.0.7.0/24"
    bird.birdc("configure")  # no-op reload first: BIRD must be responsive
    with open(bird.node.path("bird.conf")) as f:
        conf = f.read()
    with open(bird.node.path("bird.conf"), "w") as f:
        f.write(conf.replace(f"route {gone} blackhole;", ""))
    bird.birdc("configure")
    wait_gobgp(ext, "ipv4-unicast", (want["ipv4-unicast"] - set(no_export) - {gone}) | ours["ipv4-unicast"])
    wait_gobgp(inn, "ipv4-unicast", (want["ipv4-unicast"] - {gone}) | ours["ipv4-unicast"])
    bird.stop()
    wait_gobgp(ext, "ipv4-unicast", ours["ipv4-unicast"])
    wait_gobgp(inn, "ipv6-unicast", ours["ipv6-unicast"])


@pytest.mark.parametrize("client", [False, True], ids=["non-client", "rr-client"])
def test_internal_routes_reflected_only_to_clients(lab, client):
    me, fn, gi = lab.node("petrel"), lab.node("frr"), lab.node("gobgp-int")
    prefixes = ("10.9.0.0/24", "10.9.1.0/24", "2001:db8:900::/48")
    frr = L.Frr(fn, L.Session(PETREL_ASN, PETREL_ASN, me.v4, fn.v4, hold_time=HOLD,
                              announce=prefixes)).start()
    inn = L.GoBgp(gi, L.Session(PETREL_ASN, PETREL_ASN, me.v4, gi.v4, hold_time=HOLD)).start()
    extra = ("route_reflector_client = true",) if client else ()
    petrel = L.Petrel(me, [
        L.PetrelPeer("frr", fn.v4, PETREL_ASN, me.v4, hold_time=HOLD),
        L.PetrelPeer("int", gi.v4, PETREL_ASN, me.v4, hold_time=HOLD, export_policy="all", extra=extra),
    ], PETREL_ASN).start()
    frr.wait_established(30)
    inn.wait_established(30)
    want = split(prefixes)
    if not client:
        # The routes are in Petrel's table, and after a while still not
        # passed on.
        L.wait_until(lambda: (petrel.petrel_received_counts() or {}).get("frr") ==
                     {"ipv4-unicast": 2, "ipv6-unicast": 1}, 20, "FRR's routes in Petrel")
        import time
        time.sleep(2)
        assert gobgp_routes(inn, "ipv4-unicast") == {}
        assert gobgp_routes(inn, "ipv6-unicast") == {}
        return
    got = wait_gobgp(inn, "ipv4-unicast", want["ipv4-unicast"])
    for p, r in got.items():
        assert r["originator_id"] == fn.v4, (p, r)          # FRR's router id
        assert r["cluster_list"] == [me.v4], (p, r)          # ours: the router id
        assert r["as_path"] == [], (p, r)
        assert r["local_pref"] == 100, (p, r)


def stalled_session(node: L.Node, petrel_addr: str, asn: int, hold: int) -> "socket.socket":
    """A BGP session from `node` to Petrel that opens, then never reads
    again (its receive buffer is as small as the kernel allows) while it
    keeps sending KEEPALIVEs, so only Petrel's send hold timer can end it."""
    import socket
    import speaker as S
    s = node.socket(socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.bind((node.v4, 0))
    s.settimeout(10)
    for _ in range(60):
        try:
            s.connect((petrel_addr, 179))
            break
        except OSError:
            import time
            time.sleep(0.5)
    s.sendall(S.open_message(asn, node.v4, hold_time=hold, families=("ipv4-unicast",)) + S.keepalive())
    # Petrel's OPEN and KEEPALIVE, then nothing more is read.
    got = b""
    while got.count(b"\xff" * 16) < 2:
        chunk = s.recv(512)
        if not chunk:
            raise AssertionError("Petrel closed the stalled session during the handshake")
        got += chunk
    return s


def test_a_peer_that_stops_reading_holds_back_no_other(lab):
    """Petrel passes 200,000 prefixes from a feeding speaker to a reading
    speaker and to a session that stopped reading. The reading one gets
    everything while the stalled one is still up; the stalled one is then
    dropped by the send hold timer (RFC 9687)."""
    import socket
    import threading
    import time
    import speaker as S
    me, feed_n, good_n, stall_n = lab.node("petrel"), lab.node("feeder"), lab.node("good"), lab.node("stalled")
    send_hold = 45   # longer than the sanitizer build takes to pass the feed on
    petrel = L.Petrel(me, [
        L.PetrelPeer("feeder", feed_n.v4, 65010, me.v4, passive=True, families=("ipv4-unicast",),
                     hold_time=30),
        L.PetrelPeer("good", good_n.v4, 65011, me.v4, passive=True, families=("ipv4-unicast",),
                     export_policy="all", hold_time=30),
        L.PetrelPeer("stalled", stall_n.v4, 65012, me.v4, passive=True, families=("ipv4-unicast",),
                     export_policy="all", hold_time=30, extra=(f"send_hold_time = {send_hold}",)),
    ], PETREL_ASN).start()
    stalled = stalled_session(stall_n, me.v4, 65012, 30)
    stop = threading.Event()

    def keepalives():
        for _ in range(600):          # bounded: 600 x 0.2 s
            if stop.is_set():
                return
            try:
                stalled.send(S.keepalive(), socket.MSG_DONTWAIT)
            except OSError:
                pass                  # our send buffer may be full or closed
            time.sleep(0.2)
    ka = threading.Thread(target=keepalives, daemon=True)
    ka.start()
    lab.on_close(stop.set)

    # The feeding and reading sessions are not what is tested: hold times
    # long enough for the Python speakers and a sanitizer build sharing a
    # loaded machine with other tests.
    good = L.speaker(good_n, 65011, hold_time=30, families=("ipv4-unicast",))
    good.connect(me.v4, local=good_n.v4, netns=good_n.ns, timeout=15, attempts=30)
    good.start()
    good.wait_established()
    feeder = L.speaker(feed_n, 65010, hold_time=30, families=("ipv4-unicast",))
    feeder.connect(me.v4, local=feed_n.v4, netns=feed_n.ns, timeout=15, attempts=30)
    feeder.start()
    feeder.wait_established()
    n, per = 200_000, 900
    prefixes = [f"{10 + i // 65536}.{(i // 256) % 256}.{i % 256}.0/24" for i in range(n)]
    t0 = time.monotonic()
    for k in range(0, n, per):
        attrs = S.attribute(S.ORIGIN, b"\x00") + S.as_path([65010, 64512 + k // per]) + \
            S.attribute(S.NEXT_HOP, socket.inet_aton(feed_n.v4))
        feeder.send(S.update(attrs=attrs, nlri=b"".join(S.encode_prefix(p) for p in prefixes[k:k + per])))
    good.wait_routes({"ipv4-unicast": n}, timeout=120)
    t_good = time.monotonic() - t0
    # The stalled session was still up when the reading peer had it all.
    peers = {p["name"]: p for p in petrel.api("/api/peers")["peers"]}
    assert peers["stalled"]["state"].lower() == "established", (t_good, peers["stalled"]["last_error"])
    down = petrel.wait_events("session-down", peer="stalled", timeout=send_hold * 3)
    assert down[0]["cause"] == "send-hold-timer-expired", down
    stop.set()
    stalled.close()
    # And the reading peer is still there, with everything.
    assert good.counts().get("ipv4-unicast") == n
    peers = {p["name"]: p for p in petrel.api("/api/peers")["peers"]}
    assert peers["good"]["state"].lower() == "established", (peers["good"]["last_error"], good.close_reason)
    assert t_good < send_hold


def test_bird_and_frr_on_either_side(lab):
    """BIRD and FRR, both external, each announce their own prefixes to
    Petrel; each gets the other's, with Petrel's AS in front of the
    originator's and Petrel's address as next hop, and none of its own back."""
    me, bn, fn = lab.node("petrel"), lab.node("bird"), lab.node("frr")
    frr_asn = FRR_EXT_ASN
    bird_pfx = ("10.20.0.0/24", "10.20.1.0/24", "2001:db8:20::/48")
    frr_pfx = ("10.30.0.0/24", "10.30.1.0/24", "10.30.2.0/24")
    bird = start_bird(lab, bn, me, bird_pfx)
    frr = L.Frr(fn, L.Session(frr_asn, PETREL_ASN, me.v4, fn.v4, hold_time=HOLD,
                              families=("ipv4-unicast",), announce=frr_pfx)).start()
    L.Petrel(me, [
        L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD, export_policy="all"),
        L.PetrelPeer("frr", fn.v4, frr_asn, me.v4, hold_time=HOLD, export_policy="all",
                     families=("ipv4-unicast",)),
    ], PETREL_ASN).start()
    bird.wait_established(30)
    frr.wait_established(30)
    v4 = lambda ps: {p for p in ps if ":" not in p}  # noqa: E731
    L.wait_until(lambda: bird.received_prefixes("ipv4-unicast") == v4(frr_pfx), 30,
                 "BIRD holds FRR's prefixes")

    def frr_paths():
        data = json.loads(frr.vtysh("show bgp ipv4 unicast json") or "{}")
        res = {}
        for pfx, paths in data.get("routes", {}).items():
            for path in paths:
                if path.get("peerId") == me.v4:
                    res[str(ipaddress.ip_network(pfx))] = path
        return res
    got = L.wait_until(lambda: (lambda r: r if set(r) == v4(bird_pfx) else None)(frr_paths()), 30,
                       "FRR holds BIRD's prefixes")
    for p, path in got.items():
        assert path.get("path") == f"{PETREL_ASN} {BIRD_ASN}", (p, path)
        assert [h.get("ip") for h in path.get("nexthops", [])] == [me.v4], (p, path)
        assert "metric" not in path or path["metric"] == 0, (p, path)  # BIRD's MED stays behind
    # BIRD's view of FRR's routes: Petrel's AS, then FRR's.
    shown = bird.birdc("show", "route", "all", "10.30.0.0/24")
    assert f"BGP.as_path: {PETREL_ASN} {frr_asn}" in shown, shown
    assert f"BGP.next_hop: {me.v4}" in shown, shown


class AddPathGoBgp(L.GoBgp):
    """GoBGP as a collector that negotiates ADD-PATH receive (RFC 7911)."""

    def config(self) -> str:
        return super().config() + "  [neighbors.add-paths.config]\n    receive = true\n"


@pytest.mark.parametrize("max_paths", [0, 1])
def test_add_path_send_to_a_collector(lab, max_paths):
    """BIRD and FRR announce the same prefixes; a GoBGP collector that
    negotiated ADD-PATH receive gets both paths of each (or only the best
    with add_path_send_max = 1), each with its own path identifier."""
    me, bn, fn, gn = lab.node("petrel"), lab.node("bird"), lab.node("frr"), lab.node("collector")
    shared = ("10.40.0.0/24", "10.40.1.0/24")
    bird = start_bird(lab, bn, me, shared)
    frr = L.Frr(fn, L.Session(FRR_EXT_ASN, PETREL_ASN, me.v4, fn.v4, hold_time=HOLD,
                              families=("ipv4-unicast",), announce=shared)).start()
    col = AddPathGoBgp(gn, L.Session(GOBGP_EXT_ASN, PETREL_ASN, me.v4, gn.v4, hold_time=HOLD,
                                     families=("ipv4-unicast",))).start()
    L.Petrel(me, [
        L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD),
        L.PetrelPeer("frr", fn.v4, FRR_EXT_ASN, me.v4, hold_time=HOLD, families=("ipv4-unicast",)),
        L.PetrelPeer("collector", gn.v4, GOBGP_EXT_ASN, me.v4, hold_time=HOLD, families=("ipv4-unicast",),
                     export_policy="all",
                     extra=('add_path = { "ipv4-unicast" = "send" }', f"add_path_send_max = {max_paths}")),
    ], PETREL_ASN).start()
    for p in (bird, frr, col):
        p.wait_established(30)
    want_paths = 2 if max_paths == 0 else 1

    def paths():
        out = col.gobgp("neighbor", col._nbr(), "adj-in", "-a", "ipv4", "-j", check=False)
        data = json.loads(out or "{}") or {}
        res: dict[str, list[tuple[int, ...]]] = {}
        for prefix, ps in data.items():
            for path in ps if isinstance(ps, list) else [ps]:
                asns: list[int] = []
                for a in path.get("attrs", []):
                    if a.get("type") == 2:
                        for seg in a.get("as_paths", []):
                            asns += seg.get("asns", [])
                res.setdefault(str(ipaddress.ip_network(prefix)), []).append(tuple(asns))
        return res
    got = L.wait_until(lambda: (lambda r: r if set(r) == set(shared) and
                                all(len(v) == want_paths for v in r.values()) else None)(paths()),
                       30, f"the collector holds {want_paths} path(s) per prefix")
    # GoBGP's JSON does not show path identifiers, but it keeps one path per
    # (neighbour, prefix, identifier): two paths from Petrel for one prefix
    # mean two identifiers.
    for prefix, ps in got.items():
        sources = {asns[1] for asns in ps}
        assert all(asns[0] == PETREL_ASN for asns in ps), (prefix, ps)
        if want_paths == 2:
            assert sources == {BIRD_ASN, FRR_EXT_ASN}, (prefix, ps)
        else:
            # the best: the paths tie down to the router id, BIRD's
            # 198.18.0.2 against FRR's 198.18.0.3
            assert sources == {BIRD_ASN}, (prefix, ps)
