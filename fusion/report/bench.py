"""`megafuse bench`: fused vs unfused latency per fused block and for the whole model.

sim targets: every figure is MODELED by the cost model (fusion.cost) on the chosen SoC.
llvm: every figure is MEASURED on this CPU (3 warm-ups + 50 samples, interleaved; p50/p95/CV),
with ONNX Runtime on the same model as a peer in the same run.
The report carries what a measurement report needs (commit, model, batch, dtype, target, avg/p95
latency, throughput, memory peak, traffic ratios, per-kernel rows, modeled or measured).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import subprocess
from pathlib import Path

import numpy as np

from fusion.core.errors import MegafuseError
from fusion.frontend.onnx_import import load_graph
from fusion.cost.vendor_baseline import block_baseline, model_graph, node_kernel
from fusion.cost.vendor_layers import FREE_OPS
from fusion.cost.twophase import sync_all_us
from fusion.cost import model_block
from schedules.traffic import dma_floor_any_split_bytes, dma_floor_bytes, gemm_cores
from fusion.driver.chain import chain_cost, deferred_clip_us, member_costs
from fusion.driver.chain_local import local_members
from fusion.driver.chain_prefetch import describe_reads
from fusion.driver.fallback import is_fallback
from fusion.verify.check import random_inputs
from fusion.tuning.measure import interleaved, tvm_threads
from fusion.report.bodies import body_comparison
from fusion.verify.reference import ort_session
from fusion.core.sanitize import display

REGRESSION_LIMIT = 0.05  # bench --baseline: a latency more than 5 % above the baseline fails


def git_commit() -> str:
    try:
        root = Path(__file__).resolve().parents[2]
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _header(cm, model_path: str, mode: str) -> dict:
    batch = next(iter(cm.program.inputs.values()))[0][0] if cm.program.inputs else 1
    return {"commit": git_commit(), "model": Path(model_path).stem, "batch": int(batch), "dtype": cm.dtype,
            "target": cm.target.name, "soc": cm.target.soc.name if cm.target.kind != "llvm" else None,
            "figures": mode, "profiling_date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


# --- modeled (sim) -------------------------------------------------------------------------
def memory_or_compute(cost) -> str:
    """memory-bound | compute-bound | launch-bound: the seed's class, and for pipeline bubbles the
    class of the pipe that is busiest (MTE2/MTE3 move data, vector/cube compute)."""
    if cost.bottleneck in ("memory-bound", "launch-bound"):
        return cost.bottleneck
    if cost.bottleneck.startswith("compute-bound"):
        return "compute-bound"
    pipe = max(cost.per_pipe_us, key=cost.per_pipe_us.get)
    return "memory-bound" if pipe in ("MTE2", "MTE3") else "compute-bound"


def vendor_network(cm, model_path, model=None):
    """The vendor-like unfused baseline of the whole model (fusion/cost/vendor_baseline.py): the
    kernels an ATC-compiled network runs, modeled on the same SoC. model: the model as read once
    (fusion.frontend.onnx_import.load_once), else the file is read."""
    g = load_graph(model_path if model is None else model, {k: v[0] for k, v in cm.program.inputs.items()})
    return model_graph(g, cm.target.soc, cm.dtype)


def efficiency(cost) -> dict:
    """Roofline as efficiency: roofline time / modeled time (<= 100 %), with the launch floor
    apart so a tiny kernel reads as launch-bound rather than as far off its roofline."""
    body = cost.body_us   # not time - launch: a body at its floor reads 100 %, not 100 % + a rounding
    return {"roofline_pct": 100.0 * cost.roofline_us / cost.time_us if cost.time_us else 0.0,
            "roofline_pct_of_body": 100.0 * cost.roofline_us / body if body > 0 else 0.0,
            "launch_floor_us": cost.launch_us, "launch_pct": 100.0 * cost.launch_us / cost.time_us}


# MTE1: the L1 -> L0A/L0B loads, their own pipe on both sides (soc.MOVE_PIPE; an MTE1 stage of the programs' pipelines, fusion/cost/steps.stages_of)
PIPE_KEYS = ("MTE2", "MTE1", "vector", "cube", "MTE3", "handoff", "fill", "launch")


def _superkernel(vendor, soc, fused_us: float) -> dict:
    """The vendor-like kernels as one SuperKernel-like launch (910B only: it needs the hard
    all-core sync). CANN's SuperKernel merges a static graph's kernels into one launch with an
    all-core sync between sub-kernels; per the CANN docs it is reached from PyTorch graph mode
    (TorchAir), not from an ATC-compiled ONNX model, and on Atlas A3 (TorchAir's aclgraph mode
    also lists Atlas A2). Reported beside the headline, not instead of it: against it the fused
    network keeps only what its kernels' bodies gain."""

    if soc.coupled:
        return {}
    sk = vendor.one_launch_us(soc, sync_all_us(soc))
    return {"vendor_superkernel_us": sk, "speedup_vs_vendor_superkernel": sk / fused_us}


