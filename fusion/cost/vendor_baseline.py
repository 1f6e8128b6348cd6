"""Vendor-like unfused baseline: what an ATC-compiled network runs, kernel by kernel. MODELED.

Every kernel of fusion/cost/vendor_layers.py is a lowered program of the fused kernels' step types
(schedules/baseline_program.py: GEMM / convolution on the cube with a Fixpipe or L0C -> UB
epilogue and the residual Add fused, the depthwise conv on the vector unit (910B) or the cube
(310P), pooling, element-wise and TransData on the vector unit), timed by the fused kernels' step
simulator (fusion/cost/baseline.py). A GEMM's core split is the one with the least simulated
time, as the vendor's tiling search picks. Re-reads hit L2 when the kernel's inputs fit in it;
writes that fit in L2 are absorbed by it (write-back) -- measured: the devkit's Add example
streams 268 MB in and 134 MB out in 184.5 µs, more than HBM could move both ways
(benchmarks/fidelity/points.json).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from fusion.core.soc import SocSpec
from fusion.cost.baseline import VendorKernel, launch_us, time_program
from fusion.cost.primitives import ACT_OPS, cycles_to_us, dma_us, itemsize
from fusion.cost.vendor_layers import BN_VECTOR_OPS, Layer, layers_from_graph, node_layer
from schedules.baseline_program import (
    BaselineProgram,
    DwShape,
    dw_program,
    gemm_program,
    gemm_splits,
    vector_program,
)
from schedules.l2 import produced_in_l2, write_hit  # noqa: F401  (write_hit: fidelity reads it here)
from schedules.workload import ceil_div

C0 = 16

__all__ = ["BlockBaseline", "VendorKernel", "VendorNetwork", "block_baseline", "block_kernels", "copy_us",
           "framework_layers", "gemm_kernel", "launch_us", "layer_kernel", "layer_program", "model_graph",
           "model_network", "node_kernel", "one_launch_cores", "write_hit"]


class _Kernels:
    """Sums over a sequence of vendor-like kernels (`self.kernels`), each launched on its own."""

    kernels: tuple[VendorKernel, ...]

    @property
    def time_us(self) -> float:
        return sum(k.time_us for k in self.kernels)

    @property
    def launch_us(self) -> float:
        return sum(k.launch_us for k in self.kernels)

    @property
    def gm_bytes(self) -> int:
        return sum(k.gm_bytes for k in self.kernels)

    @property
    def hbm_bytes(self) -> float:
        """What reaches HBM over all kernels (each intermediate written and read back)."""
        return sum(k.hbm_bytes for k in self.kernels)


@dataclass(frozen=True)
class VendorNetwork(_Kernels):
    soc: str
    dtype: str
    kernels: tuple[VendorKernel, ...]
    layers: tuple[Layer, ...] = ()     # the layer each kernel runs (same order), where known

    def kernels_for(self, members) -> tuple[VendorKernel, ...]:
        """The kernels anchored on any of these ONNX nodes."""
        m = set(members)
        return tuple(k for k in self.kernels if k.members and k.members[0] in m)

    def for_members(self, members) -> float:
        """Modeled time of the kernels anchored on any of these ONNX nodes."""
        return sum(k.time_us for k in self.kernels_for(members))

    def one_launch_us(self, soc: SocSpec, sync_us: float) -> float:
        """The same kernels run as one SuperKernel-like launch: that launch (one_launch_cores), every
        kernel's body, one all-core sync between consecutive kernels -- what fusion/driver/chain.py
        charges a chain of fused blocks, so the two differ only in the kernels' bodies."""
        if not self.kernels:
            return 0.0
        return (launch_us(soc, one_launch_cores(soc, self.kernels)) + sum(k.body_us for k in self.kernels)
                + (len(self.kernels) - 1) * sync_us)


def one_launch_cores(soc: SocSpec, kernels) -> int:
    """The cores one launch running all of `kernels` starts. 910B (decoupled): a launch holding
    both cube and vector kernels is a MIX launch of the most AICs any cube kernel uses and the most
    AIVs any vector kernel uses -- what a fused two-phase kernel (AICs + AIVs) is charged; 310P: the
    AI cores run both, the most any kernel uses."""
    if soc.coupled:
        return max((k.cores for k in kernels), default=0)
    return (max((k.cores for k in kernels if k.engine == "cube"), default=0)
            + max((k.cores for k in kernels if k.engine != "cube"), default=0))


