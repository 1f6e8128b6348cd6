"""Host side of a generated kernel: the tiling fill, an ACL launcher, CMake for a CANN install,
a data generator / verifier with a NumPy reference, and the README saying how to run it."""

from __future__ import annotations

from fusion.codegen.ascendc.cxx import snippet, sub, template
from fusion.codegen.ascendc.emit_kernel import VARIANTS, VERSION, EmittedKernel, _fill
from fusion.core.tolerance import TOLERANCE
from fusion.core.sanitize import comment_text
from fusion.codegen.ascendc.emit_twophase import twophase_notes

SOC_VERSION = {"ascend910b2": "Ascend910B2", "ascend910b3": "Ascend910B3", "ascend310p3": "Ascend310P3"}
NP_DTYPE = {"float16": "np.float16", "float32": "np.float32", "uint8": "np.uint8"}


def soc_version(name: str) -> str:
    return SOC_VERSION.get(name, name[:1].upper() + name[1:])


def host_header(ek: EmittedKernel) -> str:
    gm = [a for a in ek.args if a.role in ("input", "weight", "output")]
    rows = "\n".join(f'    {{"{a.name}", {a.nbytes}u, {"true" if a.role == "output" else "false"}}},  '
                     f"// {a.dtype} {a.fmt} {list(a.shape)}" for a in gm)
    return _fill(template("host_header.h"), VERSION=VERSION, SYM=ek.symbol, OPTYPE=ek.op_type, ROWS=rows, BLOCKDIM=ek.block_dim,
                 BLOCKDIM_WHAT=_block_dim_what(ek), WORKSPACE=ek.device_workspace_bytes,
                 WORKSPACE_WHAT=_workspace_what(ek), TILING=ek.tiling_struct)


def _block_dim_what(ek: EmittedKernel) -> str:
    p = ek.plan
    if ek.variant == "two-phase":
        return (f"{'AI cores' if p.soc.coupled else 'MIX_AIC_1_2 blocks (1 AIC + 2 AIVs each)'}: every one "
                "takes part in the SyncAll barriers")
    if ek.variant == "cube-pw-mix":
        return (f"MIX_AIC_1_2 blocks: {ek.block_dim} AICs, each with 2 AIVs ({p.cores} of them have tiles)")
    return f"cores: the plan's core split ({'AI cores' if p.soc.coupled else 'AIVs'})"


def _workspace_what(ek: EmittedKernel) -> str:
    if not ek.workspace_bytes:
        return "no workspace: the kernel keeps everything on chip"
    if ek.variant == "two-phase":
        flags = "SyncAll flags and the SE hidden sums" if ek.plan.workload.se else "SyncAll flags"
        return (f"{flags} ({ek.workspace_zeroed_bytes:,} B, zeroed before every launch), the DW result and "
                f"the pre-activation ({ek.workspace_bytes:,} B in all) after {ek.system_workspace_bytes // 2**20} MiB "
                "of system workspace")
    return (f"the AIV -> AIC hand-off slots ({ek.workspace_bytes:,} B, every tile its own) after the "
            f"{ek.system_workspace_bytes // 2**20} MiB system workspace GetUserWorkspace() skips")


def host_tiling_cpp(ek: EmittedKernel) -> str:
    p = ek.plan
    lines = "".join(sub(snippet("HOST_TILING_LINE"), NAME=name, VALUE=value) for name, value in ek.tiling_fields).rstrip("\n")
    return _fill(template("host_tiling.cpp"), VERSION=VERSION, SYM=ek.symbol, BLOCK=comment_text(ek.block), WORKLOAD=p.workload.describe(), TILE=p.tile.describe(),
                 SOC=p.soc.name, NTILES=p.n_tiles, CORES=p.cores, OPTYPE=ek.op_type, TILING=ek.tiling_struct,
                 LINES=lines, MEMORY=", ".join(f"{sc} {used:,}/{p.capacity(sc):,} B" for sc, used in p.scope_bytes.items())
                 + f" ({'double' if p.tile.double_buffer else 'single'} buffering)",
                 PLANKEY=p.workload.key() + "/" + p.tile.key())


