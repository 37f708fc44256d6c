#!/usr/bin/env python3
"""Frequency step → setpoint on the wire, timed by an independent peer: pymodbus 3.6 serves N SunSpec
inverters on loopback, each on its own TCP port (one process, one event loop), with register images
laid out from pysunspec2's copy of the official model definitions (not from bessd's tables).

Each inverter: "SunS", 1, 701, 120, 121, 704, end. 701 Hz (Hz_SF −3) is the grid frequency every
unit measures; 120 WRtg is 100 kW; 704 WSet_SF is 0; 701 W (W_SF 1) follows the last WSet written.

Once every unit has had a WSet write (the controller is up) and the warm-up has passed, the peer
moves every unit's Hz at once, alternately to --low-hz and back to --high-hz, at random instants
(--gap seconds apart), --steps times. For each step it stamps (time.monotonic_ns, CLOCK_MONOTONIC):
  step     the instant the registers changed;
  write    per unit, the arrival of its first WSet write that reflects the step (a value more than
           100 W from what that unit was last written before the step);
  read     per unit, the arrival of its first read of Hz served after the step (the sample that saw it);
  last     when the last read of Hz (any unit) served after the step and before a unit's write was
           answered: what the decision for that write waited for.
Arrival is when pymodbus's protocol received the bytes (its callback_data), before it decodes them.
The headline is unit 1's write, as `bess-hil bench step-latency` times its first unit; the first and
the last unit to write are reported beside it.

Prints "PORTS <p1> <p2> ..." once serving, then at the end
  "SUMMARY step_to_wire n=<> misses=<> p50_ms=<> p99_ms=<> max_ms=<>"   unit 1
  "UNITS first_unit|all_units n=<> p50_ms=<> p99_ms=<> max_ms=<>"        the first / last unit to write
  "STAGES step_to_read|read_to_last_answer|last_answer_to_write n=<> p50_ms=<> ..."  unit 1's way
  "READS timed_unit_first_read_decided=<k>/<n>"  steps whose write followed unit 1's first read after it
and writes one line per step to --csv (unit 1's step→write, ms) and to --events (every stage, µs);
--trace FILE also records every request and step (for looking closer at where the time goes).
Exits 0 when every step was answered, 1 when some were missed, 2 when no controller came.

Usage: pymodbus_sunspec_step.py [--units 8] [--steps 300] [--gap 0.35:0.75] [--warmup 3]
                                [--csv FILE] [--events FILE] [--wait 60]
"""
import argparse
import asyncio
import math
import random
import sys
import threading
import time

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import ModbusTcpServer
from pymodbus.server.async_io import ModbusServerRequestHandler
from pymodbus.transaction import ModbusSocketFramer

from peerserver import BASE, image, free_port

RATED_W = 100_000
REFLECTS_W = 100  # a write more than this far from the unit's last setpoint before the step reflects it


