"""Emit the Ascend C kernel of one fused DW→PW block from its KernelPlan.

Everything that shapes the code comes from the plan: the tiling struct's values (shapes, tile
sizes, loop trip counts, the core split), the InitBuffer sizes and queue depths (one per plan
buffer, `bytes_per_copy` × `copies`, so the emulator's UB budget check enforces the plan's
budget), single or double buffering, resident or streamed PW weights, the activations, the
residual, the storage dtype. No kernel is written by hand per shape; a different tile gives
different code.

The kernel follows the loop nest of schedules/dwsep_schedule.py:

  for tile t = GetBlockIdx(); t < nTiles; t += GetBlockNum()          (round-robin over cores)
    for ci-step (cib C0-blocks)
      CopyInX   GM -> UB input tile with halo; padding (and rows/cols past the image) zero-filled
      ComputeDw per channel block: kh·kw taps (Axpy into the fp32 dw_acc), + b_dw, act1, Cast -> dw_out
    for co-step (cob C0-blocks)
      CopyInPw  [w_pw block when the weights are not resident] [residual tile]
      ComputePw fp32 MACs on the vector unit, + b_pw, act2, [+ residual], Cast -> y tile
      CopyOut   UB -> GM (valid rows/cols only)

Vector formulation (the emulated API has no per-lane broadcast, so both GEMM-like stages use
Axpy, which is exact: fp16 x fp16 products are exact in fp32 and Axpy rounds once):
  DW tap  one masked Axpy per channel lane k: lanes {16p + k} of a 64-lane fp32 repeat are 4
          output pixels, the scalar is w_dw[c, i, j, k], the source block stride is the conv
          stride (so strided convs need no gather).
  PW      acc[p, co, :] += dw_out[p, ci] · w_pw[ci, co, :] — one Axpy per (input channel,
          pixel) covering every output block of the co-step (pw_acc is laid out pixel-major,
          w_pw in UB as (Cin, cob·C0), the plan's shape).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from fusion.errors import MegafuseError
from fusion.ir import C0
from schedules.plan import KernelPlan

VERSION = "0.1.0"
MAX_REPEAT = 255


def kernel_names(block_name: str) -> tuple[str, str]:
    """(C symbol, CANN op type) of a fused block: b3_fused -> megafuse_b3_fused, MegafuseB3Fused."""
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", block_name) if p]
    sym = "megafuse_" + "_".join(p.lower() for p in parts)
    op_type = "Megafuse" + "".join(p[:1].upper() + p[1:] for p in parts)
    if not parts:
        sym, op_type = "megafuse_block", "MegafuseBlock"
    return sym, op_type


@dataclass(frozen=True)
class ArgSpec:
    name: str
    role: str              # input | weight | output | workspace | tiling
    dtype: str             # float16 | float32 | uint8
    fmt: str               # NC1HWC0 | FRACTAL_Z | C1C0 | DW_C1HWC0 | ND
    shape: tuple[int, ...]
    desc: str

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * {"float16": 2, "float32": 4, "uint8": 1}[self.dtype]


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a block (the vector-PW kernel is one launch)."""
    symbol: str
    block_dim: int
    core: str              # AIV | AIC | AICORE
    args: tuple[str, ...]  # names of the block's ArgSpecs, in parameter order
    what: str


@dataclass(frozen=True)
class EmittedKernel:
    block: str
    symbol: str
    op_type: str
    plan: KernelPlan
    variant: str                           # vector-pw
    source: str                            # kernel/<symbol>.cpp
    tiling_header: str                     # kernel/<symbol>_tiling.h
    tiling_struct: str
    args: tuple[ArgSpec, ...]              # the kernel's GM parameters in order
    tiling_fields: tuple[tuple[str, int], ...]
    launches: tuple[Launch, ...]
    workspace_bytes: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def source_name(self) -> str:
        return f"{self.symbol}.cpp"

    @property
    def tiling_header_name(self) -> str:
        return f"{self.symbol}_tiling.h"

    @property
    def block_dim(self) -> int:
        return self.launches[0].block_dim

    def tiling_bytes(self) -> bytes:
        return struct.pack(f"<{len(self.tiling_fields)}I", *(v for _, v in self.tiling_fields))

    def arg(self, name: str) -> ArgSpec:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def signature(self) -> str:
        params = ", ".join(f"GM_ADDR {a.name}" for a in self.args)
        return f'extern "C" __global__ __aicore__ void {self.symbol}({params})'


