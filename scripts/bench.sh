#!/usr/bin/env bash
# make bench: measures bessd against the targets and against what this machine allows, and writes
# hil/results/benchmarks.md (the table), hil/results/*.png (plots) and hil/results/bench-data/ (raw).
#   scripts/bench.sh            everything (about 50 minutes on 2 cores, plus the release build)
#   BENCH_QUICK=1 scripts/bench.sh   shorter runs (fewer samples; for trying the script)
#   BENCH_ONLY="jitter resources" scripts/bench.sh   retakes only those sections (jitter, step,
#     stepwire, voltwire, site, scada, iec104, pmu, pmuwire, sep2, alarm, resources, spool, allocations, plot) into the existing results:
#     their keys are replaced, every other row keeps its run, and the table names the retaken rows
# Numbers live here, never in timed tests. Each measurement is independent: one that cannot run
# (no real-time priority, no VM for CAN) says so in the table instead of failing the others.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=hil/results
DATA=$OUT/bench-data
mkdir -p "$DATA"
QUICK=${BENCH_QUICK:-}
ONLY=${BENCH_ONLY:-}
# True when this run takes section $1 (every section unless BENCH_ONLY names some).
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
BIN=.build/release
scripts/ensure-debian-packages.sh pkg-config libmodbus-dev libsocketcan-dev libsystemd-dev rt-tests gnuplot-nox curl procps
echo "bench: release build"
swift build -c release --product bessd && swift build -c release --product bess-hil \
  && swift build -c release --product bess-aggregator && swift build -c release --product bessctl || exit 1
