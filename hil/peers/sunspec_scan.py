#!/usr/bin/env python3
"""Scans a SunSpec device with pysunspec2 (the SunSpec Alliance's reference client) and prints what
it found as JSON: the model chain and every point value of the models bessd uses or serves, scale
factors applied by pysunspec2 itself ("points": the first instance of each model; "instances": all).
Usage: sunspec_scan.py HOST PORT [UNIT_ID] | --rtu DEVICE BAUD [UNIT_ID]"""
import json
import sys

import sunspec2.modbus.client as client

if sys.argv[1] == "--rtu":
    # --rtu DEVICE BAUD [UNIT_ID]: Modbus RTU, 8N1 (a pty refuses parity).
    unit = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    device = client.SunSpecModbusClientDeviceRTU(slave_id=unit, name=sys.argv[2], baudrate=int(sys.argv[3]), parity="N",
                                                 timeout=5)
else:
    host, port = sys.argv[1], int(sys.argv[2])
    unit = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    device = client.SunSpecModbusClientDeviceTCP(slave_id=unit, ipaddr=host, ipport=port, timeout=5)
try:
    device.scan()
    result = {"models": [], "points": {}}
    for key, models in device.models.items():
        if isinstance(key, int):
            for model in models:
                result["models"].append({"id": key, "len": model.len, "addr": model.model_addr})
    result["instances"] = {}
    for mid in (1, 101, 102, 103, 120, 121, 123, 124, 201, 202, 203, 204, 701, 702, 704, 713, 802):
        for model in device.models.get(mid, []):
            model.read()
            values = {}
            for name, point in model.points.items():
                value = point.cvalue
                if isinstance(value, (int, float, str)) or value is None:
                    values[name] = value
            # "points" holds the first instance of each model; "instances" every one, in chain order.
            result["points"].setdefault(str(mid), values)
            result["instances"].setdefault(str(mid), []).append(values)
    result["models"].sort(key=lambda m: m["addr"])
    print(json.dumps(result))
finally:
    device.close()
