#!/usr/bin/env python3
"""The device profiles' independent proof (docs/devices.md, "The oracle"): frames and register images
built from the vendors' documents, not from devices/*.yaml, for ProfileLibraryProofTests to replay
through bessd's profiled decoders.

    scripts/profile-oracle.py              write Tests/Fixtures/profile-can-vectors.json
                                           and profile-modbus-vectors.json (seeded: the same files
                                           every run)
    scripts/profile-oracle.py --check      regenerate in memory; exit 1 if a committed fixture differs
    scripts/profile-oracle.py serve PROFILE [--port N] [--image K] [--seconds S]
                                           serve image K of PROFILE (from the committed Modbus fixture)
                                           with pymodbus 3.6 on 127.0.0.1:N (0 = a free port); prints
                                           "PORT <n>", then "HOLDING <address> <value>" for each write

CAN: each hil/dbc/<profile>.dbc was written from the document (the frame tables of the PDF, or
devices.md where no vendor PDF exists); cantools (PyPI) encodes seeded random physical values into
frames and decodes them back. Modbus: each profile's register table below is the document's, typed
and scaled as the document says; images hold random physical values encoded into words, plus the
decode vectors of devices.md section 6. Beside the values, each cycle or image carries what bessd must
make of them by the document's meaning: the BMS quantities, request flags, and the conditions the
alarm bits raise (protection or alarm), from the tables in this file.

Fixture format (CAN): {"profiles": [{"profile", "dbc", "source", "frames": [{"cycle", "id",
"extended", "data" (hex), "signals": {dbc name: value}}], "expect": [{"cycle", "values": {quantity:
number}, "flags": {quantity: bool}, "protections": [condition], "alarms": [condition]}]}]}.
Modbus: {"profiles": [{"profile", "kind", "source", "images": [{"name", "holding": {address: word},
"input": {address: word}, "expect": {...as above}}], "commands": [{"power_w", "holding": {address:
word}}], "stop": {address: word}}]}; addresses are PDU addresses written in decimal.
"""
import argparse
import asyncio
import json
import math
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "Tests/Fixtures"
CAN_FIXTURE = FIXTURES / "profile-can-vectors.json"
MODBUS_FIXTURE = FIXTURES / "profile-modbus-vectors.json"
CYCLES = 25
IMAGES = 20

# ---------------------------------------------------------------------------------------------- CAN

