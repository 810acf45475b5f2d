"""RTR over TLS and SSH (RFC 6810 section 7, RFC 8210 section 9) against
a real cache (StayRTR's -tls.bind and -ssh.bind).

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

For SSH the test makes a host key for the cache and a key for Petrel
with `ssh-keygen`, pins the host key in a known_hosts file, and runs
StayRTR with SSH only, taking Petrel's key (its authorized keys file) or a
password:

  - with the pinned host key and the right key or password, the VRPs and
    ASPAs come over the "rpki-rtr" subsystem;
  - another host key pinned, a wrong password or a key the cache does not
    know is refused, with the reason in /api/rpki and the log.

SKIPs while stayrtr, openssl, ssh-keygen or the petrel binary is missing.
"""
from __future__ import annotations

import shutil

import pytest

import lab as L
import test_rpki as R
from test_reload_sections import reload
from test_rtr_v2 import Cache, write_cache

PETREL_ASN = 65001
HTTP_PORT = R.HTTP_PORT
TLS_PORT = 18297

VRPS = [("192.0.2.0/24", 24, 64500), ("2001:db8::/32", 48, 64501)]
ASPAS = {64500: [64502, 64501], 64510: [0], 64520: [64521]}


_needs = R._needs  # the same skips: the petrel binary and stayrtr


@pytest.fixture(autouse=True)
def _needs_tools():
    for tool, package in (("openssl", "openssl"), ("ssh-keygen", "openssh-client")):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found (apt-get install {package})")


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


class SshCache(Cache):
    """StayRTR serving `path` over SSH only, to user "rpki" with the keys
    of `authorized` or with `password`."""

    def __init__(self, node: L.Node, port: int, path: str, host_key: str, authorized: str | None = None,
                 password: str | None = None):
        super().__init__(node, port, path)
        self.host_key, self.authorized, self.password = host_key, authorized, password

    def listen(self) -> list[str]:
        auth = (["-ssh.method.key", "-ssh.auth.key.file", self.authorized] if self.authorized else
                ["-ssh.method.password", "-ssh.auth.password", self.password])
        return ["-bind", "", "-ssh.bind", f"127.0.0.1:{self.port}", "-ssh.key", self.host_key,
                "-ssh.auth.user", "rpki", *auth]


class CachePetrel(L.Petrel):
    """Petrel with one [[rpki.cache]] on 127.0.0.1 whose other keys are `keys`."""

    def __init__(self, *a, keys: dict[str, object], **kw):
        super().__init__(*a, **kw)
        self.keys = keys

    def config(self) -> str:
        lines = [super().config(), "[rpki]", "[[rpki.cache]]", 'address = "127.0.0.1"']
        lines += [f"{k} = {v}" if isinstance(v, int) else f'{k} = "{v}"' for k, v in self.keys.items() if v]
        return "\n".join(lines) + "\n"


def cache_file(node: L.Node) -> str:
    path = node.path("cache.json")
    write_cache(path, VRPS, ASPAS)
    return path


def start_petrel(node: L.Node, cache: Cache, keys: dict[str, object]) -> CachePetrel:
    petrel = CachePetrel(node, [], PETREL_ASN, http_port=HTTP_PORT, keys=keys)
    try:
        petrel.start()
    except L.PetrelNotReady as e:
        cache.stop()
        pytest.skip(str(e))
    return petrel


def start(lab, ca_file: str = "ca.pem", server_name: str | None = None) -> tuple[TlsCache, CachePetrel]:
    me = lab.node("petrel")
    pki = make_pki(me)
    cache = TlsCache(me, TLS_PORT, cache_file(me), pki["server.pem"], pki["server.key"]).start()
    return cache, start_petrel(me, cache, {"port": TLS_PORT, "transport": "tls", "tls_ca_file": pki[ca_file],
                                           "tls_server_name": server_name})


def in_sync_with_the_data(petrel: L.Petrel, port: int, transport: str) -> None:
    """The cache's VRPs and ASPAs in force, over `transport`, without a failure."""
    L.wait_until(lambda: R.vrp_count(petrel) == 2 and R.rpki(petrel).get("aspas") == 3, 20,
                 f"two VRPs and three ASPAs over {transport}")
    c = R.cache_of(petrel, port)
    assert c["transport"] == transport and c["state"] == "in-sync" and c["version"] == 2, c
    assert c["failures"] == 0 and c["last_error"] is None, c
    petrel.wait_events("rpki-connected", transport=transport)
    assert not petrel.events("rpki-diagnostic"), petrel.events("rpki-diagnostic")


def refused(petrel: L.Petrel, port: int, transport: str, why: str) -> None:
    """The cache failed with `why`, shown in /api/rpki and the log; no data."""
    c = L.wait_until(lambda: (lambda c: c if c.get("failures", 0) >= 1 else None)(R.cache_of(petrel, port)), 20,
                     f"the {transport} cache refused")
    assert c["last_error"] == why, c
    assert c["transport"] == transport and c["state"] in ("down", "connecting"), c
    ev = petrel.wait_events("rpki-cache-failed")
    assert why in ev[0]["msg"], ev
    page = R.http_text(petrel.node, "/")
    assert f"over {transport}" in page and "failed: " in page, page
    assert R.vrp_count(petrel) == 0 and R.rpki(petrel)["aspas"] == 0


