# Sourced by full-table.sh and compare.sh: the profiling build and the
# line that says when and on what a run was made.
#   BUILD  build directory (default build-profile): release with line
#          tables and frame pointers, so perf can walk and name the stacks

BUILD=${BUILD:-build-profile}

# Installs what the runs need and builds petrel, petrel-load and fib-sync.
profile_build() {
  scripts/install-deps.sh >/dev/null
  command -v perf >/dev/null || apt-get install -y linux-perf >/dev/null
  if [[ ! -f $BUILD/build.ninja ]]; then
    CC=gcc CXX=g++ meson setup "$BUILD" --buildtype=release -Db_ndebug=true \
      -Dcpp_args="-g1 -fno-omit-frame-pointer" >/dev/null
  fi
  meson compile -C "$BUILD" daemon/petrel tools/bench/petrel-load tools/fib/fib-sync >/dev/null
}

# "what: date, CPU, cores, load" into $OUT/machine.txt and on the terminal.
machine_line() {
  mkdir -p "$OUT"
  echo "$1; $(date -u +%FT%TZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/machine.txt"
}

# Runs scripts/profile/fulltable.py with the binaries of $BUILD.
fulltable() {
  PETREL=$BUILD/daemon/petrel LOAD=$BUILD/tools/bench/petrel-load FIBSYNC=$BUILD/tools/fib/fib-sync \
    PEERS=$PEERS PREFIXES=$PREFIXES V6=${V6:-0} KERNEL=$KERNEL HOLD_SECS=$HOLD_SECS OUT=$OUT \
    python3 scripts/profile/fulltable.py "$@"
}
