"""Emit the Ascend C kernel of one fused DW→PW block from its KernelPlan.

Everything that shapes the code comes from the plan: the tiling struct's values (shapes, tile
sizes, loop trip counts, the core split), the InitBuffer sizes and queue depths (one per plan
buffer the kernel allocates, `bytes_per_copy` × `copies`, so the emulator's budget checks enforce
the plan's budget on every memory), single or double buffering, resident or streamed PW weights,
the activations, the residual, the storage dtype and the PW engine. No kernel is written by hand
per shape; a different tile gives different code.

Three variants, one per data flow of fusion/costmodel/:

  vector-pw    PW on the vector unit (any SoC). One core per plan core:
                 for tile t = GetBlockIdx(); t < nTiles; t += GetBlockNum()
                   for ci-step: CopyInX (GM -> UB tile with halo, padding zero-filled), ComputeDw
                   for co-step: CopyInPw ([w_pw], [res]), ComputePw (MACs, bias, act2, [+res]), CopyOut
  cube-pw      PW on the cube of a coupled AI core (310P), same loop over tiles:
                   for ci-step: CopyInX, ComputeDw                      (dw_out in UB)
                   StageA: dw_out UB -> L1 (NZ, rows padded to 16) -> L0A (LoadData)
                   for co-step: CopyInPw (w_pw GM -> L1, [res]), Mma (L1 -> L0B LoadData, Mmad -> L0C),
                                Epilogue (per output block L0C -> UB fp32, bias, act2, [+res], cast),
                                CopyOut
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
  DW tap  arch 2201: one MulAddDst per tap row (fp16; two for fp32), the 16 taps one DataBlock
          read by every pixel of the repeat (src1 strides 0): one vector instruction per tap
          row, as the cost model counts. Arch 2002 has no MulAddDst: one masked Axpy per channel
          lane k (lanes {16p + k} of a 64-lane fp32 repeat are 4 output pixels, the scalar is
          w_dw[c, i, j, k]), 16x the instructions. Either way the source block stride is the
          conv stride, so strided convs need no gather.
  PW      acc[p, co, :] += dw_out[p, ci] · w_pw[ci, co, :] — one Axpy per (input channel,
          pixel) covering every output block of the co-step (pw_acc is laid out pixel-major,
          w_pw in UB as (Cin, cob·C0), the plan's shape): no vector op broadcasts one element
          over a DataBlock, so this costs thw·Cin instructions per co-step where the cost model
          counts Cin·cob; the cube path is the PW engine that matches the model.

Cube layouts (fusion/ascendc_emu/README.md): with M1 = th·tw padded to 16 rows / 16,
  L1 A     (c1, M1·16, C0) NZ: one C0 column block per input-channel block, all pixels;
  L0A      fractal (mi, ki) at mi·c1 + ki (LoadData startIndex mi, srcStride M1 per row block);
  L1 B     the FRACTAL_Z weights as they are in GM: fractal (o, ki) = w_pw[o, ki] (k rows x n cols);
  L0B      fractal (ki, nj) at ki·cob + nj, each transposed (ifTranspose);
  L0C      (cob, M1·16, C0): per output block all pixels x 16 — the NC1HWC0 order of the y tile.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from fusion.errors import MegafuseError
from fusion.ir import C0
from schedules.plan import KernelPlan

VERSION = "0.2.0"
MAX_REPEAT = 255
# arch 2201 reserves this much system workspace in front of the user workspace that
# GetUserWorkspace() returns [devkit kernel_utils_constants.h RESERVED_WORKSPACE, 16 MiB]
SYSTEM_WORKSPACE_2201 = 16 * 1024 * 1024
MIX_LAG = 2       # rounds an AIV runs ahead of its AIC (outstanding cross-core flags <= MIX_LAG + 1)
FLAG_DW, FLAG_PW = 1, 2   # cross-core flag ids: DW result handed off / PW of the round done

VARIANTS = {
    "vector-pw": "DW and PW on the vector unit",
    "cube-pw": "DW on the vector unit, PW on the cube of the same AI core (UB -> L1 on chip, L0C -> UB)",
    "cube-pw-mix": "MIX kernel: DW on the AIVs, PW on the AICs, the DW result handed over through GM",
}


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
    """One kernel launch of a block (every variant is one launch)."""
    symbol: str
    block_dim: int         # cores (AIV / AI cores), or AICs of a MIX launch
    core: str              # AIV | AICORE | MIX_AIC_1_2
    args: tuple[str, ...]  # names of the block's ArgSpecs, in parameter order
    what: str
    kernel_type: str | None = None   # how the host launches it on 2201 (emulator run(kernel_type=...))


@dataclass(frozen=True)
class EmittedKernel:
    block: str
    symbol: str
    op_type: str
    plan: KernelPlan
    variant: str                           # vector-pw | cube-pw | cube-pw-mix (see VARIANTS)
    source: str                            # kernel/<symbol>.cpp
    tiling_header: str                     # kernel/<symbol>_tiling.h
    tiling_struct: str
    args: tuple[ArgSpec, ...]              # the kernel's GM parameters in order
    tiling_fields: tuple[tuple[str, int], ...]
    launches: tuple[Launch, ...]
    workspace_bytes: int = 0               # user workspace the kernel uses (the 910B hand-off slots)
    system_workspace_bytes: int = 0        # reserved in front of it on the device (GetUserWorkspace)
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

    @property
    def device_workspace_bytes(self) -> int:
        """What the host allocates for the workspace argument on a device."""
        return self.workspace_bytes + self.system_workspace_bytes if self.workspace_bytes else 0

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
                "1x1 weights [co1, ci1, ci0, co0] (FRACTAL_Z of a 1x1 conv: each [ci0, co0] block is the "
                "cube's k x n fractal as L1 holds it), BN2 folded in"),
        ArgSpec("b_pw", "weight", "float32", "C1C0", (co1, C0), "folded BN2 bias"),
    ]
    if wl.residual:
        args.append(ArgSpec("res", "input", dt, "NC1HWC0", (n, co1, wl.out_height, wl.out_width, C0),
                            "residual added after act2"))
    args.append(ArgSpec("y", "output", dt, "NC1HWC0", (n, co1, wl.out_height, wl.out_width, C0),
                        f"block output, {wl.cout} channels zero-padded to {co1 * C0}"))
    if plan.handoff_via_gm:
        dw, pre = plan.handoff_slot_elems
        what = (f"AIV -> AIC hand-off: {plan.n_tiles} tiles x (DW result {dw} elements"
                + (f" + pre-activation {pre} elements" if pre else "") + f") {dt}")
        args.append(ArgSpec("workspace", "workspace", "uint8", "ND", (plan.handoff_bytes,), what))
    else:
        args.append(ArgSpec("workspace", "workspace", "uint8", "ND", (0,), "unused by this kernel"))
    args.append(ArgSpec("tiling", "tiling", "uint8", "ND", (len(tiling_fields(plan)) * 4,), "tiling struct"))
    return tuple(args)


# ---------------------------------------------------------------------------------------------
# C++ text
# ---------------------------------------------------------------------------------------------
def _sub(template: str, **values) -> str:
    """Fills the @KEY@ slots given (until none is left: a value may hold slots of its own)."""
    out = template
    for _ in range(8):
        before = out
        for k, v in values.items():
            out = out.replace("@" + k + "@", str(v))
        if out == before:
            break
    return out


def _fill(template: str, **values) -> str:
    out = _sub(template, **values)
    left = re.findall(r"@[A-Z_0-9]+@", out)
    if left:
        raise AssertionError(f"unfilled template keys {sorted(set(left))}")
    return out


# member of the kernel class for each plan buffer (name, scope): (member, C++ declaration, queue?)
_MEMBERS = {
    ("x_tile", "UB"): ("xQue", "TQue<TPosition::VECIN, @COPIES@>", True),
    ("w_dw", "UB"): ("wDwQue", "TQue<TPosition::VECIN, 1>", True),
    ("b_dw", "UB"): ("bDwQue", "TQue<TPosition::VECIN, 1>", True),
    ("dw_acc", "UB"): ("dwAccBuf", "TBuf<TPosition::VECCALC>", False),
    ("dw_out", "UB"): ("dwOutBuf", "TBuf<TPosition::VECCALC>", False),
    ("w_pw", "UB"): ("wPwQue", "TQue<TPosition::VECIN, @COPIES@>", True),
    ("pw_acc", "UB"): ("pwAccBuf", "TBuf<TPosition::VECCALC>", False),
    ("b_pw", "UB"): ("bPwQue", "TQue<TPosition::VECIN, 1>", True),
    ("res_tile", "UB"): ("resQue", "TQue<TPosition::VECIN, @COPIES@>", True),
    ("y_tile", "UB"): ("yQue", "TQue<TPosition::VECOUT, @COPIES@>", True),
    ("act_tmp", "UB"): ("actTmpBuf", "TBuf<TPosition::VECCALC>", False),
    ("pre_tile", "UB"): ("preQue", "TQue<TPosition::VECIN, @COPIES@>", True),
    # UB -> L1 is an MTE3 move on 310P: explicit flags, not an A1 queue (whose events assume MTE2)
    ("dw_out_l1", "L1"): ("aL1Buf", "TBuf<TPosition::A1>", False),
    ("dw_in_l1", "L1"): ("aL1Que", "TQue<TPosition::A1, @COPIES@>", True),
    ("a_l0a", "L0A"): ("aL0Que", "TQue<TPosition::A2, 1>", True),
    ("w_pw_l1", "L1"): ("wL1Que", "TQue<TPosition::B1, @COPIES@>", True),
    ("b_l0b", "L0B"): ("bL0Que", "TQue<TPosition::B2, 1>", True),
    ("pw_acc", "L0C"): ("cQue", "TQue<TPosition::CO1, 1>", True),
    ("b_pw_l1", "L1"): ("bPwL1Que", "TQue<TPosition::C1, 1>", True),
    ("bias_bt", "BT"): ("btQue", "TQue<TPosition::C2, 1>", True),
}


def _const_name(buffer_name: str) -> str:
    return "k" + "".join(p.capitalize() for p in buffer_name.split("_"))


def _buffer_code(plan: KernelPlan, ns: str, scopes: set[str]) -> tuple[list[str], list[str]]:
    """(member declarations, InitBuffer lines) of the plan's kernel buffers in `scopes`."""
    members, inits = [], []
    for b in plan.kernel_buffers:
        if b.scope not in scopes:
            continue
        cname = _const_name(b.name)
        if (b.name, b.scope) not in _MEMBERS:
            raise ValueError(f"plan buffer {b.name} ({b.scope}) has no kernel member")
        member, decl, is_que = _MEMBERS[b.name, b.scope]
        members.append(f"    {decl.replace('@COPIES@', f'{ns}::{cname}Copies')} {member};")
        if is_que:
            inits.append(f"        pipe.InitBuffer({member}, {ns}::{cname}Copies, {ns}::{cname}Bytes);")
        else:
            if b.copies != 1:
                raise ValueError(f"scratch buffer {b.name} with {b.copies} copies")
            inits.append(f"        pipe.InitBuffer({member}, {ns}::{cname}Bytes);")
    return members, inits


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
    """The Ascend C source of one fused block, generated from its KernelPlan: the vector-PW
    kernel, or the cube kernel of the plan's SoC when the plan puts PW on the cube."""
    wl, soc = plan.workload, plan.soc
    if wl.dtype not in ("float16", "float32"):
        raise ValueError(f"unsupported dtype {wl.dtype}")
    variant = variant_of(plan)
    if variant != "vector-pw" and wl.dtype != "float16":
        raise MegafuseError(f"block {block_name}: PW on the cube is emitted for float16 only (this plan is "
                            f"{wl.dtype}; the cube's fp32 operands use 16x8 fractals); use --pw-engine vector")
    if variant == "cube-pw-mix" and plan.aic_ratio != 2:
        raise MegafuseError(f"block {block_name}: the MIX kernel pairs 2 AIVs with each AIC, but {soc.name} "
                            f"has {soc.vector_cores} AIV / {soc.cube_cores} AIC")
    if plan.cob > 127 and variant == "vector-pw":
        raise ValueError(f"cob {plan.cob} > 127 C0-blocks: the pixel-major pw_acc repeat stride (2*cob DataBlocks) "
                         "exceeds the 8-bit repeat stride")
    sym, op_type = kernel_names(block_name)
    return _emit(plan, sym, op_type, block_name, variant)


