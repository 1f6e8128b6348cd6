"""Shared test factories: small graphs, the two SoCs, small kernel plans, and whole-graph equality.

Importable from every test module (pyproject: pytest `pythonpath = ["tests"]`); the fixtures in
conftest.py wrap the same functions. One definition each, instead of a copy per test file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np
import onnx

import fusion
from fusion.core.ir import Graph, Node, TensorType, assert_structural_equal
from fusion.core.tolerance import TOLERANCE
from fusion.verify.ascend_check import check_ascend
from fusion.verify.check import compare, ort_reference, random_inputs
from fusion.verify.emu_run import run_emitted
from fusion.verify.sensitivity import relative_change
from models.mobilenet import mobilenet_v1
from fusion.core.soc import SocSpec, get_soc
from schedules.plan import KernelPlan, make_plan
from schedules.program import count_steps
from schedules.program_twophase import build_twophase
from schedules.reference import kernel_layout_reference
from schedules.workload import DwSepWorkload, TileConfig

F32, F16 = "float32", "float16"

# the two SoCs of the SoC table (fusion/core/soc.py), under the names the tests use
B910: SocSpec = get_soc("ascend910b2")
P310: SocSpec = get_soc("ascend310p3")
SOC = B910   # the default target of the pass tests

# A small DW-separable block: 16 -> 32 channels (C1 = 1, CO1 = 2), 8x8, 3x3 s1 pads 1, fp16 relu/relu
SMALL_WL = DwSepWorkload(1, 16, 32, 8, 8, dtype=F16)


def graph(nodes: Iterable[Node], inputs: Iterable[str], outputs: Iterable[str],
          types: Mapping[str, tuple], consts: Mapping[str, np.ndarray] | None = None, name: str = "t") -> Graph:
    """A Graph from nodes, names and `types` as TensorType argument tuples: {"x": ((1, 4), "float32")}."""
    return Graph(name, tuple(nodes), tuple(inputs), tuple(outputs),
                 {k: v if isinstance(v, TensorType) else TensorType(*v) for k, v in types.items()},
                 dict(consts or {}))


def conv_attrs(kernel=(1, 1), group=1, pads=None, strides=(1, 1), dilations=(1, 1)) -> dict:
    """The attributes the ONNX importer gives a Conv node (fusion/frontend)."""
    pads = pads if pads is not None else (0, 0, 0, 0)
    return dict(kernel=tuple(kernel), strides=tuple(strides), pads=tuple(pads), dilations=tuple(dilations),
                group=group)


def assert_graph_equal(got: Graph, expected: Graph, rtol: float = 0.0) -> None:
    """Whole-graph structural equality: node order, op types, attributes (same keys, same order),
    the dataflow between nodes, graph inputs and outputs by name, every tensor's type, constants by
    value (np.allclose within rtol, same shape and dtype). Node names and the names of tensors that
    are neither graph inputs nor outputs are normalized (passes generate them). Unused constants and
    types of tensors no node touches are compared too, by set of names after normalization."""
    assert_structural_equal(got, expected, rtol)
    # structural_diff binds only tensors the nodes use: stray constants would slip through
    assert len(got.constants) == len(expected.constants), (
        f"constants: {sorted(got.constants)} vs {sorted(expected.constants)}")
    used = {t for n in got.nodes for t in (*n.inputs, *n.outputs) if t} | set(got.inputs) | set(got.outputs)
    assert set(got.constants) <= used, f"unused constants left in the graph: {set(got.constants) - used}"


def small_plan(tile: TileConfig | tuple = (8, 8, 2, 0, True, "vector"), soc: SocSpec = B910,
               wl: DwSepWorkload = SMALL_WL) -> KernelPlan:
    """A kernel plan of the small block (by default the whole 8x8 image as one tile, vector PW, 910B);
    `tile` as a TileConfig or its argument tuple (th, tw, cob, cib, double_buffer, engine[, cores])."""
    return make_plan(wl, tile if isinstance(tile, TileConfig) else TileConfig(*tile), soc)


def _span(o0: int, o1: int, stride: int, pad: int, k: int, n: int) -> int:
    """Input rows (or columns) that outputs [o0, o1) read: the window clipped to the image."""
    lo, hi = o0 * stride - pad, (o1 - 1) * stride - pad + k - 1
    return min(hi, n - 1) - max(lo, 0) + 1


def hand_weights(wl: DwSepWorkload) -> dict[str, int]:
    """Bytes of each weight tensor in its NC1HWC0 blocks (biases fp32)."""
    e = 2 if wl.dtype == "float16" else 4
    kh, kw = wl.kernel
    return {"w_dw": wl.c1 * kh * kw * 16 * e, "b_dw": wl.c1 * 16 * 4,
            "w_pw": wl.co1 * wl.c1 * 16 * 16 * e, "b_pw": wl.co1 * 16 * 4}


def hand_min_bytes(wl: DwSepWorkload) -> int:
    """The minimal GM bytes of a block: x, the weights, the residual and y, once each."""
    e = 2 if wl.dtype == "float16" else 4
    out = wl.batch * wl.co1 * wl.out_height * wl.out_width * 16 * e
    return (wl.batch * wl.c1 * wl.height * wl.width * 16 * e + sum(hand_weights(wl).values())
            + out * (2 if wl.residual else 1))


def hand_traffic(p: KernelPlan) -> dict[str, int]:
    """DMA bytes by kind of a fused plan, from the workload, the tile and the plan's core split alone
    (independent of schedules/ and fusion/cost): each output element stored once; each tile reads
    its input window (halo included, clipped to the image) over all of C1 once; the residual once
    per output element; the DW weights once per vector core; the PW weights once per loading core
    (the AICs on 910B MIX) when resident, else once per tile; the PW bias once per core that runs
    the epilogue (the AICs when the Fixpipe does it); the 910B MIX hand-off: each whole tile's DW
    result (and PW result, when the AIV runs the epilogue) written once and read back once."""
    wl, t = p.workload, p.tile
    e = 2 if wl.dtype == "float16" else 4
    (kh, kw), (sh, sw), (pt, pl) = wl.kernel, wl.stride, wl.pads[:2]
    ho, wo = wl.out_height, wl.out_width
    window = sum(_span(r, min(r + t.th, ho), sh, pt, kh, wl.height) * _span(c, min(c + t.tw, wo), sw, pl, kw, wl.width)
                 for r in range(0, ho, t.th) for c in range(0, wo, t.tw))
    out = wl.batch * wl.co1 * ho * wo * 16 * e
    w = hand_weights(wl)
    mix = p.variant == "cube-pw-mix"
    pw_loaders = p.aic_cores if mix else p.cores
    bias_loaders = p.aic_cores if mix and p.fixpipe_epilogue else p.cores
    weights = (p.cores * (w["w_dw"] + w["b_dw"]) + bias_loaders * w["b_pw"]
               + (pw_loaders if p.pw_weights_resident else p.n_tiles) * w["w_pw"])
    handoff = 0
    if mix:   # whole tiles: a ragged edge tile is padded to th x tw
        pixels = wl.batch * -(-ho // t.th) * t.th * -(-wo // t.tw) * t.tw
        handoff = 2 * pixels * 16 * e * (wl.c1 + (0 if p.fixpipe_epilogue else wl.co1))
    return {"input": wl.batch * wl.c1 * 16 * e * window, "weights": weights, "residual": out if wl.residual else 0,
            "output": out, "handoff": handoff, "intermediate": 0}

def check_ops_model(m, target, dtype="float32"):
    """A model compiled for `target` against ONNX Runtime, int64 / bool outputs too (compared as float64: a wrong index or
    a flipped mask is an error of at least 1 against a range of at least 1)."""
    cm = fusion.compile(m, target=target, dtype=dtype)
    feeds = random_inputs(cm, seed=0)
    ref = ort_reference(m, feeds)
    other = ort_reference(m, random_inputs(cm, seed=1))
    for name, r in ref.items():
        r, o = np.asarray(r, np.float64), np.asarray(other[name], np.float64)
        assert np.abs(o - r).max() > 1e-3 * max(np.abs(r).max(), 1e-6), name
    got = cm.run(feeds)
    for name, r in ref.items():
        assert got[name].dtype.kind == r.dtype.kind, (name, got[name].dtype, r.dtype)  # int64, bool, float
    res = compare(got, ref, TOLERANCE[dtype], 0, relative_change(ref, other))
    assert res.passed, (target, dtype, res.to_json())
    return cm


def is_head(block) -> bool:
    """A classifier head fused as a DW -> PW block (passes/head_dwsep.py), as its workload records it."""
    return block.workload.head


def dw_blocks(cm) -> list:
    """cm's fused DW-separable blocks of the model, without a fused classifier head."""
    return [b for b in cm.fused_blocks if not is_head(b)]


