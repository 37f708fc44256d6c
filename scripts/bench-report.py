#!/usr/bin/env python3
"""Turns scripts/bench.sh's results into hil/results/benchmarks.md and its plots (gnuplot).

Usage: bench-report.py RESULTS_ENV DATA_DIR OUT_DIR
"""
import math
import os
import subprocess
import sys

results_path, data, out = sys.argv[1:4]
r = {}
for line in open(results_path):
    if "=" in line:
        key, value = line.rstrip("\n").split("=", 1)
        r[key] = value.strip('"')


def num(key):
    try:
        return float(r[key])
    except (KeyError, ValueError):
        return math.nan


def fmt(v, digits=1):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "not measured"
    return f"{v:,.{digits}f}"


def verdict(value, target, lower_is_better=True, unit=""):
    if math.isnan(value):
        return "**not measured**"
    ok = value <= target if lower_is_better else value >= target
    if ok:
        return "met"
    if target == 0:
        return f"**missed**: {value:g}{unit} (target 0)"
    by = abs(value - target)
    return f"**missed** by {by:,.2f}{unit} ({by / abs(target) * 100:.0f} %)"


rows = []
for period, rt in (("100", "rt"), ("100", "nort"), ("10", "rt"), ("10", "nort")):
    k = f"{period}{rt}"
    policy = "SCHED_FIFO 60" if rt == "rt" else "no real-time priority"
    b99, c99 = num(f"bessd{k}_p99"), num(f"ct{k}_p99")
    ratio = b99 / c99 if c99 > 0 else math.nan
    overruns, late, n = num(f"bessd{k}_overruns"), num(f"bessd{k}_late"), num(f"bessd{k}_n")
    misses = []
    if not math.isnan(ratio) and ratio > 1.5:
        misses.append(verdict(ratio, 1.5, unit="×"))
    if overruns > 0:
        misses.append(f"**missed**: {overruns:g} overruns")
    if late > 0:
        misses.append(f"**missed**: {late:g} late readings")
    rows.append((
        f"8 units on Modbus TCP at {period} ms, {policy}, reader running: wake-up lateness beside cyclictest "
        f"({fmt(n, 0)} cycles)",
        f"bessd p50 {fmt(num(f'bessd{k}_p50'), 0)} / p99 {fmt(b99, 0)} / max {fmt(num(f'bessd{k}_max'), 0)} µs; "
        f"cyclictest p50 {fmt(num(f'ct{k}_p50'), 0)} / p99 {fmt(c99, 0)} / max {fmt(num(f'ct{k}_max'), 0)} µs; "
        f"ratio p99 {fmt(ratio, 2)}×; {fmt(overruns, 0)} overruns; {fmt(late, 0)} late readings (unit-cycles)",
        "p99 ≤ 1.5 × cyclictest, 0 overruns, 0 late readings",
        "met" if not misses and not math.isnan(ratio) else ("; ".join(misses) or "**not measured**")))
    rows.append((
        f"bessd with 8 units at {period} ms, {policy}, Modbus TCP to the plant: CPU share of one core (same run)",
        f"{fmt(num(f'bessd{k}_cpu'), 2)} % (the plant's own share in the same window: {fmt(num(f'plant{k}_cpu'), 2)} %)",
        "≤ 3 %" if period == "10" else "(reference)",
        verdict(num(f"bessd{k}_cpu"), 3.0, unit=" %") if period == "10" else "—"))
    rows.append((
        f"a status request over the control socket, 8 units at {period} ms, {policy}, Modbus TCP to the plant: "
        f"bessd's service-thread CPU time per answer ({fmt(num(f'status{k}_n'), 0)} requests, from /metrics)",
        f"mean {fmt(num(f'status{k}_mean_us'), 0)} / max {fmt(num(f'status{k}_max_us'), 0)} µs",
        "mean ≤ 100 µs", verdict(num(f"status{k}_mean_us"), 100.0, unit=" µs")))
