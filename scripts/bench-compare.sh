#!/usr/bin/env bash
# make bench-compare: the rows of `make bench` that move with the host's load, taken for two builds
# of bessd in alternation on the same plant, so that both see the same machine. Writes
# hil/results/bench-compare.md (row, before median (min–max), after median (min–max), ratio) and the
# raw figures in hil/results/bench-compare-data/.
#   scripts/bench-compare.sh                 BEFORE=a00b027 against the work tree, 3 rounds (about 20 minutes)
#   BEFORE=<rev> AFTER=<rev> R=5 scripts/bench-compare.sh
#   COMPARE_QUICK=1 scripts/bench-compare.sh  short windows (5 s), for trying the script, not for results
#   BUILD_PREFIX="flock /tmp/swift.lock nice -n 19" …   runs every swift build under that prefix
#   COMPARE_SKIP_BUILD=1 …                    measures the binaries already built (no swift command)
#   COMPARE_ROWS="late10" …                   takes only those rows (default: cpu10 rss8 cpu32 late10)
# BEFORE (and AFTER when given) is built in a git worktree under .build-compare/ (its own .build
# there, never the work tree's); AFTER defaults to the work tree, built in .build as `make bench`
# builds it. Both bessd binaries talk to the same bess-hil plant and bessctl (the work tree's): the
# plant's Modbus TCP and the control socket's JSON lines are the same on both sides.
# Each round runs every row once for each build, the order of the two builds flipping every round
# (before-after, then after-before), so that a drift of the host over the run weighs on both.
# The configuration is the form both revisions read (a00b027's keys: mode hil, period_ms,
# realtime.priority, grid_integration, simulation, bess_units[].modbus/inverter/bms).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BEFORE=${BEFORE:-a00b027}
AFTER=${AFTER:-}
ROUNDS=${R:-3}
QUICK=${COMPARE_QUICK:-}
WINDOW_S=${COMPARE_WINDOW_S:-$([ -n "$QUICK" ] && echo 5 || echo 60)}
SETTLE_S=${COMPARE_SETTLE_S:-$([ -n "$QUICK" ] && echo 5 || echo 30)}
WARM_S=${COMPARE_WARM_S:-$([ -n "$QUICK" ] && echo 3 || echo 15)}
read -r -a PREFIX <<< "${BUILD_PREFIX:-}"
SKIP_BUILD=${COMPARE_SKIP_BUILD:-}
ROWS=${COMPARE_ROWS:-cpu10 rss8 cpu32 late10}
LATE_S=${COMPARE_LATE_S:-$([ -n "$QUICK" ] && echo 5 || echo 100)}
OUT=hil/results/bench-compare.md
DATA=hil/results/bench-compare-data
COMPARE=.build-compare

scripts/ensure-debian-packages.sh pkg-config libmodbus-dev libsocketcan-dev libsystemd-dev libssl-dev procps

# A revision's release bessd, built in its own worktree; prints the binary's path.
build_rev() {  # REV
  local rev sha dir
  rev=$1
  sha=$(git rev-parse --verify "$rev^{commit}") || { echo "bench-compare: no revision $rev" >&2; return 1; }
  dir=$COMPARE/$(git rev-parse --short "$sha")
  if [ ! -d "$dir" ]; then
    git worktree add --detach "$dir" "$sha" >&2 || return 1
  fi
  # The work tree's pins, when it has them: the same dependency versions, no network.
  [ -f Package.resolved ] && [ ! -f "$dir/Package.resolved" ] && cp Package.resolved "$dir/"
  if [ -z "$SKIP_BUILD" ]; then
    echo "bench-compare: release build of $rev in $dir" >&2
    (cd "$dir" && "${PREFIX[@]}" swift build -c release --product bessd >&2) || return 1
  fi
  [ -x "$dir/.build/release/bessd" ] || { echo "bench-compare: no $dir/.build/release/bessd" >&2; return 1; }
  echo "$ROOT/$dir/.build/release/bessd"
}

mkdir -p "$COMPARE" "$DATA"
BEFORE_BIN=$(build_rev "$BEFORE") || exit 1
if [ -z "$SKIP_BUILD" ]; then
  echo "bench-compare: release build of the work tree (bessd, bess-hil, bessctl)"
  for product in bessd bess-hil bessctl; do
    "${PREFIX[@]}" swift build -c release --product "$product" || exit 1
  done
fi
BIN=$ROOT/.build/release
if [ -n "$AFTER" ]; then
  AFTER_BIN=$(build_rev "$AFTER") || exit 1
  AFTER_NAME=$(git rev-parse --short "$AFTER")
else
  AFTER_BIN=$BIN/bessd
  AFTER_NAME="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources Package.swift || echo ' + uncommitted changes')"
fi
BEFORE_NAME=$(git rev-parse --short "$BEFORE")

