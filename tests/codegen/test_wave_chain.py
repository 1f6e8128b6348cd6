"""A chain in image chunks on the emulator (schedules/wave.py, emit_chain's steps): the DW of one
chunk beside the GEMM of another, each task a member's own kernel on its chunk's slices."""

from __future__ import annotations

import onnx
import pytest

import fusion
from fusion.codegen.ascendc.emit_chain import emit_chain
from fusion.codegen.ascendc.emit_kernel import emit_kernel
from fusion.core.errors import MegafuseError
from fusion.driver.chain_wave import waved
from fusion.verify.ascend_check import check_ascend
from schedules.lowering import build_program
from schedules.wave import member_plan, roles, wave_steps

F16 = "float16"


@pytest.fixture(scope="module")
def v2_b4(tmp_path_factory):
    """MobileNetV2 b1-b4 at batch 4 (56 px, width 0.35) on 910B2: DW blocks and GEMM stages."""
    from models.mobilenet import mobilenet_v2

    p = tmp_path_factory.mktemp("wave") / "v2b4.onnx"
    onnx.save(mobilenet_v2(batch=4, resolution=56, width=0.35), p)
    return fusion.compile(str(p), target="ascend:910b2", dtype=F16, outputs="b4_pw_bn", fallback=False)


def _waved(cm, chunks):
    (c,) = cm.chains
    plans = waved(c, cm.chain_plans, chunks)
    assert plans is not None and all(p.chunks == chunks for p in plans.values())
    return c, plans


@pytest.mark.parametrize("chunks", [2, 4])
def test_chunked_chain_is_bitwise_its_members_per_chunk(v2_b4, emu_cache, chunks):
    """The chain kernel's output equals its members' kernels run chunk by chunk, bit for bit, its
    counters their sum; every core passes one SyncAll per step boundary and no other."""
    c, plans = _waved(v2_b4, chunks)
    before = dict(v2_b4.chain_plans)
    v2_b4.chain_plans.update(plans)
    try:
        res = check_ascend(v2_b4, None)
    finally:   # the module's other tests see the chain as compiled
        v2_b4.chain_plans.update(before)
    (cc,) = res.chains
    assert res.passed and cc.max_abs == 0.0 and cc.counters_match
    steps = wave_steps(tuple(roles(build_program(member_plan(plans[n]))) for n in c.blocks), chunks)
    assert cc.counters["sync_alls"] == (len(steps) - 1) * cc.block_dim * 3   # an AIC and two AIVs per unit
    assert cc.counters["cross_flag_sets"] == 0


def test_chunked_chain_source_and_refusals(v2_b4):
    c, plans = _waved(v2_b4, 2)
    kernels = [emit_kernel(member_plan(plans[n]), n) for n in c.blocks]
    ec = emit_chain(c.name, kernels, c.residual_from, c.stages, 2)
    steps = wave_steps(tuple(roles(build_program(member_plan(plans[n]))) for n in c.blocks), 2)
    assert ec.source.count("this step's DW results and outputs are in GM") == len(steps) - 1
    assert ec.source.count("op.RunPhase(") == 2 * sum(len(roles(build_program(member_plan(plans[n])))) for n in c.blocks)
    # the chain's tensors hold every chunk: x and y at the model's batch, a workspace per chunk
    assert ec.args()[0].shape[0] == 4 and kernels[0].arg("x").shape[0] == 2
    assert sum(r.what == "workspace" for r in ec.workspace) == 2 * len(c.blocks)
    # a GEMM stage that follows its producer on the same cores has no SyncAll before it: no chunks
    own = [emit_kernel(v2_b4.chain_plans[n], n) for n in c.blocks]
    assert any(ek.plan.local_in for ek in own)
    with pytest.raises(MegafuseError, match="no local stage"):
        emit_chain(c.name, own, c.residual_from, c.stages, 2)


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
