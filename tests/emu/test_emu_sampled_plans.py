"""Sampled plans on the emulator: emulator counters == lowered program counts == cost-model counts.

For each kernel variant and arch (vector PW on 910B and 310P, the 310P cube kernel with its fp16
and fp32 DW post-ops and epilogues, the 910B MIX kernel with and without the Fixpipe epilogue, the
two-phase kernel on both, with and without residual / act2, with the per-block and the grouped DW
form, fp16 and fp32 post-ops and epilogues, streamed and L1-resident PW weights, the A panel kept
or streamed) 20 plans are drawn
from a fixed seed: odd shapes, strides, pads, tiles that do not divide the output, cib / cob tails,
resident and streamed PW weights, core counts. Each runs on the emulator with random inputs; its GM
bytes, vector instructions and repeats and cube fractals must equal the program's and the cost
model's, and its output the NumPy block reference.

The kernel text holds only compile-time choices (variant, arch, dtype, activations, residual,
Fixpipe epilogue, queue depths); the plan is tiling data. So each group below is ONE g++ build
(asserted), and the 20 plans of a group are 20 runs of it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fusion.verify.emu_run import build_all, build_emitted, run_emitted
from fusion.core.tolerance import TOLERANCE
from fusion.codegen.ascendc import emit_kernel
from fusion.cost import model_fused
from fusion.core.soc import get_soc
from schedules.plan import make_plan
from schedules.lowering import build_program
from schedules.reference import kernel_layout_reference
from schedules.twophase import res_in_cube
from schedules.workload import DwSepWorkload, TileConfig

PLANS_PER_GROUP = 20

# (id, soc, expected variant, engine, act1, act2, residual, double buffering, fixpipe epilogue:
# None = either, the two-phase GEMM's epilogue is its own (schedules/twophase.fixpipe); dtype).
# The Fixpipe epilogue applies to act2 none / relu only (SocSpec.fixpipe_acts): both are sampled.
GROUPS = [
    ("vec-910b-relu", "ascend910b2", "vector-pw", "vector", "relu", "relu", False, True, False, "float16"),
    ("vec-910b-res-noact2", "ascend910b2", "vector-pw", "vector", "hardswish", "none", True, False, False,
     "float16"),
    ("vec-310p-relu", "ascend310p3", "vector-pw", "vector", "relu", "relu", False, True, False, "float16"),
    ("vec-310p-res-hswish", "ascend310p3", "vector-pw", "vector", "relu6", "hardswish", True, False, False,
     "float16"),
    ("cube-310p-relu", "ascend310p3", "cube-pw", "cube", "relu", "relu", False, True, False, "float16"),
    ("cube-310p-res-relu6", "ascend310p3", "cube-pw", "cube", "hardswish", "relu6", True, False, False,
     "float16"),
    # the cube kernel's forms (plan.dw_post16, plan.epi_post16): both fp16 above (relu / relu), the
    # fp32 DW post-ops with the fp16 epilogue (hardswish / relu6: the move's relu, then Mins), and
    # this one the other way round
    ("cube-310p-hswish", "ascend310p3", "cube-pw", "cube", "relu6", "hardswish", False, True, False, "float16"),
    ("mix-910b-fixpipe", "ascend910b2", "cube-pw-mix", "cube", "relu6", "relu", False, True, True, "float16"),
    ("mix-910b-fixpipe-noact2", "ascend910b2", "cube-pw-mix", "cube", "hardswish", "none", False, True, True,
     "float16"),
    ("mix-910b-res-relu6", "ascend910b2", "cube-pw-mix", "cube", "relu", "relu6", True, True, False, "float16"),
    # fp32 storage: the DW taps as two fp32 MulAddDst per row (one per channel half), both arches
    ("vec-910b-fp32", "ascend910b2", "vector-pw", "vector", "relu6", "relu", False, True, False, "float32"),
    ("vec-310p-fp32-res", "ascend310p3", "vector-pw", "vector", "relu", "none", True, True, False, "float32"),
    # two-phase: DW units on every core -> GM workspace, SyncAll, the M x N GEMM (fp16 only)
    ("tp-310p-relu", "ascend310p3", "two-phase", "twophase", "relu", "relu", False, True, None, "float16"),
    ("tp-910b-fixpipe", "ascend910b2", "two-phase", "twophase", "relu6", "relu", False, True, None, "float16"),
    ("tp-910b-res-relu6", "ascend910b2", "two-phase", "twophase", "hardswish", "relu6", True, False, None,
     "float16"),
    # two-phase with the grouped DW form (schedules/twophase.dw_grouped): up to 8 channel blocks a
    # repeat, wide rows, fp16 bias and act1; more input channels, so groups of 8 and a short last one
    ("tp-310p-grouped-bres-relu", "ascend310p3", "two-phase", "twophase", "relu", "relu", False, True, None,
     "float16"),
    ("tp-910b-grouped-relu6-res", "ascend910b2", "two-phase", "twophase", "relu6", "relu6", True, True, None,
     "float16"),
    # two-phase with the PW weights resident in L1 (schedules/twophase.b_resident): loaded while
    # phase 1 runs (310P: in the DW loop; 910B: by the idle AIC), no B block per K step
    ("tp-310p-bres-relu6-res", "ascend310p3", "two-phase", "twophase", "relu6", "relu", True, True, None,
     "float16"),
    ("tp-910b-bres-relu", "ascend910b2", "two-phase", "twophase", "relu", "relu", False, True, None, "float16"),
    # 310P with act1 / act2 the storage dtype does not take: the fp32 DW post-ops and the fp32 GEMM
    # epilogue (the groups above run phase 1's and the 310P epilogue's fp16 forms: plan.dw_post16,
    # plan.epi_post16)
    ("tp-310p-hswish-res", "ascend310p3", "two-phase", "twophase", "hardswish", "hardswish", True, False, None,
     "float16"),
    # a residual after a linear projection on 910B: K blocks of the GEMM with an identity B
    # (schedules/twophase.res_in_cube), no epilogue phase
    ("tp-910b-grouped-resk", "ascend910b2", "two-phase", "twophase", "relu6", "none", True, True, None,
     "float16"),
    # the GEMM cores keep their A panel in L1 across their tiles of one M tile, tiles in contiguous
    # ranges (schedules/twophase.a_keep; two panel copies); the other 910B groups deal tiles round-robin
    ("tp-910b-akeep-relu", "ascend910b2", "two-phase", "twophase", "relu6", "relu", False, True, None, "float16"),
]
GROUPED = {g[0] for g in GROUPS if "grouped" in g[0]}   # the others sample the per-block DW form only
RESIDENT_B = {g[0] for g in GROUPS if "bres" in g[0]}   # the other two-phase groups stream B per K step
KEEP_A = {g[0] for g in GROUPS if "akeep" in g[0]}
COUNTERS = (("gm_read_bytes", "gm_read_bytes"), ("gm_write_bytes", "gm_write_bytes"),
            ("vector_instrs", "vector_instructions"), ("vector_repeats", "vector_repeats"),
            ("cube_fractals", "cube_fractals"))


def _sample(group, rng):
    """One legal plan of the group: a random small workload and tile that make_plan accepts."""
    _id, soc, variant, engine, act1, act2, res, db, fix, dtype = group
    spec = get_soc(soc)
    while True:
        k = int(rng.choice([1, 3, 5]))
        s = int(rng.choice([1, 2]))
        pads = tuple(int(p) for p in rng.integers(0, k // 2 + 1, 4)) if k > 1 else (0, 0, 0, 0)
        cin = int(rng.integers(17, 161)) if _id in GROUPED else int(rng.integers(1, 49))
        cout = cin if res else int(rng.integers(1, 49))
        h, w = (int(v) for v in rng.integers(max(k, 2), 12, 2))
        if res:
            s, pads = 1, (k // 2,) * 4   # the residual has the output's shape: the input's
        wl = DwSepWorkload(int(rng.integers(1, 3)), cin, cout, h, w, (k, k), (s, s), pads,
                           act1=act1, act2=act2, residual=res, dtype=dtype)
        if wl.out_height < 1 or wl.out_width < 1:
            continue
        tile = TileConfig(int(rng.integers(1, wl.out_height + 1)), int(rng.integers(1, wl.out_width + 1)),
                          int(rng.integers(1, wl.co1 + 1)), int(rng.integers(0, wl.c1 + 1)), db, engine,
                          int(rng.integers(0, 6)))
        if engine == "twophase":   # the streamed-weights knob (small shapes whose B would fit L1)
            tile = replace(tile, b_stream=bool(rng.integers(0, 2)))
        try:
            plan = make_plan(wl, tile, spec)
        except ValueError:
            continue
        if (plan.fits() and plan.variant == variant and fix in (None, plan.fixpipe_epilogue)
                and plan.dw_grouped == (_id in GROUPED) and plan.b_resident == (_id in RESIDENT_B)
                and plan.a_keep == (2 if _id in KEEP_A else 0)):
            return plan


def _random_args(wl, rng):
    ci, co = np.arange(wl.c1 * 16) < wl.cin, np.arange(wl.co1 * 16) < wl.cout
    mi, mo = ci.reshape(wl.c1, 16), co.reshape(wl.co1, 16)
    kh, kw = wl.kernel
    a = {
        "x": rng.standard_normal((wl.batch, wl.c1, wl.height, wl.width, 16)) * mi[None, :, None, None, :],
        "w_dw": rng.standard_normal((wl.c1, kh, kw, 16)) / kh * mi[:, None, None, :],
        "b_dw": rng.standard_normal((wl.c1, 16)) * mi,
        "w_pw": rng.standard_normal((wl.co1, wl.c1, 16, 16)) / np.sqrt(wl.cin) * mi[None, :, :, None]
        * mo[:, None, None, :],
        "b_pw": rng.standard_normal((wl.co1, 16)) * mo,
    }
    if wl.residual:
        a["res"] = rng.standard_normal((wl.batch, wl.co1, wl.out_height, wl.out_width, 16)) * mo[None, :, None, None, :]
    f32 = ("b_dw", "b_pw")
    return {k: np.ascontiguousarray(v.astype("float32" if k in f32 else wl.dtype)) for k, v in a.items()}


@pytest.fixture(scope="module")
def sampled():
    """Per group: its plans' kernels (one source text each group) and their one build, built in parallel."""
    out = {}
    for g, group in enumerate(GROUPS):
        rng = np.random.default_rng(1000 + g)
        out[group[0]] = [emit_kernel(_sample(group, rng), "sampled") for _ in range(PLANS_PER_GROUP)]
    build_all([eks[0] for eks in out.values()])
    return out


