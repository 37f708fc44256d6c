#!/usr/bin/env python3
"""Where a controller's step → wire time goes, from the request trace of pymodbus_sunspec_step.py
(--trace; scripts/step-wire-bench.sh with TRACE=1). For each step, the round of reads that decided the
first reflecting write (the last read of each unit served after the step and before that write):
  step → round start          when the first of those reads arrived (the sampling wait)
  round arrival spread        first to last arrival of those reads (how at once the controller sent them)
  round start → last answer   until the peer had answered all of them (its serving, one after another)
  last answer → first write   the controller's decision and send, and the peer's receive
  first → last write          until every unit's reflecting write had arrived
  other writes before unit 1  writes that did not carry WSet (revert re-arms) between step and unit 1's write
Meaningful for a controller that reads every unit before it decides (bessd); for the naive loop only
"last answer → first write" is (its round is one unit). Arrivals and answers are the kernel's stamps
when the trace has them (rows q and a), else the peer's.

Usage: step_trace_stages.py TRACE.csv ...
"""
import csv
import math
import statistics
import sys


def q(values, f):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(len(s) * f) - 1))] if s else float("nan")


def stages(path):
    rows = list(csv.DictReader(open(path)))
    # With the kernel's stamps in the trace (rows q and a), requests and answers are timed by them.
    wire = {(r["port"], r["tid"], r["kind"]): r["arrived_ns"] for r in rows if r["kind"] in ("q", "a")}
    rows = [r for r in rows if r["kind"] not in ("q", "a")]
    for r in rows:
        if r["kind"] in ("R", "W") and r.get("port"):
            r["arrived_ns"] = wire.get((r["port"], r["tid"], "q"), r["arrived_ns"])
            if r["kind"] == "R":
                r["served_ns"] = wire.get((r["port"], r["tid"], "a"), r["served_ns"])
    units = {r["unit"] for r in rows if r["kind"] == "R"}
    last_setpoint, out = {}, {k: [] for k in (
        "step → round start", "round arrival spread", "round start → last answer", "last answer → first write",
        "first → last write", "step → unit 1 write", "other writes before unit 1")}
    i = 0
    while i < len(rows):
        r = rows[i]
        if r["kind"] == "W" and r["count_or_watts"]:
            last_setpoint[r["unit"]] = int(r["count_or_watts"])
        if r["kind"] != "S":
            i += 1
            continue
        t, before = int(r["arrived_ns"]), dict(last_setpoint)
        reads, writes, others, unit1 = {}, {}, 0, None
        j = i + 1
        while j < len(rows) and rows[j]["kind"] != "S" and len(writes) < len(units):
            x = rows[j]
            if x["kind"] == "R" and not writes:
                reads[x["unit"]] = x
            elif x["kind"] == "W" and not x["count_or_watts"]:
                others += unit1 is None
            elif x["kind"] == "W":
                last_setpoint[x["unit"]] = int(x["count_or_watts"])
                if x["unit"] not in writes and abs(int(x["count_or_watts"]) - before.get(x["unit"], 10**12)) > 100:
                    writes[x["unit"]] = int(x["arrived_ns"])
                    if x["unit"] == "1":
                        unit1 = int(x["arrived_ns"])
            j += 1
        i = j
        if not writes or unit1 is None or not reads:
            continue
        arrived = [int(x["arrived_ns"]) for x in reads.values()]
        served = [int(x["served_ns"]) for x in reads.values()]
        first = min(writes.values())
        ms = lambda a, b: (b - a) / 1e6
        out["step → round start"].append(ms(t, min(arrived)))
        out["round arrival spread"].append(ms(min(arrived), max(arrived)))
        out["round start → last answer"].append(ms(min(arrived), max(served)))
        out["last answer → first write"].append(ms(max(served), first))
        out["first → last write"].append(ms(first, max(writes.values())))
        out["step → unit 1 write"].append(ms(t, unit1))
        out["other writes before unit 1"].append(others)
    print(f"{path}: {len(out['step → unit 1 write'])} steps (ms; {'the kernel' if wire else 'the peer'}'s stamps)")
    for name, v in out.items():
        print(f"  {name:28} p50 {q(v, .5):8.3f}  p90 {q(v, .9):8.3f}  p99 {q(v, .99):8.3f}  max {max(v, default=math.nan):8.3f}"
              f"  mean {statistics.mean(v) if v else math.nan:8.3f}")


for p in sys.argv[1:]:
    stages(p)
