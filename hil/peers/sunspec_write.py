#!/usr/bin/env python3
"""Writes SunSpec points with pysunspec2 (the SunSpec Alliance's reference client), as plant SCADA
would: it scans the device, finds the model by id, sets the points in engineering units (pysunspec2
applies the scale factors it read) and writes them. Points of one group are written together
(pysunspec2 sends one request per run of adjacent points); groups are separated by "--".
A point of a group is named GROUP.POINT (704's PFWInj.PF, PFWInj.Ext).
Prints one JSON result per group: {"ok": true} or {"ok": false, "error": "..."}, then the model's
points as read back (a group's as GROUP.POINT).
Usage: sunspec_write.py HOST PORT UNIT_ID MODEL NAME=VALUE [NAME=VALUE ...] [-- NAME=VALUE ...]"""
import json
import sys

import sunspec2.modbus.client as client

host, port, unit, model_id = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
groups = [[]]
for arg in sys.argv[5:]:
    if arg == "--":
        groups.append([])
    else:
        name, value = arg.split("=", 1)
        number = float(value)
        groups[-1].append((name, int(number) if number.is_integer() else number))

def owner(model, name):
    """The model, or for GROUP.POINT the (non-repeating) group, that holds the point NAME."""
    *groups, _ = name.split(".")
    node = model
    for group in groups:
        node = node.groups[group]
    return node


def find(model, name):
    """The point NAME, or GROUP.POINT inside a group."""
    return owner(model, name).points[name.split(".")[-1]]


def numbers(node, prefix=""):
    """The points of NODE and its groups that read as numbers or not implemented, by name."""
    values = {prefix + name: point.cvalue for name, point in node.points.items()
              if isinstance(point.cvalue, (int, float)) or point.cvalue is None}
    for name, group in node.groups.items():
        if not isinstance(group, list):
            values.update(numbers(group, prefix + name + "."))
    return values


device = client.SunSpecModbusClientDeviceTCP(slave_id=unit, ipaddr=host, ipport=port, timeout=5)
try:
    device.scan()
    model = device.models[model_id][0]
    results = []
    for group in groups:
        model.read()
        try:
            for name, value in group:
                point = find(model, name)
                point.cvalue = value
                point.dirty = True
            if len(group) == 1 and "." in group[0][0]:
                owner(model, group[0][0]).write()  # a group's point is written by its group
            elif len(group) == 1:
                find(model, group[0][0]).write()
            else:
                model.write()
            results.append({"ok": True})
        except Exception as error:  # the server's Modbus exception, as pysunspec2 reports it
            results.append({"ok": False, "error": str(error)})
            for name, _ in group:
                find(model, name).dirty = False
    model.read()
    print(json.dumps({"results": results, "points": numbers(model)}))
finally:
    device.close()
