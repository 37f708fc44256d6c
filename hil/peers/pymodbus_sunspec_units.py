#!/usr/bin/env python3
"""Several SunSpec inverters behind one Modbus endpoint (a gateway, or an RS-485 line), served by
pymodbus 3.6 from pysunspec2's copy of the official model definitions (not from bessd's tables).

Each unit id gets its own image: "SunS", 1, 701, 120, 121, then 704 or 124, end (702 before 704 when
asked for). Measured W is 1000 × unit + 234 (W_SF 0), so a reading names the unit it came from.

Usage: pymodbus_sunspec_units.py [--seconds S] [--port N | --rtu DEVICE --baud B --parity P] UNIT[:OPTION,...] ...
Options per unit:
  124             command model 124 instead of 704 (WChaMax 20 kW at WChaMax_SF 1, InOutWRte_SF -1)
  wchamax=W       124's WChaMax in watts (a multiple of 10)
  wsetsf=N        704's WSet_SF (0x8000 = "none": not implemented)
  wsentinel       701 W is 0x8000 (not implemented)
  lnv=RAW         701 LNV raw (default 0), at V_SF
  vsf=N           701 V_SF (default 0; 0x8000 or "none": not implemented)
  var=RAW         701 Var raw (default 0), at Var_SF 0 (as W at W_SF 0)
  varsetsf=N      704 VarSet_SF (default 0; "none": not implemented)
  varpctsf=N      704 VarSetPct_SF (default 0; "none": not implemented)
  novar           704's var points (VarSetEna … VarSetRvrtRem, VarSet_SF, VarSetPct_SF) read "not
                  implemented" (0xFFFF, 0x8000, 0x80000000, 0xFFFFFFFF as their types say)
  varpct          704 without VarSet, VarSetRvrt and VarSet_SF (not implemented): VAR_MAX_PCT only
                  (with model 702, which gives VarSetPct its base)
  702             model 702 (DER capacity) before 704, with the ratings below (also with varpct,
                  vamax, varmaxinj or varmaxabs); without it the image has no 702
  vamax=VA        702 VAMaxRtg and VAMax (default 55000), at VA_SF 1 (a multiple of 10)
  varmaxinj=VAR   702 VarMaxInjRtg and VarMaxInj (default 30000), at Var_SF 1
  varmaxabs=VAR   702 VarMaxAbsRtg and VarMaxAbs (default 25000), at Var_SF 1
  exception       every request to this unit is answered with exception 4 (server device failure)
  late=S          every read of this unit is answered S seconds late (the loop keeps serving others)
  conn            model 123 (Immediate controls) before the command model: Conn opens (0) and closes (1)
                  the unit, as a device does: 701 ConnSt follows Conn and W reads 0 while open, and
                  an open not written again within Conn_RvrtTms reverts to connected (Conn 1)
  wintms=N        with conn: 123 Conn_WinTms preset to N (the CONN line then ends " win_tms=<>")
  rvrttms=N       with conn: 123 Conn_RvrtTms preset to N (65535: not implemented)
  connrefuse      with conn: a write reaching Conn_WinTms..Conn is answered with exception 2
  meter           a site meter instead of an inverter: "SunS", 1, 203, end, with W = 100 × unit + 45
                  at W_SF 1 (+ = import), Hz 50.01 (Hz_SF -2), TotWhImp 7000 and TotWhExp 3000 Wh

Prints "PORT <n>" (TCP) or "READY" (RTU) once serving, then, as they change:
  "CONNECTIONS active=<a> total=<t>"         TCP sessions now open / ever accepted
  "WSET unit=<u> ena=<> mod=<> w=<> rvrt_tms=<> rvrt=<> ena_rvrt=<>"    a 704 unit's WSet block
  "VARSET unit=<u> ena=<> mod=<> pri=<> var=<> pct=<> rvrt_tms=<> rvrt=<> ena_rvrt=<>"
                                             a 704 unit's var block (VarSetEna, VarSetMod, VarSetPri,
                                             VarSet, VarSetPct, VarSetRvrtTms, VarSetRvrt, VarSetEnaRvrt;
                                             raw, signed); not for "novar". A write reaching VarSetEna
                                             … VarSetRvrtTms restarts its revert timer; after
                                             VarSetRvrtTms s (if > 0) without one, while VarSetEna is
                                             1, VarSetEna takes VarSetEnaRvrt, VarSet VarSetRvrt and
                                             VarSetPct VarSetPctRvrt (VarSetRvrtRem counts down), as
                                             123's Conn reverts
  "STORAGE unit=<u> mod=<> out=<> in=<> rvrt_tms=<>"                     a 124 unit's rate block
  "CONN unit=<u> conn=<> rvrt_tms=<> writes=<n>"   a "conn" unit's 123 Conn and Conn_RvrtTms, and the
                                             writes that reached them so far
  "REQUESTS unit=<u> reads=<r> writes=<w>"   requests addressed to each unit (every 0.5 s if changed)
"""
import argparse
import asyncio
import math
import time

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import ModbusSerialServer, ModbusTcpServer
from pymodbus.transaction import ModbusRtuFramer, ModbusSocketFramer

