#!/bin/sh
# expect_exit.sh STATUS TEXT COMMAND...: runs COMMAND and passes when it
# exits with STATUS and its stderr contains TEXT (meson's should_fail
# cannot tell a usage error, 2, from a failure, 1). TEXT "" matches anything.
want=$1 text=$2
shift 2
err=$("$@" 2>&1 >/dev/null)
got=$?
if [ "$got" != "$want" ]; then
  printf 'exit status %s, want %s; stderr:\n%s\n' "$got" "$want" "$err" >&2
  exit 1
fi
case $err in
  *"$text"*) exit 0 ;;
esac
printf 'stderr lacks "%s":\n%s\n' "$text" "$err" >&2
exit 1
