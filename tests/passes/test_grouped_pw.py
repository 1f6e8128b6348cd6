"""Grouped pointwise convs after a DW: the Split → Conv 1×1 ×g → Concat spelling becomes one grouped
Conv; a PW of up to 2 groups fuses as its block-diagonal dense GEMM (checked against ONNX Runtime
on llvm, sim and ascend on both SoCs); more groups are refused with the factor of wasted work."""

import pytest

import models
from fusion.cli.explain import explain
from fusion.core.soc import get_soc
from fusion.driver.compiler import compile_model
from fusion.frontend.onnx_import import load_graph
from fusion.verify.ascend_check import check_ascend
from fusion.verify.check import check_model
from passes import prepare
from passes.grouped_pw import dense_weights

import numpy as np


def test_split_concat_becomes_one_grouped_conv():
    g, _ = prepare(load_graph(models.grouped_pw_block(30, 42, groups=3, form="split", seed=2)))
    ops = [n.op_type for n in g.nodes]
    assert "Concat" not in ops and "Slice" not in ops
    pw = [n for n in g.nodes if n.op_type == "Conv" and n.attr("group") == 3]
    assert len(pw) == 1 and g.constants[pw[0].inputs[1]].shape == (42, 10, 1, 1)


def test_branches_concatenated_out_of_order_are_left_alone():
    """Concat(conv1, conv0, conv2) of the slices is a channel permutation too: no grouped Conv."""
    m = models.grouped_pw_block(30, 42, groups=3, form="split", seed=2)
    cat = next(n for n in m.graph.node if n.op_type == "Concat")
    cat.input[:] = [cat.input[1], cat.input[0], cat.input[2]]
    g, _ = prepare(load_graph(m))
    assert "Concat" in [n.op_type for n in g.nodes]
    cm = compile_model(m, target="llvm")
    assert check_model(m, cm, seed=1).passed


def test_dense_weights_are_block_diagonal():
    w = np.arange(6 * 2, dtype=np.float32).reshape(6, 2, 1, 1)
    d = dense_weights(w, 2)[:, :, 0, 0]
    assert d.shape == (6, 4) and not d[:3, 2:].any() and not d[3:, :2].any()
    assert (d[:3, :2] == w[:3, :, 0, 0]).all() and (d[3:, 2:] == w[3:, :, 0, 0]).all()


@pytest.mark.parametrize("form", ["conv", "split"])
def test_many_groups_are_refused_with_the_factor(form):
    chains, _, _ = explain(models.grouped_pw_block(48, 48, groups=12, form=form, seed=2), "sim")
    assert not chains[0].fused
    assert "12 groups" in chains[0].reason and "12x" in chains[0].reason, chains[0].reason


@pytest.mark.parametrize("form", ["conv", "split"])
@pytest.mark.parametrize("target, dtype", [("llvm", "float32"), ("sim:ascend910b2", "float16"),
                                           ("sim:ascend310p3", "float32")])
def test_two_groups_fuse_and_match_onnxruntime(form, target, dtype):
    m = models.grouped_pw_block(30, 42, groups=2, form=form, act2="relu", seed=2)
    cm = compile_model(m, target=target, dtype=dtype, fallback=False)
    assert len(cm.fused_blocks) == 1
    res = check_model(m, cm, seed=1)
    assert res.passed, res.to_json()


@pytest.mark.parametrize("soc, dtype", [("910b2", "float32"), ("310p3", "float16")])
def test_two_groups_on_the_ascend_emulator(soc, dtype):
    m = models.grouped_pw_block(30, 42, groups=2, form="split", act2="relu", seed=2)
    cm = compile_model(m, target=f"ascend:{soc}", dtype=dtype, fallback=False, chain=False)
    assert len(cm.fused_blocks) == 1
    res = check_ascend(cm, m, seed=2)
    assert res.passed, res.to_json()
