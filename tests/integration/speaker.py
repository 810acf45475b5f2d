#!/usr/bin/env python3
"""A minimal scripted BGP-4 speaker for tests (RFC 4271, 4760, 6793).

It opens a session (OPEN with the 4-octet AS and multiprotocol
capabilities, then KEEPALIVEs), sends UPDATEs built from prefixes or any raw
bytes at all (for the malformed UPDATEs of RFC 7606 tests), and records
everything it receives: every message with its arrival time, the
NOTIFICATION (code, subcode, data), and the routes the peer announced and
withdrew per family. It is our own code, written from the RFCs.

Use it in-process (`Speaker(...).connect(...)`, with `netns=` to make its
socket inside a lab namespace) or from the command line (see main()).
"""

from __future__ import annotations

import argparse
import ctypes
import ipaddress
import os
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

MARKER = b"\xff" * 16
HEADER_LEN = 19
MAX_LEN = 4096

OPEN, UPDATE, NOTIFICATION, KEEPALIVE, ROUTE_REFRESH = 1, 2, 3, 4, 5
TYPE_NAMES = {OPEN: "OPEN", UPDATE: "UPDATE", NOTIFICATION: "NOTIFICATION",
              KEEPALIVE: "KEEPALIVE", ROUTE_REFRESH: "ROUTE-REFRESH"}

AS_TRANS = 23456
AFI_IPV4, AFI_IPV6, SAFI_UNICAST = 1, 2, 1
FAMILY_AFI = {"ipv4-unicast": (AFI_IPV4, SAFI_UNICAST),
              "ipv6-unicast": (AFI_IPV6, SAFI_UNICAST)}
AFI_FAMILY = {v: k for k, v in FAMILY_AFI.items()}

# capability codes (RFC 5492 registry)
CAP_MP, CAP_ROUTE_REFRESH, CAP_AS4 = 1, 2, 65
CAP_ENHANCED_ROUTE_REFRESH = 70   # RFC 7313
# ROUTE-REFRESH message subtypes (RFC 7313 section 3)
RR_REQUEST, RR_BORR, RR_EORR = 0, 1, 2
CAP_EXTENDED_MESSAGE, CAP_ADD_PATH = 6, 69       # RFC 8654, RFC 7911
ADD_PATH_RECEIVE, ADD_PATH_SEND, ADD_PATH_BOTH = 1, 2, 3

# path attribute type codes and flags
ORIGIN, AS_PATH, NEXT_HOP, MED, LOCAL_PREF = 1, 2, 3, 4, 5
COMMUNITIES, MP_REACH_NLRI, MP_UNREACH_NLRI, AS4_PATH = 8, 14, 15, 17
F_OPTIONAL, F_TRANSITIVE, F_PARTIAL, F_EXTENDED = 0x80, 0x40, 0x20, 0x10
AS_SET, AS_SEQUENCE = 1, 2

# NOTIFICATION codes (RFC 4271 section 4.5) and Cease subcodes (RFC 4486)
ERR_HEADER, ERR_OPEN, ERR_UPDATE, ERR_HOLD, ERR_FSM, ERR_CEASE = 1, 2, 3, 4, 5, 6
CEASE_NAMES = {1: "Maximum Number of Prefixes Reached", 2: "Administrative Shutdown",
               3: "Peer De-configured", 4: "Administrative Reset",
               5: "Connection Rejected", 6: "Other Configuration Change",
               7: "Connection Collision Resolution", 8: "Out of Resources",
               9: "Hard Reset", 10: "BFD Down"}
CODE_NAMES = {1: "Message Header Error", 2: "OPEN Message Error",
              3: "UPDATE Message Error", 4: "Hold Timer Expired",
              5: "Finite State Machine Error", 6: "Cease"}


# --------------------------------------------------------------------------
# encoding


def message(msg_type: int, body: bytes = b"", length: Optional[int] = None,
            marker: bytes = MARKER) -> bytes:
    """A whole BGP message; `length`/`marker` may be set to wrong values."""
    n = HEADER_LEN + len(body) if length is None else length
    return marker + struct.pack("!HB", n, msg_type) + body


def keepalive() -> bytes:
    return message(KEEPALIVE)


def notification(code: int, subcode: int = 0, data: bytes = b"") -> bytes:
    return message(NOTIFICATION, bytes([code, subcode]) + data)


