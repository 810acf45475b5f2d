#!/usr/bin/env bash
# The README's demo: on a fresh Debian 12 machine, as root (or with sudo),
# installs the dependencies, builds Petrel, and brings up a small lab: two
# network namespaces joined by a veth pair, BIRD 2 in one announcing sample
# IPv4 and IPv6 routes, Petrel in the other peering with it. It shows the
# session come up and the routes arrive (Petrel's log and its HTTP API),
# then stops Petrel (which sends BIRD a Cease with its shutdown message) and
# removes everything it made. Finally it decodes a few real BGP messages
# with `petrel decode`, the codec's showcase.
#
#   sudo scripts/demo.sh [SECONDS]   how long to keep the lab up (default 10)
#   BUILD_DIR                        build directory (default build-demo)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-demo}
SECONDS_UP=${1:-10}

if [[ $(id -u) -ne 0 ]]; then
  echo "demo: needs root (it installs packages and creates network namespaces); try: sudo $0" >&2
  exit 1
fi

scripts/install-deps.sh
if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  meson setup "$BUILD_DIR" --buildtype=release -Dtests=false >/dev/null
fi
meson compile -C "$BUILD_DIR" petrel >/dev/null
petrel=$PWD/$BUILD_DIR/daemon/petrel
[[ -x $petrel ]] || { echo "demo: $petrel was not built" >&2; exit 1; }

echo "== the lab: Petrel and BIRD 2 in network namespaces"
PETREL=$petrel scripts/lab/demo.sh "$SECONDS_UP"

echo
echo "== petrel decode: the first messages of tests/data/sample-messages.hex"
head -n 6 tests/data/sample-messages.hex | "$petrel" decode
