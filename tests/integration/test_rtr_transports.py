"""RTR over TLS (RFC 6810 section 7, RFC 8210 section 9) against a real
cache (StayRTR's -tls.bind).

The test makes a throwaway CA and a server certificate for the cache
(SubjectAltNames IP 127.0.0.1 and DNS rtr.test) with `openssl` in the
namespace's folder, and a second CA that signed nothing. StayRTR serves a
JSON file of VRPs and ASPAs over TLS only, on loopback inside Petrel's
namespace.

  - With the right CA, Petrel gets the VRPs and the ASPAs (RTR version 2)
    over TLS, checking the certificate against the address (no
    tls_server_name) or against a configured name (then sent as SNI).
  - With the other CA, or a name the certificate does not carry, the
    handshake is refused: no data, the cache failed, and the reason in
    the log (rpki-cache-failed) and in /api/rpki (caches[].last_error).

SSH is not supported (docs/rpki.md, "Cache transports").

SKIPs while stayrtr, openssl or the petrel binary is missing.
"""
from __future__ import annotations

import shutil

import pytest

import lab as L
import test_rpki as R
from test_rtr_v2 import Cache, write_cache

PETREL_ASN = 65001
HTTP_PORT = R.HTTP_PORT
TLS_PORT = 18297

VRPS = [("192.0.2.0/24", 24, 64500), ("2001:db8::/32", 48, 64501)]
ASPAS = {64500: [64502, 64501], 64510: [0], 64520: [64521]}


_needs = R._needs  # the same skips: the petrel binary and stayrtr


@pytest.fixture(autouse=True)
def _needs_openssl():
    if shutil.which("openssl") is None:
        pytest.skip("openssl not found (apt-get install openssl)")


def make_pki(node: L.Node) -> dict[str, str]:
    """A CA, a certificate for the cache signed by it, and another CA; their paths."""
    p = {k: node.path(f"tls-{k}") for k in ("ca.pem", "ca.key", "other-ca.pem", "other-ca.key", "server.pem",
                                            "server.key", "server.csr", "ext.cnf")}
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "other-ca"):
        L.run(["openssl", "req", "-x509", *ec, "-keyout", p[f"{ca}.key"], "-out", p[f"{ca}.pem"], "-days", "2",
               "-subj", f"/CN=Petrel test {ca}"])
    L.run(["openssl", "req", *ec, "-keyout", p["server.key"], "-out", p["server.csr"], "-subj", "/CN=rtr.test"])
    with open(p["ext.cnf"], "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:rtr.test\n")
    L.run(["openssl", "x509", "-req", "-in", p["server.csr"], "-CA", p["ca.pem"], "-CAkey", p["ca.key"],
           "-CAcreateserial", "-out", p["server.pem"], "-days", "2", "-extfile", p["ext.cnf"]])
    return p


class TlsCache(Cache):
    """StayRTR serving `path` over TLS only (no plain TCP listener)."""

    def __init__(self, node: L.Node, port: int, path: str, cert: str, key: str):
        super().__init__(node, port, path)
        self.cert, self.key = cert, key

    def listen(self) -> list[str]:
        return ["-bind", "", "-tls.bind", f"127.0.0.1:{self.port}", "-tls.cert", self.cert, "-tls.key", self.key]


class TlsPetrel(L.Petrel):
    """Petrel with one [[rpki.cache]] over TLS."""

    def __init__(self, *a, ca_file: str, server_name: str | None = None, **kw):
        super().__init__(*a, **kw)
        self.ca_file, self.server_name = ca_file, server_name

    def config(self) -> str:
        lines = [super().config(), "[rpki]", "[[rpki.cache]]", 'address = "127.0.0.1"', f"port = {TLS_PORT}",
                 'transport = "tls"', f'tls_ca_file = "{self.ca_file}"']
        if self.server_name:
            lines.append(f'tls_server_name = "{self.server_name}"')
        return "\n".join(lines) + "\n"


def start(lab, **kw) -> tuple[TlsCache, TlsPetrel]:
    me = lab.node("petrel")
    pki = make_pki(me)
    path = me.path("cache.json")
    write_cache(path, VRPS, ASPAS)
    cache = TlsCache(me, TLS_PORT, path, pki["server.pem"], pki["server.key"]).start()
    kw["ca_file"] = pki[kw.get("ca_file", "ca.pem")]
    petrel = TlsPetrel(me, [], PETREL_ASN, http_port=HTTP_PORT, **kw)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        cache.stop()
        pytest.skip(str(e))
    return cache, petrel


@pytest.mark.parametrize("server_name", [None, "rtr.test"])
def test_tls_brings_the_vrps_and_aspas(lab, server_name):
    cache, petrel = start(lab, server_name=server_name)
    L.wait_until(lambda: R.vrp_count(petrel) == 2 and R.rpki(petrel).get("aspas") == 3, 20,
                 "two VRPs and three ASPAs over TLS")
    c = R.cache_of(petrel, TLS_PORT)
    assert c["transport"] == "tls" and c["state"] == "in-sync" and c["version"] == 2, c
    assert c["failures"] == 0 and c["last_error"] is None, c
    petrel.wait_events("rpki-connected", transport="tls")
    assert not petrel.events("rpki-diagnostic"), petrel.events("rpki-diagnostic")
    cache.stop()
    assert petrel.alive()


@pytest.mark.parametrize("ca_file,server_name,why", [
    ("other-ca.pem", None, "the cache's certificate was refused: unable to get local issuer certificate"),
    ("ca.pem", "other.test", "the cache's certificate was refused: hostname mismatch"),
])
def test_tls_refuses_a_certificate_it_cannot_trust(lab, ca_file, server_name, why):
    cache, petrel = start(lab, ca_file=ca_file, server_name=server_name)
    c = L.wait_until(lambda: (lambda c: c if c.get("failures", 0) >= 1 else None)(R.cache_of(petrel, TLS_PORT)), 20,
                     "the TLS handshake refused")
    assert c["last_error"] == f"TLS handshake failed: {why}", c
    assert c["transport"] == "tls" and c["state"] in ("down", "connecting"), c
    ev = petrel.wait_events("rpki-cache-failed")
    assert why in ev[0]["msg"], ev
    assert R.vrp_count(petrel) == 0 and R.rpki(petrel)["aspas"] == 0
    cache.stop()
    assert petrel.alive()
