#!/usr/bin/env python3
"""An independent SunSpec inverter for bessd to discover and command: pymodbus 3.6 serves a register
image laid out from pysunspec2's copy of the official model definitions (not from bessd's tables).
Prints "PORT <n>" once listening, then a line "WSET ena=<> mod=<> w=<> rvrt_tms=<> rvrt=<> ena_rvrt=<>"
each time the 704 WSet block changes. Stops after the number of seconds given (default 30).
Usage: pymodbus_sunspec_server.py [SECONDS]"""
import sys

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext

from peerserver import BASE, image, serve

def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30
    words, where, put = image((1, 701, 120, 704))

    put(701, "W", 1234)              # W_SF 0 → 1234 W
    put(701, "W_SF", 0)
    put(701, "Hz", 49876)            # Hz_SF −3 → 49.876 Hz
    put(701, "Hz_SF", 0xFFFD)
    put(701, "InvSt", 3)             # RUNNING
    put(701, "Var", -250)            # Var_SF 0 → −250 var (absorbing)
    put(701, "Var_SF", 0)
    put(701, "LNV", 2312)            # V_SF −1 → 231.2 V (LLV 400.4 V beside it)
    put(701, "LLV", 4004)
    put(701, "V_SF", 0xFFFF)
    put(120, "WRtg", 5000)           # WRtg_SF 1 → 50 kW
    put(120, "WRtg_SF", 1)
    put(704, "WSet_SF", 0)

    block = ModbusSequentialDataBlock(BASE + 1, list(words))  # pymodbus adds 1 to the protocol address
    context = ModbusServerContext(slaves=ModbusSlaveContext(hr=block), single=True)

    address, offsets = where[704]
    names = ["WSetEna", "WSetMod", "WSet", "WSetRvrtTms", "WSetRvrt", "WSetEnaRvrt"]

    def state():
        values = []
        for name in names:
            offset, size, kind = offsets[name]
            regs = block.getValues(address + offset + 1, size)
            value = regs[0] if size == 1 else (regs[0] << 16) | regs[1]
            if kind == "int32" and value >= 1 << 31:
                value -= 1 << 32
            values.append(value)
        return values

    serve(context, seconds, state, lambda v: "WSET ena={} mod={} w={} rvrt_tms={} rvrt={} ena_rvrt={}".format(*v))


if __name__ == "__main__":
    main()
