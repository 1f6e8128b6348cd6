"""Emit the Ascend C kernel of one fused DW→PW block from its KernelPlan.

Everything that shapes the code comes from the plan. Compile-time (the kernel text): the variant,
the arch, the storage dtype, the activations, the residual, the Fixpipe epilogue and the queue
depths (single or double buffering). Runtime tiling data (the host fills it): shapes, tile sizes,
loop trip counts, the core split, resident or streamed PW weights and every InitBuffer size (one
per plan buffer the kernel allocates, `bytes_per_copy`, so the emulator's budget checks enforce
the plan's budget on every memory). Plans that share the compile-time choices share one kernel
text, hence one emulator build; a different tile gives different tiling data.

Four variants, one per data flow of fusion/cost/ (two-phase: fusion/codegen/ascendc/emit_twophase.py):

  vector-pw    PW on the vector unit (any SoC). One core per plan core:
                 for tile t = UnitAt(core, k, blockDim), k < UnitsOf(core, nTiles, blockDim)
                 (core = GetBlockIdx(); the loop formulas of schedules/loops.py)
                   for ci-step: CopyInX (GM -> UB tile with halo, padding zero-filled), ComputeDw
                   for co-step: CopyInPw ([w_pw], [res]), ComputePw (MACs, bias, act2, [+res]), CopyOut
  cube-pw      PW on the cube of a coupled AI core (310P), same loop over tiles:
                   for ci-step: CopyInX, ComputeDw                      (dw_out in UB)
                   StageA: dw_out UB -> L1 (NZ, rows padded to 16) -> L0A (LoadData)
                   for co-step: CopyInPw (w_pw GM -> L1, [res]), Mma (L1 -> L0B LoadData, Mmad -> L0C
                                [, the bias Mmad: plan.bias_in_cube]), Epilogue (per output block
                                L0C -> UB, [bias], act2, [+res], cast), CopyOut
                 (pipelined by one tile: the co-steps of tile k - 1 after the DW of tile k)
  cube-pw-mix  PW on the cube of 910B: one KERNEL_TYPE_MIX_AIC_1_2 kernel, block_dim = the AICs.
                 AIV i (of the plan's `cores`) runs the DW of tiles i, i + cores, ... and writes each
                 tile's DW result to the tile's own GM workspace slot; the AIC of its group (AIVs
                 2g, 2g+1) reads the slot GM -> L1 -> L0A, the weights GM -> L1 -> L0B, Mmads and
                 Fixpipes: y itself (bias from the bias table, relu on the fly) when act2 is a
                 Fixpipe activation and there is no residual, else the fp16 pre-activation to a
                 second slot, which the AIV reads back for bias, act2, residual and the cast.
                 Cross-core flags (mode 2) pace the two sides round by round: in round k every
                 AIV of the group hands off its k-th tile (if it has one) and sets FLAG_DW; the
                 AIC waits, runs the round's tiles and sets FLAG_PW; an AIV finishes round k
                 (waits FLAG_PW, runs the epilogue) LAG rounds later, so at most LAG + 1 flags are
                 outstanding (the hardware counts to 15).

Vector formulation (fp16 x fp16 products are exact in fp32 and every multiply-add rounds once,
so the two DW forms give the same bits):
  DW tap  both arches have MulAddDst (the vendor's API reference lists it for Atlas A2/A3 and
          the inference-series AI Core, half and float). 16-bit: the taps accumulate in the
          storage dtype in dw_out (as the vendor's vector depthwise does), 8 pixels a repeat,
          the 16 taps one DataBlock read by every pixel (src1 strides 0); per tap one MulAddDst
          per group of 8 output columns whose repeats walk the rows (a tile of rows <= 8 pixels:
          one MulAddDst per tap), or one per row where that issues fewer (isa.tap_columns, the
          tiling's tapForm), or -- fp16 post-ops, stride 1 -- one per tap over the tile as wide
          rows at the input pitch (dw_forms.wide_taps); then one Cast widens the block group into
          dw_acc for the fp32 bias
          and act1. fp32: the same per channel half. The source block stride is the conv
          stride, so strided convs need no gather. The two-phase kernel's phase 1 may use the
          grouped form instead (schedules/twophase.dw_grouped, compute_dw_grouped.h): a repeat
          spans one pixel of up to 8 channel blocks, the repeats walk wide rows, one op per tap
          and 8 blocks; bias and act1 in fp16.
  PW      acc[p, co, :] += dw_out[p, ci] · w_pw[ci, co, :] — one Axpy per (input channel,
          pixel) covering every output block of the co-step (pw_acc is laid out pixel-major,
          w_pw in UB as (Cin, cob·C0), the plan's shape): no vector op broadcasts one element
          over a DataBlock, so this costs thw·Cin instructions per co-step where the cost model
          counts Cin·cob; the cube path is the PW engine that matches the model.

Cube layouts (fusion/emu/README.md): with M1 = th·tw padded to 16 rows / 16,
  L1 A     (c1, M1·16, C0) NZ: one C0 column block per input-channel block, all pixels;
  L0A      fractal (mi, ki) at mi·c1 + ki (LoadData startIndex mi, srcStride M1 per row block);
  L1 B     the FRACTAL_Z weights as they are in GM: fractal (o, ki) = w_pw[o, ki] (k rows x n cols);
  L0B      fractal (ki, nj) at ki·cob + nj, each transposed (ifTranspose);
  L0C      (cob, M1·16, C0): per output block all pixels x 16 — the NC1HWC0 order of the y tile.
"""

