#!/usr/bin/env bash
# Builds Petrel's Debian package from this checkout and installs it
# (docs/operations.md, "The Debian package"); CI's package step. As root,
# on a machine where installing a package is fine (CI's, or a VM).
#
#   1. dpkg-buildpackage -us -uc -b -Jauto in a copy of the tracked files
#      (PETREL_MESON_ARGS, e.g. -Dwerror=true, goes to meson setup);
#   2. lintian: no error;
#   3. apt-get install of the .deb: the petrel user and group exist, the
#      files are where they belong, the unit is installed but not enabled,
#      `petrel check` takes the shipped configuration, systemd-analyze
#      verify takes the unit, the man pages open;
#   4. petrel run as the unit runs it (user petrel, CAP_NET_ADMIN and
#      CAP_NET_BIND_SERVICE ambient, no_new_privs) inside a network
#      namespace of its own with only loopback (the shipped configuration's
#      peers are documentation addresses: nothing leaves): it comes up,
#      /proc shows only those capabilities, SIGINT stops it;
#   5. apt-get remove: no petrel process left, the binary gone.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
[[ $(id -u) -eq 0 ]] || { echo "check-package.sh: needs root (it installs the package)"; exit 77; }
for t in dpkg-buildpackage lintian dh; do
  command -v "$t" >/dev/null || { echo "check-package.sh: $t missing (scripts/install-deps.sh)"; exit 1; }
done

WORK=$(mktemp -d)
NS=petrel-pkg-$$
cleanup() {
  ip netns pids "$NS" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== build"
mkdir -p "$WORK/src"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$WORK/src"
(cd "$WORK/src" && dpkg-buildpackage -us -uc -b -Jauto >"$WORK/build.log" 2>&1) || { tail -40 "$WORK/build.log"; exit 1; }
deb=$(ls "$WORK"/petrel_*.deb)
echo "built $(basename "$deb") ($(grep -m1 -o 'C++ compiler for the host machine: [^(]*([^ ]* [^ ]*' "$WORK/build.log" || echo "compiler not found in the log");" \
  "werror $(sed -n '/User defined options/,/^$/s/^ *werror *: *//p' "$WORK/build.log" | head -n1))"

echo "== lintian"
lintian --fail-on error "$deb"

echo "== install"
apt-get install -y -qq "$deb" >/dev/null
getent passwd petrel >/dev/null
getent group petrel >/dev/null
for f in /usr/bin/petrel /etc/petrel/petrel.toml /lib/systemd/system/petrel.service \
         /usr/share/man/man8/petrel.8.gz /usr/share/man/man5/petrel.toml.5.gz; do
  [[ -e $f ]] || { echo "missing: $f"; exit 1; }
done
[[ ! -e /etc/systemd/system/multi-user.target.wants/petrel.service ]] || { echo "the unit is enabled"; exit 1; }
petrel check -c /etc/petrel/petrel.toml
systemd-analyze verify /lib/systemd/system/petrel.service
man -w petrel >/dev/null && man -w petrel.toml >/dev/null

echo "== run as the unit does"
ip netns add "$NS"
ip -n "$NS" link set lo up
ip netns exec "$NS" setpriv --reuid=petrel --regid=petrel --init-groups \
  --inh-caps=+net_admin,+net_bind_service --ambient-caps=+net_admin,+net_bind_service --no-new-privs \
  /usr/bin/petrel run -c /etc/petrel/petrel.toml >"$WORK/run.log" 2>&1 &
pid=$!
up=0
for _ in $(seq 1 50); do   # at most 5 s
  if grep -q ' info started ' "$WORK/run.log" 2>/dev/null; then up=1; break; fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[[ $up -eq 1 ]] || { echo "petrel did not start:"; cat "$WORK/run.log"; exit 1; }
status=/proc/$pid/status
uid=$(id -u petrel)
grep -q "^Uid:[[:space:]]*$uid[[:space:]]*$uid[[:space:]]*$uid[[:space:]]*$uid$" "$status"
caps=$(awk '/^CapEff:/ {print $2}' "$status")
[[ $((16#$caps)) -eq $(((1 << 10) | (1 << 12))) ]] || { echo "effective capabilities $caps"; exit 1; }
grep -q "^NoNewPrivs:[[:space:]]*1$" "$status"
kill -INT "$pid"
wait "$pid" || { echo "petrel exited $?"; cat "$WORK/run.log"; exit 1; }

echo "== remove"
apt-get remove -y -qq petrel >/dev/null
[[ ! -e /usr/bin/petrel ]] || { echo "/usr/bin/petrel left behind"; exit 1; }
if pgrep -x petrel >/dev/null; then echo "a petrel process is left"; exit 1; fi
echo "package: ok"
