#!/usr/bin/env bash
# Petrel killed with SIGKILL and started again with a full table in its
# kernel (docs/performance.md, "Restart with a full table in the
# kernel"): BIRD 2 as the graceful restart helper announces PREFIXES
# routes, CHANGED of them change while Petrel is away; per run, routes
# missing from the kernel at any moment, the time from start to a
# reconciled kernel and the route requests written, then medians
# (scripts/profile/restart.py says how each is measured).
#
# Knobs: PREFIXES (1000000), CHANGED (1000), RUNS (3), TIMEOUT (600), OUT
# (out/restart-DATE), BUILD (build-rel: a release build; only
# daemon/petrel is built). Needs root and bird2.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

PREFIXES=${PREFIXES:-1000000}
CHANGED=${CHANGED:-1000}
RUNS=${RUNS:-3}
OUT=${OUT:-$ROOT/out/restart-$(date -u +%Y%m%dT%H%M%SZ)}
BUILD=${BUILD:-build-rel}

source scripts/profile/common.sh
if [[ ! -f $BUILD/build.ninja ]]; then
  CC=gcc CXX=g++ meson setup "$BUILD" --buildtype=release -Db_ndebug=true >/dev/null
fi
meson compile -C "$BUILD" daemon/petrel >/dev/null
machine_line "restart: $PREFIXES prefixes, $CHANGED changed, $RUNS runs"
PETREL=$(realpath "$BUILD/daemon/petrel") PREFIXES=$PREFIXES CHANGED=$CHANGED RUNS=$RUNS OUT=$OUT \
  /usr/bin/python3 scripts/profile/restart.py | tee "$OUT/restart.txt"
