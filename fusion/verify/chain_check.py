"""`check -t ascend` for block chains: the chain kernel (fusion/codegen/ascendc/emit_chain.py) built
against the host emulation and run on the chain's input with every block's weights; its output is
compared with the same blocks' own kernels (built from the plans they run in the chain,
fusion/chain.chain_plans) run one after the other, and feeds the rest of the model
(so the whole-model comparison with ONNX Runtime goes through the chain kernel)."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import numpy as np

from fusion.codegen.ascendc.emit_chain import BOUNDARY_SLACK, WEIGHTS, EmittedChain, emit_chain, pack_weights
from fusion.emu import cache_dir
from fusion.emu import build_kernel
from fusion.verify.emu_run import run_emitted
from schedules.lowering import build_program
from schedules.wave import warm_bytes


@dataclass(frozen=True)
class ChainCheck:
    name: str
    symbol: str
    blocks: tuple[str, ...]
    block_dim: int
    max_abs: float           # vs the blocks' own kernels, run one by one
    max_rel: float
    counters: dict[str, int]
    blocks_counters: dict[str, int]   # the same counters summed over the blocks' own kernels
    build_s: float
    run_s: float
    stages: tuple[str, ...] = ()      # the members that are GEMM stages
    cores: str = "(AIC + 2 AIV)"      # what one unit of block_dim is (310P: an AI core)
    # bytes the chain's members read ahead into L2 (schedules/prefetch.py): read by the chain kernel,
    # not by the blocks' own kernels (a block run on its own reads nothing ahead)
    read_ahead: int = 0
    # bytes of resident PW weights a chain in image chunks does not load again (schedules/wave.warm_tasks):
    # read by the blocks' own kernels on every chunk, by the chain once per run of a block's consecutive GEMM tasks
    warm_reads: int = 0

    @property
    def counters_match(self) -> bool:
        keys = ("gm_read_bytes", "gm_write_bytes", "vector_instructions", "vector_repeats", "cube_fractals")
        extra = {"gm_read_bytes": self.read_ahead - self.warm_reads}
        return all(self.counters.get(k, 0) == self.blocks_counters.get(k, 0) + extra.get(k, 0) for k in keys)

    def to_json(self) -> dict:
        return {"name": self.name, "kernel": self.symbol, "blocks": list(self.blocks), "stages": list(self.stages),
                "block_dim": self.block_dim, "read_ahead": self.read_ahead, "warm_reads": self.warm_reads,
                "max_abs": self.max_abs, "max_rel": self.max_rel, "counters": dict(self.counters),
                "blocks_counters": dict(self.blocks_counters), "counters_match": self.counters_match,
                "build_s": round(self.build_s, 3), "run_s": round(self.run_s, 3)}

    def describe(self) -> str:
        c = self.counters
        n, k = len(self.blocks), len(self.stages)
        what = f"{n} blocks" if not k else f"{n - k} blocks + {k} GEMM stages"
        return (f"{self.name:<14} {what} in one launch ({self.blocks[0]} .. {self.blocks[-1]}), "
                f"{self.block_dim} x {self.cores}  max rel {self.max_rel:.2e} vs the blocks' own kernels  "
                f"GM r/w {c.get('gm_read_bytes', 0):,}/{c.get('gm_write_bytes', 0):,} B, vec "
                f"{c.get('vector_instructions', 0):,} instr, cube {c.get('cube_fractals', 0):,} fractals "
                f"({'equal to' if self.counters_match else 'DIFFERENT from'} the blocks' sum"
                + (f" + {self.read_ahead:,} B read ahead into L2" if self.read_ahead else "")
                + (f" - {self.warm_reads:,} B of PW weights kept in L1 across chunks" if self.warm_reads else "") + ")")


def chain_dir(ec: EmittedChain):

    text = ec.source + "".join(t for _, t in ec.headers)
    return cache_dir() / "ascendc" / f"{ec.symbol}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def build_chain(ec: EmittedChain):

    d = chain_dir(ec)
    d.mkdir(parents=True, exist_ok=True)
    for name, text in ((ec.source_name, ec.source), *ec.headers):
        p = d / name
        if not p.exists() or p.read_text() != text:
            p.write_text(text)
    return build_kernel(d / ec.source_name, ec.symbol)


def run_chain(ec: EmittedChain, kernel, x: np.ndarray, arrays: dict[str, dict]):
    """(y, counters) of one emulated run. arrays: block -> its weight arrays (kernel layouts)."""
    spec = ec.whole(ec.blocks[-1].arg("y"))
    y = np.full(spec.shape, np.nan, dtype=np.dtype(spec.dtype))
    ws = np.full(ec.workspace_bytes // 2, np.nan, np.float16).view(np.uint8)
    for off, n in ec.zeroed():
        ws[off:off + n] = 0
    xa = np.ascontiguousarray(x, dtype=np.dtype(ec.blocks[0].arg("x").dtype))
    res = kernel.run([xa, pack_weights(ec, arrays), y, ws, ec.tiling_bytes()], block_dim=ec.block_dim,
                     soc=ec.blocks[0].plan.soc, kernel_type=ec.launch.kernel_type)
    return y, dict(res.counters)


def run_members(chain, kernels: dict, built: dict, x: np.ndarray, weights: dict[str, dict], chunks: int = 1):
    """The chain's members' own kernels (its chain plans) run one after the other on the chain's
    input, residuals from the chain's x or an earlier member's output: the reference the chain
    kernel must equal bit for bit. chunks > 1: the kernels are one image chunk's
    (schedules/wave.py), run on each chunk of x in turn. Returns (last output, counters summed
    over the members and chunks)."""
    if chunks > 1:
        ys, summed = [], {}
        for part in np.split(x, chunks):
            y, counters = run_members(chain, kernels, built, part, weights)
            ys.append(y)
            for key, v in counters.items():
                summed[key] = summed.get(key, 0) + v
        return np.concatenate(ys), summed
    outs: list[np.ndarray] = []
    summed: dict[str, int] = {}
    cur = x
    for k, name in enumerate(chain.blocks):
        arrays = {"x": cur, **{w: weights[name][w] for w in WEIGHTS}}
        j = chain.residual_from[k] if chain.residual_from else None
        if j is not None:
            arrays["res"] = x if j == -1 else outs[j]
        # after the first member x is a boundary tensor: readable past its end, as in the chain
        y, counters, _ = run_emitted(kernels[name], built[name], arrays, BOUNDARY_SLACK if k else 0)
        for key, v in counters.items():
            summed[key] = summed.get(key, 0) + v
        outs.append(y)
        cur = y
    return cur, summed


def check_chain(chain, kernels: dict, built: dict, x: np.ndarray,
                weights: dict[str, dict], chunks: int = 1) -> tuple[ChainCheck, np.ndarray]:
    """kernels / built: member -> EmittedKernel of its chain plan (one image chunk's where chunks
    > 1) / its emulator build; x: the chain's input; weights: member -> w_dw, b_dw, w_pw, b_pw
    (kernel layouts)."""
    ec = emit_chain(chain.name, [kernels[b] for b in chain.blocks], chain.residual_from, chain.stages, chunks)
    y_members, summed = run_members(chain, kernels, built, x, weights, chunks)
    t0 = time.perf_counter()
    kernel = build_chain(ec)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    y, got = run_chain(ec, kernel, x, weights)
    run_s = time.perf_counter() - t0
    g, r = np.asarray(y, np.float64), np.asarray(y_members, np.float64)
    err = float("inf") if np.isnan(g).any() else float(np.abs(g - r).max())
    scale = float(np.abs(r).max())
    return (ChainCheck(chain.name, ec.symbol, chain.blocks, ec.block_dim, err, err / scale if scale else err,
                       got, summed, build_s, run_s, chain.stages, "AI core" if ec.coupled else "(AIC + 2 AIV)",
                       sum(ek.plan.prefetch for ek in ec.blocks), _warm_reads(ec, chunks)), y)


def _warm_reads(ec, chunks: int) -> int:
    if chunks <= 1:
        return 0
    kplans = [ek.plan for ek in ec.blocks]
    return warm_bytes(chunks, kplans, [build_program(p) for p in kplans])
