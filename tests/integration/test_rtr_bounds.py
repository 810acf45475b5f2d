"""Bounds on what an RTR cache can make Petrel hold (issue 19).

A scripted RTR cache (RFC 8210, version 1) on loopback in Petrel's
namespace answers each query as the test says: a good set, a flood of
more VRPs than `rpki.max_vrps`, or a Cache Response that never ends.
Petrel must cut the flood off with an Error Report, Internal Error (1),
give up on the unfinished answer after `rpki.answer_timeout`, keep the
set it had in force throughout, and hand back the memory an abandoned
answer held. A cache that closes the connection after each answer is
asked no more than once per `rpki.notify_gap`.
"""
from __future__ import annotations

import os
import socket
import struct
import threading
import time

import pytest

import lab as L

PETREL_ASN = 65001
HTTP_PORT = 8179
CACHE_PORT = 18290
SESSION = 7


@pytest.fixture(autouse=True)
def _needs():
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")


# ---- RTR version 1 PDUs (RFC 8210 section 5)

def cache_response() -> bytes:
    return struct.pack("!BBHI", 1, 3, SESSION, 8)


def prefix4(i: int, asn: int = 64500) -> bytes:
    """The i-th IPv4 VRP: 10.0.0.0/24 + i*256 (i < 2**24), max length 24."""
    return struct.pack("!BBHIBBBBII", 1, 4, 0, 20, 1, 24, 24, 0, 0x0A000000 + (i << 8), asn)


def prefixes(n: int, asn: int = 64500) -> bytes:
    # One /24 per index; build in blocks so that millions take seconds.
    out = bytearray()
    head = struct.pack("!BBHIBBBB", 1, 4, 0, 20, 1, 24, 24, 0)
    tail = struct.pack("!I", asn)
    for i in range(n):
        out += head
        out += struct.pack("!I", (0x0A000000 + (i << 8)) & 0xFFFFFFFF)
        out += tail
    return bytes(out)


def end_of_data(serial: int) -> bytes:
    # refresh 1 s (the least RFC 8210 allows), retry 1 s, expire 600 s
    return struct.pack("!BBHIIIII", 1, 7, SESSION, 24, serial, 1, 1, 600)


def read_pdu(conn: socket.socket) -> tuple[int, bytes] | None:
    """(type, whole PDU), or None when the connection closed."""
    head = b""
    while len(head) < 8:
        got = conn.recv(8 - len(head))
        if not got:
            return None
        head += got
    (length,) = struct.unpack("!I", head[4:8])
    body = b""
    while len(body) < length - 8:
        got = conn.recv(length - 8 - len(body))
        if not got:
            return None
        body += got
    return head[1], head + body


class ScriptedCache:
    """Accepts Petrel's connections; answers every query with `self.answer`
    (bytes, or None for nothing), keeps the connection open, and records the
    Error Reports Petrel sends and when Petrel closed the connection."""

    def __init__(self, node: L.Node, port: int, accepting: bool = True):
        self.sock = node.socket(socket.AF_INET)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(4)
        self.sock.settimeout(0.5)
        self.answer: bytes | None = None
        self.close_after_answer = False
        self.errors: list[int] = []
        self.closed_by_petrel = 0
        self.queries = 0
        self.stop = False
        self.accepting = threading.Event()  # until set, connections wait in the backlog
        if accepting:  # (set here, before the thread runs: clearing it later races its accept())
            self.accepting.set()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 300  # bounded, whatever the test does
        while not self.stop and time.monotonic() < deadline:
            if not self.accepting.wait(0.5):
                continue
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self._serve(conn, deadline)

    def _serve(self, conn: socket.socket, deadline: float) -> None:
        conn.settimeout(0.5)
        with conn:
            while not self.stop and time.monotonic() < deadline:
                try:
                    pdu = read_pdu(conn)
                except socket.timeout:
                    continue
                except OSError:
                    pdu = None
                if pdu is None:
                    with self.lock:
                        self.closed_by_petrel += 1
                    return
                kind, raw = pdu
                if kind == 10:  # Error Report
                    (code,) = struct.unpack("!H", raw[2:4])
                    with self.lock:
                        self.errors.append(code)
                    continue
                if kind in (1, 2):  # Serial Query, Reset Query
                    with self.lock:
                        self.queries += 1
                        answer = self.answer
                    if answer:
                        try:
                            conn.settimeout(30)  # Petrel reads at its own pace
                            conn.sendall(answer)
                            conn.settimeout(0.5)
                        except OSError:
                            with self.lock:
                                self.closed_by_petrel += 1
                            return
                        if self.close_after_answer:
                            return

    def close(self) -> None:
        self.stop = True
        self.thread.join(5)
        self.sock.close()


