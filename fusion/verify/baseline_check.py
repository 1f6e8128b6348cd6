"""The vendor-like baseline's emitted kernels (fusion/codegen/ascendc/emit_baseline.py) on the host
emulator: outputs against NumPy, counters against the program the simulator times
(schedules/baseline_program.py, counted by fusion/cost/baseline.counts)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fusion.codegen.ascendc.emit_baseline import BaselineKernel, emit_dw, emit_gemm
from fusion.core.ir import C0
from fusion.core.soc import SocSpec
from fusion.cost.baseline import counts
from fusion.emu import build_kernel
from schedules.baseline_program import BaselineProgram, DwShape
from schedules.steps import Move
from schedules.workload import ceil_div

# emulator counter -> the program's count of the same thing
COUNTER_KEYS = {"gm_read_bytes": "gm_read_bytes", "gm_write_bytes": "gm_write_bytes",
                "vector_instructions": "vector_instrs", "vector_repeats": "vector_repeats",
                "cube_fractals": "cube_fractals"}
DMA_COUNTERS = ("dma_gm_to_ub", "dma_gm_to_l1", "dma_ub_to_gm", "dma_l0c_to_gm")


@dataclass(frozen=True)
class BaselineCheck:
    kernel: str
    soc: str
    block_dim: int
    max_rel: float
    emulator: dict[str, int]
    program: dict[str, int]
    l0_switches: int = 0   # L0 allocations that got the other buffer of their queue (ping/pong)

    @property
    def counters_equal(self) -> bool:
        return self.emulator == self.program


def _l0_loads(prog: BaselineProgram) -> int:
    """The program's L1 -> L0A / L0B moves: one L0 buffer allocated each (emulator: l0_allocs)."""
    return sum(s.cores * times * sum(type(st) is Move and st.path in ("L1->L0A", "L1->L0B") for it in unit for st in it)
               for s in prog.seqs for unit, times in s.runs)


def _compare(k: BaselineKernel, soc: SocSpec, res, y: np.ndarray, ref: np.ndarray) -> BaselineCheck:
    prog = counts(soc, k.program)
    emu = {key: int(res.counters.get(key, 0)) for key in COUNTER_KEYS}
    emu["dma_transfers"] = int(sum(res.counters.get(c, 0) for c in DMA_COUNTERS))
    want = {key: int(prog.get(p, 0)) for key, p in COUNTER_KEYS.items()}
    want["dma_transfers"] = int(prog.get("dma_transfers", 0))
    emu["l0_allocs"], want["l0_allocs"] = int(res.counters.get("l0_allocs", 0)), _l0_loads(k.program)
    scale = float(np.abs(ref).max()) or 1.0
    err = float(np.abs(y.astype(np.float64) - ref).max()) if np.isfinite(y).all() else float("inf")
    return BaselineCheck(k.symbol, soc.name, k.block_dim, err / scale, emu, want,
                         int(res.counters.get("l0_alloc_switches", 0)))


def _act(v: np.ndarray, act: str) -> np.ndarray:
    if act == "relu":
        return np.maximum(v, 0)
    if act == "relu6":
        return np.clip(v, 0, 6)
    return v