def block_args(wl: DwSepWorkload, seed: int = 0) -> dict[str, np.ndarray]:
    """Random NC1HWC0 operands of one fused DW -> PW block's kernel (x, w_dw, b_dw, w_pw, b_pw and,
    for a residual block, res), the channels past Cin / Cout zero; biases float32, the rest wl.dtype.
    A head block's taps are its global pool's, as the pass writes them."""
    rng = np.random.default_rng(seed)
    kh, kw = wl.kernel
    mi = (np.arange(wl.c1 * 16) < wl.cin).reshape(wl.c1, 16)
    mo = (np.arange(wl.co1 * 16) < wl.cout).reshape(wl.co1, 16)
    a = {"x": rng.standard_normal((wl.batch, wl.c1, wl.height, wl.width, 16)) * mi[None, :, None, None, :],
         "w_dw": rng.standard_normal((wl.c1, kh, kw, 16)) / 3 * mi[:, None, None, :],
         "b_dw": rng.standard_normal((wl.c1, 16)) * mi,
         "w_pw": rng.standard_normal((wl.co1, wl.c1, 16, 16)) / np.sqrt(wl.cin) * mi[None, :, :, None]
         * mo[:, None, None, :],
         "b_pw": rng.standard_normal((wl.co1, 16)) * mo}
    if wl.residual:
        a["res"] = rng.standard_normal((wl.batch, wl.co1, wl.out_height, wl.out_width, 16)) * mo[None, :, None, None, :]
    if wl.head:   # a head block's DW is a global average pool (passes/head_dwsep.py): every tap 1 / (kh kw)
        a["w_dw"] = np.full((wl.c1, kh, kw, 16), 1.0 / (kh * kw)) * mi[:, None, None, :]
    f32 = {"b_dw", "b_pw"}
    return {k: np.ascontiguousarray(v.astype("float32" if k in f32 else wl.dtype)) for k, v in a.items()}


