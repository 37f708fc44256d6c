#!/usr/bin/env bash
# Instructions per control cycle, counted by callgrind: the measure of hil/results/cpu-59-profile.md.
# The host's load changes CPU time but not the instruction count, so two builds can be compared on a
# busy 2-core machine where `make bench-compare`'s CPU rows spread by 10 % or more.
#
#   scripts/cycle-instructions.sh BESSD...                 each release bessd once, 10 ms, 40 s window
#   R=2 scripts/cycle-instructions.sh OLD NEW               two rounds: OLD NEW, then NEW OLD
#   PERIOD_MS=100 WINDOW_S=30 READER=0 scripts/cycle-instructions.sh BESSD
#
# The setup is `make bench-compare`'s cpu10 row without real-time priority (SCHED_FIFO under
# valgrind's serialised threads starves the process; priority does not change the count): the work
# tree's `bess-hil plant` with UNITS (8) SunSpec units on loopback, the configuration
# scripts/bench-compare.sh writes (mode hil, droop, simulated BMS), and `bessctl status --json`
# read every 0.5 s (READER=0: no reader). Each bessd is first copied through `objcopy
# --strip-debug` (valgrind 3.19 cannot read Swift 6.3's DWARF 5; the function symbols stay) and
# runs under callgrind with instrumentation off. After WARM_S seconds `callgrind_control -i on`
# opens the window, WINDOW_S seconds later `-i off` and a dump close it; `cycle.cycles` from
# `status --json` is read just before and just after. The figure is Ir (user-space instructions
# of all of bessd's threads) in the window ÷ cycles run in it.
#
# Output (OUT, default /tmp/cycle-instructions): one line per run on stdout and in OUT/runs.csv
# (run, label, bessd, Ir, cycles, Ir per cycle), the window's dump (OUT/run<N>-<label>.callgrind)
# and its inclusive and self profiles, demangled (OUT/run<N>-<label>.inclusive.txt, .self.txt).
# A bessd may be given as LABEL=PATH; the label defaults to the name of the directory holding its
# .build (4e05687 for .build-compare/4e05687/.build/release/bessd). BIN: where bess-hil and bessctl
# are (default the work tree's .build/release). CALLGRIND_OPTS: more valgrind options (e.g.
# --dump-instr=yes). Needs valgrind (apt-get install -y valgrind); about a minute per run.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN=${BIN:-$ROOT/.build/release}
PERIOD_MS=${PERIOD_MS:-10}
WINDOW_S=${WINDOW_S:-40}
WARM_S=${WARM_S:-20}
UNITS=${UNITS:-8}
READER=${READER:-1}
ROUNDS=${R:-1}
OUT=${OUT:-/tmp/cycle-instructions}