def main_cpp(ek: EmittedKernel) -> str:
    gm = [a for a in ek.args if a.role in ("input", "weight", "output")]
    dev_args = ", ".join(f"dev[{i}]" for i in range(len(gm)))
    zero = (sub(snippet("HOST_ZERO_SYNC"), OFFSET=ek.system_workspace_bytes, BYTES=ek.workspace_zeroed_bytes)
            if ek.workspace_zeroed_bytes else "")
    launches = zero + "".join(sub(snippet("HOST_LAUNCH"), SYMBOL=ln.symbol, BLOCK_DIM=ln.block_dim, DEV_ARGS=dev_args)
                              for ln in ek.launches).rstrip("\n")
    includes = "\n".join(f'#include "aclrtlaunch_{ln.symbol}.h"' for ln in ek.launches)
    return _fill(template("host_main.cpp"), VERSION=VERSION, SYM=ek.symbol, OPTYPE=ek.op_type, INCLUDES=includes, TILING=ek.tiling_struct,
                 LAUNCHES=launches, SOCVERSION=soc_version(ek.plan.soc.name))


def cmake_lists(ek: EmittedKernel) -> str:
    return _fill(template("host_CMakeLists.txt"), VERSION=VERSION, SYM=ek.symbol, OPTYPE=ek.op_type, SOCVERSION=soc_version(ek.plan.soc.name),
                 KIND={"cube-pw-mix": "; a MIX kernel (KERNEL_TYPE_MIX_AIC_1_2 in its source): its AIC and\n"
                                      "# AIV parts are compiled from the one file, launched with block dim = AICs",
                       "cube-pw": "; vector and cube instructions on each AI core",
                       "two-phase": ("; a MIX kernel (KERNEL_TYPE_MIX_AIC_1_2): DW on the AIVs, SyncAll, GEMM on the "
                                     "AICs" if not ek.plan.soc.coupled else "; DW, SyncAll, GEMM on each AI core"),
                       "vector-pw": ""}[ek.variant])