CUBE_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul"}


def op_kernel_row(cm, step, soc) -> dict:
    """One op step of megafuse's program (outside the fused blocks) as the vendor-like kernel that
    runs it: a lowered program on the step simulator (fusion/cost/vendor_baseline.node_kernel). MODELED."""
    node = cm.graph.node(step.name)
    k, L = node_kernel(cm.graph, node, soc, str(np.dtype(cm.dtype)))
    memory = max(k.mte2_us, k.mte3_us) >= max(k.cube_us, k.vector_us, k.mte1_us)
    return {"name": step.name, "op": node.op_type, "time_us": k.time_us, "gm_bytes": k.gm_bytes,
            "flops": 2 * L.macs if L.macs else 2 * int(np.prod(step.out_shape)),
            "unit": "cube" if node.op_type in CUBE_OPS else k.engine,
            "bound": "memory" if memory else "compute", "kernel": k.kind,
            "figures": "modeled (vendor-like program on the step simulator)"}


def _stage_split(chain, costs: dict, vendor, stages: dict, clips: dict) -> dict:
    """A chain's GEMM stages against the vendor-like kernels they replace: the stages' bodies in
    the chain -- with the relu6 clips the next blocks apply for them (clips: member -> µs,
    chain.deferred_clip_us) -- vs those kernels' bodies and launches (the chain wins the launches,
    the identity-DW copy costs body time)."""
    names = set(chain.stages)
    ks = [k for g in stages.values() if g.name in names for k in vendor.kernels_for(g.members[:1])]
    return {"stages_body_us": sum(costs[n].time_us - costs[n].launch_us for n in chain.stages)
            + sum(clips.get(n, 0.0) for n in chain.blocks),
            "stages_vendor_body_us": sum(k.body_us for k in ks),
            "stages_vendor_launch_us": sum(k.launch_us for k in ks)}


def pipe_breakdown(cost, vendor_kernels) -> dict:
    """Where the time goes, fused kernel vs its vendor-like kernels (MODELED, µs). Fused: busy time
    of each pipe on its busiest core (MTE2/MTE3 include the 910B hand-off copies), the hand-off
    DMA time per core (summed over cores / cores launched) and the launch. Vendor-like: each
    kernel's busiest-core pipe times, its pipeline fill and launch, summed over the kernels. A
    kernel's time is launch + about the max of its pipes (+ fill), so the pipe that differs most
    is the reason for the win or loss."""
    fused = {p: cost.per_pipe_us.get(p, 0.0) for p in ("MTE2", "MTE1", "vector", "cube", "MTE3")}
    fused["handoff"] = cost.dma_us_by_kind.get("handoff", 0.0) / max(1, cost.cores_used)
    fused["fill"] = max(0.0, cost.body_us - max(cost.per_pipe_us.values()))
    fused["launch"] = cost.launch_us
    vend = dict.fromkeys(PIPE_KEYS, 0.0)
    for k in vendor_kernels:
        vend["MTE2"] += k.mte2_us
        vend["MTE1"] += k.mte1_us
        vend["vector"] += k.vector_us
        vend["cube"] += k.cube_us
        vend["MTE3"] += k.mte3_us
        vend["fill"] += k.fill_us
        vend["launch"] += k.launch_us
    diff = {p: fused[p] - vend[p] for p in PIPE_KEYS}
    worst = max(diff, key=diff.get)
    best = min(diff, key=diff.get)
    return {"fused": fused, "vendor": vend, "vendor_kernels": [k.name for k in vendor_kernels],
            "fused_loses_most_on": worst if diff[worst] > 0 else None,
            "fused_gains_most_on": best if diff[best] < 0 else None, "figures": "modeled"}