# ---------------------------------------------------------------------------------------------
# plan -> values
# ---------------------------------------------------------------------------------------------
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
        ("blockDim", plan.cores),
    )


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
                "1x1 weights [co1, ci1, ci0, co0] (FRACTAL_Z of a 1x1 conv), BN2 folded in"),
        ArgSpec("b_pw", "weight", "float32", "C1C0", (co1, C0), "folded BN2 bias"),
    ]
    if wl.residual:
        args.append(ArgSpec("res", "input", dt, "NC1HWC0", (n, co1, wl.out_height, wl.out_width, C0),
                            "residual added after act2"))
    args += [
        ArgSpec("y", "output", dt, "NC1HWC0", (n, co1, wl.out_height, wl.out_width, C0),
                f"block output, {wl.cout} channels zero-padded to {co1 * C0}"),
        ArgSpec("workspace", "workspace", "uint8", "ND", (0,), "unused by the vector-PW kernel"),
        ArgSpec("tiling", "tiling", "uint8", "ND", (len(tiling_fields(plan)) * 4,), "tiling struct"),
    ]
    return tuple(args)


# ---------------------------------------------------------------------------------------------
# C++ text
# ---------------------------------------------------------------------------------------------
def _fill(template: str, **values) -> str:
    out = template
    for k, v in values.items():
        out = out.replace("@" + k + "@", str(v))
    left = re.findall(r"@[A-Z_0-9]+@", out)
    if left:
        raise AssertionError(f"unfilled template keys {sorted(set(left))}")
    return out


# member of the kernel class for each plan buffer: (C++ declaration, queue?, element type)
_UB_MEMBERS = {
    "x_tile": ("xQue", "TQue<TPosition::VECIN, @COPIES@>", True),
    "w_dw": ("wDwQue", "TQue<TPosition::VECIN, 1>", True),
    "b_dw": ("bDwQue", "TQue<TPosition::VECIN, 1>", True),
    "dw_acc": ("dwAccBuf", "TBuf<TPosition::VECCALC>", False),
    "dw_out": ("dwOutBuf", "TBuf<TPosition::VECCALC>", False),
    "w_pw": ("wPwQue", "TQue<TPosition::VECIN, @COPIES@>", True),
    "pw_acc": ("pwAccBuf", "TBuf<TPosition::VECCALC>", False),
    "b_pw": ("bPwQue", "TQue<TPosition::VECIN, 1>", True),
    "res_tile": ("resQue", "TQue<TPosition::VECIN, @COPIES@>", True),
    "y_tile": ("yQue", "TQue<TPosition::VECOUT, @COPIES@>", True),
}


def _act_function(fn: str, act: str) -> str:
    """An fp32 activation over n elements of `a` (the instructions the cost model's ACT_OPS
    counts: relu = Relu; relu6 = Maxs + Mins; hardswish = Adds, Maxs, Mins, Mul, Muls(1/6));
    hardswish works in chunks of the scratch `tmp` (tmpLen elements)."""
    bodies = {
        "none": "(void)a;\n        (void)n;",
        "relu": "Relu(a, a, n);",
        "relu6": "Maxs(a, a, 0.0f, n);\n        Mins(a, a, 6.0f, n);",
        "hardswish": (
            "// x * min(max(x + 3, 0), 6) / 6\n"
            "        for (int32_t off = 0; off < n; off += tmpLen) {\n"
            "            const int32_t m = n - off < tmpLen ? n - off : tmpLen;\n"
            "            LocalTensor<float> v = a[off];\n"
            "            Adds(tmp, v, 3.0f, m);\n"
            "            Maxs(tmp, tmp, 0.0f, m);\n"
            "            Mins(tmp, tmp, 6.0f, m);\n"
            "            Mul(v, v, tmp, m);\n"
            "            Muls(v, v, 1.0f / 6.0f, m);\n"
            "        }"),
    }
    return (f"    __aicore__ inline void {fn}(const LocalTensor<float>& a, int32_t n, "
            f"const LocalTensor<float>& tmp, int32_t tmpLen)\n"
            f"    {{\n        (void)tmp;\n        (void)tmpLen;\n        {bodies[act]}\n    }}\n")


def emit_kernel(plan: KernelPlan, block_name: str = "block") -> EmittedKernel:
    """The Ascend C source of one fused block, generated from its KernelPlan.

    Plans with PW on the cube are emitted as the vector-PW kernel of the same tile (the plan
    returned in `.plan` is then the vector-PW plan, whose buffers the kernel allocates; `.notes`
    says so): the cube variants need buffers the KernelPlan does not have yet (an L1 staging
    buffer for the DW result; on 910B the AIV epilogue's tiles) and data paths the emulator does
    not provide (UB->L1 and L0C->UB on 310P, the bias table on 910B), so they could not be
    verified here."""
    sym, op_type = kernel_names(block_name)
    if not plan.pw_on_cube:
        return _emit_vector(plan, sym, op_type, block_name, ())
    from dataclasses import replace

    from schedules.plan import check_budget, make_plan
    vplan = make_plan(plan.workload, replace(plan.tile, pw_engine="vector"), plan.soc)
    try:
        check_budget(vplan)
    except MegafuseError as e:
        raise MegafuseError(f"block {block_name}: the plan puts PW on the cube, which the Ascend C emitter "
                            f"generates as the vector-PW kernel, and that does not fit: {e}") from None
    how = ("DW result handed to the AIC through GM" if plan.handoff_via_gm else "DW result moved UB -> L1 on chip")
    notes = (f"the plan puts PW on the cube ({how}); the emitter generated the vector-PW kernel of the same "
             f"tile instead (UB {vplan.ub_bytes:,} of {vplan.soc.ub_usable_bytes:,} B), so the counters and "
             "GM bytes are those of the vector-PW plan",)
    return _emit_vector(vplan, sym, op_type, block_name, notes)


