#!/usr/bin/env python3
"""A device read and written through a bessd profile (a rack BMS, a hybrid inverter): pymodbus 3.6
serves the holding and input registers given on the command line at their PDU addresses, zeros in
between (so a read spanning unused registers is answered as a device's would be). Prints "PORT <n>"
once listening, then "WRITE <address> <value>[,<value>...]" for every write a client makes, the same
value again included (a watchdog refreshed with an unchanged number shows each time).
Usage: pymodbus_profile_peer.py [--seconds S] [--holding ADDR=V[,V...]]... [--input ADDR=V[,V...]]...
Numbers may be written 0x..."""
import argparse
import asyncio

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import StartAsyncTcpServer

from peerserver import free_port


def block(specs):
    """A data block from ADDR=V,V... specs: the span from the lowest to the highest address given."""
    values = {}
    for spec in specs:
        address, words = spec.split("=", 1)
        start = int(address, 0)
        for i, word in enumerate(words.split(",")):
            values[start + i] = int(word, 0) & 0xFFFF
    if not values:
        return ModbusSequentialDataBlock(0, [0])
    low, high = min(values), max(values)
    return ModbusSequentialDataBlock(low, [values.get(a, 0) for a in range(low, high + 1)])


class Reporting(ModbusSlaveContext):
    """Reports each client write (function 06 or 16) as it lands."""

    def setValues(self, fc_as_hex, address, values):
        super().setValues(fc_as_hex, address, values)
        if fc_as_hex in (6, 16):
            print("WRITE {} {}".format(address, ",".join(str(v) for v in values)), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--holding", action="append", default=[])
    parser.add_argument("--input", action="append", default=[])
    args = parser.parse_args()
    slave = Reporting(hr=block(args.holding), ir=block(args.input), zero_mode=True)
    context = ModbusServerContext(slaves=slave, single=True)
    port = free_port()

    async def run():
        server = asyncio.create_task(StartAsyncTcpServer(context=context, address=("127.0.0.1", port)))
        await asyncio.sleep(0.3)
        print(f"PORT {port}", flush=True)
        await asyncio.sleep(args.seconds)
        server.cancel()

    asyncio.run(run())


if __name__ == "__main__":
    main()
