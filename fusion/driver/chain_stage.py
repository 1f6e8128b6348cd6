"""GEMM stages: a 1x1 convolution (+ its activation) between fused blocks, run inside a chain.

MobileNetV2's fused blocks are never adjacent: each inverted-residual block's expansion 1x1 conv
sits between two of them, so a chain of fused blocks alone never forms there, and every block still
pays its launch next to the expansion conv's own launch (5-6 µs each on 910B, 2.9 on 310P, against
1-2 µs of work). A GEMM stage lets the chain run the expansion too.

The stage's kernel is the two-phase kernel (schedules/twophase.py) of an identity depthwise: 1x1
taps of weight 1, bias 0, no activation, so phase 1 copies x into the GEMM's A workspace exactly
(x * 1 + 0 is x in fp16 and fp32) and phase 2 is the conv on the cube with bias and activation as
any fused block's PW. Everything the fused blocks have (plan, cost model, Ascend C, emulator
counters) holds for it unchanged; the copy is counted in its modeled time. Where x already has the
GEMM's A layout (its N x H x W pixels a multiple of 16; past one image a tile's rows read one run
per image) the plan is gemm_only: no copy, no barrier, the GEMM reads x
(schedules/program_twophase.gemm_only_ok); inside a chain, where x is a boundary
tensor with slack after it, every stage but a first one is (fusion/chain.direct_stage_reads).

Pattern: an `op` step computing a blocked 1x1 Conv (group 1, stride 1, no padding, NC1HWC0 in and
out), optionally followed by the activation step that is its output's only consumer.
Legality: float16 (the cube kernels), an activation the kernel carries without per-channel slopes,
a two-phase plan that fits (both SoCs: 910B chains sync with the hard SyncAll, 310P with the
soft one), and one that pays: its body and a SyncAll below the vendor-like conv kernel it replaces
with its launch and the launch a chain split at the stage adds (MobileNetV2 at batch 8 on 310P3
chained three expansion convs whose bodies were twice the vendor's, making that chain 46.8 µs
slower than its members launched one by one).
Rewrite: a GemmStage record; fusion/driver/chain.py decides whether it joins a chain.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from passes.fuse_dwsep import activation_of
from schedules.activations import is_valid, needs_slope
from schedules.plan import KernelPlan
from schedules.program_twophase import a_layout_aligned, gemm_only_ok
from schedules.workload import DwSepWorkload
from fusion.core.ir import C0
from schedules.workload import ceil_div
from fusion.core.sanitize import block_ident, display
from fusion.cost import model_block
from fusion.cost.twophase import sync_all_us
from fusion.cost.vendor_baseline import layer_kernel
from fusion.cost.vendor_layers import conv_layer
from fusion.driver.tile_policy import two_phase_plan

log = logging.getLogger("megafuse.chain")


@dataclass(frozen=True)
class GemmStage:
    name: str                  # identifier for code and files (fusion.core.sanitize.block_ident)
    steps: tuple[str, ...]     # the program steps it replaces in a chain: conv [, activation]
    members: tuple[str, ...]   # the graph nodes (the vendor-like kernels it replaces)
    x: str                     # input tensor (NC1HWC0)
    out: str                   # output tensor: the activation's, else the conv's
    workload: DwSepWorkload    # identity DW -> the conv as the PW
    plan: KernelPlan
    model_name: str = ""       # the conv node's name in the model: display only (escaped)

    tile_source = "default"


def identity_dw(cin: int, dtype: str):
    """w_dw, b_dw of the identity depthwise in the kernel's layouts ((C1, 1, 1, C0), (C1, C0))."""

    c1 = ceil_div(cin, C0)
    mask = (np.arange(c1 * C0) < cin).reshape(c1, C0)
    return (np.ascontiguousarray(mask[:, None, None, :].astype(dtype)),
            np.zeros((c1, C0), np.float32))


def _why_not(g, conv, soc, dtype) -> str | None:
    if conv.op_type != "Conv" or len(conv.inputs) < 3:
        return "not a conv with bias"
    if (conv.attr("kernel") != (1, 1) or conv.attr("group", 1) != 1 or conv.attr("strides", (1, 1)) != (1, 1)
            or tuple(conv.attr("pads", (0, 0, 0, 0))) != (0, 0, 0, 0) or conv.attr("dilations", (1, 1)) != (1, 1)):
        return "not a 1x1 stride-1 unpadded dense conv"
    tx, ty = g.types[conv.inputs[0]], g.types[conv.outputs[0]]
    if tx.layout != "NC1HWC0" or ty.layout != "NC1HWC0":
        return "does not run on NC1HWC0"
    if dtype != "float16":
        return "the cube kernels are float16 only"
    return None