# What each DBC signal means to bessd, by the document: a quantity, a flag, or a condition.
CAN_PROFILES = {
    "pylontech-lv": {
        "source": "Pylontech PYLON CANBUS Protocol low voltage V1.2 (2018-04-08), tables 1-5",
        "values": {
            "charge_voltage_limit": "charge_voltage_limit", "charge_current_limit": "charge_current_limit",
            "discharge_current_limit": "discharge_current_limit", "soc": "soc", "soh": "soh",
            "pack_voltage": "pack_voltage", "pack_current": "pack_current", "temperature": "temperature",
        },
        "flags": {"charge_enabled": ["charge_enable"], "discharge_enabled": ["discharge_enable"],
                  "force_charge": ["request_force_charge_1", "request_force_charge_2"]},
        "conditions": {
            "protection_cell_overvoltage": ("cell_overvoltage", "protection"),
            "protection_cell_undervoltage": ("cell_undervoltage", "protection"),
            "protection_cell_overtemperature": ("overtemperature", "protection"),
            "protection_cell_undertemperature": ("undertemperature", "protection"),
            "protection_discharge_overcurrent": ("discharge_overcurrent", "protection"),
            "protection_charge_overcurrent": ("charge_overcurrent", "protection"),
            "protection_system_error": ("system_error", "protection"),
            "alarm_cell_high_voltage": ("cell_overvoltage", "alarm"),
            "alarm_cell_low_voltage": ("cell_undervoltage", "alarm"),
            "alarm_cell_high_temperature": ("overtemperature", "alarm"),
            "alarm_cell_low_temperature": ("undertemperature", "alarm"),
            "alarm_discharge_high_current": ("discharge_overcurrent", "alarm"),
            "alarm_charge_high_current": ("charge_overcurrent", "alarm"),
            "alarm_internal_communication_fail": ("internal_communication", "alarm"),
        },
        # Bytes 4-5 of 0x355 are empty in V1.2 (zeros): bessd reads them as SMA's finer SOC only within
        # 1 % of the whole-percent one, so a SOC of 0 or 1 would read as 0.00. Keep SOC above that.
        "soc_min": 2,
    },
    "sma-victron-lv": {
        "source": "SMA FSS-ConnectingBat-TI-en-10 v1.0 section 5 (0x351, 0x355, 0x356, 0x35A, 0x35F); Victron 0x373",
        "values": {
            "charge_voltage_limit": "charge_voltage_limit", "charge_current_limit": "charge_current_limit",
            "discharge_current_limit": "discharge_current_limit", "discharge_voltage_limit": "discharge_voltage_limit",
            "soh": "soh", "battery_voltage": "pack_voltage", "battery_current": "pack_current", "battery_temperature": "temperature",
            "min_cell_voltage": "min_cell_voltage", "max_cell_voltage": "max_cell_voltage",
            "min_cell_temperature": "min_cell_temperature", "max_cell_temperature": "max_cell_temperature",
        },
        "flags": {},
        # 0x35A: the arrive (even) bit of each pair raises the condition; alarms trip, warnings warn.
        "pairs": {
            "general": "system_error", "high_voltage": "cell_overvoltage", "low_voltage": "cell_undervoltage",
            "high_temperature": "overtemperature", "low_temperature": "undertemperature",
            "high_temp_charge": "overtemperature", "low_temp_charge": "undertemperature",
            "high_current": "discharge_overcurrent", "high_charge_current": "charge_overcurrent",
            "contactor": "system_error", "short_circuit": "discharge_overcurrent", "bms_internal": "system_error",
            "cell_imbalance": None,
        },
        "hires_soc": True,
    },
    "pylontech-hv": {
        "source": "Pylon HV CAN (devices.md section 1.3: diyBMS, Battery-Emulator, bms-to-inverter facts)",
        "values": {
            "pile_voltage": "pack_voltage", "pile_current": "pack_current", "bms_temperature": "temperature",
            "soc": "soc", "soh": "soh", "charge_cutoff_voltage": "charge_voltage_limit",
            "discharge_cutoff_voltage": "discharge_voltage_limit", "max_charge_current": "charge_current_limit",
            "max_discharge_current": "discharge_current_limit", "max_cell_voltage": "max_cell_voltage",
            "min_cell_voltage": "min_cell_voltage", "max_cell_temperature": "max_cell_temperature",
            "min_cell_temperature": "min_cell_temperature",
        },
        "flags": {"force_charge": ["force_charge_request"]},
        "forbidden": {"charge_enabled": "charge_forbidden", "discharge_enabled": "discharge_forbidden"},
        "conditions": {
            **{f"{kind}_{name}": (condition, severity)
               for kind, severity in (("alarm", "alarm"), ("protection", "protection"))
               for name, condition in (
                   ("cell_low_voltage", "cell_undervoltage"), ("cell_high_voltage", "cell_overvoltage"),
                   ("discharge_system_low_voltage", "cell_undervoltage"),
                   ("charge_system_high_voltage", "cell_overvoltage"),
                   ("charge_low_temperature", "undertemperature"), ("charge_high_temperature", "overtemperature"),
                   ("discharge_low_temperature", "undertemperature"),
                   ("discharge_high_temperature", "overtemperature"),
                   ("charge_overcurrent", "charge_overcurrent"), ("discharge_overcurrent", "discharge_overcurrent"),
                   ("module_low_voltage", "cell_undervoltage"), ("module_high_voltage", "cell_overvoltage"))},
            "error_voltage_sensor": ("system_error", "protection"),
            "error_temperature_sensor": ("system_error", "protection"),
            "error_internal_communication": ("internal_communication", "protection"),
            "error_input_overvoltage": ("system_error", "protection"),
            "error_other": ("system_error", "protection"),
        },
        "sent_by_inverter": {0x4200},
    },
}

# Pairs whose first member must not exceed the second (a BMS reports its extremes in order).
ORDERED = [("min_cell_voltage", "max_cell_voltage"), ("min_cell_temperature", "max_cell_temperature")]


def raw_bounds(signal):
    """The raw integers whose physical value lies inside the DBC's [min|max]."""
    lo = math.ceil(round((signal.minimum - signal.offset) / signal.scale, 6))
    hi = math.floor(round((signal.maximum - signal.offset) / signal.scale, 6))
    return min(lo, hi), max(lo, hi)