@pytest.mark.parametrize("server_name", [None, "rtr.test"])
def test_tls_brings_the_vrps_and_aspas(lab, server_name):
    cache, petrel = start(lab, server_name=server_name)
    in_sync_with_the_data(petrel, TLS_PORT, "tls")
    cache.stop()
    assert petrel.alive()


@pytest.mark.parametrize("ca_file,server_name,why", [
    ("other-ca.pem", None, "the cache's certificate was refused: unable to get local issuer certificate"),
    ("ca.pem", "other.test", "the cache's certificate was refused: hostname mismatch"),
])
def test_tls_refuses_a_certificate_it_cannot_trust(lab, ca_file, server_name, why):
    cache, petrel = start(lab, ca_file=ca_file, server_name=server_name)
    refused(petrel, TLS_PORT, "tls", f"TLS handshake failed: {why}")
    cache.stop()
    assert petrel.alive()


def test_tls_ca_file_fixed_by_a_reload(lab):
    """A reload that names the right CA file makes another cache of it
    (every key but the preference tells a cache): dialled anew, it brings
    the data, and the old failure is gone from the API."""
    cache, petrel = start(lab, ca_file="other-ca.pem")
    L.wait_until(lambda: R.cache_of(petrel, TLS_PORT).get("failures", 0) >= 1, 20, "the wrong CA refused")
    petrel.keys["tls_ca_file"] = petrel.node.path("tls-ca.pem")
    reload(petrel)
    in_sync_with_the_data(petrel, TLS_PORT, "tls")
    petrel.wait_events("rpki-cache-removed")
    cache.stop()
    assert petrel.alive()


# ---- SSH

SSH_PORT = 18298
PASSWORD = "rtr-secret"


def ssh_keys(node: L.Node) -> dict[str, str]:
    """A host key for the cache, a key for Petrel and one the cache does
    not know, the cache's authorized keys (Petrel's), known_hosts files
    pinning the cache's host key or another, a password file."""
    p = {k: node.path(f"ssh-{k}") for k in ("host", "other-host", "client", "stranger", "authorized", "known",
                                            "known-other", "password")}
    for k in ("host", "other-host", "client", "stranger"):
        L.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", k, "-f", p[k]])
    with open(p["client"] + ".pub") as f, open(p["authorized"], "w") as out:
        out.write(f.read())
    for known, host in (("known", "host"), ("known-other", "other-host")):
        with open(p[host] + ".pub") as f, open(p[known], "w") as out:
            out.write(f"[127.0.0.1]:{SSH_PORT} {' '.join(f.read().split()[:2])}\n")
    with open(p["password"], "w") as f:
        f.write(PASSWORD + "\n")
    return p


def start_ssh(lab, password: str | None = None, known: str = "known", key: str | None = "client",
              password_file: bool = False) -> tuple[SshCache, CachePetrel, dict[str, str]]:
    me = lab.node("petrel")
    k = ssh_keys(me)
    cache = SshCache(me, SSH_PORT, cache_file(me), k["host"], authorized=None if password else k["authorized"],
                     password=password).start()
    petrel = start_petrel(me, cache, {"port": SSH_PORT, "transport": "ssh", "ssh_user": "rpki",
                                      "ssh_known_hosts": k[known], "ssh_key_file": k[key] if key else None,
                                      "ssh_password_file": k["password"] if password_file else None})
    return cache, petrel, k


@pytest.mark.parametrize("auth", ["key", "password"])
def test_ssh_brings_the_vrps_and_aspas(lab, auth):
    if auth == "key":
        cache, petrel, _ = start_ssh(lab)
    else:
        cache, petrel, _ = start_ssh(lab, password=PASSWORD, key=None, password_file=True)
    in_sync_with_the_data(petrel, SSH_PORT, "ssh")
    cache.stop()
    assert petrel.alive()


def test_ssh_refuses_a_host_key_not_pinned(lab):
    cache, petrel, k = start_ssh(lab, known="known-other")
    refused(petrel, SSH_PORT, "ssh",
            f"SSH handshake failed: the cache's host key is not the one {k['known-other']} holds for it")
    cache.stop()
    assert petrel.alive()


def test_ssh_login_refused(lab):
    cache, petrel, k = start_ssh(lab, key="stranger")
    refused(petrel, SSH_PORT, "ssh", f"SSH login failed: the cache refused user rpki with the key of {k['stranger']}")
    cache.stop()
    assert petrel.alive()


def test_ssh_wrong_password_refused(lab):
    cache, petrel, _ = start_ssh(lab, password="another-secret", key=None, password_file=True)
    refused(petrel, SSH_PORT, "ssh", "SSH login failed: the cache refused user rpki with the password")
    cache.stop()
    assert petrel.alive()


def test_ssh_known_hosts_fixed_by_a_reload(lab):
    """A refused host key, then a reload that pins the right one: the new
    cache logs in and brings the data. (StayRTR serves its SSH connections
    one at a time: a refused connection Petrel left open would hold the
    next login back.)"""
    cache, petrel, k = start_ssh(lab, known="known-other")
    L.wait_until(lambda: R.cache_of(petrel, SSH_PORT).get("failures", 0) >= 2, 20, "the host key refused twice")
    petrel.keys["ssh_known_hosts"] = k["known"]
    reload(petrel)
    in_sync_with_the_data(petrel, SSH_PORT, "ssh")
    cache.stop()
    assert petrel.alive()
