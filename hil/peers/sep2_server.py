#!/usr/bin/env python3
"""A utility's IEEE 2030.5 server for the tests: every document written by envoy-schema's models (the
utility server's own types), served over TLS 1.2 with ECDHE-ECDSA-AES128-CCM8 only and a client
certificate required (Python >= 3.12, pinned in hil/requirements-py312.txt; run as
`$(scripts/ensure-python-peers.sh --python) hil/peers/sep2_server.py ...`).

    sep2_server.py --port 0 --cert server.pem --key server.key --ca ca.pem --lfdi HEX --sfdi N
                   [--pin 111115] [--default-exp-w 5000] [--control MRID:START:DURATION:EXP_W ...] [--in-band]
                   [--volt-var MRID:START:DURATION:V1,Q1,V2,Q2,V3,Q3,V4,Q4 ...]

Prints `PORT N` once it listens (the port the kernel chose for --port 0; TestSupport's UnitsPeer reads
it), then one JSON line per request it answered: {"path", "status", "cipher", "client"}. The chain:
/dcap → /tm, /edev → /edev/1 (the device given) → /edev/1/rg (pIN) → /edev/1/fsa → /derp →
/derp/1/derc (the controls given) and /derp/1/dderc (the default). A --volt-var control sets only
opModVoltVar, a DERCurveLink to /derp/1/dc/MRID: a DERCurve of curveType 11, V in % of setVRef and Q in
% of setMaxVar (yRefType 2) as given, multipliers 0, openLoopTms 500. envoy-schema has no DERCurve model,
so that document is written here, in the schema's element order. Query strings (paging) are ignored:
every list is served whole. Anything else is 404. Runs until killed.

--in-band (CSIP-AUS ALL-02/ALL-03): /edev lists no device until an EndDevice with the given lFDI and sFDI
is POSTed to /edev (read by envoy-schema's EndDeviceRequest; 201, or 400 printed as {"registration_refused"}),
printed as {"registered": {lFDI, sFDI, deviceCategory, changedTime}}; the answer has no Location, so the
client reads the list again. The EndDevice then has csipaus:ConnectionPointLink /edev/1/cp, where a PUT
is read by envoy-schema's ConnectionPointRequest and printed as {"connection_point": id, "namespace": URI}
(204; 400 for a body the model refuses); a GET of /edev/1/cp then gives the body PUT back.
"""
import argparse
import json
import signal
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def documents(args):
    from envoy_schema.server.schema.sep2.der import (
        DefaultDERControl,
        DERControlBase,
        DERControlListResponse,
        DERControlResponse,
        DERProgramListResponse,
        DERProgramResponse,
    )
    from envoy_schema.server.schema.sep2.der_control_types import ActivePower
    from envoy_schema.server.schema.sep2.device_capability import DeviceCapabilityResponse
    from envoy_schema.server.schema.sep2.end_device import EndDeviceListResponse, EndDeviceResponse, RegistrationResponse
    from envoy_schema.server.schema.sep2.event import EventStatus
    from envoy_schema.server.schema.sep2.function_set_assignments import (
        FunctionSetAssignmentsListResponse,
        FunctionSetAssignmentsResponse,
    )
    from envoy_schema.server.schema.sep2.identification import Link, ListLink
    from envoy_schema.server.schema.sep2.time import TimeResponse
    from envoy_schema.server.schema.sep2.types import DateTimeIntervalType

    now = int(time.time())
    registered = args.registered
    controls = []
    for given in args.control:
        mrid, start, duration, watts = given.split(":")
        controls.append(DERControlResponse(
            href=f"/derp/1/derc/{mrid}", mRID=mrid, creationTime=now - 60, description="test control",
            EventStatus_=EventStatus(currentStatus=0, dateTime=now - 60, potentiallySuperseded=False),
            interval=DateTimeIntervalType(start=int(start), duration=int(duration)),
            DERControlBase_=DERControlBase(opModExpLimW=ActivePower(value=int(watts), multiplier=0))))
    curves = {}
    for given in args.volt_var:
        mrid, start, duration, points = given.split(":")
        values = [int(v) for v in points.split(",")]
        href = f"/derp/1/dc/{mrid}"
        controls.append(DERControlResponse(
            href=f"/derp/1/derc/{mrid}", mRID=mrid, creationTime=now - 60, description="test volt-var",
            EventStatus_=EventStatus(currentStatus=0, dateTime=now - 60, potentiallySuperseded=False),
            interval=DateTimeIntervalType(start=int(start), duration=int(duration)),
            DERControlBase_=DERControlBase(opModVoltVar=Link(href=href))))
        data = "".join(f"<CurveData><xvalue>{x}</xvalue><yvalue>{y}</yvalue></CurveData>" for x, y in zip(values[::2], values[1::2]))
        curves[href] = (f'<DERCurve xmlns="urn:ieee:std:2030.5:ns" href="{href}"><mRID>{mrid}</mRID><description>volt-var</description>'
                        f"<creationTime>{now - 60}</creationTime>{data}<curveType>11</curveType><openLoopTms>500</openLoopTms>"
                        "<xMultiplier>0</xMultiplier><yMultiplier>0</yMultiplier><yRefType>2</yRefType></DERCurve>").encode()
    docs = {
        "/dcap": lambda: DeviceCapabilityResponse(
            href="/dcap", pollRate=args.poll, TimeLink=Link(href="/tm"), EndDeviceListLink=ListLink(href="/edev", all_=1)),
        "/tm": lambda: TimeResponse(href="/tm", currentTime=int(time.time()), dstEndTime=0, dstOffset=0, dstStartTime=0,
                                    localTime=int(time.time()), quality=7, tzOffset=0),
        "/edev": lambda: EndDeviceListResponse(
            href="/edev", all_=int(registered[0]), results=int(registered[0]), EndDevice=[EndDeviceResponse(
                href="/edev/1", lFDI=args.lfdi, sFDI=args.sfdi, changedTime=now,
                FunctionSetAssignmentsListLink=ListLink(href="/edev/1/fsa", all_=1), RegistrationLink=Link(href="/edev/1/rg"),
                ConnectionPointLink={"href": "/edev/1/cp"} if args.in_band else None)] if registered[0] else []),
        "/edev/1/rg": lambda: RegistrationResponse(href="/edev/1/rg", dateTimeRegistered=now, pIN=args.pin),
        "/edev/1/fsa": lambda: FunctionSetAssignmentsListResponse(
            href="/edev/1/fsa", all_=1, results=1, FunctionSetAssignments=[FunctionSetAssignmentsResponse(
                href="/edev/1/fsa/1", mRID="F1", description="test", version=1,
                DERProgramListLink=ListLink(href="/derp", all_=1))]),
        "/derp": lambda: DERProgramListResponse(
            href="/derp", all_=1, results=1, pollRate=args.poll, DERProgram=[DERProgramResponse(
                href="/derp/1", mRID="B1", description="test program", primacy=1,
                DefaultDERControlLink=Link(href="/derp/1/dderc"),
                DERControlListLink=ListLink(href="/derp/1/derc", all_=len(controls)))]),
        "/derp/1/dderc": lambda: DefaultDERControl(
            href="/derp/1/dderc", mRID="D1", description="test default",
            DERControlBase_=DERControlBase(opModExpLimW=ActivePower(value=args.default_exp_w, multiplier=0))),
        "/derp/1/derc": lambda: DERControlListResponse(
            href="/derp/1/derc", all_=len(controls), results=len(controls), DERControl=controls),
    }
    out = {path: (lambda make=make: make().to_xml(skip_empty=True)) for path, make in docs.items()}
    out.update({path: (lambda body=body: body) for path, body in curves.items()})
    return out


