"""Petrel under a memory cap, for the hostile-peer suite (test_hostile.py).

`MemoryCgroup` makes one memory cgroup per test, under the cgroup the test
process is in (so that no limit of the machine's is escaped), with a cap
on its memory, and reads what the processes in it used at most:

- cgroup v2 (a `cgroup2` mount whose cgroup for this process offers the
  `memory` controller): `memory.max` caps, `memory.peak` (reset through
  its own file descriptor where the kernel allows, Linux 6.12+) or, on
  older kernels, the largest `memory.current` sampled, gives the peak;
  `memory.events` counts OOM kills.
- cgroup v1 (the `memory` controller mounted on its own, as on machines
  without systemd as PID 1): `memory.limit_in_bytes` caps,
  `memory.max_usage_in_bytes` (reset by writing 0) gives the peak,
  `memory.oom_control` counts OOM kills.

v2 is used when it offers the memory controller, else v1; when neither can
be used the tests skip, with the reason, loudly. Petrel joins the cgroup
before it runs: a shell writes its own pid to `cgroup.procs` and then
execs `petrel run` (`MemoryCgroup.wrapper()`, `lab.Petrel.wrapper`), so
every byte Petrel allocates is counted. At the end the processes left in
the cgroup (Petrel, started by the test) are killed by pid and the cgroup
removed.

The figures include the page cache the processes caused (Petrel's log
file): the bounds the tests state are for all of it. Each test also reads
Petrel's own peak resident set (VmHWM in /proc/PID/status) for its report.

`HostileLab` is the common setting of the suite: Petrel (node 1, kernel
routes on, under the cap), a bystander speaker (node 2) that holds an
honest route and shares a worker thread with the attacker, and the
attacker's speaker (node 3) with whatever capabilities the attack needs.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

import lab as L
import speaker as S

MiB = 1 << 20


class CgroupUnavailable(Exception):
    """No memory cgroup can be made here; the message says why."""


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, fs type, super options) of every mount, from mountinfo."""
    res = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            fields, rest = pre.split(), post.split()
            if len(fields) >= 5 and len(rest) >= 3:
                res.append((fields[4].replace("\\040", " "), rest[0], rest[2]))
    return res


def _own_cgroups() -> dict[str, str]:
    """controller list ('' for v2, 'memory', ...) -> this process's cgroup path."""
    res = {}
    for line in _read("/proc/self/cgroup").splitlines():
        hid, ctrls, path = line.split(":", 2)
        if hid == "0" and ctrls == "":
            res[""] = path
        for c in ctrls.split(","):
            if c:
                res[c] = path
    return res


_counter = 0
_counter_lock = threading.Lock()


