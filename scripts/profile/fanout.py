#!/usr/bin/python3
"""Many members of a route server (docs/fulltable-lab.md, "Many members";
docs/performance.md). Driven by scripts/profile/fanout.sh and
tests/integration/test_fanout.py.

One lab (tests/integration/lab.py): the daemon under test in namespace
"dut" (198.18.0.1, and 198.19.255.254/15 so that every member is directly
connected), petrel-fanout in namespace "gen" playing MEMBERS members from
198.18.1.1 up (member i: 198.18.1.1 + i, AS 65001 + i). Each member
announces its slice of a PREFIXES-prefix /24 table and must receive every
other member's; the daemon passes every route to every member but the one
it came from:
  - Petrel: a plain external peer per member, import and export "all"
    (PETREL_RS=1 adds `route_server_client = true` to each);
  - BIRD 2: `rs client` per member;
  - OpenBGPD: `transparent-as yes` for the group of members;
  - FRR bgpd: `route-server-client` per member.

  fanout.py run DAEMON     one run, one JSON line on stdout
     DAEMON: petrel | bird | openbgpd | frr
  fanout.py compare D...   one daemon after the other, then a table

Environment: PETREL (the petrel binary), FANOUT (petrel-fanout), MEMBERS
(200), PREFIXES (100000), SPREAD (connect spread, 4 s), FLAPPERS (MEMBERS /
14), SETTLE (2 s), TIMEOUT (600 s), PETREL_RS (0), WITHHOLD (members, by
name "m1,m2", to whom Petrel exports nothing: the test that the tool
sees an incomplete member), OUT (a directory for logs). Needs root.
Every wait is bounded.
"""
import ipaddress
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
MEMBER_AS = 65001
MEMBER_BASE = "198.18.1.1"
WIDE = "198.19.255.254/15"   # the daemon's second address: every member on-link


def env_num(name: str, default: float) -> float:
    v = os.environ.get(name, "")
    return float(v) if v else default


MEMBERS = int(env_num("MEMBERS", 200))
PREFIXES = int(env_num("PREFIXES", 100_000))
SPREAD = env_num("SPREAD", 4)
FLAPPERS = int(env_num("FLAPPERS", MEMBERS // 14))
SETTLE = env_num("SETTLE", 2)
TIMEOUT = env_num("TIMEOUT", 600)
PETREL_RS = os.environ.get("PETREL_RS", "0") == "1"
WITHHOLD = set(filter(None, os.environ.get("WITHHOLD", "").split(",")))


def members() -> list[tuple[str, str, int]]:
    """(name, address, AS) of every member."""
    base = int(ipaddress.IPv4Address(MEMBER_BASE))
    return [(f"m{i + 1}", str(ipaddress.IPv4Address(base + i)), MEMBER_AS + i) for i in range(MEMBERS)]


def log(*a) -> None:
    print("fanout:", *a, file=sys.stderr, flush=True)


class Daemon:
    name = "?"

    def __init__(self, node: L.Node):
        self.node = node
        self.proc: subprocess.Popen | None = None

    def write(self, filename: str, text: str) -> str:
        path = self.node.path(filename)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o600)
        return path

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class Petrel(Daemon):
    name = "petrel"

    def config(self) -> str:
        q = json.dumps
        v4 = self.node.v4
        lines = ["[router]", f"asn = {DUT_AS}", f"router_id = {q(v4)}", f"listen = {q([v4])}", "port = 179",
                 f"expected_ipv4_prefixes = {PREFIXES}", 'user = "root"', "[http]", f"listen = {q(v4 + ':8179')}"]
        for name, addr, asn in members():
            lines += ["", "[[peer]]", f"name = {q(name)}", f"address = {q(addr)}", f"asn = {asn}",
                      "passive = true", "hold_time = 180", 'families = ["ipv4-unicast"]',
                      f"local_address = {q(v4)}", 'import = "all"',
                      f"export = {q('none' if name in WITHHOLD else 'all')}"]
            if PETREL_RS:
                lines.append("route_server_client = true")
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        conf = self.write("petrel.toml", self.config())
        binary = os.environ.get("PETREL") or L.petrel_binary()
        self.proc = self.node.popen([binary, "run", "-c", conf], self.node.path("petrel.log"))


class Bird(Daemon):
    name = "bird"

    def config(self) -> str:
        v4 = self.node.v4
        lines = [f'log "{self.node.path("bird-daemon.log")}" {{ warning, error, fatal }};',
                 f"router id {v4};", "protocol device { scan time 10; }",
                 f"template bgp rsmember {{ local {v4} as {DUT_AS}; passive on; hold time 180; rs client; "
                 "ipv4 { import all; export all; }; }"]
        for name, addr, asn in members():
            lines.append(f"protocol bgp {name} from rsmember {{ neighbor {addr} as {asn}; }}")
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        conf = self.write("bird.conf", self.config())
        self.node.run(["bird", "-p", "-c", conf])
        self.proc = self.node.popen(["bird", "-f", "-c", conf, "-s", self.node.path("bird.ctl"),
                                     "-P", self.node.path("bird.pid")], self.node.path("bird.log"))


class OpenBgpd(Daemon):
    name = "openbgpd"

    def config(self) -> str:
        v4 = self.node.v4
        lines = [f"AS {DUT_AS}", f"router-id {v4}", f'socket "{self.node.path("bgpd.sock")}"',
                 "fib-update no", f"listen on {v4}", 'group "members" {', "  transparent-as yes",
                 "  passive", "  holdtime 180", f"  local-address {v4}", "  announce IPv4 unicast"]
        for name, addr, asn in members():
            lines += [f"  neighbor {addr} {{", f"    remote-as {asn}", f'    descr "{name}"', "  }"]
        lines += ["}", "allow from any", "allow to any"]
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        conf = self.write("bgpd.conf", self.config())
        # its own mount namespace: bgpd chroots into /run/openbgpd
        inner = ("mount -t tmpfs -o mode=0755 lab-run /run && mkdir -p /run/openbgpd && "
                 f"bgpd -n -f {conf} && exec bgpd -d -f {conf}")
        self.proc = self.node.popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", inner],
                                    self.node.path("bgpd.log"))