@pytest.mark.parametrize("group", GROUPS, ids=[g[0] for g in GROUPS])
def test_sampled_plans_counters_equal_program_and_model(sampled, group):
    eks = sampled[group[0]]
    # one kernel text per group: every plan runs on the same build, with its own tiling data
    assert len({(ek.source, ek.tiling_header) for ek in eks}) == 1
    assert len({ek.tiling_bytes() for ek in eks}) == len(eks)   # the plans differ
    built = build_emitted(eks[0])
    rng = np.random.default_rng(7)
    resident = set()
    for ek in eks:
        assert ek.variant == group[2] and ek.plan.soc.name == group[1]
        resident.add(ek.plan.pw_weights_resident)
        _check_plan(ek, built, rng)
    if group[0] in ("tp-310p-relu", "tp-910b-grouped-relu6-res"):   # fp16 phase 1 and vector epilogue
        assert all(ek.plan.dw_post16 and ek.plan.epi_post16 for ek in eks)
    if group[0] == "tp-910b-grouped-resk":   # the residual in the GEMM's K: Fixpipe epilogue, two phases
        assert all(res_in_cube(ek.plan.workload, ek.plan.soc) and len(build_program(ek.plan).phases) == 2
                   for ek in eks)
    if group[0] == "tp-910b-res-relu6":   # the 910B phase 3 in fp16 after fp32 DW post-ops (hardswish)
        assert all(ek.plan.epi_post16 and not ek.plan.dw_post16 for ek in eks)
    if group[0] in ("cube-310p-relu", "cube-310p-hswish", "tp-910b-fixpipe", "tp-310p-bres-relu6-res"):
        # the per-block fp16 DW form's taps over wide rows (plan.dw_wide, stride 1) and not
        assert {ek.plan.dw_wide for ek in eks} == {True, False}
    forms = {"cube-310p-relu": (True, True), "cube-310p-res-relu6": (False, True), "cube-310p-hswish": (True, False)}
    if group[0] in forms:   # the 310P cube kernel's DW post-ops / epilogue in fp16 or fp32
        assert all((ek.plan.dw_post16, ek.plan.epi_post16) == forms[group[0]] for ek in eks)
    if group[1] == "ascend310p3" and group[2] in ("cube-pw", "two-phase"):
        # the PW bias by the cube and relu in the L0C -> UB move wherever the epilogue is fp16
        assert all(ek.plan.bias_in_cube == ek.plan.epi_post16 for ek in eks)
    if group[0] == "tp-310p-hswish-res":   # their fp32 forms
        assert not any(ek.plan.dw_post16 or ek.plan.epi_post16 for ek in eks)
    if group[0] in GROUPED:   # units of more than one group of 8 channel blocks (a short last group)
        assert all(ek.plan.dw_grouped for ek in eks) and any(ek.plan.cib > 8 for ek in eks)
    if group[2] != "two-phase":   # its GEMM streams K through L1 in blocks
        assert resident == {True, False}, "the samples cover resident and streamed PW weights"