WORK=$(mktemp -d /tmp/bessd-compare.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
RAW=$DATA/raw.csv
echo "round,row,build,value,plant" > "$RAW"

# One configuration both revisions read: N units, each inverter on its own port of the plant.
write_config() {  # FILE UNITS PERIOD_MS BASE_PORT [nort]
  local file=$1 units=$2 period=$3 base=$4 rt=${5:-rt} name
  name=$(basename "$file" .yaml)
  {
    echo "mode: hil"
    echo "period_ms: $period"
    echo "control_socket: $WORK/$name.sock"
    echo "state_directory: $WORK/$name"
    [ "$rt" = rt ] && echo "realtime: {priority: 60}"
    echo "grid_integration: {frequency_source: inverter, droop_settings: {deadband_hz: [49.9, 50.05], droop_percent: 5.0}}"
    echo "simulation: {frequency_profile: walk, amplitude_hz: 0.1, seed: 7}"
    echo "bess_units:"
    for i in $(seq 1 "$units"); do
      echo "  - {id: U$i, campus_id: BENCH, capacity_kwh: 250, max_power_kw: 100, modbus: {host: 127.0.0.1, port: $((base + i)), unit_id: 1, timeout_ms: 200}, inverter: {protocol: sunspec}, bms: {simulated: true}}"
    done
  } > "$file"
}

# CPU time of every thread of a process, ns (the scheduler's run time; `make bench` reads the same).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}'; }

# One row for one build: the plant, bessd on it, the measure; appends to the raw figures.
#   cpu10: 8 units at 10 ms, a reader asking for status twice a second (as `make bench`'s jitter
#          run), CPU share of one core over the window, the plant's beside it.
#   rss8:  8 units at 100 ms, VmRSS, VmHWM and the anonymous part after SETTLE_S.
#   cpu32: 32 units at 100 ms, CPU share over the window after WARM_S, the plant's beside it.
#   late10: 8 units at 10 ms WITHOUT real-time priority, the status reader beside: readings the
#          cycle found no newer than at its previous cycle over LATE_S seconds (10,000 cycles at 100).
measure() {  # ROUND ROW BUILD BESSD
  local round=$1 row=$2 build=$3 bessd=$4 units period base conf plant pid reader="" rt=rt
  case $row in
    cpu10) units=8; period=10 ;;
    late10) units=8; period=10; rt=nort ;;
    rss8) units=8; period=100 ;;
    cpu32) units=32; period=100 ;;
  esac
  base=$((20000 + RANDOM % 20000))
  conf=$WORK/$row-$build-$round.yaml
  write_config "$conf" "$units" "$period" "$base" "$rt"
  "$BIN/bess-hil" plant --config "$conf" > "$WORK/$row-$build-$round-plant.log" 2>&1 & plant=$!; PIDS+=("$plant")
  sleep 1
  "$bessd" run --config "$conf" --status-every 0 --log stdout > "$WORK/$row-$build-$round.log" 2>&1 & pid=$!; PIDS+=("$pid")
  local sock=${conf%.yaml}.sock
  for _ in $(seq 100); do "$BIN/bessctl" status --socket "$sock" > /dev/null 2>&1 && break; sleep 0.1; done
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "bench-compare: $build bessd did not start for $row:" >&2; tail -5 "$WORK/$row-$build-$round.log" >&2
    kill -TERM "$plant"; wait "$plant" 2>/dev/null; return 1
  fi
  if [ "$row" = late10 ]; then
    ( while kill -0 "$pid" 2>/dev/null; do "$BIN/bessctl" status --json --socket "$sock" > /dev/null 2>&1; sleep 0.5; done ) &
    reader=$!; PIDS+=("$reader")
    sleep 3
    local l0 l1
    l0=$("$BIN/bessctl" status --json --socket "$sock" | python3 -c 'import json,sys; c=json.load(sys.stdin)["cycle"]; print(c["late_readings"], c["cycles"])')
    sleep "$LATE_S"
    l1=$("$BIN/bessctl" status --json --socket "$sock" | python3 -c 'import json,sys; c=json.load(sys.stdin)["cycle"]; print(c["late_readings"], c["cycles"])')
    python3 -c "a, b = '$l0'.split(), '$l1'.split(); print(f'$round,late10,$build,{int(b[0]) - int(a[0])},{int(b[1]) - int(a[1])}')" >> "$RAW"
  elif [ "$row" = rss8 ]; then
    sleep "$SETTLE_S"
    local rss hwm
    rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status); hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
    echo "$round,rss8,$build,$(python3 -c "print(f'{$rss/1024:.2f}')")," >> "$RAW"
    echo "$round,hwm8,$build,$(python3 -c "print(f'{$hwm/1024:.2f}')")," >> "$RAW"
    # The anonymous part (heap, stacks, buffers) apart: the rest is the binary's and the libraries'
    # pages, which move with the layout of the code and with what the page cache holds.
    local anon
    anon=$(awk '/^Anonymous:/ {print $2}' /proc/$pid/smaps_rollup)
    echo "$round,anon8,$build,$(python3 -c "print(f'{$anon/1024:.2f}')")," >> "$RAW"
    cp /proc/$pid/smaps_rollup "$DATA/smaps-rollup-$build-$round.txt" 2>/dev/null
  else
    if [ "$row" = cpu10 ]; then
      ( while kill -0 "$pid" 2>/dev/null; do "$BIN/bessctl" status --json --socket "$sock" > /dev/null 2>&1; sleep 0.5; done ) &
      reader=$!; PIDS+=("$reader")
      sleep 3
    else
      sleep "$WARM_S"
    fi
    local t0 q0 s0 t1 q1 s1
    t0=$(cpu_ns "$pid"); q0=$(cpu_ns "$plant"); s0=$(date +%s.%N)
    sleep "$WINDOW_S"
    t1=$(cpu_ns "$pid"); q1=$(cpu_ns "$plant"); s1=$(date +%s.%N)
    python3 -c "d = ($s1 - $s0) * 1e7; print(f'$round,$row,$build,{($t1 - $t0) / d:.3f},{($q1 - $q0) / d:.3f}')" >> "$RAW"
  fi
  [ -n "$reader" ] && kill "$reader" 2>/dev/null
  kill -TERM "$pid"; wait "$pid" 2>/dev/null; kill -TERM "$plant"; wait "$plant" 2>/dev/null
  tail -1 "$RAW" | sed 's/^/bench-compare: /'
}

