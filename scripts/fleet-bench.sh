#!/usr/bin/env bash
# make bench-fleet (and the end of make bench): a fleet of simulated gateways on one machine against
# one Mosquitto, two bess-aggregator instances (MQTT shared subscription) and one PostgreSQL, all
# from Debian and all on loopback. Writes hil/results/fleet.md and hil/results/bench-data/fleet-*.
#   FLEET_SITES=10000 FLEET_SECONDS=300   the sustained-ingest run (defaults)
#   FLEET_FAIL_SITES=2000 FLEET_FAIL_SECONDS=180   the run with an aggregator SIGKILLed, the broker
#                                                  and PostgreSQL restarted
#   BENCH_QUICK=1                         1000 sites for 60 s, failures at 15/30/45 s of 75 s
#   FLEET_ALIGNED=1                       every gateway writes at the same instant of the second (the worst burst)
#   FLEET_SKIP_BUILD=1                    measures the release binaries already built (no swift command)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
QUICK=${BENCH_QUICK:-}
SITES=${FLEET_SITES:-$([[ -n $QUICK ]] && echo 1000 || echo 10000)}
SECONDS_RUN=${FLEET_SECONDS:-$([[ -n $QUICK ]] && echo 60 || echo 300)}
FAIL_SITES=${FLEET_FAIL_SITES:-$([[ -n $QUICK ]] && echo 500 || echo 2000)}
FAIL_SECONDS=${FLEET_FAIL_SECONDS:-$([[ -n $QUICK ]] && echo 75 || echo 180)}
OUT=$ROOT/hil/results
DATA=$OUT/bench-data
mkdir -p "$DATA"
scripts/ensure-debian-packages.sh mosquitto mosquitto-clients postgresql libmosquitto-dev
SWIFT=${SWIFT:-$(command -v swift || echo /opt/swift/usr/bin/swift)}
if [[ -z ${FLEET_SKIP_BUILD:-} ]]; then
  for product in bessd bess-hil bess-aggregator; do "$SWIFT" build -c release --product "$product" >/dev/null; done
fi
BIN=$ROOT/.build/release
WORK=$(mktemp -d /tmp/bess-fleet-bench.XXXXXX)
chmod 755 "$WORK"
# The gateways' spools: in memory, so that thousands of them do not measure this disk's fsync rate.
SPOOLS=$(mktemp -d /dev/shm/bess-fleet-spools.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK" "$SPOOLS"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing on port $1" >&2; return 1; }
# A socket per gateway at the broker, a socket and spool files per gateway in the load generator.
ulimit -n "$(ulimit -Hn)"

PG_PORT=$(port)
MQ_PORT=$(port)
HTTP_A=$(port)
HTTP_B=$(port)
DB="postgres://bess@127.0.0.1:$PG_PORT/postgres"
PSQL=(psql -X -q -t -A -h 127.0.0.1 -p "$PG_PORT" -U bess postgres)

start_postgres() { scripts/test-server.sh postgres "$WORK/pg" "$PG_PORT" >> "$WORK/postgres.log" 2>&1 & PG_PID=$!; PIDS+=($PG_PID); wait_port "$PG_PORT"; }
cat > "$WORK/mosquitto.conf" <<EOF
listener $MQ_PORT 127.0.0.1
allow_anonymous true
persistence true
persistence_location $WORK/mosquitto/
autosave_interval 60
max_queued_messages 1000000
max_inflight_messages 20
EOF
start_broker() { scripts/test-server.sh mosquitto "$WORK/mosquitto.conf" "$WORK/mosquitto/" >> "$WORK/mosquitto.log" 2>&1 & MQ_PID=$!; PIDS+=($MQ_PID); wait_port "$MQ_PORT"; }
start_aggregator() {  # NAME HTTP_PORT
  "$BIN/bess-aggregator" --listen "127.0.0.1:$2" --database "$DB" --mqtt "mqtt://127.0.0.1:$MQ_PORT" --instance "$1" \
    >> "$WORK/aggregator-$1.log" 2>&1 &
  eval "AGG_$1=$!"
  PIDS+=($!)
  wait_port "$2"
}
metric() { { curl -s -m 60 "http://127.0.0.1:$1/metrics" || true; } | awk -v n="$2" '$1 == n {print $2}'; }
# Always a number: a process that is gone (or exits while read) counts 0.
ticks() { local v; v=$(awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null); echo "${v:-0}"; }
rss_kb() { local v; v=$(awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null); echo "${v:-0}"; }
# PostgreSQL is a postmaster and its children: ticks and RSS summed.
pg_ticks() { local t=0; for p in $(pgrep -f "postgres" -u postgres); do t=$((t + $(ticks "$p"))); done; echo $t; }
pg_rss() { local t=0; for p in $(pgrep -u postgres); do t=$((t + $(rss_kb "$p"))); done; echo $t; }

