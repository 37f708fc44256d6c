#!/usr/bin/env python3
"""The optimiser's independent proof: the problem of docs/optimiser.md ("The problem"), written again
in Python from that page, solved by HiGHS (scipy.optimize.milp) with the exclusivity binaries in EVERY
slot, on seeded cases.

    scripts/plan-oracle.py                       write Tests/PlanningTests/Fixtures/plan-cases.json
                                                 (the generated cases, seeds 1..200, plus the EMHASS-shaped ones)
    scripts/plan-oracle.py --seeds 9001-9004 --out -   solve fresh seeds and print them (PlanningTests'
                                                 live run does this)

A case is {"name", "start", "hours", "load", "pv", "import", "export", "battery", "import_limit",
"export_limit", "wear", "demand", "threshold", "value_end", "end_kwh"} plus HiGHS's answer
{"highs": {"objective", "violation_kwh", "flow_scale"}}. Numbers are rounded before solving, so the
stored case is exactly the one HiGHS solved.

Cases shaped like EMHASS's published examples (davidusb-geek/emhass, MIT; shapes and figures only,
no code): the defaults of src/emhass/data/config_defaults.json (30-minute steps, peak 0.1907 and
off-peak 0.1419 per kWh in the periods 02:54-15:24 and 17:24-20:24, sell price 0.1419, grid limits
9000 W, a 5000 Wh battery at 1000 W, efficiencies 0.95, SOC 0.3-0.9, target 0.6); the naive-MPC call of
its README (10 steps, pv_power_forecast [0, 70, 141.22, ..., 3078.93] W, soc_init 0.5, soc_final 0.6);
the out-of-reach final SOC of issue #1049 and the start below the minimum of issue #390.
"""
import argparse
import json
import math
import random
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "Tests/PlanningTests/Fixtures/plan-cases.json"
START = 1_795_000_500  # an instant inside a 15-minute block (2026-11-18, UTC)


def penalty_per_kwh(case):
    """100 x the penalty base of docs/optimiser.md."""
    base = max(0.01, case["wear"], case["value_end"], max(abs(p) for p in case["import"]),
               max(abs(p) for p in case["export"]), case["demand"] / min(case["hours"]))
    return 100.0 * base


