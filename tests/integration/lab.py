"""The interop lab: network namespaces, real BGP peers and their state.

Python standard library only. Everything this module creates (network
namespaces, processes, temporary directories, sockets) is registered with
the Lab that created it and removed by Lab.close(), which also runs from an
atexit hook and on SIGTERM/SIGHUP, so an interrupted run leaves nothing
behind.

Topology: one hub namespace holding a Linux bridge, and one namespace per
node, each node joined to the bridge by a veth pair whose node end is
called `lab0`. Node i has 198.18.0.i/24, fd00:bb::i/64 and the link-local
fe80::i/64 on `lab0` (DAD off, no kernel-generated link-local address), so
every node can peer with every other over IPv4, IPv6 and link-local IPv6,
and each daemon binds port 179 in its own namespace. Node 1 is, by
convention, the device under test (Petrel, or the Python test speaker).

Namespace names carry the test run's pid and a counter, so parallel runs do
not clash: `plab<pid>x<n>h` (hub) and `plab<pid>x<n>n<i>` (nodes).
"""

from __future__ import annotations

import atexit
import ctypes
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

IFNAME = "lab0"
SUBNET4 = "198.18.0.0/24"
SUBNET6 = "fd00:bb::/64"
FAMILIES = ("ipv4-unicast", "ipv6-unicast")

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)

# --------------------------------------------------------------------------
# small helpers


class LabError(RuntimeError):
    pass


class LabUnavailable(LabError):
    """The lab cannot run here (not root, no netns support, missing tool)."""


def run(cmd: list[str], *, check: bool = True, timeout: float = 20,
        input: Optional[str] = None) -> subprocess.CompletedProcess:
    """Runs a command (no shell) and returns its completed process."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       input=input)
    if check and p.returncode != 0:
        raise LabError(f"{' '.join(cmd)} exited {p.returncode}: "
                       f"{p.stderr.strip() or p.stdout.strip()}")
    return p


def wait_until(pred: Callable[[], object], timeout: float, what: str = "",
               interval: float = 0.2) -> object:
    """Polls pred() until it returns a truthy value or timeout seconds pass.

    Returns that value; raises TimeoutError naming `what` and the last value
    (or exception) seen. Bounded by time and by count (timeout/interval+1).
    """
    deadline = time.monotonic() + timeout
    last: object = None
    tries = int(timeout / interval) + 2
    for _ in range(tries):
        try:
            last = pred()
            if last:
                return last
        except Exception as e:  # the peer may not be ready to answer yet
            last = e
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for "
                       f"{what or pred}; last: {last!r}")


def family_of(prefix: str) -> str:
    return "ipv6-unicast" if ":" in prefix else "ipv4-unicast"


def check_available() -> None:
    """Raises LabUnavailable with a reason if namespaces cannot be made."""
    if os.geteuid() != 0:
        raise LabUnavailable("the interop lab needs root (network namespaces)")
    for tool in ("ip",):
        if shutil.which(tool) is None:
            raise LabUnavailable(f"`{tool}` not found (install iproute2)")
    name = f"plabprobe{os.getpid()}"
    p = run(["ip", "netns", "add", name], check=False)
    if p.returncode != 0:
        raise LabUnavailable(f"cannot create a network namespace: "
                             f"{p.stderr.strip()}")
    run(["ip", "netns", "del", name], check=False)


# --------------------------------------------------------------------------
# cleanup registry: every live Lab, closed at exit and on SIGTERM/SIGHUP

_live_labs: "set[Lab]" = set()
_live_lock = threading.Lock()
_handlers_installed = False


def _close_all() -> None:
    with _live_lock:
        labs = list(_live_labs)
    for lab in labs:
        lab.close()


def _on_signal(signum, frame):  # noqa: ARG001
    _close_all()
    raise SystemExit(128 + signum)


def _install_handlers() -> None:
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_close_all)
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(s) in (signal.SIG_DFL, None):
                signal.signal(s, _on_signal)


# --------------------------------------------------------------------------
# the lab


@dataclass
class Node:
    lab: "Lab"
    name: str
    index: int
    ns: str

    @property
    def v4(self) -> str:
        return f"198.18.0.{self.index}"

    @property
    def v6(self) -> str:
        return f"fd00:bb::{self.index:x}"

    @property
    def ll(self) -> str:
        return f"fe80::{self.index:x}"

    ifname = IFNAME

    def addr(self, transport: str) -> str:
        """The node's address for a transport: 'v4', 'v6' or 'll'."""
        return {"v4": self.v4, "v6": self.v6, "ll": self.ll}[transport]

    def run(self, cmd: list[str], **kw) -> subprocess.CompletedProcess:
        return run(["ip", "netns", "exec", self.ns, *cmd], **kw)

    def popen(self, cmd: list[str], log: str, **kw) -> subprocess.Popen:
        """Starts a long-running command in the namespace, output to `log`."""
        return self.lab.popen(["ip", "netns", "exec", self.ns, *cmd], log, **kw)

    def socket(self, family: int, type: int = socket.SOCK_STREAM) -> socket.socket:
        """A socket created inside this node's namespace (usable anywhere)."""
        return self.lab.socket_in(self.ns, family, type)

    def path(self, name: str) -> str:
        d = os.path.join(self.lab.tmp, self.name)
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, name)