def _emit_vector(plan: KernelPlan, sym: str, op_type: str, block_name: str, notes: tuple) -> EmittedKernel:
    from fusion.costmodel import pw_weights_resident

    wl, soc = plan.workload, plan.soc
    if wl.dtype not in ("float16", "float32"):
        raise ValueError(f"unsupported dtype {wl.dtype}")
    fp16 = wl.dtype == "float16"
    ctype = "half" if fp16 else "float"
    tiling_struct = op_type + "Tiling"
    fields = tiling_fields(plan)
    args = kernel_args(plan)
    resident = pw_weights_resident(plan)
    ns = sym + "_plan"

    # ---- per-buffer constants and member declarations from the plan ---------------------
    consts, members, inits = [], [], []
    for b in plan.buffers:
        if b.scope != "UB":
            raise ValueError(f"buffer {b.name} in {b.scope}: the vector-PW kernel holds UB buffers only")
        cname = "k" + "".join(p.capitalize() for p in b.name.split("_"))
        consts.append(f"constexpr uint32_t {cname}Bytes = {b.bytes_per_copy};   "
                      f"// {b.name} {tuple(b.shape)} {b.dtype}: {b.role}")
        consts.append(f"constexpr uint32_t {cname}Copies = {b.copies};")
        if b.name in _UB_MEMBERS:
            member, decl, is_que = _UB_MEMBERS[b.name]
        else:  # a buffer this emitter does not use: allocate it anyway so the budget matches
            member, decl, is_que = (cname[1].lower() + cname[2:] + "Buf", "TBuf<TPosition::VECCALC>", False)
        decl = decl.replace("@COPIES@", f"{ns}::{cname}Copies")
        members.append(f"    {decl} {member};")
        if is_que:
            inits.append(f"        pipe.InitBuffer({member}, {ns}::{cname}Copies, {ns}::{cname}Bytes);")
        else:
            if b.copies != 1:
                raise ValueError(f"scratch buffer {b.name} with {b.copies} copies")
            inits.append(f"        pipe.InitBuffer({member}, {ns}::{cname}Bytes);")
    names = {b.name for b in plan.buffers}
    needed = {"x_tile", "w_dw", "b_dw", "dw_acc", "dw_out", "w_pw", "pw_acc", "b_pw", "y_tile"}
    if wl.residual:
        needed.add("res_tile")
    missing = needed - names
    if missing:
        raise ValueError(f"plan lacks buffers {sorted(missing)}")

    res_param = "GM_ADDR res, " if wl.residual else ""
    res_arg = "res, " if wl.residual else ""
    values = dict(
        VERSION=VERSION, SYM=sym, OPTYPE=op_type, BLOCK=block_name, TILING=tiling_struct, NS=ns,
        WORKLOAD=wl.describe(), TILE=plan.tile.describe(), SOC=soc.name, PLANKEY=plan.workload.key() + "/" + plan.tile.key(),
        T=ctype, PB=2 if not fp16 else 1, CIN=wl.cin,
        TH=plan.th, TW=plan.tw, IH=plan.in_tile_h, IW=plan.in_tile_w, CIB=plan.cib, COB=plan.cob,
        CISTEPS=plan.ci_steps, COSTEPS=plan.co_steps, NTILES=plan.n_tiles, CORES=plan.cores,
        UB=plan.ub_bytes, UBCAP=soc.ub_usable_bytes,
        ACT1=wl.act1, ACT2=wl.act2, RES="yes" if wl.residual else "no",
        RESIDENT="true" if resident else "false",
        DB="double" if plan.tile.double_buffer else "single",
        CONSTS="\n".join(consts), MEMBERS="\n".join(members), INITS="\n".join(inits),
        RES_PARAM=res_param, RES_ARG=res_arg,
        RES_GM_DECL="    GlobalTensor<T> resGm;\n" if wl.residual else "",
        RES_GM_SET=("        resGm.SetGlobalBuffer((__gm__ T*)res, t.batch * t.co1 * t.oh * t.ow * C0);\n"
                    if wl.residual else ""),
        RES_COPYIN=_RES_COPYIN if wl.residual else "",
        RES_ADD=_RES_ADD if wl.residual else "",
        RES_FREE="        resQue.FreeTensor(resT);\n" if wl.residual else "",
        ACT1_FN=_act_function("Act1", wl.act1), ACT2_FN=_act_function("Act2", wl.act2),
        CAST_DW=_CAST_DW_HALF if fp16 else _CAST_DW_FLOAT,
        CAST_Y=_CAST_Y_HALF if fp16 else _CAST_Y_FLOAT,
        TAP_LANES=_TAP_LANES_HALF if fp16 else _TAP_LANES_FLOAT,
        TASK_TYPE="" if soc.coupled else "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);  // a vector-core (AIV) kernel\n",
    )
    if plan.cob > 127:
        raise ValueError(f"cob {plan.cob} > 127 C0-blocks: the pixel-major pw_acc repeat stride (2*cob DataBlocks) "
                         "exceeds the 8-bit repeat stride")
    header = _fill(_TILING_HEADER, **values,
                   FIELDS="\n".join(f"    uint32_t {name};" for name, _ in fields),
                   FIELD_VALUES="\n".join(f"    {v},  // {name}" for name, v in fields),
                   NFIELDS=len(fields))
    source = _fill(_KERNEL, **values)
    return EmittedKernel(block_name, sym, op_type, plan, "vector-pw", source, header, tiling_struct, args,
                         fields, (Launch(sym, plan.cores, "AIV" if not soc.coupled else "AICORE",
                                         tuple(a.name for a in args), "fused DW -> PW (vector)"),),
                         0, notes)