class MemoryCgroup:
    """One memory cgroup with a cap; see the module's text."""

    def __init__(self, cap_bytes: int, tag: str = "t"):
        global _counter
        with _counter_lock:
            _counter += 1
            n = _counter
        self.name = f"petrel-hostile-{os.getpid()}-{n}-{tag}"[:64]
        self.cap = cap_bytes
        self.version, self.path = self._make()
        self._peak_fd: Optional[int] = None
        self._sampled_peak = 0
        self._sampler: Optional[threading.Thread] = None
        self._stop = threading.Event()
        try:
            if self.version == 2:
                _write(self._f("memory.max"), str(cap_bytes))
                if os.path.exists(self._f("memory.swap.max")):
                    _write(self._f("memory.swap.max"), "0")
            else:
                _write(self._f("memory.limit_in_bytes"), str(cap_bytes))
        except OSError:
            self.close()
            raise
        self._start_sampler()

    # ---- making it

    def _make(self) -> tuple[int, str]:
        reasons = []
        own = _own_cgroups()
        mounts = _mounts()
        # v2: a cgroup2 mount whose cgroup of ours has the memory controller
        for mnt, fstype, _ in mounts:
            if fstype != "cgroup2" or "" not in own:
                continue
            mine = os.path.normpath(mnt + own[""])
            try:
                ctrls = _read(os.path.join(mine, "cgroup.controllers")).split()
            except OSError as e:
                reasons.append(f"cgroup2 at {mnt}: {e}")
                continue
            if "memory" not in ctrls:
                reasons.append(f"cgroup2 at {mnt}: no memory controller (it is bound to v1)")
                continue
            # A child of ours needs memory in our subtree_control, which a
            # non-root cgroup with processes cannot enable (the "no internal
            # processes" rule): then a sibling, whose parent has it on.
            parent = mine
            sub = _read(os.path.join(mine, "cgroup.subtree_control")).split()
            if "memory" not in sub:
                try:
                    _write(os.path.join(mine, "cgroup.subtree_control"), "+memory")
                except OSError as e:
                    if os.path.normpath(mine) == os.path.normpath(mnt):
                        # the top of what we see (a cgroup namespace): no sibling
                        reasons.append(f"cgroup2 at {mnt}: cannot enable memory for children of "
                                       f"{mine}, which holds processes: {e}")
                        continue
                    parent = os.path.dirname(mine)
            path = os.path.join(parent, self.name)
            try:
                os.mkdir(path)
            except OSError as e:
                reasons.append(f"cgroup2 at {mnt}: mkdir {path}: {e}")
                continue
            if os.path.exists(os.path.join(path, "memory.max")):
                return 2, path
            os.rmdir(path)
            reasons.append(f"cgroup2 at {mnt}: {path} has no memory.max")
        # v1: the memory controller's own hierarchy
        for mnt, fstype, opts in mounts:
            if fstype != "cgroup" or "memory" not in opts.split(",") or "memory" not in own:
                continue
            mine = os.path.normpath(mnt + own["memory"])
            path = os.path.join(mine, self.name)
            try:
                os.mkdir(path)
            except OSError as e:
                reasons.append(f"cgroup v1 memory at {mnt}: mkdir {path}: {e}")
                continue
            if os.path.exists(os.path.join(path, "memory.limit_in_bytes")):
                return 1, path
            os.rmdir(path)
            reasons.append(f"cgroup v1 memory at {mnt}: no memory.limit_in_bytes")
        raise CgroupUnavailable("; ".join(reasons) or
                                "no cgroup2 mount with the memory controller and no cgroup v1 "
                                "memory mount")

    def _f(self, name: str) -> str:
        return os.path.join(self.path, name)

    @property
    def procs_file(self) -> str:
        return self._f("cgroup.procs")

    def wrapper(self) -> list[str]:
        """A command prefix that joins this cgroup, then execs the rest.

        In a sanitizer build (CI runs the integration suite on one) ASan's
        quarantine keeps freed memory for a while, 256 MiB by default: that
        would count as used. 16 MiB keeps recent frees checked and the
        figures about those of the real allocator."""
        return ["sh", "-c",
                'echo $$ > "$0" && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16" '
                'exec "$@"', self.procs_file]

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in _read(self.procs_file).split()]
        except OSError:
            return []

    # ---- reading it

    def current(self) -> int:
        return int(_read(self._f("memory.current" if self.version == 2 else "memory.usage_in_bytes")))

    def _start_sampler(self) -> None:
        """Samples the usage every 20 ms: the peak where the kernel keeps none
        that can be reset (v2 before Linux 6.12)."""
        def run():
            for _ in range(10 ** 7):  # bounded; stops with the cgroup
                if self._stop.wait(0.02):
                    return
                try:
                    self._sampled_peak = max(self._sampled_peak, self.current())
                except (OSError, ValueError):
                    return
        self._sampler = threading.Thread(target=run, daemon=True, name=f"memcg-{self.name}")
        self._sampler.start()

    def reset_peak(self) -> None:
        """From now on, peak() is the largest usage since this call."""
        self._sampled_peak = self.current()
        if self.version == 1:
            _write(self._f("memory.max_usage_in_bytes"), "0")
            return
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None
        try:
            fd = os.open(self._f("memory.peak"), os.O_RDWR)
        except OSError:
            return
        try:
            os.write(fd, b"reset\n")
            self._peak_fd = fd
        except OSError:   # before Linux 6.12: read-only; the sampler decides
            os.close(fd)

    def peak(self) -> int:
        """The most memory the cgroup held since it was made or reset_peak()."""
        sampled = max(self._sampled_peak, self.current())
        if self.version == 1:
            return max(sampled, int(_read(self._f("memory.max_usage_in_bytes"))))
        if self._peak_fd is not None:
            return max(sampled, int(os.pread(self._peak_fd, 64, 0)))
        return sampled

    def lifetime_peak(self) -> int:
        if self.version == 1:
            return int(_read(self._f("memory.max_usage_in_bytes")))  # (since the last reset)
        try:
            return int(_read(self._f("memory.peak")))
        except OSError:
            return self._sampled_peak

    def oom_kills(self) -> int:
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in _read(self._f(name)).splitlines():
                k, _, v = line.partition(" ")
                if k == "oom_kill":
                    return int(v)
        except OSError:
            pass
        return 0

    # ---- removing it

    def close(self) -> None:
        """Kills what is left inside (processes the test started) by pid,
        waits for the cgroup to empty (bounded), and removes it."""
        self._stop.set()
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None
        if not os.path.isdir(self.path):
            return
        for _ in range(50):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)   # the last process is still being reaped