def bench_sim(cm, model_path: str, model=None) -> tuple[dict, list]:
    """model: the model as read once (load_once), so the baseline is built from the bytes compiled."""
    soc = cm.target.soc
    vendor = vendor_network(cm, model_path, model)
    rows, costs = [], []
    fused_total = unfused_total = vendor_blocks = 0.0
    for b in cm.fused_blocks:
        plan, why = b.plan, b.engine_reason
        cost = model_block(plan, b.name)
        unf = block_baseline(b.workload, soc, "framework")
        costs.append((b.name, cost))
        floor = dma_floor_bytes(plan)
        any_split = (dma_floor_any_split_bytes(b.workload, gemm_cores(plan)) if not plan.two_phase else floor)
        vend = vendor.for_members(b.members)
        pipes = pipe_breakdown(cost, vendor.kernels_for(b.members))
        vendor_blocks += vend
        fused_total += cost.time_us
        unfused_total += unf.time_us
        rows.append({
            "name": b.name, "workload": b.workload.describe(), "tile": plan.tile.describe(),
            "tile_source": b.tile_source, "fused_us": cost.time_us, "vendor_us": vend,
            "speedup_vs_vendor": vend / cost.time_us, "unfused_us": unf.time_us,
            "speedup": unf.time_us / cost.time_us,
            "gm_bytes_fused": cost.gm_bytes, "gm_bytes_unfused": unf.gm_bytes,
            "gm_bytes_vendor": sum(k.gm_bytes for k in vendor.kernels_for(b.members)),
            "gm_bytes_min": cost.min_gm_bytes,
            "traffic_ratio": cost.traffic_ratio, "hbm_bytes_fused": cost.hbm_bytes,
            "hbm_traffic_ratio": cost.hbm_traffic_ratio,
            "dma_floor_bytes": floor, "dma_floor_ratio": floor / cost.min_gm_bytes,
            "dma_floor_any_split_ratio": any_split / cost.min_gm_bytes,
            "cores": plan.cores,
            "l2_hit_bytes": cost.l2_hit_bytes, "ub_bytes_used": plan.ub_bytes,
            "ub_bytes_available": soc.ub_usable_bytes, "engine": dict(cost.engine), "engine_reason": why,
            "bottleneck": cost.bottleneck, "bottleneck_detail": cost.bottleneck_detail,
            "bound": memory_or_compute(cost),
            "roofline_us": cost.roofline_us, **efficiency(cost),
            "unfused_kernels": len(unf.kernels), "pipes_us": pipes, "figures": "modeled"})
    stages = cm.chain_stages
    # in a chain every member runs its chain plan (fusion/chain.chain_plans); launched on its own,
    # a block runs its standalone plan and a GEMM stage the vendor-like kernels it replaces
    by_name = {n: k for c in cm.chains for n, k in member_costs(c, cm.chain_plans).items()}
    stage_vendor = {g.name: vendor.for_members(g.members[:1]) for g in stages.values()}
    alone = {**{n: c.time_us for n, c in costs}, **stage_vendor}
    chains = [chain_cost(c, by_name, soc, alone, local_members(c, cm.chain_plans), cm.chain_plans) for c in cm.chains]
    # a chain member pays its body and one SyncAll instead of a launch: that against its pair (none
    # where the member after it follows on the same cores, fusion/driver/chain_local.py)
    # a block that clips its x for the GEMM stage before it (chain.defer_clips) does that stage's
    # work: its body below is its own, the clip counts with the stages (_stage_split)
    clips = {}
    for r in rows:
        c = next((c for c in cm.chains if r["name"] in c.blocks), None)
        if c is not None:
            k = by_name[r["name"]]
            i = c.blocks.index(r["name"])
            local = i + 1 < len(c.blocks) and cm.chain_plans[c.blocks[i + 1]].local_in
            sync = 0.0 if local else sync_all_us(soc)
            clips[r["name"]] = clip = deferred_clip_us(c, i, cm.chain_plans[r["name"]], k)
            body = k.time_us - k.launch_us - clip
            r.update({"chain": c.name, "in_chain_body_us": body, "in_chain_clip_us": clip, "in_chain_sync_us": sync,
                      "in_chain_us": body + sync, "in_chain_speedup_vs_vendor": r["vendor_us"] / (body + sync)})
    saved = sum(c.saved_us for c in chains)
    unchained_total = fused_total
    # a chain's GEMM stages replace their vendor kernels: the chain's time holds them
    fused_total += sum(stage_vendor.values()) - saved
    # the per-op column: megafuse's own program, every op step outside the fused blocks (and the
    # chains' GEMM stages) as the vendor-like kernel that runs it
    stage_steps = {s for g in stages.values() for s in g.steps}
    # views (Flatten, Reshape, ...) launch no kernel, as layers_from_graph has it
    op_costs = [op_kernel_row(cm, st, soc) for st in cm.program.steps
                if st.kind == "op" and cm.graph.node(st.name).op_type not in FREE_OPS]
    others = [o for o in op_costs if o["name"] not in stage_steps]
    other_us = sum(o["time_us"] for o in others)
    stage_other_us = sum(o["time_us"] for o in op_costs if o["name"] in stage_steps)
    total_f, total_u = fused_total + other_us, unfused_total + other_us + stage_other_us
    report = _header(cm, model_path, "modeled")
    # headline: the fused blocks replace their vendor kernels, everything else runs as the vendor runs it
    fused_in_vendor = fused_total + vendor.time_us - vendor_blocks - sum(stage_vendor.values())
    report.update({
        "vendor_latency_us": vendor.time_us, "fused_in_vendor_network_us": fused_in_vendor,
        "speedup_vs_vendor": vendor.time_us / fused_in_vendor, "vendor_blocks_us": vendor_blocks,
        "vendor_kernels": len(vendor.kernels), "vendor_launch_us": vendor.launch_us,
        **_superkernel(vendor, soc, fused_in_vendor),
        "chains": [{**c.to_json(), **_stage_split(c.chain, by_name, vendor, stages, clips),
                    "read_ahead": describe_reads(c.chain.blocks, cm.chain_plans),
                    "local_dw": [n for n in c.chain.blocks if cm.chain_plans[n].local_dw]} for c in chains],
        "chain_saved_us": saved,
        "fused_unchained_in_vendor_network_us": unchained_total + vendor.time_us - vendor_blocks,
        "baseline_note": "headline = vendor-like unfused baseline (what an ATC-compiled network runs: conv+BN+act "
                         "per kernel, DW with its act, PW on the cube with a Fixpipe epilogue, TransData at the "
                         "format boundaries; fusion/cost/vendor_baseline.py) vs the same network with the fused "
                         "blocks; 'unfused_*' / 'speedup' = the per-op framework baseline (each fused block's DW, BN, "
                         "act, PW, BN, act [, Add] as separate kernels, megafuse's other op steps one kernel each), a "
                         "second column; every kernel of every column is a vendor-like lowered program timed by the "
                         "step simulator",
        # the report template's latency fields carry the headline (a CI gate reads them); the per-op
        # framework column's fused total is its own field
        "avg_latency_us": fused_in_vendor, "p95_latency_us": fused_in_vendor,
        "avg_latency_ms": fused_in_vendor / 1e3, "p95_latency_ms": fused_in_vendor / 1e3,
        "throughput_fps": report["batch"] * 1e6 / fused_in_vendor, "latency_is": "fused_in_vendor_network_us",
        "per_op_fused_latency_us": total_f, "unfused_latency_us": total_u,
        "speedup": total_u / total_f, "fused_blocks_us": fused_total, "unfused_blocks_us": unfused_total,
        "other_kernels_us": other_us, "other_kernels": others,
        "memory_peak_mb": cm.program.peak_bytes() / 2**20,
        "gm_bytes_fused": sum(r["gm_bytes_fused"] for r in rows),
        "gm_bytes_unfused": sum(r["gm_bytes_unfused"] for r in rows),
        "gm_bytes_min": sum(r["gm_bytes_min"] for r in rows),
        "hbm_bytes_fused": sum(r["hbm_bytes_fused"] for r in rows),
        "kernels": rows,
        "note": "modeled on the simulated Ascend target: lowered programs on the step simulator, not a measurement; "
                "the kernels outside the fused blocks and chains are the same in the fused and unfused totals",
    })
    report["traffic_ratio_fused"] = report["gm_bytes_fused"] / max(report["gm_bytes_min"], 1)
    report["traffic_ratio_unfused"] = report["gm_bytes_unfused"] / max(report["gm_bytes_min"], 1)
    report["hbm_traffic_ratio_fused"] = report["hbm_bytes_fused"] / max(report["gm_bytes_min"], 1)
    report["traffic_note"] = ("gm_bytes = bytes moved by the DMA engines (MTE2/MTE3); hbm_bytes = what reaches HBM "
                              "when re-reads hit L2 (working set within L2; a kernel boundary flushes L2; the "
                              "unfused programs let a kernel read its predecessor's output from L2, so their HBM "
                              "bytes are not comparable and not reported); "
                              "dma_floor_bytes = (two-phase blocks: the minimal bytes plus one write and one read of the DW "
                              "result through the workspace) the least DMA volume of any fused plan on the same number of "
                              "cores (every core loads all PW weights); dma_floor_any_split = the least DMA volume "
                              "of any equal split of the outputs over that many cores (schedules/traffic.py)")
    report["bodies"] = body_comparison(cm, vendor, rows, chains, by_name, dict(costs), stages)
    report["max_dma_ratio"] = getattr(cm, "max_dma_ratio", None)
    report["fallback_blocks"] = [r.to_json() for r in cm.refusals if is_fallback(r)]
    return report, costs


