"""The many-member route-server scenario (scripts/profile/fanout.py and
petrel-fanout, docs/fulltable-lab.md "Many members") on a small table:
50 members, each its own session from its own address and AS, each
announcing 100 of 5,000 /24s through Petrel, must all be Established and
hold every other member's prefixes; after 3 members hard-close their
sockets the survivors must see every withdrawal, and once the 3 return,
hold the table again. Completeness, not time: the figures of the run are
only checked to exist."""
import json
import os
import subprocess
import sys

import pytest

import lab as L

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "profile", "fanout.py")


def fanout_binary() -> str:
    return L.bench_binary("PETREL_FANOUT", "petrel-fanout")


def test_fifty_members_hold_each_others_routes_through_a_flap(tmp_path):
    env = dict(os.environ, FANOUT=fanout_binary(), PETREL=L.petrel_binary(), MEMBERS="50",
               PREFIXES="5000", FLAPPERS="3", SPREAD="1", SETTLE="0.5", TIMEOUT="100", OUT=str(tmp_path))
    p = subprocess.run([sys.executable, SCRIPT, "run", "petrel"], env=env, capture_output=True, text=True,
                       timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    f = r["fanout"]
    assert r["daemon_alive"], r
    assert r["fanout_exit"] == 0 and not f["failed"] and not f["timed_out"], f
    assert f["phase"] == "done", f
    assert f["established"] == 50 and f["last_established_s"] is not None, f
    # every member holds every other member's 4,900 prefixes, and nothing else
    assert f["complete_members"] == 50, f
    assert f["unexpected_prefixes"] == 0 and f["own_prefixes_received"] == 0, f
    # each phase was reached by every member it measures (null otherwise)
    assert f["flappers"] == 3, f
    for phase in ("cold_start", "withdrawal", "return"):
        assert f[f"{phase}_worst_s"] is not None and f[f"{phase}_p50_s"] <= f[f"{phase}_worst_s"], (phase, f)
    assert f["daemon_end_cpu_s"] > 0 and f["daemon_end_peak_rss_kib"] > 0, f


@pytest.mark.parametrize("daemon,binary", [("bird", "/usr/sbin/bird"), ("openbgpd", "/usr/sbin/bgpd")])
def test_the_same_scenario_through_other_route_servers(daemon, binary, tmp_path):
    """The published comparison's other daemons (BIRD `rs client`,
    OpenBGPD `transparent-as`), on a smaller table: the script's
    configuration of them must keep passing every route on."""
    if not os.path.exists(binary):
        pytest.skip(f"{daemon} is not installed")
    env = dict(os.environ, FANOUT=fanout_binary(), MEMBERS="20", PREFIXES="2000", FLAPPERS="2", SPREAD="1",
               SETTLE="0.2", TIMEOUT="60", OUT=str(tmp_path))
    p = subprocess.run([sys.executable, SCRIPT, "run", daemon], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    f = json.loads(p.stdout.strip().splitlines()[-1])["fanout"]
    assert f["phase"] == "done" and f["established"] == 20 and f["complete_members"] == 20, f
    assert f["unexpected_prefixes"] == 0 and f["own_prefixes_received"] == 0, f


@pytest.mark.parametrize("rs", ["0", "1"])
def test_petrel_rs_adds_route_server_client_to_every_member(rs):
    """PETREL_RS=1 gives each of Petrel's member peers
    `route_server_client = true` (the key of the route-server change);
    without it, none."""
    code = ("import fanout, types\n"
            "node = types.SimpleNamespace(v4='198.18.0.1')\n"
            "print(fanout.Petrel(node).config())\n")
    env = dict(os.environ, PETREL_RS=rs, MEMBERS="7", PYTHONPATH=os.path.dirname(SCRIPT))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    conf = p.stdout
    assert conf.count("[[peer]]") == 7, conf
    assert conf.count("route_server_client = true") == (7 if rs == "1" else 0), conf


def test_a_member_left_without_routes_is_seen_incomplete(tmp_path):
    """The check itself can fail: Petrel exports nothing to member m2, so
    the run stops at the cold start on its timeout, with every session
    Established and every member but one complete."""
    env = dict(os.environ, FANOUT=fanout_binary(), PETREL=L.petrel_binary(), MEMBERS="10", PREFIXES="1000",
               SPREAD="0.5", TIMEOUT="6", WITHHOLD="m2", OUT=str(tmp_path))
    p = subprocess.run([sys.executable, SCRIPT, "run", "petrel"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    f = r["fanout"]
    assert r["fanout_exit"] == 1 and f["timed_out"] and f["phase"] == "cold", f
    assert f["established"] == 10 and f["complete_members"] == 9, f
    assert f["cold_start_worst_s"] is None, f
