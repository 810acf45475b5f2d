#!/usr/bin/env python3
"""The daemon end to end into the kernel (docs/performance.md, "Kernel routes").

A BIRD peer in one lab namespace originates N IPv4 /24s (static routes,
exported with itself as next hop); Petrel in another, with `[kernel]` on,
installs them into table 100. Prints the time from Petrel's start until
BIRD's session is Established (the last of several), until Petrel's
table holds its first route (first_route_s: about the first UPDATE) and
all N (of every peer), and
until its installer has all N in the kernel (/api/kernel), checked by one
dump of the kernel's table at the end.
Needs root, BIRD and a built petrel: PETREL=BUILD/daemon/petrel.

Usage: kernel_daemon_bench.py N [--multipath] [--two-peers | --peers K] [--gateways] [--timeline]
(--timeline: every ~250 ms a line with the seconds since the session came
up, the routes in Petrel's table, the routes the kernel has acked, the
pending ones, the journal overruns so far, and the syncer thread's time
so far (/api/kernel's time_s: journal reads, plan, encode, sendmsg,
answers, waiting).)
(--perf FILE: `perf record -g` of the syncer thread (named petrel-kernel)
from the session coming up until the kernel is synced, into FILE.)
(--gateways: `nexthop_objects = false`, routes carry their gateway
instead of referring to a kernel nexthop object.)
(--multipath: `multipath = true`, so each changed prefix's routes are also
looked up for equal paths; with one peer every route stays single-path.
--two-peers: a second BIRD of the same AS announces the same N prefixes;
with --multipath, synced is when the kernel holds N routes with two next
hops each, checked by dumps of the kernel's table.
--peers K: K BIRDs of the same AS announce the same N prefixes (--two-peers
is --peers 2); synced is when Petrel's table holds all K x N routes, the
installer has nothing pending and the kernel holds N.)
"""
import glob
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

import lab as L  # noqa: E402


class KernelPetrel(L.Petrel):
    multipath = False
    gateways = False

    def config(self) -> str:
        return (super().config() + "\n[kernel]\nenabled = true\ntable = 100\nmetric = 32\n"
                + ("multipath = true\n" if self.multipath else "")
                + ("nexthop_objects = false\n" if self.gateways else ""))


def count(node: L.Node, multipath: bool = False) -> int:
    """Our routes in table 100 (multipath: those with two next hops)."""
    p = subprocess.run(["ip", "netns", "exec", node.ns, "ip", "route", "show", "table", "100",
                        "proto", "bgp"], capture_output=True, text=True)
    if multipath:
        return p.stdout.count("\n\tnexthop") // 2
    return sum(1 for line in p.stdout.splitlines() if line and not line[0].isspace())


def syncer_tid() -> int:
    """The thread id of the kernel syncer (its thread is named petrel-kernel)."""
    for comm in glob.glob("/proc/[0-9]*/task/[0-9]*/comm"):
        try:
            with open(comm) as f:
                if f.read().strip() == "petrel-kernel":
                    return int(comm.split("/")[4])
        except OSError:
            continue
    raise RuntimeError("no thread named petrel-kernel")


def first_route(petrel: L.Petrel, nodes: list, t0: float):
    """Seconds since t0 if Petrel's table holds a route of one of nodes, else None."""
    c = petrel.petrel_received_counts() or {}
    if any(c.get(bn.name, {}).get("ipv4-unicast", 0) > 0 for bn in nodes):
        return time.monotonic() - t0
    return None


def main() -> int:
    n = int(sys.argv[1])
    KernelPetrel.multipath = "--multipath" in sys.argv[2:]
    KernelPetrel.gateways = "--gateways" in sys.argv[2:]
    args = sys.argv[2:]
    peers = int(args[args.index("--peers") + 1]) if "--peers" in args else (2 if "--two-peers" in args else 1)
    two = peers > 1
    timeline = "--timeline" in args
    perf_file = args[args.index("--perf") + 1] if "--perf" in args else None
    if peers > 2 and KernelPetrel.multipath:
        sys.exit("--multipath is measured with --two-peers only (the check counts two next hops a route)")
    both = two and KernelPetrel.multipath
    prefixes = tuple(f"{10 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}.0/24" for i in range(n))
    with L.Lab() as lab:
        me = lab.node("petrel")
        nodes = [lab.node("bird")] + [lab.node(f"bird{i}") for i in range(2, peers + 1)]
        birds = [L.Bird(bn, L.Session(65002, 65001, me.v4, bn.v4, passive=True,
                                      families=("ipv4-unicast",), announce=prefixes)).start()
                 for bn in nodes]
        petrel = KernelPetrel(me, [L.PetrelPeer(bn.name, bn.v4, 65002, me.v4,
                                                families=("ipv4-unicast",)) for bn in nodes], 65001)
        t0 = time.monotonic()
        petrel.start()
        # Until every session is up, also the first route in Petrel's table
        # (the first UPDATE; with several peers it can come before the
        # last session is up).
        t_first = None
        while not all(b.state().established for b in birds):
            if time.monotonic() > t0 + 120:
                raise TimeoutError("BIRD sessions not Established in 120 s")
            t_first = t_first or first_route(petrel, nodes, t0)
            time.sleep(0.05)
        t_up = time.monotonic() - t0
        perf = None
        if perf_file:
            perf = subprocess.Popen(["perf", "record", "-g", "-q", "-o", perf_file, "-t", str(syncer_tid())])
        deadline = t0 + 600
        t_table = None
        next_line = 0.0
        while time.monotonic() < deadline:
            in_table = None
            if t_table is None or timeline:
                c = petrel.petrel_received_counts() or {}
                in_table = sum(c.get(bn.name, {}).get("ipv4-unicast", 0) for bn in nodes)
                if t_first is None and in_table > 0:
                    t_first = time.monotonic() - t0
                if t_table is None and all(c.get(bn.name, {}).get("ipv4-unicast", 0) == n for bn in nodes):
                    t_table = time.monotonic() - t0
            # Petrel's own count (a dump of the kernel's table every 50 ms
            # would cost more than the installing); checked by a dump at
            # the end.
            k = petrel.api("/api/kernel") or {}
            r = k.get("routes", {})
            if timeline and time.monotonic() >= next_line:
                next_line = time.monotonic() + 0.25
                ts = k.get("time_s", {})
                print(f"t={time.monotonic() - t0 - t_up:6.2f} table={in_table} installed={r.get('installed')} "
                      f"pending={r.get('pending')} resyncs={k.get('table_resyncs')} "
                      + " ".join(f"{key}={v:.2f}" for key, v in ts.items()), flush=True)
            if r.get("installed", 0) >= n and (not two or (t_table is not None and r.get("pending") == 0)) \
                    and (not both or count(me, True) == n):
                break
            time.sleep(0.05)
        t_all = time.monotonic() - t0
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(60)
        if t_table is None:
            t_table = float("nan")
        if t_first is None:
            t_first = float("nan")
        k = petrel.api("/api/kernel") or {}
        got = count(me, both)
        print(f"daemon routes={n} multipath={KernelPetrel.multipath} peers={len(nodes)} "
              f"nexthop_objects={k.get('nexthop_objects')} "
              f"in_kernel={got} first_route_s={t_first:.2f} established_s={t_up:.2f} in_table_s={t_table:.2f} "
              f"synced_s={t_all:.2f} batches={k.get('batches')} table_resyncs={k.get('table_resyncs')}")
        petrel.stop(timeout=120)
        return 0 if got == n else 1


if __name__ == "__main__":
    sys.exit(main())
