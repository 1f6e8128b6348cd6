"""bench's body-level comparison (fusion/report/bodies.py) on both SoCs, and a report that does not contradict
itself: avg_latency_us is the headline, every efficiency <= 100 % (issue 30)."""

import json

import onnx
import pytest

import models
from fusion.report.bodies import SENSITIVITY_CYCLES
from fusion.cli.main import main


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    d = tmp_path_factory.mktemp("bodies")
    p = d / "v1.onnx"
    onnx.save(models.mobilenet_v1(resolution=64), p)
    out = {}
    for soc in ("ascend910b2", "ascend310p3"):
        assert main(["bench", str(p), "-t", f"sim:{soc}", "--dtype", "float16", "--no-db",
                     "--json", str(d / f"{soc}.json")]) == 0
        out[soc] = json.loads((d / f"{soc}.json").read_text())
    return out


@pytest.mark.parametrize("soc", ["ascend910b2", "ascend310p3"])
def test_latency_fields_are_the_headline(reports, soc):
    r = reports[soc]
    assert r["avg_latency_us"] == r["p95_latency_us"] == r["fused_in_vendor_network_us"]
    assert r["throughput_fps"] == pytest.approx(r["batch"] * 1e6 / r["fused_in_vendor_network_us"])
    assert r["per_op_fused_latency_us"] > 0 and r["speedup"] == pytest.approx(
        r["unfused_latency_us"] / r["per_op_fused_latency_us"])
    for k in r["kernels"]:
        assert 0 < k["roofline_pct"] <= k["roofline_pct_of_body"] <= 100


@pytest.mark.parametrize("soc", ["ascend910b2", "ascend310p3"])
def test_bodies_both_sides_one_launch(reports, soc, capsys):
    r = reports[soc]
    b = r["bodies"]
    assert b["figures"] == "modeled" and b["vendor_kernels"] == r["vendor_kernels"]
    # vendor-like: one launch (the widest kernel's) + every body + a SyncAll per boundary
    launch = b["vendor_one_launch_us"] - b["vendor_bodies_us"] - (b["vendor_kernels"] - 1) * b["sync_all_us"]
    assert launch == pytest.approx(max(k["launch_floor_us"] for k in r["kernels"]), rel=0.5) and launch > 0
    assert b["speedup"] == pytest.approx(b["vendor_one_launch_us"] / b["fused_one_launch_us"])
    if soc == "ascend910b2":   # the SuperKernel figure is the same vendor-side sum
        assert b["vendor_one_launch_us"] == pytest.approx(r["vendor_superkernel_us"])
    # per block: its fused body (in its chain) against its vendor-like pair's bodies
    assert [x["name"] for x in b["blocks"]] == [k["name"] for k in r["kernels"]]
    for x, k in zip(b["blocks"], r["kernels"]):
        assert x["fused_body_us"] == pytest.approx(k.get("in_chain_body_us", x["fused_body_us"]))
        assert x["speedup"] == pytest.approx(x["vendor_body_us"] / x["fused_body_us"])
        # like for like: the pair in one launch pays a SyncAll between its kernels, as the fused
        # body pays its phases' (inside fused_body_us)
        assert x["vendor_body_us"] == pytest.approx(sum(v["body_us"] for v in x["vendor_kernels"])
                                                    + (len(x["vendor_kernels"]) - 1) * b["sync_all_us"])
        assert x["vendor_barriers_us"] > 0 and len(x["vendor_kernels"]) >= 2
    assert b["blocks_slower_than_pair"] == [x["name"] for x in b["blocks"] if x["speedup"] < 1]


def test_soft_sync_sensitivity_only_on_310p(reports):
    assert "sensitivity" not in reports["ascend910b2"]["bodies"]
    b = reports["ascend310p3"]["bodies"]
    s = b["sensitivity"]
    assert [x["sync_all_cycles"] for x in s] == list(SENSITIVITY_CYCLES)
    # a dearer SyncAll costs each side its boundaries (and the fused side its two-phase barriers)
    for lo, hi in zip([b, *s], s):
        d = hi["sync_all_us"] - lo["sync_all_us"]
        assert hi["vendor_one_launch_us"] - lo["vendor_one_launch_us"] == pytest.approx((b["vendor_kernels"] - 1) * d)
        assert hi["fused_one_launch_us"] - lo["fused_one_launch_us"] == pytest.approx(
            (b["fused_kernels"] - 1 + b["fused_inner_barriers"]) * d)


def test_print_bodies_when_every_block_fell_back(capsys):
    from fusion.report.bodies import print_bodies

    b = {"fused_one_launch_us": 10.0, "fused_kernels": 3, "fused_bodies_us": 8.0, "vendor_one_launch_us": 10.0,
         "vendor_kernels": 3, "vendor_bodies_us": 8.0, "sync_all_cycles": 448, "sync_all_us": 0.41, "speedup": 1.0,
         "blocks": [], "blocks_fused_body_us": 0.0, "blocks_vendor_body_us": 0.0, "blocks_slower_than_pair": []}
    print_bodies(b)
    out = capsys.readouterr().out
    assert "1.00x" in out and "blocks' bodies" not in out


@pytest.mark.parametrize("soc", ["ascend910b2", "ascend310p3"])
def test_pair_ceiling_beside_the_bodies(reports, soc, capsys):
    """bench gives each fused block its pair's ceiling and the network's (fusion/cost/pair_ceiling.py):
    the ceiling is below the pair's bodies, and the network at the ceiling below the vendor-like side."""
    b = reports[soc]["bodies"]
    c = b["ceiling"]
    assert c["figures"] == "modeled bound" and c["pairs"] == 13
    assert c["ceiling_one_launch_us"] < c["vendor_one_launch_us"] == pytest.approx(b["vendor_one_launch_us"])
    by_dw = {p["dw"]: p for p in c["per_pair"]}
    for x in b["blocks"]:
        if x["pair_ceiling"] is None:   # the pooling head: no DW + PW pair of the vendor-like network
            continue
        p = x["pair_ceiling"]
        assert p == by_dw[p["dw"]] and p["ceiling_body_us"] < p["pair_body_us"]
        assert p["pair_body_us"] == pytest.approx(sum(v["body_us"] for v in x["vendor_kernels"]))
    assert sum(x["pair_ceiling"] is not None for x in b["blocks"]) >= 1
    # and every fusion's: the whole network as one kernel, below the pair ceiling's network
    w = c["whole_network"]
    assert w["figures"] == "modeled bound" and w["kernels"] == reports[soc]["vendor_kernels"]
    assert w["ceiling_one_launch_us"] <= c["ceiling_one_launch_us"]
    assert w["vendor_one_launch_us"] == pytest.approx(b["vendor_one_launch_us"])
    from fusion.report.bodies import print_bodies

    print_bodies(b)
    out = capsys.readouterr().out
    assert f"ceiling of whole-network fusion: its {w['kernels']} kernels'" in out
    assert f"at most {w['ceiling_speedup']:.2f}x (binding pipe: {w['binding_pipe']}" in out
