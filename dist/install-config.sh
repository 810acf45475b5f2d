#!/bin/sh
# meson install: the default configuration, only if there is none yet (an
# operator's file is never replaced). $1: the example, $2: the target.
set -eu
target="${DESTDIR:-}$2"
if [ -e "$target" ]; then
  echo "petrel: $2 exists, left as it is"
  exit 0
fi
mkdir -p "$(dirname "$target")"
install -m 0644 "$MESON_SOURCE_ROOT/$1" "$target"
