"""Petrel as a systemd Type=notify service (docs/operations.md, "Running
under systemd"), with the test in systemd's place: $NOTIFY_SOCKET is a
datagram socket the test reads, $WATCHDOG_USEC asks for keep-alives.

- READY=1 comes once BGP is listening and HTTP answers, not before;
- WATCHDOG=1 comes twice a watchdog period, from the main loop;
- a reload is RELOADING=1 then READY=1 (also when the file is bad);
- SIGINT gives STOPPING=1.
"""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest

import lab as L

WATCHDOG_USEC = 400_000


class Notifications:
    def __init__(self, path: str):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.bind(path)
        self.got: list[tuple[float, str]] = []

    def read(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.s.settimeout(max(0.01, end - time.monotonic()))
            try:
                data = self.s.recv(4096)
            except socket.timeout:
                return
            self.got.append((time.monotonic(), data.decode()))

    def wait_for(self, text: str, timeout: float) -> float:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for t, m in self.got:
                if text in m.split("\n"):
                    return t
            self.read(0.1)
        raise AssertionError(f"no {text!r} in {self.got}")

    def count(self, text: str, since: float = 0) -> int:
        return sum(1 for t, m in self.got if t >= since and text in m.split("\n"))


def test_notify_protocol(lab):
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    me, bn = lab.node("petrel"), lab.node("bird")
    note = Notifications(me.path("notify.sock"))
    bird = L.Bird(bn, L.Session(65002, 65001, me.v4, bn.v4, passive=True)).start()
    petrel = L.Petrel(me, [L.PetrelPeer("bird", bn.v4, 65002, me.v4)], 65001)
    petrel.wrapper = ["env", f"NOTIFY_SOCKET={me.path('notify.sock')}", f"WATCHDOG_USEC={WATCHDOG_USEC}"]
    petrel.start()
    ready = note.wait_for("READY=1", 10)
    # Ready only once listening: the API answered by then at the latest.
    assert petrel.api("/api/status") is not None
    assert any("STATUS=running" in m for _, m in note.got), note.got
    bird.wait_established(30)

    # Keep-alives at half the period: about 2 s / 0.2 s = 10, from the main loop.
    note.read(2.0)
    alive = note.count("WATCHDOG=1", since=ready)
    assert alive >= 6, note.got

    # A reload: RELOADING=1, then READY=1; a bad file the same (nothing changed).
    for text in (petrel.config(), petrel.config().replace("hold_time = 9", "hold_time = 2", 1)):
        with open(petrel.conf, "w") as f:
            f.write(text)
        since = time.monotonic()
        petrel.proc.send_signal(signal.SIGHUP)
        note.read(1.0)
        assert note.count("RELOADING=1", since) == 1 and note.count("READY=1", since) == 1, note.got
    assert bird.state().established

    petrel.proc.send_signal(signal.SIGINT)
    note.wait_for("STOPPING=1", 10)
    assert petrel.proc.wait(10) == 0
