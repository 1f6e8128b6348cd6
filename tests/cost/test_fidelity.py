"""The simulated Ascend target against published on-device measurements (benchmarks/fidelity)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fusion.cost import fidelity
from fusion.frontend.onnx_import import load_graph
from fusion.core.soc import SOCS, get_soc
from fusion.cost.vendor_baseline import gemm_kernel, model_graph, model_network
from fusion.cost.vendor_layers import layers_from_graph, layers_from_spec
from models import build
from models.convnets import resnet_spec, vgg_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def doc():
    return fidelity.load_points()


@pytest.fixture(scope="module")
def rows(doc):
    return fidelity.table(doc)


def test_points_are_sourced_and_split(doc):
    pts = doc["points"]
    counted = [p for p in pts if p["set"] in fidelity.SETS]
    assert len(counted) >= 15
    assert {p["soc"] for p in counted} == {"ascend910b2", "ascend310p3"}
    for p in pts:
        assert p["source"]["repo"] and p["source"]["path"] and p["source"].get("section"), p["id"]
        assert p["includes"] and p["dtype"] and p["measured_us"] > 0 and p["params"], p["id"]
        assert p["set"] in fidelity.SETS or p.get("excluded_reason"), p["id"]
    # the MobileNets are never fitted on
    assert all(p["set"] == "validation" for p in pts if "mobilenet" in p["params"].get("net", ""))
    assert len({p["id"] for p in pts}) == len(pts)


def test_validation_meets_the_done_when_thresholds(rows, doc):
    s = fidelity.summary(rows)["validation"]
    assert s["points"] >= 10
    assert s["median_abs_err"] <= 0.20, s
    assert s["max_factor"] <= 1.5, [(r.id, round(r.ratio, 2)) for r in rows if r.set == "validation"]
    batch = {p["id"]: p["params"].get("batch", 1) for p in doc["points"]}
    nets = [r for r in rows if r.kind == "network" and batch[r.id] == 1]
    assert len(nets) >= 5
    for r in nets:    # the vendor-like unfused baseline of whole networks: within +-30 %
        assert abs(r.ratio - 1) <= 0.30, (r.id, r.ratio)
    # batch > 1 (issue 30; validation only, the 310P constants are the batch-1 fit): the batch trend is
    # not calibrated -- MobileNetV1 reads 0.68x at batch 4 and 1.40x at batch 32 -- so these points hold
    # the suite's 1.5x bound, not the +-30 % of the batch-1 networks
    big = [r for r in rows if r.kind == "network" and batch[r.id] > 1]
    assert len(big) >= 10 and all(max(r.ratio, 1 / r.ratio) <= 1.5 for r in big), [(r.id, r.ratio) for r in big]


def test_the_check_can_fail(doc):
    """Perturbed constants (the pre-refit per-DMA setup of 200 cycles, half the DRAM bandwidth)
    miss the measurements: the same summary flags them."""
    old = {name: dataclasses.replace(soc, dma_setup_cycles=200, hbm_gbps=soc.hbm_gbps / 2)
           for name, soc in SOCS.items()}
    s = fidelity.summary(fidelity.table(doc, old))["validation"]
    assert s["median_abs_err"] > 0.20 or s["max_factor"] > 1.5


def test_fit_reproduces_the_910b_constants(doc):
    spec = importlib.util.spec_from_file_location("fit", ROOT / "benchmarks" / "fidelity" / "fit.py")
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    cal = {p["id"]: p for p in doc["points"] if p["set"] == "calibration"}
    soc = get_soc("ascend910b2")
    got = fit.fit_910b(cal, soc)
    for name, value in got.items():
        assert getattr(soc, name) == pytest.approx(value, rel=0.05, abs=0.5), name


def test_310p_constants_are_the_least_squares_fit(doc):
    """soc.py's 310P launch base and DRAM bandwidth minimise the fit's objective (fit.py's grid
    search, checked here at the neighbours only)."""
    import math
    nets = [p for p in doc["points"] if p["set"] == "calibration" and p["soc"] == "ascend310p3"]
    soc = get_soc("ascend310p3")

    def cost(base, bw):
        trial = dataclasses.replace(soc, launch_base_us=base, hbm_gbps=bw, l2_gbps=4 * bw)
        return sum(math.log(fidelity.predict(p, trial) / p["measured_us"]) ** 2 for p in nets)
    here = cost(soc.launch_base_us, soc.hbm_gbps)
    for db, dbw in ((0.3, 0), (-0.3, 0), (0, 8), (0, -8)):
        assert here <= cost(soc.launch_base_us + db, soc.hbm_gbps + dbw)


def test_vendor_kernels_of_mobilenet_v1():
    g = load_graph(build("mobilenet_v1"))
    layers = layers_from_graph(g)
    kinds = [L.kind for L in layers]
    # TransData, stem conv, 13 x (DW, PW), pool, classifier: BN and ReLU ride in their conv
    assert kinds == ["transdata", "conv"] + ["dwconv", "conv"] * 13 + ["pool", "gemm"]
    assert all(L.act == "relu" for L in layers if L.kind in ("conv", "dwconv"))
    assert layers[2].members == ("b1_dw", "b1_dw_bn", "b1_dw_act")
    net = model_graph(g, get_soc("310p3"))
    assert net.time_us == pytest.approx(sum(k.time_us for k in net.kernels))
    assert net.launch_us < net.time_us and all(k.time_us > k.launch_us for k in net.kernels)


def test_residual_add_and_act_fuse_into_the_conv():
    g = load_graph(build("mobilenet_v2"))
    pw = [L for L in layers_from_graph(g) if L.name == "b3_pw"][0]
    assert pw.residual and pw.members == ("b3_pw", "b3_pw_bn", "b3_add")
    spec = layers_from_spec(resnet_spec(18))
    assert [L.residual for L in spec if L.name.endswith("_c2")] == [True] * 8
    assert sum(L.macs for L in spec) == 1814073344          # torchvision ResNet-18: 1.81 GMAC
    assert sum(L.macs for L in layers_from_spec(vgg_spec(16))) == 15470264320


def test_resnet_builder_matches_its_spec():
    import numpy as np
    import onnxruntime as ort
    m = build("resnet18", resolution=64)   # the registry's ResNet (the others: models.convnets)
    out = ort.InferenceSession(m.SerializeToString()).run(None, {"x": np.ones((1, 3, 64, 64), np.float32)})[0]
    assert out.shape == (1, 1000) and np.isfinite(out).all()
    convs = [n for n in m.graph.node if n.op_type == "Conv"]
    assert len(convs) == sum(1 for op in resnet_spec(18) if op[0] == "conv") == 20


def test_gemm_tiles_m_and_n_and_streams_k():
    soc = get_soc("ascend910b2")
    big = gemm_kernel(soc, "mm", 8192, 8192, 8192)
    assert big.cores == soc.cube_cores and big.split[0] > 1 and big.split[1] > 1
    # compute-bound at this size: the cube time is within 15 % of the MAC count at peak
    peak_us = 8192 ** 3 / (soc.cube_cores * 4096 * soc.clock_ghz * 1e3)
    assert big.cube_us == pytest.approx(peak_us, rel=0.15)
    # a skinny GEMM splits N over the cores, not M
    skinny = gemm_kernel(soc, "mm", 128, 1024, 30720)
    assert skinny.split[0] == 1 and skinny.split[1] > 1


def test_whole_network_is_the_sum_of_its_kernels():
    soc = get_soc("310p3")
    net = model_network(layers_from_spec(resnet_spec(50)), soc)
    assert len(net.kernels) == 1 + 53 + 2 + 1      # TransData, 53 convs, 2 pools, fc
    assert net.for_members(["stem"]) == net.kernels[1].time_us


def _run(*args):
    return subprocess.run([sys.executable, "-m", "fusion.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_cli_prints_the_table(tmp_path):
    out = tmp_path / "f.json"
    r = _run("fidelity", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "validation:" in r.stdout and "calibration:" in r.stdout and "p310_mobilenet_v1" in r.stdout
    data = json.loads(out.read_text())
    assert data["summary"]["validation"]["points"] >= 10


def test_cli_bad_points_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"points": [{"id": "x", "set": "validation", "soc": "ascend910b2", "kind": "nosuch", '
                   '"params": {}, "measured_us": 1, "source": {"repo": "a", "path": "b"}}]}')
    r = _run("fidelity", "--points", str(bad))
    assert r.returncode == 2 and r.stderr.startswith("megafuse: error:") and len(r.stderr.splitlines()) == 1
    bad.write_text(json.dumps({"points": [{"id": "x\n\x1b[31m", "set": "validation", "soc": "no\nsuch",
                                           "kind": "copy", "params": {}, "measured_us": 1,
                                           "source": {"repo": "a", "path": "b"}}]}))
    r = _run("fidelity", "--points", str(bad))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "\x1b" not in r.stderr
    r = _run("fidelity", "--points", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "not found" in r.stderr


def test_the_measured_networks_reject_an_hbm_floor(doc):
    """Why no kernel body is floored at its HBM reads + writes together (fusion/cost/results.l2_floor_us):
    given to the vendor-like kernels, that floor puts MobileNetV1 at batch 32 on 310P3 past the suite's
    1.5x from its measured time, where the rule both sides follow (each direction at up to the HBM
    bandwidth, every DMA byte at the L2 bandwidth) keeps it within."""
    p = next(q for q in doc["points"] if q["id"] == "p310_mobilenet_v1_bs32")
    soc = get_soc(p["soc"])
    net = model_network(fidelity.network_layers("mobilenet_v1", 32, 224), soc)
    floored = sum(max(k.time_us, k.launch_us + k.hbm_bytes / (soc.hbm_gbps * 1e3)) for k in net.kernels)
    assert net.time_us / p["measured_us"] <= 1.5 < floored / p["measured_us"]


def _point(doc, kind: str, **change) -> dict:
    """The first published point of `kind`, with top-level fields (or params.X as params_X) changed."""
    pt = json.loads(json.dumps(next(p for p in doc["points"] if p["kind"] == kind)))
    for key, value in change.items():
        if key.startswith("params_"):
            pt["params"][key[len("params_"):]] = value
        else:
            pt[key] = value
    return pt


@pytest.mark.parametrize("kind,change,words", [
    ("copy", {"measured_us": 0}, "measured_us must be a finite number > 0"),
    ("copy", {"measured_us": float("nan")}, "measured_us must be a finite number > 0"),
    ("copy", {"measured_us": -5}, "measured_us must be a finite number > 0"),
    ("copy", {"measured_us": "12"}, "measured_us must be a finite number > 0"),
    ("copy", {"measured_us": True}, "measured_us must be a finite number > 0"),
    ("copy", {"params_cores": 0}, "params.cores must be an integer in 1..4,096"),
    ("copy", {"params_bytes": -1}, "params.bytes must be an integer in 1.."),
    ("copy", {"params_bytes": 10 ** 30}, "params.bytes must be an integer in 1.."),
    ("copy", {"params_bytes": 1.5e8}, "params.bytes must be an integer"),
    ("copy", {"params_l2_hit": 2.0}, "params.l2_hit must be a number in 0..1"),
    ("copy", {"params_side": "gpu"}, "params.side must be"),
    ("eltwise", {"params_copy_elems": 0}, "params.copy_elems must be an integer in 1.."),
    ("eltwise", {"params_double_buffer": "yes"}, "params.double_buffer must be true or false"),
    ("matmul", {"params_m": 0}, "params.m must be an integer in 1.."),
    ("matmul", {"params_m": 1 << 20, "params_n": 1 << 20}, "params m*n*k is"),
    ("network", {"params_batch": 100000}, "params.batch must be an integer in 1..128"),
    ("copy", {"dtype": 5}, 'dtype must be "float16" or "float32"'),
    ("copy", {"id": "x\x1b[31m\n"}, None),
])
def test_malformed_points_are_named_before_any_prediction(doc, kind, change, words):
    pt = _point(doc, kind, **change)
    if words is None:     # a hostile id alone is data: the point is modeled
        assert fidelity.table({"points": [pt]})[0].ratio > 0
        return
    with pytest.raises(fidelity.MegafuseError) as e:
        fidelity.table({"points": [pt]})
    assert str(e.value).startswith("fidelity point 0 '") and words in str(e.value), str(e.value)
    assert str(e.value).isprintable()


def test_missing_params_are_named(doc):
    pt = _point(doc, "copy")
    del pt["params"]["instr_per_core"]
    with pytest.raises(fidelity.MegafuseError, match=r"params.instr_per_core is missing"):
        fidelity.table({"points": [pt]})


def test_cli_zero_measured_is_one_line_not_an_internal_error(doc, tmp_path):
    bad = tmp_path / "zero.json"
    bad.write_text(json.dumps({"points": [_point(doc, "copy", measured_us=0)]}))
    r = _run("fidelity", "--points", str(bad))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "internal error" not in r.stderr
    assert "fidelity point 0 'a2_copy_gm2ub_large': measured_us must be a finite number > 0" in r.stderr
    r = _run("fidelity", "--points", str(bad), "--json", str(tmp_path / "nodir" / "f.json"))
    assert r.returncode == 2 and "--json" in r.stderr and "does not exist" in r.stderr
