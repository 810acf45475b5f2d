#!/usr/bin/env bash
# Checks the systemd unit meson made (dist/petrel.service.in): systemd's
# own verifier finds nothing wrong with it, and its exposure score
# (`systemd-analyze security`) is at most 2.0, "OK" (docs/security.md).
# $1: the unit, $2: a petrel binary to stand for the installed one,
# $3 $4: petrel.8 and petrel.toml.5 (verify opens the unit's man: pages;
# without them those references are taken out).
# Exit 77 (skipped) without systemd-analyze.
set -euo pipefail
unit=$1 petrel=$2
command -v systemd-analyze >/dev/null || { echo "no systemd-analyze: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# verify wants the executables it names to exist.
sed -E "s|^(ExecStart(Pre)?=)[^ ]*/petrel |\1$petrel |" "$unit" >"$work/petrel.service"
if [[ $# -ge 4 ]]; then
  mkdir -p "$work/man/man8" "$work/man/man5"
  cp "$3" "$work/man/man8/petrel.8"
  cp "$4" "$work/man/man5/petrel.toml.5"
  export MANPATH=$work/man
else
  sed -i -E 's| man:[^ ]+||g' "$work/petrel.service"
fi
grep -q "^ExecStart=$petrel run" "$work/petrel.service"
systemd-analyze verify "$work/petrel.service"
systemd-analyze security --offline=true --threshold=20 "$work/petrel.service" | tail -1
