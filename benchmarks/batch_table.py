"""Batch x SoC x network table (issue 30): MobileNetV1/V2 at batch 1, 8 and 32 on ascend910b2 and
ascend310p3, fp16, default tiles (`bench --no-db`). Every figure is MODELED (the simulated target).

Columns: fused = bench's headline (fused chains + the vendor-like kernels it keeps, launched as the
vendor launches them); vendor-like per launch; vendor-like in one launch (every body + a SyncAll per
boundary); fused in one launch (fusion/report/bodies.py); the ratios. A configuration that does not compile
is reported with its one-line error, not dropped.

    PYTHONPATH=. python benchmarks/batch_table.py [--nets mobilenet_v1,mobilenet_v2] [--batches 1,8,32]
        [--socs ascend910b2,ascend310p3] [-o benchmarks/results/batch_table]
    PYTHONPATH=. python benchmarks/batch_table.py --merge A.json B.json -o benchmarks/results/batch_table
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_one(net: str, batch: int, soc: str, tmp: Path, timeout_s: int) -> dict:
    model, report = tmp / f"{net}_b{batch}.onnx", tmp / f"{net}_b{batch}_{soc}.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not model.exists():
        subprocess.run([sys.executable, "-m", "models", "build", net, "--batch", str(batch), "-o", str(model)],
                       check=True, env=env, capture_output=True, cwd=ROOT)
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "fusion.cli.main", "bench", str(model), "-t", f"sim:{soc}",
                            "--dtype", "float16", "--no-db", "--json", str(report)],
                           env=env, capture_output=True, text=True, cwd=ROOT, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"net": net, "batch": batch, "soc": soc, "error": f"bench did not finish in {timeout_s} s"}
    row = {"net": net, "batch": batch, "soc": soc, "wall_s": round(time.perf_counter() - t0, 1)}
    if p.returncode != 0:
        return {**row, "error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    r = json.loads(report.read_text())
    b = r["bodies"]
    return {**row, "fused_us": r["fused_in_vendor_network_us"], "vendor_per_launch_us": r["vendor_latency_us"],
            "vendor_one_launch_us": b["vendor_one_launch_us"], "fused_one_launch_us": b["fused_one_launch_us"],
            "vs_vendor_per_launch": r["vendor_latency_us"] / r["fused_in_vendor_network_us"],
            "vs_vendor_one_launch": b["vendor_one_launch_us"] / r["fused_in_vendor_network_us"],
            "one_launch_vs_one_launch": b["speedup"],
            "blocks_fused_body_us": b["blocks_fused_body_us"], "blocks_vendor_body_us": b["blocks_vendor_body_us"],
            "blocks_slower_than_pair": len(b["blocks_slower_than_pair"]), "blocks": len(b["blocks"]),
            "sensitivity": b.get("sensitivity"),
            "max_roofline_pct": max((k["roofline_pct_of_body"] for k in r["kernels"]), default=None),
            "avg_latency_is_headline": r["avg_latency_us"] == r["fused_in_vendor_network_us"],
            "commit": r["commit"], "figures": "MODELED"}


def markdown(rows: list[dict]) -> str:
    out = ["| network | SoC | batch | fused µs | vendor-like, a launch per kernel µs (ratio) | "
           "vendor-like, one launch µs (ratio) | fused in one launch µs (one launch vs one launch) | "
           "blocks: fused bodies / pairs' bodies µs (slower) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        head = f"| {r['net']} | {r['soc']} | {r['batch']} |"
        if "error" in r:
            out.append(f"{head} {r['error']} | | | | |")
            continue
        out.append(f"{head} {r['fused_us']:.1f} | "
                   f"{r['vendor_per_launch_us']:.1f} ({r['vs_vendor_per_launch']:.2f}×) | "
                   f"{r['vendor_one_launch_us']:.1f} ({r['vs_vendor_one_launch']:.2f}×) | "
                   f"{r['fused_one_launch_us']:.1f} ({r['one_launch_vs_one_launch']:.2f}×) | "
                   f"{r['blocks_fused_body_us']:.1f} / {r['blocks_vendor_body_us']:.1f} "
                   f"({r['blocks_slower_than_pair']} of {r['blocks']}) |")
    out.append("\nAll figures MODELED (simulated Ascend target, `bench --dtype float16 --no-db`); ratios > 1 mean "
               "fused is faster. 310P3 one-launch columns rest on the derived soft SyncAll (see the JSON's "
               "`sensitivity` at 1200 / 2400 cycles).")
    return "\n".join(out) + "\n"


def grid_args(ap: argparse.ArgumentParser) -> None:
    """The table's grid: networks x batches x SoCs (also benchmarks/fusion_ceiling.py's)."""
    ap.add_argument("--nets", default="mobilenet_v1,mobilenet_v2")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--socs", default="ascend910b2,ascend310p3")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    grid_args(ap)
    ap.add_argument("--timeout-s", type=int, default=3600)
    ap.add_argument("-o", "--output", default=str(ROOT / "benchmarks/results/batch_table"))
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="no runs: combine the rows of earlier outputs (e.g. runs split over processes)")
    a = ap.parse_args(argv)
    if a.merge:
        nets, socs = a.nets.split(","), a.socs.split(",")
        rows = [r for f in a.merge for r in json.loads(Path(f).read_text())]
        rows.sort(key=lambda r: (nets.index(r["net"]), r["batch"], socs.index(r["soc"])))
        Path(a.output + ".json").write_text(json.dumps(rows, indent=1))
        Path(a.output + ".md").write_text(markdown(rows))
        print(markdown(rows))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for net in a.nets.split(","):
            for batch in (int(x) for x in a.batches.split(",")):
                for soc in a.socs.split(","):
                    rows.append(run_one(net, batch, soc, Path(d), a.timeout_s))
                    print(json.dumps(rows[-1]), flush=True)
                    Path(a.output + ".json").write_text(json.dumps(rows, indent=1))
    Path(a.output + ".md").write_text(markdown(rows))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
