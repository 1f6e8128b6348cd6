"""`megafuse explain MODEL`: every candidate chain (every depthwise conv and what follows it) with
its tensor names, whether it fuses, and why not (the passes' Refusal records), so a user can
choose a cut for --inputs/--outputs. Model-supplied names are escaped before printing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fusion.errors import UnsupportedModelError
from fusion.subgraph import show
from fusion.tile_policy import TileOverride


@dataclass(frozen=True)
class Chain:
    dw: str                   # the depthwise conv node
    input: str                # tensor the chain reads
    output: str | None        # tensor the fused kernel writes (None when refused)
    fused: bool
    members: tuple[str, ...]
    workload: str = ""
    reason: str = ""
    kind: str = ""            # legality | profitability (refused)

    def to_json(self) -> dict:
        return {"dw": self.dw, "input": self.input, "output": self.output, "fused": self.fused,
                "members": list(self.members), "workload": self.workload, "reason": self.reason,
                "kind": self.kind}


def explain(model, target: str = "sim", input_shapes=None, dtype: str | None = None,
            inputs=None, outputs=None, fallback: bool = False,
            tile: TileOverride | None = None) -> tuple[list[Chain], list, list[str]]:
    """(chains in model order, the other refusals: BN/affine nodes left as kernels, notes).
    tile: the tile options of `compile` (--tile, --no-double-buffer, ...), which decide what fits.
    A model with operators the importer does not support yet is explained on the rest of it."""
    from fusion.onnx_import import load_graph
    from fusion.targets import parse_target, per_channel_acts
    from passes import prepare
    from passes.fuse_dwsep import FUSED_OP, fuse_dwsep, fused_workload, is_depthwise

    if inputs or outputs:
        from fusion.subgraph import cut_model
        cut = cut_model(model, inputs, outputs, input_shapes)
        model, input_shapes = cut.model, cut.input_shapes or None
    tgt = parse_target(target)
    notes = []
    try:
        g = load_graph(model, input_shapes)
    except UnsupportedModelError as e:
        g, note = _supported_part(model, input_shapes, e) if not (inputs or outputs) else (None, None)
        if g is None:
            raise
        notes.append(note)
    dtype = dtype or (g.types[g.inputs[0]].dtype if g.inputs else "float32")
    g, others = prepare(g)
    from fusion.fallback import FusionGate
    gate = FusionGate(tgt, tile)
    fused_g, refusals = fuse_dwsep(g, tgt.soc, dtype, gate if fallback else gate.fits, per_channel_acts(tgt))
    by_member = {m: n for n in fused_g.nodes if n.op_type == FUSED_OP for m in n.attr("members")}
    refused = {r.nodes[0]: r for r in refusals}
    chains = []
    for n in g.nodes:
        if not is_depthwise(g, n):
            continue
        f = by_member.get(n.name)
        if f is not None:
            chains.append(Chain(n.name, n.inputs[0], f.outputs[0], True, tuple(f.attr("members")),
                                fused_workload(fused_g, f, dtype).describe()))
        else:
            r = refused.get(n.name)
            chains.append(Chain(n.name, n.inputs[0], None, False, r.nodes if r else (n.name,), "",
                                r.reason if r else "not matched", r.kind if r else ""))
    return chains, others, notes


def _supported_part(model, input_shapes, error):
    """The graph of the model's supported part (its unsupported operators cut out), or None."""
    from fusion.errors import MegafuseError
    from fusion.onnx_import import SUPPORTED_OPS, load_graph
    from fusion.subgraph import supported_part

    try:
        found = supported_part(model, SUPPORTED_OPS, input_shapes)
        if found is None:
            return None, None
        cut, counts = found
        g = load_graph(cut.model, cut.input_shapes or None)
    except MegafuseError:
        return None, None
    ops = ", ".join(f"{op} x{k}" for op, k in sorted(counts.items()))
    return g, (f"operators not supported yet ({show(ops)}): chains listed on the rest of the model, "
               f"cut at {len(cut.inputs)} input(s) and {len(cut.outputs)} output(s)")


def cmd_explain(args) -> int:
    from fusion.onnx_import import parse_input_shape

    shapes = dict(parse_input_shape(s) for s in args.input_shape)
    chains, others, notes = explain(args.model, args.target, shapes or None, args.dtype,
                             getattr(args, "inputs", None), getattr(args, "outputs", None),
                             getattr(args, "fallback", True), TileOverride.from_args(args))
    if args.json:
        print(json.dumps({"chains": [c.to_json() for c in chains],
                          "fused": sum(c.fused for c in chains), "notes": notes,
                          "other_refusals": [r.to_json() for r in others]}, indent=2))
        return 0
    n_fused = sum(c.fused for c in chains)
    print(f"{len(chains)} candidate chains (depthwise convs), {n_fused} fused")
    for c in chains:
        if c.fused:
            print(f"  fused    {show(c.dw):<16} {show(c.input)} -> {show(c.output)}  {c.workload}")
            print(f"           members: {', '.join(show(m) for m in c.members)}")
        else:
            print(f"  refused  {show(c.dw):<16} reads {show(c.input)}  ({c.kind}) {show(c.reason)}")
    if others:
        print(f"left as kernels ({len(others)}):")
        for r in others:
            print(f"  {show(r.describe())}")
    for note in notes:
        print(f"note: {note}")
    return 0


def register(sub, add_model_args) -> None:
    p = sub.add_parser("explain", help="list every DW->PW candidate chain, its tensor names, fused or why not")
    add_model_args(p)
    p.set_defaults(func=cmd_explain)