def physical(signal, raw):
    return round(raw * signal.scale + signal.offset, 6)


def random_can_values(rng, message, spec):
    """Physical values for every signal of one message, drawn the way a BMS would send them."""
    raws = {}
    pairs = spec.get("pairs", {})
    for signal in message.signals:
        name = signal.name
        if name.endswith("_leave") and name[:-6] + "_arrive" in {s.name for s in message.signals}:
            continue  # drawn with its arrive bit
        if name.endswith("_arrive") and pairs:
            state = rng.choice(["none", "arrive", "leave", "leave", "leave"])
            raws[name] = 1 if state == "arrive" else 0
            raws[name[:-7] + "_leave"] = 1 if state == "leave" else 0
        elif name in spec.get("forbidden", {}).values():
            raws[name] = rng.choice([0x00, 0xAA])
        elif signal.length == 1:
            raws[name] = 1 if rng.random() < 0.2 else 0
        else:
            lo, hi = raw_bounds(signal)
            raws[name] = rng.randint(lo, hi)
    by_name = {s.name: s for s in message.signals}
    for low, high in ORDERED:
        if low in raws and high in raws and raws[low] > raws[high]:
            raws[low], raws[high] = raws[high], raws[low]
    if "soc" in raws and "soc_min" in spec:
        raws["soc"] = max(raws["soc"], spec["soc_min"])
    if "hires_soc" in raws and "soc" in raws:
        # Within 2 % of SOC either way: half agree with it (and replace it), half do not.
        hires = raws["soc"] * 100 + rng.randint(-200, 200)
        raws["hires_soc"] = max(0, min(10000, hires))
    return {name: physical(by_name[name], raw) for name, raw in raws.items()}


def expect_cycle(spec, decoded):
    """What bessd must read from one cycle's frames, by the document's meaning."""
    values, flags, protections, alarms = {}, {}, set(), set()
    for name, quantity in spec["values"].items():
        if name in decoded:
            values[quantity] = decoded[name]
    if "charge_current_limit" in values:
        values["charge_current_limit"] = max(0.0, values["charge_current_limit"])  # negative: no charging
    if "discharge_current_limit" in values:
        values["discharge_current_limit"] = abs(values["discharge_current_limit"])  # a magnitude
    if "soc" in decoded:
        soc = decoded["soc"]
        hires = decoded.get("hires_soc")
        values["soc"] = hires if hires is not None and abs(hires - soc) <= 1 else soc
    for quantity, names in spec.get("flags", {}).items():
        if all(n in decoded for n in names):
            flags[quantity] = any(decoded[n] != 0 for n in names)
    for quantity, name in spec.get("forbidden", {}).items():
        if name in decoded:
            flags[quantity] = decoded[name] != 0xAA
    for name, (condition, severity) in spec.get("conditions", {}).items():
        if decoded.get(name):
            (protections if severity == "protection" else alarms).add(condition)
    for pair, condition in spec.get("pairs", {}).items():
        if condition is None:
            continue
        if decoded.get(f"alarm_{pair}_arrive"):
            protections.add(condition)
        if decoded.get(f"warning_{pair}_arrive"):
            alarms.add(condition)
    return {"values": values, "flags": flags, "protections": sorted(protections), "alarms": sorted(alarms)}


def can_vectors():
    import cantools

    profiles = []
    for index, (name, spec) in enumerate(CAN_PROFILES.items()):
        dbc = f"hil/dbc/{name}.dbc"
        db = cantools.database.load_file(str(ROOT / dbc))
        rng = random.Random(6100 + index)
        frames, expects = [], []
        for cycle in range(CYCLES):
            decoded_cycle = {}
            for message in db.messages:
                if message.frame_id in spec.get("sent_by_inverter", set()):
                    continue
                values = random_can_values(rng, message, spec)
                data = message.encode(values, scaling=True, padding=False, strict=True)
                decoded = {k: (round(float(v), 6) if not isinstance(v, str) else v)
                           for k, v in message.decode(data, decode_choices=False).items()}
                frames.append({"cycle": cycle, "id": message.frame_id, "extended": message.is_extended_frame,
                               "data": data.hex(), "signals": decoded})
                decoded_cycle.update(decoded)
            expects.append({"cycle": cycle, **expect_cycle(spec, decoded_cycle)})
        profiles.append({"profile": name, "dbc": dbc, "source": spec["source"], "frames": frames, "expect": expects})
    return {"generator": "scripts/profile-oracle.py", "profiles": profiles}


