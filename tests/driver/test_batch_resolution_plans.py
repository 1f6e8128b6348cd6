"""The unfused kernels at batch 32 and at an OCR detector's 960 x 960 input (issue 30): the old
closed-form unfused model refused MobileNetV2's batch-32 DW ('no tile of the unfused DW kernel fits
ascend310p3') and the detector's first DW (480 x 480 after the stem) on ascend910b2. The unfused
baselines are now the vendor-like lowered programs (fusion/cost/vendor_baseline.py): both have one."""

import pytest

from fusion.cost.vendor_baseline import block_baseline
from fusion.core.soc import get_soc
from schedules.workload import DwSepWorkload


@pytest.mark.parametrize("soc", ["ascend310p3", "ascend910b2"])
def test_mobilenet_v2_batch32_dw_has_a_program(soc):
    wl = DwSepWorkload(32, 96, 24, 112, 112, stride=(2, 2), act1="relu6", act2="none", dtype="float16")
    s = get_soc(soc)
    dw = block_baseline(wl, s, "vendor").kernels[0]
    assert dw.kind == "dwconv" and dw.time_us > dw.launch_us > 0
    assert dw.cores == (s.cube_cores if s.coupled else s.vector_cores)
    one = block_baseline(DwSepWorkload(1, 96, 24, 112, 112, stride=(2, 2), act1="relu6", act2="none",
                                       dtype="float16"), s, "vendor").kernels[0]
    assert dw.body_us > 16 * one.body_us     # 32 images: the work of 32, on the same cores


@pytest.mark.parametrize("soc", ["ascend310p3", "ascend910b2"])
def test_detector_960_first_dw_has_a_program(soc):
    wl = DwSepWorkload(1, 16, 24, 480, 480, dtype="float16")
    vendor, framework = block_baseline(wl, get_soc(soc), "vendor"), block_baseline(wl, get_soc(soc), "framework")
    dw = vendor.kernels[0]
    assert dw.kind == "dwconv" and dw.counts["gm_write_bytes"] == 16 * 480 * 480 * 2   # the output, once
    assert framework.time_us > vendor.time_us