class Lab:
    """A set of namespaces joined by a bridge, with cleanup of everything."""

    _counter = 0

    def __init__(self, keep_tmp: bool = False):
        check_available()
        Lab._counter += 1
        self.id = f"plab{os.getpid()}x{Lab._counter}"
        self.tmp = tempfile.mkdtemp(prefix=f"petrel-{self.id}-")
        self.keep_tmp = keep_tmp or bool(os.environ.get("PETREL_LAB_KEEP"))
        self.hub = f"{self.id}h"
        self.nodes: dict[str, Node] = {}
        self._namespaces: list[str] = []
        self._procs: list[subprocess.Popen] = []
        self._closers: list[Callable[[], None]] = []
        self._closed = False
        with _live_lock:
            _live_labs.add(self)
        _install_handlers()
        try:
            self._add_ns(self.hub)
            self._ns_run(self.hub, ["ip", "link", "add", "br0", "type", "bridge",
                                    "stp_state", "0", "mcast_snooping", "0"])
            self._ns_run(self.hub, ["ip", "link", "set", "br0", "up"])
        except BaseException:
            self.close()
            raise

    # ---- namespaces

    def _ns_run(self, ns: str, cmd: list[str]) -> None:
        run(["ip", "netns", "exec", ns, *cmd])

    def _add_ns(self, ns: str) -> None:
        run(["ip", "netns", "add", ns])
        self._namespaces.append(ns)
        self._ns_run(ns, ["ip", "link", "set", "lo", "up"])
        for k in ("all", "default"):
            self._ns_run(ns, ["sysctl", "-qw", f"net.ipv6.conf.{k}.accept_dad=0"])

    def node(self, name: str, index: Optional[int] = None) -> Node:
        """Creates node `name` (index 1, 2, ... in creation order)."""
        if name in self.nodes:
            return self.nodes[name]
        if index is None:
            index = len(self.nodes) + 1
        if not 1 <= index <= 250 or any(n.index == index for n in self.nodes.values()):
            raise LabError(f"bad or duplicate node index {index}")
        ns = f"{self.id}n{index}"
        self._add_ns(ns)
        hub_end = f"v{index}"
        tmp_end = f"{self.id[-6:]}t{index}"[:15]
        # create the pair in the hub, then move one end into the node
        self._ns_run(self.hub, ["ip", "link", "add", hub_end, "type", "veth",
                                "peer", "name", tmp_end])
        self._ns_run(self.hub, ["ip", "link", "set", tmp_end, "netns", ns])
        self._ns_run(self.hub, ["ip", "link", "set", hub_end, "master", "br0"])
        self._ns_run(self.hub, ["ip", "link", "set", hub_end, "up"])
        self._ns_run(ns, ["ip", "link", "set", tmp_end, "name", IFNAME])
        # no kernel-generated link-local address: only fe80::<index>
        self._ns_run(ns, ["ip", "link", "set", IFNAME, "addrgenmode", "none"])
        self._ns_run(ns, ["ip", "link", "set", IFNAME, "up"])
        node = Node(self, name, index, ns)
        self._ns_run(ns, ["ip", "addr", "add", f"{node.v4}/24", "dev", IFNAME])
        self._ns_run(ns, ["ip", "-6", "addr", "add", f"{node.v6}/64", "dev", IFNAME, "nodad"])
        self._ns_run(ns, ["ip", "-6", "addr", "add", f"{node.ll}/64", "dev", IFNAME, "nodad"])
        self.nodes[name] = node
        return node

    def socket_in(self, ns: str, family: int, type: int = socket.SOCK_STREAM, proto: int = 0) -> socket.socket:
        """Creates a socket inside namespace `ns` from this thread.

        setns(2) applies to the calling thread only; the thread returns to
        its own namespace before this returns. The socket stays in `ns`.
        """
        with open(f"/run/netns/{ns}", "rb") as target, \
                open("/proc/thread-self/ns/net", "rb") as home:
            if _libc.setns(target.fileno(), _CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise OSError(e, f"setns({ns}): {os.strerror(e)}")
            try:
                s = socket.socket(family, type, proto)
            finally:
                if _libc.setns(home.fileno(), _CLONE_NEWNET) != 0:
                    e = ctypes.get_errno()
                    raise OSError(e, f"setns(back): {os.strerror(e)}")
        self._closers.append(s.close)
        return s

    # ---- processes

    def popen(self, cmd: list[str], log: str, **kw) -> subprocess.Popen:
        logf = open(log, "ab")
        try:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf,
                                 stderr=subprocess.STDOUT, start_new_session=True,
                                 **kw)
        finally:
            logf.close()
        self._procs.append(p)
        return p

    def on_close(self, fn: Callable[[], None]) -> None:
        self._closers.append(fn)

    @staticmethod
    def stop_process(p: subprocess.Popen, sig: int = signal.SIGTERM,
                     timeout: float = 5) -> Optional[int]:
        """Signals a process group and waits; SIGKILL after `timeout`."""
        if p.poll() is not None:
            return p.returncode
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return p.wait(5)

    def _ns_pids(self, ns: str) -> list[int]:
        p = run(["ip", "netns", "pids", ns], check=False)
        return [int(x) for x in p.stdout.split() if x.isdigit()]

    def close(self) -> None:
        """Removes everything this lab made. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        for fn in reversed(self._closers):
            try:
                fn()
            except Exception:
                pass
        for p in self._procs:
            try:
                self.stop_process(p, signal.SIGTERM, timeout=3)
            except Exception:
                pass
        # anything else still running inside our namespaces (forked children)
        for ns in self._namespaces:
            for _ in range(3):
                pids = self._ns_pids(ns)
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.1)
        for ns in reversed(self._namespaces):
            run(["ip", "netns", "del", ns], check=False)
        if not self.keep_tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
        with _live_lock:
            _live_labs.discard(self)

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def remove_stale(prefix: str = "plab") -> list[str]:
    """Deletes lab namespaces whose creating process no longer exists."""
    removed = []
    p = run(["ip", "netns", "list"], check=False)
    for line in p.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.match(rf"{prefix}(\d+)x\d+", name)
        if not m:
            continue
        pid = int(m.group(1))
        if os.path.exists(f"/proc/{pid}"):
            continue
        for q in [int(x) for x in run(["ip", "netns", "pids", name], check=False).stdout.split()]:
            try:
                os.kill(q, signal.SIGKILL)
            except ProcessLookupError:
                pass
        run(["ip", "netns", "del", name], check=False)
        removed.append(name)
    return removed


# --------------------------------------------------------------------------
# real peers


@dataclass
class Session:
    """What a daemon is told about its one neighbour."""
    local_asn: int
    peer_asn: int
    peer_address: str           # e.g. 198.18.0.1, fd00:bb::1, fe80::1
    local_address: str
    passive: bool = False
    families: tuple[str, ...] = FAMILIES
    hold_time: int = 9
    connect_retry: int = 1
    announce: tuple[str, ...] = ()   # prefixes to originate
    password: str = ""               # TCP MD5 (RFC 2385); "" for none
    ttl_security: bool = False       # GTSM (RFC 5082), one hop

    @property
    def link_local(self) -> bool:
        return self.peer_address.lower().startswith("fe80:")


@dataclass
class PeerState:
    """A daemon's view of its neighbour, normalised across daemons."""
    state: str                        # "Established", "Active", "Idle", ...
    received: dict[str, int] = field(default_factory=dict)  # family -> count
    raw: object = None

    @property
    def established(self) -> bool:
        return self.state.lower() == "established"


