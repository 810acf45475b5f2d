"""Petrel against real peers and the Python test speaker.

These tests SKIP, with the reason, while the `petrel` binary is missing
(set PETREL=/path/to/petrel, or build it: meson passes the path) or while
`petrel run` says it is not built yet. Everything else that goes wrong
(Petrel rejects the configuration, crashes, a session does not come up) is
a failure.

What they assert comes from both sides of each session: the real peer's
own view (session Established, and when Petrel stops, the NOTIFICATION it
reports), the speaker's record of every message Petrel sent, and Petrel's
own view: its JSON log lines (`petrel run --log-format json`, read back by
Petrel.events()) and its HTTP API (/api/peers, /api/status; route counts
through Petrel.petrel_received_counts()). Petrel does not announce routes
yet, so nothing asserts what the peers receive from it.
"""

from __future__ import annotations

import ipaddress
import re
import signal
import socket
import time

import pytest

import lab as L
import malformed as M
import speaker as S
from conftest import require

PETREL_ASN = 65001
HOLD = 3           # short: two hold periods pass in ~6 s
BOTH = {"ipv4-unicast": 3, "ipv6-unicast": 2}
REAL_PEERS = [("bird", 65002), ("frr", 65003), ("gobgp", 65004)]
SPEAKER_ASN = 65005

_not_ready: list[str] = []   # the first "not built yet" reason, for the rest


def start_petrel(petrel: L.Petrel) -> L.Petrel:
    if _not_ready:
        pytest.skip(_not_ready[0])
    try:
        return petrel.start()
    except L.PetrelNotReady as e:
        _not_ready.append(str(e))
        pytest.skip(str(e))


@pytest.fixture(autouse=True)
def _skip_early():
    """Skips before any peer is started once Petrel is known not to run."""
    if _not_ready:
        pytest.skip(_not_ready[0])
    import os
    binary = L.petrel_binary()
    if not os.path.exists(binary):
        pytest.skip(f"petrel binary not found at {binary} (build it, or set PETREL)")


# The RFC 9003 text the real peers are configured with (peer.shutdown_message);
# the speaker has none, so it gets a Cease without data (the default)
SHUTDOWN_TEXT = "petrel lab stops"
# The Cease each peer sends when it is stopped with SIGTERM (docs/interop.md)
PEER_CEASE = {"bird": 2, "frr": 3, "gobgp": 3}
# Which end stops first, per case: each mode and each transport sees both
PEERS_STOP_FIRST = {("petrel-active", "v4"), ("petrel-passive", "v6")}


def wait_counts(petrel: L.Petrel, expected: dict[str, dict[str, int]],
                timeout: float = 15) -> dict:
    """Waits until Petrel's /api/peers shows exactly `expected` for each
    named peer; fails naming what it holds."""
    last: list = [None]

    def pred():
        counts = petrel.petrel_received_counts()
        last[0] = counts
        return counts is not None and all(counts.get(n) == w for n, w in expected.items())
    try:
        L.wait_until(pred, timeout, "Petrel's route counts")
    except TimeoutError:
        raise AssertionError(f"/api/peers counts {last[0]}, want {expected}") from None
    return last[0]


def gobgp_ceases(peer: L.Peer) -> list[tuple[int, int, str]]:
    """(code, subcode, communicated reason) of every NOTIFICATION GoBGP logged."""
    res = []
    for line in peer.log_text().splitlines():
        if 'msg="received notification"' not in line:
            continue
        code = re.search(r"\bCode=(\d+)", line)
        sub = re.search(r"\bSubcode=(\d+)", line)
        why = re.search(r'Communicated-Reason="([^"]*)"', line)
        if code and sub:
            res.append((int(code.group(1)), int(sub.group(1)), why.group(1) if why else ""))
    return res


