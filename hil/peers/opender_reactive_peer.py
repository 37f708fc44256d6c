#!/usr/bin/env python3
"""EPRI OpenDER (PyPI `opender`) running IEEE 1547-2018's reactive power and volt-watt functions.

The independent oracle for bessd's GridSupport module (issue 59): constant power factor, constant
reactive power, volt-var, watt-var and volt-watt, each bounded by the apparent power rating with
OpenDER's priority, on the inputs the test gives.

    opender_reactive_peer.py '<cases as JSON>'
    opender_reactive_peer.py - < cases.json

The cases come as the argument, or on stdin when the argument is `-` (a scenario's trace, one step
per control period, is longer than an argument should be).

The argument is a JSON list of cases, each {"settings": {OpenDER parameter: value, ...},
"period": seconds (DER.t_s), "steps": [[count, v_pu, p_dem_pu], ...]}: `count` steps of `period`
at voltage `v_pu` and active power demand `p_dem_pu` (of NP_P_MAX, + = discharge); a fourth element
{parameter: value, ...} changes settings before those steps (a new constant var). One JSON line per
case on stdout: {"p": [W per step], "q": [var per step]} — OpenDER's command after capability and
priority (`p_limited_w`, `q_limited_var`).

Every case starts a fresh DER_BESS. Delays that are not the control law (reaction time, inverter
current loop, settings execution, mode transition, the BESS ramp) are zero and the trip settings are
moved out of the way, so only the functions and their response-time filters are compared (reference
../shared/reference/reactive-power.md §3). A period of 100000 s is OpenDER's snapshot: filters bypassed.
"""
import json
import logging
import sys

import opender

# Settings outside IEEE 1547-2018's ranges only warn; the test chooses them on purpose.
logging.getLogger().setLevel(logging.ERROR)

BASE = {
    "NP_REACT_TIME": 0, "NP_INV_DELAY": 0, "NP_SET_EXE_TIME": 0, "NP_MODE_TRANSITION_TIME": 0,
    "NP_BESS_P_RAMP_TIME": 0, "NP_BESS_CAPACITY": 1e12, "SOC_INIT": 0.5,
    "OV2_TRIP_V": 2.5, "OV1_TRIP_V": 2.4, "UV1_TRIP_V": 0.05, "UV2_TRIP_V": 0.04,
    "PF_MODE_ENABLE": False, "AP_LIMIT_ENABLE": False,
    "CONST_PF_MODE_ENABLE": False, "CONST_Q_MODE_ENABLE": False, "QV_MODE_ENABLE": False,
    "QP_MODE_ENABLE": False, "PV_MODE_ENABLE": False,
}


def run(case):
    opender.DER.t_s = case["period"]
    settings = dict(BASE)
    settings.update(case["settings"])
    der = opender.DER_BESS(**settings)
    ps, qs = [], []
    for segment in case["steps"]:
        count, v_pu, p_dem_pu = segment[:3]
        for name, value in (segment[3] if len(segment) > 3 else {}).items():
            setattr(der.der_file, name, value)
        for _ in range(int(count)):
            der.update_der_input(p_dem_pu=p_dem_pu, f=60, v_pu=v_pu)
            der.run()
            ps.append(float(der.p_limited_w))
            qs.append(float(der.q_limited_var))
    return {"p": ps, "q": qs}


def main():
    cases = json.loads(sys.stdin.read() if sys.argv[1] == "-" else sys.argv[1])
    for case in cases:
        print(json.dumps(run(case)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
