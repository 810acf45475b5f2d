#!/usr/bin/python3
"""Full-table runs in network namespaces (docs/performance.md, "Full tables
end to end"). Driven by scripts/profile/full-table.sh and compare.sh.

One lab: the daemon under test in namespace "dut" (198.18.0.1), and
petrel-load in namespace "gen" playing PEERS feeding neighbours
(198.18.0.101, .102, ...) and one observer (198.18.0.100). Every daemon is
configured the same way: feeders' routes accepted, nothing sent back to
them, everything sent to the observer; with KERNEL=1 every best route goes
into the main table of the daemon's namespace.

  fulltable.py run DAEMON     one run, one JSON line on stdout
     DAEMON: petrel | bird | frr | gobgp | floor
  fulltable.py compare        every daemon one after the other, then a table

Environment: PETREL (the petrel binary), LOAD (petrel-load), FIBSYNC
(fib-sync, for the floor), PEERS (1), PREFIXES (1000000), V6 (0: IPv6
prefixes in the same table, fed over the same IPv4 sessions with next hops
fd00:bb::101, ... and passed on to the observer; Petrel and BIRD only), KERNEL (0),
EXPECTED (PREFIXES: Petrel's router.expected_ipv4_prefixes, as a full-table
router would be configured; 0 lets its maps grow as the routes come),
OBSERVER_LATE (0; 1: the observer dials once the table is full),
HOLD_SECS (30: how long the sessions stay up after the load, for the
second memory sample), OBSERVE (1; 0: no observer session, the run ends
when Petrel's table is complete: import throughput alone),
IMPORT_POLICY (petrel only: "ten-terms" puts policy-bench's ten-term
import policy, TEN_TERMS below, on every feeder), TIMEOUT (600), PERF_FREQ (sample the daemon with
`perf record -g` at this frequency from its start until the load is
complete; the data goes to OUT/perf.data), OUT (a directory for logs).
Needs root. Every wait is bounded.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import lab as L  # noqa: E402

DUT_AS = 65000
FEEDER_AS = 65001
OBSERVER_AS = 65100
OBSERVER = "198.18.0.100"


def env_int(name: str, default: int) -> int:
    v = os.environ.get(name, "")
    return int(v) if v else default


PEERS = env_int("PEERS", 1)
PREFIXES = env_int("PREFIXES", 1_000_000)
V6 = env_int("V6", 0)
KERNEL = env_int("KERNEL", 0) == 1
EXPECTED = env_int("EXPECTED", PREFIXES)
OBSERVER_LATE = env_int("OBSERVER_LATE", 0) == 1
OBSERVE = env_int("OBSERVE", 1) == 1
IMPORT_POLICY = os.environ.get("IMPORT_POLICY", "")

# tools/bench/policy_bench.cpp's ten terms (issue 22's "typical" import
# policy: bogon prefixes, too specific, an AS-path expression, bogon ASes,
# AS_SET, path length, GRACEFUL_SHUTDOWN, ORIGIN, a MED range, and a
# community tag on every route accepted).
TEN_TERMS = """
[[prefix_set]]
name = "bogons"
prefixes = ["0.0.0.0/8 le 32", "10.0.0.0/8 le 32", "100.64.0.0/10 le 32", "127.0.0.0/8 le 32",
            "169.254.0.0/16 le 32", "172.16.0.0/12 le 32", "192.0.0.0/24 le 32", "192.0.2.0/24 le 32",
            "192.168.0.0/16 le 32", "198.18.0.0/15 le 32", "198.51.100.0/24 le 32",
            "203.0.113.0/24 le 32", "224.0.0.0/4 le 32", "240.0.0.0/4 le 32", "0.0.0.0/0"]