def _emit(plan: KernelPlan, sym: str, op_type: str, block_name: str, variant: str) -> EmittedKernel:

    wl, soc = plan.workload, plan.soc
    fp16 = wl.dtype == "float16"
    mad = soc.arch == "2201"   # DW taps by MulAddDst (Atlas A2/A3); 2002 lacks it: Axpy per lane
    tiling_struct = op_type + "Tiling"
    fields = tiling_fields(plan)
    args = kernel_args(plan)
    resident = plan.pw_weights_resident
    ns = sym + "_plan"
    bufs = plan.kernel_buffers
    names = {b.name for b in bufs}

    consts = []
    for b in bufs:
        cname = _const_name(b.name)
        consts.append(f"constexpr uint32_t {cname}Bytes = {b.bytes_per_copy};   "
                      f"// {b.name} {b.scope} {tuple(b.shape)} {b.dtype}: {b.role}")
        consts.append(f"constexpr uint32_t {cname}Copies = {b.copies};")
    needed = {"x_tile", "w_dw", "b_dw", "dw_acc", "dw_out"}
    needed |= {"w_pw", "pw_acc", "b_pw", "y_tile"} if variant == "vector-pw" else {"a_l0a", "w_pw_l1", "b_l0b", "pw_acc"}
    if variant == "cube-pw":
        needed |= {"dw_out_l1", "b_pw", "y_tile"}
    if variant == "cube-pw-mix":
        needed |= {"dw_in_l1"} | ({"b_pw_l1", "bias_bt"} if plan.fixpipe_epilogue else {"pre_tile", "b_pw", "y_tile"})
    if wl.residual:
        needed.add("res_tile")
    missing = needed - names
    if missing:
        raise ValueError(f"plan lacks buffers {sorted(missing)} for the {variant} kernel")

    res = wl.residual
    tmp = ("actTmpBuf.Get<float>(), static_cast<int32_t>(@NS@::kActTmpBytes / sizeof(float))"
           if "act_tmp" in names else "acc, 0")
    scope_use = ", ".join(f"{s} {used:,}/{plan.capacity(s):,} B" for s, used in plan.scope_bytes.items())
    values = dict(
        VERSION=VERSION, SYM=sym, OPTYPE=op_type, BLOCK=block_name, TILING=tiling_struct,
        WORKLOAD=wl.describe(), TILE=plan.tile.describe(), SOC=soc.name,
        PLANKEY=plan.workload.key() + "/" + plan.tile.key(), VARIANT=variant, VARIANT_WHAT=VARIANTS[variant],
        T="half" if fp16 else "float", PB=2 if not fp16 else 1, CIN=wl.cin,
        TH=plan.th, TW=plan.tw, IH=plan.in_tile_h, IW=plan.in_tile_w, CIB=plan.cib, COB=plan.cob,
        CISTEPS=plan.ci_steps, COSTEPS=plan.co_steps, NTILES=plan.n_tiles, CORES=plan.cores,
        CORE_KIND={"vector-pw": "AIV cores" if not soc.coupled else "AI cores", "cube-pw": "AI cores",
                   "cube-pw-mix": f"AIVs, served by {plan.aic_cores} AICs (2 AIVs each)"}[variant],
        MEMORY=f"{scope_use} ({'double' if plan.tile.double_buffer else 'single'} buffering)",
        ACT1=wl.act1, ACT2=wl.act2, RES="yes" if res else "no", RESIDENT="true" if resident else "false",
        LOOPNEST=_LOOPNEST[variant],
        EXTRA=_EXTRA_MIX if variant == "cube-pw-mix" else "",
        RES_PARAM="GM_ADDR res, " if res else "", RES_ARG="res, " if res else "",
        RES_GM_DECL="    GlobalTensor<T> resGm;\n" if res else "",
        RES_GM_SET=("        resGm.SetGlobalBuffer((__gm__ T*)res, t.batch * t.co1 * t.oh * t.ow * C0);\n"
                    if res else ""),
        RES_COPYIN=_RES_COPYIN if res else "",
        ACT1_FN=_act_function("Act1", wl.act1), ACT2_FN=_act_function("Act2", wl.act2),
        CAST_DW=_CAST_DW_HALF if fp16 else _CAST_DW_FLOAT,
        TAP_LANES=((_TAP_MAD_HALF if fp16 else _TAP_MAD_FLOAT) if mad else
                   (_TAP_LANES_HALF if fp16 else _TAP_LANES_FLOAT)),
        TAP_CALL=_TAP_CALL_VECTOR if mad else _TAP_CALL_LANES,
        GEOMETRY=_GEOMETRY, GEOM_MEMBERS=_GEOM_MEMBERS,
        RES_EPI_PARAM="const LocalTensor<T>& r, " if res else "",
        RES_EPI_ADD=("        Axpy(acc, r, static_cast<T>(1), static_cast<int32_t>(thw * C0));  // + residual, after act2\n"
                     if res else ""),
    )
    if variant == "vector-pw":
        members, inits = _buffer_code(plan, ns, {"UB"})
        if len(members) != len(bufs):
            raise ValueError("the vector-PW kernel holds UB buffers only")
        body = _sub(_VECTOR_CLASS, INIT_ONE_CORE=_INIT_ONE_CORE, DW=_DW, ACT1_TMP="pwAccBuf.Get<float>(), static_cast<int32_t>(PwAccLen())",
                     MEMBERS="\n".join(members), INITS="\n".join(inits), RES_ADD=_RES_ADD if res else "",
                     RES_FREE="        resQue.FreeTensor(resT);\n" if res else "",
                     CAST_Y=_CAST_Y_HALF if fp16 else _CAST_Y_FLOAT)
        entry = _ENTRY.replace("@TASK_TYPE@", "" if soc.coupled else
                               "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);  // a vector-core (AIV) kernel\n")
        launch = Launch(sym, plan.cores, "AICORE" if soc.coupled else "AIV", tuple(a.name for a in args),
                        "fused DW -> PW (vector)")
    elif variant == "cube-pw":
        members, inits = _buffer_code(plan, ns, {"UB", "L1", "L0A", "L0B", "L0C"})
        if len(members) != len(bufs):
            raise ValueError("the 310P cube kernel holds UB / L1 / L0 buffers only")
        body = _sub(_CUBE_CLASS, INIT_ONE_CORE=_INIT_ONE_CORE, DW=_DW, ACT1_TMP=tmp, ACT2_TMP=tmp, EPILOGUE_BLOCK=_EPILOGUE_BLOCK,
                     MEMBERS="\n".join(members), INITS="\n".join(inits), LOAD_A=_LOAD_A, LOAD_B=_LOAD_B,
                     RES_EPI_DEQ="        LocalTensor<T> resT = resQue.DeQue<T>();\n" if res else "",
                     RES_EPI_ARG="resT[j * thw * C0], " if res else "",
                     RES_EPI_FREE="        resQue.FreeTensor(resT);\n" if res else "")
        entry = _ENTRY.replace("@TASK_TYPE@", "")
        launch = Launch(sym, plan.cores, "AICORE", tuple(a.name for a in args),
                        "fused DW (vector) -> PW (cube) on each AI core")
    else:
        fix = plan.fixpipe_epilogue
        aiv_members, aiv_inits = _buffer_code(plan, ns, {"UB"})
        aic_members, aic_inits = _buffer_code(plan, ns, {"L1", "L0A", "L0B", "L0C", "BT"})
        if len(aiv_members) + len(aic_members) != len(bufs):
            raise ValueError("the MIX kernel holds UB (AIV) and L1 / L0 / BT (AIC) buffers only")
        aiv = _sub(_AIV_CLASS, DW=_DW, ACT1_TMP=tmp, ACT2_TMP=tmp, MEMBERS="\n".join(aiv_members),
                    INITS="\n".join(aiv_inits), EPILOGUE_BLOCK=_EPILOGUE_BLOCK if not fix else "",
                    AIV_EPILOGUE=_AIV_EPILOGUE if not fix else "",
                    B_PW_PARAM="" if fix else "GM_ADDR b_pw, ",
                    B_PW_SET="" if fix else "        bPwGm.SetGlobalBuffer((__gm__ float*)b_pw, t.co1 * C0);\n",
                    B_PW_LOAD="" if fix else _B_PW_LOAD, B_PW_FREE="" if fix else "        bPwQue.FreeTensor(bPw);\n",
                    B_PW_DECL="" if fix else "    GlobalTensor<float> bPwGm;\n    LocalTensor<float> bPw;\n",
                    FINISH_EPI="        (void)k;\n        (void)mine;\n" if fix else _FINISH_EPI,
                    PRE_SET="" if fix else "        preGm.SetGlobalBuffer(usr + PreOffset(), t.nTiles * t.co1 * thw * C0);\n",
                    PRE_DECL="" if fix else "    GlobalTensor<T> preGm;\n",
                    RES_PARAM_AIV="GM_ADDR res, " if res and not fix else "",
                    RES_GM_SET_AIV=values["RES_GM_SET"] if not fix else "",
                    RES_GM_DECL_AIV=values["RES_GM_DECL"] if not fix else "",
                    RES_EPI_DEQ="        LocalTensor<T> resT = resQue.DeQue<T>();\n" if res else "",
                    RES_EPI_ARG="resT[j * thw * C0], " if res else "",
                    RES_EPI_FREE="        resQue.FreeTensor(resT);\n" if res else "")
        aic = _sub(_AIC_CLASS, MEMBERS="\n".join(aic_members), INITS="\n".join(aic_inits), LOAD_A=_LOAD_A,
                    LOAD_B=_LOAD_B,
                    B_PW_PARAM="GM_ADDR b_pw, " if fix else "",
                    B_PW_SET="        bPwGm.SetGlobalBuffer((__gm__ float*)b_pw, t.co1 * C0);\n" if fix else "",
                    B_PW_DECL="    GlobalTensor<float> bPwGm;\n    LocalTensor<float> bPwL1;\n" if fix else "",
                    B_PW_LOAD=_AIC_B_PW_LOAD if fix else "", B_PW_FREE="        bPwL1Que.FreeTensor(bPwL1);\n" if fix else "",
                    BIAS_BT=_AIC_BIAS_BT if fix else "", MMAD=_AIC_MMAD_BIAS if fix else _AIC_MMAD,
                    FIXPIPE=_AIC_FIXPIPE_Y if fix else _AIC_FIXPIPE_PRE,
                    PRE_SET="" if fix else "        preGm.SetGlobalBuffer(usr + PreOffset(), t.nTiles * t.co1 * thw * C0);\n",
                    PRE_DECL="" if fix else "    GlobalTensor<T> preGm;\n",
                    RELU="true" if wl.act2 == "relu" else "false")
        body = aiv + aic
        entry = _sub(_ENTRY_MIX, AIV_ARGS=("x, w_dw, b_dw, " + ("" if fix else "b_pw, ")
                                            + ("res, " if res and not fix else "") + "y, usr, t"),
                      AIC_ARGS="w_pw, " + ("b_pw, " if fix else "") + "y, usr, t")
        launch = Launch(sym, plan.aic_cores, "MIX_AIC_1_2", tuple(a.name for a in args),
                        f"fused DW (AIV) -> PW (AIC) MIX kernel, {plan.cores} AIVs / {plan.aic_cores} AICs",
                        "mix_aic_1_2")
    values["NS"] = ns
    header = _fill(_TILING_HEADER, **values, FIELDS="\n".join(f"    uint32_t {name};" for name, _ in fields),
                   FIELD_VALUES="\n".join(f"    {v},  // {name}" for name, v in fields),
                   NFIELDS=len(fields), CONSTS="\n".join(consts))
    source = _fill(_PRELUDE + body + entry, **values)
    mix = variant == "cube-pw-mix"
    return EmittedKernel(block_name, sym, op_type, plan, variant, source, header, tiling_struct, args, fields,
                         (launch,), plan.handoff_bytes if mix else 0,
                         SYSTEM_WORKSPACE_2201 if mix else 0, ())


