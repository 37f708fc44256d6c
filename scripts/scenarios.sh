#!/usr/bin/env bash
# Runs every HIL scenario in hil/scenarios/ (three at a time: each is a plant and a bessd at 100 ms)
# and fails when any fails. Scenarios that need a CAN interface are skipped here (exit 77) and run
# inside the VM by scripts/can-tests.sh. The full-length forms in hil/scenarios/long/ are not in the
# default set: `make scenarios-long` runs them.
#   scripts/scenarios.sh [BUILD_DIR] [SCENARIO...]      BUILD_DIR defaults to .build/debug
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.build/debug}
shift || true
OUT=${SCENARIO_OUTPUT:-hil/results/scenarios}
mkdir -p "$OUT/logs"
if [ $# -gt 0 ]; then FILES=("$@"); else FILES=(hil/scenarios/*.yaml); fi

run_one() {
  local file=$1 name
  name=$(basename "$file" .yaml)
  "$BIN/bess-hil" scenario --output "$OUT" "$file" > "$OUT/logs/$name.log" 2>&1
  local rc=$?
  echo "$rc $name"
}
export -f run_one
export BIN OUT
started=$(date +%s)
results=$(printf '%s\n' "${FILES[@]}" | xargs -P 3 -I{} bash -c 'run_one {}')
failed=0; passed=0; skipped=0
while read -r rc name; do
  case $rc in
    0) passed=$((passed + 1)); echo "PASS $name" ;;
    77) skipped=$((skipped + 1)); echo "SKIP $name (needs CAN: runs in the VM suite)" ;;
    *) failed=$((failed + 1)); echo "FAIL $name (exit $rc):"; sed 's/^/    /' "$OUT/logs/$name.log" ;;
  esac
done <<< "$(sort -k2 <<< "$results")"
echo "scenarios: $passed passed, $failed failed, $skipped skipped in $(( $(date +%s) - started )) s (plots in $OUT/)"
[ "$failed" -eq 0 ]