[[policy]]
name = "ten-terms"
default = "reject"
[[policy.term]]
name = "bogon-prefixes"
match = { prefix = ["@bogons"] }
then = "reject"
[[policy.term]]
name = "too-specific"
match = { prefix_length = "25-32" }
then = "reject"
[[policy.term]]
name = "documentation-ases"
match = { as_path = "_(6449[6-9]|645[0-0][0-9]|6451[01])_" }
then = "reject"
[[policy.term]]
name = "bogon-ases"
match = { as_path_contains = [0, 23456, "65535-131071", "4200000000-4294967295"] }
then = "reject"
[[policy.term]]
name = "as-set"
match = { as_set = true }
then = "reject"
[[policy.term]]
name = "too-long"
match = { as_path_length = "51-65535" }
then = "reject"
[[policy.term]]
name = "graceful-shutdown"
match = { community = ["graceful-shutdown"] }
set = { local_pref = 0 }
then = "accept"
[[policy.term]]
name = "incomplete"
match = { origin = ["incomplete"] }
set = { med = "+10" }
[[policy.term]]
name = "med-range"
match = { med = "1000000-4294967295" }
then = "reject"
[[policy.term]]
name = "tag"
set = { community_add = ["64512:100"] }
then = "accept"
"""
HOLD = env_int("HOLD_SECS", 30)
TIMEOUT = env_int("TIMEOUT", 600)


def feeders() -> list[str]:
    return [f"198.18.0.{101 + i}" for i in range(PEERS)]


def feeders_v6() -> list[str]:
    """The feeders' IPv6 next hops (on the lab's link, so directly connected)."""
    return [f"fd00:bb::{101 + i}" for i in range(PEERS)]


def families() -> list[str]:
    return ["ipv4-unicast", "ipv6-unicast"] if V6 else ["ipv4-unicast"]


def log(*a) -> None:
    print("fulltable:", *a, file=sys.stderr, flush=True)


# ---- /proc readings

def proc_mem(pid: int) -> dict:
    """VmRSS and VmHWM (peak resident) in KiB, from /proc/PID/status."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def proc_cpu(pid: int) -> float:
    """User plus system CPU seconds of a process (all its threads)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


# ---- the daemons

class Daemon:
    name = "?"

    def __init__(self, lab: L.Lab, node: L.Node):
        self.lab, self.node = lab, node
        self.procs: list[subprocess.Popen] = []

    def start(self) -> None:
        raise NotImplementedError

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def metrics(self) -> str:
        return ""

    def extra(self) -> dict:
        return {}

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs)

    def popen(self, cmd: list[str], logname: str) -> subprocess.Popen:
        p = self.node.popen(cmd, self.node.path(logname))
        self.procs.append(p)
        return p


class Petrel(Daemon):
    name = "petrel"

    def config(self) -> str:
        q = json.dumps
        lines = ["[router]", f"asn = {DUT_AS}", f"router_id = {q(self.node.v4)}",
                 f"listen = {q([self.node.v4])}", "port = 179",
                 f"expected_ipv4_prefixes = {EXPECTED}", 'user = "root"',
                 *([f"expected_ipv6_prefixes = {V6}"] if V6 and EXPECTED else []),
                 "[http]", f"listen = {q(self.node.v4 + ':8179')}"]
        imp = IMPORT_POLICY or "all"
        peers = [(f"feed{i + 1}", a, FEEDER_AS + i, imp, "none") for i, a in enumerate(feeders())]
        peers.append(("observer", OBSERVER, OBSERVER_AS, "none", "all"))
        for name, addr, asn, imp, exp in peers:
            lines += ["", "[[peer]]", f"name = {q(name)}", f"address = {q(addr)}", f"asn = {asn}",
                      "passive = true", "hold_time = 180", f"families = {q(families())}",
                      f"local_address = {q(self.node.v4)}", f"import = {q(imp)}", f"export = {q(exp)}"]
        if KERNEL:
            lines += ["", "[kernel]", "enabled = true", "table = 254", "metric = 32"]
        if IMPORT_POLICY == "ten-terms":
            lines.append(TEN_TERMS)
        elif IMPORT_POLICY:
            raise SystemExit(f"fulltable: IMPORT_POLICY {IMPORT_POLICY!r}: only ten-terms is known")
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        conf = self.node.path("petrel.toml")
        with open(conf, "w") as f:
            f.write(self.config())
        binary = os.environ.get("PETREL") or L.petrel_binary()
        self.popen([binary, "run", "-c", conf], "petrel.log")

    def metrics(self) -> str:
        return f"{self.node.v4}:8179"

    def extra(self) -> dict:
        try:
            p = self.node.run(["curl", "-s", "--max-time", "5", f"http://{self.node.v4}:8179/api/status"],
                              timeout=10, check=False)
            m = json.loads(p.stdout).get("memory") or {}
            return {"jemalloc_allocated": m.get("allocated"), "jemalloc_resident": m.get("resident")}
        except (ValueError, L.LabError):
            return {}


class Bird(Daemon):
    name = "bird"

    def config(self) -> str:
        lines = [f'log "{self.node.path("bird-daemon.log")}" {{ warning, error, fatal }};',
                 f"router id {self.node.v4};", "protocol device { scan time 10; }"]
        if KERNEL:
            lines.append("protocol kernel { ipv4 { export all; import none; }; learn off; }")
        # IPv6 over the IPv4 sessions: the observer's next hop is ours,
        # of the family (BIRD has only the session's address otherwise).
        v6_in = " ipv6 { import all; export none; };" if V6 else ""
        v6_out = f" ipv6 {{ import none; export all; next hop address {self.node.v6}; }};" if V6 else ""
        for i, a in enumerate(feeders()):
            lines.append(f"protocol bgp feed{i + 1} {{ local {self.node.v4} as {DUT_AS}; "
                         f"neighbor {a} as {FEEDER_AS + i}; passive on; hold time 180; "
                         f"ipv4 {{ import all; export none; }};{v6_in} }}")
        lines.append(f"protocol bgp observer {{ local {self.node.v4} as {DUT_AS}; "
                     f"neighbor {OBSERVER} as {OBSERVER_AS}; passive on; hold time 180; "
                     f"ipv4 {{ import none; export all; }};{v6_out} }}")
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        conf = self.node.path("bird.conf")
        with open(conf, "w") as f:
            f.write(self.config())
        self.node.run(["bird", "-p", "-c", conf])
        self.popen(["bird", "-f", "-c", conf, "-s", self.node.path("bird.ctl"),
                    "-P", self.node.path("bird.pid")], "bird.log")


class Frr(Daemon):
    name = "frr"

    def config(self) -> str:
        lines = ["frr defaults traditional", "hostname dut", "log stdout critical", "!",
                 "route-map NONE deny 10", "!", "route-map ALL permit 10", "!",
                 f"router bgp {DUT_AS}", f" bgp router-id {self.node.v4}",
                 " no bgp ebgp-requires-policy", " no bgp default ipv4-unicast",
                 " no bgp network import-check", " timers bgp 60 180"]
        nbrs = [(a, FEEDER_AS + i, "ALL", "NONE") for i, a in enumerate(feeders())]
        nbrs.append((OBSERVER, OBSERVER_AS, "NONE", "ALL"))
        for a, asn, _, _ in nbrs:
            lines += [f" neighbor {a} remote-as {asn}", f" neighbor {a} passive",
                      f" neighbor {a} update-source {self.node.v4}",
                      f" neighbor {a} advertisement-interval 0"]
        lines.append(" address-family ipv4 unicast")
        for a, _, imp, exp in nbrs:
            lines += [f"  neighbor {a} activate", f"  neighbor {a} route-map {imp} in",
                      f"  neighbor {a} route-map {exp} out"]
        lines += [" exit-address-family", "!"]
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        conf = self.node.path("frr.conf")
        with open(conf, "w") as f:
            f.write(self.config())
        vty = self.node.path("frr-vty")
        os.makedirs(vty, exist_ok=True)
        zsock = self.node.path("zserv.api")
        if KERNEL:
            zconf = self.node.path("zebra.conf")
            with open(zconf, "w") as f:
                f.write("hostname dut\nlog stdout critical\n!\n")
            # zebra and bgpd drop to user frr: it must reach and own its files
            os.chmod(self.lab.tmp, 0o755)
            subprocess.run(["chown", "-R", "frr:frr", os.path.dirname(vty)], check=False)
            self.popen(["/usr/lib/frr/zebra", "-f", zconf, "-i", self.node.path("zebra.pid"), "-z", zsock,
                        "--vty_socket", vty, "-P", "0", "-u", "frr", "-g", "frr"], "zebra.log")
            L.wait_until(lambda: os.path.exists(zsock), 20, "zebra's zserv socket")
            self.popen(["/usr/lib/frr/bgpd", "-f", conf, "-i", self.node.path("bgpd.pid"), "-z", zsock,
                        "--vty_socket", vty, "-P", "0", "-u", "frr", "-g", "frr"], "bgpd.log")
        else:
            self.popen(["/usr/lib/frr/bgpd", "-f", conf, "-i", self.node.path("bgpd.pid"), "-z", zsock,
                        "--vty_socket", vty, "-P", "0", "-S", "-Z"], "bgpd.log")


class GoBgp(Daemon):
    name = "gobgp"

    def config(self) -> str:
        lines = ["[global.config]", f"  as = {DUT_AS}", f'  router-id = "{self.node.v4}"', "  port = 179",
                 f'  local-address-list = ["{self.node.v4}"]',
                 "[global.apply-policy.config]",
                 '  default-import-policy = "accept-route"', '  default-export-policy = "accept-route"']
        nbrs = [(a, FEEDER_AS + i, "feeder") for i, a in enumerate(feeders())]
        nbrs.append((OBSERVER, OBSERVER_AS, "observer"))
        for a, asn, role in nbrs:
            lines += ["", "[[neighbors]]", "  [neighbors.config]", f'    neighbor-address = "{a}"',
                      f"    peer-as = {asn}", "  [neighbors.timers.config]", "    hold-time = 180",
                      "    keepalive-interval = 60", "  [neighbors.transport.config]",
                      "    passive-mode = true", f'    local-address = "{self.node.v4}"',
                      "  [[neighbors.afi-safis]]", "    [neighbors.afi-safis.config]",
                      '      afi-safi-name = "ipv4-unicast"']
            if role == "feeder":
                # nothing back to the feeders, as the other daemons are told
                lines += ["  [neighbors.apply-policy.config]", '    default-export-policy = "reject-route"']
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        conf = self.node.path("gobgpd.toml")
        with open(conf, "w") as f:
            f.write(self.config())
        self.node.run(["gobgpd", "-d", "-f", conf, "-t", "toml"])
        self.popen(["gobgpd", "-f", conf, "-t", "toml", "-p", "-l", "warn",
                    "--api-hosts", "127.0.0.1:50051", "--pprof-disable"], "gobgpd.log")


DAEMONS = {"petrel": Petrel, "bird": Bird, "frr": Frr, "gobgp": GoBgp}


# ---- one run

def run_one(name: str) -> dict:
    if name == "floor":
        return run_floor()
    load = os.environ.get("LOAD")
    if not load:
        raise SystemExit("fulltable: LOAD (the petrel-load binary) is not set")
    out_dir = os.environ.get("OUT") or tempfile.mkdtemp(prefix="petrel-fulltable-")
    os.makedirs(out_dir, exist_ok=True)
    with L.Lab() as lab:
        dut, gen = lab.node("dut"), lab.node("gen")
        for a in [OBSERVER, *feeders()]:
            gen.run(["ip", "addr", "add", f"{a}/24", "dev", L.IFNAME])
        if V6:
            for a in feeders_v6():
                gen.run(["ip", "-6", "addr", "add", f"{a}/64", "dev", L.IFNAME, "nodad"])
        d = DAEMONS[name](lab, dut)
        t_start = time.monotonic()
        d.start()
        args = [load, "--daemon", dut.v4, "--daemon-as", str(DUT_AS), "--feeder-as", str(FEEDER_AS),
                "--v4", str(PREFIXES), "--timeout", str(TIMEOUT), "--hold", str(HOLD)]
        if OBSERVE:
            args += ["--observer", OBSERVER, "--observer-as", str(OBSERVER_AS)]
        for a in feeders():
            args += ["--feeder", a]
        if V6:
            args += ["--v6", str(V6)]
            for a in feeders_v6():
                args += ["--next-hop-v6", a]
        if d.metrics():
            args += ["--metrics", d.metrics()]
        if OBSERVER_LATE:
            args += ["--observer-late", "1"]
        if KERNEL:
            args += ["--kernel-netns", dut.ns, "--kernel-table", "254"]
        perf = None
        if os.environ.get("PERF_FREQ"):
            perf = subprocess.Popen(["perf", "record", "-F", os.environ["PERF_FREQ"], "-g",
                                     "-o", os.path.join(out_dir, "perf.data"), "-p", str(d.pids()[0])],
                                    stdout=subprocess.DEVNULL, stderr=open(os.path.join(out_dir, "perf.log"), "w"))
        result_path = os.path.join(out_dir, f"{name}-load.json")
        if os.path.exists(result_path):
            os.unlink(result_path)
        args += ["--json", result_path]
        lp = gen.popen(args, os.path.join(out_dir, f"{name}-load.log"))
        # The load generator prints its JSON when the load is complete,
        # then holds the sessions HOLD seconds.
        res: dict = {}
        deadline = time.monotonic() + TIMEOUT + 120
        while time.monotonic() < deadline:
            if os.path.exists(result_path):  # written whole, then renamed
                with open(result_path) as f:
                    res = json.load(f)
                break
            if lp.poll() is not None or not d.alive():
                break
            time.sleep(0.05)
        if perf is not None:
            perf.send_signal(signal.SIGINT)
            try:
                perf.wait(timeout=120)
            except subprocess.TimeoutExpired:
                perf.kill()
        pids = d.pids()
        after = {"rss_kib": sum(proc_mem(p).get("VmRSS", 0) for p in pids),
                 "peak_rss_kib": sum(proc_mem(p).get("VmHWM", 0) for p in pids),
                 "cpu_s": round(sum(proc_cpu(p) for p in pids), 2), **d.extra()}
        later: dict = {}
        if res and HOLD > 0:
            time.sleep(HOLD - 1 if HOLD > 1 else 0)
            later = {"rss_kib": sum(proc_mem(p).get("VmRSS", 0) for p in pids),
                     "peak_rss_kib": sum(proc_mem(p).get("VmHWM", 0) for p in pids), **d.extra()}
        try:
            lp.wait(timeout=HOLD + 30)
        except subprocess.TimeoutExpired:
            lp.kill()
        alive = d.alive()
        for p in d.procs:
            if p.poll() is None:
                lab.stop_process(p)
        # the daemon's logs and configuration (not its sockets)
        shutil.copytree(os.path.join(lab.tmp, "dut"), os.path.join(out_dir, f"{name}-dut"),
                        dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.vty", "*.api", "*.ctl"))
        lab.close()
    return {"daemon": name, "peers": PEERS, "prefixes": PREFIXES, "v6_prefixes": V6, "kernel": KERNEL,
            "observe": OBSERVE, "import_policy": IMPORT_POLICY or None,
            "expected_prefixes": EXPECTED if name == "petrel" else None,
            "daemon_alive": alive, "since_start_s": round(time.monotonic() - t_start, 1),
            "load": res, "after_load": after, "after_hold": later, "logs": out_dir}


def run_floor() -> dict:
    """The minimal batched installer (fib-sync --floor) in a fresh namespace."""
    b = os.environ.get("FIBSYNC")
    if not b:
        raise SystemExit("fulltable: FIBSYNC (the fib-sync binary) is not set")
    with L.Lab() as lab:
        n = lab.node("floor")
        t0 = time.monotonic()
        p = n.run([b, "--table", "100", "--metric", "32", "--synth", str(PREFIXES),
                   "--gateway", "198.18.0.2", "--floor"], timeout=TIMEOUT, check=False)
        secs = time.monotonic() - t0
        count = n.run(["sh", "-c", "ip route show table 100 | wc -l"], timeout=120).stdout.strip()
        lab.close()
    return {"daemon": "floor", "prefixes": PREFIXES, "kernel": True, "ok": p.returncode == 0,
            "kernel_complete_s": round(secs, 3), "kernel_routes": int(count or 0), "output": p.stdout[-400:]}


# ---- compare

def compare(names: list[str]) -> int:
    rows = []
    for name in names:
        log(f"{name}: {PEERS} peer(s), {PREFIXES} prefixes, kernel {'on' if KERNEL else 'off'}")
        r = run_one(name)
        print(json.dumps(r), flush=True)
        rows.append(r)
    print()
    print(f"| daemon | observer holds the table (s) | kernel holds it (s) | daemon CPU (s) | peak RSS (MiB) |")
    print("|---|---|---|---|---|")
    for r in rows:
        if r["daemon"] == "floor":
            print(f"| floor (batched netlink) | | {r['kernel_complete_s']} | | |")
            continue
        ld = r.get("load") or {}
        a = r.get("after_load") or {}
        peak = max(a.get("peak_rss_kib", 0), (r.get("after_hold") or {}).get("peak_rss_kib", 0))
        print(f"| {r['daemon']} | {ld.get('observer_complete_s')} | {ld.get('kernel_complete_s')} | "
              f"{a.get('cpu_s')} | {peak / 1024:.0f} |")
    return 0


def main() -> int:
    if len(sys.argv) >= 3 and sys.argv[1] == "run":
        print(json.dumps(run_one(sys.argv[2])), flush=True)
        return 0
    if len(sys.argv) >= 2 and sys.argv[1] == "compare":
        names = sys.argv[2:] or (["floor", "petrel", "bird", "frr"] if KERNEL
                                 else ["petrel", "bird", "frr", "gobgp"])
        return compare(names)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
