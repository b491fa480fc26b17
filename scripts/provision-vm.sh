#!/usr/bin/env bash
# Provision innet's full-fidelity VM (Ubuntu 24.04), as root: BMv2 (simple_switch_grpc) and p4c
# from the p4lang project's Ubuntu packages, Mininet, netem, the project's venv with PyTorch's
# CPU build; then `make p4` and `make test`. `vagrant up` runs it with the checkout's path
# (default /innet). Safe to run again: every step checks or replaces what it installs.
set -euo pipefail

repo="${1:-/innet}"
export DEBIAN_FRONTEND=noninteractive

# shellcheck source=/dev/null
. /etc/os-release
if [ "${ID:-}" != "ubuntu" ]; then
  echo "provision-vm.sh: made for Ubuntu (found ${PRETTY_NAME:-unknown})" >&2
  exit 1
fi

step() { printf '\n=== %s\n' "$*"; }

step "base packages"
apt-get update -qq
apt-get install -y -qq --no-install-recommends ca-certificates curl gnupg make cpp \
  python3-venv python3-dev iproute2 iputils-ping ethtool

step "p4lang packages: p4lang-bmv2 (simple_switch_grpc) and p4lang-p4c (p4c-bm2-ss)"
p4lang="https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_${VERSION_ID}"
curl -fsSL "${p4lang}/Release.key" | gpg --dearmor --yes -o /etc/apt/trusted.gpg.d/home_p4lang.gpg
echo "deb ${p4lang}/ /" > /etc/apt/sources.list.d/home_p4lang.list
apt-get update -qq
apt-get install -y -qq --no-install-recommends p4lang-bmv2 p4lang-p4c

step "p4c's and BMv2's versions, beside the ones CI proves"
proven_p4c=1.2.5.16 proven_bmv2=1.15.5  # the tests and make p4 pass with these, in CI
p4c_version=$(p4c-bm2-ss --version 2>&1 | grep -oE '[0-9]+(\.[0-9]+)+' | head -1 || true)
bmv2_version=$(simple_switch_grpc --version 2>&1 | grep -oE '[0-9]+(\.[0-9]+)+' | head -1 || true)
printf 'p4c %s, BMv2 %s (CI proves p4c %s, BMv2 %s)\n' "${p4c_version:-unknown}" \
  "${bmv2_version:-unknown}" "${proven_p4c}" "${proven_bmv2}"
if [ "${p4c_version:-}" != "${proven_p4c}" ] || [ "${bmv2_version:-}" != "${proven_bmv2}" ]; then
  echo "provision-vm.sh: not the versions CI proves; make p4 and make test below say whether they agree" >&2
fi

step "Mininet and netem (the stock kernel's sch_netem module)"
apt-get install -y -qq --no-install-recommends mininet "linux-modules-extra-$(uname -r)"
modprobe sch_netem

step "the project's venv, PyTorch's CPU build first (PyPI's default build is CUDA's)"
cd "${repo}"
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
make setup PYTHON=python3

step "compile p4src/ with p4c and compare its P4Info with p4switch's"
make p4

step "the tests (BMv2 tests included: simple_switch_grpc is here)"
make test
