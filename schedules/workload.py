"""The fused DW→PW workload and the tile configuration: frozen, hashable, content-keyed."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from fusion.core.ir import C0, ceil_div  # noqa: F401  (re-exported: the plan modules import it from here)
from schedules.activations import parse

ACTIVATIONS = ("relu", "relu6", "hardswish", "none")


def conv_out(size: int, pad_lo: int, pad_hi: int, k: int, stride: int) -> int:
    """Output extent of an undilated convolution window along one axis (ONNX Conv, floor mode)."""
    return (size + pad_lo + pad_hi - k) // stride + 1


@dataclass(frozen=True)
class DwSepWorkload:
    """DW conv (k×k, group=C) → bias → act1 → PW 1×1 → bias → act2 → [+ residual].

    BN is already folded into the conv weights and the two biases. Shapes are logical
    (NCHW); the kernel runs on NC1HWC0 with channel tails zero-padded to C0."""

    batch: int
    cin: int
    cout: int
    height: int
    width: int
    kernel: tuple[int, int] = (3, 3)
    stride: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (1, 1, 1, 1)  # top, left, bottom, right
    act1: str = "relu"
    act2: str = "relu"
    residual: bool = False
    dtype: str = "float32"
    # channel LayerNorm between DW (+ bias) and PW (ConvNeXt): its epsilon; None = no norm. The
    # norm's scale and shift are folded into the PW weights and bias (schedules/channel_norm.py)
    ln_eps: float | None = None
    # squeeze-and-excitation between act1 and PW (schedules/se.py): mean over H, W -> 1x1 conv to
    # se_mid channels + bias -> se_act -> 1x1 conv back to cin + bias -> se_gate, scaling the DW
    # result per (image, channel) before the PW; se_mid = 0: no SE
    se_mid: int = 0
    se_act: str = "none"
    se_gate: str = "none"
    # a classifier head written as this block (passes/head_dwsep.py): the vendor runs it as a global
    # pool and a GEMM, which is the pair it is compared with
    head: bool = False

    def __post_init__(self):
        for act in (self.act1, self.act2) + ((self.se_act,) if self.se_mid else ()):
            parse(act)   # ValueError on an unknown activation
        if self.ln_eps is not None and (self.act1 != "none" or not self.ln_eps > 0):
            raise ValueError(f"a channel LayerNorm block has act1 none and epsilon > 0, got {self.act1!r}, "
                             f"{self.ln_eps!r}")
        if self.se_mid < 0 or (self.se_mid and not se_gate_ok(self.se_gate)):
            raise ValueError(f"invalid squeeze-and-excitation ({self.se_mid}, {self.se_gate!r})")

    @property
    def se(self) -> bool:
        return self.se_mid > 0

    @property
    def pointwise_dw(self) -> bool:
        """The DW is 1x1, stride 1, unpadded, without act1: the shape of a chain's GEMM stage, whose
        DW is the identity (fusion/driver/chain_stage.py); the one test of it (the two-phase
        plan's cores and gemm_only, the tile policy's shapes)."""
        return (self.kernel == (1, 1) and self.stride == (1, 1) and tuple(self.pads) == (0, 0, 0, 0)
                and self.act1 == "none")

    @property
    def out_height(self) -> int:
        return conv_out(self.height, self.pads[0], self.pads[2], self.kernel[0], self.stride[0])

    @property
    def out_width(self) -> int:
        return conv_out(self.width, self.pads[1], self.pads[3], self.kernel[1], self.stride[1])

    @property
    def c1(self) -> int:
        return ceil_div(self.cin, C0)

    @property
    def co1(self) -> int:
        return ceil_div(self.cout, C0)

    @property
    def flops(self) -> int:
        """Multiply-adds ×2 of the logical (unpadded) DW and PW convolutions."""
        px = self.batch * self.out_height * self.out_width
        return 2 * px * self.cin * (self.kernel[0] * self.kernel[1] + self.cout)

    def describe(self) -> str:
        k = f"{self.kernel[0]}x{self.kernel[1]}"
        s = f"s{self.stride[0]}" if self.stride[0] == self.stride[1] else f"s{self.stride}"
        res = " +res" if self.residual else ""
        act1 = "ln" if self.ln_eps is not None else self.act1
        se = f" +se{self.se_mid}({self.se_act},{self.se_gate})" if self.se else ""
        return (f"{self.cin}->{self.cout} @{self.height}x{self.width} dw{k} {s} "
                f"{act1}/{self.act2}{res}{se} n{self.batch} {self.dtype}")

    def key(self) -> str:
        d = asdict(self)
        if d["ln_eps"] is None:   # the keys of blocks without a norm stay what they were
            del d["ln_eps"]
        if not self.se:   # keys of blocks without SE are those they had before SE existed
            for k in ("se_mid", "se_act", "se_gate"):
                d.pop(k)
        if not self.head:
            d.pop("head")
        return _digest(d)


@dataclass(frozen=True)
class TileConfig:
    """One point of the schedule space. Units: output pixels for th/tw, C0-blocks for cob/cib."""

    th: int
    tw: int
    cob: int = 1          # output-channel blocks per PW step
    cib: int = 0          # input-channel blocks per DW step (0 = all of C1 at once)
    double_buffer: bool = True
    pw_engine: str = "vector"  # vector | cube | twophase (schedules/twophase.py)
    cores: int = 0        # 0 = as many as there are tiles, up to the SoC's cores
    # a channel LayerNorm block's norm in a phase of its own between the DW and the GEMM (two-phase
    # only, schedules/norm_phase.py) instead of inside DW units that hold all of C1
    norm_phase: bool = False
    # two-phase: the GEMM streams its PW weights per K step even where its N tile would fit L1
    # (schedules/twophase.b_resident); the tile policy tries both and keeps the faster modeled
    b_stream: bool = False
    # two-phase: rows of a GEMM tile (a multiple of 16, at most what L0A / L0C hold); 0 = the rule
    # (schedules/twophase.gemm_rows). A chain sets it so a GEMM stage's tiles are its producer's
    # rows on the same cores (fusion/driver/chain_local.py)
    gemm_bm: int = 0

    def __post_init__(self):
        if self.th < 1 or self.tw < 1 or self.cob < 1 or self.cib < 0 or self.cores < 0:
            raise ValueError(f"invalid tile {self}")
        if self.pw_engine not in ("vector", "cube", "twophase"):
            raise ValueError(f"unknown PW engine {self.pw_engine!r}")
        if self.norm_phase and self.pw_engine != "twophase":
            raise ValueError(f"a norm phase needs the two-phase kernel, not pw:{self.pw_engine}")
        if self.b_stream and self.pw_engine != "twophase":
            raise ValueError(f"streamed GEMM weights need the two-phase kernel, not pw:{self.pw_engine}")
        if self.gemm_bm < 0 or self.gemm_bm % 16:
            raise ValueError(f"GEMM tile rows {self.gemm_bm} are not a multiple of 16")
        if self.gemm_bm and self.pw_engine != "twophase":
            raise ValueError(f"GEMM tile rows need the two-phase kernel, not pw:{self.pw_engine}")

    @property
    def copies(self) -> int:
        """Copies of each double-buffered buffer (queue depth): buffer_copies(double_buffer)."""
        return buffer_copies(self.double_buffer)

    def describe(self) -> str:
        cib = f" cib{self.cib}" if self.cib else ""
        return (f"{self.th}x{self.tw} cob{self.cob}{cib} "
                f"{'db' if self.double_buffer else 'sb'} pw:{self.pw_engine}" + (" ln:phase" if self.norm_phase else "")
                + (" B:stream" if self.b_stream else "") + (f" bm{self.gemm_bm}" if self.gemm_bm else ""))

    def key(self) -> str:
        d = asdict(self)
        if not self.norm_phase:   # the keys of tiles without a norm phase stay what they were
            del d["norm_phase"]
        if not self.b_stream:     # (likewise b_stream and gemm_bm)
            del d["b_stream"]
        if not self.gemm_bm:
            del d["gemm_bm"]
        return _digest(d)


def se_gate_ok(gate: str) -> bool:
    """The SE gate: sigmoid, or hardsigmoid(a,b) as schedules/activations spells it."""
    if gate == "sigmoid":
        return True
    try:
        return parse(gate).kind == "hardsigmoid"
    except ValueError:
        return False


def buffer_copies(double_buffer: bool) -> int:
    """Copies of a ping/pong buffer: 2 double-buffered, else 1."""
    return 2 if double_buffer else 1


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]