# --- measured (llvm) ----------------------------------------------------------------------
def bench_llvm(cm, cm_unfused, model_proto, model_path: str, warmup: int = 3, samples: int = 50) -> tuple[dict, list]:
    import onnxruntime as ort


    feeds = random_inputs(cm, seed=0)
    env_f = cm.program.execute(feeds)
    env_u = cm_unfused.program.execute(feeds)
    threads = tvm_threads()
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    # ORT's idle workers spin by default and would steal the cores from the TVM kernels that
    # run next in the interleaved loop; TVM's are set not to (measure.no_spin, before the process's
    # first parallel TVM call).
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort_session(model_proto, so)   # external data already read from the model's folder
    ort_feeds = {k: v.astype(np.float32) for k, v in feeds.items()}

    rows = []
    steps_u = {st.name: st for st in cm_unfused.program.steps}
    for b in cm.fused_blocks:
        fst = next(st for st in cm.program.steps if st.name == b.name)
        members = [steps_u[m] for m in b.members if m in steps_u]
        fargs = cm.program.step_args(env_f, fst)
        uargs = [(st, cm_unfused.program.step_args(env_u, st)) for st in members]
        t = interleaved({
            "fused": lambda: fst.func(*fargs),
            "unfused": lambda: [st.func(*a) for st, a in uargs],
        }, warmup, samples)
        rows.append({"name": b.name, "workload": b.workload.describe(), "tile": b.plan.tile.describe(),
                     "tile_source": b.tile_source, "fused_us": t["fused"].p50_us,
                     "unfused_us": t["unfused"].p50_us, "speedup": t["unfused"].p50_us / t["fused"].p50_us,
                     "fused": t["fused"].as_dict(), "unfused": t["unfused"].as_dict(),
                     "unfused_kernels": len(members), "figures": "measured"})
    whole = interleaved({
        "fused": lambda: cm.program.execute(feeds),
        "unfused": lambda: cm_unfused.program.execute(feeds),
        "onnxruntime": lambda: sess.run(None, ort_feeds),
    }, warmup, samples)
    f = whole["fused"]
    report = _header(cm, model_path, "measured")
    report.update({
        "threads": threads, "ort_threads": threads, "warmup": warmup, "samples": samples,
        "avg_latency_us": f.mean_us, "p95_latency_us": f.p95_us, "avg_latency_ms": f.mean_us / 1e3,
        "p95_latency_ms": f.p95_us / 1e3, "throughput_fps": report["batch"] * 1e6 / f.p50_us,
        "fused": f.as_dict(), "unfused": whole["unfused"].as_dict(), "onnxruntime": whole["onnxruntime"].as_dict(),
        "speedup": whole["unfused"].p50_us / f.p50_us, "vs_onnxruntime": whole["onnxruntime"].p50_us / f.p50_us,
        "memory_peak_mb": cm.program.peak_bytes() / 2**20, "kernels": rows,
        "note": f"measured on this CPU with {threads} TVM thread(s) and {threads} ORT intra-op thread(s); "
                f"interleaved, p50 of {samples} samples after {warmup} warm-ups; machine is shared: "
                f"compare ratios, not absolute times",
    })
    return report, []


