"""compile_model: ONNX → graph passes → per-block KernelPlan → TVM kernels → a runnable model."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import tvm

from fusion.core.errors import MegafuseError
from fusion.driver.fallback import GATED_KINDS, FusionGate, unchained_losers
from fusion.core.ir import Graph
from fusion.frontend.onnx_import import load_graph
from fusion.core.opt_levels import DEFAULT_LEVEL, get_level
from fusion.driver.runtime import KernelCall, ModelExecutable
from fusion.core.sanitize import block_ident
from schedules.targets import Target, parse_target, per_channel_acts
from fusion.driver.tile_policy import TileOverride
from passes import optimize
from passes.conv_epilogue import fold_conv_epilogues
from passes.quant_fuse import is_quantized, quant_fuse
from passes.quant_gemm import quant_gemm
from passes.quant_pool import quant_pool
from passes.quant_residual import quant_residual
from passes.fuse_dwsep import (FUSED_OP, fused_data_inputs, fused_se_inputs, fused_slope_inputs, fused_weight_inputs,
                               fused_workload)
from passes.records import Refusal
from passes.stem_layout import convs_write_blocked
from schedules.build import build_fused, build_op, fused_params
from schedules.ops import OpContext, op_kernel
from schedules.plan import KernelPlan, check_budget
from schedules.quant_nhwc_ops import quant_kernel
from schedules.workload import DwSepWorkload
from schedules import kernel_cache
from fusion.frontend.subgraph import cut_model
from fusion.driver.chain import find_chains
from fusion.driver.chain_stage import find_stages
from fusion.driver.chain import chain_plans

DTYPES = ("float32", "float16")
log = logging.getLogger("megafuse.fuse")
__all__ = ["DTYPES", "CompiledModel", "FusedBlock", "TileOverride", "compile_model"]


@dataclass(frozen=True)
class FusedBlock:
    name: str          # derived identifier (fusion.core.sanitize.block_ident): code and file names use it
    members: tuple[str, ...]
    workload: DwSepWorkload
    plan: KernelPlan
    tile_source: str   # default | forced | tuned (db)
    engine_reason: str = ""  # why PW runs on this unit (the cost model's comparison)
    model_name: str = ""     # the DW node's name in the model: untrusted, display only (escaped)

    def to_json(self) -> dict:
        p = self.plan
        return {
            "name": self.name, "model_name": self.model_name or self.name, "members": list(self.members), "workload": self.workload.describe(),
            "input": [p.workload.batch, p.workload.cin, p.workload.height, p.workload.width],
            "output": [p.workload.batch, p.workload.cout, p.workload.out_height, p.workload.out_width],
            "tile": {"th": p.th, "tw": p.tw, "cob": p.cob, "cib": p.cib,
                     "double_buffer": p.tile.double_buffer, "pw_engine": p.tile.pw_engine},
            "tile_source": self.tile_source, "engine_reason": self.engine_reason,
            "n_tiles": p.n_tiles, "cores": p.cores,
            "ub_bytes_used": p.ub_bytes, "ub_bytes_available": p.soc.ub_usable_bytes,
            "buffers": [{"name": b.name, "scope": b.scope, "shape": list(b.shape), "dtype": b.dtype,
                         "copies": b.copies, "bytes": b.aligned_bytes(p.soc.ub_align)} for b in p.kernel_buffers],
        }


@dataclass
class CompiledModel:
    graph: Graph
    target: Target
    dtype: str
    program: ModelExecutable
    fused_blocks: list[FusedBlock]
    refusals: list[Refusal]
    notes: list[str] = field(default_factory=list)
    max_dma_ratio: float | None = None   # the DMA cap the tiles were chosen under (cli --max-dma-ratio)
    phases_s: dict[str, float] = field(default_factory=dict)  # wall seconds per compile phase
    kernel_cache: str = ""               # hits/misses of the on-disk kernel cache in this compile
    chains: list = field(default_factory=list)   # fusion/chain.Chain: blocks run as one launch (sim/ascend)
    chain_breaks: list = field(default_factory=list)   # why consecutive fused blocks are not chained
    chain_stages: dict = field(default_factory=dict)   # fusion/chain_stage.GemmStage of the chains, by name
    chain_plans: dict = field(default_factory=dict)    # the plan each chain member runs in its chain, by name
    opt_level: int = DEFAULT_LEVEL                     # fusion/core/opt_levels.py
    int8_blocks: list = field(default_factory=list)    # fused int8 DW->PW blocks (QDwSep): (ident, members)
    fusion_gate: object = None   # the fallback.FusionGate this compile's decisions came from (settled:
                                 # its unchained set final), which `explain` replays to say the same

    def describe_phases(self) -> str:
        parts = ", ".join(f"{k} {v:.2f} s" for k, v in self.phases_s.items())
        return f"compile time: {parts} (total {sum(self.phases_s.values()):.2f} s)"

    @property
    def input_names(self) -> list[str]:
        return list(self.program.inputs)

    def run(self, inputs) -> dict[str, np.ndarray]:
        """inputs: a dict name → array, or one array for a single-input model."""
        if not isinstance(inputs, dict):
            if len(self.program.inputs) != 1:
                raise MegafuseError(f"model has inputs {self.input_names}: pass a dict")
            inputs = {self.input_names[0]: inputs}
        return self.program.run(inputs)

    def to_json(self) -> dict:
        return {"target": self.target.name, "dtype": self.dtype,
                "fused_blocks": [b.to_json() for b in self.fused_blocks],
                "refusals": [r.to_json() for r in self.refusals], "notes": self.notes,
                "max_dma_ratio": self.max_dma_ratio,
                "kernels": len(self.program.steps), "compile_phases_s": self.phases_s, "opt_level": self.opt_level,
                "kernel_cache": self.kernel_cache,
                "chains": [{"name": c.name, "blocks": list(c.blocks), "stages": list(c.stages),
                            "plans": {n: {"tile": p.tile.describe(), "cores": p.cores, "gemm_only": p.gemm_only,
                                          "act2": p.workload.act2, "x_max": p.x_max, "local_in": p.local_in,
                                          "local_dw": p.local_dw, "m_band": p.m_band,
                                          "chunks": p.chunks, "joined": p.joined, "prefetch": p.prefetch,
                                          "prefetch_to": p.prefetch_to, "w_pw_warm": p.w_pw_warm,
                                          "w_pw_ahead": p.w_pw_ahead, "w_pw_next": p.w_pw_next,
                                          "l1_lead": p.l1_lead, "l1_tail": p.l1_tail}
                                      for n in c.blocks if (p := self.chain_plans.get(n)) is not None}}
                           for c in self.chains],
                "not_chained": list(self.chain_breaks)}


def compile_model(model, target="sim", input_shapes=None, dtype: str | None = None,
                  tile: TileOverride | None = None, fuse: bool = True, tuned_tiles=None,
                  inputs=None, outputs=None, fallback: bool = False, chain: bool = True,
                  opt_level: int = DEFAULT_LEVEL) -> CompiledModel:
    """tuned_tiles: optional callable (workload, target) → TileConfig | None (the tuning database).
    inputs/outputs: tensor names (list or 'a,b') that cut the model first (fusion.frontend.subgraph).
    fallback: on sim/ascend, a block whose fused kernel is modeled slower than its vendor-like
    DW + PW kernels is left unfused (fusion/driver/fallback.py), with a profitability Refusal.
    chain: on sim/ascend, consecutive chainable fused blocks run as one launch (fusion/driver/chain.py).
    opt_level: 0..3 (fusion/core/opt_levels.py); 2, the default, is the rest of the arguments as given,
    a lower level turns folding / epilogues / fusion / chains off."""

    phases: dict[str, float] = {}

    @contextmanager
    def phase(name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            phases[name] = phases.get(name, 0.0) + time.perf_counter() - t0

    hits0, miss0 = kernel_cache.STATS.hits, kernel_cache.STATS.misses
    tgt = parse_target(target)
    level = get_level(opt_level)
    fuse, chain, fallback = fuse and level.fuse, chain and level.chain, fallback and level.fuse
    with phase("import"):
        if inputs or outputs:
            cut = cut_model(model, inputs, outputs, input_shapes)
            model, input_shapes = cut.model, cut.input_shapes or None
        g = load_graph(model, input_shapes)
    model_dtype = g.types[g.inputs[0]].dtype if g.inputs else "float32"
    dtype = dtype or model_dtype
    if dtype not in DTYPES:
        raise MegafuseError(f"unsupported dtype '{dtype}'; use one of {', '.join(DTYPES)}")
    quantized = is_quantized(g)
    if quantized:
        _check_int8(tgt, dtype)
    # tiles chosen under a DMA cap (fusion/tuning/search.CappedTiles): a chain's members run
    # two-phase plans (a GM round trip of the DW result), which the cap does not choose, so every
    # block runs its own launch
    capped = chain and getattr(tuned_tiles, "cap", None) is not None
    chain = chain and not capped
    credit = fallback and chain and tgt.kind in GATED_KINDS
    gate = FusionGate(tgt, tile, tuned_tiles, chain_credit=credit)

    def lower(g: Graph) -> CompiledModel:
        with phase("passes"):
            qrefusals: list = []
            if quantized:   # QDQ convs -> int8 ops first; the float parts go through the usual passes
                g, qrefusals = quant_fuse(g, fuse=fuse)
                if tgt.kind == "llvm":   # the int8 classifier and residual epilogues: the CPU's kernels
                    g = quant_residual(quant_pool(quant_gemm(g)))
            g, refusals = optimize(g, tgt.soc, dtype, fuse=fuse, gate=gate if fallback else gate.fits,
                                   per_channel=per_channel_acts(tgt), fold=level.fold,
                                   heads=tgt.kind != "llvm")
            if tgt.kind == "llvm" and level.epilogues:   # conv + bias + act (+ residual) per kernel, as a runtime runs them
                g = fold_conv_epilogues(convs_write_blocked(g))
            refusals = qrefusals + refusals
        for r in refusals:
            log.info("not fused: %s", r.describe())

        program = ModelExecutable({t: (g.types[t].shape, dtype) for t in g.inputs}, list(g.outputs),
                                  constants={t: np.asarray(g.constants[t]) for t in g.outputs if t in g.constants})
        ctx = OpContext(g, dtype)
        blocks: list[FusedBlock] = []
        idents: set[str] = set()
        dev = tvm.cpu(0)
        int8_blocks = []
        for n in g.nodes:
            if (qspec := quant_kernel(n, g, nhwc=tgt.kind == "llvm")) is not None:
                with phase("int8 kernels"):
                    ex = build_op(qspec)
                    params = [_bind(p, g, dtype, dev) for p in qspec.params]
                kind = "op"
                if n.op_type == "QDwSep":
                    ident = block_ident(n.name, len(blocks) + len(int8_blocks), idents)
                    int8_blocks.append((ident, tuple(n.attr("members"))))
                    kind = "fused"
                program.steps.append(KernelCall(n.name, kind, ex["main"], params, n.outputs[0],
                                          qspec.out_shape, qspec.out_dtype, ex))
            elif n.op_type == FUSED_OP:
                with phase("tiles"):
                    wl = fused_workload(g, n, dtype)
                    choice = gate.choice(wl)
                    plan, source, why = check_budget(choice.plan), choice.source, choice.engine_reason
                with phase("fused kernels"):
                    ex = build_fused(plan)
                with phase("weights"):
                    consts = [g.constants[t] for t in fused_weight_inputs(n)]
                    slopes = [g.constants[t] for t in fused_slope_inputs(n).values()]
                    se = [g.constants[t] for t in fused_se_inputs(n)]
                    x, *residual = fused_data_inputs(n)
                    params = [x] + [tvm.runtime.tensor(a, dev) for a in fused_params(*consts, dtype, slopes, se)] \
                        + residual
                out_t = g.types[n.outputs[0]]
                ident = block_ident(n.name, len(blocks), idents)
                program.steps.append(KernelCall(ident, "fused", ex["main"], params, n.outputs[0],
                                          out_t.shape, dtype, ex))
                blocks.append(FusedBlock(ident, tuple(n.attr("members")), wl, plan, source, why, n.name))
            else:
                with phase("op kernels"):
                    spec = op_kernel(n, ctx)
                    ex = build_op(spec)
                with phase("weights"):
                    params = [_bind(p, g, dtype, dev) for p in spec.params]
                program.steps.append(KernelCall(n.name, "op", ex["main"], params, n.outputs[0],
                                          spec.out_shape, spec.out_dtype, ex))
        cm = CompiledModel(g, tgt, dtype, program, blocks, refusals, phases_s=phases,
                           int8_blocks=int8_blocks)
        if chain and tgt.kind in ("sim", "ascend"):
            with phase("chains"):
                stages = find_stages(cm, idents) if blocks else {}
                cm.chains, cm.chain_breaks = find_chains(cm, stages)
                chained = {n for c in cm.chains for n in c.stages}
                cm.chain_stages = {g.name: g for g in stages.values() if g.name in chained}
                cm.chain_plans = chain_plans(cm.chains, {**{b.name: b for b in blocks}, **cm.chain_stages}, tgt)
        return cm

    cm = lower(g)
    # a block fused for the chain it would join but left out of every chain runs unfused, and so
    # may break a chain: compile again until every fused block wins alone or in its chain
    while credit:
        lone = unchained_losers(cm, gate)
        if not lone:
            break
        gate.unchained |= lone
        with phase("import"):
            g = load_graph(model, input_shapes)
        cm = lower(g)
    if capped and tgt.kind in ("sim", "ascend"):
        cm.notes.append("no block chains under --max-dma-ratio: their members' two-phase plans are not "
                        "chosen under the cap")
    if level.note:
        cm.notes.append(level.note)
    cm.opt_level = level.level
    cm.fusion_gate = gate
    if kernel_cache.enabled():
        cm.kernel_cache = (f"{kernel_cache.STATS.hits - hits0} hit(s), {kernel_cache.STATS.misses - miss0} "
                           f"miss(es) in {kernel_cache.cache_dir()}")
    return cm


INT8_TARGETS = ("llvm", "sim")


def _check_int8(tgt: Target, dtype: str) -> None:
    """What an int8 (QDQ) model runs on today: one line naming what is not supported. On Ascend
    the int8 kernels are emitted for both SoC kinds (fusion/codegen/ascendc/emit_int8.py)."""
    if tgt.kind not in INT8_TARGETS and tgt.kind != "ascend":
        raise MegafuseError(f"int8 (QDQ) models are not supported on -t {tgt.name} yet (they run on "
                            f"{', '.join(INT8_TARGETS)} and ascend[:SOC]; bench -t sim:SOC models their Ascend "
                            "kernels)")
    if dtype != "float32":
        raise MegafuseError(f"int8 (QDQ) models keep their float parts in float32; --dtype {dtype} "
                            f"is not supported for them")


def _bind(p, g: Graph, dtype: str, dev):
    """A kernel parameter: a run-time tensor name, or a constant bound once (a graph constant
    read as data, e.g. Relu of a weight, is bound in the activation dtype). 0-d stays 0-d."""
    if isinstance(p, str):
        if p not in g.constants:
            return p
        p = np.asarray(g.constants[p]).astype(dtype)
    return tvm.runtime.tensor(np.ascontiguousarray(p).reshape(np.shape(p)), dev)