def main():
    # A test process that blocks or ignores SIGTERM (bessd's signal handling does) passes that on
    # through exec: undo it, so the test's SIGTERM ends this server.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--lfdi", required=True)
    parser.add_argument("--sfdi", type=int, required=True)
    parser.add_argument("--pin", type=int, default=111115)
    parser.add_argument("--poll", type=int, default=10)
    parser.add_argument("--default-exp-w", dest="default_exp_w", type=int, default=5000)
    parser.add_argument("--control", action="append", default=[])
    parser.add_argument("--volt-var", dest="volt_var", action="append", default=[])
    parser.add_argument("--admin-stdin", dest="admin_stdin", action="store_true")  # the admin channel (below)
    parser.add_argument("--in-band", dest="in_band", action="store_true")
    args = parser.parse_args()
    args.registered = [not args.in_band]
    served = documents(args)
    lock = threading.Lock()
    posted = {}  # path -> handler(body bytes) -> HTTP status: the POST routes
    admin = AdminState(args) if args.admin_stdin else None
    if admin:
        served.update(admin_documents(args, admin))
        posted.update(admin_post_routes(admin, lock))
        admin_serve(admin, lock)
    if args.in_band:
        posted["/edev"] = registration_route(args, lock)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            if admin and admin.refuses():  # an outage (admin channel): closed unanswered
                self.close_connection = True
                return
            path = self.path.split("?", 1)[0]
            make = served.get(path) or (admin_curve(admin, path) if admin else None)
            body = make() if make else b""
            status = 200 if make else 404
            self.send_response(status)
            self.send_header("Content-Type", "application/sep+xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            peer = self.connection.getpeercert() or {}
            subject = dict(x[0] for x in peer.get("subject", ()))
            with lock:
                print(json.dumps({"path": self.path, "status": status, "cipher": self.connection.cipher()[0],
                                  "client": subject.get("commonName")}), flush=True)

        def do_POST(self):
            if admin and admin.refuses():  # an outage (admin channel): closed unanswered
                self.close_connection = True
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if 0 < length <= 1 << 20 else b""
            if length > 1 << 20:
                self.close_connection = True
            route = posted.get(self.path.split("?", 1)[0])
            status = route(body) if route else 404
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            with lock:
                print(json.dumps({"path": self.path, "method": "POST", "status": status}), flush=True)

        def do_PUT(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if 0 < length <= 1 << 20 else b""
            status = connection_point(body, lock) if args.in_band and self.path == "/edev/1/cp" else 404
            if status == 204:  # kept as a server keeps it: a GET of the link gives it back
                served["/edev/1/cp"] = lambda kept=body: kept
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            with lock:
                print(json.dumps({"path": self.path, "method": "PUT", "status": status}), flush=True)

        def log_message(self, *_):
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers("ECDHE-ECDSA-AES128-CCM8")
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(args.ca)
    context.load_cert_chain(args.cert, args.key)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


def registration_route(args, lock):
    """POST /edev (--in-band): the EndDevice of the given lFDI and sFDI registers the device."""
    from envoy_schema.server.schema.sep2.end_device import EndDeviceRequest

    def register(body):
        try:
            device = EndDeviceRequest.from_xml(body)
            if (device.lFDI or "").upper() != args.lfdi.upper() or device.sFDI != args.sfdi:
                raise ValueError(f"lFDI {device.lFDI} sFDI {device.sFDI}")
        except Exception as error:  # the model refuses it, or another device: a 400, and said
            with lock:
                print(json.dumps({"registration_refused": f"{type(error).__name__}: {error}"[:300]}), flush=True)
            return 400
        args.registered[0] = True
        with lock:
            print(json.dumps({"registered": {"lFDI": device.lFDI, "sFDI": device.sFDI, "deviceCategory": device.deviceCategory,
                                             "changedTime": device.changedTime}}), flush=True)
        return 201

    return register


def connection_point(body, lock):
    """PUT /edev/1/cp (--in-band): the csipaus:ConnectionPoint, in either CSIP-AUS namespace."""
    from xml.etree import ElementTree

    from envoy_schema.server.schema.csip_aus.connection_point import ConnectionPointRequest

    try:
        namespace = ElementTree.fromstring(body).tag[1:].split("}")[0]
        if namespace not in ("https://csipaus.org/ns", "https://csipaus.org/ns/v1.3"):
            raise ValueError(f"namespace {namespace}")
        text = body.decode().replace('"https://csipaus.org/ns"', '"https://csipaus.org/ns/v1.3"')
        point = ConnectionPointRequest.from_xml(text.encode())
        if not point.id:
            raise ValueError("no connectionPointId")
    except Exception as error:  # the model refuses it: a 400, and said
        with lock:
            print(json.dumps({"connection_point_refused": f"{type(error).__name__}: {error}"[:300]}), flush=True)
        return 400
    with lock:
        print(json.dumps({"connection_point": point.id, "namespace": namespace}), flush=True)
    return 204


# ---------------------------------------------------------------------------------------------------
# Admin channel (bess-hil scenarios; engineer J's section, kept apart from the server above).
#
# With --admin-stdin the program's controls are driven at run time by JSON lines on stdin, one
# command a line, each acknowledged on stdout as {"admin": "ok", ...} or {"admin": "error", "reason"}:
#   {"control": "E1", "start": UNIX, "duration": S, "base": {"opModExpLimW": 1500, ...}}
#       publish a DERControl, or replace the one with that mRID (a newer creationTime)
#   {"cancel": "E1"}                       mark it cancelled (EventStatus currentStatus 2)
#   {"default": {"opModExpLimW": 5000}}    replace the DefaultDERControl's limits
#   {"answering": false} / true            an outage: every request's connection is closed unanswered
#   {"answering": "silent"}                a hung server: each request is read and held unanswered
#                                          until the state changes (then closed unanswered)
# A control with "responseRequired": N (0-255) carries that attribute and replyTo="/rsp"; each
# DERControlResponse POSTed there (read with envoy-schema's model) is printed as one line
#   {"response": {"subject": MRID, "status": N, "created": createdDateTime, "at": UNIX arrival, s}}
# and answered 201 (400 for a body the model refuses).
# Limits: opModExpLimW, opModImpLimW, opModGenLimW, opModLoadLimW, in W (written as value × 10^multiplier,
# the value an Int16). A base (a control's or the default's) may also carry the reactive controls
# "opModFixedVar": {"refType": 0-7, "value": -10000..10000 hundredths of a percent} (FixedVar) and
# "opModTargetVar": var (ReactivePower, value × 10^multiplier as the limits) and the curves "opModVoltVar":
# {"points": [[V %, Q %], ...], "openLoopTms": N}, a DERCurveLink to /derp/1/dc/MRID, "opModWattVar" ([[P %, Q %], ...])
# to /derp/1/dc/MRID/wv and "opModVoltWatt" ([[V %, P %], ...]) to /derp/1/dc/MRID/vw (admin_curve). The --control
# and --default-exp-w arguments seed the state. /derp, /derp/1/derc and /derp/1/dderc are then
# served from it.
# ---------------------------------------------------------------------------------------------------
ADMIN_LIMITS = ("opModExpLimW", "opModImpLimW", "opModGenLimW", "opModLoadLimW")
# Each curve element: the path its DERCurveLink adds to /derp/1/dc/MRID, its curveType, its yRefType (2 setMaxVar,
# 1 setMaxW) and its axes, for messages.
ADMIN_CURVES = {"opModVoltVar": ("", 11, 2, "[[V %, Q %], ...]"), "opModWattVar": ("/wv", 14, 2, "[[P %, Q %], ...]"),
                "opModVoltWatt": ("/vw", 12, 1, "[[V %, P %], ...]")}
ADMIN_REACTIVE = ("opModFixedVar", "opModTargetVar", *ADMIN_CURVES)


class AdminState:
    """The program's controls and default as the admin channel set them; `answering` False: an
    outage, "silent": a hung server."""

    def __init__(self, args):
        self.lock = threading.Lock()
        self.answering = True
        self.changed = threading.Condition()
        self.created = int(time.time()) - 60
        self.controls = {}
        self.default = {"opModExpLimW": args.default_exp_w}
        for given in args.control:
            mrid, start, duration, watts = given.split(":")
            self.publish(mrid, int(start), int(duration), {"opModExpLimW": int(watts)})

    def publish(self, mrid, start, duration, base, required=None):
        self.created = max(int(time.time()), self.created + 1)
        self.controls[mrid] = {"start": start, "duration": duration, "base": base, "status": 0,
                               "created": self.created, "changed": self.created, "required": required}

    def refuses(self):
        """Whether a request goes unanswered: at once (an outage), or once a silent spell ends."""
        with self.changed:
            held = False
            while self.answering == "silent":
                held = True
                self.changed.wait()
            return held or self.answering is False

    def command(self, order):
        """Applies one command; returns what the acknowledgement says."""
        if "answering" in order:
            given = order["answering"]
            if not isinstance(given, bool) and given != "silent":
                raise ValueError("answering: true, false or \"silent\"")
            with self.changed:
                self.answering = given
                self.changed.notify_all()
            return {"answering": self.answering}
        if "cancel" in order:
            control = self.controls.get(order["cancel"])
            if control is None:
                raise ValueError(f"no control {order['cancel']!r}")
            control["status"] = 2
            control["changed"] = int(time.time())
            return {"cancelled": order["cancel"]}
        if "default" in order:
            self.default = admin_base(order["default"])
            return {"default": self.default}
        if "control" in order:
            mrid, start, duration = str(order["control"]), int(order["start"]), int(order["duration"])
            if not mrid or duration <= 0:
                raise ValueError("control needs an mRID and duration > 0")
            required = order.get("responseRequired")
            if required is not None and (not isinstance(required, int) or not 0 <= required <= 255):
                raise ValueError("responseRequired: 0-255")
            self.publish(mrid, start, duration, admin_base(order["base"]), required)
            return {"published": mrid, "created": self.created}
        raise ValueError("names no command (control, cancel, default, answering)")


def admin_base(given):
    if not isinstance(given, dict) or not given or any(k not in ADMIN_LIMITS + ADMIN_REACTIVE for k in given):
        raise ValueError(f"base: a mapping of {', '.join(ADMIN_LIMITS)} to W, {', '.join(ADMIN_REACTIVE)}")
    base = {k: int(v) for k, v in given.items() if k != "opModFixedVar" and k not in ADMIN_CURVES}
    for element, (_, _, _, axes) in ADMIN_CURVES.items():
        if element not in given:
            continue
        curve = given[element]
        points = curve.get("points") if isinstance(curve, dict) else None
        if (not isinstance(points, list) or not 1 <= len(points) <= 10
                or any(not isinstance(p, list) or len(p) != 2 for p in points)):
            raise ValueError(f"{element}: {{points: {axes} (1-10), openLoopTms: hundredths of a second}}")
        base[element] = {"points": [[int(x), int(y)] for x, y in points], "openLoopTms": int(curve.get("openLoopTms", 500))}
    if "opModFixedVar" in given:
        fixed = given["opModFixedVar"]
        if (not isinstance(fixed, dict) or set(fixed) != {"refType", "value"} or not 0 <= int(fixed["refType"]) <= 7
                or not -10000 <= int(fixed["value"]) <= 10000):
            raise ValueError("opModFixedVar: {refType: 0-7, value: -10000..10000 hundredths of a percent}")
        base["opModFixedVar"] = {"refType": int(fixed["refType"]), "value": int(fixed["value"])}
    return base


def admin_documents(args, admin):
    """/derp, /derp/1/derc and /derp/1/dderc served from `admin`, read at each request."""
    from envoy_schema.server.schema.sep2.der import (
        DefaultDERControl,
        DERControlBase,
        DERControlListResponse,
        DERControlResponse,
        DERProgramListResponse,
        DERProgramResponse,
    )
    from envoy_schema.server.schema.sep2.der_control_types import ActivePower, FixedVar, ReactivePower
    from envoy_schema.server.schema.sep2.event import EventStatus
    from envoy_schema.server.schema.sep2.identification import Link, ListLink
    from envoy_schema.server.schema.sep2.types import DateTimeIntervalType

    def scaled(x):
        # ActivePower's and ReactivePower's value is an Int16: 50000 W is value 5000, multiplier 1.
        multiplier = 0
        while abs(x) > 32767:
            x, multiplier = round(x / 10), multiplier + 1
        return {"value": x, "multiplier": multiplier}

    def base(given, mrid=None):
        fields = {k: ActivePower(**scaled(v)) for k, v in given.items() if k in ADMIN_LIMITS}
        for element, (suffix, _, _, _) in ADMIN_CURVES.items():
            if element in given and mrid:
                fields[element] = Link(href=f"/derp/1/dc/{mrid}{suffix}")
        if "opModFixedVar" in given:
            fields["opModFixedVar"] = FixedVar(**given["opModFixedVar"])
        if "opModTargetVar" in given:
            fields["opModTargetVar"] = ReactivePower(**scaled(given["opModTargetVar"]))
        return DERControlBase(**fields)

    def controls():
        with admin.lock:
            return [DERControlResponse(
                href=f"/derp/1/derc/{mrid}", mRID=mrid, creationTime=c["created"], description="bess-hil control",
                EventStatus_=EventStatus(currentStatus=c["status"], dateTime=c["changed"], potentiallySuperseded=False),
                interval=DateTimeIntervalType(start=c["start"], duration=c["duration"]), DERControlBase_=base(c["base"], mrid),
                **({} if c.get("required") is None else {"replyTo": "/rsp", "responseRequired": f"{c['required']:02X}"}))
                for mrid, c in sorted(admin.controls.items(), key=lambda item: item[1]["created"])]

    def program_list():
        count = len(admin.controls)
        return DERProgramListResponse(
            href="/derp", all_=1, results=1, pollRate=args.poll, DERProgram=[DERProgramResponse(
                href="/derp/1", mRID="B1", description="bess-hil program", primacy=1,
                DefaultDERControlLink=Link(href="/derp/1/dderc"), DERControlListLink=ListLink(href="/derp/1/derc", all_=count))])

    def control_list():
        listed = controls()
        return DERControlListResponse(href="/derp/1/derc", all_=len(listed), results=len(listed), DERControl=listed)

    def default():
        with admin.lock:
            limits = dict(admin.default)
        return DefaultDERControl(href="/derp/1/dderc", mRID="D1", description="bess-hil default", DERControlBase_=base(limits))

    docs = {"/derp": program_list, "/derp/1/derc": control_list, "/derp/1/dderc": default}
    return {path: (lambda make=make: make().to_xml(skip_empty=True)) for path, make in docs.items()}


def admin_curve(admin, path):
    """GET /derp/1/dc/MRID (the control's opModVoltVar: curveType 11, V in % of setVRef, Q in % of setMaxVar),
    /derp/1/dc/MRID/wv (opModWattVar: 14, P in % of setMaxW, Q in % of setMaxVar) or /derp/1/dc/MRID/vw
    (opModVoltWatt: 12, V in % of setVRef, P in % of setMaxW): the DERCurve written here (envoy-schema has
    no DERCurve model), its mRID the control's (for watt-var and volt-watt cut to 30 hex digits and the
    curveType's two appended); None: no such curve."""
    if not path.startswith("/derp/1/dc/"):
        return None
    mrid, _, suffix = path[len("/derp/1/dc/"):].partition("/")
    found = [(element, kind) for element, kind in ADMIN_CURVES.items() if kind[0] == (f"/{suffix}" if suffix else "")]
    if not found:
        return None
    element, (_, curve_type, y_ref, _) = found[0]
    with admin.lock:
        control = admin.controls.get(mrid)
        curve = control and control["base"].get(element)
        created = control and control["created"]
    if not curve:
        return None
    curve_mrid = mrid if curve_type == 11 else mrid[:30] + f"{curve_type:02X}"
    data = "".join(f"<CurveData><xvalue>{x}</xvalue><yvalue>{y}</yvalue></CurveData>" for x, y in curve["points"])
    body = (f'<DERCurve xmlns="urn:ieee:std:2030.5:ns" href="{path}"><mRID>{curve_mrid}</mRID><description>{element}</description>'
            f"<creationTime>{created}</creationTime>{data}<curveType>{curve_type}</curveType><openLoopTms>{curve['openLoopTms']}</openLoopTms>"
            f"<xMultiplier>0</xMultiplier><yMultiplier>0</yMultiplier><yRefType>{y_ref}</yRefType></DERCurve>").encode()
    return lambda: body


def admin_post_routes(admin, lock):
    """POST /rsp: the DERControlResponses, each printed with its arrival time."""
    from envoy_schema.server.schema.sep2.response import DERControlResponse as Answer

    def response(body):
        at = time.time()
        try:
            answer = Answer.from_xml(body)
        except Exception:  # the model refuses it: a 400, and said
            with lock:
                print(json.dumps({"response_refused": body[:200].decode("utf-8", "replace")}), flush=True)
            return 400
        status = answer.status.value if hasattr(answer.status, "value") else answer.status
        with lock:
            print(json.dumps({"response": {"subject": answer.subject, "status": status,
                                           "created": answer.createdDateTime, "at": round(at, 3)}}), flush=True)
        return 201

    return {"/rsp": response}


def admin_serve(admin, lock):
    """Reads commands from stdin until it closes, on a thread of its own."""
    import sys

    def loop():
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                order = json.loads(line)
                if not isinstance(order, dict):
                    raise ValueError("a JSON object")
                with admin.lock:
                    answer = {"admin": "ok", **admin.command(order)}
            except (ValueError, KeyError, TypeError) as error:
                answer = {"admin": "error", "reason": str(error)}
            with lock:
                print(json.dumps(answer), flush=True)

    threading.Thread(target=loop, name="admin", daemon=True).start()


if __name__ == "__main__":
    main()
