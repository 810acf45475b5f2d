"""SLURM local exceptions (RFC 8416) on top of a real RTR cache (StayRTR).

StayRTR serves VRPs that make BIRD's routes valid, invalid and not found;
Petrel's SLURM file filters some of them and asserts others, and the
marks change as RFC 8416 says: a filtered VRP no longer makes a route
valid or invalid (not found), an asserted one makes a route valid. A
changed file is applied by SIGHUP; a broken one fails the reload and the
exceptions in force stay.
"""
from __future__ import annotations

import json
import os
import signal

import pytest

import lab as L
from test_rpki import (CACHE_PORTS, HTTP_PORT, Cache, L_require_bird, RpkiPetrel, bird_prefixes_and_vrps, http_text,
                       marks, rpki, vrp_count)
from test_rpki import _needs  # noqa: F401 (autouse: the petrel binary and stayrtr)

PETREL_ASN = 65001
BIRD_ASN = 65002
HOLD = 9


class SlurmPetrel(RpkiPetrel):
    """RpkiPetrel with [rpki] slurm."""

    def __init__(self, *a, slurm: list[str], **kw):
        super().__init__(*a, **kw)
        self.slurm = slurm

    def config(self) -> str:
        text = super().config()
        files = ", ".join(json.dumps(s) for s in self.slurm)
        return text.replace("[rpki]\n", f"[rpki]\nslurm = [{files}]\n", 1)


def write_slurm(path: str, filters: list[dict], assertions: list[dict]) -> None:
    doc = {"slurmVersion": 1,
           "validationOutputFilters": {"prefixFilters": filters, "bgpsecFilters": []},
           "locallyAddedAssertions": {"prefixAssertions": assertions, "bgpsecAssertions": []}}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def sighup(petrel: L.Petrel, outcome: str) -> None:
    before = len(petrel.events(outcome))
    petrel.proc.send_signal(signal.SIGHUP)
    L.wait_until(lambda: len(petrel.events(outcome)) > before, 10, f"{outcome} after SIGHUP")


def test_slurm_filters_and_assertions_change_the_marks(lab):
    L_require_bird()
    me, bird_node = lab.node("petrel"), lab.node("bird")
    # v4[0] valid, v4[1] invalid, v4[2] not found, both IPv6 invalid
    prefixes, v4, v6, cover6, vrps = bird_prefixes_and_vrps(me, bird_node)
    slurm = me.path("slurm.json")
    write_slurm(slurm,
                [{"prefix": v4[0], "comment": "valid -> not found"},
                 {"asn": 64999, "comment": "invalid -> not found"}],
                [{"prefix": v4[2], "asn": BIRD_ASN, "comment": "not found -> valid"}])
    cache = Cache(me, CACHE_PORTS[0], vrps).start()
    petrel = SlurmPetrel(me, [L.PetrelPeer("bird", bird_node.v4, BIRD_ASN, me.v4, hold_time=HOLD)],
                         PETREL_ASN, http_port=HTTP_PORT, caches=[(CACHE_PORTS[0], 1)], slurm=[slurm])
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    try:
        # The cache's three VRPs, less two filtered, plus one asserted.
        L.wait_until(lambda: vrp_count(petrel) == 2, 15, "VRPs from the cache through SLURM")
        s = rpki(petrel)["slurm"]
        assert s == {"files": [slurm], "prefix_filters": 2, "prefix_assertions": 1, "bgpsec_filters": 0,
                     "bgpsec_assertions": 0, "aspa_filters": 0, "aspa_assertions": 0, "vrps_removed": 2,
                     "vrps_added": 1, "aspas_removed": 0, "aspas_added": 0}, s
        ev = petrel.wait_events("rpki-published", timeout=5)
        assert ev[-1]["slurm_removed"] in (2, "2") and ev[-1]["slurm_added"] in (1, "1"), ev
        bird = L.Bird(bird_node, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bird_node.v4, passive=True,
                                           hold_time=HOLD, announce=prefixes)).start()
        bird.wait_established(30)
        want = {v4[0]: "not-found", v4[1]: "not-found", v4[2]: "valid", v6[0]: "invalid", v6[1]: "invalid"}
        L.wait_until(lambda: all(marks(petrel, p) == [("bird", st)] for p, st in want.items()), 20,
                     f"marks {want}: got {[(p, marks(petrel, p)) for p in want]}")
        metrics = http_text(me, "/metrics")
        assert 'petrel_rpki_slurm_entries{kind="prefix_filter"} 2\n' in metrics, metrics
        assert 'petrel_rpki_slurm_entries{kind="prefix_assertion"} 1\n' in metrics, metrics
        assert 'petrel_rpki_slurm_vrps{change="removed"} 2\n' in metrics, metrics
        assert 'petrel_rpki_slurm_vrps{change="added"} 1\n' in metrics, metrics

        # ---- SIGHUP with a changed file: no filters now, the IPv6 cover asserted
        # up to /48: the cache's own marks come back, and the IPv6 routes are valid.
        write_slurm(slurm, [], [{"prefix": cover6, "asn": BIRD_ASN, "maxPrefixLength": 48}])
        sighup(petrel, "reloaded")
        petrel.wait_events("rpki-slurm", timeout=5, prefix_filters=0, prefix_assertions=1)
        want = {v4[0]: "valid", v4[1]: "invalid", v4[2]: "not-found", v6[0]: "valid", v6[1]: "valid"}
        L.wait_until(lambda: all(marks(petrel, p) == [("bird", st)] for p, st in want.items()), 20,
                     f"marks after the reload {want}: got {[(p, marks(petrel, p)) for p in want]}")
        L.wait_until(lambda: rpki(petrel)["slurm"]["prefix_filters"] == 0, 5, "the new counts")
        assert vrp_count(petrel) == 4, rpki(petrel)
        assert rpki(petrel)["slurm"]["vrps_added"] == 1 and rpki(petrel)["slurm"]["vrps_removed"] == 0

        # ---- SIGHUP with a broken file: the reload fails, the exceptions in force stay
        with open(slurm, "w") as f:
            f.write('{"slurmVersion": 1, "validationOutputFilters": {"prefixFilters": [{"prefix": "10.0.0.1/8"}]')
        sighup(petrel, "reload-failed")
        err = petrel.events("reload-failed")[-1]["error"]
        assert slurm in err and "rpki.slurm[0]" in err and "syntax error" in err, err
        write_slurm(slurm, [{"prefix": "10.0.0.1/8"}], [])
        sighup(petrel, "reload-failed")
        err = petrel.events("reload-failed")[-1]["error"]
        assert "/validationOutputFilters/prefixFilters/0/prefix" in err and "bits set past its length" in err, err
        assert all(marks(petrel, p) == [("bird", st)] for p, st in want.items())
        assert rpki(petrel)["slurm"]["prefix_assertions"] == 1 and vrp_count(petrel) == 4, rpki(petrel)
        assert petrel.alive()
    finally:
        cache.stop()


