"""`megafuse compile --emit-onnx -o DIR`: DIR/model.fused.onnx, the user's graph with each fused
block and each block chain replaced by one node of the `ai.megafuse` domain.

Pattern: a unit is a block chain (fusion/driver/chain.py) or a fused block outside every chain. Its node
is the op package's (fusion/codegen/ascendc/node_spec.py: the same NodeSpec writes op_proto), so its
tensors are the kernel's: x (and a residual) in NC1HWC0, the folded weights in the kernel layouts
as initializers (a chain's packed into one uint8 blob), y in NC1HWC0. Standard ONNX nodes convert
at the boundary (Cast to the compute dtype, Pad channels to 16, Reshape, Transpose; and back); a
unit reading another unit's output reads its NC1HWC0 tensor directly.
Legality: the unit's x, residual and output are tensors of the user's graph, and the nodes between
them (found backwards from the output, stopping at x, the residual and constants) are read by
nothing outside the unit; otherwise the export is refused with the tensor named.
Rewrite: those nodes leave, the conversions and the custom node come in, unused initializers and
value_info go; every other node, input, output and attribute is the user's, unchanged.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fusion.codegen.ascendc.emit_chain import emit_chain, pack_weights
from schedules.wave import member_plan
from fusion.codegen.ascendc.emit_kernel import emit_kernel, kernel_names
from fusion.codegen.ascendc.node_spec import DOMAIN, DOMAIN_VERSION, NodeSpec, chain_spec, fused_ops_of, plan_spec
from fusion.driver.chain_stage import stage_arrays
from fusion.core.errors import MegafuseError
from fusion.core.ir import C0
from fusion.frontend.onnx_import import read_model
from fusion.core.sanitize import display, inside
from passes.head_dwsep import HEAD_SUFFIX
from passes.layout import OUT_SUFFIX
from schedules.activations import needs_slope

FILE_NAME = "model.fused.onnx"
ONNX_DTYPE = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "uint8": TensorProto.UINT8}
LAYOUT_OPS = ("ToNC1HWC0",)   # t -> its NC1HWC0 copy (a ToNCHW output already has the user's name)
TO_BLOCKED = (0, 1, 3, 4, 2)     # (N, C1, C0, H, W) -> NC1HWC0
FROM_BLOCKED = (0, 1, 4, 2, 3)


@dataclass(frozen=True)
class Unit:
    name: str                       # block identifier or chain name
    spec: NodeSpec
    symbol: str                     # the kernel's symbol (node name)
    x: str                          # tensor names of the user's graph (NCHW there)
    res: str | None
    out: str
    arrays: dict                    # node input name -> initializer array (the kernel layouts)
    x_shape: tuple[int, int, int, int]     # logical NCHW of x and of the output ((N, C) for a fused head)
    out_shape: tuple[int, ...]


def _block_arrays(step, wl) -> dict[str, np.ndarray]:
    """The fused step's bound operands by kernel argument name (its operand order: x, the four
    weights, the slopes its activations read, the residual)."""
    names = (["x", "w_dw", "b_dw", "w_pw", "b_pw"] + [n for n, act in (("s_dw", wl.act1), ("s_pw", wl.act2))
                                                      if needs_slope(act)] + (["res"] if wl.residual else []))
    return {n: p.numpy() for n, p in zip(names, step.params) if not isinstance(p, str)}


def _nchw(wl, out: bool) -> tuple[int, int, int, int]:
    return ((wl.batch, wl.cout, wl.out_height, wl.out_width) if out else (wl.batch, wl.cin, wl.height, wl.width))


def units(cm, notes: list[str] | None = None) -> list[Unit]:
    """Every custom node of the export, in program order of their last member. `notes` gets a
    line per chain exported as separate blocks."""
    notes = [] if notes is None else notes
    steps = {st.name: st for st in cm.program.steps}
    blocks = {b.name: b for b in cm.fused_blocks}
    stages = cm.chain_stages
    found: list[Unit] = []
    in_chain = set()
    for c in cm.chains:
        try:
            kernels = [emit_kernel(member_plan(cm.chain_plans[n]), n) for n in c.blocks]
        except MegafuseError as e:   # no chain kernel (float32 two-phase): its blocks are nodes of their own
            if c.stages:
                raise
            notes.append(f"{c.name} exported as its {len(c.blocks)} blocks: {e}")
            continue
        ec = emit_chain(c.name, kernels, c.residual_from, c.stages, cm.chain_plans[c.blocks[0]].chunks)
        arrays = {n: (stage_arrays(stages[n], cm) if n in stages
                      else _block_arrays(steps[n], blocks[n].workload)) for n in c.blocks}
        first, last = c.blocks[0], c.blocks[-1]
        x = stages[first].x if first in stages else steps[first].params[0]
        out = stages[last].out if last in stages else steps[last].out
        spec = chain_spec(ec, fused_ops_of(cm, c.blocks))
        out, out_shape = _through_head(cm.graph, _model_tensor(cm.graph, out), _nchw(cm.chain_plans[last].workload, True))
        found.append(Unit(c.name, spec, ec.symbol, _model_tensor(cm.graph, x), None, out,
                          {"weights": pack_weights(ec, arrays)}, _nchw(cm.chain_plans[first].workload, False), out_shape))
        in_chain.update(c.blocks)
    for b in cm.fused_blocks:
        if b.name in in_chain:
            continue
        if b.workload.se:   # the node's operand list carries no SE operands yet (the kernel has them)
            notes.append(f"{display(b.name)} exported as its original nodes: the {DOMAIN} node does not carry "
                         f"squeeze-and-excitation operands yet")
            continue
        st = steps[b.name]
        data = [_model_tensor(cm.graph, p) for p in st.params if isinstance(p, str)]
        arrays = _block_arrays(st, b.workload)
        out, out_shape = _through_head(cm.graph, _model_tensor(cm.graph, st.out), _nchw(b.workload, True))
        found.append(Unit(b.name, plan_spec(b.plan, b.name, b.members), kernel_names(b.name)[0], data[0],
                          data[1] if len(data) > 1 else None, out, arrays, _nchw(b.workload, False), out_shape))
    order = {_through_head(cm.graph, _model_tensor(cm.graph, st.out), (0, 0))[0]: i
             for i, st in enumerate(cm.program.steps)}
    return sorted(found, key=lambda u: order[u.out])


def _through_head(g, t: str, shape) -> tuple[str, tuple]:
    """A fused classifier head (passes/head_dwsep.py) writes the (N, M, 1, 1) map its Flatten reads;
    the model's tensor is the Flatten's (N, M) output: (that name, (N, M)); any other t as it is."""
    if not t.endswith(HEAD_SUFFIX):
        return t, tuple(shape)
    users = g.consumers_of(t)
    if len(users) == 1 and users[0].op_type == "ToNCHW":   # the layout pass's copy back to NCHW
        users = g.consumers_of(users[0].outputs[0])
    if len(users) == 1 and users[0].op_type == "Flatten":
        return users[0].outputs[0], tuple(shape[:2])
    return t, tuple(shape)


def _model_tensor(g, t: str) -> str:
    """The user's name of a tensor of the compiled graph: through the layout conversions the
    layout pass inserted (fusion's NC1HWC0 copy of t is t's data) and its renamed outputs."""
    for _ in range(4):
        p = g.producer(t)
        if p is not None and p.op_type in LAYOUT_OPS:
            t = p.inputs[0]
        elif t.endswith(OUT_SUFFIX):
            t = t[:-len(OUT_SUFFIX)]
        else:
            break
    return t


class _Builder:
    """The user's graph, rewritten unit by unit."""

    def __init__(self, model: onnx.ModelProto, compute_dtype: str):
        self.m = copy.deepcopy(model)
        g = self.m.graph
        self.nodes = list(g.node)
        self.producer = {o: i for i, n in enumerate(self.nodes) for o in n.output if o}
        self.consumers: dict[str, set[int]] = {}
        for i, n in enumerate(self.nodes):
            for t in n.input:
                self.consumers.setdefault(t, set()).add(i)
        self.inits = {t.name for t in g.initializer}
        self.graph_inputs = {t.name for t in g.input}
        self.graph_outputs = {t.name for t in g.output}
        elem = g.input[0].type.tensor_type.elem_type if g.input else TensorProto.FLOAT
        self.model_elem = elem
        self.elem = ONNX_DTYPE[compute_dtype]
        self.removed: set[int] = set()
        self.insert_after: dict[int, list] = {}     # original index -> new nodes after it
        self.blocked: dict[str, str] = {}           # NCHW tensor -> its NC1HWC0 tensor
        self.new_inits: list = []
        self.value_info: list = []
        self.serial = 0
        self.taken = ({n.name for n in self.nodes} | set(self.producer) | self.inits | self.graph_inputs
                      | {t for n in self.nodes for t in n.input})
        self.ours: set[str] = set()                 # the conversion nodes this export adds

    def _name(self, what: str) -> str:
        """A fresh name for a tensor or node of the conversions (never one of the user's)."""
        while True:
            self.serial += 1
            name = f"megafuse_{what}_{self.serial}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def _fresh(self, preferred: str) -> str:
        if preferred in self.taken:
            return self._name("t")
        self.taken.add(preferred)
        return preferred

    def _const(self, values, dtype=np.int64) -> str:
        name = self._name("const")
        self.new_inits.append(numpy_helper.from_array(np.asarray(values, dtype), name))
        return name

    def covered(self, u: Unit) -> set[int]:
        """Indices of the user's nodes between the unit's inputs and its output."""
        for t in (u.x, u.out) + ((u.res,) if u.res else ()):
            if t not in self.producer and t not in self.graph_inputs:
                raise MegafuseError(f"cannot export {u.name}: tensor '{display(t)}' is not a tensor of the model "
                                    f"(renamed by a folding pass)")
        stop = {u.x, u.res, ""} | self.inits
        seen: set[int] = set()
        stack = [u.out]
        while stack:
            t = stack.pop()
            if t in stop:
                continue
            if t not in self.producer:
                raise MegafuseError(f"cannot export {u.name}: it reads tensor '{display(t)}' besides its input")
            i = self.producer[t]
            if i not in seen:
                seen.add(i)
                stack.extend(self.nodes[i].input)
        for i in seen:
            for o in self.nodes[i].output:
                if o != u.out and (o in self.graph_outputs or not self.consumers.get(o, set()) <= seen):
                    raise MegafuseError(f"cannot export {u.name}: its intermediate tensor '{display(o)}' is read "
                                        f"outside it")
        if seen & self.removed:
            raise MegafuseError(f"cannot export {u.name}: it overlaps another fused unit")
        return seen

    def to_blocked(self, t: str, shape, new: list) -> str:
        if t in self.blocked:
            return self.blocked[t]
        n, c, h, w = shape
        c1 = -(-c // C0)
        cur = t
        if self.elem != self.model_elem:
            cur = self._add(new, "Cast", [cur], to=self.elem)
        if c1 * C0 != c:
            cur = self._add(new, "Pad", [cur, self._const([0, 0, 0, 0, 0, c1 * C0 - c, 0, 0])], mode="constant")
        cur = self._add(new, "Reshape", [cur, self._const([n, c1, C0, h, w])])
        cur = self._add(new, "Transpose", [cur], perm=list(TO_BLOCKED))
        self.blocked[t] = cur
        return cur

    def from_blocked(self, blocked: str, t: str, shape, new: list) -> None:
        """shape: t's NCHW shape, or (N, C) where t is a fused head's flattened 1 x 1 output."""
        n, c, h, w = (*shape, 1, 1) if len(shape) == 2 else shape
        c1 = -(-c // C0)
        cur = self._add(new, "Transpose", [blocked], perm=list(FROM_BLOCKED))
        steps = [("Reshape", lambda s: [s, self._const([n, c1 * C0] if len(shape) == 2 else [n, c1 * C0, h, w])], {})]
        if c1 * C0 != c:
            steps.append(("Slice", lambda s: [s, self._const([0]), self._const([c]), self._const([1])], {}))
        if self.elem != self.model_elem:
            steps.append(("Cast", lambda s: [s], {"to": self.model_elem}))
        for k, (op, args, attrs) in enumerate(steps):
            cur = self._add(new, op, args(cur), out=t if k == len(steps) - 1 else None, **attrs)
        self.blocked[t] = blocked

    def _add(self, new: list, op: str, inputs: list[str], out: str | None = None, **attrs) -> str:
        out = out or self._name(op.lower())
        node = helper.make_node(op, inputs, [out], name=self._name(op.lower()), **attrs)
        self.ours.add(node.name)
        new.append(node)
        return out

    def add_unit(self, u: Unit) -> None:
        idx = self.covered(u)
        new: list = []
        ins = []
        for t in u.spec.inputs:
            if t.name in ("x", "res"):
                ins.append(self.to_blocked(u.x if t.name == "x" else u.res, u.x_shape if t.name == "x" else
                                           u.out_shape, new))
            else:
                a = np.ascontiguousarray(u.arrays[t.name])
                if tuple(a.shape) != t.shape or a.dtype != np.dtype(t.dtype):
                    raise MegafuseError(f"cannot export {u.name}: {t.name} is {a.dtype}{list(a.shape)}, its kernel "
                                        f"takes {t.dtype}{list(t.shape)}")
                name = self._fresh(f"{u.symbol}__{t.name}")
                self.new_inits.append(numpy_helper.from_array(a, name))
                ins.append(name)
        y = self._fresh(f"{u.out}__nc1hwc0")
        new.append(helper.make_node(u.spec.op_type, ins, [y], name=u.symbol, domain=DOMAIN,
                                    doc_string=f"megafuse {u.spec.kind} {u.name}",
                                    **{k: list(v) if isinstance(v, tuple) else v for k, v in u.spec.attributes}))
        for t, name in zip(u.spec.inputs + u.spec.outputs, ins + [y]):
            self.value_info.append(helper.make_tensor_value_info(name, ONNX_DTYPE[t.dtype], list(t.shape),
                                                                 doc_string=f"format {t.fmt}"))
        self.from_blocked(y, u.out, u.out_shape, new)
        self.removed |= idx
        self.insert_after.setdefault(max(idx), []).extend(new)

    def finish(self) -> onnx.ModelProto:
        out = []
        for i, n in enumerate(self.nodes):
            if i not in self.removed:
                out.append(n)
            out.extend(self.insert_after.get(i, ()))
        out = _drop_dead(out, self.graph_outputs, self.ours)
        used = {t for n in out for t in n.input}
        g = self.m.graph
        kept = [t for t in list(g.initializer) + self.new_inits if t.name in used]
        infos = {v.name: v for v in list(g.value_info) + self.value_info}
        produced = {o for n in out for o in n.output}
        del g.node[:]
        g.node.extend(_topological(out))
        del g.initializer[:]
        g.initializer.extend(kept)
        del g.value_info[:]
        g.value_info.extend(v for name, v in infos.items() if name in produced or name in used)
        return self.m


def _drop_dead(nodes: list, outputs: set[str], ours: set[str]) -> list:
    """Conversion nodes whose result nobody reads (a unit's output read only by the next unit);
    the user's nodes all stay."""
    while True:
        used = {t for n in nodes for t in n.input} | outputs
        keep = [n for n in nodes if n.name not in ours or any(o in used for o in n.output)]
        if len(keep) == len(nodes):
            return keep
        nodes = keep


def _topological(nodes: list) -> list:
    """Stable topological order (the user's order where it already holds)."""
    producer = {o: i for i, n in enumerate(nodes) for o in n.output}
    done: set[int] = set()
    order: list = []

    def visit(i: int) -> None:
        stack = [(i, False)]
        while stack:
            j, ready = stack.pop()
            if j in done:
                continue
            if ready:
                done.add(j)
                order.append(nodes[j])
                continue
            stack.append((j, True))
            for t in reversed(nodes[j].input):
                p = producer.get(t)
                if p is not None and p not in done:
                    stack.append((p, False))

    for i in range(len(nodes)):
        visit(i)
    return order


def export_fused(cm, model) -> onnx.ModelProto:
    """The fused ONNX model of `cm` compiled from `model` (path, bytes or ModelProto)."""
    if cm.target.kind not in ("sim", "ascend"):
        raise MegafuseError(f"--emit-onnx writes the Ascend op packages' nodes: use -t sim[:SOC] or ascend[:SOC] "
                            f"(not {cm.target.name})")
    proto = read_model(model)
    b = _Builder(proto, cm.dtype)
    opsets = list(proto.opset_import)
    for u in units(cm, cm.notes):
        b.add_unit(u)
    m = b.finish()
    del m.opset_import[:]
    m.opset_import.extend([o for o in opsets if o.domain != DOMAIN] + [helper.make_opsetid(DOMAIN, DOMAIN_VERSION)])
    helper.set_model_props(m, {**{p.key: p.value for p in proto.metadata_props},
                               "megafuse.target": cm.target.name, "megafuse.dtype": cm.dtype})
    try:
        onnx.checker.check_model(m)
    except onnx.checker.ValidationError as e:   # a bug of this module, said as one line
        raise MegafuseError(f"the fused ONNX model fails the ONNX checker: {display(str(e), 300)}") from None
    return m


def write_fused_onnx(cm, model, out_dir) -> Path:
    m = export_fused(cm, model)
    path = inside(Path(out_dir), FILE_NAME)
    try:
        onnx.save(m, str(path))
    except OSError as e:
        raise MegafuseError(f"cannot write '{FILE_NAME}' in the output directory: {e.strerror}") from None
    n = sum(1 for node in m.graph.node if node.domain == DOMAIN)
    cm.notes.append(f"{FILE_NAME}: {n} {DOMAIN} node(s) (one per block chain and per fused block outside them)"
                    + ("" if cm.target.kind == "ascend" else "; their op packages are written with -t ascend"))
    return path


__all__ = ["FILE_NAME", "Unit", "export_fused", "units", "write_fused_onnx"]