for key, period, policy in (("step100rt", 100, "SCHED_FIFO 60"), ("step10rt", 10, "SCHED_FIFO 60"),
                            ("step10nort", 10, "no real-time priority")):
    rows.append((
        f"frequency step → setpoint on the wire, 8 units at {period} ms, {policy} ({fmt(num(key + '_n'), 0)} steps at "
        f"random phase, {fmt(num(key + '_misses'), 0)} missed)",
        f"p50 {fmt(num(key + '_p50'))} / p99 {fmt(num(key + '_p99'))} / max {fmt(num(key + '_max'))} ms",
        f"p99 ≤ {period + 2} ms", verdict(num(key + "_p99"), period + 2, unit=" ms")))
for period in (10, 100):
    k = f"stepwire{period}bessd"
    p50_target, p99_target = period / 2 + 1, period + 1
    misses = [v for v in (verdict(num(k + "_p50"), p50_target, unit=" ms"), verdict(num(k + "_p99"), p99_target, unit=" ms"))
              if v != "met"]
    rows.append((
        f"frequency step → setpoint on the wire against pymodbus (8 SunSpec inverters, each on its own port; unit 1 "
        f"timed; kernel stamps), {period} ms, bessd SCHED_FIFO 60 beside the naive pymodbus loop ({fmt(num(k + '_n'), 0)} "
        f"steps at phases spread over the read interval, {fmt(num(k + '_misses'), 0)} missed; scripts/step-wire-bench.sh)",
        f"bessd p50 {fmt(num(k + '_p50'))} / p99 {fmt(num(k + '_p99'))} / max {fmt(num(k + '_max'))} ms; "
        f"loop p50 {fmt(num(f'stepwire{period}loop_p50'))} / p99 {fmt(num(f'stepwire{period}loop_p99'))} / "
        f"max {fmt(num(f'stepwire{period}loop_max'))} ms; bessd from the round's last answer to the write "
        f"p50 {fmt(num(k + '_write_p50'), 2)} / p99 {fmt(num(k + '_write_p99'), 2)} ms",
        f"p50 ≤ {p50_target:g} ms, p99 ≤ {p99_target:g} ms (bessd)",
        "**not measured**" if math.isnan(num(k + "_p50")) else "; ".join(misses) if misses else "met"))
for period in (10, 100):
    k = f"voltwire{period}bessd"
    rows.append((
        f"voltage step → var setpoint on the wire against pymodbus (8 SunSpec inverters; 701 LNV 1.00 ↔ 1.06 p.u.; "
        f"volt-var, OLRT 1 s; unit 1's first VarSet write the step's way; kernel stamps), {period} ms, bessd SCHED_FIFO 60 "
        f"({fmt(num(k + '_n'), 0)} steps, {fmt(num(k + '_misses'), 0)} missed; scripts/step-wire-bench.sh --voltage)",
        f"p50 {fmt(num(k + '_p50'))} / p99 {fmt(num(k + '_p99'))} / max {fmt(num(k + '_max'))} ms; from the round's "
        f"last answer to the write p50 {fmt(num(k + '_write_p50'), 2)} / p99 {fmt(num(k + '_write_p99'), 2)} ms",
        f"p99 ≤ {period + 5} ms (one period + 5 ms)", verdict(num(k + "_p99"), period + 5, unit=" ms")))
rows.append((
    f"unit trip during a frequency event → another unit's larger share on its wire, 8 units at 100 ms, SCHED_FIFO 60 "
    f"({fmt(num('trip100_n'), 0)} trips at random phase, {fmt(num('trip100_misses'), 0)} missed)",
    f"p50 {fmt(num('trip100_p50'))} / p99 {fmt(num('trip100_p99'))} / max {fmt(num('trip100_max'))} ms",
    "p99 ≤ 105 ms (one period + 5 ms)", verdict(num("trip100_p99"), 105, unit=" ms")))
