#!/usr/bin/env python3
"""IEEE C37.118.2 frames from pyPMU (PyPI `synchrophasor`), an encoder no one here wrote.

`pmu_peer.py frames` prints one JSON object per line: {"name", "hex", "given"}: the bytes pyPMU's
encoder wrote and the values it was given, for the Swift codec's tests to decode and compare.
`pmu_peer.py cfg3` prints CFG-3 frames in the same form, built here from C37.118.2-2011's field
table with struct and binascii.crc_hqx (pyPMU 1.0.0a has no CFG-3 encoder: its ConfigFrame3 is empty).
`pmu_peer.py read-command HEX` decodes a command frame with pyPMU and prints its id and command.
"""
import binascii
import collections
import collections.abc
import json
import math
import struct
import sys

# pyPMU 1.0.0a uses collections.Sequence, gone since Python 3.10.
collections.Sequence = collections.abc.Sequence

from synchrophasor.frame import CommandFrame, ConfigFrame2, DataFrame  # noqa: E402

# pyPMU range-checks a float FREQ as if it were a deviation (±32.767); C37.118.2-2011 float FREQ is
# the actual frequency in Hz, so the float branch packs it as it is.
_int_freq = DataFrame._freq2int


def _freq2int(freq, data_format):
    fmt = DataFrame._int2format(data_format) if isinstance(data_format, int) else data_format
    if fmt[3]:
        return struct.unpack("!I", struct.pack("!f", float(freq)))[0]
    return _int_freq(freq, data_format)


DataFrame._freq2int = staticmethod(_freq2int)


def cfg2(idcode, freq_float, fnom, cfgcnt=1):
    """One PMU, 2 phasors (float polar or integer rectangular), 1 analog, 1 digital word."""
    data_format = (freq_float,) * 4  # polar, phasors float, analogs float, FREQ float
    names = ["VA", "VB", "ANALOG1"] + ["BREAKER %d" % i for i in range(16)]
    return ConfigFrame2(idcode, 1000000, 1, "Station A", idcode, data_format, 2, 1, 1, names,
                        [(915527, "v"), (45776, "i")], [(1, "pow")], [(0x0000, 0xFFFF)],
                        fnom, cfgcnt, 50, soc=1_700_000_000, frasec=(500000, "+", False, False, 0))


def multi_cfg2():
    """Two PMUs in one stream: the second one (IDCODE 8) integer, the first float."""
    names1 = ["V1", "A1"]
    names2 = ["V2"] + ["D%d" % i for i in range(16)]
    return ConfigFrame2(99, 1000000, 2, ["PMU ONE", "PMU TWO"], [7, 8],
                        [(True, True, True, True), (False, False, False, False)], [1, 1], [1, 0], [0, 1],
                        [names1, names2], [[(0, "v")], [(915527, "v")]], [[(1, "rms")], []],
                        [[], [(0x0000, 0xFFFF)]], [50, 60], [3, 4], 25,
                        soc=1_700_000_001, frasec=(0, "+", False, False, 0))


def out(name, frame, given):
    print(json.dumps({"name": name, "hex": frame.convert2bytes().hex(), "given": given}))


