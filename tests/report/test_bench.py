"""megafuse bench: modeled report, trace, plot, baseline regression check; measured llvm mode."""

import json
import os

import onnx
import pytest

import models
from fusion.cli.main import main


@pytest.fixture(scope="module")
def mnv2(tmp_path_factory):
    p = tmp_path_factory.mktemp("b") / "mobilenet_v2.onnx"
    onnx.save(models.mobilenet_v2(), p)
    return str(p)


@pytest.fixture(scope="module")
def sim_report(mnv2, tmp_path_factory):
    d = tmp_path_factory.mktemp("r")
    code = main(["bench", mnv2, "--dtype", "float16", "--no-fallback", "--json", str(d / "r.json"),
                 "--trace", str(d / "t.json"), "--plot", str(d / "p.png")])
    assert code == 0
    return d


@pytest.mark.slow   # in CI (bin/test); left out of the quick local subset
def test_sim_report_fields(sim_report):
    r = json.loads((sim_report / "r.json").read_text())
    for key in ("commit", "model", "batch", "dtype", "target", "avg_latency_ms", "p95_latency_ms",
                "throughput_fps", "memory_peak_mb", "traffic_ratio_fused", "traffic_ratio_unfused", "kernels"):
        assert key in r, key
    # 17 DW blocks + the classifier head (pool -> fc as a DW -> PW block: passes/head_dwsep.py)
    assert r["figures"] == "modeled" and r["target"] == "sim:ascend910b2" and len(r["kernels"]) == 18
    for k in r["kernels"]:
        assert k["figures"] == "modeled" and k["fused_us"] > 0 and k["unfused_us"] > 0
        assert k["gm_bytes_min"] <= k["gm_bytes_fused"] and k["ub_bytes_used"] <= k["ub_bytes_available"]
        # efficiency: roofline time / modeled time, never above 100 %; the launch floor apart
        assert 0 < k["roofline_pct"] <= 100 and k["bottleneck"]
        assert k["roofline_pct"] <= k["roofline_pct_of_body"] and 0 < k["launch_floor_us"] < k["fused_us"]
        assert k["vendor_us"] > 0 and k["speedup_vs_vendor"] == pytest.approx(k["vendor_us"] / k["fused_us"])
        assert k["bound"] in ("memory-bound", "compute-bound", "launch-bound")
        assert k["hbm_bytes_fused"] <= k["gm_bytes_fused"]
        assert k["dma_floor_any_split_ratio"] <= k["dma_floor_ratio"] <= k["traffic_ratio"] + 1e-9


def test_sim_headline_is_against_the_vendor_like_baseline(sim_report):
    r = json.loads((sim_report / "r.json").read_text())
    # the vendor-like network: every ONNX node in some vendor kernel; the fused blocks replace theirs
    assert r["vendor_kernels"] == 1 + 1 + 17 * 2 + 16 + 1 + 1 + 1   # TransData, stem, DW+PW, exp, head, pool, fc
    assert r["vendor_blocks_us"] == pytest.approx(sum(k["vendor_us"] for k in r["kernels"]))
    assert r["fused_unchained_in_vendor_network_us"] == pytest.approx(
        r["vendor_latency_us"] - r["vendor_blocks_us"] + sum(k["fused_us"] for k in r["kernels"]))
    # 910B: one chain holds the 17 blocks, the 16 expansion convs + the head conv as GEMM stages and
    # the classifier head; it replaces those kernels' launches (the vendor-like column keeps one each)
    (c,) = r["chains"]
    assert len(c["stages"]) == 17 and len(c["blocks"]) == 35 and c["blocks"][-1] == "pool_fused"
    assert r["fused_in_vendor_network_us"] == pytest.approx(r["fused_unchained_in_vendor_network_us"] - c["saved_us"])
    assert c["saved_us"] > 0 and r["vendor_latency_us"] / r["fused_in_vendor_network_us"] >= 1.3
    assert r["speedup_vs_vendor"] == pytest.approx(r["vendor_latency_us"] / r["fused_in_vendor_network_us"])
    # the per-op baseline stays as the second column; it is the weaker one (every op its own kernel)
    assert r["unfused_latency_us"] > r["vendor_latency_us"] and "vendor-like" in r["baseline_note"]
    assert r["unfused_blocks_us"] > r["vendor_blocks_us"]
    # per DW block the BN / act / Add kernels come on top of the pair; the classifier head (pool -> fc)
    # has no BN or act to split off: the same two kernels
    for k in r["kernels"]:
        more = k["name"] != "pool_fused"
        assert (k["unfused_us"] > k["vendor_us"]) == more and (k["gm_bytes_unfused"] > k["gm_bytes_vendor"]) == more
        assert k["unfused_us"] >= k["vendor_us"]
    # the other kernels: lowered vendor-like programs, the same in the fused and per-op totals
    assert r["per_op_fused_latency_us"] == pytest.approx(r["fused_blocks_us"] + r["other_kernels_us"])
    assert r["other_kernels"] and all(o["figures"].startswith("modeled (vendor-like program") for o in r["other_kernels"])