rows.append((
    f"load step over the import limit at the site meter → new setpoint on the wire, 8 units at 100 ms "
    f"({fmt(num('loadstep100_n'), 0)} steps, {fmt(num('loadstep100_misses'), 0)} missed; grid import is back under the "
    "limit one inverter response later)",
    f"p50 {fmt(num('loadstep100_p50'))} / p99 {fmt(num('loadstep100_p99'))} / max {fmt(num('loadstep100_max'))} ms",
    "p99 ≤ 200 ms (3 periods less the inverter's one)", verdict(num("loadstep100_p99"), 200, unit=" ms")))
rows.append((
    f"SCADA write (WSet, Modbus TCP to bessd's SunSpec server) → new setpoint on the inverter's wire, 8 units at 100 ms, "
    f"SCHED_FIFO 60 ({fmt(num('scadawrite100_n'), 0)} writes at random phase, {fmt(num('scadawrite100_misses'), 0)} missed)"
    + (f" — measured at commit {r['scada_commit']}" if r.get("scada_commit") and r.get("scada_commit") != r.get("commit") else ""),
    f"p50 {fmt(num('scadawrite100_p50'))} / p99 {fmt(num('scadawrite100_p99'))} / max {fmt(num('scadawrite100_max'))} ms",
    "p99 ≤ 105 ms (one period + 5 ms)", verdict(num("scadawrite100_p99"), 105, unit=" ms")))
ct = num("ct100rt_p99")
scada_target = 1.5 * ct if not math.isnan(ct) else math.nan
overruns = num("scadaload_overruns") + num("scadaload_flat_overruns")
scada_ok = (overruns == 0 and num("scadaload_failures") == 0 and num("scadaload_status_max_ms") < 1000
            and not math.isnan(scada_target) and num("scadaload_p99") <= scada_target)
rows.append((
    f"{fmt(num('scadaload_clients'), 0)} SCADA clients reading the whole map ({fmt(num('scadaload_words'), 0)} registers, "
    f"{fmt(num('scadaload_rate'), 0)} Hz each) for {fmt(num('scadaload_seconds'), 0)} s, 8 units on the wire at 100 ms, "
    "SCHED_FIFO 60, status read twice a second (lateness over bessd's whole run)"
    + (f" — measured at commit {r['scada_commit']}" if r.get("scada_commit") and r.get("scada_commit") != r.get("commit") else ""),
    f"{fmt(num('scadaload_maps_per_s'))} maps/s, {fmt(num('scadaload_failures'), 0)} failed; cycle: "
    f"{fmt(num('scadaload_overruns'), 0)} overruns, lateness p99 {fmt(num('scadaload_p99'), 0)} / max {fmt(num('scadaload_max'), 0)} µs; "
    f"slowest status {fmt(num('scadaload_status_max_ms'))} ms",
    f"0 overruns, lateness p99 ≤ 1.5 × cyclictest ({fmt(scada_target, 0)} µs), status < 1 s",
    "met" if scada_ok else "**missed**" if not math.isnan(overruns) else "**not measured**"))
rows.append((
    f"SCADA read throughput: the same {fmt(num('scadaload_clients'), 0)} clients as fast as they can, "
    f"{fmt(num('scadaload_flat_s'), 0)} s",
    f"{fmt(num('scadaload_flat_maps_per_s'))} maps/s ({fmt(num('scadaload_flat_maps_per_s') * num('scadaload_words') / 1000)} k registers/s); "
    f"{fmt(num('scadaload_flat_overruns'), 0)} cycle overruns",
    "(reference)", "—"))
