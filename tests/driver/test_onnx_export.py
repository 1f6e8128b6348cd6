"""`compile --emit-onnx`: model.fused.onnx passes the ONNX checker, has one ai.megafuse node per
block chain and per fused block outside them, each node matches its op package's op_proto, and
ONNX Runtime runs the file on the CPU (fusion/verify/onnx_run.py) within tolerance of ORT on the original."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import run_cli
from onnx import helper

import models
from fusion.codegen.ascendc.emit_kernel import VERSION
from fusion.codegen.ascendc.node_spec import DOMAIN
from fusion.driver.onnx_export import FILE_NAME
from fusion.verify.onnx_run import members_of, session

DTYPES = {1: "float32", 10: "float16", 2: "uint8", 7: "int64"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("export_models")
    out = {}
    for name in ("ocr_detector", "mobilenet_v2", "odd_c40_56_h28"):
        path = d / f"{name}.onnx"
        onnx.save(models.build(name), path)
        out[name] = str(path)
    return out


def _compile(capsys, model, out, *args):
    code, stdout, err = run_cli(capsys, "compile", model, "-o", str(out), "--emit-onnx", "--json", *args)
    assert code == 0, err
    return json.loads(stdout), onnx.load(str(out / FILE_NAME))


def _custom(m):
    return [n for n in m.graph.node if n.domain == DOMAIN]


def _tensor_facts(m):
    """name -> (dtype, shape, format) of every typed tensor of the fused model."""
    g = m.graph
    facts = {t.name: (DTYPES[t.data_type], list(t.dims), None) for t in g.initializer}
    for v in list(g.value_info) + list(g.input) + list(g.output):
        tt = v.type.tensor_type
        fmt = v.doc_string.removeprefix("format ") if v.doc_string.startswith("format ") else None
        shape = [d.dim_value for d in tt.shape.dim]
        facts[v.name] = (DTYPES[tt.elem_type], shape, fmt or facts.get(v.name, (0, 0, None))[2])
    return facts


def _check_protos(out, m):
    """Every custom node against op_pkg/<op type>/<version>/op_proto/<op type>.json."""
    facts = _tensor_facts(m)
    for node in _custom(m):
        proto = json.loads((out / "op_pkg" / node.op_type / VERSION / "op_proto" / f"{node.op_type}.json").read_text())
        assert proto["op"] == node.op_type and proto["domain"] == node.domain
        for desc, names in ((proto["input_desc"], node.input), (proto["output_desc"], node.output)):
            assert len(desc) == len(names)
            for d, t in zip(desc, names):
                dtype, shape, fmt = facts[t]
                assert (d["type"], d["format"], d["shape"]) == ([dtype], [fmt], shape), (node.op_type, d["name"], t)
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        assert [a["name"] for a in proto["attr"]] and {a["name"] for a in proto["attr"]} == set(attrs)
        kinds = {onnx.AttributeProto.INT: "Int", onnx.AttributeProto.FLOAT: "Float", onnx.AttributeProto.STRING: "String",
                 onnx.AttributeProto.INTS: "ListInt", onnx.AttributeProto.FLOATS: "ListFloat",
                 onnx.AttributeProto.STRINGS: "ListString"}
        for a in node.attribute:
            p = next(x for x in proto["attr"] if x["name"] == a.name)
            v = attrs[a.name]
            v = [x.decode() for x in v] if a.type == onnx.AttributeProto.STRINGS else (
                v.decode() if isinstance(v, bytes) else list(v) if isinstance(v, list) else v)
            assert p["type"] == kinds[a.type] and p["value"] == pytest.approx(v) if a.type in (
                onnx.AttributeProto.FLOAT, onnx.AttributeProto.FLOATS) else p["value"] == v, a.name
        header = (out / "op_pkg" / node.op_type / VERSION / "op_proto").glob("*_proto.h")
        text = next(header).read_text()
        assert f"REG_OP({node.op_type})" in text and all(f".REQUIRED_ATTR({k}," in text for k in attrs)
        plugin = next((out / "op_pkg" / node.op_type / VERSION / "framework" / "onnx_plugin").glob("*.cc")).read_text()
        assert f'OriginOpType("{DOMAIN}::1::{node.op_type}")' in plugin
        assert "atc --model=model.fused.onnx" in (out / "op_pkg" / node.op_type / VERSION / "docs" / "README.md").read_text()


def _compare(original, fused_path, shape, rel):
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    got = session(fused_path).run(None, {"x": x})
    ref = ort.InferenceSession(original, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for g, r in zip(got, ref):
        assert g.shape == r.shape and np.isfinite(g).all()
        assert np.abs(g - r).max() <= rel * np.abs(r).max(), np.abs(g - r).max() / np.abs(r).max()


def test_detector_fp16_ascend(capsys, built, tmp_path):
    doc, m = _compile(capsys, built["ocr_detector"], tmp_path / "o", "-t", "ascend", "--dtype", "float16")
    onnx.checker.check_model(m)
    chained = {b for c in doc["chains"] for b in c["blocks"]}
    # a lone block with squeeze-and-excitation stays the model's own nodes (its node has no SE operands yet)
    lone = [b for b in doc["fused_blocks"] if b["name"] not in chained and "+se" not in b["workload"]]
    assert any("exported as its original nodes" in n for n in doc["notes"])
    nodes = _custom(m)
    assert doc["chains"] and len(nodes) == len(doc["chains"]) + len(lone)
    assert sorted(n.name for n in nodes) == sorted([f"megafuse_{c['name']}" for c in doc["chains"]]
                                                   + [f"megafuse_{b['name']}" for b in lone])
    # every fused model node is gone from the graph; the rest is the user's
    fused_ops = {o.decode() for n in nodes for a in n.attribute if a.name == "fused_ops" for o in a.strings}
    assert fused_ops and not fused_ops & {n.name for n in m.graph.node}
    _check_protos(tmp_path / "o", m)
    _compare(built["ocr_detector"], str(tmp_path / "o" / FILE_NAME), (1, 3, 64, 64), 2e-2)


def test_mobilenet_v2_chain_with_gemm_stages(capsys, built, tmp_path):
    doc, m = _compile(capsys, built["mobilenet_v2"], tmp_path / "o", "-t", "ascend", "--dtype", "float16")
    nodes = _custom(m)
    assert [n.op_type for n in nodes] == ["MegafuseChain1"] and len(doc["chains"]) == 1
    members = members_of(nodes[0])
    assert len(members) == len(doc["chains"][0]["blocks"]) == 35   # 17 blocks, 17 GEMM stages, the head
    stages = doc["chains"][0]["stages"]
    for s in stages:   # GEMM stages have op packages of their own
        assert (tmp_path / "o" / "op_pkg" / ("Megafuse" + "".join(p.capitalize() for p in s.split("_")))).is_dir()
    _check_protos(tmp_path / "o", m)
    _compare(built["mobilenet_v2"], str(tmp_path / "o" / FILE_NAME), (1, 3, 224, 224), 2e-2)


def test_padded_channels_fp32_sim(capsys, built, tmp_path):
    """40 -> 56 channels: Pad / Slice around the node; float32 tight."""
    doc, m = _compile(capsys, built["odd_c40_56_h28"], tmp_path / "o", "--no-chain")
    ops = [n.op_type for n in m.graph.node]
    assert "Pad" in ops and "Slice" in ops and len(_custom(m)) == len(doc["fused_blocks"]) >= 1
    assert any("their op packages are written with -t ascend" in n for n in doc["notes"])
    _compare(built["odd_c40_56_h28"], str(tmp_path / "o" / FILE_NAME), (1, 40, 28, 28), 1e-4)


def test_emit_onnx_refusals(capsys, built, tmp_path):
    code, _, err = run_cli(capsys, "compile", built["ocr_detector"], "--emit-onnx")
    assert code == 2 and err.count("\n") == 1 and "give -o DIR" in err
    code, _, err = run_cli(capsys, "compile", built["ocr_detector"], "-t", "llvm", "--emit-onnx", "-o", str(tmp_path / "l"))
    assert code == 2 and err.count("\n") == 1 and "-t sim" in err and not (tmp_path / "l").exists()
