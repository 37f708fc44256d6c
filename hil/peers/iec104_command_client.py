#!/usr/bin/env python3
"""A c104 (lib60870) controlling station sending set-points to bessd's IEC 104 outstation, for the
reactive set-point tests (3003 Mvar, 3004 power factor; any C_SE_NC_1 point).

  iec104_command_client.py PORT COMMON_ADDRESS COMMAND...

COMMAND is IOA:MODE:VALUE, MODE `direct` (S/E = 0) or `sbo` (select, then execute, as c104 does in
SELECT_AND_EXECUTE). Connects to 127.0.0.1:PORT, starts data transfer and sends each command in turn
as C_SE_NC_1, waiting up to 5 s after c104's transmit for the command's last answer (a negative
confirmation, or the activation termination). Prints one JSON object:
  "ok"        c104's verdicts (connected, startdt)
  "commands"  one object per COMMAND: ioa, mode, value, c104's own verdict ("c104"), and "frames",
              every I-frame of that IOA received while it ran: type, cot, negative, and the
              set-point's value read from the element octets c104 cut out; "execute_sent_by_client"
              when c104 missed the select's positive confirmation and this client sent the execute
c104 comes from hil/requirements.txt (scripts/ensure-python-peers.sh)."""
import json
import struct
import sys
import time

import c104

from iec104_client import start, station_of


def parse(command: str) -> tuple:
    ioa, mode, value = command.split(":")
    if mode not in ("direct", "sbo"):
        sys.exit(f"mode {mode!r}: direct or sbo")
    return int(ioa), mode, float(value)


# c104's wait for each confirmation, ms (see main).
COMMAND_TIMEOUT_MS = 4000


def main() -> None:
    port, ca = int(sys.argv[1]), int(sys.argv[2])
    commands = [parse(c) for c in sys.argv[3:]]
    received = []

    def on_raw(connection: c104.Connection, data: bytes) -> None:
        d = c104.explain_bytes_dict(apdu=data)
        if d.get("format") != "I":
            return
        frame = {"type": int(d["type"]), "cot": int(d["cot"]), "negative": bool(d["negative"]),
                 "ioa": d["firstInformationObjectAddress"]}
        elements = bytes.fromhex(d.get("elements") or "")
        # C_SE_NC_1 (50) and C_SE_TC_1 (63): the object's address (3), then the short float.
        if frame["type"] in (50, 63) and len(elements) >= 7:
            frame["value"] = struct.unpack("<f", elements[3:7])[0]
        received.append(frame)

    # c104 2.2.1 can miss a select's confirmation that came on the wire (bessd journalled the select
    # accepted, the raw frames hold its ACT_CON) and then never sends the execute: it waits out its
    # command timeout and returns false. Its wait is kept under the outstation's 10 s selection so the
    # client can send the execute itself (below), while the selection still stands.
    client, connection, station = station_of(port, ca, on_raw, command_timeout_ms=COMMAND_TIMEOUT_MS)
    points = {}
    for ioa, _, _ in commands:
        if ioa not in points:
            points[ioa] = station.add_point(io_address=ioa, type=c104.Type.C_SE_NC_1,
                                            command_mode=c104.CommandMode.DIRECT)
    ok = start(client, connection)
    results = []
    for ioa, mode, value in commands:
        first = len(received)

        def mine() -> list:
            return [f for f in received[first:] if f["ioa"] == ioa and f["type"] == 50]

        def finished() -> bool:
            frames = mine()
            return any(f["negative"] for f in frames) or any(f["cot"] == 10 for f in frames)

        point = points[ioa]
        point.command_mode = c104.CommandMode.SELECT_AND_EXECUTE if mode == "sbo" else c104.CommandMode.DIRECT
        point.value = value
        sent_at = time.time()
        verdict = point.transmit(cause=c104.Cot.ACTIVATION)
        executed_by_client = False
        # Only a transmit that waited out c104's whole timeout missed a confirmation; one that came
        # back sooner had its answer (an execute refused returns false at once, its 7- maybe still
        # on its way to on_raw).
        if mode == "sbo" and not verdict and time.time() - sent_at >= 0.9 * COMMAND_TIMEOUT_MS / 1000:
            # The select's own answer decides: once it is a positive ACT_CON and nothing followed, the
            # execute is what IEC 60870-5-104 has it be, the same command with S/E = 0, sent here.
            deadline = time.time() + 5
            while time.time() < deadline and not mine():
                time.sleep(0.02)
            frames = mine()
            if len(frames) == 1 and frames[0]["cot"] == 7 and not frames[0]["negative"]:
                point.command_mode = c104.CommandMode.DIRECT
                point.value = value
                verdict = point.transmit(cause=c104.Cot.ACTIVATION)
                executed_by_client = True
        # c104 may give up waiting while bessd's answer is on its way: the frames decide.
        deadline = time.time() + 5
        while time.time() < deadline and not finished():
            time.sleep(0.02)
        results.append({"ioa": ioa, "mode": mode, "value": value, "c104": bool(verdict), "frames": mine(),
                        "execute_sent_by_client": executed_by_client})
    client.stop()
    print(json.dumps({"ok": ok, "commands": results}))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main()