def solve(case):
    """HiGHS's optimum of the docs' problem, exclusivity binaries in every slot."""
    T = len(case["hours"])
    b = case["battery"]
    C, D, ec, ed = b["max_charge_kw"], b["max_discharge_kw"], b["charge_efficiency"], b["discharge_efficiency"]
    pen = penalty_per_kwh(case)
    il, el = case["import_limit"], case["export_limit"]
    names = []  # (kind, t)
    lo, hi, cost, integ = [], [], [], []

    def var(kind, t, lower, upper, c, integer=False):
        names.append((kind, t))
        lo.append(lower); hi.append(upper); cost.append(c); integ.append(1 if integer else 0)
        return len(names) - 1

    idx = {}
    for t in range(T):
        h, n = case["hours"][t], case["load"][t] - case["pv"][t]
        idx["c", t] = var("c", t, 0, C, case["wear"] * h)
        idx["d", t] = var("d", t, 0, D, case["wear"] * h)
        idx["i", t] = var("i", t, 0, max(0.0, n) + C, case["import"][t] * h)
        idx["e", t] = var("e", t, 0, max(0.0, -n) + D, -case["export"][t] * h)
        idx["s", t] = var("s", t, min(0.0, b["start_kwh"]), max(b["capacity_kwh"], b["start_kwh"]),
                          -case["value_end"] if t == T - 1 else 0.0)
        idx["lo", t] = var("lo", t, 0, np.inf, pen)
        idx["hi", t] = var("hi", t, 0, np.inf, pen)
        if il is not None:
            idx["gi", t] = var("gi", t, 0, np.inf, pen * h)
        if el is not None:
            idx["ge", t] = var("ge", t, 0, np.inf, pen * h)
        if C > 0 and D > 0:
            idx["beta", t] = var("beta", t, 0, 1, 0.0, True)
        idx["gamma", t] = var("gamma", t, 0, 1, 0.0, True)
    if case["demand"] > 0:
        idx["peak"] = var("peak", -1, 0, np.inf, case["demand"])
    if case["end_kwh"] is not None:
        idx["end"] = var("end", -1, 0, np.inf, pen)

    rows, cols, vals, rlo, rhi = [], [], [], [], []

    def con(terms, lower, upper):
        r = len(rlo)
        for j, v in terms:
            rows.append(r); cols.append(j); vals.append(v)
        rlo.append(lower); rhi.append(upper)

    for t in range(T):
        h, n = case["hours"][t], case["load"][t] - case["pv"][t]
        c, d, i, e, s = idx["c", t], idx["d", t], idx["i", t], idx["e", t], idx["s", t]
        con([(i, 1), (e, -1), (c, -1), (d, 1)], n, n)
        terms = [(s, 1), (c, -ec * h), (d, h / ed)]
        if t > 0:
            terms.append((idx["s", t - 1], -1))
        rhs = b["start_kwh"] if t == 0 else 0.0
        con(terms, rhs, rhs)
        con([(s, 1), (idx["lo", t], 1)], b["lower_kwh"], np.inf)
        con([(s, 1), (idx["hi", t], -1)], -np.inf, b["upper_kwh"])
        if il is not None:
            con([(i, 1), (idx["gi", t], -1)], -np.inf, il)
        if el is not None:
            con([(e, 1), (idx["ge", t], -1)], -np.inf, el)
        if case["demand"] > 0:
            con([(i, 1), (idx["peak"], -1)], -np.inf, case["threshold"])
        if ("beta", t) in idx:
            con([(c, 1), (idx["beta", t], -C)], -np.inf, 0)
            con([(d, 1), (idx["beta", t], D)], -np.inf, D)
        g = idx["gamma", t]
        con([(i, 1), (g, -hi[i])], -np.inf, 0)
        con([(e, 1), (g, hi[e])], -np.inf, hi[e])
    if case["end_kwh"] is not None:
        con([(idx["s", T - 1], 1), (idx["end"], 1)], case["end_kwh"], np.inf)

    A = coo_matrix((vals, (rows, cols)), shape=(len(rlo), len(names))).tocsr()
    res = milp(np.array(cost), constraints=LinearConstraint(A, np.array(rlo), np.array(rhi)),
               integrality=np.array(integ), bounds=Bounds(np.array(lo), np.array(hi)),
               options={"mip_rel_gap": 1e-7, "time_limit": 60})
    if res.x is None:
        raise SystemExit(f"plan-oracle: HiGHS found no solution for {case['name']}: {res.message}")
    x = res.x
    violation = sum(x[idx["lo", t]] + x[idx["hi", t]] for t in range(T))
    violation += sum(x[idx["gi", t]] * case["hours"][t] for t in range(T) if ("gi", t) in idx)
    violation += sum(x[idx["ge", t]] * case["hours"][t] for t in range(T) if ("ge", t) in idx)
    violation += x[idx["end"]] if "end" in idx else 0.0
    return {"objective": float(res.fun), "violation_kwh": float(violation), "optimal": bool(res.status == 0),
            "flow_scale": flow_scale(case)}


def flow_scale(case):
    """F of docs/optimiser.md: the money the case's flows could move (the absolute part of the tolerance)."""
    b = case["battery"]
    C, D = b["max_charge_kw"], b["max_discharge_kw"]
    f = 0.0
    nmax = 0.0
    for t, h in enumerate(case["hours"]):
        n = case["load"][t] - case["pv"][t]
        nmax = max(nmax, abs(n))
        f += h * max(abs(case["import"][t]), abs(case["export"][t]), case["wear"]) * (abs(n) + C + D)
    return f + case["demand"] * (nmax + C) + case["value_end"] * b["capacity_kwh"]


def r(x, digits=3):
    return round(float(x), digits)