WORK=$(mktemp -d /tmp/bessd-bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
RESULTS=$DATA/results.env
put() { echo "$1=$2" >> "$RESULTS"; }
if [ -z "$ONLY" ] || [ ! -s "$RESULTS" ]; then
  : > "$RESULTS"
else
  # A retake: the keys written below replace the earlier run's (the report reads the last value).
  earlier=$(sed -n 's/^retaken="\(.*\)"$/\1/p' "$RESULTS" | tail -1)
  put retaken "\"${earlier:+$earlier; }$ONLY at $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)\""
fi
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [ -z "$ONLY" ]; then
  put machine "\"$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo), $(uname -r), $(swift --version 2>/dev/null | head -1 | sed 's/ (.*//')\""
  put date "\"$(date -u +%Y-%m-%dT%H:%MZ)\""
  put commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
fi

# A simulated site of N units (the cycle's work without buses), or the rig form (mode hil: every
# inverter real, on Modbus TCP to bess-hil plant on loopback, each on its own port; BMS simulated).
site() {  # NAME UNITS PERIOD_MS [rig-base-port] [rt|nort]
  local name=$1 units=$2 period=$3 rig=${4:-} rt=${5:-rt}
  {
    echo "mode: $([ -n "$rig" ] && echo hil || echo simulation)"
    echo "period_ms: $period"
    echo "control_socket: $WORK/$name.sock"
    echo "state_directory: $WORK/$name"
    [ "$rt" = rt ] && echo "realtime: {priority: 60}"
    echo "grid_integration: {frequency_source: $([ -n "$rig" ] && echo inverter || echo simulated), droop_settings: {deadband_hz: [49.9, 50.05], droop_percent: 5.0}}"
    echo "simulation: {frequency_profile: walk, amplitude_hz: 0.1, seed: 7}"
    echo "bess_units:"
    for i in $(seq 1 "$units"); do
      if [ -n "$rig" ]; then
        echo "  - {id: U$i, campus_id: BENCH, capacity_kwh: 250, max_power_kw: 100, modbus: {host: 127.0.0.1, port: $((rig + i)), unit_id: 1, timeout_ms: 200}, inverter: {protocol: sunspec}, bms: {simulated: true}}"
      else
        echo "  - {id: U$i, campus_id: BENCH, capacity_kwh: 250, max_power_kw: 100}"
      fi
    done
  } > "$WORK/$name.yaml"
}

# The IEC 104 outstation on loopback for four controlling stations, each from its own loopback
# address and so its own redundancy group (all four started; monitoring only).
iec104_block() {  # PORT
  echo "iec104: {listen: 127.0.0.1:$1, common_address: 7, groups: ["
  for i in 1 2 3 4; do echo "  {name: cc$i, allow_from: [127.0.0.$i], commands: []},"; done
  echo "]}"
}

# The step and site latency runs (sections step, site and scada).
STEPS=$([ -n "$QUICK" ] && echo 40 || echo 300)
step() {  # KEY PERIOD_MS [--no-realtime]
  local key=$1 period=$2; shift 2
  $BIN/bess-hil bench step-latency --steps "$STEPS" --period-ms "$period" --units 8 "$@" --bessd $BIN/bessd \
    --csv "$DATA/$key.csv" | tee "$WORK/$key.txt"
  sed -n "s/^SUMMARY step_to_setpoint n=\([0-9]*\) misses=\([0-9]*\) p50_ms=\([0-9.]*\) p99_ms=\([0-9.]*\) max_ms=\([0-9.]*\)/${key}_n=\1\n${key}_misses=\2\n${key}_p50=\3\n${key}_p99=\4\n${key}_max=\5/p" \
    "$WORK/$key.txt" >> "$RESULTS"
}
SITE_STEPS=$([ -n "$QUICK" ] && echo 20 || echo 100)
site_latency() {  # KEY SUBCOMMAND COUNT-OPTION SUMMARY-NAME
  local key=$1
  $BIN/bess-hil bench "$2" "--$3" "$SITE_STEPS" --period-ms 100 --units 8 --bessd $BIN/bessd \
    --csv "$DATA/$key.csv" | tee "$WORK/$key.txt"
  sed -n "s/^SUMMARY $4 n=\([0-9]*\) misses=\([0-9]*\) p50_ms=\([0-9.]*\) p99_ms=\([0-9.]*\) max_ms=\([0-9.]*\)/${key}_n=\1\n${key}_misses=\2\n${key}_p50=\3\n${key}_p99=\4\n${key}_max=\5/p" \
    "$WORK/$key.txt" >> "$RESULTS"
}

# 1. The cycle with real workers on the wire: 8 units, each inverter on its own Modbus TCP port of
#    bess-hil plant, a reader asking for status twice a second, cyclictest beside it at the same period
#    (SCHED_FIFO 60 beside a real-time bessd, SCHED_OTHER beside one without). Wake-up lateness,
#    overruns, late readings (cycles that ran on a reading taken for an earlier cycle) and bessd's CPU
#    share, all from the same run.
# CPU time of every thread of a process, in ns: the scheduler's own run time (schedstat), not
# /proc/PID/stat's clock ticks, which are 10 ms apart (0.05 % of a core in a 20 s window, 5 % of a
# 1 % figure). A thread that exits within a window takes its time with it; bessd's and the plant's
# threads live as long as the run.
cpu_ns() {
  if [ -r "/proc/$1/schedstat" ]; then cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}'
  else awk -v hz="$(getconf CLK_TCK)" '{printf "%.0f", ($14 + $15) * 1e9 / hz}' "/proc/$1/stat"; fi
}
NS=1000000000
jitter() {  # PERIOD_MS SECONDS rt|nort [iec: the IEC 104 outstation on, four stations interrogating]
  local period=$1 seconds=$2 rt=$3 extra=${4:-} name=jitter$1$3${4:-} base=$((20000 + RANDOM % 20000))
  local p=$period$rt$extra tag=$period-$rt$extra iecport stations=
  site "$name" 8 "$period" "$base" "$rt"
  [ "$extra" = iec ] && { iecport=$(port); iec104_block "$iecport" >> "$WORK/$name.yaml"; }
  local loops=$((seconds * 1000 / period))
  $BIN/bess-hil plant --config "$WORK/$name.yaml" > "$WORK/$name-plant.log" 2>&1 & local plant=$!; PIDS+=("$plant")
  sleep 1
  $BIN/bessd run --config "$WORK/$name.yaml" --status-every 0 --log stdout > "$WORK/$name.log" 2>&1 &
  local bessd=$!; PIDS+=("$bessd")
  for _ in $(seq 100); do $BIN/bessctl status --socket "$WORK/$name.sock" > /dev/null 2>&1 && break; sleep 0.1; done
  sleep 3
  ( while kill -0 $bessd 2>/dev/null; do $BIN/bessctl status --json --socket "$WORK/$name.sock" > /dev/null 2>&1; sleep 0.5; done ) &
  local reader=$!; PIDS+=("$reader")
  if [ "$extra" = iec ]; then
    python3 hil/peers/iec104_bench.py interrogate "$iecport" 7 4 "$((seconds + 2))" > "$WORK/$name-stations.txt" &
    stations=$!; PIDS+=("$stations"); sleep 1
  fi
  $BIN/bessctl status --json --socket "$WORK/$name.sock" > "$DATA/bessd-status-$tag-before.json"
  local t0 s0 t1 s1 q0 q1; t0=$(cpu_ns $bessd); q0=$(cpu_ns $plant); s0=$(date +%s.%N)
  if [ "$rt" = rt ]; then
    cyclictest -m -q -t 1 -p 60 --policy=fifo -i $((period * 1000)) -l "$loops" -h 20000 > "$DATA/cyclictest-$tag.txt" 2>&1
  else
    cyclictest -m -q -t 1 --policy=other -i $((period * 1000)) -l "$loops" -h 20000 > "$DATA/cyclictest-$tag.txt" 2>&1
  fi
  t1=$(cpu_ns $bessd); q1=$(cpu_ns $plant); s1=$(date +%s.%N)
  # The plant's own share in the same window: it does the same work in every run, so it shows how
  # busy the host was (bessd's figure moves with it: 2.7–4.2 % for one build on this VM).
  put "plant${p}_cpu" "$(python3 -c "print(f'{($q1 - $q0) / $NS / ($s1 - $s0) * 100:.3f}')")"
  $BIN/bessctl status --json --socket "$WORK/$name.sock" > "$DATA/bessd-status-$tag.json"
  # What the reader's status requests cost bessd's service thread (its own CPU time per answer).
  # (bessctl has no metrics command: the control socket's metrics verb, read as bessctl reads answers.)
  python3 - "$WORK/$name.sock" > "$DATA/bessd-metrics-$tag.txt" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'{"verb":"metrics"}\n')
