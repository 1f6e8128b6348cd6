"""Vendor-like unfused baseline: what an ATC-compiled network runs, kernel by kernel. MODELED.

Each kernel of fusion/cost/vendor_layers.py is costed from the cost model's public primitives
(dma_us, vec_op, cube_cycles, cycles_to_us) and the SoC table, never per shape:

  conv / gemm  implicit GEMM on the cube, as the vendor's matmul tiles it: the M × N output is
               split over up to `cube_cores` cores (the split with the least modeled time wins,
               as the vendor's tiling search does); each core walks its output in base blocks
               (128 × 256 for 16-bit operands, one L0C) and streams K through L1: an operand
               panel that fits in half of L1 is loaded once, otherwise once per block of the
               other operand. A convolution's A operand is its input feature map (the cube's
               load3d expands the taps on chip), read once per pass. Bias and ReLU ride in the
               Fixpipe; other activations and a fused residual cost a vector pass. Without a
               Fixpipe (310P) the fp32 result leaves L0C through UB on the vector pipe.
  dwconv       depthwise on the vector unit, its activation fused: per output row one
               multiply-add per tap at the fp32 accumulator width, + bias, act, cast.
  pool, eltwise, transdata   vector kernels bound by their DMA.

A kernel's time = launch(cores) + max(MTE2, cube, vector, MTE3 busy time of the busiest core)
+ the first block's fill. Re-reads hit L2 when the kernel's inputs fit in it; writes that fit
in L2 are absorbed by it (write-back) -- measured: the devkit's Add example streams 268 MB in and
134 MB out in 184.5 µs, more than HBM could move both ways (benchmarks/fidelity/points.json).
"""

from __future__ import annotations

from dataclasses import dataclass

from fusion.cost.primitives import ACC_BYTES, ACT_OPS, cube_cycles, cycles_to_us, dma_us, itemsize, vec_op
from schedules.l2 import produced_in_l2, write_hit
from fusion.core.soc import SocSpec, cube_side
from fusion.cost.vendor_layers import Layer
from schedules.workload import ceil_div
from fusion.cost.vendor_layers import layers_from_graph
from fusion.core.ir import c0_of
from schedules.quant_plan import l0c_requant_work

C0 = 16
BASE_M, BASE_N, BASE_K = 128, 256, 64   # the vendor's recommended 16-bit base block
STEP_K = 4                              # base-K steps one MTE2 instruction brings into L1
ROWS_PER_COPY = 8                       # output rows a vector kernel moves per DMA instruction


def launch_us(soc: SocSpec, cores: int) -> float:
    return soc.launch_base_us + soc.launch_per_core_us * cores


@dataclass(frozen=True)
class VendorKernel:
    name: str
    kind: str
    members: tuple[str, ...]
    cores: int
    launch_us: float
    mte2_us: float
    cube_us: float
    vector_us: float
    mte3_us: float
    fill_us: float
    time_us: float
    split: tuple[int, int] = (1, 1)

    @property
    def body_us(self) -> float:
        return self.time_us - self.launch_us


@dataclass(frozen=True)
class VendorNetwork:
    soc: str
    dtype: str
    kernels: tuple[VendorKernel, ...]

    @property
    def time_us(self) -> float:
        return sum(k.time_us for k in self.kernels)

    @property
    def launch_us(self) -> float:
        return sum(k.launch_us for k in self.kernels)

    def kernels_for(self, members) -> tuple[VendorKernel, ...]:
        """The kernels anchored on any of these ONNX nodes."""
        m = set(members)
        return tuple(k for k in self.kernels if k.members and k.members[0] in m)

    def for_members(self, members) -> float:
        """Modeled time of the kernels anchored on any of these ONNX nodes."""
        return sum(k.time_us for k in self.kernels_for(members))

    def one_launch_us(self, sync_us: float) -> float:
        """The same kernels run as one SuperKernel-like launch: the widest kernel's launch, every
        kernel's body, one all-core sync between consecutive kernels -- what fusion/driver/chain.py
        charges a chain of fused blocks, so the two differ only in the kernels' bodies."""
        if not self.kernels:
            return 0.0
        return (max(k.launch_us for k in self.kernels) + sum(k.body_us for k in self.kernels)
                + (len(self.kernels) - 1) * sync_us)