for period in (100, 10):
    k = f"iec{period}"
    rows.append((
        f"IEC 104 AGC target (C_SE_NC_1 on 3001, AGC in service) from a raw-socket controlling station → the timed unit's "
        f"first setpoint towards it on its inverter's wire (schedule ramp 1000 %/s), 8 units on Modbus TCP at {period} ms, "
        f"SCHED_FIFO 60 ({fmt(num(k + 'agc_n'), 0)} targets at random phase, {fmt(num(k + 'agc_misses'), 0)} missed; "
        "stamped before the send and at the plant's answer to the write, CLOCK_MONOTONIC both)",
        f"p50 {fmt(num(k + 'agc_p50'))} / p99 {fmt(num(k + 'agc_p99'))} / max {fmt(num(k + 'agc_max'))} ms; "
        f"ACT_CON back at the station p50 {fmt(num(k + 'agccon_p50'), 2)} / p99 {fmt(num(k + 'agccon_p99'), 2)} ms",
        f"p99 ≤ {period + 5} ms (one period + 5 ms)", verdict(num(k + "agc_p99"), period + 5, unit=" ms")))
    rows.append((
        f"IEC 104 spontaneous value: a frequency change at the plant's registers (inside the droop deadband) → its "
        f"M_ME_TF_1 (IOA 1004, COT 3) at the controlling station, 8 units on Modbus TCP at {period} ms, SCHED_FIFO 60 "
        f"({fmt(num(k + 'spont_n'), 0)} changes at random phase, {fmt(num(k + 'spont_misses'), 0)} missed; the outstation "
        f"samples the cycle's state when the cycle publishes it)",
        f"p50 {fmt(num(k + 'spont_p50'))} / p99 {fmt(num(k + 'spont_p99'))} / max {fmt(num(k + 'spont_max'))} ms",
        f"p99 ≤ {period + 5} ms (one period + 5 ms)", verdict(num(k + "spont_p99"), period + 5, unit=" ms")))
b99, c99 = num("bessd100rtiec_p99"), num("ct100rtiec_p99")
ratio = b99 / c99 if c99 > 0 else math.nan
overruns, gi_failures = num("bessd100rtiec_overruns"), num("gi_failures")
misses = [m for m in (verdict(ratio, 1.5, unit="×") if not math.isnan(ratio) else "**not measured**",
                      f"**missed**: {overruns:g} overruns" if overruns > 0 else "met",
                      f"**missed**: {gi_failures:g} interrogations unanswered" if gi_failures > 0 else "met") if m != "met"]
rows.append((
    f"{fmt(num('gi_stations'), 0)} IEC 104 controlling stations (raw sockets, each from its own loopback address and so "
    "its own redundancy group, all started) each sending a station interrogation every second, 8 units on Modbus TCP "
    f"at 100 ms, SCHED_FIFO 60, status read twice a second: wake-up lateness beside cyclictest "
    f"({fmt(num('bessd100rtiec_n'), 0)} cycles)",
    f"bessd p50 {fmt(num('bessd100rtiec_p50'), 0)} / p99 {fmt(b99, 0)} / max {fmt(num('bessd100rtiec_max'), 0)} µs; "
    f"cyclictest p99 {fmt(c99, 0)} / max {fmt(num('ct100rtiec_max'), 0)} µs; ratio p99 {fmt(ratio, 2)}×; "
    f"{fmt(overruns, 0)} overruns; {fmt(num('bessd100rtiec_late'), 0)} late readings; {fmt(num('gi_rounds'), 0)} "
    f"interrogations of {fmt(num('gi_objects'), 0)} objects, {fmt(gi_failures, 0)} unanswered, request → ACT_TERM "
    f"p50 {fmt(num('gi_p50'), 2)} / p99 {fmt(num('gi_p99'), 2)} / max {fmt(num('gi_max'), 2)} ms",
    "0 overruns, p99 ≤ 1.5 × cyclictest, every interrogation answered",
    "; ".join(misses) if misses else "met"))
rows.append((
    f"c104 (lib60870) as the controlling station: its own hop from the socket to its on_receive_raw callback, against "
    f"a raw-socket station in another group receiving the same spontaneous frames ({fmt(num('c104hop_n'), 0)} frames)",
    f"p50 {fmt(num('c104hop_p50'), 2)} / p99 {fmt(num('c104hop_p99'), 2)} / max {fmt(num('c104hop_max'), 2)} ms",
    "(reference: the rows above time with raw sockets)", "—"))
