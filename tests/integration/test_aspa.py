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

A third test (test_slurm_aspa_exceptions) keeps the first test's cache
and BIRD and adds SLURM ASPA filters and assertions
(draft-ietf-sidrops-aspa-slurm): the states change as the draft says,
hand-checked beside the test, also after a SIGHUP with another file.

A second test puts Petrel between three BIRDs, a provider, a lateral
peer and a customer (each with its RFC 9234 role), which send a valid, an
invalid and an unknown path each; the states, hand-checked against the
draft's downstream procedure (routes from the provider) and upstream one
(the others), are written out with the paths below.

SKIPs while stayrtr, BIRD or the petrel binary is missing.
"""

from __future__ import annotations

import json
import os

import pytest

import lab as L
import test_rpki as R
from conftest import require
from test_rtr_v2 import Cache, write_cache
from test_slurm import SlurmPetrel, sighup

PETREL_ASN, BIRD_ASN = 65001, 65002
HTTP_PORT = R.HTTP_PORT
PORTS = (18295, 18296)
VALID, LEAK, UNKNOWN = "10.94.1.0/24", "10.94.2.0/24", "10.94.3.0/24"
PATHS = {VALID: [64500], LEAK: [64501, 64500], UNKNOWN: [64600]}   # after BIRD's own AS

_needs = R._needs  # the petrel binary and stayrtr


class PathBird(L.Bird):
    """BIRD with an RFC 9234 role (Petrel's customer unless said),
    exporting each prefix of `paths` with those ASes after its own."""

    # Not "peer": BIRD would read `local role peer` as naming the protocol.
    proto = "pathpeer"

    def __init__(self, node: L.Node, session: L.Session, paths: dict[str, list[int]] | None = None,
                 role: str = "customer"):
        super().__init__(node, session)
        self.paths = PATHS if paths is None else paths
        self.role = role

    def config(self) -> str:
        conf = super().config().replace("  passive ", f"  local role {self.role};\n  passive ", 1)
        steps = " ".join(
            f"if net = {p} then {{ " + " ".join(f"bgp_path.prepend({a});" for a in reversed(path)) + " }"
            for p, path in self.paths.items())
        return conf.replace("export all;", f"export filter {{ {steps} accept; }};", 1)


class AspaPetrel(R.RpkiPetrel):
    def config(self) -> str:
        return super().config().replace("[rpki]\n", "[rpki]\nreject_aspa_invalid = true\n", 1)


def customer_peer(node: L.Node, me: L.Node) -> L.PetrelPeer:
    """BIRD on `node` as Petrel's customer (Petrel's local_role "provider":
    the upstream procedure)."""
    return L.PetrelPeer("customer", node.v4, BIRD_ASN, me.v4, families=("ipv4-unicast",),
                        extra=('local_role = "provider"',))


def started(petrel: L.Petrel, *caches: Cache) -> L.Petrel:
    """Starts `petrel`; skips (stopping `caches`) when it is not built yet."""
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        for c in caches:
            c.stop()
        pytest.skip(str(e))
    return petrel


def aspa_marks(petrel: L.Petrel, prefixes=PATHS) -> dict[str, tuple[str | None, bool]]:
    """{prefix: (BIRD's route's ASPA state, whether it is the best)}."""
    out = {}
    for p in prefixes:
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
    petrel = started(AspaPetrel(me, [customer_peer(bn, me)], PETREL_ASN, http_port=HTTP_PORT,
                                caches=[(PORTS[0], 1), (PORTS[1], 2)]), cache1, cache2)
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


# ---- the three relationships, each with a valid, an invalid and an
# unknown path (test_aspa_states_by_relationship)
#
# Petrel (65001) has a provider, a lateral peer and a customer, each a
# BIRD with the matching RFC 9234 role. Petrel's local_role picks the
# procedure (docs/rpki.md, "ASPA verification of routes"): "customer"
# towards the provider -> downstream; "peer" and "provider" -> upstream.
#
# Paths as they reach Petrel, neighbour first; numbered from the origin
# AS(1) to the neighbour AS(N) as the draft does. hop(A, B) is Provider+
# when A's ASPA lists B, Not Provider+ when A has an ASPA without B, No
# Attestation when A has none. Upstream: Invalid if max_up_ramp < N,
# Unknown if min_up_ramp < N, else Valid. Downstream: Invalid if
# max_up_ramp + max_down_ramp < N, Unknown if min_up_ramp + min_down_ramp
# < N, else Valid (the down ramp counts from AS(N) towards the origin by
# hop(AS(j), AS(j-1)): the route came down from AS(j-1) to its customer).
PROVIDER_ASN, LATERAL_ASN, CUSTOMER_ASN = 65010, 65020, 65030
REL_ASPAS = {
    64510: [64512],           # 64510's provider is 64512
    PROVIDER_ASN: [64512],    # so is Petrel's provider's (a sibling of 64510 under 64512)
    64520: [LATERAL_ASN, 64528, 64529],
    64529: [64999],           # 64529's only provider is 64999
    64530: [CUSTOMER_ASN],
}
# Not in REL_ASPAS (no attestation): 64512, 64517, 64519, 64528, 64539;
# 64516 and 64531 neither.
BY_PROVIDER = {  # downstream procedure
    # 64510 -> 64512 (up: 64510 lists 64512), 64512 -> 65010 (down: 65010
    # lists 64512), 65010 -> us (down). N = 3; up ramp: hop(64510, 64512)
    # = P+, hop(64512, 65010) = NoAtt: min_up = 2; down ramp: hop(65010,
    # 64512) = P+, hop(64512, 64510) = NoAtt: min_down = 2. 2 + 2 >= 3:
    # Valid (a customer route of our provider's provider, down the tree).
    "10.95.1.0/24": ([64512, 64510], "valid"),
    # 64510 -> 64516 is Not P+ (64510 lists only 64512): max_up = 1;
    # 65010 -> 64516 going down needs 65010 to list 64516, which it does
    # not: max_down = 1. 1 + 1 < 3: Invalid (64516, not 64510's provider
    # nor 65010's, passed a route sideways: a leak).
    "10.95.2.0/24": ([64516, 64510], "invalid"),
    # No one on the way attests anything but 65010: hop(64519, 64517) and
    # hop(64517, 65010) are NoAtt: max_up = 3 (not invalid); min_up = 1,
    # hop(65010, 64517) is Not P+: min_down = 1. 1 + 1 < 3: Unknown.
    "10.95.3.0/24": ([64517, 64519], "unknown"),
}
BY_LATERAL = {  # upstream procedure
    # 64520 lists 65020: hop(64520, 65020) = P+: min_up = 2 = N: Valid.
    "10.96.1.0/24": ([64520], "valid"),
    # 64520 -> 64529 is P+, but 64529 -> 65020 is Not P+ (64529 lists
    # only 64999): max_up = 2 < 3: Invalid. The lateral peer got the
    # route from 64529, its provider, and passed it to us, a peer (a
    # route leak; the downstream procedure would find it valid).
    "10.96.2.0/24": ([64529, 64520], "invalid"),
    # 64520 -> 64528 is P+, 64528 has no ASPA: hop(64528, 65020) = NoAtt:
    # max_up = 3 = N, min_up = 2 < 3: Unknown.
    "10.96.3.0/24": ([64528, 64520], "unknown"),
}
BY_CUSTOMER = {  # upstream procedure
    # 64530 lists 65030: min_up = 2 = N: Valid.
    "10.97.1.0/24": ([64530], "valid"),
    # 64530 -> 64531 is Not P+: max_up = 1 < 3: Invalid (64531 leaked
    # its peer's or provider's route up to its provider 65030).
    "10.97.2.0/24": ([64531, 64530], "invalid"),
    # 64539 has no ASPA: max_up = 2 = N, min_up = 1 < 2: Unknown.
    "10.97.3.0/24": ([64539], "unknown"),
}


def test_aspa_states_by_relationship(lab):
    require("bird")
    me = lab.node("petrel")
    path = me.path("aspa-rel.json")
    write_cache(path, [], REL_ASPAS)
    cache = Cache(me, PORTS[0], path).start()
    # (Petrel's local_role, BIRD's role, BIRD's AS, the paths it sends)
    relations = {"provider": ("customer", "provider", PROVIDER_ASN, BY_PROVIDER),
                 "lateral": ("peer", "peer", LATERAL_ASN, BY_LATERAL),
                 "customer": ("provider", "customer", CUSTOMER_ASN, BY_CUSTOMER)}
    nodes = {name: lab.node(name) for name in relations}
    petrel = R.RpkiPetrel(me, [L.PetrelPeer(name, nodes[name].v4, asn, me.v4, families=("ipv4-unicast",),
                                            extra=(f'local_role = "{ours}"',))
                               for name, (ours, _, asn, _) in relations.items()],
                          PETREL_ASN, http_port=HTTP_PORT, caches=[(PORTS[0], 1)])
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        cache.stop()
        pytest.skip(str(e))
    L.wait_until(lambda: R.rpki(petrel).get("aspas") == len(REL_ASPAS), 20, "the ASPAs in force")
    birds = []
    for name, (_, theirs, asn, paths) in relations.items():
        n = nodes[name]
        birds.append(PathBird(n, L.Session(asn, PETREL_ASN, me.v4, n.v4, passive=True, families=("ipv4-unicast",),
                                           announce=tuple(paths)),
                              paths={p: hops for p, (hops, _) in paths.items()}, role=theirs).start())
    for b in birds:
        b.wait_established(30)

    want = {p: (state, True) for paths in (BY_PROVIDER, BY_LATERAL, BY_CUSTOMER) for p, (_, state) in paths.items()}
    L.wait_until(lambda: aspa_marks(petrel, want) == want, 30, f"ASPA states {want}: {aspa_marks(petrel, want)}")
    # The paths are as written above, after the neighbour's own AS.
    for name, (_, _, asn, paths) in relations.items():
        for p, (hops, _) in paths.items():
            got = petrel.api(f"/api/routes/{p}")["routes"][0]
            assert got["peer"] == name and got["attributes"]["as_path"][0]["asns"] == [asn, *hops], got
    counts = {"valid": 3, "invalid": 3, "unknown": 3, "unchecked": 0}  # counted at most 5 s before
    L.wait_until(lambda: R.rpki(petrel)["aspa_routes"] == counts, 15, f"counts by ASPA state {counts}")
    cache.stop()
    assert petrel.alive()


# ---- SLURM ASPA exceptions (test_slurm_aspa_exceptions)
#
# The cache holds 64500 -> {65002} alone; BIRD sends PATHS as in the first
# test (upstream procedure).
#
# File 1: an ASPA filter for 64500 and an assertion 64600 -> {65002}.
#   65002 64500: 64500's ASPA is filtered out: hop(64500, 65002) is No
#     Attestation: max_up = 2 = N, min_up = 1 < 2: unknown.
#   65002 64501 64500: no one attests: unknown.
#   65002 64600: hop(64600, 65002) is Provider+ (asserted): valid.
# File 2 (SIGHUP): no filter, an assertion 64500 -> {64501}. An assertion
# is not a filter (the draft), so 64500's providers are the cache's and
# the assertion's: {64501, 65002}.
#   65002 64500: hop(64500, 65002) is still Provider+: valid (were the
#     cache's ASPA replaced by the assertion, it would be invalid).
#   65002 64501 64500: hop(64500, 64501) Provider+, hop(64501, 65002) No
#     Attestation: max_up = 3 = N, min_up = 2 < 3: unknown (it was invalid
#     with the cache's ASPA alone).
#   65002 64600: 64600 has no ASPA any more: unknown.


def write_slurm_aspa(path: str, filters: list[dict], assertions: list[dict]) -> None:
    doc = {"slurmVersion": 2,
           "validationOutputFilters": {"prefixFilters": [], "bgpsecFilters": [], "aspaFilters": filters},
           "locallyAddedAssertions": {"prefixAssertions": [], "bgpsecAssertions": [], "aspaAssertions": assertions}}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def test_slurm_aspa_exceptions(lab):
    require("bird")
    me, bn = lab.node("petrel"), lab.node("customer")
    cache_file, slurm = me.path("aspa-slurm-cache.json"), me.path("slurm-aspa.json")
    write_cache(cache_file, [], {64500: [BIRD_ASN]})
    write_slurm_aspa(slurm, [{"customerAsn": 64500, "comment": "their ASPA is wrong"}],
                     [{"customerAsn": 64600, "providerAsns": [BIRD_ASN], "comment": "they told us"}])
    cache = Cache(me, PORTS[0], cache_file).start()
    petrel = started(SlurmPetrel(me, [customer_peer(bn, me)], PETREL_ASN, http_port=HTTP_PORT,
                                 caches=[(PORTS[0], 1)], slurm=[slurm]), cache)
    try:
        L.wait_until(lambda: R.cache_of(petrel, PORTS[0]).get("active"), 20, "the cache in force")
        L.wait_until(lambda: R.rpki(petrel)["slurm"]["aspas_removed"] == 1, 10, "SLURM applied to the ASPAs")
        st = R.rpki(petrel)
        assert st["aspas"] == 1, st   # 64500's filtered, 64600's asserted
        assert {k: st["slurm"][k] for k in ("aspa_filters", "aspa_assertions", "aspas_removed", "aspas_added")} == \
            {"aspa_filters": 1, "aspa_assertions": 1, "aspas_removed": 1, "aspas_added": 1}, st
        bird = PathBird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, passive=True, families=("ipv4-unicast",),
                                      announce=tuple(PATHS))).start()
        bird.wait_established(30)
        want = {VALID: ("unknown", True), LEAK: ("unknown", True), UNKNOWN: ("valid", True)}
        L.wait_until(lambda: aspa_marks(petrel) == want, 20, f"ASPA states {want}: {aspa_marks(petrel)}")
        metrics = R.http_text(me, "/metrics")
        assert 'petrel_rpki_slurm_entries{kind="aspa_filter"} 1\n' in metrics, metrics
        assert 'petrel_rpki_slurm_aspas{change="removed"} 1\n' in metrics, metrics

        # ---- SIGHUP: an assertion that adds a provider to the cache's ASPA
        write_slurm_aspa(slurm, [], [{"customerAsn": 64500, "providerAsns": [64501]}])
        sighup(petrel, "reloaded")
        want = {VALID: ("valid", True), LEAK: ("unknown", True), UNKNOWN: ("unknown", True)}
        L.wait_until(lambda: aspa_marks(petrel) == want, 20, f"ASPA states after the reload {want}: "
                     f"{aspa_marks(petrel)}")
        st = R.rpki(petrel)
        assert st["aspas"] == 1 and st["slurm"]["aspas_removed"] == 0 and st["slurm"]["aspas_added"] == 1, st

        # ---- SIGHUP with a file the draft forbids: the reload fails, the exceptions stay
        write_slurm_aspa(slurm, [], [{"customerAsn": 64500, "providerAsns": [64501, 64501]}])
        sighup(petrel, "reload-failed")
        err = petrel.events("reload-failed")[-1]["error"]
        assert slurm in err and "/locallyAddedAssertions/aspaAssertions/0/providerAsns/1" in err, err
        assert "ascending order" in err, err
        assert aspa_marks(petrel) == want
        assert petrel.alive()
    finally:
        cache.stop()
