"""GEMM stages in chains (fusion/driver/chain_stage.py, fusion/driver/chain.py): MobileNetV2's expansion 1x1
convs run inside the chain as identity-DW two-phase kernels, residuals come from the chain's x or
a boundary tensor, and the chain kernel on the emulator equals its members' own kernels."""

import dataclasses
import json

import numpy as np
import onnx
import pytest

from conftest import run_cli

CUT = "b4_pw_bn"


@pytest.fixture(scope="module")
def small_v2(tmp_path_factory):
    """MobileNetV2 at 64 px, width 0.35: b1-b4 (b3 with a residual), 8 and 16 output channels."""
    from models.mobilenet import mobilenet_v2

    p = tmp_path_factory.mktemp("stage") / "v2s.onnx"
    onnx.save(mobilenet_v2(resolution=64, width=0.35), p)
    return str(p)


def _compile(path, target="sim:ascend910b2", outputs=CUT, **kw):
    import fusion

    return fusion.compile(path, target=target, dtype=kw.pop("dtype", "float16"), outputs=outputs, **kw)


def test_expansion_convs_join_the_chain_as_gemm_stages(small_v2):
    cm = _compile(small_v2)
    plans = cm.to_json()["chains"][0]["plans"]
    assert set(plans) == set(cm.chains[0].blocks) and plans["b3_exp"]["gemm_only"] is True
    assert (plans["b3_exp"]["act2"], plans["b3_fused"]["x_max"]) == ("relu", 6.0)
    (c,) = cm.chains
    assert c.blocks == ("b1_fused", "b2_exp", "b2_fused", "b3_exp", "b3_fused", "b4_exp", "b4_fused")
    assert c.stages == ("b2_exp", "b3_exp", "b4_exp")
    # b3's residual is b2's output: boundary 2, still in the chain's workspace when b3 runs
    assert c.residual_from == (None, None, None, None, 2, None, None)
    assert c.boundaries == ("b1_pw_bn", "b2_exp_act", "b2_pw_bn", "b3_exp_act", "b3_add", "b4_exp_act")
    assert cm.chain_breaks == []
    g = cm.chain_stages["b3_exp"]
    wl = g.workload
    # the conv as the PW of an identity depthwise: 1x1 taps, no padding, no activation before it
    assert (wl.kernel, wl.pads, wl.stride, wl.act1, wl.act2) == ((1, 1), (0, 0, 0, 0), (1, 1), "none", "relu6")
    assert (wl.cin, wl.cout, wl.height, wl.width) == (8, 48, 16, 16)
    assert g.steps == ("b3_exp", "b3_exp_act") and g.x == "b2_pw_bn" and g.out == "b3_exp_act"
    assert g.plan.two_phase


def test_relu6_clips_are_deferred_to_the_next_block(small_v2):
    """In the chain a stage's relu6 becomes a Fixpipe relu and the next block clips its x tiles
    (fusion/chain.defer_clips): no AIV epilogue and no second SyncAll in the stage."""
    from fusion.driver.chain import chain_cost, member_costs
    from schedules.program import dw_ops
    from schedules.program_twophase import build_twophase

    cm = _compile(small_v2)
    (c,) = cm.chains
    plans = cm.chain_plans
    for st, nxt in (("b2_exp", "b2_fused"), ("b3_exp", "b3_fused"), ("b4_exp", "b4_fused")):
        assert cm.chain_stages[st].workload.act2 == "relu6"            # the model's activation
        assert plans[st].workload.act2 == "relu" and plans[nxt].x_max == 6.0
        assert [ph.name for ph in build_twophase(plans[st]).phases] == ["gemm"]   # gemm_only + Fixpipe
        ops = dw_ops(plans[nxt], 1, 0)
        clip = [o for o in ops if o.op == "clip_x"]
        assert len(clip) == 1 and clip[0].buffer == "x_tile"
    assert plans["b1_fused"].x_max is None
    undeferred = {**plans, **{g: cm.chain_stages[g].plan for g in c.stages},
                  **{b: dataclasses.replace(plans[b], x_max=None) for b in ("b2_fused", "b3_fused", "b4_fused")}}
    soc = cm.target.soc
    assert chain_cost(c, member_costs(c, plans), soc).time_us < chain_cost(c, member_costs(c, undeferred), soc).time_us