_TILING_HEADER = r"""// Generated by megafuse @VERSION@ from the KernelPlan of block @BLOCK@ - do not edit.
// Tiling data of @SYM@ (@OPTYPE@, @VARIANT@): @WORKLOAD@
// tile @TILE@ on @SOC@: @NTILES@ tiles on @CORES@ cores; @MEMORY@
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

// Buffer sizes of the plan: InitBuffer(bytes per copy, copies), the budget the plan checked.
namespace @NS@ {
@CONSTS@
}  // namespace @NS@
"""

_LOOPNEST = {
    "vector-pw": r"""// Loop nest (schedules/dwsep_schedule.py):
//   for tile t = GetBlockIdx(); t < nTiles; t += GetBlockNum()
//     for ci-step: CopyInX (GM -> UB tile with halo, padding zero-filled) ; ComputeDw (taps, +b_dw, act1 -> dw_out)
//     for co-step: CopyInPw ([w_pw], [res]) ; ComputePw (MACs, +b_pw, act2, [+res] -> y) ; CopyOut (UB -> GM)""",
    "cube-pw": r"""// Loop nest (schedules/dwsep_schedule.py, PW on the cube of the same AI core):
//   for tile t = GetBlockIdx(); t < nTiles; t += GetBlockNum()
//     for ci-step: CopyInX (GM -> UB tile with halo) ; ComputeDw (taps, +b_dw, act1 -> dw_out)
//     StageA: dw_out UB -> L1 (NZ, rows padded to 16) -> L0A
//     for co-step: CopyInPw ([w_pw GM -> L1], [res]) ; Mma (L1 -> L0B, Mmad -> L0C)
//                  Epilogue (per output block L0C -> UB fp32, +b_pw, act2, [+res], cast) ; CopyOut (UB -> GM)""",
    "cube-pw-mix": r"""// One MIX kernel (1 AIC + 2 AIVs per block), tiles round-robin over the plan's AIVs:
//   AIV i: for round k: [DW of tile i + k*cores -> its GM slot] ; CrossCoreSetFlag(FLAG_DW)
//                       finish round k - LAG: CrossCoreWaitFlag(FLAG_PW) [; epilogue from the pre-activation slot]
//   AIC g: for round k: CrossCoreWaitFlag(FLAG_DW) ; for the tiles of AIVs 2g, 2g+1 in round k:
//            slot GM -> L1 -> L0A ; per co-step: [w_pw GM -> L1] -> L0B, Mmad, Fixpipe (y, or pre-activation slot)
//          CrossCoreSetFlag(FLAG_PW)""",
}

