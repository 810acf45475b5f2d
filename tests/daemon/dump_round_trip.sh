#!/bin/sh
# dump_round_trip.sh PETREL DIR...: for every valid DIR/*.toml, `petrel
# check --dump` of the file, then of that dump, must pass and print the
# same text (docs/configuration.md, "The dump"). Each DIR is copied, and
# the dumps written beside its files, where a relative password_file
# (written in the dump as it was resolved) is found again.
petrel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # the tests cd away
shift
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
i=0
for dir in "$@"; do
  i=$((i + 1))
  cp -r "$dir" "$tmp/$i" && cd "$tmp/$i" || exit 1
  for f in *.toml; do
    "$petrel" check -c "$f" >/dev/null 2>&1 || continue  # the golden error cases
    if ! "$petrel" check -c "$f" --dump >first.dump 2>err.txt; then
      printf '%s/%s: check --dump failed:\n' "$dir" "$f" >&2; cat err.txt >&2; exit 1
    fi
    if ! "$petrel" check -c first.dump --dump >second.dump 2>err.txt; then
      printf '%s/%s: its dump does not load:\n' "$dir" "$f" >&2; cat err.txt >&2; exit 1
    fi
    if ! cmp -s first.dump second.dump; then
      printf '%s/%s: the dump of its dump differs:\n' "$dir" "$f" >&2
      diff first.dump second.dump >&2; exit 1
    fi
    n=$((n + 1))
  done
done
[ "$n" -gt 0 ] || { echo "no configuration found" >&2; exit 1; }
echo "$n dumps load and dump the same"