class Unit:
    """One inverter's register image and what the step bookkeeping needs of it."""

    def __init__(self, index):
        self.index = index
        words, self.where, put = image((1, 701, 120, 121, 704))
        put(701, "Hz_SF", 0xFFFD)     # −3: mHz
        put(701, "W_SF", 1)           # tens of W
        put(701, "InvSt", 3)          # RUNNING
        put(120, "WRtg", RATED_W // 10)
        put(120, "WRtg_SF", 1)
        put(121, "WMax", RATED_W // 10)
        put(121, "WMax_SF", 1)
        put(704, "WSet_SF", 0)
        self.block = ModbusSequentialDataBlock(BASE + 1, list(words))  # pymodbus adds 1 to the address
        self.hz_at = self.address(701, "Hz")
        self.w_at = self.address(701, "W")
        self.wset_at = self.address(704, "WSet")
        self.received_ns = 0          # when the request being served arrived (one in flight per connection)
        self.setpoint = None          # the last WSet written, W
        self.set_hz(50.0)

    def address(self, mid, name):
        start, offsets = self.where[mid]
        return start + offsets[name][0]

    def set_hz(self, hz):
        mhz = round(hz * 1000)
        self.block.setValues(self.hz_at + 1, [(mhz >> 16) & 0xFFFF, mhz & 0xFFFF])


class Bench:
    """The steps and what each one saw, unit by unit."""

    def __init__(self, units):
        self.units = units
        self.step = None              # the step being timed: a dict, or None between steps
        self.answered = threading.Event()
        # The steps run on their own thread, so their instants owe nothing to the event loop's
        # wake-ups (which the controller's requests cause); the datastore and the step's record
        # change under this lock.
        self.lock = threading.Lock()
        self.trace = None             # a file: every request, for looking closer (--trace)

    def read_served(self, unit, address, count, arrived, served):
        if self.trace:
            self.trace.write(f"R,{unit.index},{arrived},{served},{address},{count}\n")
        step = self.step
        if step is None or not (address <= unit.hz_at and unit.hz_at + 1 < address + count):
            return
        u = unit.index
        if u not in step["write"]:
            step["reads"][u] = step["reads"].get(u, 0) + 1
            step["read"].setdefault(u, arrived)
        step["last"] = served

    def write_served(self, unit, address, values, arrived):
        first, last = address, address + len(values) - 1
        if not (first <= unit.wset_at and unit.wset_at + 1 <= last):
            return
        hi, lo = values[unit.wset_at - first], values[unit.wset_at + 1 - first]
        watts = (hi << 16) | lo
        watts = watts - (1 << 32) if watts >= 1 << 31 else watts
        step, u = self.step, unit.index
        if self.trace:
            self.trace.write(f"W,{u},{arrived},{time.monotonic_ns()},{address},{watts}\n")
        if step is not None and u not in step["write"]:
            before = step["before"].get(u)
            if before is None or abs(watts - before) > REFLECTS_W:
                step["write"][u] = arrived
                step["last_before_write"][u] = step["last"]
                if len(step["write"]) == len(self.units):
                    self.answered.set()
        unit.setpoint = watts
        w = max(-32768, min(32767, round(watts / 10)))
        unit.block.setValues(unit.w_at + 1, [w & 0xFFFF])

    def move(self, hz):
        """Moves every unit's Hz at once; returns the step's record."""
        with self.lock:
            self.answered.clear()
            step = {"hz": hz, "before": {u.index: u.setpoint for u in self.units}, "read": {}, "reads": {},
                    "last": None, "write": {}, "last_before_write": {}}
            for unit in self.units:
                unit.set_hz(hz)
            step["t"] = time.monotonic_ns()
            if self.trace:
                self.trace.write(f"S,0,{step['t']},{step['t']},0,{hz}\n")
            self.step = step
        return step

    def settle(self):
        """Ends the step being timed."""
        with self.lock:
            self.step = None


class Store(ModbusSlaveContext):
    """One unit's datastore; reports what it serves to the bench."""

    def __init__(self, unit, bench):
        super().__init__(hr=unit.block)
        self.unit, self.bench = unit, bench

    async def async_getValues(self, fc_as_hex, address, count=1):
        with self.bench.lock:
            values = self.getValues(fc_as_hex, address, count)
            self.bench.read_served(self.unit, address, count, self.unit.received_ns, time.monotonic_ns())
        return values

    async def async_setValues(self, fc_as_hex, address, values):
        with self.bench.lock:
            self.setValues(fc_as_hex, address, values)
            self.bench.write_served(self.unit, address, values, self.unit.received_ns)


# Arrival stamps: pymodbus hands each chunk the transport received to its request handler's
# callback_data, before the framer decodes it; that is the nearest this side of the kernel gets.
_callback_data = ModbusServerRequestHandler.callback_data


def _stamped_callback_data(self, data, addr=()):
    unit = getattr(self.server, "bench_unit", None)
    if unit is not None:
        unit.received_ns = time.monotonic_ns()
    return _callback_data(self, data, addr)


ModbusServerRequestHandler.callback_data = _stamped_callback_data


def quantiles(values):
    s = sorted(values)
    if not s:
        return float("nan"), float("nan"), float("nan")

    def q(f):
        return s[min(len(s) - 1, max(0, math.ceil(len(s) * f) - 1))]

    return q(0.5), q(0.99), s[-1]


def steps(bench, units, args):
    """Runs the steps (on a thread of its own) and prints what they measured."""
    low, high = args.gap
    timed = units[0].index
    samples = {"timed": [], "first": [], "all": []}
    stages = {"step_to_read": [], "read_to_last_answer": [], "last_answer_to_write": []}
    rounds = []
    misses = 0
    events = open(args.events, "w") if args.events else None
    if events:
        events.write("step,hz,timed_step_to_read_us,timed_read_to_last_us,timed_last_to_write_us,timed_step_to_write_us,"
                     "timed_reads,first_unit,first_step_to_write_us,all_step_to_write_us\n")
    for i in range(args.steps):
        time.sleep(random.uniform(low, high))
        step = bench.move(args.low_hz if i % 2 == 0 else args.high_hz)
        bench.answered.wait(timeout=args.timeout)
        bench.settle()
        t, writes = step["t"], step["write"]

        def us(a, b):
            return "" if a is None or b is None else f"{(b - a) / 1e3:.1f}"

        if timed not in writes:
            misses += 1
            if events:
                events.write(f"{i},{step['hz']},,,,,{step['reads'].get(timed, 0)},,,\n")
            continue
        w = writes[timed]
        samples["timed"].append((w - t) / 1e6)
        first_unit = min(writes, key=writes.get)
        samples["first"].append((writes[first_unit] - t) / 1e6)
        whole = max(writes.values()) if len(writes) == len(units) else None
        if whole is not None:
            samples["all"].append((whole - t) / 1e6)
        # The timed unit's way: its first read after the step (the sample that saw it), the last read
        # of any unit answered before its write (what the decision waited for), its write.
        read, last = step["read"].get(timed), step["last_before_write"].get(timed)
        if read is not None and last is not None and read <= w:
            stages["step_to_read"].append((read - t) / 1e6)
            stages["read_to_last_answer"].append((last - read) / 1e6)
            stages["last_answer_to_write"].append((w - last) / 1e6)
        rounds.append(step["reads"].get(timed, 0))
        if events:
            events.write(f"{i},{step['hz']},{us(t, read)},{us(read, last)},{us(last, w)},{us(t, w)},"
                         f"{step['reads'].get(timed, 0)},{first_unit},{us(t, writes[first_unit])},{us(t, whole)}\n")
    if events:
        events.close()
    if args.csv:
        with open(args.csv, "w") as csv:
            csv.write("".join(f"{v:.3f}\n" for v in samples["timed"]))

    p50, p99, mx = quantiles(samples["timed"])
    print(f"SUMMARY step_to_wire n={len(samples['timed'])} misses={misses} p50_ms={p50:.2f} p99_ms={p99:.2f} "
          f"max_ms={mx:.2f}", flush=True)
    for name, values in (("first_unit", samples["first"]), ("all_units", samples["all"])):
        a, b, c = quantiles(values)
        print(f"UNITS {name} n={len(values)} p50_ms={a:.2f} p99_ms={b:.2f} max_ms={c:.2f}", flush=True)
    for name, values in stages.items():
        a, b, c = quantiles(values)
        print(f"STAGES {name} n={len(values)} p50_ms={a:.2f} p99_ms={b:.2f} max_ms={c:.2f}", flush=True)
    if rounds:
        once = sum(1 for r in rounds if r == 1)
        print(f"READS timed_unit_first_read_decided={once}/{len(rounds)}", flush=True)


async def run(args):
    units = [Unit(i + 1) for i in range(args.units)]
    bench = Bench(units)
    if args.trace:
        bench.trace = open(args.trace, "w")
        bench.trace.write("kind,unit,arrived_ns,served_ns,address,count_or_watts\n")
    servers = []
    for unit in units:
        port = free_port()
        context = ModbusServerContext(slaves=Store(unit, bench), single=True)
        server = ModbusTcpServer(context, framer=ModbusSocketFramer, address=("127.0.0.1", port))
        server.bench_unit = unit
        await server.listen()
        servers.append((server, port))
    print("PORTS " + " ".join(str(p) for _, p in servers), flush=True)

    deadline = time.monotonic() + args.wait
    while any(u.setpoint is None for u in units):
        if time.monotonic() > deadline:
            print(f"SUMMARY step_to_wire n=0 misses={args.steps} p50_ms=nan p99_ms=nan max_ms=nan", flush=True)
            print("no controller wrote every unit's WSet within the wait", file=sys.stderr)
            return 2
        await asyncio.sleep(0.05)
    await asyncio.sleep(args.warmup)

    # A short switch interval: the step thread gets the interpreter within 0.2 ms of its instant
    # even while the event loop serves.
    sys.setswitchinterval(0.0002)
    await asyncio.to_thread(steps, bench, units, args)
    for server, _ in servers:
        await server.shutdown()
    return 0 if misses == 0 else 1


def gap(text):
    low, _, high = text.partition(":")
    return float(low), float(high or low)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--gap", type=gap, default=(0.35, 0.75), help="seconds between steps, LOW:HIGH")
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--low-hz", type=float, default=49.5)
    parser.add_argument("--high-hz", type=float, default=50.0)
    parser.add_argument("--timeout", type=float, default=2, help="seconds a step may take before it counts as missed")
    parser.add_argument("--wait", type=float, default=60, help="seconds to wait for the controller's first writes")
    parser.add_argument("--csv")
    parser.add_argument("--events")
    parser.add_argument("--trace", help="write every request here (kind R/W/S, unit, arrived and served ns, ...)")
    args = parser.parse_args()
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