answer = b""
while not answer.endswith(b"\n"):
    chunk = s.recv(65536)
    if not chunk: break
    answer += chunk
reply = json.loads(answer)
print(reply.get("text") or reply.get("metrics") or json.dumps(reply))
PY
  python3 - "$DATA/bessd-metrics-$tag.txt" "$p" >> "$RESULTS" <<'PY'
import re, sys
v = {}
for line in open(sys.argv[1]):
    m = re.match(r'(bessd_control_answers?_\w+)\{verb="status"\} ([0-9.eE+-]+)', line)
    if m: v[m.group(1)] = float(m.group(2))
n = v.get("bessd_control_answers_total", 0)
if n:
    print(f"status{sys.argv[2]}_n={n:.0f}")
    print(f"status{sys.argv[2]}_mean_us={v.get('bessd_control_answer_cpu_seconds_total', 0) / n * 1e6:.1f}")
    print(f"status{sys.argv[2]}_max_us={v.get('bessd_control_answer_cpu_seconds_max', 0) * 1e6:.1f}")
PY
  if [ -n "$stations" ]; then
    wait "$stations"; cp "$WORK/$name-stations.txt" "$DATA/iec104-stations.txt"
    sed -n "s/^SUMMARY iec104_interrogations stations=\([0-9]*\) rounds=\([0-9]*\) failures=\([0-9]*\) objects=\([0-9]*\) p50_ms=\([0-9.na]*\) p99_ms=\([0-9.na]*\) max_ms=\([0-9.na]*\)/gi_stations=\1\ngi_rounds=\2\ngi_failures=\3\ngi_objects=\4\ngi_p50=\5\ngi_p99=\6\ngi_max=\7/p" \
      "$WORK/$name-stations.txt" >> "$RESULTS"
  fi
  kill -TERM $bessd; wait $bessd; kill $reader 2>/dev/null; kill -TERM $plant; wait $plant 2>/dev/null
  python3 - "$DATA/cyclictest-$tag.txt" "$DATA/bessd-status-$tag-before.json" "$DATA/bessd-status-$tag.json" \
    "$p" "$(python3 -c "print(f'{($t1 - $t0) / $NS / ($s1 - $s0) * 100:.3f}')")" >> "$RESULTS" <<'PY'
import json, sys
hist, total = [], 0
for line in open(sys.argv[1]):
    if line.startswith('#') or not line.strip(): continue
    parts = line.split()
    us, n = int(parts[0]), int(parts[1])
    hist.append((us, n)); total += n
def q(f):
    seen = 0
    for us, n in hist:
        seen += n
        if seen >= total * f: return us
    return hist[-1][0] if hist else float('nan')
mx = max((us for us, n in hist if n > 0), default=float('nan'))
before = json.load(open(sys.argv[2]))["cycle"]
cyc = json.load(open(sys.argv[3]))["cycle"]
p = sys.argv[4]
print(f"ct{p}_p50={q(0.5)}\nct{p}_p99={q(0.99)}\nct{p}_max={mx}\nct{p}_n={total}")
print(f"bessd{p}_p50={cyc['jitter_p50_us']}\nbessd{p}_p99={cyc['jitter_p99_us']}\nbessd{p}_max={cyc['jitter_max_us']}")
print(f"bessd{p}_n={cyc['cycles'] - before['cycles']}\nbessd{p}_overruns={cyc['overruns'] - before['overruns']}")
print(f"bessd{p}_late={cyc['late_readings'] - before['late_readings']}\nbessd{p}_rt={str(cyc['realtime']).lower()}")
print(f"bessd{p}_cpu={sys.argv[5]}")
PY
}
if want jitter; then
echo "bench: 8 units on Modbus TCP at 100 ms and 10 ms, with and without SCHED_FIFO 60, cyclictest beside"
if [ -n "$QUICK" ]; then
  jitter 100 30 rt; jitter 100 30 nort; jitter 10 20 rt; jitter 10 20 nort