def check_dw(soc: SocSpec, d: DwShape, seed: int = 0, on_cube: bool | None = None) -> BaselineCheck:
    """Runs the baseline DW kernel of `d` (its form on `soc`, or `on_cube`) on random fp16 data
    (NC1HWC0, channel tail zero). The cube form reads each tap as a diagonal 16 x 16 fractal and
    the bias in fp32, repeated over 4 pixels (emit_baseline.emit_dw), as the host prepares them."""
    rng = np.random.default_rng(seed)
    k = emit_dw(soc, d, on_cube=on_cube)
    cube = k.symbol == "baseline_dw_cube"
    c1, taps = d.c1, d.kh * d.kw
    x = np.zeros((d.batch, c1 * C0, d.h, d.w), np.float16)
    x[:, :d.channels] = rng.uniform(-1, 1, (d.batch, d.channels, d.h, d.w)).astype(np.float16)
    wt = np.zeros((c1 * C0, d.kh, d.kw), np.float16)
    wt[:d.channels] = rng.uniform(-0.5, 0.5, (d.channels, d.kh, d.kw)).astype(np.float16)
    b = np.zeros(c1 * C0, np.float16)
    b[:d.channels] = rng.uniform(-0.5, 0.5, d.channels).astype(np.float16)
    x5 = np.ascontiguousarray(x.reshape(d.batch, c1, C0, d.h, d.w).transpose(0, 1, 3, 4, 2))
    w5 = np.ascontiguousarray(wt.reshape(c1, C0, taps).transpose(0, 2, 1))
    b5 = b.reshape(c1, C0).copy()
    if cube:   # (c1, taps, 16, 16) diagonal fractals; (c1, 4, 16) fp32 bias
        w5 = np.ascontiguousarray(w5[..., None] * np.eye(C0, dtype=np.float16))
        b5 = np.ascontiguousarray(np.repeat(b5.astype(np.float32)[:, None, :], 4, axis=1))
    y5 = np.full((d.batch, c1, d.out_h, d.out_w, C0), np.nan, np.float16)
    lib = build_kernel(k.source, k.symbol)
    res = lib.run([x5, w5, b5, y5, None, k.tiling_bytes()], block_dim=k.block_dim, soc=soc)
    # reference: fp32 over the padded input
    pad_b = max(0, (d.out_h - 1) * d.stride + d.kh - d.h - d.pad_top)
    pad_r = max(0, (d.out_w - 1) * d.stride + d.kw - d.w - d.pad_left)
    xp = np.pad(x.astype(np.float32), ((0, 0), (0, 0), (d.pad_top, pad_b), (d.pad_left, pad_r)))
    ref = np.zeros((d.batch, c1 * C0, d.out_h, d.out_w), np.float32)
    for i in range(d.kh):
        for j in range(d.kw):
            win = xp[:, :, i:i + (d.out_h - 1) * d.stride + 1:d.stride, j:j + (d.out_w - 1) * d.stride + 1:d.stride]
            ref += win * wt[:, i, j].astype(np.float32)[None, :, None, None]
    ref = _act(ref + b.astype(np.float32)[None, :, None, None], d.act)
    ref5 = ref.reshape(d.batch, c1, C0, d.out_h, d.out_w).transpose(0, 1, 3, 4, 2)
    return _compare(k, soc, res, y5, ref5)


def check_gemm(soc: SocSpec, h: int, w: int, cin: int, cout: int, split: tuple[int, int], act: str = "none",
               residual: bool = False, seed: int = 0) -> BaselineCheck:
    """Runs the baseline 1x1-convolution GEMM of one h x w image on random fp16 data."""
    rng = np.random.default_rng(seed)
    m = h * w
    k = emit_gemm(soc, m, cin, cout, split, act, residual)
    k1, n1 = ceil_div(cin, C0), ceil_div(cout, C0)
    x = np.zeros((k1 * C0, m), np.float16)
    x[:cin] = rng.uniform(-1, 1, (cin, m)).astype(np.float16)
    wt = np.zeros((k1 * C0, n1 * C0), np.float16)
    wt[:cin, :cout] = rng.uniform(-0.5, 0.5, (cin, cout)).astype(np.float16)
    r = np.zeros((n1 * C0, m), np.float16)
    r[:cout] = rng.uniform(-1, 1, (cout, m)).astype(np.float16)
    x5 = np.ascontiguousarray(x.reshape(k1, C0, m).transpose(0, 2, 1))            # (K1, m, 16)
    w5 = np.ascontiguousarray(wt.reshape(k1 * C0, n1, C0).transpose(1, 0, 2))     # (N1, K16, 16)
    r5 = np.ascontiguousarray(r.reshape(n1, C0, m).transpose(0, 2, 1))
    y5 = np.full((n1, m, C0), np.nan, np.float16)
    lib = build_kernel(k.source, k.symbol)
    res = lib.run([x5, w5, r5 if residual else None, y5, None, k.tiling_bytes()], block_dim=k.block_dim, soc=soc)
    acc = wt.astype(np.float32).T @ x.astype(np.float32)                           # (N16, m)
    acc = acc.astype(np.float16).astype(np.float32)      # the fp32 -> fp16 conversion leaving L0C
    if residual:
        acc = acc + r.astype(np.float32)
    ref = _act(acc, act)
    return _compare(k, soc, res, y5, ref.reshape(n1, C0, m).transpose(0, 2, 1))