start_postgres
start_broker
start_aggregator a "$HTTP_A"
start_aggregator b "$HTTP_B"
HZ=$(getconf CLK_TCK)

# 1. Sustained ingest, with the command-push row measured under that load.
echo "fleet: $SITES sites × 1 batch/s for $SECONDS_RUN s"
# A process holds at most $(ulimit -n) descriptors, and a gateway needs six (its spool's three
# files, its socket and libmosquitto's wake-up socket pair): processes of at most 3,000 gateways.
# Each gateway writes its record at its own phase of the second, as gateways that started at
# different times do; FLEET_ALIGNED=1 puts them all at the same instant (the worst burst).
ALIGNED=(); [[ -n ${FLEET_ALIGNED:-} ]] && ALIGNED=(--aligned)
fleet() {  # NAME SITES SECONDS PREFIX RAMP DRAIN → FLEET_PIDS
  local per=3000 first=0 k=0
  FLEET_PIDS=()
  while (( first < $2 )); do
    local n=$(( $2 - first < per ? $2 - first : per ))
    "$BIN/bess-hil" fleet --sites "$n" --first "$first" --broker "mqtt://127.0.0.1:$MQ_PORT" --duration "$3" --prefix "$4" \
      --state "$SPOOLS/fleet-$1" --spool-sync-s 1 --threads 2 --ramp-s "$5" --drain-s "$6" --report "$WORK/$1-$k.json" \
      "${ALIGNED[@]}" > "$WORK/$1-$k.out" 2> "$WORK/$1-$k.err" &
    FLEET_PIDS+=($!)
    PIDS+=($!)
    first=$(( first + n )); k=$(( k + 1 ))
  done
}
# The sum of a field over a run's fleet reports.
fleet_sum() { python3 -c "import glob, json; print(sum(json.load(open(f))['$2'] for f in glob.glob('$WORK/$1-*.json')))"; }
fleet_ticks() { local t=0; for p in "${FLEET_PIDS[@]}"; do t=$((t + $(ticks "$p"))); done; echo $t; }
fleet_rss() { local t=0; for p in "${FLEET_PIDS[@]}"; do t=$((t + $(rss_kb "$p"))); done; echo $t; }
fleet_running() { for p in "${FLEET_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
fleet sustained "$SITES" "$SECONDS_RUN" LOAD 30 10
# Messages in the broker's store (queued for the aggregators, plus the retained ones), as the broker
# reports it every 10 s: where a backlog builds and how long it lasts.
mosquitto_sub -h 127.0.0.1 -p "$MQ_PORT" -t '$SYS/broker/store/messages/count' -F '%U %p' > "$DATA/fleet-broker-store.txt" 2>/dev/null &
STORE_PID=$!
PIDS+=($STORE_PID)
sleep 45  # the ramp: every site connected, the first backlog delivered
declare -A T0 R_MAX
for name in broker a b fleet; do :; done
T0[broker]=$(ticks "$MQ_PID"); T0[a]=$(ticks "$AGG_a"); T0[b]=$(ticks "$AGG_b"); T0[pg]=$(pg_ticks); T0[fleet]=$(fleet_ticks)
REC_A0=$(metric "$HTTP_A" bess_aggregator_mqtt_records_total); REC_B0=$(metric "$HTTP_B" bess_aggregator_mqtt_records_total)
W0=$(date +%s.%N)
STEADY_FROM=$(date +%s)
for k in broker a b pg fleet; do R_MAX[$k]=0; done
sample_rss() {
  local r
  r=$(rss_kb "$MQ_PID"); (( r > R_MAX[broker] )) && R_MAX[broker]=$r
  r=$(rss_kb "$AGG_a"); (( r > R_MAX[a] )) && R_MAX[a]=$r
  r=$(rss_kb "$AGG_b"); (( r > R_MAX[b] )) && R_MAX[b]=$r
  r=$(pg_rss); (( r > R_MAX[pg] )) && R_MAX[pg]=$r
  r=$(fleet_rss); (( r > R_MAX[fleet] )) && R_MAX[fleet]=$r
  return 0
}
PUSH_AT=$(( SECONDS_RUN / 2 - 45 ))
(( PUSH_AT < 5 )) && PUSH_AT=5
for _ in $(seq 1 "$PUSH_AT"); do sample_rss; sleep 1; done
# The command-push row runs beside the load, while the sampling goes on.
"$BIN/bess-hil" bench command-push --commands "$([[ -n $QUICK ]] && echo 30 || echo 100)" --broker "mqtt://127.0.0.1:$MQ_PORT" \
  --aggregator "http://127.0.0.1:$HTTP_A" --csv "$DATA/fleet-command-push.csv" > "$WORK/push.out" 2>&1 &
PUSH_PID=$!
PIDS+=($PUSH_PID)
while fleet_running && (( $(date +%s) < STEADY_FROM + SECONDS_RUN - 60 )); do sample_rss; sleep 1; done
W1=$(date +%s.%N)
T1_broker=$(ticks "$MQ_PID"); T1_a=$(ticks "$AGG_a"); T1_b=$(ticks "$AGG_b"); T1_pg=$(pg_ticks); T1_fleet=$(fleet_ticks)
REC_A1=$(metric "$HTTP_A" bess_aggregator_mqtt_records_total); REC_B1=$(metric "$HTTP_B" bess_aggregator_mqtt_records_total)
STEADY_TO=$(date +%s)
for p in "${FLEET_PIDS[@]}"; do wait "$p" || true; done
wait "$PUSH_PID" || true
share() { python3 -c "print(f'{100 * ($2 - $1) / $HZ / ($W1 - $W0):.1f}')"; }
rate() { python3 -c "print(f'{($2 - $1) / ($W1 - $W0):.0f}')"; }
LAT=$("${PSQL[@]}" -c "SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY stored_at - time))::numeric * 1000, 1) || ' ' ||
        round((percentile_cont(0.99) WITHIN GROUP (ORDER BY stored_at - time))::numeric * 1000, 1) || ' ' ||
        round(max(stored_at - time)::numeric * 1000, 1) || ' ' || count(*)
      FROM records WHERE site LIKE 'LOAD-%' AND time BETWEEN $STEADY_FROM AND $STEADY_TO")
read -r LAT_P50 LAT_P99 LAT_MAX LAT_N <<< "$LAT"
kill "$STORE_PID" 2>/dev/null || true
# What the aggregators said in the sustained run (lost connections, failed stores), if anything.
cat "$WORK"/aggregator-*.log > "$DATA/fleet-aggregators.log" 2>/dev/null || true
# Per second of record time in the steady window: records, p50 and max of record → commit.
"${PSQL[@]}" -c "COPY (SELECT floor(time)::bigint - $STEADY_FROM AS second, count(*) AS records,
        round((percentile_cont(0.5) WITHIN GROUP (ORDER BY stored_at - time))::numeric * 1000, 1) AS p50_ms,
        round(max(stored_at - time)::numeric * 1000, 1) AS max_ms
      FROM records WHERE site LIKE 'LOAD-%' AND time BETWEEN $STEADY_FROM AND $STEADY_TO GROUP BY 1 ORDER BY 1)
      TO STDOUT WITH CSV HEADER" > "$DATA/fleet-latency.csv"
STORED=$("${PSQL[@]}" -c "SELECT count(*) FROM records WHERE site LIKE 'LOAD-%'")
MADE=$(fleet_sum sustained records_made)
PUSH=$(grep SUMMARY "$WORK/push.out" || echo "SUMMARY command_push_to_setpoint n=0 misses=0 p50_ms=nan p99_ms=nan max_ms=nan")
cat "$WORK"/sustained-*.err > "$DATA/fleet-sustained.log"
# The backlog the sustained run left at the broker drains before the failures run starts (so that
# run's count is its own): how long it takes is a figure too.
S_ACKED=$(fleet_sum sustained records_acknowledged)
DRAIN_FROM=$(date +%s)
DRAIN_S="over 900"
for _ in $(seq 1 900); do
  if (( $("${PSQL[@]}" -c "SELECT coalesce(sum(records), 0) FROM site_stats WHERE site LIKE 'LOAD-%'") >= S_ACKED )); then
    DRAIN_S=$(( $(date +%s) - DRAIN_FROM )); break
  fi
  sleep 1
done
STORED=$("${PSQL[@]}" -c "SELECT count(*) FROM records WHERE site LIKE 'LOAD-%'")

# 2. Failures: one aggregator SIGKILLed (restarted with its name 10 s later), the broker restarted,
#    PostgreSQL restarted; every record must be stored exactly once.
echo "fleet: $FAIL_SITES sites for $FAIL_SECONDS s with failures"
fleet failures "$FAIL_SITES" "$FAIL_SECONDS" FAIL 10 120
STEP=$(( FAIL_SECONDS / 5 ))
sleep "$STEP"; kill -9 "$AGG_b"; echo "  aggregator b SIGKILLed"; sleep 10; start_aggregator b "$HTTP_B"
sleep "$STEP"; kill "$MQ_PID"; wait "$MQ_PID" 2>/dev/null || true; echo "  broker stopped"; start_broker; echo "  broker started"
sleep "$STEP"
kill -INT "$PG_PID"; wait "$PG_PID" 2>/dev/null || true; echo "  postgresql stopped"; sleep 3; start_postgres; echo "  postgresql started"
for p in "${FLEET_PIDS[@]}"; do wait "$p" || true; done
cat "$WORK"/failures-*.err > "$DATA/fleet-failures.log"
F_MADE=$(fleet_sum failures records_made)
F_ACKED=$(fleet_sum failures records_acknowledged)
# Wait (up to 10 minutes) until the aggregators have stored everything the broker acknowledged.
for _ in $(seq 1 600); do
  F_STORED=$("${PSQL[@]}" -c "SELECT count(*) FROM records WHERE site LIKE 'FAIL-%'")
  (( F_STORED >= F_ACKED )) && break
  sleep 1
done
F_GAPS=$("${PSQL[@]}" -c "SELECT count(*) FROM (SELECT site, count(*) n, min(seq) lo, max(seq) hi FROM records WHERE site LIKE 'FAIL-%' GROUP BY site) s WHERE lo <> 1 OR n <> hi - lo + 1")
F_DISTINCT=$("${PSQL[@]}" -c "SELECT count(DISTINCT (site, seq)) FROM records WHERE site LIKE 'FAIL-%'")
F_DUPS_SEEN=$("${PSQL[@]}" -c "SELECT coalesce((SELECT value FROM counters WHERE name = 'duplicates'), 0)")

cat > "$OUT/fleet.md" <<EOF
# Fleet on one machine

\`make bench-fleet\` (also run by \`make bench\`), $(date -u +%Y-%m-%d), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo).
Everything on this machine: Mosquitto $(mosquitto -h 2>/dev/null | awk 'NR==1 {print $3}'), two bess-aggregator instances
(release build, MQTT shared subscription, one PostgreSQL $(postgres --version 2>/dev/null | awk '{print $3}' || "$(ls /usr/lib/postgresql)") store),
and \`bess-hil fleet\`: every simulated gateway a real MQTT 5 connection with its own client id, persistent
session and durable spool, publishing through bessd's uplink code (\`MQTTUplinkSender\`). Figures are
from real processes on the wire, not a simulated shortcut; the load generator shares the two cores.
One difference from the field: the gateways' spools live in memory (tmpfs under /dev/shm). Each
makes bessd's calls as on a gateway (a record written at once, fsync every second, the state file
written in place and fdatasynced on every PUBACK), but ten thousand spools on this one disk would
measure the disk's fsync rate (about 3,000/s here), not the fleet; each gateway has its own flash.
$([[ -n ${FLEET_ALIGNED:-} ]] && echo "Every gateway writes its record at the same instant of each second (FLEET_ALIGNED=1: the worst burst)." || echo "Each gateway writes its record at its own phase of the second, spread evenly, as gateways that started at different times do (FLEET_ALIGNED=1 for all at once).")

## Sustained ingest: $SITES sites × 1 batch/s, $SECONDS_RUN s (steady window $(python3 -c "print(round($W1 - $W0))") s after a 45 s ramp)

| what | figure |
|---|---|
| records made / acknowledged by the broker / stored at the end | $MADE / $S_ACKED / $STORED |
| the backlog left at the broker, drained into PostgreSQL after the run in | $DRAIN_S s |
| record time → committed in PostgreSQL, p50 / p99 / max (target p99 ≤ 1 s) | $LAT_P50 / $LAT_P99 / $LAT_MAX ms over $LAT_N records |
| records/s stored, aggregator a / b | $(rate "$REC_A0" "$REC_A1") / $(rate "$REC_B0" "$REC_B1") |
| CPU, % of one core: broker / aggregator a / aggregator b / PostgreSQL / load generator | $(share "${T0[broker]}" "$T1_broker") / $(share "${T0[a]}" "$T1_a") / $(share "${T0[b]}" "$T1_b") / $(share "${T0[pg]}" "$T1_pg") / $(share "${T0[fleet]}" "$T1_fleet") |
| peak RSS, MB: broker / aggregator a / aggregator b / PostgreSQL (all backends) / load generator | $(( R_MAX[broker] / 1024 )) / $(( R_MAX[a] / 1024 )) / $(( R_MAX[b] / 1024 )) / $(( R_MAX[pg] / 1024 )) / $(( R_MAX[fleet] / 1024 )) |
| command queued at the aggregator → new setpoint on the inverter's wire, bessd at 100 ms, under this load (target ≤ 150 ms) | $(echo "$PUSH" | sed -E 's/.*n=([0-9]+) misses=([0-9]+) p50_ms=([^ ]+) p99_ms=([^ ]+) max_ms=([^ ]+).*/p50 \3 ms, p99 \4 ms, max \5 ms (n = \1, missed \2)/') |

## Failures: $FAIL_SITES sites, $FAIL_SECONDS s; aggregator b SIGKILLed at ${STEP} s (back 10 s later), the broker restarted at $((2 * STEP + 10)) s, PostgreSQL at $((3 * STEP + 10)) s

| what | figure |
|---|---|
| records made by the gateways | $F_MADE |
| acknowledged by the broker (PUBACK; the rest are still in the gateways' spools) | $F_ACKED |
| stored in PostgreSQL | $F_STORED |
| lost (acknowledged, not stored) | $(( F_ACKED > F_STORED ? F_ACKED - F_STORED : 0 )) |
| stored twice (rows − distinct (site, seq)) | $(( F_STORED - F_DISTINCT )) |
| sites with a gap or not starting at seq 1 | $F_GAPS |
| deliveries the database refused as already stored (redeliveries after the kill and restarts) | $F_DUPS_SEEN |
EOF
cat "$OUT/fleet.md"
