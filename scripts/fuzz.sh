#!/usr/bin/env bash
# make fuzz: every decoder strangers feed, under libFuzzer with AddressSanitizer, each for at least
# FUZZ_RUNS executions (default 1,000,000; a run ends only when the count is reached or it fails).
#
#   scripts/fuzz.sh [TARGET...]        targets: can sunspec register-map config dispatch control spool scada uplink-batch iec104 iec104-session pmu sep2 http schedule forecast profile profile-devices
#   FUZZ_JOBS=N                        targets run side by side (default: one per core)
#   FUZZ_TIMEOUT=S                     an input running over S seconds is a hang (default 1; a larger
#                                      value only for a run at low priority beside builds, and the
#                                      table's header then says so)
#   FUZZ_LOCK=FILE                     build under flock FILE (a machine whose Swift builds share one
#                                      lock), fuzz without holding it
#
# The harnesses are Fuzz/FuzzTargets: targets of Package.swift only when BESS_FUZZ is set, as here, so
# `swift build` never compiles them. They are built here with -sanitize=fuzzer,address into .build-fuzz
# (the daemon's build never links the fuzzer). Each target starts from its seeds (made by
# the harness from the same vectors the tests use; config also from config/*.yaml and hil/rigs/*.yaml)
# and fails on a crash, a sanitizer report, an input running over 1 s, or a broken invariant (an
# out-of-range setpoint, a config accepted that check-config's rules refuse, a lost spool record…).
# A failing input is kept in .build-fuzz/artifacts/; add it under Tests/FuzzRegressions/TARGET/ once
# fixed, so the ordinary suite replays it. Results: hil/results/fuzz.md.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${FUZZ_RUNS:-1000000}
TIMEOUT=${FUZZ_TIMEOUT:-1}
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=(can sunspec register-map config dispatch control spool scada uplink-batch iec104 iec104-session pmu sep2 http schedule forecast profile profile-devices)
OUT=.build-fuzz/work
mkdir -p "$OUT" .build-fuzz/artifacts hil/results

echo "fuzz: building bess-fuzz with -sanitize=fuzzer,address (release, .build-fuzz)"
export BESS_FUZZ=1
build() { ${FUZZ_LOCK:+flock "$FUZZ_LOCK"} swift build -c release --build-path .build-fuzz --product bess-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DBESS_FUZZ "$@"; }
if ! build >"$OUT/build.log" 2>&1; then
  # Debian 12's gold stops on the sanitizer build ("internal error in format_file_lineno") and SwiftPM
  # passes no linker choice through: link SwiftPM's own command again with the toolchain's lld.
  link=$(build -v 2>&1 | grep -E '^/[^ ]*swiftc .*-emit-executable' | tail -1)
  { [[ -n $link ]] && eval "${FUZZ_LOCK:+flock $FUZZ_LOCK} $link -use-ld=lld" >>"$OUT/build.log" 2>&1; } \
    || { tail -40 "$OUT/build.log"; echo "fuzz: FAIL: build"; exit 1; }
fi
FUZZ=$(build --show-bin-path 2>/dev/null)/bess-fuzz

JOBS=${FUZZ_JOBS:-$(nproc)}

# One target: its seeds, then libFuzzer until RUNS executions or the first failure; its table row
# goes to $OUT/TARGET.row.
fuzz_one() {
  local target=$1 corpus="$OUT/corpus-$1" seeds="$OUT/seeds-$1" log="$OUT/$1.log" maxlen=4096
  rm -rf "$seeds" "$OUT/$target.row"
  mkdir -p "$corpus" "$seeds"
  BESS_FUZZ_TARGET=$target BESS_FUZZ_WRITE_SEEDS=$seeds "$FUZZ" >/dev/null 2>&1
  if [[ $target == config ]]; then cp config/*.yaml "$seeds/"; cp hil/rigs/*.yaml "$seeds/"; fi
  [[ $target == config || $target == spool ]] && maxlen=16384
  # http: past the parser's 16 KiB head bound, so that bound is reached too.
  [[ $target == http ]] && maxlen=20480
  echo "fuzz: $target: $RUNS runs from $(ls "$seeds" | wc -l) seeds"
  local start status seconds runs done_line cov ft corp verdict rate
  start=$(date +%s)
  BESS_FUZZ_TARGET=$target ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 "$FUZZ" \
    -runs="$RUNS" -timeout="$TIMEOUT" -rss_limit_mb=4096 -max_len=$maxlen -print_final_stats=1 \
    -artifact_prefix=".build-fuzz/artifacts/$target-" "$corpus" "$seeds" >"$log" 2>&1
  status=$?
  seconds=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  done_line=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$done_line")
  verdict=pass
  if [[ $status -ne 0 ]]; then
    verdict="FAIL: $(grep -m1 -E 'BESS_FUZZ_INVARIANT|ERROR: AddressSanitizer|ERROR: libFuzzer|Fatal error|SUMMARY' "$log" | cut -c1-160)"
  elif [[ -z $runs || $runs -lt $RUNS ]]; then
    verdict="FAIL: $runs of $RUNS runs"
  fi
  rate=$(( ${runs:-0} / (seconds > 0 ? seconds : 1) ))
  echo "fuzz: $target: ${runs:-0} runs in ${seconds} s, cov ${cov:-?}, ft ${ft:-?}: $verdict"
  echo "| \`$target\` | ${runs:-0} | ${cov:-?} | ${ft:-?} | ${corp:-?} | $seconds | $rate | $verdict |" > "$OUT/$target.row"
}

# FUZZ_JOBS targets at a time (default: one per core).
for target in "${TARGETS[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $JOBS ]]; do wait -n; done
  fuzz_one "$target" &
done
wait
ROWS=()
FAILED=0
for target in "${TARGETS[@]}"; do
  row=$(cat "$OUT/$target.row" 2>/dev/null || echo "| \`$target\` | 0 | ? | ? | ? | 0 | 0 | FAIL: no result |")
  [[ $row == *"| pass |" ]] || FAILED=1
  ROWS+=("$row")
done

{
  echo "# make fuzz"
  echo
  echo "$(date -u +%Y-%m-%d), $(git rev-parse --short HEAD 2>/dev/null), $(nproc) cores, $(swift --version 2>/dev/null | head -1)."
  echo "libFuzzer + AddressSanitizer (\`-sanitize=fuzzer,address\`, release), \`-timeout=$TIMEOUT\` (an input over $TIMEOUT s is a hang),"
  echo "at least $RUNS executions per target, $JOBS targets side by side (executions/s is per target on a shared machine)."
  echo "Harnesses: Fuzz/FuzzTargets (each states its invariants);"
  echo "how to read and rerun: docs/fuzzing.md."
  echo
  echo "| target | executions | coverage (edges) | features | corpus (inputs/bytes) | seconds | executions/s | verdict |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
} > hil/results/fuzz.md.new
if [[ $# -eq 0 ]]; then mv hil/results/fuzz.md.new hil/results/fuzz.md; else cat hil/results/fuzz.md.new; rm hil/results/fuzz.md.new; fi
[[ $FAILED -eq 0 ]] && echo "fuzz: every target passed" || echo "fuzz: FAIL (inputs in .build-fuzz/artifacts/)"
exit $FAILED
