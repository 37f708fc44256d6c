#!/usr/bin/env python3
"""A c104 (lib60870) controlling station reading measured values from bessd's IEC 104 outstation.

  iec104_measure_client.py PORT COMMON_ADDRESS WAIT_IOA WAIT_S MIN_CHANGE

Connects to 127.0.0.1:PORT, starts data transfer, runs a station interrogation, then waits up to
WAIT_S seconds for a spontaneous value (cause 3) of WAIT_IOA, sent after its answer to the
interrogation, that differs from that answer by more than MIN_CHANGE. Prints one JSON object:
  "ok"           c104's verdicts (connected, startdt, interrogation)
  "interrogated" per IOA of every short float answered to the interrogation (cause 20): its value
                 and whether its quality descriptor is invalid (IV)
  "points"       the same IOAs as c104's points hold them after the interrogation
  "spontaneous"  WAIT_IOA's spontaneous values after its interrogation answer, as in "frames"
  "frames"       every short float received (types 13 and 36), one object each: ioa, cause, value
                 and IV, read from the element octets c104 cut out of the APDU
c104 comes from hil/requirements.txt (scripts/ensure-python-peers.sh)."""
import json
import struct
import sys
import time

import c104

from iec104_client import start, station_of

# A short float's object after its address: value (4) and QDS (1); type 36 adds CP56Time2a (7).
SIZES = {13: 5, 36: 12}


def floats(d: dict) -> list:
    """Every object of one I-frame of type 13 or 36 as (ioa, value, invalid). The octets start at
    the first object's address; with SQ = 0 each object repeats its own, with SQ = 1 they follow."""
    octets = bytes.fromhex(d.get("elements") or "")
    size, sequence, out = SIZES[int(d["type"])], bool(d.get("sequence")), []
    at, ioa = 0, 0
    for i in range(int(d["numberOfObjects"])):
        if i == 0 or not sequence:
            if at + 3 > len(octets):
                break
            ioa = int.from_bytes(octets[at:at + 3], "little")
            at += 3
        else:
            ioa += 1
        if at + size > len(octets):
            break
        value = struct.unpack("<f", octets[at:at + 4])[0]
        out.append((ioa, value, bool(octets[at + 4] & 0x80)))
        at += size
    return out


def main() -> None:
    port, ca, wait_ioa, wait_s = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    min_change = float(sys.argv[5])
    frames = []

    def on_raw(connection: c104.Connection, data: bytes) -> None:
        d = c104.explain_bytes_dict(apdu=data)
        if d.get("format") == "I" and int(d["type"]) in SIZES:
            cot = int(d["cot"])
            for ioa, value, invalid in floats(d):
                frames.append({"ioa": ioa, "cause": cot, "value": value, "invalid": invalid})

    client, connection, station = station_of(port, ca, on_raw)
    ok = start(client, connection)
    ok["interrogation"] = connection.interrogation(common_address=ca, cause=c104.Cot.ACTIVATION,
                                                   qualifier=c104.Qoi.STATION, wait_for_response=True)
    # c104 may give up waiting while the answers are on their way: the frames decide.
    deadline = time.time() + 10
    while time.time() < deadline and not any(f["cause"] == 20 and f["ioa"] == wait_ioa for f in frames):
        time.sleep(0.05)
    # What the interrogation answered (cause 20), before any spontaneous value can overwrite it.
    interrogated = {}
    for f in frames:
        if f["cause"] == 20:
            interrogated.setdefault(str(f["ioa"]), {"value": f["value"], "invalid": f["invalid"]})
    # And c104's own points for them (value and quality as c104 decoded the answers).
    points = {}
    for point in station.points:
        if str(point.io_address) in interrogated:
            quality = point.quality
            points[str(point.io_address)] = {"value": point.value, "invalid": bool(quality is not None and not quality.is_good())}
    # A spontaneous value of WAIT_IOA sent after its interrogation answer.
    answered = next(i for i, f in enumerate(frames) if f["cause"] == 20 and f["ioa"] == wait_ioa) \
        if str(wait_ioa) in interrogated else len(frames)

    def later() -> list:
        return [f for f in frames[answered + 1:] if f["cause"] == 3 and f["ioa"] == wait_ioa]
    first = interrogated.get(str(wait_ioa), {}).get("value")
    deadline = time.time() + wait_s
    while time.time() < deadline and not (first is not None and any(abs(f["value"] - first) > min_change for f in later())):
        time.sleep(0.05)
    client.stop()
    print(json.dumps({"ok": ok, "interrogated": interrogated, "points": points, "spontaneous": later(), "frames": frames}))


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main()