def test_identity_dw_is_exact(small_v2):
    from fusion.driver.chain_stage import identity_dw

    w, b = identity_dw(20, "float16")
    assert w.shape == (2, 1, 1, 16) and b.shape == (2, 16)
    assert w.reshape(-1)[:20].tolist() == [1.0] * 20 and not w.reshape(-1)[20:].any() and not b.any()


def test_no_stages_where_chains_cannot_run(small_v2):
    assert _compile(small_v2, "sim:ascend910b2", dtype="float32").chain_stages == {}
    assert _compile(small_v2, "sim:ascend910b2", chain=False).chains == []
    assert _compile(small_v2, "llvm").chains == []


def test_a_tensor_read_outside_splits_the_chain_and_a_residual_may_be_its_input(small_v2):
    """b2's output is a model output too (the exit conversion reads it): the chain stops after b2;
    the next chain starts at b3_exp, whose input b3 also adds as its residual (-1: the chain's x)."""
    cm = _compile(small_v2, outputs="b2_pw_bn," + CUT)
    assert [(c.blocks, c.residual_from) for c in cm.chains] == [
        (("b1_fused", "b2_exp", "b2_fused"), (None, None, None)),
        (("b3_exp", "b3_fused", "b4_exp", "b4_fused"), (None, -1, None, None))]
    assert cm.chain_breaks == ["b2_fused and b3_exp not chained: b2_fused's output has 3 consumers "
                               "(one outside the chain)"]


def test_bench_replaces_the_stages_vendor_kernels(small_v2, capsys, tmp_path):
    out_json = tmp_path / "r.json"
    code, out, _ = run_cli(capsys, "bench", small_v2, "-t", "sim:ascend910b2", "--dtype", "float16",
                           "--no-db", "--outputs", CUT, "--json", str(out_json))
    assert code == 0
    assert "chain1: 4 blocks + 3 GEMM stages in one launch" in out
    r = json.loads(out_json.read_text())
    (c,) = r["chains"]
    assert c["stages"] == ["b2_exp", "b3_exp", "b4_exp"]
    fused = sum(k["fused_us"] for k in r["kernels"])
    # unchained: the blocks one by one and the stages as the vendor's conv + act kernels
    assert c["unchained_us"] > fused
    assert r["fused_in_vendor_network_us"] == pytest.approx(r["fused_unchained_in_vendor_network_us"] - c["saved_us"])
    assert r["fused_blocks_us"] == pytest.approx(c["time_us"])
    assert not {o["name"] for o in r["other_kernels"]} & {"b2_exp", "b2_exp_act", "b3_exp", "b4_exp_act"}
    code, _, _ = run_cli(capsys, "bench", small_v2, "-t", "sim:ascend910b2", "--dtype", "float16",
                         "--no-db", "--outputs", CUT, "--no-chain", "--json", str(out_json))
    r2 = json.loads(out_json.read_text())
    assert r2["fused_in_vendor_network_us"] == pytest.approx(r["fused_unchained_in_vendor_network_us"])
    assert r2["vendor_latency_us"] == pytest.approx(r["vendor_latency_us"])


def test_gemm_only_where_x_is_the_a_layout(small_v2, v2_56):
    from dataclasses import replace

    from schedules.program_twophase import build_twophase, phase

    cm = _compile(small_v2)
    assert all(g.plan.gemm_only for g in cm.chain_stages.values())     # 32x32 and 16x16 pixels
    prog = build_twophase(cm.chain_stages["b3_exp"].plan)
    assert phase(prog, "dw") is None and [ph.name for ph in prog.phases][0] == "gemm"
    a_loads = [s for u in phase(prog, "gemm").units for it in u for s in it if getattr(s, "buffer", "") == "a_l1"]
    assert a_loads and all((s.kind, s.gm) == ("input", "x") for s in a_loads)
    cm56 = _compile(v2_56)
    forms = {n: g.plan.gemm_only for n, g in cm56.chain_stages.items()}
    assert forms == {"b2_exp": True, "b3_exp": False, "b4_exp": False}   # standalone: 196 pixels need the copy
    # in the chain their x is a boundary tensor with slack after it: they read it directly
    assert all(cm56.chain_plans[n].gemm_only for n in ("b2_exp", "b3_exp", "b4_exp"))
    with pytest.raises(ValueError, match="not the GEMM's A layout"):
        build_twophase(replace(next(b.plan for b in cm56.fused_blocks), gemm_only=True))   # a 3x3 DW


