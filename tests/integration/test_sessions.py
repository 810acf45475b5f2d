"""Transport security and connection handling (issue 19, docs/configuration.md
"Transport security"): a silent connection from a peer's address does not
keep the real peer out; TCP MD5 (RFC 2385) with BIRD 2 and FRR, and a wrong
password never reaching OPEN; GTSM (RFC 5082) with BIRD's `ttl security`;
TCP-AO (RFC 5925) between two Petrels; accept() out of file descriptors
backs off instead of spinning.

SKIPs while the petrel binary is missing (set PETREL, or build it).
"""

from __future__ import annotations

import errno
import os
import resource
import socket
import struct
import time

import pytest

import lab as L
from conftest import require

PETREL_ASN = 65001
HOLD = 9


@pytest.fixture(autouse=True)
def _need_petrel():
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")


def start(petrel: L.Petrel) -> L.Petrel:
    try:
        return petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))


def read_until_eof(s: socket.socket, timeout: float) -> bytes:
    """Everything the other end sends until it closes (bounded in time)."""
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            chunk = s.recv(4096)
        except socket.timeout:
            break
        except ConnectionResetError:
            break
        if not chunk:
            return data
        data += chunk
    raise AssertionError(f"the connection was not closed within {timeout} s (got {data.hex()})")


def messages(data: bytes) -> list[tuple[int, bytes]]:
    """(type, body) of each BGP message in data."""
    out = []
    while len(data) >= 19:
        length, typ = struct.unpack("!HB", data[16:19])
        out.append((typ, data[19:length]))
        data = data[length:]
    return out


def messages_in(petrel: L.Petrel, name: str) -> dict[str, int]:
    p = petrel.api_peer(name) or {}
    return {k.lower(): v for k, v in p.get("messages", {}).get("in", {}).items()}


def test_silent_connection_does_not_keep_the_peer_out(lab):
    """A plain TCP connect from the peer's address that sends nothing holds
    Petrel's incoming slot in OpenSent; the real peer's connection replaces
    it (Cease / Connection Rejected on the silent one) and its session
    comes up within seconds, not after the 240 s open-hold time."""
    require("bird")
    me, bn = lab.node("petrel"), lab.node("bird")
    petrel = start(L.Petrel(me, [L.PetrelPeer("bird", bn.v4, 65002, me.v4, passive=True,
                                              hold_time=HOLD)], PETREL_ASN))
    silent = bn.socket(socket.AF_INET)
    silent.bind((bn.v4, 0))
    silent.settimeout(5)
    silent.connect((me.v4, 179))
    # Petrel took it as the peer's: its OPEN comes on it
    silent.settimeout(5)
    first = silent.recv(19)
    assert len(first) == 19 and first[18] == 1, f"expected Petrel's OPEN, got {first.hex()}"

    bird = L.Bird(bn, L.Session(65002, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD)).start()
    t0 = time.monotonic()
    bird.wait_established(15)
    took = time.monotonic() - t0
    rest = read_until_eof(silent, 5)
    msgs = messages(first + rest)
    notes = [b[:2] for t, b in msgs if t == 3]
    assert notes == [bytes([6, 5])], \
        f"silent connection got {msgs}, want one Cease / Connection Rejected"
    ev = petrel.wait_events("connection-replaced", peer="bird")
    assert ev[0]["state"] == "OpenSent", ev
    print(f"BIRD established {took:.1f} s after it started, past a silent connection")


