"""The MRT files of `[mrt]` (docs/operations.md, "MRT files") with a real
BIRD peer announcing IPv4 and IPv6 routes, read by Debian's `bgpdump`.

- Periodic table dumps, gzip-compressed: one appears every
  `dump_interval` seconds; bgpdump reads the .gz file and lists exactly the
  routes Petrel's API holds. Rotation keeps the newest `dump_keep` dumps
  (older ones removed, logged); no .tmp file is left once a dump is done.
- The UPDATE log (BGP4MP_ET): bgpdump lists the UPDATEs BIRD sent (every
  prefix announced by BIRD's address and AS) and the session's state
  changes, Established when it comes up and Idle after BIRD disables its
  session. Petrel's own reader (mrt-extract) reads every record back, and
  `petrel decode` decodes each logged message as an UPDATE. Nothing is
  dropped (GET /api/mrt, petrel_mrt_* metrics).
- On an ADD-PATH receive session the UPDATEs are logged as
  BGP4MP_MESSAGE_AS4_ADDPATH (gzip-compressed here), read path by path.
"""

from __future__ import annotations

import glob
import json
import subprocess
from pathlib import Path

import lab as L
from conftest import require
from test_mrt_dump import AP_PREFIXES, AddPathBird, api_routes, bgpdump_routes

PETREL_ASN = 65001
BIRD_ASN = 65002
HOLD = 9
PREFIXES = L.sample_prefixes(11, v4=4, v6=3)
DUMP_KEEP = 2


def finished(pattern: str) -> list[str]:
    """The complete files of a glob pattern (not the .tmp being written), by name."""
    return sorted(f for f in glob.glob(pattern) if not f.endswith(".tmp"))


