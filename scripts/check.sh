#!/usr/bin/env bash
# make check after its packages: the debug build with its tests, then every test, timed by phase.
#   build       swift build --build-tests (the one debug build; everything after reuses it)
#   tests       scripts/test-suites.sh: every suite, TEST_JOBS processes at a time
#   then side by side, as they share no port, file or clock:
#     scenarios scripts/scenarios.sh: the HIL scenarios, three at a time (wall-clock bound)
#     can       scripts/can-tests.sh: the SocketCAN suite and CAN scenarios in a VM
#     package   scripts/package-test.sh: the static release build and the .deb, at nice 19 so the
#               timed scenarios keep the CPU they need
#   config      every file in config/ through bessd check-config
# Prints where the time went (docs/testing.md explains the figures) and fails when any phase fails.
set -uo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
LOGS=.build/check-logs
mkdir -p .build
rm -rf "$LOGS"
mkdir -p "$LOGS"
TIMES=()
failed=()
clock() { date +%s; }
record() { TIMES+=("$(printf '%-10s %5d s  %s' "$1" "$2" "$3")"); }

started=$(clock)
t=$(clock)
"$SWIFT" build --build-tests || { echo "check: the build failed" >&2; exit 1; }
record build $(( $(clock) - t )) "swift build --build-tests"

t=$(clock)
scripts/test-suites.sh .build/debug || failed+=(tests)
record tests $(( $(clock) - t )) "scripts/test-suites.sh (TEST_JOBS=${TEST_JOBS:-4})"

# The three side by side; each writes its own log, shown whole when it fails.
side() {  # NAME COMMAND...
  local name=$1; shift
  local t0; t0=$(clock)
  "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  echo "$rc $(( $(clock) - t0 ))" > "$LOGS/$name.rc"
}
t=$(clock)
side scenarios scripts/scenarios.sh .build/debug &
p1=$!
side can scripts/can-tests.sh &
p2=$!
side package nice -n 19 scripts/package-test.sh &
p3=$!
wait $p1 $p2 $p3
for name in scenarios can package; do
  read -r rc seconds < "$LOGS/$name.rc"
  if [[ $rc -ne 0 ]]; then
    failed+=("$name")
    echo "check: $name FAILED (exit $rc); its log:"
    cat "$LOGS/$name.log"
  else
    tail -n 3 "$LOGS/$name.log"
  fi
  record "$name" "$seconds" "side by side (log $LOGS/$name.log)"
done
record "(parallel)" $(( $(clock) - t )) "scenarios, can and package together"

t=$(clock)
make --no-print-directory config-check || failed+=(config)
record config $(( $(clock) - t )) "make config-check"

echo "check: where the time went"
printf '    %s\n' "${TIMES[@]}"
echo "    total      $(( $(clock) - started )) s (after the packages)"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "check: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "check: every phase passed"
