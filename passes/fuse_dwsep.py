"""fuse_dwsep: DWConv → act1 → PWConv(1×1) → [act2] → [Add residual] → one FusedDwSep node.

Runs after fold_bn, so BN (present in the model or pre-folded) is already in the convs' weights
and biases. Pattern, legality and profitability are separate functions; every candidate
(every depthwise conv) that is not fused yields a Refusal with the reason and the numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from fusion.core.ir import Graph, Node, TensorType, make_node
from fusion.core.soc import SocSpec
from passes.act_forms import match_elementwise_act
from passes.channel_norm import ChannelNorm, fold_into_pw, match_channel_norm
from passes.grouped_pw import dense_refusal, dense_weights
from passes.records import Refusal
from passes.se_match import SeMatch, match_se
from schedules.activations import needs_slope, spell
from schedules.plan import smallest_plan
from schedules.workload import DwSepWorkload

ACT_OPS = {"Relu": "relu", "Relu6": "relu6", "HardSwish": "hardswish"}
# ops the fused kernel carries as act1/act2, with their constants (schedules/activations.py)
ACT_NODE_OPS = ("Relu", "Relu6", "HardSwish", "Clip", "LeakyRelu", "PRelu", "HardSigmoid", "x*Sigmoid(x)",
                "Gelu", "GELU/Mish as exporters spell them")
GLOBAL_OPS = ("GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceMax", "ReduceSum")
FUSED_OP = "FusedDwSep"
# the fused node's positional inputs (the one statement of the contract): the data input, the four
# folded constants, the per-channel slope of each activation that reads one (s_dw for act1, then
# s_pw for act2; fp32, one value per channel), then the residual when the block has one
FUSED_WEIGHTS = ("w_dw", "b_dw", "w_pw", "b_pw")
FUSED_SLOPES = ("s_dw", "s_pw")
# a squeeze-and-excitation block's weights (schedules/se.py), after the slopes, before the residual:
# the reduce conv (R, C, 1, 1) and bias (R,), the expand conv (C, R, 1, 1) and bias (C,)
FUSED_SE = ("w_se1", "b_se1", "w_se2", "b_se2")


def _slope_keys(node: Node) -> tuple[str, ...]:
    return tuple(k for k, act in zip(FUSED_SLOPES, (node.attr("act1"), node.attr("act2"))) if needs_slope(act))


def fused_weight_inputs(node: Node) -> tuple[str, ...]:
    """The fused node's constant inputs, in FUSED_WEIGHTS order."""
    return node.inputs[1:1 + len(FUSED_WEIGHTS)]


def fused_slope_inputs(node: Node) -> dict[str, str]:
    """The fused node's slope constants by FUSED_SLOPES key (only those its activations read)."""
    keys = _slope_keys(node)
    return dict(zip(keys, node.inputs[1 + len(FUSED_WEIGHTS):1 + len(FUSED_WEIGHTS) + len(keys)]))


def _se_keys(node: Node) -> tuple[str, ...]:
    return FUSED_SE if node.attr("se_mid", 0) else ()


def fused_se_inputs(node: Node) -> tuple[str, ...]:
    """The fused node's SE weights, in FUSED_SE order (() without SE)."""
    start = 1 + len(FUSED_WEIGHTS) + len(_slope_keys(node))
    return node.inputs[start:start + len(_se_keys(node))]


def fused_data_inputs(node: Node) -> tuple[str, ...]:
    """The fused node's runtime inputs: x, then the residual if any."""
    return (node.inputs[0], *node.inputs[1 + len(FUSED_WEIGHTS) + len(_slope_keys(node)) + len(_se_keys(node)):])


@dataclass(frozen=True)
class Act:
    """One activation as matched in the graph: its kernel spelling and the nodes it replaces."""
    act: str
    nodes: tuple[Node, ...]
    slope: np.ndarray | None = field(default=None, compare=False)  # per-channel (C,) fp32

    @property
    def output(self) -> str:
        return self.nodes[-1].outputs[0]


