#!/usr/bin/env python3
"""A controlling station for `make bench`'s IEC 104 rows: a raw-socket client written from
IEC 60870-5-104 (APCI, the ASDUs it sends and reads), so every stamp is taken next to the socket
call, with no library thread between the wire and the clock. Stamps are CLOCK_MONOTONIC
nanoseconds, the clock `bess-hil bench` stamps the plant's side with.

  iec104_bench.py command PORT CA COUNT OUT [UNITS]
      AGC in service (3101, C_SC_NA_1), then COUNT AGC targets (3001, C_SE_NC_1, direct) at random
      gaps of 0.35–0.75 s, alternately 30 % and 60 % of UNITS × 100 kW (MW, + = export); one JSON
      line per target to OUT: {"t_ns": stamped just before the send, "mw", "con_ns": its ACT_CON's
      arrival, "negative"}.
  iec104_bench.py listen PORT CA IOA OUT READY [SOURCE]
      Starts data transfer (from the loopback address SOURCE, default 127.0.0.1), creates the file
      READY, and records every measured value of IOA (M_ME_NC_1 / M_ME_TF_1) until standard input
      closes; one JSON line per value to OUT: {"t_ns": stamped as recv returned, "type", "cot",
      "value", "asdu": its octets in hex}.
  iec104_bench.py c104-listen PORT CA IOA OUT SECONDS
      The same records from a c104 (lib60870) client, stamped in its on_receive_raw callback: run
      beside `listen` in another group, the pairs of one ASDU give c104's own hop (its receive
      thread, then the GIL) on top of the socket.
  iec104_bench.py hop RAW_OUT C104_OUT
      Pairs the two files by ASDU (the first second left out: a group's queue kept from before its
      station started arrives at once) and prints
      SUMMARY c104_hop n= p50_ms= p99_ms= max_ms= (c104's stamp less the raw client's).
  iec104_bench.py interrogate PORT CA STATIONS SECONDS
      STATIONS controlling stations, each from its own loopback address (127.0.0.1, .2, …: each is
      its own redundancy group of the outstation, so all of them are started), each sending a
      station interrogation (C_IC_NA_1, QOI 20) every second for SECONDS; prints one summary line:
      SUMMARY iec104_interrogations stations= rounds= failures= objects= p50_ms= p99_ms= max_ms=
      (request → ACT_TERM).
"""
import json
import math
import os
import random
import select
import socket
import struct
import sys
import threading
import time

STARTDT_ACT, STARTDT_CON, TESTFR_ACT, TESTFR_CON = 0x07, 0x0B, 0x43, 0x83
C_SC_NA_1, C_SE_NC_1, C_IC_NA_1 = 45, 50, 100
M_ME_NC_1, M_ME_TF_1 = 13, 36
ACTIVATION, ACT_CON, ACT_TERM = 6, 7, 10