def test_script(ek: EmittedKernel) -> str:
    """gen: random inputs + NumPy golden in the kernel layouts; verify: y.bin against the golden."""
    wl = ek.plan.workload
    args = {a.name: (list(a.shape), a.dtype) for a in ek.args if a.role in ("input", "weight", "output")}
    return _fill(r'''#!/usr/bin/env python3
"""Generated by megafuse @VERSION@ - data and golden for @SYM@ (@OPTYPE@).

    python3 @SYM@_test.py gen DATA_DIR [--seed 0]    random inputs (*.bin) + golden.bin
    python3 @SYM@_test.py verify DATA_DIR            y.bin (written by @SYM@_main) vs golden.bin

Layouts and dtypes are those of op_contract.yaml (NC1HWC0 activations, blocked weights).
The golden is a NumPy float32 reference of the block; it passes when
max|y - golden| / max|golden| <= @TOL@ (fp16 storage, fp32 accumulation).
"""
import argparse
import math
import os

import numpy as np

ARGS = @ARGS@
KERNEL = (@KH@, @KW@)
STRIDE = (@SH@, @SW@)
PADS = (@PT@, @PL@, @PB@, @PR@)
ACT1, ACT2, RESIDUAL = "@ACT1@", "@ACT2@", @RESIDUAL@
CIN, COUT, C0 = @CIN@, @COUT@, 16
SE_ACT, SE_GATE = @SE_ACTS@   # squeeze-and-excitation (None: the block has none)
TOLERANCE = @TOL@


def act(x, spelled, slope=None):
    """The activation as megafuse spells it: name or name(constants); slope: prelu's per channel."""
    kind, _, rest = spelled.partition("(")
    p = [float(v) for v in rest.rstrip(")").split(",")] if rest else []
    if kind == "relu":
        return np.maximum(x, 0)
    if kind == "relu6":
        return np.minimum(np.maximum(x, 0), 6)
    if kind == "hardswish":
        return x * np.minimum(np.maximum(x + 3, 0), 6) / 6
    if kind in ("silu", "sigmoid"):
        e = np.exp(-np.abs(x))
        s = np.where(x >= 0, np.float32(1), e) / (1 + e)
        return x * s if kind == "silu" else s
    if kind == "gelu":
        erf = np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64) / math.sqrt(2))
        return (x * (1 + erf) / 2).astype(np.float32)
    if kind == "gelutanh":
        k = math.sqrt(2 / math.pi)
        return (x * (1 + np.tanh(k * (x + np.float32(0.044715) * x ** 3))) / 2).astype(np.float32)
    if kind == "mish":
        return (x * np.tanh(np.logaddexp(0, x))).astype(np.float32)
    if kind == "leakyrelu":
        return np.where(x >= 0, x, x * np.float32(p[0]))
    if kind == "prelu":
        return np.where(x >= 0, x, x * slope[None, :, None, None, :])
    if kind == "clip":
        return np.minimum(np.maximum(x, np.float32(p[0])), np.float32(p[1]))
    if kind in ("hardsigmoid", "hardswishab"):
        gate = np.minimum(np.maximum(x * np.float32(p[0]) + np.float32(p[1]), 0), 1)
        return gate if kind == "hardsigmoid" else x * gate
    assert kind == "none", spelled
    return x


def reference(x, w_dw, b_dw, w_pw, b_pw, s_dw=None, s_pw=None, w_se1=None, b_se1=None, w_se2=None, b_se2=None,
              res=None):
    storage = x.dtype
    x = x.astype(np.float32)
    n, c1, h, w, _ = x.shape
    (kh, kw), (sh, sw), (pt, pl, pb, pr) = KERNEL, STRIDE, PADS
    oh, ow = (h + pt + pb - kh) // sh + 1, (w + pl + pr - kw) // sw + 1
    xp = np.zeros((n, c1, h + pt + pb, w + pl + pr, C0), np.float32)
    xp[:, :, pt:pt + h, pl:pl + w] = x
    dw = np.zeros((n, c1, oh, ow, C0), np.float32)
    for i in range(kh):
        for j in range(kw):
            dw += xp[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw] * \
                w_dw[None, :, i, j, None, None, :].astype(np.float32)
    dw = act(dw + b_dw[None, :, None, None, :], ACT1, s_dw).astype(storage).astype(np.float32)
    if w_se1 is not None:   # SE (kernel layouts: W1 transposed (C, pad), W2 transposed (mid, C))
        hid = act(dw.mean(axis=(2, 3)).reshape(n, -1) @ w_se1 + b_se1, SE_ACT)[:, :w_se2.shape[0]]
        scale = act(hid @ w_se2 + b_se2.reshape(-1), SE_GATE)
        dw = (dw * scale.reshape(n, c1, 1, 1, C0)).astype(storage).astype(np.float32)
    pw = np.einsum("nchwk,ockq->nohwq", dw, w_pw.astype(np.float32))
    y = act(pw + b_pw[None, :, None, None, :], ACT2, s_pw)
    if res is not None:
        y = y + res.astype(np.float32)
    return y.astype(storage)


def gen(directory, seed):
    rng = np.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)
    data = {}
    for name, (shape, dtype) in ARGS.items():
        if name == "y":
            continue
        a = rng.standard_normal(shape).astype(np.float32)
        if name in ("w_dw", "w_pw", "w_se1"):  # keep activations O(1)
            a *= 1.0 / np.sqrt(KERNEL[0] * KERNEL[1] if name == "w_dw" else CIN)
        data[name] = a.astype(dtype)
    _zero_tails(data)
    for name, a in data.items():
        a.tofile(os.path.join(directory, name + ".bin"))
    golden = reference(**data)
    golden.tofile(os.path.join(directory, "golden.bin"))
    print(f"wrote {len(data)} inputs and golden.bin to {directory}")


def _zero_tails(data):
    """Channels >= CIN / COUT do not exist: zero them like the model's layout conversion does."""
    def mask(channels, c1):
        m = np.zeros(c1 * C0, bool)
        m[:channels] = True
        return m.reshape(c1, C0)
    mi = mask(CIN, data["x"].shape[1])
    mo = mask(COUT, data["w_pw"].shape[0])
    data["x"] *= mi[None, :, None, None, :]
    data["w_dw"] *= mi[:, None, None, :]
    data["b_dw"] *= mi
    data["w_pw"] *= mi[None, :, :, None] * mo[:, None, None, :]
    data["b_pw"] *= mo
    if "w_se1" in data:   # channels >= CIN and the hidden padding do not exist
        mid = data["w_se2"].shape[0]
        data["w_se1"] *= mi.reshape(-1)[:, None]
        data["w_se1"][:, mid:] = 0
        data["b_se1"][mid:] = 0
        data["w_se2"] *= mi.reshape(-1)[None, :]
        data["b_se2"] *= mi
    if "res" in data:
        data["res"] *= mo[None, :, None, None, :]


def verify(directory):
    shape, dtype = ARGS["y"]
    y = np.fromfile(os.path.join(directory, "y.bin"), dtype=dtype).reshape(shape).astype(np.float64)
    g = np.fromfile(os.path.join(directory, "golden.bin"), dtype=dtype).reshape(shape).astype(np.float64)
    err = float(np.abs(y - g).max())
    rel = err / max(float(np.abs(g).max()), 1e-30)
    ok = rel <= TOLERANCE and np.isfinite(y).all()
    print(f"{'PASS' if ok else 'FAIL'} @SYM@: max abs err {err:.3e}, max rel err {rel:.3e} (tolerance {TOLERANCE})")
    return 0 if ok else 1


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["gen", "verify"])
    p.add_argument("directory")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    raise SystemExit(gen(a.directory, a.seed) or 0 if a.command == "gen" else verify(a.directory))
''', VERSION=VERSION, SYM=ek.symbol, OPTYPE=ek.op_type, ARGS=repr(args), KH=wl.kernel[0], KW=wl.kernel[1],
                 SH=wl.stride[0], SW=wl.stride[1], PT=wl.pads[0], PL=wl.pads[1], PB=wl.pads[2], PR=wl.pads[3],
                 ACT1=wl.act1, ACT2=wl.act2, RESIDUAL=wl.residual, CIN=wl.cin, COUT=wl.cout,
                 SE_ACTS=repr((wl.se_act, wl.se_gate) if wl.se else (None, None)),
                 TOL=repr(TOLERANCE[wl.dtype]))


