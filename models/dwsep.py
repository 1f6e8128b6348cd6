"""A single depthwise-separable block: DWConv -> [BN] -> act1 -> PWConv 1x1 -> [BN] -> act2 [-> +x]."""

from __future__ import annotations

import onnx

from .common import AUTO_PADS, GraphBuilder, conv_out_size


def dwsep_block(cin: int = 32, cout: int = 64, h: int = 112, w: int | None = None, stride: int = 1,
                kernel: int = 3, batch: int = 1, act1: str = "relu", act2: str = "relu",
                fold_bn: bool = False, residual: bool = False,
                pads: tuple[int, int, int, int] | None = None, auto_pad: str | None = None,
                dilation: int = 1, hswish_form: str = "op", opset: int = 13,
                dynamic_batch: bool = False, dtype: str = "float32", seed: int = 0) -> onnx.ModelProto:
    """Build one block with input ``x`` [batch, cin, h, w] and output ``y``.

    ``pads`` is (top, left, bottom, right), which is exactly ONNX's
    [x1_begin, x2_begin, x1_end, x2_end]; by default the DW conv pads
    ``dilation * (kernel // 2)`` on every side.  ``residual`` adds the block
    input to the output and needs matching shapes.
    """
    w = h if w is None else w
    if pads is not None and auto_pad is not None:
        raise ValueError("give pads or auto_pad, not both")
    if auto_pad is not None and auto_pad not in AUTO_PADS:
        raise ValueError(f"auto_pad must be one of {AUTO_PADS}, got {auto_pad!r}")
    if pads is not None and len(pads) != 4:
        raise ValueError(f"pads must be (top, left, bottom, right), got {pads!r}")

    top, left, bottom, right = pads if pads is not None else (dilation * (kernel // 2),) * 4
    oh = conv_out_size(h, kernel, stride, dilation, top, bottom, auto_pad)
    ow = conv_out_size(w, kernel, stride, dilation, left, right, auto_pad)
    if oh < 1 or ow < 1:
        raise ValueError(f"DW conv output would be empty ({oh}x{ow})")
    if residual and (stride != 1 or cin != cout or (oh, ow) != (h, w)):
        raise ValueError(f"residual needs stride 1, cin == cout and same spatial size; got stride={stride}, "
                         f"{cin}->{cout}, {h}x{w}->{oh}x{ow}")

    g = GraphBuilder(seed=seed, opset=opset, fold_bn=fold_bn, dtype=dtype, hswish_form=hswish_form)
    t = g.conv_bn("dw", "x", cin, cin, kernel, group=cin, stride=stride, pads=pads,
                  auto_pad=auto_pad, dilation=dilation)
    t = g.activation("dw_act", t, act1)
    t = g.conv_bn("pw", t, cin, cout, gain=1.0 if act2 == "none" else 2.0)
    t = g.activation("pw_act", t, act2)
    if residual:
        t = g.node("Add", "add", ["x", t])

    n = "N" if dynamic_batch else batch
    return g.model("dwsep_block", [n, cin, h, w], t, [n, cout, oh, ow])


def _block(name: str, cin: int, cout: int, h: int, **kw) -> dict:
    return dict(name=name, cin=cin, cout=cout, h=h, **kw)


# The six distinct DW-separable shapes of MobileNetV1 at 224x224 (h = the
# block's input spatial size).
MOBILENET_V1_BLOCKS = [
    _block("v1_32_64_h112", 32, 64, 112),
    _block("v1_64_128_h112_s2", 64, 128, 112, stride=2),
    _block("v1_128_128_h56", 128, 128, 56),
    _block("v1_256_256_h28", 256, 256, 28),
    _block("v1_512_512_h14", 512, 512, 14),
    _block("v1_1024_1024_h7", 1024, 1024, 7),
]

# Shapes that break tiling assumptions: channel counts that are not a multiple
# of 16, a 5x5 kernel, an odd spatial size with stride 2, and batch > 1.
ODD_BLOCKS = [
    _block("odd_c40_56_h28", 40, 56, 28),
    _block("odd_k5_32_48_h28", 32, 48, 28, kernel=5),
    _block("odd_h19_s2_24_40", 24, 40, 19, stride=2),
    _block("odd_batch2_32_64_h28", 32, 64, 28, batch=2),
]

# Wide blocks of today's networks whose double-buffered smallest tile overflows the UB at fp32:
# MnasNet-1.0's last block (1152 expanded channels -> 320 at 7x7, linear projection) and its 5x5
# blocks before it (1152 -> 192), whose fp32 vector-PW tile overflows even single-buffered.
WIDE_BLOCKS = [
    _block("mnasnet_1152_320_h7", 1152, 320, 7, act2="none"),
    _block("mnasnet_1152_192_k5_h7", 1152, 192, 7, kernel=5, act2="none"),
]