def frames():
    stat_ok = ("ok", True, "timestamp", False, False, False, 0, "<10", 0)
    # Integer form: FREQ −150 mHz from 50 Hz, DFREQ −25 (= −0.25 Hz/s).
    ci = cfg2(1410, False, 50)
    out("cfg2-int", ci, {"idcode": 1410, "stn": "Station A", "fnom": 50, "cfgcnt": 1, "rate": 50, "timeBase": 1000000})
    di = DataFrame(1410, stat_ok, [(100, 200), (-300, 400)], -150, -25, [12], [0x8001], ci,
                   soc=1_700_000_002, frasec=(200000, "+", False, False, 0))
    out("data-int", di, {"freqHz": 49.85, "rocof": -0.25, "phasors": [[100, 200], [-300, 400]], "analog": 12, "digital": 0x8001,
                         "soc": 1_700_000_002, "fracsec": 200000})
    # Float form, 60 Hz nominal: FREQ is the actual frequency in Hz, DFREQ Hz/s.
    cf = cfg2(7734, True, 60, cfgcnt=2)
    out("cfg2-float", cf, {"idcode": 7734, "fnom": 60, "cfgcnt": 2, "rate": 50})
    df = DataFrame(7734, ("error", False, "arrival", True, False, False, 0, "<10", 5),
                   [(230.5, 0.5), (10.25, -1.0)], 59.93, 0.75, [1.5], [0x0000], cf,
                   soc=1_700_000_003, frasec=(0, "+", False, False, 0))
    out("data-float", df, {"freqHz": 59.93, "rocof": 0.75, "phasors": [[230.5, 0.5], [10.25, -1.0]], "analog": 1.5,
                           "dataError": 2, "syncError": True, "sortByArrival": True, "trigger": True, "triggerReason": 5})
    cm = multi_cfg2()
    out("cfg2-multi", cm, {"idcodes": [7, 8], "rate": 25})
    dm = DataFrame(99, [stat_ok, stat_ok], [[(1.0, 0.0)], [(5, 6)]], [50.02, 25], [0.1, -3], [[2.5], []],
                   [[], [0x00FF]], cm, soc=1_700_000_004, frasec=(0, "+", False, False, 0))
    out("data-multi", dm, {"freqHz": [50.02, 60.025], "rocof": [0.1, -0.03]})
    for name, cmd in (("cmd-stop", "stop"), ("cmd-start", "start"), ("cmd-cfg2", "cfg2"), ("cmd-cfg3", "cfg3")):
        out(name, CommandFrame(1410, cmd, soc=1_700_000_005, frasec=(0, "+", False, False, 0)), {"idcode": 1410})


def _name(text):
    """A CFG-3 name field: one length byte, then the UTF-8 bytes."""
    raw = text.encode("utf-8")
    return struct.pack("!B", len(raw)) + raw


def _escaped(text):
    """A name as bessd shows it: printable ASCII kept, every other byte '?', trailing blanks dropped."""
    return "".join(chr(b) if 0x20 <= b <= 0x7E else "?" for b in text.encode("utf-8")).rstrip(" ")


def cfg3_frame(idcode, pmus, rate, cont_idx=0, time_base=1000000, soc=1_700_000_000):
    """CFG-3 (C37.118.2-2011 Table 10), written here from the standard's field table with struct and
    binascii.crc_hqx, because pyPMU 1.0.0a's ConfigFrame3 is an empty class. SYNC 0xAA52 (type 5,
    version 2), FRAMESIZE, IDCODE, SOC, FRACSEC; CONT_IDX, TIME_BASE, NUM_PMU; per PMU STN, IDCODE,
    G_PMU_ID, FORMAT, PHNMR, ANNMR, DGNMR, CHNAM, PHSCALE, ANSCALE, DIGUNIT, PMU_LAT/LON/ELEV,
    SVC_CLASS, WINDOW, GRP_DLY, FNOM, CFGCNT; DATA_RATE; CHK."""
    body = struct.pack("!HIH", cont_idx, time_base, len(pmus))
    for p in pmus:
        body += _name(p["stn"]) + struct.pack("!H", p["idcode"]) + bytes(p["gpmu"])
        body += struct.pack("!HHHH", p["format"], len(p["phasors"]), len(p["analogs"]), len(p["digitals"]))
        for name in [ph["name"] for ph in p["phasors"]] + [an["name"] for an in p["analogs"]]:
            body += _name(name)
        for word in p["digitals"]:
            for name in word["names"]:
                body += _name(name)
        for ph in p["phasors"]:
            body += struct.pack("!HBBff", ph["flags"], ph["type"], ph["user"], ph["scale"], ph["angle"])
        for an in p["analogs"]:
            body += struct.pack("!ff", an["magnitude"], an["offset"])
        for word in p["digitals"]:
            body += struct.pack("!HH", word["normal"], word["valid"])
        body += struct.pack("!fff", p["lat"], p["lon"], p["elev"]) + p["svc"].encode("ascii")
        body += struct.pack("!iiHH", p["window"], p["grpdly"], 1 if p["fnom"] == 50 else 0, p["cfgcnt"])
    body += struct.pack("!h", rate)
    head = struct.pack("!BBHHII", 0xAA, 0x52, 16 + len(body), idcode, soc, 0)
    frame = head + body
    return frame + struct.pack("!H", binascii.crc_hqx(frame, 0xFFFF))


