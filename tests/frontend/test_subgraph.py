"""Subgraph compilation: cutting a model by tensor names (fusion/frontend/subgraph.py, --inputs/--outputs)."""

import json

import numpy as np
import onnx
import pytest
from conftest import run_cli

import models
from fusion.verify.check import check_model
from fusion.driver.compiler import compile_model
from fusion.core.errors import MegafuseError, ShapeError
from fusion.frontend.subgraph import cut_model


@pytest.fixture(scope="module")
def mv2():
    return models.mobilenet_v2(resolution=32, width=0.5)


@pytest.fixture(scope="module")
def mv2_path(mv2, tmp_path_factory):
    p = tmp_path_factory.mktemp("m") / "mv2.onnx"
    onnx.save(mv2, p)
    return str(p)


def test_cut_keeps_the_nodes_between(mv2):
    cut = cut_model(mv2, "b3_add", "b5_add")
    g = cut.model.graph
    assert [i.name for i in g.input] == ["b3_add"] and [o.name for o in g.output] == ["b5_add"]
    dims = [d.dim_value for d in g.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 16, 8, 8]                      # from shape inference on the whole model
    assert {n.name.split("_")[0] for n in g.node} == {"b4", "b5"}
    assert {t.name for t in g.initializer} == {t for n in g.node for t in n.input} - {"b3_add"} - \
        {o for n in g.node for o in n.output}
    onnx.checker.check_model(cut.model, full_check=True)


def test_compile_cut_matches_ort_on_the_cut(mv2):
    cm = compile_model(mv2, target="llvm", inputs=["b3_add"], outputs=["b5_add"])
    assert cm.input_names == ["b3_add"] and len(cm.fused_blocks) == 2
    r = check_model(cut_model(mv2, "b3_add", "b5_add").model, cm)
    assert r.passed and r.conclusive, r.to_json()


def test_outputs_only_keeps_the_graph_inputs(mv2):
    cut = cut_model(mv2, outputs="b3_add,b2_pw_bn")
    assert [i.name for i in cut.model.graph.input] == ["x"]
    assert [o.name for o in cut.model.graph.output] == ["b3_add", "b2_pw_bn"]


def test_dynamic_dims_propagate_to_cut_inputs():
    m = models.dwsep_block(cin=16, cout=24, h=9, dynamic_batch=True)
    with pytest.raises(ShapeError):
        compile_model(m, target="llvm", inputs=["dw_act"])    # N unknown: no shape for the cut input
    cut = cut_model(m, inputs=["dw_act"], input_shapes={"x": (2, 16, 9, 9)})
    dims = [d.dim_value for d in cut.model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [2, 16, 9, 9] and cut.input_shapes == {}
    cm = compile_model(m, target="llvm", inputs=["dw_act"], input_shapes={"x": (2, 16, 9, 9)})
    assert cm.program.inputs["dw_act"][0] == (2, 16, 9, 9)


@pytest.mark.parametrize("ins,outs,needle", [
    (None, "b4_ad", "did you mean 'b4_dw'"),
    ("nope", "b5_add", "--inputs names 'nope', which no node or graph input defines"),
    ("b4_dw_W", "b5_add", "an initializer"),
    ("b5_add", "b3_add", "--inputs"),
    ("b4_dw_act,b2_add_x", "b5_add", "no node or graph input"),
    ("b5_dw_act", "b5_add", "the cut needs graph input 'x'"),       # the residual b4_pw_bn
    ("b3_add,b4_dw_act", "b4_pw_bn", "does not feed"),
    ("b3_add", "b3_add", "in both --inputs and --outputs"),
])
def test_bad_cuts_are_one_line_errors(mv2, ins, outs, needle):
    with pytest.raises(MegafuseError) as e:
        cut_model(mv2, ins, outs)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_names_are_escaped(mv2):
    with pytest.raises(MegafuseError) as e:
        cut_model(mv2, None, "evil\n\x1b[2Jname")
    msg = str(e.value)
    assert "\n" not in msg and "\x1b" not in msg and "\\n" in msg


def test_cli_check_on_a_cut(capsys, mv2_path):
    code, out, err = run_cli(capsys, "check", mv2_path, "-t", "llvm", "--inputs", "b3_add", "--outputs", "b5_add")
    assert code == 0, err
    assert out.startswith("PASS ") and "[b3_add -> b5_add]" in out and "2 fused blocks" in out


def test_cli_explain(capsys, mv2_path):
    code, out, _ = run_cli(capsys, "explain", mv2_path, "--outputs", "b5_add", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["fused"] == 5 == len(doc["chains"])
    c = doc["chains"][2]
    assert c["dw"] == "b3_dw" and c["input"] == "b3_exp_act" and c["output"] == "b3_add" and c["fused"]
    code, out, _ = run_cli(capsys, "explain", mv2_path)
    assert code == 0 and out.startswith("17 candidate chains (depthwise convs), 17 fused")


def test_cli_json_errors_are_json(capsys, mv2_path):
    code, out, err = run_cli(capsys, "compile", mv2_path, "--outputs", "nothere", "--json")
    assert code == 2 and err.startswith("megafuse: error:") and err.count("\n") == 1
    doc = json.loads(out)
    assert "nothere" in doc["error"] and doc["kind"] == "UnsupportedModelError"


def test_cli_insensitive_reference_is_not_a_pass(capsys, tmp_path):
    """A model whose output ignores its input: the check cannot fail, so it is not reported PASS."""
    m = models.dwsep_block(cin=16, cout=16, h=8)
    zero = onnx.numpy_helper.from_array(np.zeros((), np.float32), "zero")
    m.graph.initializer.append(zero)
    m.graph.node[0].input[0] = "x0"
    m.graph.node.insert(0, onnx.helper.make_node("Mul", ["x", "zero"], ["x0"], name="kill"))
    p = tmp_path / "flat.onnx"
    onnx.save(m, p)
    code, out, err = run_cli(capsys, "check", str(p), "-t", "llvm")
    assert code == 1 and out.startswith("INCONCLUSIVE") and "barely depends on the input" in err


def test_cli_bench_on_a_cut(capsys, mv2_path):
    code, out, err = run_cli(capsys, "bench", mv2_path, "--inputs", "b3_add", "--outputs", "b5_add")
    assert code == 0, err
    assert "b4_fused" in out and "b5_fused" in out and "b2_fused" not in out