else
  # 10,000 cycles at each period with real-time priority (the lost-period target), 3,000 without.
  # BENCH_LONG_S shortens the long run (e.g. 300 for 3,000 cycles) when an hour is not at hand.
  jitter 100 "${BENCH_LONG_S:-1000}" rt; jitter 100 300 nort; jitter 10 100 rt; jitter 10 100 nort
fi
fi

# 2. Frequency step at the plant's registers → new setpoint on the wire (response time 0): 8 units,
#    each on its own port, the first one timed; at 10 ms with and without real-time priority, at 100 ms with.
if want step; then
echo "bench: frequency step → setpoint on the wire"
step step100rt 100
step step10rt 10
step step10nort 10 --no-realtime
cp "$DATA/step100rt.csv" "$DATA/step-latency.csv" 2>/dev/null || true
fi

# 2a. The same step against an independent peer: 8 SunSpec inverters served by pymodbus, each on its
#     own port, bessd (SCHED_FIFO 60) and the naive pymodbus loop a user would write back to back, at
#     10 ms and 100 ms; the peer stamps the step and the first write reflecting it
#     (scripts/step-wire-bench.sh, which also runs alone and on two binaries interleaved).
if want stepwire; then
echo "bench: frequency step → setpoint on the wire against pymodbus, bessd beside the naive loop"
RESULTS="$ROOT/$RESULTS" DATA="$ROOT/$DATA" BESSD="$ROOT/$BIN/bessd" PERIODS="10 100" STEPS="$STEPS" scripts/step-wire-bench.sh
fi

# 2a'. A voltage step at the same peer's 701 LNV → each unit's 704 VarSet under volt-var (issue 59).
if want voltwire; then
echo "bench: voltage step → var setpoint on the wire against pymodbus (volt-var, OLRT 1 s)"
RESULTS="$ROOT/$RESULTS" DATA="$ROOT/$DATA" BESSD="$ROOT/$BIN/bessd" PERIODS="10 100" STEPS="$STEPS" scripts/step-wire-bench.sh --voltage
fi

# 2b. The site: one unit's inverter faults during a frequency event → the timed unit's larger share on
#     its wire; the load steps over a 400 kW import limit at the site meter → the timed unit's new
#     setpoint. 8 units at 100 ms, SCHED_FIFO 60, each inverter (and the meter) on its own port.
if want site; then
echo "bench: site — unit trip and load step → setpoints on the wire"
site_latency trip100 trip-latency trips trip_to_others
site_latency loadstep100 load-step-latency steps load_step_to_setpoint
fi

# 2c. Plant SCADA: a WSet write on bessd's SunSpec server → the timed unit's new setpoint on its wire;
#     20 clients reading the whole map at 10 Hz for a minute (then flat out) beside 8 units on the wire.
if want scada; then
echo "bench: SCADA — write → wire, and 20 clients reading the map"
site_latency scadawrite100 scada-write-latency writes scada_write_to_setpoint
SCADA_S=$([ -n "$QUICK" ] && echo 15 || echo 60)
$BIN/bess-hil bench scada-read-load --clients 20 --rate 10 --seconds "$SCADA_S" --flat-out 10 --units 8 --bessd $BIN/bessd \
  | tee "$WORK/scadaload.txt"
python3 - "$WORK/scadaload.txt" >> "$RESULTS" <<'PY'
import sys
for line in open(sys.argv[1]):
    if line.startswith("SUMMARY scada_read_load "):
        f = dict(kv.split("=", 1) for kv in line.split()[2:])
        keys = {"clients": "clients", "rate": "rate", "seconds": "seconds", "words": "words", "maps_per_s": "maps_per_s",
                "failures": "failures", "overruns": "overruns", "lateness_p99_us": "p99", "lateness_max_us": "max",
                "status_max_ms": "status_max_ms", "flat_maps_per_s": "flat_maps_per_s", "flat_overruns": "flat_overruns"}
        for k, v in keys.items():
            print(f"scadaload_{v}={f[k]}")
        print("scadaload_flat_s=10")
PY
fi

# 2d. IEC 104 (issue 46), 8 units on Modbus TCP, SCHED_FIFO 60, against hil/peers/iec104_bench.py (a
#     raw-socket controlling station stamping next to its socket calls, CLOCK_MONOTONIC like the
#     plant): an AGC target (C_SE_NC_1 on 3001) → the timed unit's first setpoint on its wire towards
#     it; a frequency change at the plant's registers → its spontaneous M_ME_TF_1 (IOA 1004); at
#     100 ms and 10 ms. Then the jitter run at 100 ms with the outstation on and four stations
#     (four groups) sending a station interrogation every second; and c104's own receive hop.
if want iec104; then
echo "bench: IEC 104 — AGC target → wire, value → spontaneous frame, four stations interrogating"
IEC_N=$([ -n "$QUICK" ] && echo 20 || echo 100)
for period in 100 10; do
  key=iec$period
  $BIN/bess-hil bench iec104-latency --commands "$IEC_N" --changes "$IEC_N" --period-ms "$period" --units 8 --bessd $BIN/bessd \
    --csv-command "$DATA/iec104-agc-$period.csv" --csv-change "$DATA/iec104-spontaneous-$period.csv" | tee "$WORK/$key.txt"
  for pair in agc_to_setpoint:agc agc_act_con:agccon value_to_spontaneous:spont; do
    sed -n "s/^SUMMARY ${pair%%:*} n=\([0-9]*\) misses=\([0-9]*\) p50_ms=\([0-9.na]*\) p99_ms=\([0-9.na]*\) max_ms=\([0-9.na]*\)/${key}${pair#*:}_n=\1\n${key}${pair#*:}_misses=\2\n${key}${pair#*:}_p50=\3\n${key}${pair#*:}_p99=\4\n${key}${pair#*:}_max=\5/p" \
      "$WORK/$key.txt" >> "$RESULTS"
  done