def capability(code: int, value: bytes = b"") -> bytes:
    return bytes([code, len(value)]) + value


def open_message(asn: int, router_id: str, hold_time: int = 9,
                 families: tuple[str, ...] = ("ipv4-unicast", "ipv6-unicast"),
                 as4: bool = True, route_refresh: bool = True,
                 extra_caps: bytes = b"", version: int = 4) -> bytes:
    caps = b""
    for fam in families:
        afi, safi = FAMILY_AFI[fam]
        caps += capability(CAP_MP, struct.pack("!HBB", afi, 0, safi))
    if route_refresh:
        caps += capability(CAP_ROUTE_REFRESH)
    if as4:
        caps += capability(CAP_AS4, struct.pack("!I", asn))
    caps += extra_caps
    params = bytes([2, len(caps)]) + caps if caps else b""
    my_as = asn if asn <= 0xFFFF else AS_TRANS
    body = struct.pack("!BHH4sB", version, my_as, hold_time,
                       ipaddress.IPv4Address(router_id).packed, len(params)) + params
    return message(OPEN, body)


def route_refresh(family: str = "ipv4-unicast", subtype: int = RR_REQUEST) -> bytes:
    """A ROUTE-REFRESH (RFC 2918; subtype per RFC 7313: 1 BoRR, 2 EoRR)."""
    afi, safi = FAMILY_AFI[family]
    return message(ROUTE_REFRESH, struct.pack("!HBB", afi, subtype, safi))


def refresh_subtypes(messages: list["Message"]) -> list[int]:
    """The subtypes of the ROUTE-REFRESH messages among `messages`, in order."""
    return [m.body[2] for m in messages if m.type == ROUTE_REFRESH and len(m.body) >= 4]


def encode_prefix(prefix: str, path_id: Optional[int] = None) -> bytes:
    """One NLRI entry; with `path_id`, preceded by it (RFC 7911 section 3)."""
    net = ipaddress.ip_network(prefix)
    nbytes = (net.prefixlen + 7) // 8
    pid = b"" if path_id is None else struct.pack("!I", path_id)
    return pid + bytes([net.prefixlen]) + net.network_address.packed[:nbytes]


def add_path_capability(modes: dict[str, int]) -> bytes:
    """The ADD-PATH capability (RFC 7911 section 4): family -> ADD_PATH_*."""
    value = b"".join(struct.pack("!HBB", *FAMILY_AFI[f], m) for f, m in modes.items())
    return capability(CAP_ADD_PATH, value)


def attribute(type_code: int, value: bytes, flags: int = F_TRANSITIVE) -> bytes:
    """One path attribute; the extended-length bit is set when needed."""
    if len(value) > 255:
        flags |= F_EXTENDED
    if flags & F_EXTENDED:
        return struct.pack("!BBH", flags, type_code, len(value)) + value
    return struct.pack("!BBB", flags, type_code, len(value)) + value


def as_path(asns: list[int], as4: bool = True, seg_type: int = AS_SEQUENCE) -> bytes:
    if not asns:
        return attribute(AS_PATH, b"")
    fmt = "!I" if as4 else "!H"
    seg = bytes([seg_type, len(asns)]) + b"".join(struct.pack(fmt, a) for a in asns)
    return attribute(AS_PATH, seg)


def update(withdrawn: bytes = b"", attrs: bytes = b"", nlri: bytes = b"") -> bytes:
    """An UPDATE from already-encoded parts (any of which may be garbage)."""
    body = struct.pack("!H", len(withdrawn)) + withdrawn + \
        struct.pack("!H", len(attrs)) + attrs + nlri
    return message(UPDATE, body)


def announce(prefixes: list[str], next_hop: str, asn: int, as4: bool = True,
             origin: int = 0, extra_attrs: bytes = b"") -> bytes:
    """An UPDATE announcing prefixes of one family (IPv6 via MP_REACH_NLRI)."""
    v6 = [p for p in prefixes if ":" in p]
    v4 = [p for p in prefixes if ":" not in p]
    if v4 and v6:
        raise ValueError("one family per UPDATE")
    attrs = attribute(ORIGIN, bytes([origin])) + as_path([asn], as4)
    if v4:
        attrs += attribute(NEXT_HOP, ipaddress.IPv4Address(next_hop).packed)
        return update(attrs=attrs + extra_attrs, nlri=b"".join(encode_prefix(p) for p in v4))
    nh = ipaddress.IPv6Address(next_hop).packed
    mp = struct.pack("!HBB", AFI_IPV6, SAFI_UNICAST, len(nh)) + nh + b"\x00" + \
        b"".join(encode_prefix(p) for p in v6)
    attrs += attribute(MP_REACH_NLRI, mp, F_OPTIONAL)
    return update(attrs=attrs + extra_attrs)