def _finite(value):
    """JSON has no infinity: null stands for the standard's "unspecified"."""
    return None if math.isinf(value) else value


def _given(p):
    """What the Swift test compares: the fields as sent, names as bessd escapes them."""
    return {"stn": _escaped(p["stn"]), "idcode": p["idcode"], "gpmu": list(p["gpmu"]), "format": p["format"],
            "phasorNames": [_escaped(ph["name"]) for ph in p["phasors"]],
            "analogNames": [_escaped(an["name"]) for an in p["analogs"]],
            "digitalNames": [_escaped(n) for word in p["digitals"] for n in word["names"]],
            "phasorScales": [[ph["flags"], ph["type"], ph["user"], ph["scale"], ph["angle"]] for ph in p["phasors"]],
            "analogScales": [[an["magnitude"], an["offset"]] for an in p["analogs"]],
            "digitalUnits": [word["normal"] << 16 | word["valid"] for word in p["digitals"]],
            "lat": _finite(p["lat"]), "lon": _finite(p["lon"]), "elev": _finite(p["elev"]), "svc": p["svc"],
            "window": p["window"], "grpdly": p["grpdly"], "fnom": p["fnom"], "cfgcnt": p["cfgcnt"]}


def cfg3():
    """CFG-3 frames describing the same streams as `frames`' cfg2-int and cfg2-multi (so pyPMU's data
    frames decode against either), plus one marked as the first of several (CONT_IDX 1)."""
    single = {"stn": "Station A", "idcode": 1410, "gpmu": range(16), "format": 0,
              "phasors": [{"name": "VA", "flags": 0, "type": 0x04, "user": 0, "scale": 9.15527, "angle": 0.0},
                          {"name": "VB", "flags": 0x0180, "type": 0x0D, "user": 7, "scale": 0.45776, "angle": -0.5}],
              "analogs": [{"name": "ANALOG1", "magnitude": 2.5, "offset": -1.0}],
              "digitals": [{"names": ["BREAKER %d" % i for i in range(16)], "normal": 0x0000, "valid": 0xFFFF}],
              "lat": 28.6139, "lon": 77.209, "elev": float("inf"), "svc": "P", "window": 40000, "grpdly": -2000,
              "fnom": 50, "cfgcnt": 1}
    print(json.dumps({"name": "cfg3-int", "hex": cfg3_frame(1410, [single], 50).hex(),
                      "given": {"idcode": 1410, "timeBase": 1000000, "rate": 50, "pmus": [_given(single)]}}))
    # Two PMUs as multi_cfg2, with names CFG-2 cannot carry: long, UTF-8, control bytes, empty.
    one = {"stn": "PMU ONE — Unterwerk Süd " + "x" * 200, "idcode": 7, "gpmu": [0xFF] * 16, "format": 0x000F,
           "phasors": [{"name": "V1	line", "flags": 0, "type": 0x01, "user": 0, "scale": 1.0, "angle": 0.0}],
           "analogs": [{"name": "", "magnitude": 1.0, "offset": 0.0}], "digitals": [],
           "lat": -33.8688, "lon": 151.2093, "elev": 58.5, "svc": "M", "window": 100000, "grpdly": 50000,
           "fnom": 50, "cfgcnt": 3}
    two = {"stn": "PMU TWO", "idcode": 8, "gpmu": range(100, 116), "format": 0,
           "phasors": [{"name": "V2", "flags": 0, "type": 0x04, "user": 0, "scale": 9.15527, "angle": 0.0}],
           "analogs": [], "digitals": [{"names": ["D%d" % i for i in range(16)], "normal": 0x00FF, "valid": 0xFF00}],
           "lat": float("inf"), "lon": float("inf"), "elev": float("inf"), "svc": "P", "window": 0, "grpdly": 0,
           "fnom": 60, "cfgcnt": 4}
    print(json.dumps({"name": "cfg3-multi", "hex": cfg3_frame(99, [one, two], 25, soc=1_700_000_001).hex(),
                      "given": {"idcode": 99, "timeBase": 1000000, "rate": 25, "pmus": [_given(one), _given(two)]}}))
    print(json.dumps({"name": "cfg3-continued", "hex": cfg3_frame(1410, [single], 50, cont_idx=1).hex(),
                      "given": {"contIdx": 1}}))