class Peer:
    """A real BGP daemon in a node's namespace with one configured neighbour."""

    kind = "peer"

    def __init__(self, node: Node, session: Session):
        self.node = node
        self.session = session
        self.proc: Optional[subprocess.Popen] = None
        self.log = node.path(f"{self.kind}.log")

    def announce_nexthop(self, family: str) -> str:
        return self.node.v6 if family == "ipv6-unicast" else self.node.v4

    def start(self) -> "Peer":
        raise NotImplementedError

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 5) -> Optional[int]:
        if self.proc is None:
            return None
        return Lab.stop_process(self.proc, sig, timeout)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def state(self) -> PeerState:
        raise NotImplementedError

    def received_prefixes(self, family: str) -> set[str]:
        raise NotImplementedError

    def log_text(self) -> str:
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def _check_alive(self) -> None:
        if not self.alive():
            raise LabError(f"{self.kind} in {self.node.name} exited "
                           f"({self.proc.returncode if self.proc else None}); "
                           f"log tail:\n{self.log_text()[-2000:]}")

    def wait_established(self, timeout: float = 20) -> PeerState:
        def pred():
            self._check_alive()
            st = self.state()
            return st if st.established else None
        return wait_until(pred, timeout, f"{self.kind} session Established")

    def wait_received(self, counts: dict[str, int], timeout: float = 20) -> PeerState:
        """Waits until the received-route counts equal `counts` exactly."""
        def pred():
            self._check_alive()
            st = self.state()
            got = {f: st.received.get(f, 0) for f in counts}
            return st if got == counts else None
        return wait_until(pred, timeout, f"{self.kind} received {counts}")

    def __repr__(self) -> str:
        return f"<{self.kind} in {self.node.name} ({self.node.v4})>"


# ---- BIRD 2