_TILING_HEADER = r"""// Generated by megafuse @VERSION@ from the KernelPlan of block @BLOCK@ - do not edit.
// Tiling data of @SYM@ (@OPTYPE@): @WORKLOAD@
// tile @TILE@ on @SOC@: @NTILES@ tiles on @CORES@ cores, UB @UB@ / @UBCAP@ B
#pragma once
#include <cstdint>

// Filled by the host (host/@SYM@_host.cpp) and read by the kernel with GET_TILING_DATA.
struct @TILING@ {
@FIELDS@
};

// The values of this plan, in field order (the host's FillTiling writes these).
inline constexpr uint32_t k@TILING@Values[@NFIELDS@] = {
@FIELD_VALUES@
};

// Buffer sizes of the plan: InitBuffer(bytes per copy, copies), the UB budget the plan checked.
namespace @NS@ {
@CONSTS@
}  // namespace @NS@
"""

_TAP_LANES_HALF = r"""    // fp16 source: lane 16p + k of a 64-lane fp32 repeat is output pixel p, channel k; the source
    // pixel p sits p*sw DataBlocks further (blkStride = conv stride), so strides need no gather.
    __aicore__ inline void TapRow(const LocalTensor<float>& dst, const LocalTensor<T>& src, const T* wk)
    {
        const uint32_t full = tl.tw / 4, rem = tl.tw % 4;
        const UnaryRepeatParams rp(1, tl.sw, 8, 4 * tl.sw);
        for (uint32_t k = 0; k < C0; ++k) {
            for (uint32_t r0 = 0; r0 < full; r0 += MAX_REPEAT) {
                const uint32_t reps = full - r0 < MAX_REPEAT ? full - r0 : MAX_REPEAT;
                uint64_t mask[2] = {LaneBits(k, 4), 0};
                Axpy(dst[r0 * 4 * C0], src[r0 * 4 * tl.sw * C0], wk[k], mask, reps, rp);
            }
            if (rem != 0) {
                uint64_t mask[2] = {LaneBits(k, rem), 0};
                Axpy(dst[full * 4 * C0], src[full * 4 * tl.sw * C0], wk[k], mask, 1, rp);
            }
        }
    }
"""

_TAP_LANES_FLOAT = r"""    // fp32 source: channel k = 8h + kk uses lanes 16p + kk with both bases moved by h DataBlocks
    // (a 16-channel pixel is 2 DataBlocks); source pixel p is p*sw pixels further.
    __aicore__ inline void TapRow(const LocalTensor<float>& dst, const LocalTensor<T>& src, const T* wk)
    {
        const uint32_t full = tl.tw / 4, rem = tl.tw % 4;
        const UnaryRepeatParams rp(1, tl.sw, 8, 8 * tl.sw);
        for (uint32_t k = 0; k < C0; ++k) {
            const uint32_t h = (k / 8) * 8, kk = k % 8;
            for (uint32_t r0 = 0; r0 < full; r0 += MAX_REPEAT) {
                const uint32_t reps = full - r0 < MAX_REPEAT ? full - r0 : MAX_REPEAT;
                uint64_t mask[2] = {LaneBits(kk, 4), 0};
                Axpy(dst[r0 * 4 * C0 + h], src[r0 * 4 * tl.sw * C0 + h], wk[k], mask, reps, rp);
            }
            if (rem != 0) {
                uint64_t mask[2] = {LaneBits(kk, rem), 0};
                Axpy(dst[full * 4 * C0 + h], src[full * 4 * tl.sw * C0 + h], wk[k], mask, 1, rp);
            }
        }
    }
"""

