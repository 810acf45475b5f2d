"""rpki-client's JSON fed to StayRTR, StayRTR to Petrel over RTR version 2,
and a real BIRD peer's routes marked by what came through.

rpki-client cannot fetch the real repositories here (no network beyond
loopback), so the test writes the files rpki-client writes (-j, its
`json` output), in the two shapes its versions have used for ASPAs:

  - today's (rpki-client's output-json.c since ASPAs lost their AFI; read
    for this test at revision 1.57): "roas" with numeric "asn", "prefix",
    "maxLength", "ta", "expires"; "bgpsec_keys"; "nonfunc_cas"; and
    "aspas": [{"customer_asid", "expires", "providers": [AS numbers]}];
  - the earlier one, from the AFI-era ASPA profile: "provider_authorizations":
    {"ipv4": [...], "ipv6": [...]}, each entry {"customer_asid", "expires",
    "providers"}: what StayRTR 0.5.1 reads, taken to be rpki-client 8.2's
    (the version the issue names; inferred, its source was not read).

Debian's StayRTR (0.5.1) knows only the earlier shape: its JSON struct
tags (strings /usr/bin/stayrtr) name "provider_authorizations", "ipv4",
"ipv6", "customer_asid" and "providers", and no "aspas"; given today's
file it serves the VRPs and no ASPA (its /rpki.json export shows
"provider_authorizations": {"ipv4": [], "ipv6": []}). The first test
checks exactly that, end to end: the VRPs arrive, no ASPA does, and
every path's ASPA state is unknown. The second feeds the earlier shape:
the ASPA arrives (one per customer; StayRTR sends it once per family in
8210bis-10's layout) and the states are the hand-checked ones below.

BIRD is Petrel's customer (its `local role customer`, Petrel's
`local_role = "provider"`: the upstream procedure) and announces, with
the ASes after its own (65002) that its export filter prepends:

  10.98.1.0/24  65002 64500        ROA 10.98.1.0/24 AS64500: valid.
                                   ASPA 64500 -> {65002}: hop(64500, 65002)
                                   is Provider+, min_up_ramp = 2 = N: valid.
  10.98.2.0/24  65002 64501 64500  ROA 10.98.2.0/24 AS64999: the origin
                                   64500 is not it: invalid.
                                   hop(64500, 64501) is Not Provider+
                                   (64500's ASPA lists only 65002):
                                   max_up_ramp = 1 < 3: invalid (a leak).
  10.98.3.0/24  65002 64600        no ROA covers it: not-found.
                                   64600 has no ASPA: max_up_ramp = 2 = N,
                                   min_up_ramp = 1 < 2: unknown.

Without any ASPA, the first two are unknown too (every hop No
Attestation: max_up_ramp = N, min_up_ramp = 1 < N).

SKIPs while stayrtr, BIRD or the petrel binary is missing.
"""
from __future__ import annotations

import json
import os

import lab as L
import test_rpki as R
from conftest import require
from test_aspa import PathBird, aspa_marks, customer_peer, started
from test_rtr_v2 import Cache

PETREL_ASN, BIRD_ASN = 65001, 65002
HTTP_PORT = R.HTTP_PORT
PORT = 18301
VALID, LEAK, UNKNOWN = "10.98.1.0/24", "10.98.2.0/24", "10.98.3.0/24"
PATHS = {VALID: [64500], LEAK: [64501, 64500], UNKNOWN: [64600]}
ROAS = [(VALID, 24, 64500), (LEAK, 24, 64999)]
ASPAS = {64500: [BIRD_ASN]}
EXPIRES = 1893456000  # 2030-01-01
ROV = {VALID: "valid", LEAK: "invalid", UNKNOWN: "not-found"}

_needs = R._needs  # the petrel binary and stayrtr