def copy_us(soc: SocSpec, nbytes: float, n_instr: int, direction: str, active: int, hit: float,
            burst_bytes: float | None = None) -> float:
    """`n_instr` DMA instructions moving `nbytes` on one core (setup paid per instruction): the
    devkit's copy examples of the fidelity suite (a DMA primitive, not a kernel's time)."""
    if nbytes <= 0:
        return 0.0
    bursts = 1 if burst_bytes is None else max(1, int(nbytes // max(1.0, burst_bytes)))
    setup = cycles_to_us(soc, soc.dma_setup_cycles)
    body = dma_us(soc, int(nbytes), bursts, direction, active, hit) - ceil_div(bursts, soc.dma_max_bursts) * setup
    return body + max(1, n_instr) * setup


def _best_gemm(soc: SocSpec, build, m: int, n: int, cores: int | None, init_us: float) -> VendorKernel:
    best = None
    for split in gemm_splits(soc, m, n, cores):
        k = time_program(soc, build(split), init_us)
        if best is None or k.time_us < best.time_us:
            best = k
    return best


def gemm_kernel(soc: SocSpec, name: str, m: int, k: int, n: int, dtype: str = "float16", *,
                a_unique: float | None = None, a_fmap: bool = False, act: str = "none",
                residual: bool = False, kind: str = "gemm", members: tuple[str, ...] = (),
                cores: int | None = None, init_us: float = 0.0, a_in_l2: bool = False) -> VendorKernel:
    """C[m, n] = A[m, k] · B[k, n] on the cube (schedules/baseline_program.gemm_program), the core
    split with the least simulated time. `init_us`: a scalar head in the kernel body (the Ascend C
    Matmul API's, soc.matmul_init_us; ATC's statically tiled kernels have none)."""
    def build(split):
        return gemm_program(soc, name, m, k, n, dtype, split, a_unique=a_unique, a_fmap=a_fmap, act=act,
                            residual=residual, kind=kind, members=members, a_in_l2=a_in_l2)
    return _best_gemm(soc, build, m, n, cores, init_us)


def dw_shape(L: Layer, dtype: str) -> DwShape:
    pad_t = max(0, ((L.out_h - 1) * L.stride + L.kh - L.h) // 2)
    pad_l = max(0, ((L.out_w - 1) * L.stride + L.kw - L.w) // 2)
    return DwShape(L.batch, L.cout, L.h, L.w, L.out_h, L.out_w, L.kh, L.kw, L.stride, pad_t, pad_l, L.act, dtype)


def layer_program(soc: SocSpec, L: Layer, dtype: str = "float16", split=None, rows: int | None = None
                  ) -> BaselineProgram:
    """The lowered program of one vendor kernel (a GEMM's `split` given, or its first candidate;
    a vector kernel's `rows` per DMA, or as many as fit UB)."""
    e = itemsize(dtype)
    c1_in, c1_out = ceil_div(L.cin, C0), ceil_div(L.cout, C0)
    in_bytes = float(L.batch * c1_in * C0 * L.h * L.w * e)
    in_l2 = produced_in_l2(soc, in_bytes, L.residual)
    if L.kind in ("conv", "gemm"):
        if L.kind == "conv":
            # small-channel inputs (the stem) pack the taps into K instead of padding C to 16
            k = ceil_div(L.cin * L.kh * L.kw, C0) * C0 if L.cin < C0 else c1_in * C0 * L.kh * L.kw
            m, kw = L.batch * L.out_h * L.out_w, dict(a_unique=in_bytes, a_fmap=True, residual=L.residual)
        else:
            m, k, kw = L.batch, L.cin, {}
        split = split or gemm_splits(soc, m, L.cout)[0]
        return gemm_program(soc, L.name, m, k, L.cout, dtype, split, act=L.act, kind=L.kind,
                            members=L.members, a_in_l2=in_l2, **kw)
    if L.kind == "dwconv":
        return dw_program(soc, L.name, dw_shape(L, dtype), L.members, in_l2)
    row = L.out_w * C0
    if L.kind == "pool":
        units = L.batch * c1_out * L.out_h
        return vector_program(soc, L.name, "pool", L.members, units, ceil_div(int(in_bytes), units),
                              row * e, row, L.kh * L.kw, dtype, in_l2=in_l2, rows=rows)
    if L.kind == "transdata":   # the network input arrives from the host: not in L2
        units = L.batch * c1_in * L.h
        return vector_program(soc, L.name, "transdata", L.members, units, ceil_div(L.cin * L.w * e, c1_in),
                              L.w * C0 * e, L.w * C0, 2, dtype, rows=rows)
    if L.kind == "resize":   # per output row: its share of the input read, out_w pixels written
        units = L.batch * c1_out * L.out_h
        return vector_program(soc, L.name, "resize", L.members, units, ceil_div(int(in_bytes), units), row * e,
                              row, max(1, L.ops), dtype, in_l2=in_l2, rows=rows)
    if L.kind == "concat":   # every output row copied once through UB from the input that holds it
        units = L.batch * c1_out * L.out_h
        return vector_program(soc, L.name, "concat", L.members, units, row * e, row * e, row, 1, dtype,
                              in_l2=in_l2, rows=rows)
    # eltwise (a leftover activation, Add, ...)
    units = L.batch * c1_out * L.out_h
    n_in = 2 if L.residual else 1
    return vector_program(soc, L.name, "eltwise", L.members, units, ceil_div(int(in_bytes), units), row * e,
                          row, L.ops or max(1, ACT_OPS.get(L.act, 1)), dtype, n_in, in_l2, rows)


def node_kernel(graph, node, soc: SocSpec, dtype: str = "float16") -> tuple[VendorKernel, Layer]:
    """The vendor-like kernel that runs one ONNX node on its own, and its layer."""
    L = node_layer(graph, node)
    return layer_kernel(soc, L, dtype), L


@lru_cache(maxsize=4096)
def layer_kernel(soc: SocSpec, L: Layer, dtype: str = "float16") -> VendorKernel:
    """The vendor-like kernel of one layer, its tiling the one with the least simulated time among
    the candidates the vendor's tiling weighs: a GEMM's core splits, a vector kernel's tile
    (UB-sized, or a half / quarter / eighth of a core's share, so double buffering overlaps)."""
    if L.kind in ("conv", "gemm"):
        m = L.batch * L.out_h * L.out_w if L.kind == "conv" else L.batch
        return _best_gemm(soc, lambda split: layer_program(soc, L, dtype, split), m, L.cout, None, 0.0)
    if L.kind == "dwconv":
        return time_program(soc, layer_program(soc, L, dtype))
    fit = layer_program(soc, L, dtype)
    rows = int(fit.tile.split()[0])
    share = max(s.iterations for s in fit.seqs) * rows
    best = time_program(soc, fit)
    for r in sorted({ceil_div(share, d) for d in (2, 4, 8)} - {rows}):
        if 0 < r < rows:
            k = time_program(soc, layer_program(soc, L, dtype, rows=r))
            if k.time_us < best.time_us:
                best = k
    return best


# vector ops per element of a vendor LayerNorm over channels: sum, subtract the mean, square, sum,
# scale by the reciprocal deviation, gamma, beta (the counts of schedules/channel_norm.ln_ops, per block)
LN_VECTOR_OPS = 7


def block_layers(wl, members: tuple[str, str] = ("dw", "pw")) -> tuple[Layer, ...]:
    """The vendor kernels of one DW-separable block (schedules/workload.DwSepWorkload): the DW
    with its act1, then the 1x1 conv with act2 and the residual in its epilogue."""
    kh, kw = wl.kernel
    if getattr(wl, "head", False):   # pool -> Gemm as the vendor runs them (passes/head_dwsep.py)
        return (Layer("pool", members[0], wl.batch, wl.cin, wl.cin, wl.height, wl.width, 1, 1, kh, kw,
                      members=(members[0],)),
                Layer("gemm", members[1], wl.batch, wl.cin, wl.cout, 1, 1, 1, 1, members=(members[1],)))
    dw = Layer("dwconv", members[0], wl.batch, wl.cin, wl.cin, wl.height, wl.width, wl.out_height,
               wl.out_width, kh, kw, wl.stride[0], wl.act1, False, (members[0],))
    pw = Layer("conv", members[1], wl.batch, wl.cin, wl.cout, wl.out_height, wl.out_width,
               wl.out_height, wl.out_width, 1, 1, 1, wl.act2, wl.residual, (members[1],))
    if getattr(wl, "ln_eps", None) is not None:   # a channel LayerNorm between them: a kernel of its own
        norm = Layer("eltwise", "norm", wl.batch, wl.cin, wl.cin, wl.out_height, wl.out_width, wl.out_height,
                     wl.out_width, members=("norm",), ops=LN_VECTOR_OPS)
        return dw, norm, pw
    if not getattr(wl, "se", False):
        return dw, pw
    # squeeze-and-excitation, as layers_from_graph lists its nodes: the global mean (pool), the two
    # 1x1 convs on one pixel with their activations in the epilogue, the Mul of the DW result
    # (two inputs, the second a broadcast scale)
    oh, ow, n, c, r = wl.out_height, wl.out_width, wl.batch, wl.cin, wl.se_mid
    gate = "sigmoid" if wl.se_gate == "sigmoid" else "hardsigmoid"
    se = (Layer("pool", "se_mean", n, c, c, oh, ow, 1, 1, oh, ow, 1, members=("se_mean",)),
          Layer("conv", "se_reduce", n, c, r, 1, 1, 1, 1, act=wl.se_act.split("(")[0], members=("se_reduce",)),
          Layer("conv", "se_expand", n, r, c, 1, 1, 1, 1, act=gate, members=("se_expand",)),
          Layer("eltwise", "se_mul", n, c, c, oh * ow, 1, oh * ow, 1, residual=True, members=("se_mul",)))
    return (dw, *se, pw)


def block_kernels(wl, soc: SocSpec) -> tuple[VendorKernel, ...]:
    """The vendor-like DW [, channel norm] and PW kernels a fused block replaces (and its SE's
    kernels, if any), modeled on `soc` in wl.dtype."""
    return tuple(layer_kernel(soc, L, wl.dtype) for L in block_layers(wl))


def model_network(layers, soc: SocSpec, dtype: str = "float16") -> VendorNetwork:
    layers = tuple(layers)
    return VendorNetwork(soc.name, dtype, tuple(layer_kernel(soc, L, dtype) for L in layers), layers)


def model_graph(graph, soc: SocSpec, dtype: str = "float16") -> VendorNetwork:
    return model_network(layers_from_graph(graph), soc, dtype)


def framework_layers(wl, members: tuple[str, str] = ("dw", "pw")) -> tuple[Layer, ...]:
    """The per-op kernels a framework's eager mode launches for one block: every convolution of
    block_layers split into the conv alone, its BatchNorm, its activation and its residual Add,
    each its own vector kernel (DW, BN, act, PW, BN, act [, Add]); the other layers (pooling,
    the classifier GEMM, SE, a channel norm) as the vendor runs them."""
    out: list[Layer] = []
    for L in block_layers(wl, members):
        if L.kind not in ("conv", "dwconv"):
            out.append(L)
            continue
        out.append(replace(L, act="none", residual=False))
        shape = dict(batch=L.batch, cin=L.cout, cout=L.cout, h=L.out_h, w=L.out_w, out_h=L.out_h, out_w=L.out_w)
        out.append(Layer("eltwise", f"{L.name}_bn", **shape, members=(f"{L.name}_bn",), ops=BN_VECTOR_OPS))
        if L.act != "none":
            out.append(Layer("eltwise", f"{L.name}_{L.act}", **shape, act=L.act, members=(f"{L.name}_act",)))
        if L.residual:
            out.append(Layer("eltwise", f"{L.name}_add", **shape, residual=True, members=(f"{L.name}_add",)))
    return tuple(out)


@dataclass(frozen=True)
class BlockBaseline(_Kernels):
    """The unfused kernels one fused block replaces, each a lowered program on the step simulator.
    variant "vendor": what the vendor's graph compiler launches (block_layers); "framework": the
    per-op kernels of a framework's eager mode (framework_layers). MODELED."""
    variant: str
    kernels: tuple[VendorKernel, ...]
    label: str = "modeled"

    def as_dict(self) -> dict:
        return {"variant": self.variant, "label": self.label, "time_us": self.time_us, "gm_bytes": self.gm_bytes,
                "hbm_bytes": self.hbm_bytes, "launch_us": self.launch_us,
                "kernels": [{"name": k.name, "kind": k.kind, "engine": k.engine, "cores": k.cores,
                             "time_us": k.time_us, "launch_us": k.launch_us} for k in self.kernels]}


BLOCK_VARIANTS = {"vendor": block_layers, "framework": framework_layers}


def block_baseline(wl, soc: SocSpec, variant: str = "vendor") -> BlockBaseline:
    """One block's unfused kernels (BLOCK_VARIANTS) on `soc` in wl.dtype, each timed by the step
    simulator (layer_kernel, memoized per layer)."""
    if variant not in BLOCK_VARIANTS:
        raise ValueError(f"unknown unfused variant {variant!r}")
    return BlockBaseline(variant, tuple(layer_kernel(soc, L, wl.dtype) for L in BLOCK_VARIANTS[variant](wl)))
