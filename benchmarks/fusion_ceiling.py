"""The ceiling of DW + PW pair fusion (fusion/cost/pair_ceiling.py) beside what the fused network reaches
(issue 30). MODELED bound.

Per network x SoC x batch: the vendor-like network in one launch; the same network with every DW + PW
pair at its ceiling (the pair's own work per pipe, perfectly overlapped, the DW result on chip); the
ceiling's speedup; the whole network as one kernel at its ceiling (every tensor between kernels on chip);
and, from benchmarks/results/batch_table.json, what the fused network reaches in one
launch, so a target above the ceiling is visibly out of reach of pair fusion with the vendor's work.
Only the vendor-like side is simulated here (seconds a row): no fused compile.

    PYTHONPATH=. python benchmarks/fusion_ceiling.py [--nets mobilenet_v1,mobilenet_v2] [--batches 1,8,32]
        [--socs ascend910b2,ascend310p3] [-o benchmarks/results/fusion_ceiling]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import models
from batch_table import grid_args   # (benchmarks/, this script's folder)
from fusion.core.soc import get_soc
from fusion.cost.pair_ceiling import network_ceiling
from fusion.cost.primitives import cycles_to_us
from fusion.cost.vendor_baseline import model_graph
from fusion.frontend.onnx_import import load_graph

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "benchmarks" / "results" / "batch_table.json"


def row(net: str, batch: int, soc_name: str, reached: dict) -> dict:
    soc = get_soc(soc_name)
    vendor = model_graph(load_graph(models.build(net, batch=batch)), soc, "float16")
    c = network_ceiling(soc, vendor, cycles_to_us(soc, soc.sync_all_cycles))
    got = reached.get((net, soc_name, batch), {})
    return {"net": net, "soc": soc_name, "batch": batch, "vendor_one_launch_us": c["vendor_one_launch_us"],
            "ceiling_one_launch_us": c["ceiling_one_launch_us"], "ceiling_speedup": c["ceiling_speedup"],
            "pairs": c["pairs"], "pairs_bodies_us": c["pairs_bodies_us"], "pairs_ceiling_us": c["pairs_ceiling_us"],
            "binding_pipes": c["binding_pipes"], "whole_network_us": c["whole_network"]["ceiling_one_launch_us"],
            "whole_network_speedup": c["whole_network"]["ceiling_speedup"],
            "whole_network_binds": c["whole_network"]["binding_pipe"], "fused_one_launch_us": got.get("fused_one_launch_us"),
            "fused_speedup": got.get("one_launch_vs_one_launch"), "fused_commit": got.get("commit"),
            "figures": "modeled bound"}


def markdown(rows: list[dict]) -> str:
    out = ["| network | SoC | batch | vendor-like, one launch µs | pairs' bodies -> ceiling µs | network at the ceiling µs "
           "(speedup) | binding pipes | whole network as one kernel µs (speedup, binding pipe) | "
           "fused in one launch (speedup) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        pipes = ", ".join(f"{p} {n}" for p, n in sorted(r["binding_pipes"].items(), key=lambda x: -x[1]))
        fused = (f"{r['fused_one_launch_us']:.1f} ({r['fused_speedup']:.2f}×)" if r["fused_speedup"] else "not run")
        out.append(f"| {r['net']} | {r['soc']} | {r['batch']} | {r['vendor_one_launch_us']:.1f} | "
                   f"{r['pairs_bodies_us']:.1f} -> {r['pairs_ceiling_us']:.1f} ({r['pairs']} pairs) | "
                   f"{r['ceiling_one_launch_us']:.1f} ({r['ceiling_speedup']:.2f}×) | {pipes} | "
                   f"{r['whole_network_us']:.1f} ({r['whole_network_speedup']:.2f}×, {r['whole_network_binds']}) | {fused} |")
    out.append("")
    out.append("All figures MODELED. The ceiling is a bound on pair fusion with the vendor's own work (module doc of "
               "fusion/cost/pair_ceiling.py): a design that does less work per pipe than the vendor's kernels (another "
               "DW form), or overlaps across blocks (a chain in image chunks), or fuses more than pairs (MobileNetV2's "
               "expansion convolutions) can pass it; the fused column is `benchmarks/results/batch_table.json`'s. "
               "The whole-network column bounds every fusion of the vendor's work (the network as one kernel, every "
               "tensor between its kernels on chip, all of it perfectly overlapped, no barrier, on-chip capacity "
               "ignored): a target above it needs less work per pipe than the vendor's kernels do.")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    grid_args(ap)
    ap.add_argument("-o", "--output", default=str(ROOT / "benchmarks" / "results" / "fusion_ceiling"))
    a = ap.parse_args(argv)
    reached = {(r["net"], r["soc"], r["batch"]): r for r in json.loads(TABLE.read_text())} if TABLE.exists() else {}
    rows = [row(n, int(b), s, reached) for n in a.nets.split(",") for b in a.batches.split(",") for s in a.socs.split(",")]
    Path(a.output + ".json").write_text(json.dumps(rows, indent=1) + "\n")
    Path(a.output + ".md").write_text(markdown(rows))
    print(markdown(rows), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
