"""The fused kernel's activations (schedules/activations.py) on every target: the TE compute
(LLVM), the Ascend C body on the emulator, the cost model's count and the NumPy reference agree."""

import numpy as np
import pytest

from fusion.verify.emu_run import build_emitted, run_emitted
from fusion.codegen.ascendc import emit_kernel
from fusion.cost import ACT_OPS
from fusion.core.soc import get_soc
from fusion.tuning.evaluators import block_data, from_blocked, reference_block, to_blocked
from schedules.activations import parse, spell, vector_instructions
from schedules.build import build_fused, fused_params
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload, TileConfig

NEW = [("leakyrelu(0.1)", "clip(-1,2.5)"), ("hardsigmoid(0.2,0.5)", "hardswishab(0.2,0.5)"),
       ("leakyrelu(1.5)", "leakyrelu(-0.25)")]


def test_spelling_round_trips_and_rejects_junk():
    assert spell("leakyrelu", np.float32(0.1)) == "leakyrelu(0.1)"
    assert parse("hardswishab(0.2,0.5)").params == (0.2, 0.5)
    assert ACT_OPS["clip(0,4)"] == vector_instructions("clip(0,4)") == 2
    for bad in ("leaky", "clip(1)", "clip(a,b)", "leakyrelu(inf)", "relu(1)", "clip(0,1);system()"):
        with pytest.raises(ValueError):
            parse(bad)
        with pytest.raises(ValueError):
            DwSepWorkload(1, 16, 16, 8, 8, act1=bad)


def _run(wl, tile, soc):
    plan = make_plan(wl, tile, get_soc(soc))
    d = block_data(wl, seed=1)
    ref = reference_block(wl, d)
    blocked = fused_params(d["w_dw"], d["b_dw"], d["w_pw"], d["b_pw"], wl.dtype)
    x = to_blocked(d["x"], wl.dtype)
    # LLVM: the TE compute
    import tvm
    dev = tvm.cpu(0)
    ex = build_fused(plan)
    out = tvm.runtime.empty((wl.batch, wl.co1, wl.out_height, wl.out_width, 16), wl.dtype, dev)
    ex["main"](tvm.runtime.tensor(x, dev), *[tvm.runtime.tensor(a, dev) for a in blocked], out)
    y_cpu = from_blocked(out.numpy().astype(np.float64), wl.cout)
    # Ascend C on the emulator
    ek = emit_kernel(plan, "acts")
    args = dict(zip(["x", "w_dw", "b_dw", "w_pw", "b_pw"], [x] + blocked))
    y_emu, _counters, _ = run_emitted(ek, build_emitted(ek), args)
    y_emu = from_blocked(y_emu.astype(np.float64), wl.cout)
    return ref, y_cpu, y_emu


@pytest.mark.parametrize("act1,act2", NEW)
def test_new_activations_llvm_and_emulated_ascend_c(act1, act2):
    wl = DwSepWorkload(1, 24, 40, 9, 9, act1=act1, act2=act2, dtype="float32")
    ref, y_cpu, y_emu = _run(wl, TileConfig(3, 5, 2, 1, True), "ascend910b2")
    scale = np.abs(ref).max()
    assert np.abs(y_cpu - ref).max() / scale < 1e-5
    assert np.abs(y_emu - ref).max() / scale < 1e-5
    # the activation is not the identity on this data: a kernel that skipped it would fail
    lin = reference_block(DwSepWorkload(1, 24, 40, 9, 9, act1="none", act2="none"), block_data(wl, seed=1))
    assert np.abs(lin - ref).max() / scale > 1e-2


def test_scratch_activation_on_the_coupled_cube_kernel():
    """hardswishab and leakyrelu need the act_tmp scratch where the cube kernel has no free buffer."""
    wl = DwSepWorkload(1, 32, 48, 8, 8, act1="leakyrelu(0.1)", act2="hardswishab(0.2,0.5)", dtype="float16")
    ref, y_cpu, y_emu = _run(wl, TileConfig(4, 8, 3, 0, True, "cube"), "ascend310p3")
    scale = np.abs(ref).max()
    assert np.abs(y_cpu - ref).max() / scale < 2e-2
    assert np.abs(y_emu - y_cpu).max() / scale < 1e-3
