"""Every fused block through the vendor's BiShengIR compiler (AscendNPU IR, target npuir).

  python benchmarks/npuir_sweep.py            # MobileNetV1, MobileNetV2 and the odd shapes, fp16,
                                              # default and tuned tiles, on Ascend910B2
  python benchmarks/npuir_sweep.py --soc 910b3

For each block: the module reaches the hivmc hand-off or the vendor's diagnostic, and the UB
peak of the vendor's PlanMemory next to the KernelPlan's UB bytes. "Tuned" tiles are the best
modeled tile of an in-memory `tune` sweep (no database). Writes
benchmarks/results/npuir_sweep.json (vendor compile times are wall-clock on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import models  # noqa: E402
from fusion.codegen.npuir.check import CPU_RUNNER_NOTE, check_plans  # noqa: E402
from fusion.driver.plans import block_plans  # noqa: E402
from fusion.codegen.npuir.vendor import vendor_target  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
MODELS = ("mobilenet_v1", "mobilenet_v2", *(m["name"] for m in models.dwsep.ODD_BLOCKS))


def _tuned(wl, target):
    from fusion.tuning.db import TuningDB
    from fusion.tuning.search import sweep_modeled

    best = sweep_modeled("block", wl, target, TuningDB(None)).best
    return best.tile if best else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--soc", default="910b2", choices=["910b2", "910b3"])
    ap.add_argument("--dtype", default="float16", choices=["float16", "float32"])
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("-o", "--output", default=str(RESULTS / "npuir_sweep.json"))
    args = ap.parse_args(argv)
    target = f"npuir:{args.soc}"
    runs = []
    for name in args.models:
        for tiles in ("default", "tuned"):
            t0 = time.perf_counter()
            plans = block_plans(models.build(name), target, dtype=args.dtype,
                                tuned_tiles=_tuned if tiles == "tuned" else None)
            rows = check_plans(plans)
            for r in rows:
                print(f"{name:<22} {tiles:<7} {r.describe()}", flush=True)
            runs.append({"model": name, "tiles": tiles, "blocks": [r.to_json() for r in rows],
                         "seconds": time.perf_counter() - t0})
    blocks = [b for r in runs for b in r["blocks"]]
    ratios = [b["ratio"] for b in blocks if b["ratio"] is not None]
    summary = {"target": target, "vendor_target": vendor_target("ascend" + args.soc),
               "dtype": args.dtype, "blocks": len(blocks),
               "reached_hivmc_handoff": sum(b["reached_hivmc_handoff"] for b in blocks),
               "passed": sum(b["passed"] for b in blocks),
               "ub_ratio_min": min(ratios, default=None), "ub_ratio_max": max(ratios, default=None),
               "vendor_seconds_total": sum(b["vendor_seconds"] for b in blocks),
               "vendor_seconds_max": max((b["vendor_seconds"] for b in blocks), default=None),
               "note": CPU_RUNNER_NOTE}
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "runs": runs}, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    print(f"wrote {out}")
    return 0 if summary["passed"] == summary["blocks"] else 1


if __name__ == "__main__":
    sys.exit(main())
