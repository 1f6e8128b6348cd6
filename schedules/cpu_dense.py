"""CPU kernel for a Gemm/MatMul whose B is a constant (the classifier head).

B is packed once at compile time as [N/rn, K, rn]: a reduction step reads rn adjacent outputs'
weights, the rn accumulators are vectors, the N blocks run in parallel. Batch-1 heads are a
matrix-vector product, bound by reading B once.
"""

from __future__ import annotations

import numpy as np
from tvm import te, tirx

from schedules.dwsep_te import ACC
from schedules.op_spec import KernelSpec

MAX_BLOCK = 64  # outputs per block: four AVX-512 accumulators


def out_block(n: int) -> int:
    divs = [d for d in range(1, min(n, MAX_BLOCK) + 1) if n % d == 0]
    vec = [d for d in divs if d % 8 == 0]
    return max(vec or divs)


def dense_kernel(n, ctx) -> KernelSpec | None:
    """None when B is not a constant 2-D matrix (the generic kernel handles it)."""
    if not ctx.graph.is_constant(n.inputs[1]):
        return None
    at = ctx.ttype(n.inputs[0])
    b = np.asarray(ctx.graph.constants[n.inputs[1]], np.float32)
    if len(at.shape) != 2 or b.ndim != 2:
        return None
    gemm = n.op_type == "Gemm"
    ta, tb = (n.attr("transA", 0), n.attr("transB", 0)) if gemm else (0, 0)
    alpha, beta = (n.attr("alpha", 1.0), n.attr("beta", 1.0)) if gemm else (1.0, 0.0)
    has_c = gemm and len(n.inputs) > 2 and n.inputs[2]
    if has_c and not ctx.graph.is_constant(n.inputs[2]):
        return None
    m, k = (int(at.shape[1]), int(at.shape[0])) if ta else (int(at.shape[0]), int(at.shape[1]))
    bkn = b.T if tb else b
    nn = int(bkn.shape[1])
    rn = out_block(nn)
    bp = np.ascontiguousarray(bkn.reshape(k, nn // rn, rn).transpose(1, 0, 2)).astype(ctx.dtype)
    c = (np.broadcast_to(ctx.const(n.inputs[2], ACC), (m, nn)) * np.float32(beta) if has_c
         else np.zeros((m, nn), np.float32))
    c = np.ascontiguousarray(c, np.float32)
    A = te.placeholder(tuple(int(s) for s in at.shape), ctx.dtype, name="a")
    B = te.placeholder(bp.shape, ctx.dtype, name="b")
    C = te.placeholder(c.shape, ACC, name="c")
    rk = te.reduce_axis((0, k), name="rk")
    aval = (lambda i, kk: A[kk, i]) if ta else (lambda i, kk: A[i, kk])
    mm = te.compute((m, nn), lambda i, j: te.sum(
        aval(i, rk).astype(ACC) * B[j // rn, rk, j % rn].astype(ACC), axis=rk), name="mm")
    y = te.compute((m, nn), lambda i, j: (mm[i, j] * tirx.const(alpha, ACC) + C[i, j]).astype(ctx.dtype),
                   name="y")
    return KernelSpec(n.name, te.create_prim_func([A, B, C, y]), (n.inputs[0], bp, c), (m, nn), ctx.dtype,
                      schedule="cpu_dense")


def schedule_dense(sch) -> None:
    y = sch.get_sblock("y")
    mm = sch.get_sblock("mm")
    rn = int(sch.get(mm).reads[1].source.shape[-1])
    i, j = sch.get_loops(y)
    jo, ji = sch.split(j, [None, rn])
    sch.reorder(jo, i, ji)
    sch.parallel(jo)
    sch.compute_at(mm, i, preserve_unit_loops=True)
    cj, rk = sch.get_loops(mm)[-2:]
    sch.reorder(rk, cj)
    sch.vectorize(cj)
    sch.vectorize(ji)
    sch.decompose_reduction(mm, rk)