def assert_peer_got_shutdown(kind: str, peer: L.Peer) -> None:
    """The peer's own record says it received Petrel's Cease / Administrative
    Shutdown (6/2), with the RFC 9003 text where the peer keeps it."""
    if kind == "bird":
        # its log, not "Last error": BIRD may dial again and overwrite that
        with open(peer.node.path("bird-daemon.log"), errors="replace") as f:
            got = [ln for ln in f if "Received:" in ln]
        want = f'peer: Received: Administrative shutdown: "{SHUTDOWN_TEXT}"'
        assert len(got) == 1 and got[0].rstrip().endswith(want), \
            f"BIRD logged {got}, want one {want!r}"
    elif kind == "frr":
        nb = peer.state().raw
        got = (nb.get("lastErrorCodeSubcode"), nb.get("lastShutdownDescription"),
               nb.get("lastResetDueTo"))
        assert got == ("0602", SHUTDOWN_TEXT, "BGP Notification received"), \
            f"FRR's last reset: {got}"
    elif kind == "gobgp":
        assert gobgp_ceases(peer) == [(6, 2, SHUTDOWN_TEXT)], \
            f"GoBGP logged NOTIFICATIONs {gobgp_ceases(peer)}, want one 6/2 {SHUTDOWN_TEXT!r}"
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize("transport", ["v4", "v6"])
@pytest.mark.parametrize("mode", ["petrel-active", "petrel-passive"])
def test_petrel_sessions(lab, mode, transport):
    """Petrel with BIRD, FRR, GoBGP and the speaker at once, Petrel dialling
    (peers passive) or only listening (peers dial), over IPv4 or IPv6: each
    session comes up from the expected side with both unicast families,
    stays up over two hold-time periods, every peer's routes are counted
    exactly, and the end that stops first (Petrel, or every peer) gives the
    other side a Cease NOTIFICATION that it records."""
    for kind, _ in REAL_PEERS:
        require(kind)
    petrel_active = mode == "petrel-active"
    peers_first = (mode, transport) in PEERS_STOP_FIRST
    me = lab.node("petrel")
    nodes = {kind: lab.node(kind) for kind, _ in REAL_PEERS}
    spk_node = lab.node("speaker")

    # FRR 8.4 stops without a NOTIFICATION towards a peer that offered
    # graceful restart (it leaves that peer free to keep its routes): where
    # the peers stop first, this case is about the Ceases they send, so
    # Petrel does not offer it to FRR there.
    def no_gr(kind):
        return ("graceful_restart = false",) if peers_first and kind == "frr" else ()
    text = (f'shutdown_message = "{SHUTDOWN_TEXT}"',)
    pp = [L.PetrelPeer(kind, nodes[kind].addr(transport), asn, me.addr(transport),
                       passive=not petrel_active, hold_time=HOLD, extra=no_gr(kind) + text)
          for kind, asn in REAL_PEERS]
    pp.append(L.PetrelPeer("speaker", spk_node.addr(transport), SPEAKER_ASN,
                           me.addr(transport), passive=not petrel_active, hold_time=HOLD))
    petrel = L.Petrel(me, pp, PETREL_ASN)

    def make_peers():
        return {kind: L.PEER_KINDS[kind](nodes[kind], L.Session(
            asn, PETREL_ASN, me.addr(transport), nodes[kind].addr(transport),
            passive=petrel_active, hold_time=HOLD,
            announce=L.sample_prefixes(nodes[kind].index))).start()
            for kind, asn in REAL_PEERS}

    sp = L.speaker(spk_node, SPEAKER_ASN, hold_time=HOLD)
    if petrel_active:
        peers = make_peers()
        sp.listen(spk_node.addr(transport), netns=spk_node.ns)
        start_petrel(petrel)
        sp.accept_session(timeout=20)
    else:
        start_petrel(petrel)
        peers = make_peers()
        sp.connect(me.addr(transport), local=spk_node.addr(transport),
                   netns=spk_node.ns, timeout=20, attempts=40)
        sp.start()
        sp.wait_established(15)

    for kind, peer in peers.items():
        peer.wait_established(30)
    assert sp.peer_open is not None and sp.peer_open.asn == PETREL_ASN
    assert sp.peer_open.families() == {"ipv4-unicast", "ipv6-unicast"}
    assert sp.negotiated_hold == HOLD
    sp.send_update([p for p in L.sample_prefixes(spk_node.index) if ":" not in p], spk_node.v4)
    sp.send_update([p for p in L.sample_prefixes(spk_node.index) if ":" in p], spk_node.v6)

    # Petrel's side of each session: up once, from the side the mode says,
    # to the peer's address, with both unicast families negotiated
    direction = "outgoing" if petrel_active else "incoming"
    for name in [kind for kind, _ in REAL_PEERS] + ["speaker"]:
        node = nodes.get(name, spk_node)
        ups = petrel.events("session-up", peer=name)
        assert len(ups) == 1, f"{name}: {len(ups)} session-up lines: {ups}"
        up = ups[0]
        assert up["direction"] == direction, f"{name}: {up}"
        assert up["families"] == "ipv4-unicast,ipv6-unicast", f"{name}: {up}"
        assert up["hold_time"] == str(HOLD) and up["four_octet_as"] == "yes", f"{name}: {up}"
        host = up["remote"].rsplit(":", 1)[0].strip("[]")
        assert host == node.addr(transport), f"{name}: {up}"

    # routes: every peer's 3 IPv4 and 2 IPv6 prefixes, exactly, on Petrel's side
    wait_counts(petrel, {**{kind: BOTH for kind, _ in REAL_PEERS}, "speaker": BOTH})
    # BIRD sends End-of-RIB (FRR and GoBGP do not: no graceful restart);
    # Petrel's end-of-rib line carries the count per family
    eor = {e["family"]: int(e["prefixes"]) for e in petrel.events("end-of-rib", peer="bird")}
    assert eor == BOTH, f"end-of-rib from BIRD: {eor}"

    # the table holds BIRD's route as BIRD sent it; the speaker offers the
    # same prefix over a longer path: BIRD's stays best, and the API says
    # which step decided (GET /api/routes/{prefix}, docs/http-api.md)
    contested = [p for p in L.sample_prefixes(nodes["bird"].index) if ":" not in p][0]
    got = petrel.api(f"/api/routes/{contested}")
    assert got is not None and [r["peer"] for r in got["routes"]] == ["bird"], got
    assert got["routes"][0]["best"] is True and got["routes"][0]["lost_by"] is None, got
    path = got["routes"][0]["attributes"]["as_path"]
    assert path == [{"type": "AS_SEQUENCE", "asns": [dict(REAL_PEERS)["bird"]]}], got
    longer = S.attribute(S.ORIGIN, b"\x00") + S.as_path([SPEAKER_ASN, 64999, 64998]) + \
        S.attribute(S.NEXT_HOP, ipaddress.IPv4Address(spk_node.v4).packed)
    sp.send(S.update(attrs=longer, nlri=S.encode_prefix(contested)))
    got = L.wait_until(lambda: (lambda r: r if r and len(r["routes"]) == 2 else None)(
        petrel.api(f"/api/routes/{contested}")), 10, "two routes to the contested prefix")
    assert [(r["peer"], r["best"], r["lost_by"]) for r in got["routes"]] == \
        [("bird", True, None), ("speaker", False, "AS path length")], got
    assert got["routes"][1]["attributes"]["as_path"] == \
        [{"type": "AS_SEQUENCE", "asns": [SPEAKER_ASN, 64999, 64998]}], got
    sp.send(S.withdraw([contested]))
    L.wait_until(lambda: len((petrel.api(f"/api/routes/{contested}") or {"routes": []})["routes"]) == 1,
                 10, "the speaker's route to the contested prefix withdrawn")

    # two hold-time periods (and a bit): every session stays Established
    deadline = time.monotonic() + 2 * HOLD + 1.5
    polls = 0
    while time.monotonic() < deadline:
        polls += 1
        assert petrel.alive(), f"petrel exited:\n{petrel.log_text()[-3000:]}"
        assert not sp.closed.is_set(), \
            f"speaker session closed: {sp.close_reason} {sp.notification!r}"
        for kind, peer in peers.items():
            st = peer.state()
            assert st.established, f"{kind} left Established: {st.state}"
        time.sleep(0.4)
    assert polls >= 2 * HOLD
    kas = [m.time for m in sp.received(S.KEEPALIVE)]
    assert len(kas) >= 2, "Petrel sent fewer than two KEEPALIVEs in two hold periods"
    gaps = [b - a for a, b in zip(kas, kas[1:])]
    assert max(gaps) < HOLD, f"KEEPALIVE gaps {gaps} reach the hold time {HOLD}"
    frr = peers["frr"].state().raw
    assert frr.get("connectionsEstablished", 1) == 1, "FRR's session flapped"
    for name in [kind for kind, _ in REAL_PEERS] + ["speaker"]:
        st = petrel.api_peer(name)
        assert st is not None, f"/api/peers/{name} does not answer"
        assert (st["state"], st["established_total"]) == ("established", 1), \
            f"{name} on Petrel's side: {st['state']}, established {st['established_total']} times"
    # nothing arrived twice or was withdrawn while the sessions stayed up
    wait_counts(petrel, {**{kind: BOTH for kind, _ in REAL_PEERS}, "speaker": BOTH}, 1)
    assert petrel.events("notification-sent") == [] and \
        petrel.events("notification-received") == [], "a NOTIFICATION before shutdown"

    if peers_first:
        # every peer stops: Petrel records each one's Cease and stays up
        why = b"lab speaker stops"
        sp.close(code=S.ERR_CEASE, subcode=2, data=bytes([len(why)]) + why)
        for kind, peer in peers.items():
            peer.stop(signal.SIGTERM)
        want = {**PEER_CEASE, "speaker": 2}
        for name, sub in want.items():
            got = L.wait_until(lambda: petrel.events("notification-received", peer=name), 10,
                               f"Petrel logs {name}'s NOTIFICATION")
            assert [(e["code"], e["subcode"]) for e in got] == [("6", str(sub))], \
                f"{name}: Petrel received {got}, want Cease 6/{sub}"
        assert petrel.events("notification-received", peer="speaker")[0]["msg"].endswith(
            '"lab speaker stops"'), "the RFC 9003 text did not reach Petrel's log"
        for name in want:
            L.wait_until(lambda: (petrel.api_peer(name) or {}).get("state") != "established",
                         5, f"{name} leaves Established on Petrel's side")
        assert petrel.alive(), "Petrel exited when its peers stopped"
        assert petrel.events("notification-sent") == [], petrel.events("notification-sent")
        # each session's routes left the table with it, and the API says so
        gone = {e["peer"]: int(e["routes"]) for e in petrel.wait_events("routes-withdrawn", len(want))}
        assert gone == {name: sum(BOTH.values()) for name in want}, gone
        assert all(c == 0 for counts in petrel.petrel_received_counts().values()
                   for c in counts.values()), petrel.petrel_received_counts()
        assert petrel.stop(signal.SIGTERM) == 0, petrel.log_text()[-2000:]
        return

    # Petrel stops for good (SIGINT; SIGTERM with graceful restart on is a
    # restart, docs/graceful-restart.md): every peer gets Cease /
    # Administrative Shutdown with the text; FRR, which set RFC 8538's N bit
    # as Petrel did, gets it inside a Hard Reset (6/9), so that it drops
    # Petrel's routes at once rather than keeping them for a graceful
    # restart (and records the 6/2 inside)
    assert petrel.stop(signal.SIGINT) == 0, petrel.log_text()[-2000:]
    n = sp.wait_notification(10)
    assert (n.code, n.subcode) == (S.ERR_CEASE, 2), f"on shutdown Petrel sent {n!r}"
    # no shutdown_message for the speaker: a Cease without data (RFC 9003
    # text is optional; ExaBGP 4.2 cannot decode it)
    assert n.data == b"", f"Petrel sent the speaker shutdown data {n.data!r}, want none"
    for kind, peer in peers.items():
        L.wait_until(lambda: not peer.state().established, 10, f"{kind} leaves Established")
        assert_peer_got_shutdown(kind, peer)
    sent = {e["peer"]: (e["code"], e["subcode"]) for e in petrel.events("notification-sent")}
    assert sent == {name: ("6", "9" if name == "frr" else "2")
                    for name in [k for k, _ in REAL_PEERS] + ["speaker"]}, sent
    gone = {e["peer"]: int(e["routes"]) for e in petrel.events("routes-withdrawn")}
    assert gone == {name: sum(BOTH.values()) for name in sent}, gone