def test_sim_pipe_breakdown_explains_each_block(sim_report, capsys):
    r = json.loads((sim_report / "r.json").read_text())
    for k in r["kernels"]:
        p = k["pipes_us"]
        assert p["figures"] == "modeled" and len(p["vendor_kernels"]) == 2   # DW + PW
        f, v = p["fused"], p["vendor"]
        # the fused kernel's time is its launch + its busiest pipe + the rest (fill / waits)
        assert f["launch"] + max(f[q] for q in ("MTE2", "vector", "cube", "MTE3")) + f["fill"] == pytest.approx(k["fused_us"])
        assert 0 <= f["handoff"] <= max(f["MTE2"], f["MTE3"]) + 1e-9
        # the vendor pair: each kernel is launch + at least its busiest pipe
        assert v["launch"] + v["fill"] + max(v[q] for q in ("MTE2", "vector", "cube", "MTE3")) <= k["vendor_us"] + 1e-9
        if k["fused_us"] > k["vendor_us"]:
            assert p["fused_loses_most_on"] in ("MTE2", "MTE1", "vector", "cube", "MTE3", "handoff", "fill", "launch")


def test_trace_is_valid_trace_event_json(sim_report):
    doc = json.loads((sim_report / "t.json").read_text())
    events = doc["traceEvents"]
    assert events and all(e["ph"] in ("X", "M") for e in events)
    xs = [e for e in events if e["ph"] == "X"]
    assert xs and all(e["dur"] >= 0 and "ts" in e and "pid" in e and "tid" in e for e in xs)


def test_plot_is_png(sim_report):
    assert (sim_report / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_baseline_catches_injected_regression(mnv2, sim_report, tmp_path, capsys):
    base = json.loads((sim_report / "r.json").read_text())
    assert main(["bench", mnv2, "--dtype", "float16", "--no-fallback", "--baseline", str(sim_report / "r.json")]) == 0
    faster = dict(base, avg_latency_us=base["avg_latency_us"] / 1.10, p95_latency_us=base["p95_latency_us"] / 1.10)
    faster["kernels"] = [dict(k, fused_us=k["fused_us"] / 1.10) for k in base["kernels"]]
    (tmp_path / "fast.json").write_text(json.dumps(faster))
    capsys.readouterr()
    assert main(["bench", mnv2, "--dtype", "float16", "--no-fallback", "--baseline", str(tmp_path / "fast.json")]) == 1
    assert "REGRESSION" in capsys.readouterr().err


def test_bad_baseline_is_one_line_error(mnv2, tmp_path, capsys):
    (tmp_path / "x.json").write_text("{not json")
    assert main(["bench", mnv2, "--baseline", str(tmp_path / "x.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_llvm_measures_fused_unfused_and_ort_side_by_side(tmp_path, capsys):
    p = tmp_path / "b.onnx"
    onnx.save(models.dwsep_block(cin=32, cout=32, h=14), p)
    assert main(["bench", str(p), "-t", "llvm", "--samples", "5", "--json", str(tmp_path / "l.json")]) == 0
    r = json.loads((tmp_path / "l.json").read_text())
    assert r["figures"] == "measured" and r["threads"] >= 1 and r["samples"] == 5
    for who in ("fused", "unfused", "onnxruntime"):
        assert r[who]["p50_us"] > 0 and r[who]["samples"] == 5
    assert r["kernels"][0]["unfused_kernels"] == 2   # DW+act and PW+act: each conv runs its activation
    assert "MEASURED" in capsys.readouterr().out


def test_pipeline_bubbles_are_classed_by_their_busiest_pipe():
    from types import SimpleNamespace

    from fusion.report.bench import memory_or_compute

    def cost(bottleneck, **busy):
        return SimpleNamespace(bottleneck=bottleneck, per_pipe_us={"MTE2": 0, "vector": 0, "cube": 0, "MTE3": 0, **busy})
    assert memory_or_compute(cost("pipeline-bubbles", MTE2=5, vector=3)) == "memory-bound"
    assert memory_or_compute(cost("pipeline-bubbles", MTE2=1, cube=3)) == "compute-bound"
    assert memory_or_compute(cost("compute-bound (vector)", MTE2=9)) == "compute-bound"
    assert memory_or_compute(cost("launch-bound")) == "launch-bound"


def test_measured_bench_turns_the_tvm_spin_off_unless_the_user_set_it(monkeypatch):
    from fusion.tuning.measure import NO_SPIN_ENV, no_spin

    monkeypatch.delenv("TVM_THREAD_POOL_SPIN_COUNT", raising=False)
    no_spin()
    assert os.environ["TVM_THREAD_POOL_SPIN_COUNT"] == NO_SPIN_ENV["TVM_THREAD_POOL_SPIN_COUNT"] == "0"
    monkeypatch.setenv("TVM_THREAD_POOL_SPIN_COUNT", "1000")
    no_spin()
    assert os.environ["TVM_THREAD_POOL_SPIN_COUNT"] == "1000"