def vm_hwm(pid: int) -> int:
    """A process's peak resident set size in bytes (VmHWM), 0 if gone."""
    try:
        for line in _read(f"/proc/{pid}/status").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# --------------------------------------------------------------------------
# the kernel routes Petrel installs (docs/kernel.md), as test_kernel.py reads them

TABLE = 100
METRIC = 32


def kernel_routes(node: L.Node, v6: bool = False) -> dict[str, list[str]]:
    """Petrel's routes in `node`'s table TABLE: prefix -> sorted gateways
    (or [type] for a route that is not unicast)."""
    cmd = ["ip", "-j"] + (["-6"] if v6 else []) + ["route", "show", "table", str(TABLE), "proto", "bgp"]
    p = node.run(cmd, check=False, timeout=60)
    if p.returncode != 0 and "table does not exist" in p.stderr:
        return {}
    if p.returncode != 0:
        raise L.LabError(p.stderr)
    res: dict[str, list[str]] = {}
    for r in json.loads(p.stdout or "[]"):
        if r.get("metric", 0) != METRIC:
            continue
        dst = r["dst"]
        if "/" not in dst and dst != "default":
            dst += "/128" if v6 else "/32"
        if r.get("type", "unicast") != "unicast":
            res[dst] = [r["type"]]
        elif "nexthops" in r:
            res[dst] = sorted(h["gateway"] for h in r["nexthops"])
        else:
            res[dst] = [r["gateway"]] if "gateway" in r else []
    return res


def find_key(obj: object, key: str) -> Optional[object]:
    """The value of the first `key` anywhere in a JSON value (depth first):
    for counters whose place in /api/peers the contract does not fix."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = find_key(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = find_key(v, key)
            if r is not None:
                return r
    return None


# --------------------------------------------------------------------------
# the setting: Petrel, a bystander, an attacker

PETREL_ASN = 65001
BYSTANDER_ASN = 65002
ATTACKER_ASN = 65003
HONEST = "198.51.100.0/24"       # the bystander's route: must stay best and installed
BYSTANDER_HOLD = 5               # a KEEPALIVE every ~1.7 s; a worker frozen for 5 s drops it
ATTACKER_HOLD = 9                # Petrel's KEEPALIVEs to it every 3 s


class KernelPetrel(L.Petrel):
    """`petrel run` with the kernel installer on (table TABLE, metric METRIC)."""

    def config(self) -> str:
        return super().config() + f"\n[kernel]\nenabled = true\ntable = {TABLE}\nmetric = {METRIC}\n"


@dataclass
class Attack:
    """How the attacker's [[peer]] is configured and how its speaker opens."""
    asn: int = ATTACKER_ASN
    families: tuple[str, ...] = ("ipv4-unicast", "ipv6-unicast")      # Petrel's side
    speaker_families: tuple[str, ...] = ("ipv4-unicast", "ipv6-unicast")
    as4: bool = True
    route_refresh: bool = True
    extended_message: bool = False
    add_path_send: bool = False        # offer ADD-PATH send for ipv4-unicast
    extra: tuple[str, ...] = ()        # more TOML lines for the attacker's [[peer]]
    export: str = "none"
    bystander_export: str = "none"
    passive: bool = True