from __future__ import annotations

import re

from fusion.codegen.ascendc.emit_cube import emit_body as _emit_cube
from fusion.codegen.ascendc.emit_mix import emit_body as _emit_mix
import fusion.codegen.ascendc.emit_se as emit_se
import fusion.codegen.ascendc.emit_twophase as emit_twophase
from fusion.codegen.ascendc.emit_vector import emit_body as _emit_vector
from fusion.codegen.ascendc.cxx import (act_function, act_scratch_tensor, act_tmp_args, buffer_field, const_name, fill,
                                snippet, sub, template)
from fusion.codegen.ascendc.cxx import fill as _fill  # noqa: F401  (emit_host fills its templates with it)
from fusion.codegen.ascendc.kernel_types import ArgSpec, EmittedKernel, Launch  # noqa: F401
from fusion.codegen.ascendc.loop_cxx import loop_functions
from fusion.core.errors import MegafuseError
from fusion.core.ir import C0
from schedules.activations import needs_slope
from schedules.channel_norm import LN_PX
from schedules.isa import itemsize, tap_form
from schedules.plan import KernelPlan
from schedules.se_plan import SE_SOCS, se_emitted
from schedules.twophase import res_in_cube

VERSION = "0.2.0"
MAX_REPEAT = 255
# arch 2201 reserves this much system workspace in front of the user workspace that
# GetUserWorkspace() returns [devkit kernel_utils_constants.h RESERVED_WORKSPACE, 16 MiB]
SYSTEM_WORKSPACE_2201 = 16 * 1024 * 1024
# Needed: without it the AIV would wait for FLAG_PW right after its own FLAG_DW and the DW and the
# GEMM would not overlap. Not in the cost model, which runs an AIV's epilogues after its DW loop.
FLAG_DW, FLAG_PW = 1, 2   # cross-core flag ids: DW result handed off / PW of the round done

VARIANTS = {
    "vector-pw": "DW and PW on the vector unit",
    "cube-pw": "DW on the vector unit, PW on the cube of the same AI core (UB -> L1 on chip, L0C -> UB)",
    "cube-pw-mix": "MIX kernel: DW on the AIVs, PW on the AICs, the DW result handed over through GM",
    "two-phase": "DW on every vector core -> GM workspace, SyncAll, the PW as an M x N GEMM with K streamed",
}


def kernel_names(block_name: str) -> tuple[str, str]:
    """(C symbol, CANN op type) of a fused block: b3_fused -> megafuse_b3_fused, MegafuseB3Fused."""
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", block_name) if p]
    sym = "megafuse_" + "_".join(p.lower() for p in parts)
    op_type = "Megafuse" + "".join(p[:1].upper() + p[1:] for p in parts)
    if not parts:
        sym, op_type = "megafuse_block", "MegafuseBlock"
    return sym, op_type


