#!/usr/bin/env python3
"""A Modbus I/O module for bessd's grid operator relay inputs: pymodbus 3.6 serves 16 discrete
inputs (function 02) and 16 coils (function 01) at addresses 0-15, both mirroring STATE_FILE
(one line of 0/1 digits, input 0 first; re-read every 20 ms, so a test flips a contact by
rewriting it). On TCP it prints "PORT <n>" once listening; with --rtu DEVICE it serves Modbus RTU
at 19200 8N1 on that serial device (a pty in the tests) and prints "READY". Then "INPUTS <digits>"
whenever they change.
Usage: pymodbus_io_module.py STATE_FILE [--seconds S] [--rtu DEVICE]"""
import argparse
import asyncio

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import ModbusSerialServer
from pymodbus.transaction import ModbusRtuFramer

from peerserver import serve


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("state_file")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rtu")
    args = parser.parse_args()
    inputs = ModbusSequentialDataBlock(1, [0] * 16)  # pymodbus addresses are 1-based inside the block
    coils = ModbusSequentialDataBlock(1, [0] * 16)
    context = ModbusServerContext(slaves=ModbusSlaveContext(di=inputs, co=coils), single=True)

    def state():
        try:
            with open(args.state_file) as f:
                digits = "".join(c for c in f.read() if c in "01")[:16]
        except OSError:
            digits = ""
        bits = [c == "1" for c in digits.ljust(16, "0")]
        inputs.setValues(1, bits)
        coils.setValues(1, bits)
        return digits

    def report(digits):
        return f"INPUTS {digits}"

    if not args.rtu:
        serve(context, args.seconds, state, report)
        return

    async def run():
        server = ModbusSerialServer(context, framer=ModbusRtuFramer, port=args.rtu, baudrate=19200, parity="N",
                                    bytesize=8, stopbits=1)
        await server.listen()
        print("READY", flush=True)
        loop = asyncio.get_running_loop()
        end, last = loop.time() + args.seconds, None
        while loop.time() < end:
            digits = state()
            if last is not None and digits != last:
                print(report(digits), flush=True)
            last = digits
            await asyncio.sleep(0.02)
        await server.shutdown()

    asyncio.run(run())


if __name__ == "__main__":
    main()