def generated(seed, max_slots=192):
    """One seeded case: size, tariff, forecasts, battery, limits and costs drawn from `seed`."""
    g = random.Random(seed)
    T = min(max_slots, g.choice([4, 4, 6, 8, 8, 12, 16, 24, 24, 32, 48, 48, 96, 192]))
    block_h = g.choice([0.25, 0.25, 0.5, 1.0])
    hours = [block_h] * T
    if g.random() < 0.6:
        hours[0] = r(block_h * g.uniform(0.1, 1.0), 4)
    scale = g.choice([5, 20, 100, 500, 2000])  # site size, kW of peak load
    first_hour = g.uniform(0, 24)
    clock = [(first_hour + sum(hours[:t])) % 24 for t in range(T)]
    load = [r(max(0.0, scale * (0.5 + 0.3 * math.sin((h - 8) / 24 * 2 * math.pi) + g.gauss(0, 0.1)))) for h in clock]
    pv_peak = scale * g.choice([0, 0.3, 0.8, 1.5])
    pv = [r(max(0.0, pv_peak * math.sin((h - 6) / 12 * math.pi)) if 6 <= h <= 18 else 0.0) for h in clock]
    kind = g.choice(["tou", "tou", "random", "inverted", "equal", "negative", "flat"])
    normal = g.uniform(0.05, 0.4)
    imp, exp = [], []
    for h in clock:
        if kind == "tou":
            p = normal * (1.5 if 18 <= h < 22 else 0.75 if h < 6 or h >= 22 else 0.8 if 10 <= h < 16 else 1.0)
            imp.append(r(p, 4)); exp.append(r(p * g.choice([0.3, 0.5]), 4))
        elif kind == "random":
            p = normal * g.uniform(0.3, 2.0)
            imp.append(r(p, 4)); exp.append(r(p * g.uniform(0, 1), 4))
        elif kind == "inverted":
            p = normal * g.uniform(0.5, 1.5)
            imp.append(r(p, 4)); exp.append(r(p * g.uniform(0.8, 1.4), 4))
        elif kind == "equal":
            p = r(normal * g.uniform(0.5, 1.5), 4)
            imp.append(p); exp.append(p)
        elif kind == "negative":
            p = normal * g.uniform(-1.0, 1.5)
            imp.append(r(p, 4)); exp.append(r(p - abs(normal) * g.uniform(-0.3, 0.6), 4))
        else:
            imp.append(r(normal, 4)); exp.append(r(normal * 0.4, 4))
    cap = r(scale * g.choice([0.5, 1, 2, 4]))
    power = r(cap * g.choice([0.25, 0.5, 1.0]))
    eff = g.choice([(1.0, 1.0), (0.95, 0.95), (0.9, 1.0), (0.92, 0.96), (0.98, 0.97)])
    lower, upper = r(cap * g.choice([0, 0.1, 0.2])), r(cap * g.choice([1, 0.9, 0.95]))
    start = r(cap * g.uniform(0, 1))
    infeasible = g.random() < 0.3
    import_limit = export_limit = end_kwh = None
    if g.random() < 0.4:
        import_limit = r(scale * g.uniform(0.4, 1.5))
    if g.random() < 0.3:
        export_limit = r(scale * g.uniform(0.0, 1.0))
    if g.random() < 0.3:
        end_kwh = r(cap * g.uniform(0.2, 0.9))
    if infeasible:
        what = g.choice(["below", "above", "end", "import", "export"])
        if what == "below":
            start = r(lower * g.uniform(0, 0.9)); lower = max(lower, r(cap * 0.2))
        elif what == "above":
            start = r(cap); upper = r(cap * 0.8)
        elif what == "end":
            end_kwh = r(cap)
        elif what == "import":
            import_limit = r(min(load) * 0.5)
        else:
            export_limit = 0.0
            pv = [r(x * 3) for x in pv]
    demand = r(g.choice([0, 0, 0, 5, 15]) * normal * 4, 3)
    return {
        "name": f"seed-{seed}-{kind}{'-infeasible' if infeasible else ''}-{T}",
        "start": START, "hours": hours, "load": load, "pv": pv, "import": imp, "export": exp,
        "battery": {"capacity_kwh": cap, "start_kwh": start, "lower_kwh": lower, "upper_kwh": upper,
                    "max_charge_kw": power, "max_discharge_kw": power,
                    "charge_efficiency": eff[0], "discharge_efficiency": eff[1]},
        "import_limit": import_limit, "export_limit": export_limit,
        "wear": r(g.choice([0, 0, 0.01, 0.02, 0.06]) * (1 if kind != "flat" else 0), 4),
        "demand": demand, "threshold": r(scale * g.uniform(0, 0.8)) if demand > 0 else 0.0,
        "value_end": r(g.choice([0, 0, normal * 0.5, normal * 0.9]), 4),
        "end_kwh": end_kwh,
    }


