"""Block chains (fusion/driver/chain.py, fusion/codegen/ascendc/emit_chain.py, fusion/verify/chain_check.py): which
consecutive fused blocks run as one launch, what the model charges for it, and the chain kernel
on the emulator against the blocks' own kernels and ONNX Runtime."""

import json

import pytest

from conftest import run_cli
from factories import mobilenet_v1_file


@pytest.fixture(scope="module")
def small_v1(tmp_path_factory):
    """MobileNetV1 at 32 px, width 0.25: on 910B b1 gets a two-phase plan, b2-b4 MIX ones."""
    return mobilenet_v1_file(tmp_path_factory, "chain")


def _compile(path, target, **kw):
    import fusion

    return fusion.compile(path, target=target, dtype="float16", outputs="b4_pw_act", **kw)


def test_chains_follow_the_legality_rules(small_v1):
    from fusion.driver.tile_policy import TileOverride

    cm = _compile(small_v1, "sim:ascend910b2")
    # b4's standalone plan is the one-phase MIX kernel; in the chain it runs a two-phase plan
    # (its body and a SyncAll cost less than its own launch: fusion/chain.chain_member_plan)
    assert [(c.name, c.blocks) for c in cm.chains] == [("chain1", ("b1_fused", "b2_fused", "b3_fused", "b4_fused"))]
    assert cm.chains[0].boundaries == ("b1_pw_act", "b2_pw_act", "b3_pw_act")
    assert {b.name: b.plan.variant for b in cm.fused_blocks}["b4_fused"] == "cube-pw-mix"
    assert cm.chain_plans["b4_fused"].variant == "two-phase" and cm.chain_breaks == []
    # a forced one-phase tile stays as forced: not chainable, and the reason says so
    cm = _compile(small_v1, "sim:ascend910b2", tile=TileOverride(th=4, tw=4, pw_engine="cube"))
    assert cm.chains == [] and cm.chain_breaks
    assert all("is a cube-pw-mix plan (chains hold two-phase plans)" in b for b in cm.chain_breaks)
    # 310P chains too (its soft SyncAll, 0.41 us derived, against a 2.9 us launch): the one-phase
    # cube plans join with two-phase plans
    cm = _compile(small_v1, "sim:ascend310p3", fallback=False)
    assert [c.blocks for c in cm.chains] == [("b1_fused", "b2_fused", "b3_fused", "b4_fused")]
    assert all(cm.chain_plans[n].variant == "two-phase" for n in cm.chains[0].blocks)
    assert _compile(small_v1, "sim:ascend910b2", chain=False).chains == []
    assert _compile(small_v1, "llvm").chains == []


def test_a_graph_output_or_a_second_consumer_breaks_the_chain(small_v1):
    """b2's output is also a model output (read by b3 and by the exit layout conversion): b2 -> b3
    is not chained, b1 -> b2 still is."""
    import fusion

    cm = fusion.compile(small_v1, target="sim:ascend910b2", dtype="float16", outputs="b2_pw_act,b3_pw_act")
    assert [c.blocks for c in cm.chains] == [("b1_fused", "b2_fused")]
    assert cm.chain_breaks == ["b2_fused and b3_fused not chained: b2_fused's output has 2 consumers "
                               "(one outside the chain)"]


def test_chain_cost_is_one_launch_plus_bodies_plus_syncs(small_v1):
    from fusion.driver.chain import chain_cost
    from fusion.cost import model_fused
    from fusion.cost.twophase import sync_all_us

    cm = _compile(small_v1, "sim:ascend910b2")
    soc = cm.target.soc
    costs = {b.name: model_fused(b.plan, b.name, timeline=False) for b in cm.fused_blocks}
    cc = chain_cost(cm.chains[0], costs, soc)
    ks = [costs[n] for n in cm.chains[0].blocks]
    assert cc.unchained_us == pytest.approx(sum(k.time_us for k in ks))
    assert cc.launch_us == max(k.launch_us for k in ks)
    assert cc.sync_us == pytest.approx((len(ks) - 1) * sync_all_us(soc))
    assert cc.time_us == pytest.approx(cc.launch_us + sum(k.time_us - k.launch_us for k in ks) + cc.sync_us)
    # 910B: a launch costs more than a SyncAll, so the chain saves what the launches cost less the syncs
    assert cc.saved_us == pytest.approx(sum(k.launch_us for k in ks) - cc.launch_us - cc.sync_us)
    assert cc.saved_us > 0


