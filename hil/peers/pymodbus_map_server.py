#!/usr/bin/env python3
"""A non-SunSpec inverter for bessd's register-map driver: pymodbus 3.6 serves holding registers
  30775-30776 int32 measured power (W), 30803-30804 uint32 frequency (0.01 Hz), 30201 uint16 status
  (35 = fault), 40149-40150 int32 setpoint (W), 40151 uint16 enable, 40153 uint16 revert timeout (s).
Prints "PORT <n>" once listening, then "WRITE set=<> enable=<> revert=<>" whenever they change.
Usage: pymodbus_map_server.py [SECONDS]"""
import sys

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext

from peerserver import serve


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30
    block = ModbusSequentialDataBlock(30000 + 1, [0] * 10200)  # addresses 30000…40199

    def put(address, words):
        block.setValues(address + 1, words)

    put(30775, [0xFFFF, 0xFB2E])   # −1234 W (charging)
    put(30803, [0, 4998])          # 49.98 Hz
    put(30201, [307])              # OK
    context = ModbusServerContext(slaves=ModbusSlaveContext(hr=block), single=True)

    def state():
        hi, lo = block.getValues(40149 + 1, 2)
        value = (hi << 16) | lo
        if value >= 1 << 31:
            value -= 1 << 32
        return (value, block.getValues(40151 + 1, 1)[0], block.getValues(40153 + 1, 1)[0])

    serve(context, seconds, state, lambda v: "WRITE set={} enable={} revert={}".format(*v))


if __name__ == "__main__":
    main()