# --- baseline comparison ------------------------------------------------------------------
# A baseline is comparable only when it benched the same thing: these header fields, where both
# reports have them, must agree (an older report without one is compared on the rest); another model
# name only warns (baseline_note): a renamed or re-exported model is what a regression gate compares.
SAME_FIELDS = ("dtype", "target", "batch")
HEADER_FIELDS = ("model",) + SAME_FIELDS   # what run_header reads and the schema types
MIN_BASELINE_US = 1e-3   # nothing runs in under a nanosecond: a smaller baseline latency is a corrupt report


def compare_baseline(report: dict, baseline: dict, limit: float = REGRESSION_LIMIT) -> list[str]:
    """Latencies more than `limit` worse than the baseline (whole model and per kernel)."""
    bad = []

    def check(label, new, old):
        if old is not None and new > old * (1 + limit):
            bad.append(f"{label}: {new:.2f} us vs baseline {old:.2f} us ({_worse(new / old)})")

    check("model avg_latency", report["avg_latency_us"], baseline.get("avg_latency_us"))
    check("model p95_latency", report["p95_latency_us"], baseline.get("p95_latency_us"))
    old_rows = {r["name"]: r for r in baseline.get("kernels", [])}
    for r in report["kernels"]:
        if r["name"] in old_rows:
            check(f"{display(r['name'])} fused", r["fused_us"], old_rows[r["name"]].get("fused_us"))
    return bad