class Frr(Daemon):
    name = "frr"

    def config(self) -> str:
        v4 = self.node.v4
        lines = ["frr defaults traditional", "hostname dut", "log stdout critical", "!",
                 f"router bgp {DUT_AS}", f" bgp router-id {v4}", " no bgp ebgp-requires-policy",
                 " no bgp default ipv4-unicast", " no bgp network import-check", " timers bgp 60 180"]
        for _, addr, asn in members():
            lines += [f" neighbor {addr} remote-as {asn}", f" neighbor {addr} passive",
                      f" neighbor {addr} update-source {v4}", f" neighbor {addr} advertisement-interval 0"]
        lines.append(" address-family ipv4 unicast")
        for _, addr, _ in members():
            lines += [f"  neighbor {addr} activate", f"  neighbor {addr} route-server-client"]
        lines += [" exit-address-family", "!"]
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        conf = self.write("frr.conf", self.config())
        vty = self.node.path("frr-vty")
        os.makedirs(vty, exist_ok=True)
        self.proc = self.node.popen(["/usr/lib/frr/bgpd", "-f", conf, "-i", self.node.path("bgpd.pid"),
                                     "-z", self.node.path("zserv.api"), "--vty_socket", vty, "-P", "0",
                                     "-S", "-Z"], self.node.path("bgpd.log"))


DAEMONS = {"petrel": Petrel, "bird": Bird, "openbgpd": OpenBgpd, "frr": Frr}


def listening(node: L.Node) -> bool:
    out = node.run(["ss", "-Hltn", "sport", "= :179"], check=False).stdout
    return bool(out.strip())


