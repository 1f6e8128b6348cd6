"""int8 MobileNetV2 on this CPU: megafuse fused int8 vs megafuse unfused int8 vs ONNX Runtime's
int8 kernels on the same QDQ model (MEASURED).

  python benchmarks/int8_cpu.py                      # MobileNetV2 per-channel and per-tensor, 2 threads
  python benchmarks/int8_cpu.py --samples 5 --models v2_pc   # a quick look

224x224, batch 1, the models of models/quantized.py (ORT quantize_static, QDQ, uint8 activations,
seed 0). ORT runs with intra_op_num_threads = --threads, no spinning, and
session.qdqisint8allowed=1 (the reference `check` uses; for these uint8 models ORT fuses its
QLinearConvs either way). megafuse runs with TVM_NUM_THREADS = --threads (set before TVM loads).
The three are interleaved (A, B, C, A, B, C, ...) after a warm-up; each sample is one whole
inference; medians and minimums are reported. Every run first checks that the fused output is
bit-identical to ORT's on the benchmark input. Writes benchmarks/results/int8_cpu.json and .md.
The machine may be shared: compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"
MODELS = {"v2_pc": dict(per_channel=True), "v2_pt": dict(per_channel=False)}


def _build(key: str) -> bytes:
    from models.quantized import mobilenet_v2_int8

    return mobilenet_v2_int8(**MODELS[key]).SerializeToString()


def build_model(key: str):
    """In a child process: the quantizer's calibration session (ORT threads) must not share this
    process with the timed runs."""
    import multiprocessing as mp

    import onnx

    with mp.get_context("spawn").Pool(1) as pool:
        return onnx.load_from_string(pool.apply(_build, (key,)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--out", default=str(RESULTS / "int8_cpu.json"))
    args = ap.parse_args(argv)
    os.environ["TVM_NUM_THREADS"] = str(args.threads)

    import logging

    import numpy as np
    import onnxruntime as ort

    from fusion.driver.compiler import compile_model
    from fusion.verify.reference import QDQ_CONFIG
    logging.getLogger().setLevel(logging.ERROR)
    rows = []
    for key in args.models.split(","):
        model = build_model(key)
        fused = compile_model(model, target="llvm")
        unfused = compile_model(model, target="llvm", fuse=False)
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads, so.log_severity_level = args.threads, 1, 3
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        for k, v in QDQ_CONFIG.items():
            so.add_session_config_entry(k, v)
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
        name = sess.get_outputs()[0].name
        ref = sess.run(None, {"x": x})[0]
        exact = bool(np.array_equal(fused.run({"x": x})[name], ref))
        runs = {"fused": lambda: fused.run({"x": x}), "unfused": lambda: unfused.run({"x": x}),
                "ort": lambda: sess.run(None, {"x": x})}
        times: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(3):
            for f in runs.values():
                f()
        for _ in range(args.samples):
            for k, f in runs.items():
                t0 = time.perf_counter()
                f()
                times[k].append((time.perf_counter() - t0) * 1e3)
        stat = {k: {"median_ms": float(np.median(v)), "min_ms": float(min(v))} for k, v in times.items()}
        # on a loaded machine a whole run is preempted many times: also the sum over the fused
        # program's kernels of each kernel's minimum over the samples (what the kernels cost)
        kmin: dict[str, float] = {}
        for _ in range(args.samples):
            for st, (f, fargs) in zip(fused.program.steps, fused.program._calls):
                t0 = time.perf_counter()
                f(*fargs)
                kmin[st.name] = min(kmin.get(st.name, 1e9), (time.perf_counter() - t0) * 1e3)
        stat["fused"]["kernel_min_sum_ms"] = sum(kmin.values())
        rows.append({"model": f"mobilenet_v2_int8 ({'per-channel' if MODELS[key]['per_channel'] else 'per-tensor'})",
                     "fused_blocks": len(fused.int8_blocks), "bit_identical_to_ort": exact, **stat,
                     "fused_vs_ort_median": stat["ort"]["median_ms"] / stat["fused"]["median_ms"],
                     "fused_vs_unfused_median": stat["unfused"]["median_ms"] / stat["fused"]["median_ms"]})
        print(json.dumps(rows[-1]))
    doc = {"what": "MEASURED whole-model latency, batch 1, 224x224, uint8 activations / int8 weights",
           "threads": args.threads, "samples": args.samples, "interleaved": True,
           "cpu": platform.processor() or platform.machine(), "onnxruntime": ort.__version__,
           "rows": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    lines = [f"# int8 MobileNetV2 on CPU (MEASURED, {args.threads} threads, {args.samples} interleaved samples)",
             "", "| model | fused int8 p50 / min ms | unfused int8 p50 / min ms | ORT int8 p50 / min ms | "
             "ORT / fused (p50) | fused: sum of kernel minima ms | bit-identical to ORT |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['fused']['median_ms']:.2f} / {r['fused']['min_ms']:.2f} | "
                     f"{r['unfused']['median_ms']:.2f} / {r['unfused']['min_ms']:.2f} | "
                     f"{r['ort']['median_ms']:.2f} / {r['ort']['min_ms']:.2f} | "
                     f"{r['fused_vs_ort_median']:.2f}x | {r['fused']['kernel_min_sum_ms']:.2f} | "
                     f"{r['bit_identical_to_ort']} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
