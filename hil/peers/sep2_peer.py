#!/usr/bin/env python3
"""IEEE 2030.5 peers no one here wrote: sep2cert, envoy-schema and sep2tools (PyPI, Python >= 3.12;
pinned in hil/requirements-py312.txt; run as `$(scripts/ensure-python-peers.sh --python) hil/peers/sep2_peer.py`).

`identity [--make DIR] PEM...`  one JSON line per certificate: {"path", "lfdi", "sfdi"} as sep2cert
    derives them; with --make, sep2cert first makes a SERCA and a device certificate (PEN 12345) in
    DIR and reports the device's too.
`documents`  one JSON line per document: {"name", "xml", "given"}: XML written by envoy-schema's
    pydantic-xml models (the utility server's own types) and the values they were given. The v1.2
    variants are the same documents with the CSIP-AUS namespace URI of v1.1a/1.2 (envoy-schema 2.x
    writes only v1.3's).
`refusals`  one JSON line: {"name", "xml", "given"}: a DERControlList envoy-schema's models write with
    three controls: A1 (an export limit), B2 whose import limit's value is then edited to 77777 (outside
    Int16: invalid) and C3 setting only opModFixedVar of refType 0 with rampTms (not applied: 252); given
    names the control taken and each refused with the status 2030.5 gives it (253 invalid, 252 not applicable).
`reactive`  one JSON line: {"name", "xml", "given"}: a DERControlList of the reactive controls (the fixed
    power factors, opModFixedVar, opModTargetVar) envoy-schema's models write, with the controls taken,
    the one refused (252: a power factor of 0 is all it sets) and the values given.
`mrid PEN`  one JSON line {"mRID"}: sep2tools.ids.generate_mrid(PEN) ungrouped (the PEN ends it).
`events FILE`  reads {"cases": [{"events": [...], "times": [...]}, ...]} from FILE (sep2tools' DERControl
    fields) and prints {"case", "time", "mode", "mRID"} for every case, sample time and mode, from
    sep2tools.event_overlap.condense_events.
"""
import json
import sys
from pathlib import Path

V13 = "https://csipaus.org/ns/v1.3"
V12 = "https://csipaus.org/ns"


def identity(args):
    from sep2cert.cert_id import get_certificate_lfdi, get_sfdi

    paths = list(args)
    if paths and paths[0] == "--make":
        from sep2cert.cert_create import generate_device_certificate, generate_key, generate_serca

        directory = Path(paths[1])
        paths = paths[2:]
        serca_key, _ = generate_key(directory / "sep2cert-serca.key", generate_csr=False)
        serca_pem, _ = generate_serca(serca_key)
        device_key, device_csr = generate_key(directory / "sep2cert-device.key")
        paths.append(str(generate_device_certificate(device_csr, serca_pem, serca_key, pen=12345,
                                                     hardware_serial_number="BESS-0001",
                                                     cert_file=directory / "sep2cert-device.pem")))
    for path in paths:
        lfdi = get_certificate_lfdi(Path(path), group=False)
        # sep2cert's SFDI takes the fingerprint; the LFDI is its first 40 hex digits and the SFDI
        # reads only the first 9 of them.
        print(json.dumps({"path": path, "lfdi": lfdi, "sfdi": int(get_sfdi(lfdi, group=False))}))