from peerserver import BASE, layout, free_port

class Unit:
    def __init__(self, uid, options):
        self.uid = uid
        self.options = options
        self.meter = "meter" in options
        self.control = 124 if "124" in options else 704
        words = [0x5375, 0x6E53]
        self.where = {}
        self.conn = "conn" in options
        self.conn_writes, self.conn_written = 0, time.monotonic()
        self.var_points = not self.meter and self.control == 704 and "novar" not in options
        self.var_written, self.var_armed = time.monotonic(), False
        rated = {"702", "varpct", "vamax", "varmaxinj", "varmaxabs"} & set(options)
        ratings = (702,) if self.control == 704 and rated else ()
        models = (1, 701, 120, 121) + ratings + ((123,) if self.conn else ()) + (self.control,)
        for mid in ((1, 203) if self.meter else models):
            offsets, length = layout(mid)
            self.where[mid] = (BASE + len(words), offsets)
            block = [0] * (length + 2)
            block[0], block[1] = mid, length
            words += block
        words += [0xFFFF, 0]
        self.words = words
        if self.meter:
            self.put(203, "W", 100 * uid + 45)
            self.put(203, "W_SF", 1)
            self.put(203, "Hz", 5001)
            self.put(203, "Hz_SF", 0xFFFE)
            self.put(203, "TotWhImp", 7)
            self.put(203, "TotWhExp", 3)
            self.put(203, "TotWh_SF", 3)
            self.block = ModbusSequentialDataBlock(BASE + 1, list(words))
            return
        self.put(701, "W", 0x8000 if "wsentinel" in options else 1000 * uid + 234)
        self.put(701, "W_SF", 0)
        self.put(701, "LNV", int(options.get("lnv", "0"), 0))
        self.put(701, "V_SF", sunssf(options.get("vsf", "0")))
        self.put(701, "Var", int(options.get("var", "0"), 0))
        self.put(701, "Hz", 49_876 + uid)        # Hz_SF −3
        self.put(701, "Hz_SF", 0xFFFD)
        self.put(701, "InvSt", 3)                # RUNNING
        self.put(701, "ConnSt", 1)               # CONNECTED
        if self.conn:
            self.put(123, "Conn", 1)             # CONNECT
            if "wintms" in options:
                self.put(123, "Conn_WinTms", int(options["wintms"]))
            if "rvrttms" in options:
                self.put(123, "Conn_RvrtTms", int(options["rvrttms"]))
        self.put(120, "WRtg", 5000)              # WRtg_SF 1 → 50 kW
        self.put(120, "WRtg_SF", 1)
        self.put(121, "WMax", 5000)              # WMax_SF 1 → 50 kW
        self.put(121, "WMax_SF", 1)
        if self.control == 704:
            sf = options.get("wsetsf", "0")
            self.put(704, "WSet_SF", 0x8000 if sf == "none" else int(sf) & 0xFFFF)
            self.var_block(options)
            if 702 in self.where:
                for name, key, default in (("VAMax", "vamax", 55000), ("VarMaxInj", "varmaxinj", 30000),
                                           ("VarMaxAbs", "varmaxabs", 25000)):
                    value = int(options.get(key, str(default))) // 10
                    self.put(702, name, value)
                    self.put(702, name + "Rtg", value)
                self.put(702, "WMaxRtg", 5000)   # as 120 WRtg: 50 kW
                self.put(702, "WMax", 5000)
                for sf in ("W_SF", "VA_SF", "Var_SF"):
                    self.put(702, sf, 1)
        else:
            self.put(124, "WChaMax", int(options.get("wchamax", "20000")) // 10)  # WChaMax_SF 1
            self.put(124, "WChaMax_SF", 1)
            self.put(124, "InOutWRte_SF", 0xFFFF)  # −1: tenths of a percent
        self.block = ModbusSequentialDataBlock(BASE + 1, list(words))  # pymodbus adds 1 to the address

    # The var block of 704, in the order pysunspec2's model lists it.
    VAR_POINTS = ("VarSetEna", "VarSetMod", "VarSetPri", "VarSet", "VarSetRvrt", "VarSetPct", "VarSetPctRvrt",
                  "VarSetEnaRvrt", "VarSetRvrtTms", "VarSetRvrtRem")
    NOT_IMPLEMENTED = {"enum16": 0xFFFF, "int16": 0x8000, "uint16": 0xFFFF, "int32": 0x80000000,
                       "uint32": 0xFFFFFFFF, "sunssf": 0x8000}

    def var_block(self, options):
        """704's var points: zeros with the scale factors asked for; "novar" leaves them all not
        implemented, "varpct" VarSet, VarSetRvrt and VarSet_SF."""
        _, offsets = self.where[704]
        absent = set()
        if "novar" in options:
            absent = set(self.VAR_POINTS) | {"VarSet_SF", "VarSetPct_SF"}
        elif "varpct" in options:
            absent = {"VarSet", "VarSetRvrt", "VarSet_SF"}
        for name in self.VAR_POINTS + ("VarSet_SF", "VarSetPct_SF"):
            if name in absent:
                self.put(704, name, self.NOT_IMPLEMENTED[offsets[name][2]])
        if "VarSet_SF" not in absent:
            self.put(704, "VarSet_SF", sunssf(options.get("varsetsf", "0")))
        if "VarSetPct_SF" not in absent:
            self.put(704, "VarSetPct_SF", sunssf(options.get("varpctsf", "0")))

    def put(self, mid, name, value):
        address, offsets = self.where[mid]
        offset, size, _ = offsets[name]
        index = address - BASE + offset
        if size == 1:
            self.words[index] = value & 0xFFFF
        else:
            self.words[index] = (value >> 16) & 0xFFFF
            self.words[index + 1] = value & 0xFFFF

    def get(self, mid, name):
        address, offsets = self.where[mid]
        offset, size, kind = offsets[name]
        regs = self.block.getValues(address + offset + 1, size)
        value = regs[0] if size == 1 else (regs[0] << 16) | regs[1]
        bits = 16 * size
        if kind.startswith("int") and value >= 1 << (bits - 1):
            value -= 1 << bits
        return value

    def set(self, mid, name, value):
        """Sets a point in the served registers (one or two, high word first)."""
        address, offsets = self.where[mid]
        offset, size, _ = offsets[name]
        words = [value & 0xFFFF] if size == 1 else [(value >> 16) & 0xFFFF, value & 0xFFFF]
        self.block.setValues(address + offset + 1, words)

    def follow_var(self):
        """A 704 unit's var block as a device runs it: the revert timer counts down from the last
        write reaching VarSetEna … VarSetRvrtTms; when it runs out the revert values take over."""
        if not self.var_points:
            return None
        timeout = self.get(704, "VarSetRvrtTms")
        remaining = 0
        if self.var_armed and timeout > 0:
            left = timeout - (time.monotonic() - self.var_written)
            if left > 0:
                remaining = math.ceil(left)
            elif self.get(704, "VarSetEna") != 1:
                self.var_armed = False  # handed back (VarSetEna 0): nothing to revert
            else:
                self.var_armed = False
                self.set(704, "VarSetEna", self.get(704, "VarSetEnaRvrt"))
                self.set(704, "VarSetPct", self.get(704, "VarSetPctRvrt"))
                if "varpct" not in self.options:
                    self.set(704, "VarSet", self.get(704, "VarSetRvrt"))
        self.set(704, "VarSetRvrtRem", remaining)
        values = [self.get(704, n) for n in ("VarSetEna", "VarSetMod", "VarSetPri", "VarSet", "VarSetPct",
                                             "VarSetRvrtTms", "VarSetRvrt", "VarSetEnaRvrt")]
        return "VARSET unit={} ena={} mod={} pri={} var={} pct={} rvrt_tms={} rvrt={} ena_rvrt={}".format(self.uid, *values)

    def follow_conn(self):
        """A "conn" unit acts on Conn as a device does: ConnSt follows it, W is 0 while open."""
        if not self.conn:
            return None
        conn, revert = self.get(123, "Conn"), self.get(123, "Conn_RvrtTms")
        if conn == 0 and revert > 0 and time.monotonic() - self.conn_written > revert:
            conn = 1  # the revert timer ran out: connected again
            address, offsets = self.where[123]
            self.block.setValues(address + offsets["Conn"][0] + 1, [1])
        address, offsets = self.where[701]
        self.block.setValues(address + offsets["ConnSt"][0] + 1, [1 if conn == 1 else 0])
        self.block.setValues(address + offsets["W"][0] + 1, [(1000 * self.uid + 234) if conn == 1 else 0])
        line = "CONN unit={} conn={} rvrt_tms={} writes={}".format(self.uid, conn, revert, self.conn_writes)
        if "wintms" in self.options:
            line += " win_tms={}".format(self.get(123, "Conn_WinTms"))
        return line

    def refuses(self, address, count):
        """A "connrefuse" unit refuses a write reaching Conn_WinTms..Conn."""
        if not self.conn or "connrefuse" not in self.options:
            return False
        start, offsets = self.where[123]
        first, last = start + offsets["Conn_WinTms"][0], start + offsets["Conn"][0]
        return address <= last and address + count > first

    def wrote(self, address, count):
        """A write of `count` registers at protocol address `address`: one reaching Conn or
        Conn_RvrtTms restarts the revert timer, one reaching VarSetEna … VarSetRvrtTms the var block's."""
        if self.var_points:
            start, offsets = self.where[704]
            first, last = start + offsets["VarSetEna"][0], start + offsets["VarSetRvrtTms"][0] + 1
            if address <= last and address + count > first:
                self.var_written, self.var_armed = time.monotonic(), True
        if not self.conn:
            return
        start, offsets = self.where[123]
        first, last = start + offsets["Conn_RvrtTms"][0], start + offsets["Conn"][0]
        if address <= last and address + count > first:
            self.conn_writes += 1
            self.conn_written = time.monotonic()

    def state(self):
        if self.meter:
            return "METER unit={} w={}".format(self.uid, self.get(203, "W"))
        if self.control == 704:
            values = [self.get(704, n) for n in ("WSetEna", "WSetMod", "WSet", "WSetRvrtTms", "WSetRvrt", "WSetEnaRvrt")]
            return "WSET unit={} ena={} mod={} w={} rvrt_tms={} rvrt={} ena_rvrt={}".format(self.uid, *values)
        values = [self.get(124, n) for n in ("StorCtl_Mod", "OutWRte", "InWRte", "InOutWRte_RvrtTms")]
        return "STORAGE unit={} mod={} out={} in={} rvrt_tms={}".format(self.uid, *values)


class Store(ModbusSlaveContext):
    """One unit's datastore, with the faults its options ask for."""

    def __init__(self, unit):
        super().__init__(hr=unit.block)
        self.unit = unit

    def validate(self, fc_as_hex, address, count=1):
        # An "exception" unit fails every request alike, wherever it points.
        if "exception" in self.unit.options:
            return True
        if fc_as_hex in (6, 16) and self.unit.refuses(address, count):
            return False  # pymodbus answers exception 2 (illegal data address)
        return super().validate(fc_as_hex, address, count)

    async def async_getValues(self, fc_as_hex, address, count=1):
        if "exception" in self.unit.options:
            raise RuntimeError("unit answers exceptions")  # pymodbus answers exception 4
        late = float(self.unit.options.get("late", "0"))
        if late > 0:
            await asyncio.sleep(late)
        return self.getValues(fc_as_hex, address, count)

    async def async_setValues(self, fc_as_hex, address, values):
        if "exception" in self.unit.options:
            raise RuntimeError("unit answers exceptions")
        self.setValues(fc_as_hex, address, values)
        self.unit.wrote(address, len(values))


def sunssf(text):
    """A scale factor option: a number (0x8000 allowed) or "none" (0x8000, not implemented)."""
    return 0x8000 if text == "none" else int(text, 0) & 0xFFFF


def parse_unit(text):
    uid, _, rest = text.partition(":")
    options = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        options[key] = value
    return int(uid), options


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rtu")
    parser.add_argument("--baud", type=int, default=19200)
    parser.add_argument("--parity", default="N")  # a pty refuses parity (EINVAL)
    parser.add_argument("--port", type=int, default=0)  # TCP: 0 picks a free one (a restart takes the same)
    parser.add_argument("units", nargs="+")
    args = parser.parse_args()
    units = {uid: Unit(uid, options) for uid, options in map(parse_unit, args.units)}
    context = ModbusServerContext(slaves={uid: Store(u) for uid, u in units.items()}, single=False)
    counts = {uid: [0, 0] for uid in units}

    def trace(request, *_):
        if request.slave_id in counts:
            counts[request.slave_id][0 if request.function_code in (3, 4) else 1] += 1

    async def run():
        if args.rtu:
            server = ModbusSerialServer(context, framer=ModbusRtuFramer, port=args.rtu, baudrate=args.baud,
                                        parity=args.parity, bytesize=8, stopbits=1, request_tracer=trace)
        else:
            port = args.port or free_port()
            server = ModbusTcpServer(context, framer=ModbusSocketFramer, address=("127.0.0.1", port),
                                     request_tracer=trace)
        await server.listen()
        print("READY" if args.rtu else f"PORT {port}", flush=True)
        seen, last_connections, last_states, last_counts, ticks = set(), None, {}, {}, 0
        loop = asyncio.get_running_loop()
        end = loop.time() + args.seconds
        while loop.time() < end:
            if not args.rtu:
                active = set(server.active_connections)
                seen |= active
                connections = (len(active), len(seen))
                if connections != last_connections:
                    print("CONNECTIONS active={} total={}".format(*connections), flush=True)
                    last_connections = connections
            for uid, unit in units.items():
                state = unit.state()
                if last_states.get(uid) not in (None, state):
                    print(state, flush=True)
                last_states[uid] = state
                conn = unit.follow_conn()
                if conn is not None and last_states.get(("conn", uid)) not in (None, conn):
                    print(conn, flush=True)
                last_states[("conn", uid)] = conn
                var = unit.follow_var()
                if var is not None and last_states.get(("var", uid)) not in (None, var):
                    print(var, flush=True)
                last_states[("var", uid)] = var
            ticks += 1
            if ticks % 25 == 0:
                for uid, (reads, writes) in counts.items():
                    if last_counts.get(uid) != (reads, writes):
                        print(f"REQUESTS unit={uid} reads={reads} writes={writes}", flush=True)
                        last_counts[uid] = (reads, writes)
            await asyncio.sleep(0.02)
        await server.shutdown()

    asyncio.run(run())


if __name__ == "__main__":
    main()