def test_a_first_member_cannot_read_past_its_input(v2_56):
    """The chain's own x has no slack after it: a non-aligned gemm_only stage cannot open a chain."""
    from dataclasses import replace

    from fusion.codegen.ascendc import emit_kernel
    from fusion.codegen.ascendc.emit_chain import emit_chain
    from fusion.core.errors import MegafuseError

    cm = _compile(v2_56, "ascend:910b2")
    (c,) = cm.chains
    k = c.blocks.index("b3_exp")
    names = c.blocks[k:k + 2]                                          # b3_exp, b3_fused
    # (the stage's plan before the chain made it follow its producer on the same cores)
    ks = [emit_kernel(replace(cm.chain_stages[names[0]].plan, gemm_only=True), names[0]),
          emit_kernel(cm.chain_plans[names[1]], names[1])]
    assert cm.chain_plans[names[0]].gemm_only and cm.chain_plans[names[0]].local_in
    res = tuple(None if r is None else r - k for r in c.residual_from[k:k + 2])
    assert res == (None, -1)                                           # b3's residual: the chain's x
    with pytest.raises(MegafuseError, match="reads past its input"):
        emit_chain("c", ks, res, (names[0],))
    # with the identity copy it may open a chain
    plain = [emit_kernel(replace(cm.chain_stages[names[0]].plan, gemm_only=False), names[0]), ks[1]]
    assert emit_chain("c", plain, res, (names[0],)).blocks[0].plan.gemm_only is False


@pytest.mark.slow   # in CI (bin/test); left out of the quick local subset
@pytest.mark.parametrize("model,outputs", [("small_v2", CUT), ("small_v2", "b2_pw_bn," + CUT), ("v2_56", CUT)])
def test_chain_with_stages_on_the_emulator(request, emu_cache, capsys, model, outputs):
    """Every stage's own kernel against the CPU conv + act, then the chain kernel: bitwise equal to
    its members' kernels run one by one (the residual read from a boundary tensor, or from the
    chain's x in the split cut; gemm_only stages and identity-copy stages), counters their sum,
    the model through the chains PASS vs ORT."""
    path = request.getfixturevalue(model)
    code, out, _ = run_cli(capsys, "check", path, "-t", "ascend:910b2", "--dtype", "float16", "--no-db",
                           "--outputs", outputs, "--json")
    assert code == 0
    res = json.loads(out)
    assert res["passed"]
    rows = {b["name"]: b for b in res["blocks"]}
    assert {"b2_exp", "b3_exp", "b4_exp"} <= set(rows)
    for name in ("b2_exp", "b3_exp", "b4_exp"):
        assert rows[name]["max_rel"] < 5e-3
        assert rows[name]["gm_bytes_match"]
    assert res["chains"]
    assert sorted(n for c in res["chains"] for n in c["stages"]) == ["b2_exp", "b3_exp", "b4_exp"]
    for c in res["chains"]:
        assert c["max_abs"] == 0.0 and c["counters_match"]
        assert c["counters"]["cube_fractals"] > 0


def test_emit_chain_checks_the_residual_sources(small_v2):
    from fusion.codegen.ascendc import emit_kernel
    from fusion.codegen.ascendc.emit_chain import emit_chain
    from fusion.core.errors import MegafuseError

    cm = _compile(small_v2, "ascend:910b2")
    (c,) = cm.chains
    members = {**{b.name: b for b in cm.fused_blocks}, **cm.chain_stages}
    # the plans the chain runs (a block's own, standalone plan may be a one-phase kernel)
    ks = [emit_kernel(cm.chain_plans.get(n, members[n].plan), n) for n in c.blocks]
    with pytest.raises(MegafuseError, match="residual source"):
        emit_chain("c", ks)                       # b3 has a residual, none given
    with pytest.raises(MegafuseError, match="residual source"):
        emit_chain("c", ks, (None,) * 4 + (5,) + (None,) * 2)   # a later block's output
    with pytest.raises(MegafuseError, match="does not match its source"):
        emit_chain("c", ks, (None,) * 4 + (3,) + (None,) * 2)   # b3_exp's output: 48 channels, not 8
    ec = emit_chain("c", ks, c.residual_from, c.stages)
    bnd = {r.block: r.offset for r in ec.workspace if r.what == "boundary"}
    b_pw = next(r.offset for r in ec.weights if (r.block, r.what) == ("b3_fused", "b_pw"))
    assert f"weights + {b_pw}, ws + {bnd['b2_fused']}, out, usr, t);" in ec.source   # res, then y
    manifest = json.loads(ec.manifest())
    assert manifest["stages"] == ["b2_exp", "b3_exp", "b4_exp"] and manifest["residual_from"][4] == 2