# ---------------------------------------------------------------------------------------------
# plan -> values
# ---------------------------------------------------------------------------------------------
def variant_of(plan: KernelPlan) -> str:
    return plan.variant


def tiling_fields(plan: KernelPlan) -> tuple[tuple[str, int], ...]:
    wl = plan.workload
    return (
        ("batch", wl.batch), ("c1", wl.c1), ("co1", wl.co1), ("cin", wl.cin), ("cout", wl.cout),
        ("h", wl.height), ("w", wl.width), ("oh", wl.out_height), ("ow", wl.out_width),
        ("kh", wl.kernel[0]), ("kw", wl.kernel[1]), ("sh", wl.stride[0]), ("sw", wl.stride[1]),
        ("padTop", wl.pads[0]), ("padLeft", wl.pads[1]),
        ("th", plan.th), ("tw", plan.tw), ("ih", plan.in_tile_h), ("iw", plan.in_tile_w),
        ("cib", plan.cib), ("cob", plan.cob), ("ciSteps", plan.ci_steps), ("coSteps", plan.co_steps),
        ("tilesH", plan.tiles_h), ("tilesW", plan.tiles_w), ("nTiles", plan.n_tiles),
        ("blockDim", plan.cores), ("thwAl", plan.thw_al), ("aicNum", plan.aic_cores),
        ("wPwResident", int(plan.pw_weights_resident)),
        ("tapForm", tap_form(plan.soc, plan.th, plan.tw, wl.stride[0], plan.in_tile_w, itemsize(wl.dtype), plan.dw_wide)),
        ("dwPitch", plan.dw_pitch),
    ) + tuple((buffer_field(b.name), b.bytes_per_copy) for b in plan.kernel_buffers) \
        + (emit_twophase.tiling_fields(plan) if plan.two_phase else ())


def kernel_args(plan: KernelPlan) -> tuple[ArgSpec, ...]:
    wl = plan.workload
    dt = wl.dtype
    kh, kw = wl.kernel
    n, c1, co1 = wl.batch, wl.c1, wl.co1
    args = [
        ArgSpec("x", "input", dt, "NC1HWC0", (n, c1, wl.height, wl.width, C0),
                f"block input, {wl.cin} channels zero-padded to {c1 * C0}"),
        ArgSpec("w_dw", "weight", dt, "DW_C1HWC0", (c1, kh, kw, C0), "depthwise taps with BN1 folded in"),
        ArgSpec("b_dw", "weight", "float32", "C1C0", (c1, C0), "folded BN1 bias"),
        ArgSpec("w_pw", "weight", dt, "FRACTAL_Z", (co1, c1, C0, C0),
                "1x1 weights [co1, ci1, ci0, co0] (FRACTAL_Z of a 1x1 conv: each [ci0, co0] block is the "
                "cube's k x n fractal as L1 holds it), BN2 folded in"),
        ArgSpec("b_pw", "weight", "float32", "C1C0", (co1, C0), "folded BN2 bias"),
    ]
    for name, act, blocks, what in (("s_dw", wl.act1, c1, "act1"), ("s_pw", wl.act2, co1, "act2")):
        if needs_slope(act):   # after the biases, in the fused block's operand order (FUSED_SLOPES)
            args.append(ArgSpec(name, "weight", "float32", "C1C0", (blocks, C0), f"{what} per-channel PRelu slopes"))
    args += emit_se.se_args(plan)   # squeeze-and-excitation operands (FUSED_SE order), if any
    if wl.residual:
        args.append(ArgSpec("res", "input", dt, "NC1HWC0", (n, co1, wl.out_height, wl.out_width, C0),
                            "residual added after act2"))
    args.append(ArgSpec("y", "output", dt, "NC1HWC0", (n, co1, wl.out_height, wl.out_width, C0),
                        f"block output, {wl.cout} channels zero-padded to {co1 * C0}"))
    if plan.two_phase:
        ws = emit_twophase.workspace_total(plan)
        args.append(ArgSpec("workspace", "workspace", "uint8", "ND", (ws,),
                            "SyncAll flags (zeroed by the host), " + ("the SE hidden sums (zeroed by the host), "
                                                                       if wl.se else "")
                            + "the DW result (C1, M, C0) and the pre-activation"))
    elif plan.handoff_via_gm:
        dw, pre = plan.handoff_slot_elems
        what = (f"AIV -> AIC hand-off: {plan.n_tiles} tiles x (DW result {dw} elements"
                + (f" + pre-activation {pre} elements" if pre else "") + f") {dt}")
        args.append(ArgSpec("workspace", "workspace", "uint8", "ND", (plan.handoff_bytes,), what))
    else:
        args.append(ArgSpec("workspace", "workspace", "uint8", "ND", (0,), "unused by this kernel"))
    args.append(ArgSpec("tiling", "tiling", "uint8", "ND", (len(tiling_fields(plan)) * 4,), "tiling struct"))
    return tuple(args)