def documents():
    from envoy_schema.server.schema.sep2.der import (
        DefaultDERControl,
        DERControlBase,
        DERControlListResponse,
        DERControlResponse,
        DERProgramListResponse,
        DERProgramResponse,
    )
    from envoy_schema.server.schema.sep2.der_control_types import ActivePower
    from envoy_schema.server.schema.sep2.event import EventStatus
    from envoy_schema.server.schema.sep2.identification import Link, ListLink
    from envoy_schema.server.schema.sep2.types import DateTimeIntervalType

    def power(value, multiplier):
        return ActivePower(value=value, multiplier=multiplier)

    def control(mrid, created, start, duration, status, base, rnd_start=None, rnd_duration=None):
        return DERControlResponse(
            href=f"/edev/1/derp/1/derc/{mrid}", replyTo="/rsps/1/rsp", responseRequired="03", mRID=mrid,
            creationTime=created, EventStatus_=EventStatus(currentStatus=status, dateTime=created, potentiallySuperseded=False),
            interval=DateTimeIntervalType(start=start, duration=duration), randomizeStart=rnd_start,
            randomizeDuration=rnd_duration, DERControlBase_=base)

    given = [
        {"mRID": "A1B2C3D4E5F60718", "creationTime": 1_760_000_000, "start": 1_760_000_300, "duration": 300, "status": 0,
         "randomizeStart": 60, "randomizeDuration": None,
         "base": {"opModExpLimW": [15, 2], "opModImpLimW": [5000, 0], "opModGenLimW": [123, 1], "opModLoadLimW": [-25, -1],
                  "opModConnect": True, "opModEnergize": False, "opModFixedW": -2500, "opModMaxLimW": 9000,
                  "opModTargetW": [3, 3], "rampTms": 6000}},
        {"mRID": "0F", "creationTime": 1_760_000_100, "start": 1_760_000_000, "duration": 86_400, "status": 2,
         "randomizeStart": None, "randomizeDuration": -120,
         "base": {"opModStorageTargetW": [-3000, 0], "opModExpLimW": [0, 0]}},
    ]

    def base_of(fields):
        kwargs = {}
        for key, value in fields.items():
            kwargs[key] = power(*value) if isinstance(value, list) else value
        return DERControlBase(**kwargs)

    controls = [control(g["mRID"], g["creationTime"], g["start"], g["duration"], g["status"], base_of(g["base"]),
                        g["randomizeStart"], g["randomizeDuration"]) for g in given]
    listed = DERControlListResponse(href="/edev/1/derp/1/derc", all_=5, results=2, DERControl=controls)
    default_given = {"mRID": "DD01", "setGradW": 27, "base": {"opModExpLimW": [1500, 0], "opModLoadLimW": [50, 2]}}
    default = DefaultDERControl(href="/edev/1/derp/1/dderc", mRID="DD01", setGradW=27, DERControlBase_=base_of(default_given["base"]))
    programs_given = [{"mRID": "AA01", "primacy": 1}, {"mRID": "BB02", "primacy": 89}]
    programs = DERProgramListResponse(
        href="/edev/1/derp", all_=2, results=2, pollRate=60,
        DERProgram=[DERProgramResponse(href=f"/edev/1/derp/{i}", mRID=p["mRID"], primacy=p["primacy"],
                                       DefaultDERControlLink=Link(href=f"/edev/1/derp/{i}/dderc"),
                                       DERControlListLink=ListLink(href=f"/edev/1/derp/{i}/derc", all_=2))
                    for i, p in enumerate(programs_given)])

    out = [("controlList", listed, {"controls": given, "all": 5, "results": 2}),
           ("control", controls[0], given[0]),
           ("default", default, default_given),
           ("programList", programs, {"programs": programs_given, "pollRate": 60})]
    for name, model, values in out:
        xml = model.to_xml(skip_empty=True).decode()
        assert V13 in xml or name == "programList", name
        print(json.dumps({"name": name + "-v1.3", "xml": xml, "given": values}))
        print(json.dumps({"name": name + "-v1.2", "xml": xml.replace(V13, V12), "given": values}))


def refusals():
    from envoy_schema.server.schema.sep2.der import DERControlBase, DERControlListResponse, DERControlResponse
    from envoy_schema.server.schema.sep2.der_control_types import ActivePower, FixedVar
    from envoy_schema.server.schema.sep2.event import EventStatus
    from envoy_schema.server.schema.sep2.types import DateTimeIntervalType

    def control(mrid, base):
        return DERControlResponse(
            href=f"/edev/1/derp/1/derc/{mrid}", replyTo="/rsps/1/rsp", responseRequired="03", mRID=mrid,
            creationTime=1_760_000_000, EventStatus_=EventStatus(currentStatus=0, dateTime=1_760_000_000, potentiallySuperseded=False),
            interval=DateTimeIntervalType(start=1_760_000_300, duration=300), DERControlBase_=base)

    listed = DERControlListResponse(href="/edev/1/derp/1/derc", all_=3, results=3, DERControl=[
        control("A1", DERControlBase(opModExpLimW=ActivePower(value=1500, multiplier=0))),
        control("B2", DERControlBase(opModImpLimW=ActivePower(value=7777, multiplier=0))),
        control("C3", DERControlBase(opModFixedVar=FixedVar(refType=0, value=500), rampTms=100)),
    ])
    xml = listed.to_xml(skip_empty=True).decode()
    assert xml.count("<value>7777</value>") == 1
    xml = xml.replace("<value>7777</value>", "<value>77777</value>")
    print(json.dumps({"name": "refusals-v1.3", "xml": xml,
                      "given": {"taken": ["A1"], "refused": [["B2", 253], ["C3", 252]], "all": 3}}))