@dataclass(frozen=True)
class Match:
    dw: Node
    act1: Act | None
    pw: Node | None
    act2: Act | None = None
    add: Node | None = None
    residual: str | None = None
    norm: ChannelNorm | None = None   # a channel LayerNorm in place of act1 (passes/channel_norm.py)
    se: SeMatch | None = None

    @property
    def members(self) -> tuple[Node, ...]:
        acts = lambda a: a.nodes if a is not None else ()  # noqa: E731
        return tuple(n for n in (self.dw, *acts(self.norm), *acts(self.act1), *acts(self.se), self.pw,
                                 *acts(self.act2), self.add)
                     if n is not None)

    @property
    def output(self) -> str:
        return self.members[-1].outputs[0]


def is_depthwise(g: Graph, n: Node) -> bool:
    if n.op_type != "Conv" or not g.is_constant(n.inputs[1]):
        return False
    cin = g.types[n.inputs[0]].shape[1]
    w = g.types[n.inputs[1]].shape
    return n.attr("group", 1) == cin and cin > 1 and w[0] == cin and w[1] == 1


# --- pattern ------------------------------------------------------------------------------
def _channel_slope(g: Graph, n: Node, slope: np.ndarray) -> np.ndarray | None:
    """A PRelu slope that varies along the channel axis only, as (C,); None for any other shape."""
    x = g.types[n.inputs[0]].shape
    s = (1,) * (len(x) - slope.ndim) + tuple(slope.shape)
    if len(x) != 4 or s[0] != 1 or s[2:] != (1, 1) or s[1] not in (1, x[1]):
        return None
    return np.broadcast_to(np.asarray(slope, np.float32).reshape(-1), (x[1],)).copy()


def activation_of(g: Graph, n: Node, per_channel: bool = False) -> tuple[Act | None, str | None]:
    """The activation starting at node `n` (None, why-not when `n` is not one the kernel carries).
    per_channel: the target's fused kernels carry per-channel slopes (schedules.targets)."""
    op = n.op_type
    if op in ACT_OPS:
        return Act(ACT_OPS[op], (n,)), None
    if op == "Clip":
        lo, hi = n.attr("min", -math.inf), n.attr("max", math.inf)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return None, f"Clip '{n.name}' has an open bound ({lo}, {hi}): not a kernel activation"
        return Act(spell("clip", lo, hi), (n,)), None
    if op == "LeakyRelu":
        return Act(spell("leakyrelu", n.attr("alpha", 0.01)), (n,)), None
    if op == "PRelu":
        slope = g.constants.get(n.inputs[1]) if len(n.inputs) > 1 else None
        if slope is None:
            return None, f"PRelu '{n.name}' slope is not a constant"
        flat = np.asarray(slope, np.float64).ravel()
        if flat.size and np.all(flat == flat[0]):
            return Act(spell("leakyrelu", float(flat[0])), (n,)), None
        per_c = _channel_slope(g, n, np.asarray(slope))
        if per_c is None:
            return None, (f"PRelu '{n.name}' slope {list(np.shape(slope))} varies along a spatial axis, "
                          f"not per channel")
        if not per_channel:
            return None, (f"PRelu '{n.name}' has a per-channel slope ({flat.size} values): this target's "
                          f"fused kernels carry one slope per activation (llvm, sim and ascend fuse it)")
        return Act("prelu", (n,), per_c), None
    if op == "HardSigmoid":
        return Act(spell("hardsigmoid", n.attr("alpha", 0.2), n.attr("beta", 0.5)), (n,)), None
    if op == "Gelu":   # opset 20
        approx = n.attr("approximate", "none")
        approx = approx.decode() if isinstance(approx, bytes) else approx
        return Act("gelutanh" if approx == "tanh" else "gelu", (n,)), None
    return None, None