def _worse(ratio: float) -> str:
    """+12.3 % for a modest regression; 40x rather than +3900.0 % for a large one."""
    return f"+{(ratio - 1) * 100:.1f} %" if ratio < 10 else f"{ratio:.3g}x"


def baseline_mismatch(header: dict, baseline: dict) -> str | None:
    """Why `baseline` is not a report of what `header` (this run's _header) benches, or None: another
    dtype, target or batch (SAME_FIELDS)."""
    for key in SAME_FIELDS:
        if key in header and key in baseline and baseline[key] != header[key]:
            return (f"it benched {key} {_shown(baseline[key])}, this run {key} {_shown(header[key])}: "
                    f"compare reports of the same dtype, target and batch")
    return None


def baseline_note(header: dict, baseline: dict) -> str | None:
    """The warning when `baseline` names another model (its file's stem), or None."""
    if "model" in header and "model" in baseline and baseline["model"] != header["model"]:
        return f"--baseline benched model {_shown(baseline['model'])}, this run {_shown(header['model'])}"
    return None


def run_header(cm, model_path: str) -> dict:
    """The fields of this run's report that identify what it benches (checked before the work)."""
    return {k: v for k, v in _header(cm, model_path, "").items() if k in HEADER_FIELDS}


def _shown(value) -> str:
    return display(json.dumps(value, ensure_ascii=False), 60)


