#!/usr/bin/python3
"""Idle CPU and the latency of one route change (docs/performance.md,
"Followers woken, not polling").

One lab: Petrel in namespace "petrel" (198.18.0.1) with PEERS external
peers, all Python test speakers (tests/integration/speaker.py) in one
namespace "speakers" (198.18.0.101, .102, ...), each in an AS of its own,
every route taken from each and passed on to all the others. Each speaker
announces one prefix; then, with nothing changing:

- idle CPU: the daemon's utime + stime (/proc/PID/stat) over IDLE_SECS
  seconds, as a percentage of one core, and its threads' voluntary
  context switches a second (how often it wakes);
- latency: CHANGES times, speaker 0 announces (or withdraws, in turn) one
  prefix and the first UPDATE that speaker 1 receives after it is timed
  (the speakers' clock; both are in this process), CHANGES_GAP seconds
  and a random fraction of 50 ms apart, so that a poller's phase is
  sampled evenly.

One JSON line on stdout. Environment: PETREL (the binary; default the
build's), PEERS (50), IDLE_SECS (30), CHANGES (40), CHANGES_GAP (0.2),
HOLD (90: the sessions' hold time, so that KEEPALIVEs are rare), KERNEL
(0; 1: the kernel syncer installs the routes, in table 100 of the
daemon's namespace). Needs root. Every wait is bounded.
"""
import json
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import lab as L  # noqa: E402
import speaker as S  # noqa: E402

PETREL_ASN = 65001
PROBE = "203.0.113.0/24"


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def wakeups(pid: int) -> int:
    n = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        n += int(line.split()[1])
        except OSError:
            pass  # a thread that ended meanwhile
    return n


def first_update_after(sp: S.Speaker, t0: float) -> float:
    first = None
    with sp._cond:
        for m in reversed(sp.messages):
            if m.type == S.UPDATE and m.time >= t0:
                first = m.time
            elif m.time < t0:
                break
    assert first is not None, "no UPDATE after the change"
    return first


def main() -> int:
    peers = int(os.environ.get("PEERS", "50"))
    idle_secs = float(os.environ.get("IDLE_SECS", "30"))
    changes = int(os.environ.get("CHANGES", "40"))
    gap = float(os.environ.get("CHANGES_GAP", "0.2"))
    hold = int(os.environ.get("HOLD", "90"))
    kernel = os.environ.get("KERNEL", "0") == "1"
    with L.Lab() as lab:
        me, spk = lab.node("petrel"), lab.node("speakers")
        addrs = [f"198.18.0.{101 + i}" for i in range(peers)]
        for a in addrs:
            spk.run(["ip", "addr", "add", f"{a}/24", "dev", L.IFNAME])
        petrel = L.Petrel(me, [L.PetrelPeer(f"s{i}", a, 65100 + i, me.v4, passive=True, hold_time=hold,
                                            families=("ipv4-unicast",), export_policy="all")
                               for i, a in enumerate(addrs)], PETREL_ASN,
                          extra_toml="[kernel]\nenabled = true\ntable = 100\n" if kernel else "")
        petrel.start()
        pid = petrel.proc.pid
        with open(f"/proc/{pid}/comm") as f:
            assert f.read().strip() == "petrel", "the measured process is not the daemon"
        sps = []
        for i, a in enumerate(addrs):
            sp = S.Speaker(65100 + i, a, hold_time=hold, families=("ipv4-unicast",))
            lab.on_close(lambda sp=sp: sp.close(code=None))
            sp.connect(me.v4, local=a, netns=spk.ns, timeout=15, attempts=30)
            sp.start()
            sps.append(sp)
        for sp in sps:
            sp.wait_established(30)
        for i, (sp, a) in enumerate(zip(sps, addrs)):
            sp.send_update([f"198.19.{i}.0/24"], a)
        sps[1].wait(lambda: len(sps[1].routes["ipv4-unicast"]) == peers - 1, 60,
                    f"speaker 1 holds the other {peers - 1} speakers' prefixes")
        time.sleep(2)

        hz = os.sysconf("SC_CLK_TCK")
        c0, w0, t0 = cpu_ticks(pid), wakeups(pid), time.monotonic()
        time.sleep(idle_secs)
        c1, w1, t1 = cpu_ticks(pid), wakeups(pid), time.monotonic()
        idle_cpu = 100.0 * (c1 - c0) / hz / (t1 - t0)
        idle_wakeups = (w1 - w0) / (t1 - t0)

        lat = []
        rnd = random.Random(1)
        for k in range(changes):
            time.sleep(gap + rnd.random() * 0.05)
            announce = k % 2 == 0
            t = time.time()
            if announce:
                sps[0].send_update([PROBE], addrs[0])
            else:
                sps[0].send(S.withdraw([PROBE]))
            sps[1].wait(lambda: (PROBE in sps[1].routes["ipv4-unicast"]) == announce, 10,
                        f"speaker 1 sees {PROBE} {'announced' if announce else 'withdrawn'}")
            lat.append(1000.0 * (first_update_after(sps[1], t) - t))
        lat.sort()
        print(json.dumps({
            "binary": petrel.binary, "peers": peers, "kernel": kernel, "idle_secs": round(t1 - t0, 1),
            "idle_cpu_percent": round(idle_cpu, 2), "idle_wakeups_per_s": round(idle_wakeups, 1),
            "changes": changes, "latency_ms_median": round(statistics.median(lat), 2),
            "latency_ms_p90": round(lat[int(0.9 * (len(lat) - 1))], 2),
            "latency_ms_min": round(lat[0], 2), "latency_ms_max": round(lat[-1], 2),
        }))
        petrel.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