def activation_at(g: Graph, t: str, per_channel: bool = False) -> tuple[Act | None, str | None]:
    """The activation applied to tensor `t`: its sole consumer, x * Sigmoid(x) (Sigmoid and Mul
    both reading t) as SiLU, x * HardSigmoid(x; a, b) as a generalized hard-swish, or a GELU / Mish
    subgraph as exporters write them (passes/act_forms.py)."""
    users = g.consumers_of(t)
    if t in g.outputs:
        return None, "is a graph output"
    if len(users) == 2:
        sig = next((u for u in users if u.op_type == "Sigmoid"), None)
        mul = next((u for u in users if u.op_type == "Mul"), None)
        if (sig is not None and mul is not None and sorted(mul.inputs) == sorted((t, sig.outputs[0]))
                and g.uses(sig.outputs[0]) == 1 and sig.outputs[0] not in g.outputs):
            return Act("silu", (sig, mul)), None   # SiLU / Swish as torch.onnx.export writes nn.SiLU
        hs = next((u for u in users if u.op_type == "HardSigmoid"), None)
        mul = next((u for u in users if u.op_type == "Mul"), None)
        if (hs is not None and mul is not None and sorted(mul.inputs) == sorted((t, hs.outputs[0]))
                and g.uses(hs.outputs[0]) == 1):
            a, b = hs.attr("alpha", 0.2), hs.attr("beta", 0.5)
            return Act(spell("hardswishab", a, b), (hs, mul)), None
    if len(users) == 1:
        act, why = activation_of(g, users[0], per_channel)
        if act is not None or why is not None:
            return act, why
    spelled = match_elementwise_act(g, t)   # GELU / Mish written out (passes/act_forms.py)
    if spelled is not None:
        return Act(*spelled), None
    return None, None


def _global_gate(g: Graph, users: list[Node]) -> str | None:
    """The name of a global reduction among the consumers (a squeeze-and-excitation branch)."""
    for u in users:
        if u.op_type in GLOBAL_OPS:
            return f"{u.op_type} '{u.name}'"
    return None


def _consumer_kinds(g: Graph, t: str, users: list[Node]) -> list[str]:
    """What each consumer of `t` is, in the words of the network it comes from."""
    outs = {u.outputs[0]: u for u in users}
    silu = {u.name for u in users if u.op_type == "Mul" and any(
            sorted(u.inputs) == sorted((t, o)) for o, v in outs.items() if v.op_type in ("Sigmoid", "HardSigmoid"))}
    kinds = []
    for u in users:
        if u.name in silu:
            continue   # named with its gate below
        if u.op_type in ("Sigmoid", "HardSigmoid") and any(
                v.name in silu and u.outputs[0] in v.inputs for v in users):
            kinds.append(f"{'SiLU' if u.op_type == 'Sigmoid' else 'hard-swish'} x*{u.op_type}(x) ('{u.name}')")
        elif u.op_type in GLOBAL_OPS:
            kinds.append(f"squeeze-excite {u.op_type} '{u.name}'")
        elif u.op_type == "Add" and all(not g.is_constant(i) for i in u.inputs):
            kinds.append(f"residual Add '{u.name}'")
        elif u.op_type in ("Split", "Slice", "Concat"):
            kinds.append(f"{u.op_type} '{u.name}' (a channel shuffle or grouped branch)")
        else:
            kinds.append(f"{u.op_type} '{u.name}'")
    return kinds


def consumers_reason(g: Graph, t: str, users: list[Node], what: str) -> str:
    """Why a chain stops at a tensor several nodes read: which nodes, and what that blocks."""
    if not users:
        return f"{what} output is not read"
    return (f"{what} output has {len(users)} consumers ({'; '.join(_consumer_kinds(g, t, users))}): the "
            f"fused kernel keeps its intermediates on chip and writes one output, so a tensor read "
            f"outside the chain cannot be fused away")


def _se_ahead(g: Graph, n: Node, steps: int = 4) -> str | None:
    """A global reduction reading the output of `n` or of the few single-use elementwise nodes
    after it (an SE block behind a leftover scale/shift)."""
    for _ in range(steps):
        users = g.consumers_of(n.outputs[0])
        gate = _global_gate(g, users) or next(
            (_global_gate(g, g.consumers_of(t)) for t in n.inputs if _global_gate(g, g.consumers_of(t))), None)
        if gate or len(users) != 1 or users[0].op_type not in ("Mul", "Add", "Sub", "Div"):
            return gate
        n = users[0]
    return None


