"""A chain in image chunks on the emulator (schedules/wave.py, emit_chain's steps): the DW of one
chunk beside the GEMM of another, each task a member's own kernel on its chunk's slices."""

from __future__ import annotations

from dataclasses import replace

import onnx
import pytest

import fusion
from fusion.codegen.ascendc.emit_chain import emit_chain
from fusion.codegen.ascendc.emit_kernel import emit_kernel
from fusion.core.errors import MegafuseError
from fusion.core.soc import get_soc
from fusion.driver.chain_wave import waved
from factories import check_with_plans
from schedules.lowering import build_program
from schedules.wave import chain_steps, member_plan, warm_tasks

F16 = "float16"


@pytest.fixture(scope="module")
def v2_b4(tmp_path_factory):
    """MobileNetV2 b1-b4 at batch 4 (56 px, width 0.35) on 910B2: DW blocks and GEMM stages."""
    from models.mobilenet import mobilenet_v2

    p = tmp_path_factory.mktemp("wave") / "v2b4.onnx"
    onnx.save(mobilenet_v2(batch=4, resolution=56, width=0.35), p)
    return fusion.compile(str(p), target="ascend:910b2", dtype=F16, outputs="b4_pw_bn", fallback=False)


def _waved(cm, chunks, join=False):
    """join: False (every stage its own step), "local" (the stages in their producer's task after a
    pipe barrier: they follow it on the same cores) or "aic" (the same, after a barrier over the AICs)."""
    (c,) = cm.chains
    plans = waved(c, cm.chain_plans, chunks, bool(join))
    assert plans is not None and all(p.chunks == chunks for p in plans.values())
    if join == "aic":
        plans = {n: replace(p, local_in=False) for n, p in plans.items()}
    assert all(p.joined == bool(join) for n, p in plans.items() if n in c.stages)
    assert all(p.local_in == (join == "local") for n, p in plans.items() if n in c.stages)
    return c, plans


def _steps(c, plans):
    kplans = [member_plan(plans[n]) for n in c.blocks]
    return chain_steps(plans[c.blocks[0]].chunks, kplans, [build_program(p) for p in kplans])


@pytest.mark.parametrize("chunks,join", [(2, False), (4, False), (2, "local"), (2, "aic")])
def test_chunked_chain_is_bitwise_its_members_per_chunk(v2_b4, emu_cache, chunks, join):
    """The chain kernel's output equals its members' kernels run chunk by chunk, bit for bit, its
    counters their sum; every core passes one SyncAll per step boundary and no other. join: the GEMM
    stages run in their producer's GEMM task, after a pipe barrier ("local") or after a barrier over
    the AICs ("aic": each AIC sets and waits once per joined stage and chunk, no AIV flags)."""
    c, plans = _waved(v2_b4, chunks, join)
    res, cc = check_with_plans(v2_b4, plans)
    assert res.passed and cc.max_abs == 0.0 and cc.counters_match
    steps = _steps(c, plans)
    # a GEMM task right after the same block's GEMM on another chunk keeps its resident PW weights in
    # L1 (schedules/wave.warm_tasks): the chain reads them once where the blocks' kernels read them twice
    kplans = [member_plan(plans[n]) for n in c.blocks]
    warm = warm_tasks(steps, [build_program(p) for p in kplans])
    assert warm and cc.warm_reads > 0
    assert cc.counters["gm_read_bytes"] == cc.blocks_counters["gm_read_bytes"] - cc.warm_reads
    assert cc.counters["sync_alls"] == (len(steps) - 1) * cc.block_dim * 3   # an AIC and two AIVs per unit
    barriers = chunks * len(c.stages) * cc.block_dim if join == "aic" else 0
    assert cc.counters["cross_flag_sets"] == cc.counters["cross_flag_waits"] == barriers


@pytest.mark.parametrize("join", [False, "local", "aic"])
def test_chunked_chain_source_and_refusals(v2_b4, join):
    c, plans = _waved(v2_b4, 2, join)
    kernels = [emit_kernel(member_plan(plans[n]), n) for n in c.blocks]
    ec = emit_chain(c.name, kernels, c.residual_from, c.stages, 2)
    steps = _steps(c, plans)
    assert ec.source.count("this step's DW results and outputs are in GM") == len(steps) - 1
    assert ec.source.count("op.RunPhase(") == 2 * sum(len(build_program(k.plan).phases) for k in kernels)
    # a joined stage: a pipe barrier or the AICs' barrier before it, once per chunk; no SyncAll of its own
    joined = sum(k.plan.joined for k in kernels)
    assert joined == (len(c.stages) if join else 0)
    assert ec.source.count("the next GEMM stage reads only rows this core wrote") == 2 * joined * (join == "local")
    assert ec.source.count("CrossCoreSetFlag<0, PIPE_FIX>(") == 2 * joined * (join == "aic")
    if join:
        assert len(steps) < len(_steps(c, _waved(v2_b4, 2)[1]))
        # a stage joined without a GEMM producer's Fixpipe output, or outside image chunks, is refused
        flat = [emit_kernel(replace(member_plan(plans[n]), joined=False, local_in=False) if n not in c.stages
                            else member_plan(plans[n]), n) for n in c.blocks]
        with pytest.raises(MegafuseError, match="cannot run in its producer's task"):
            emit_chain(c.name, flat, c.residual_from, c.stages, 1)
    # the chain's tensors hold every chunk: x and y at the model's batch, a workspace per chunk
    assert ec.args()[0].shape[0] == 4 and kernels[0].arg("x").shape[0] == 2
    assert sum(r.what == "workspace" for r in ec.workspace) == 2 * len(c.blocks)
    # no image chunks where one core runs both phases
    with pytest.raises(MegafuseError, match="separate vector and cube cores"):
        emit_chain(c.name, [replace(k, plan=replace(k.plan, soc=get_soc("ascend310p3"))) for k in kernels],
                   c.residual_from, c.stages, 2)


def test_chunked_chain_packages_and_exports_at_the_models_batch(v2_b4, tmp_path):
    """The op package of a chain in image chunks is sound (verify_package: contracts agree with the
    kernel's signature and tiling), its node carries the chunk count, and the exported node's x and y
    have the model's batch while each member's kernel has a chunk's."""
    from fusion.codegen.ascendc.package import verify_package, write_ascend_package
    from fusion.driver.onnx_export import units

    c, plans = _waved(v2_b4, 2)
    before = dict(v2_b4.chain_plans)
    v2_b4.chain_plans.update(plans)
    try:
        write_ascend_package(v2_b4, tmp_path)
        found = {u.name: u for u in units(v2_b4)}
    finally:
        v2_b4.chain_plans.update(before)
    assert verify_package(tmp_path) == []
    u = found[c.name]
    assert dict(u.spec.attributes)["chunks"] == 2
    assert u.spec.inputs[0].shape[0] == 4 and u.spec.outputs[0].shape[0] == 4
