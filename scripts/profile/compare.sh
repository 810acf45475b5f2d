#!/usr/bin/env bash
# The same full-table feed through Petrel, BIRD 2, FRR bgpd and GoBGP, one
# after the other in the same run (docs/performance.md, "Full tables end to
# end"): petrel-load plays PEERS neighbours writing a synthetic table and an
# observer that takes everything the daemon passes on. Prints one JSON line
# per daemon and then a table: time until the observer holds the full
# table, the daemon's CPU seconds, its peak resident memory; with KERNEL=1,
# also the time until the kernel holds every route (BIRD's kernel protocol,
# FRR's zebra, Petrel's installer; GoBGP has no installer of its own), and
# the floor: a minimal batched netlink installer of the same routes.
#
# Knobs: PEERS (1), PREFIXES (1000000), V6 (0: IPv6 prefixes too, Petrel
# and BIRD only), KERNEL (0), DAEMONS (default
# "petrel bird frr gobgp", or "floor petrel bird frr" with KERNEL=1),
# HOLD_SECS (2), TIMEOUT (600), OUT, BUILD (build-profile). Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

PEERS=${PEERS:-1}
PREFIXES=${PREFIXES:-1000000}
KERNEL=${KERNEL:-0}
HOLD_SECS=${HOLD_SECS:-2}
OUT=${OUT:-$ROOT/out/compare-$(date -u +%Y%m%dT%H%M%SZ)}
if [[ $KERNEL == 1 ]]; then DAEMONS=${DAEMONS:-floor petrel bird frr}; else DAEMONS=${DAEMONS:-petrel bird frr gobgp}; fi

source scripts/profile/common.sh
profile_build
machine_line "compare: $PEERS peer(s), $PREFIXES prefixes, ${V6:-0} IPv6, kernel $KERNEL"
# shellcheck disable=SC2086
fulltable compare $DAEMONS | tee "$OUT/compare.txt"
