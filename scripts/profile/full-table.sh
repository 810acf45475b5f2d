#!/usr/bin/env bash
# Profiles Petrel on full tables (docs/performance.md, "Full tables end to
# end"). Builds a profiling build (release, line tables, frame pointers),
# runs Petrel in a network namespace joined by veth to a second one that
# holds petrel-load (PEERS neighbours each writing a synthetic full table,
# and an observer that takes everything Petrel passes on), samples Petrel
# with `perf record -g`, and writes into OUT:
#   result.json      times (session up, last UPDATE written, Petrel's table
#                    complete, observer complete, kernel complete), the
#                    daemon's CPU seconds, resident and jemalloc memory after
#                    the load and again HOLD_SECS later
#   self.txt         flat profile by self time
#   inclusive.txt    flat profile by inclusive time (children)
#   flame.svg        a flame graph, if flamegraph.pl or inferno is at hand
#   *.log            the daemon's and petrel-load's logs
#
# Knobs: PEERS (1), PREFIXES (1000000), KERNEL (0; 1: Petrel installs into
# its namespace's main table and the kernel's time is measured too),
# SCALE_DOWN (1: divides PREFIXES, for a quick try), HOLD_SECS (30), FREQ
# (perf's sampling frequency, 999), OUT (out/profile-DATE), BUILD
# (build-profile). Needs root (namespaces, perf).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

PEERS=${PEERS:-1}
PREFIXES=${PREFIXES:-1000000}
SCALE_DOWN=${SCALE_DOWN:-1}
KERNEL=${KERNEL:-0}
HOLD_SECS=${HOLD_SECS:-30}
FREQ=${FREQ:-999}
OUT=${OUT:-$ROOT/out/profile-$(date -u +%Y%m%dT%H%M%SZ)}
PREFIXES=$((PREFIXES / SCALE_DOWN))

source scripts/profile/common.sh
profile_build
machine_line "full-table: $PEERS peer(s), $PREFIXES prefixes, kernel $KERNEL"
PERF_FREQ=$FREQ fulltable run petrel >"$OUT/result.json"
cat "$OUT/result.json"

# Flat profiles: self time, then inclusive time.
perf report -i "$OUT/perf.data" --no-children --sort symbol --stdio -g none --percent-limit 0.5 2>/dev/null \
  | grep -v '^$' >"$OUT/self.txt" || true
perf report -i "$OUT/perf.data" --children --sort symbol --stdio --percent-limit 2 -g none 2>/dev/null \
  | grep -v '^$' >"$OUT/inclusive.txt" || true
if command -v inferno-collapse-perf >/dev/null && command -v inferno-flamegraph >/dev/null; then
  perf script -i "$OUT/perf.data" 2>/dev/null | inferno-collapse-perf | inferno-flamegraph >"$OUT/flame.svg" || true
elif command -v stackcollapse-perf.pl >/dev/null && command -v flamegraph.pl >/dev/null; then
  perf script -i "$OUT/perf.data" 2>/dev/null | stackcollapse-perf.pl | flamegraph.pl >"$OUT/flame.svg" || true
fi
echo "--- self time (top 25), in $OUT/self.txt"
grep -E '^ +[0-9]' "$OUT/self.txt" | head -25
echo "--- results in $OUT"
