#!/usr/bin/env bash
# Builds the .deb and checks it as a gateway would receive it: contents, dependencies, no Swift
# runtime needed, the shipped config and device profiles valid, the unit clean under
# systemd-analyze verify, and its exposure rating from systemd-analyze security at 2.0 or lower.
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory deb >/dev/null
DEB=$(ls -1 dist/bessd_*_amd64.deb | tail -n 1)
ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT
dpkg-deb -x "$DEB" "$ROOT"
fail() { echo "package: FAIL: $*" >&2; exit 1; }
for f in usr/bin/bessd usr/bin/bessctl usr/bin/bess-hil usr/lib/systemd/system/bessd.service \
         usr/lib/systemd/network/80-can-bms.network usr/lib/udev/rules.d/80-bess-can.rules \
         usr/lib/udev/rules.d/80-bess-rs485.rules etc/bessd/bessd.yaml usr/share/doc/bessd/operations.md; do
  [[ -e "$ROOT/$f" ]] || fail "missing /$f"
done
dpkg-deb -f "$DEB" Depends | grep -q 'libmodbus5' || fail "Depends lacks libmodbus5"
dpkg-deb -f "$DEB" Depends | grep -q 'libsocketcan2' || fail "Depends lacks libsocketcan2"
dpkg-deb -f "$DEB" Depends | grep -q 'libsystemd0' || fail "Depends lacks libsystemd0"
dpkg-deb -f "$DEB" Depends | grep -q 'libmosquitto1' || fail "Depends lacks libmosquitto1"
dpkg-deb -f "$DEB" Depends | grep -q 'libssl3' || fail "Depends lacks libssl3"
dpkg-deb -f "$DEB" Depends | grep -q 'coinor-libcbc3' || fail "Depends lacks coinor-libcbc3"
[[ "$(dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles)" == "/etc/bessd/bessd.yaml" ]] || fail "conffiles"
for group in bessd bess bess-operators; do
  dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./postinst | grep -q "addgroup --system $group\$" || fail "postinst does not create group $group"
done
# The daemon runs in a group of its own, never in a role for people: that group reads its keys.
dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./postinst | grep -q "adduser --system --ingroup bessd " || fail "postinst does not make bessd's primary group bessd"
grep -qx 'User=bessd' "$ROOT/usr/lib/systemd/system/bessd.service" || fail "the unit's User= is not bessd"
grep -qx 'Group=bessd' "$ROOT/usr/lib/systemd/system/bessd.service" || fail "the unit's Group= is not bessd (bess and bess-operators are roles for people)"
if ldd "$ROOT/usr/bin/bessd" | grep -q libswift; then fail "bessd needs the Swift runtime"; fi
"$ROOT/usr/bin/bessd" check-config --quiet "$ROOT/etc/bessd/bessd.yaml" || fail "shipped config invalid"
# The starter library: every devices/*.yaml shipped in /usr/share/bessd/devices, each a valid profile.
for f in devices/*.yaml; do
  [[ -e "$ROOT/usr/share/bessd/devices/${f#devices/}" ]] || fail "missing /usr/share/bessd/devices/${f#devices/}"
  "$ROOT/usr/bin/bessd" check-config --quiet "$ROOT/usr/share/bessd/devices/${f#devices/}" || fail "shipped profile ${f#devices/} invalid"
done
UNIT=$(mktemp -d)/bessd.service
sed "s|/usr/bin/|$ROOT/usr/bin/|g" "$ROOT/usr/lib/systemd/system/bessd.service" > "$UNIT"
systemd-analyze verify --man=no "$UNIT" || fail "systemd-analyze verify"
# The system calls bessd's real-time threads make (realtime: SCHED_FIFO, the CPU pin, memory
# locking, naming the thread) pass the unit's SystemCallFilter= lines, applied in order as systemd
# applies them, each group expanded by systemd-analyze itself. A refused call is EPERM at start.
expand() {
  systemd-analyze syscall-filter "$1" 2>/dev/null | sed -n 's/^    \([@a-z_0-9-]*\)$/\1/p' |
    while read -r x; do if [[ $x == @* ]]; then expand "$x"; else echo "$x"; fi; done
}
FILTERS=$(grep '^SystemCallFilter=' "$UNIT" | sed 's/^SystemCallFilter=//')
for group in $(tr ' ~' '\n\n' <<<"$FILTERS" | grep '^@' | sort -u); do
  members=$(expand "$group" | tr '\n' ' ')
  [[ -n "${members// /}" ]] || fail "systemd-analyze syscall-filter $group lists nothing"
  declare "GROUP_${group//[@-]/_}=$members"
done
passes() {
  local call=$1 verdict=0 line deny item members
  while IFS= read -r line; do
    deny=0; [[ $line == '~'* ]] && { deny=1; line=${line#\~}; }
    for item in $line; do
      if [[ $item == @* ]]; then members="GROUP_${item//[@-]/_}"; [[ " ${!members} " == *" $call "* ]] || continue
      else [[ $item == "$call" ]] || continue; fi
      verdict=$((1 - deny))
    done
  done <<<"$FILTERS"
  (( verdict ))
}
for call in sched_setscheduler sched_setaffinity sched_getaffinity mlock mlockall prctl gettid; do
  passes "$call" || fail "the unit's SystemCallFilter refuses $call"
done
# The check itself: a call the unit never allows, and one that only a denied group holds.
if passes reboot; then fail "the filter check is broken: it lets reboot through"; fi
if passes nice; then fail "the filter check is broken: it lets nice (@resources) through"; fi
EXPOSURE=$(systemd-analyze security --offline=true "$UNIT" 2>/dev/null | sed -n 's/.*Overall exposure level for bessd.service: \([0-9.]*\).*/\1/p')
awk -v e="$EXPOSURE" 'BEGIN { exit !(e != "" && e <= 2.0) }' || fail "exposure $EXPOSURE above 2.0"
echo "package: $(basename "$DEB") OK ($(du -h "$DEB" | cut -f1)); unit verified; systemd-analyze security exposure $EXPOSURE"