rows.append((
    f"BMS protection frame (CAN) → zero on the wire, 100 ms, no real-time priority ({fmt(num('alarm_n'), 0)} alarms; {r.get('alarm_where', '')})",
    f"p50 {fmt(num('alarm_p50'))} / p99 {fmt(num('alarm_p99'))} / max {fmt(num('alarm_max'))} ms",
    "p99 ≤ 5 ms", verdict(num("alarm_p99"), 5, unit=" ms")))
rows.append((
    f"BMS protection frame (CAN) → zero on the wire, 100 ms, `realtime: {{priority: 60}}` as config/gateway.yaml "
    f"({fmt(num('alarm_fifo_n'), 0)} alarms; {r.get('alarm_where', '')})",
    f"p50 {fmt(num('alarm_fifo_p50'))} / p99 {fmt(num('alarm_fifo_p99'))} / max {fmt(num('alarm_fifo_max'))} ms",
    "p99 ≤ 5 ms", verdict(num("alarm_fifo_p99"), 5, unit=" ms")))
rows.append((
    "Extra cycles the BMS woke: 10 s of ordinary frames at 16 kW, then per alarm (the regular schedule's lateness is the rows above)",
    f"{fmt(num('alarm_quiet_cycles'), 0)} in the quiet 10 s; {fmt(num('alarm_extra_cycles'), 0)} for {fmt(num('alarm_count'), 0)} alarms",
    "0 when nothing calls for less power; one per alarm",
    "**not measured**" if math.isnan(num("alarm_quiet_cycles")) else
    "met" if num("alarm_quiet_cycles") == 0 and num("alarm_extra_cycles") <= num("alarm_count") else "**missed**"))
for units in ("1", "8", "32"):
    target_cpu = {"8": "≤ 1 %", "32": "≤ 1 %"}.get(units, "(reference)")
    rows.append((
        f"bessd with {units} unit(s), 100 ms, Modbus TCP to the plant: CPU share of one core",
        f"{fmt(num('cpu' + units), 2)} % (median of 3 windows of 20 s: {fmt(num('cpu' + units + '_min'), 2)}–"
        f"{fmt(num('cpu' + units + '_max'), 2)} %; the plant's own share {fmt(num('plantcpu' + units), 2)} %)", target_cpu,
        verdict(num("cpu" + units), 1.0, unit=" %") if units in ("8", "32") else "—"))
    rows.append((
        f"bessd with {units} unit(s): resident memory (now / peak)",
        f"{fmt(num('rss' + units))} / {fmt(num('hwm' + units))} MB", "≤ 32 MB" if units == "8" else "(reference)",
        verdict(num("hwm" + units), 32, unit=" MB") if units == "8" else "—"))
for units in ("1", "8", "32"):
    rows.append((
        f"cycle compute time (CycleBody.run, {units} simulated unit(s), median of 10 × 1,000 cycles)",
        f"{fmt(num('cycle_us' + units), 2)} µs", "(reference)", "—"))
rows.append((
    "cycle compute time, 32 simulated units with a site meter, grid limits and peak shaving (median of 10 × 1,000 cycles)",
    f"{fmt(num('cycle_us32site'), 2)} µs", "(reference)", "—"))
for units in ("1", "8", "32"):
    rows.append((
        f"site allocation compute time (SiteAllocator.allocate, {units} unit(s), median of 10 × 10,000 calls)",
        f"{fmt(num('allocate_us' + units), 3)} µs", "(reference)", "—"))
for key, what in (("int1", "a data frame of 1 PMU in integer form (2 phasors, FREQ, DFREQ, 1 analog, 1 digital word)"),
                  ("float4", "a data frame of 4 PMUs in float form (each 2 polar phasors, FREQ, DFREQ, 1 analog, 1 digital word)"),
                  ("cfg2", "a CFG-2 of the same 4 PMUs (19 channel names each)"),
                  ("cfg3", "a CFG-3 of the same 4 PMUs (names, scales, location, class, window, group delay)")):
    rows.append((
        f"PMU decode (C37.118.2, issue 47): {what}, whole frame with CRC (bess-hil bench pmu-decode, median of 10 rounds)",
        f"{fmt(num('pmudec_' + key), 0)} ns per frame", "(reference)", "—"))
