"""Petrel's HTTP side against a live daemon with a real peer (issue 7).

BIRD announces its sample prefixes; the Python speaker offers one of them
again over a longer path, so one prefix has two routes to explain. Then:
the JSON API (status with jemalloc's figures, peers, route queries with
their filters and paging, explain), /metrics through `promtool check
metrics`, an /api/events client that sees the speaker's session go down and
come back and a best route change, `petrel show` in the node, and the
status page in headless Chromium (peers table, charts of the last hour and
memory figures present, a screenshot saved); /api/history; the looking glass
(GET /lg) by prefix, AS path and community. Then a page of
100 peers (a speaker session each) in Chromium: its size and the time to
serve and render it, saved with a screenshot.

Skips, with the reason, when BIRD, promtool or Chromium is missing.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
import time

import pytest

import lab as L
import speaker as S
from conftest import require

PETREL_ASN = 65001
BIRD_ASN = 65002
SPEAKER_ASN = 65005
HOLD = 9
PORT = 8179
V4 = {"ipv4-unicast": 3, "ipv6-unicast": 2}
# The Extended Next Hop capability (RFC 8950 section 4, code 5): IPv4
# unicast NLRI (AFI 1, SAFI 1) with IPv6 next hops (AFI 2)
ENH_IPV4_OVER_IPV6 = S.capability(5, struct.pack("!HHH", 1, 1, 2))
SPEAKER_LL = "fe80::5"   # the link-local half of the speaker's 32-octet next hops


def mp_announce(afi: int, prefix: str, next_hops: list[str], asn: int) -> bytes:
    """An UPDATE announcing one prefix in MP_REACH_NLRI with the IPv6 next
    hop `next_hops` (one global address, or global and link-local: RFC
    2545's 32 octets)."""
    nh = b"".join(ipaddress.IPv6Address(a).packed for a in next_hops)
    mp = struct.pack("!HBB", afi, S.SAFI_UNICAST, len(nh)) + nh + b"\x00" + S.encode_prefix(prefix)
    attrs = S.attribute(S.ORIGIN, b"\x00") + S.as_path([asn]) + S.attribute(S.MP_REACH_NLRI, mp, S.F_OPTIONAL)
    return S.update(attrs=attrs)


@pytest.fixture(autouse=True)
def _petrel_built():
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")


def http_get(node: L.Node, path: str, timeout: float = 5) -> tuple[int, str, bytes]:
    """GET path from Petrel in `node`: status, content type, body."""
    import http.client

    class _Conn(http.client.HTTPConnection):
        def connect(self):
            s = node.socket(socket.AF_INET)
            s.settimeout(timeout)
            s.connect((self.host, self.port))
            self.sock = s

    conn = _Conn("127.0.0.1", PORT, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type") or "", r.read()
    finally:
        conn.close()


def get_json(node: L.Node, path: str, want: int = 200) -> dict:
    status, ctype, body = http_get(node, path)
    assert status == want, f"{path}: {status} {body[:300]!r}"
    assert ctype == "application/json", f"{path}: {ctype}"
    return json.loads(body)


class EventReader:
    """An /api/events client on a thread: records every event it reads."""

    def __init__(self, node: L.Node, query: str = ""):
        self.sock = node.socket(socket.AF_INET)
        self.sock.settimeout(1.0)
        self.sock.connect(("127.0.0.1", PORT))
        self.sock.sendall(f"GET /api/events{query} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        self.events: list[tuple[str, dict]] = []
        self.head = b""
        self.connected = threading.Event()
        self.ended = threading.Event()
        self._stop = False
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        buf = b""
        deadline = time.monotonic() + 120   # bounded, whatever happens
        while not self._stop and time.monotonic() < deadline:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if not data:
                break
            buf += data
            if not self.head and b"\r\n\r\n" in buf:
                self.head, buf = buf.split(b"\r\n\r\n", 1)
            while self.head and b"\n\n" in buf:
                block, buf = buf.split(b"\n\n", 1)
                fields = {}
                for line in block.decode(errors="replace").splitlines():
                    if line.startswith(": connected"):
                        self.connected.set()
                    if ":" in line and not line.startswith(":"):
                        k, _, v = line.partition(":")
                        fields[k.strip()] = v.strip()
                if "event" in fields:
                    self.events.append((fields["event"], json.loads(fields.get("data", "{}"))))
        self.ended.set()

    def wait(self, pred, timeout: float, what: str):
        return L.wait_until(lambda: next((e for e in self.events if pred(e)), None), timeout, what)

    def close(self):
        self._stop = True
        self.sock.close()
        self._t.join(5)


def test_http_live(lab, tmp_path):
    require("bird")
    me, bird_node, spk_node = lab.node("petrel"), lab.node("bird"), lab.node("speaker")
    petrel = L.Petrel(me, [
        L.PetrelPeer("bird", bird_node.v4, BIRD_ASN, me.v4, hold_time=HOLD),
        # extended next hop: IPv4 routes over an IPv6 next hop (RFC 8950)
        L.PetrelPeer("speaker", spk_node.v4, SPEAKER_ASN, me.v4, passive=True, hold_time=HOLD,
                     extra=('extended_next_hop = ["ipv4-unicast"]',)),
    ], PETREL_ASN, http_port=PORT)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    bird = L.Bird(bird_node, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bird_node.v4, passive=True,
                                       hold_time=HOLD, announce=L.sample_prefixes(bird_node.index))).start()
    bird.wait_established(30)

    def connect_speaker():
        sp = L.speaker(spk_node, SPEAKER_ASN, hold_time=HOLD, extra_caps=ENH_IPV4_OVER_IPV6)
        sp.connect(me.v4, local=spk_node.v4, netns=spk_node.ns, timeout=15, attempts=30)
        sp.start()
        sp.wait_established(15)
        return sp

    events = EventReader(me)
    assert events.connected.wait(5), f"no event stream: {events.head!r}"
    assert b"text/event-stream" in events.head, events.head
    only_bird = EventReader(me, "?peer=bird")
    assert only_bird.connected.wait(5)

    sp = connect_speaker()
    L.wait_until(lambda: (petrel.petrel_received_counts() or {}).get("bird") == V4, 20, "BIRD's routes in Petrel")
    bird_v4 = [p for p in L.sample_prefixes(bird_node.index) if ":" not in p]
    contested = bird_v4[0]

    # ---- /api/status: the router and jemalloc's figures (gcc build) or none
    st = get_json(me, "/api/status")
    assert st["asn"] == PETREL_ASN and st["peers"] == {"configured": 2, "established": 2}, st
    mem = st["memory"]
    if mem["allocator"] == "jemalloc":
        for k in ("allocated", "active", "metadata", "resident", "mapped", "retained"):
            assert isinstance(mem[k], int) and mem[k] > 0 or k == "retained", (k, mem)
        assert mem["active"] >= mem["allocated"] > 100_000, mem
        assert mem["background_thread"] is True, mem
    else:
        assert mem == {"allocator": None}, mem

    # ---- route queries
    got = get_json(me, f"/api/routes?prefix={contested}")
    assert [p["prefix"] for p in got["prefixes"]] == [contested], got
    assert [r["peer"] for r in got["prefixes"][0]["routes"]] == ["bird"], got
    # longest match from an address inside it
    inside = str(ipaddress.ip_network(contested)[1])
    got = get_json(me, f"/api/routes?prefix={inside}&match=longest")
    assert [p["prefix"] for p in got["prefixes"]] == [contested], got
    assert get_json(me, f"/api/routes?prefix={inside}/32")["prefixes"] == []
    # the speaker's longer path to the same prefix
    longer = S.attribute(S.ORIGIN, b"\x00") + S.as_path([SPEAKER_ASN, 64999, 64998]) + \
        S.attribute(S.NEXT_HOP, ipaddress.IPv4Address(spk_node.v4).packed)
    sp.send(S.update(attrs=longer, nlri=S.encode_prefix(contested)))
    L.wait_until(lambda: len(get_json(me, f"/api/routes?prefix={contested}")["prefixes"][0]["routes"]) == 2,
                 10, "two routes to the contested prefix")
    got = get_json(me, f"/api/routes?prefix={contested}&best=false")
    assert [r["peer"] for r in got["prefixes"][0]["routes"]] == ["speaker"], got
    got = get_json(me, f"/api/routes?prefix={contested}&peer=bird")
    assert [(r["peer"], r["best"]) for r in got["prefixes"][0]["routes"]] == [("bird", True)], got
    # explain: every path and the step that decided
    ex = get_json(me, f"/api/routes/{contested}/explain")
    assert ex["decided_by"] == "AS path length", ex
    assert [(r["peer"], r["as_path_length"]) for r in ex["routes"]] == [("bird", 1), ("speaker", 3)], ex
    step = next(s for s in ex["steps"] if s["step"] == "AS path length")
    assert step["eliminated"] == [{"peer": "speaker", "path_id": 0}], ex

    # ---- the looking glass (GET /lg): a search answered as HTML
    def lg(query: str, want: int = 200) -> str:
        status, ctype, body = http_get(me, "/lg?" + query)
        assert status == want and ctype.startswith("text/html"), (query, status, body[:300])
        return body.decode()

    def lg_rows(page: str) -> list[tuple[str, ...]]:
        """(prefix, best, peer, next hop, AS path, ..., not best: decided by) of each route."""
        return re.findall(r'<tr[^>]*><td><a [^>]*>([^<]*)</a></td>' + r"<td[^>]*>([^<]*)</td>" * 10 + "</tr>", page)
    rows = lg_rows(lg(f"by=longest&q={inside}"))
    assert [r[:5] for r in rows] == [(contested, "best", "bird", bird_node.v4, str(BIRD_ASN)),
                                     (contested, "", "speaker", spk_node.v4, f"{SPEAKER_ASN} 64999 64998")], rows
    assert rows[1][-1] == "AS path length" and rows[0][-1] == "", rows
    assert [r[:3] for r in lg_rows(lg(f"by=exact&q={contested}"))] == [(contested, "best", "bird"),
                                                                      (contested, "", "speaker")]
    assert '<p id="lg-summary">0 prefixes, 0 routes.</p>' in lg(f"by=exact&q={inside}/32")
    more = {r[0] for r in lg_rows(lg("by=more&q=198.18.0.0/15"))}
    assert set(bird_v4) <= more and all(ipaddress.ip_network(p).subnet_of(ipaddress.ip_network("198.18.0.0/15"))
                                        for p in more), more
    # an AS path expression written as for BIRD or FRR: only the speaker's route
    assert [r[:3] for r in lg_rows(lg("by=as-path&q=_64999_"))] == [(contested, "", "speaker")]
    assert {r[2] for r in lg_rows(lg(f"by=as-path&q=^{BIRD_ASN}$"))} == {"bird"}
    assert '<p id="lg-summary">0 prefixes, 0 routes.</p>' in lg("by=community&q=65002:*")
    # more matches than a page: the first 100 in prefix order, said so (the
    # search keeps only those while it walks the table)
    many = [f"10.201.{i}.0/24" for i in range(150)]
    many_attrs = S.attribute(S.ORIGIN, b"\x00") + S.as_path([SPEAKER_ASN, 64777]) + \
        S.attribute(S.NEXT_HOP, ipaddress.IPv4Address(spk_node.v4).packed)
    sp.send(S.update(attrs=many_attrs, nlri=b"".join(S.encode_prefix(p) for p in many)))
    L.wait_until(lambda: len(get_json(me, "/api/routes?peer=speaker&limit=1000")["prefixes"]) == 151, 10, "150 more prefixes")
    first = sorted(many, key=lambda p: ipaddress.ip_network(p))[:100]
    for query in ("by=as-path&q=_64777_", "by=more&q=10.201.0.0/16"):
        page = lg(query)
        assert [r[0] for r in lg_rows(page)] == first, query
        assert "(the first 100 prefixes only)" in page, query
    sp.send(S.withdraw(many))
    L.wait_until(lambda: len(get_json(me, "/api/routes?peer=speaker&limit=1000")["prefixes"]) == 1, 10, "the 150 withdrawn")
    assert 'id="lg-error"' in lg("by=as-path&q=(", 400)
    assert 'id="lg-error"' in lg("by=community&q=banana", 400)
    assert 'id="lg-error"' in lg("by=nothing&q=1", 400)
    # the whole table, paged two prefixes at a time, in prefix order, every prefix once
    seen, cursor, pages = [], None, 0
    while pages < 20:
        pages += 1
        q = "/api/routes?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = get_json(me, q)
        assert len(page["prefixes"]) <= 2
        seen += [p["prefix"] for p in page["prefixes"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    bird_all = L.sample_prefixes(bird_node.index)
    assert sorted(seen, key=lambda p: (ipaddress.ip_network(p).version, ipaddress.ip_network(p))) == seen, seen
    assert sorted(seen) == sorted(bird_all), seen
    assert [p["prefix"] for p in get_json(me, "/api/routes?peer=speaker")["prefixes"]] == [contested]
    assert get_json(me, "/api/routes?limit=0", want=400)["error"]
    assert get_json(me, "/api/routes/banana/explain", want=400)["error"]

    # ---- /metrics through promtool
    status, ctype, body = http_get(me, "/metrics")
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4"), (status, ctype)
    text = body.decode()
    for name in ("petrel_build_info", "petrel_peer_state", "petrel_peer_prefixes", "petrel_messages_total",
                 "petrel_table_routes", "petrel_attribute_sets"):
        assert f"# TYPE {name} " in text, name
    assert 'petrel_peer_prefixes{peer="bird",family="ipv4-unicast",kind="received"} 3' in text
    assert 'petrel_table_routes{family="ipv4-unicast"} 4' in text   # BIRD's 3 + the speaker's 1
    if mem["allocator"] == "jemalloc":
        assert 'petrel_memory_bytes{kind="resident"}' in text
    if shutil.which("promtool"):
        pt = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, timeout=30)
        assert pt.returncode == 0 and pt.stdout == b"" and pt.stderr == b"", (pt.stdout, pt.stderr)

    # ---- events: the speaker's session goes down and comes back; the
    # contested prefix's best route does not change when its route goes,
    # another prefix's best appears with the speaker
    sp.close(code=6, subcode=2)
    events.wait(lambda e: e[0] == "session-down" and e[1].get("peer") == "speaker", 15, "session-down event")
    sp = connect_speaker()
    events.wait(lambda e: e[0] == "session-up" and e[1].get("peer") == "speaker", 15, "session-up event")
    sp.send_update(["198.51.100.0/24"], spk_node.v4)
    ev = events.wait(lambda e: e[0] == "best-change" and e[1]["prefix"] == "198.51.100.0/24", 10,
                     "best-change event")
    assert ev[1]["best"]["peer"] == "speaker" and ev[1]["best"]["next_hop"] == spk_node.v4, ev
    assert ev[1]["family"] == "ipv4-unicast", ev
    # the peer=bird client saw none of the speaker's events, and BIRD's
    # initial routes came before it subscribed... its stream is alive
    assert all(e[1].get("peer") in (None, "bird") for e in only_bird.events), only_bird.events
    assert not only_bird.ended.is_set()
    events.close()
    only_bird.close()

    # ---- petrel show, run inside the node
    def show(*args, rc: int = 0) -> str:
        r = me.run([petrel.binary, "show", *args], check=False)
        assert r.returncode == rc, (args, r.returncode, r.stdout, r.stderr)
        return r.stdout if rc == 0 else r.stderr
    out = show("peers")
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["NAME", "ADDRESS", "AS", "STATE"], out
    assert any(line.split()[:4] == ["bird", bird_node.v4, str(BIRD_ASN), "established"] for line in lines), out
    # aligned: the STATE column starts at one offset on every line
    col = lines[0].index("STATE")
    assert all(line[col:].split()[0] in ("STATE", "established") for line in lines), out
    peers = json.loads(show("--json", "peers"))
    assert [p["name"] for p in peers["peers"]] == ["bird", "speaker"], peers
    assert "sessions: 2 established of 2 configured" in show("status")
    # the address taken from the configuration, -c before the command
    by_config = me.run([petrel.binary, "-c", petrel.conf, "show", "peers"]).stdout
    assert [line.split()[0] for line in by_config.splitlines()] == ["NAME", "bird", "speaker"], by_config
    assert "established" in show("peer", "bird")
    # refused routes show (an external peer without import refuses all,
    # RFC 8212): here one with Petrel's own AS in its path (a loop)
    looped = S.attribute(S.ORIGIN, b"\x00") + S.as_path([SPEAKER_ASN, PETREL_ASN]) + \
        S.attribute(S.NEXT_HOP, ipaddress.IPv4Address(spk_node.v4).packed)
    sp.send(S.update(attrs=looped, nlri=S.encode_prefix("203.0.113.0/24")))
    L.wait_until(lambda: get_json(me, "/api/peers/speaker")["update_prefixes"]["ipv4-unicast"]["refused"] == 1,
                 10, "the looped route counted refused")
    out = show("peers")
    head = out.splitlines()[0]
    assert head.split()[5:7] == ["ROUTES", "REFUSED"], out
    spk_line = next(line for line in out.splitlines() if line.startswith("speaker "))
    assert spk_line[head.index("REFUSED"):].split()[0] == "ipv4-unicast:1", out
    refused = [line for line in show("peer", "speaker").splitlines() if line.startswith("refused by import")]
    assert len(refused) == 1 and "ipv4-unicast:1" in refused[0].split(), refused
    out = show("route", contested)
    assert out.splitlines()[1].split()[:3] == [contested, "*", "bird"], out
    assert len(out.splitlines()) == 2, out   # the speaker's route to it went with its session
    out = show("routes", "--peer", "bird")
    assert sum(1 for line in out.splitlines()[1:] if line.split()[2] == "bird") == 5, out
    routes = json.loads(show("routes", "--json"))
    assert len(routes["prefixes"]) == 6, routes   # BIRD's 5 and the speaker's new one
    assert "no peer named" in show("peer", "nobody", rc=1)
    assert "no peer named \"nobody\"" in show("routes", "--peer", "nobody", rc=1)   # not an empty table
    err = show("--http", "127.0.0.1:1", "status", rc=1)
    assert "cannot reach the daemon's HTTP API at 127.0.0.1:1" in err, err
    assert show("bogus", rc=2)

    # ---- next hops of IPv6 routes and of IPv4 routes over IPv6 (RFC 8950)
    # BIRD's IPv6 routes (over its IPv4 session) carry one global next hop;
    # the speaker sends 32-octet ones (RFC 2545), for IPv6 and for IPv4.
    bird_v6 = [p for p in L.sample_prefixes(bird_node.index) if ":" in p]
    spk_v6, spk_v4 = "2001:db8:5::/48", "192.0.2.128/25"
    sp.send(mp_announce(S.AFI_IPV6, spk_v6, [spk_node.v6, SPEAKER_LL], SPEAKER_ASN))
    sp.send(mp_announce(S.AFI_IPV4, spk_v4, [spk_node.v6, SPEAKER_LL], SPEAKER_ASN))
    L.wait_until(lambda: all(get_json(me, f"/api/routes?prefix={p}")["prefixes"] for p in (spk_v6, spk_v4)),
                 10, "the speaker's routes over IPv6 next hops")
    for prefix, global_nh, ll in [(bird_v6[0], bird_node.v6, None), (spk_v6, spk_node.v6, SPEAKER_LL),
                                  (spk_v4, spk_node.v6, SPEAKER_LL)]:
        route = get_json(me, f"/api/routes?prefix={prefix}")["prefixes"][0]["routes"][0]
        assert (route["next_hop"], route["next_hop_link_local"]) == (global_nh, ll), route
        explained = get_json(me, f"/api/routes/{prefix}/explain")["routes"][0]
        assert (explained["next_hop"], explained["next_hop_link_local"]) == (global_nh, ll), explained
    # an IPv4 route with NEXT_HOP: that one, no link-local
    route = get_json(me, f"/api/routes?prefix={contested}")["prefixes"][0]["routes"][0]
    assert (route["next_hop"], route["next_hop_link_local"]) == (bird_node.v4, None), route

    def next_hop_cells(out: str) -> dict[str, str]:
        """PREFIX -> its NEXT HOP cell, for each line of a route table."""
        head, *rows = out.splitlines()
        start, end = head.index("NEXT HOP"), head.index("AS PATH")
        return {row.split()[0]: row[start:end].strip() for row in rows}
    cells = next_hop_cells(show("routes"))
    assert cells[bird_v6[0]] == bird_node.v6, cells
    assert cells[spk_v6] == f"{spk_node.v6} ({SPEAKER_LL})", cells
    assert cells[spk_v4] == f"{spk_node.v6} ({SPEAKER_LL})", cells
    assert cells[contested] == bird_node.v4, cells
    assert next_hop_cells(show("route", "2001:db8:5::1")) == {spk_v6: f"{spk_node.v6} ({SPEAKER_LL})"}

    # ---- the last hour (GET /api/history): a sample every 10 s; the
    # first one after BIRD's routes arrived holds them
    def bird_series():
        h = get_json(me, "/api/history?peer=bird")
        return h if h["peers"] and h["peers"][0]["prefixes"][-1] == sum(V4.values()) else None
    hist = L.wait_until(bird_series, 25, "a history sample with BIRD's routes")
    assert hist["interval_seconds"] == 10 and hist["capacity"] == 360, hist
    series = hist["peers"][0]
    assert series["name"] == "bird" and len(series["time"]) == len(series["prefixes"]) >= 1, series
    assert len(series["updates_in_per_second"]) == len(series["time"]), series
    assert hist["table"]["prefixes"][-1] >= sum(V4.values()), hist["table"]
    assert hist["table"]["memory_bytes"][-1] > 0, hist["table"]
    assert len(get_json(me, "/api/history")["peers"]) == 2
    get_json(me, "/api/history?peer=nobody", want=404)
    get_json(me, "/api/history?pear=bird", want=400)
    st = get_json(me, "/api/status")
    assert st["table"]["prefixes"] >= sum(V4.values()) and st["table"]["routes"] >= st["table"]["prefixes"], st

    # ---- the status page in headless Chromium
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium not installed (apt-get install chromium): the status page was not rendered")
    shot = tmp_path / "status.png"
    keep = os.environ.get("PETREL_SCREENSHOT_DIR")
    r = me.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + str(tmp_path / "c"),
                f"--screenshot={shot}", "--window-size=1200,900", f"http://127.0.0.1:{PORT}/"],
               check=False, timeout=60)
    assert shot.exists() and shot.stat().st_size > 1000, (r.stdout, r.stderr)
    dom = me.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                  "--user-data-dir=" + str(tmp_path / "c"), "--dump-dom", f"http://127.0.0.1:{PORT}/"],
                 check=False, timeout=60).stdout
    assert '<table id="peers">' in dom, dom[:2000]
    assert ">bird</a>" in dom and ">speaker</a>" in dom, dom[:2000]
    assert '<form id="lookup"' in dom and '<form id="looking-glass"' in dom, dom
    assert 'class="section"' not in dom, "kernel/RPKI sections without [kernel] or [rpki]"
    # the charts: two per peer in its row, the table's and the memory's
    bird_row = dom[dom.index(">bird</a>"):]
    bird_row = bird_row[:bird_row.index("</tr>")]
    assert bird_row.count("<svg") == 2 and "<path" in bird_row, bird_row
    assert f"prefixes: {sum(V4.values())} now" in bird_row, bird_row
    assert 'id="table-chart"' in dom and 'id="memory-chart"' in dom, dom
    if mem["allocator"] == "jemalloc":
        assert '<table id="memory">' in dom and "<td>resident</td>" in dom, dom
    else:
        assert "Not available" in dom
    # the looking glass's answer, as a person sees it
    lg_shot = tmp_path / "looking-glass.png"
    me.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + str(tmp_path / "c"),
            f"--screenshot={lg_shot}", "--window-size=1200,600", f"http://127.0.0.1:{PORT}/lg?by=more&q=198.18.0.0/15"],
           check=False, timeout=60)
    assert lg_shot.exists() and lg_shot.stat().st_size > 1000
    if keep:
        os.makedirs(keep, exist_ok=True)
        shutil.copy(shot, os.path.join(keep, "status-page.png"))
        shutil.copy(lg_shot, os.path.join(keep, "looking-glass.png"))


