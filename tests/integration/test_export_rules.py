"""The export and import rules that test_export.py does not reach
(docs/export.md): 2-octet AS peers (RFC 6793), our own AS in a path
(allow_own_as), NO_ADVERTISE, and the counters of a peer whose routes
import policy refuses ("none" counts like any other peer).

The scripted speaker (speaker.py) stands in where the raw bytes matter:
what Petrel sends a 2-octet peer, and paths no daemon would send.
"""

from __future__ import annotations

import struct

import lab as L
import speaker as S

PETREL_ASN = 65001
BIRD_ASN = 65002
AS4_FEEDER = 4200000010
AS4_IN_BIRD = 4200000020
OLD_ASN = 65020
V4 = ("ipv4-unicast",)
HOLD = 9


def path_of(value: bytes, width: int) -> list[int]:
    """The ASes of an AS_PATH or AS4_PATH value, segments joined."""
    out, i = [], 0
    fmt = "!I" if width == 4 else "!H"
    while i + 2 <= len(value):
        n = value[i + 1]
        out += [struct.unpack(fmt, value[i + 2 + k * width:i + 2 + (k + 1) * width])[0] for k in range(n)]
        i += 2 + n * width
    return out


def paths_received(sp: S.Speaker, width: int) -> dict[str, tuple[list[int], list[int]]]:
    """prefix -> (AS_PATH, AS4_PATH) of the latest announcement of each
    IPv4 prefix the speaker received."""
    res: dict[str, tuple[list[int], list[int]]] = {}
    for m in sp.received(S.UPDATE):
        u = S.parse_update(m.body)
        for p in u.announced.get("ipv4-unicast", []):
            res[p] = (path_of(u.attrs.get(S.AS_PATH, b""), width), path_of(u.attrs.get(S.AS4_PATH, b""), 4))
    return res


def connect(sp: S.Speaker, node: L.Node, petrel: L.Node) -> S.Speaker:
    sp.connect(petrel.v4, local=node.v4, netns=node.ns, timeout=15, attempts=30)
    sp.start()
    sp.wait_established()
    return sp


class TwoOctetBird(L.Bird):
    """BIRD that does not offer the 4-octet AS capability (`enable as4
    off`), and prepends a 4-octet AS to what it exports, which it must then
    send as AS_TRANS with the real path in AS4_PATH."""

    def config(self) -> str:
        conf = super().config()
        conf = conf.replace("  passive off;", "  passive off;\n  enable as4 off;")
        return conf.replace("export all;", f"export filter {{ bgp_path.prepend({AS4_IN_BIRD}); accept; }};")


def test_two_octet_peers_get_as_trans_and_as4_path(lab):
    me, bn, fn, on = lab.node("petrel"), lab.node("bird"), lab.node("feeder"), lab.node("old")
    bird = TwoOctetBird(bn, L.Session(BIRD_ASN, PETREL_ASN, me.v4, bn.v4, hold_time=HOLD, families=V4,
                                      announce=("10.61.0.0/24",))).start()
    petrel = L.Petrel(me, [
        L.PetrelPeer("bird", bn.v4, BIRD_ASN, me.v4, hold_time=HOLD, families=V4, export_policy="all"),
        L.PetrelPeer("feeder", fn.v4, AS4_FEEDER, me.v4, passive=True, families=V4, export_policy="all"),
        L.PetrelPeer("old", on.v4, OLD_ASN, me.v4, passive=True, families=V4, export_policy="all"),
    ], PETREL_ASN).start()
    feeder = connect(L.speaker(fn, AS4_FEEDER, families=V4), fn, me)
    old = connect(L.speaker(on, OLD_ASN, families=V4, as4=False), on, me)
    assert feeder.as4_negotiated and not old.as4_negotiated
    feeder.send_update(["10.60.0.0/24"], fn.v4)
    bird.wait_established(30)
    up = petrel.wait_events("session-up", peer="bird")[0]
    assert up["four_octet_as"] == "no", up  # BIRD is a 2-octet speaker here

    # To the 2-octet speaker: AS_TRANS where a 4-octet AS stands, the real
    # path in AS4_PATH (RFC 6793 section 4.2.2).
    got = old.wait(lambda: (lambda r: r if {"10.60.0.0/24", "10.61.0.0/24"} <= set(r) else None)(
        paths_received(old, 2)), 20, "the 2-octet speaker holds both prefixes")
    assert got["10.60.0.0/24"] == ([PETREL_ASN, S.AS_TRANS], [PETREL_ASN, AS4_FEEDER]), got
    # BIRD's route came in as AS_TRANS + AS4_PATH and was rebuilt from it:
    # it goes on with the real path.
    assert got["10.61.0.0/24"][0] == [PETREL_ASN, BIRD_ASN, S.AS_TRANS], got
    assert got["10.61.0.0/24"][1] == [PETREL_ASN, BIRD_ASN, AS4_IN_BIRD], got
    # To a 4-octet speaker: the rebuilt path, no AS4_PATH.
    new = feeder.wait(lambda: (lambda r: r if "10.61.0.0/24" in r else None)(paths_received(feeder, 4)),
                      20, "the 4-octet speaker holds BIRD's prefix")
    assert new["10.61.0.0/24"] == ([PETREL_ASN, BIRD_ASN, AS4_IN_BIRD], []), new
    # BIRD, itself a 2-octet peer here, sees the real path of the feeder's
    # route (it reads AS4_PATH).
    shown = L.wait_until(lambda: (lambda s: s if "BGP.as_path" in s else None)(
        bird.birdc("show", "route", "all", "10.60.0.0/24")), 20, "BIRD holds the feeder's route")
    assert f"BGP.as_path: {PETREL_ASN} {AS4_FEEDER}" in shown, shown
    assert petrel.api_peer("bird")["update_prefixes"]["ipv4-unicast"]["received"] == 1