_CAST_DW_HALF = "Cast(dwOut[c0 * thw * C0], acc, RoundMode::CAST_NONE, cb * thw * C0);"
_CAST_DW_FLOAT = "DataCopy(dwOut[c0 * thw * C0], acc, cb * thw * C0);"

_CAST_Y_HALF = r"""            // pixel-major fp32 (p, co, C0) -> NC1HWC0 fp16 (co, p, C0): one pixel per repeat
            for (uint32_t p0 = 0; p0 < thw; p0 += MAX_REPEAT) {
                const uint32_t reps = thw - p0 < MAX_REPEAT ? thw - p0 : MAX_REPEAT;
                Cast(yT[(c * thw + p0) * C0], acc[p0 * row + c * C0], RoundMode::CAST_NONE,
                     static_cast<uint64_t>(C0), reps, UnaryRepeatParams(1, 1, 1, 2 * cbo));
            }"""

_CAST_Y_FLOAT = r"""            // pixel-major fp32 (p, co, C0) -> NC1HWC0 (co, p, C0)
            DataCopyParams cp;
            cp.blockCount = thw;
            cp.blockLen = 2;
            cp.srcGap = 2 * (cbo - 1);
            cp.dstGap = 0;
            DataCopy(yT[c * thw * C0], acc[c * C0], cp);"""

_RES_COPYIN = r"""        LocalTensor<T> resT = resQue.AllocTensor<T>();
        for (uint32_t c = 0; c < cbo; ++c)
            DataCopy(resT[c * thw * C0], resGm[OutOffset(o0 + c)], OutRows(false));
        resQue.EnQue(resT);
"""

_RES_ADD = r"""        // + residual (after act2, as the model adds it): acc[p, c, :] += 1 * res[c, p, :]
        LocalTensor<T> resT = resQue.DeQue<T>();
        for (uint32_t c = 0; c < cbo; ++c) {
            for (uint32_t p0 = 0; p0 < thw; p0 += MAX_REPEAT) {
                const uint32_t reps = thw - p0 < MAX_REPEAT ? thw - p0 : MAX_REPEAT;
                Axpy(acc[p0 * row + c * C0], resT[(c * thw + p0) * C0], static_cast<T>(1),
                     static_cast<uint64_t>(C0), reps, UnaryRepeatParams(1, 1, 2 * cbo, PB));
            }
        }
"""