def emhass_shaped():
    """Cases shaped like EMHASS's published defaults and examples (see the module docstring)."""
    battery = {"capacity_kwh": 5.0, "start_kwh": 2.5, "lower_kwh": 1.5, "upper_kwh": 4.5, "max_charge_kw": 1.0,
               "max_discharge_kw": 1.0, "charge_efficiency": 0.95, "discharge_efficiency": 0.95}

    def hp(minute):  # peak in 02:54-15:24 and 17:24-20:24
        return 174 <= minute < 924 or 1044 <= minute < 1224

    def day(start_minute, steps, **over):
        minutes = [(start_minute + 30 * k) % 1440 for k in range(steps)]
        imp = [0.1907 if hp(m) else 0.1419 for m in minutes]
        # a household load (our shape: EMHASS's naive load is yesterday's measurement) and 5 kWp of PV
        load = [r(0.4 + 0.5 * (1 if 1080 <= m < 1320 else 0) + 0.3 * (1 if 420 <= m < 540 else 0)) for m in minutes]
        pv = [r(max(0.0, 4.2 * math.sin((m / 60 - 6.5) / 13 * math.pi)) if 390 <= m <= 1170 else 0.0) for m in minutes]
        case = {"start": START - START % 1800, "hours": [0.5] * steps, "load": load, "pv": pv, "import": imp,
                "export": [0.1419] * steps, "battery": dict(battery), "import_limit": 9.0, "export_limit": 9.0,
                "wear": 0.0, "demand": 0.0, "threshold": 0.0, "value_end": 0.0, "end_kwh": None}
        for k, v in over.items():
            case[k] = v
        return case

    readme_pv = [0, 70, 141.22, 246.18, 513.5, 753.27, 1049.89, 1797.93, 1697.3, 3078.93]
    mpc = day(420, 10, pv=[r(w / 1000) for w in readme_pv], end_kwh=3.0)
    mpc["name"] = "emhass-readme-naive-mpc-10-steps"
    ahead = day(0, 48, end_kwh=2.5)
    ahead["name"] = "emhass-defaults-dayahead-48-steps"
    unreachable = day(1200, 4, end_kwh=4.5, battery=dict(battery, start_kwh=1.5))
    unreachable["name"] = "emhass-1049-final-soc-out-of-reach"
    below = day(1380, 12, battery=dict(battery, start_kwh=0.7, lower_kwh=0.75))
    below["name"] = "emhass-390-start-below-minimum"
    worn = day(360, 48, wear=0.02, value_end=0.12)
    worn["name"] = "emhass-defaults-battery-weights-0.02"
    return [mpc, ahead, unreachable, below, worn]


def short_first(seed):
    """A generated case whose slot 0 is seconds long (a plan made just before a block ends) and that has
    a demand charge: its penalty base is the demand charge over those seconds, thousands of times the prices."""
    case = generated(seed, 96)
    g = random.Random(-seed)
    case["hours"][0] = round(g.choice([1, 5, 30]) / 3600, 6)
    case["demand"] = case["demand"] or r(g.uniform(2, 20), 3)
    case["threshold"] = case["threshold"] or r(max(case["load"]) * 0.5)
    case["name"] = f"seed-{seed}-short-first-slot-{len(case['hours'])}"
    return case


def seed_range(text):
    a, _, b = text.partition("-")
    return range(int(a), int(b or a) + 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=seed_range, default=range(1, 201))
    parser.add_argument("--out", default=str(FIXTURE), help="'-' for stdout")
    parser.add_argument("--short-first", action="store_true", help="only the short-slot-0 cases, to --out")
    parser.add_argument("--max-slots", type=int, default=192, help="cap on a case's slots (the live test's 48)")
    parser.add_argument("--keep", type=int, default=200, help="generated cases HiGHS proved optimal to keep")
    args = parser.parse_args()
    if args.short_first:
        cases = [short_first(s) for s in args.seeds]
        for case in cases:
            case["highs"] = solve(case)
        print(json.dumps({"cases": cases}))
        return
    cases = []
    # A case HiGHS cannot prove optimal within its time limit proves nothing: the next seed takes its place.
    seeds = iter(args.seeds) if args.out == "-" else iter(range(args.seeds.start, args.seeds.start + 10 * args.keep))
    dropped = []
    for seed in seeds:
        if args.out != "-" and len(cases) == args.keep:
            break
        case = generated(seed, args.max_slots)
        case["highs"] = solve(case)
        if case["highs"]["optimal"]:
            cases.append(case)
        else:
            dropped.append(case["name"])
    if args.out != "-":
        for case in [short_first(s) for s in range(501, 511)] + emhass_shaped():
            case["highs"] = solve(case)
            cases.append(case)
    if dropped:
        print(f"plan-oracle: not proven optimal by HiGHS, left out: {', '.join(dropped)}", file=sys.stderr)
    text = json.dumps({"generator": "scripts/plan-oracle.py", "solver": "HiGHS via scipy.optimize.milp",
                       "cases": cases}, separators=(",", ":"))
    if args.out == "-":
        print(text)
    else:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
        print(f"plan-oracle: {len(cases)} cases -> {args.out} ({len(text) // 1024} KiB)", file=sys.stderr)


if __name__ == "__main__":
    main()