def load_report(path: str) -> dict:
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise MegafuseError(f"baseline report '{display(path)}' not found") from None
    except (OSError, ValueError) as e:
        raise MegafuseError(f"baseline report '{display(path)}' is not readable JSON ({display(e)})") from None
    if not isinstance(doc, dict) or "avg_latency_us" not in doc or "kernels" not in doc:
        raise MegafuseError(f"baseline report '{display(path)}' is not a megafuse bench report")
    why = _baseline_schema_error(doc)
    if why:
        raise MegafuseError(f"baseline report '{display(path)}': {why}")
    return doc


def _latency(v) -> bool:
    """A baseline latency: a finite number >= MIN_BASELINE_US (never coerced: "fast", true, NaN are
    not; 0 would make every run pass, 1e-300 every run fail by a 300-digit percentage)."""
    return type(v) in (int, float) and math.isfinite(v) and v >= MIN_BASELINE_US


def _baseline_schema_error(doc: dict) -> str | None:
    """The fields compare_baseline reads, by schema: None when they hold, else the first that does not."""
    need = f"a finite number of at least {MIN_BASELINE_US:g} us"
    for key in ("avg_latency_us", "p95_latency_us"):
        if (key in doc or key == "avg_latency_us") and not _latency(doc.get(key)):
            return f"'{key}' must be {need}, got {_shown(doc.get(key))}"
    for key in HEADER_FIELDS:
        if key in doc and type(doc[key]) is not (int if key == "batch" else str):
            return f"'{key}' must be {'an integer' if key == 'batch' else 'a string'}, got {_shown(doc[key])}"
    if not isinstance(doc["kernels"], list):
        return "'kernels' must be a list"
    for i, r in enumerate(doc["kernels"]):
        if not isinstance(r, dict) or type(r.get("name")) is not str:
            return f"kernels[{i}] must be an object with a string 'name'"
        if "fused_us" in r and not _latency(r["fused_us"]):
            return f"kernels[{i}].fused_us must be {need}, got {_shown(r['fused_us'])}"
    return None


# --- plot ---------------------------------------------------------------------------------
def check_plot_format(path: str) -> None:
    """The --plot suffix names a format matplotlib writes (checked before the work; no suffix: PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fmt = Path(path).suffix[1:].lower()
    known = FigureCanvasAgg.get_supported_filetypes()
    if fmt and fmt not in known:
        raise MegafuseError(f"--plot '{display(path)}': unknown image format '{display(fmt)}' "
                            f"(one of {', '.join(sorted(known))})")


def plot_report(report: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["kernels"]
    names = [r["name"] for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows) + 2), 4.5))
    ax.bar(x - 0.2, [r["unfused_us"] for r in rows], 0.4, label="unfused", color="#c44e52")
    ax.bar(x + 0.2, [r["fused_us"] for r in rows], 0.4, label="fused", color="#4c72b0")
    for i, r in enumerate(rows):
        ax.text(x[i], max(r["fused_us"], r["unfused_us"]), f"{r['speedup']:.2f}x", ha="center",
                va="bottom", fontsize=7)
    ax.set_xticks(x, names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("latency (µs, " + report["figures"] + ")")
    ax.set_title(f"{report['model']} on {report['target']} ({report['dtype']}): fused vs unfused per block")
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise MegafuseError(f"cannot write --plot '{display(path)}': {e.strerror}") from None
    finally:
        plt.close(fig)
