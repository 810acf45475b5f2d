#!/bin/sh
# expect_exit.sh [--stdout] STATUS TEXT COMMAND...: runs COMMAND and passes
# when it exits with STATUS and its stderr (with --stdout: its stdout, where
# --version and --help answer) contains TEXT (meson's should_fail cannot
# tell a usage error, 2, from a failure, 1). TEXT "" matches anything.
stream=stderr
if [ "$1" = --stdout ]; then
  stream=stdout
  shift
fi
want=$1 text=$2
shift 2
if [ $stream = stdout ]; then
  out=$("$@" 2>/dev/null)
else
  out=$("$@" 2>&1 >/dev/null)
fi
got=$?
if [ "$got" != "$want" ]; then
  printf 'exit status %s, want %s; %s:\n%s\n' "$got" "$want" $stream "$out" >&2
  exit 1
fi
case $out in
  *"$text"*) exit 0 ;;
esac
printf '%s lacks "%s":\n%s\n' $stream "$text" "$out" >&2
exit 1