def _variant_notes(ek: EmittedKernel) -> str:
    """What the kernel does on its units, per variant (the data flow fusion/cost/ models)."""
    p, wl = ek.plan, ek.plan.workload
    dw = ("- DW taps: one fp16 `MulAddDst` per tap over the tile (8 pixels a repeat, the tap's 16 weights one\n"
          "  DataBlock read by every pixel, the source block stride the conv stride), accumulating in fp16\n"
          "  as the vendor's vector depthwise does; one `Cast` to fp32 for the bias and act1.\n"
          if wl.dtype == "float16" else
          "- DW taps: per output row one fp32 `MulAddDst` per channel half (8 channels a DataBlock), the\n"
          "  source block stride the conv stride; one rounding per tap.\n")
    rows = ("- Every GM row segment is a whole number of 32 B DataBlocks (one pixel of 16 channels is 32 B in\n"
            "  fp16, 64 B in fp32), so `DataCopy` with `DataCopyParams` covers the tails; `DataCopyPad` is\n"
            "  not needed (and is unavailable on 310P).\n")
    when = "once per core: one co-step" if p.co_steps == 1 else "one DMA per co-step"
    cube = ("- The cube's operands: A = the DW result (pixels × Cin) in L0A as 16-row fractals (the tile's\n"
            f"  {p.th * p.tw} pixels padded to {p.thw_al}), B = the FRACTAL_Z weights, which L1 holds exactly as\n"
            f"  they are in GM ({when}), moved to L0B with each 16×16 fractal transposed; Mmad\n"
            "  accumulates in fp32 in L0C, whose NZ layout (per 16 output channels all pixels) is NC1HWC0.\n")
    if ek.variant == "vector-pw":
        return (dw + "- PW on the vector unit: one `Axpy` per (input channel, pixel) over the co-step's output blocks\n"
                "  (pw_acc is pixel-major), then bias, act2, [residual] and a strided `Cast` back to NC1HWC0.\n"
                + rows + "- The PW MACs read dw_out through the scalar unit (`GetValue`) because the emulated API has no\n"
                "  per-lane broadcast (`Brcb`); on a device this stage is scalar-issue bound — counters, not\n"
                "  timings, are what the emulator verifies.\n")
    if ek.variant == "cube-pw":
        return (dw + "- PW on the cube of the same AI core: per tile the DW result moves UB → L1 (one DMA, each\n"
                "  16-channel column padded to 16-row fractals) → L0A once; per co-step the weights GM → L1 →\n"
                "  L0B, `Mmad`, then per output block L0C → UB (`DataCopy` with `BLOCK_MODE_MATRIX`, fp32, into\n"
                "  dw_acc, which is free until the next tile's DW), bias, act2, [residual] and the cast.\n"
                + cube + rows)
    if ek.variant == "two-phase":
        return dw + twophase_notes(ek) + rows
    fix = p.fixpipe_epilogue
    epi = ("  Fixpipe writes y itself: the bias is the Mmad's initial C (bias table, `TPosition::C2`),\n"
           f"  act2 {wl.act2} on the fly (`reluEn`), fp32 → fp16 by `quantPre = F322F16`; the NZ output is\n"
           "  NC1HWC0, so one Fixpipe per valid tile row (one per tile for full-width tiles).\n"
           if fix else
           "  Fixpipe writes the fp16 pre-activation to the tile's second slot; the AIV reads it back,\n"
           f"  widens it to fp32 block by block and adds the bias, act2 {wl.act2}"
           f"{', the residual' if wl.residual else ''} and the cast\n"
           f"  ({'a residual' if wl.residual else 'act2 ' + wl.act2} is no Fixpipe epilogue).\n")
    return (dw + f"- One MIX kernel (`KERNEL_TYPE_MIX_AIC_1_2`, block dim {ek.block_dim} = AICs): AIV i of the plan's\n"
            f"  {p.cores} runs the DW of tiles i, i + {p.cores}, … and writes each tile's DW result to the tile's\n"
            "  own GM workspace slot (`GetUserWorkspace`); the AIC of its block (AIVs 2g, 2g + 1) reads the\n"
            "  slot GM → L1 → L0A, the weights GM → L1 → L0B, and runs `Mmad`.\n" + epi
            + f"- Cross-core flags (mode 2) pace the sides by rounds: AIVs set FLAG_DW after round k's hand-off\n"
            f"  (both AIVs every round, with or without a tile), the AIC sets FLAG_PW after the round; an AIV\n"
            f"  finishes a round {p.mix_lag} rounds later, so at most {p.mix_lag + 1} flags are outstanding (the counters stop at 15).\n"
            f"- Workspace: {ek.workspace_bytes:,} B of hand-off slots after the "
            f"{ek.system_workspace_bytes // 2**20} MiB system workspace; the host allocates "
            f"{ek.device_workspace_bytes:,} B.\n" + cube + rows)


