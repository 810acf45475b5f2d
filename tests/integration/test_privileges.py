"""Least privilege (docs/security.md, [router] user).

- `user = "petrel"`: Petrel, started as root, becomes the `petrel` user
  once its ports are bound: every thread's uid is that user's, the main
  thread keeps only CAP_NET_ADMIN and CAP_NET_BIND_SERVICE (effective,
  permitted and bounding sets), none ambient, no_new_privs set, and no
  thread holds any other capability. It still accepts BIRD's connection
  on port 179 and installs BIRD's routes in the kernel, and a reload
  (which reads the file again as that user) works.
- Unset, `petrel run` started as root with every capability refuses to
  start and says what to set.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess

import pytest

import lab as L
from conftest import require
from test_kernel import KernelPetrel, routes

USER = "petrel"
KEPT = (1 << 10) | (1 << 12)   # CAP_NET_BIND_SERVICE, CAP_NET_ADMIN


def ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                       check=True, timeout=30)
        return pwd.getpwnam(USER)


def status(path: str) -> dict[str, str]:
    with open(path) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def test_drops_to_its_user_keeping_two_capabilities(lab):
    require("bird")
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    user = ensure_user()
    me, bn = lab.node("petrel"), lab.node("bird")
    announce = L.sample_prefixes(bn.index)
    bird = L.Bird(bn, L.Session(65002, 65001, me.v4, bn.v4, announce=announce)).start()   # BIRD dials
    petrel = KernelPetrel(me, [L.PetrelPeer("bird", bn.v4, 65002, me.v4, passive=True)], 65001,
                          router_toml=f'user = "{USER}"')
    # The lab's folder is root's; the dropped process reads its file again on reload.
    os.chmod(me.path(""), 0o755)
    os.chmod(os.path.dirname(me.path("").rstrip("/")), 0o755)
    petrel.start()
    os.chmod(petrel.conf, 0o644)
    petrel.wait_events("privileges-dropped")
    bird.wait_established(30)
    L.wait_until(lambda: set(routes(me)) | set(routes(me, v6=True)) == set(announce), 20,
                 "BIRD's routes in the kernel, installed by the dropped process")

    pid = petrel.proc.pid
    main = status(f"/proc/{pid}/status")
    assert main["Name"] == "petrel", main["Name"]
    assert main["Uid"].split() == [str(user.pw_uid)] * 4, main["Uid"]
    assert main["Gid"].split() == [str(user.pw_gid)] * 4, main["Gid"]
    for key in ("CapEff", "CapPrm", "CapBnd"):
        assert int(main[key], 16) == KEPT, (key, main[key])
    assert int(main["CapAmb"], 16) == 0 and int(main["CapInh"], 16) == 0, main
    assert main["NoNewPrivs"] == "1", main["NoNewPrivs"]
    tasks = os.listdir(f"/proc/{pid}/task")
    assert len(tasks) > 2, tasks   # workers, the kernel syncer, HTTP
    for t in tasks:
        st = status(f"/proc/{pid}/task/{t}/status")
        assert st["Uid"].split() == [str(user.pw_uid)] * 4, (t, st["Name"], st["Uid"])
        for key in ("CapEff", "CapPrm", "CapAmb"):
            assert int(st[key], 16) & ~KEPT == 0, (t, st["Name"], key, st[key])

    # A reload, read as that user, still works (a peer's policy changes).
    before = len(petrel.events("reloaded"))
    petrel.proc.send_signal(signal.SIGHUP)
    L.wait_until(lambda: len(petrel.events("reloaded")) > before, 10, "reloaded as the petrel user")
    assert bird.state().established


def test_refuses_root_with_every_capability(lab):
    if not os.path.exists(L.petrel_binary()):
        pytest.skip(f"petrel binary not found at {L.petrel_binary()} (build it, or set PETREL)")
    if os.geteuid() != 0:
        pytest.skip("needs root")
    me = lab.node("petrel")
    conf = me.path("root.toml")
    with open(conf, "w") as f:
        f.write(f'[router]\nasn = 65001\nrouter_id = "{me.v4}"\nlisten = []\n[http]\nlisten = ""\n'
                f'[control]\nsocket = ""\n')
    r = me.run([L.petrel_binary(), "run", "-c", conf], check=False, timeout=20)
    assert r.returncode == 1, r
    out = r.stdout + r.stderr
    assert "refused-root" in out and 'user = "petrel"' in out, out