# ------------------------------------------------------------------------------------------- Modbus

# (table, address, type, scale, meaning, low, high): the documents' register tables, the registers the
# proof uses. meaning is a quantity name, or None for a value only reported. low/high bound the random
# physical values (a plausible device, not the register's full range).
BYD = [
    ("holding", 0x2100, "uint16", 0.1, "pack_voltage", 600, 800),
    ("holding", 0x2101, "int16", 0.1, "pack_current", -100, 100),
    ("holding", 0x2102, "uint16", 1, None, 0, 2),
    ("holding", 0x2103, "uint16", 1, "soc", 0, 100),
    ("holding", 0x2104, "uint16", 1, "soh", 70, 100),
    ("holding", 0x2105, "uint16", 1, None, 1, 224),
    ("holding", 0x2106, "uint16", 0.001, "max_cell_voltage", 3.0, 3.6),
    ("holding", 0x2107, "uint16", 1, None, 1, 224),
    ("holding", 0x2108, "uint16", 0.001, "min_cell_voltage", 3.0, 3.6),
    ("holding", 0x2109, "uint16", 1, None, 1, 224),
    ("holding", 0x210A, "int16", 0.1, "max_cell_temperature", -10, 45),
    ("holding", 0x210B, "uint16", 1, None, 1, 224),
    ("holding", 0x210C, "int16", 0.1, "min_cell_temperature", -10, 45),
    ("holding", 0x2C00, "int16", 0.1, "temperature", -10, 45),
    ("holding", 0x216C, "int16", 0.1, "charge_current_limit", 0, 150),
    ("holding", 0x216D, "int16", 0.1, "discharge_current_limit", 0, 150),
    ("holding", 0x2142, "uint16", 1, None, 0, 4),
]
# The three alarm levels: cell words 0x2140/0x2141/0x2143, system words 0x2145/0x2146/0x2147, other 0x2144.
BYD_CELL_BITS = {0: "cell_overvoltage", 1: "cell_undervoltage", 3: "overtemperature", 4: "undertemperature",
                 5: "overtemperature", 6: "undertemperature", 9: "overtemperature", 10: "discharge_overcurrent",
                 11: "charge_overcurrent"}
BYD_SYSTEM_BITS_L3 = {0: "cell_overvoltage", 1: "cell_undervoltage", 3: "system_error", 4: "system_error",
                      5: "system_error", 9: "overtemperature"}
BYD_SYSTEM_BITS_L12 = {0: "cell_overvoltage", 1: "cell_undervoltage", 3: "system_error", 9: "overtemperature"}
BYD_OTHER_BITS = {2: ("system_error", "protection"), 6: ("system_error", "protection"),
                  3: ("internal_communication", "protection"), 7: ("internal_communication", "protection"),
                  0: ("system_error", "alarm"), 1: ("system_error", "alarm"), 4: ("system_error", "alarm"),
                  5: ("system_error", "alarm"), 9: ("system_error", "alarm")}
BYD_WORDS = {0x2143: (BYD_CELL_BITS, "protection"), 0x2141: (BYD_CELL_BITS, "alarm"), 0x2140: (BYD_CELL_BITS, "alarm"),
             0x2147: (BYD_SYSTEM_BITS_L3, "protection"), 0x2146: (BYD_SYSTEM_BITS_L12, "alarm"),
             0x2145: (BYD_SYSTEM_BITS_L12, "alarm")}