def now_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class Link:
    """One connection: framing, the send and receive sequence numbers, prompt S-frame acks and
    TESTFR answers. `frames()` yields (stamp, asdu bytes) of each received I-frame."""

    def __init__(self, port: int, source: str = "127.0.0.1", timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        while True:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock.bind((source, 0))
            try:
                self.sock.connect(("127.0.0.1", port))
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.vs = self.vr = 0
        self.buffer = b""
        self.pending = []

    def send_u(self, function: int) -> None:
        self.sock.sendall(bytes([0x68, 4, function, 0, 0, 0]))

    def send_i(self, asdu: bytes) -> int:
        """Sends an I-frame; the stamp is taken just before the send."""
        apci = bytes([0x68, 4 + len(asdu), (self.vs << 1) & 0xFE, self.vs >> 7, (self.vr << 1) & 0xFE, self.vr >> 7])
        self.vs = (self.vs + 1) % 32768
        stamp = now_ns()
        self.sock.sendall(apci + asdu)
        return stamp

    def read(self, timeout: float):
        """Reads what arrived within `timeout`: a list of (stamp, asdu) of the I-frames, after
        acknowledging them and answering TESTFR; raises on close."""
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return []
        chunk = self.sock.recv(65536)
        stamp = now_ns()
        if not chunk:
            raise ConnectionError("outstation closed the connection")
        self.buffer += chunk
        out, acks = [], 0
        while len(self.buffer) >= 2 and len(self.buffer) >= 2 + self.buffer[1]:
            if self.buffer[0] != 0x68:
                raise ConnectionError("bad start octet")
            apdu, self.buffer = self.buffer[:2 + self.buffer[1]], self.buffer[2 + self.buffer[1]:]
            control = apdu[2]
            if control & 1 == 0:
                self.vr = (self.vr + 1) % 32768
                acks += 1
                out.append((stamp, apdu[6:]))
            elif control & 3 == 3 and control == TESTFR_ACT:
                self.send_u(TESTFR_CON)
            elif control & 3 == 3:
                out.append((stamp, bytes([control])))  # a U-frame's function, for start()
        if acks:
            self.sock.sendall(bytes([0x68, 4, 1, 0, (self.vr << 1) & 0xFE, self.vr >> 7]))
        return out

    def start(self) -> None:
        """STARTDT act until its con."""
        self.send_u(STARTDT_ACT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for _, data in self.read(0.5):
                if len(data) == 1 and data[0] == STARTDT_CON:
                    return
        raise TimeoutError("no STARTDT con")

    def wait_for(self, type_id: int, cot: int, ioa: int, timeout: float = 5.0):
        """The first I-frame of this type, cause and address: (stamp, negative); None on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for stamp, asdu in self.read(max(0.0, deadline - time.monotonic())):
                if len(asdu) >= 9 and asdu[0] == type_id and asdu[2] & 0x3F == cot and ioa_of(asdu) == ioa:
                    return stamp, bool(asdu[2] & 0x40)
        return None


def ioa_of(asdu: bytes) -> int:
    return asdu[6] | asdu[7] << 8 | asdu[8] << 16


def command_asdu(type_id: int, ca: int, ioa: int, element: bytes) -> bytes:
    return bytes([type_id, 1, ACTIVATION, 0]) + struct.pack("<H", ca) + struct.pack("<I", ioa)[:3] + element


def measured_values(asdu: bytes):
    """(ioa, value) of each object of an M_ME_NC_1 / M_ME_TF_1 ASDU (SQ 0 or 1)."""
    type_id, vsq = asdu[0], asdu[1]
    size = {M_ME_NC_1: 5, M_ME_TF_1: 12}.get(type_id)
    if size is None:
        return
    count, sequence, at = vsq & 0x7F, bool(vsq & 0x80), 6
    base = ioa_of(asdu) if sequence else 0
    if sequence:
        at += 3
    for i in range(count):
        if sequence:
            ioa = base + i
        else:
            if at + 3 > len(asdu):
                return
            ioa, at = ioa_of(asdu[at - 6:]), at + 3
        if at + size > len(asdu):
            return
        yield ioa, struct.unpack("<f", asdu[at:at + 4])[0]
        at += size


def command(port: int, ca: int, count: int, out: str, units: int) -> None:
    link = Link(port)
    link.start()
    link.send_i(command_asdu(C_SC_NA_1, ca, 3101, bytes([0x01])))
    confirmed = link.wait_for(C_SC_NA_1, ACT_CON, 3101)
    if confirmed is None or confirmed[1]:
        sys.exit(f"iec104_bench: AGC in service not confirmed ({confirmed})")
    rng = random.Random()
    with open(out, "w") as f:
        for i in range(count):
            # A random phase against the cycle; the frames meanwhile are read and acknowledged.
            end = time.monotonic() + rng.uniform(0.35, 0.75)
            while time.monotonic() < end:
                link.read(end - time.monotonic())
            mw = units * 0.1 * (0.3 if i % 2 == 0 else 0.6)
            t = link.send_i(command_asdu(C_SE_NC_1, ca, 3001, struct.pack("<fB", mw, 0)))
            confirmed = link.wait_for(C_SE_NC_1, ACT_CON, 3001)
            f.write(json.dumps({"t_ns": t, "mw": mw, "con_ns": confirmed[0] if confirmed else None,
                                "negative": confirmed[1] if confirmed else None}) + "\n")
    link.sock.close()


def listen(port: int, ca: int, ioa: int, out: str, ready: str, source: str = "127.0.0.1") -> None:
    link = Link(port, source=source)
    link.start()
    open(ready, "w").close()
    records = []
    while True:
        readable, _, _ = select.select([link.sock, sys.stdin], [], [], 1.0)
        if sys.stdin in readable and not sys.stdin.readline():
            break
        if link.sock in readable:
            for stamp, asdu in link.read(0):
                if len(asdu) > 9 and asdu[0] in (M_ME_NC_1, M_ME_TF_1):
                    for address, value in measured_values(asdu):
                        if address == ioa:
                            records.append({"t_ns": stamp, "type": asdu[0], "cot": asdu[2] & 0x3F, "value": value,
                                            "asdu": asdu.hex()})
    with open(out, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    link.sock.close()


def c104_listen(port: int, ca: int, ioa: int, out: str, seconds: float) -> None:
    import c104
    records = []

    def on_raw(connection: c104.Connection, data: bytes) -> None:
        stamp = now_ns()
        asdu = bytes(data[6:])
        if len(asdu) > 9 and asdu[0] in (M_ME_NC_1, M_ME_TF_1):
            for address, value in measured_values(asdu):
                if address == ioa:
                    records.append({"t_ns": stamp, "type": asdu[0], "cot": asdu[2] & 0x3F, "value": value, "asdu": asdu.hex()})

    client = c104.Client(tick_rate_ms=50, command_timeout_ms=3000)
    connection = client.add_connection(ip="127.0.0.1", port=port, init=c104.Init.NONE)
    connection.on_receive_raw(callable=on_raw)
    connection.add_station(common_address=ca)
    client.start()
    deadline = time.monotonic() + 10
    while not connection.is_connected and time.monotonic() < deadline:
        time.sleep(0.02)
    connection.unmute()
    time.sleep(seconds)
    client.stop()
    with open(out, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in list(records))


def interrogate(port: int, ca: int, stations: int, seconds: float) -> None:
    times, failures, objects = [], [0], [0]
    lock = threading.Lock()

    def station(index: int) -> None:
        try:
            link = Link(port, source=f"127.0.0.{index + 1}")
            link.start()
        except (OSError, TimeoutError) as error:
            print(f"iec104_bench: station {index + 1}: {error}", file=sys.stderr)
            with lock:
                failures[0] += 1
            return
        end = time.monotonic() + seconds
        next_round = time.monotonic() + index * 0.25
        while time.monotonic() < end:
            while time.monotonic() < next_round:
                link.read(next_round - time.monotonic())
            next_round += 1.0
            t = link.send_i(command_asdu(C_IC_NA_1, ca, 0, bytes([20])))
            seen, done = 0, None
            deadline = time.monotonic() + 5
            while done is None and time.monotonic() < deadline:
                for stamp, asdu in link.read(max(0.0, deadline - time.monotonic())):
                    if len(asdu) > 2 and asdu[2] & 0x3F == 20:
                        seen += asdu[1] & 0x7F
                    if len(asdu) > 2 and asdu[0] == C_IC_NA_1 and asdu[2] & 0x3F == ACT_TERM:
                        done = stamp
            with lock:
                if done is None:
                    failures[0] += 1
                else:
                    times.append((done - t) / 1e6)
                    objects[0] += seen
        link.sock.close()

    threads = [threading.Thread(target=station, args=(i,)) for i in range(stations)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    times.sort()

    def q(f):
        return times[min(len(times) - 1, max(0, math.ceil(len(times) * f) - 1))] if times else float("nan")
    print(f"SUMMARY iec104_interrogations stations={stations} rounds={len(times)} failures={failures[0]} "
          f"objects={objects[0] // max(1, len(times))} p50_ms={q(0.5):.2f} p99_ms={q(0.99):.2f} "
          f"max_ms={times[-1] if times else float('nan'):.2f}")


def hop(raw_out: str, c104_out: str) -> None:
    raw = {}
    for line in open(raw_out):
        record = json.loads(line)
        raw.setdefault(record["asdu"], record["t_ns"])
    pairs = [(r["t_ns"], (r["t_ns"] - raw[r["asdu"]]) / 1e6) for r in map(json.loads, open(c104_out)) if r["asdu"] in raw]
    hops = sorted(h for t, h in pairs if t - pairs[0][0] > 1e9) if pairs else []

    def q(f):
        return hops[min(len(hops) - 1, max(0, math.ceil(len(hops) * f) - 1))] if hops else float("nan")
    print(f"SUMMARY c104_hop n={len(hops)} p50_ms={q(0.5):.3f} p99_ms={q(0.99):.3f} "
          f"max_ms={hops[-1] if hops else float('nan'):.3f}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) >= 5 and args[0] == "command":
        command(int(args[1]), int(args[2]), int(args[3]), args[4], int(args[5]) if len(args) > 5 else 8)
    elif len(args) in (6, 7) and args[0] == "listen":
        listen(int(args[1]), int(args[2]), int(args[3]), args[4], args[5], *args[6:])
    elif len(args) == 6 and args[0] == "c104-listen":
        c104_listen(int(args[1]), int(args[2]), int(args[3]), args[4], float(args[5]))
    elif len(args) == 5 and args[0] == "interrogate":
        interrogate(int(args[1]), int(args[2]), int(args[3]), float(args[4]))
    elif len(args) == 3 and args[0] == "hop":
        hop(args[1], args[2])
    else:
        sys.exit(__doc__)