def emit_kernel(plan: KernelPlan, block_name: str = "block") -> EmittedKernel:
    """The Ascend C source of one fused block, generated from its KernelPlan: the vector-PW
    kernel, or the cube kernel of the plan's SoC when the plan puts PW on the cube."""
    wl, soc = plan.workload, plan.soc
    if wl.dtype not in ("float16", "float32"):
        raise ValueError(f"unsupported dtype {wl.dtype}")
    if wl.se and not (plan.two_phase and se_emitted(soc)):   # tile_policy.se_refusal keeps these unfused
        raise MegafuseError(f"block {block_name}: squeeze-and-excitation has an Ascend C kernel in the two-phase "
                            f"variant on {', '.join(SE_SOCS)} only (this plan: {plan.variant} on {soc.name})")
    variant = variant_of(plan)
    if variant != "vector-pw" and wl.dtype != "float16":
        raise MegafuseError(f"block {block_name}: PW on the cube is emitted for float16 only (this plan is "
                            f"{wl.dtype}; the cube's fp32 operands use 16x8 fractals); use --pw-engine vector")
    if variant in ("cube-pw-mix", "two-phase") and not soc.coupled and plan.aic_ratio != 2:
        raise MegafuseError(f"block {block_name}: the MIX kernel pairs 2 AIVs with each AIC, but {soc.name} "
                            f"has {soc.vector_cores} AIV / {soc.cube_cores} AIC")
    if plan.cob > 127 and variant == "vector-pw":
        raise ValueError(f"cob {plan.cob} > 127 C0-blocks: the pixel-major pw_acc repeat stride (2*cob DataBlocks) "
                         "exceeds the 8-bit repeat stride")
    if wl.ln_eps is not None and variant not in ("vector-pw", "two-phase"):
        raise MegafuseError(f"block {block_name}: a channel LayerNorm is emitted in the vector-pw and two-phase "
                            f"kernels only (this plan is {variant})")
    sym, op_type = kernel_names(block_name)
    return _emit(plan, sym, op_type, block_name, variant)


