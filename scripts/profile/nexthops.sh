#!/usr/bin/env bash
# Next hops that change under a full table (docs/performance.md, "Next-hop
# changes end to end"): two feeders of PREFIXES routes whose next hops
# Petrel resolves through static kernel routes; the IGP path changes, one
# next hop stops resolving and comes back; per event, the time until the
# kernel and the observer are settled, the netlink requests and UPDATEs it
# took (scripts/profile/nexthops.py says how each is measured).
#
# Knobs: PREFIXES (1000000), RUNS (3), OBJECTS (1: kernel.nexthop_objects;
# 0: routes carry their gateways), TIMEOUT (600), OUT
# (out/nexthops-DATE), BUILD (build-profile). Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

PREFIXES=${PREFIXES:-1000000}
RUNS=${RUNS:-3}
OBJECTS=${OBJECTS:-1}
OUT=${OUT:-$ROOT/out/nexthops-$(date -u +%Y%m%dT%H%M%SZ)}

source scripts/profile/common.sh
profile_build
machine_line "nexthops: $PREFIXES prefixes, objects $OBJECTS, $RUNS runs"
PETREL=$(realpath "$BUILD/daemon/petrel") LOAD=$(realpath "$BUILD/tools/bench/petrel-load") \
  PREFIXES=$PREFIXES RUNS=$RUNS OBJECTS=$OBJECTS OUT=$OUT \
  /usr/bin/python3 scripts/profile/nexthops.py | tee "$OUT/nexthops.txt"
