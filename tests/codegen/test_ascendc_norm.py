"""The channel LayerNorm of a ConvNeXt block in the Ascend C kernels (templates/ln_norm.h): the
emulated kernel matches ONNX Runtime on odd channel counts (a ragged last block) on both SoCs and
both kernels a norm block is planned on, with the vector instructions the program counts
(schedules/channel_norm.ln_ops); the cross-lane APIs it uses (megafuse_emu/ln_reduce.h) on their own."""

from pathlib import Path

import numpy as np
import pytest

import models
from fusion.core.soc import get_soc
from fusion.driver.compiler import compile_model
from fusion.emu import build_kernel
from fusion.verify.ascend_check import check_ascend
from schedules.channel_norm import ln_ops
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload, TileConfig

KERNELS = Path(__file__).parents[1] / "ascendc_kernels"


@pytest.mark.parametrize("soc, dtype, dim, variant", [
    ("910b2", "float32", 21, "vector-pw"), ("910b2", "float16", 40, "two-phase"),
    ("310p3", "float16", 21, "two-phase"), ("310p3", "float32", 40, "vector-pw")])
def test_norm_block_on_the_emulator_matches_onnxruntime(soc, dtype, dim, variant):
    m = models.convnext_block(dim, 9, 7, mlp_ratio=2, ln_form="op", dtype=dtype, seed=2)
    cm = compile_model(m, target=f"ascend:{soc}", dtype=dtype, fallback=False, chain=False)
    assert len(cm.fused_blocks) == 1 and cm.fused_blocks[0].workload.ln_eps is not None
    assert cm.fused_blocks[0].plan.variant == variant
    res = check_ascend(cm, m, seed=2)
    assert res.passed, res.to_json()
    for b in res.blocks:
        assert b.counters["vector_instructions"] == b.model_vector_instructions, b.describe()


def test_model_counts_the_ragged_half_and_the_310p_fill():
    """A block of <= 8 valid lanes skips its high half; 310P's Brcb is two instructions a repeat."""
    def instrs(cin, soc):
        wl = DwSepWorkload(1, cin, 32, 9, 7, (7, 7), (1, 1), (3, 3, 3, 3), "none", "gelu", False, "float32", 1e-6)
        return sum(op.instrs for op in ln_ops(make_plan(wl, TileConfig(3, 5, 1, 0, True, "vector"), get_soc(soc))))
    # 15 pixels: one full group of 8 and a ragged one -> 2 instructions a half and pass, 2 passes
    assert instrs(25, "ascend910b2") - instrs(24, "ascend910b2") == 2 * 2   # 9 vs 8 lanes in the last block
    # the fill: 2 repeats (15 pixels), twice a tile: 1 -> 4 instructions each
    assert instrs(24, "ascend310p3") - instrs(24, "ascend910b2") == 2 * (4 - 1)


@pytest.mark.parametrize("soc, per_repeat", [("ascend910b2", 0), ("ascend310p3", 2)])
def test_lane_sum_and_fill_semantics(soc, per_repeat):
    kernel = build_kernel(KERNELS / "ln_reduce.cpp", "ln_reduce_fill")
    px = 16
    x = np.random.default_rng(3).standard_normal((px, 16)).astype(np.float32)
    y = np.zeros((px, 8), np.float32)
    res = kernel.run([x, y, None, np.array([(px, 0)], np.dtype([("pixels", "<u4"), ("pad", "<u4")]))],
                     block_dim=1, soc=soc)
    np.testing.assert_allclose(y, np.repeat(x.sum(axis=1, keepdims=True), 8, axis=1), rtol=1e-6, atol=1e-6)
    reps = px // 8
    fill = reps * per_repeat if per_repeat else 1
    assert res.counters["vector_instructions"] == 1 + fill