def test_compile_writes_the_stage_headers(small_v2, capsys, tmp_path):
    out = tmp_path / "out"
    code, text, _ = run_cli(capsys, "compile", small_v2, "-t", "ascend:910b2", "--dtype", "float16", "--no-db",
                            "--outputs", CUT, "-o", str(out))
    assert code == 0
    assert "GEMM stages (1x1 conv + activation as an identity-DW two-phase kernel): b2_exp, b3_exp, b4_exp" in text
    assert "in-chain plans (shortest body; the launch is paid once):" in text and "b3_exp" in text
    assert "(relu6 -> relu: clip deferred)" in text and "(input clipped at 6)" in text
    (row,) = json.loads((out / "ascend.json").read_text())["chains"]
    assert row["stages"] == ["b2_exp", "b3_exp", "b4_exp"]
    assert (out / "chain1" / "kernel" / "megafuse_b3_exp_tiling.h").is_file()
    assert not (out / "b3_exp").exists()          # stages have no op package of their own
    assert np.all([(out / rel).is_file() for rel in row["files"]])


def test_split_rules_on_synthetic_runs():
    """fusion/chain._split: a residual from outside the run cuts before its reader (or leaves a
    first member alone), a boundary read outside the run cuts after its writer."""
    from fusion.driver.chain import _Member, _split

    def m(name, x, out, res=None):
        return _Member(name, (name,), x, out, res, None, False, False)

    a, b, c = m("a", "x", "ta"), m("b", "ta", "tb", res="x"), m("c", "tb", "tc", res="ta")
    readers = {"x": {"a", "b"}, "ta": {"b", "c"}, "tb": {"c"}}
    assert _split([a, b, c], readers) == ([[a, b, c]], [])
    # c's residual comes from before the run: the run is cut before c
    c2 = m("c", "tb", "tc", res="t0")
    pieces, why = _split([a, b, c2], {**readers, "ta": {"b"}, "t0": {"c"}})
    assert [[p.name for p in q] for q in pieces] == [["a", "b"], ["c"]]
    assert why == ["b and c not chained: c's residual is read from outside the chain"]
    # the first member's residual is not the run's x: it stays alone, the rest may still chain
    a2 = m("a", "x", "ta", res="t0")
    pieces, why = _split([a2, b, c], {**readers, "t0": {"a"}})
    assert [[p.name for p in q] for q in pieces] == [["a"], ["b"], ["c"]]
    assert why[0] == "a and b not chained: a's residual is read from outside the chain"
    # ta is read by a step outside the run: cut after a
    pieces, why = _split([a, b, c], {**readers, "ta": {"b", "c", "other"}})
    assert [[p.name for p in q] for q in pieces][0] == ["a"]
    assert why[0] == "a and b not chained: a's output has 3 consumers (one outside the chain)"