def match_chain(g: Graph, dw: Node, per_channel: bool = False) -> tuple[Match | None, str | None]:
    """Walk the single-consumer chain after a depthwise conv. Returns (match, why-not)."""
    def sole_consumer(t: str, what: str) -> tuple[Node | None, str | None]:
        users = g.consumers_of(t)
        if t in g.outputs:
            return None, f"{what} output is a graph output"
        if len(users) != 1:
            gate = _global_gate(g, users)
            if gate:
                return None, (f"{what} output feeds a squeeze-and-excitation block ({gate}): its global "
                              f"average over the whole image gates every pixel, a global dependency a "
                              f"tiled kernel cannot see")
            return None, consumers_reason(g, t, users, what)
        return users[0], None

    norm = match_channel_norm(g, dw.outputs[0])
    act1, why_act = (None, None) if norm is not None else activation_at(g, dw.outputs[0], per_channel)
    se, why_se = ((None, None) if norm is not None
                  else match_se(g, act1.output if act1 is not None else dw.outputs[0], activation_at))
    if why_se:
        return None, f"{why_se}: a global dependency the fused kernel carries only as a whole SE block"
    if norm is not None:
        nxt, why = sole_consumer(norm.output, f"channel LayerNorm '{norm.nodes[-1].name}'")
        if nxt is not None and nxt.op_type != "Conv":
            why, nxt = f"channel LayerNorm is followed by {nxt.op_type} '{nxt.name}', not a pointwise Conv", None
    elif se is not None:   # squeeze-and-excitation between the DW activation and the PW
        nxt, why = sole_consumer(se.output, f"squeeze-and-excitation Mul '{se.nodes[-1].name}'")
        if nxt is not None and nxt.op_type != "Conv":
            nxt, why = None, f"squeeze-and-excitation is followed by {nxt.op_type} '{nxt.name}', not a pointwise Conv"
    elif act1 is not None:
        nxt, why = sole_consumer(act1.output, f"DW activation '{act1.nodes[-1].name}'")
    else:   # DW with no activation (a linear bottleneck input) may go straight to PW
        nxt, why = sole_consumer(dw.outputs[0], f"DW '{dw.name}'")
        if nxt is not None and nxt.op_type != "Conv":
            why = why_act or (f"DW is followed by {nxt.op_type} '{nxt.name}', not an activation "
                              f"({', '.join(ACT_NODE_OPS)}) or a pointwise Conv")
            nxt = None
    if nxt is None:
        return None, why
    if nxt.op_type != "Conv":
        gate = _se_ahead(g, nxt)
        if gate:
            return None, (f"squeeze-and-excitation block ({gate}) between DW and PW after {nxt.op_type} "
                          f"'{nxt.name}': a global dependency a tiled kernel cannot see")
        return None, f"activation is followed by {nxt.op_type} '{nxt.name}', not a pointwise Conv"
    pw = nxt
    m = Match(dw, act1, pw, se=se)
    act2, _ = activation_at(g, pw.outputs[0], per_channel)
    if act2 is not None:
        m = Match(dw, act1, pw, act2=act2, se=se)
    users = g.consumers_of(m.output)
    nxt = users[0] if len(users) == 1 and m.output not in g.outputs else None
    if nxt is not None and nxt.op_type == "Add":
        other = [t for t in nxt.inputs if t != m.output]
        if len(other) == 1 and not g.is_constant(other[0]) \
                and g.types[other[0]].shape == g.types[m.output].shape:
            m = Match(dw, act1, pw, m.act2, nxt, other[0], se=se)
    return replace(m, norm=norm), None


