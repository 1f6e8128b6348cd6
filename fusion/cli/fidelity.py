"""`megafuse fidelity`: the simulated Ascend target against published on-device measurements.

  megafuse fidelity                 the table (calibration, validation, excluded) and the summary
  megafuse fidelity --json FILE     the same as JSON
  megafuse fidelity --points FILE   another points file (same schema as benchmarks/fidelity/points.json)
"""

from __future__ import annotations

import json
from fusion.core.errors import MegafuseError
from fusion.core.sanitize import display
from fusion.cost.fidelity import POINTS, load_points, summary, table

from fusion.cli.options import check_input_file, check_output_file, write_text_atomic


def register(sub, add_model_args=None) -> None:
    p = sub.add_parser("fidelity", help="modeled vs published on-device Ascend measurements "
                                        "(calibration and validation sets)",
                       description=__doc__.splitlines()[0])
    p.add_argument("--points", metavar="FILE", help="points file (default benchmarks/fidelity/points.json)")
    p.add_argument("--json", dest="json_file", metavar="FILE", help="write the table and summary here")
    p.set_defaults(func=cmd_fidelity)


def cmd_fidelity(args) -> int:

    check_input_file(args.points, "--points")     # a FIFO or device would block the read
    check_output_file(args.json_file, "--json", parent_must_exist=True)
    doc = load_points(args.points or POINTS)
    excluded = doc.get("excluded", [])
    if not isinstance(excluded, list) or not all(isinstance(e, dict) for e in excluded):
        raise MegafuseError("fidelity points file: 'excluded' must be a list of objects")
    try:
        rows = table(doc)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        raise MegafuseError(f"fidelity points file: malformed point ({type(e).__name__}: {display(e)})") from None
    print("simulated Ascend target vs published measurements  [modeled / measured]")
    print(f"  {'point':<30} {'soc':<12} {'set':<11} {'measured us':>12} {'modeled us':>11} {'ratio':>6}  source")
    for r in sorted(rows, key=lambda r: ("calibration", "validation", "excluded").index(r.set)
                    if r.set in ("calibration", "validation", "excluded") else 3):
        print(f"  {display(r.id):<30} {display(r.soc):<12} {display(r.set):<11} {r.measured_us:>12.2f} "
              f"{r.modeled_us:>11.2f} {r.ratio:>6.2f}  {display(r.source)}")
    summ = summary(rows)
    for s, v in summ.items():
        net = "" if v["network_max_abs_err"] is None else f", networks max |ratio-1| {v['network_max_abs_err'] * 100:.0f} %"
        print(f"  {s}: {v['points']} points, median |ratio-1| {v['median_abs_err'] * 100:.1f} %, "
              f"worst {v['max_factor']:.2f}x off{net}")
    for e in excluded:
        print(f"  not modeled: {display(e.get('id'))} ({display(e.get('measured_us'))} us): {display(e.get('reason'))}")
    if args.json_file:
        out = {"rows": [dict(r.__dict__, ratio=r.ratio) for r in rows], "summary": summ,
               "excluded": excluded, "figures": "modeled vs measured"}
        write_text_atomic(args.json_file, json.dumps(out, indent=1, ensure_ascii=False), "--json")
        print(f"wrote {display(args.json_file)}")
    return 0