def _emit(plan: KernelPlan, sym: str, op_type: str, block_name: str, variant: str) -> EmittedKernel:
    wl, soc = plan.workload, plan.soc
    fp16 = wl.dtype == "float16"
    tiling_struct = op_type + "Tiling"
    fields = tiling_fields(plan)
    args = kernel_args(plan)
    ns = sym + "_plan"
    bufs = plan.kernel_buffers
    names = {b.name for b in bufs}

    # queue depths are template arguments (compile-time); the bytes per copy are tiling fields, so
    # plans that differ only in geometry share one kernel text (and one emulator build)
    consts = [sub(snippet("COPIES_CONST"), CNAME=const_name(b.name), COPIES=b.copies, BUF=b.name, SCOPE=b.scope,
                  DTYPE=b.dtype, ROLE=b.role).rstrip("\n") for b in bufs]
    needed = {"x_tile", "w_dw", "b_dw", "dw_out"} | ({"b_dw16"} if plan.dw_post16 else {"dw_acc"})
    needed |= ({"w_pw", "pw_acc", "b_pw", "y_tile"} if variant == "vector-pw" else
               {"a_res" if plan.a_keep else "a_l1", "b_res" if plan.b_resident else "b_l1", "a_l0a", "b_l0b", "pw_acc"}
                   if variant == "two-phase" else
               {"a_l0a", "w_pw_l1", "b_l0b", "pw_acc"})
    if variant == "cube-pw":
        needed |= {"dw_out_l1", "b_pw", "y_tile"}
    if variant == "cube-pw-mix":
        needed |= {"dw_in_l1"} | ({"b_pw_l1", "bias_bt"} if plan.fixpipe_epilogue else {"pre_tile", "b_pw", "y_tile"})
    if variant == "two-phase" and res_in_cube(wl, plan.soc):   # the residual joins the GEMM's K
        needed |= {"eye_ub", "eye_l1", "eye_l0b"}
    elif wl.residual:
        needed.add("res_tile")
    missing = needed - names
    if missing:
        raise ValueError(f"plan lacks buffers {sorted(missing)} for the {variant} kernel")

    res = wl.residual
    tmp = act_tmp_args(plan, "act1")
    values = dict(
        VERSION=VERSION, SYM=sym, OPTYPE=op_type, BLOCK=block_name, TILING=tiling_struct,
        SOC=soc.name, VARIANT=variant, VARIANT_WHAT=VARIANTS[variant],
        T="half" if fp16 else "float", PB=2 if not fp16 else 1,
        ACT1=wl.act1, ACT2=wl.act2, RES="yes" if res else "no",
        LOOPNEST=template(f"loopnest_{variant.replace('-', '_')}.h"), LOOP_FNS=loop_functions(),
        EXTRA=template("extra_mix.h") if variant == "cube-pw-mix" else "",
        RES_PARAM="GM_ADDR res, " if res else "", RES_ARG="res, " if res else "",
        RES_GM_DECL=snippet("RES_GM_DECL") if res else "",
        RES_GM_SET=snippet("RES_GM_SET") if res else "",
        RES_COPYIN=template("res_copyin.h") if res else "",
        ACT1_FN=act_function("Act1", wl.act1), ACT2_FN=act_function("Act2", wl.act2) + "@PRELU_FN@",
        CAST_DW=template("cast_dw_half.h") if fp16 else template("cast_dw_float.h"),
        TAP_LANES=template("tap_mad16.h") if fp16 else template("tap_mad_float.h"),
        TAP_CALL=template("tap_call_tile.h"), TAP_FIRST="", COMPUTE_DW=template("compute_dw.h"),
        TAP_ACC=template("tap_acc_half.h") if fp16 else template("tap_acc_float.h"),
        DW_ACC_DECL=snippet("DW_ACC_DECL"), DW_POST=template("dw_post_float.h"),
        WIDEN_DW=template("widen_dw.h") if fp16 else "", DW_BASE="c0 * thw * C0", DW_OUT="dwOutBuf.Get<T>()",
        GEOMETRY=template("geometry.h"), GEOM_MEMBERS=template("geom_members.h"), GM_TENSORS=template("gm_tensors.h"),
        RES_EPI_PARAM="const LocalTensor<T>& r, " if res else "",
        CO_STEP=template("co_step.h"), RESIDENT_UB=template("resident_ub.h"), COPY_OUT=template("copy_out.h"),
        X_CLIP=x_clip(plan),
        LAG=plan.mix_lag, FLAG_DW=FLAG_DW, FLAG_PW=FLAG_PW, ACT1_TMP=tmp, ACT2_TMP=act_tmp_args(plan, "act2"),
        RES_EPI_ADD=snippet("RES_EPI_ADD") if res else "",
    )
    values.update(slope_values(plan))
    if wl.ln_eps is not None:   # the channel LayerNorm in place of act1 (schedules/channel_norm.py)
        if not plan.norm_phase:   # (a norm phase normalises the workspace after phase 1: emit_norm_phase.py)
            values["DW_POST"] = template("dw_post_ln.h")
        values["ACT1_FN"] += sub(template("ln_norm.h"), LN_EPS=repr(float(wl.ln_eps)), LN_PX=LN_PX)
    body, entry, launch = _EMITTERS[variant](plan, ns, values, args, sym)
    values["NS"] = ns
    header = fill(template("tiling_header.h"), **values, FIELDS="\n".join(sub(snippet("TILING_FIELD"), NAME=name).rstrip("\n") for name, _ in fields),
                   CONSTS="\n".join(consts))
    source = fill(template("prelude.h") + template("prelude_ns.h") + body + entry, **values)
    # what a chain kernel (emit_chain.py) composes: the helpers and classes, without includes or entry
    values["CHAIN_BODY"] = fill(template("prelude_ns.h") + body, **values)
    mix = variant == "cube-pw-mix"
    if variant == "two-phase":
        ws = emit_twophase.workspace_total(plan)
        return EmittedKernel(block_name, sym, op_type, plan, variant, source, header, tiling_struct, args, fields,
                             (launch,), ws, 0 if soc.coupled else SYSTEM_WORKSPACE_2201, (),
                             emit_twophase.workspace_zeroed(plan), values["CHAIN_BODY"])
    return EmittedKernel(block_name, sym, op_type, plan, variant, source, header, tiling_struct, args, fields,
                         (launch,), plan.handoff_bytes if mix else 0,
                         SYSTEM_WORKSPACE_2201 if mix else 0, ())