def _petrel_with_speaker(lab, hold=9, **speaker_kw):
    """Petrel (passive) in node 1, the speaker connected from node 2."""
    me, spk = lab.node("petrel"), lab.node("speaker")
    petrel = L.Petrel(me, [L.PetrelPeer("speaker", spk.v4, SPEAKER_ASN, me.v4,
                                        passive=True, hold_time=hold)], PETREL_ASN)
    start_petrel(petrel)

    def connect():
        sp = L.speaker(spk, SPEAKER_ASN, hold_time=hold, **speaker_kw)
        sp.connect(me.v4, local=spk.v4, netns=spk.ns, timeout=15, attempts=30)
        sp.start()
        return sp
    return me, spk, petrel, connect


@pytest.mark.parametrize("case", M.CASES, ids=[c.name for c in M.CASES])
def test_petrel_malformed(lab, case):
    """RFC 4271 / RFC 7606: each malformed message gets the required answer:
    a reset with the required NOTIFICATION (and Petrel goes on), or
    treat-as-withdraw (the session stays up and the route announced before
    is gone), or, for the well-formed control case, the route is taken."""
    me, spk, petrel, connect = _petrel_with_speaker(lab, hold=HOLD)  # a KEEPALIVE a second
    sp = connect()
    sp.wait_established(10)
    kind = case.outcome[0]
    target = case.outcome[1] if kind in ("withdraw", "accept") else []
    if kind == "withdraw":
        # the same prefix first, well-formed: Petrel holds it
        sp.send_update(target, spk.v4 if ":" not in target[0] else spk.v6)
        fam = L.family_of(target[0])
        wait_counts(petrel, {"speaker": {"ipv4-unicast": int(fam == "ipv4-unicast"),
                                         "ipv6-unicast": int(fam == "ipv6-unicast")}}, 5)
    sp.send(case.build(SPEAKER_ASN, spk.v4, spk.v6))
    if kind == "reset":
        n = sp.wait_notification(5)
        assert n.code == case.outcome[1] and n.subcode in case.outcome[2], \
            f"{case.name}: Petrel sent {n!r}, RFC {case.rfc} wants " \
            f"{case.outcome[1]}/{sorted(case.outcome[2])}"
        sp.wait_closed(5)
        assert petrel.alive(), "Petrel died on a malformed message"
        sent = petrel.wait_events("notification-sent", peer="speaker")
        assert [(e["code"], e["subcode"]) for e in sent] == [(str(n.code), str(n.subcode))], sent
        st = petrel.api_peer("speaker")
        assert st is not None and st["state"] != "established", st
        return
    # the session must stay up: no NOTIFICATION, KEEPALIVEs keep coming
    kas = len(sp.received(S.KEEPALIVE))
    with pytest.raises(TimeoutError):
        sp.wait_notification(2.0)
    assert not sp.closed.is_set(), f"{case.name}: session closed ({sp.close_reason})"
    assert len(sp.received(S.KEEPALIVE)) > kas, "no KEEPALIVE from Petrel after the UPDATE"
    assert petrel.alive()
    st = petrel.api_peer("speaker")
    assert st is not None, "/api/peers/speaker does not answer"
    assert (st["state"], st["established_total"]) == ("established", 1), st
    fam = L.family_of(target[0])
    held = petrel.petrel_received_counts()["speaker"][fam]
    if kind == "withdraw":
        assert st["rfc7606"] == {"treat_as_withdraw": 1, "attribute_discard": 0}, \
            f"{case.name}: RFC 7606 counters {st['rfc7606']}, want one treat-as-withdraw"
        assert held == 0, f"{case.name}: treat-as-withdraw left {held} routes"
        errs = petrel.wait_events("update-error", peer="speaker")
        assert errs and all(e["action"] == "treat-as-withdraw" for e in errs), errs
    else:
        assert st["rfc7606"] == {"treat_as_withdraw": 0, "attribute_discard": 0}, st
        assert held == 1, f"{case.name}: the route was not accepted"
        assert petrel.events("update-error") == []


