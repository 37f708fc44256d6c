#!/usr/bin/env bash
# Runs the SocketCAN test suite (Tests/ServiceTests/SocketCANTests.swift) against virtual CAN.
# When this kernel has vcan and we are root, directly; otherwise inside a VM booted from Debian's
# kernel with virtme-ng (this build machine's kernel has no CAN). The VM sees the host's root
# filesystem but not its temporary directories or root's home, so what it runs is staged under
# /var/lib/bessd-ci first. Needs `swift build --build-tests` to have run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD="$ROOT/.build/debug"
[[ -x "$BUILD/bessdPackageTests.xctest" ]] || { echo "can-tests: build the tests first (swift build --build-tests)" >&2; exit 1; }

if [[ $(id -u) -eq 0 ]] && modprobe vcan 2>/dev/null; then
  ip link add dev vcan0 type vcan 2>/dev/null || true
  ip link set vcan0 up
  echo "can-tests: this kernel has vcan; running on the host"
  exec env BESSD_VCAN=vcan0 "$BUILD/bessdPackageTests.xctest" --testing-library swift-testing --filter SocketCAN
fi

# VM tooling: Debian's qemu, kernel and static busybox; virtme-ng from PyPI.
scripts/ensure-debian-packages.sh qemu-system-x86 linux-image-amd64 busybox-static can-utils iproute2
if ! command -v vng >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "virtme-ng==1.42"
fi
KERNEL=$(ls -1 /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1)
[[ -n "$KERNEL" ]] || { echo "can-tests: no Debian kernel in /boot (linux-image-amd64)" >&2; exit 1; }

STAGE=/var/lib/bessd-ci/can-$$
rm -rf "$STAGE"
mkdir -p "$STAGE"
trap 'rm -rf "$STAGE"' EXIT
cp "$BUILD/bessdPackageTests.xctest" "$BUILD/bessd" "$BUILD/bess-hil" "$BUILD/bessctl" "$STAGE/"
cp hil/vm/can-suite.sh "$STAGE/"
mkdir -p "$STAGE/hil/scenarios" "$STAGE/hil/rigs"
cp hil/rigs/scenario.yaml "$STAGE/hil/rigs/"
cp $(grep -l '^requires: \[can\]' hil/scenarios/*.yaml) "$STAGE/hil/scenarios/"
# python-can for the VM's /usr/bin/python3 (the host's Python may live in root's home).
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --target "$STAGE/pylib" \
  "$(grep -E '^python-can==' hil/requirements.txt)"

echo "can-tests: booting $(basename "$KERNEL") in a VM (virtme-ng, no KVM)"
set +e
vng --run "$KERNEL" --disable-kvm --user root --memory 2G --exec "$STAGE/can-suite.sh $STAGE" 2>&1 \
  | tee "$STAGE/vm.log" | grep -v '^BEGIN_FILE\|^END_FILE\|^[A-Za-z0-9+/=]\{200,\}$' 
set -e
mkdir -p hil/results/scenarios
python3 scripts/vm-files.py "$STAGE/vm.log" hil/results/scenarios
if grep -q '^CAN_SUITE_RESULT=0$' "$STAGE/vm.log"; then
  echo "can-tests: SocketCAN suite passed in the VM"
else
  echo "can-tests: SocketCAN suite FAILED in the VM" >&2
  exit 1
fi
if grep -q '^CAN_SCENARIO_RESULT=0$' "$STAGE/vm.log"; then
  echo "can-tests: CAN scenarios passed in the VM"
else
  echo "can-tests: CAN scenarios FAILED in the VM" >&2
  exit 1
fi