_KERNEL = r"""// Generated by megafuse @VERSION@ from the KernelPlan of block @BLOCK@ - do not edit.
//
// @SYM@ (@OPTYPE@): fused depthwise-separable block, NC1HWC0, @T@ storage, fp32 accumulation
//   workload  @WORKLOAD@
//   tile      @TILE@ on @SOC@; th x tw = @TH@ x @TW@, input tile @IH@ x @IW@, cib @CIB@, cob @COB@
//   loops     @NTILES@ tiles round-robin over @CORES@ cores; @CISTEPS@ ci-steps, @COSTEPS@ co-steps per tile
//   UB        @UB@ of @UBCAP@ B (@DB@ buffering); PW weights resident: @RESIDENT@
//   acts      @ACT1@ / @ACT2@, residual: @RES@
//   plan      @PLANKEY@
//
// Loop nest (schedules/dwsep_schedule.py):
//   for tile t = GetBlockIdx(); t < nTiles; t += GetBlockNum()
//     for ci-step: CopyInX (GM -> UB tile with halo, padding zero-filled) ; ComputeDw (taps, +b_dw, act1 -> dw_out)
//     for co-step: CopyInPw ([w_pw], [res]) ; ComputePw (MACs, +b_pw, act2, [+res] -> y) ; CopyOut (UB -> GM)
#include "kernel_operator.h"
#include "@SYM@_tiling.h"

using namespace AscendC;

namespace {
using T = @T@;                        // storage dtype of activations and weights
constexpr uint32_t C0 = 16;            // channels per block (NC1HWC0)
constexpr uint32_t PB = @PB@;          // DataBlocks (32 B) per pixel of C0 channels
constexpr uint32_t MAX_REPEAT = 255;   // repeat count limit of one vector instruction
constexpr uint32_t CIN = @CIN@;        // logical input channels (the padded tail contributes zeros)
constexpr bool RESIDENT_W_PW = @RESIDENT@;  // one co-step: the PW weights are loaded once per core

// Lanes {16p + k : p < pixels} of a 64-lane (fp32) repeat.
__aicore__ inline uint64_t LaneBits(uint32_t k, uint32_t pixels)
{
    uint64_t m = 0;
    for (uint32_t p = 0; p < pixels; ++p) m |= 1ull << (16 * p + k);
    return m;
}
}  // namespace

class Kernel@OPTYPE@ {
public:
    __aicore__ inline Kernel@OPTYPE@() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @RES_PARAM@GM_ADDR y,
                                const @TILING@& t)
    {
        tl = t;
        thw = t.th * t.tw;
        xGm.SetGlobalBuffer((__gm__ T*)x, t.batch * t.c1 * t.h * t.w * C0);
        wDwGm.SetGlobalBuffer((__gm__ T*)w_dw, t.c1 * t.kh * t.kw * C0);
        bDwGm.SetGlobalBuffer((__gm__ float*)b_dw, t.c1 * C0);
        wPwGm.SetGlobalBuffer((__gm__ T*)w_pw, t.co1 * t.c1 * C0 * C0);
        bPwGm.SetGlobalBuffer((__gm__ float*)b_pw, t.co1 * C0);
@RES_GM_SET@        yGm.SetGlobalBuffer((__gm__ T*)y, t.batch * t.co1 * t.oh * t.ow * C0);
        // one InitBuffer per KernelPlan buffer: bytes per copy x copies, as the plan budgeted
@INITS@
    }

    __aicore__ inline void Process()
    {
        LoadResident();
        for (uint32_t tile = GetBlockIdx(); tile < tl.nTiles; tile += GetBlockNum()) {
            SetTile(tile);
            for (uint32_t q = 0; q < tl.ciSteps; ++q) {
                CopyInX(q);
                ComputeDw(q);
            }
            // dw_out is complete; the PW MACs read it through the scalar unit
            SetFlag<HardEvent::V_S>(0);
            WaitFlag<HardEvent::V_S>(0);
            for (uint32_t q = 0; q < tl.coSteps; ++q) {
                CopyInPw(q);
                ComputePw(q);
                CopyOut(q);
            }
        }
        wDwQue.FreeTensor(wDw);
        bDwQue.FreeTensor(bDw);
        bPwQue.FreeTensor(bPw);
        if (RESIDENT_W_PW) wPwQue.FreeTensor(wPwRes);
    }

private:
    // ---- resident weights: w_dw, b_dw, b_pw (and w_pw with one co-step), once per core ----
    __aicore__ inline void LoadResident()
    {
        LocalTensor<T> w = wDwQue.AllocTensor<T>();
        DataCopy(w, wDwGm, tl.c1 * tl.kh * tl.kw * C0);
        wDwQue.EnQue(w);
        LocalTensor<float> b1 = bDwQue.AllocTensor<float>();
        DataCopy(b1, bDwGm, tl.c1 * C0);
        bDwQue.EnQue(b1);
        LocalTensor<float> b2 = bPwQue.AllocTensor<float>();
        DataCopy(b2, bPwGm, tl.co1 * C0);
        bPwQue.EnQue(b2);
        if (RESIDENT_W_PW) {
            LocalTensor<T> wp = wPwQue.AllocTensor<T>();
            LoadPwWeights(wp, 0, tl.co1);
            wPwQue.EnQue(wp);
            wPwRes = wPwQue.DeQue<T>();
        }
        wDw = wDwQue.DeQue<T>();
        bDw = bDwQue.DeQue<float>();
        bPw = bPwQue.DeQue<float>();
        // the DW taps are read by the scalar unit
        SetFlag<HardEvent::MTE2_S>(0);
        WaitFlag<HardEvent::MTE2_S>(0);
    }

    // GM [co1][c1][ci0][co0] -> UB (Cin, cbo*C0): row ci holds the cbo output blocks side by side
    __aicore__ inline void LoadPwWeights(const LocalTensor<T>& wp, uint32_t o0, uint32_t cbo)
    {
        if (cbo == 1) {
            DataCopy(wp, wPwGm[o0 * tl.c1 * C0 * C0], tl.c1 * C0 * C0);
            return;
        }
        DataCopyParams p;
        p.blockCount = tl.c1 * C0;
        p.blockLen = PB;
        p.srcGap = 0;
        p.dstGap = (cbo - 1) * PB;
        for (uint32_t c = 0; c < cbo; ++c) DataCopy(wp[c * C0], wPwGm[(o0 + c) * tl.c1 * C0 * C0], p);
    }

    // ---- tile geometry ------------------------------------------------------------------
    __aicore__ inline void SetTile(uint32_t tile)
    {
        const uint32_t perImage = tl.tilesH * tl.tilesW;
        n = tile / perImage;
        const uint32_t ht = (tile % perImage) / tl.tilesW, wt = tile % tl.tilesW;
        oh0 = ht * tl.th;
        ow0 = wt * tl.tw;
        ohv = tl.oh - oh0 < tl.th ? tl.oh - oh0 : tl.th;
        owv = tl.ow - ow0 < tl.tw ? tl.ow - ow0 : tl.tw;
        ih0 = static_cast<int32_t>(oh0 * tl.sh) - static_cast<int32_t>(tl.padTop);
        iw0 = static_cast<int32_t>(ow0 * tl.sw) - static_cast<int32_t>(tl.padLeft);
        const int32_t rHi = Min(ih0 + static_cast<int32_t>(tl.ih), static_cast<int32_t>(tl.h));
        const int32_t cHi = Min(iw0 + static_cast<int32_t>(tl.iw), static_cast<int32_t>(tl.w));
        rLo = Max(ih0, 0);
        cLo = Max(iw0, 0);
        ihv = rHi > rLo ? static_cast<uint32_t>(rHi - rLo) : 0;
        iwv = cHi > cLo ? static_cast<uint32_t>(cHi - cLo) : 0;
        pad = ihv != tl.ih || iwv != tl.iw;
    }

    __aicore__ static inline int32_t Min(int32_t a, int32_t b) { return a < b ? a : b; }
    __aicore__ static inline int32_t Max(int32_t a, int32_t b) { return a > b ? a : b; }

    // ---- DW -----------------------------------------------------------------------------
    __aicore__ inline void CopyInX(uint32_t q)
    {
        const uint32_t c0 = q * tl.cib, cb = tl.c1 - c0 < tl.cib ? tl.c1 - c0 : tl.cib;
        LocalTensor<T> x = xQue.AllocTensor<T>();
        if (pad) {  // padding and rows/cols past the image are zeros in UB, never read from GM
            Duplicate(x, static_cast<T>(0), cb * tl.ih * tl.iw * C0);
            SetFlag<HardEvent::V_MTE2>(0);
            WaitFlag<HardEvent::V_MTE2>(0);
        }
        if (ihv > 0 && iwv > 0) {
            // one DMA per channel block: ihv rows of iwv pixels (iwv*32 B per fp16 row: DataBlock multiples)
            DataCopyParams p;
            p.blockCount = ihv;
            p.blockLen = iwv * PB;
            p.srcGap = (tl.w - iwv) * PB;
            p.dstGap = (tl.iw - iwv) * PB;
            const uint32_t ub0 = (static_cast<uint32_t>(rLo - ih0) * tl.iw + static_cast<uint32_t>(cLo - iw0)) * C0;
            for (uint32_t c = 0; c < cb; ++c) {
                const uint32_t gm = (((n * tl.c1 + c0 + c) * tl.h + rLo) * tl.w + cLo) * C0;
                DataCopy(x[c * tl.ih * tl.iw * C0 + ub0], xGm[gm], p);
            }
        }
        xQue.EnQue(x);
    }

@TAP_LANES@
    __aicore__ inline void ComputeDw(uint32_t q)
    {
        const uint32_t c0 = q * tl.cib, cb = tl.c1 - c0 < tl.cib ? tl.c1 - c0 : tl.cib;
        LocalTensor<T> x = xQue.DeQue<T>();
        LocalTensor<float> acc = dwAccBuf.Get<float>();
        LocalTensor<T> dwOut = dwOutBuf.Get<T>();
        for (uint32_t c = 0; c < cb; ++c) {
            const uint32_t cg = c0 + c;
            LocalTensor<float> accC = acc[c * thw * C0];
            Duplicate(accC, 0.0f, thw * C0);
            for (uint32_t i = 0; i < tl.kh; ++i) {
                for (uint32_t j = 0; j < tl.kw; ++j) {
                    T wk[C0];
                    for (uint32_t k = 0; k < C0; ++k) wk[k] = wDw.GetValue(((cg * tl.kh + i) * tl.kw + j) * C0 + k);
                    for (uint32_t r = 0; r < tl.th; ++r)
                        TapRow(accC[r * tl.tw * C0], x[((c * tl.ih + r * tl.sh + i) * tl.iw + j) * C0], wk);
                }
            }
            // + b_dw[cg]: one pixel (16 lanes) per repeat, the bias row repeated (repStride 0)
            for (uint32_t p0 = 0; p0 < thw; p0 += MAX_REPEAT) {
                const uint32_t reps = thw - p0 < MAX_REPEAT ? thw - p0 : MAX_REPEAT;
                Add(accC[p0 * C0], accC[p0 * C0], bDw[cg * C0], static_cast<uint64_t>(C0), reps,
                    BinaryRepeatParams(1, 1, 1, 2, 2, 0));
            }
        }
        Act1(acc, static_cast<int32_t>(cb * thw * C0), pwAccBuf.Get<float>(), static_cast<int32_t>(PwAccLen()));
        @CAST_DW@
        xQue.FreeTensor(x);
    }

@ACT1_FN@
@ACT2_FN@
    __aicore__ inline uint32_t PwAccLen() const { return @NS@::kPwAccBytes / sizeof(float); }
    __aicore__ inline uint32_t DwAccLen() const { return @NS@::kDwAccBytes / sizeof(float); }

    // ---- PW -----------------------------------------------------------------------------
    __aicore__ inline uint32_t OutOffset(uint32_t cg) const
    {
        return (((n * tl.co1 + cg) * tl.oh + oh0) * tl.ow + ow0) * C0;
    }

    // valid rows of one output block: UB (th x tw) <-> GM (oh x ow); toGm picks the gap sides
    __aicore__ inline DataCopyParams OutRows(bool toGm) const
    {
        DataCopyParams p;
        p.blockCount = ohv;
        p.blockLen = owv * PB;
        const uint32_t ubGap = (tl.tw - owv) * PB, gmGap = (tl.ow - owv) * PB;
        p.srcGap = toGm ? ubGap : gmGap;
        p.dstGap = toGm ? gmGap : ubGap;
        return p;
    }

    __aicore__ inline void CopyInPw(uint32_t q)
    {
        const uint32_t o0 = q * tl.cob, cbo = tl.co1 - o0 < tl.cob ? tl.co1 - o0 : tl.cob;
        if (!RESIDENT_W_PW) {
            LocalTensor<T> wp = wPwQue.AllocTensor<T>();
            LoadPwWeights(wp, o0, cbo);
            wPwQue.EnQue(wp);
        }
@RES_COPYIN@    }

    __aicore__ inline void ComputePw(uint32_t q)
    {
        const uint32_t o0 = q * tl.cob, cbo = tl.co1 - o0 < tl.cob ? tl.co1 - o0 : tl.cob;
        const uint32_t row = cbo * C0;  // pw_acc is pixel-major: (pixel, co block, C0)
        LocalTensor<T> wp = RESIDENT_W_PW ? wPwRes : wPwQue.DeQue<T>();
        LocalTensor<T> dwOut = dwOutBuf.Get<T>();
        LocalTensor<float> acc = pwAccBuf.Get<float>();
        Duplicate(acc, 0.0f, thw * row);
        // acc[p, :, :] += dw_out[p, ci] * w_pw[ci, :, :]  (fp32, input channels in order)
        for (uint32_t ci = 0; ci < CIN; ++ci) {
            const LocalTensor<T> wRow = wp[ci * row];
            const uint32_t base = (ci / C0) * thw * C0 + ci % C0;
            for (uint32_t p = 0; p < thw; ++p) {
                const T s = dwOut.GetValue(base + p * C0);
                Axpy(acc[p * row], wRow, s, static_cast<int32_t>(row));
            }
        }
        // + b_pw: up to 4 output blocks (64 lanes) per repeat, one pixel per repeat
        for (uint32_t g = 0; g < cbo; g += 4) {
            const uint32_t lanes = (cbo - g < 4 ? cbo - g : 4) * C0;
            for (uint32_t p0 = 0; p0 < thw; p0 += MAX_REPEAT) {
                const uint32_t reps = thw - p0 < MAX_REPEAT ? thw - p0 : MAX_REPEAT;
                Add(acc[p0 * row + g * C0], acc[p0 * row + g * C0], bPw[(o0 + g) * C0], static_cast<uint64_t>(lanes),
                    reps, BinaryRepeatParams(1, 1, 1, 2 * cbo, 2 * cbo, 0));
            }
        }
        Act2(acc, static_cast<int32_t>(thw * row), dwAccBuf.Get<float>(), static_cast<int32_t>(DwAccLen()));
@RES_ADD@        LocalTensor<T> yT = yQue.AllocTensor<T>();
        for (uint32_t c = 0; c < cbo; ++c) {
@CAST_Y@
        }
        yQue.EnQue(yT);
        if (!RESIDENT_W_PW) wPwQue.FreeTensor(wp);
@RES_FREE@    }

    __aicore__ inline void CopyOut(uint32_t q)
    {
        const uint32_t o0 = q * tl.cob, cbo = tl.co1 - o0 < tl.cob ? tl.co1 - o0 : tl.cob;
        LocalTensor<T> yT = yQue.DeQue<T>();
        for (uint32_t c = 0; c < cbo; ++c) DataCopy(yGm[OutOffset(o0 + c)], yT[c * thw * C0], OutRows(true));
        yQue.FreeTensor(yT);
    }

    TPipe pipe;
@MEMBERS@
    GlobalTensor<T> xGm, wDwGm, wPwGm, yGm;
    GlobalTensor<float> bDwGm, bPwGm;
@RES_GM_DECL@    LocalTensor<T> wDw, wPwRes;
    LocalTensor<float> bDw, bPw;
    @TILING@ tl;
    uint32_t thw = 0;
    uint32_t n = 0, oh0 = 0, ow0 = 0, ohv = 0, owv = 0, ihv = 0, iwv = 0;
    int32_t ih0 = 0, iw0 = 0, rLo = 0, cLo = 0;
    bool pad = false;
};

extern "C" __global__ __aicore__ void @SYM@(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @RES_PARAM@GM_ADDR y,
                                            GM_ADDR workspace, GM_ADDR tiling)
{
@TASK_TYPE@    GET_TILING_DATA_WITH_STRUCT(@TILING@, t, tiling);
    Kernel@OPTYPE@ op;
    op.Init(x, w_dw, b_dw, w_pw, b_pw, @RES_ARG@y, t);
    op.Process();
}
"""