def test_bench_reports_the_chain(small_v1, capsys, tmp_path):
    out_json = tmp_path / "r.json"
    code, out, _ = run_cli(capsys, "bench", small_v1, "-t", "sim:ascend910b2", "--dtype", "float16",
                           "--no-db", "--outputs", "b4_pw_act", "--json", str(out_json))
    assert code == 0
    assert "chain1: 4 blocks in one launch" in out and "without chains (--no-chain)" in out
    r = json.loads(out_json.read_text())
    (c,) = r["chains"]
    assert c["blocks"] == ["b1_fused", "b2_fused", "b3_fused", "b4_fused"] and c["figures"] == "modeled"
    assert r["fused_in_vendor_network_us"] == pytest.approx(r["fused_unchained_in_vendor_network_us"] - c["saved_us"])
    code, out, _ = run_cli(capsys, "bench", small_v1, "-t", "sim:ascend910b2", "--dtype", "float16",
                           "--no-db", "--outputs", "b4_pw_act", "--no-chain", "--json", str(out_json))
    r2 = json.loads(out_json.read_text())
    assert r2["chains"] == [] and "chain1" not in out
    assert r2["fused_in_vendor_network_us"] == pytest.approx(r["fused_unchained_in_vendor_network_us"])


@pytest.mark.slow   # in CI (bin/test); left out of the quick local subset
def test_chain_kernel_on_the_emulator_equals_the_blocks_kernels(small_v1, emu_cache, capsys):
    """check -t ascend runs the chain kernel (one MIX launch, SyncAll between blocks): its output
    is bit-identical to the blocks' own kernels run one by one, its counters are their sum, and the
    model's output through the chain matches ONNX Runtime."""
    code, out, _ = run_cli(capsys, "check", small_v1, "-t", "ascend:910b2", "--dtype", "float16", "--no-db",
                           "--outputs", "b4_pw_act", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["passed"]
    (c,) = res["chains"]
    assert c["blocks"] == ["b1_fused", "b2_fused", "b3_fused", "b4_fused"]
    assert c["max_abs"] == 0.0
    assert c["counters"]["gm_read_bytes"] > 0 and c["counters"]["cube_fractals"] > 0
    assert c["counters_match"]
    assert 1 <= c["block_dim"] <= 24   # the widest member's MIX block dim (910B2: 24 AICs)


def test_emit_chain_refuses_what_it_cannot_compose(small_v1):
    from fusion.codegen.ascendc import emit_kernel
    from fusion.codegen.ascendc.emit_chain import emit_chain
    from fusion.core.errors import MegafuseError

    cm = _compile(small_v1, "ascend:910b2")
    alone = {b.name: emit_kernel(b.plan, b.name) for b in cm.fused_blocks}   # b2-b4: MIX kernels
    ks = {n: emit_kernel(p, n) for n, p in cm.chain_plans.items()}           # in-chain: two-phase
    with pytest.raises(MegafuseError, match="at least two blocks"):
        emit_chain("c", [ks["b1_fused"]])
    with pytest.raises(MegafuseError, match="not a two-phase kernel"):
        emit_chain("c", [ks["b3_fused"], alone["b4_fused"]])
    with pytest.raises(MegafuseError, match="does not match"):
        emit_chain("c", [ks["b1_fused"], ks["b3_fused"]])
    ec = emit_chain("c", [ks["b1_fused"], ks["b2_fused"]])
    # packed operands are 512 B-aligned and disjoint; the boundary tensor has b1's output size
    regions = sorted(ec.weights, key=lambda r: r.offset)
    assert all(r.offset % 512 == 0 for r in regions)
    assert all(a.offset + a.nbytes <= b.offset for a, b in zip(regions, regions[1:]))
    (bnd,) = [r for r in ec.workspace if r.what == "boundary"]
    assert bnd.nbytes == ks["b1_fused"].arg("y").nbytes
    assert ec.source.count("SyncAll<false>();  // AIVs and AICs: this block's output") == 1


def test_compile_writes_the_chain_kernel(small_v1, capsys, tmp_path):
    out = tmp_path / "out"
    code, text, _ = run_cli(capsys, "compile", small_v1, "-t", "ascend:910b2", "--dtype", "float16", "--no-db",
                            "--outputs", "b4_pw_act", "-o", str(out))
    assert code == 0
    assert "chain1: b1_fused, b2_fused, b3_fused, b4_fused in one launch" in text
    assert "in-chain plans" in text and "b4_fused" in text.split("in-chain plans")[1]
    index = json.loads((out / "ascend.json").read_text())
    (row,) = index["chains"]
    assert row["kernel"] == "megafuse_chain1"
    for rel in row["files"]:
        assert (out / rel).is_file()
    manifest = json.loads((out / "chain1" / "megafuse_chain1.json").read_text())
    assert [a["name"] for a in manifest["args"]] == ["x", "weights", "y", "workspace", "tiling"]