class _PetrelWithParts(L.Petrel):
    """Petrel with the kernel installer on (table 101 of its namespace) and
    one RPKI cache that never answers."""

    def config(self) -> str:
        return super().config() + "\n[kernel]\nenabled = true\ntable = 101\n" \
            "\n[rpki]\nreject_invalid = false\n[[rpki.cache]]\naddress = \"127.0.0.1\"\nport = 3323\n"


def test_status_page_sections(lab):
    """The status page shows the kernel and RPKI sections when those parts
    are configured (and test_http_live's daemon, without them, shows none)."""
    me = lab.node("petrel")
    petrel = _PetrelWithParts(me, [L.PetrelPeer("nobody", "198.18.0.250", 65009, me.v4, passive=True)],
                              PETREL_ASN, http_port=PORT)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    status, ctype, body = http_get(me, "/")
    page = body.decode()
    assert status == 200 and ctype.startswith("text/html"), (status, ctype)
    assert "<h2>Kernel routes</h2>" in page and '<a href="/api/kernel">' in page, page
    assert "<tr><td>table</td><td>101</td></tr>" in page, page
    assert "<h2>RPKI</h2>" in page and "<td>cache 127.0.0.1:3323</td>" in page, page
    assert "<tr><td>invalid routes rejected</td><td>no</td></tr>" in page, page


