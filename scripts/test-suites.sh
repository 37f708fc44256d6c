#!/usr/bin/env bash
# Runs every suite of the test bundle, TEST_JOBS processes at a time (default 4), and fails when any
# fails. Why processes: swift-testing runs a process's tests on the Swift runtime's cooperative
# pool, as many at a time as the machine has cores (2 here), and most of bessd's tests block a
# thread while they wait on a daemon, a peer or a socket; so one process runs about two tests at a
# time whatever their CPU. Suites that share nothing but the machine (each picks its own loopback
# ports and directories) run side by side in separate processes; a suite's own tests keep the
# in-process rules (`.serialized` suites stay serial).
#   scripts/test-suites.sh [BUILD_DIR]                    BUILD_DIR defaults to .build/debug
#   TEST_JOBS=1 scripts/test-suites.sh                    one suite at a time
#   TEST_FILTER='^ServiceTests\.' scripts/test-suites.sh  only the suites whose id matches
# Each suite's output is kept in .build/test-logs/<suite>.log; a failing suite's log is printed.
# The time each suite took is kept in .build/test-times.txt: the next run starts the slowest first.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.build/debug}
BUNDLE=$BIN/bessdPackageTests.xctest
JOBS=${TEST_JOBS:-4}
OUT=${TEST_OUTPUT:-.build/test-logs}
TIMES=${TEST_TIMES:-.build/test-times.txt}
[[ -x "$BUNDLE" ]] || { echo "test-suites: build the tests first (swift build --build-tests)" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT"

"$BUNDLE" --testing-library swift-testing --list-tests > "$OUT/tests.txt" 2> "$OUT/list.log" \
  || { echo "test-suites: listing the tests failed:" >&2; cat "$OUT/list.log" >&2; exit 1; }
# A suite is what comes before the first "/" of a test id (Module.Suite, or Module for free tests).
cut -d/ -f1 "$OUT/tests.txt" | sort -u | grep -E "${TEST_FILTER:-.}" > "$OUT/suites.txt"
total=$(grep -cE "^(${TEST_FILTER:-.})" "$OUT/tests.txt")

# The order: the slowest first, by the last run's times; on a first run the suites that start
# daemons and peers (ServiceTests) before the rest.
order() {
  if [[ -s "$TIMES" ]]; then
    awk 'NR == FNR { t[$2] = $1; next } { print (($1 in t) ? t[$1] : 1000), $1 }' "$TIMES" "$OUT/suites.txt" \
      | sort -rn | cut -d' ' -f2
  else
    grep '^ServiceTests\.' "$OUT/suites.txt"; grep -v '^ServiceTests\.' "$OUT/suites.txt"
  fi
}

run_suite() {
  local suite=$1 started rc
  started=$(date +%s.%N)
  "$BUNDLE" --testing-library swift-testing --filter "^${suite//./\\.}/" > "$OUT/$suite.log" 2>&1
  rc=$?
  printf '%s %s %s\n' "$rc" "$(echo "$(date +%s.%N) - $started" | bc)" "$suite"
}
export -f run_suite
export BUNDLE OUT
started=$(date +%s)
order | xargs -P "$JOBS" -I{} bash -c 'run_suite {}' > "$OUT/results.txt"
elapsed=$(( $(date +%s) - started ))

awk '{ printf "%.1f %s\n", $2, $3 }' "$OUT/results.txt" | sort -rn > "$TIMES.new" && mv "$TIMES.new" "$TIMES"
failed=0
while read -r rc seconds suite; do
  if [[ $rc -ne 0 ]]; then
    failed=$((failed + 1))
    echo "FAIL $suite (exit $rc, ${seconds%.*} s):"
    sed 's/^/    /' "$OUT/$suite.log"
  fi
done < "$OUT/results.txt"
ran=$(wc -l < "$OUT/results.txt")
suites=$(wc -l < "$OUT/suites.txt")
# Every test the listing named must have run: the suites' "Test run with N tests" add up to the list.
counted=$(cat "$OUT"/*.log | sed -n 's/.*Test run with \([0-9]*\) tests\{0,1\} .*/\1/p' | paste -sd+ | bc)
echo "tests: $total tests in $suites suites; ${counted:-0} run in $ran suites, $failed suites failed, in $elapsed s with $JOBS processes"
echo "tests: the slowest suites (s):"; head -n 5 "$TIMES" | sed 's/^/    /'
[[ $failed -eq 0 && $ran -eq $suites && ${counted:-0} -eq $total ]]
