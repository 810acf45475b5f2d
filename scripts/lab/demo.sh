#!/usr/bin/env bash
# The Petrel demo: two network namespaces joined by a veth pair, BIRD 2 in
# one announcing a few IPv4 and IPv6 routes, Petrel in the other peering
# with it. Shows the session come up and the routes arrive, then removes
# everything it made (namespaces, processes, temp dir) on exit, Ctrl-C
# included.
#
# Without a petrel binary (PETREL or build/daemon/petrel), the Python test speaker
# (tests/integration/speaker.py) takes Petrel's place and prints the routes
# it receives from BIRD.
#
# usage: sudo scripts/lab/demo.sh [SECONDS]      (default 20, at most 600)
# env:   PETREL=/path/to/petrel (default: build/daemon/petrel)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
duration=${1:-20}
(( duration > 0 && duration <= 600 )) || { echo "demo: SECONDS must be 1..600" >&2; exit 2; }

if [[ $(id -u) -ne 0 ]]; then
  echo "demo: needs root (network namespaces); try: sudo $0" >&2
  exit 1
fi
for tool in ip bird birdc python3; do
  command -v "$tool" >/dev/null || { echo "demo: $tool not found (scripts/install-deps.sh)" >&2; exit 1; }
done

id=pdemo$$
ns_petrel=${id}p
ns_bird=${id}b
tmp=$(mktemp -d "/tmp/petrel-demo.XXXXXX")
pids=()