def read_command(hex_text):
    frame = CommandFrame.convert2frame(bytes.fromhex(hex_text))
    print(json.dumps({"idcode": frame.get_id_code(), "command": frame.get_command(), "soc": frame.get_soc()}))


# --- serve: a PMU at 50 frames/s for the PMU reader's tests (Tests/CycleTests/PMUReaderTests.swift) ---
#
# `pmu_peer.py serve --transport tcp|udp|tcp_udp|udp_spontaneous --port N [--data-port N] --idcode N
# [--float] [--fnom 50|60] [--freq HZ] [--cfg-every S]` serves one PMU (cfg2() above) on 127.0.0.1 and
# prints `PORT <n>` once it listens. Over TCP it is pyPMU's own server (synchrophasor.pmu.Pmu): its
# `method` option is stored but never read, so pyPMU serves TCP only. tcp_udp (Annex F's mixed mode)
# is that same server with its data frames sent as datagrams to --data-port (_DataOverUDP). Over UDP
# this script answers command datagrams itself (Annex F, UDP only: CFG-2 to whoever asks, data to
# whoever sent "start", at the port commands came from or --data-port), with pyPMU's frame classes;
# udp_spontaneous reads no commands and sends data and a CFG-2 every --cfg-every s to --data-port.
# Standard input steers it, one command a line:
#   freq HZ | rocof HZ_PER_S | stat ok|invalid|unsync|cfgchange | inject crc|idcode MARK_HZ BAD_HZ | resume
# `inject` sends one good frame at MARK_HZ, then one at BAD_HZ with a wrong CHK (crc) or another
# stream's IDCODE (idcode), and pauses the stream until `resume`. End of input ends it and its children.

import logging  # noqa: E402
import os  # noqa: E402
import select as _select_module  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from synchrophasor import pmu as _pmu_module  # noqa: E402
from synchrophasor.frame import CommonFrame  # noqa: E402

# pyPMU's per-connection loop polls its socket with select(…, 0) and spins a core while it has
# nothing to send; a 2 ms timeout keeps it responsive without the spin.
_select = _select_module.select
_pmu_module.select = lambda r, w, x, timeout=None: _select(r, w, x, 0.002 if not timeout else timeout)


# It then sleeps a whole period before each frame on top of that loop's own time (about 45
# frames/s at 50); sleeping to the period's deadline instead keeps 50 frames/s (each connection
# is a process of its own, with its own deadline).
_due = [0.0]


def _paced_sleep(period):
    now = time.monotonic()
    _due[0] = now if _due[0] + period < now else _due[0] + period
    time.sleep(max(0.0, _due[0] - now))


_pmu_module.sleep = _paced_sleep

_STATS = {
    "ok": ("ok", True, "timestamp", False, False, False, 0, "<10", 0),
    "invalid": ("error", True, "timestamp", False, False, False, 0, "<10", 0),
    "unsync": ("ok", False, "timestamp", False, False, False, 0, "<10", 0),
    "cfgchange": ("ok", True, "timestamp", False, True, False, 0, "<10", 0),
}