[ $# -ge 1 ] || { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
command -v valgrind > /dev/null || { echo "cycle-instructions: valgrind missing (apt-get install -y valgrind)" >&2; exit 1; }
for tool in bess-hil bessctl; do
  [ -x "$BIN/$tool" ] || { echo "cycle-instructions: no $BIN/$tool (swift build -c release --product $tool)" >&2; exit 1; }
done
SWIFT=$(command -v swift || echo /opt/swift/usr/bin/swift)
mkdir -p "$OUT"
[ -f "$OUT/runs.csv" ] || echo "run,label,bessd,ir,cycles,ir_per_cycle" > "$OUT/runs.csv"

LABELS=() PATHS=()
for arg in "$@"; do
  if [[ $arg == *=* ]]; then LABELS+=("${arg%%=*}"); PATHS+=("${arg#*=}")
  else LABELS+=("$(basename "$(dirname "$(dirname "$(dirname "$(realpath "$arg")")")")")"); PATHS+=("$arg"); fi
done

WORK=$(mktemp -d /tmp/cycle-instructions.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

# The configuration scripts/bench-compare.sh writes, without `realtime:`.
write_config() {  # FILE BASE_PORT
  local file=$1 base=$2 name
  name=$(basename "$file" .yaml)
  {
    echo "mode: hil"
    echo "period_ms: $PERIOD_MS"
    echo "control_socket: $WORK/$name.sock"
    echo "state_directory: $WORK/$name"
    echo "grid_integration: {frequency_source: inverter, droop_settings: {deadband_hz: [49.9, 50.05], droop_percent: 5.0}}"
    echo "simulation: {frequency_profile: walk, amplitude_hz: 0.1, seed: 7}"
    echo "bess_units:"
    for i in $(seq 1 "$UNITS"); do
      echo "  - {id: U$i, campus_id: BENCH, capacity_kwh: 250, max_power_kw: 100, modbus: {host: 127.0.0.1, port: $((base + i)), unit_id: 1, timeout_ms: 200}, inverter: {protocol: sunspec}, bms: {simulated: true}}"
    done
  } > "$file"
}

cycles() {  # SOCKET
  "$BIN/bessctl" status --json --socket "$1" 2> /dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["cycle"]["cycles"])'
}

measure() {  # RUN LABEL BESSD
  local run=$1 label=$2 bessd=$3 base conf sock plant pid reader="" c0 c1 ir stripped dump
  stripped=$WORK/bessd-$label
  objcopy --strip-debug "$bessd" "$stripped" || return 1
  base=$((20000 + RANDOM % 20000))
  conf=$WORK/run$run-$label.yaml
  sock=${conf%.yaml}.sock
  write_config "$conf" "$base"
  "$BIN/bess-hil" plant --config "$conf" > "$WORK/run$run-$label-plant.log" 2>&1 & plant=$!; PIDS+=("$plant")
  sleep 1
  dump=$WORK/run$run-$label.out
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dump.%p" ${CALLGRIND_OPTS:-} \
    "$stripped" run --config "$conf" --status-every 0 --log stdout > "$WORK/run$run-$label.log" 2>&1 & pid=$!; PIDS+=("$pid")
  for _ in $(seq 600); do "$BIN/bessctl" status --socket "$sock" > /dev/null 2>&1 && break; sleep 0.1; done
  if ! kill -0 "$pid" 2> /dev/null || ! "$BIN/bessctl" status --socket "$sock" > /dev/null 2>&1; then
    echo "cycle-instructions: $label did not start:" >&2; tail -5 "$WORK/run$run-$label.log" >&2
    kill "$pid" "$plant" 2> /dev/null; wait "$pid" "$plant" 2> /dev/null; return 1
  fi
  if [ "$READER" = 1 ]; then
    ( while kill -0 "$pid" 2> /dev/null; do "$BIN/bessctl" status --json --socket "$sock" > /dev/null 2>&1; sleep 0.5; done ) &
    reader=$!; PIDS+=("$reader")
  fi
  sleep "$WARM_S"
  c0=$(cycles "$sock")
  callgrind_control -i on "$pid" > /dev/null
  sleep "$WINDOW_S"
  callgrind_control -i off "$pid" > /dev/null
  c1=$(cycles "$sock")
  callgrind_control --dump="window" "$pid" > /dev/null
  [ -n "$reader" ] && kill "$reader" 2> /dev/null
  kill -TERM "$pid"; wait "$pid" 2> /dev/null; kill -TERM "$plant"; wait "$plant" 2> /dev/null
  # The window's dump is the one whose trigger names it (the final dump at exit counts nothing).
  local file
  file=$(grep -l '^desc: Trigger: dump window' "$dump".* 2> /dev/null | head -1)
  [ -n "$file" ] || { echo "cycle-instructions: no dump for $label" >&2; ls "$dump".* >&2; return 1; }
  ir=$(awk '/^totals:/ {print $2; exit}' "$file")
  cp "$file" "$OUT/run$run-$label.callgrind"
  for mode in inclusive self; do
    callgrind_annotate --inclusive=$([ $mode = inclusive ] && echo yes || echo no) --threshold=99.5 "$file" 2> /dev/null \
      | "$SWIFT" demangle --simplified > "$OUT/run$run-$label.$mode.txt" 2> /dev/null
  done
  python3 -c "ir, c = $ir, $c1 - $c0; print(f'$run,$label,$bessd,{ir},{c},{ir / c:.1f}')" | tee -a "$OUT/runs.csv"
}

echo "cycle-instructions: $UNITS units, ${PERIOD_MS} ms, window ${WINDOW_S} s after ${WARM_S} s, reader $READER; out $OUT"
run=$(( $(wc -l < "$OUT/runs.csv") ))
for round in $(seq 1 "$ROUNDS"); do
  order=$(seq 0 $(( ${#PATHS[@]} - 1 )))
  [ $((round % 2)) -eq 0 ] && order=$(echo "$order" | tac)
  for i in $order; do
    measure "$run" "${LABELS[$i]}" "${PATHS[$i]}"
    run=$((run + 1))
  done
done