_EXTRA_MIX = r"""constexpr uint32_t RATIO = 2;          // AIVs per AIC (KERNEL_TYPE_MIX_AIC_1_2)
constexpr uint32_t LAG = @LAG@;            // rounds an AIV runs ahead of its AIC
constexpr uint16_t FLAG_DW = @FLAG_DW@;      // AIVs -> AIC: the round's DW results are in GM
constexpr uint16_t FLAG_PW = @FLAG_PW@;      // AIC -> AIVs: the round's PW is done
""".replace("@LAG@", str(MIX_LAG)).replace("@FLAG_DW@", str(FLAG_DW)).replace("@FLAG_PW@", str(FLAG_PW))

_PRELUDE = r"""// Generated by megafuse @VERSION@ from the KernelPlan of block @BLOCK@ - do not edit.
//
// @SYM@ (@OPTYPE@): fused depthwise-separable block, NC1HWC0, @T@ storage, fp32 accumulation
//   variant   @VARIANT@: @VARIANT_WHAT@
//   workload  @WORKLOAD@
//   tile      @TILE@ on @SOC@; th x tw = @TH@ x @TW@, input tile @IH@ x @IW@, cib @CIB@, cob @COB@
//   loops     @NTILES@ tiles round-robin over @CORES@ @CORE_KIND@; @CISTEPS@ ci-steps, @COSTEPS@ co-steps per tile
//   memory    @MEMORY@
//   acts      @ACT1@ / @ACT2@, residual: @RES@; PW weights resident: @RESIDENT@
//   plan      @PLANKEY@
//
@LOOPNEST@
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
@EXTRA@
// Lanes {16p + k : p < pixels} of a 64-lane (fp32) repeat.
__aicore__ inline uint64_t LaneBits(uint32_t k, uint32_t pixels)
{
    uint64_t m = 0;
    for (uint32_t p = 0; p < pixels; ++p) m |= 1ull << (16 * p + k);
    return m;
}
}  // namespace

"""

_GEOMETRY = r"""    // ---- tile geometry ------------------------------------------------------------------
    __aicore__ inline void SetTile(uint32_t tile)
    {
        tileIdx = tile;
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
"""

_GEOM_MEMBERS = r"""    @TILING@ tl;
    uint32_t thw = 0, thwAl = 0;   // tile pixels; padded to the cube's 16-row fractals
    uint32_t tileIdx = 0, n = 0, oh0 = 0, ow0 = 0, ohv = 0, owv = 0, ihv = 0, iwv = 0;
    int32_t ih0 = 0, iw0 = 0, rLo = 0, cLo = 0;
    bool pad = false;
"""

_DW = r"""    // ---- DW -----------------------------------------------------------------------------
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
@TAP_CALL@
                }
            }
            // + b_dw[cg]: one pixel (16 lanes) per repeat, the bias row repeated (repStride 0)
            for (uint32_t p0 = 0; p0 < thw; p0 += MAX_REPEAT) {
                const uint32_t reps = thw - p0 < MAX_REPEAT ? thw - p0 : MAX_REPEAT;
                Add(accC[p0 * C0], accC[p0 * C0], bDw[cg * C0], static_cast<uint64_t>(C0), reps,
                    BinaryRepeatParams(1, 1, 1, 2, 2, 0));
            }
        }
        Act1(acc, static_cast<int32_t>(cb * thw * C0), @ACT1_TMP@);
        @CAST_DW@
        xQue.FreeTensor(x);
    }

@ACT1_FN@
@ACT2_FN@"""

# bias + act2 [+ residual] + cast of one output block held in fp32 (NC1HWC0 order, thw pixels)
_EPILOGUE_BLOCK = r"""    // + b_pw[cg], act2, [+ residual], cast of one output block: thw pixels x 16 fp32 at acc. The
    // bias goes in two halves: lane l of a repeat is channel 8h + l%8 of pixel l/8 (dst block
    // stride 2 DataBlocks = one pixel), 8 pixels per repeat, the bias half repeated (stride 0).
    __aicore__ inline void EpilogueBlock(const LocalTensor<float>& acc, uint32_t cg, @RES_EPI_PARAM@const LocalTensor<T>& y)
    {
        const uint32_t groups = thw / 8, rem = thw % 8;
        const BinaryRepeatParams rp(2, 2, 0, 16, 16, 0);
        for (uint32_t h = 0; h < 2; ++h) {
            for (uint32_t g0 = 0; g0 < groups; g0 += MAX_REPEAT) {
                const uint32_t reps = groups - g0 < MAX_REPEAT ? groups - g0 : MAX_REPEAT;
                Add(acc[g0 * 8 * C0 + h * 8], acc[g0 * 8 * C0 + h * 8], bPw[cg * C0 + h * 8], static_cast<uint64_t>(64),
                    reps, rp);
            }
            if (rem != 0)
                Add(acc[groups * 8 * C0 + h * 8], acc[groups * 8 * C0 + h * 8], bPw[cg * C0 + h * 8],
                    static_cast<uint64_t>(rem * 8), 1, rp);
        }
        Act2(acc, static_cast<int32_t>(thw * C0), @ACT2_TMP@);
@RES_EPI_ADD@        Cast(y, acc, RoundMode::CAST_NONE, thw * C0);
    }
"""

