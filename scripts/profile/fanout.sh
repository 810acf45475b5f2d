#!/usr/bin/env bash
# Many members of a route server, through Petrel, BIRD 2 (`rs client`),
# OpenBGPD (`transparent-as yes`) and, when asked, FRR bgpd
# (`route-server-client`), one after the other in the same run
# (docs/fulltable-lab.md, "Many members"; docs/performance.md):
# petrel-fanout plays MEMBERS members, each announcing its slice of a
# PREFIXES-prefix /24 table and taking every other member's. Prints one
# JSON line per daemon, then a table: sessions Established, connect waits,
# cold start, a flap storm's withdrawals and return (p50 / worst), the
# daemon's settled and peak resident memory and CPU seconds. Petrel's own
# account at the end (/api/status with jemalloc's figures, /metrics with
# the table's parts) goes to OUT/petrel-status.txt and petrel-metrics.txt.
#
# Knobs: MEMBERS (200), PREFIXES (100000), SPREAD (connect spread, 4 s),
# FLAPPERS (MEMBERS / 14), SETTLE (2), TIMEOUT (600), PETREL_RS (0; 1 adds
# `route_server_client = true` to Petrel's peers), DAEMONS (default
# "petrel bird openbgpd"; "frr" may be added), OUT, BUILD (build-profile).
# Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."

MEMBERS=${MEMBERS:-200}
PREFIXES=${PREFIXES:-100000}
SPREAD=${SPREAD:-4}
OUT=${OUT:-$PWD/out/fanout-$(date -u +%Y%m%dT%H%M%SZ)}
DAEMONS=${DAEMONS:-petrel bird openbgpd}

source scripts/profile/common.sh
profile_build
meson compile -C "$BUILD" tools/bench/petrel-fanout >/dev/null
machine_line "fanout: $MEMBERS members, $PREFIXES prefixes, spread $SPREAD s, route_server_client ${PETREL_RS:-0}"
# shellcheck disable=SC2086
PETREL=$BUILD/daemon/petrel FANOUT=$BUILD/tools/bench/petrel-fanout MEMBERS=$MEMBERS PREFIXES=$PREFIXES \
  SPREAD=$SPREAD OUT=$OUT python3 scripts/profile/fanout.py compare $DAEMONS | tee "$OUT/fanout.txt"