class BoundsPetrel(L.Petrel):
    def __init__(self, *a, rpki_toml: str, **kw):
        super().__init__(*a, **kw)
        self.rpki_toml = rpki_toml

    def config(self) -> str:
        return (super().config() + "[rpki]\n" + self.rpki_toml +
                f'\n[[rpki.cache]]\naddress = "127.0.0.1"\nport = {CACHE_PORT}\n')


def start_or_skip(petrel: L.Petrel, cache: ScriptedCache) -> None:
    """Starts Petrel; a Petrel that cannot start here skips the test (the
    cache closed first)."""
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        cache.close()
        pytest.skip(str(e))


def vrp_count(petrel: L.Petrel) -> int:
    got = petrel.api("/api/rpki")
    assert isinstance(got, dict), got
    return got["vrps"].get("ipv4", 0) + got["vrps"].get("ipv6", 0)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_flood_past_max_vrps_and_unfinished_answer_keep_the_old_set(lab):
    me = lab.node("petrel")
    cache = ScriptedCache(me, CACHE_PORT)
    cache.answer = cache_response() + prefixes(500) + end_of_data(1)
    petrel = BoundsPetrel(me, [], PETREL_ASN, http_port=HTTP_PORT,
                          rpki_toml="max_vrps = 1000\nanswer_timeout = 3\n")
    start_or_skip(petrel, cache)
    try:
        L.wait_until(lambda: vrp_count(petrel) == 500, 15, "the first 500 VRPs")

        # ---- a flood: 5,000 VRPs against max_vrps = 1000, to the next query
        cache.answer = cache_response() + prefixes(5000, asn=64501) + end_of_data(2)
        L.wait_until(lambda: 1 in cache.errors, 15, "an Error Report, Internal Error (1)")
        assert set(cache.errors) == {1}, cache.errors
        ev = petrel.wait_events("rpki-diagnostic", code=1)
        assert "rpki.max_vrps" in ev[0]["msg"], ev
        petrel.wait_events("rpki-cache-failed", cache=f"127.0.0.1:{CACHE_PORT}")
        assert vrp_count(petrel) == 500  # the old set is still in force
        assert petrel.alive()

        # ---- an answer that starts and never ends: Cache Response, 10 VRPs
        cache.answer = cache_response() + prefixes(10, asn=64502)
        closed = cache.closed_by_petrel
        L.wait_until(lambda: any("answer_timeout" in e.get("msg", "")
                                 for e in petrel.events("rpki-cache-failed")),
                     20, "the cache failed for no complete answer within rpki.answer_timeout")
        L.wait_until(lambda: cache.closed_by_petrel > closed, 10, "Petrel closed the connection")
        assert vrp_count(petrel) == 500
        assert petrel.alive()

        # ---- and a good answer again is taken
        cache.answer = cache_response() + prefixes(600, asn=64503) + end_of_data(3)
        L.wait_until(lambda: vrp_count(petrel) == 600, 90, "the good set after the back-off")
    finally:
        cache.close()


def test_a_cache_that_closes_after_each_answer_is_asked_once_per_gap(lab):
    """A cache that asks for Refresh and Retry Intervals of 1 s and closes
    the connection after every answer: Petrel dials it again (its back-off
    starts at 1 s, and again after each answer), but asks no more than once
    per rpki.notify_gap (5 s) after an answer. Before, it asked about once
    a second, and each answer that changed a record cost a rebuild of the
    VRP table and a revalidation on the main loop."""
    me = lab.node("petrel")
    cache = ScriptedCache(me, CACHE_PORT)
    cache.answer = cache_response() + prefixes(10) + end_of_data(1)
    petrel = BoundsPetrel(me, [], PETREL_ASN, http_port=HTTP_PORT, rpki_toml="")
    start_or_skip(petrel, cache)
    try:
        L.wait_until(lambda: vrp_count(petrel) == 10, 15, "the first 10 VRPs")
        with cache.lock:
            cache.answer = cache_response() + end_of_data(1)  # nothing new: no error, no rebuild
            cache.close_after_answer = True
            before = cache.queries
        time.sleep(12)
        with cache.lock:
            asked = cache.queries - before
        # At about 5 s and 10 s after the first answer; a third at most if
        # the sanitizer build is slow to start. Before: 8 or more.
        assert 1 <= asked <= 3, asked
        assert len(petrel.events("rpki-cache-failed")) >= 1  # the closes were seen
        assert vrp_count(petrel) == 10
        assert petrel.alive()
    finally:
        cache.close()