cleanup() {
  trap - EXIT INT TERM HUP
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  sleep 0.3
  for ns in "$ns_petrel" "$ns_bird"; do
    if ip netns list | grep -qw "$ns"; then
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
  rm -rf "$tmp"
  echo "demo: cleaned up"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

echo "demo: namespaces $ns_petrel (198.18.0.1, fd00:bb::1) and $ns_bird (198.18.0.2, fd00:bb::2)"
ip netns add "$ns_petrel"
ip netns add "$ns_bird"
ip link add "${id}a" type veth peer name "${id}z"
ip link set "${id}a" netns "$ns_petrel"
ip link set "${id}z" netns "$ns_bird"
i=1
for ns in "$ns_petrel" "$ns_bird"; do
  dev=$([[ $ns == "$ns_petrel" ]] && echo "${id}a" || echo "${id}z")
  in_ns "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0
  in_ns "$ns" ip link set lo up
  in_ns "$ns" ip link set "$dev" name lab0
  in_ns "$ns" ip link set lab0 up
  in_ns "$ns" ip addr add "198.18.0.$i/24" dev lab0
  in_ns "$ns" ip -6 addr add "fd00:bb::$i/64" dev lab0 nodad
  i=$((i + 1))
done

cat > "$tmp/bird.conf" <<EOF
log "$tmp/bird.log" all;
router id 198.18.0.2;
protocol device { scan time 10; }
protocol static static4 { ipv4;
  route 198.19.10.0/24 blackhole; route 198.19.11.0/24 blackhole; route 198.19.12.0/24 blackhole; }
protocol static static6 { ipv6;
  route fd00:10::/48 blackhole; route fd00:11::/48 blackhole; }
protocol bgp petrel {
  local 198.18.0.2 as 65002;
  neighbor 198.18.0.1 as 65001;
  passive on;
  hold time 9; keepalive time 3; connect delay time 1; connect retry time 2; error wait time 1, 4;
  ipv4 { import all; export all; };
  ipv6 { import all; export filter { bgp_next_hop = fd00:bb::2; accept; }; next hop address fd00:bb::2; };
}
EOF
in_ns "$ns_bird" bird -f -c "$tmp/bird.conf" -s "$tmp/bird.ctl" -P "$tmp/bird.pid" \
  >"$tmp/bird.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [[ -S $tmp/bird.ctl ]] && break; sleep 0.1; done
echo "demo: BIRD announces 198.19.10.0/24 198.19.11.0/24 198.19.12.0/24 fd00:10::/48 fd00:11::/48"

petrel=${PETREL:-$root/build/daemon/petrel}
petrel_running=0
if [[ -x $petrel ]]; then
  cat > "$tmp/petrel.toml" <<EOF
[router]
asn = 65001
router_id = "198.18.0.1"
listen = ["198.18.0.1"]
port = 179
user = "root"   # a router would use a user of its own: docs/security.md
[http]
listen = "127.0.0.1:8179"
[[peer]]
name = "bird"
address = "198.18.0.2"
asn = 65002
passive = false
hold_time = 9
families = ["ipv4-unicast", "ipv6-unicast"]
local_address = "198.18.0.1"
import = "all"      # RFC 8212: an external peer needs an explicit policy
export = "all"
shutdown_message = "petrel demo stops"   # RFC 9003 text; "" sends a Cease without text
[[originate]]
prefix = "192.0.2.0/24"
[[originate]]
prefix = "2001:db8:1::/48"
EOF
  in_ns "$ns_petrel" "$petrel" run -c "$tmp/petrel.toml" >"$tmp/petrel.log" 2>&1 &
  pids+=($!)
  sleep 1.5
  if kill -0 "${pids[-1]}" 2>/dev/null; then
    petrel_running=1
  else
    echo "demo: petrel run did not stay up: $(tail -n 3 "$tmp/petrel.log")"
  fi
else
  echo "demo: no petrel binary at $petrel (build it, or set PETREL)"
fi

if [[ $petrel_running -eq 1 ]]; then
  echo "demo: Petrel is running; waiting for the session (up to 30 s)"
  for _ in $(seq 30); do
    birdc -s "$tmp/bird.ctl" show protocols petrel | grep -q Established && break
    sleep 1
  done
  echo "demo: BIRD's view of the session:"
  birdc -s "$tmp/bird.ctl" show protocols all petrel | sed -n '2,8p'
  sleep 2
  echo "demo: Petrel's log:"; sed 's/^/  /' "$tmp/petrel.log"
  echo "demo: Petrel's view (GET /api/peers/bird on 127.0.0.1:8179 in its namespace):"
  in_ns "$ns_petrel" python3 - <<'PY' || echo "  (the API did not answer)"
import json, urllib.request
p = json.load(urllib.request.urlopen("http://127.0.0.1:8179/api/peers/bird", timeout=3))
print(f"  peer {p['name']} ({p['address']}, AS{p['remote_asn']}): {p['state']}")
for fam, c in sorted(p.get("update_prefixes", {}).items()):
    print(f"  {fam}: {c['announced']} prefixes announced, {c['withdrawn']} withdrawn, "
          f"{c['received']} routes in Petrel's table")
r = json.load(urllib.request.urlopen("http://127.0.0.1:8179/api/routes/198.19.10.0/24", timeout=3))
for route in r["routes"]:
    a = route["attributes"]
    path = " ".join(str(x) for seg in a.get("as_path", []) for x in seg["asns"])
    print(f"  GET /api/routes/198.19.10.0/24: from {route['peer']}, AS path {path}, "
          f"next hop {a.get('next_hop')}, best: {route['best']}")
PY
  echo "demo: and the other way, Petrel's own routes ([[originate]]) as BIRD holds them:"
  birdc -s "$tmp/bird.ctl" show route protocol petrel | grep -E "^[0-9a-f]|via" | sed 's/^/  /'
  birdc -s "$tmp/bird.ctl" show route all 192.0.2.0/24 | grep -E "BGP.as_path|BGP.next_hop" | sed 's/^/  /'
  echo "demo: keeping it up for $duration s (Ctrl-C ends it)"
  sleep "$duration"
  # SIGINT is the plain stop (SIGTERM would be a graceful restart: no
  # NOTIFICATION, BIRD keeping Petrel's routes; docs/graceful-restart.md)
  echo "demo: stopping Petrel (SIGINT, a plain stop): it sends BIRD a Cease with its shutdown message"
  pkill -INT -f -- "run -c $tmp/petrel.toml" 2>/dev/null || true
  for _ in $(seq 50); do pgrep -f -- "run -c $tmp/petrel.toml" >/dev/null || break; sleep 0.1; done
  sleep 1
  grep -h "Received:" "$tmp/bird.log" | tail -n 1 | sed "s/^/  BIRD logged: /" || true
else
  echo "demo: the Python test speaker stands in for Petrel"
  in_ns "$ns_petrel" python3 "$root/tests/integration/speaker.py" \
    --connect 198.18.0.2 --local 198.18.0.1 --asn 65001 --router-id 198.18.0.1 \
    --expect 5 --duration "$duration"
  birdc -s "$tmp/bird.ctl" show protocols petrel | tail -n 1
fi