pmu_misses = num("pmuwire_misses")
rows.append((
    f"PMU frequency step (C37.118.2 over TCP, bess-hil as the PMU at {fmt(num('pmuwire_fps'), 2)} frames/s) → the timed unit's "
    f"setpoint on its wire, bessd following the PMU, 8 units on Modbus TCP at 100 ms, SCHED_FIFO 60 ({fmt(num('pmuwire_n'), 0)} steps)",
    f"p50 {fmt(num('pmuwire_p50'), 2)} / p99 {fmt(num('pmuwire_p99'), 2)} / max {fmt(num('pmuwire_max'), 2)} ms",
    "p99 ≤ 105 ms (one period + 5 ms)",
    verdict(num("pmuwire_p99"), 105, unit=" ms") if not pmu_misses > 0 else f"**missed**: {pmu_misses:g} steps without a write"))
sep2_misses = num("sep2wire_misses")
rows.append((
    "IEEE 2030.5 DERControl start (sep2_server.py over TLS CCM8, opModGenLimW alternating, back to back, on whole seconds of the "
    "server's time, no randomisation) → the timed unit's first setpoint towards it on its wire, bessd polling every 10 s, "
    f"8 units on Modbus TCP at 100 ms, SCHED_FIFO 60 ({fmt(num('sep2wire_n'), 0)} controls"
    + (f" over {fmt(num('sep2wire_rounds'), 0)} bessd starts, each at a random phase of its cycle)" if num("sep2wire_rounds") > 1
       else "; one bessd: every start meets its cycle at one phase)"),
    f"p50 {fmt(num('sep2wire_p50'), 2)} / p99 {fmt(num('sep2wire_p99'), 2)} / max {fmt(num('sep2wire_max'), 2)} ms",
    "p99 ≤ 105 ms (one period + 5 ms), none missed",
    verdict(num("sep2wire_p99"), 105, unit=" ms") if not sep2_misses > 0 else f"**missed**: {sep2_misses:g} controls without a write"))
rows.append((
    f"IEEE 2030.5 client at a 10 s poll rate: the bessd-2030.5 thread's CPU time (/proc task stat) over the same run "
    f"({fmt(num('sep2cpu_seconds'), 0)} s, {fmt(num('sep2cpu_polls'), 0)} polls)",
    f"{fmt(num('sep2cpu_share'), 3)} % of one core; {fmt(num('sep2cpu_per_poll'), 1)} ms per poll", "(reference)", "—"))
rows.append((
    "malloc counter calibration: 1,000 heap arrays (proves the interposer counts)",
    f"{fmt(num('alloc_calibration'), 0)} allocations", "≥ 1,000",
    verdict(num("alloc_calibration"), 1000, lower_is_better=False)))
for units in ("1", "8", "32"):
    rows.append((
        f"heap allocations per steady-state cycle, {units} simulated unit(s) (package-benchmark, worst of 10 × 1,000 cycles)",
        fmt(num("alloc" + units), 3), "0", verdict(num("alloc" + units), 0)))
rows.append((
    "heap allocations per steady-state cycle, 32 simulated units with a site meter (worst of 10 × 1,000 cycles)",
    fmt(num("alloc32site"), 3), "0", verdict(num("alloc32site"), 0)))
rows.append((
    "heap allocations per steady-state cycle, 32 simulated units with a site meter and a block schedule in force "
    "(blocks closing and reported, the executor steering each by energy) (worst of 10 × 1,000 cycles)",
    fmt(num("alloc32schedule"), 3), "0", verdict(num("alloc32schedule"), 0)))
rows.append((
    "heap allocations per steady-state cycle, 32 simulated units following a PMU (its slot read each cycle, "
    "DFREQ as ROCOF, 1 s of silence every 20 s: fallback and return; frequency events assessed) (worst of 10 × 1,000 cycles)",
    fmt(num("alloc32pmu"), 3), "0", verdict(num("alloc32pmu"), 0)))
