#!/usr/bin/python3
"""Next hops that change under a full table (docs/performance.md, "Next-hop
changes end to end"; issue 23). Driven by scripts/profile/nexthops.sh.

One lab: Petrel in namespace "dut" (198.18.0.1) with the kernel installer
on (main table), petrel-load in namespace "gen" with two feeders (.101,
.102) announcing the same PREFIXES IPv4 /24s (different attributes: each
wins about half the prefixes) and an observer (.100) that takes
everything Petrel passes on. Neither feeder's next hop is on the lab's
network: feeder 1's is 10.80.0.1, feeder 2's 10.81.0.1, and Petrel's
namespace reaches them through static kernel routes (the "IGP"):
10.80.0.0/24 via .101 and 10.81.0.0/24 via .102. So every route resolves
recursively, and two next hops carry a million routes.

Then, RUNS times each, from the kernel event on:

  igp_change    10.81.0.0/24 moves to gateway .103 (the IGP path to
                feeder 2's next hop changes; no route's eligibility does)
  unresolved    10.80.0.0/24 is deleted: feeder 1's routes do not
                resolve, and the prefixes it won move to feeder 2 (in the
                kernel and at the observer)
  resolved      10.80.0.0/24 comes back: they move back

and measures, polling Petrel's API every 10 ms:
  kernel_s      until the syncer's route requests stop growing and
                nothing is pending (`/api/kernel`), counted from the event
  requests      the netlink requests it wrote meanwhile (with nexthop
                objects an IGP change is one object replaced, not a
                request per route)
  export_s      until the UPDATEs sent to the observer stop growing
                (`/api/peers/observer`), from the event
  updates       those UPDATEs
"Stop growing": unchanged for QUIET seconds (3: a journal overrun makes
the installer read the table again before it writes), which is not counted.
One JSON line per event and run on stdout, then medians. Environment:
PETREL, LOAD (petrel-load), PREFIXES (1000000), RUNS (3), OBJECTS (1:
kernel.nexthop_objects), TIMEOUT (600), OUT (a directory for logs). Needs
root. Every wait is bounded.
"""
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import lab as L  # noqa: E402

DUT_AS, FEEDER_AS, OBSERVER_AS = 65000, 65001, 65100
OBSERVER = "198.18.0.100"
FEEDERS = ["198.18.0.101", "198.18.0.102"]
OTHER_GATEWAY = "198.18.0.103"
NEXT_HOPS = ["10.80.0.1", "10.81.0.1"]
IGP = ["10.80.0.0/24", "10.81.0.0/24"]
PREFIXES = int(os.environ.get("PREFIXES") or 1_000_000)
RUNS = int(os.environ.get("RUNS") or 3)
OBJECTS = (os.environ.get("OBJECTS") or "1") == "1"
TIMEOUT = int(os.environ.get("TIMEOUT") or 600)
QUIET = 3.0


def log(*a) -> None:
    print("nexthops:", *a, file=sys.stderr, flush=True)


def petrel_config(node: L.Node) -> str:
    q = json.dumps
    lines = ["[router]", f"asn = {DUT_AS}", f"router_id = {q(node.v4)}", f"listen = {q([node.v4])}",
             "port = 179", f"expected_ipv4_prefixes = {PREFIXES}", 'user = "root"',
             "[http]", f"listen = {q(node.v4 + ':8179')}",
             "[kernel]", "enabled = true", "table = 254", "metric = 32",
             f"nexthop_objects = {'true' if OBJECTS else 'false'}"]
    peers = [(f"feed{i + 1}", a, FEEDER_AS + i, "all", "none") for i, a in enumerate(FEEDERS)]
    peers.append(("observer", OBSERVER, OBSERVER_AS, "none", "all"))
    for name, addr, asn, imp, exp in peers:
        lines += ["", "[[peer]]", f"name = {q(name)}", f"address = {q(addr)}", f"asn = {asn}",
                  "passive = true", "hold_time = 600", 'families = ["ipv4-unicast"]',
                  f"local_address = {q(node.v4)}", f"import = {q(imp)}", f"export = {q(exp)}"]
    return "\n".join(lines) + "\n"


def api(node: L.Node, path: str) -> dict:
    p = node.run(["curl", "-s", "--max-time", "2", f"http://{node.v4}:8179{path}"], timeout=5, check=False)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {}


def counters(node: L.Node) -> tuple[int, int, int]:
    """(kernel requests, kernel pending, UPDATEs sent to the observer)."""
    k = api(node, "/api/kernel")
    o = api(node, "/api/peers/observer")
    return (int(k.get("requests") or 0), int((k.get("routes") or {}).get("pending") or 0),
            int(((o.get("messages") or {}).get("out") or {}).get("update") or 0))


