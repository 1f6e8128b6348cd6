"""int8 on Ascend, MODELED (issue 32): ORT-quantized MobileNetV1/V2 (QDQ, per-tensor and
per-channel, models/quantized.py) on ascend910b2 and ascend310p3.

Columns, all from `megafuse bench ... -t sim:SOC` (every figure MODELED by the simulated target):
  fused int8      the QDQ model's fused int8 DW->PW kernels + the vendor-like int8 kernels of every
                  other node (fusion/report/bench_int8.py)
  vendor int8     the vendor-like int8 network: one kernel per quantized conv (DW int8, conv int8,
                  requant fused), QLinearAdd, AscendQuant/AscendDequant, pool, GEMM
  fused fp16      the float model (the same fp32 build the quantizer read, BN folded) benched with
                  --dtype float16 --no-db: bench's headline (fused_in_vendor_network_us)
  vendor fp16     that report's vendor-like fp16 network

    PYTHONPATH=. python benchmarks/int8_ascend.py [-o benchmarks/results/int8_ascend]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from models.mobilenet import mobilenet_v1, mobilenet_v2  # noqa: E402
from models.quantized import quantize_qdq  # noqa: E402

NETS = {"mobilenet_v1": mobilenet_v1, "mobilenet_v2": mobilenet_v2}
SOCS = ("ascend910b2", "ascend310p3")


def bench(model: Path, soc: str, report: Path, *extra: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "fusion.cli.main", "bench", str(model), "-t", f"sim:{soc}",
                        "--json", str(report), *extra], env=env, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(report.read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default=str(ROOT / "benchmarks" / "results" / "int8_ascend"))
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for net, build in NETS.items():
            fp32 = build(seed=0, fold_bn=True)
            onnx.save(fp32, tmp / f"{net}.onnx")
            fp16 = {soc: bench(tmp / f"{net}.onnx", soc, tmp / f"{net}_{soc}.json", "--dtype", "float16", "--no-db")
                    for soc in SOCS}
            for pc in (False, True):
                name = f"{net}_int8{'_pc' if pc else ''}"
                onnx.save(quantize_qdq(fp32, per_channel=pc, seed=0), tmp / f"{name}.onnx")
                for soc in SOCS:
                    r = bench(tmp / f"{name}.onnx", soc, tmp / f"{name}_{soc}.json")
                    f = fp16[soc]
                    row = {"net": net, "weights": "per-channel" if pc else "per-tensor", "soc": soc,
                           "figures": "modeled"}
                    if "error" in r or "error" in f:
                        row["error"] = r.get("error") or f.get("error")
                    else:
                        row.update({
                            "fused_int8_us": r["fused_int8_network_us"], "vendor_int8_us": r["vendor_int8_network_us"],
                            "fused_fp16_us": f["fused_in_vendor_network_us"], "vendor_fp16_us": f["vendor_latency_us"],
                            "int8_blocks": len(r["kernels"]),
                            "int8_blocks_faster_than_vendor": sum(k["speedup_vs_vendor_int8"] > 1 for k in r["kernels"]),
                            "blocks_fused_int8_us": sum(k["fused_int8_us"] for k in r["kernels"]),
                            "blocks_vendor_int8_us": sum(k["vendor_int8_us"] for k in r["kernels"]),
                            "blocks_fused_fp16_twin_us": sum(k["fused_fp16_us"] for k in r["kernels"]),
                            "commit": r.get("commit")})
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    out = Path(args.output)
    out.with_suffix(".json").write_text(json.dumps({"figures": "modeled", "rows": rows}, indent=2) + "\n")
    lines = ["# int8 on Ascend, MODELED (benchmarks/int8_ascend.py)", "",
             "Whole model, batch 1, µs. fused int8 = fused int8 DW->PW blocks + vendor-like int8 kernels "
             "elsewhere; vendor int8 = one vendor-like kernel per layer (requant fused); fp16 columns: the "
             "float model at --dtype float16 --no-db. Blocks: the DW->PW blocks alone.", "",
             "| net | weights | SoC | fused int8 | vendor int8 | int8 fused/vendor | fused fp16 | vendor fp16 "
             "| blocks: fused int8 / vendor int8 / fused fp16 | blocks faster than vendor |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['net']} | {r['weights']} | {r['soc']} | error: {r['error']} |||||||")
            continue
        lines.append(f"| {r['net']} | {r['weights']} | {r['soc']} | {r['fused_int8_us']:.1f} | "
                     f"{r['vendor_int8_us']:.1f} | {r['vendor_int8_us'] / r['fused_int8_us']:.2f}x | "
                     f"{r['fused_fp16_us']:.1f} | {r['vendor_fp16_us']:.1f} | {r['blocks_fused_int8_us']:.1f} / "
                     f"{r['blocks_vendor_int8_us']:.1f} / {r['blocks_fused_fp16_twin_us']:.1f} | "
                     f"{r['int8_blocks_faster_than_vendor']}/{r['int8_blocks']} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
