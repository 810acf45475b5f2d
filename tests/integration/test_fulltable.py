"""The full-table lab itself (scripts/profile/fulltable.py and petrel-load,
docs/performance.md "Full tables end to end"), on small tables: every
prefix a neighbour writes reaches the observer through the daemon, and
with KERNEL=1 Petrel's kernel table holds them all. Keeps the scripts
behind the published figures from rotting."""
import json
import os
import subprocess
import sys

import pytest

import lab as L

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "profile", "fulltable.py")


def load_binary() -> str:
    return L.bench_binary("PETREL_LOAD", "petrel-load")


def run(daemon: str, tmp_path, **env) -> dict:
    e = dict(os.environ, LOAD=load_binary(), PETREL=L.petrel_binary(), HOLD_SECS="0", TIMEOUT="120",
             OUT=str(tmp_path), **{k: str(v) for k, v in env.items()})
    p = subprocess.run([sys.executable, SCRIPT, "run", daemon], env=e, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_petrel_passes_two_tables_on_and_into_the_kernel(tmp_path):
    r = run("petrel", tmp_path, PEERS=2, PREFIXES=20000, KERNEL=1)
    ld = r["load"]
    assert r["daemon_alive"], r
    assert not ld["failed"] and not ld["timed_out"], ld
    assert ld["observer_prefixes"] == 20000 and ld["observer_unexpected"] == 0, ld
    assert ld["observer_complete_s"] is not None and ld["table_complete_s"] is not None, ld
    assert ld["kernel_prefixes"] == 20000 and ld["kernel_complete_s"] is not None, ld
    assert r["after_load"]["peak_rss_kib"] > 0 and r["after_load"]["cpu_s"] > 0, r


def test_bird_in_the_same_lab(tmp_path):
    if not os.path.exists("/usr/sbin/bird"):
        pytest.skip("bird is not installed (apt-get install bird2)")
    r = run("bird", tmp_path, PEERS=1, PREFIXES=20000)
    ld = r["load"]
    assert not ld["failed"] and not ld["timed_out"], ld
    assert ld["observer_prefixes"] == 20000 and ld["observer_unexpected"] == 0, ld
    assert ld["table_complete_s"] is None  # only Petrel's table is watched


def test_petrel_sends_its_full_table_to_a_late_neighbour(tmp_path):
    """The observer dials once the table is full (OBSERVER_LATE=1): the
    exporter sends it the table read from the shards, not as it came."""
    r = run("petrel", tmp_path, PEERS=1, PREFIXES=20000, OBSERVER_LATE=1)
    ld = r["load"]
    assert not ld["failed"] and not ld["timed_out"], ld
    assert ld["observer_prefixes"] == 20000 and ld["observer_unexpected"] == 0, ld
    assert ld["table_complete_s"] is not None and ld["observer_dialled_s"] is not None, ld
    assert ld["table_complete_s"] <= ld["observer_dialled_s"] < ld["observer_complete_s"], ld
