"""`megafuse check -t ascend[:SOC]`: every fused block's generated Ascend C kernel, built with g++
against the host emulation (fusion/emu), run on the same inputs as ONNX Runtime.

For each fused block, in program order, the emulated kernel gets the block's inputs as the model
run produces them (NC1HWC0, the storage dtype), and its output is compared with the CPU (TVM)
kernel of the block on the same inputs; the emulated output then feeds the rest of the model. The
model's outputs (every fused block emulated, the other ops on the CPU) are compared with ONNX
Runtime on the original model (or, without a model, with the CPU program). Errors follow
fusion/verify/check.py: max_rel = max|y - ref| / max|ref|.

Per block the report carries the emulator counters (GM bytes read/written, DMA transfers, vector
instructions/repeats, cube fractals) next to the cost model's GM bytes for the same plan.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np
import tvm

from fusion.verify.check import CheckResult, OutputError, compare, fp32_tolerance, ort_reference, random_inputs
from fusion.core.tolerance import TOLERANCE
from fusion.verify.fp32_bound import fp32_rounding_shift
from schedules.activations import needs_slope
from schedules.se_math import ascend_se_operands
from fusion.cost import model_fused
from fusion.verify.sensitivity import input_sensitivity
from fusion.frontend.onnx_import import read_model
from fusion.driver.chain_stage import stage_arrays
from schedules.wave import member_plan
from fusion.verify.chain_check import check_chain
from fusion.codegen.ascendc import emit_kernel
from fusion.verify.emu_run import build_all, run_emitted
from fusion.verify.ascend_int8 import build_int8, check_int8_block, int8_kernels
from fusion.verify.quant_check import int8_tolerance

SE_TE_NAMES = ("se_w1", "se_b1", "se_w2", "se_b2")   # the fused step's SE operands, before the residual


@dataclass(frozen=True)
class BlockCheck:
    name: str
    symbol: str
    soc: str
    variant: str
    tile: str
    block_dim: int
    max_abs: float            # vs the CPU kernel of the block on the same inputs
    max_rel: float
    counters: dict[str, int]
    model_gm_read_bytes: int  # the cost model's figures for the same plan
    model_gm_write_bytes: int
    build_s: float
    run_s: float
    notes: tuple[str, ...] = ()
    # the cost model's vector instruction count for the same plan: its timing assumes one vector
    # instruction per DW tap row / PW MAC row; the emitted kernel's own count is in `counters`
    model_vector_instructions: int = 0

    @property
    def gm_bytes_match(self) -> bool:
        return (self.counters.get("gm_read_bytes") == self.model_gm_read_bytes
                and self.counters.get("gm_write_bytes") == self.model_gm_write_bytes)

    def to_json(self) -> dict:
        return {"name": self.name, "kernel": self.symbol, "soc": self.soc, "variant": self.variant,
                "tile": self.tile, "block_dim": self.block_dim, "max_abs": self.max_abs, "max_rel": self.max_rel,
                "counters": dict(self.counters),
                "cost_model": {"gm_read_bytes": self.model_gm_read_bytes,
                               "gm_write_bytes": self.model_gm_write_bytes},
                "gm_bytes_match": self.gm_bytes_match, "build_s": round(self.build_s, 3),
                "run_s": round(self.run_s, 3), "notes": list(self.notes),
                "cost_model_vector_instructions": self.model_vector_instructions}

    def describe(self) -> str:
        c = self.counters
        dim = (f"{self.block_dim:>2} x (AIC + 2 AIV)" if self.variant == "cube-pw-mix"
               or (self.variant == "two-phase" and self.soc.startswith("ascend910"))
               else f"{self.block_dim:>2} cores")
        return (f"{self.name:<14} {self.soc} {self.variant:<11} {self.tile:<26} {dim}  max rel {self.max_rel:.2e}  "
                f"GM r/w {c.get('gm_read_bytes', 0):,}/{c.get('gm_write_bytes', 0):,} B "
                f"(model {self.model_gm_read_bytes:,}/{self.model_gm_write_bytes:,}"
                f"{', equal' if self.gm_bytes_match else ', DIFFERENT'})  "
                f"vec {c.get('vector_instructions', 0):,} instr (model {self.model_vector_instructions:,}) / "
                f"{c.get('vector_repeats', 0):,} rep  "
                f"cube {c.get('cube_fractals', 0):,} fractals")


@dataclass(frozen=True)
class AscendCheckResult(CheckResult):
    blocks: tuple[BlockCheck, ...] = field(default=())
    chains: tuple = field(default=())   # fusion/chain_check.ChainCheck
    int8_blocks: tuple = field(default=())   # fusion/verify/ascend_int8.Int8BlockCheck

    def to_json(self) -> dict:
        d = super().to_json()
        d["blocks"] = [b.to_json() for b in self.blocks] + [b.to_json() for b in self.int8_blocks]
        d["chains"] = [c.to_json() for c in self.chains]
        return d


def _max_err(got: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    g = np.asarray(got, np.float64)
    r = np.asarray(ref, np.float64)
    err = float(np.abs(g - r).max()) if r.size else 0.0
    if np.isnan(g).any():
        err = float("inf")
    scale = float(np.abs(r).max()) if r.size else 0.0
    return err, (err / scale if scale > 0 else err)


def check_ascend(cm, model=None, seed: int = 0, tolerance: float | None = None, *,
                 jobs: int | None = None) -> AscendCheckResult:
    """Runs every fused block of `cm` (compiled for an ascend[:SOC] target) through its generated
    Ascend C kernel on the emulator. `model`: the ONNX model (ModelProto or path) for the ONNX
    Runtime reference of the whole model; None compares with the CPU program instead."""

    if isinstance(model, (str, os.PathLike)):
        model = read_model(model)
    tol = TOLERANCE[cm.dtype] if tolerance is None else tolerance
    stages = {g.steps[-1]: g for g in cm.chain_stages.values()}   # by their last step
    kernels = [emit_kernel(b.plan, b.name) for b in [*cm.fused_blocks, *stages.values()]]
    # the chains' members as they run in their chains (fusion/chain.chain_plans): the reference
    # the chain kernel is compared with
    in_chain = [emit_kernel(member_plan(p), n) for n, p in cm.chain_plans.items()]   # one chunk's (schedules/wave.py)
    built, build_s = build_all(kernels + in_chain, jobs)
    by_name = {ek.block: (ek, kb, bs) for ek, kb, bs in zip(kernels, built, build_s)}
    chain_kernels = {ek.block: ek for ek in in_chain}
    chain_built = {ek.block: kb for ek, kb in zip(in_chain, built[len(kernels):])}

    i8_kernels = int8_kernels(cm)          # fused int8 blocks (QDwSep), by node name
    i8_built = build_int8(i8_kernels)
    i8_reports = []
    feeds = random_inputs(cm, seed)
    dev = tvm.cpu(0)
    prog = cm.program
    env: dict[str, object] = {}
    for name, (shape, dtype) in prog.inputs.items():
        env[name] = tvm.runtime.tensor(np.ascontiguousarray(feeds[name].astype(dtype)), dev)
    reports: list[BlockCheck] = []
    chain_end = {c.blocks[-1]: c for c in cm.chains}
    chain_checks = []
    block_x: dict[str, np.ndarray] = {}
    block_w: dict[str, dict] = {}
    for st in prog.steps:
        args = [env[p] if isinstance(p, str) else p for p in st.params]
        cpu_out = tvm.runtime.empty(st.out_shape, st.out_dtype, dev)
        st.func(*args, cpu_out)
        if st.name in i8_kernels:   # a fused int8 block: its kernel on the same int8 input
            chk, y = check_int8_block(st.name, i8_kernels[st.name], i8_built[st.name], args[0].numpy(), cpu_out.numpy())
            i8_reports.append(chk)
            env[st.out] = tvm.runtime.tensor(y, dev)
            continue
        if st.name in stages:   # a chain's GEMM stage: its kernel on the conv's input, the stage's weights
            g = stages[st.name]
            name, arrays = g.name, {"x": env[g.x].numpy(), **stage_arrays(g, cm)}
        elif st.kind == "fused" and st.name in by_name:
            name = st.name
            wl = by_name[name][0].plan.workload   # the fused step's operand order: biases, slopes, residual
            names = (["x", "w_dw", "b_dw", "w_pw", "b_pw"] + [n for n, act in (("s_dw", wl.act1), ("s_pw", wl.act2))
                                                               if needs_slope(act)]
                     + (list(SE_TE_NAMES) if wl.se else []) + (["res"] if wl.residual else []))
            arrays = {n: a.numpy() for n, a in zip(names, args)}
            if wl.se:   # the SE operands (after the slopes: FUSED_SE) in the kernel's layouts
                arrays.update(ascend_se_operands(wl, *(arrays.pop(n) for n in SE_TE_NAMES)))
        else:
            env[st.out] = cpu_out
            continue
        ek, kb, bs = by_name[name]
        t0 = time.perf_counter()
        y, counters, _ = run_emitted(ek, kb, arrays)
        run_s = time.perf_counter() - t0
        err, rel = _max_err(y, cpu_out.numpy())
        cost = model_fused(ek.plan, timeline=False)  # the plan the kernel was generated from
        p = ek.plan
        reports.append(BlockCheck(name, ek.symbol, p.soc.name, ek.variant, p.tile.describe(), ek.block_dim,
                                  err, rel, counters, cost.gm_read_bytes, cost.gm_write_bytes, bs, run_s,
                                  ek.notes, int(cost.counts.get("vector_instrs", 0))))
        block_x[name] = arrays["x"]
        block_w[name] = arrays
        if name in chain_end:   # the chain kernel's output feeds the rest of the model
            c = chain_end[name]
            cc, y = check_chain(c, chain_kernels, chain_built, block_x[c.blocks[0]], block_w,
                                cm.chain_plans[c.blocks[0]].chunks)
            chain_checks.append(cc)
        env[st.out] = tvm.runtime.tensor(y, dev)
    got = {name: env[name].numpy() if name in env else np.asarray(prog.constants[name]) for name in prog.outputs}
    reference = (lambda f: ort_reference(model, f)) if model is not None else prog.run
    ref = reference(feeds)
    int8 = int8_tolerance(cm.graph, ref) if model is not None else None
    if int8 is not None and tolerance is None:
        tol = int8.tolerance
    fp32 = None
    if tolerance is None and cm.dtype == "float32" and model is not None and int8 is None:
        fp32 = fp32_rounding_shift(model, feeds, ref, seed)
        tol = fp32_tolerance(fp32[0] if fp32 else None)
    whole = compare(got, ref, tol, seed)
    rows = list(whole.outputs) + [OutputError(f"{b.name} (kernel vs CPU)", b.max_abs, b.max_rel) for b in reports]
    rows += [OutputError(f"{c.name} (chain kernel vs its blocks' kernels)", c.max_abs, c.max_rel) for c in chain_checks]
    # an int8 block must match the CPU int8 kernel exactly, and its counters the model's
    rows += [OutputError(f"{b.name} (int8 kernel vs CPU, steps)", float(b.max_steps), float(b.max_steps))
             for b in i8_reports]
    rows += [OutputError(f"{b.name} (int8 kernel counters differ from the model)", float("inf"), float("inf"))
             for b in i8_reports if not b.counters_match]
    return AscendCheckResult(tuple(rows), tol, seed, input_sensitivity(reference, cm, seed, ref),
                             blocks=tuple(reports), chains=tuple(chain_checks), int8_blocks=tuple(i8_reports),
                             fp32_shift=fp32[0] if fp32 else None, fp32_terms=fp32[1] if fp32 else None,
                             int8=int8)