def test_status_page_hundred_peers(lab, tmp_path):
    """100 sessions (the Python speaker from 100 addresses, a prefix each):
    the status page with a chart pair per peer stays small and renders in
    headless Chromium; its size, the time to serve it and Chromium's time
    to load and render it are printed and saved beside a screenshot."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium not installed (apt-get install chromium): the status page was not rendered")
    n = 100
    me, spk_node = lab.node("petrel"), lab.node("speaker")
    addrs = [f"198.18.0.{100 + i}" for i in range(n)]
    for a in addrs:
        spk_node.run(["ip", "addr", "add", f"{a}/24", "dev", spk_node.ifname])
    petrel = L.Petrel(me, [L.PetrelPeer(f"member-{i:03}", a, 65100 + i, me.v4, passive=True, hold_time=90)
                           for i, a in enumerate(addrs)], PETREL_ASN, http_port=PORT)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    speakers = []
    for i, a in enumerate(addrs):
        sp = L.speaker(spk_node, 65100 + i, hold_time=90)
        sp.connect(me.v4, local=a, netns=spk_node.ns, timeout=15, attempts=30)
        sp.start()
        speakers.append(sp)
    for i, sp in enumerate(speakers):
        sp.wait_established(30)
        sp.send(S.announce([f"10.{i}.0.0/16"], addrs[i], 65100 + i))
    L.wait_until(lambda: get_json(me, "/api/status")["peers"]["established"] == n, 60, "100 sessions established")
    L.wait_until(lambda: all(p["prefixes"] and p["prefixes"][-1] == 1
                             for p in get_json(me, "/api/history")["peers"]), 30,
                 "a history sample with every member's prefix")

    t0 = time.monotonic()
    status, ctype, body = http_get(me, "/")
    serve_s = time.monotonic() - t0
    page = body.decode()
    assert status == 200 and ctype.startswith("text/html"), (status, ctype)
    assert page.count("<svg") == 2 * n + 2, page.count("<svg")
    assert len(body) < 400_000, f"the page of {n} peers is {len(body)} bytes"
    assert serve_s < 2, f"GET / took {serve_s:.3f} s"

    shot = tmp_path / "status-100.png"
    t0 = time.monotonic()
    r = me.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + str(tmp_path / "c"),
                f"--screenshot={shot}", "--window-size=1400,1600", f"http://127.0.0.1:{PORT}/"],
               check=False, timeout=90)
    render_s = time.monotonic() - t0
    assert shot.exists() and shot.stat().st_size > 1000, (r.stdout, r.stderr)
    dom = me.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                  "--user-data-dir=" + str(tmp_path / "c"), "--dump-dom", f"http://127.0.0.1:{PORT}/"],
                 check=False, timeout=90).stdout
    assert dom.count("<svg") == 2 * n + 2 and ">member-099</a>" in dom, dom[:2000]
    # Chromium's own start is most of render_s: it bounds the page's cost
    # from above, loosely, on a shared machine.
    assert render_s < 60, f"Chromium took {render_s:.1f} s"
    figures = {"peers": n, "page_bytes": len(body), "serve_seconds": round(serve_s, 4),
               "chromium_screenshot_seconds": round(render_s, 2)}
    print("status page with 100 peers:", json.dumps(figures))
    keep = os.environ.get("PETREL_SCREENSHOT_DIR")
    if keep:
        os.makedirs(keep, exist_ok=True)
        shutil.copy(shot, os.path.join(keep, "status-page-100-peers.png"))
        with open(os.path.join(keep, "status-page-100-peers.json"), "w") as f:
            json.dump(figures, f)