rows.append((
    "heap allocations per steady-state cycle, 32 simulated units with a site meter under the utility's IEEE 2030.5 controls "
    "(the slot read each cycle, a new value every 5 s: export, import, generation/load with rampTms, a target with setGradW "
    "and opModFreqDroop, a disconnect) (worst of 10 × 1,000 cycles)",
    fmt(num("alloc32utility"), 3), "0", verdict(num("alloc32utility"), 0)))
rows.append((
    "heap allocations per steady-state cycle, 32 simulated units under volt-var and volt-watt at each unit "
    "(every law stepped, Q written each cycle) (worst of 10 × 1,000 cycles)",
    fmt(num("alloc32reactive"), 3), "0", verdict(num("alloc32reactive"), 0)))
rows.append((
    "heap allocations per steady-state cycle, 32 simulated units under volt-var and volt-watt at the connection point "
    "(the meter's voltage, Q held at the meter and shared by free apparent power; the utility's fixed var, target var "
    "and power factors taking over and ending every 5 s) (worst of 10 × 1,000 cycles)",
    fmt(num("alloc32sitereactive"), 3), "0", verdict(num("alloc32sitereactive"), 0)))
for slots, target in (("96", 50), ("192", 200)):
    rows.append((
        f"optimiser: one {slots}-slot plan of the bench site solved on CBC (binaries in every slot; one core, median)",
        f"{fmt(num('plan_ms' + slots), 1)} ms", f"≤ {target} ms", verdict(num("plan_ms" + slots), target, unit=" ms")))
rows.append((
    "BMS decode on its worker, per CAN frame: the same Pylontech LV frames through the profile compiled from "
    f"pylontech-lv (today's hand-written decoder: {fmt(num('bms_decode_ns_pylontech'), 0)} ns) (median)",
    f"{fmt(num('bms_decode_ns_profile'), 0)} ns", "≤ the hand-written decoder's",
    verdict(num("bms_decode_ns_profile"), num("bms_decode_ns_pylontech"), unit=" ns")))
rows.append((
    "BMS decode on its worker, per Modbus block: a BYD C130 rack's read plan through the profile byd-c130 (median)",
    f"{fmt(num('bms_modbus_ns_byd'), 0)} ns", "—", "measured"))
rows.append(("spool append (300 B records, fsync batched)", f"{fmt(num('spool_append'), 0)} records/s", "≥ 20,000 records/s",
             verdict(num("spool_append"), 20000, lower_is_better=False, unit=" records/s")))
backlog_s = num("backlog_seconds")
delivered = num("backlog_delivered")
records = num("backlog_records")
complete = delivered >= records
rows.append((
    f"one-hour 1 Hz backlog of 8 units ({fmt(records, 0)} records) replayed to bess-aggregator after reconnection",
    f"{fmt(delivered, 0)} delivered in {fmt(backlog_s, 1)} s ({fmt(delivered / backlog_s if backlog_s > 0 else math.nan, 0)} records/s)",
    "all within 30 s",
    verdict(backlog_s, 30, unit=" s") if complete else f"**missed**: {fmt(records - delivered, 0)} records still queued"))

md = [
    "# Benchmarks",
    "",
    f"Measured by `make bench` on {r.get('machine', '?')}, {r.get('date', '?')}, commit {r.get('commit', '?')}, release build.",
    "Every figure is this machine's; cyclictest runs beside bessd at the same period and policy as the limit the",
    "machine sets. Raw data: `hil/results/bench-data/`.",
] + ([f"Rows retaken (`BENCH_ONLY`): {r['retaken']}; every other row is from the run above."] if r.get("retaken") else []) + [
    "",
    "| Measure | Result | Target | Verdict |",
    "|---|---|---|---|",
]
md += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
md += [
    "",
    "![wake-up lateness](jitter.png)",
    "![latency on the wire](latency.png)",
    "![CPU and memory](resources.png)",
    "",
]
open(os.path.join(out, "benchmarks.md"), "w").write("\n".join(md))