# --- legality -----------------------------------------------------------------------------
def legality(g: Graph, m: Match) -> str | None:
    dw, pw = m.dw, m.pw
    if dw.attr("dilations", (1, 1)) != (1, 1):
        return f"dilation {dw.attr('dilations')[0]} unsupported (only 1)"
    kh, kw = dw.attr("kernel")
    if kh > 7 or kw > 7:
        return f"DW kernel {kh}x{kw} larger than 7x7"
    if pw.attr("kernel") != (1, 1):
        return f"second conv is {pw.attr('kernel')[0]}x{pw.attr('kernel')[1]}, not 1x1"
    if pw.attr("group", 1) != 1:
        why = dense_refusal(pw.attr("group"), g.types[pw.inputs[0]].shape[1], g.types[pw.outputs[0]].shape[1])
        if why:
            return why
    if pw.attr("strides", (1, 1)) != (1, 1):
        return f"pointwise stride {pw.attr('strides')} unsupported (only 1)"
    if pw.attr("pads", (0, 0, 0, 0)) != (0, 0, 0, 0):
        return f"pointwise conv has pads {pw.attr('pads')}"
    if not g.is_constant(pw.inputs[1]) or (len(pw.inputs) > 2 and pw.inputs[2] and not g.is_constant(pw.inputs[2])):
        return "pointwise weights are not constant"
    if len(dw.inputs) > 2 and dw.inputs[2] and not g.is_constant(dw.inputs[2]):
        return "depthwise bias is not constant"
    dt = g.types[dw.inputs[0]].dtype
    if dt not in ("float32", "float16"):
        return f"dtype {dt} unsupported"
    if len(g.types[dw.inputs[0]].shape) != 4:
        return "input is not 4-D"
    return None


def workload_of(g: Graph, m: Match, dtype: str) -> DwSepWorkload:
    n, c, h, w = g.types[m.dw.inputs[0]].shape
    return DwSepWorkload(
        batch=n, cin=c, cout=g.types[m.pw.outputs[0]].shape[1], height=h, width=w,
        kernel=tuple(m.dw.attr("kernel")), stride=tuple(m.dw.attr("strides", (1, 1))),
        pads=tuple(m.dw.attr("pads", (0, 0, 0, 0))), act1=m.act1.act if m.act1 else "none",
        act2=m.act2.act if m.act2 else "none", residual=m.add is not None, dtype=dtype,
        ln_eps=m.norm.eps if m.norm is not None else None, head=bool(m.dw.attr("head", False)),
        **({"se_mid": m.se.mid, "se_act": m.se.act, "se_gate": m.se.gate} if m.se else {}))


# --- profitability ------------------------------------------------------------------------
def profitability(wl: DwSepWorkload, soc: SocSpec) -> str | None:
    plan = smallest_plan(wl, soc)
    if not plan.fits():
        scope, used, cap = plan.overflows()[0]
        return (f"{scope} needs {used / 1024:.1f} KiB > {cap / 1024:.1f} KiB on {soc.name} "
                f"even at the smallest tile (1x1, single-buffered)")
    return None


# --- rewrite ------------------------------------------------------------------------------
def _bias(g: Graph, conv: Node, channels: int) -> np.ndarray:
    if len(conv.inputs) > 2 and conv.inputs[2]:
        return np.asarray(g.constants[conv.inputs[2]], np.float32)
    return np.zeros(channels, np.float32)