done
jitter 100 "$([ -n "$QUICK" ] && echo 30 || echo 300)" rt iec
# c104's own hop, for anyone who times with it: a raw-socket station (127.0.0.2) and a c104 one
# (127.0.0.1) in two groups of one simulated site (frequency walking) receive the same spontaneous
# frames; c104's callback stamp less the raw recv stamp, paired by ASDU.
HOP_S=$([ -n "$QUICK" ] && echo 20 || echo 60)
site hop 2 100 "" rt
hopport=$(port)
echo "iec104: {listen: 127.0.0.1:$hopport, common_address: 7, groups: [{name: c104, allow_from: [127.0.0.1], commands: []}, {name: raw, allow_from: [127.0.0.2], commands: []}]}" >> "$WORK/hop.yaml"
$BIN/bessd run --config "$WORK/hop.yaml" --status-every 0 --log stdout > "$WORK/hop.log" 2>&1 & hopd=$!; PIDS+=("$hopd")
for _ in $(seq 100); do $BIN/bessctl status --socket "$WORK/hop.sock" > /dev/null 2>&1 && break; sleep 0.1; done
(sleep $((HOP_S + 2)) | python3 hil/peers/iec104_bench.py listen "$hopport" 7 1004 "$WORK/hop-raw.jsonl" "$WORK/hop.ready" 127.0.0.2) &
hopraw=$!; PIDS+=("$hopraw")
python3 hil/peers/iec104_bench.py c104-listen "$hopport" 7 1004 "$WORK/hop-c104.jsonl" "$HOP_S"
wait "$hopraw"; kill -TERM $hopd; wait $hopd
python3 hil/peers/iec104_bench.py hop "$WORK/hop-raw.jsonl" "$WORK/hop-c104.jsonl" | tee "$DATA/iec104-c104-hop.txt" \
  | sed -n 's/^SUMMARY c104_hop n=\([0-9]*\) p50_ms=\([0-9.na]*\) p99_ms=\([0-9.na]*\) max_ms=\([0-9.na]*\)/c104hop_n=\1\nc104hop_p50=\2\nc104hop_p99=\3\nc104hop_max=\4/p' >> "$RESULTS"
fi

# 2e. PMU (issue 47): the C37.118.2 decoder's cost per frame, in process (bess-hil bench pmu-decode):
#     a whole data frame (CRC, header, body) of 1 PMU in integer form and of 4 PMUs in float form
#     against its CFG-2, and a CFG-2 and a CFG-3 of 4 PMUs; median of 10 rounds over 64 distinct frames.
if want pmu; then
echo "bench: PMU — C37.118.2 decode cost per frame"
$BIN/bess-hil bench pmu-decode --frames "$([ -n "$QUICK" ] && echo 20000 || echo 200000)" | tee "$DATA/pmu-decode.txt" \
  | sed -n 's/^SUMMARY pmu_decode int1_ns=\([0-9.na]*\) float4_ns=\([0-9.na]*\) cfg2_ns=\([0-9.na]*\) cfg3_ns=\([0-9.na]*\) .*/pmudec_int1=\1\npmudec_float4=\2\npmudec_cfg2=\3\npmudec_cfg3=\4/p' >> "$RESULTS"
fi

# 2f. PMU frequency step → setpoint on the wire (issue 47): bess-hil as the PMU (C37.118.2 over TCP,
#     50 frames/s on absolute deadlines, integer FREQ, CFG-3 when asked), bessd with frequency_source:
#     pmu (SCHED_FIFO 60), 8 units on Modbus TCP at 100 ms; the step's frame is stamped just before its
#     send, the timed unit's first write reflecting it ends the sample. Target: p99 ≤ period + 5 ms.
if want pmuwire; then
echo "bench: PMU frequency step → setpoint on the wire"
$BIN/bess-hil bench pmu-wire --steps "$([ -n "$QUICK" ] && echo 30 || echo 200)" --units 8 --period-ms 100 --bessd $BIN/bessd \
  --csv "$DATA/pmu-wire-100.csv" | tee "$WORK/pmuwire.txt"
