#!/usr/bin/env python3
"""IEEE C37.118.2 frames from pyPMU (PyPI `synchrophasor`), an encoder no one here wrote.

`pmu_peer.py frames` prints one JSON object per line: {"name", "hex", "given"}: the bytes pyPMU's
encoder wrote and the values it was given, for the Swift codec's tests to decode and compare.
`pmu_peer.py read-command HEX` decodes a command frame with pyPMU and prints its id and command.
"""
import collections
import collections.abc
import json
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


def read_command(hex_text):
    frame = CommandFrame.convert2frame(bytes.fromhex(hex_text))
    print(json.dumps({"idcode": frame.get_id_code(), "command": frame.get_command(), "soc": frame.get_soc()}))


if __name__ == "__main__":
    if sys.argv[1] == "frames":
        frames()
    elif sys.argv[1] == "read-command":
        read_command(sys.argv[2])
    else:
        sys.exit("usage: pmu_peer.py frames | read-command HEX")
