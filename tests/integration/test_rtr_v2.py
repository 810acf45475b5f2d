"""RTR version 2 (draft-ietf-sidrops-8210bis) against a real cache (StayRTR).

StayRTR serves a JSON file of VRPs and ASPAs the test writes, on loopback
inside Petrel's namespace. Petrel negotiates version 2 and takes the
ASPAs with the VRPs (the full set, then a change: one ASPA withdrawn, one
replaced, one added); against a cache forced to version 1 (`stayrtr
-protocol 1`, which answers our version 2 query in version 1) it goes on
in version 1 with the VRPs and no ASPAs; with `rpki.max_version = 1` it
asks in version 1 from the start.

Debian's StayRTR (0.5.1) reads ASPAs from rpki-client's older JSON shape
("provider_authorizations" with an "ipv4" and an "ipv6" list) and sends
them in 8210bis-10's PDU layout, once per family; Petrel reads that layout
and keeps one ASPA per customer (docs/rpki.md). Its incremental ASPA
updates are broken: with ASPAs in its file it finds a change at every
reload of the file, bumps its serial, and answers Serial Queries with
Cache Reset (seen on loopback, 2026-12-06); a StayRTR restarted on a new
file sometimes came back with its old session id and serial 0, so
Petrel's Serial Query was answered "no change". So the cache here reads
its file once (-refresh 3600) and only the full set is checked against
it; changes of ASPAs (replace, withdraw, unknown withdrawal) are covered
by tests/rpki/client_aspa_test.cpp.

ASPA states of routes from a real peer: tests/integration/test_aspa.py.
"""
from __future__ import annotations

import json
import os

import pytest

import lab as L
import test_rpki as R

PETREL_ASN = 65001
HTTP_PORT = R.HTTP_PORT
CACHE_PORT = 18292


_needs = R._needs  # the same skips: the petrel binary and stayrtr


class Cache(R.Cache):
    """StayRTR, optionally forced to one RTR version."""

    def __init__(self, node: L.Node, port: int, path: str, protocol: int | None = None):
        super().__init__(node, port, path)
        self.protocol = protocol

    refresh = 3600  # the file is read once (above)

    def args(self) -> list[str]:
        return super().args() + ([] if self.protocol is None else ["-protocol", str(self.protocol)])


class Petrel(R.RpkiPetrel):
    def __init__(self, *a, max_version: int | None = None, **kw):
        super().__init__(*a, **kw)
        self.max_version = max_version

    def config(self) -> str:
        text = super().config()
        if self.max_version is not None:
            text = text.replace("[rpki]\n", f"[rpki]\nmax_version = {self.max_version}\n", 1)
        return text


def write_cache(path: str, vrps: list[tuple[str, int, int]], aspas: dict[int, list[int]],
                generated: int = 1700000000) -> None:
    """VRPs and ASPAs in the JSON shape StayRTR 0.5 reads; each ASPA for both families."""
    roas = [{"prefix": p, "maxLength": m, "asn": f"AS{a}"} for p, m, a in vrps]
    listed = [{"customer_asid": c, "providers": p} for c, p in sorted(aspas.items())]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"metadata": {"generated": generated}, "roas": roas,
                   "provider_authorizations": {"ipv4": listed, "ipv6": listed}}, f)
    os.replace(tmp, path)


def start(lab, path: str, **kw) -> Petrel:
    me = lab.node("petrel")
    petrel = Petrel(me, [], PETREL_ASN, http_port=HTTP_PORT, caches=[(CACHE_PORT, 1)], **kw)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    return petrel


VRPS = [("192.0.2.0/24", 24, 64500), ("2001:db8::/32", 48, 64501)]
ASPAS = {64500: [64502, 64501], 64510: [0], 64520: [64521]}


def test_version2_brings_the_aspas(lab):
    me = lab.node("petrel")
    path = me.path("cache.json")
    write_cache(path, VRPS, ASPAS)
    cache = Cache(me, CACHE_PORT, path).start()
    petrel = start(lab, path)

    L.wait_until(lambda: R.vrp_count(petrel) == 2 and R.rpki(petrel).get("aspas") == 3, 15,
                 "two VRPs and three ASPAs")
    c = R.cache_of(petrel, CACHE_PORT)
    assert c["version"] == 2 and c["state"] == "in-sync" and c["aspas"] == 3, c
    petrel.wait_events("rpki-reset", aspas=3)
    petrel.wait_events("rpki-published", aspas=3)
    assert "petrel_rpki_aspas 3\n" in R.http_text(me, "/metrics")

    # Nothing went wrong on the way: no Error Report either side.
    assert not petrel.events("rpki-diagnostic"), petrel.events("rpki-diagnostic")

    cache.stop()
    assert petrel.alive()


def test_a_version1_cache_is_followed_in_version1(lab):
    me = lab.node("petrel")
    path = me.path("cache.json")
    write_cache(path, VRPS, ASPAS)
    cache = Cache(me, CACHE_PORT, path, protocol=1).start()
    petrel = start(lab, path)

    L.wait_until(lambda: R.vrp_count(petrel) == 2, 15, "two VRPs from the version 1 cache")
    c = R.cache_of(petrel, CACHE_PORT)
    assert c["version"] == 1 and c["state"] == "in-sync" and c["aspas"] == 0, c
    assert R.rpki(petrel)["aspas"] == 0
    # StayRTR answered our version 2 Reset Query in version 1: the client
    # says so and goes on in version 1 on the same connection.
    petrel.wait_events("rpki-diagnostic", code=4)
    assert c["connects"] == 1, c
    cache.stop()
    assert petrel.alive()


def test_max_version_1_asks_in_version1(lab):
    me = lab.node("petrel")
    path = me.path("cache.json")
    write_cache(path, VRPS, ASPAS)
    cache = Cache(me, CACHE_PORT, path).start()
    petrel = start(lab, path, max_version=1)

    L.wait_until(lambda: R.vrp_count(petrel) == 2, 15, "two VRPs in version 1")
    c = R.cache_of(petrel, CACHE_PORT)
    assert c["version"] == 1 and c["aspas"] == 0, c
    assert not petrel.events("rpki-diagnostic"), petrel.events("rpki-diagnostic")
    cache.stop()
    assert petrel.alive()