def run_twophase_checked(ek, built, wl: DwSepWorkload, seed: int = 0, identity_dw: bool = False):
    """Runs an emitted two-phase kernel on the emulator with block_args(wl, seed) and checks it against its
    program (schedules/program_twophase.build_twophase): GM bytes and cube fractals equal, the vector
    work instruction for instruction (program.dw_ops, block_epilogue_ops: what templates/dw.h and
    epilogue_block.h issue), the output the NumPy reference's within 2e-2 of its range.
    identity_dw: a chain's gemm_only GEMM stage, which has no DW phase: its w_dw 1 and b_dw 0 on the
    real channels, as the chain's host packs them. Returns (program, the emulator's run)."""
    prog = build_twophase(ek.plan)
    args = block_args(wl, seed)
    if identity_dw:
        real = (np.arange(wl.c1 * 16) < wl.cin).reshape(wl.c1, 1, 1, 16)
        args["w_dw"] = np.ascontiguousarray(np.broadcast_to(real, args["w_dw"].shape).astype(args["w_dw"].dtype))
        args["b_dw"] = np.zeros_like(args["b_dw"])
    y, counters, (run,) = run_emitted(ek, built, args)
    want = prog.counts
    keys = ("gm_read_bytes", "gm_write_bytes", "cube_fractals")
    assert {k: counters[k] for k in keys} == {k: want[k] for k in keys}
    assert (counters["vector_instructions"], counters["vector_repeats"]) == (want["vector_instrs"],
                                                                             want["vector_repeats"])
    ref = kernel_layout_reference(wl, **args)
    err = np.abs(y.astype(np.float64) - ref).max() / np.abs(ref).max()
    assert err <= 2e-2, err
    return prog, run


def mobilenet_v1_file(tmp_path_factory, tag: str, resolution: int = 32, width: float = 0.25) -> str:
    """A MobileNetV1 ONNX file (models/mobilenet.py) in a fresh temporary directory: the small chain
    tests' model (32 px, width 0.25 by default)."""
    p = tmp_path_factory.mktemp(tag) / "v1.onnx"
    onnx.save(mobilenet_v1(resolution=resolution, width=width), p)
    return str(p)


def cube_fractals_by_core(soc, gemm, run) -> tuple[list[int], list[int]]:
    """(emulated, programmed) cube fractals per GEMM core of a two-phase kernel's GEMM phase (910B:
    the AICs' rows of the run), padded to one length: GEMM cores past the M tiles hold none (nor
    cores past the launch)."""
    want = []
    for units in gemm.assignment:
        c: Counter = Counter()
        for u in units:
            for it in gemm.units[u]:
                count_steps(soc, it, 1, c)
        want.append(c["cube_fractals"])
    got = ([row["cube_fractals"] for row in run.per_core] if soc.coupled else
           [row["cube_fractals"] for core, row in zip(run.cores, run.per_core) if core.core_type == "AIC"])
    n = max(len(got), len(want))
    return got + [0] * (n - len(got)), want + [0] * (n - len(want))


def check_with_plans(cm, plans: dict):
    """`check -t ascend` of a compiled model with some chain plans replaced (a chain in image chunks,
    loads ahead...): (the result, its one chain's ChainCheck); cm's plans are restored after, so a
    module's other tests see the chain as compiled."""
    before = dict(cm.chain_plans)
    cm.chain_plans.update(plans)
    try:
        res = check_ascend(cm, None)
    finally:
        cm.chain_plans.update(before)
    (cc,) = res.chains
    return res, cc
