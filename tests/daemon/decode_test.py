#!/usr/bin/env python3
"""Tests of `petrel decode` (docs/decode.md) as users call it.

usage: decode_test.py PETREL SAMPLE_HEX
Builds its own messages byte by byte, so each expectation comes from the
RFCs, not from the decoder's output. Exits 1 on the first failed check.
"""
import json
import subprocess
import sys

PETREL, SAMPLE = sys.argv[1], sys.argv[2]
MARKER = "ff" * 16
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def decode(*args, stdin=None):
    r = subprocess.run([PETREL, "decode", *args], input=stdin, capture_output=True, text=True, timeout=60)
    lines = [json.loads(l) for l in r.stdout.splitlines()]
    return r.returncode, lines


def msg(type_, body_hex, marker=True):
    n = 19 + len(body_hex) // 2
    return (MARKER if marker else "") + f"{n:04x}{type_:02x}" + body_hex


def attr(flags, type_, value_hex):
    return f"{flags:02x}{type_:02x}{len(value_hex) // 2:02x}" + value_hex


def update(withdrawn_hex, attrs_hex, nlri_hex):
    return msg(2, f"{len(withdrawn_hex) // 2:04x}" + withdrawn_hex + f"{len(attrs_hex) // 2:04x}" + attrs_hex + nlri_hex)


ORIGIN_IGP = attr(0x40, 1, "00")
AS_PATH = attr(0x40, 2, "0202" + "0000fde8" + "0000fde9")  # AS_SEQUENCE 65000 65001 (4-octet)
NEXT_HOP = attr(0x40, 3, "c6120001")  # 198.18.0.1
GOOD = update("", ORIGIN_IGP + AS_PATH + NEXT_HOP, "18c63301" + "10c0a8")  # 198.51.1.0/24, 192.168.0.0/16

# KEEPALIVE with and without the marker.
rc, out = decode(msg(4, ""), msg(4, "", marker=False))
check(rc == 0 and [o["type"] for o in out] == ["keepalive", "keepalive"], "keepalive with and without marker")

# A well-formed UPDATE: prefixes, next hop and attributes as sent.
rc, out = decode(GOOD)
check(rc == 0 and len(out) == 1, "good update decodes cleanly")
u = out[0]
check(u.get("announce", {}).get("ipv4-unicast", {}).get("prefixes") == ["198.51.1.0/24", "192.168.0.0/16"],
      f"announced prefixes: {u}")
check(u["announce"]["ipv4-unicast"].get("next_hop") == "198.18.0.1", "next hop")
check(u.get("attributes", {}).get("as_path") == [{"type": "AS_SEQUENCE", "asns": [65000, 65001]}], "as_path")

# A withdrawal, and the End-of-RIB marker (RFC 4724: an empty UPDATE).
rc, out = decode(update("18c63301", "", ""), update("", "", ""))
check(rc == 0 and out[0].get("withdraw") == {"ipv4-unicast": ["198.51.1.0/24"]}, f"withdraw: {out}")
check(out[1].get("end_of_rib") == "ipv4-unicast", f"end of rib: {out[1]}")

# ADD-PATH: the same bytes mean path id + prefix only with --add-path.
rc, out = decode("--add-path", "ipv4-unicast", update("", ORIGIN_IGP + AS_PATH + NEXT_HOP, "00000007" + "18c63301"))
check(rc == 0 and out[0]["announce"]["ipv4-unicast"]["prefixes"] == [{"prefix": "198.51.1.0/24", "path_id": 7}],
      f"add-path: {out}")

# RFC 7606 section 7.1: ORIGIN of the wrong length is treat-as-withdraw, and
# the announced prefix is reported withdrawn; exit status 1.
bad_origin = update("", attr(0x40, 1, "0000") + AS_PATH + NEXT_HOP, "18c63301")
rc, out = decode(bad_origin)
check(rc == 1 and out[0].get("rfc7606", {}).get("action") == "treat-as-withdraw", f"bad origin: {out}")
check(out[0].get("withdraw") == {"ipv4-unicast": ["198.51.1.0/24"]} and "announce" not in out[0],
      "treat-as-withdraw lists the prefix as withdrawn")

# RFC 7606 section 5.3: a bad prefix in MP_REACH_NLRI (IPv6, /129) is
# afi-safi-disable; Petrel resets the session, so the UPDATE's IPv4 prefix
# is listed as withdrawn, never announced.
mp_bad = attr(0x80, 14, "00020110" + "20010db8000000000000000000000001" + "00" + "8120010db8")
rc, out = decode(update("", ORIGIN_IGP + AS_PATH + NEXT_HOP + mp_bad, "18c63301"))
check(rc == 1 and out[0].get("rfc7606", {}).get("action") == "afi-safi-disable", f"afi-safi-disable: {out}")
check(out[0].get("withdraw") == {"ipv4-unicast": ["198.51.1.0/24"]} and "announce" not in out[0],
      f"afi-safi-disable lists the other family's prefix as withdrawn: {out}")

# RFC 4271 section 6.1: a bad length is a Message Header Error with the
# length as data, and decoding goes on with the next message.
rc, out = decode(MARKER + "001104", msg(4, ""))
check(rc == 1 and len(out) == 2, "bad header then keepalive: two lines, exit 1")
n = out[0].get("error", {}).get("notification", {})
check((n.get("code"), n.get("subcode"), n.get("data")) == (1, 2, "0011"), f"bad length notification: {out[0]}")
check(out[1]["type"] == "keepalive", "decoding goes on after an error")

# NOTIFICATION with an RFC 9003 shutdown communication.
text = "maintenance".encode().hex()
rc, out = decode(msg(3, "0602" + f"{len(text) // 2:02x}" + text))
check(rc == 0 and out[0].get("shutdown_communication") == "maintenance", f"shutdown text: {out}")

# Not hex: an error line, never a crash.
rc, out = decode("zz")
check(rc == 1 and out[0]["type"] is None, "not hex")

# A usage error exits 2.
r = subprocess.run([PETREL, "decode", "--add-path", "ipv9-unicast"], capture_output=True, timeout=30)
check(r.returncode == 2, "bad --add-path is a usage error")

# The sample file: one JSON line per message, all clean.
with open(SAMPLE) as f:
    wanted = sum(1 for l in f if l.strip() and not l.startswith("#"))
with open(SAMPLE) as f:
    rc, out = decode(stdin=f.read())
check(rc == 0 and len(out) == wanted, f"sample file: rc={rc}, {len(out)} lines for {wanted} messages")

print(f"petrel decode: {len(failures)} failed checks")
sys.exit(1 if failures else 0)