def test_petrel_hold_timer_expires(lab):
    """A silent speaker gets NOTIFICATION Hold Timer Expired from Petrel."""
    me, spk, petrel, connect = _petrel_with_speaker(lab, hold=HOLD, auto_keepalive=False,
                                                    enforce_hold=False)
    sp = connect()
    sp.send(S.keepalive())   # answer Petrel's OPEN once, then stay silent
    sp.wait_established(10)
    up = time.monotonic()
    n = sp.wait_notification(HOLD + 4)
    assert (n.code, n.subcode) == (S.ERR_HOLD, 0), n
    assert time.monotonic() - up > HOLD - 1.5, "hold timer expired too early"
    down = petrel.wait_events("session-down", peer="speaker")
    assert [(e["from"], e["code"]) for e in down] == [("Established", "4")], down


def test_petrel_refuses_unconfigured_address(lab):
    """A connection from an address with no [[peer]] (over IPv4 and IPv6) is
    closed at once without a byte from Petrel, logged and counted, while
    the configured peer on the same link keeps its session."""
    me, spk, petrel, connect = _petrel_with_speaker(lab)
    good = connect()
    good.wait_established(10)
    stranger = lab.node("stranger")
    for fam, src, dst in ((socket.AF_INET, stranger.v4, me.v4),
                          (socket.AF_INET6, stranger.v6, me.v6)):
        s = stranger.socket(fam)
        s.settimeout(5)
        s.bind((src, 0))
        s.connect((dst, 179))
        try:
            got = s.recv(4096)
        except ConnectionResetError:
            got = b""
        s.close()
        assert got == b"", f"Petrel sent {got.hex()} to an unconfigured address"
        L.wait_until(lambda: [e for e in petrel.events("connection-refused")
                              if e["remote"].rsplit(":", 1)[0].strip("[]") == src],
                     5, f"connection-refused logged for {src}")
    status = petrel.api("/api/status")
    assert status is not None and status["connections_refused"] == 2, status
    assert petrel.events("session-up", peer="speaker") and \
        len(petrel.events("session-up")) == 1, petrel.events("session-up")
    time.sleep(0.5)
    assert not good.closed.is_set(), "the configured session suffered"
    st = petrel.api_peer("speaker")
    assert st["state"] == "established" and st["connections_refused"] == 0, st