# L1 A (NZ: c1 column blocks of thwAl rows) -> L0A (ZZ: row block mi holds its c1 fractals in order)
_LOAD_A = r"""    __aicore__ inline void LoadA(const LocalTensor<T>& a2, const LocalTensor<T>& a1)
    {
        const uint32_t m1 = thwAl / 16;
        if (m1 <= tl.c1) {  // one LoadData per row block: its c1 fractals, M1 apart in L1
            for (uint32_t mi = 0; mi < m1; ++mi)
                LoadData(a2[mi * tl.c1 * 256], a1, LoadData2DParams(mi, tl.c1, m1, 0, 0, false, 0));
        } else {            // one per channel block: its M1 fractals, c1 - 1 apart in L0A
            for (uint32_t ki = 0; ki < tl.c1; ++ki)
                LoadData(a2[ki * 256], a1, LoadData2DParams(ki * m1, m1, 1, 0, tl.c1 - 1, false, 0));
        }
    }
"""

# L1 B (FRACTAL_Z: fractal (o, ki) at (o - first) * c1 + ki, k rows x n cols) -> L0B (ZN:
# fractal (ki, nj) at ki * cbo + nj, each transposed to n rows x k cols)
_LOAD_B = r"""    __aicore__ inline void LoadB(const LocalTensor<T>& b2, const LocalTensor<T>& w1, uint32_t first, uint32_t cbo)
    {
        if (tl.c1 <= cbo) {  // one LoadData per k block: its cbo fractals, c1 apart in L1
            for (uint32_t ki = 0; ki < tl.c1; ++ki)
                LoadData(b2[ki * cbo * 256], w1, LoadData2DParams(first + ki, cbo, tl.c1, 0, 0, true, 0));
        } else {             // one per output block: its c1 fractals, cbo - 1 apart in L0B
            for (uint32_t nj = 0; nj < cbo; ++nj)
                LoadData(b2[nj * 256], w1, LoadData2DParams(first + nj * tl.c1, tl.c1, 1, 0, cbo - 1, true, 0));
        }
    }
"""

_ENTRY = r"""
extern "C" __global__ __aicore__ void @SYM@(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @RES_PARAM@GM_ADDR y,
                                            GM_ADDR workspace, GM_ADDR tiling)
{
@TASK_TYPE@    (void)workspace;
    GET_TILING_DATA_WITH_STRUCT(@TILING@, t, tiling);
    Kernel@OPTYPE@ op;
    op.Init(x, w_dw, b_dw, w_pw, b_pw, @RES_ARG@y, t);
    op.Process();
}
"""

_ENTRY_MIX = r"""
extern "C" __global__ __aicore__ void @SYM@(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @RES_PARAM@GM_ADDR y,
                                            GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);  // per block: 1 AIC (PW) + 2 AIVs (DW, epilogue)
    GET_TILING_DATA_WITH_STRUCT(@TILING@, t, tiling);
    __gm__ T* usr = (__gm__ T*)GetUserWorkspace(workspace);  // the hand-off slots
    if ASCEND_IS_AIV {
        Aiv@OPTYPE@ op;
        op.Init(@AIV_ARGS@);
        op.Process();
    }
    if ASCEND_IS_AIC {
        Aic@OPTYPE@ op;
        op.Init(@AIC_ARGS@);
        op.Process();
    }
}
"""

# per tap: the lane forms take the 16 taps as scalars (one masked Axpy per channel lane), the
# MulAddDst forms (arch 2201) the tap vector itself, read from the resident w_dw in UB
_TAP_CALL_LANES = r"""                    T wk[C0];
                    for (uint32_t k = 0; k < C0; ++k) wk[k] = wDw.GetValue(((cg * tl.kh + i) * tl.kw + j) * C0 + k);
                    for (uint32_t r = 0; r < tl.th; ++r)
                        TapRow(accC[r * tl.tw * C0], x[((c * tl.ih + r * tl.sh + i) * tl.iw + j) * C0], wk);"""

_TAP_CALL_VECTOR = r"""                    const LocalTensor<T> wk = wDw[((cg * tl.kh + i) * tl.kw + j) * C0];
                    for (uint32_t r = 0; r < tl.th; ++r)
                        TapRow(accC[r * tl.tw * C0], x[((c * tl.ih + r * tl.sh + i) * tl.iw + j) * C0], wk);"""

_TAP_MAD_HALF = r"""    // fp16 source, arch 2201: one MulAddDst per tap row. Lane l of a 64-lane repeat is output
    // pixel l/16, channel l%16 (dst fp32: 8 per DataBlock, contiguous); the source pixel sits
    // (l/16)*sw DataBlocks further (blkStride = conv stride); the 16 taps are one DataBlock read by
    // every lane group (src1 strides 0). A ragged last repeat masks the missing pixels.
    __aicore__ inline void TapRow(const LocalTensor<float>& dst, const LocalTensor<T>& src, const LocalTensor<T>& wk)
    {
        const uint32_t full = tl.tw / 4, rem = tl.tw % 4;
        const BinaryRepeatParams rp(1, tl.sw, 0, 8, 4 * tl.sw, 0);
        for (uint32_t r0 = 0; r0 < full; r0 += MAX_REPEAT) {
            const uint32_t reps = full - r0 < MAX_REPEAT ? full - r0 : MAX_REPEAT;
            MulAddDst(dst[r0 * 4 * C0], src[r0 * 4 * tl.sw * C0], wk, static_cast<uint64_t>(64), reps, rp);
        }
        if (rem != 0)
            MulAddDst(dst[full * 4 * C0], src[full * 4 * tl.sw * C0], wk, static_cast<uint64_t>(rem * C0), 1, rp);
    }
"""

_TAP_MAD_FLOAT = r"""    // fp32 source, arch 2201: per tap row one MulAddDst per channel half h (channels 8h..8h+7 are
    // DataBlock h of a pixel): lane l is pixel l/8 (dst block stride 2 = one pixel, source block
    // stride 2*sw), the 8 taps of half h one DataBlock read by every lane group (src1 strides 0).
    __aicore__ inline void TapRow(const LocalTensor<float>& dst, const LocalTensor<T>& src, const LocalTensor<T>& wk)
    {
        const uint32_t full = tl.tw / 8, rem = tl.tw % 8;
        const BinaryRepeatParams rp(2, 2 * tl.sw, 0, 16, 16 * tl.sw, 0);
        for (uint32_t h = 0; h < 2; ++h) {
            for (uint32_t r0 = 0; r0 < full; r0 += MAX_REPEAT) {
                const uint32_t reps = full - r0 < MAX_REPEAT ? full - r0 : MAX_REPEAT;
                MulAddDst(dst[r0 * 8 * C0 + h * 8], src[r0 * 8 * tl.sw * C0 + h * 8], wk[h * 8],
                          static_cast<uint64_t>(64), reps, rp);
            }
            if (rem != 0)
                MulAddDst(dst[full * 8 * C0 + h * 8], src[full * 8 * tl.sw * C0 + h * 8], wk[h * 8],
                          static_cast<uint64_t>(rem * 8), 1, rp);
        }
    }
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

_RESIDENT_UB = r"""        LocalTensor<T> w = wDwQue.AllocTensor<T>();
        DataCopy(w, wDwGm, tl.c1 * tl.kh * tl.kw * C0);
        wDwQue.EnQue(w);
        LocalTensor<float> b1 = bDwQue.AllocTensor<float>();
        DataCopy(b1, bDwGm, tl.c1 * C0);
        bDwQue.EnQue(b1);
