"""RFC 9234 roles and OTC (docs/configuration.md, `peer.local_role`).

1. The Role capability against a real BIRD 2 (`local role`, `require
   roles`): roles that fit (Petrel provider, BIRD customer, both strict)
   bring the session up; roles that do not (Petrel provider, BIRD peer) are
   refused with NOTIFICATION Open Message Error / Role Mismatch (2/11) and
   the session never comes up.
2. OTC on import and export, with Petrel between a provider (a real BIRD:
   `local role provider`), a customer and a lateral peer (scripted
   speakers, which send no Role capability; Petrel is not strict with
   them):
   - the provider's route gets OTC with the provider's AS on import
     (ingress 3), so it goes to the customer with that OTC and not to the
     lateral peer (egress 2);
   - the customer's plain route goes to the provider, and to the lateral
     peer with OTC = Petrel's AS (egress 1);
   - the customer's route that carries OTC is a leak (ingress 1): refused,
     counted in /api/peers and the metrics, logged once, passed to nobody.

SKIPs while BIRD or the petrel binary is missing.
"""

from __future__ import annotations

import ipaddress
import os
import struct

import pytest

import lab as L
import speaker as S
from conftest import require
from test_http import http_get

PETREL_ASN, BIRD_ASN, CUSTOMER_ASN, LATERAL_ASN = 65001, 65002, 65003, 65004
OTC = 35
V4 = ("ipv4-unicast",)
PROVIDER_ROUTE = "10.92.0.0/24"
CUSTOMER_ROUTE = "10.93.1.0/24"
LEAKED_ROUTE = "10.93.2.0/24"


class RoleBird(L.Bird):
    """BIRD with a BGP role (RFC 9234) on its session, optionally strict."""

    def __init__(self, node: L.Node, session: L.Session, role: str, strict: bool = False):
        super().__init__(node, session)
        self.role = role
        self.strict = strict

    def config(self) -> str:
        extra = f"  local role {self.role};\n" + ("  require roles on;\n" if self.strict else "")
        return super().config().replace("  passive ", extra + "  passive ", 1)


def skip_without_petrel() -> None:
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")


def start(petrel: L.Petrel) -> L.Petrel:
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        pytest.skip(str(e))
    return petrel


def role_peer(name: str, node: L.Node, asn: int, me: L.Node, role: str, strict: bool = False,
              **kw) -> L.PetrelPeer:
    extra = (f'local_role = "{role}"',) + (("strict_role = true",) if strict else ())
    return L.PetrelPeer(name, node.v4, asn, me.v4, families=V4, export_policy="all", extra=extra, **kw)


def test_role_capability_with_bird(lab):
    require("bird")
    skip_without_petrel()
    me, fit, misfit, silent = lab.node("petrel"), lab.node("cust"), lab.node("misfit"), lab.node("silent")
    good = RoleBird(fit, L.Session(BIRD_ASN, PETREL_ASN, me.v4, fit.v4, passive=True, families=V4,
                                   announce=("10.91.0.0/24",)), "customer", strict=True).start()
    bad = RoleBird(misfit, L.Session(BIRD_ASN + 10, PETREL_ASN, me.v4, misfit.v4, passive=True, families=V4),
                   "customer").start()
    plain = L.Bird(silent, L.Session(BIRD_ASN + 20, PETREL_ASN, me.v4, silent.v4, passive=True,
                                     families=V4)).start()
    petrel = start(L.Petrel(me, [
        role_peer("cust", fit, BIRD_ASN, me, "provider", strict=True),
        role_peer("misfit", misfit, BIRD_ASN + 10, me, "customer"),
        role_peer("silent", silent, BIRD_ASN + 20, me, "provider", strict=True),
    ], PETREL_ASN))

    good.wait_established(30)
    L.wait_until(lambda: (petrel.api("/api/routes?prefix=10.91.0.0/24") or {}).get("prefixes"), 20,
                 "BIRD's route in Petrel's table")
    st = petrel.api_peer("cust")
    assert st["roles"] == {"local": "provider", "peer": "customer", "route_leaks": 0}, st

    # Customer against customer: Role Mismatch (2/11), the session never
    # comes up. (BIRD's lab session is a protocol named "peer", which its
    # grammar then takes for that name rather than the role: the misfit
    # pair is customer with customer.) BIRD sees the mismatch as well as
    # Petrel, so which of them said it first is not checked here ...
    L.wait_until(lambda: "role mismatch" in bad.last_error().lower(), 30,
                 f"the role mismatch: {bad.last_error()!r}")
    # ... but a BIRD without a role has nothing to object to: only
    # Petrel's strict mode refuses it, and BIRD reads it in the
    # NOTIFICATION it received.
    L.wait_until(lambda: "received: role mismatch" in plain.last_error().lower(), 30,
                 f"BIRD received Role Mismatch from Petrel: {plain.last_error()!r}")
    for b, name in ((bad, "misfit"), (plain, "silent")):
        assert b.state().state != "Established", name
        assert str(petrel.api_peer(name)["state"]).lower() != "established", name
    assert petrel.alive()