def withdraw(prefixes: list[str]) -> bytes:
    v6 = [p for p in prefixes if ":" in p]
    v4 = [p for p in prefixes if ":" not in p]
    if v4 and v6:
        raise ValueError("one family per UPDATE")
    if v4:
        return update(withdrawn=b"".join(encode_prefix(p) for p in v4))
    mp = struct.pack("!HB", AFI_IPV6, SAFI_UNICAST) + b"".join(encode_prefix(p) for p in v6)
    return update(attrs=attribute(MP_UNREACH_NLRI, mp, F_OPTIONAL))


def end_of_rib(family: str) -> bytes:
    if family == "ipv4-unicast":
        return update()
    afi, safi = FAMILY_AFI[family]
    return update(attrs=attribute(MP_UNREACH_NLRI, struct.pack("!HB", afi, safi), F_OPTIONAL))


# --------------------------------------------------------------------------
# decoding


@dataclass
class Message:
    time: float
    type: int
    body: bytes

    @property
    def name(self) -> str:
        return TYPE_NAMES.get(self.type, f"type{self.type}")

    def __repr__(self) -> str:
        return f"<{self.name} {len(self.body)}B>"


@dataclass
class Notification:
    code: int
    subcode: int
    data: bytes = b""
    sent: bool = False          # True: we sent it; False: we received it

    @property
    def text(self) -> str:
        name = CODE_NAMES.get(self.code, f"code {self.code}")
        sub = CEASE_NAMES.get(self.subcode, str(self.subcode)) if self.code == ERR_CEASE \
            else str(self.subcode)
        extra = ""
        if self.code == ERR_CEASE and self.subcode in (2, 4) and self.data:
            n = self.data[0]   # RFC 9003 shutdown communication
            extra = f" ({self.data[1:1 + n].decode('utf-8', 'replace')!r})"
        return f"{name} / {sub}{extra}"

    def __repr__(self) -> str:
        return f"<NOTIFICATION {self.code}/{self.subcode} {self.text} data={self.data.hex()}>"


@dataclass
class PeerOpen:
    version: int
    asn: int
    hold_time: int
    router_id: str
    capabilities: list[tuple[int, bytes]]

    def families(self) -> set[str]:
        res = set()
        for code, val in self.capabilities:
            if code == CAP_MP and len(val) == 4:
                afi, _, safi = struct.unpack("!HBB", val)
                if (afi, safi) in AFI_FAMILY:
                    res.add(AFI_FAMILY[(afi, safi)])
        return res

    @property
    def as4(self) -> bool:
        return any(c == CAP_AS4 for c, _ in self.capabilities)


def parse_open(body: bytes) -> PeerOpen:
    version, my_as, hold, rid, plen = struct.unpack("!BHH4sB", body[:10])
    params = body[10:10 + plen]
    caps = []
    i = 0
    while i + 2 <= len(params):
        ptype, pl = params[i], params[i + 1]
        pv = params[i + 2:i + 2 + pl]
        i += 2 + pl
        if ptype != 2:
            continue
        j = 0
        while j + 2 <= len(pv):
            code, cl = pv[j], pv[j + 1]
            caps.append((code, pv[j + 2:j + 2 + cl]))
            j += 2 + cl
    asn = my_as
    for code, val in caps:
        if code == CAP_AS4 and len(val) == 4:
            asn = struct.unpack("!I", val)[0]
    return PeerOpen(version, asn, hold, str(ipaddress.IPv4Address(rid)), caps)


def decode_prefixes(data: bytes, v6: bool) -> list[str]:
    res = []
    i = 0
    width = 16 if v6 else 4
    while i < len(data):
        plen = data[i]
        n = (plen + 7) // 8
        raw = data[i + 1:i + 1 + n].ljust(width, b"\x00")
        i += 1 + n
        addr = ipaddress.IPv6Address(raw) if v6 else ipaddress.IPv4Address(raw)
        res.append(str(ipaddress.ip_network(f"{addr}/{plen}", strict=False)))
    return res