def test_a_query_deferred_past_15_s_does_not_fail_the_cache(lab):
    """With rpki.notify_gap = 20, the first query on a new connection waits
    20 s after the last answer: the check that fails a cache silent for
    15 s after connecting must not count that wait (the cache was not
    asked), and the query then goes and is answered."""
    me = lab.node("petrel")
    cache = ScriptedCache(me, CACHE_PORT)
    cache.answer = cache_response() + prefixes(10) + end_of_data(1)
    cache.close_after_answer = True
    petrel = BoundsPetrel(me, [], PETREL_ASN, http_port=HTTP_PORT, rpki_toml="notify_gap = 20\n")
    start_or_skip(petrel, cache)
    try:
        L.wait_until(lambda: vrp_count(petrel) == 10, 15, "the first 10 VRPs")
        answered = time.monotonic()
        with cache.lock:
            cache.answer = cache_response() + end_of_data(1)
            before = cache.queries
        # Petrel redials within seconds (the close is a failure: back-off
        # from 1 s) and asks at about 20 s; the 15 s check fires before.
        L.wait_until(lambda: cache.queries > before, 35, "the deferred query")
        asked_after = time.monotonic() - answered
        assert asked_after >= 15, f"asked {asked_after:.1f}s after the answer"
        silent = [e for e in petrel.events("rpki-cache-failed") if "15 s" in e.get("msg", "")]
        assert not silent, silent
        assert vrp_count(petrel) == 10
        assert petrel.alive()
    finally:
        cache.close()


def test_memory_of_an_abandoned_answer_is_given_back(lab):
    """3 million VRPs (32 bytes each buffered, 60 MB on the wire) in an
    answer that never ends; the cache then goes. Petrel's RSS must come back
    near where it was (before: the buffers were cleared but kept their
    capacity, so the memory stayed for the life of the process)."""
    n = 3_000_000
    me = lab.node("petrel")
    cache = ScriptedCache(me, CACHE_PORT, accepting=False)  # Petrel's connection and query wait in the backlog
    cache.answer = cache_response() + prefixes(n)
    cache.close_after_answer = True  # and then the cache goes
    petrel = BoundsPetrel(me, [], PETREL_ASN, http_port=HTTP_PORT,
                          rpki_toml="")
    # In a sanitizer build (CI runs the suite on one) ASan's quarantine keeps
    # freed memory (256 MiB by default) and its allocator hands free pages
    # back only when told to: without both, the RSS would say nothing about
    # Petrel's frees. No effect on a build without ASan.
    petrel.wrapper = ["sh", "-c",
                      'ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:'
                      'allocator_release_to_os_interval_ms=200" exec "$@"', "sh"]
    start_or_skip(petrel, cache)
    try:
        pid = petrel.proc.pid
        with open(f"/proc/{pid}/comm") as f:
            assert f.read().strip() == "petrel"
        L.wait_until(lambda: petrel.events("rpki-connected"), 15, "Petrel connected to the cache")
        time.sleep(1)
        before = rss_kib(pid)
        cache.accepting.set()
        peak = before

        def gone():
            nonlocal peak
            peak = max(peak, rss_kib(pid))
            return petrel.events("rpki-cache-failed")
        L.wait_until(gone, 60, "the cache went")
        cache.answer = None
        # The flood was held while it came: all of it (~100 MB) in a plain
        # build; a sanitizer build reads slower than the first answer's 15 s
        # allow, and holds what came by then (20-30 MB; 19.9 MB once in CI).
        # 12 MB is enough to tell memory kept from memory given back below.
        grew = peak - before
        assert grew > 12_000, (before, peak)
        # The allocator hands the pages back at once (purge) or within its
        # decay time: at least four fifths of the growth.
        settled = L.wait_until(lambda: (lambda r: r if r < before + 5_000 + grew // 5 else None)(rss_kib(pid)),
                               30, f"RSS back near {before} KiB")
        print(f"RSS before {before} KiB, at the cache's end {peak} KiB, after {settled} KiB "
              f"({n} VRPs in an unfinished answer)")
        assert vrp_count(petrel) == 0
        assert petrel.alive()
    finally:
        cache.close()
