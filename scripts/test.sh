#!/usr/bin/env bash
# The README's test command. On a fresh Debian 12 machine (as root, or with
# sudo) it installs the dependencies, builds Petrel with clang under
# AddressSanitizer and UndefinedBehaviorSanitizer with warnings as errors,
# and runs every meson test: unit, property, fuzz corpus replay and
# integration. Extra arguments go to `meson test` (e.g. --suite unit).
#
#   BUILD_DIR  build directory (default build-test); must be a clang build
#              if it exists already
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-test}

scripts/install-deps.sh

# UBSan reports are errors, not warnings; ASan aborts on the first error.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1}

# -O0 with line tables only: the sanitizers need no optimiser, and this
# halves the compile time of the build (measured on update_test.cpp: 24 s
# at -O2 -g, 12 s at -O0 -gline-tables-only); traces keep file and line.
# -Dfuzz=disabled: the fuzz targets build as corpus replayers, so nothing
# carries libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link on
# every object of a clang sanitizer build otherwise); the corpora replay the
# same. CI fuzzes in a build of its own (.ci/run, step fuzz-smoke).
# -Dbenchmarks=false: the benchmark programs are not run here, and under the
# sanitizers their compile jobs took about 90 s, some 45 s of wall time on 2
# cores (the RPKI ones build the daemon's RPKI sources again, at -O3).
opts=(-Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true
      -Doptimization=0 -Ddebug=false -Dcpp_args=-gline-tables-only -Dfuzz=disabled
      -Dbenchmarks=false)
if [[ -f $BUILD_DIR/build.ninja ]]; then
  meson setup --reconfigure "$BUILD_DIR" "${opts[@]}" >/dev/null
else
  CC=clang CXX=clang++ meson setup "$BUILD_DIR" "${opts[@]}"
fi
rm -f "$BUILD_DIR/meson-logs/testlog.json"
meson compile -C "$BUILD_DIR"
meson test -C "$BUILD_DIR" --num-processes 2 --print-errorlogs "$@"
