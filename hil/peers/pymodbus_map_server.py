#!/usr/bin/env python3
"""A non-SunSpec inverter for bessd's register-map driver: pymodbus 3.6 serves holding registers
  30775-30776 int32 measured power (W), 30803-30804 uint32 frequency (0.01 Hz), 30201 uint16 status
  (35 = fault), 40149-40150 int32 setpoint (W), 40151 uint16 enable, 40153 uint16 revert timeout (s).
Prints "PORT <n>" once listening, then "WRITE set=<> enable=<> revert=<>" whenever they change.
Usage: pymodbus_map_server.py [SECONDS]"""
import asyncio
import socket
import sys

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import StartAsyncTcpServer


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30
    block = ModbusSequentialDataBlock(30000 + 1, [0] * 10200)  # addresses 30000…40199

    def put(address, words):
        block.setValues(address + 1, words)

    put(30775, [0xFFFF, 0xFB2E])   # −1234 W (charging)
    put(30803, [0, 4998])          # 49.98 Hz
    put(30201, [307])              # OK
    context = ModbusServerContext(slaves=ModbusSlaveContext(hr=block), single=True)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()

    async def watch():
        last = None
        while True:
            hi, lo = block.getValues(40149 + 1, 2)
            value = (hi << 16) | lo
            if value >= 1 << 31:
                value -= 1 << 32
            state = (value, block.getValues(40151 + 1, 1)[0], block.getValues(40153 + 1, 1)[0])
            if state != last and last is not None:
                print("WRITE set={} enable={} revert={}".format(*state), flush=True)
            last = state
            await asyncio.sleep(0.02)

    async def run():
        server = asyncio.create_task(StartAsyncTcpServer(context=context, address=("127.0.0.1", port)))
        await asyncio.sleep(0.3)
        print(f"PORT {port}", flush=True)
        watcher = asyncio.create_task(watch())
        await asyncio.sleep(seconds)
        watcher.cancel()
        server.cancel()

    asyncio.run(run())


if __name__ == "__main__":
    main()
