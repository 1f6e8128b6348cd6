"""The vendor-like baseline kernels as lowered programs on the step simulator
(schedules/baseline_program.py, fusion/cost/baseline.py)."""

from __future__ import annotations

import pytest

from fusion.core.soc import get_soc
from fusion.cost.baseline import time_program
from fusion.cost.vendor_baseline import block_kernels, dw_shape, layer_kernel, layer_program
from fusion.cost.vendor_layers import Layer
from schedules.baseline_program import dw_program, gemm_program, gemm_splits
from schedules.steps import Copy, CubeOp, VectorOp
from schedules.workload import DwSepWorkload

SOCS = ("ascend910b2", "ascend310p3")
PW = Layer("conv", "pw", 2, 48, 80, 23, 19, 23, 19, act="relu", residual=True, members=("pw",))
DW = Layer("dwconv", "dw", 2, 40, 40, 23, 19, 12, 10, 3, 3, 2, "relu6", members=("dw",))
BIG = Layer("conv", "big", 8, 64, 256, 56, 56, 56, 56, act="relu6", members=("big",))


@pytest.mark.parametrize("soc_name", SOCS)
@pytest.mark.parametrize("layer", [PW, DW, BIG], ids=["pw", "dw", "big"])
def test_steady_state_extrapolation_equals_the_full_simulation(soc_name, layer):
    soc = get_soc(soc_name)
    prog = layer_program(soc, layer)
    fast, full = time_program(soc, prog), time_program(soc, prog, full=True)
    assert fast.time_us == pytest.approx(full.time_us, rel=1e-9)
    for f in ("mte2_us", "cube_us", "vector_us", "mte3_us", "mte1_us"):
        assert getattr(fast, f) == pytest.approx(getattr(full, f), rel=1e-9), f


@pytest.mark.parametrize("soc_name", SOCS)
def test_gemm_program_writes_its_output_once_and_counts_every_mac(soc_name):
    soc = get_soc(soc_name)
    m, k, n = 437, 200, 90          # odd: ragged cores, blocks and K
    for split in gemm_splits(soc, m, n)[:3]:
        prog = gemm_program(soc, "g", m, k, n, "float16", split)
        out = sum(st.nbytes * t for st, t in prog.steps() if type(st) is Copy and st.direction == "out")
        assert out == m * 96 * 2, split                        # n padded to 96, fp16
        rows = sum(st.nbytes * t for st, t in prog.steps() if type(st) is Copy and st.kind == "weights")
        assert rows >= 208 * 96 * 2                             # all of B at least once (k padded to 208)
        frac = sum(st.fractals * t for st, t in prog.steps() if type(st) is CubeOp)
        assert frac >= -(-m // 16) * 13 * 6                     # every 16x16x16 MAC block at least once


def test_dw_runs_where_the_vendor_runs_it():
    """310P (Atlas inference): DepthwiseConv2D is a Cube node; 910B: the vector unit."""
    for soc_name, engine in (("ascend310p3", "cube"), ("ascend910b2", "vector")):
        soc = get_soc(soc_name)
        prog = layer_program(soc, DW)
        assert prog.engine == engine
        kinds = {type(st) for st, _ in prog.steps()}
        assert (CubeOp in kinds) == (engine == "cube") and VectorOp in kinds


@pytest.mark.parametrize("soc_name", SOCS)
def test_a_kernel_time_is_its_simulated_critical_path(soc_name):
    soc = get_soc(soc_name)
    for L in (PW, DW, BIG):
        k = layer_kernel(soc, L)
        pipes = (k.mte2_us, k.cube_us, k.vector_us, k.mte3_us, k.mte1_us)
        assert k.body_us >= max(pipes) and k.fill_us >= 0
        assert k.body_us <= sum(pipes) + 1e-9      # no time without a busy pipe
        assert k.counts["gm_write_bytes"] > 0


def test_one_iteration_cannot_overlap_its_own_stages():
    """A single output row: load, compute, store in a row -- the kernel is their sum."""
    soc = get_soc("ascend910b2")
    d = dw_shape(Layer("dwconv", "d", 1, 16, 16, 1, 8, 1, 8, 1, 1, 1, "none"), "float16")
    k = time_program(soc, dw_program(soc, "d", d))
    assert k.body_us == pytest.approx(k.mte2_us + k.vector_us + k.mte3_us)


def test_block_kernels_are_the_network_kernels():
    wl = DwSepWorkload(batch=1, cin=32, cout=64, height=28, width=28, kernel=(3, 3), stride=(1, 1),
                       act1="relu6", act2="none", dtype="float16")
    dw, pw = block_kernels(wl, get_soc("ascend310p3"))
    assert dw.engine == "cube" and pw.engine == "cube" and dw.kind == "dwconv" and pw.kind == "conv"
