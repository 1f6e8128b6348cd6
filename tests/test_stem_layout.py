"""passes/stem_layout: a dense conv feeding a blocked region writes NC1HWC0 itself (llvm), no
ToNC1HWC0 node; its kernel (schedules/cpu_conv.conv_to_blocked_kernel) matches ONNX Runtime on
odd shapes (channel tails, stride 2, asymmetric pads), with its activation folded in."""

import numpy as np
import pytest

import models
from fusion.verify.check import check_model
from fusion.driver.compiler import compile_model
from fusion.core.ir import NC1HWC0


@pytest.mark.parametrize("resolution,width", [(33, 0.35), (40, 0.5)])
def test_stem_writes_blocked_and_matches_ort(resolution, width):
    m = models.build("mobilenet_v1", resolution=resolution, width=width)
    cm = compile_model(m, target="llvm")
    g = cm.graph
    stem = g.nodes[0]
    assert stem.op_type == "Conv" and stem.attr("epilogue_act") == "relu"
    assert g.types[stem.outputs[0]].layout == NC1HWC0
    assert "ToNC1HWC0" not in g.op_counts()
    res = check_model(m, cm)
    assert res.passed, res.describe() if hasattr(res, "describe") else res


def test_other_targets_keep_the_conversion():
    m = models.build("mobilenet_v1", resolution=33, width=0.35)
    g = compile_model(m, target="sim").graph
    assert "ToNC1HWC0" in g.op_counts()