NO_ADVERTISE = 0xFFFFFF02
NO_EXPORT = 0xFFFFFF01


def communities(*cs: int) -> bytes:
    return S.attribute(S.COMMUNITIES, b"".join(struct.pack("!I", c) for c in cs), S.F_OPTIONAL | S.F_TRANSITIVE)


def send_paths(sp: S.Speaker, node: L.Node, base: str) -> None:
    """Three prefixes: base.0 with a clean path, base.1 with our AS once,
    base.2 with it twice; and base.3 tagged NO_ADVERTISE, base.4 NO_EXPORT."""
    def upd(prefix: str, path: list[int], extra: bytes = b"") -> bytes:
        attrs = S.attribute(S.ORIGIN, b"\x00") + S.as_path(path) + \
            S.attribute(S.NEXT_HOP, bytes(int(x) for x in node.v4.split("."))) + extra
        return S.update(attrs=attrs, nlri=S.encode_prefix(prefix))
    a = sp.asn
    sp.send(upd(f"{base}.0.0/24", [a]) + upd(f"{base}.1.0/24", [a, PETREL_ASN]) +
            upd(f"{base}.2.0/24", [a, PETREL_ASN, 64999, PETREL_ASN]) +
            upd(f"{base}.3.0/24", [a], communities(NO_ADVERTISE)) +
            upd(f"{base}.4.0/24", [a], communities(NO_EXPORT)))


def test_own_as_no_advertise_and_refused_counts(lab):
    me = lab.node("petrel")
    strict, loose, none, ext, inn = (lab.node(n) for n in ("strict", "loose", "none", "ext", "int"))
    petrel = L.Petrel(me, [
        L.PetrelPeer("strict", strict.v4, 65030, me.v4, passive=True, families=V4),
        L.PetrelPeer("loose", loose.v4, 65031, me.v4, passive=True, families=V4, extra=("allow_own_as = 1",)),
        L.PetrelPeer("none", none.v4, 65032, me.v4, passive=True, families=V4, import_policy="none"),
        L.PetrelPeer("ext", ext.v4, 65040, me.v4, passive=True, families=V4, export_policy="all"),
        L.PetrelPeer("int", inn.v4, PETREL_ASN, me.v4, passive=True, families=V4, export_policy="all"),
    ], PETREL_ASN).start()
    ext_sp = connect(L.speaker(ext, 65040, families=V4), ext, me)
    int_sp = connect(L.speaker(inn, PETREL_ASN, families=V4), inn, me)
    for node, asn, base in ((strict, 65030, "10.70"), (loose, 65031, "10.71"), (none, 65032, "10.72")):
        sp = connect(L.speaker(node, asn, families=V4), node, me)
        send_paths(sp, node, base)
        if node is none:
            sp.send(S.withdraw(["10.72.9.0/24"]))

    def fams(name):
        return (petrel.api_peer(name) or {}).get("update_prefixes", {}).get("ipv4-unicast", {})
    # Own AS: refused with allow_own_as = 0; once is allowed with 1.
    L.wait_until(lambda: fams("strict").get("received") == 3 and fams("loose").get("received") == 4
                 and fams("none").get("withdrawn") == 1, 20, "Petrel took the speakers' routes")
    s, lo, n = fams("strict"), fams("loose"), fams("none")
    assert (s["announced"], s["refused"]) == (5, 2), s
    assert (lo["announced"], lo["refused"]) == (5, 1), lo
    # import "none" counts as any other peer: announced, withdrawn, refused.
    assert (n["announced"], n["withdrawn"], n["refused"], n["received"]) == (5, 1, 5, 0), n

    # NO_ADVERTISE goes to nobody, NO_EXPORT to internal peers only.
    want_ext = {"10.70.0.0/24", "10.71.0.0/24", "10.71.1.0/24"}
    want_int = want_ext | {"10.70.4.0/24", "10.71.4.0/24"}
    ext_sp.wait(lambda: set(ext_sp.routes["ipv4-unicast"]) == want_ext, 20,
                f"the external speaker holds {sorted(want_ext)}")
    int_sp.wait(lambda: set(int_sp.routes["ipv4-unicast"]) == want_int, 20,
                f"the internal speaker holds {sorted(want_int)}")
    assert fams("ext")["advertised"] == len(want_ext)
