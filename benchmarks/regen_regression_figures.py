"""Regenerate the cost model's end-to-end regression figures (tests/cost/regression_figures.json).

  PYTHONPATH=. python benchmarks/regen_regression_figures.py           # rewrite the file
  PYTHONPATH=. python benchmarks/regen_regression_figures.py --check   # print what changed, exit 1 if any

The figures are MODELED (fusion/cost on the SoC table of fusion/core/soc.py), not measured: a few
whole kernels (fused plans of each variant and the unfused baselines -- the per-op framework kernels
and the vendor-like pair, lowered programs on the same step simulator -- the fused ones with and without L2) whose
time and bytes tests/cost/test_costmodel.py::test_regression_figures replays. They pin nothing by
themselves: the hand-computed tests of tests/cost/test_costmodel.py say what is right; these say that a
change moved a figure. Rerun this script when a model change is intended, and say in the commit
which figures moved and why.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from fusion.core.soc import get_soc
from fusion.cost import model_fused
from fusion.cost.vendor_baseline import block_baseline
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload, TileConfig

OUT = Path(__file__).resolve().parent.parent / "tests" / "cost" / "regression_figures.json"

MID = dict(batch=1, cin=128, cout=128, height=56, width=56, dtype="float16")
RES = dict(batch=1, cin=64, cout=64, height=14, width=14, act2="none", residual=True, dtype="float16")
EXPAND = dict(batch=1, cin=144, cout=24, height=56, width=56, act1="relu6", act2="none", residual=True,
              dtype="float16")
HSWISH = dict(batch=2, cin=40, cout=56, height=14, width=14, act1="relu6", act2="hardswish", dtype="float16")

# (name, kind, soc, L2 on, workload, tile (th, tw, cob, cib, double_buffer, engine) or unfused variant)
CASES = [
    ("fused-mix-910b", "fused", "ascend910b2", True, MID, (4, 14, 1, 1, True, "cube")),
    ("fused-vector-910b-no-l2", "fused", "ascend910b2", False, MID, (4, 12, 8, 1, True, "vector")),
    ("fused-mix-residual-910b", "fused", "ascend910b2", True, RES, (2, 4, 4, 1, True, "cube")),
    ("fused-cube-310p", "fused", "ascend310p3", True, MID, (5, 28, 2, 0, True, "cube")),
    ("fused-cube-310p-single-buffer-no-l2", "fused", "ascend310p3", False, MID, (14, 14, 1, 1, False, "cube")),
    ("unfused-framework-910b", "unfused", "ascend910b2", True, EXPAND, "framework"),
    ("unfused-vendor-910b", "unfused", "ascend910b2", True, MID, "vendor"),
    ("unfused-vendor-310p", "unfused", "ascend310p3", True, HSWISH, "vendor"),
]


def figures(kind: str, soc_name: str, l2: bool, workload: dict, how) -> dict:
    """time_us, gm_bytes, hbm_bytes of one case, as the cost model gives them now."""
    soc = get_soc(soc_name)
    if not l2:
        soc = dataclasses.replace(soc, l2_bytes=0)
    wl = DwSepWorkload(**workload)
    if kind == "fused":
        cost = model_fused(make_plan(wl, TileConfig(*how), soc), timeline=False)
    else:
        cost = block_baseline(wl, soc, how)
    return {"time_us": cost.time_us, "gm_bytes": cost.gm_bytes, "hbm_bytes": cost.hbm_bytes}


def build() -> dict:
    cases = []
    for name, kind, soc, l2, wl, how in CASES:
        spec = {"name": name, "kind": kind, "soc": soc, "l2": l2, "workload": wl,
                "tile" if kind == "fused" else "variant": list(how) if kind == "fused" else how}
        cases.append(spec | {"figures": figures(kind, soc, l2, wl, how)})
    return {"label": "MODELED", "generator": "benchmarks/regen_regression_figures.py", "cases": cases}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = ap.parse_args(argv)
    new = build()
    if not args.check:
        cases = ",\n".join("  " + json.dumps(c) for c in new["cases"])   # one case a line: readable diffs
        head = json.dumps({k: v for k, v in new.items() if k != "cases"})[:-1]
        OUT.write_text(f'{head}, "cases": [\n{cases}\n]}}\n')
        print(f"wrote {len(new['cases'])} MODELED figures to {OUT}")
        return 0
    old = {c["name"]: c["figures"] for c in json.loads(OUT.read_text())["cases"]}
    changed = 0
    for c in new["cases"]:
        before = old.get(c["name"])
        if before != c["figures"]:
            changed += 1
            print(f"{c['name']}: {before} -> {c['figures']}")
    print(f"{changed} of {len(new['cases'])} cases changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
