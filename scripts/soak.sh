#!/usr/bin/env bash
# make soak: the plant and a release bessd (with bess-aggregator as its uplink) for 30 minutes at a
# 10 ms period, a fault every 30 s cycling through every fault kind, an uplink outage and a reload
# every 5 minutes (bess-hil soak; docs/soak.md). The BMS faults are frames on virtual CAN, so when
# this kernel has no vcan the soak runs in a VM booted from Debian's kernel (the recipe of
# scripts/can-tests.sh), with KVM when /dev/kvm works, else emulated. Results: hil/results/soak/.
#   SOAK_MINUTES=30 SOAK_PERIOD_MS=10 scripts/soak.sh      (shorter runs for trying it out)
# Extra arguments go to `bess-hil soak` (e.g. --fault-every 20).
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${SOAK_MINUTES:-30}
PERIOD=${SOAK_PERIOD_MS:-10}
OUT=hil/results/soak
SWIFT=${SWIFT:-$(command -v swift || echo /opt/swift/usr/bin/swift)}
for product in bessd bess-hil bess-aggregator; do "$SWIFT" build -c release --product "$product"; done
BIN=$(pwd)/.build/release
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
mkdir -p "$OUT"

if [[ $(id -u) -eq 0 ]] && modprobe vcan 2>/dev/null; then
  ip link add dev vcan0 type vcan 2>/dev/null || true
  ip link set vcan0 up
  exec env BESS_COMMIT="$COMMIT" "$BIN/bess-hil" soak --minutes "$MINUTES" --period-ms "$PERIOD" --rig hil/rigs/scenario.yaml \
    --output "$OUT" --bessd "$BIN/bessd" --aggregator "$BIN/bess-aggregator" --machine "this host (vcan)" "$@"
fi

scripts/ensure-debian-packages.sh qemu-system-x86 linux-image-amd64 busybox-static iproute2 >&2
command -v vng >/dev/null 2>&1 || python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "virtme-ng==1.42"
KERNEL=$(ls -1 /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1)
[[ -n "$KERNEL" ]] || { echo "soak: no Debian kernel in /boot (linux-image-amd64)" >&2; exit 1; }
# The VM sees the host's root filesystem but not its temporary directories: stage what it runs.
STAGE=/var/lib/bessd-ci/soak-$$
rm -rf "$STAGE"; mkdir -p "$STAGE/rigs"
trap 'rm -rf "$STAGE"' EXIT
cp "$BIN/bessd" "$BIN/bess-hil" "$BIN/bess-aggregator" "$STAGE/"
cp hil/rigs/scenario.yaml "$STAGE/rigs/"
WHERE="a VM with KVM (2 vCPUs, 2 GiB)"
KVM=()
if ! { [ -w /dev/kvm ] && vng --run "$KERNEL" --user root --memory 1G --exec "true" >/dev/null 2>&1; }; then
  WHERE="a VM without KVM (emulated CPU, 2 vCPUs, 2 GiB)"
  KVM=(--disable-kvm)
fi
EXTRA=""
[[ $# -gt 0 ]] && EXTRA=$(printf ' %q' "$@")
cat > "$STAGE/run.sh" <<VM
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp
cd /tmp
ip link set lo up
modprobe vcan && ip link add dev vcan0 type vcan && ip link set vcan0 up
BESS_COMMIT=$COMMIT $STAGE/bess-hil soak --minutes $MINUTES --period-ms $PERIOD --rig $STAGE/rigs/scenario.yaml --output /tmp/soak \
  --bessd $STAGE/bessd --aggregator $STAGE/bess-aggregator --machine "$WHERE" $EXTRA
echo "SOAK_RESULT=\$?"
# The VM cannot write the host's files: the results leave on the console, base64-encoded.
for f in /tmp/soak/*; do
  [ -f "\$f" ] || continue
  echo "BEGIN_FILE \$(basename "\$f")"; base64 -w 0 "\$f"; echo; echo "END_FILE"
done
VM
chmod +x "$STAGE/run.sh"
echo "soak: $MINUTES min at $PERIOD ms in $WHERE (kernel $(basename "$KERNEL"))"
set +e
vng --run "$KERNEL" "${KVM[@]}" --cpus 2 --user root --memory 2G --exec "$STAGE/run.sh" 2>&1 \
  | tee "$STAGE/vm.log" | grep -v '^BEGIN_FILE\|^END_FILE\|^[A-Za-z0-9+/=]\{200,\}$'
set -e
python3 scripts/vm-files.py "$STAGE/vm.log" "$OUT"
RESULT=$(sed -n 's/^SOAK_RESULT=\([0-9]*\).*/\1/p' "$STAGE/vm.log" | tail -n 1)
[[ "$RESULT" == 0 ]] && { echo "soak: passed; $OUT/soak.md"; exit 0; }
echo "soak: FAILED (exit ${RESULT:-none}); $OUT/soak.md" >&2
exit 1
