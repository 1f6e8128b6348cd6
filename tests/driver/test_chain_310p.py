"""Block chains on 310P (fusion/driver/chain.py): one launch of the AI cores, the soft SyncAll between
blocks (fusion/codegen/ascendc/emit_chain.py), and the fallback judging a block at its in-chain cost
(fusion/driver/fallback.py)."""

import json

import onnx
import pytest

from conftest import run_cli
from factories import mobilenet_v1_file


@pytest.fixture(scope="module")
def small_v1(tmp_path_factory):
    return mobilenet_v1_file(tmp_path_factory, "chain310")


def test_the_310p_chain_kernel_uses_the_soft_sync_all(small_v1):
    import fusion
    from fusion.codegen.ascendc import emit_kernel
    from fusion.codegen.ascendc.emit_chain import emit_chain

    cm = fusion.compile(small_v1, target="ascend:310p3", dtype="float16", outputs="b4_pw_act", fallback=False)
    (c,) = cm.chains
    ks = [emit_kernel(cm.chain_plans[n], n) for n in c.blocks]
    ec = emit_chain(c.name, ks, c.residual_from, c.stages)
    # one soft SyncAll per boundary on the chain's own flags; no MIX task type, no hard SyncAll
    assert ec.source.count("SyncAll(syncGm, syncUb.Get<int32_t>());") == len(c.blocks) - 1
    assert "SyncAll<false>" not in ec.source and "KERNEL_TYPE_MIX" not in ec.source
    (sync,) = [r for r in ec.workspace if r.what == "sync"]
    assert sync.nbytes == 8 * 32 and (sync.offset, sync.nbytes) in ec.zeroed()
    assert ec.launch.core == "AICORE" and ec.launch.kernel_type is None
    assert json.loads(ec.manifest())["kernel_type"] == "KERNEL_TYPE_AICORE"
    assert 1 <= ec.block_dim <= 8


def test_the_gate_credits_a_chain_only_where_one_takes_the_block(monkeypatch):
    from fusion.driver.fallback import FusionGate
    from schedules.targets import parse_target
    from schedules.workload import DwSepWorkload

    wl = DwSepWorkload(1, 64, 64, 14, 14, dtype="float16")
    gate = FusionGate(parse_target("sim:ascend310p3"))
    monkeypatch.setattr(FusionGate, "compare", lambda self, w: (10.0, 9.0))
    monkeypatch.setattr(FusionGate, "in_chain_us", lambda self, w: 8.5)
    assert "runs unfused" in gate(wl)          # no chain credit: loses alone
    gate.chain_credit = True
    assert gate(wl) is None                    # in a chain it pays 8.5 < 9.0
    gate.unchained.add(wl)                     # ... but no chain took it
    assert "no chain takes it" in gate(wl)
    gate.unchained.clear()
    monkeypatch.setattr(FusionGate, "in_chain_us", lambda self, w: 9.5)
    assert "runs unfused" in gate(wl)          # loses in a chain too


def test_every_fused_block_wins_alone_or_in_its_chain(tmp_path, capsys):
    """Full MobileNetV1 on 310P with the fallback: blocks that lose launched alone are kept for the
    chain, where each pays its body and a SyncAll; the bench rows show both and each wins."""
    from models.mobilenet import mobilenet_v1

    path = tmp_path / "v1.onnx"
    onnx.save(mobilenet_v1(), path)
    code, _, _ = run_cli(capsys, "bench", str(path), "-t", "sim:ascend310p3", "--dtype", "float16", "--no-db",
                         "--json", str(tmp_path / "r.json"))
    assert code == 0
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["chains"] and r["speedup_vs_vendor"] > 1.0
    for row in r["kernels"]:
        if "chain" in row:
            assert row["in_chain_us"] <= row["vendor_us"]
        else:
            assert row["fused_us"] <= row["vendor_us"]
    # since phase 1 loads only its units' taps, no block of this network loses launched alone any
    # more (the head was 18.76 vs 18.05 us, now 17.94, MODELED); the gate's keep-it-for-the-chain
    # path is test_the_gate_credits_a_chain_only_where_one_takes_the_block's
    assert all(row["fused_us"] <= row["vendor_us"] for row in r["kernels"])


@pytest.fixture(scope="module")
def small_v2(tmp_path_factory):
    from models.mobilenet import mobilenet_v2

    p = tmp_path_factory.mktemp("chain310") / "v2s.onnx"
    onnx.save(mobilenet_v2(resolution=64, width=0.35), p)
    return str(p)


@pytest.mark.slow   # in CI (bin/test); left out of the quick local subset
def test_310p_gemm_stages_on_the_emulator(small_v2, emu_cache, capsys):
    """MobileNetV2's expansion convs join the 310P chain as GEMM stages (two-phase kernels without
    phase 1, reading x as the A operand) between its fused blocks; the chain kernel (soft SyncAll
    between members) equals its members' kernels run one by one, its counters their sum, and the
    model through it passes against ONNX Runtime -- b1 with its GEMM after its own DW on each core
    and b2's expansion dealt by b1's bands."""
    import fusion

    cm = fusion.compile(small_v2, target="ascend:310p3", dtype="float16", outputs="b4_pw_bn", fallback=False)
    # every stage reads its boundary input directly (gemm_only: no identity copy, no barrier)
    assert cm.chain_stages and all(cm.chain_plans[n].gemm_only for n in cm.chain_stages)
    # b1's GEMM follows its own DW on each core (a pipe barrier), b2's expansion its bands
    # (fusion/driver/chain_dw_local.py): the check below runs both in the chain kernel
    assert cm.chain_plans["b1_fused"].local_dw and cm.chain_plans["b2_exp"].m_band > 1
    assert any(j is not None for c in cm.chains for j in c.residual_from)  # b3: a boundary tensor
    code, out, _ = run_cli(capsys, "check", small_v2, "-t", "ascend:310p3", "--dtype", "float16", "--no-db",
                           "--no-fallback", "--outputs", "b4_pw_bn", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["passed"]
    assert sorted(n for c in res["chains"] for n in c["stages"]) == ["b2_exp", "b3_exp", "b4_exp"]
    for c in res["chains"]:
        assert c["max_abs"] == 0.0 and c["counters_match"]
