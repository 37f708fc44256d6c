#!/usr/bin/env python3
"""A Modbus I/O module for bessd's grid operator relay inputs: pymodbus 3.6 serves 16 discrete
inputs (function 02) and 16 coils (function 01) at addresses 0-15, both mirroring STATE_FILE
(one line of 0/1 digits, input 0 first; re-read every 20 ms, so a test flips a contact by
rewriting it). Prints "PORT <n>" once listening, then "INPUTS <digits>" whenever they change.
Usage: pymodbus_io_module.py STATE_FILE [SECONDS]"""
import sys

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext

from peerserver import serve


def main():
    path = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60
    inputs = ModbusSequentialDataBlock(1, [0] * 16)  # pymodbus addresses are 1-based inside the block
    coils = ModbusSequentialDataBlock(1, [0] * 16)
    context = ModbusServerContext(slaves=ModbusSlaveContext(di=inputs, co=coils), single=True)

    def state():
        try:
            with open(path) as f:
                digits = "".join(c for c in f.read() if c in "01")[:16]
        except OSError:
            digits = ""
        bits = [c == "1" for c in digits.ljust(16, "0")]
        inputs.setValues(1, bits)
        coils.setValues(1, bits)
        return digits

    serve(context, seconds, state, lambda digits: f"INPUTS {digits}")


if __name__ == "__main__":
    main()