@dataclass
class ParsedUpdate:
    withdrawn: dict[str, list[str]] = field(default_factory=dict)
    announced: dict[str, list[str]] = field(default_factory=dict)
    attrs: dict[int, bytes] = field(default_factory=dict)
    next_hop: dict[str, list[str]] = field(default_factory=dict)
    end_of_rib: Optional[str] = None


def parse_update(body: bytes) -> ParsedUpdate:
    u = ParsedUpdate()
    wlen = struct.unpack("!H", body[:2])[0]
    w = body[2:2 + wlen]
    alen = struct.unpack("!H", body[2 + wlen:4 + wlen])[0]
    attrs = body[4 + wlen:4 + wlen + alen]
    nlri = body[4 + wlen + alen:]
    if w:
        u.withdrawn["ipv4-unicast"] = decode_prefixes(w, False)
    if nlri:
        u.announced["ipv4-unicast"] = decode_prefixes(nlri, False)
    i = 0
    while i + 3 <= len(attrs):
        flags, code = attrs[i], attrs[i + 1]
        if flags & F_EXTENDED:
            ln = struct.unpack("!H", attrs[i + 2:i + 4])[0]
            val = attrs[i + 4:i + 4 + ln]
            i += 4 + ln
        else:
            ln = attrs[i + 2]
            val = attrs[i + 3:i + 3 + ln]
            i += 3 + ln
        u.attrs[code] = val
        if code == NEXT_HOP and len(val) == 4:
            u.next_hop["ipv4-unicast"] = [str(ipaddress.IPv4Address(val))]
        elif code == MP_REACH_NLRI and len(val) >= 5:
            afi, safi, nhl = struct.unpack("!HBB", val[:4])
            fam = AFI_FAMILY.get((afi, safi))
            nh = val[4:4 + nhl]
            rest = val[4 + nhl + 1:]
            if fam:
                v6 = afi == AFI_IPV6
                u.announced[fam] = u.announced.get(fam, []) + decode_prefixes(rest, v6)
                hops = []
                for k in range(0, len(nh) - len(nh) % 4, 16 if len(nh) >= 16 else 4):
                    chunk = nh[k:k + (16 if len(nh) >= 16 else 4)]
                    hops.append(str(ipaddress.ip_address(chunk)))
                u.next_hop[fam] = hops
        elif code == MP_UNREACH_NLRI and len(val) >= 3:
            afi, safi = struct.unpack("!HB", val[:3])
            fam = AFI_FAMILY.get((afi, safi))
            if fam:
                pfx = decode_prefixes(val[3:], afi == AFI_IPV6)
                if pfx:
                    u.withdrawn[fam] = u.withdrawn.get(fam, []) + pfx
                elif len(attrs) == 3 + len(val) and not w and not nlri:
                    u.end_of_rib = fam
    if not w and not attrs and not nlri:
        u.end_of_rib = "ipv4-unicast"
    return u


# --------------------------------------------------------------------------
# the speaker

_CLONE_NEWNET = 0x40000000