"""

# Init's head of the kernels where one core runs the whole block (vector-pw, 310P cube-pw)
_INIT_ONE_CORE = r"""    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @RES_PARAM@GM_ADDR y,
                                const @TILING@& t)
    {
        tl = t;
        thw = t.th * t.tw;
        thwAl = t.thwAl;
        xGm.SetGlobalBuffer((__gm__ T*)x, t.batch * t.c1 * t.h * t.w * C0);
        wDwGm.SetGlobalBuffer((__gm__ T*)w_dw, t.c1 * t.kh * t.kw * C0);
        bDwGm.SetGlobalBuffer((__gm__ float*)b_dw, t.c1 * C0);
        wPwGm.SetGlobalBuffer((__gm__ T*)w_pw, t.co1 * t.c1 * C0 * C0);
        bPwGm.SetGlobalBuffer((__gm__ float*)b_pw, t.co1 * C0);
@RES_GM_SET@        yGm.SetGlobalBuffer((__gm__ T*)y, t.batch * t.co1 * t.oh * t.ow * C0);
"""

_CO_STEP = "const uint32_t o0 = q * tl.cob, cbo = tl.co1 - o0 < tl.cob ? tl.co1 - o0 : tl.cob;"

# =============================================================================================
# vector-pw
# =============================================================================================
_VECTOR_CLASS = r"""class Kernel@OPTYPE@ {
public:
    __aicore__ inline Kernel@OPTYPE@() {}

@INIT_ONE_CORE@        // one InitBuffer per KernelPlan buffer: bytes per copy x copies, as the plan budgeted
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
""" + _RESIDENT_UB + r"""        LocalTensor<float> b2 = bPwQue.AllocTensor<float>();
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

@GEOMETRY@
@DW@
    __aicore__ inline uint32_t PwAccLen() const { return @NS@::kPwAccBytes / sizeof(float); }
    __aicore__ inline uint32_t DwAccLen() const { return @NS@::kDwAccBytes / sizeof(float); }

    // ---- PW -----------------------------------------------------------------------------
    __aicore__ inline void CopyInPw(uint32_t q)
    {
        """ + _CO_STEP + r"""
        if (!RESIDENT_W_PW) {
            LocalTensor<T> wp = wPwQue.AllocTensor<T>();
            LoadPwWeights(wp, o0, cbo);
            wPwQue.EnQue(wp);
        }
@RES_COPYIN@    }

    __aicore__ inline void ComputePw(uint32_t q)
    {
        """ + _CO_STEP + r"""
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
        """ + _CO_STEP + r"""
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
@GEOM_MEMBERS@};
"""

_COPY_OUT = r"""    __aicore__ inline void CopyOut(uint32_t q)
    {
        """ + _CO_STEP + r"""
        LocalTensor<T> yT = yQue.DeQue<T>();
        for (uint32_t c = 0; c < cbo; ++c) DataCopy(yGm[OutOffset(o0 + c)], yT[c * thw * C0], OutRows(true));
        yQue.FreeTensor(yT);
    }
"""

# =============================================================================================
# cube-pw (310P: one coupled AI core runs DW, the GEMM and the epilogue)
# =============================================================================================
_CUBE_CLASS = r"""class Kernel@OPTYPE@ {
public:
    __aicore__ inline Kernel@OPTYPE@() {}

@INIT_ONE_CORE@        // one InitBuffer per KernelPlan buffer (UB, L1, L0A, L0B, L0C): bytes per copy x copies
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
            StageA();
            for (uint32_t q = 0; q < tl.coSteps; ++q) {
                CopyInPw(q);
                Mma(q);
                Epilogue(q);
                CopyOut(q);
            }
            aL0Que.FreeTensor(aL0);
        }
        wDwQue.FreeTensor(wDw);
        bDwQue.FreeTensor(bDw);
        bPwQue.FreeTensor(bPw);
        if (RESIDENT_W_PW) wL1Que.FreeTensor(wPwRes);
    }

private:
    // ---- resident: w_dw, b_dw, b_pw in UB (and the whole w_pw in L1 with one co-step), once per core
    __aicore__ inline void LoadResident()
    {
""" + _RESIDENT_UB + r"""        LocalTensor<float> b2 = bPwQue.AllocTensor<float>();
        DataCopy(b2, bPwGm, tl.co1 * C0);
        bPwQue.EnQue(b2);
        if (RESIDENT_W_PW) {
            LocalTensor<T> wp = wL1Que.AllocTensor<T>();
            DataCopy(wp, wPwGm, tl.co1 * tl.c1 * C0 * C0);   // FRACTAL_Z is the layout L1 holds B in
            wL1Que.EnQue(wp);
            wPwRes = wL1Que.DeQue<T>();
        }
        wDw = wDwQue.DeQue<T>();
        bDw = bDwQue.DeQue<float>();
        bPw = bPwQue.DeQue<float>();
        // the DW taps are read by the scalar unit
        SetFlag<HardEvent::MTE2_S>(0);
        WaitFlag<HardEvent::MTE2_S>(0);
    }

@GEOMETRY@
@DW@
    // ---- the cube's A operand: dw_out (UB) -> L1 (on chip, MTE3) -> L0A, once per tile -----
    __aicore__ inline void StageA()
    {
        LocalTensor<T> dwOut = dwOutBuf.Get<T>();
        LocalTensor<T> a1 = aL1Buf.Get<T>();
        SetFlag<HardEvent::V_MTE3>(0);  // the DW result is complete in UB
        WaitFlag<HardEvent::V_MTE3>(0);
        // c1 column blocks of thw pixels (one 32 B DataBlock each), each padded to thwAl rows in L1
        DataCopyParams p;
        p.blockCount = tl.c1;
        p.blockLen = thw * PB;
        p.srcGap = 0;
        p.dstGap = (thwAl - thw) * PB;
        DataCopy(a1, dwOut, p);
        SetFlag<HardEvent::MTE3_V>(0);  // the next tile's DW may overwrite dw_out
        WaitFlag<HardEvent::MTE3_V>(0);
        SetFlag<HardEvent::MTE3_MTE1>(0);  // L1 holds A before LoadData reads it
        WaitFlag<HardEvent::MTE3_MTE1>(0);
        LocalTensor<T> a2 = aL0Que.AllocTensor<T>();
        LoadA(a2, a1);
        aL0Que.EnQue(a2);
        aL0 = aL0Que.DeQue<T>();  // A stays in L0A for every co-step of the tile
        SetFlag<HardEvent::MTE1_MTE3>(0);  // the next tile's staging may overwrite L1
        WaitFlag<HardEvent::MTE1_MTE3>(0);
    }

@LOAD_A@
@LOAD_B@
    // ---- PW on the cube -------------------------------------------------------------------
    __aicore__ inline void CopyInPw(uint32_t q)
    {
        """ + _CO_STEP + r"""
        if (!RESIDENT_W_PW) {  // the co-step's cbo FRACTAL_Z blocks are contiguous in GM
            LocalTensor<T> wp = wL1Que.AllocTensor<T>();
            DataCopy(wp, wPwGm[o0 * tl.c1 * C0 * C0], cbo * tl.c1 * C0 * C0);
            wL1Que.EnQue(wp);
        }
@RES_COPYIN@    }

    __aicore__ inline void Mma(uint32_t q)
    {
        """ + _CO_STEP + r"""
        LocalTensor<T> w1 = RESIDENT_W_PW ? wPwRes : wL1Que.DeQue<T>();
        LocalTensor<T> b2 = bL0Que.AllocTensor<T>();
        LoadB(b2, w1, RESIDENT_W_PW ? o0 * tl.c1 : 0, cbo);
        bL0Que.EnQue(b2);
        if (!RESIDENT_W_PW) wL1Que.FreeTensor(w1);
        b2 = bL0Que.DeQue<T>();
        LocalTensor<float> c = cQue.AllocTensor<float>();
        MmadParams mp;
        mp.m = thw > 1 ? thw : thwAl;  // rows past thw are fractal padding, never read back
        mp.n = cbo * C0;
        mp.k = tl.c1 * C0;
        Mmad(c, aL0, b2, mp);  // C = A x B, fp32 in L0C (isBias false, cmatrixInitVal true: C starts at 0)
        cQue.EnQue(c);
        bL0Que.FreeTensor(b2);
    }

    // L0C -> UB one output block at a time into dw_acc (free until the next tile's DW), then
    // bias, act2, [residual] and the cast into the y tile
    __aicore__ inline void Epilogue(uint32_t q)
    {
        """ + _CO_STEP + r"""
        LocalTensor<float> c = cQue.DeQue<float>();
        LocalTensor<float> acc = dwAccBuf.Get<float>();
@RES_EPI_DEQ@        LocalTensor<T> yT = yQue.AllocTensor<T>();
        DataCopyParams p;
        p.blockCount = 1;
        p.blockLen = thwAl / 16;  // 16x16 fp32 fractals of one output block
        p.srcGap = 0;
        p.dstGap = 0;
        DataCopyEnhancedParams e;
        e.blockMode = BlockMode::BLOCK_MODE_MATRIX;
        for (uint32_t j = 0; j < cbo; ++j) {
            DataCopy(acc, c[j * thwAl * C0], p, e);
            EpilogueBlock(acc, o0 + j, @RES_EPI_ARG@yT[j * thw * C0]);
        }
        cQue.FreeTensor(c);
        yQue.EnQue(yT);
@RES_EPI_FREE@    }

@EPILOGUE_BLOCK@
""" + _COPY_OUT + r"""
    TPipe pipe;
@MEMBERS@
    GlobalTensor<T> xGm, wDwGm, wPwGm, yGm;
    GlobalTensor<float> bDwGm, bPwGm;
@RES_GM_DECL@    LocalTensor<T> wDw, wPwRes, aL0;
    LocalTensor<float> bDw, bPw;
@GEOM_MEMBERS@};
"""

# =============================================================================================
# cube-pw-mix (910B): the AIV side
# =============================================================================================
_B_PW_LOAD = r"""        LocalTensor<float> b2 = bPwQue.AllocTensor<float>();
        DataCopy(b2, bPwGm, tl.co1 * C0);
        bPwQue.EnQue(b2);
        bPw = bPwQue.DeQue<float>();
