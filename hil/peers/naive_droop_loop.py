#!/usr/bin/env python3
"""The frequency-response loop a user would write with pymodbus instead of bessd: one loop at a fixed
period that, for each inverter in turn, reads its frequency (SunSpec 701 Hz) and writes the droop
setpoint (704 WSetEna, WSetMod, WSet in one request, as bessd writes it) in one pass. The yardstick
of scripts/step-wire-bench.sh: what a straightforward loop reaches against the same peer.

Droop as bessd's default reference (docs/control.md; /work/shared/REFERENCE.md §1.2, edge-referenced):
  f < low:  P = (low − f) / (f_n · R) · P_rated   (discharge)
  f > high: P = (high − f) / (f_n · R) · P_rated  (charge)
  else 0, clamped to ±P_rated; R = 5 %, f_n = 50 Hz, deadband [49.9, 50.05], P_rated from 120 WRtg.
No response-time filter (bessd runs with response_time_s: 0 in the same bench).

The model addresses are found once at start by walking the SunSpec chain from 40000, with the point
offsets from pysunspec2's model definitions; the scale factors are read once.

Usage: naive_droop_loop.py [--period-ms 10] [--seconds S] PORT ...   (one inverter per port, unit id 1)
"""
import argparse
import signal
import sys
import time

from pymodbus.client import ModbusTcpClient

from peerserver import BASE, layout

NOMINAL_HZ, DROOP, LOW_HZ, HIGH_HZ = 50.0, 0.05, 49.9, 50.05


def signed(value, bits=16):
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def droop_watts(hz, rated):
    if hz < LOW_HZ:
        p = (LOW_HZ - hz) / (NOMINAL_HZ * DROOP) * rated
    elif hz > HIGH_HZ:
        p = (HIGH_HZ - hz) / (NOMINAL_HZ * DROOP) * rated
    else:
        p = 0.0
    return max(-rated, min(rated, p))


class Inverter:
    def __init__(self, port):
        self.client = ModbusTcpClient("127.0.0.1", port=port, timeout=1)
        if not self.client.connect():
            raise SystemExit(f"cannot connect to 127.0.0.1:{port}")
        models, address = {}, BASE + 2
        header = self.read(BASE, 2)
        if header != [0x5375, 0x6E53]:
            raise SystemExit(f"port {port}: no SunSpec map at {BASE}")
        while True:
            mid, length = self.read(address, 2)
            if mid == 0xFFFF:
                break
            models[mid] = address
            address += 2 + length
        hz, _, _ = layout(701)[0]["Hz"]
        hz_sf, _, _ = layout(701)[0]["Hz_SF"]
        wset_ena, _, _ = layout(704)[0]["WSetEna"]
        wset_sf, _, _ = layout(704)[0]["WSet_SF"]
        wrtg, _, _ = layout(120)[0]["WRtg"]
        self.hz_at = models[701] + hz
        self.command_at = models[704] + wset_ena
        self.hz_scale = 10.0 ** signed(self.read(models[701] + hz_sf, 1)[0])
        self.wset_scale = 10.0 ** signed(self.read(models[704] + wset_sf, 1)[0])
        rating, rating_sf = self.read(models[120] + wrtg, 2)
        self.rated = rating * 10.0 ** signed(rating_sf)

    def read(self, address, count):
        answer = self.client.read_holding_registers(address, count, slave=1)
        if answer.isError():
            raise SystemExit(f"read {address}: {answer}")
        return answer.registers

    def respond(self):
        hi, lo = self.read(self.hz_at, 2)
        hz = ((hi << 16) | lo) * self.hz_scale
        wset = round(droop_watts(hz, self.rated) / self.wset_scale) & 0xFFFFFFFF
        self.client.write_registers(self.command_at, [1, 1, wset >> 16, wset & 0xFFFF], slave=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--period-ms", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=3600)
    parser.add_argument("ports", nargs="+", type=int)
    args = parser.parse_args()
    inverters = [Inverter(p) for p in args.ports]
    period = args.period_ms / 1000
    end = time.monotonic() + args.seconds
    due = time.monotonic()
    passes = late = 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while due < end:
            for inverter in inverters:
                inverter.respond()
            passes += 1
            due += period
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            else:
                late += 1
                if -wait > period:
                    due = time.monotonic()  # a pass longer than a period: start the next now, no burst
    finally:
        print(f"passes={passes} late={late} (passes that ended after their period)", flush=True)


if __name__ == "__main__":
    main()