class Bird(Peer):
    kind = "bird"
    proto = "peer"

    @property
    def sock(self) -> str:
        return self.node.path("bird.ctl")

    def config(self) -> str:
        s = self.session
        lines = [
            f'log "{self.node.path("bird-daemon.log")}" all;',
            f"router id {self.node.v4};",
            "protocol device { scan time 10; }",
        ]
        for fam, ver in (("ipv4-unicast", "ipv4"), ("ipv6-unicast", "ipv6")):
            routes = [p for p in s.announce if family_of(p) == fam]
            if routes:
                body = " ".join(f"route {p} blackhole;" for p in routes)
                lines.append(f"protocol static static_{ver} {{ {ver}; {body} }}")
        nbr = s.peer_address
        local = s.local_address
        if s.link_local:
            nbr = f"{nbr}%{IFNAME}"
        lines.append(f"protocol bgp {self.proto} {{")
        lines.append(f"  local {local} as {s.local_asn};")
        lines.append(f"  neighbor {nbr} as {s.peer_asn};")
        if s.link_local:
            lines.append(f'  interface "{IFNAME}";')
        lines.append(f"  passive {'on' if s.passive else 'off'};")
        lines.append(f"  hold time {s.hold_time}; keepalive time {max(1, s.hold_time // 3)};")
        lines.append(f"  connect delay time 1; connect retry time {max(1, s.connect_retry)};")
        lines.append("  error wait time 1, 2;")
        if s.password:
            lines.append(f'  password "{s.password}";')
        if s.ttl_security:
            lines.append("  ttl security on;")
        session_v6 = ":" in s.peer_address
        for fam, ver in (("ipv4-unicast", "ipv4"), ("ipv6-unicast", "ipv6")):
            if fam not in s.families:
                continue
            opts = "import all; export all;"
            # routes of the other family than the session's need an explicit
            # next hop of that family (BIRD has only the session's address)
            if (ver == "ipv4") == session_v6 or (ver == "ipv6" and s.link_local):
                opts += f" next hop address {self.announce_nexthop(fam)};"
            if ver == "ipv6" and not s.link_local:
                # BIRD adds its link-local address to IPv6 next hops on a
                # shared subnet; FRR without zebra withdraws such routes.
                # One global next hop is what every peer accepts.
                opts = opts.replace("export all;", "export filter { "
                                    f"bgp_next_hop = {self.node.v6}; accept; }};")
            lines.append(f"  {ver} {{ {opts} }};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def start(self) -> "Bird":
        conf = self.node.path("bird.conf")
        with open(conf, "w") as f:
            f.write(self.config())
        self.node.run(["bird", "-p", "-c", conf])
        self.proc = self.node.popen(["bird", "-f", "-c", conf, "-s", self.sock,
                                     "-P", self.node.path("bird.pid")], self.log)
        wait_until(lambda: os.path.exists(self.sock) or self._check_alive(), 10,
                   "bird control socket")
        return self

    def birdc(self, *cmd: str) -> str:
        return run(["birdc", "-s", self.sock, *cmd], timeout=10).stdout

    def since(self) -> float:
        """When the protocol entered its state (`show protocols`' since
        column, HH:MM:SS.mmm), in seconds into the day. BIRD renders its
        monotonic clock as wall-clock time at each call, so two readings of
        one moment can differ by a millisecond: compare with same_moment()."""
        line = next(x for x in self.birdc("show", "protocols", self.proto).splitlines()
                    if x.startswith(self.proto))
        h, m, s = line.split()[4].split(":")
        return int(h) * 3600 + int(m) * 60 + float(s)


    def state(self) -> PeerState:
        out = self.birdc("show", "protocols", "all", self.proto)
        m = re.search(r"BGP state:\s+(\S+)", out)
        st = m.group(1) if m else "unknown"
        received: dict[str, int] = {}
        for ch in re.finditer(r"Channel (ipv4|ipv6)\n(.*?)(?=\n\s*Channel |\Z)", out, re.S):
            rm = re.search(r"Routes:\s+(\d+) imported", ch.group(2))
            fam = f"{ch.group(1)}-unicast"
            received[fam] = int(rm.group(1)) if rm else 0
        return PeerState(st, received, out)

    def last_error(self) -> str:
        out = self.birdc("show", "protocols", "all", self.proto)
        m = re.search(r"Last error:\s+(.*)", out)
        return m.group(1).strip() if m else ""

    def received_prefixes(self, family: str) -> set[str]:
        out = self.birdc("show", "route", "protocol", self.proto)
        want6 = family == "ipv6-unicast"
        res = set()
        for line in out.splitlines():
            tok = line.split()
            if tok and "/" in tok[0] and (":" in tok[0]) == want6:
                res.add(str(ipaddress.ip_network(tok[0])))
        return res


def same_moment(a: float, b: float) -> bool:
    """Two Bird.since() readings of one state change (within 10 ms)."""
    return abs(a - b) < 0.01


# ---- FRR bgpd (alone, -Z: no zebra)


class Frr(Peer):
    kind = "frr"

    @property
    def vty_dir(self) -> str:
        d = self.node.path("frr-vty")
        os.makedirs(d, exist_ok=True)
        return d

    def config(self) -> str:
        s = self.session
        n = s.peer_address
        lines = [
            "frr defaults traditional",
            f"hostname {self.node.name}",
            "log stdout informational",
            "!",
        ]
        # next hops of the family other than the session's (and of IPv6
        # over IPv6: bgpd without zebra knows no interface addresses)
        # and FRR sends routes back to the AS they came from (with its own AS
        # prepended): drop those on the way out, as the other daemons do
        lines += [f"bgp as-path access-list PEER-AS seq 5 permit _{s.peer_asn}_", "!"]
        # the route-maps below are "changed" when the delay timer (5 s after
        # start) first runs, and FRR then announces every route again: a
        # peer counting UPDATE contents would see each prefix twice
        lines += ["bgp route-map delay-timer 0", "!"]
        for rm, setter in (("NH4", f"set ip next-hop {self.node.v4}"),
                           ("NH6", f"set ipv6 next-hop global {self.node.v6}")):
            lines += [f"route-map {rm} deny 5", " match as-path PEER-AS", "!",
                      f"route-map {rm} permit 10", f" {setter}", "!"]
        lines += [
            f"router bgp {s.local_asn}",
            f" bgp router-id {self.node.v4}",
            " no bgp ebgp-requires-policy",
            " no bgp default ipv4-unicast",
            " no bgp network import-check",
            f" timers bgp {max(1, s.hold_time // 3)} {s.hold_time}",
        ]
        if s.link_local:
            lines.append(f" neighbor {n} interface {IFNAME}")
        lines += [
            f" neighbor {n} remote-as {s.peer_asn}",
            f" neighbor {n} timers {max(1, s.hold_time // 3)} {s.hold_time}",
            f" neighbor {n} timers connect {max(1, s.connect_retry)}",
            f" neighbor {n} advertisement-interval 0",
        ]
        if not s.link_local:
            lines.append(f" neighbor {n} update-source {s.local_address}")
        if s.passive:
            lines.append(f" neighbor {n} passive")
        if s.password:
            lines.append(f" neighbor {n} password {s.password}")
        if s.ttl_security:
            lines.append(f" neighbor {n} ttl-security hops 1")
        for fam, afi in (("ipv4-unicast", "ipv4"), ("ipv6-unicast", "ipv6")):
            if fam not in s.families:
                continue
            lines.append(f" address-family {afi} unicast")
            for p in s.announce:
                if family_of(p) == fam:
                    lines.append(f"  network {p}")
            lines.append(f"  neighbor {n} activate")
            lines.append(f"  neighbor {n} route-map {'NH6' if afi == 'ipv6' else 'NH4'} out")
            lines.append(" exit-address-family")
        lines.append("!")
        return "\n".join(lines) + "\n"

    def start(self) -> "Frr":
        conf = self.node.path("frr.conf")
        with open(conf, "w") as f:
            f.write(self.config())
        self.proc = self.node.popen(
            ["/usr/lib/frr/bgpd", "-f", conf, "-i", self.node.path("bgpd.pid"),
             "-z", self.node.path("zserv.api"), "--vty_socket", self.vty_dir,
             "-P", "0", "-S", "-Z"], self.log)
        wait_until(lambda: os.path.exists(os.path.join(self.vty_dir, "bgpd.vty"))
                   or self._check_alive(), 10, "bgpd vty socket")
        return self

    def vtysh(self, cmd: str) -> str:
        return run(["vtysh", "--vty_socket", self.vty_dir, "-d", "bgpd", "-c", cmd],
                   timeout=10).stdout

    def _neighbor_json(self) -> dict:
        n = self.session.peer_address
        key = f"{n}" if not self.session.link_local else IFNAME
        data = json.loads(self.vtysh(f"show bgp neighbors {key if self.session.link_local else n} json") or "{}")
        if not data:
            return {}
        return next(iter(data.values())) if len(data) == 1 else data.get(key, {})

    def state(self) -> PeerState:
        nb = self._neighbor_json()
        st = nb.get("bgpState", "unknown")
        received = {}
        afi = nb.get("addressFamilyInfo", {})
        for fam, key in (("ipv4-unicast", "ipv4Unicast"), ("ipv6-unicast", "ipv6Unicast")):
            if key in afi:
                received[fam] = int(afi[key].get("acceptedPrefixCounter", 0))
        return PeerState(st, received, nb)

    def last_notification(self) -> str:
        nb = self._neighbor_json()
        return json.dumps({k: v for k, v in nb.items()
                           if "otification" in k or k in ("lastResetDueTo", "lastErrorCodeSubcode")})

    def received_prefixes(self, family: str) -> set[str]:
        afi = "ipv6" if family == "ipv6-unicast" else "ipv4"
        data = json.loads(self.vtysh(f"show bgp {afi} unicast json") or "{}")
        res = set()
        for pfx, paths in data.get("routes", {}).items():
            for path in paths:
                if path.get("peerId") == self.session.peer_address or \
                        path.get("nexthops") and not path.get("sourced", False) and \
                        path.get("peerId") not in (None, "(unspec)"):
                    res.add(str(ipaddress.ip_network(pfx)))
                    break
        return res


# ---- GoBGP


class GoBgp(Peer):
    kind = "gobgp"
    api_port = 50051

    def config(self) -> str:
        s = self.session
        lines = [
            "[global.config]",
            f"  as = {s.local_asn}",
            f'  router-id = "{self.node.v4}"',
            "  port = 179",
            # link-local sessions need the wildcard: gobgpd takes no zone here
            "  local-address-list = " + ('["0.0.0.0", "::"]' if s.link_local
                                          else f'["{self.node.v4}", "{self.node.v6}"]'),
            "[global.apply-policy.config]",
            '  default-import-policy = "accept-route"',
            '  default-export-policy = "accept-route"',
            "",
            "[[neighbors]]",
            "  [neighbors.config]",
            f'    neighbor-address = "{self._nbr()}"',
            f"    peer-as = {s.peer_asn}",
        ]
        lines += [
            "  [neighbors.timers.config]",
            f"    hold-time = {s.hold_time}",
            f"    keepalive-interval = {max(1, s.hold_time // 3)}",
            f"    connect-retry = {max(1, s.connect_retry)}",
            "    idle-hold-time-after-reset = 1",
            "  [neighbors.transport.config]",
            f"    passive-mode = {'true' if s.passive else 'false'}",
        ]
        if not s.link_local:
            lines.append(f'    local-address = "{s.local_address}"')
        for fam in s.families:
            lines += ["  [[neighbors.afi-safis]]",
                      "    [neighbors.afi-safis.config]",
                      f'      afi-safi-name = "{fam}"']
        return "\n".join(lines) + "\n"

    def _nbr(self) -> str:
        s = self.session
        return f"{s.peer_address}%{IFNAME}" if s.link_local else s.peer_address

    def gobgp(self, *args: str, check: bool = True) -> str:
        return self.node.run(["gobgp", "-u", "127.0.0.1", "-p", str(self.api_port), *args],
                             timeout=10, check=check).stdout

    def start(self) -> "GoBgp":
        conf = self.node.path("gobgpd.toml")
        with open(conf, "w") as f:
            f.write(self.config())
        self.node.run(["gobgpd", "-d", "-f", conf, "-t", "toml"])
        self.proc = self.node.popen(
            ["gobgpd", "-f", conf, "-t", "toml", "-p", "-l", "info",
             "--api-hosts", f"127.0.0.1:{self.api_port}", "--pprof-disable"], self.log)
        wait_until(lambda: self._check_alive() or self.gobgp("global") is not None, 10,
                   "gobgpd API")
        for p in self.session.announce:
            fam = family_of(p)
            afi = "ipv6" if fam == "ipv6-unicast" else "ipv4"
            self.gobgp("global", "rib", "-a", afi, "add", p,
                       "nexthop", self.announce_nexthop(fam))
        return self

    def _neighbor_json(self) -> dict:
        data = json.loads(self.gobgp("neighbor", self._nbr(), "-j"))
        return data

    def state(self) -> PeerState:
        nb = self._neighbor_json()
        st = nb.get("state", {}).get("session_state", "unknown")
        # 3.x prints the enum as a number or a word depending on the field
        names = {0: "unknown", 1: "idle", 2: "connect", 3: "active", 4: "opensent",
                 5: "openconfirm", 6: "established"}
        if isinstance(st, int):
            st = names.get(st, str(st))
        received = {}
        for af in nb.get("afi_safis", []) or []:
            cfg = af.get("config", {})
            fam_obj = cfg.get("family", {})
            afi, safi = fam_obj.get("afi"), fam_obj.get("safi")
            fam = {(1, 1): "ipv4-unicast", (2, 1): "ipv6-unicast"}.get((afi, safi))
            if fam:
                received[fam] = int(af.get("state", {}).get("accepted", 0) or 0)
        return PeerState(st, received, nb)

    def received_prefixes(self, family: str) -> set[str]:
        afi = "ipv6" if family == "ipv6-unicast" else "ipv4"
        out = self.gobgp("neighbor", self._nbr(), "adj-in", "-a", afi, "-j",
                         check=False)
        try:
            data = json.loads(out or "{}")
        except json.JSONDecodeError:
            return set()
        return {str(ipaddress.ip_network(p)) for p in data}


# ---- OpenBGPD (own mount namespace with a private tmpfs on /run)


class OpenBgpd(Peer):
    kind = "openbgpd"

    @property
    def sock(self) -> str:
        return self.node.path("bgpd.sock")

    def config(self) -> str:
        s = self.session
        nbr = s.peer_address
        if s.link_local:
            nbr = f"{nbr}%{IFNAME}"
        lines = [
            f"AS {s.local_asn}",
            f"router-id {self.node.v4}",
            f'socket "{self.sock}"',
            "fib-update no",
            f"listen on {self.node.v4}",
            f"listen on {self.node.v6}",
        ]
        if s.link_local:
            lines.append(f"listen on {self.node.ll}%{IFNAME}")
        # an explicit next hop: OpenBGPD 7.7 sends ::1 as the next hop of
        # IPv6 routes over an IPv4 session (and the reverse) otherwise
        for p in s.announce:
            lines.append(f"network {p} set nexthop {self.announce_nexthop(family_of(p))}")
        lines.append(f"neighbor {nbr} {{")
        lines.append(f"  remote-as {s.peer_asn}")
        lines.append('  descr "lab"')
        lines.append(f"  holdtime {s.hold_time}")
        # one local address per family: the session's and the next hop for
        # routes of the other family
        lines.append(f"  local-address {self.node.v4}")
        lines.append(f"  local-address {self.node.v6}")
        if s.passive:
            lines.append("  passive")
        if not s.link_local:
            lines.append("  multihop 2")
            lines.append("  set nexthop no-modify")
        for fam, af in (("ipv4-unicast", "IPv4"), ("ipv6-unicast", "IPv6")):
            lines.append(f"  announce {af} {'unicast' if fam in s.families else 'none'}")
        lines.append("}")
        lines.append("allow from any")
        lines.append("allow to any")
        return "\n".join(lines) + "\n"

    def start(self) -> "OpenBgpd":
        conf = self.node.path("bgpd.conf")
        with open(conf, "w") as f:
            f.write(self.config())
        os.chmod(conf, 0o600)
        inner = ("mount -t tmpfs -o mode=0755 lab-run /run && mkdir -p /run/openbgpd && "
                 f"bgpd -n -f {conf} && exec bgpd -d -v -f {conf}")
        self.proc = self.node.popen(["unshare", "--mount", "--propagation", "private",
                                     "sh", "-c", inner], self.log)
        wait_until(lambda: os.path.exists(self.sock) or self._check_alive(), 10,
                   "bgpd control socket")
        return self

    def bgpctl(self, *args: str) -> str:
        return run(["bgpctl", "-s", self.sock, *args], timeout=10).stdout

    def _neighbor_json(self) -> dict:
        nbr = self.session.peer_address
        if self.session.link_local:
            nbr = f"{nbr}%{IFNAME}"
        data = json.loads(self.bgpctl("-j", "show", "neighbor", nbr))
        nbs = data.get("neighbors", [])
        return nbs[0] if nbs else {}

    def state(self) -> PeerState:
        nb = self._neighbor_json()
        st = nb.get("state", "unknown")
        received = {}
        # bgpctl gives a total; split by family from the RIB
        if st.lower() == "established":
            for fam in self.session.families:
                received[fam] = len(self.received_prefixes(fam))
        return PeerState(st, received, nb)

    def received_prefixes(self, family: str) -> set[str]:
        af = "IPv6" if family == "ipv6-unicast" else "IPv4"
        nbr = self.session.peer_address
        if self.session.link_local:
            nbr = f"{nbr}%{IFNAME}"
        data = json.loads(self.bgpctl("-j", "show", "rib", "in", "neighbor", nbr))
        res = set()
        for r in data.get("rib", []):
            pfx = r.get("prefix", "")
            if pfx and (":" in pfx) == (af == "IPv6"):
                res.add(str(ipaddress.ip_network(pfx)))
        return res


PEER_KINDS = {"bird": Bird, "frr": Frr, "gobgp": GoBgp, "openbgpd": OpenBgpd}


def sample_prefixes(index: int, v4: int = 3, v6: int = 2) -> tuple[str, ...]:
    """Distinct prefixes for node `index` to originate (inside 198.18.0.0/15
    and fd00::/8, never used as addresses)."""
    raw = [f"198.19.{index}.{i * 16}/28" for i in range(v4)] + \
        [f"fd00:{index:x}:{i:x}::/48" for i in range(v6)]
    return tuple(str(ipaddress.ip_network(p)) for p in raw)


# --------------------------------------------------------------------------
# the Python test speaker, placed in a node


def speaker(node: Node, asn: int, **kw):
    """A speaker.Speaker whose sockets live in `node`; closed with the lab."""
    from speaker import Speaker  # same folder
    sp = Speaker(asn, node.v4, **kw)
    node.lab.on_close(lambda: sp.close(code=None))
    return sp


# --------------------------------------------------------------------------
# Petrel


class PetrelNotReady(Exception):
    """The petrel binary is missing, or `petrel run` says it is not built."""


def petrel_binary() -> str:
    """The petrel executable: $PETREL, else the first build dir's daemon/petrel."""
    env = os.environ.get("PETREL")
    if env:
        return env
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for build in ("build", "build-gcc", "build-clang", "builddir"):
        cand = os.path.join(root, build, "daemon", "petrel")
        if os.path.exists(cand):
            return cand
    return os.path.join(root, "build", "daemon", "petrel")


def bench_binary(env: str, name: str) -> str:
    """A tool of tools/bench (petrel-load, petrel-fanout): $env, else
    beside the petrel executable's build; the test is skipped when it is
    not built."""
    import pytest

    p = os.environ.get(env)
    if not p:
        p = os.path.join(os.path.dirname(os.path.dirname(petrel_binary())), "tools", "bench", name)
    if not os.path.exists(p):
        pytest.skip(f"{name} is not built ({p})")
    return p


_NOT_BUILT = re.compile(r"not (yet )?(built|implemented)", re.I)


@dataclass
class PetrelPeer:
    name: str
    address: str
    asn: int
    local_address: str
    passive: bool = False
    hold_time: int = 9
    families: tuple[str, ...] = FAMILIES
    connect_retry: int = 1
    # Policy: the tests that predate route export take everything and send
    # nothing (RFC 8212 would otherwise refuse an external peer's routes).
    import_policy: str = "all"
    export_policy: str = "none"
    extra: tuple[str, ...] = ()      # more TOML lines for the [[peer]] table


class Petrel(Peer):
    """`petrel run` in a node, configured with the agreed TOML shape.

    Shares the process handling of Peer (stop, alive, log_text); its state
    comes from the HTTP API, not from a peer's CLI."""

    kind = "petrel"

    def __init__(self, node: Node, peers: list[PetrelPeer], asn: int = 65001,
                 binary: Optional[str] = None, http_port: int = 8179,
                 listen: Optional[list[str]] = None, extra_toml: str = "", router_toml: str = ""):
        self.node = node
        self.peers = peers
        self.extra_toml = extra_toml   # more TOML after the peers ([[filter]], [[originate]])
        self.router_toml = router_toml  # more keys of [router]
        self.asn = asn
        self.binary = binary or petrel_binary()
        self.http_port = http_port
        self.listen = listen or [node.v4, node.v6]
        self.proc: Optional[subprocess.Popen] = None
        self.log = node.path("petrel.log")
        self.conf = node.path("petrel.toml")
        self.session = None  # type: ignore[assignment]
        # a command prefix run before `ip netns exec` (which mounts its own
        # /sys), e.g. a shell that joins a memory cgroup and execs the rest
        # (tests/integration/hostile.py)
        self.wrapper: list[str] = []

    def config(self) -> str:
        q = json.dumps   # TOML basic strings and arrays of them are JSON-compatible
        lines = [
            "[router]",
            f"asn = {self.asn}",
            f"router_id = {q(self.node.v4)}",
            f"listen = {q(self.listen)}",
            "port = 179",
            # the lab runs Petrel as root (test_privileges.py drops to a user)
            *(['user = "root"'] if "user =" not in self.router_toml else []),
            *([self.router_toml] if self.router_toml else []),
            "[http]",
            f"listen = {q(f'127.0.0.1:{self.http_port}')}",
        ]
        if "[control]" not in self.extra_toml:
            # Each test's daemon its own control socket, not the shared
            # default /run/petrel/petrel.sock (test_control.py sets its own).
            lines += ["[control]", f"socket = {q(self.node.path('petrel.sock'))}"]
        for p in self.peers:
            lines += [
                "",
                "[[peer]]",
                f"name = {q(p.name)}",
                f"address = {q(p.address)}",
                f"asn = {p.asn}",
                f"passive = {'true' if p.passive else 'false'}",
                f"hold_time = {p.hold_time}",
                f"connect_retry = {p.connect_retry}",
                f"families = {q(list(p.families))}",
                f"local_address = {q(p.local_address)}",
                f"import = {q(p.import_policy)}",
                f"export = {q(p.export_policy)}",
                *p.extra,
            ]
        if self.extra_toml:
            lines += ["", self.extra_toml]
        return "\n".join(lines) + "\n"

    def start(self, ready_timeout: float = 10) -> "Petrel":
        """Starts the daemon; PetrelNotReady if it is missing or not built.

        Any other early exit (a configuration the daemon rejects, a crash) is
        a LabError: a real failure, not a skip.
        """
        if not os.path.exists(self.binary):
            raise PetrelNotReady(f"petrel binary not found at {self.binary} "
                                 f"(build it, or set PETREL=/path/to/petrel)")
        with open(self.conf, "w") as f:
            f.write(self.config())
        # JSON-lines logs: events() reads them back
        self.proc = self.node.lab.popen([*self.wrapper, "ip", "netns", "exec", self.node.ns,
                                         self.binary, "run", "-c", self.conf,
                                         "--log-format", "json"], self.log)

        def ready():
            if self.proc.poll() is not None:
                return True
            return self._listening()
        wait_until(ready, ready_timeout, "petrel listening on port 179")
        if self.proc.poll() is not None:
            out = self.log_text()
            if _NOT_BUILT.search(out):
                raise PetrelNotReady(f"`petrel run` is not built yet: {out.strip()[-300:]}")
            raise LabError(f"petrel run exited {self.proc.returncode}:\n{out[-3000:]}\n"
                           f"config:\n{self.config()}")
        return self

    def events(self, event: Optional[str] = None, **match: object) -> list[dict]:
        """Petrel's JSON log lines (one dict each), in order: those whose
        "event" is `event` (any when None) and whose fields equal `match`
        (compared as strings: every value in a log line is a string)."""
        res = []
        for line in self.log_text().splitlines():
            if not line.startswith("{"):
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if event is not None and ev.get("event") != event:
                continue
            if all(ev.get(k) == str(v) for k, v in match.items()):
                res.append(ev)
        return res

    def wait_events(self, event: str, count: int = 1, timeout: float = 5,
                    **match: object) -> list[dict]:
        """events(event, **match) once it holds at least `count` lines.

        Petrel logs a session's end after the NOTIFICATION has gone out, so
        a test that has just seen the peer's side must wait for the line;
        bounded by `timeout` seconds."""
        return wait_until(lambda: (lambda evs: evs if len(evs) >= count else None)(
                              self.events(event, **match)),
                          timeout, f"{count} {event} log line(s) matching {match}")

    def _listening(self) -> bool:
        out = self.node.run(["ss", "-Hltn", "sport", "= :179"], check=False).stdout
        return bool(out.strip())


    # ---- the HTTP JSON API, reached from inside the node's namespace

    def get(self, path: str, timeout: float = 5) -> Optional[tuple[int, bytes]]:
        """GET path from Petrel's HTTP server: status and body; None if it
        does not answer."""
        import http.client

        node = self.node

        class _Conn(http.client.HTTPConnection):
            def connect(self):
                s = node.socket(socket.AF_INET)
                s.settimeout(timeout)
                s.connect((self.host, self.port))
                self.sock = s

        conn = _Conn("127.0.0.1", self.http_port, timeout=timeout)
        try:
            conn.request("GET", path, headers={"Accept": "application/json"})
            r = conn.getresponse()
            return r.status, r.read()
        except (OSError, http.client.HTTPException):
            return None
        finally:
            conn.close()

    def api(self, path: str, timeout: float = 5) -> Optional[object]:
        """GET path from Petrel's HTTP API; None if the API is not there."""
        got = self.get(path, timeout)
        if got is None or got[0] != 200:
            return None
        try:
            return json.loads(got[1])
        except ValueError:
            return None

    def api_peer(self, name: str) -> Optional[dict]:
        """GET /api/peers/{name} (docs/http-api.md); None if it does not answer."""
        data = self.api(f"/api/peers/{name}")
        return data if isinstance(data, dict) else None

    def petrel_received_counts(self) -> Optional[dict[str, dict[str, int]]]:
        """Routes Petrel holds from each peer, by family, from /api/peers.

        Returns {peer name: {family: count}} with count the API's
        `update_prefixes.FAMILY.received`: the peer's routes in Petrel's
        routing table (docs/http-api.md), or None when the API does not
        answer.
        """
        data = self.api("/api/peers")
        if not isinstance(data, dict) or not isinstance(data.get("peers"), list):
            return None
        res: dict[str, dict[str, int]] = {}
        for p in data["peers"]:
            fams = p.get("update_prefixes")
            if not isinstance(fams, dict):
                raise LabError(f"/api/peers: peer without update_prefixes: {p}")
            res[p["name"]] = {f: int(v["received"]) for f, v in fams.items()}
        return res
