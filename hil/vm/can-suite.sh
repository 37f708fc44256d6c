#!/bin/sh
# Runs inside the test VM (see scripts/can-tests.sh): brings up virtual CAN and runs the SocketCAN
# suite from the staged test binary. Prints CAN_SUITE_RESULT=<exit status> last.
STAGE="$1"
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:/opt/swift/usr/bin
export PYTHONPATH="$STAGE/pylib"
export HOME=/tmp
cd /tmp || exit 1
ip link set lo up
modprobe vcan && ip link add dev vcan0 type vcan && ip link set vcan0 up
BESSD_VCAN=vcan0 "$STAGE/bessdPackageTests.xctest" --testing-library swift-testing --filter SocketCAN
echo "CAN_SUITE_RESULT=$?"
# The HIL scenarios that need CAN (the BMS emulated by the plant on vcan0).
"$STAGE/bess-hil" scenario --bessd "$STAGE/bessd" --output /tmp/scenarios "$STAGE"/hil/scenarios/*.yaml
echo "CAN_SCENARIO_RESULT=$?"
# The VM cannot write the host's files: its plots and samples leave on the console, base64-encoded.
for f in /tmp/scenarios/*.png /tmp/scenarios/*.csv; do
  [ -f "$f" ] || continue
  echo "BEGIN_FILE $(basename "$f")"; base64 -w 0 "$f"; echo; echo "END_FILE"
done
