"""ASPA verification of routes (draft-ietf-sidrops-aspa-verification;
docs/rpki.md, "ASPA verification of routes") with a real cache and a real
peer.

StayRTR serves ASPAs (RTR version 2); BIRD 2 is Petrel's customer
(`local role customer` on its side, `local_role = "provider"` on Petrel's,
so its routes get the upstream procedure) and announces three prefixes
whose AS_PATHs its export filter makes up:

  - 65002 64500: AS 64500's ASPA names 65002 as a provider: valid;
  - 65002 64501 64500: 64500's ASPA does not name 64501, so the path
    leaves a customer towards a non-provider: invalid (a route leak);
  - 65002 64600: 64600 has no ASPA: unknown.

Hand-checked against the draft's upstream procedure: for the second path
the up-ramp from the origin stops at the first hop (64500 -> 64501 is
Not Provider+), so max_up_ramp = 1 < N = 3: Invalid.

With `[rpki] reject_aspa_invalid = true` the leaked route is kept but is
not the best. Then the ASPAs change: the first cache stops, and the
second (less preferred) one holds an ASPA of 64500 that names 64501 too.
Petrel publishes that data, verifies again only the routes whose path
holds 64500 (the customer whose ASPA changed): the second path becomes
unknown (64501 attests nothing) and its route the best again; the other
two keep their states.

SKIPs while stayrtr, BIRD or the petrel binary is missing.
"""

from __future__ import annotations

import pytest

import lab as L
import test_rpki as R
from conftest import require
from test_rtr_v2 import Cache, write_cache

PETREL_ASN, BIRD_ASN = 65001, 65002
HTTP_PORT = R.HTTP_PORT
PORTS = (18295, 18296)
VALID, LEAK, UNKNOWN = "10.94.1.0/24", "10.94.2.0/24", "10.94.3.0/24"
PATHS = {VALID: [64500], LEAK: [64501, 64500], UNKNOWN: [64600]}   # after BIRD's own AS

_needs = R._needs  # the petrel binary and stayrtr


class PathBird(L.Bird):
    """BIRD as Petrel's customer (RFC 9234 role), exporting each prefix
    with the ASes of PATHS after its own."""

    def config(self) -> str:
        conf = super().config().replace("  passive ", "  local role customer;\n  passive ", 1)
        steps = " ".join(
            f"if net = {p} then {{ " + " ".join(f"bgp_path.prepend({a});" for a in reversed(path)) + " }"
            for p, path in PATHS.items())
        return conf.replace("export all;", f"export filter {{ {steps} accept; }};", 1)


class AspaPetrel(R.RpkiPetrel):
    def config(self) -> str:
        return super().config().replace("[rpki]\n", "[rpki]\nreject_aspa_invalid = true\n", 1)


def aspa_marks(petrel: L.Petrel) -> dict[str, tuple[str | None, bool]]:
    """{prefix: (BIRD's route's ASPA state, whether it is the best)}."""
    out = {}
    for p in PATHS:
        got = petrel.api(f"/api/routes/{p}")
        if isinstance(got, dict) and got.get("routes"):
            r = got["routes"][0]
            out[p] = (r.get("aspa"), bool(r["best"]))
    return out


def test_aspa_states_reject_and_reverify(lab):
    require("bird")
    me, bn = lab.node("petrel"), lab.node("customer")
    first, second = me.path("aspa-1.json"), me.path("aspa-2.json")
    write_cache(first, [], {64500: [BIRD_ASN]})
    write_cache(second, [], {64500: [BIRD_ASN, 64501]})
    cache1 = Cache(me, PORTS[0], first).start()
    cache2 = Cache(me, PORTS[1], second).start()
    petrel = AspaPetrel(me, [L.PetrelPeer("customer", bn.v4, BIRD_ASN, me.v4, families=("ipv4-unicast",),
                                          extra=('local_role = "provider"',))],
                        PETREL_ASN, http_port=HTTP_PORT, caches=[(PORTS[0], 1), (PORTS[1], 2)])
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    L.wait_until(lambda: R.rpki(petrel).get("aspas") == 1 and
                 R.cache_of(petrel, PORTS[0]).get("active"), 20, "the first cache's ASPA in force")
    bird = PathBird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, passive=True, families=("ipv4-unicast",),
                                  announce=tuple(PATHS))).start()
    bird.wait_established(30)

    want = {VALID: ("valid", True), LEAK: ("invalid", False), UNKNOWN: ("unknown", True)}
    L.wait_until(lambda: aspa_marks(petrel) == want, 20, f"ASPA states {want}: {aspa_marks(petrel)}")
    got = petrel.api(f"/api/routes/{LEAK}")
    assert got["routes"][0]["attributes"]["as_path"][0]["asns"] == [BIRD_ASN, 64501, 64500], got
    st = L.wait_until(lambda: (lambda r: r if r["aspa_routes"]["invalid"] == 1 else None)(R.rpki(petrel)), 15,
                      "counts by ASPA state")
    assert st["reject_aspa_invalid"] is True, st
    assert st["aspa_routes"] == {"valid": 1, "invalid": 1, "unknown": 1, "unchecked": 0}, st
    # petrel show: the RPKI and ASPA columns (RPKI: no VRPs, not found).
    out = me.run([L.petrel_binary(), "show", "--http", f"127.0.0.1:{HTTP_PORT}", "route", LEAK]).stdout
    head, row = out.splitlines()[0], out.splitlines()[1]
    assert row[head.index("RPKI"):].split()[:2] == ["not-found", "invalid"], out
    page = R.http_text(me, "/")
    assert "ASPA: paths valid / invalid / unknown / not verified" in page and "1 / 1 / 1 / 0" in page, page
    metrics = R.http_text(me, "/metrics")
    assert 'petrel_routes_by_aspa{state="invalid"} 1' in metrics
    assert 'petrel_routes_by_aspa{state="valid"} 1' in metrics

    # ---- the ASPAs change: the first cache goes, the second's data is used
    cache1.stop()
    L.wait_until(lambda: R.cache_of(petrel, PORTS[1]).get("active"), 30, "the second cache in force")
    want = {VALID: ("valid", True), LEAK: ("unknown", True), UNKNOWN: ("unknown", True)}
    L.wait_until(lambda: aspa_marks(petrel) == want, 20, f"ASPA states {want}: {aspa_marks(petrel)}")
    ev = petrel.wait_events("aspa-reverified", routes_changed=1)
    assert ev[-1]["customers_changed"] == "1", ev   # 64500's ASPA alone
    cache2.stop()
    assert petrel.alive()