def reactive():
    """A DERControlList of the reactive controls, written by envoy-schema's models: E1 both fixed power
    factors, E2 opModFixedVar of setMaxVar, E3 opModTargetVar, E4 only a power factor of 0 (not applied:
    252), E5 an export limit with an opModFixedVar of refType 4 (taken, the fixed var not applied)."""
    from envoy_schema.server.schema.sep2.der import DERControlBase, DERControlListResponse, DERControlResponse
    from envoy_schema.server.schema.sep2.der_control_types import ActivePower, FixedVar, PowerFactorWithExcitation, ReactivePower
    from envoy_schema.server.schema.sep2.event import EventStatus
    from envoy_schema.server.schema.sep2.types import DateTimeIntervalType

    def control(mrid, base):
        return DERControlResponse(
            href=f"/edev/1/derp/1/derc/{mrid}", replyTo="/rsps/1/rsp", responseRequired="03", mRID=mrid,
            creationTime=1_760_000_000, EventStatus_=EventStatus(currentStatus=0, dateTime=1_760_000_000, potentiallySuperseded=False),
            interval=DateTimeIntervalType(start=1_760_000_300, duration=300), DERControlBase_=base)

    listed = DERControlListResponse(href="/edev/1/derp/1/derc", all_=5, results=5, DERControl=[
        control("E1", DERControlBase(opModFixedPFInjectW=PowerFactorWithExcitation(displacement=95, excitation=False, multiplier=-2),
                                     opModFixedPFAbsorbW=PowerFactorWithExcitation(displacement=900, excitation=True, multiplier=-3))),
        control("E2", DERControlBase(opModFixedVar=FixedVar(refType=2, value=-2500))),
        control("E3", DERControlBase(opModTargetVar=ReactivePower(value=15, multiplier=2))),
        control("E4", DERControlBase(opModFixedPFInjectW=PowerFactorWithExcitation(displacement=0, excitation=False, multiplier=0))),
        control("E5", DERControlBase(opModExpLimW=ActivePower(value=5, multiplier=3), opModFixedVar=FixedVar(refType=4, value=100))),
    ])
    print(json.dumps({"name": "reactive-v1.3", "xml": listed.to_xml(skip_empty=True).decode(), "given": {
        "taken": ["E1", "E2", "E3", "E5"], "refused": [["E4", 252]],
        "E1": {"inject": [95, False, -2], "absorb": [900, True, -3]}, "E2": [2, -2500], "E3": [15, 2]}}))


def mrid(pen):
    from sep2tools.ids import generate_mrid

    print(json.dumps({"mRID": generate_mrid(int(pen), group=False)}))


def events(path):
    from sep2tools.event_models import CurrentStatus, DERControl, DERControlBase
    from sep2tools.event_overlap import condense_events

    for index, case in enumerate(json.load(open(path))["cases"]):
        evts = [DERControl(mRID=e["mRID"], programName=e["program"], programPrimacy=e["primacy"],
                           creationTime=e["creationTime"], currentStatus=CurrentStatus(0), intervalStart=e["start"],
                           intervalDuration=e["duration"],
                           controls=[DERControlBase(mode=m, value=v) for m, v in e["controls"].items()])
                for e in case["events"]]
        schedule = condense_events(evts)
        for mode, pieces in schedule.items():
            for time in case["times"]:
                covered = any(e.intervalStart <= time < e.intervalEnd for e in evts if any(c.mode == mode for c in e.controls))
                # condense_mode_events returns the pieces in time order with each piece's start, but a piece
                # joined to its predecessor keeps its own duration: the piece in force at `time` is the last
                # one starting at or before it, where some event of this mode covers `time` at all.
                chosen = [p for p in pieces if p.intervalStart <= time]
                print(json.dumps({"case": index, "time": time, "mode": mode,
                                  "mRID": chosen[-1].mRID if covered and chosen else None}))


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "identity":
        identity(sys.argv[2:])
    elif command == "documents":
        documents()
    elif command == "refusals":
        refusals()
    elif command == "reactive":
        reactive()
    elif command == "mrid":
        mrid(sys.argv[2])
    elif command == "events":
        events(sys.argv[2])
    else:
        sys.exit(__doc__)
