"""The unfused kernels' plan space at batch 32 and at an OCR detector's 960 x 960 input (issue 30):
MobileNetV2's batch-32 DW refused 'no tile of the unfused DW kernel fits ascend310p3', the detector's
first DW (480 x 480 after the stem) the same on ascend910b2."""

import pytest

from fusion.cost import model_unfused
from fusion.cost.unfused import _dw_kernel, _max_units
from fusion.core.soc import get_soc
from schedules.workload import DwSepWorkload


@pytest.mark.parametrize("soc", ["ascend310p3", "ascend910b2"])
def test_mobilenet_v2_batch32_dw_has_a_tile(soc):
    wl = DwSepWorkload(32, 96, 24, 112, 112, stride=(2, 2), act1="relu6", act2="none", dtype="float16")
    k = _dw_kernel("dw", wl, get_soc(soc), True)
    assert k.time_us > 0 and k.cores_used == get_soc(soc).vector_cores
    # the cap is per image: batch 32 gets 32 x the units of batch 1
    assert _max_units(8, 32) == 32 * _max_units(8, 1)


@pytest.mark.parametrize("soc", ["ascend310p3", "ascend910b2"])
def test_detector_960_first_dw_has_a_tile(soc):
    wl = DwSepWorkload(1, 16, 24, 480, 480, dtype="float16")
    k = _dw_kernel("dw", wl, get_soc(soc), True)
    th, tw = (int(v) for v in k.tile.split()[0].split("x"))
    assert th * tw < 480 * 480 / (16 * 8)   # finer than the batch-1 grid's coarsest tiles
    assert model_unfused(wl, get_soc(soc), "framework").time_us > k.time_us
