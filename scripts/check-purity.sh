#!/usr/bin/env bash
# Checks the architecture's two hard rules (../shared/DESIGN.md, STYLE.md):
#
# 1. Pure modules (crates/, codec/, fsm/, rpki/, fib/ except its kernel
#    driver) include no socket, event-loop, libmnl, HTTP or toml++ header
#    and never read a clock. Exempt: fib/ files whose name contains
#    "driver" (the kernel driver, the one file there that opens a socket)
#    and anything under a tools/ or bench/ folder (benchmark tools may open
#    sockets and time themselves).
# 2. Nothing outside daemon/ includes a daemon/ header (tests/ and fuzz/
#    may: they test what they include).
#
# Text after // on a line is ignored, so comments may name what they avoid.
# Prints every offending line as file:line: text and exits 1 if any.
set -euo pipefail
cd "$(dirname "$0")/.."

PURE_DIRS=(crates codec fsm rpki fib)

BANNED_HEADERS='#[[:space:]]*include[[:space:]]*<(sys/socket\.h|sys/un\.h|sys/epoll\.h|sys/select\.h|poll\.h|netdb\.h|netinet/[^>]*|arpa/[^>]*|ev\.h|ev\+\+\.h|libmnl/[^>]*|toml\+\+/[^>]*|microhttpd\.h)>'
CLOCK_READS='(system_clock|steady_clock|high_resolution_clock|utc_clock|tai_clock|gps_clock|file_clock)::now|\bclock_gettime\b|\bgettimeofday\b|\btimespec_get\b|(^|[^A-Za-z0-9_.>])(std::)?time[[:space:]]*\(|std::clock[[:space:]]*\(|\bev_now\b|\bev_time\b'
DAEMON_INCLUDE='#[[:space:]]*include[[:space:]]*["<]daemon/'

sources() {
  find "$@" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' -o -name '*.c' \) \
    -not -path '*/build*/*' 2>/dev/null | sort
}

found=0
# Greps file for pattern outside // comments; prints "file:line: text".
scan() {
  local file=$1 pattern=$2 what=$3 ln rest code
  while IFS=: read -r ln rest; do
    code=${rest%%//*}
    if grep -qE -- "$pattern" <<<"$code"; then
      echo "$file:$ln: $what: ${rest#"${rest%%[![:space:]]*}"}"
      found=1
    fi
  done < <(grep -nE -- "$pattern" "$file" || true)
}

for f in $(sources "${PURE_DIRS[@]}"); do
  case $f in
    fib/*driver*|*/tools/*|*/bench/*) continue ;;
  esac
  scan "$f" "$BANNED_HEADERS" "I/O header in a pure module"
  scan "$f" "$CLOCK_READS" "clock read in a pure module"
done

for f in $(sources . ); do
  f=${f#./}
  case $f in
    daemon/*|tests/*|fuzz/*|.git/*) continue ;;
  esac
  scan "$f" "$DAEMON_INCLUDE" "daemon/ header included outside daemon/"
done

if [[ $found -ne 0 ]]; then
  echo "check-purity: FAILED (see ../shared/DESIGN.md, 'Layout')"
  exit 1
fi
echo "check-purity: ok ($(sources "${PURE_DIRS[@]}" | wc -l) files in pure modules)"
