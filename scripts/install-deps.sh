#!/usr/bin/env bash
# Installs every build and test dependency of Petrel from Debian's packages.
# Idempotent: packages already present are left as they are.
set -euo pipefail

PACKAGES=(
  # build
  meson ninja-build pkg-config g++ clang libclang-rt-14-dev llvm
  # libraries
  libmnl-dev libev-dev libtomlplusplus-dev libjemalloc-dev libfmt-dev
  nlohmann-json3-dev libmicrohttpd-dev zlib1g-dev
  # tests
  libgtest-dev libgmock-dev librapidcheck-dev
  # tools used by tests, the lab and the demo
  iproute2 python3 xxd jq
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
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
