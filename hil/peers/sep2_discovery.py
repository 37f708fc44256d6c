#!/usr/bin/env python3
"""The IEEE 2030.5 discovery chain as a utility's server would serve it, written by envoy-schema's
pydantic-xml models (the server's own types; PyPI, Python >= 3.12, pinned in hil/requirements-py312.txt).
Run as `$(scripts/ensure-python-peers.sh --python) hil/peers/sep2_discovery.py LFDI SFDI PAGE`.

Prints one JSON object: {"given": {...}, "servers": {"A": {path: xml}, "B": ..., "C": ...}}.
- "given": the values each resource was built from, for the readers' field-by-field checks.
- "A": DeviceCapability, Time, an EndDeviceList of 7 devices in pages of PAGE (this device, LFDI/SFDI
  as given, the last), Registration (pIN 111115), the FunctionSetAssignmentsList (F1), its
  DERProgramList (P1 primacy 1 with two controls, P2 primacy 2 with none), their DERControlLists and
  DefaultDERControls, and the DERList. Paths carry the paging query `?s=&l=` for lists.
- "B": A with the assignments changed (F2 → program P3 at new paths).
- "C": A with the DERProgramList's pollRate 30 → 90 and the DeviceCapability's 60 → 45.
- "R": A before in-band registration: the EndDeviceList holds the 6 other devices only; this device's
  EndDevice (with its csipaus:ConnectionPointLink) is served alone at /edev/7, where a POST puts it.
- "N": A without this device's RegistrationLink (CSIP-AUS ALL-05).
- "wellKnown": /.well-known/csipaus documents (JSON, as cactus-runner serves them: {"supportedSchemaVersions":
  {version: {"dcap": [path, ...]}}}): "sdvn01" as SDVN-01 builds it (v99.99, "null", v1.2 with no path, v1.3),
  "v12" (v1.2 only), "none" (v99.99 and "null" only).

`sep2_discovery.py parse FILE`: FILE holds [{"name", "root", "xml"}, ...], documents bessd sends (EndDevice,
ConnectionPoint); each is read by envoy-schema's request model and printed as one JSON line {"name", "fields"}
or {"name", "error"}. envoy-schema 2.x knows only CSIP-AUS v1.3, so v1.2's namespace is swapped first.
"""
import json
import sys

from envoy_schema.server.schema.sep2.der import (
    DER,
    DefaultDERControl,
    DERControlBase,
    DERControlListResponse,
    DERControlResponse,
    DERListResponse,
    DERProgramListResponse,
    DERProgramResponse,
)
from envoy_schema.server.schema.sep2.der_control_types import ActivePower
from envoy_schema.server.schema.sep2.device_capability import DeviceCapabilityResponse
from envoy_schema.server.schema.csip_aus.connection_point import ConnectionPointRequest
from envoy_schema.server.schema.sep2.end_device import (
    EndDeviceListResponse,
    EndDeviceRequest,
    EndDeviceResponse,
    RegistrationResponse,
)
from xml.etree import ElementTree
from envoy_schema.server.schema.sep2.event import EventStatus
from envoy_schema.server.schema.sep2.function_set_assignments import (
    FunctionSetAssignmentsListResponse,
    FunctionSetAssignmentsResponse,
)
from envoy_schema.server.schema.sep2.identification import Link, ListLink
from envoy_schema.server.schema.sep2.time import TimeResponse
from envoy_schema.server.schema.sep2.types import DateTimeIntervalType

T0 = 1_760_000_000


def xml(model):
    return model.to_xml(skip_empty=True).decode()


def paged(path, items, page, build):
    """path?s=&l= → the page's document, for every page of `items`."""
    out = {}
    starts = range(0, max(len(items), 1), page)
    for start in starts:
        out[f"{path}?s={start}&l={page}"] = xml(build(items[start:start + page]))
    return out