@dataclass
class HostileLab:
    lab: L.Lab
    memcg: MemoryCgroup
    me: L.Node
    by: L.Node
    at: L.Node
    petrel: KernelPetrel
    bystander: S.Speaker
    attack: Attack
    notes: list[str] = field(default_factory=list)

    # ---- the attacker

    def attacker(self, connect: bool = True, **kw) -> S.Speaker:
        a = self.attack
        caps = b""
        if a.extended_message:
            caps += S.capability(S.CAP_EXTENDED_MESSAGE)
        if a.add_path_send:
            caps += S.add_path_capability({"ipv4-unicast": S.ADD_PATH_SEND})
        sp = L.speaker(self.at, a.asn, hold_time=ATTACKER_HOLD, families=a.speaker_families,
                       as4=a.as4, route_refresh=a.route_refresh, extra_caps=caps, **kw)
        if connect:
            sp.connect(self.me.v4, local=self.at.v4, netns=self.at.ns, timeout=15, attempts=30)
            sp.start()
            sp.wait_established(10)
        return sp

    def petrel_received(self, name: str, family: str = "ipv4-unicast") -> int:
        """The peer's routes of `family` in Petrel's table (-1: no answer)."""
        counts = self.petrel.petrel_received_counts() or {}
        return counts.get(name, {}).get(family, -1)

    # ---- what must hold after every attack

    def peer(self, name: str) -> dict:
        st = self.petrel.api_peer(name)
        if st is None and not self.petrel.alive():
            raise AssertionError(f"Petrel is dead (exit {self.petrel.proc.returncode}); log tail: "
                                 f"{self.petrel.log_text()[-600:]}")
        assert st is not None, f"/api/peers/{name} does not answer"
        return st

    def routes_to(self, prefix: str) -> list[dict]:
        """/api/routes/{prefix}: Petrel's routes to it ([] when none: 404)."""
        data = self.petrel.api(f"/api/routes/{prefix}", timeout=10)
        return data["routes"] if isinstance(data, dict) else []

    def report_memory(self, what: str) -> tuple[int, int]:
        pids = self.memcg.pids()
        hwm = vm_hwm(pids[0]) if pids else 0
        peak = self.memcg.peak()
        line = (f"{what}: cgroup v{self.memcg.version} peak {peak / MiB:.1f} MiB "
                f"(cap {self.memcg.cap / MiB:.0f} MiB, now {self.memcg.current() / MiB:.1f} MiB, "
                f"OOM kills {self.memcg.oom_kills()}), Petrel VmHWM {hwm / MiB:.1f} MiB")
        self.notes.append(line)
        print(line)
        return peak, hwm

    def assert_unharmed(self, bound_bytes: int, kernel4: dict[str, list[str]],
                        kernel6: Optional[dict[str, list[str]]] = None, what: str = "",
                        kernel_timeout: float = 10) -> None:
        """The daemon lives, its memory stayed under `bound_bytes` (the
        cgroup's peak since the last reset_peak()), the bystander's
        session is Established on both sides and was never re-made, and
        Petrel's kernel table holds exactly kernel4 (and kernel6)."""
        oom = self.memcg.oom_kills()
        assert self.petrel.alive(), \
            f"{what}: Petrel died (exit {self.petrel.proc.returncode}, {oom} OOM kill(s) in its " \
            f"cgroup of {self.memcg.cap / MiB:.0f} MiB)"
        assert oom == 0, f"{what}: {oom} OOM kill(s) in Petrel's cgroup"
        peak, _ = self.report_memory(what or "after the attack")
        assert peak <= bound_bytes, \
            f"{what}: Petrel's cgroup peaked at {peak / MiB:.1f} MiB, bound {bound_bytes / MiB:.1f} MiB"
        b = self.bystander
        assert not b.closed.is_set(), f"{what}: the bystander's session closed: {b.close_reason}; " \
                                      f"notification {b.notification!r}"
        st = self.peer("bystander")
        assert (st["state"], st["established_total"]) == ("established", 1), \
            f"{what}: the bystander in /api/peers: {st['state']}, established_total " \
            f"{st['established_total']}, last_error {st.get('last_error')}"
        want6 = kernel6 if kernel6 is not None else {}
        got: list = [None, None]

        def kernel_right():
            got[0], got[1] = kernel_routes(self.me), kernel_routes(self.me, v6=True)
            return got[0] == kernel4 and got[1] == want6
        try:
            L.wait_until(kernel_right, kernel_timeout, "the kernel table")
        except TimeoutError:
            g4, g6 = got
            raise AssertionError(
                f"{what}: Petrel's kernel table (table {TABLE}) holds "
                f"{_summary(g4)} / {_summary(g6)}; want {_summary(kernel4)} / {_summary(want6)}"
            ) from None


