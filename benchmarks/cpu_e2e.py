"""MobileNetV1/V2 end to end on this CPU: megafuse fused vs megafuse unfused vs ONNX Runtime.

  python benchmarks/cpu_e2e.py                         # both models, 1 and 2 threads, 30 samples
  python benchmarks/cpu_e2e.py --samples 10 --models mobilenet_v1 --threads 2   # a quick look

224×224, batch 1, fp32. Each thread count runs in its own process (TVM's pool size is fixed at
start-up; the tiles are planned for it). In that process: the machine's limits are MEASURED
(fusion/cpu_limits: FMA peak with a register-resident FMA kernel, DRAM bandwidth with a
parallel streaming copy), then per model `fusion.report.bench.bench_llvm` measures, interleaved
(A, B, C, A, B, C, ...), the whole model fused / unfused / ORT (same thread count, no spinning)
and every fused block against its unfused kernels; ORT's profiler gives its time for the same
block (its kernels for the block's nodes, minimum over the runs). Per block the roofline is
max(FLOPs / FMA peak, minimal bytes / DRAM bandwidth), minimal bytes = input + weights +
output once; `roofline_pct` = roofline / measured (p50 and min). Outside the blocks: every
non-fused step of the fused program timed alone, grouped (stem, 1×1 expansion convs, separate
activations, layout conversions, head), against ORT's nodes outside the blocks. Writes
benchmarks/results/cpu_e2e.json. The machine may be shared: compare the ratios within a run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from fusion.verify.reference import ort_session  # noqa: E402  (after the path setup)

RESULTS = ROOT / "benchmarks" / "results"
MODELS = ("mobilenet_v1", "mobilenet_v2")


def block_min_bytes(wl) -> int:
    """Input + DW and PW weights and biases + output, each once."""
    import numpy as np

    item = np.dtype(wl.dtype).itemsize
    kh, kw = wl.kernel
    elems = (wl.batch * wl.cin * wl.height * wl.width + wl.cin * kh * kw + wl.cin * wl.cout
             + wl.batch * wl.cout * wl.out_height * wl.out_width * (2 if wl.residual else 1))
    return elems * item + (wl.cin + wl.cout) * 4


def ort_node_min_us(model_proto, feeds: dict, threads: int, runs: int) -> dict[str, float]:
    """ONNX Runtime's own per-node kernel times (its profiler), the minimum over `runs` runs, by
    the name of the ONNX node each kernel came from (ORT suffixes its NCHWc rewrites '_nchwc';
    a Conv fused with its BN or activation carries that node's name)."""
    import collections

    import numpy as np
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.enable_profiling = True
    with tempfile.TemporaryDirectory() as d:
        so.profile_file_prefix = str(Path(d) / "ort")
        sess = ort_session(model_proto, so)   # self-contained models only (fusion.verify.reference)
        feeds = {k: np.asarray(v, np.float32) for k, v in feeds.items()}
        for _ in range(runs):
            sess.run(None, feeds)
        events = json.loads(Path(sess.end_profiling()).read_text())
    per = collections.defaultdict(list)
    for e in events:
        name = e.get("name", "")
        if e.get("cat") == "Node" and name.endswith("_kernel_time"):
            per[name[: -len("_kernel_time")].removesuffix("_nchwc")].append(float(e["dur"]))
    return {k: min(v) for k, v in per.items()}


def op_group(name: str) -> str:
    """What an unfused step of the fused program is, from its step name (the lowering's naming)."""
    if name.startswith(("tonc1hwc0", "tonchw")):
        return "layout conversion"
    if name.endswith("_act"):
        return "separate activation"
    if name.endswith("_exp"):
        return "1x1 expansion conv"
    if name.startswith("stem"):
        return "stem conv"
    return "head (pool, flatten, fc, head conv)"


def op_steps_min_us(compiled, feeds: dict, runs: int) -> dict[str, float]:
    """Each non-fused step of the fused program alone, in program order, minimum over `runs`
    whole-program passes: the part of the end-to-end time outside the fused blocks."""
    import time

    prog = compiled.program
    prog.execute(feeds)  # binds the buffers and argument lists once
    best: dict[str, float] = {}
    for _ in range(runs):
        for st, (fn, a) in zip(prog.steps, prog._calls):
            t0 = time.perf_counter()
            fn(*a)
            dt = (time.perf_counter() - t0) * 1e6
            if st.kind != "fused":
                best[st.name] = min(best.get(st.name, dt), dt)
    return best


def worker(args) -> dict:
    import models
    from fusion.report.bench import bench_llvm
    from schedules.cpu_limits import dram_gbps, fma_peak_gflops
    from fusion.driver.compiler import compile_model
    from schedules.cpu_tile import read_caches

    threads = int(os.environ["TVM_NUM_THREADS"])
    out = {"threads": threads, "models": {}}
    tuned = None
    if args.db:
        from fusion.tuning.db import TunedTiles, TuningDB
        tuned = TunedTiles(TuningDB(args.db).load())
    caches = read_caches()
    out["caches"] = {"l1d": caches.l1d, "l2": caches.l2, "l3": caches.l3}
    reports = {}
    for name in args.models:
        m = models.build(name)
        fused = compile_model(m, target="llvm", tuned_tiles=tuned)
        unfused = compile_model(m, target="llvm", fuse=False)
        reports[name] = (fused, bench_llvm(fused, unfused, m, name, warmup=args.warmup, samples=args.samples)[0])
    # the limits, measured before and after the models, best of both: a neighbour that slows one
    # measurement down would otherwise lower the peak and inflate every percentage
    # and never below `threads` times one core's peak: on a shared VM a neighbour often holds the
    # other core while the T-thread peak is measured (it then reads as one core's, and every
    # T-thread percentage above 100 %)
    peak_t = max(fma_peak_gflops(threads), fma_peak_gflops(threads))
    peak_1 = max(fma_peak_gflops(1), fma_peak_gflops(1))
    peak = max(peak_t, threads * peak_1)
    bw = max(dram_gbps(), dram_gbps())
    out.update({"fma_peak_gflops": peak, "fma_peak_threads_measured": peak_t, "fma_peak_1thread": peak_1,
                "dram_gbps": bw,
                "limits_note": "measured by schedules/cpu_limits.py in this process, best of two runs; the FMA peak "
                               "is max(T-thread peak, T x 1-thread peak)"})
    for name, (fused, rep) in reports.items():
        from fusion.verify.check import random_inputs
        ort_nodes = ort_node_min_us(models.build(name), random_inputs(fused, seed=0), threads, args.samples)
        members = {b.name: set(b.members) for b in fused.fused_blocks}
        claimed = set()
        for row in rep["kernels"]:
            # BN is folded in both: ORT names a Conv+BN kernel after the BN node ('b3_pw_bn')
            mine = [n for n in ort_nodes if {n, n.removesuffix("_bn")} & members[row["name"]]]
            claimed.update(mine)
            row["ort_block_min_us"] = sum(ort_nodes[n] for n in mine) if mine else None
            row["fused_vs_ort_block_min"] = (row["fused"]["min_us"] / row["ort_block_min_us"]
                                             if row["ort_block_min_us"] else None)
        ops = op_steps_min_us(fused, random_inputs(fused, seed=0), args.samples)
        groups: dict[str, float] = {}
        for n, us in ops.items():
            groups[op_group(n)] = groups.get(op_group(n), 0.0) + us
        rep["outside_blocks"] = {
            "fused_program_min_us": sum(ops.values()), "by_group_min_us": groups, "steps_min_us": ops,
            "ort_min_us": sum(v for k, v in ort_nodes.items() if k not in claimed),
            "note": "megafuse's non-fused steps of the fused program, each timed alone (min over the runs), vs "
                    "ORT's profiler time of the nodes outside the fused blocks"}
        rep["ort_profile"] = {"nodes_min_us": ort_nodes,
                              "outside_blocks_min_us": sum(v for k, v in ort_nodes.items() if k not in claimed),
                              "note": "ORT's profiler, per-node minimum over the runs; a block's ORT time is the "
                                      "sum over the ORT kernels of its member nodes"}
        blocks = {b.name: b for b in fused.fused_blocks}
        for row in rep["kernels"]:
            wl = blocks[row["name"]].workload
            flops, nbytes = wl.flops, block_min_bytes(wl)
            t_c, t_m = flops / peak / 1e3, nbytes / bw / 1e3
            roof = max(t_c, t_m)
            row.update({"flops": flops, "min_bytes": nbytes, "roofline_us": roof,
                        "bound": "compute" if t_c >= t_m else "memory",
                        "roofline_pct_p50": 100 * roof / row["fused"]["p50_us"],
                        "roofline_pct_min": 100 * roof / row["fused"]["min_us"],
                        "gflops_p50": flops / row["fused"]["p50_us"] / 1e3})
        ort = rep["onnxruntime"]
        rep["fused_vs_ort_p50"] = rep["fused"]["p50_us"] / ort["p50_us"]
        rep["fused_vs_ort_min"] = rep["fused"]["min_us"] / ort["min_us"]
        rep["unfused_vs_ort_p50"] = rep["unfused"]["p50_us"] / ort["p50_us"]
        rep["unfused_vs_ort_min"] = rep["unfused"]["min_us"] / ort["min_us"]
        rep["tiles"] = {b.name: f"{b.plan.tile.describe()} [{b.tile_source}]" for b in fused.fused_blocks}
        # above 100 % a block beat the measured limit: the limit's measurement was disturbed
        rep["limits_suspect"] = any(r["roofline_pct_min"] > 100 for r in rep["kernels"])
        out["models"][name] = rep
    return out


def _summary(res: dict) -> list[str]:
    lines = []
    for run in res["runs"]:
        lines.append(f"{run['threads']} thread(s): FMA peak {run['fma_peak_gflops']:.0f} GFLOP/s, "
                     f"DRAM {run['dram_gbps']:.1f} GB/s (measured)")
        for name, rep in run["models"].items():
            lines.append(
                f"  {name}: fused {rep['fused']['p50_us'] / 1e3:.2f} ms, unfused {rep['unfused']['p50_us'] / 1e3:.2f} ms, "
                f"ORT {rep['onnxruntime']['p50_us'] / 1e3:.2f} ms (p50); fused/ORT {rep['fused_vs_ort_p50']:.2f}x p50 "
                f"{rep['fused_vs_ort_min']:.2f}x min; unfused/ORT {rep['unfused_vs_ort_p50']:.2f}x p50 "
                f"{rep['unfused_vs_ort_min']:.2f}x min")
            if rep["limits_suspect"]:
                lines.append("    (some block beat the measured limit: the limits were measured while the machine "
                             "was busy; the percentages are not reliable)")
            ob = rep.get("outside_blocks")
            if ob:
                lines.append(f"    outside the fused blocks (min): megafuse {ob['fused_program_min_us']:.0f} us ("
                             + ", ".join(f"{k} {v:.0f}" for k, v in sorted(ob["by_group_min_us"].items(),
                                                                          key=lambda kv: -kv[1]))
                             + f"), ORT {ob['ort_min_us']:.0f} us")
            for r in rep["kernels"]:
                ort_b = r.get("ort_block_min_us")
                lines.append(f"    {r['name']:<10} {r['workload']:<38} fused {r['fused_us']:8.1f} us  unfused "
                             f"{r['unfused_us']:8.1f} us  ORT kernels (min) "
                             f"{(f'{ort_b:8.1f}' if ort_b else '     -  ')} us  {r['gflops_p50']:6.1f} GFLOP/s  "
                             f"{r['roofline_pct_p50']:5.1f} % of {r['bound']} roofline (p50), "
                             f"{r['roofline_pct_min']:5.1f} % (min)")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=lambda s: s.split(","), default=list(MODELS))
    ap.add_argument("--threads", type=lambda s: [int(v) for v in s.split(",")], default=[1, 2])
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--db", help="tuning database whose tiles the fused compile uses (default: default tiles)")
    ap.add_argument("--out", default=str(RESULTS / "cpu_e2e.json"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        Path(args.worker_out).write_text(json.dumps(worker(args)))
        return 0

    from fusion.report.bench import git_commit

    from fusion.tuning.measure import NO_SPIN_ENV

    runs = []
    for t in args.threads:
        with tempfile.TemporaryDirectory() as d:
            dst = Path(d) / "run.json"
            cmd = [sys.executable, __file__, "--worker", "--worker-out", str(dst), "--models", ",".join(args.models),
                   "--samples", str(args.samples), "--warmup", str(args.warmup)] + (["--db", args.db] if args.db else [])
            # neither TVM's nor ORT's pool spins between the interleaved runs (fusion/measure.no_spin)
            env = {**NO_SPIN_ENV, **os.environ, "TVM_NUM_THREADS": str(t), "PYTHONPATH": str(ROOT)}
            subprocess.run(cmd, env=env, check=True)
            runs.append(json.loads(dst.read_text()))
    res = {"commit": git_commit(), "command": " ".join(["python", "benchmarks/cpu_e2e.py"] + (argv or sys.argv[1:])),
           "machine": {"cpu": _cpu_name(), "python": platform.python_version(), "cpus": os.cpu_count()},
           "figures": "measured", "runs": runs}
    res["summary"] = _summary(res)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1))
    print("\n".join(res["summary"]))
    print(f"wrote {args.out}")
    return 0


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


if __name__ == "__main__":
    sys.exit(main())