@pytest.mark.parametrize("transport", ["v4", "v6"])
def test_md5_sessions_with_bird_and_frr(lab, transport):
    """TCP MD5: Petrel dials BIRD (the key on the dialling socket) and FRR
    dials Petrel (the key on the listener); both come up. A third peer with
    the wrong password never gets a connection through: Petrel accepts
    nothing from it and sees no OPEN, and its session stays down."""
    require("bird")
    require("frr")
    me = lab.node("petrel")
    bn, fn, wn = lab.node("bird"), lab.node("frr"), lab.node("wrong")
    here = me.addr(transport)
    secret = "petrel-md5-test"
    key = (f'password = "{secret}"',)
    peers = [
        L.PetrelPeer("bird", bn.addr(transport), 65002, here, hold_time=HOLD, extra=key),
        L.PetrelPeer("frr", fn.addr(transport), 65003, here, passive=True, hold_time=HOLD,
                     extra=key),
        L.PetrelPeer("wrong", wn.addr(transport), 65004, here, passive=True, hold_time=HOLD,
                     extra=key),
    ]
    bird = L.Bird(bn, L.Session(65002, PETREL_ASN, here, bn.addr(transport), passive=True,
                                hold_time=HOLD, password=secret)).start()
    petrel = start(L.Petrel(me, peers, PETREL_ASN))
    frr = L.Frr(fn, L.Session(65003, PETREL_ASN, here, fn.addr(transport), hold_time=HOLD,
                              password=secret)).start()
    wrong = L.Bird(wn, L.Session(65004, PETREL_ASN, here, wn.addr(transport), hold_time=HOLD,
                                 password="not-the-secret")).start()
    bird.wait_established(30)
    frr.wait_established(30)
    ups = {e["peer"]: e["direction"] for e in petrel.events("session-up")}
    assert ups.get("bird") == "outgoing" and ups.get("frr") == "incoming", ups
    # the wrong password: BIRD dials every second; give it several tries
    time.sleep(6)
    assert not wrong.state().established
    assert "wrong" not in ups
    got = messages_in(petrel, "wrong")
    assert got.get("open", 0) == 0, f"Petrel received messages from the wrong-password peer: {got}"
    # the kernel dropped its SYNs: no connection from it was ever accepted
    est = me.run(["ss", "-Htn", "state", "established", "dst", wn.addr(transport)],
                 check=False).stdout
    assert est.strip() == "", est


def test_ttl_security_with_bird(lab):
    """GTSM both ways with BIRD's `ttl security on`: Petrel dials (TTL 255,
    IP_MINTTL 255) and accepts (the listener sends its SYN-ACK with TTL 255,
    the SYN's TTL is checked). A peer one hop away whose packets arrive
    with TTL 254 (its TTL set to 254) is refused."""
    require("bird")
    me, an, pn, fn = lab.node("petrel"), lab.node("active"), lab.node("passive"), lab.node("far")
    peers = [
        L.PetrelPeer("active", an.v4, 65002, me.v4, passive=True, hold_time=HOLD,
                     extra=("ttl_security = true",)),
        L.PetrelPeer("passive", pn.v6, 65003, me.v6, hold_time=HOLD,
                     families=("ipv6-unicast",), extra=("ttl_security = true",)),
        L.PetrelPeer("far", fn.v4, 65004, me.v4, passive=True, hold_time=HOLD,
                     extra=("ttl_security = true",)),
    ]
    b_passive = L.Bird(pn, L.Session(65003, PETREL_ASN, me.v6, pn.v6, passive=True, hold_time=HOLD,
                                     families=("ipv6-unicast",), ttl_security=True)).start()
    petrel = start(L.Petrel(me, peers, PETREL_ASN))
    b_active = L.Bird(an, L.Session(65002, PETREL_ASN, me.v4, an.v4, hold_time=HOLD,
                                    ttl_security=True)).start()
    b_active.wait_established(30)
    b_passive.wait_established(30)
    # "far": a plain connect whose packets leave with TTL 254, as from a
    # host one hop further away
    s = fn.socket(socket.AF_INET)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, 254)
    s.bind((fn.v4, 0))
    s.settimeout(5)
    s.connect((me.v4, 179))
    assert read_until_eof(s, 5) == b"", "Petrel sent something on a connection from TTL 254"
    ev = petrel.wait_events("connection-refused", peer="far")
    assert ev[0]["ttl"] == "254" and ev[0]["min_ttl"] == "255", ev
    assert messages_in(petrel, "far").get("open", 0) == 0


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_accept_out_of_descriptors_backs_off(lab):
    """With its file descriptor limit reached, Petrel's accept() fails with
    EMFILE while a connection waits in the backlog: the listener rests
    instead of waking again at once, so the daemon stays nearly idle (a
    spinning loop burns a whole core), and accepts again once descriptors
    are free."""
    me, sn = lab.node("petrel"), lab.node("speaker")
    petrel = start(L.Petrel(me, [L.PetrelPeer("speaker", sn.v4, 65002, me.v4, passive=True,
                                              hold_time=HOLD)], PETREL_ASN))
    # the daemon's own pid: `ip netns exec` execs it in place
    pid = petrel.proc.pid
    time.sleep(1)
    n = fd_count(pid)
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    # the soft limit only: raising the hard one again needs CAP_SYS_RESOURCE
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (n, hard))
    s = sn.socket(socket.AF_INET)
    s.bind((sn.v4, 0))
    s.settimeout(5)
    s.connect((me.v4, 179))   # completes in the kernel; accept() cannot take it
    c0 = cpu_seconds(pid)
    time.sleep(3)
    used = cpu_seconds(pid) - c0
    fails = petrel.events("accept-failed")
    assert fails, "no accept-failed line: the limit did not bite"
    assert "Too many open files" in fails[0]["msg"], fails[0]
    print(f"CPU while out of descriptors: {used:.2f} s in 3 s; {len(fails)} accept-failed lines")
    assert used < 0.5, f"Petrel used {used:.2f} s of CPU in 3 s: the listener spins"
    # descriptors again: the waiting connection is taken (Petrel sends OPEN)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
    hdr = s.recv(19)
    assert len(hdr) == 19 and hdr[18] == 1, hdr.hex()