@pytest.mark.slow   # in CI (bin/test); left out of the quick local subset
def test_a_last_stage_reads_into_the_workspace_slack(v2_56, emu_cache, capsys):
    """The head conv (2x2 pixels, its last M tile mostly pad rows) ends the chain reading the last
    boundary tensor directly: its pad rows land in that tensor's slack inside the workspace (the
    emulator faults on any read outside a kernel argument)."""
    code, out, _ = run_cli(capsys, "check", v2_56, "-t", "ascend:910b2", "--dtype", "float16", "--no-db",
                           "--inputs", "b16_add", "--outputs", "head_act", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["passed"]
    (c,) = res["chains"]
    assert c["blocks"][-1] == "head" and "head" in c["stages"]
    assert c["max_abs"] == 0.0 and c["counters_match"]
    cm = _compile(v2_56, outputs="head_act", inputs="b16_add")
    assert cm.chain_plans["head"].gemm_only and not cm.chain_stages["head"].plan.gemm_only


def test_a_stage_that_loses_to_the_vendor_conv_does_not_join():
    """A 1x1 conv is a GEMM stage only where its body and a SyncAll in a chain cost less than the
    vendor-like conv kernel with its launch and the launch a split chain adds
    (fusion/driver/chain_stage._loses): MobileNetV1's b5 PW conv (256 -> 256 at 28 x 28) at batch 32
    on 310P3 loses (101.3 us in a chain against 85.3 + 1.7), MobileNetV2's first expansion
    (8 -> 48 at 112 x 112, width 0.35) at batch 8 pays, as find_stages builds their plans. Before
    that gate, MobileNetV2 at batch 8 on 310P3 ran a chain 46.8 us slower than its members launched
    alone."""
    from schedules.targets import parse_target
    from schedules.workload import DwSepWorkload
    from fusion.driver.chain_stage import _loses, stage_plan

    target = parse_target("sim:ascend310p3")

    def why(batch, cin, cout, hw, act):
        wl = DwSepWorkload(batch, cin, cout, hw, hw, kernel=(1, 1), pads=(0, 0, 0, 0), act1="none", act2=act,
                           dtype="float16")
        return _loses(stage_plan(wl, target), "conv", target.soc, "float16")

    refused = why(32, 256, 256, 28, "relu")
    assert refused is not None and "vendor-like conv kernel" in refused
    nums = [float(w) for w in refused.replace("(", " ").split() if w.replace(".", "", 1).isdigit()]
    assert nums[0] >= nums[1] + nums[2] > 0   # in chain >= vendor conv with its launch + a launch
    assert why(8, 8, 48, 112, "relu6") is None


def test_deferred_clip_counts_with_the_stages(small_v2, tmp_path):
    """bench: a block that clips its x for the GEMM stage before it is compared with its pair on its
    own work; the clip's time (its body with the clip less without) goes to the stages' figure, and
    the network's figures are the chain's (nothing moves between them)."""
    from fusion.cli.main import main
    from fusion.driver.chain import deferred_clip_us, member_cost

    cm = _compile(small_v2)
    (c,) = cm.chains
    plans = cm.chain_plans
    k = c.blocks.index("b3_fused")
    clip = deferred_clip_us(c, k, plans["b3_fused"])
    own = member_cost(c, k, dataclasses.replace(plans["b3_fused"], x_max=None))
    full = member_cost(c, k, plans["b3_fused"])
    assert clip > 0 and clip == pytest.approx((full.time_us - full.launch_us) - (own.time_us - own.launch_us))
    assert deferred_clip_us(c, 0, plans["b1_fused"]) == 0.0
    out = tmp_path / "b.json"
    assert main(["bench", small_v2, "-t", "sim:ascend910b2", "--dtype", "float16", "--no-db", "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    rows = {x["name"]: x for x in r["kernels"]}
    chain = next(ch for ch in r["chains"] if "b3_fused" in ch["blocks"])
    clipped = [n for n in chain["blocks"] if rows.get(n, {}).get("in_chain_clip_us", 0) > 0]
    assert "b3_fused" in clipped
    for n in clipped:
        x = rows[n]
        assert x["in_chain_us"] == pytest.approx(x["in_chain_body_us"] + x["in_chain_sync_us"])
        b = next(b for b in r["bodies"]["blocks"] if b["name"] == n)
        assert (b["fused_body_us"], b["deferred_clip_us"]) == (x["in_chain_body_us"], x["in_chain_clip_us"])
    # the stages' bodies hold the clips: their members' bodies in the chain + every clip
    whole = _compile(small_v2, outputs=None)
    wc = next(ch for ch in whole.chains if ch.name == chain["name"])
    stage_bodies = 0.0
    for n in wc.stages:
        kc = member_cost(wc, wc.blocks.index(n), whole.chain_plans[n])
        stage_bodies += kc.time_us - kc.launch_us
    assert chain["stages_body_us"] == pytest.approx(stage_bodies + sum(rows[n]["in_chain_clip_us"] for n in clipped))