def test_slurm_checked_by_petrel_check(tmp_path):
    """`petrel check` names the file and the member at fault; two files
    that overlap are refused (RFC 8416 section 4.2)."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_slurm(str(a), [{"prefix": "192.0.2.0/24"}], [])
    write_slurm(str(b), [], [{"prefix": "192.0.2.0/25", "asn": 64500, "maxPrefixLength": 24}])
    conf = tmp_path / "petrel.toml"
    conf.write_text('[router]\nasn = 65001\nrouter_id = "192.0.2.1"\n[rpki]\nslurm = ["a.json", "b.json"]\n')
    import subprocess
    r = subprocess.run([L.petrel_binary(), "check", "-c", str(conf)], capture_output=True, text=True)
    assert r.returncode != 0
    assert f"{b}: /locallyAddedAssertions/prefixAssertions/0/maxPrefixLength: expected a length 25..32" in r.stderr, \
        r.stderr
    write_slurm(str(b), [], [{"prefix": "192.0.2.0/25", "asn": 64500}])
    r = subprocess.run([L.petrel_binary(), "check", "-c", str(conf)], capture_output=True, text=True)
    assert r.returncode != 0 and "overlaps" in r.stderr and "RFC 8416 section 4.2" in r.stderr, r.stderr
    write_slurm(str(b), [], [{"prefix": "198.51.100.0/24", "asn": 64500}])
    r = subprocess.run([L.petrel_binary(), "check", "-c", str(conf)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "rpki.slurm: no [[rpki.cache]]: the SLURM files are checked but not used" in r.stderr, r.stderr
    # ASPA exceptions (draft-ietf-sidrops-aspa-slurm) need "slurmVersion": 2;
    # a syntax error in one is placed by line and column.
    doc = json.loads(b.read_text())
    doc["locallyAddedAssertions"]["aspaAssertions"] = [{"customerAsn": 64500, "providerAsns": [64501]}]
    b.write_text(json.dumps(doc))
    r = subprocess.run([L.petrel_binary(), "check", "-c", str(conf)], capture_output=True, text=True)
    assert r.returncode != 0
    assert f'{b}: /locallyAddedAssertions/aspaAssertions: "aspaAssertions" needs "slurmVersion": 2' in r.stderr, \
        r.stderr
    doc["slurmVersion"] = 2
    doc["validationOutputFilters"]["aspaFilters"] = []
    b.write_text(json.dumps(doc, indent=1))
    r = subprocess.run([L.petrel_binary(), "check", "-c", str(conf)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    b.write_text(json.dumps(doc, indent=1).replace('"providerAsns": [\n', '"providerAsns": [,\n', 1))
    r = subprocess.run([L.petrel_binary(), "check", "-c", str(conf)], capture_output=True, text=True)
    assert r.returncode != 0 and f"{b}:" in r.stderr and "syntax error" in r.stderr, r.stderr
    line = next(i for i, t in enumerate(b.read_text().splitlines(), 1) if '"providerAsns": [,' in t)
    assert f"{b}:{line}:" in r.stderr, r.stderr