def settle(node: L.Node, since: float, base: tuple[int, int, int], quiet: float = QUIET) -> dict:
    """Polls until both counters have stopped growing for `quiet` seconds
    (and nothing is pending); the times of their last growth, from `since`."""
    last = base
    kernel_at = export_at = None
    quiet_from = time.monotonic()
    deadline = since + TIMEOUT
    while time.monotonic() < deadline:
        now_c = counters(node)
        now = time.monotonic()
        if now_c[0] != last[0]:
            kernel_at = now
        if now_c[2] != last[2]:
            export_at = now
        if now_c[0] != last[0] or now_c[2] != last[2] or now_c[1] != 0:
            quiet_from = now
        last = now_c
        if now - quiet_from >= quiet:
            break
        time.sleep(0.01)
    return {"kernel_s": round(kernel_at - since, 3) if kernel_at else None,
            "requests": last[0] - base[0],
            "export_s": round(export_at - since, 3) if export_at else None,
            "updates": last[2] - base[2]}


def main() -> int:
    load = os.environ.get("LOAD")
    if not load:
        raise SystemExit("nexthops: LOAD (the petrel-load binary) is not set")
    binary = os.environ.get("PETREL") or L.petrel_binary()
    out_dir = os.environ.get("OUT") or tempfile.mkdtemp(prefix="petrel-nexthops-")
    os.makedirs(out_dir, exist_ok=True)
    results: dict[str, list[dict]] = {"igp_change": [], "unresolved": [], "resolved": []}
    with L.Lab() as lab:
        dut, gen = lab.node("dut"), lab.node("gen")
        for a in [OBSERVER, *FEEDERS, OTHER_GATEWAY]:
            gen.run(["ip", "addr", "add", f"{a}/24", "dev", L.IFNAME])
        for net, gw in zip(IGP, FEEDERS):
            dut.run(["ip", "route", "add", net, "via", gw, "proto", "static"])
        conf = dut.path("petrel.toml")
        with open(conf, "w") as f:
            f.write(petrel_config(dut))
        petrel = dut.popen([binary, "run", "-c", conf], dut.path("petrel.log"))
        result_path = os.path.join(out_dir, "load.json")
        args = [load, "--daemon", dut.v4, "--daemon-as", str(DUT_AS), "--feeder-as", str(FEEDER_AS),
                "--observer", OBSERVER, "--observer-as", str(OBSERVER_AS), "--v4", str(PREFIXES),
                "--timeout", str(TIMEOUT), "--hold", str(TIMEOUT), "--json", result_path,
                "--kernel-netns", dut.ns, "--kernel-table", "254"]
        for a, nh in zip(FEEDERS, NEXT_HOPS):
            args += ["--feeder", a, "--next-hop", nh]
        lp = gen.popen(args, os.path.join(out_dir, "load.log"))
        deadline = time.monotonic() + TIMEOUT + 60
        while time.monotonic() < deadline and not os.path.exists(result_path):
            if lp.poll() is not None or petrel.poll() is not None:
                raise SystemExit(f"nexthops: petrel-load or Petrel ended early (logs in {out_dir})")
            time.sleep(0.1)
        with open(result_path) as f:
            first = json.load(f)
        log("loaded:", json.dumps(first))
        # whatever the load left: the second feeder's routes replace some of
        # the first's bests after the observer already holds every prefix
        settle(dut, time.monotonic(), counters(dut), quiet=5)
        events = {
            "igp_change": ["ip", "route", "replace", IGP[1], "via", OTHER_GATEWAY, "proto", "static"],
            "igp_back": ["ip", "route", "replace", IGP[1], "via", FEEDERS[1], "proto", "static"],
            "unresolved": ["ip", "route", "del", IGP[0]],
            "resolved": ["ip", "route", "add", IGP[0], "via", FEEDERS[0], "proto", "static"],
        }
        for run in range(RUNS):
            for name in ("igp_change", "igp_back", "unresolved", "resolved"):
                base = counters(dut)
                t0 = time.monotonic()
                dut.run(events[name])
                r = settle(dut, t0, base)
                r.update({"event": name, "run": run + 1, "prefixes": PREFIXES, "objects": OBJECTS})
                print(json.dumps(r), flush=True)
                if name in results:
                    results[name].append(r)
        lab.stop_process(lp)
        lab.stop_process(petrel)
        shutil.copytree(os.path.join(lab.tmp, "dut"), os.path.join(out_dir, "dut"), dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.sock"))
    for name, rs in results.items():
        med = {k: statistics.median([r[k] for r in rs if r[k] is not None] or [0])
               for k in ("kernel_s", "requests", "export_s", "updates")}
        print(json.dumps({"event": name, "median_of": len(rs), **med}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
