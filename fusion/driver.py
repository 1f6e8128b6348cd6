"""compile_model: ONNX → graph passes → per-block KernelPlan → TVM kernels → a runnable model."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import tvm

from fusion.errors import MegafuseError
from fusion.ir import Graph
from fusion.onnx_import import load_graph
from fusion.runtime import Program, Step
from fusion.targets import Target, parse_target, pw_engines
from passes import optimize
from passes.fuse_dwsep import FUSED_OP, fused_workload
from passes.records import Refusal
from schedules.build import build_fused, build_op, fused_params
from schedules.ops import OpContext, op_kernel
from schedules.plan import KernelPlan, check_budget, make_plan, suggest_tile
from schedules.workload import DwSepWorkload, TileConfig

DTYPES = ("float32", "float16")


@dataclass(frozen=True)
class TileOverride:
    """A tile forced by the user for every fused block (fields left None keep the default)."""
    th: int | None = None
    tw: int | None = None
    cob: int | None = None
    cib: int | None = None
    double_buffer: bool | None = None
    pw_engine: str | None = None

    def apply(self, base: TileConfig) -> TileConfig:
        return TileConfig(self.th or base.th, self.tw or base.tw, self.cob or base.cob,
                          base.cib if self.cib is None else self.cib,
                          base.double_buffer if self.double_buffer is None else self.double_buffer,
                          self.pw_engine or base.pw_engine, base.cores)

    @property
    def forced(self) -> bool:
        return any(v is not None for v in (self.th, self.tw, self.cob, self.cib))


@dataclass(frozen=True)
class FusedBlock:
    name: str
    members: tuple[str, ...]
    workload: DwSepWorkload
    plan: KernelPlan
    tile_source: str   # default | forced | tuned (db)
    engine_reason: str = ""  # why PW runs on this unit (the cost model's comparison)

    def to_json(self) -> dict:
        p = self.plan
        return {
            "name": self.name, "members": list(self.members), "workload": self.workload.describe(),
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
    program: Program
    fused_blocks: list[FusedBlock]
    refusals: list[Refusal]
    notes: list[str] = field(default_factory=list)
    max_dma_ratio: float | None = None   # the DMA cap the tiles were chosen under (cli --max-dma-ratio)
    phases_s: dict[str, float] = field(default_factory=dict)  # wall seconds per compile phase
    kernel_cache: str = ""               # hits/misses of the on-disk kernel cache in this compile

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
                "kernels": len(self.program.steps), "compile_phases_s": self.phases_s,
                "kernel_cache": self.kernel_cache}


def select_tile(wl: DwSepWorkload, target: Target, override: TileOverride | None,
                tuned: TileConfig | None = None) -> tuple[TileConfig, str]:
    """Forced (user) > tuned (database) > default. Default on llvm: the largest tile that fits
    the SoC's UB while giving every core at least one tile; on sim/ascend: the fastest modeled of
    a few such largest tiles (_fastest_candidate). Both keep the user's buffering/engine choices."""
    override = override or TileOverride()
    if tuned is not None and not override.forced:
        return tuned, "tuned"
    soc = target.soc
    knobs = TileConfig(1, 1, double_buffer=override.double_buffer is not False,
                       pw_engine=override.pw_engine or "vector")
    base = suggest_tile(wl, soc, like=knobs, min_tiles=soc.vector_cores)
    if base is None:  # fuse_dwsep's profitability check makes this unreachable for fused blocks
        raise MegafuseError(f"no tile of {wl.describe()} fits {soc.name}")
    if override.forced:
        return override.apply(base), "forced"
    if target.kind != "llvm":
        return _fastest_candidate(wl, target, override), "default"
    return base, "default"


# tiles per core the default candidates aim at: one big tile per core up to many small ones
DEFAULT_TILES_PER_CORE = (1 / 48, 1 / 2, 1, 2, 4, 8)