def readme(ek: EmittedKernel, pkg_rel: str, cost=None, emu_report=None) -> str:
    p, wl = ek.plan, ek.plan.workload
    bufs = "\n".join(f"| {b.name} | {b.scope} | {list(b.shape)} | {b.dtype} | {b.copies} | "
                     f"{b.aligned_bytes(p.soc.ub_align):,} | {b.role} |" for b in p.kernel_buffers)
    notes = "".join(f"\n- {n}" for n in ek.notes)
    modeled = ""
    if cost is not None:
        modeled = (f"\n## Modeled figures (cost model, not measured)\n\n"
                   f"time {cost.time_us:.2f} µs (launch {cost.launch_us:.2f} µs), GM read {cost.gm_read_bytes:,} B, "
                   f"GM write {cost.gm_write_bytes:,} B (traffic ratio {cost.traffic_ratio:.2f} of the minimum "
                   f"{cost.min_gm_bytes:,} B), bottleneck {cost.bottleneck}. See `benchmark.json` in the op package.\n")
    sig = ek.signature
    memory = ", ".join(f"{sc} {used:,} of {p.capacity(sc):,} B" for sc, used in p.scope_bytes.items())
    cores = (f"{p.cores} AIVs (`GetBlockIdx()` = block × 2 + `GetSubBlockIdx()`), served by {ek.block_dim} AICs"
             if ek.variant == "cube-pw-mix" else f"{p.cores} cores (`GetBlockIdx()`; tiles round robin over them)")
    return _fill(template("host_README.md"), VERSION=VERSION, SYM=ek.symbol, BLOCK=comment_text(ek.block), OPTYPE=ek.op_type, SOCNAME=p.soc.name,
                 SOCVERSION=soc_version(p.soc.name), WORKLOAD=wl.describe(), TILE=p.tile.describe(), TH=p.th,
                 TW=p.tw, IH=p.in_tile_h, IW=p.in_tile_w, CIB=p.cib, COB=p.cob, NTILES=p.n_tiles, CORES=cores,
                 CISTEPS=p.ci_steps, COSTEPS=p.co_steps, MEMORY=memory, VARIANT=ek.variant,
                 VARIANT_WHAT=VARIANTS[ek.variant], DTYPE=wl.dtype, SIG=sig, PKG=pkg_rel, BUFS=bufs, NOTES=notes,
                 VARIANT_NOTES=_variant_notes(ek), MODELED=modeled)