def _check_plan(ek, built, rng):
    """Run one plan on its group's build: counters == program == model, output == reference."""
    plan, wl = ek.plan, ek.plan.workload
    args = _random_args(wl, rng)
    y, counters, _runs = run_emitted(ek, built, args)
    prog = build_program(plan).counts
    cost = model_fused(plan, timeline=False)
    model = dict(cost.counts, gm_read_bytes=cost.gm_read_bytes, gm_write_bytes=cost.gm_write_bytes)
    where = f"{wl.describe()} | {plan.tile.describe()} c{plan.cores} on {plan.soc.name}"
    for pk, ek_name in COUNTERS:
        assert counters[ek_name] == prog[pk] == model[pk], (pk, counters[ek_name], prog[pk], model[pk], where)
    assert (counters["cube_fractals"] > 0) == (plan.pw_on_cube or plan.variant == "two-phase"), where
    ref = kernel_layout_reference(wl, **args)
    err = np.abs(y.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-6)
    assert err <= TOLERANCE[wl.dtype], (err, where)   # relative to the output range


# Rows wider than 8 pixels: the DW taps by column groups or row by row (schedules/isa.tap_columns:
# fewer instructions, and the 8-bit repeat strides) -- (group, H, W, stride, th, tw, columns).
TAP_FORMS = [
    ("vec-910b-relu", 5, 23, 1, 3, 13, True),     # 2 groups of rows walked by 3 repeats
    ("vec-910b-relu", 4, 45, 2, 1, 20, False),    # one row: 2 ops (16 + 4 pixels) < 3 groups
    ("vec-910b-relu", 9, 131, 2, 4, 64, False),   # source repeat stride 2 x 129 > 255: by rows
    ("vec-910b-fp32", 6, 21, 1, 2, 20, True),     # fp32: per channel half, 3 groups x 2 rows
    ("vec-910b-fp32", 3, 21, 1, 1, 20, False),
    ("vec-910b-fp32", 5, 70, 1, 2, 70, False),    # fp32 repeat stride 2 x 70 pixels > 255
]