def metadata(aspas: int) -> dict:
    """rpki-client's "metadata" object (the members StayRTR or an operator
    looks at; rpki-client writes more counters)."""
    return {"buildmachine": "rpki.example.net", "buildtime": "2026-12-07T01:00:00Z", "elapsedtime": 42,
            "usertime": 30, "systemtime": 5, "roas": len(ROAS), "failedroas": 0, "invalidroas": 0,
            "aspas": aspas, "failedaspas": 0, "invalidaspas": 0, "bgpsec_pubkeys": 0, "certificates": 3,
            "invalidcertificates": 0, "tals": 1, "talfiles": ["/etc/rpki/test.tal"], "manifests": 3,
            "failedmanifests": 0, "crls": 3, "repositories": 1, "vrps": len(ROAS), "uniquevrps": len(ROAS),
            "vaps": aspas, "uniquevaps": aspas}


def write(path: str, doc: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent="\t")
    os.replace(tmp, path)


def write_rpki_client_today(path: str) -> None:
    """The shape of today's rpki-client -j output."""
    roas = [{"asn": a, "prefix": p, "maxLength": m, "ta": "test", "expires": EXPIRES} for p, m, a in ROAS]
    aspas = [{"customer_asid": c, "expires": EXPIRES, "providers": ps} for c, ps in sorted(ASPAS.items())]
    write(path, {"metadata": metadata(len(aspas)), "roas": roas, "bgpsec_keys": [], "nonfunc_cas": [],
                 "aspas": aspas})


def write_rpki_client_8_2(path: str) -> None:
    """The AFI-era shape (rpki-client 8.2), ASPAs listed per family."""
    roas = [{"asn": f"AS{a}", "prefix": p, "maxLength": m, "ta": "test", "expires": EXPIRES} for p, m, a in ROAS]
    listed = [{"customer_asid": c, "expires": EXPIRES, "providers": ps} for c, ps in sorted(ASPAS.items())]
    write(path, {"metadata": metadata(len(listed)), "roas": roas, "bgpsec_keys": [],
                 "provider_authorizations": {"ipv4": listed, "ipv6": listed}})


def run(lab, writer, want_aspas: int, want_aspa: dict[str, str]) -> None:
    require("bird")
    me, bn = lab.node("petrel"), lab.node("customer")
    path = me.path("rpki-client.json")
    writer(path)
    cache = Cache(me, PORT, path).start()
    petrel = started(R.RpkiPetrel(me, [customer_peer(bn, me)], PETREL_ASN, http_port=HTTP_PORT,
                                  caches=[(PORT, 1)]), cache)
    try:
        L.wait_until(lambda: R.cache_of(petrel, PORT).get("state") == "in-sync", 20, "StayRTR's data in force")
        c = R.cache_of(petrel, PORT)
        assert c["version"] == 2, c   # StayRTR 0.5 speaks version 2
        st = R.rpki(petrel)
        assert st["vrps"]["ipv4"] == len(ROAS) and st["aspas"] == want_aspas, st
        bird = PathBird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, passive=True, families=("ipv4-unicast",),
                                      announce=tuple(PATHS)), paths=PATHS).start()
        bird.wait_established(30)
        want = {p: (s, True) for p, s in want_aspa.items()}
        L.wait_until(lambda: aspa_marks(petrel, PATHS) == want, 20, f"ASPA states {want}: {aspa_marks(petrel, PATHS)}")
        L.wait_until(lambda: all(R.marks(petrel, p) == [("customer", s)] for p, s in ROV.items()), 20,
                     f"RPKI states {ROV}: {[(p, R.marks(petrel, p)) for p in ROV]}")
        got = petrel.api(f"/api/routes/{LEAK}")["routes"][0]
        assert got["attributes"]["as_path"][0]["asns"] == [BIRD_ASN, 64501, 64500], got
        assert petrel.alive()
    finally:
        cache.stop()


def test_rpki_client_json_of_today_gives_vrps_and_no_aspa(lab):
    """StayRTR 0.5.1 does not read today's "aspas": VRPs only."""
    run(lab, write_rpki_client_today, 0, {VALID: "unknown", LEAK: "unknown", UNKNOWN: "unknown"})


def test_rpki_client_8_2_json_gives_vrps_and_aspas(lab):
    run(lab, write_rpki_client_8_2, len(ASPAS), {VALID: "valid", LEAK: "invalid", UNKNOWN: "unknown"})
