"""int8 1×1 convolutions on AVX-512 VNNI (vpdpbusd: 16 int32 lanes += 4 uint8 × int8 products each),
for the PW half of a fused QDwSep and for standalone 1×1 QConvs, when this CPU has VNNI.

The GEMM runs over a pixel-major uint8 tile: `pack[n, h, w, c]` (channels padded to 4 with 0),
built per row tile from the NCHW input (or, in the fused block, straight from the DW rows'
requantized values: the DW result exists only as this tile). int8 activations are moved to uint8
by +128 and the shift folded into the bias with the zero point (Σ(x − zp)·w = Σ(x + 128)·w −
(zp + 128)·Σw, exact in int32). Weights are packed [O/16, C/4, 16, 4] (zero padded). The int32
accumulator [n, h, w, O/16, 16] is requantized into the NCHW output exactly as
schedules/quant_ops does (ORT's QLinearConv). Without VNNI the plain int32 kernels run: the
AVX-512 fallback intrinsic (vpmaddubsw) saturates int16 pairs and would not be exact.
"""

from __future__ import annotations

import functools

import numpy as np
from tvm import te, tirx
from tvm.s_tir import TensorIntrin
from tvm.script import tirx as T

from schedules.targets import _cpu_flags, llvm_target

I32 = "int32"


# (not imported from tvm.s_tir.tensor_intrin: that package imports its CUDA/ROCm intrinsics,
# ~30 s of CPU on every start-up)
@T.prim_func(s_tir=True)
def _dot_16x4_desc(A: T.Buffer((4,), "uint8", offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
                   C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
    with T.sblock("root"):
        T.reads(C[0:16], A[0:4], B[0:16, 0:4])
        T.writes(C[0:16])
        for i in T.serial(0, 16):
            for k in T.serial(0, 4):
                with T.sblock("update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    C[vi] = C[vi] + T.cast(A[vk], "int32") * T.cast(B[vi, vk], "int32")


@T.prim_func(s_tir=True)
def _vpdpbusd(A: T.Buffer((4,), "uint8", offset_factor=1), B: T.Buffer((16, 4), "int8", offset_factor=1),
              C: T.Buffer((16,), "int32", offset_factor=1)) -> None:
    # TVM's own VNNI intrinsic passes the byte operands as <16 x i32>; the LLVM of TVM 0.27
    # declares vpdpbusd on <64 x i8> (the module fails to verify), so they are reinterpreted here
    with T.sblock("root"):
        T.reads(C[0:16], A[0:4], B[0:16, 0:4])
        T.writes(C[0:16])
        a = T.reinterpret(T.broadcast(T.reinterpret(A.vload([0], "uint8x4"), dtype="int32"), 16),
                          dtype="int8x64")
        C[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
            T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"), C.vload([0], dtype="int32x16"),
            a, B.vload([0, 0], dtype="int8x64"), dtype="int32x16")


VNNI_INTRIN = "megafuse_dot_16x4_vpdpbusd"
TensorIntrin.register(VNNI_INTRIN, _dot_16x4_desc, _vpdpbusd, override=True)


@functools.cache
def has_vnni() -> bool:
    return {"avx512_vnni", "avx512f", "avx512bw"} <= _cpu_flags() and llvm_target().get("mcpu") == "x86-64-v4"


def vnni_target() -> dict:
    return {**llvm_target(), "mattr": ["+avx512vnni"]}


def usable(a: dict, w: np.ndarray) -> bool:
    """A 1×1 stride-1 unpadded dense conv with at least 16 outputs (one whole vpdpbusd: with fewer
    the consumer's region shrinks the 16-lane loop) whose weights (minus their zero point) fit int8."""
    wz = w.astype(np.int32) - np.asarray(a["w_zp"], np.int32).reshape(-1, 1, 1, 1)
    return (has_vnni() and w.shape[0] >= 16 and a["kernel"] == (1, 1) and a["strides"] == (1, 1) and a["group"] == 1
            and a["pads"] == (0, 0, 0, 0) and wz.min(initial=0) >= -128 and wz.max(initial=0) <= 127)


def pack_constants(w: np.ndarray, b: np.ndarray, a: dict, x_dtype: str):
    """(packed weights [O/16, C/4, 16, 4] int8, folded int32 bias (O,), mult (O,))."""
    o, c = w.shape[:2]
    wz = (w.astype(np.int32) - np.asarray(a["w_zp"], np.int32).reshape(-1, 1, 1, 1)).reshape(o, c)
    zp = int(a["x_zp"]) + (128 if x_dtype == "int8" else 0)
    bias = b.astype(np.int64) - zp * wz.sum(axis=1)
    op, cp = -(-o // 16) * 16, -(-c // 4) * 4
    wp = np.zeros((op, cp), np.int8)
    wp[:o, :c] = wz
    wp = np.ascontiguousarray(wp.reshape(op // 16, 16, cp // 4, 4).transpose(0, 2, 1, 3))
    return wp, bias.astype(np.int32), np.asarray(a["mult"], np.float32)


def pw_compute(pixel, shape, c: int, x_dtype: str, a: dict, requant, prefix: str = "pw"):
    """pixel(i, ci, h, w) -> the int8/uint8 input value; shape (n, h, w). Returns (y, placeholders)."""
    n, h, wd = shape
    o = len(a["mult"])
    op, cp = -(-o // 16) * 16, -(-c // 4) * 4
    shift = 128 if x_dtype == "int8" else 0
    pack = te.compute((n, h, wd, cp), lambda i, y, z, ci: tirx.if_then_else(
        ci < c, (pixel(i, ci, y, z).astype(I32) + shift).astype("uint8"), tirx.const(0, "uint8")),
        name=f"{prefix}_pack")
    wp = te.placeholder((op // 16, cp // 4, 16, 4), "int8", name=f"{prefix}w")
    b = te.placeholder((o,), I32, name=f"{prefix}b")
    m = te.placeholder((o,), "float32", name=f"{prefix}m")
    k4 = te.reduce_axis((0, cp // 4), "k4")
    ki = te.reduce_axis((0, 4), "ki")
    acc = te.compute((n, h, wd, op // 16, 16), lambda i, y, z, ob, oi: te.sum(
        pack[i, y, z, k4 * 4 + ki].astype(I32) * wp[ob, k4, oi, ki].astype(I32), axis=[k4, ki]),
        name=f"{prefix}_vacc")
    y = te.compute((n, o, h, wd), lambda i, co, yy, z: requant(
        acc[i, yy, z, co // 16, co % 16] + b[co], m[co]), name="y")
    return y, (wp, b, m)


def schedule_pw(sch, tile, acc_name: str, pack_name: str):
    """Under the row-tile loop: the packed input tile, then the VNNI accumulation."""
    acc = sch.get_sblock(acc_name)
    sch.compute_at(acc, tile, preserve_unit_loops=True)
    *_, yy, z, ob, oi, k4, ki = sch.get_loops(acc)
    sch.reorder(yy, z, ob, k4, oi, ki)
    init = sch.decompose_reduction(acc, k4)
    sch.vectorize(sch.get_loops(init)[-1])
    pack = sch.get_sblock(pack_name)
    sch.compute_at(pack, tile, preserve_unit_loops=True)
    sch.tensorize(oi, VNNI_INTRIN)   # last: the tensorized block replaces acc
    return pack