def programs_of(server, fsa_path, program_list, programs, poll, page):
    """A DERProgramList and every program's control list and default."""
    server.update(paged(program_list, programs, page, lambda chunk: DERProgramListResponse(
        href=program_list, all_=len(programs), results=len(chunk), pollRate=poll,
        DERProgram=[DERProgramResponse(href=p["href"], mRID=p["mRID"], primacy=p["primacy"],
                                       DERControlListLink=ListLink(href=p["href"] + "/derc", all_=len(p["controls"])),
                                       DefaultDERControlLink=Link(href=p["href"] + "/dderc")) for p in chunk])))
    for p in programs:
        derc = p["href"] + "/derc"
        controls = [DERControlResponse(
            href=f"{derc}/{c['mRID']}", mRID=c["mRID"], creationTime=c["creationTime"],
            EventStatus_=EventStatus(currentStatus=0, dateTime=c["creationTime"], potentiallySuperseded=False),
            interval=DateTimeIntervalType(start=c["start"], duration=c["duration"]),
            DERControlBase_=DERControlBase(opModExpLimW=ActivePower(value=c["exportW"], multiplier=0)))
            for c in p["controls"]]
        server.update(paged(derc, controls, page, lambda chunk: DERControlListResponse(
            href=derc, all_=len(controls), results=len(chunk), DERControl=chunk)))
        server[p["href"] + "/dderc"] = xml(DefaultDERControl(
            href=p["href"] + "/dderc", mRID=p["default"]["mRID"], setGradW=p["default"]["setGradW"],
            DERControlBase_=DERControlBase(opModExpLimW=ActivePower(value=p["default"]["exportW"], multiplier=0))))