def bgpdump_lines(path: str) -> list[list[str]]:
    r = subprocess.run(["bgpdump", "-m", path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r
    return [ln.split("|") for ln in r.stdout.splitlines() if ln.strip()]


def test_mrt_periodic_dumps_and_update_log(lab):
    require("bird")
    require("bgpdump")
    me, bn = lab.node("petrel"), lab.node("bird")
    dumps = me.path("rib.%Y%m%d.%H%M%S.mrt.gz")
    updates = me.path("updates.%Y%m%d.%H%M%S.mrt")
    mrt = (f'[mrt]\ndump_interval = 2\ndump_file = "{dumps}"\ndump_gzip = true\ndump_keep = {DUMP_KEEP}\n'
           f'updates_file = "{updates}"\nupdates_interval = 2\n')
    bird = L.Bird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD, announce=PREFIXES)).start()
    petrel = L.Petrel(me, [L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD)], PETREL_ASN,
                      extra_toml=mrt).start()
    bird.wait_established(30)
    L.wait_until(lambda: len((petrel.api("/api/routes") or {}).get("prefixes", [])) == len(PREFIXES), 30,
                 "Petrel holds BIRD's routes")
    want = api_routes(petrel)
    assert {w[0] for w in want} == set(PREFIXES), want

    # A periodic dump written after the routes came: bgpdump reads the
    # gzip file and lists exactly the routes the API holds.
    dump_glob = me.path("rib.*.mrt.gz*")
    seen = set(finished(dump_glob))

    def new_dump():
        fresh = [f for f in finished(dump_glob) if f not in seen]
        return fresh[-1] if fresh else None
    path = L.wait_until(new_dump, 20, "a periodic dump after the routes")
    with open(path, "rb") as f:
        assert f.read(2) == b"\x1f\x8b", "the dump is gzip"
    got, lines = bgpdump_routes(path)
    assert len(lines) == len(want), lines
    assert got == want, (got, want)

    # Rotation: more dumps come, the newest DUMP_KEEP stay.
    L.wait_until(lambda: len(petrel.events("mrt-file-removed")) >= 2, 20, "older dumps removed")
    L.wait_until(lambda: len(finished(dump_glob)) == DUMP_KEEP, 10, f"{DUMP_KEEP} dumps kept")
    st = petrel.api("/api/mrt")
    assert st["dumps"]["interval"] == 2 and st["dumps"]["written"] >= 3 and st["dumps"]["failed"] == 0, st

    # BIRD disables its session: Petrel's side goes to Idle.
    bird.birdc("disable", "peer")
    L.wait_until(lambda: (petrel.api_peer("bird") or {}).get("state", "").lower() != "established", 20, "the session down")

    # The UPDATE log, once the file holding the Idle change is complete.
    update_glob = me.path("updates.*.mrt*")

    def log_lines():
        rows = [f for p in finished(update_glob) for f in bgpdump_lines(p)]
        states = [(r[5], r[6]) for r in rows if r[2] == "STATE"]
        return rows if ("6", "1") in states else None
    rows = L.wait_until(log_lines, 20, "the UPDATE log with the session's Idle")
    for r in rows:
        assert r[0] == "BGP4MP_ET", r
        assert r[3] == bn.v4 and r[4] == str(BIRD_ASN), r
    states = [(int(r[5]), int(r[6])) for r in rows if r[2] == "STATE"]
    assert any(new == 6 for _, new in states), states  # Established
    up = next(i for i, s in enumerate(states) if s[1] == 6)
    assert (6, 1) in states[up:], states  # then Idle
    announced = {r[5] for r in rows if r[2] == "A"}
    assert announced == set(PREFIXES), rows
    # bgpdump's A lines carry the AS path and next hop BIRD sent.
    for r in rows:
        if r[2] == "A":
            assert r[6] == str(BIRD_ASN), r

    # Petrel's own reader (mrt-extract, tools/mrt) reads every record back,
    # and each logged message is a whole UPDATE `petrel decode` decodes.
    extract = Path(petrel.binary).resolve().parents[1] / "tools" / "mrt" / "mrt-extract"
    if extract.exists():
        for f in finished(update_glob):
            r = subprocess.run([str(extract), f], capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r
            messages = r.stdout.splitlines()
            own = [x for x in bgpdump_lines(f) if x[2] == "STATE"]
            assert f"{len(messages) + len(own)} records read" in r.stderr, (r.stderr, messages, own)
            if messages:
                d = subprocess.run([petrel.binary, "decode"], input="\n".join(messages) + "\n",
                                   capture_output=True, text=True, timeout=60)
                assert d.returncode == 0, d
                assert all(json.loads(ln)["type"] == "update" for ln in d.stdout.splitlines()), d.stdout

    st = petrel.api("/api/mrt")["updates"]
    # (bgpdump writes a line per prefix: an UPDATE may be several.)
    assert st["records"] >= len(states) + 1 and st["dropped"] == 0 and st["errors"] == 0 and st["files"] >= 1, st
    metrics = me.run(["curl", "-s", f"http://127.0.0.1:{petrel.http_port}/metrics"], check=False).stdout
    assert "petrel_mrt_update_records_dropped_total 0" in metrics, metrics[-2000:]


def test_mrt_update_log_add_path(lab):
    """On a session with ADD-PATH receive the UPDATEs are logged as
    BGP4MP_MESSAGE_AS4_ADDPATH (RFC 8050): bgpdump reads each path's
    announcement (two per prefix from AddPathBird)."""
    require("bird")
    require("bgpdump")
    me, bn = lab.node("petrel"), lab.node("bird")
    updates = me.path("ap-updates.%Y%m%d.%H%M%S.mrt.gz")
    bird = AddPathBird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD, families=("ipv4-unicast",),
                                     announce=AP_PREFIXES)).start()
    petrel = L.Petrel(me, [L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD, families=("ipv4-unicast",),
                                        extra=('add_path = { "ipv4-unicast" = "receive" }',))],
                      PETREL_ASN, extra_toml=f'[mrt]\nupdates_file = "{updates}"\nupdates_interval = 1\n'
                                             f'updates_gzip = true\n').start()
    bird.wait_established(30)
    update_glob = me.path("ap-updates.*.mrt.gz*")

    def announced():
        rows = [f for p in finished(update_glob) for f in bgpdump_lines(p)]
        a = [r for r in rows if r[2] == "A"]
        return (rows, a) if len(a) >= 2 * len(AP_PREFIXES) else None
    rows, a = L.wait_until(announced, 20, "both paths of each prefix in the UPDATE log")
    assert {r[5] for r in a} == set(AP_PREFIXES), rows
    with open(finished(update_glob)[0], "rb") as f:
        assert f.read(2) == b"\x1f\x8b", "the UPDATE log is gzip"
