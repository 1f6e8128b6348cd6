"""--opt-level 0..3 (fusion/core/opt_levels.py): what each level compiles, level 2 = the default,
numerics of the low levels against ONNX Runtime, bench side by side, explain, refusals."""

import json

import onnx
import pytest
from conftest import run_cli

import fusion
import models
from models import ocr
from fusion.verify.check import check_model
from fusion.core.errors import MegafuseError


@pytest.fixture(scope="module")
def det(tmp_path_factory):
    path = tmp_path_factory.mktemp("levels") / "det.onnx"
    onnx.save(models.build("ocr_detector"), path)
    return str(path)


def _ops(model_path):
    return onnx.load(model_path).graph.node


def test_levels_compile_what_they_say(det):
    n_nodes = len(_ops(det))
    cms = {lv: fusion.compile(det, target="sim", dtype="float16", opt_level=lv, fallback=True) for lv in (0, 1, 2, 3)}
    default = fusion.compile(det, target="sim", dtype="float16", fallback=True)
    assert len(cms[0].program.steps) == n_nodes and not cms[0].fused_blocks   # one kernel per operator
    assert any(n.op_type == "BatchNormalization" for n in cms[0].graph.nodes)
    assert not cms[1].fused_blocks and not any(n.op_type == "BatchNormalization" for n in cms[1].graph.nodes)
    assert len(cms[1].program.steps) < len(cms[0].program.steps)
    for cm in (cms[2], cms[3]):   # level 2 is the default exactly; 3 equals it, with a note
        assert [(b.name, b.plan.tile) for b in cm.fused_blocks] == [(b.name, b.plan.tile) for b in default.fused_blocks]
        assert [c.blocks for c in cm.chains] == [c.blocks for c in default.chains] and cm.chains
        assert len(cm.program.steps) == len(default.program.steps)
    assert any("--opt-level 3 is --opt-level 2" in n for n in cms[3].notes)
    assert not any("--opt-level" in n for n in cms[2].notes + default.notes)
    with pytest.raises(MegafuseError, match="opt_level must be one of"):
        fusion.compile(det, opt_level=7)


@pytest.mark.parametrize("level", [0, 1])
def test_low_levels_match_onnxruntime(det, level):
    model = onnx.load(det)
    for target, dtype in (("llvm", "float32"), ("sim", "float16")):
        cm = fusion.compile(det, target=target, dtype=dtype, opt_level=level)
        r = check_model(model, cm, seed=1)
        assert r.passed, (target, dtype, r.max_rel)


def test_bench_all_levels_modeled(capsys, det, tmp_path):
    code, out, err = run_cli(capsys, "bench", det, "--dtype", "float16", "--opt-level", "all",
                             "--json", str(tmp_path / "r.json"))
    assert code == 0, err
    assert "[MODELED]" in out and "fusion levels side by side" in out
    rep = json.loads((tmp_path / "r.json").read_text())
    lat = {r["level"]: r["latency_us"] for r in rep["levels"]}
    assert rep["figures"] == "modeled" and sorted(lat) == [0, 1, 2, 3]
    assert lat[0] > lat[1] > lat[2] == lat[3]
    # level 2's figure is the default bench's
    code, out, _ = run_cli(capsys, "bench", det, "--dtype", "float16", "--json", str(tmp_path / "d.json"))
    assert code == 0 and json.loads((tmp_path / "d.json").read_text())["per_op_fused_latency_us"] == lat[2]


def test_bench_all_levels_measured(capsys, det, tmp_path):
    code, out, err = run_cli(capsys, "bench", det, "-t", "llvm", "--opt-level", "all", "--samples", "3",
                             "--warmup", "1", "--json", str(tmp_path / "r.json"))
    assert code == 0, err
    assert "[MEASURED]" in out and "ONNX Runtime p50" in out
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["figures"] == "measured" and [r["level"] for r in rep["levels"]] == [0, 1, 2, 3]
    assert all(r["latency_us"] > 0 and r["min_us"] <= r["latency_us"] for r in rep["levels"])
    assert rep["levels"][0]["kernels"] > rep["levels"][1]["kernels"] and rep["levels"][2]["fused_blocks"] > 0


def test_explain_says_what_each_level_adds(capsys, det):
    code, out, _ = run_cli(capsys, "explain", det, "-t", "llvm")
    assert code == 0 and "fusion levels" in out
    lines = [ln for ln in out.splitlines() if ln.startswith(("  0  ", "  1  ", "  2  ", "  3  "))]
    # the detector's DW blocks, its squeeze-and-excitation block included (models/ocr.py)
    fused = ocr.fusable_chains(ocr.DETECTOR_BLOCKS)
    assert len(lines) == 4 and "convs with their epilogue" in lines[1] and f"{fused} fused blocks" in lines[2]
    code, out, _ = run_cli(capsys, "explain", det, "--opt-level", "0", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["fused"] == 0 and all("--opt-level 0 has no DW -> PW fusion" in c["reason"]
                                                   for c in doc["chains"])
    assert [r["level"] for r in doc["opt_levels"]] == [0, 1, 2, 3]


@pytest.mark.parametrize("argv,msg", [
    (("compile", "--opt-level", "5"), "expected 0, 1, 2, 3 or all"),
    (("compile", "--opt-level", "all"), "it is for bench"),
    (("check", "--opt-level", "all"), "it is for bench"),
    (("tune", "--opt-level", "0", "--no-db"), "nothing to tune"),
    (("bench", "--opt-level", "all", "--plot", "x.png"), "take one level"),
])
def test_bad_levels_are_one_line_errors(capsys, det, argv, msg):
    code, _, err = run_cli(capsys, argv[0], det, *argv[1:])
    assert code == 2 and err.count("\n") == 1 and msg in err