sed -n 's/^SUMMARY pmu_step_to_setpoint n=\([0-9]*\) misses=\([0-9]*\) p50_ms=\([0-9.na]*\) p99_ms=\([0-9.na]*\) max_ms=\([0-9.na]*\)/pmuwire_n=\1\npmuwire_misses=\2\npmuwire_p50=\3\npmuwire_p99=\4\npmuwire_max=\5/p' \
  "$WORK/pmuwire.txt" >> "$RESULTS"
sed -n 's/^pmu-wire: .* (\([0-9.]*\) frames\/s).*/pmuwire_fps=\1/p' "$WORK/pmuwire.txt" >> "$RESULTS"
fi

# 2g. IEEE 2030.5 (issue 48): hil/peers/sep2_server.py (TLS CCM8, client certificates) publishes back-to-back
#     DERControls (opModGenLimW alternating, starts on whole seconds of the server's time, no
#     randomisation) to bessd (SCHED_FIFO 60, poll 10 s), 8 units on Modbus TCP at 100 ms discharging by
#     droop; each start → the timed unit's first write towards its limit. Target: p99 ≤ period + 5 ms.
#     bessd is started 10 times (4 quick), each at a random phase of its cycle, the controls shared out among
#     them: the starts fall on whole seconds, so one bessd would meet them all at one phase of its 100 ms cycle.
#     The same run: the bessd-2030.5 thread's CPU time (/proc/<pid>/task/<tid>/stat) per poll and as a share.
if want sep2; then
echo "bench: IEEE 2030.5 control start → setpoint on the wire; the client's CPU"
SEP2_ROUNDS=$([ -n "$QUICK" ] && echo 4 || echo 10)
put sep2wire_rounds "$SEP2_ROUNDS"
$BIN/bess-hil bench sep2-wire --controls "$([ -n "$QUICK" ] && echo 20 || echo 100)" --rounds "$SEP2_ROUNDS" \
  --seconds 3 --poll-s 10 --units 8 \
  --period-ms 100 --bessd $BIN/bessd --peers hil/peers --csv "$DATA/sep2-wire-100.csv" | tee "$WORK/sep2.txt"
sed -n 's/^SUMMARY sep2_start_to_setpoint n=\([0-9]*\) misses=\([0-9]*\) p50_ms=\([0-9.na-]*\) p99_ms=\([0-9.na-]*\) max_ms=\([0-9.na-]*\)/sep2wire_n=\1\nsep2wire_misses=\2\nsep2wire_p50=\3\nsep2wire_p99=\4\nsep2wire_max=\5/p' \
  "$WORK/sep2.txt" >> "$RESULTS"
sed -n 's/^SUMMARY sep2_client_cpu seconds=\([0-9.]*\) cpu_ms=\([0-9.]*\) polls=\([0-9]*\) share_pct=\([0-9.na]*\) ms_per_poll=\([0-9.na]*\)/sep2cpu_seconds=\1\nsep2cpu_ms=\2\nsep2cpu_polls=\3\nsep2cpu_share=\4\nsep2cpu_per_poll=\5/p' \
  "$WORK/sep2.txt" >> "$RESULTS"
fi

# 3. BMS protection frame on CAN → zero on the wire: needs CAN, so inside the VM (scripts/can-tests.sh's recipe).
if want alarm; then
echo "bench: BMS alarm frame → zero on the wire (SocketCAN, in a VM)"
ALARM_TXT=$WORK/alarm.txt
if BENCH_ALARMS="$([ -n "$QUICK" ] && echo 10 || echo 60)" scripts/can-bench.sh "$ROOT/$BIN" "$ROOT/$DATA/alarm-latency.csv" > "$ALARM_TXT" 2>&1; then
  sed -n 's/^SUMMARY alarm_to_zero n=\([0-9]*\) misses=\([0-9]*\) p50_ms=\([0-9.]*\) p99_ms=\([0-9.]*\) max_ms=\([0-9.]*\)/alarm_n=\1\nalarm_misses=\2\nalarm_p50=\3\nalarm_p99=\4\nalarm_max=\5/p' "$ALARM_TXT" >> "$RESULTS"
  sed -n 's/^SUMMARY alarm_to_zero_fifo n=\([0-9]*\) misses=\([0-9]*\) p50_ms=\([0-9.]*\) p99_ms=\([0-9.]*\) max_ms=\([0-9.]*\)/alarm_fifo_n=\1\nalarm_fifo_misses=\2\nalarm_fifo_p50=\3\nalarm_fifo_p99=\4\nalarm_fifo_max=\5/p' "$ALARM_TXT" >> "$RESULTS"
  put alarm_where "\"$(sed -n 's/^CAN_BENCH_WHERE=//p' "$ALARM_TXT" | head -1)\""
  # The extra cycles of the first run (default policy).
  grep -m1 '^ALARM_CYCLES' "$ALARM_TXT" | sed -n 's/^ALARM_CYCLES quiet_10s=\([0-9-]*\) during_alarms=\([0-9-]*\) alarms=\([0-9]*\).*/alarm_quiet_cycles=\1\nalarm_extra_cycles=\2\nalarm_count=\3/p' >> "$RESULTS"
