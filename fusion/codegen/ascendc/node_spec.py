"""The custom operator of one fused block or block chain, as a graph node names it: op type,
inputs, outputs (name, dtype, format, shape) and attributes. One source of truth for both the
node of the fused ONNX model (fusion/driver/onnx_export.py) and the op package's op_proto
(fusion/codegen/ascendc/package.py), so the two cannot drift apart.

A block's node takes the kernel's GM tensors (x, w_dw, b_dw, w_pw, b_pw [, s_dw, s_pw][, res]
-> y); a chain's takes x and the packed weights of every member (fusion/codegen/ascendc/emit_chain.py)
-> y. The attributes are per member lists (a block is one member), so one reader serves both:
the plan facts a reader wants (tile, engine, SoC, UB bytes) and the workload facts that rebuild
each member's kernel (fusion/verify/onnx_run.py runs the node on the CPU from them alone).
"""

from __future__ import annotations

from dataclasses import dataclass

from fusion.codegen.ascendc.emit_chain import WEIGHTS, EmittedChain
from fusion.codegen.ascendc.emit_kernel import EmittedKernel, kernel_args, kernel_names, variant_of

DOMAIN = "ai.megafuse"
DOMAIN_VERSION = 1
NO_RESIDUAL = -2        # residual_from: no residual (-1: the chain's x, j >= 0: member j's output)
NO_CLIP = -1.0          # x_max: no deferred clip on the member's input

# attribute type names as GE's REG_OP writes them (op_proto/<OpType>.json, <sym>_proto.h)
GE_ATTR = {int: "Int", float: "Float", str: "String", (int,): "ListInt", (float,): "ListFloat",
           (str,): "ListString"}


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: str           # float16 | float32 | uint8
    fmt: str             # NC1HWC0 | DW_C1HWC0 | C1C0 | FRACTAL_Z | ND
    shape: tuple[int, ...]


@dataclass(frozen=True)
class NodeSpec:
    op_type: str
    kind: str                                   # block | chain
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    attributes: tuple[tuple[str, object], ...]  # (name, int | float | str | tuple of one of them)

    def attr(self, name: str):
        return dict(self.attributes)[name]


def attr_type(value) -> str:
    """GE's name of an attribute value's type (Int, ListInt, String, ...)."""
    if isinstance(value, tuple):
        kinds = {bool if isinstance(v, bool) else type(v) for v in value}
        kind = int if kinds <= {int, bool} else next(iter(kinds))
        if len(kinds - {bool}) > 1 or kind not in (int, float, str):
            raise ValueError(f"attribute list of mixed or unknown types {sorted(k.__name__ for k in kinds)}")
        return GE_ATTR[(kind,)]
    return GE_ATTR[int if isinstance(value, bool) else type(value)]


def _tensor(a) -> TensorSpec:
    return TensorSpec(a.name, a.dtype, a.fmt, tuple(int(d) for d in a.shape))


def _member_attrs(members: list[tuple[str, str, object]]) -> list[tuple[str, object]]:
    """members: (name, variant, plan) of each member, in order."""
    plans = [p for _, _, p in members]
    wls = [p.workload for p in plans]
    flat = lambda f: tuple(int(v) for p in plans for v in f(p))  # noqa: E731
    return [
        ("soc", plans[0].soc.name),
        ("dtype", wls[0].dtype),
        ("batch", int(wls[0].batch)),
        ("members", tuple(name for name, _, _ in members)),
        ("variant", tuple(variant for _, variant, _ in members)),
        ("tile", flat(lambda p: (p.tile.th, p.tile.tw, p.tile.cob, p.tile.cib))),   # as configured
        ("tile_cores", tuple(int(p.tile.cores) for p in plans)),   # configured cores (0: as many as tiles)
        ("double_buffer", tuple(int(p.tile.double_buffer) for p in plans)),
        ("pw_engine", tuple(p.tile.pw_engine for p in plans)),
        ("cores", tuple(int(p.cores) for p in plans)),
        ("n_tiles", tuple(int(p.n_tiles) for p in plans)),
        ("ub_bytes", tuple(int(p.ub_bytes) for p in plans)),
        ("ub_capacity", int(plans[0].soc.ub_usable_bytes)),
        ("cin", tuple(int(w.cin) for w in wls)),
        ("cout", tuple(int(w.cout) for w in wls)),
        ("height", tuple(int(w.height) for w in wls)),
        ("width", tuple(int(w.width) for w in wls)),
        ("kernel_shape", flat(lambda p: p.workload.kernel)),
        ("strides", flat(lambda p: p.workload.stride)),
        ("pads", flat(lambda p: p.workload.pads)),
        ("act1", tuple(w.act1 for w in wls)),
        ("act2", tuple(w.act2 for w in wls)),
        ("residual", tuple(int(w.residual) for w in wls)),
    ]


