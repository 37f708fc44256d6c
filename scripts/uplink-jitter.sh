#!/usr/bin/env bash
# Measures bessd's cycle wake-up lateness (p99, max) at 100 ms with no uplink, and with the uplink
# busy: bess-aggregator receiving telemetry every 0.1 s while a 200,000-record backlog is replayed.
# Both cases run the cycle SCHED_FIFO 60 (realtime.priority), as on a gateway.
# Usage: scripts/uplink-jitter.sh [SECONDS]   (release build; prints one line per case)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_RUN=${1:-20}
swift build -c release --product bessd >/dev/null
swift build -c release --product bess-aggregator >/dev/null
swift build -c release --product bess-hil >/dev/null
WORK=$(mktemp -d)
trap 'kill $AGG 2>/dev/null || true; rm -rf "$WORK"' EXIT
PORT=$((20000 + RANDOM % 20000))
base() {
  cat <<YAML
mode: simulation
period_ms: 100
control_socket: $WORK/$1.sock
state_directory: $WORK/$1
bess_units:
  - {id: J1, campus_id: JITTER, capacity_kwh: 250, max_power_kw: 100}
  - {id: J2, campus_id: JITTER, capacity_kwh: 250, max_power_kw: 100}
simulation: {frequency_profile: walk, seed: 3}
realtime: {priority: 60}
YAML
}
base quiet > "$WORK/quiet.yaml"
{ base busy; echo "aggregator: {url: \"http://127.0.0.1:$PORT\", interval_s: 0.1}"; } > "$WORK/busy.yaml"
.build/release/bess-hil spool --dir "$WORK/busy/spool" --records 200000 --size 400 --uplink-records >/dev/null
.build/release/bess-aggregator --listen 127.0.0.1:$PORT --database "$WORK/agg.sqlite" >/dev/null 2>&1 & AGG=$!
sleep 1
for case in quiet busy; do
  line=$(.build/release/bessd run --config "$WORK/$case.yaml" --duration "$SECONDS_RUN" --status-every 0 --log stdout | grep "bessd stopped")
  echo "$case: $line"
done
echo "aggregator holds $(curl -s 127.0.0.1:$PORT/metrics | sed -n 's/^bess_aggregator_records{site="JITTER"} //p') records"