def x_clip(plan: KernelPlan) -> str:
    """min(x, x_max) over the x tile before the taps (KernelPlan.x_max: a producer's relu6 clip
    deferred to this chain member), one count-form Mins as schedules/program.dw_ops counts it."""
    if plan.x_max is None:
        return ""
    if plan.variant != "two-phase":
        raise ValueError("an input clip is a two-phase chain member's")
    return sub(snippet("X_CLIP"), X_MAX=repr(float(plan.x_max)))


def slope_values(plan: KernelPlan) -> dict[str, str]:
    """The template slots of per-channel PRelu: the slope operands s_dw / s_pw (kernel arguments,
    GM tensors, resident UB copies: templates/slope_*.h) and the per-channel-block act applied
    right after each block's bias add, with the bias add's repeat layout (PreluBlock), its fp32
    scratch the stage's (schedules/program.act_scratch)."""
    wl = plan.workload
    out = dict(SLOPE_PARAMS="", SLOPE_ARGS="", SLOPE_SET="", SLOPE_LOAD="", SLOPE_DECL="", SLOPE_FREE="",
               ACT1_CH="", ACT2_CH="", PRELU_FN="")
    for name, act, member, blocks in (("s_dw", wl.act1, "sDw", "c1"), ("s_pw", wl.act2, "sPw", "co1")):
        if not needs_slope(act):
            continue
        out["SLOPE_PARAMS"] += f"GM_ADDR {name}, "
        out["SLOPE_ARGS"] += f"{name}, "
        for slot in ("SET", "LOAD", "DECL", "FREE"):
            out[f"SLOPE_{slot}"] += sub(template(f"slope_{slot.lower()}.h"), NAME=name, MEMBER=member, BLOCKS=blocks)
    for stage in ("act1", "act2"):
        if not needs_slope(getattr(wl, stage)):
            continue
        scratch = act_scratch_tensor(plan, stage)
        if scratch is None:
            raise ValueError(f"the plan has no fp32 scratch for the per-channel {stage}")
        form = "_vector" if stage == "act2" and plan.variant == "vector-pw" else ""   # pixel-major acc
        out[f"{stage.upper()}_CH"] = sub(template(f"prelu_{stage}{form}.h"), SCRATCH=scratch)
        out["PRELU_FN"] = template("prelu_block.h")
    return out


_EMITTERS = {"vector-pw": _emit_vector, "cube-pw": _emit_cube, "cube-pw-mix": _emit_mix,
             "two-phase": emit_twophase.emit_body}
