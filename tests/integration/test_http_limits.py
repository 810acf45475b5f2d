"""Slow HTTP clients cannot lock the API out (issue 19).

Sixty-four clients from one address (127.0.0.2) open connections and send
half a request, then nothing: as many as the whole connection limit. With
the default [http] bounds (64 at once, 8 per client address, 10 s of
silence) only 8 of them hold a connection; a client from another address
(127.0.0.1) still gets /api/status at once. Before the per-address limit,
the 64 held every connection and the API answered nobody until their idle
timeout ran out.
"""
from __future__ import annotations

import json
import os
import socket
import time

import pytest

import lab as L

PETREL_ASN = 65001
PORT = 8179
SLOW = 64


@pytest.fixture(autouse=True)
def _needs():
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")


def status_from(node: L.Node, source: str, timeout: float) -> tuple[float, dict]:
    """GET /api/status from `source`: (seconds it took, the JSON)."""
    start = time.monotonic()
    s = node.socket(socket.AF_INET)
    try:
        s.settimeout(timeout)
        s.bind((source, 0))
        s.connect(("127.0.0.1", PORT))
        s.sendall(b"GET /api/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            got = s.recv(65536)
            if not got:
                break
            data += got
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    return time.monotonic() - start, json.loads(body)


def test_slow_clients_from_one_address_do_not_lock_out_the_api(lab):
    me = lab.node("petrel")
    petrel = L.Petrel(me, [], PETREL_ASN, http_port=PORT)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    slow: list[socket.socket] = []
    try:
        took, _ = status_from(me, "127.0.0.1", 5)
        assert took < 2
        for _ in range(SLOW):
            s = me.socket(socket.AF_INET)
            s.settimeout(2)
            s.bind(("127.0.0.2", 0))
            try:
                s.connect(("127.0.0.1", PORT))
                s.sendall(b"GET /api/status HTTP/1.1\r\nHost: x\r\n")  # and never the end
            except OSError:
                pass  # refused or reset: also fine
            slow.append(s)
        time.sleep(0.5)  # let the server take them all in

        # The connections the slow address holds: at most the per-address
        # limit (the others are closed at once).
        held = me.run(["ss", "-Htn", "state", "established", "src", "127.0.0.1", "sport", f"= :{PORT}",
                       "dst", "127.0.0.2"], check=False).stdout.strip().splitlines()
        print(f"{len(held)} of {SLOW} slow connections held by the server")
        assert len(held) <= 8, held

        # Another client answers at once, more than once.
        for _ in range(3):
            took, st = status_from(me, "127.0.0.1", 3)
            assert took < 1.0, took
            assert st["asn"] == PETREL_ASN
        assert petrel.alive()
    finally:
        for s in slow:
            s.close()
