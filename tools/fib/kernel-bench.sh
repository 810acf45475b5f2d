#!/bin/bash
# The kernel-installer benchmark (docs/performance.md, "Kernel routes"):
# N synthetic IPv4 prefixes (tools/synth) via one gateway into table 100
# of a fresh network namespace, by the floor installer (batched
# RTM_NEWROUTE, 256 per sendmsg), the floor with a nexthop object, and
# Petrel's installer (fib-sync: plan + driver; with nexthop objects, and
# as petrel-gateways without them), each run ROUNDS times,
# alternated. With BASE_BUILD, its fib-sync runs too (petrel-base), to
# compare two versions in the same minutes. Petrel's lines end with its
# peak RSS (max_rss_kib). MODES (a space-separated list of floor,
# nexthop-object, petrel, petrel-gateways, petrel-base) runs only those,
# in that order, e.g. MODES=floor for the floor line beside a daemon
# benchmark. igp-move and igp-move-gateways (not run unless named in
# MODES): the N prefixes via a next hop (10.99.0.1) that resolves through
# a static route of the main table via 10.1.0.2; once installed, the static
# route is replaced to go via 10.1.0.3, and fib-sync reports the requests
# and the time until the kernel's routes all follow (docs/kernel.md,
# "Next-hop resolution"). Needs root.
# Usage: [MODES=...] kernel-bench.sh BUILD_DIR N [ROUNDS [BASE_BUILD]]
set -euo pipefail
BUILD=$1; N=$2; ROUNDS=${3:-2}; BASE=${4:-}
B=$BUILD/tools/fib/fib-sync
NS=petrel-kbench$$
run() {
  ip netns add $NS
  trap 'ip netns del $NS 2>/dev/null || true' RETURN
  ip -n $NS link set lo up
  ip -n $NS link add v0 type veth peer name v0p
  ip -n $NS link set v0 up
  ip -n $NS link set v0p up
  ip -n $NS addr add 10.1.0.1/24 dev v0
  local args=(--table 100 --metric 32 --synth "$N" --gateway 10.1.0.2)
  case $1 in
    igp-move*)
      ip -n $NS route add 10.99.0.1/32 via 10.1.0.2 proto static
      args=(--table 100 --metric 32 --synth "$N" --gateway 10.99.0.1
            --igp-move "ip route replace 10.99.0.1/32 via 10.1.0.3 proto static")
      [[ $1 == igp-move-gateways ]] && args+=(--gateways) ;;
    floor) args+=(--floor) ;;
    nexthop-object) args+=(--floor --nexthop-object v0) ;;
    petrel | petrel-base) ;;
    petrel-gateways) args+=(--gateways) ;;
  esac
  local bin=$B
  if [[ $1 == petrel-base ]]; then  # an older build has it in fib/
    bin=$BASE/tools/fib/fib-sync
    [[ -x $bin ]] || bin=$BASE/fib/fib-sync
  fi
  if [[ $1 == petrel* || $1 == igp-move* ]]; then
    echo -n "$1 "
    timeout 900 ip netns exec $NS /usr/bin/time -f "max_rss_kib=%M user_s=%U sys_s=%S" "$bin" "${args[@]}" 2>&1 | tr '\n' ' '
    echo
  else
    timeout 900 ip netns exec $NS "$bin" "${args[@]}"
  fi
  local n
  n=$(ip -n $NS route show table 100 | wc -l)
  [[ $n -eq $N ]] || echo "WRONG: table 100 holds $n routes, expected $N"
}
echo "$(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p') $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= ROUNDS; r++)); do
  modes=(floor nexthop-object petrel petrel-gateways)
  [[ -n $BASE ]] && modes+=(petrel-base)
  [[ -n ${MODES:-} ]] && read -r -a modes <<< "$MODES"
  for mode in "${modes[@]}"; do run $mode; done
done