def _loses(plan: KernelPlan, name: str, soc, dtype: str) -> str | None:
    """Why the stage costs a chain more than running the vendor-like conv kernel it replaces, or
    None: its body and a SyncAll against that kernel's time with its launch plus the launch a chain
    split at the stage adds (the stage's own, as a lower bound: a conservative refusal, so a stage at
    the end of a chain, which splits nothing, may stay where it loses by less than a launch). MODELED."""
    wl = plan.workload
    k = model_block(plan, name, timeline=False)
    in_chain = k.time_us - k.launch_us + sync_all_us(soc)
    vendor = layer_kernel(soc, conv_layer(name, wl.batch, wl.cin, wl.cout, wl.height, wl.width, 1, 1, 0, wl.act2),
                          dtype).time_us
    if in_chain < vendor + k.launch_us:
        return None
    return (f"{in_chain:.2f} us in a chain (body + SyncAll) >= {vendor:.2f} us of the vendor-like conv kernel "
            f"with its launch + {k.launch_us:.2f} us of the launch a split chain adds (MODELED)")


def stage_plan(wl: DwSepWorkload, target) -> KernelPlan | None:
    """The two-phase plan of a 1x1 conv as a GEMM stage (it runs in a chain only), gemm_only where x
    is already the A layout (no copy); None where none fits."""
    plan = two_phase_plan(wl, target, in_chain=True)
    if plan is not None and gemm_only_ok(plan) and a_layout_aligned(plan):
        plan = replace(plan, gemm_only=True)
    return plan


def find_stages(cm, taken: set[str]) -> dict[str, GemmStage]:
    """Every GEMM stage of the compiled program, by its first step's name. `taken`: identifiers in
    use (the fused blocks'); the stages' are added."""

    g, soc, dtype = cm.graph, cm.target.soc, cm.dtype
    nodes = {n.name: n for n in g.nodes}
    steps = cm.program.steps
    out: dict[str, GemmStage] = {}
    for i, st in enumerate(steps):
        conv = nodes.get(st.name) if st.kind == "op" else None
        if conv is None or _why_not(g, conv, soc, dtype) is not None:
            continue
        act, act_steps = "none", ()
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        if (nxt is not None and nxt.kind == "op" and nxt.name in nodes and nxt.params[:1] == [st.out]
                and g.uses(st.out) == 1):
            a, _ = activation_of(g, nodes[nxt.name])
            if a is not None and a.slope is None and is_valid(a.act) and not needs_slope(a.act) and len(a.nodes) == 1:
                act, act_steps = a.act, (nxt.name,)
        tx, ty = g.types[conv.inputs[0]], g.types[conv.outputs[0]]
        n, _, h, w, _ = tx.shape
        wl = DwSepWorkload(n, tx.channels, ty.channels, h, w, kernel=(1, 1), pads=(0, 0, 0, 0),
                           act1="none", act2=act, dtype=dtype)
        plan = stage_plan(wl, cm.target)
        if plan is None:
            log.info("chain: %s not a GEMM stage: no two-phase plan fits", display(st.name))
            continue
        why = _loses(plan, conv.name, soc, dtype)
        if why is not None:
            log.info("chain: %s not a GEMM stage: %s", display(st.name), why)
            continue
        name = block_ident(st.name, len(taken), taken)
        out[st.name] = GemmStage(name, (st.name, *act_steps), (conv.name, *act_steps), st.params[0],
                                 (steps[i + 1].out if act_steps else st.out), wl, plan, conv.name)
    return out


def stage_arrays(stage: GemmStage, cm) -> dict[str, np.ndarray]:
    """w_dw, b_dw, w_pw, b_pw of the stage's kernel: the identity DW and the conv step's own
    blocked weights ([co1, ci1, ci0, co0]) and bias ((co1, C0) float32), the fused PW's layouts."""
    conv = next(s for s in cm.program.steps if s.name == stage.steps[0])
    w_dw, b_dw = identity_dw(stage.workload.cin, stage.workload.dtype)
    return {"w_dw": w_dw, "b_dw": b_dw, "w_pw": conv.params[1].numpy(), "b_pw": conv.params[2].numpy()}


__all__ = ["GemmStage", "find_stages", "identity_dw", "stage_arrays", "stage_plan"]
