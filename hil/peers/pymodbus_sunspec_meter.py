#!/usr/bin/env python3
"""An independent SunSpec meter at a grid connection point for bessd to discover and read: pymodbus
3.6 serves a register image laid out from pysunspec2's copy of the official model definitions
(common model 1 and meter model 203), not from bessd's tables. Prints "PORT <n>" once listening.
Values: W = 12345 at W_SF -1 (1234.5 W, + = import as SunSpec meters state it), Hz = 4998 at
Hz_SF -2 (49.98 Hz), TotWhImp = 2500 and TotWhExp = 1000 at TotWh_SF 3 (2.5 MWh and 1 MWh),
VAR = -4321 at VAR_SF -1 (-432.1 var, signed as W), PhV = 2305 at V_SF -1 (230.5 V, PPV 399.2 V beside it).
With a third argument "delta": PhV not implemented (0x8000) and PPV = 4000 (400.0 V line to line), as a
delta meter without a neutral.
Usage: pymodbus_sunspec_meter.py [SECONDS] [W] [delta]"""
import sys

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext

from peerserver import BASE, image, serve


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30
    w = int(sys.argv[2]) if len(sys.argv) > 2 else 12345
    words, where, put = image((1, 203))

    put(203, "W", w)
    put(203, "W_SF", 0xFFFF)         # -1
    put(203, "Hz", 4998)
    put(203, "Hz_SF", 0xFFFE)        # -2
    put(203, "TotWhImp", 2500)
    put(203, "TotWhExp", 1000)
    put(203, "TotWh_SF", 3)
    put(203, "VAR", -4321)
    put(203, "VAR_SF", 0xFFFF)       # -1
    delta = len(sys.argv) > 3 and sys.argv[3] == "delta"
    put(203, "PhV", 0x8000 if delta else 2305)
    put(203, "PPV", 4000 if delta else 3992)
    put(203, "V_SF", 0xFFFF)         # -1

    block = ModbusSequentialDataBlock(BASE + 1, list(words))  # pymodbus adds 1 to the protocol address
    context = ModbusServerContext(slaves=ModbusSlaveContext(hr=block), single=True)
    serve(context, seconds, lambda: 0, lambda v: "")


if __name__ == "__main__":
    main()
