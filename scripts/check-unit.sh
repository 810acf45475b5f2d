#!/usr/bin/env bash
# Checks the systemd unit meson made (dist/petrel.service.in): systemd's
# own verifier finds nothing wrong with it, and its exposure score
# (`systemd-analyze security`) is at most 2.0, "OK" (docs/security.md).
# $1: the unit, $2: a petrel binary to stand for the installed one.
# Exit 77 (skipped) without systemd-analyze.
set -euo pipefail
unit=$1 petrel=$2
command -v systemd-analyze >/dev/null || { echo "no systemd-analyze: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# verify wants the executables it names to exist.
sed -E "s|^(ExecStart(Pre)?=)[^ ]*/petrel |\1$petrel |" "$unit" >"$work/petrel.service"
grep -q "^ExecStart=$petrel run" "$work/petrel.service"
systemd-analyze verify "$work/petrel.service"
systemd-analyze security --offline=true --threshold=20 "$work/petrel.service" | tail -1
