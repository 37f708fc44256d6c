#!/usr/bin/env python3
"""Frequency step → setpoint on the wire, timed by an independent peer: pymodbus 3.6 serves N SunSpec
inverters on loopback, each on its own TCP port (one process, one event loop), with register images
laid out from pysunspec2's copy of the official model definitions (not from bessd's tables).

Each inverter: "SunS", 1, 701, 120, 121, 704, end. 701 Hz (Hz_SF −3) is the grid frequency every
unit measures; 120 WRtg is 100 kW; 704 WSet_SF is 0; 701 W (W_SF 1) follows the last WSet written.

Once every unit has had a WSet write (the controller is up) and the warm-up has passed, the peer
moves every unit's Hz at once, alternately to --low-hz and back to --high-hz, --steps times, --gap
seconds apart and then at a phase of unit 1's read interval: the phases are spread evenly over the
interval ((k + ½)/n, in random order), so the wait for the next read is uniform by construction
(--phase random: at random instants instead). The steps run on a thread of their own, one SCHED_FIFO
priority above the serving thread when the peer runs SCHED_FIFO. For each step it stamps
(time.monotonic_ns, CLOCK_MONOTONIC):
  step     the instant the registers changed;
  write    per unit, the arrival of its first WSet write that reflects the step (a value more than
           100 W from what that unit was last written before the step);
  read     the arrival of unit 1's first read of Hz served after the step (the sample that saw it),
           or of any unit's first when unit 1 was written before its own (a decision on the others');
  last     when the last read of Hz (any unit) served after the step and before a unit's write was
           answered: what the decision for that write waited for.
Arrival is when the kernel received the request on lo (a packet socket with SO_TIMESTAMPNS; needs
CAP_NET_RAW), and the last answer when the kernel received it back; without the packet socket
(--stamps peer, or not permitted) arrival is when pymodbus's protocol got the bytes (its
callback_data), which waits for the peer's process to be scheduled. Each step's line in --events
says which (stamps) and how much later the peer's process saw unit 1's write (peer_lag_us).
The headline is unit 1's write, as `bess-hil bench step-latency` times its first unit; the first and
the last unit to write are reported beside it.

--voltage: the same for a voltage step and the var setpoint (issue 59's bench row). 701 LNV (V_SF −1,
230 V nominal) steps alternately to --high-pu and back to --low-pu (1.06 and 1.00 p.u.) instead of
Hz; the write timed is each unit's first 704 VarSet write (VarSet_SF 0, var) that moves more than
10 var the way the step asks (down after a rise of voltage, up after a fall: a volt-var curve's
direction between V2 and V4), from what that unit was last written before the step. A controller
with a response-time filter is still settling from the last step when the next comes; writes that
carry on the old way are not counted. 701 Var follows the last VarSet written. The peer waits for
every unit's VarSet, not its WSet, before the first step.

Prints "PORTS <p1> <p2> ..." once serving, then at the end
  "SUMMARY step_to_wire n=<> misses=<> p50_ms=<> p99_ms=<> max_ms=<>"   unit 1
  "UNITS first_unit|all_units n=<> p50_ms=<> p99_ms=<> max_ms=<>"        the first / last unit to write
  "STAGES step_to_read|read_to_last_answer|last_answer_to_write|read_to_write n=<> p50_ms=<> ..."
                                                   unit 1's way (read_to_write: all after the sample)
  "PHASE spread steps late p50_ms=<> p99_ms=<> max_ms=<>"   how far after its planned instant each step came
  "READS timed_unit_first_read_decided=<k>/<n>"  steps whose write followed unit 1's first read after it
and writes one line per step to --csv (unit 1's step→write, ms) and to --events (every stage, µs);
--trace FILE also records every request and step (for looking closer at where the time goes).
Exits 0 when every step was answered, 1 when some were missed, 2 when no controller came.

Usage: pymodbus_sunspec_step.py [--units 8] [--steps 300] [--gap 0.35:0.75] [--phase spread|random]
                                [--stamps wire|peer] [--warmup 3] [--csv FILE] [--events FILE]
                                [--trace FILE] [--wait 60] [--voltage [--low-pu 1.00] [--high-pu 1.06]]
"""
import argparse
import asyncio
import collections
import math
import os
import random
import socket
import struct
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
REFLECTS_VAR = 10  # --voltage: a VarSet write more than this far the step's way from the last before it
NOMINAL_DV = 2300  # --voltage: 230.0 V at V_SF −1