class _Stream:
    """The PMU's measurements and the frames made from them."""

    def __init__(self, idcode, freq_float, fnom, freq):
        self.idcode, self.freq_float, self.fnom = idcode, freq_float, fnom
        self.cfg = cfg2(idcode, freq_float, fnom)
        self.freq, self.rocof, self.stat, self.paused = freq, 0.0, _STATS["ok"], False
        self.lock = threading.Lock()

    def frame(self, freq=None, idcode=None, stat=None):
        freq = self.freq if freq is None else freq
        if self.freq_float:
            values = ([(230.0, 0.1), (10.0, -0.2)], freq, self.rocof, [1.5])
        else:  # integer FREQ: mHz from FNOM; DFREQ: ROCOF x 100
            values = ([(100, 200), (-300, 400)], int(round((freq - self.fnom) * 1000)), int(round(self.rocof * 100)), [12])
        phasors, f, df, analog = values
        return DataFrame(self.idcode if idcode is None else idcode, stat or self.stat, phasors, f, df, analog, [0], self.cfg)

    def injected(self, kind, mark, bad):
        good = self.frame(mark)
        good.set_time()
        wrong = self.frame(bad, idcode=self.idcode + 1 if kind == "idcode" else None)
        wrong.set_time()
        raw = bytearray(wrong.convert2bytes())
        if kind == "crc":
            raw[-1] ^= 0xFF
        return [good.convert2bytes(), bytes(raw)]


def _produce(stream, deliver):
    """The PMU's 50 frames/s on absolute deadlines: each period, unless paused, the frame of now
    goes to `deliver` (under the stream's lock). One loop for every transport."""
    period, due = 0.02, time.monotonic()
    while True:
        due += period
        time.sleep(max(0.0, due - time.monotonic()))
        with stream.lock:
            if not stream.paused:
                deliver(stream.frame())


class _DataOverUDP:
    """pyPMU's connection as its per-client loop sees it, for C37.118.2 Annex F's mixed mode: commands
    are read and answered (configuration, header) over the TCP connection; data frames (type 0) go
    as datagrams to the client's address at `data_port`."""

    def __init__(self, connection, destination):
        self.connection, self.destination = connection, destination
        self.datagrams = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def fileno(self):
        return self.connection.fileno()

    def recv(self, size):
        return self.connection.recv(size)

    def sendall(self, data):
        if len(data) >= 2 and (data[1] >> 4) & 7 == 0:
            self.datagrams.sendto(data, self.destination)
        else:
            self.connection.sendall(data)

    def close(self):
        self.datagrams.close()
        self.connection.close()


def _serve_tcp(stream, port, data_port=None):
    """pyPMU's own server; with `data_port` (tcp_udp) its data frames go over UDP (_DataOverUDP)."""
    server = _pmu_module.Pmu(pmu_id=stream.idcode, data_rate=50, port=port, ip="127.0.0.1", method="tcp")
    server.logger.setLevel(logging.ERROR)
    server.set_configuration(stream.cfg)
    if data_port:
        handler = _pmu_module.Pmu.pdc_handler
        # The acceptor starts self.pdc_handler in a forked process per client: wrap its connection.
        server.pdc_handler = lambda connection, address, *rest: handler(
            _DataOverUDP(connection, (address[0], data_port)), address, *rest)
    server.run()

    def deliver(frame):
        # pyPMU's connection loop sleeps one period before each frame it sends: keep each
        # connection's queue short, so what it sends is the frequency of now.
        for buffer in list(server.client_buffers):
            if buffer.qsize() < 2:
                buffer.put(frame)

    def inject(frames):
        for buffer in list(server.client_buffers):
            for raw in frames:
                buffer.put(raw)

    threading.Thread(target=_produce, args=(stream, deliver), daemon=True).start()
    return server.socket.getsockname()[1], inject


