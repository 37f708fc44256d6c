#!/usr/bin/env python3
"""EPRI OpenDER (PyPI `opender`) running IEEE 1547-2018 frequency-droop on a frequency profile.

An implementation of the 'pre-disturbance power + droop' response no one here wrote: bessd's event
assessment computes the power its droop settings required and is checked against this (issue 47 §4).

    opender_peer.py --profile 0:60,10:60,12:59.5,40:59.5,42:60,60:60 --period 0.1 --rating-w 100000 \
        --db-under 0.036 --db-over 0.036 --k-under 0.05 --k-over 0.05 --olrt 5 --p-dem-w 0

The profile is breakpoints `t:f` (seconds, Hz), linear between them and held after the last. One
JSON object per step on stdout: {"t": seconds, "f": Hz, "p_w": OpenDER's active power output, W}.

OpenDER 2.2 models a 60 Hz system only (the nominal is a literal 60 in its droop): a 50 Hz profile
is refused with exit status 2. Its droop is measured from the deadband edge (bessd's `reference:
edge`); its lag is Tustin-discretised with 2τ = OLRT / 1.15 (bessd: exact, τ = OLRT / ln 10).
"""
import argparse
import json
import sys

import opender


def profile_points(text):
    """`t:f,t:f,…` → [(t, f)], times strictly increasing."""
    points = []
    for item in text.split(","):
        t, f = item.split(":")
        points.append((float(t), float(f)))
    if not points or any(b[0] <= a[0] for a, b in zip(points, points[1:])):
        raise ValueError("profile times must increase")
    return points


def frequency_at(points, t):
    """Linear between breakpoints, held before the first and after the last."""
    if t <= points[0][0]:
        return points[0][1]
    for (t0, f0), (t1, f1) in zip(points, points[1:]):
        if t <= t1:
            return f0 + (f1 - f0) * (t - t0) / (t1 - t0)
    return points[-1][1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", required=True)
    parser.add_argument("--period", type=float, default=0.1)
    parser.add_argument("--end", type=float, help="last step's time (default: the last breakpoint)")
    parser.add_argument("--rating-w", type=float, default=100_000)
    parser.add_argument("--nominal", type=float, default=60)
    parser.add_argument("--db-under", type=float, default=0.036, help="Hz below nominal (PF_DBUF)")
    parser.add_argument("--db-over", type=float, default=0.036, help="Hz above nominal (PF_DBOF)")
    parser.add_argument("--k-under", type=float, default=0.05, help="per-unit droop (PF_KUF)")
    parser.add_argument("--k-over", type=float, default=0.05, help="per-unit droop (PF_KOF)")
    parser.add_argument("--olrt", type=float, default=5, help="open-loop response time, s (PF_OLRT)")
    parser.add_argument("--p-dem-w", type=float, default=0, help="the BESS's active power demand, W (+ = discharge)")
    args = parser.parse_args()
    if args.nominal != 60:
        print("OpenDER's frequency-droop is written for 60 Hz only", file=sys.stderr)
        return 2
    points = profile_points(args.profile)
    end = args.end if args.end is not None else points[-1][0]

    opender.DER.t_s = args.period
    der = opender.DER_BESS(NP_P_MAX=args.rating_w, NP_VA_MAX=args.rating_w, NP_Q_MAX_INJ=args.rating_w / 2,
                           NP_Q_MAX_ABS=args.rating_w / 2, NP_AC_V_NOM=480)
    der.der_file.NP_P_MAX_CHARGE = args.rating_w  # charge as far as it discharges (the default is 0)
    der.der_file.PF_MODE_ENABLE = True
    der.der_file.PF_DBUF = args.db_under
    der.der_file.PF_DBOF = args.db_over
    der.der_file.PF_KUF = args.k_under
    der.der_file.PF_KOF = args.k_over
    der.der_file.PF_OLRT = args.olrt
    der.der_file.NP_REACT_TIME = 0

    steps = int(round(end / args.period))
    for k in range(1, steps + 1):
        t = round(k * args.period, 9)
        f = frequency_at(points, t)
        der.update_der_input(p_dem_w=args.p_dem_w, f=f, v_pu=1)
        p, _ = der.run()
        print(json.dumps({"t": t, "f": f, "p_w": p}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