else
  tail -5 "$ALARM_TXT"
  put alarm_where "\"not measured: $(tail -1 "$ALARM_TXT" | tr -d '"')\""
fi
fi

# 4. CPU share of one core and memory with 1, 8 and 32 units: bessd against the plant over Modbus TCP.
if want resources; then
echo "bench: CPU and RSS with 1, 8 and 32 units at 100 ms"
for units in 1 8 32; do
  base=$((20000 + RANDOM % 20000))
  site "res$units" "$units" 100 "$base"
  $BIN/bess-hil plant --config "$WORK/res$units.yaml" > "$WORK/plant$units.log" 2>&1 & plant=$!; PIDS+=("$plant")
  sleep 1
  $BIN/bessd run --config "$WORK/res$units.yaml" --status-every 0 --log stdout > "$WORK/res$units.log" 2>&1 & pid=$!; PIDS+=("$pid")
  sleep "$([ -n "$QUICK" ] && echo 5 || echo 15)"
  # Three windows, each with the plant's share beside it: the host's load moves a single figure.
  windows=()
  for _ in 1 2 3; do
    t0=$(cpu_ns $pid); q0=$(cpu_ns $plant); s0=$(date +%s.%N)
    sleep "$([ -n "$QUICK" ] && echo 5 || echo 20)"
    t1=$(cpu_ns $pid); q1=$(cpu_ns $plant); s1=$(date +%s.%N)
    windows+=("$(python3 -c "d=($s1-$s0)*$NS/100; print(f'{($t1-$t0)/d:.3f}:{($q1-$q0)/d:.3f}')")")
  done
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status); hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
  $BIN/bessctl status --json --socket "$WORK/res$units.sock" > "$DATA/res$units-status.json"
  kill -TERM $pid; wait $pid; kill -TERM $plant; wait $plant
  python3 - "$units" "$rss" "$hwm" "${windows[@]}" >> "$RESULTS" <<'PY'
import statistics, sys
units, rss, hwm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bessd = [float(w.split(":")[0]) for w in sys.argv[4:]]
plant = [float(w.split(":")[1]) for w in sys.argv[4:]]
print(f"cpu{units}={statistics.median(bessd):.3f}\ncpu{units}_min={min(bessd):.3f}\ncpu{units}_max={max(bessd):.3f}")
print(f"plantcpu{units}={statistics.median(plant):.3f}\nrss{units}={rss/1024:.1f}\nhwm{units}={hwm/1024:.1f}")
PY
done
fi

# 5. Spool: append rate, and replay after an outage (a one-hour backlog of 8 units at 1 Hz:
#    telemetry each second and availability every 5 s per unit, 34,560 records) until bess-aggregator
#    has every record.
if want spool; then
echo "bench: spool append and replay"
$BIN/bess-hil spool --dir "$WORK/spool-append" --records 200000 --size 300 | tail -1 | tee "$WORK/append.txt"
put spool_append "$(sed -n 's/.*: \([0-9]*\) records\/s.*/\1/p' "$WORK/append.txt")"
BACKLOG=34560
site backlog 8 100
APORT=$(port)
echo "aggregator: {url: \"http://127.0.0.1:$APORT\", interval_s: 1, site_id: BACKLOG}" >> "$WORK/backlog.yaml"
$BIN/bess-hil spool --dir "$WORK/backlog/spool" --records $BACKLOG --size 350 --uplink-records > /dev/null
$BIN/bess-aggregator --listen 127.0.0.1:$APORT --database "$WORK/agg.sqlite" > "$WORK/agg.log" 2>&1 & agg=$!; PIDS+=("$agg")
for _ in $(seq 50); do curl -sf "127.0.0.1:$APORT/metrics" > /dev/null && break; sleep 0.1; done
start=$(date +%s.%N)
$BIN/bessd run --config "$WORK/backlog.yaml" --status-every 0 --log stdout > "$WORK/backlog.log" 2>&1 & bpid=$!; PIDS+=("$bpid")
delivered=0; elapsed=0
while python3 -c "import sys; sys.exit(0 if $elapsed < 120 else 1)"; do
  delivered=$(curl -s "127.0.0.1:$APORT/metrics" | sed -n 's/^bess_aggregator_records{site="BACKLOG"} //p'); delivered=${delivered:-0}
  elapsed=$(python3 -c "print(f'{$(date +%s.%N) - $start:.2f}')")
  [ "${delivered%.*}" -ge $BACKLOG ] && break
  sleep 0.2