def kernel_has_tcp_ao() -> bool:
    """Whether the running kernel takes TCP_AO_ADD_KEY (38): ENOPROTOOPT
    when it was built without CONFIG_TCP_AO."""
    with socket.socket() as s:
        key = bytearray(288)   # struct tcp_ao_add, linux/tcp.h
        struct.pack_into("=H", key, 0, socket.AF_INET)
        key[128:138] = b"hmac(sha1)"
        key[207] = 1           # keylen
        try:
            s.setsockopt(socket.IPPROTO_TCP, 38, bytes(key))
        except OSError as e:
            return e.errno != errno.ENOPROTOOPT
    return True


def test_tcp_ao_without_kernel_support_is_a_clear_error(lab):
    """Where the kernel has no TCP-AO, `petrel run` with a tcp_ao peer stops
    at start and says why (event tcp-ao-failed), rather than run sessions
    without the protection asked for."""
    if kernel_has_tcp_ao():
        pytest.skip("the running kernel has TCP-AO")
    me, bn = lab.node("petrel"), lab.node("b")
    petrel = L.Petrel(me, [L.PetrelPeer("b", bn.v4, 65002, me.v4, hold_time=HOLD, extra=(
        'tcp_ao = { key_id = 1, password = "secret" }',))], PETREL_ASN)
    with pytest.raises(L.LabError):
        start(petrel)
    ev = petrel.events("tcp-ao-failed", peer="b")
    assert ev and "no TCP-AO" in ev[0]["msg"] and "Linux 6.7" in ev[0]["msg"], petrel.log_text()


def test_tcp_ao_between_two_petrels(lab):
    """TCP-AO (RFC 5925) Petrel to Petrel: A dials B with one master key
    tuple (A sends KeyID 1 and expects 2, B the mirror image, HMAC-SHA1),
    and the session comes up. C has B's address in A's configuration
    mirrored, but the wrong key (AES-128-CMAC): its segments are dropped,
    A reads no OPEN from it and the session stays down."""
    if not kernel_has_tcp_ao():
        pytest.skip("the running kernel has no TCP-AO (CONFIG_TCP_AO is not set)")
    an, bn, cn = lab.node("a"), lab.node("b"), lab.node("c")
    secret = "petrel-tcp-ao-test"
    a = L.Petrel(an, [
        L.PetrelPeer("b", bn.v4, 65002, an.v4, hold_time=HOLD, extra=(
            f'tcp_ao = {{ key_id = 1, rnext_key_id = 2, password = "{secret}" }}',)),
        L.PetrelPeer("c", cn.v4, 65003, an.v4, passive=True, hold_time=HOLD, extra=(
            f'tcp_ao = {{ key_id = 1, rnext_key_id = 3, algorithm = "cmac-aes128", '
            f'password = "{secret}" }}',)),
    ], 65001)
    b = L.Petrel(bn, [
        L.PetrelPeer("a", an.v4, 65001, bn.v4, passive=True, hold_time=HOLD, extra=(
            f'tcp_ao = {{ key_id = 2, rnext_key_id = 1, password = "{secret}" }}',)),
    ], 65002)
    c = L.Petrel(cn, [
        L.PetrelPeer("a", an.v4, 65001, cn.v4, hold_time=HOLD, extra=(
            'tcp_ao = { key_id = 3, rnext_key_id = 1, algorithm = "cmac-aes128", '
            'password = "wrong" }',)),
    ], 65003)
    start(b)
    start(c)
    start(a)
    up = a.wait_events("session-up", peer="b", timeout=20)
    assert up[0]["direction"] == "outgoing", up
    b.wait_events("session-up", peer="a", timeout=5)
    time.sleep(4)   # C dials every second (connect_retry 1)
    assert not a.events("session-up", peer="c") and not c.events("session-up")
    assert messages_in(a, "c").get("open", 0) == 0, messages_in(a, "c")
    assert messages_in(c, "a").get("open", 0) == 0, messages_in(c, "a")
