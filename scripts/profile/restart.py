#!/usr/bin/python3
"""Petrel restarting with its kernel routes kept, at full-table scale
(docs/performance.md, "Restart with a full table in the kernel"; issue 21,
"Figures"). Driven by scripts/profile/restart.sh.

One lab: Petrel in namespace "dut" (198.18.0.1) with the kernel installer
on (table 100), BIRD 2 in namespace "bird" (198.18.0.2) with `graceful
restart on` announcing PREFIXES IPv4 /24s (a static table) and keeping
Petrel's own route as a helper. For each of RUNS runs, in the same lab:
Petrel is killed with SIGKILL, BIRD's table changes meanwhile (CHANGED
routes dropped, CHANGED others added; each run changes a different set),
Petrel is started again, and the run measures

  missing        prefixes BIRD still sends that the kernel lost at some
                 moment (`ip -o monitor route` in the namespace: a
                 deletion of one of them), target 0
  touched        events of such unchanged prefixes at all (removed or
                 written again), target 0
  reconciled_s   from Petrel's start until /api/kernel says nothing is
                 deferred, stale or pending and every route is installed
  selection_s    from the new process's kernel dump (log kernel-started)
                 until its graceful-restart-selection (BIRD's End-of-RIB)
  requests       route requests the new process sent to the kernel
                 (/api/kernel `requests`), target 2 * CHANGED
  events         route events of Petrel's table the monitor saw; at tens
                 of thousands of changes the monitor loses some (its
                 socket buffer overflows, even at -rcvbuf 64 MiB), so
                 `monitor_complete` says whether it saw one per request
                 (missing and touched then cover only what it saw)
  own_missing    BIRD polls (every 100 ms) that lacked Petrel's route
  exact          the kernel holds exactly BIRD's new table at the end

One JSON line per run on stdout, then medians. Environment: PETREL (the
binary), PREFIXES (1000000), CHANGED (1000), RUNS (3), TIMEOUT (600: each
wait), OUT (a directory for logs). Needs root. Every wait is bounded.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import lab as L  # noqa: E402
from test_graceful_restart import KernelWatcher  # noqa: E402

PREFIXES = int(os.environ.get("PREFIXES") or 1_000_000)
CHANGED = int(os.environ.get("CHANGED") or 1000)
RUNS = int(os.environ.get("RUNS") or 3)
TIMEOUT = int(os.environ.get("TIMEOUT") or 600)
TABLE, METRIC = 100, 32
OWN = "198.19.200.0/24"
PETREL_AS, BIRD_AS = 65001, 65002


def log(*a) -> None:
    print("restart:", *a, file=sys.stderr, flush=True)


def prefix(i: int) -> str:
    """The i-th /24 from 20.0.0.0 on (clear of the lab's 198.18.0.0/15)."""
    return f"{20 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}.0/24"


def table_for(run: int) -> list[int]:
    """BIRD's table before run `run` + 1: run r drops the CHANGED routes
    at r * CHANGED.. and adds PREFIXES + r * CHANGED.. in their place."""
    gone = set(range(0, run * CHANGED))
    return [i for i in range(PREFIXES + run * CHANGED) if i not in gone]


def bird_config(node: L.Node, table: list[int]) -> str:
    body = "\n".join(f"route {prefix(i)} blackhole;" for i in table)
    return (f'log "{node.path("bird-daemon.log")}" {{ warning, error, fatal }};\n'
            f"router id {node.v4};\n"
            "graceful restart wait 60;\n"
            "protocol device { scan time 10; }\n"
            f"protocol static static4 {{ ipv4;\n{body}\n}}\n"
            f"protocol bgp peer {{ local {node.v4} as {BIRD_AS}; neighbor 198.18.0.1 as {PETREL_AS}; "
            "passive on; hold time 90; graceful restart on; graceful restart time 600; "
            "ipv4 { import all; export all; }; }\n")


def petrel_config(node: L.Node, bird: L.Node) -> str:
    q = json.dumps
    return "\n".join([
        "[router]", f"asn = {PETREL_AS}", f"router_id = {q(node.v4)}", f"listen = {q([node.v4])}",
        "port = 179", f"expected_ipv4_prefixes = {PREFIXES}", "selection_deferral_time = 300", 'user = "root"',
        "[http]", f"listen = {q(node.v4 + ':8179')}",
        "", "[[peer]]", 'name = "bird"', f"address = {q(bird.v4)}", f"asn = {BIRD_AS}",
        "hold_time = 90", "connect_retry = 1", 'families = ["ipv4-unicast"]', f"local_address = {q(node.v4)}",
        'import = "all"', 'export = "all"',
        "", "[[originate]]", f"prefix = {q(OWN)}",
        "", "[kernel]", "enabled = true", f"table = {TABLE}", f"metric = {METRIC}",
    ]) + "\n"


def api(node: L.Node, path: str):
    p = node.run(["curl", "-s", "--max-time", "5", f"http://{node.v4}:8179{path}"], timeout=10, check=False)
    try:
        return json.loads(p.stdout) if p.returncode == 0 and p.stdout else None
    except ValueError:
        return None


def events(path: str, event: str) -> list[dict]:
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            if f'"event":"{event}"' in line:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def kernel_set(node: L.Node) -> set[str]:
    p = node.run(["ip", "-4", "route", "show", "table", str(TABLE), "proto", "bgp", "metric", str(METRIC)],
                 timeout=120, check=False)
    return {line.split()[0] for line in p.stdout.splitlines() if line[:1].isdigit()}


def bird_has_own(bird: L.Node) -> bool:
    p = bird.run(["birdc", "-s", bird.path("bird.ctl"), "show", "route", OWN, "protocol", "peer"],
                 timeout=10, check=False)
    return OWN in p.stdout


class OwnWatcher(KernelWatcher):
    """Asks BIRD for Petrel's route every 100 ms, bounded by `limit` seconds;
    `misses` counts the polls that did not find it."""

    def __init__(self, bird: L.Node, limit: float):
        self.misses = 0
        super().__init__(bird, {OWN}, limit)

    def have(self) -> set[str]:
        if bird_has_own(self.node):
            return {OWN}
        self.misses += 1
        return set()


def wait(pred, timeout: float, what: str, interval: float = 0.2):
    return L.wait_until(pred, timeout, what, interval=interval)


def start_petrel(lab: L.Lab, dut: L.Node, out: str, logname: str) -> subprocess.Popen:
    binary = os.environ.get("PETREL") or L.petrel_binary()
    return lab.popen(["ip", "netns", "exec", dut.ns, binary, "run", "-c", dut.path("petrel.toml"),
                      "--log-format", "json"], os.path.join(out, logname))


def settled(dut: L.Node, want: int):
    k = api(dut, "/api/kernel")
    if not k:
        return None
    r = k["routes"]
    ok = (k["deferred"] == [] and r["stale"] == 0 and r["pending"] == 0 and r["installed"] == want)
    return k if ok else None


def one_run(lab: L.Lab, dut: L.Node, bn: L.Node, petrel: subprocess.Popen, run: int, out: str):
    before = {prefix(i) for i in table_for(run)}
    after_ids = table_for(run + 1)
    after = {prefix(i) for i in after_ids}
    kept = before & after
    mon_log = os.path.join(out, f"monitor-{run + 1}.log")
    monitor = dut.popen(["timeout", str(TIMEOUT), "ip", "-rcvbuf", str(64 << 20), "-o", "monitor", "route"], mon_log)
    own = OwnWatcher(bn, TIMEOUT)
    try:
        time.sleep(0.5)   # the monitor listens
        L.Lab.stop_process(petrel, signal.SIGKILL)
        with open(bn.path("bird.conf"), "w") as f:
            f.write(bird_config(bn, after_ids))
        bn.run(["birdc", "-s", bn.path("bird.ctl"), "configure"], timeout=TIMEOUT)
        new, gone = prefix(after_ids[-1]), prefix(run * CHANGED)
        wait(lambda: (lambda o: new in o and (gone not in o or CHANGED == 0))(
            bn.run(["birdc", "-s", bn.path("bird.ctl"), "show", "route", "table", "master4", "for", new],
                   check=False).stdout + bn.run(["birdc", "-s", bn.path("bird.ctl"), "show", "route",
                                                 "protocol", "static4", gone], check=False).stdout),
             60, "BIRD's new table")
        time.sleep(1)
        t0 = time.monotonic()
        petrel = start_petrel(lab, dut, out, f"petrel-{run + 2}.log")
        logp = os.path.join(out, f"petrel-{run + 2}.log")
        st = wait(lambda: settled(dut, len(after)), TIMEOUT, "a reconciled kernel", interval=0.1)
        reconciled = time.monotonic() - t0
        sel = events(logp, "graceful-restart-selection")
        started = events(logp, "kernel-started")
        time.sleep(2)   # anything late would show in the monitor
    finally:
        own.stop()
        L.Lab.stop_process(monitor)
    got = kernel_set(dut)
    touched, deleted = [], set()
    events_n = 0
    with open(mon_log) as f:
        for line in f:
            if f"table {TABLE} " not in line or "proto bgp" not in line:
                continue
            events_n += 1
            tok = line.split()
            p = tok[1] if tok[0] == "Deleted" else tok[0]
            if p in kept:
                touched.append(p)
                if tok[0] == "Deleted":
                    deleted.add(p)
    res = {"run": run + 1, "prefixes": PREFIXES, "changed": CHANGED, "missing": len(deleted),
           "touched": len(touched), "reconciled_s": round(reconciled, 3),
           "selection_reason": sel[0]["reason"] if sel else None,
           "requests": st["requests"], "batches": st["batches"], "events": events_n, "monitor_complete": events_n >= st["requests"],
           "own_missing": own.misses, "own_polls": own.polls, "exact": got == after,
           "routes_found": int(started[0]["routes_found"]) if started else None}
    if sel and started:
        res["selection_s"] = round(log_secs(sel[0]) - log_secs(started[0]), 3)
    return petrel, res


def log_secs(e: dict) -> float:
    t = e["ts"]   # 2026-12-06T04:50:59.743Z
    h, m, s = t[11:-1].split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def main() -> int:
    out = os.environ.get("OUT") or tempfile.mkdtemp(prefix="petrel-restart-")
    os.makedirs(out, exist_ok=True)
    results = []
    with L.Lab() as lab:
        dut, bn = lab.node("dut"), lab.node("bird")
        with open(bn.path("bird.conf"), "w") as f:
            f.write(bird_config(bn, table_for(0)))
        bn.run(["bird", "-p", "-c", bn.path("bird.conf")], timeout=120)
        lab.popen(["ip", "netns", "exec", bn.ns, "bird", "-f", "-c", bn.path("bird.conf"), "-s",
                   bn.path("bird.ctl"), "-P", bn.path("bird.pid")], os.path.join(out, "bird.log"))
        with open(dut.path("petrel.toml"), "w") as f:
            f.write(petrel_config(dut, bn))
        t0 = time.monotonic()
        petrel = start_petrel(lab, dut, out, "petrel-1.log")
        wait(lambda: settled(dut, PREFIXES), TIMEOUT, f"{PREFIXES} routes installed", interval=0.5)
        log(f"first install of {PREFIXES} routes: {time.monotonic() - t0:.1f} s")
        wait(lambda: bird_has_own(bn), 30, "BIRD has Petrel's route")
        for run in range(RUNS):
            petrel, res = one_run(lab, dut, bn, petrel, run, out)
            print(json.dumps(res), flush=True)
            results.append(res)
        L.Lab.stop_process(petrel, signal.SIGINT, timeout=120)
    med = {k: statistics.median(r[k] for r in results)
           for k in ("reconciled_s", "selection_s", "requests", "events", "missing", "touched", "own_missing")
           if all(r.get(k) is not None for r in results)}
    print(json.dumps({"median": med, "runs": len(results),
                      "all_exact": all(r["exact"] for r in results)}), flush=True)
    return 0 if all(r["exact"] and r["missing"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
