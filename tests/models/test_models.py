"""Tests for the models/ package: validity, structure, BN folding, determinism, CLI."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from models import (
    MOBILENET_V1_BLOCKS,
    ODD_BLOCKS,
    REGISTRY,
    build,
    dwsep_block,
    mobilenet_v1,
    mobilenet_v2,
)
from models.__main__ import main as cli_main


def _run(model: onnx.ModelProto, batch: int = 1, seed: int = 1) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) else batch for d in inp.shape]
    dtype = np.float16 if inp.type == "tensor(float16)" else np.float32
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return sess.run(None, {inp.name: x})[0]


def _declared_shape(model: onnx.ModelProto, batch: int = 1) -> tuple:
    dims = model.graph.output[0].type.tensor_type.shape.dim
    return tuple(d.dim_value if d.HasField("dim_value") else batch for d in dims)


def _assert_close(a: np.ndarray, b: np.ndarray, rel: float = 1e-4) -> None:
    scale = max(float(np.abs(b).max()), 1e-6)
    assert float(np.abs(a - b).max()) <= rel * scale


@pytest.fixture(scope="module")
def mobilenets():
    return {"v1": mobilenet_v1(), "v2": mobilenet_v2()}


@pytest.mark.parametrize("name", list(REGISTRY))
def test_registry_models_valid_and_run(name):
    model = build(name)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 8 and model.opset_import[0].version in (13, 14)  # 14: HardSwish (ocr models)
    names = [n.name for n in model.graph.node]
    assert len(set(names)) == len(names) and all(names)
    y = _run(model)
    assert y.shape == _declared_shape(model)
    assert np.isfinite(y).all()


@pytest.mark.parametrize("kw", [
    dict(pads=(0, 1, 2, 1), h=20, w=17),
    dict(auto_pad="SAME_UPPER", stride=2, h=19),
    dict(auto_pad="SAME_LOWER", kernel=4, h=16),
    dict(auto_pad="VALID", kernel=5, stride=2, h=23),
    dict(dilation=2, h=20),
    dict(cin=48, cout=48, residual=True, h=14, act2="none"),
    dict(act1="relu6", act2="hardswish", opset=14, h=14),
    dict(opset=10, act1="relu6", h=14),
    dict(dynamic_batch=True, h=14),
])
def test_dwsep_variants(kw):
    model = dwsep_block(**kw)
    onnx.checker.check_model(model, full_check=True)
    batch = 3 if kw.get("dynamic_batch") else 1
    y = _run(model, batch=batch)
    assert y.shape == _declared_shape(model, batch)


def test_dwsep_float16():
    model = dwsep_block(h=14, dtype="float16", act1="relu6")
    onnx.checker.check_model(model, full_check=True)
    ref = _run(dwsep_block(h=14, act1="relu6"))
    _assert_close(_run(model).astype(np.float32), ref, rel=2e-2)


def test_dwsep_node_names():
    model = dwsep_block(residual=True, cout=32, h=8, fold_bn=False)
    assert [n.name for n in model.graph.node] == ["dw", "dw_bn", "dw_act", "pw", "pw_bn", "pw_act", "add"]
    assert model.graph.input[0].name == "x" and model.graph.output[0].name == "y"


def _dw_chains(model: onnx.ModelProto) -> list[tuple[str, str]]:
    """(depthwise conv, the 1x1 conv it feeds through BN/activation) pairs."""
    inits = {t.name: t for t in model.graph.initializer}
    consumers = {}
    for n in model.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    chains = []
    for n in model.graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        w = inits.get(n.input[1]) if n.op_type == "Conv" else None
        if w is None or attrs.get("group", 1) != w.dims[0] or w.dims[1] != 1 or w.dims[0] == 1:
            continue
        cur = n
        while True:
            nxt = consumers.get(cur.output[0], [])
            assert len(nxt) == 1, f"{cur.name} should feed exactly one node"
            cur = nxt[0]
            if cur.op_type == "Conv":
                break
            assert cur.op_type in ("BatchNormalization", "Relu", "Clip"), cur.op_type
        assert list(inits[cur.input[1]].dims[2:]) == [1, 1]
        chains.append((n.name, cur.name))
    return chains


def test_mobilenet_chain_counts(mobilenets):
    v1 = _dw_chains(mobilenets["v1"])
    v2 = _dw_chains(mobilenets["v2"])
    assert len(v1) == 13 and v1[0] == ("b1_dw", "b1_pw")
    assert len(v2) == 17 and v2[-1] == ("b17_dw", "b17_pw")
    v2_ops = {n.op_type for n in mobilenets["v2"].graph.node}
    assert "Clip" in v2_ops and "Relu" not in v2_ops
    assert sum(n.op_type == "Add" for n in mobilenets["v2"].graph.node) == 10


def test_mobilenet_output_magnitude(mobilenets):
    for model in mobilenets.values():
        y = _run(model)
        assert y.shape == (1, 1000) and np.isfinite(y).all()
        assert 1e-3 <= float(y.std()) <= 1e3


@pytest.mark.parametrize("builder, kw", [
    (dwsep_block, dict(h=28)),
    (dwsep_block, dict(h=19, stride=2, kernel=5, act1="relu6", act2="none", cin=24, cout=40)),
    (dwsep_block, dict(h=14, cin=64, cout=64, residual=True, act1="hardswish", act2="hardswish", opset=14)),
    (mobilenet_v1, dict()),
    (mobilenet_v1, dict(resolution=128, width=0.5, batch=2)),
    (mobilenet_v2, dict()),
])
def test_fold_bn_same_function(builder, kw):
    folded = builder(fold_bn=True, **kw)
    onnx.checker.check_model(folded, full_check=True)
    assert not any(n.op_type == "BatchNormalization" for n in folded.graph.node)
    _assert_close(_run(folded), _run(builder(**kw)))


def test_determinism():
    for name in ("dwsep", "mobilenet_v2"):
        assert build(name).SerializeToString() == build(name).SerializeToString()
        a = {t.name: t.raw_data for t in build(name, seed=0).graph.initializer}
        b = {t.name: t.raw_data for t in build(name, seed=1).graph.initializer}
        assert a.keys() == b.keys()
        assert all(a[k] != b[k] for k in a if k.endswith("_W"))


@pytest.mark.parametrize("act", ["relu6", "hardswish"])
def test_activation_forms_agree(act):
    kw = dict(h=14, act1=act, act2=act)
    if act == "relu6":
        # Clip with min/max attributes (opset 10) vs as inputs (opset 13).
        variants = [dwsep_block(opset=10, **kw), dwsep_block(opset=13, **kw)]
        assert any(a.name == "min" for n in variants[0].graph.node if n.op_type == "Clip" for a in n.attribute)
    else:
        variants = [dwsep_block(hswish_form=f, opset=14, **kw) for f in ("op", "hardsigmoid", "clip")]
        variants.append(dwsep_block(hswish_form="clip", opset=10, **kw))
    for m in variants:
        onnx.checker.check_model(m, full_check=True)
    ref = _run(variants[0])
    for m in variants[1:]:
        _assert_close(_run(m), ref, rel=1e-5)


@pytest.mark.parametrize("kw", [
    dict(residual=True, cin=32, cout=32, stride=2),
    dict(residual=True, cin=32, cout=64),
    dict(residual=True, cin=32, cout=32, auto_pad="VALID"),
    dict(act1="hardswish", hswish_form="op", opset=13),
    dict(pads=(1, 1, 1, 1), auto_pad="VALID"),
    dict(act1="bogus"),
])
def test_invalid_configs_raise(kw):
    with pytest.raises(ValueError):
        dwsep_block(h=8, **kw)


def test_reference_block_tables():
    assert [(b["cin"], b["cout"], b["h"], b.get("stride", 1)) for b in MOBILENET_V1_BLOCKS] == [
        (32, 64, 112, 1), (64, 128, 112, 2), (128, 128, 56, 1),
        (256, 256, 28, 1), (512, 512, 14, 1), (1024, 1024, 7, 1)]
    assert len(ODD_BLOCKS) == 4
    assert all(b["name"] in REGISTRY for b in MOBILENET_V1_BLOCKS + ODD_BLOCKS)
    assert build("odd_batch2_32_64_h28", batch=3).graph.input[0].type.tensor_type.shape.dim[0].dim_value == 3


def test_cli(tmp_path, capsys):
    assert cli_main(["list"]) == 0
    assert capsys.readouterr().out.split() == list(REGISTRY)
    out = tmp_path / "m.onnx"
    assert cli_main(["build", "dwsep", "-o", str(out), "--batch", "2", "--fold-bn", "--seed", "3"]) == 0
    line = capsys.readouterr().out.strip()
    assert str(out) in line and "x[2,32,112,112]" in line and "nodes=4" in line
    assert onnx.load(str(out)).SerializeToString() == dwsep_block(batch=2, fold_bn=True, seed=3).SerializeToString()
    assert cli_main(["build", "nope", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown model" in err