def _serve_udp(stream, port, data_port=None, spontaneous=False, cfg_every=1.0):
    """UDP only (Annex F): CFG-2 to whoever asks, data to whoever sent "start", at the port the
    command came from or at `data_port` when given (a PMU set up with its PDC's port). Spontaneous:
    no commands read; data and, every `cfg_every` s, CFG-2 go to 127.0.0.1:`data_port` unasked."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", port))
    clients = {("127.0.0.1", data_port)} if spontaneous else set()

    def answer():
        while True:
            data, peer = sock.recvfrom(65535)
            try:
                command = CommonFrame.convert2frame(data).get_command()
            except Exception:  # pyPMU raises its own errors and struct's on a stray datagram
                continue
            destination = (peer[0], data_port) if data_port else peer
            with stream.lock:
                if command == "cfg2":
                    stream.cfg.set_time()
                    sock.sendto(stream.cfg.convert2bytes(), destination)
                elif command == "start":
                    clients.add(destination)
                elif command == "stop":
                    clients.discard(destination)

    def repeat_configuration():
        while True:
            with stream.lock:
                stream.cfg.set_time()
                sock.sendto(stream.cfg.convert2bytes(), next(iter(clients)))
            time.sleep(cfg_every)

    def deliver(frame):
        frame.set_time()
        for peer in list(clients):
            sock.sendto(frame.convert2bytes(), peer)

    def inject(frames):
        for peer in list(clients):
            for raw in frames:
                sock.sendto(raw, peer)

    threading.Thread(target=repeat_configuration if spontaneous else answer, daemon=True).start()
    threading.Thread(target=_produce, args=(stream, deliver), daemon=True).start()
    return sock.getsockname()[1], inject


def _lines(fd):
    """Lines read with os.read: a thread blocked in sys.stdin holds its lock, and the connection
    processes pyPMU forks close sys.stdin first thing, which would then wait for that lock forever."""
    pending = b""
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line.decode("ascii", "replace")


def serve(argv):
    import argparse
    parser = argparse.ArgumentParser(prog="pmu_peer.py serve")
    parser.add_argument("--transport", choices=["tcp", "udp", "tcp_udp", "udp_spontaneous"], default="tcp")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--data-port", type=int, default=0, help="where data goes (tcp_udp, udp_spontaneous; udp: else the reply port)")
    parser.add_argument("--cfg-every", type=float, default=1.0, help="udp_spontaneous: seconds between CFG-2 frames")
    parser.add_argument("--idcode", type=int, default=1410)
    parser.add_argument("--float", action="store_true", help="FREQ and DFREQ as float32 (else int16)")
    parser.add_argument("--fnom", type=int, default=50)
    parser.add_argument("--freq", type=float, default=50.0)
    args = parser.parse_args(argv)
    os.setpgrp()  # the test ends this process and pyPMU's connection processes as one group
    stream = _Stream(args.idcode, args.float, args.fnom, args.freq)
    if args.transport in ("tcp_udp", "udp_spontaneous") and not args.data_port:
        parser.error("--data-port is required with --transport " + args.transport)
    if args.transport in ("tcp", "tcp_udp"):
        port, inject = _serve_tcp(stream, args.port, args.data_port)
    else:
        port, inject = _serve_udp(stream, args.port, args.data_port, args.transport == "udp_spontaneous", args.cfg_every)
    print("PORT %d" % port, flush=True)
    for line in _lines(0):
        words = line.split()
        if not words:
            continue
        with stream.lock:
            if words[0] == "freq":
                stream.freq = float(words[1])
            elif words[0] == "rocof":
                stream.rocof = float(words[1])
            elif words[0] == "stat":
                stream.stat = _STATS[words[1]]
            elif words[0] == "inject":
                stream.paused = True
                inject(stream.injected(words[1], float(words[2]), float(words[3])))
            elif words[0] == "resume":
                stream.paused = False
        print("OK " + words[0], flush=True)
    os.killpg(0, signal.SIGKILL)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        sys.exit(serve(sys.argv[2:]))
    if sys.argv[1] == "frames":
        frames()
    elif sys.argv[1] == "cfg3":
        cfg3()
    elif sys.argv[1] == "read-command":
        read_command(sys.argv[2])
    else:
        sys.exit("usage: pmu_peer.py frames | cfg3 | read-command HEX")
