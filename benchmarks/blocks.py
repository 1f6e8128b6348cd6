"""Fused vs unfused on the six MobileNetV1 depthwise-separable blocks.

  python benchmarks/blocks.py --mode sim   # MODELED on sim:ascend910b2 and sim:ascend310p3 (fp16)
                                           # fastest tile, and fastest tile with DMA <= 1.15x minimal
  python benchmarks/blocks.py --mode llvm  # MEASURED on this CPU: fused vs unfused vs ONNX Runtime

Writes benchmarks/results/blocks_<mode>.json. The llvm mode measures interleaved (3 warm-ups +
N samples per candidate) with TVM_NUM_THREADS threads (2 if unset) and the same number of ORT
intra-op threads; report ratios and minimums, not absolute times: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TVM_NUM_THREADS", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import onnx  # noqa: E402

import models  # noqa: E402
from fusion.report.bench import bench_llvm, bench_sim  # noqa: E402
from fusion.driver.compiler import compile_model  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def _tuned(model, soc: str):
    """The block's best tile under the cost model: an in-memory `tune` sweep, no database."""
    from fusion.tuning.db import TuningDB
    from fusion.tuning.search import sweep_modeled

    def lookup(wl, target):
        best = sweep_modeled("block", wl, target, TuningDB(None)).best
        return best.tile if best else None
    return lookup


DMA_CAP = 1.15


def _capped(m, soc: str, unfused_us: float) -> dict:
    """The fastest modeled tile whose DMA volume is at most DMA_CAP x the minimal bytes (or the
    lowest ratio any legal tile reaches when none is)."""
    from fusion.cost import model_fused
    from fusion.core.errors import MegafuseError
    from schedules.targets import parse_target
    from schedules.traffic import dma_ratio
    from fusion.tuning.db import TuningDB
    from fusion.tuning.search import CappedTiles, lowest_dma_ratio

    hook = CappedTiles(TuningDB(None), DMA_CAP)
    try:
        cm = compile_model(m, target=f"sim:{soc}", dtype="float16", tuned_tiles=hook)
    except MegafuseError:
        wl = compile_model(m, target=f"sim:{soc}", dtype="float16").fused_blocks[0].workload
        low = lowest_dma_ratio(wl, parse_target(f"sim:{soc}"))
        return {"reachable": False, "lowest_ratio": low[0], "lowest_tile": low[1].describe()}
    plan = cm.fused_blocks[0].plan
    cost = model_fused(plan)
    return {"reachable": True, "tile": plan.tile.describe(), "cores": plan.cores, "fused_us": cost.time_us,
            "speedup": unfused_us / cost.time_us, "traffic_ratio": dma_ratio(plan)}


def run(mode: str, samples: int) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in models.MOBILENET_V1_BLOCKS:
            m = models.build(spec["name"])
            path = os.path.join(tmp, spec["name"] + ".onnx")
            onnx.save(m, path)
            if mode == "sim":
                for soc in ("ascend910b2", "ascend310p3"):
                    cm = compile_model(m, target=f"sim:{soc}", dtype="float16", tuned_tiles=_tuned(m, soc))
                    report, _ = bench_sim(cm, path)
                    k = report["kernels"][0]
                    capped = _capped(m, soc, k["unfused_us"])
                    rows.append({"block": spec["name"], "soc": soc, **{key: k[key] for key in (
                        "tile", "cores", "fused_us", "unfused_us", "vendor_us", "speedup", "speedup_vs_vendor",
                        "gm_bytes_fused", "gm_bytes_unfused", "gm_bytes_vendor", "gm_bytes_min", "traffic_ratio", "dma_floor_ratio", "dma_floor_any_split_ratio",
                        "hbm_traffic_ratio", "bound", "bottleneck", "roofline_pct", "engine")},
                        f"dma_cap_{DMA_CAP}": capped})
                    print(f"{spec['name']:<22} {soc}: fused {k['fused_us']:8.1f} us  unfused {k['unfused_us']:8.1f} us "
                          f"({k['speedup']:.2f}x)  traffic DMA {k['traffic_ratio']:.2f}x (floor on {k['cores']} cores "
                          f"{k['dma_floor_ratio']:.2f}x, any split {k['dma_floor_any_split_ratio']:.2f}x) HBM {k['hbm_traffic_ratio']:.2f}x min  "
                          f"{k['tile']}  {k['bound']}{'' if k['bottleneck'].startswith(k['bound']) else ' (' + k['bottleneck'] + ')'}  [modeled]")
                    print(f"{'':<22} {soc}: DMA <= {DMA_CAP}x min: " + (
                        f"fused {capped['fused_us']:8.1f} us ({capped['speedup']:.2f}x vs unfused), DMA "
                        f"{capped['traffic_ratio']:.2f}x, {capped['tile']} on {capped['cores']} cores"
                        if capped["reachable"] else f"no tile; the lowest any tile reaches is {capped['lowest_ratio']:.2f}x"))
            else:
                cm = compile_model(m, target="llvm")
                cm_u = compile_model(m, target="llvm", fuse=False)
                report, _ = bench_llvm(cm, cm_u, m, path, samples=samples)
                k = report["kernels"][0]
                rows.append({"block": spec["name"], "threads": report["threads"],
                             "fused_kernel": k["fused"], "unfused_kernels": k["unfused"],
                             "model_fused": report["fused"], "model_unfused": report["unfused"],
                             "onnxruntime": report["onnxruntime"]})
                print(f"{spec['name']:<22} kernel fused p50 {k['fused']['p50_us']:8.0f} us (min {k['fused']['min_us']:.0f}) "
                      f"unfused p50 {k['unfused']['p50_us']:8.0f} us; model fused {report['fused']['p50_us']:.0f} "
                      f"ORT {report['onnxruntime']['p50_us']:.0f} us  [measured, {report['threads']} threads]")
    return {"mode": mode, "figures": "modeled" if mode == "sim" else "measured", "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["sim", "llvm"], default="sim")
    ap.add_argument("--samples", type=int, default=50)
    args = ap.parse_args()
    doc = run(args.mode, args.samples)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"blocks_{args.mode}.json"
    out.write_text(json.dumps(doc, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
