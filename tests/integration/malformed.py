"""A catalogue of malformed messages and what RFC 4271 / RFC 7606 require.

Each case builds the bytes to send on an Established session (4-octet AS
negotiated; the sender's AS is `asn`, its next hops `nh4`/`nh6`) and names
the required outcome:

- ("reset", code, subcodes): the receiver sends NOTIFICATION code/subcode
  (one of `subcodes`) and closes the session;
- ("withdraw", prefixes): treat-as-withdraw (RFC 7606 section 2): the
  session stays up and the prefixes of that UPDATE are not (or no longer)
  installed;
- ("accept", prefixes): a well-formed UPDATE (a control case): the session
  stays up and the prefixes are installed.

The cases run against BIRD 2 in the lab self-tests (which proves the bytes
are what each case says) and against Petrel in test_petrel.py.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

import speaker as S

ASN = 65001


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[int, str, str], bytes]   # (asn, nh4, nh6) -> bytes
    outcome: tuple
    rfc: str


def _base(asn: int, nh4: str, origin: bytes = b"\x00") -> bytes:
    return (S.attribute(S.ORIGIN, origin) + S.as_path([asn]) +
            S.attribute(S.NEXT_HOP, bytes(int(x) for x in nh4.split("."))))


P4 = "198.19.200.0/24"
P6 = "fd00:c8::/48"


def _bad_marker(asn, nh4, nh6):
    return S.message(S.KEEPALIVE, marker=b"\xff" * 15 + b"\x00")


def _short_length(asn, nh4, nh6):
    return S.message(S.KEEPALIVE, length=18)


def _keepalive_with_body(asn, nh4, nh6):
    return S.message(S.KEEPALIVE, b"\x00")


def _unknown_type(asn, nh4, nh6):
    return S.message(9)


def _attr_len_overrun(asn, nh4, nh6):
    # Total Path Attribute Length runs past the end of the message
    attrs = _base(asn, nh4)
    body = struct.pack("!H", 0) + struct.pack("!H", len(attrs) + 40) + attrs
    return S.message(S.UPDATE, body)


def _withdrawn_len_overrun(asn, nh4, nh6):
    body = struct.pack("!H", 200) + b"\x18\xc6\x13\xc8" + struct.pack("!H", 0)
    return S.message(S.UPDATE, body)


def _bad_origin(asn, nh4, nh6):
    return S.update(attrs=_base(asn, nh4, origin=b"\x07"), nlri=S.encode_prefix(P4))


def _origin_bad_length(asn, nh4, nh6):
    return S.update(attrs=_base(asn, nh4, origin=b"\x00\x00"), nlri=S.encode_prefix(P4))


def _missing_next_hop(asn, nh4, nh6):
    attrs = S.attribute(S.ORIGIN, b"\x00") + S.as_path([asn])
    return S.update(attrs=attrs, nlri=S.encode_prefix(P4))


def _as_path_overrun(asn, nh4, nh6):
    # segment says 5 ASes, carries 1
    seg = bytes([S.AS_SEQUENCE, 5]) + struct.pack("!I", asn)
    attrs = (S.attribute(S.ORIGIN, b"\x00") + S.attribute(S.AS_PATH, seg) +
             S.attribute(S.NEXT_HOP, bytes(int(x) for x in nh4.split("."))))
    return S.update(attrs=attrs, nlri=S.encode_prefix(P4))


def _origin_flags_optional(asn, nh4, nh6):
    attrs = (S.attribute(S.ORIGIN, b"\x00", S.F_OPTIONAL | S.F_TRANSITIVE) +
             S.as_path([asn]) +
             S.attribute(S.NEXT_HOP, bytes(int(x) for x in nh4.split("."))))
    return S.update(attrs=attrs, nlri=S.encode_prefix(P4))


def _duplicate_mp_reach(asn, nh4, nh6):
    import ipaddress
    nh = ipaddress.IPv6Address(nh6).packed
    mp = struct.pack("!HBB", S.AFI_IPV6, S.SAFI_UNICAST, 16) + nh + b"\x00" + S.encode_prefix(P6)
    attrs = (S.attribute(S.ORIGIN, b"\x00") + S.as_path([asn]) +
             S.attribute(S.MP_REACH_NLRI, mp, S.F_OPTIONAL) +
             S.attribute(S.MP_REACH_NLRI, mp, S.F_OPTIONAL))
    return S.update(attrs=attrs)


def _unrecognized_well_known(asn, nh4, nh6):
    attrs = _base(asn, nh4) + S.attribute(200, b"\x01\x02", S.F_TRANSITIVE)
    return S.update(attrs=attrs, nlri=S.encode_prefix(P4))


def _nlri_prefix_too_long(asn, nh4, nh6):
    return S.update(attrs=_base(asn, nh4), nlri=b"\x21\xc6\x13\xc8\x00\x00")


def _unknown_optional_transitive_ok(asn, nh4, nh6):
    # well-formed, unknown optional transitive attribute: accepted and passed on
    attrs = _base(asn, nh4) + S.attribute(201, b"\xab", S.F_OPTIONAL | S.F_TRANSITIVE)
    return S.update(attrs=attrs, nlri=S.encode_prefix(P4))


CASES: list[Case] = [
    Case("bad-marker", _bad_marker, ("reset", 1, {1}), "4271 6.1"),
    Case("length-below-19", _short_length, ("reset", 1, {2}), "4271 6.1"),
    Case("keepalive-with-body", _keepalive_with_body, ("reset", 1, {2}), "4271 6.1"),
    Case("unknown-message-type", _unknown_type, ("reset", 1, {3}), "4271 6.1"),
    Case("attribute-length-overrun", _attr_len_overrun, ("reset", 3, {1}), "7606 4"),
    Case("withdrawn-length-overrun", _withdrawn_len_overrun, ("reset", 3, {1}), "7606 4"),
    Case("duplicate-mp-reach", _duplicate_mp_reach, ("reset", 3, {1}), "7606 3g"),
    Case("nlri-prefix-length-33", _nlri_prefix_too_long, ("reset", 3, {10}), "7606 5.3"),
    Case("origin-value-7", _bad_origin, ("withdraw", [P4]), "7606 7.1"),
    Case("origin-length-2", _origin_bad_length, ("withdraw", [P4]), "7606 7.1"),
    Case("missing-next-hop", _missing_next_hop, ("withdraw", [P4]), "7606 3d"),
    Case("as-path-segment-overrun", _as_path_overrun, ("withdraw", [P4]), "7606 7.2"),
    Case("origin-flagged-optional", _origin_flags_optional, ("withdraw", [P4]), "7606 3c"),
    Case("unrecognized-well-known", _unrecognized_well_known, ("reset", 3, {2}), "4271 6.3"),
    Case("unknown-optional-transitive", _unknown_optional_transitive_ok,
         ("accept", [P4]), "4271 5"),
]

BY_NAME = {c.name: c for c in CASES}