def run_one(name: str) -> dict:
    fanout = os.environ.get("FANOUT") or sys.exit("fanout: FANOUT (the petrel-fanout binary) is not set")
    out_dir = os.environ.get("OUT") or tempfile.mkdtemp(prefix="petrel-fanout-")
    os.makedirs(out_dir, exist_ok=True)
    with L.Lab() as lab:
        dut, gen = lab.node("dut"), lab.node("gen")
        dut.run(["ip", "addr", "add", WIDE, "dev", L.IFNAME])
        batch = "".join(f"addr add {a}/15 dev {L.IFNAME}\n" for _, a, _ in members())
        gen.run(["ip", "-batch", "-"], input=batch, timeout=60)
        d = DAEMONS[name](dut)
        t_start = time.monotonic()
        d.start()
        L.wait_until(lambda: listening(dut) or not d.alive(), 30, f"{name} listening on port 179")
        if not d.alive():
            raise L.LabError(f"{name} exited at start; its log is in {lab.tmp}/dut")
        result_path = os.path.join(out_dir, f"{name}-fanout.json")
        if os.path.exists(result_path):
            os.unlink(result_path)
        args = [fanout, "--daemon", dut.v4, "--daemon-as", str(DUT_AS), "--members", str(MEMBERS),
                "--member-base", MEMBER_BASE, "--member-as", str(MEMBER_AS), "--prefixes", str(PREFIXES),
                "--flappers", str(FLAPPERS), "--connect-spread", str(SPREAD), "--settle", str(SETTLE),
                "--timeout", str(TIMEOUT), "--daemon-pid", str(d.proc.pid), "--json", result_path]
        lp = gen.popen(args, os.path.join(out_dir, f"{name}-fanout.log"))
        try:
            lp.wait(timeout=TIMEOUT + 60)
        except subprocess.TimeoutExpired:
            lab.stop_process(lp)
        res: dict = {}
        if os.path.exists(result_path):
            with open(result_path) as f:
                res = json.load(f)
        alive = d.alive()
        if alive and name == "petrel":
            # What the settled daemon holds, by its own account (docs/metrics.md).
            for what, url in (("status", "/api/status"), ("metrics", "/metrics")):
                r = dut.run(["curl", "-sS", "--max-time", "10", f"http://{dut.v4}:8179{url}"], check=False)
                with open(os.path.join(out_dir, f"petrel-{what}.txt"), "w") as f:
                    f.write(r.stdout)
        if d.proc is not None:
            lab.stop_process(d.proc)
        shutil.copytree(os.path.join(lab.tmp, "dut"), os.path.join(out_dir, f"{name}-dut"), dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.vty", "*.api", "*.ctl", "*.sock"))
    return {"daemon": name, "members": MEMBERS, "prefixes": PREFIXES, "route_server_client": PETREL_RS,
            "fanout_exit": lp.returncode, "daemon_alive": alive,
            "since_start_s": round(time.monotonic() - t_start, 1), "fanout": res, "logs": out_dir}


def mib(kib) -> str:
    return "-" if kib is None else f"{kib / 1024:.0f}"


def pair(r: dict, what: str) -> str:
    return f"{r.get(what + '_p50_s')} / {r.get(what + '_worst_s')}"


def run_printed(name: str) -> dict:
    """One run, its JSON line printed as soon as it is over."""
    log(f"{name}: {MEMBERS} members, {PREFIXES} prefixes, spread {SPREAD} s, {FLAPPERS} flappers")
    r = run_one(name)
    print(json.dumps(r), flush=True)
    return r


def compare(names: list[str]) -> int:
    rows = [run_printed(name) for name in names]
    print()
    print("| daemon | Established | last Established (s) | connect wait p50 / worst (s) | "
          "cold start p50 / worst (s) | withdrawal p50 / worst (s) | return p50 / worst (s) | "
          "RSS settled (MiB) | peak RSS (MiB) | CPU (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        f = r.get("fanout") or {}
        print(f"| {r['daemon']} | {f.get('established')}/{MEMBERS} | {f.get('last_established_s')} | "
              f"{pair(f, 'connect_wait')} | {pair(f, 'cold_start')} | {pair(f, 'withdrawal')} | "
              f"{pair(f, 'return')} | {mib(f.get('daemon_settled_rss_kib'))} | "
              f"{mib(f.get('daemon_end_peak_rss_kib'))} | {f.get('daemon_end_cpu_s')} |")
    return 0


def main(argv: list[str]) -> int:
    cmd, names = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    if cmd == "run" and len(names) == 1:
        print(json.dumps(run_one(names[0])), flush=True)
        return 0
    if cmd == "compare":
        return compare(names or ["petrel", "bird", "openbgpd"])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main(sys.argv))
