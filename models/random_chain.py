"""Random DW-separable chains for the fuzzer (tests/verify/test_fuzz_chains.py, benchmarks/fuzz_chains.py).

A ChainSpec is plain data (frozen, printable: a failing example reads as its spec); `build_chain`
turns it into an ONNX model with input ``x`` and output ``y`` (plus ``extra_<i>`` outputs where a
block's DW activation also feeds a graph output, which keeps that block from fusing).
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import helper

from .common import ACTIVATIONS, HSWISH_FORMS, GraphBuilder, conv_out_size

KERNELS = (1, 3, 5, 7)


@dataclass(frozen=True)
class BlockSpec:
    cout: int
    kernel: int = 3
    stride: int = 1
    pads: tuple[int, int, int, int] = (1, 1, 1, 1)   # top, left, bottom, right
    bn: bool = True
    act1: str = "relu"
    act2: str = "relu"
    residual: bool = False          # honoured only where legal (stride 1, cin == cout, same size)
    extra_consumer: bool = False    # the DW activation is also a graph output


@dataclass(frozen=True)
class ChainSpec:
    cin: int
    h: int
    w: int
    blocks: tuple[BlockSpec, ...]
    dtype: str = "float32"
    hswish_form: str = "op"
    batch: int = 1
    seed: int = 0

    def __post_init__(self):
        assert self.hswish_form in HSWISH_FORMS and self.dtype in ("float32", "float16")
        for b in self.blocks:
            assert b.kernel in KERNELS and b.stride in (1, 2) and b.act1 in ACTIVATIONS and b.act2 in ACTIVATIONS


def output_hw(h: int, w: int, b: BlockSpec) -> tuple[int, int]:
    top, left, bottom, right = b.pads
    return (conv_out_size(h, b.kernel, b.stride, 1, top, bottom, None),
            conv_out_size(w, b.kernel, b.stride, 1, left, right, None))


def build_chain(spec: ChainSpec) -> onnx.ModelProto:
    g = GraphBuilder(seed=spec.seed, opset=14, dtype=spec.dtype, hswish_form=spec.hswish_form)
    t, c, h, w = "x", spec.cin, spec.h, spec.w
    extras = []
    for i, b in enumerate(spec.blocks):
        oh, ow = output_hw(h, w, b)
        if oh < 1 or ow < 1:
            raise ValueError(f"block {i}: empty output {oh}x{ow}")
        block_in = t
        wdw = g.he_weight(c, 1, b.kernel)
        bn1 = g.bn_stats(c)
        d = g.conv(f"b{i}_dw", t, wdw, None if b.bn else g.rng.normal(0, 0.1, c), stride=b.stride, group=c,
                   pads=b.pads)
        if b.bn:
            d = g.batchnorm(f"b{i}_dw_bn", d, bn1)
        d = g.activation(f"b{i}_dw_act", d, b.act1)
        if b.extra_consumer:
            extras.append(g.node("Relu", f"extra_{i}", [d]))
        wpw = g.he_weight(b.cout, c, 1, gain=1.0 if b.act2 == "none" else 2.0)
        bn2 = g.bn_stats(b.cout)
        p = g.conv(f"b{i}_pw", d, wpw, None if b.bn else g.rng.normal(0, 0.1, b.cout))
        if b.bn:
            p = g.batchnorm(f"b{i}_pw_bn", p, bn2)
        p = g.activation(f"b{i}_pw_act", p, b.act2)
        if b.residual and b.stride == 1 and c == b.cout and (oh, ow) == (h, w) and p != block_in:
            p = g.node("Add", f"b{i}_add", [block_in, p])
        t, c, h, w = p, b.cout, oh, ow
    if t == "x":   # every activation "none" and no conv? (cannot happen: each block has two convs)
        raise ValueError("empty chain")
    m = g.model("random_chain", [spec.batch, spec.cin, spec.h, spec.w], t, [spec.batch, c, h, w])
    for e in extras:
        m.graph.output.append(helper.make_tensor_value_info(e, g.elem_type, None))
    return m


def chain_strategy(max_blocks: int = 3, max_channels: int = 80, max_spatial: int = 40):
    """A hypothesis strategy of ChainSpecs: channels 1..80, spatial 1..40, kernel 1/3/5/7,
    stride 1/2, asymmetric pads, BN or not, every activation (and HardSwish form), residuals,
    extra consumers, fp32/fp16 storage. (hypothesis is a dev dependency: imported here only.)"""
    from hypothesis import strategies as st

    @st.composite
    def block(draw, h: int, w: int) -> BlockSpec:
        k = draw(st.sampled_from(KERNELS))
        pads = tuple(draw(st.integers(0, k - 1)) for _ in range(4))
        top, left, bottom, right = pads
        bottom = max(bottom, k - h - top)      # keep the output at least 1x1
        right = max(right, k - w - left)
        return BlockSpec(cout=draw(st.integers(1, max_channels)), kernel=k, stride=draw(st.sampled_from((1, 2))),
                         pads=(top, left, bottom, right), bn=draw(st.booleans()),
                         act1=draw(st.sampled_from(ACTIVATIONS)), act2=draw(st.sampled_from(ACTIVATIONS)),
                         residual=draw(st.booleans()), extra_consumer=draw(st.integers(0, 4)) == 0)

    @st.composite
    def chain(draw) -> ChainSpec:
        cin, h, w = (draw(st.integers(1, max_channels)), draw(st.integers(1, max_spatial)),
                     draw(st.integers(1, max_spatial)))
        blocks, c, hh, ww = [], cin, h, w
        for _ in range(draw(st.integers(1, max_blocks))):
            b = draw(block(hh, ww))
            if draw(st.booleans()) and b.residual:   # make residuals legal half the time they are asked for
                b = BlockSpec(c, b.kernel, 1, (b.kernel // 2,) * 4, b.bn, b.act1, b.act2, True, b.extra_consumer)
            blocks.append(b)
            c, (hh, ww) = b.cout, output_hw(hh, ww, b)
        return ChainSpec(cin, h, w, tuple(blocks), dtype=draw(st.sampled_from(("float32", "float16"))),
                         hswish_form=draw(st.sampled_from(HSWISH_FORMS)), seed=draw(st.integers(0, 2**16)))

    return chain()