def otc_of(sp: S.Speaker, prefix: str) -> int | None | bool:
    """The OTC of the last UPDATE that announced `prefix` to the speaker:
    its value, None when that UPDATE had none, False when none announced
    it."""
    found: int | None | bool = False
    for m in sp.received(S.UPDATE):
        u = S.parse_update(m.body)
        if prefix in u.announced.get("ipv4-unicast", []):
            v = u.attrs.get(OTC)
            found = struct.unpack("!I", v)[0] if v is not None and len(v) == 4 else None
    return found


def upd(prefix: str, next_hop: str, path: list[int], otc: int | None = None) -> bytes:
    attrs = S.attribute(S.ORIGIN, b"\x00") + S.as_path(path) + \
        S.attribute(S.NEXT_HOP, ipaddress.IPv4Address(next_hop).packed)
    if otc is not None:
        attrs += S.attribute(OTC, struct.pack("!I", otc), flags=0xC0)  # optional transitive
    return S.update(attrs=attrs, nlri=S.encode_prefix(prefix))


def connected(sp: S.Speaker, node: L.Node, me: L.Node) -> S.Speaker:
    sp.connect(me.v4, local=node.v4, netns=node.ns, timeout=15, attempts=30)
    sp.start()
    sp.wait_established(15)
    return sp


def test_otc_on_import_and_export(lab):
    require("bird")
    skip_without_petrel()
    me, up, cn, ln = lab.node("petrel"), lab.node("provider"), lab.node("customer"), lab.node("lateral")
    provider = RoleBird(up, L.Session(BIRD_ASN, PETREL_ASN, me.v4, up.v4, passive=True, families=V4,
                                      announce=(PROVIDER_ROUTE,)), "provider", strict=True).start()
    petrel = start(L.Petrel(me, [
        role_peer("provider", up, BIRD_ASN, me, "customer", strict=True),
        role_peer("customer", cn, CUSTOMER_ASN, me, "provider", passive=True),
        role_peer("lateral", ln, LATERAL_ASN, me, "peer", passive=True),
    ], PETREL_ASN))
    provider.wait_established(30)
    customer = connected(L.speaker(cn, CUSTOMER_ASN, families=V4), cn, me)
    lateral = connected(L.speaker(ln, LATERAL_ASN, families=V4), ln, me)

    customer.send(upd(CUSTOMER_ROUTE, cn.v4, [CUSTOMER_ASN]))
    customer.send(upd(LEAKED_ROUTE, cn.v4, [CUSTOMER_ASN, 65099], otc=65099))

    # The provider's route: OTC with the provider's AS (added by Petrel on
    # import), to the customer only.
    L.wait_until(lambda: otc_of(customer, PROVIDER_ROUTE) == BIRD_ASN, 30,
                 f"the customer gets {PROVIDER_ROUTE} with OTC {BIRD_ASN}: {otc_of(customer, PROVIDER_ROUTE)}")
    # The customer's plain route: to the provider (BIRD holds it), and to the
    # lateral peer with Petrel's AS as OTC.
    L.wait_until(lambda: CUSTOMER_ROUTE in provider.received_prefixes("ipv4-unicast"), 30,
                 "the provider holds the customer's route")
    L.wait_until(lambda: otc_of(lateral, CUSTOMER_ROUTE) == PETREL_ASN, 30,
                 f"the lateral peer gets {CUSTOMER_ROUTE} with OTC {PETREL_ASN}")

    # The leak: refused, counted, logged once, sent to nobody.
    st = L.wait_until(lambda: (lambda s: s if s and s["roles"]["route_leaks"] == 1 else None)(
        petrel.api_peer("customer")), 20, "the leak counted")
    assert st["roles"]["local"] == "provider" and st["roles"]["peer"] is None, st   # the speaker offers none
    assert petrel.api_peer("provider")["roles"]["peer"] == "provider"
    assert (petrel.api(f"/api/routes?prefix={LEAKED_ROUTE}") or {}).get("prefixes", []) == []
    assert len(petrel.events("route-leak", peer="customer")) == 1
    status, _, body = http_get(me, "/metrics")
    assert status == 200
    assert 'petrel_update_refused_total{peer="customer",reason="route-leak"} 1' in body.decode()

    # What must not have gone anywhere, once everything else has arrived:
    # the provider's route to the lateral peer (it carries OTC: egress 2),
    # the leak to the provider or the lateral peer.
    assert otc_of(lateral, PROVIDER_ROUTE) is False
    assert otc_of(lateral, LEAKED_ROUTE) is False
    assert LEAKED_ROUTE not in provider.received_prefixes("ipv4-unicast")
    # The provider got the customer's route without an OTC from Petrel
    # (towards a provider none is added): BIRD would show BGP.otc.
    assert "BGP.otc" not in provider.birdc("show", "route", "all", CUSTOMER_ROUTE)
    assert customer.notification is None and lateral.notification is None
    assert petrel.alive()
