"""This machine's limits, measured with two small TVM kernels (same compiler, same thread pool as
the kernels they judge): fp32 FMA peak (independent vector FMA chains held in registers) and
DRAM bandwidth (a parallel streaming copy of a buffer far larger than the last-level cache)."""

from __future__ import annotations

import time

import numpy as np
from schedules.targets import llvm_target

LANES = 16        # one AVX-512 register of fp32 (AVX2 machines split it in two; the peak holds)
CHAINS = 12       # independent accumulators: more than FMA latency × FMA ports on current x86;
                 # 12 × 64 B stays under the size TVM puts on the stack (so LLVM keeps them in registers)
COPY_BYTES = 512 << 20


def _fma_func(threads: int, iters: int):
    from tvm.script import tirx as T

    @T.prim_func
    def fma(out: T.Buffer((threads, CHAINS, LANES), "float32")):
        for t in T.parallel(threads):
            acc = T.alloc_buffer((CHAINS, LANES), "float32", scope="local")
            for c in T.unroll(CHAINS):
                for v in T.vectorized(LANES):
                    acc[c, v] = T.float32(c)
            for _ in range(iters):
                for c in T.unroll(CHAINS):
                    for v in T.vectorized(LANES):
                        # constants, not loads: nothing in the loop may alias the accumulators
                        acc[c, v] = acc[c, v] * T.float32(0.999) + T.float32(0.001)
            for c in T.unroll(CHAINS):
                for v in T.vectorized(LANES):
                    out[t, c, v] = acc[c, v]
    return fma


def fma_peak_gflops(threads: int, iters: int = 200_000, repeat: int = 5) -> float:
    """Best of `repeat` runs: flops = threads × iters × CHAINS × LANES × 2."""
    import tvm


    ex = tvm.compile(tvm.IRModule({"main": _fma_func(threads, iters)}), target=llvm_target())
    dev = tvm.cpu(0)
    out = tvm.runtime.empty((threads, CHAINS, LANES), "float32", dev)
    ex["main"](out)
    if not np.allclose(out.numpy(), 1.0, atol=0.05):  # the chains ran (converge to 0.001/(1-0.999))
        raise RuntimeError("FMA peak kernel computed the wrong values")
    best = min(_timed(lambda: ex["main"](out)) for _ in range(repeat))
    return threads * iters * CHAINS * LANES * 2 / best / 1e9


def dram_gbps(nbytes: int = COPY_BYTES, repeat: int = 5) -> float:
    """Streaming copy y = x, counted as read + write bytes (the STREAM convention)."""
    import tvm
    from tvm import s_tir, te


    n = nbytes // 4
    x = te.placeholder((n // 64, 64), "float32", name="x")
    y = te.compute(x.shape, lambda i, j: x[i, j], name="y")
    sch = s_tir.Schedule(te.create_prim_func([x, y]))
    i, j = sch.get_loops(sch.get_sblock("y"))
    sch.parallel(i)
    sch.vectorize(j)
    ex = tvm.compile(sch.mod, target=llvm_target())
    dev = tvm.cpu(0)
    xs = tvm.runtime.tensor(np.ones((n // 64, 64), np.float32), dev)
    ys = tvm.runtime.empty((n // 64, 64), "float32", dev)
    ex["main"](xs, ys)
    best = min(_timed(lambda: ex["main"](xs, ys)) for _ in range(repeat))
    return 2 * n * 4 / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