def plan_spec(plan, block: str, fused_ops: tuple[str, ...] = ()) -> NodeSpec:
    """The node of one fused block: its kernel's tensors (kernel_args: also for a plan no Ascend C
    kernel is emitted for, e.g. float32 on the cube), op type the op package's."""
    args = kernel_args(plan)
    attrs = _member_attrs([(block, variant_of(plan), plan)]) + [("fused_ops", tuple(fused_ops) or (block,))]
    return NodeSpec(kernel_names(block)[1], "block",
                    tuple(_tensor(a) for a in args if a.role in ("input", "weight")),
                    tuple(_tensor(a) for a in args if a.role == "output"), tuple(attrs))


def block_spec(ek: EmittedKernel, fused_ops: tuple[str, ...] = ()) -> NodeSpec:
    return plan_spec(ek.plan, ek.block, fused_ops)


def chain_op_type(chain_name: str) -> str:
    return kernel_names(chain_name)[1]


def chain_spec(ec: EmittedChain, fused_ops: tuple[str, ...] = ()) -> NodeSpec:
    """The node of a block chain: x and the packed weights in, y out; per member its plan, where its
    residual comes from, whether it is a GEMM stage, its deferred clip and its weights' offsets."""
    at = {(r.block, r.what): r.offset for r in ec.weights}
    kernels = list(ec.blocks)
    attrs = _member_attrs([(ek.block, ek.variant, ek.plan) for ek in kernels]) + [
        ("stages", tuple(int(ek.block in ec.stages) for ek in kernels)),
        ("gemm_only", tuple(int(ek.plan.gemm_only) for ek in kernels)),
        ("x_max", tuple(float(NO_CLIP if ek.plan.x_max is None else ek.plan.x_max) for ek in kernels)),
        ("residual_from", tuple(int(NO_RESIDUAL if j is None else j) for j in
                                (ec.residual_from or (None,) * len(kernels)))),
        ("weight_offsets", tuple(int(at[ek.block, w]) for ek in kernels for w in WEIGHTS)),
        ("fused_ops", tuple(fused_ops) or tuple(ek.block for ek in kernels)),
        ("chunks", int(ec.chunks)),   # image chunks: the members' plans are one chunk's (schedules/wave.py)
    ]
    args = {a.name: a for a in ec.args()}
    return NodeSpec(chain_op_type(ec.name), "chain", (_tensor(args["x"]), _tensor(args["weights"])),
                    (_tensor(args["y"]),), tuple(attrs))


def fused_ops_of(cm, names) -> tuple[str, ...]:
    """The model nodes a chain's members replace (fused blocks' and GEMM stages' members)."""
    own = {b.name: b.members for b in cm.fused_blocks}
    own.update({g.name: g.members for g in cm.chain_stages.values()})
    return tuple(m for n in names for m in own.get(n, (n,)))


def op_proto(spec: NodeSpec, kernel: str) -> dict:
    """op_proto/<OpType>.json: what GE's operator registration declares for the node."""
    desc = lambda t: {"name": t.name, "param_type": "required", "type": [t.dtype],  # noqa: E731
                      "format": [t.fmt], "shape": list(t.shape)}
    return {"op": spec.op_type, "domain": DOMAIN, "kernel": kernel, "kind": spec.kind,
            "input_desc": [desc(t) for t in spec.inputs], "output_desc": [desc(t) for t in spec.outputs],
            "attr": [{"name": k, "param_type": "required", "type": attr_type(v),
                      "value": list(v) if isinstance(v, tuple) else v} for k, v in spec.attributes]}


__all__ = ["DOMAIN", "DOMAIN_VERSION", "NO_CLIP", "NO_RESIDUAL", "NodeSpec", "TensorSpec", "attr_type",
           "block_spec", "plan_spec", "chain_op_type", "chain_spec", "fused_ops_of", "op_proto"]