SUNGROW = [
    ("input", 5000, "uint16", 100, "rated_power", 5000, 10000),
    ("input", 5213, "int32", 1, "active_power", -10000, 10000),
    ("input", 5241, "uint16", 0.01, "frequency", 49.5, 50.5),
    ("input", 12999, "uint16", 1, "state", 0, 0xFFFF),
    ("input", 13019, "uint16", 0.1, None, 150, 500),
    ("input", 13020, "int16", 0.1, None, -30, 30),
    ("input", 13022, "uint16", 0.1, None, 0, 100),
    ("input", 13033, "int32", 1, None, -10000, 10000),
]
SINEXCEL = [
    ("holding", 32, "uint16", 1, "state", 0, 0xFF),
    ("holding", 107, "int16", 0.01, "frequency", 49.5, 50.5),
    ("holding", 122, "int16", 10, "active_power", -30000, 30000),
    ("holding", 141, "int16", 10, None, -30000, 30000),
    ("holding", 142, "int16", 0.1, None, 500, 800),
    ("holding", 143, "int16", 0.1, None, -50, 50),
]
DEYE = [
    ("holding", 500, "uint16", 1, "state", 0, 5),
    ("holding", 587, "uint16", 0.01, None, 45, 58),
    ("holding", 588, "uint16", 1, None, 0, 100),
    ("holding", 590, "int16", 1, "active_power", -8000, 8000),
    ("holding", 591, "int16", 0.01, None, -150, 150),
    ("holding", 609, "uint16", 0.01, "frequency", 49.5, 50.5),
    ("holding", 625, "int16", 1, None, -10000, 10000),
]


def words_of(kind, raw, low_first):
    """A raw integer as its registers (big-endian within a register; word order as given)."""
    if kind in ("int16", "uint16"):
        return [raw & 0xFFFF]
    value = raw & 0xFFFFFFFF
    high, low = value >> 16, value & 0xFFFF
    return [low, high] if low_first else [high, low]


def put(image, table, address, kind, raw, low_first):
    for i, word in enumerate(words_of(kind, raw, low_first)):
        image[table][str(address + i)] = word


def random_image(rng, table, low_first, ordered=()):
    """Random physical values for every row of `table`, encoded; returns the image and the values."""
    image = {"holding": {}, "input": {}}
    raws = {}
    for row in table:
        where, address, kind, scale, meaning, low, high = row
        raws[address] = rng.randint(math.ceil(round(low / scale, 6)), math.floor(round(high / scale, 6)))
    for first, second in ordered:
        if raws[first] > raws[second]:
            raws[first], raws[second] = raws[second], raws[first]
    values = {}
    for where, address, kind, scale, meaning, low, high in table:
        put(image, where, address, kind, raws[address], low_first)
        if meaning:
            values[meaning] = round(raws[address] * scale, 6)
    return image, values


def byd_alarms(rng, image):
    protections, alarms = set(), set()
    for address in list(BYD_WORDS) + [0x2144]:
        word = 0
        for bit in range(16):
            if rng.random() < 0.06:
                word |= 1 << bit
        image["holding"][str(address)] = word
    for address, (bits, severity) in BYD_WORDS.items():
        word = image["holding"][str(address)]
        for bit, condition in bits.items():
            if word >> bit & 1:
                (protections if severity == "protection" else alarms).add(condition)
    word = image["holding"][str(0x2144)]
    for bit, (condition, severity) in BYD_OTHER_BITS.items():
        if word >> bit & 1:
            (protections if severity == "protection" else alarms).add(condition)
    return sorted(protections), sorted(alarms)


def byd_profile():
    rng = random.Random(6130)
    images = []
    # devices.md section 6: FC 03 0x2100 x13, 0x216C x2, 0x2143 = 0x0001 (and 25.0 C at temperature point 1).
    vector = {"holding": {}, "input": {}}
    for i, word in enumerate([0x1B00, 0x0000, 0x0000, 0x003F, 0x0062, 0x0011, 0x0D16, 0x008C, 0x0CE4, 0x0005,
                              0x0109, 0x0058, 0x00F0]):
        vector["holding"][str(0x2100 + i)] = word
    vector["holding"].update({str(0x216C): 0x01F4, str(0x216D): 0x0320, str(0x2C00): 250, str(0x2143): 0x0001})
    for address in (0x2140, 0x2141, 0x2142, 0x2144, 0x2145, 0x2146, 0x2147):
        vector["holding"][str(address)] = 0
    images.append({"name": "devices.md section 6", "holding": vector["holding"], "input": {}, "expect": {
        "values": {"pack_voltage": 691.2, "pack_current": 0.0, "soc": 63, "soh": 98, "max_cell_voltage": 3.35,
                   "min_cell_voltage": 3.3, "max_cell_temperature": 26.5, "min_cell_temperature": 24.0,
                   "temperature": 25.0, "charge_current_limit": 50.0, "discharge_current_limit": 80.0},
        "flags": {}, "protections": ["cell_overvoltage"], "alarms": []}})
    for n in range(IMAGES):
        image, values = random_image(rng, BYD, False, ordered=[(0x2108, 0x2106), (0x210C, 0x210A)])
        protections, alarms = byd_alarms(rng, image)
        images.append({"name": f"random {n}", **image,
                       "expect": {"values": values, "flags": {}, "protections": protections, "alarms": alarms}})
    return {"profile": "byd-c130", "kind": "bms",
            "source": "BYD Communication protocol for BMS and PCS V3.1, section 3 (cluster 1, base 0x2000)",
            "images": images, "commands": [], "stop": {}}