class Unit:
    """One inverter's register image and what the step bookkeeping needs of it."""

    def __init__(self, index, voltage=False):
        self.index = index
        self.voltage = voltage
        words, self.where, put = image((1, 701, 120, 121, 704))
        put(701, "Hz_SF", 0xFFFD)     # −3: mHz
        put(701, "W_SF", 1)           # tens of W
        put(701, "InvSt", 3)          # RUNNING
        put(120, "WRtg", RATED_W // 10)
        put(120, "WRtg_SF", 1)
        put(121, "WMax", RATED_W // 10)
        put(121, "WMax_SF", 1)
        put(704, "WSet_SF", 0)
        if voltage:
            put(701, "V_SF", 0xFFFF)      # −1: tenths of a volt
            put(704, "VarSet_SF", 0)      # var (704's other var points read 0: implemented)
        self.block = ModbusSequentialDataBlock(BASE + 1, list(words))  # pymodbus adds 1 to the address
        self.hz_at = self.address(701, "Hz")
        self.w_at = self.address(701, "W")
        self.wset_at = self.address(704, "WSet")
        self.var_at = self.address(701, "Var")
        self.varset_at = self.address(704, "VarSet")
        # The point that steps and whose reads are watched: LNV (one register) or Hz (two).
        self.sense_at, self.sense_size = (self.address(701, "LNV"), 1) if voltage else (self.hz_at, 2)
        self.received_ns = 0          # when the request being served arrived (one in flight per connection)
        self.tid = 0                  # its MBAP transaction id (to find it on the wire)
        self.port = 0
        self.hz_reads = collections.deque(maxlen=33)  # arrivals of the last reads of the stepped point
        self.setpoint = None          # the last WSet written, W
        self.var_setpoint = None      # the last VarSet written, var (--voltage)
        self.set_hz(50.0)
        if voltage:
            self.set_level(1.0)

    def address(self, mid, name):
        start, offsets = self.where[mid]
        return start + offsets[name][0]

    def set_hz(self, hz):
        mhz = round(hz * 1000)
        self.block.setValues(self.hz_at + 1, [(mhz >> 16) & 0xFFFF, mhz & 0xFFFF])

    def set_level(self, level):
        """Sets what steps: the voltage in p.u. (--voltage), else the frequency in Hz."""
        if self.voltage:
            self.block.setValues(self.sense_at + 1, [round(level * NOMINAL_DV) & 0xFFFF])
        else:
            self.set_hz(level)

    def ready(self):
        """Whether the controller has written what the steps time (VarSet, else WSet)."""
        return (self.var_setpoint if self.voltage else self.setpoint) is not None


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
        self.wire = None              # the kernel's stamps (Wire), when permitted

    def read_served(self, unit, address, count, arrived, served):
        if self.trace:
            self.trace.write(f"R,{unit.index},{arrived},{served},{address},{count},{unit.port},{unit.tid}\n")
        if not (address <= unit.sense_at and unit.sense_at + unit.sense_size <= address + count):
            return
        unit.hz_reads.append(arrived)
        step = self.step
        if step is None:
            return
        u = unit.index
        if u not in step["write"]:
            step["reads"][u] = step["reads"].get(u, 0) + 1
            if u not in step["read"]:
                step["read"][u], step["read_key"][u] = arrived, (unit.port, unit.tid)
        if step["first_read"] is None and not step["write"]:
            step["first_read"] = (arrived, (unit.port, unit.tid))
        step["last"], step["last_key"] = served, (unit.port, unit.tid)

    def write_served(self, unit, address, values, arrived):
        first, last = address, address + len(values) - 1
        if unit.voltage:
            self.var_served(unit, first, last, values, arrived)
        if not (first <= unit.wset_at and unit.wset_at + 1 <= last):
            if self.trace:
                self.trace.write(f"W,{unit.index},{arrived},{time.monotonic_ns()},{address},,{unit.port},{unit.tid}\n")
            return
        hi, lo = values[unit.wset_at - first], values[unit.wset_at + 1 - first]
        watts = (hi << 16) | lo
        watts = watts - (1 << 32) if watts >= 1 << 31 else watts
        step, u = self.step, unit.index
        if self.trace:
            self.trace.write(f"W,{u},{arrived},{time.monotonic_ns()},{address},{watts},{unit.port},{unit.tid}\n")
        if step is not None and not unit.voltage:
            before = step["before"].get(u)
            if before is None or abs(watts - before) > REFLECTS_W:
                self.reflected(step, unit, arrived)
        unit.setpoint = watts
        w = max(-32768, min(32767, round(watts / 10)))
        unit.block.setValues(unit.w_at + 1, [w & 0xFFFF])

    def var_served(self, unit, first, last, values, arrived):
        """--voltage: a write reaching VarSet (int32) is timed when it moves the step's way."""
        if not (first <= unit.varset_at and unit.varset_at + 1 <= last):
            return
        hi, lo = values[unit.varset_at - first], values[unit.varset_at + 1 - first]
        var = (hi << 16) | lo
        var = var - (1 << 32) if var >= 1 << 31 else var
        step = self.step
        if step is not None and unit.index not in step["write"]:
            before = step["before"].get(unit.index)
            if before is None or (var - before) * step["sign"] > REFLECTS_VAR:
                self.reflected(step, unit, arrived)
        unit.var_setpoint = var
        unit.block.setValues(unit.var_at + 1, [max(-32767, min(32767, var)) & 0xFFFF])

    def reflected(self, step, unit, arrived):
        """Records the unit's first write that reflects the step."""
        u = unit.index
        step["write"][u], step["write_key"][u] = arrived, (unit.port, unit.tid)
        step["last_before_write"][u] = step["last"]
        step["last_key_before_write"][u] = step["last_key"]
        if len(step["write"]) == len(self.units):
            self.answered.set()

    def move(self, level, sign=0, planned=None):
        """Moves every unit's Hz (or voltage) at once (planned for the instant `planned`, ns); returns
        the step's record. `sign`: the way a write reflecting a voltage step moves VarSet (±1)."""
        with self.lock:
            self.answered.clear()
            before = {u.index: u.var_setpoint if u.voltage else u.setpoint for u in self.units}
            step = {"hz": level, "sign": sign, "before": before, "read": {}, "reads": {},
                    "last": None, "write": {}, "last_before_write": {}, "read_key": {}, "last_key": None,
                    "write_key": {}, "last_key_before_write": {}, "first_read": None}
            for unit in self.units:
                unit.set_level(level)
            step["t"] = time.monotonic_ns()
            step["late"] = None if planned is None else step["t"] - planned
            if self.trace:
                self.trace.write(f"S,0,{step['t']},{step['t']},0,{level},,\n")
            self.step = step
        return step

    def instant(self, unit, phase):
        """The next instant (ns) at `phase` (0–1) of the unit's read interval after its last read of Hz:
        the interval is the median of its recent ones, so a loop slower than its period is spread over
        the interval it really keeps. None until it has read a few times."""
        with self.lock:
            reads = list(unit.hz_reads)
        if len(reads) < 3:
            return None
        gaps = sorted(b - a for a, b in zip(reads, reads[1:]))
        interval = gaps[len(gaps) // 2]
        at, soon = reads[-1] + round(phase * interval), time.monotonic_ns() + 200_000
        if interval > 0 and at < soon:
            at += -(-(soon - at) // interval) * interval
        return at

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
        unit.tid = int.from_bytes(bytes(data[:2]), "big")
    return _callback_data(self, data, addr)


class Wire:
    """Every Modbus TCP frame to and from the peer's ports as the kernel saw it: a packet socket on
    lo with the kernel's receive stamps (SO_TIMESTAMPNS, CLOCK_REALTIME, turned into monotonic). The
    peer's own stamps wait for the peer to be scheduled; these do not. Needs CAP_NET_RAW."""

    SO_TIMESTAMPNS = 35
    PACKET_OUTGOING = 4

    def __init__(self, ports):
        self.ports = set(ports)
        self.stamps = {}              # (port, transaction id, "q" request | "a" answer) → monotonic ns
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        self.sock.bind(("lo", 0))
        self.sock.setsockopt(socket.SOL_SOCKET, self.SO_TIMESTAMPNS, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.offset = min(time.time_ns() - time.monotonic_ns() for _ in range(5))
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            data, ancillary, _, address = self.sock.recvmsg(2048, 64)
            if address[2] == self.PACKET_OUTGOING or len(data) < 14 + 20 + 20 + 8:
                continue  # lo shows each frame twice: keep the receiving side's
            ihl = (data[14] & 0x0F) * 4
            if data[12:14] != b"\x08\x00" or data[23] != 6:
                continue
            tcp = 14 + ihl
            sport, dport = struct.unpack_from("!HH", data, tcp)
            payload = tcp + (data[tcp + 12] >> 4) * 4
            if len(data) < payload + 8:
                continue
            tid = struct.unpack_from("!H", data, payload)[0]
            key = (dport, tid, "q") if dport in self.ports else (sport, tid, "a") if sport in self.ports else None
            if key is None:
                continue
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == self.SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", value[:16])
                    self.stamps[key] = sec * 1_000_000_000 + nsec - self.offset

    def at(self, key, kind):
        return None if key is None else self.stamps.get((key[0], key[1], kind))


ModbusServerRequestHandler.callback_data = _stamped_callback_data


def quantiles(values):
    s = sorted(values)
    if not s:
        return float("nan"), float("nan"), float("nan")

    def q(f):
        return s[min(len(s) - 1, max(0, math.ceil(len(s) * f) - 1))]

    return q(0.5), q(0.99), s[-1]


def steps(bench, units, args):
    """Runs the steps (on a thread of its own), prints what they measured; returns the steps missed."""
    low, high = args.gap
    timed = units[0].index
    samples = {"timed": [], "first": [], "all": []}
    stages = {"step_to_read": [], "read_to_last_answer": [], "last_answer_to_write": [], "read_to_write": []}
    rounds = []
    misses = 0
    # Where in the timed unit's read interval each step falls: spread evenly (k + ½)/n over it, in
    # random order, so the sampling wait is uniform by construction and the median does not wander
    # by chance (the median of 300 random phases of 100 ms has a standard deviation near 3 ms);
    # or at random instants (--phase random), as bess-hil step-latency does.
    phases = [(k + 0.5) / args.steps for k in range(args.steps)]
    random.shuffle(phases)
    # One priority above the serving thread when the peer runs SCHED_FIFO: a step due while the
    # peer serves a round would otherwise wait for the round (about 1 ms), and fewer steps would
    # land there than elsewhere. How late each step was is reported.
    try:
        if os.sched_getscheduler(0) == os.SCHED_FIFO:
            os.sched_setparam(0, os.sched_param(os.sched_getparam(0).sched_priority + 1))
    except OSError:
        pass
    late = []
    events = open(args.events, "w") if args.events else None
    if events:
        events.write("step,hz,timed_step_to_read_us,timed_read_to_last_us,timed_last_to_write_us,timed_step_to_write_us,"
                     "timed_reads,first_unit,first_step_to_write_us,all_step_to_write_us,phase,step_late_us,stamps,"
                     "peer_lag_us\n")
    for i in range(args.steps):
        time.sleep(random.uniform(low, high))
        at = bench.instant(units[0], phases[i]) if args.phase == "spread" else None
        if at is not None:
            time.sleep(max(0, at - time.monotonic_ns()) / 1e9)
        if args.voltage:
            # Up first: the controller settled at 1.00 p.u. (no var) before the first step.
            level, sign = (args.high_pu, -1) if i % 2 == 0 else (args.low_pu, 1)
        else:
            level, sign = args.low_hz if i % 2 == 0 else args.high_hz, 0
        step = bench.move(level, sign, planned=at)
        if step["late"] is not None:
            late.append(step["late"] / 1e6)
        bench.answered.wait(timeout=args.timeout)
        bench.settle()
        t, writes = step["t"], step["write"]
        # The sample that saw the step: unit 1's own first read after it, or, when the write came
        # before that read (a controller that decided on the other units' readings), the first read
        # of any unit after the step.
        read_at, read_key = step["read"].get(timed), step["read_key"].get(timed)
        if timed in writes and (read_at is None or read_at > writes[timed]) and step["first_read"] is not None:
            read_at, read_key = step["first_read"]
        last_at, last_key = step["last_before_write"].get(timed), step["last_key_before_write"].get(timed)
        # On the wire: the same requests as the kernel received them (when the peer may sniff).
        stamps, peer_lag = "peer", None
        if bench.wire is not None and timed in writes:
            time.sleep(0.01)  # the packet socket's thread catches up
            wire = bench.wire
            seen = {u: wire.at(step["write_key"][u], "q") for u in writes}
            if all(v is not None for v in seen.values()):
                peer_lag = writes[timed] - seen[timed]
                writes, stamps = seen, "wire"
                read_at = wire.at(read_key, "q") or read_at
                last_at = wire.at(last_key, "a") or last_at

        def us(a, b):
            return "" if a is None or b is None else f"{(b - a) / 1e3:.1f}"

        late_us = "" if step["late"] is None else f"{step['late'] / 1e3:.1f}"

        if timed not in writes:
            misses += 1
            if events:
                events.write(f"{i},{step['hz']},,,,,{step['reads'].get(timed, 0)},,,,{phases[i]:.4f},{late_us},,\n")
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
        read, last = read_at, last_at
        if read is not None and last is not None and read <= w:
            stages["step_to_read"].append((read - t) / 1e6)
            stages["read_to_last_answer"].append((last - read) / 1e6)
            stages["last_answer_to_write"].append((w - last) / 1e6)
            stages["read_to_write"].append((w - read) / 1e6)
        rounds.append(step["reads"].get(timed, 0))
        if events:
            events.write(f"{i},{step['hz']},{us(t, read)},{us(read, last)},{us(last, w)},{us(t, w)},"
                         f"{step['reads'].get(timed, 0)},{first_unit},{us(t, writes[first_unit])},{us(t, whole)},"
                         f"{phases[i]:.4f},{late_us},{stamps},{'' if peer_lag is None else f'{peer_lag / 1e3:.1f}'}\n")
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
    if late:
        a, b, c = quantiles(late)
        print(f"PHASE spread steps late p50_ms={a:.3f} p99_ms={b:.3f} max_ms={c:.3f}", flush=True)
    if rounds:
        once = sum(1 for r in rounds if r == 1)
        print(f"READS timed_unit_first_read_decided={once}/{len(rounds)}", flush=True)
    return misses


async def run(args):
    units = [Unit(i + 1, voltage=args.voltage) for i in range(args.units)]
    bench = Bench(units)
    if args.trace:
        bench.trace = open(args.trace, "w")
        bench.trace.write("kind,unit,arrived_ns,served_ns,address,count_or_watts,port,tid\n")
    servers = []
    for unit in units:
        port = free_port()
        context = ModbusServerContext(slaves=Store(unit, bench), single=True)
        server = ModbusTcpServer(context, framer=ModbusSocketFramer, address=("127.0.0.1", port))
        server.bench_unit = unit
        unit.port = port
        await server.listen()
        servers.append((server, port))
    if args.stamps == "wire":
        try:
            bench.wire = Wire([p for _, p in servers])
        except OSError as error:
            print(f"no wire stamps ({error}): the peer's own stamps are used", file=sys.stderr, flush=True)
    print("PORTS " + " ".join(str(p) for _, p in servers), flush=True)

    deadline = time.monotonic() + args.wait
    while not all(u.ready() for u in units):
        if time.monotonic() > deadline:
            print(f"SUMMARY step_to_wire n=0 misses={args.steps} p50_ms=nan p99_ms=nan max_ms=nan", flush=True)
            print(f"no controller wrote every unit's {'VarSet' if args.voltage else 'WSet'} within the wait",
                  file=sys.stderr)
            return 2
        await asyncio.sleep(0.05)
    await asyncio.sleep(args.warmup)

    # A short switch interval: the step thread gets the interpreter within 0.2 ms of its instant
    # even while the event loop serves.
    sys.setswitchinterval(0.0002)
    misses = await asyncio.to_thread(steps, bench, units, args)
    for server, _ in servers:
        await server.shutdown()
    if bench.trace:
        # The kernel's stamps of every frame, for step_trace_stages.py: q the request, a the answer.
        with bench.lock:
            unit_of = {u.port: u.index for u in units}
            for (port, tid, kind), ns in list(bench.wire.stamps.items()) if bench.wire else []:
                bench.trace.write(f"{kind},{unit_of[port]},{ns},{ns},,,{port},{tid}\n")
            bench.trace.close()
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
    parser.add_argument("--voltage", action="store_true",
                        help="step 701 LNV and time the first VarSet write that moves the step's way")
    parser.add_argument("--low-pu", type=float, default=1.00)
    parser.add_argument("--high-pu", type=float, default=1.06)
    parser.add_argument("--timeout", type=float, default=2, help="seconds a step may take before it counts as missed")
    parser.add_argument("--wait", type=float, default=60, help="seconds to wait for the controller's first writes")
    parser.add_argument("--phase", choices=("spread", "random"), default="spread",
                        help="steps spread evenly over the timed unit's read interval, or at random instants")
    parser.add_argument("--stamps", choices=("wire", "peer"), default="wire",
                        help="arrivals as the kernel received them (a packet socket on lo; needs CAP_NET_RAW), "
                             "or as the peer's process saw them")
    parser.add_argument("--csv")
    parser.add_argument("--events")
    parser.add_argument("--trace", help="write every request here (kind R/W/S, unit, arrived and served ns, ...)")
    args = parser.parse_args()
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