def socket_in_netns(ns: Optional[str], family: int) -> socket.socket:
    """A TCP socket made inside network namespace `ns` (None: this one)."""
    if not ns:
        return socket.socket(family, socket.SOCK_STREAM)
    libc = ctypes.CDLL(None, use_errno=True)
    with open(f"/run/netns/{ns}", "rb") as target, \
            open("/proc/thread-self/ns/net", "rb") as home:
        if libc.setns(target.fileno(), _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {ns}")
        try:
            return socket.socket(family, socket.SOCK_STREAM)
        finally:
            if libc.setns(home.fileno(), _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")


def _sockaddr(addr: str, port: int, ifname: Optional[str]):
    ip = ipaddress.ip_address(addr)
    if ip.version == 4:
        return socket.AF_INET, (addr, port)
    if ip.is_link_local and not ifname:
        raise ValueError("a link-local address needs an interface")
    return socket.AF_INET6, (addr, port, 0, 0)   # the caller sets the scope


class Speaker:
    """One BGP session, driven by the test; a reader thread records input.

    After connect() or accept(), start() sends OPEN; the reader answers the
    peer's OPEN with KEEPALIVE, marks the session Established on the peer's
    first KEEPALIVE after that, and from then on sends KEEPALIVEs every
    hold_time/3 seconds (unless auto_keepalive is False). If nothing arrives
    for the negotiated hold time it records hold_expired, sends
    NOTIFICATION 4/0 and closes (enforce_hold).
    """

    def __init__(self, asn: int, router_id: str, hold_time: int = 9,
                 families: tuple[str, ...] = ("ipv4-unicast", "ipv6-unicast"),
                 as4: bool = True, auto_keepalive: bool = True,
                 enforce_hold: bool = True, log: Optional[Callable[[str], None]] = None,
                 extra_caps: bytes = b"", route_refresh: bool = True):
        self.asn = asn
        self.router_id = router_id
        self.hold_time = hold_time
        self.families = tuple(families)
        self.as4 = as4
        self.auto_keepalive = auto_keepalive
        self.enforce_hold = enforce_hold
        self.extra_caps = extra_caps
        self.route_refresh = route_refresh   # offer the capability (RFC 2918)
        # False: UPDATEs are only counted (update_count, update_bytes), not
        # kept or parsed: for floods of more than a test wants to hold
        self.record_updates = True
        self.update_count = 0
        self.update_bytes = 0
        self._read_paused = threading.Event()
        self.log = log or (lambda s: None)
        self.sock: Optional[socket.socket] = None
        self.listener: Optional[socket.socket] = None
        self.messages: list[Message] = []
        self.sent: list[bytes] = []
        self.peer_open: Optional[PeerOpen] = None
        self.notification: Optional[Notification] = None   # received
        self.sent_notification: Optional[Notification] = None
        self.routes: dict[str, dict[str, list[str]]] = {f: {} for f in FAMILY_AFI}
        self.end_of_rib: set[str] = set()
        self.hold_expired = False
        self.established = threading.Event()
        self.closed = threading.Event()
        self.close_reason = ""
        self._cond = threading.Condition()
        self._wlock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self.negotiated_hold: Optional[int] = None

    # ---- transport

    def connect(self, peer: str, port: int = 179, local: Optional[str] = None,
                netns: Optional[str] = None, ifname: Optional[str] = None,
                timeout: float = 10, attempts: int = 20) -> "Speaker":
        """Connects to the peer, retrying (bounded) while it is not listening."""
        fam, addr = _sockaddr(peer, port, ifname)
        if fam == socket.AF_INET6 and ifname:
            addr = (addr[0], addr[1], 0, self._ifindex(netns, ifname))
        deadline = time.monotonic() + timeout
        last: Exception = TimeoutError("no attempt")
        for _ in range(max(1, attempts)):
            s = socket_in_netns(netns, fam)
            s.settimeout(max(0.5, min(3.0, deadline - time.monotonic())))
            try:
                if local:
                    lfam, laddr = _sockaddr(local, 0, ifname)
                    if lfam == socket.AF_INET6 and ifname:
                        laddr = (laddr[0], 0, 0, addr[3])
                    s.bind(laddr)
                s.connect(addr)
                s.settimeout(None)
                self.sock = s
                self.log(f"connected to {peer}")
                return self
            except OSError as e:
                last = e
                s.close()
                if time.monotonic() >= deadline:
                    break
                time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
        raise TimeoutError(f"could not connect to {peer}:{port}: {last}")

    def _ifindex(self, netns: Optional[str], ifname: str) -> int:
        path = f"/sys/class/net/{ifname}/ifindex"
        if not netns:
            with open(path) as f:
                return int(f.read())
        import subprocess
        out = subprocess.run(["ip", "netns", "exec", netns, "cat", path],
                             capture_output=True, text=True, timeout=10, check=True)
        return int(out.stdout)

    def listen(self, address: str, port: int = 179, netns: Optional[str] = None,
               ifname: Optional[str] = None) -> "Speaker":
        fam, addr = _sockaddr(address, port, ifname)
        if fam == socket.AF_INET6 and ifname:
            addr = (addr[0], addr[1], 0, self._ifindex(netns, ifname))
        s = socket_in_netns(netns, fam)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(addr)
        s.listen(4)
        self.listener = s
        return self

    def accept(self, timeout: float = 20) -> tuple[str, int]:
        """Accepts one connection; returns the peer's address and port."""
        assert self.listener is not None, "listen() first"
        self.listener.settimeout(timeout)
        try:
            s, peer = self.listener.accept()
        except socket.timeout as e:
            raise TimeoutError(f"no connection within {timeout}s") from e
        s.settimeout(None)
        self.sock = s
        self.log(f"accepted from {peer[0]}")
        return peer[0], peer[1]

    def accept_session(self, timeout: float = 20, attempts: int = 5) -> None:
        """Accepts connections until one reaches Established (bounded).

        A daemon may open a first connection before its configuration is
        complete and drop it (FRR does: 'No AFI/SAFI activated'); the next
        connection is the real one.
        """
        deadline = time.monotonic() + timeout
        last = ""
        for _ in range(max(1, attempts)):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.accept(left)
            self.start()
            try:
                self.wait_established(max(0.1, deadline - time.monotonic()))
                return
            except (AssertionError, TimeoutError) as e:
                last = str(e)
                self._reset_connection()
        raise TimeoutError(f"no session reached Established within {timeout}s: {last}")

    def _reset_connection(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=3)
        self._threads.clear()
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None
        self._stop = threading.Event()
        self.messages.clear()
        self.peer_open = None
        self.notification = None
        self.routes = {f: {} for f in FAMILY_AFI}
        self.end_of_rib.clear()
        self.established = threading.Event()
        self.closed = threading.Event()
        self.close_reason = ""
        self.negotiated_hold = None

    def try_accept(self, timeout: float) -> Optional[tuple[str, int]]:
        try:
            return self.accept(timeout)
        except TimeoutError:
            return None

    # ---- session

    def start(self, send_open: bool = True) -> "Speaker":
        """Starts the reader (and sends our OPEN unless send_open is False)."""
        assert self.sock is not None
        if send_open:
            self.send(open_message(self.asn, self.router_id, self.hold_time,
                                   self.families, self.as4, route_refresh=self.route_refresh,
                                   extra_caps=self.extra_caps))
        t = threading.Thread(target=self._reader, daemon=True, name="speaker-reader")
        t.start()
        self._threads.append(t)
        return self

    SEND_TIMEOUT = 120.0   # seconds a send may wait for the peer to read

    def send(self, data: bytes) -> None:
        """Sends raw bytes: one message, several, or a fragment of one.

        The reader thread sets the socket's timeout for its own waits (a
        second or less), and a socket has one timeout for both directions:
        so this sends piece by piece and waits up to SEND_TIMEOUT in all,
        rather than failing when the peer is busy for longer than the
        reader's current wait."""
        if self.sock is None:
            raise OSError("not connected")
        view = memoryview(data)
        deadline = time.monotonic() + self.SEND_TIMEOUT
        with self._wlock:
            while view:
                try:
                    n = self.sock.send(view)
                except socket.timeout:
                    if time.monotonic() > deadline:
                        raise
                    continue
                view = view[n:]
        self.sent.append(data)

    def send_update(self, prefixes: list[str], next_hop: str, **kw) -> None:
        self.send(announce(prefixes, next_hop, self.asn, self.as4_negotiated, **kw))

    @property
    def as4_negotiated(self) -> bool:
        return self.as4 and self.peer_open is not None and self.peer_open.as4

    def _reader(self) -> None:
        buf = b""
        hold_deadline: Optional[float] = None
        next_ka: Optional[float] = None
        sock = self.sock
        assert sock is not None
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if self._read_paused.is_set():
                    # Not reading: what the peer sends waits in the socket
                    # buffers, and its silence is not ours to time out.
                    hold_deadline = None
                    if next_ka and now >= next_ka and self.auto_keepalive:
                        try:
                            self.send(keepalive())
                        except OSError as e:
                            self._set_closed(f"send failed: {e}")
                            return
                        next_ka = now + max(1.0, self.negotiated_hold / 3) \
                            if self.negotiated_hold else None
                    self._stop.wait(0.05)
                    continue
                waits = [1.0]
                if hold_deadline:
                    waits.append(hold_deadline - now)
                if next_ka:
                    waits.append(next_ka - now)
                sock.settimeout(max(0.01, min(waits)))
                try:
                    chunk = sock.recv(65536)
                    if not chunk:
                        if not self._stop.is_set():  # else close() shut the socket
                            self._set_closed("peer closed the connection")
                        return
                    buf += chunk
                except socket.timeout:
                    pass
                now = time.monotonic()
                while len(buf) >= HEADER_LEN:
                    ln, typ = struct.unpack("!HB", buf[16:19])
                    if ln < HEADER_LEN or ln > 65535:
                        self._set_closed(f"bad length {ln} from peer")
                        return
                    if len(buf) < ln:
                        break
                    body, buf = buf[HEADER_LEN:ln], buf[ln:]
                    if self.negotiated_hold:
                        hold_deadline = now + self.negotiated_hold
                    self._handle(Message(time.time(), typ, body))
                    if typ == OPEN and self.negotiated_hold and self.auto_keepalive:
                        # _handle answered the OPEN with a KEEPALIVE already
                        next_ka = now + max(1.0, self.negotiated_hold / 3)
                    if typ == NOTIFICATION:
                        self._set_closed("NOTIFICATION received")
                        return
                if self.enforce_hold and hold_deadline and now >= hold_deadline:
                    self.hold_expired = True
                    self._notify(ERR_HOLD, 0)
                    self._set_closed("hold timer expired")
                    return
                if next_ka and now >= next_ka and self.auto_keepalive:
                    try:
                        self.send(keepalive())
                    except OSError as e:
                        self._set_closed(f"send failed: {e}")
                        return
                    next_ka = now + max(1.0, self.negotiated_hold / 3) \
                        if self.negotiated_hold else None
        except OSError as e:
            if not self._stop.is_set():
                self._set_closed(f"socket error: {e}")

    def _handle(self, m: Message) -> None:
        if m.type == UPDATE:
            with self._cond:
                self.update_count += 1
                self.update_bytes += HEADER_LEN + len(m.body)
                if not self.record_updates:
                    self._cond.notify_all()
                    return
        with self._cond:
            self.messages.append(m)
            if m.type == OPEN:
                try:
                    self.peer_open = parse_open(m.body)
                    hold = min(self.hold_time, self.peer_open.hold_time)
                    self.negotiated_hold = hold if hold else None
                except (struct.error, ValueError) as e:
                    self.log(f"bad OPEN: {e}")
                self.log(f"OPEN from AS{self.peer_open.asn if self.peer_open else '?'}")
            elif m.type == KEEPALIVE:
                if self.peer_open is not None and not self.established.is_set():
                    self.established.set()
                    self.log("Established")
            elif m.type == NOTIFICATION:
                code, sub = (m.body[0], m.body[1]) if len(m.body) >= 2 else (0, 0)
                self.notification = Notification(code, sub, m.body[2:])
                self.log(f"received {self.notification!r}")
            elif m.type == UPDATE:
                try:
                    u = parse_update(m.body)
                except (struct.error, ValueError, IndexError) as e:
                    self.log(f"unparsable UPDATE: {e}")
                    u = None
                if u:
                    for fam, pfx in u.withdrawn.items():
                        for p in pfx:
                            self.routes.setdefault(fam, {}).pop(p, None)
                    for fam, pfx in u.announced.items():
                        for p in pfx:
                            self.routes.setdefault(fam, {})[p] = u.next_hop.get(fam, [])
                    if u.end_of_rib:
                        self.end_of_rib.add(u.end_of_rib)
            self._cond.notify_all()
        if m.type == OPEN and self.auto_keepalive:
            try:
                self.send(keepalive())
            except OSError:
                pass

    def _notify(self, code: int, subcode: int, data: bytes = b"") -> None:
        try:
            self.send(notification(code, subcode, data))
            self.sent_notification = Notification(code, subcode, data, sent=True)
        except OSError:
            pass

    def _set_closed(self, reason: str) -> None:
        with self._cond:
            if not self.closed.is_set():
                self.close_reason = reason
                self.closed.set()
                self.log(f"closed: {reason}")
            self._cond.notify_all()

    def pause_reading(self) -> None:
        """Stops reading from the socket (KEEPALIVEs still go out): the
        peer's sends back up, as with a slow or hostile receiver."""
        self._read_paused.set()

    def resume_reading(self) -> None:
        self._read_paused.clear()

    # ---- waiting and reading results

    def wait(self, pred: Callable[[], object], timeout: float, what: str = "") -> object:
        deadline = time.monotonic() + timeout
        with self._cond:
            for _ in range(int(timeout * 10) + 2):
                v = pred()
                if v:
                    return v
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.1))
        raise TimeoutError(f"speaker: timed out after {timeout}s waiting for {what}; "
                           f"closed={self.closed.is_set()} ({self.close_reason}) "
                           f"notification={self.notification!r} "
                           f"routes={self.counts()}")

    def wait_established(self, timeout: float = 20) -> None:
        self.wait(lambda: self.established.is_set() or self.closed.is_set(), timeout,
                  "Established")
        if not self.established.is_set():
            raise AssertionError(f"session closed before Established: {self.close_reason}; "
                                 f"notification={self.notification!r}")

    def wait_notification(self, timeout: float = 20) -> Notification:
        self.wait(lambda: self.notification is not None or self.closed.is_set(), timeout,
                  "NOTIFICATION")
        if self.notification is None:
            raise AssertionError(f"closed without NOTIFICATION: {self.close_reason}")
        return self.notification

    def wait_closed(self, timeout: float = 20) -> str:
        self.wait(lambda: self.closed.is_set(), timeout, "close")
        return self.close_reason

    def counts(self) -> dict[str, int]:
        return {f: len(r) for f, r in self.routes.items()}

    def wait_routes(self, counts: dict[str, int], timeout: float = 20) -> dict[str, int]:
        def pred():
            c = self.counts()
            return c if all(c.get(f, 0) == n for f, n in counts.items()) else None
        return self.wait(pred, timeout, f"routes {counts}")  # type: ignore[return-value]

    def received(self, msg_type: int) -> list[Message]:
        with self._cond:
            return [m for m in self.messages if m.type == msg_type]

    # ---- ending

    def close(self, code: Optional[int] = ERR_CEASE, subcode: int = 2,
              data: bytes = b"") -> None:
        """Sends a NOTIFICATION (unless code is None) and closes the socket."""
        if self.sock is not None and not self.closed.is_set() and code is not None:
            self._notify(code, subcode, data)
        self._stop.set()
        # Wakes the reader from its recv (up to 1 s otherwise: a lab of 100
        # speakers took 48 s to close them one after another).
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            t.join(timeout=3)
        for s in (self.sock, self.listener):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass
        self._set_closed(self.close_reason or "closed by test")


