#!/usr/bin/env bash
# The README's demo: on a fresh Debian 12 machine (as root, or with sudo)
# installs the dependencies, builds Petrel and runs `petrel decode` over a
# file of real BGP messages (tests/data/sample-messages.hex, one message
# per line as hex), printing one JSON object per message.
#
#   scripts/demo.sh [FILE]     FILE: other hex messages to decode
#   BUILD_DIR                  build directory (default build-demo)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-demo}
INPUT=${1:-tests/data/sample-messages.hex}

scripts/install-deps.sh
if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  meson setup "$BUILD_DIR" --buildtype=release -Dtests=false >/dev/null
fi
meson compile -C "$BUILD_DIR" petrel

petrel=$BUILD_DIR/daemon/petrel
if [[ ! -x $petrel ]]; then
  echo "demo: $petrel was not built" >&2
  exit 1
fi

echo "demo: $petrel decode < $INPUT" >&2
rc=0
"$petrel" decode <"$INPUT" || rc=$?
if [[ $rc -ne 0 ]]; then
  echo "demo: FAILED: \`petrel decode\` exited with status $rc." >&2
  echo "      (If it said 'not built yet', the decode subcommand is still a placeholder.)" >&2
  exit 1
fi
