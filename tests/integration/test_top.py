"""`petrel top` as a person sees it (issue 25): in a tmux terminal against
a running Petrel with a BIRD peer. The screen (tmux capture-pane) shows
the peer, Established, with its prefixes and its rates; `q` quits, and
SIGTERM and Ctrl-C end it too, each time with the alternate screen left
and the terminal's modes (echo, canonical input) put back, exit status 0.

Skips, naming the package, when BIRD or tmux is missing."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

import lab as L
from conftest import require

PETREL_ASN = 65001
BIRD_ASN = 65002
PORT = 8179
RECEIVED = {"ipv4-unicast": 3, "ipv6-unicast": 2}


@pytest.fixture(autouse=True)
def _petrel_built():
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")


class Tmux:
    """A tmux server of its own (its own socket), killed with the lab."""

    def __init__(self, lab: L.Lab, name: str):
        self.socket = f"{lab.id}-{name}"
        lab.on_close(lambda: subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                                            timeout=10))

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10,
                              check=True).stdout

    def start(self, command: str) -> None:
        # A fixed size, as a terminal has; the pane stays after the shell
        # ends, so that what it left can be read.
        self.tmux("new-session", "-d", "-s", "t", "-x", "140", "-y", "30", command)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def screen_with(self, text: str) -> str | None:
        s = self.screen()
        return s if text in s else None

    def pane_pid(self) -> int:
        return int(self.tmux("display-message", "-p", "-t", "t", "#{pane_pid}").strip())


def top_script(me: L.Node, name: str) -> str:
    """A shell script that runs petrel top in Petrel's namespace, then says
    how it ended and whether echo and canonical input are on, then waits
    (bounded) so that the pane can be read."""
    path = me.path(f"top-{name}.sh")
    with open(path, "w") as f:
        # The shell itself outlives a Ctrl-C (its trap), to say how top ended.
        f.write(f"""#!/bin/sh
trap true INT
ip netns exec {me.ns} {L.petrel_binary()} top --http 127.0.0.1:{PORT} -d 0.5 -n 600
echo "top exited $?"
stty -a | tr ' ;' '\\n\\n' | grep -E -x -- '-?(icanon|echo)'
echo "modes listed"
sleep 60
""")
    os.chmod(path, 0o755)
    return path


def test_top_in_tmux(lab):
    require("bird")
    require("tmux")
    me, bird_node = lab.node("petrel"), lab.node("bird")
    petrel = L.Petrel(me, [L.PetrelPeer("bird", bird_node.v4, BIRD_ASN, me.v4)], PETREL_ASN, http_port=PORT)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    bird = L.Bird(bird_node, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bird_node.v4, passive=True,
                                       announce=L.sample_prefixes(bird_node.index))).start()
    bird.wait_established(30)
    L.wait_until(lambda: (petrel.petrel_received_counts() or {}).get("bird") == RECEIVED, 20,
                 "BIRD's routes in Petrel")

    # ---- q quits
    t = Tmux(lab, "q")
    t.start(top_script(me, "q"))

    def peer_line() -> str | None:
        for line in t.screen().splitlines():
            if line.startswith("bird ") and "established" in line:
                return line
        return None
    line = L.wait_until(peer_line, 15, "petrel top's line for BIRD")
    cells = line.split()
    # NAME ADDRESS AS STATE UPTIME PREFIXES IN/s OUT/s LAST-ERROR
    assert cells[:4] == ["bird", bird_node.v4, str(BIRD_ASN), "established"], line
    assert cells[5] == str(sum(RECEIVED.values())), line
    screen = t.screen()
    assert screen.startswith(f"petrel ") and f"AS{PETREL_ASN}" in screen, screen
    assert "sessions: 1 of 1 established" in screen and "q quits" in screen, screen
    # after a refresh, rates in place of "-"
    L.wait_until(lambda: (peer_line() or "").split()[6:8] not in ([], ["-", "-"]), 10, "the rates")
    t.tmux("send-keys", "-t", "t", "q")
    after = L.wait_until(lambda: t.screen_with("modes listed"), 10, "petrel top to quit")
    assert "top exited 0" in after, after
    assert "NAME" not in after and "bird" not in after, f"the alternate screen was left: {after}"
    assert "icanon" in after.split() and "echo" in after.split(), f"the terminal's modes are back: {after}"

    # ---- SIGTERM ends it the same way
    t2 = Tmux(lab, "term")
    t2.start(top_script(me, "term"))
    L.wait_until(lambda: t2.screen_with("bird "), 15, "petrel top's screen")
    shell = t2.pane_pid()
    children = subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True, timeout=5).stdout.split()
    assert len(children) == 1, children
    os.kill(int(children[0]), signal.SIGTERM)
    after = L.wait_until(lambda: t2.screen_with("modes listed"), 10, "petrel top to end on SIGTERM")
    assert "top exited 0" in after, after
    assert "NAME" not in after and "icanon" in after.split() and "echo" in after.split(), after

    # ---- Ctrl-C (SIGINT to the terminal's foreground) too
    t3 = Tmux(lab, "int")
    t3.start(top_script(me, "int"))
    L.wait_until(lambda: t3.screen_with("bird "), 15, "petrel top's screen")
    t3.tmux("send-keys", "-t", "t", "C-c")
    after = L.wait_until(lambda: t3.screen_with("modes listed"), 10, "petrel top to end on Ctrl-C")
    assert "top exited 0" in after, after
    assert "NAME" not in after and "icanon" in after.split() and "echo" in after.split(), after