def _summary(routes: Optional[dict]) -> str:
    if routes is None:
        return "?"
    if len(routes) <= 6:
        return repr(routes)
    items = sorted(routes.items())
    return f"{len(routes)} routes, e.g. {dict(items[:3])}"


def start(lab: L.Lab, memcg: MemoryCgroup, attack: Attack,
          bystander_routes: Optional[list[str]] = None) -> HostileLab:
    """Petrel (under `memcg`) with the bystander and attacker peers, the
    bystander's session up and its routes (HONEST and `bystander_routes`)
    in Petrel's table and kernel. The attacker is not connected yet."""
    me, by, at = lab.node("petrel"), lab.node("bystander"), lab.node("attacker")
    # Peers go to the workers round robin (daemon/server.cpp, one worker
    # per core): with idle peers between them, the attacker and the
    # bystander share worker 0, so a worker the attacker freezes starves
    # the bystander's KEEPALIVEs.
    cores = os.cpu_count() or 1
    peers = [L.PetrelPeer("attacker", at.v4, attack.asn, me.v4, passive=attack.passive,
                          hold_time=ATTACKER_HOLD, families=attack.families,
                          export_policy=attack.export, extra=attack.extra)]
    for i in range(1, cores):
        peers.append(L.PetrelPeer(f"idle{i}", f"198.18.1.{i}", 65100 + i, me.v4, passive=True,
                                  families=("ipv4-unicast",)))
    peers.append(L.PetrelPeer("bystander", by.v4, BYSTANDER_ASN, me.v4, passive=True,
                              hold_time=BYSTANDER_HOLD, export_policy=attack.bystander_export))
    petrel = KernelPetrel(me, peers, PETREL_ASN)
    # The page cache of the binary (70 MB in a sanitizer build) is charged
    # to the cgroup of whoever reads it first: let that be this process.
    if os.path.exists(petrel.binary):
        with open(petrel.binary, "rb") as f:
            for _ in range(10 ** 5):
                if not f.read(1 << 20):
                    break
    petrel.wrapper = memcg.wrapper()
    petrel.start()
    assert memcg.pids(), "Petrel did not join its memory cgroup"

    bystander = L.speaker(by, BYSTANDER_ASN, hold_time=BYSTANDER_HOLD)
    bystander.connect(me.v4, local=by.v4, netns=by.ns, timeout=15, attempts=30)
    bystander.start()
    bystander.wait_established(10)
    bystander.send_update([HONEST], by.v4)
    routes = list(bystander_routes or [])
    for i in range(0, len(routes), 900):   # 900 /24s (4 octets each) an UPDATE
        bystander.send_update(routes[i:i + 900], by.v4)
    h = HostileLab(lab, memcg, me, by, at, petrel, bystander, attack)
    want = 1 + len(routes)
    L.wait_until(lambda: (h.petrel_received("bystander") == want) or None, 60,
                 f"Petrel holds the bystander's {want} route(s)")
    return h


def prefixes(n: int, first_octet: int = 10) -> list[str]:
    """n distinct /24s from first_octet.0.0.0 on (256 * 256 per octet)."""
    return [str(ipaddress.ip_network(f"{first_octet + (i >> 16)}.{(i >> 8) & 255}.{i & 255}.0/24"))
            for i in range(n)]