STARTED=$(date -u +%Y-%m-%dT%H:%MZ)
for round in $(seq 1 "$ROUNDS"); do
  echo "bench-compare: round $round of $ROUNDS"
  for row in $ROWS; do
    if [ $((round % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
    for build in $order; do
      if [ "$build" = before ]; then measure "$round" "$row" before "$BEFORE_BIN"
      else measure "$round" "$row" after "$AFTER_BIN"; fi
    done
  done
done

python3 - "$RAW" "$OUT" "$BEFORE_NAME" "$AFTER_NAME" "$ROUNDS" "$WINDOW_S" "$SETTLE_S" "$STARTED" \
  "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo), $(uname -r)" "$QUICK" <<'PY'
import csv, statistics, sys
raw, out, before, after, rounds, window, settle, started, machine, quick = sys.argv[1:11]
rows = {}
for r in csv.DictReader(open(raw)):
    rows.setdefault(r["row"], {}).setdefault(r["build"], []).append(r)
titles = {
    "cpu10": f"8 units on Modbus TCP at 10 ms, SCHED_FIFO 60, status read twice a second: CPU share of one core ({window} s)",
    "rss8": f"8 units at 100 ms, SCHED_FIFO 60: resident memory after {settle} s (VmRSS, MB)",
    "hwm8": f"8 units at 100 ms, SCHED_FIFO 60: peak resident memory after {settle} s (VmHWM, MB)",
    "anon8": f"8 units at 100 ms, SCHED_FIFO 60: its anonymous part (heap, stacks, buffers; smaps_rollup Anonymous, MB)",
    "cpu32": f"32 units on Modbus TCP at 100 ms, SCHED_FIFO 60: CPU share of one core ({window} s)",
    "late10": "8 units on Modbus TCP at 10 ms, no real-time priority, status read twice a second: late readings per run (cycles per run in the last column)",
}
unit = {"cpu10": " %", "cpu32": " %", "rss8": "", "hwm8": "", "anon8": "", "late10": ""}
def cell(values, u):
    if not values: return "—"
    return f"{statistics.median(values):.2f}{u} ({min(values):.2f}–{max(values):.2f})"
lines = [
    "# bessd before and after, interleaved on one host",
    "",
    f"Measured by `make bench-compare` on {machine}, started {started}: before = {before}, after = {after}; "
    f"{rounds} round(s), each running every row once per build, the builds' order flipping every round, "
    "against the same bess-hil plant (the work tree's) on loopback. Raw figures: `hil/results/bench-compare-data/raw.csv` "
    "(the plant's own CPU share beside each CPU figure shows how busy the host was).",
    "",
]
if quick:
    lines += ["**COMPARE_QUICK: short windows, for trying the script; not results.**", ""]
lines += ["| Row | Before: median (min–max) | After: median (min–max) | Ratio after / before | Plant's share, before / after |",
          "|---|---|---|---|---|"]
for key in ("cpu10", "rss8", "hwm8", "anon8", "cpu32", "late10"):
    if key not in rows: continue  # a row COMPARE_ROWS left out
    sides = rows.get(key, {})
    b = [float(r["value"]) for r in sides.get("before", [])]
    a = [float(r["value"]) for r in sides.get("after", [])]
    ratio = f"{statistics.median(a) / statistics.median(b):.3f}" if a and b and statistics.median(b) else "—"
    plant = "—"
    if key.startswith("cpu"):
        pb = [float(r["plant"]) for r in sides.get("before", [])]
        pa = [float(r["plant"]) for r in sides.get("after", [])]
        if pb and pa: plant = f"{statistics.median(pb):.2f} / {statistics.median(pa):.2f} %"
    if key == "late10":
        runs = lambda side: ", ".join(f"{int(float(r['value']))}/{int(float(r['plant']))}" for r in sides.get(side, []))
        plant = f"runs (late/cycles): before {runs('before')}; after {runs('after')}"
    lines.append(f"| {titles[key]} | {cell(b, unit[key])} | {cell(a, unit[key])} | {ratio} | {plant} |")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "bench-compare: done — $OUT"