def copy_us(soc: SocSpec, nbytes: float, n_instr: int, direction: str, active: int, hit: float,
             burst_bytes: float | None = None) -> float:
    """`n_instr` DMA instructions moving `nbytes` on one core (setup paid per instruction)."""
    if nbytes <= 0:
        return 0.0
    bursts = 1 if burst_bytes is None else max(1, int(nbytes // max(1.0, burst_bytes)))
    setup = cycles_to_us(soc, soc.dma_setup_cycles)
    body = dma_us(soc, int(nbytes), bursts, direction, active, hit) - ceil_div(bursts, soc.dma_max_bursts) * setup
    return body + max(1, n_instr) * setup


def gemm_kernel(soc: SocSpec, name: str, m: int, k: int, n: int, dtype: str = "float16", *,
                a_unique: float | None = None, a_fmap: bool = False, act: str = "none",
                residual: bool = False, kind: str = "gemm", members: tuple[str, ...] = (),
                cores: int | None = None, init_us: float = 0.0, a_in_l2: bool = False) -> VendorKernel:
    """C[m, n] = A[m, k] · B[k, n] on the cube, tiled the vendor's way (see the module doc).
    `a_fmap`: A is a convolution's feature map of `a_unique` bytes (read once per pass, sliced by
    the M split) rather than an explicit m × k matrix; `a_in_l2`: A (and a residual) were just
    written by the previous kernel and are read from L2. `init_us`: a scalar head in the kernel body
    (the Ascend C Matmul API's, soc.matmul_init_us; ATC's statically tiled kernels have none)."""
    e = itemsize(dtype)
    c0k = c0_of(dtype)      # K is blocked in DataBlocks (32 int8, 16 fp16); N in 16-column fractals
    k16, n16 = ceil_div(k, c0k) * c0k, ceil_div(n, C0) * C0
    a_unique = float(m * k16 * e) if a_unique is None else float(a_unique)
    b_unique = float(k16 * n16 * e)
    out_total = float(m * n16 * e)
    max_cores = cores or soc.cube_cores
    res_total = out_total if residual else 0.0
    # inputs larger than L2: the vendor's L2 tiling walks M in passes whose A slice and all of B
    # fit in half of L2, so B comes from HBM once per pass
    passes = max(1, ceil_div(int(a_unique + b_unique), soc.l2_bytes // 2))
    hbm_in = a_unique + b_unique * passes + res_total
    if a_in_l2:
        hbm_in = b_unique * passes
    side = cube_side(soc)
    best = None
    for mp in range(1, min(max_cores, ceil_div(m, C0)) + 1):
        for np_ in range(1, min(max_cores // mp, ceil_div(n16, C0)) + 1):
            sm = ceil_div(ceil_div(m, mp), C0) * C0
            sn = ceil_div(ceil_div(n16, np_), C0) * C0
            mp_used, np_used = ceil_div(m, sm), ceil_div(n16, sn)
            used = mp_used * np_used
            bm, bn = ceil_div(sm, BASE_M), ceil_div(sn, BASE_N)
            a_core = a_unique * min(1.0, sm / m) if a_fmap else float(sm * k16 * e)
            b_core = float(sn * k16 * e)
            half_l1 = soc.l1_bytes / 2
            if a_core <= half_l1 or b_core <= half_l1:
                loads = a_core + b_core
            else:
                loads = a_core * bn + b_core * bm
            out_core = float(sm * sn * e)
            in_core = loads + (out_core if residual else 0.0)
            hit = max(0.0, 1.0 - hbm_in / (in_core * used))
            n_instr = bm * bn * ceil_div(k16, BASE_K * STEP_K) * 2
            mte2 = copy_us(side, in_core, n_instr, "in", used, hit)
            fr = ceil_div(sm, C0) * (k16 // c0k) * ceil_div(sn, C0)
            cube = cycles_to_us(soc, cube_cycles(soc, fr, dtype))
            mte3 = copy_us(soc, out_core, bm * bn, "out", used, write_hit(soc, out_total))
            epi_ops = (0 if act in soc.fixpipe_acts else ACT_OPS.get(act, 1)) + (1 if residual else 0)
            vec = cycles_to_us(soc, (vec_op(soc, sm * sn, e) * epi_ops).cycles(soc)) if epi_ops else 0.0
            if soc.coupled:   # no Fixpipe (310P): the fp32 result leaves L0C through UB, moved by the
                # vector pipe (relu and the cast on the way), as the fused kernel's is charged
                vec += cycles_to_us(soc, sm * sn * ACC_BYTES / soc.l0c_to_ub_bytes_per_cycle)
                if e == 1:    # int8: dequantized on the move, + zp and Cast -> int8 on the vector
                    vec += cycles_to_us(soc, l0c_requant_work(soc, sm * sn, False).cycles(soc))
            # pipeline fill: the first base block's first K step
            fill = copy_us(side, (min(sm, BASE_M) + min(sn, BASE_N)) * min(k16, BASE_K) * e, 2, "in", used, 0.0)
            body = max(mte2, cube, vec, mte3) + fill + init_us
            t = launch_us(soc, used) + body
            if best is None or t < best.time_us:
                best = VendorKernel(name, kind, members, used, launch_us(soc, used), mte2, cube, vec,
                                    mte3, fill, t, (mp_used, np_used))
    return best


def _vector_kernel(soc: SocSpec, name: str, kind: str, members, units: int, in_bytes: float,
                   out_bytes: float, work, n_inputs: int = 1, in_hit: float = 0.0) -> VendorKernel:
    """A vector kernel: `units` equal rows spread over the vector cores; `work(rows)` is the
    VecWork of the busiest core (instructions span contiguous rows, as the vendor's tiles do)."""
    used = max(1, min(soc.vector_cores, units))
    per = ceil_div(units, used)
    frac = per / units
    instr = max(1, ceil_div(per, ROWS_PER_COPY))
    mte2 = copy_us(soc, in_bytes * frac, instr * n_inputs, "in", used, in_hit)
    mte3 = copy_us(soc, out_bytes * frac, instr, "out", used, write_hit(soc, out_bytes))
    vec = cycles_to_us(soc, work(per).cycles(soc))
    fill = (mte2 + mte3) / instr if instr > 1 else 0.0
    body = max(mte2, vec, mte3) + fill
    return VendorKernel(name, kind, members, used, launch_us(soc, used), mte2, 0.0, vec, mte3, fill,
                        launch_us(soc, used) + body)


def layer_kernel(soc: SocSpec, L: Layer, dtype: str = "float16") -> VendorKernel:
    e = itemsize(dtype)
    c1_in, c1_out = ceil_div(L.cin, C0), ceil_div(L.cout, C0)
    in_bytes = float(L.batch * c1_in * C0 * L.h * L.w * e)
    out_bytes = float(L.batch * c1_out * C0 * L.out_h * L.out_w * e)
    in_l2 = produced_in_l2(soc, in_bytes, L.residual)
    if L.kind == "conv":
        # small-channel inputs (the stem) pack the taps into K instead of padding C to 16
        k = ceil_div(L.cin * L.kh * L.kw, C0) * C0 if L.cin < C0 else c1_in * C0 * L.kh * L.kw
        return gemm_kernel(soc, L.name, L.batch * L.out_h * L.out_w, k, L.cout, dtype,
                           a_unique=in_bytes, a_fmap=True, act=L.act, residual=L.residual,
                           kind="conv", members=L.members, a_in_l2=in_l2)
    if L.kind == "gemm":
        return gemm_kernel(soc, L.name, L.batch, L.cin, L.cout, dtype, act=L.act, members=L.members,
                           a_in_l2=in_l2)
    row = L.out_w * C0
    hit = 1.0 if in_l2 else 0.0
    if L.kind == "dwconv":
        # per tap one multiply-add over the core's rows, then bias and the activation (fp16, as
        # the vendor's vector depthwise computes)
        units = L.batch * c1_out * L.out_h
        taps, post = L.kh * L.kw, 1 + ACT_OPS.get(L.act, 1)
        halo = 1.0 + max(0, L.kh - L.stride) / max(1, L.stride * min(L.out_h, ceil_div(units, soc.vector_cores)))
        return _vector_kernel(soc, L.name, "dwconv", L.members, units, in_bytes * halo, out_bytes,
                              lambda r: vec_op(soc, r * row, e) * (taps + post), in_hit=hit)
    if L.kind == "pool":
        units = L.batch * c1_out * L.out_h
        taps = L.kh * L.kw
        return _vector_kernel(soc, L.name, "pool", L.members, units, in_bytes, out_bytes,
                              lambda r: vec_op(soc, r * row, e) * taps, in_hit=hit)
    if L.kind == "transdata":   # the network input arrives from the host: not in L2
        units = L.batch * c1_in * L.h
        raw = float(L.batch * L.cin * L.h * L.w * e)
        return _vector_kernel(soc, L.name, "transdata", L.members, units, raw, in_bytes,
                              lambda r: vec_op(soc, r * L.w * C0, e) * 2)
    # eltwise (a leftover activation, Add, ...)
    units = L.batch * c1_out * L.out_h
    n_in = 2 if L.residual else 1
    return _vector_kernel(soc, L.name, "eltwise", L.members, units, in_bytes * n_in, out_bytes,
                          lambda r: vec_op(soc, r * row, e) * (L.ops or max(1, ACT_OPS.get(L.act, 1))), n_in, hit)


# vector ops per element of a vendor LayerNorm over channels: sum, subtract the mean, square, sum,
# scale by the reciprocal deviation, gamma, beta (the counts of schedules/channel_norm.ln_ops, per block)
LN_VECTOR_OPS = 7


def block_layers(wl, members: tuple[str, str] = ("dw", "pw")) -> tuple[Layer, ...]:
    """The vendor kernels of one DW-separable block (schedules/workload.DwSepWorkload): the DW
    with its act1, then the 1x1 conv with act2 and the residual in its epilogue."""
    kh, kw = wl.kernel
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
    return VendorNetwork(soc.name, dtype, tuple(layer_kernel(soc, L, dtype) for L in layers))


def model_graph(graph, soc: SocSpec, dtype: str = "float16") -> VendorNetwork:
    return model_network(layers_from_graph(graph), soc, dtype)
