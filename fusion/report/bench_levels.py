"""`megafuse bench MODEL --opt-level all`: the fusion levels 0-3 (fusion/core/opt_levels.py) side by side.

sim: MODELED, each level's program through bench_sim (fused blocks and chains by the cost model,
every other op step as the vendor-like kernel that runs it, a lowered program on the same step
simulator: the per-op total, `per_op_fused_latency_us`), plus the
vendor-like headline where the level has fused blocks. llvm: MEASURED, every level's whole
program and ONNX Runtime interleaved in one loop (p50 and min of the samples, the thread counts
stated); level 3 compiles to level 2's program and is timed on its own, so the two columns
show the run-to-run noise."""

from __future__ import annotations

import numpy as np

from fusion.report.bench import bench_sim
from fusion.verify.check import random_inputs
from fusion.core.errors import MegafuseError
from fusion.core.sanitize import display
from fusion.tuning.measure import interleaved, tvm_threads
from fusion.core.opt_levels import LEVELS


def bench_levels(compile_at, model_path: str, model_proto, kind: str, warmup: int = 3, samples: int = 50,
                 model=None) -> dict:
    """compile_at(level) -> CompiledModel. Returns the side-by-side report."""
    cms = {lv: compile_at(lv) for lv in LEVELS}
    rows = [{"level": lv, "kernels": len(cm.program.steps), "fused_blocks": len(cm.fused_blocks),
             "chains": len(cm.chains), "adds": LEVELS[lv].adds} for lv, cm in cms.items()]
    first = cms[0]
    report = {"model": model_path, "target": first.target.name, "dtype": first.dtype, "levels": rows}
    if kind == "sim":
        for row, cm in zip(rows, cms.values()):
            r, _ = bench_sim(cm, model_path, model)
            row.update({"latency_us": r["per_op_fused_latency_us"],
                        "vendor_headline_us": r["fused_in_vendor_network_us"] if cm.fused_blocks else None})
        report.update({"figures": "modeled", "vendor_latency_us": r["vendor_latency_us"],
                       "note": "MODELED on the simulated target: per-op totals of each level's kernels (cost model for "
                               "fused blocks and chains, vendor-like programs on the step simulator for the rest); "
                               "not a measurement"})
        return report
    if kind != "llvm":
        raise MegafuseError("bench runs on llvm (measured) or sim[:SOC] (modeled)")
    import onnxruntime as ort

    feeds = random_inputs(cms[2], seed=0)
    threads = tvm_threads()
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(model_proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
    ort_feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    runs = {f"level {lv}": (lambda cm=cm: cm.program.execute(feeds)) for lv, cm in cms.items()}
    runs["onnxruntime"] = lambda: sess.run(None, ort_feeds)
    t = interleaved(runs, warmup, samples)
    for row in rows:
        tm = t[f"level {row['level']}"]
        row.update({"latency_us": tm.p50_us, "min_us": tm.min_us, "cv": tm.cv, "noisy": tm.noisy})
    o = t["onnxruntime"]
    report.update({"figures": "measured", "threads": threads, "ort_threads": threads, "warmup": warmup,
                   "samples": samples, "onnxruntime": {"p50_us": o.p50_us, "min_us": o.min_us},
                   "note": f"MEASURED on this CPU, {threads} TVM and {threads} ORT intra-op thread(s); levels and "
                           f"ORT interleaved, p50 / min of {samples} samples after {warmup} warm-ups; a shared "
                           f"machine: compare ratios"})
    return report


def print_levels(report: dict) -> None:
    label = report["figures"].upper()
    print(f"{display(report['model'])} on {report['target']} {report['dtype']}: fusion levels side by side [{label}]"
          + (f"  threads {report['threads']}" if "threads" in report else ""))
    base = report["levels"][0]["latency_us"]
    measured = report["figures"] == "measured"
    print(f"  {'level':<6} {'kernels':>8} {'fused':>6} {'chains':>7} {'p50 us' if measured else 'us':>10} "
          f"{'min us' if measured else '':>9} {'vs 0':>6}  adds")
    for r in report["levels"]:
        extra = f"{r['min_us']:>9.0f}" if measured else f"{'':>9}"
        print(f"  {r['level']:<6} {r['kernels']:>8} {r['fused_blocks']:>6} {r['chains']:>7} {r['latency_us']:>10.1f} "
              f"{extra} {base / r['latency_us']:>5.2f}x  {r['adds']}")
    if measured:
        o = report["onnxruntime"]
        print(f"  ONNX Runtime p50 {o['p50_us']:.0f} us, min {o['min_us']:.0f} us  [measured]")
    else:
        heads = [r for r in report["levels"] if r["vendor_headline_us"] is not None]
        for r in heads:
            print(f"  level {r['level']} in the vendor-like network: {r['vendor_headline_us']:.1f} us vs vendor-like "
                  f"unfused {report['vendor_latency_us']:.1f} us  [MODELED]")
    print(f"  note: {report['note']}")


__all__ = ["bench_levels", "print_levels"]