@pytest.mark.parametrize("before", [["-c", "{conf}"], ["--config={conf}"], ["-s", "/nonexistent/petrel.sock"],
                                    ["-c", "{conf}", "-s", "/nonexistent/petrel.sock"]])
@pytest.mark.parametrize("asked", [["--version"], ["version"], ["--help"], ["-h"], ["help"], ["help", "check"]])
def test_petrel_global_options_before_version_and_help(tmp_path, before, asked):
    """Global options in front change nothing about --version and --help
    (an alias such as `petrel -c /etc/petrel/x.toml` then `--version`):
    the answer on stdout, exit 0, never "unknown command"."""
    import subprocess
    conf = tmp_path / "petrel.toml"
    conf.write_text('[router]\nasn = 65001\nrouter_id = "198.18.0.1"\n')
    argv = [L.petrel_binary(), *(a.format(conf=conf) for a in before), *asked]
    plain = subprocess.run([L.petrel_binary(), *asked], capture_output=True, text=True, timeout=10)
    got = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    assert (got.returncode, got.stdout) == (0, plain.stdout), (argv, got.returncode, got.stderr)
    assert "unknown command" not in got.stderr, got.stderr
    if "version" in asked[0]:
        assert re.fullmatch(r"petrel \S+\n", got.stdout), got.stdout
    else:
        assert got.stdout.startswith("usage: petrel"), got.stdout