"""

_FINISH_EPI = r"""        if (k >= mine) return;
        SetTile(aivIdx + k * tl.blockDim);
        for (uint32_t q = 0; q < tl.coSteps; ++q) {
            CopyInPre(q);
            Epilogue(q);
            CopyOut(q);
        }
"""

_AIV_EPILOGUE = r"""    // ---- epilogue of one co-step: the AIC's pre-activation (fp16) read back from the tile's slot
    __aicore__ inline void CopyInPre(uint32_t q)
    {
        """ + _CO_STEP + r"""
        LocalTensor<T> pre = preQue.AllocTensor<T>();
        DataCopy(pre, preGm[PreSlot() + o0 * thw * C0], cbo * thw * C0);
        preQue.EnQue(pre);
@RES_COPYIN@    }

    __aicore__ inline void Epilogue(uint32_t q)
    {
        """ + _CO_STEP + r"""
        LocalTensor<T> pre = preQue.DeQue<T>();
        LocalTensor<float> acc = dwAccBuf.Get<float>();  // free between this tile's DW and the next's
@RES_EPI_DEQ@        LocalTensor<T> yT = yQue.AllocTensor<T>();
        for (uint32_t j = 0; j < cbo; ++j) {
            Cast(acc, pre[j * thw * C0], RoundMode::CAST_NONE, thw * C0);
            EpilogueBlock(acc, o0 + j, @RES_EPI_ARG@yT[j * thw * C0]);
        }
        preQue.FreeTensor(pre);
        yQue.EnQue(yT);
@RES_EPI_FREE@    }

@EPILOGUE_BLOCK@
""" + _COPY_OUT

_AIV_CLASS = r"""// ---- AIV: DW of its tiles, hand-off to GM[, epilogue] ------------------------------------
class Aiv@OPTYPE@ {
public:
    __aicore__ inline Aiv@OPTYPE@() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, @B_PW_PARAM@@RES_PARAM_AIV@GM_ADDR y, __gm__ T* usr,
                                const @TILING@& t)
    {
        tl = t;
        thw = t.th * t.tw;
        thwAl = t.thwAl;
        aivIdx = GetBlockIdx();  // AIV index: block * 2 + GetSubBlockIdx()
        xGm.SetGlobalBuffer((__gm__ T*)x, t.batch * t.c1 * t.h * t.w * C0);
        wDwGm.SetGlobalBuffer((__gm__ T*)w_dw, t.c1 * t.kh * t.kw * C0);
        bDwGm.SetGlobalBuffer((__gm__ float*)b_dw, t.c1 * C0);
@B_PW_SET@@RES_GM_SET_AIV@        yGm.SetGlobalBuffer((__gm__ T*)y, t.batch * t.co1 * t.oh * t.ow * C0);
        dwGm.SetGlobalBuffer(usr, t.nTiles * t.c1 * thw * C0);
@PRE_SET@        // one InitBuffer per KernelPlan buffer in UB: bytes per copy x copies
@INITS@
    }

    __aicore__ inline void Process()
    {
        const uint32_t rounds = TilesOf(aivIdx / RATIO * RATIO);  // the group's first AIV has the most tiles
        const uint32_t mine = TilesOf(aivIdx);
        if (mine > 0) LoadResident();
        for (uint32_t k = 0; k < rounds; ++k) {
            if (k < mine) {
                SetTile(aivIdx + k * tl.blockDim);
                for (uint32_t q = 0; q < tl.ciSteps; ++q) {
                    CopyInX(q);
                    ComputeDw(q);
                    HandOff(q);
                }
                SetFlag<HardEvent::MTE3_V>(0);  // the hand-off has read dw_out
                WaitFlag<HardEvent::MTE3_V>(0);
            }
            CrossCoreSetFlag<2, PIPE_MTE3>(FLAG_DW);  // every round, tile or not: the AIC waits for both AIVs
            if (k >= LAG) Finish(k - LAG, mine);
        }
        for (uint32_t k = rounds > LAG ? rounds - LAG : 0; k < rounds; ++k) Finish(k, mine);
        if (mine > 0) {
            wDwQue.FreeTensor(wDw);
            bDwQue.FreeTensor(bDw);
@B_PW_FREE@        }
    }

private:
    // tiles of AIV i: i, i + cores, ... (the plan's round-robin); AIVs past the plan's cores have none
    __aicore__ inline uint32_t TilesOf(uint32_t i) const
    {
        return i < tl.blockDim ? (tl.nTiles - i + tl.blockDim - 1) / tl.blockDim : 0;
    }

    // the tile's GM slots: DW result (c1, thw, C0) and pre-activation (co1, thw, C0)
    __aicore__ inline uint32_t Slot() const { return tileIdx * tl.c1 * thw * C0; }
    __aicore__ inline uint32_t PreOffset() const { return tl.nTiles * tl.c1 * thw * C0; }
    __aicore__ inline uint32_t PreSlot() const { return tileIdx * tl.co1 * thw * C0; }

    // round k is finished once the AIC has run it (FLAG_PW)[; then the epilogue of the AIV's tile]
    __aicore__ inline void Finish(uint32_t k, uint32_t mine)
    {
        CrossCoreWaitFlag(FLAG_PW);
@FINISH_EPI@    }

    // ---- resident: w_dw, b_dw[, b_pw] in UB, once per AIV with tiles ---------------------
    __aicore__ inline void LoadResident()
    {
""" + _RESIDENT_UB + r"""        wDw = wDwQue.DeQue<T>();
        bDw = bDwQue.DeQue<float>();
@B_PW_LOAD@        // the DW taps are read by the scalar unit
        SetFlag<HardEvent::MTE2_S>(0);
        WaitFlag<HardEvent::MTE2_S>(0);
    }

@GEOMETRY@
@DW@
    // the ci-step's slice of the DW result -> the tile's GM slot (c1, thw, C0)
    __aicore__ inline void HandOff(uint32_t q)
    {
        const uint32_t c0 = q * tl.cib, cb = tl.c1 - c0 < tl.cib ? tl.c1 - c0 : tl.cib;
        LocalTensor<T> dwOut = dwOutBuf.Get<T>();
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(dwGm[Slot() + c0 * thw * C0], dwOut[c0 * thw * C0], cb * thw * C0);
    }

@AIV_EPILOGUE@
    TPipe pipe;
@MEMBERS@
    GlobalTensor<T> xGm, wDwGm, yGm, dwGm;
    GlobalTensor<float> bDwGm;
@B_PW_DECL@@PRE_DECL@@RES_GM_DECL_AIV@    LocalTensor<T> wDw;
    LocalTensor<float> bDw;
    uint32_t aivIdx = 0;
@GEOM_MEMBERS@};

"""

# =============================================================================================
# cube-pw-mix (910B): the AIC side
# =============================================================================================
_AIC_B_PW_LOAD = r"""        LocalTensor<float> b = bPwL1Que.AllocTensor<float>();
        DataCopy(b, bPwGm, tl.co1 * C0);
        bPwL1Que.EnQue(b);
        bPwL1 = bPwL1Que.DeQue<float>();