def main(lfdi, sfdi, page):
    given = {
        "dcap": {"href": "/dcap", "pollRate": 60, "timeLink": "/tm", "endDeviceListLink": "/edev",
                 "mirrorUsagePointListLink": "/mup"},
        "time": {"currentTime": T0, "quality": 7, "tzOffset": 36000, "dstOffset": 3600},
        "devices": [{"href": f"/edev/{i}", "lFDI": f"{i:040X}" if i < 7 else lfdi, "sFDI": 1000 + i if i < 7 else sfdi}
                    for i in range(1, 8)],
        "edevPollRate": 120,
        "mine": {"href": "/edev/7", "registrationLink": "/edev/7/rg", "fsaListLink": "/edev/7/fsa",
                 "derListLink": "/edev/7/der", "postRate": 60, "connectionPointLink": "/edev/7/cp"},
        "registration": {"pIN": 111115, "pollRate": 300, "dateTimeRegistered": T0 - 86400},
        "fsa": {"href": "/edev/7/fsa/1", "mRID": "F1", "derProgramListLink": "/edev/7/fsa/1/derp", "timeLink": "/tm",
                "pollRate": 60},
        "programs": [
            {"href": "/derp/1", "mRID": "A1", "primacy": 1,
             "controls": [{"mRID": "CC11", "creationTime": T0 - 100, "start": T0 + 60, "duration": 300, "exportW": 1500},
                          {"mRID": "CC12", "creationTime": T0 - 50, "start": T0 + 600, "duration": 300, "exportW": 0}],
             "default": {"mRID": "D1", "setGradW": 27, "exportW": 5000}},
            {"href": "/derp/2", "mRID": "A2", "primacy": 2, "controls": [],
             "default": {"mRID": "D2", "setGradW": 100, "exportW": 8000}}],
        "programPollRate": 30,
        "der": {"href": "/edev/7/der/1", "capabilityLink": "/edev/7/der/1/dercap", "settingsLink": "/edev/7/der/1/derg",
                "statusLink": "/edev/7/der/1/ders", "availabilityLink": "/edev/7/der/1/dera"},
        "changed": {"fsa": "F2", "programList": "/edev/7/fsa/2/derp",
                    "programs": [{"href": "/derp/3", "mRID": "A3", "primacy": 3,
                                  "controls": [{"mRID": "CC31", "creationTime": T0, "start": T0 + 60, "duration": 60, "exportW": 900}],
                                  "default": {"mRID": "D3", "setGradW": 50, "exportW": 4000}}]},
    }

    def server(dcap_poll, fsa, program_list, programs, program_poll, listed=True, registration_link=True):
        out = {}
        d = given["dcap"]
        out["/dcap"] = xml(DeviceCapabilityResponse(
            href="/dcap", pollRate=dcap_poll, TimeLink=Link(href=d["timeLink"]),
            EndDeviceListLink=ListLink(href=d["endDeviceListLink"], all_=7),
            MirrorUsagePointListLink=ListLink(href=d["mirrorUsagePointListLink"], all_=0)))
        t = given["time"]
        out["/tm"] = xml(TimeResponse(href="/tm", currentTime=t["currentTime"], dstEndTime=T0 + 1000, dstOffset=t["dstOffset"],
                                      dstStartTime=T0 - 1000, quality=t["quality"], tzOffset=t["tzOffset"]))
        m = given["mine"]

        def device(g):
            ours = g["href"] == m["href"]
            return EndDeviceResponse(
                href=g["href"], lFDI=g["lFDI"], sFDI=g["sFDI"], changedTime=T0, loadShiftForward=False,
                postRate=m["postRate"] if ours else None,
                RegistrationLink=Link(href=g["href"] + "/rg") if registration_link or not ours else None,
                FunctionSetAssignmentsListLink=ListLink(href=g["href"] + "/fsa", all_=1),
                DERListLink=ListLink(href=g["href"] + "/der", all_=1),
                ConnectionPointLink={"href": g["href"] + "/cp"} if ours else None)

        devices = [device(g) for g in given["devices"] if listed or g["href"] != m["href"]]
        out[m["href"]] = xml(device(given["devices"][-1]))
        out.update(paged("/edev", devices, page, lambda chunk: EndDeviceListResponse(
            href="/edev", all_=len(devices), results=len(chunk), pollRate=given["edevPollRate"], EndDevice=chunk)))
        r = given["registration"]
        out["/edev/7/rg"] = xml(RegistrationResponse(href="/edev/7/rg", pollRate=r["pollRate"], pIN=r["pIN"],
                                                     dateTimeRegistered=r["dateTimeRegistered"]))
        assignment = FunctionSetAssignmentsResponse(href=fsa["href"], mRID=fsa["mRID"],
                                                    DERProgramListLink=ListLink(href=program_list, all_=len(programs)),
                                                    TimeLink=Link(href="/tm"))
        out.update(paged("/edev/7/fsa", [assignment], page, lambda chunk: FunctionSetAssignmentsListResponse(
            href="/edev/7/fsa", all_=1, results=len(chunk), pollRate=given["fsa"]["pollRate"], FunctionSetAssignments=chunk)))
        programs_of(out, fsa["href"], program_list, programs, program_poll, page)
        der = given["der"]
        ders = [DER(href=der["href"], DERCapabilityLink=Link(href=der["capabilityLink"]), DERSettingsLink=Link(href=der["settingsLink"]),
                    DERStatusLink=Link(href=der["statusLink"]), DERAvailabilityLink=Link(href=der["availabilityLink"]))]
        out.update(paged("/edev/7/der", ders, page, lambda chunk: DERListResponse(
            href="/edev/7/der", all_=1, results=len(chunk), pollRate=300, DER_=chunk)))
        return out

    f = given["fsa"]
    c = given["changed"]
    servers = {
        "A": server(60, f, f["derProgramListLink"], given["programs"], given["programPollRate"]),
        "B": server(60, {"href": "/edev/7/fsa/2", "mRID": c["fsa"]}, c["programList"], c["programs"], given["programPollRate"]),
        "C": server(45, f, f["derProgramListLink"], given["programs"], 90),
        "R": server(60, f, f["derProgramListLink"], given["programs"], given["programPollRate"], listed=False),
        "N": server(60, f, f["derProgramListLink"], given["programs"], given["programPollRate"], registration_link=False),
    }
    routes = {"sdvn01": [("https://csipaus.org/ns/v99.99", ["/x9999/dcap"]), ("null", ["/xnull/dcap"]),
                         ("https://csipaus.org/ns/v1.2", []), ("https://csipaus.org/ns/v1.3", ["/a1b2c3/dcap"])],
              "v12": [("https://csipaus.org/ns/v1.2", ["/dcap"])],
              "none": [("https://csipaus.org/ns/v99.99", ["/x9999/dcap"]), ("null", ["/xnull/dcap"])]}
    given["wellKnown"] = {name: json.dumps({"supportedSchemaVersions": {version: {"dcap": paths} for version, paths in entries}})
                          for name, entries in routes.items()}
    print(json.dumps({"given": given, "servers": servers}))


V13 = "https://csipaus.org/ns/v1.3"
V12 = "https://csipaus.org/ns"


def parse(path):
    models = {"EndDevice": EndDeviceRequest, "ConnectionPoint": ConnectionPointRequest}
    for document in json.load(open(path)):
        try:
            xml = document["xml"].replace(f'"{V12}"', f'"{V13}"')
            root = ElementTree.fromstring(xml)
            ns = V13 if document["root"] == "ConnectionPoint" else "urn:ieee:std:2030.5:ns"
            if root.tag != "{" + ns + "}" + document["root"]:
                raise ValueError(f"root {root.tag}")
            model = models[document["root"]].from_xml(xml.encode())
            print(json.dumps({"name": document["name"], "fields": model.model_dump(mode="json")}))
        except Exception as error:  # noqa: BLE001 - every refusal is reported to the test
            print(json.dumps({"name": document["name"], "error": f"{type(error).__name__}: {error}"[:2000]}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "parse":
        parse(sys.argv[2])
        sys.exit(0)
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
