"""Ascend C of the fused int8 DW->PW block (a QDwSep, passes/quant_fuse.py): on a coupled AI core
(Ascend 310P, arch 2002) templates/int8_dwsep_310p.cpp, on a split one (Ascend 910B, arch 2201)
the MIX kernel templates/int8_dwsep_910b.cpp (DW on the AIVs, the int8 GEMM on the AIC, the
requant back on the AIVs, a SyncAll between the phases), each filled with the block's geometry,
its tile (the modeled plan's, schedules/quant_plan.py) and the host-packed constants the kernel
reads. Both share the constants (templates/int8_consts.h), the DW (int8_dw.h) and the epilogue (int8_epi.h) text.

The kernel's arithmetic is ONNX Runtime's QLinearConv, exact (the template's header says how:
float taps on exact integers, the requant in float32 with round half to even by the 1.5 * 2^23
addition, the PW in int8 on the cube with the zero points folded into its int32 bias). The host
packing here is that folding; what cannot be folded exactly is refused in one line.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from fusion.codegen.ascendc.loop_cxx import loop_functions
from fusion.codegen.ascendc.cxx import fill, template
from fusion.codegen.ascendc.emit_kernel import VERSION
from fusion.core.errors import MegafuseError
from fusion.core.ir import Graph, Node, ceil_div
from fusion.core.soc import SocSpec
from fusion.frontend.onnx_ops_quant import QRANGE
from schedules.quant_plan import C0_I8, N0, Int8Plan, int8_workload

CTYPE = {"int8": "int8_t", "uint8": "uint8_t"}
EXACT_BIAS = 2 ** 23        # |DW bias| below this: acc + bias stays an exact float32 integer


@dataclass(frozen=True)
class Int8Kernel:
    """One emitted int8 block: its source, launch and the packed constants (kernel argument
    order: x, w_dw, c_dw, w_pw, b_pw, m_pw, y[, workspace on 910B])."""
    symbol: str
    source: str
    plan: Int8Plan
    block_dim: int
    consts: tuple[np.ndarray, ...]      # w_dw, c_dw, w_pw, b_pw, m_pw
    x_dtype: str
    y_dtype: str
    cin: int
    cout: int
    cob: int                            # 16-column fractals a co-step
    notes: tuple[str, ...] = ()
    kernel_type: str | None = None      # 910B: "mix_aic_1_2" (block_dim counts AIC + 2 AIV blocks)
    workspace_bytes: int = 0            # 910B: the int8 DW results and int32 accumulators of every tile


def _attrs(n: Node, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in n.attrs if k.startswith(prefix)}


def _f(v: float) -> str:
    return repr(float(np.float32(v)))


def _dw_consts(w: np.ndarray, b: np.ndarray, a: dict, c1: int, sw: int) -> tuple[np.ndarray, np.ndarray]:
    c, _, kh, kw = w.shape
    wz = w.astype(np.int32) - np.asarray(a["w_zp"], np.int32).reshape(-1, 1, 1, 1)
    if np.abs(b).max(initial=0) >= EXACT_BIAS:
        raise MegafuseError(f"int8 DW bias magnitude {int(np.abs(b).max())} >= 2^23: the 310P kernel's float "
                            "accumulation would not be exact")
    wp = np.zeros((c1 * C0_I8, kh * kw), np.float32)
    wp[:c] = wz.reshape(c, kh * kw)
    w_dw = np.tile(wp.reshape(c1, C0_I8, kh * kw).transpose(0, 2, 1), (1, 1, 2 if sw == 1 else 1))   # (c1, taps, 64|32)
    bias = np.zeros(c1 * C0_I8, np.float32)
    bias[:c] = b
    mult = np.zeros(c1 * C0_I8, np.float32)
    mult[:c] = np.asarray(a["mult"], np.float32)
    c_dw = np.concatenate([bias.reshape(c1, C0_I8), mult.reshape(c1, C0_I8)], axis=1)      # (c1, 64)
    return np.ascontiguousarray(w_dw), np.ascontiguousarray(c_dw)


def _pw_consts(w: np.ndarray, b: np.ndarray, a: dict, x_dtype: str, c1: int, n16: int,
               cob: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cout, cin = w.shape[:2]
    wz = w.reshape(cout, cin).astype(np.int32) - np.asarray(a["w_zp"], np.int32).reshape(-1, 1)
    if wz.min(initial=0) < -128 or wz.max(initial=0) > 127:
        raise MegafuseError("int8 PW weights minus their zero point leave int8: the cube multiplies int8 "
                            "(quantize weights symmetric int8)")
    off = 128 if x_dtype == "uint8" else 0          # the DW result reaches the cube recentred to int8
    bias = b.astype(np.int64) + (off - int(a["x_zp"])) * wz.sum(axis=1)
    if np.abs(bias).max(initial=0) >= 2 ** 31:
        raise MegafuseError("int8 PW folded bias leaves int32")
    full = np.zeros((c1 * C0_I8, n16 * N0), np.int8)
    full[:cin, :cout] = wz.T
    blocks = []
    for j0 in range(0, n16, cob):     # per co-step: [k1][jb][16 columns][32 k] (L0B "ZN" fractals)
        nb = min(cob, n16 - j0)
        sub = full[:, j0 * N0:(j0 + nb) * N0].reshape(c1, C0_I8, nb, N0)
        blocks.append(sub.transpose(0, 2, 3, 1).reshape(-1))
    w_pw = np.concatenate(blocks)
    bp = np.zeros(n16 * N0, np.int32)
    bp[:cout] = bias
    mp = np.zeros(n16 * N0, np.float32)
    mp[:cout] = np.asarray(a["mult"], np.float32)
    return w_pw, bp, mp


def workspace_bytes(plan: Int8Plan) -> int:
    """910B: the GM workspace of the MIX kernel (templates/int8_dwsep_910b.cpp WS_Q, C_SLOT)."""
    wl = plan.wl
    q = ceil_div(plan.tiles * wl.c1 * plan.th * plan.tw * C0_I8, 64) * 64
    return q + plan.tiles * wl.n16 * plan.thw_al * N0 * 4


def emit_int8(g: Graph, n: Node, plan: Int8Plan, soc: SocSpec, index: int) -> Int8Kernel:
    """The kernel of QDwSep `n` with `plan` (from schedules/quant_plan.py) on `soc`."""
    if plan.soc != soc:
        raise MegafuseError(f"int8 plan is for {plan.soc.name}, not {soc.name}")
    ad, ap = _attrs(n, "dw_"), _attrs(n, "pw_")
    if tuple(ad["dilations"]) != (1, 1):
        raise MegafuseError("int8 DW with dilation is not emitted for Ascend")
    wl = int8_workload(g, n)
    if wl != plan.wl:
        raise MegafuseError("int8 plan does not belong to this block")
    x_dtype = g.types[n.inputs[0]].dtype
    y_dtype = ap["y_dtype"]
    cob = plan.cob
    if plan.double_buffer or (cob % 2 and cob < wl.n16):
        raise MegafuseError(f"int8 plan {plan.describe()} is not one the int8 kernels run "
                            "(schedules/quant_plan.int8_candidates makes those)")
    c1, n16 = wl.c1, wl.n16
    w_dw, c_dw = _dw_consts(g.constants[n.inputs[1]], g.constants[n.inputs[2]], ad, c1, plan.wl.stride[1])
    w_pw, b_pw, m_pw = _pw_consts(g.constants[n.inputs[3]], g.constants[n.inputs[4]], ap, ad["y_dtype"], c1, n16, cob)
    kh, kw = wl.kernel
    sh, sw = wl.stride
    if sw > 1 and plan.tw > 255:
        raise MegafuseError("int8 DW tile wider than 255 pixels at stride 2")
    th, tw = plan.th, plan.tw
    dlo, dhi = QRANGE[ad["y_dtype"]]
    dlo, dhi = max(dlo, ad["lo"]), min(dhi, ad["hi"])
    plo, phi = max(QRANGE[y_dtype][0], ap["lo"]), min(QRANGE[y_dtype][1], ap["hi"])
    key = hashlib.sha256(f"{index}:{wl}:{plan.describe()}:{x_dtype}:{y_dtype}".encode()).hexdigest()[:10]
    sym = f"mf_int8_dwsep_{key}"
    mix = not soc.coupled
    src = fill(template("int8_dwsep_910b.cpp" if mix else "int8_dwsep_310p.cpp"), VERSION=VERSION, SYM=sym, NS=f"i8_{key}", LOOP_FNS=loop_functions(),
               XT=CTYPE[x_dtype], YT=CTYPE[y_dtype], N=wl.batch, C1=c1, H=wl.height, W=wl.width,
               OH=wl.out_h, OW=wl.out_w, KH=kh, KW=kw, SH=sh, SW=sw, PT=wl.pads[0], PL=wl.pads[1],
               TH=th, TW=tw, TWP=ceil_div(tw, 2) * 2, IH=(th - 1) * sh + kh, IW=(tw - 1) * sw + kw,
               NH=plan.tiles_hw[0], NW=plan.tiles_hw[1], THW_AL=plan.thw_al, N16=n16, COB=cob, CO1=wl.co1,
               X_ZP=_f(ad["x_zp"]), DW_LO=_f(dlo - ad["y_zp"]), DW_HI=_f(dhi - ad["y_zp"]),
               DW_ZP=_f(ad["y_zp"] - (128 if ad["y_dtype"] == "uint8" else 0)),
               PW_LO=_f(plo - ap["y_zp"]), PW_HI=_f(phi - ap["y_zp"]), PW_ZP=_f(ap["y_zp"]),
               CORES=plan.cores, I8_CONSTS=template("int8_consts.h"), I8_DW=template("int8_dw.h"),
               I8_EPI=template("int8_epi.h"))
    notes = ((f"MIX kernel: DW on {plan.cores} AIVs, SyncAll, int8 GEMM on {plan.cube_cores} AICs (Fixpipe int32 "
              "to the workspace), SyncAll, requant on the AIVs",) if mix else ())
    return Int8Kernel(sym, src, plan, plan.cube_cores if mix else plan.cores, (w_dw, c_dw, w_pw, b_pw, m_pw),
                      x_dtype, y_dtype, int(g.types[n.inputs[0]].shape[1]), int(g.types[n.outputs[0]].shape[1]),
                      cob, notes, "mix_aic_1_2" if mix else None, workspace_bytes(plan) if mix else 0)


def to_nc1hwc0(x: np.ndarray, c1: int) -> np.ndarray:
    """NCHW -> (N, C1, H, W, 32), channels past C zero."""
    n, c, h, w = x.shape
    out = np.zeros((n, c1 * C0_I8, h, w), x.dtype)
    out[:, :c] = x
    return np.ascontiguousarray(out.reshape(n, c1, C0_I8, h, w).transpose(0, 1, 3, 4, 2))


def from_nc1hwc0(y: np.ndarray, c: int) -> np.ndarray:
    n, c1, h, w, c0 = y.shape
    return np.ascontiguousarray(y.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, :c])
