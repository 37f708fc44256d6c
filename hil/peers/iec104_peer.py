#!/usr/bin/env python3
"""IEC 60870-5-104 frames through two independent implementations, for bessd's IEC104 codec tests.

  iec104_peer.py decode HEX...   each APDU decoded by c104 (lib60870, `c104.explain_bytes_dict`) and by
                                 iec60870-parser; one JSON object per APDU on stdout
  iec104_peer.py produce         a c104 server and client on 127.0.0.1 exchange STARTDT, a station
                                 interrogation, a clock sync, a counter interrogation, spontaneous
                                 values and a set-point; every APDU either side sent, one JSON object
                                 per line with c104's reading of it

"ok" holds c104's return values; its client sometimes reports the set-point False though the ACT_CON
arrived (when a spontaneous frame overtook it), so the test judges that step by the frames.
c104 reports type, cause, addresses and the element octets; iec60870-parser decodes the values of
types 1 and 30 and CP56Time2a; a short float is read from c104's element octets with `struct`.
Both packages come from hil/requirements.txt (scripts/ensure-python-peers.sh)."""
import json
import struct
import sys
import time

import c104
from iec60870 import parser


def c104_view(apdu: bytes) -> dict:
    d = c104.explain_bytes_dict(apdu=apdu)
    view = {"format": d.get("format")}
    if view["format"] == "I":
        elements = bytes.fromhex(d.get("elements") or "")
        view.update({
            "type": int(d["type"]), "cot": int(d["cot"]), "negative": bool(d["negative"]), "test": bool(d["test"]),
            "ca": d["commonAddress"], "oa": d["originatorAddress"], "ioa": d["firstInformationObjectAddress"],
            "count": d["numberOfObjects"], "sequence": bool(d["sequence"]), "tx": d["tx"], "rx": d["rx"],
            "elements": elements.hex(),
        })
        # The first object's short float (types 13, 36, 50, 63), read from the octets c104 cut out;
        # with SQ = 0 each further object repeats its 3-octet address before the value.
        if view["type"] in (13, 36, 50, 63) and len(elements) >= 7:
            view["float"] = struct.unpack("<f", elements[3:7])[0]
    elif view["format"] == "S":
        view["rx"] = d.get("rx")
    else:
        view["u"] = str(d.get("type") or d.get("cot") or "")
    return view


def parser_view(apdu: bytes) -> dict:
    result = parser.parse_frame(apdu, protocol="t104")
    view = {"status": str(result.status.value if hasattr(result.status, "value") else result.status)}
    fields = getattr(result, "fields", None) or {}
    view["frame_type"] = getattr(result, "frame_type", None)
    for key, name in (("send_sequence", "ns"), ("receive_sequence", "nr")):
        if key in fields:
            view[name] = fields[key]
    if "u_function" in fields:
        view["u"] = fields["u_function"]
    asdu = fields.get("asdu")
    if asdu:
        view.update({"type": asdu["type_id"], "cot": asdu["cot"] & 0x3F, "ca": asdu["common_address"],
                     "objects": [{k: (v.hex() if isinstance(v, (bytes, bytearray)) else v) for k, v in o.items()}
                                 for o in asdu["information_objects"]]})
    return view


def decode(hexes):
    for text in hexes:
        apdu = bytes.fromhex(text)
        print(json.dumps({"hex": text, "c104": c104_view(apdu), "parser": parser_view(apdu)}))


def produce():
    frames = []

    def server_sent(server: c104.Server, data: bytes) -> None:
        frames.append(("server", data))

    def client_sent(connection: c104.Connection, data: bytes) -> None:
        frames.append(("client", data))

    port = int(sys.argv[2]) if len(sys.argv) > 2 else 24041
    server = c104.Server(ip="127.0.0.1", port=port, tick_rate_ms=50)
    server.on_send_raw(callable=server_sent)
    station = server.add_station(common_address=7)
    mw = station.add_point(io_address=1001, type=c104.Type.M_ME_NC_1)
    mw.value = 13.25
    spont = station.add_point(io_address=1005, type=c104.Type.M_ME_TF_1)
    spont.value = 61.5
    agc = station.add_point(io_address=2001, type=c104.Type.M_SP_NA_1)
    agc.value = True
    breaker = station.add_point(io_address=2101, type=c104.Type.M_DP_NA_1)
    breaker.value = c104.Double.ON
    energy = station.add_point(io_address=4001, type=c104.Type.M_IT_NA_1)
    energy.value = 123456
    setpoint = station.add_point(io_address=3001, type=c104.Type.C_SE_NC_1, command_mode=c104.CommandMode.DIRECT)
    server.start()

    # Generous timeouts: make check runs this beside the whole suite on two cores.
    client = c104.Client(tick_rate_ms=50, command_timeout_ms=10000)
    connection = client.add_connection(ip="127.0.0.1", port=port, init=c104.Init.NONE)
    connection.on_send_raw(callable=client_sent)
    client_station = connection.add_station(common_address=7)
    client_setpoint = client_station.add_point(io_address=3001, type=c104.Type.C_SE_NC_1)
    client.start()
    def wait(condition, seconds=10.0):
        deadline = time.time() + seconds
        while not condition() and time.time() < deadline:
            time.sleep(0.02)
        return condition()

    wait(lambda: connection.is_connected)
    ok = {"connected": connection.is_connected}
    ok["startdt"] = connection.unmute()
    ok["interrogation"] = connection.interrogation(common_address=7, cause=c104.Cot.ACTIVATION, qualifier=c104.Qoi.STATION,
                                                   wait_for_response=True)
    ok["clock_sync"] = connection.clock_sync(common_address=7, wait_for_response=True)
    ok["counters"] = connection.counter_interrogation(common_address=7, cause=c104.Cot.ACTIVATION,
                                                      qualifier=c104.Rqt.GENERAL, freeze=c104.Frz.READ,
                                                      wait_for_response=True)
    spont.value = 62.25
    ok["spontaneous"] = spont.transmit(cause=c104.Cot.SPONTANEOUS)
    client_setpoint.value = -4.0
    ok["setpoint"] = client_setpoint.transmit(cause=c104.Cot.ACTIVATION)
    # The set-point's activation and confirmation are the last frames: wait for both raw callbacks
    # (c104 reports them from its own threads, not always before transmit() returns).
    ok["confirmed"] = wait(lambda: {side for side, data in list(frames) if len(data) > 6 and data[6] == 50} == {"client", "server"})
    client.stop()
    server.stop()
    print(json.dumps({"ok": ok}))
    for side, data in frames:
        print(json.dumps({"from": side, "hex": data.hex(), "c104": c104_view(data)}))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "decode":
        decode(sys.argv[2:])
    elif len(sys.argv) >= 2 and sys.argv[1] == "produce":
        produce()
    else:
        sys.exit(__doc__)