def rewrite(g: Graph, m: Match, wl: DwSepWorkload, consts: dict, types: dict) -> Node:
    name = m.dw.name.removesuffix("_dw") + "_fused" if m.dw.name.endswith("_dw") else f"{m.dw.name}_fused"
    names = {k: f"{name}__{k}" for k in FUSED_WEIGHTS}
    consts[names["w_dw"]] = g.constants[m.dw.inputs[1]]
    consts[names["b_dw"]] = _bias(g, m.dw, wl.cin)
    consts[names["w_pw"]] = dense_weights(np.asarray(g.constants[m.pw.inputs[1]]), m.pw.attr("group", 1))
    consts[names["b_pw"]] = _bias(g, m.pw, wl.cout)
    if m.norm is not None:   # the norm's scale and shift into the PW
        consts[names["w_pw"]], consts[names["b_pw"]] = fold_into_pw(m.norm, consts[names["w_pw"]],
                                                                    consts[names["b_pw"]])
    for key, act in zip(FUSED_SLOPES, (m.act1, m.act2)):
        if act is not None and needs_slope(act.act):
            names[key] = f"{name}__{key}"
            consts[names[key]] = act.slope
    se_attrs = {}
    if m.se is not None:
        for key, value in zip(FUSED_SE, (m.se.w1, m.se.b1, m.se.w2, m.se.b2)):
            names[key] = f"{name}__{key}"
            consts[names[key]] = np.asarray(value, np.float32)
        se_attrs = dict(se_mid=wl.se_mid, se_act=wl.se_act, se_gate=wl.se_gate)
    for k, t in names.items():
        types[t] = TensorType(consts[t].shape, str(consts[t].dtype))
    inputs = [m.dw.inputs[0], *(names[k] for k in FUSED_WEIGHTS + FUSED_SLOPES + FUSED_SE if k in names)]
    if m.residual:
        inputs.append(m.residual)
    return make_node(name, FUSED_OP, inputs, [m.output],
                     kernel=wl.kernel, strides=wl.stride, pads=wl.pads, act1=wl.act1, act2=wl.act2,
                     residual=wl.residual, members=[n.name for n in m.members], **se_attrs,
                     **({"ln_eps": wl.ln_eps} if wl.ln_eps is not None else {}),
                     **({"head": True} if wl.head else {}))


def fuse_dwsep(g: Graph, soc: SocSpec, dtype: str | None = None, gate=None,
               per_channel: bool = False) -> tuple[Graph, list[Refusal]]:
    """gate: optional callable workload -> None (fuse) | reason (no tile fits, or the block is
    faster unfused on the target: fusion/fallback.FusionGate), checked after legality in place of
    the vector-PW profitability check.
    per_channel: fuse per-channel PRelu (the target's kernels read a slope operand)."""
    refusals: list[Refusal] = []
    consts, types = dict(g.constants), dict(g.types)
    replaced: dict[str, Node] = {}   # member name → fused node (placed at the last member)
    removed: set[str] = set()
    for dw in g.nodes:
        if not is_depthwise(g, dw):
            continue
        m, why = match_chain(g, dw, per_channel)
        if m is None:
            refusals.append(Refusal("fuse_dwsep", (dw.name,), why))
            continue
        why = legality(g, m)
        if why:
            refusals.append(Refusal("fuse_dwsep", tuple(n.name for n in m.members), why))
            continue
        wl = workload_of(g, m, dtype or g.types[dw.inputs[0]].dtype)
        # the gate asks the tile policy, which knows every engine the target has (a block too wide
        # for a vector-PW tile may fit the two-phase kernel); without one, the vector-PW minimum
        why = gate(wl) if gate is not None else profitability(wl, soc)
        if why:
            refusals.append(Refusal("fuse_dwsep", tuple(n.name for n in m.members), why, "profitability"))
            continue
        fused = rewrite(g, m, wl, consts, types)
        replaced[m.members[-1].name] = fused
        removed.update(n.name for n in m.members)
    if not replaced:
        return g, refusals
    nodes = [replaced.get(n.name, n) for n in g.nodes if n.name not in removed or n.name in replaced]
    return g.rewrite(nodes, constants=consts, types=types), refusals


def fused_workload(g: Graph, node: Node, dtype: str) -> DwSepWorkload:
    """The workload of an already-fused node (shapes from its input/output types)."""
    x = g.types[node.inputs[0]]
    n, c, h, w = x.logical_shape
    cout = g.types[node.outputs[0]].logical_shape[1]
    return DwSepWorkload(n, c, cout, h, w, tuple(node.attr("kernel")), tuple(node.attr("strides")),
                         tuple(node.attr("pads")), node.attr("act1"), node.attr("act2"),
                         bool(node.attr("residual")), dtype, ln_eps=node.attr("ln_eps"),
                         se_mid=node.attr("se_mid", 0), se_act=node.attr("se_act", "none"),
                         se_gate=node.attr("se_gate", "none"), head=bool(node.attr("head", False)))