def inverter_images(seed, table, low_first, fixed):
    rng = random.Random(seed)
    images = [fixed] if fixed else []
    for n in range(IMAGES):
        image, values = random_image(rng, table, low_first)
        images.append({"name": f"random {n}", **image,
                       "expect": {"values": values, "flags": {}, "protections": [], "alarms": []}})
    return images


def sungrow_profile():
    # devices.md section 6: FC 04 4999 = 0x0E03 (SH10RT), 5213 x2 = 03E8 0000 (+1000 W, LW first),
    # 13022 = 0x0258 (60.0 %); 5000 = 100 (10.0 kW), 5241 = 5000 (50.00 Hz), 12999 = 0x0040 (running), and
    # the holding registers as a self-consumption inverter has them before bessd (mode 0, no heartbeat).
    fixed = {"name": "devices.md section 6", "holding": {"13049": 0, "13079": 0}, "input": {
        "4999": 0x0E03, "5000": 100, "5213": 0x03E8, "5214": 0x0000, "5241": 5000, "12999": 0x0040, "13022": 0x0258},
        "expect": {"values": {"active_power": 1000, "rated_power": 10000, "frequency": 50.0, "state": 0x0040},
                   "flags": {}, "protections": [], "alarms": []}}
    images = inverter_images(6140, SUNGROW, True, fixed)
    for image in images[1:]:
        image["input"]["4999"] = 0x0E03
    # External EMS mode 3, then the direction (0xAA charge, 0xBB discharge, 0xCC stop) and the magnitude
    # in W; the heartbeat (PDU 13079) written with its period.
    commands = [
        {"power_w": 1000, "holding": {"13049": 3, "13050": 0xBB, "13051": 1000, "13079": 20}},
        {"power_w": -2500, "holding": {"13049": 3, "13050": 0xAA, "13051": 2500, "13079": 20}},
        {"power_w": 0, "holding": {"13050": 0xCC}},
    ]
    return {"profile": "sungrow-sh-rt", "kind": "inverter",
            "source": "Sungrow SH-RT registers (devices.md section 3.1: evcc, mkaiser, Tinkerforge; heartbeat from threads)",
            "images": images, "commands": commands, "stop": {"13050": 0xCC, "13049": 0}}


def sinexcel_profile():
    # devices.md section 6 / the workbook: 135 = +100 is +10.0 kW discharge; -25.0 kW is -250.
    fixed = {"name": "workbook example", "holding": {"32": 0b1100, "107": 5000, "122": 1000}, "input": {},
             "expect": {"values": {"state": 0b1100, "frequency": 50.0, "active_power": 10000},
                        "flags": {}, "protections": [], "alarms": []}}
    commands = [
        {"power_w": 10000, "holding": {"653": 1, "650": 1, "327": 10, "135": 100}},
        {"power_w": -25000, "holding": {"653": 1, "650": 1, "327": 10, "135": (-250) & 0xFFFF}},
        {"power_w": 0, "holding": {"135": 0}},
    ]
    return {"profile": "sinexcel-pws2", "kind": "inverter",
            "source": "Sinexcel PWS2-30K map V106 (2021-04-16), sheet PCS30kW-COMM_PROTOCOL",
            "images": inverter_images(6150, SINEXCEL, False, fixed), "commands": commands,
            "stop": {"135": 0, "651": 1}}