# --------------------------------------------------------------------------
# command line: the demo's observer


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="scripted BGP speaker (test tool)")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--connect", metavar="ADDR", help="peer address to connect to")
    g.add_argument("--listen", metavar="ADDR", help="local address to listen on")
    ap.add_argument("--local", help="local address to bind when connecting")
    ap.add_argument("--port", type=int, default=179)
    ap.add_argument("--netns", help="network namespace to make the socket in")
    ap.add_argument("--ifname", help="interface, for link-local addresses")
    ap.add_argument("--asn", type=int, required=True)
    ap.add_argument("--router-id", required=True)
    ap.add_argument("--hold-time", type=int, default=9)
    ap.add_argument("--announce", nargs="*", default=[], help="prefixes to announce")
    ap.add_argument("--next-hop4")
    ap.add_argument("--next-hop6")
    ap.add_argument("--duration", type=float, default=15,
                    help="seconds to keep the session before a Cease (bounded)")
    ap.add_argument("--expect", type=int, default=0,
                    help="stop early once this many routes have arrived")
    a = ap.parse_args(argv)

    def log(s: str) -> None:
        print(f"speaker: {s}", flush=True)

    sp = Speaker(a.asn, a.router_id, a.hold_time, log=log)
    if a.connect:
        sp.connect(a.connect, a.port, a.local, a.netns, a.ifname, timeout=30)
    else:
        sp.listen(a.listen, a.port, a.netns, a.ifname)
        sp.accept(timeout=30)
    sp.start()
    try:
        sp.wait_established(20)
        v4 = [p for p in a.announce if ":" not in p]
        v6 = [p for p in a.announce if ":" in p]
        if v4:
            sp.send_update(v4, a.next_hop4)
        if v6:
            sp.send_update(v6, a.next_hop6)
        deadline = time.monotonic() + min(a.duration, 600)
        seen = -1
        while time.monotonic() < deadline and not sp.closed.is_set():
            with sp._cond:
                snapshot = {f: dict(r) for f, r in sp.routes.items()}
            total = sum(len(r) for r in snapshot.values())
            if total != seen:
                seen = total
                for fam in sorted(snapshot):
                    for p, nh in sorted(snapshot[fam].items()):
                        print(f"  {fam:13} {p:24} via {' '.join(nh)}", flush=True)
                log(f"{total} routes received: {sp.counts()}")
            if a.expect and total >= a.expect:
                break
            time.sleep(0.5)
    finally:
        sp.close()
    return 0 if not sp.notification or sp.notification.code == ERR_CEASE else 1


if __name__ == "__main__":
    sys.exit(main())
