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
"$STAGE/bess-hil" scenario --bessd "$STAGE/bessd" --output "$STAGE/scenarios" "$STAGE"/hil/scenarios/*.yaml
echo "CAN_SCENARIO_RESULT=$?"