"""

_AIC_BIAS_BT = r"""            // the co-step's bias L1 -> bias table (64 B units: one C0 block of fp32 each)
            LocalTensor<float> bt = btQue.AllocTensor<float>();
            DataCopy(bt, bPwL1[o0 * C0], DataCopyParams(1, static_cast<uint16_t>(cbo), 0, 0));
            btQue.EnQue(bt);
            bt = btQue.DeQue<float>();
"""

_AIC_MMAD = r"""            Mmad(c, aL0, b2, mp);  // C = A x B (cmatrixInitVal true: C starts at 0); the AIV adds the bias
"""

_AIC_MMAD_BIAS = r"""            mp.cmatrixInitVal = false;  // C starts from the bias table: C = b_pw + A x B
            Mmad(c, aL0, b2, bt, mp);
            btQue.FreeTensor(bt);
"""

_AIC_FIXPIPE_Y = r"""            // y straight from L0C: act2 on the fly, fp32 -> fp16. L0C's NZ is NC1HWC0: 16-channel
            // column blocks, oh*ow pixels (32 B each) apart in GM; one valid tile row per Fixpipe
            FixpipeParamsV220 fp;
            fp.nSize = cbo * C0;
            fp.srcStride = thwAl;
            fp.dstStride = tl.oh * tl.ow * PB;
            fp.reluEn = @RELU@;
            fp.quantPre = QuantMode_t::F322F16;
            if (tl.tw == tl.ow) {  // full-width tiles: the valid rows are contiguous in L0C and GM
                fp.mSize = ohv * tl.ow;
                Fixpipe<T, float, CFG_NZ>(yGm[OutOffset(o0)], c, fp);
            } else {
                fp.mSize = owv;
                for (uint32_t r = 0; r < ohv; ++r)
                    Fixpipe<T, float, CFG_NZ>(yGm[OutOffset(o0) + r * tl.ow * C0], c[r * tl.tw * C0], fp);
            }
"""

_AIC_FIXPIPE_PRE = r"""            // the pre-activation (fp16) to the tile's slot (co1, thw, C0); the AIV finishes it
            FixpipeParamsV220 fp;
            fp.nSize = cbo * C0;
            fp.mSize = thw;
            fp.srcStride = thwAl;
            fp.dstStride = thw * PB;
            fp.reluEn = false;
            fp.quantPre = QuantMode_t::F322F16;
            Fixpipe<T, float, CFG_NZ>(preGm[PreSlot() + o0 * thw * C0], c, fp);
"""

_AIC_CLASS = r"""// ---- AIC: the PW GEMM of the tiles of its two AIVs ----------------------------------------
class Aic@OPTYPE@ {
public:
    __aicore__ inline Aic@OPTYPE@() {}

    __aicore__ inline void Init(GM_ADDR w_pw, @B_PW_PARAM@GM_ADDR y, __gm__ T* usr, const @TILING@& t)
    {
        tl = t;
        thw = t.th * t.tw;
        thwAl = t.thwAl;
        group = GetBlockIdx();  // the AIC of block g serves AIVs 2g and 2g + 1
        wPwGm.SetGlobalBuffer((__gm__ T*)w_pw, t.co1 * t.c1 * C0 * C0);
@B_PW_SET@        yGm.SetGlobalBuffer((__gm__ T*)y, t.batch * t.co1 * t.oh * t.ow * C0);
        dwGm.SetGlobalBuffer(usr, t.nTiles * t.c1 * thw * C0);
@PRE_SET@        // one InitBuffer per KernelPlan buffer in L1 / L0A / L0B / L0C / BT: bytes per copy x copies
@INITS@
    }

    __aicore__ inline void Process()
    {
        const uint32_t rounds = TilesOf(group * RATIO);
        if (rounds > 0) LoadResident();
        for (uint32_t k = 0; k < rounds; ++k) {
            CrossCoreWaitFlag(FLAG_DW);  // both AIVs of the group have handed off round k
            for (uint32_t s = 0; s < RATIO; ++s) {
                const uint32_t a = group * RATIO + s;
                if (k < TilesOf(a)) Gemm(a + k * tl.blockDim);
            }
            CrossCoreSetFlag<2, PIPE_FIX>(FLAG_PW);
        }
        if (rounds > 0) {
            if (RESIDENT_W_PW) wL1Que.FreeTensor(wPwRes);
@B_PW_FREE@        }
    }

private:
    __aicore__ inline uint32_t TilesOf(uint32_t i) const
    {
        return i < tl.blockDim ? (tl.nTiles - i + tl.blockDim - 1) / tl.blockDim : 0;
    }

    __aicore__ inline uint32_t Slot() const { return tileIdx * tl.c1 * thw * C0; }
    __aicore__ inline uint32_t PreOffset() const { return tl.nTiles * tl.c1 * thw * C0; }
    __aicore__ inline uint32_t PreSlot() const { return tileIdx * tl.co1 * thw * C0; }

    // ---- resident, once per AIC: the whole w_pw in L1 with one co-step[, b_pw in L1] -------
    __aicore__ inline void LoadResident()
    {
        if (RESIDENT_W_PW) {
            LocalTensor<T> wp = wL1Que.AllocTensor<T>();
            DataCopy(wp, wPwGm, tl.co1 * tl.c1 * C0 * C0);   // FRACTAL_Z is the layout L1 holds B in
            wL1Que.EnQue(wp);
            wPwRes = wL1Que.DeQue<T>();
        }
@B_PW_LOAD@    }

@GEOMETRY@
@LOAD_A@
@LOAD_B@
    // one tile: its DW result GM slot -> L1 (NZ, rows padded to 16) -> L0A; per co-step the GEMM
    __aicore__ inline void Gemm(uint32_t tile)
    {
        SetTile(tile);
        LocalTensor<T> a1 = aL1Que.AllocTensor<T>();
        DataCopyParams p;
        p.blockCount = tl.c1;
        p.blockLen = thw * PB;
        p.srcGap = 0;
        p.dstGap = (thwAl - thw) * PB;
        DataCopy(a1, dwGm[Slot()], p);
        aL1Que.EnQue(a1);
        a1 = aL1Que.DeQue<T>();
        LocalTensor<T> a2 = aL0Que.AllocTensor<T>();
        LoadA(a2, a1);
        aL0Que.EnQue(a2);
        aL1Que.FreeTensor(a1);
        LocalTensor<T> aL0 = aL0Que.DeQue<T>();
        for (uint32_t q = 0; q < tl.coSteps; ++q) {
            """ + _CO_STEP + r"""
            if (!RESIDENT_W_PW) {  // the co-step's cbo FRACTAL_Z blocks are contiguous in GM
                LocalTensor<T> wp = wL1Que.AllocTensor<T>();
                DataCopy(wp, wPwGm[o0 * tl.c1 * C0 * C0], cbo * tl.c1 * C0 * C0);
                wL1Que.EnQue(wp);
            }
            LocalTensor<T> w1 = RESIDENT_W_PW ? wPwRes : wL1Que.DeQue<T>();
            LocalTensor<T> b2 = bL0Que.AllocTensor<T>();
            LoadB(b2, w1, RESIDENT_W_PW ? o0 * tl.c1 : 0, cbo);
            bL0Que.EnQue(b2);
            if (!RESIDENT_W_PW) wL1Que.FreeTensor(w1);
            b2 = bL0Que.DeQue<T>();
@BIAS_BT@            LocalTensor<float> c = cQue.AllocTensor<float>();
            MmadParams mp;
            mp.m = thw > 1 ? thw : thwAl;  // m = 1 would run as GEMV; rows past thw are never read back
            mp.n = cbo * C0;
            mp.k = tl.c1 * C0;
@MMAD@            cQue.EnQue(c);
            bL0Que.FreeTensor(b2);
            c = cQue.DeQue<float>();
@FIXPIPE@            cQue.FreeTensor(c);
        }
        aL0Que.FreeTensor(aL0);
    }

    TPipe pipe;
@MEMBERS@
    GlobalTensor<T> wPwGm, yGm, dwGm;
@B_PW_DECL@@PRE_DECL@    LocalTensor<T> wPwRes;
    uint32_t group = 0;
@GEOM_MEMBERS@};
"""
