#!/usr/bin/env bash
# Installs every build and test dependency of Petrel from Debian's packages.
# Idempotent: packages already present are left as they are.
set -euo pipefail

PACKAGES=(
  # build
  meson ninja-build pkg-config g++ clang libclang-rt-14-dev llvm
  # libraries
  libmnl-dev libev-dev libtomlplusplus-dev libjemalloc-dev libfmt-dev
  nlohmann-json3-dev libmicrohttpd-dev zlib1g-dev libcap-dev libsystemd-dev
  libre2-dev  # AS-path regular expressions in policies (table/policy.cpp)
  libssl-dev libssh-dev  # TLS and SSH to RTR caches (daemon/rtr_transport.cpp)
  # tests
  libgtest-dev libgmock-dev librapidcheck-dev
  # tools used by tests, the lab and the demo
  iproute2 python3 xxd jq
  openssl openssh-client  # test_rtr_transports.py makes its CA, certificates and SSH keys
  scdoc man-db  # the man pages (dist/meson.build; systemd-analyze verify opens them)
  debhelper dpkg-dev lintian  # the Debian package (scripts/check-package.sh)
  iputils-ping  # test_kernel_routing.py pings across two Petrel routers
  # promtool, which checks /metrics (tests/daemon/api_test.cpp)
  prometheus
  # the interop lab's real peers and its test runner (docs/interop.md)
  bird2 frr gobgpd openbgpd exabgp stayrtr python3-pytest python3-pytest-xdist
  # reads Petrel's MRT dumps in tests/integration/test_mrt_dump.py
  bgpdump
  # pmbmpd, the BMP collector Petrel feeds in tests/integration/test_bmp.py
  pmacct
  # the status page rendered headless (tests/integration/test_http.py; ~52 s to install)
  chromium
  # a terminal for petrel top (tests/integration/test_top.py: send-keys, capture-pane)
  tmux
)

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
# The peer daemons' packages start system services that would bind port 179
# on the host: keep invoke-rc.d from starting anything during the install
# (unless a policy is already in place), and stop/disable what systemd runs.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  own_policy=1
  trap '$SUDO rm -f "$policy"' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
if [[ $own_policy -eq 1 ]]; then $SUDO rm -f "$policy"; trap - EXIT; fi
if [[ -d /run/systemd/system ]]; then
  for svc in bird frr gobgpd openbgpd exabgp stayrtr prometheus; do
    $SUDO systemctl disable --now "$svc.service" >/dev/null 2>&1 || true
  done
fi