def _fastest_candidate(wl: DwSepWorkload, target: Target, override: TileOverride) -> TileConfig:
    """The default tile on the Ascend targets: of the largest tiles that give at least
    k x cores tiles (k in DEFAULT_TILES_PER_CORE), with and without double buffering, on each PW
    engine the target can emit, the fastest under the cost model. A dozen model evaluations per
    block (milliseconds); `megafuse tune` searches the whole space."""
    from fusion.costmodel import model_fused

    soc = target.soc
    engines = (override.pw_engine,) if override.pw_engine else pw_engines(target, wl.dtype)
    buffering = (False,) if override.double_buffer is False else (True, False)
    best = None
    for k in DEFAULT_TILES_PER_CORE:
        for db in buffering:
            for eng in engines:
                base = suggest_tile(wl, soc, like=TileConfig(1, 1, double_buffer=db, pw_engine=eng),
                                    min_tiles=max(1, round(k * soc.vector_cores)))
                if base is None:
                    continue
                plan = make_plan(wl, base, soc)
                if not plan.fits():
                    continue
                t = model_fused(plan, timeline=False).time_us
                if best is None or t < best[0]:
                    best = (t, base)
    if best is None:
        raise MegafuseError(f"no tile of {wl.describe()} fits {soc.name}")
    return best[1]


def _pick_engine(wl: DwSepWorkload, cfg: TileConfig, target: Target, source: str,
                 override: TileOverride | None) -> tuple[KernelPlan, str]:
    """On the Ascend targets a default tile's PW engine is the cost model's choice (vector vs
    cube, hand-off included); a forced or tuned tile keeps its own."""
    if target.kind == "llvm" or source != "default" or (override and override.pw_engine):
        return make_plan(wl, cfg, target.soc), f"pw on {cfg.pw_engine} ({source} tile)"
    if pw_engines(target, wl.dtype) == ("vector",):
        return make_plan(wl, cfg, target.soc), "pw on vector: the Ascend C cube kernels are float16 only"
    from fusion.costmodel import choose_engine
    plan, _cost, why = choose_engine(wl, cfg, target.soc)
    return plan, why


def compile_model(model, target="sim", input_shapes=None, dtype: str | None = None,
                  tile: TileOverride | None = None, fuse: bool = True, tuned_tiles=None) -> CompiledModel:
    """tuned_tiles: optional callable (workload, target) → TileConfig | None (the tuning database)."""
    from fusion import kernel_cache

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
    with phase("import"):
        g = load_graph(model, input_shapes)
    model_dtype = g.types[g.inputs[0]].dtype if g.inputs else "float32"
    dtype = dtype or model_dtype
    if dtype not in DTYPES:
        raise MegafuseError(f"unsupported dtype '{dtype}'; use one of {', '.join(DTYPES)}")
    with phase("passes"):
        g, refusals = optimize(g, tgt.soc, dtype, fuse=fuse)

    program = Program({t: (g.types[t].shape, dtype) for t in g.inputs}, list(g.outputs))
    ctx = OpContext(g, dtype)
    blocks: list[FusedBlock] = []
    dev = tvm.cpu(0)
    for n in g.nodes:
        if n.op_type == FUSED_OP:
            with phase("tiles"):
                wl = fused_workload(g, n, dtype)
                tuned = tuned_tiles(wl, tgt) if tuned_tiles else None
                cfg, source = select_tile(wl, tgt, tile, tuned)
                plan, why = _pick_engine(wl, cfg, tgt, source, tile)
                plan = check_budget(plan)
            with phase("fused kernels"):
                ex = build_fused(plan)
            with phase("weights"):
                consts = [g.constants[t] for t in n.inputs[1:5]]
                params = [n.inputs[0]] + [tvm.runtime.tensor(a, dev) for a in fused_params(*consts, dtype)]
            params += list(n.inputs[5:])
            out_t = g.types[n.outputs[0]]
            program.steps.append(Step(n.name, "fused", ex["main"], params, n.outputs[0],
                                      out_t.shape, dtype, ex))
            blocks.append(FusedBlock(n.name, tuple(n.attr("members")), wl, plan, source, why))
        else:
            with phase("op kernels"):
                spec = op_kernel(n, ctx)
                ex = build_op(spec)
            with phase("weights"):
                params = [p if isinstance(p, str) else tvm.runtime.tensor(np.ascontiguousarray(p), dev)
                          for p in spec.params]
            program.steps.append(Step(n.name, "op", ex["main"], params, n.outputs[0],
                                      spec.out_shape, spec.out_dtype, ex))
    cm = CompiledModel(g, tgt, dtype, program, blocks, refusals, phases_s=phases)
    if kernel_cache.enabled():
        cm.kernel_cache = (f"{kernel_cache.STATS.hits - hits0} hit(s), {kernel_cache.STATS.misses - miss0} "
                           f"miss(es) in {kernel_cache.cache_dir()}")
    return cm