@pytest.mark.parametrize("case", TAP_FORMS, ids=[f"{c[0]}-{c[4]}x{c[5]}-s{c[3]}" for c in TAP_FORMS])
def test_dw_tap_forms(sampled, case):
    """Both tap forms on the group's build: the choice is tiling data (tapCols), and the kernel
    issues what the program counts."""
    from schedules.isa import itemsize, tap_columns

    name, h, w, s, th, tw, columns = case
    group = next(g for g in GROUPS if g[0] == name)
    _id, soc, variant, engine, act1, act2, res, db, _fix, dtype = group
    wl = DwSepWorkload(1, 24, 20, h, w, (3, 3), (s, s), (1, 1, 1, 1), act1=act1, act2=act2, residual=res,
                       dtype=dtype)
    plan = make_plan(wl, TileConfig(th, tw, 1, 1, db, engine, 2), get_soc(soc))
    assert plan.fits() and plan.variant == variant and (plan.th, plan.tw) == (th, tw)
    assert tap_columns(plan.soc, th, tw, s, plan.in_tile_w, itemsize(dtype)) == columns and not plan.dw_wide
    ek = emit_kernel(plan, "sampled")
    assert ek.source == sampled[name][0].source   # the group's kernel text: no rebuild
    _check_plan(ek, build_emitted(sampled[name][0]), np.random.default_rng(11))
