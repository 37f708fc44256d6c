#!/usr/bin/env python3
"""An independent MQTT 5 peer (paho-mqtt) that checks bessd's MQTT uplink against the MQTT 5 rules and
the uplink OpenAPI document:

  mqtt_peer.py SPEC HOST PORT SITE

Subscribes to bess/v1/SITE/# as a fresh client, so retained messages must arrive at once with the
retain flag; validates every payload against its schema (records: RecordBatch, status: SiteStatus,
availability: Record, acks: CommandAck); publishes one command (QoS 1, with an MQTT 5 message
expiry interval) and waits for its ack. Prints one JSON line with what it saw, and exits 0 when
every check passed, 1 otherwise."""
import json
import sys
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from openapi_schema_validator import OAS30Validator
from openapi_spec_validator.readers import read_from_filename

spec_path, host, port, site = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
spec, _ = read_from_filename(spec_path)


def validator(name):
    schema = dict(spec["components"]["schemas"][name])
    schema["components"] = spec["components"]
    return OAS30Validator(schema)


schemas = {"records": validator("RecordBatch"), "status": validator("SiteStatus"),
           "availability": validator("Record"), "acks": validator("CommandAck")}
seen = {"records": 0, "status": 0, "availability": 0, "acks": 0}
retained = {"status": False, "availability": False}
errors = []
acks = {}
states = []
lock = threading.Lock()
subscribed = threading.Event()
command_id = f"peer-{int(time.time() * 1000)}"


def on_message(client, userdata, message):
    leaf = message.topic.rsplit("/", 1)[-1]
    if leaf not in schemas:
        return
    try:
        document = json.loads(message.payload)
    except ValueError as error:
        with lock:
            errors.append(f"{message.topic}: not JSON ({error})")
        return
    problems = sorted(schemas[leaf].iter_errors(document), key=lambda e: list(e.path))
    with lock:
        seen[leaf] += 1
        if problems:
            errors.append(f"{message.topic}: {list(problems[0].path)} {problems[0].message}")
        if leaf in retained and message.retain:
            retained[leaf] = True
        if leaf == "status":
            states.append(document.get("state"))
        if leaf == "acks":
            acks[document.get("id")] = document
        if leaf == "records" and message.qos != 1:
            errors.append(f"records delivered at QoS {message.qos}, not 1")


def on_subscribe(client, userdata, mid, reason_codes, properties):
    subscribed.set()


client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"mqtt-peer-{site}", protocol=mqtt.MQTTv5)
client.on_message = on_message
client.on_subscribe = on_subscribe
client.connect(host, port, keepalive=30)
client.loop_start()
client.subscribe(f"bess/v1/{site}/#", qos=1)
subscribed.wait(10)

deadline = time.time() + 20
while time.time() < deadline:
    with lock:
        if seen["records"] >= 2 and seen["status"] >= 1 and seen["availability"] >= 1:
            break
    time.sleep(0.05)

properties = Properties(PacketTypes.PUBLISH)
properties.MessageExpiryInterval = 30
command = {"id": command_id, "kind": "mode", "mode": "auto", "expires_unix": time.time() + 60}
client.publish(f"bess/v1/{site}/commands", json.dumps(command), qos=1, properties=properties).wait_for_publish(10)
deadline = time.time() + 15
while time.time() < deadline:
    with lock:
        if command_id in acks:
            break
    time.sleep(0.05)
client.loop_stop()
client.disconnect()

with lock:
    result = {"seen": seen, "retained": retained, "states": states, "errors": errors[:5],
              "ack": acks.get(command_id)}
print(json.dumps(result))
ok = (not errors and seen["records"] >= 2 and retained["status"] and retained["availability"]
      and "online" in states and acks.get(command_id, {}).get("accepted") is True)
sys.exit(0 if ok else 1)