def gnuplot(script):
    subprocess.run(["gnuplot"], input=script, text=True, check=False)


# Lateness: p50/p99/max, bessd beside cyclictest, log scale.
with open(os.path.join(data, "jitter.dat"), "w") as f:
    f.write("# case bessd_p50 bessd_p99 bessd_max ct_p50 ct_p99 ct_max\n")
    for p in ("100rt", "100nort", "10rt", "10nort"):
        f.write(f"{p} " + " ".join(str(max(num(k), 0.5)) for k in
                (f"bessd{p}_p50", f"bessd{p}_p99", f"bessd{p}_max", f"ct{p}_p50", f"ct{p}_p99", f"ct{p}_max")) + "\n")
gnuplot(f"""
set terminal pngcairo size 900,420 font 'DejaVu Sans,9'
set output '{out}/jitter.png'
set title 'Cycle wake-up lateness, 8 units on Modbus TCP: bessd beside cyclictest (µs, log scale; rt = SCHED\\_FIFO 60)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'µs'
set grid ytics
set key top left
plot '{data}/jitter.dat' using 2:xtic(1) title 'bessd p50' lc rgb '#9ecae1', '' using 3 title 'bessd p99' lc rgb '#3182bd', \\
     '' using 4 title 'bessd max' lc rgb '#08519c', '' using 5 title 'cyclictest p50' lc rgb '#fdae6b', \\
     '' using 6 title 'cyclictest p99' lc rgb '#e6550d', '' using 7 title 'cyclictest max' lc rgb '#a63603'
""")

# Latency on the wire: sorted samples (a CDF) for both measurements.
curves = []
for name, label in (("step100rt", "frequency step → setpoint, 100 ms"), ("alarm-latency", "BMS alarm frame → zero, 100 ms")):
    path = os.path.join(data, name + ".csv")
    if os.path.exists(path) and os.path.getsize(path) > 0:
        values = sorted(float(x) for x in open(path).read().split())
        with open(os.path.join(data, name + ".cdf"), "w") as f:
            for i, v in enumerate(values):
                f.write(f"{v} {(i + 1) / len(values)}\n")
        curves.append(f"'{data}/{name}.cdf' using 1:2 with steps lw 2 title '{label}'")
if curves:
    gnuplot(f"""
set terminal pngcairo size 900,420 font 'DejaVu Sans,9'
set output '{out}/latency.png'
set title 'Latency on the wire at a 100 ms period (cumulative share of samples)'
set xlabel 'ms'
set ylabel 'share of samples'
set grid
set key bottom right
set arrow from 105, graph 0 to 105, graph 1 nohead dt 2 lc rgb 'red'
set label 'target p99 105 ms' at 106, graph 0.1 tc rgb 'red'
set xrange [0:120]
plot {', '.join(curves)}
""")

with open(os.path.join(data, "resources.dat"), "w") as f:
    f.write("# units cpu rss hwm\n")
    for u in ("1", "8", "32"):
        f.write(f"{u} {num('cpu' + u)} {num('rss' + u)} {num('hwm' + u)}\n")
gnuplot(f"""
set terminal pngcairo size 900,380 font 'DejaVu Sans,9'
set output '{out}/resources.png'
set multiplot layout 1,2 title 'bessd at 100 ms against the plant over Modbus TCP'
set style data histograms
set style fill solid 0.8 border -1
set grid ytics
set xlabel 'units'
set ylabel '% of one core'
set title 'CPU'
plot '{data}/resources.dat' using 2:xtic(1) notitle lc rgb '#3182bd'
set ylabel 'MB'
set title 'resident memory (peak)'
plot '{data}/resources.dat' using 4:xtic(1) notitle lc rgb '#31a354'
unset multiplot
""")
print("\n".join(md[:8 + len(rows)]))