def deye_profile():
    fixed = {"name": "identity", "holding": {"0": 0x0005, "500": 2, "590": 1500, "609": 5001}, "input": {},
             "expect": {"values": {"state": 2, "active_power": 1500, "frequency": 50.01},
                        "flags": {}, "protections": [], "alarms": []}}
    images = inverter_images(6160, DEYE, True, fixed)
    for image in images[1:]:
        image["holding"]["0"] = 0x0005
    return {"profile": "deye-sg-hybrid", "kind": "inverter",
            "source": "Deye SG04LP3/SG01HP3 registers (devices.md section 3.2: evcc, kbialek, ha-solarman)",
            "images": images, "commands": [], "stop": {}}


def modbus_vectors():
    return {"generator": "scripts/profile-oracle.py",
            "profiles": [byd_profile(), sungrow_profile(), sinexcel_profile(), deye_profile()]}


# -------------------------------------------------------------------------------------------- serve

def serve(args):
    from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
    from pymodbus.server import StartAsyncTcpServer
    import socket

    fixture = json.loads(MODBUS_FIXTURE.read_text())
    profile = next((p for p in fixture["profiles"] if p["profile"] == args.profile), None)
    if profile is None:
        sys.exit(f"profile-oracle: no Modbus profile {args.profile!r} in {MODBUS_FIXTURE}")
    image = profile["images"][args.image]
    holding = [0] * 65536
    inputs = [0] * 65536
    for address, word in image["holding"].items():
        holding[int(address)] = word
    for address, word in image["input"].items():
        inputs[int(address)] = word
    hr = ModbusSequentialDataBlock(0, holding)
    ir = ModbusSequentialDataBlock(0, inputs)
    # zero_mode: the block's index is the PDU address, as the documents' tables give it.
    context = ModbusServerContext(slaves=ModbusSlaveContext(hr=hr, ir=ir, zero_mode=True), single=True)
    port = args.port
    if port == 0:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()

    async def run():
        server = asyncio.create_task(StartAsyncTcpServer(context=context, address=("127.0.0.1", port)))
        await asyncio.sleep(0.3)
        print(f"PORT {port}", flush=True)
        # The registers a command or a stop writes, and those of the image.
        watched = sorted({int(a) for a in image["holding"]} | {int(a) for a in profile["stop"]}
                         | {int(a) for c in profile["commands"] for a in c["holding"]})
        seen = list(hr.values)
        loop = asyncio.get_running_loop()
        end = loop.time() + args.seconds
        while loop.time() < end:
            now = hr.values
            for address in watched:
                if now[address] != seen[address]:
                    print(f"HOLDING {address} {now[address]}", flush=True)
                    seen[address] = now[address]
            await asyncio.sleep(0.05)
        server.cancel()

    asyncio.run(run())


# --------------------------------------------------------------------------------------------- main

def dump(document):
    """JSON with one frame, cycle, image or command a line: small, and a regeneration diffs by line."""
    def compact(value):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))

    lines = ["{", f' "generator": {compact(document["generator"])},', ' "profiles": [']
    for p, profile in enumerate(document["profiles"]):
        lines.append("  {")
        keys = sorted(profile)
        for k, key in enumerate(keys):
            end = "," if k < len(keys) - 1 else ""
            value = profile[key]
            if isinstance(value, list) and value:
                lines.append(f"   {compact(key)}: [")
                lines += [f"    {compact(item)}" + ("," if i < len(value) - 1 else "") for i, item in enumerate(value)]
                lines.append(f"   ]{end}")
            else:
                lines.append(f"   {compact(key)}: {compact(value)}{end}")
        lines.append("  }" + ("," if p < len(document["profiles"]) - 1 else ""))
    lines += [" ]", "}"]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    s = sub.add_parser("serve", help="serve a profile's register image with pymodbus")
    s.add_argument("profile")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--image", type=int, default=0)
    s.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--check", action="store_true", help="compare with the committed fixtures")
    args = parser.parse_args()
    if args.command == "serve":
        serve(args)
        return
    outputs = {CAN_FIXTURE: dump(can_vectors()), MODBUS_FIXTURE: dump(modbus_vectors())}
    if args.check:
        stale = [str(p.relative_to(ROOT)) for p, text in outputs.items() if not p.exists() or p.read_text() != text]
        if stale:
            sys.exit(f"profile-oracle: stale fixture(s), run scripts/profile-oracle.py: {', '.join(stale)}")
        print("profile-oracle: fixtures match")
        return
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for path, text in outputs.items():
        path.write_text(text)
        print(f"profile-oracle: wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