done
kill -TERM $bpid; wait $bpid 2>/dev/null
put backlog_records "$BACKLOG"
put backlog_delivered "${delivered%.*}"
put backlog_seconds "$elapsed"
fi

if want allocations; then
# 6. Heap allocations per steady-state cycle: package-benchmark's malloc interposer (nested package).
echo "bench: allocations per cycle (Benchmarks/, package-benchmark with MallocInterposer)"
(cd Benchmarks && swift package --allow-writing-to-package-directory benchmark --format markdown --no-progress 2>&1) \
  | tee "$DATA/allocations.txt" | tail -40
python3 - "$DATA/allocations.txt" >> "$RESULTS" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def row(title, metric):
    """The p0…p100 cells of one row of one benchmark's table, scaled to plain numbers."""
    m = re.search(re.escape(title) + r"\n.*?\| " + re.escape(metric) + r"[^|]*\|([^\n]*)", text, re.S)
    if not m: return None, None
    unit = re.search(re.escape(metric) + r" \((\S+)\)", m.group(0))
    cells = [c.strip() for c in m.group(1).split("|") if c.strip()][:-1]
    scale = {"K": 1e3, "M": 1e6}
    values = [float(c[:-1]) * scale[c[-1]] if c[-1] in scale else float(c) for c in cells]
    return values, unit.group(1) if unit else ""
def median_us(title, per_call):
    """The median wall-clock time of one benchmark's iteration, divided into `per_call` calls, µs."""
    times, unit = row(title, "Time (wall clock)")
    if not times: return float("nan")
    return times[2] * {"ns": 1e-3, "μs": 1, "us": 1, "ms": 1e3, "s": 1e6}.get(unit, float("nan")) / per_call
def cycles(key, title):
    mallocs, _ = row(title, "Malloc (total)")
    print(f"alloc{key}={max(mallocs) / 1000 if mallocs else float('nan'):g}")
    print(f"cycle_us{key}={median_us(title, 1000):.2f}")
for units in (1, 8, 32):
    cycles(units, f"### 1000 cycles, {units} simulated units")
cycles("32site", "### 1000 cycles, 32 simulated units, site meter with grid limits and peak shaving")
cycles("32schedule", "### 1000 cycles, 32 simulated units, site meter with a block schedule in force")
cycles("32pmu", "### 1000 cycles, 32 simulated units, frequency from a PMU")
cycles("32utility", "### 1000 cycles, 32 simulated units, site meter with utility limits")
cycles("32reactive", "### 1000 cycles, 32 simulated units, volt-var and volt-watt per unit")
cycles("32sitereactive", "### 1000 cycles, 32 simulated units, volt-var at the connection point under the utility's var controls")
for units in (1, 8, 32):
    print(f"allocate_us{units}={median_us(f'### SiteAllocator.allocate x 10000, {units} units', 10000):.3f}")
# The optimiser's solve on CBC (Benchmarks/PlanSolve): one plan of the bench site, 96 and 192 slots.
print(f"plan_ms96={median_us('### plan solve, 96 slots', 1) / 1000:.2f}")
print(f"plan_ms192={median_us('### plan solve, 192 slots', 1) / 1000:.2f}")
# A BMS's frames on its worker (Benchmarks/BMSDecode): the hand-written Pylontech decoder and the same
# frames through the profile compiled from pylontech-lv; a BYD C130 rack's Modbus blocks.
for key, title in (("pylontech", "PylontechDecoder"), ("profile", "profile pylontech-lv")):
    print(f"bms_decode_ns_{key}={median_us(f'### BMS decode x 10000 frames, {title}', 10000) * 1000:.1f}")
    mallocs, _ = row(f"### BMS decode x 10000 frames, {title}", "Malloc (total)")
    print(f"bms_decode_alloc_{key}={max(mallocs) / 10000 if mallocs else float('nan'):g}")
print(f"bms_modbus_ns_byd={median_us('### BMS Modbus ingest x 10000 blocks, profile byd-c130', 10000) * 1000:.1f}")
cal, _ = row("### calibration: 1000 heap arrays", "Malloc (total)")
print(f"alloc_calibration={min(cal) if cal else float('nan'):g}")
PY
fi

if want plot; then
# 7. The scenario plot the README shows (release build).
echo "bench: the README's scenario plot"
$BIN/bess-hil scenario --bessd $BIN/bessd --output "$WORK/scenario" hil/scenarios/droop-step-66.yaml | tail -1
cp "$WORK/scenario/droop-step-66.png" "$OUT/scenario-droop-step-66.png" 2>/dev/null || true
fi

echo "bench: writing $OUT/benchmarks.md and plots"
python3 scripts/bench-report.py "$RESULTS" "$DATA" "$OUT"
echo "bench: done — $OUT/benchmarks.md"
