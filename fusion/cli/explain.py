"""`megafuse explain MODEL`: every candidate chain (every depthwise conv and what follows it) with
its tensor names, whether it fuses, and why not (the passes' Refusal records), so a user can
choose a cut for --inputs/--outputs. Model-supplied names are escaped before printing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fusion.core.errors import UnsupportedModelError
from fusion.core.opt_levels import DEFAULT_LEVEL, LEVELS, get_level, single_level
from fusion.frontend.subgraph import show
from fusion.frontend.onnx_import import load_graph
from schedules.targets import parse_target, per_channel_acts
from passes import prepare
from passes.fuse_dwsep import FUSED_OP, fuse_dwsep, fused_workload, is_depthwise
from fusion.driver.compiler import compile_model
from fusion.driver.fallback import GATED_KINDS, FusionGate
from fusion.driver.tile_policy import TileOverride
from passes import optimize
from passes.conv_epilogue import fold_conv_epilogues
from passes.stem_layout import convs_write_blocked
from fusion.core.errors import MegafuseError
from fusion.frontend.onnx_import import SUPPORTED_OPS
from fusion.frontend.subgraph import supported_part
from fusion.frontend.onnx_import import parse_input_shape
from fusion.frontend.subgraph import cut_model


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


def compiled_gate(model, target: str, input_shapes=None, dtype: str | None = None,
                  opt_level: int = DEFAULT_LEVEL, tile: TileOverride | None = None) -> tuple[FusionGate, str | None]:
    """(gate, note): the gate `compile` decides with (fallback on). On sim/ascend with chains, a block
    that loses alone may fuse for the chain it joins, and one fused for a chain none takes is
    unfused again -- which only a compile settles (fusion/driver/compiler.py), so this compiles
    (default tiles, no tuning database) and returns that compile's settled gate. Elsewhere, or where
    the compile fails (explain still lists the chains; the note says why), the plain gate."""
    tgt = parse_target(target)
    if not (get_level(opt_level).fuse and tgt.kind in GATED_KINDS):
        return FusionGate(tgt, tile), None
    try:
        return compile_model(model, target, input_shapes, dtype, tile=tile, fallback=True,
                             opt_level=opt_level).fusion_gate, None
    except MegafuseError as e:
        return FusionGate(tgt, tile), f"compile fails ({show(str(e))}): the fallback gate without chain credit"


def explain(model, target: str = "sim", input_shapes=None, dtype: str | None = None,
            inputs=None, outputs=None, fallback: bool = False,
            opt_level: int = DEFAULT_LEVEL, tile: TileOverride | None = None,
            gate: FusionGate | None = None) -> tuple[list[Chain], list, list[str]]:
    """(chains in model order, the other refusals: BN/affine nodes left as kernels, notes).
    tile: the tile options of `compile` (--tile, --no-double-buffer, ...), which decide what fits.
    gate (fallback on): the gate to replay, e.g. the settled gate of the compile the same options
    make (CompiledModel.fusion_gate); None: compiled_gate's. A model with operators the importer
    does not support yet is explained on the rest of it (its gate without chain credit: such a
    model does not compile). opt_level < 2: nothing fuses (each chain says so); 0: nothing folds either."""

    if inputs or outputs:
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
    level = get_level(opt_level)
    if gate is None and fallback and not notes:
        gate, why = compiled_gate(model, target, input_shapes, dtype, opt_level, tile)
        notes += [why] if why else []
    gate = gate or FusionGate(tgt, tile)
    g, others = prepare(g, level.fold)
    fused_g, refusals = (fuse_dwsep(g, tgt.soc, dtype, gate if fallback else gate.fits, per_channel_acts(tgt))
                         if level.fuse else (g, []))
    if level.note:
        notes.append(level.note)
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
            reason = (f"--opt-level {level.level} has no DW -> PW fusion (level 2 adds it)" if not level.fuse
                      else r.reason if r else "not matched")
            chains.append(Chain(n.name, n.inputs[0], None, False, r.nodes if r else (n.name,), "",
                                reason, r.kind if r else "level" if not level.fuse else ""))
    return chains, others, notes


def level_effects(model, target: str = "sim", input_shapes=None, dtype: str | None = None,
                  fallback: bool = False, gate: FusionGate | None = None) -> list[dict]:
    """What each fusion level adds for this model, from the graph passes alone (no kernel is built):
    per level the kernels of the program, the fused blocks, the nodes folded away. Block chains
    form from the compiled plans: `compile` and `bench --opt-level all` count them. gate: the
    fallback's (explain's, so that the fusing levels count what it lists); None: the plain gate."""

    tgt = parse_target(target)
    g0 = load_graph(model, input_shapes)
    dtype = dtype or (g0.types[g0.inputs[0]].dtype if g0.inputs else "float32")
    rows = []
    for lv, level in LEVELS.items():
        g, _ = optimize(g0, tgt.soc, dtype, fuse=level.fuse,
                        gate=(gate or FusionGate(tgt)) if fallback and level.fuse else None,
                        per_channel=per_channel_acts(tgt), fold=level.fold)
        if tgt.kind == "llvm" and level.epilogues:
            g = fold_conv_epilogues(convs_write_blocked(g))
        rows.append({"level": lv, "kernels": len(g.nodes), "fused_blocks": sum(n.op_type == FUSED_OP for n in g.nodes),
                     "epilogue_convs": sum(n.attr("epilogue_act") is not None
                                           for n in g.nodes if n.op_type == "Conv"),
                     "adds": level.adds})
    return rows


def _supported_part(model, input_shapes, error):
    """The graph of the model's supported part (its unsupported operators cut out), or None."""

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

    shapes = dict(parse_input_shape(s) for s in args.input_shape)
    fallback = getattr(args, "fallback", True)
    gate, why = None, None
    compile_fn = getattr(args, "compile_from_args", None)
    if fallback and compile_fn is not None and not (getattr(args, "inputs", None) or getattr(args, "outputs", None)):
        try:   # the gate of the compile these very options make (its tuning database, chains, DMA cap)
            gate = compile_fn(args).fusion_gate
        except UnsupportedModelError:
            gate = None   # explain lists the supported part (compile refuses the whole model)
        except MegafuseError as e:   # explain still lists the chains, with the plain gate
            gate = FusionGate(parse_target(args.target), TileOverride.from_args(args))
            why = f"compile fails ({show(str(e))}): the fallback gate without chain credit"
    chains, others, notes = explain(args.model, args.target, shapes or None, args.dtype,
                                    getattr(args, "inputs", None), getattr(args, "outputs", None),
                                    fallback, single_level(args), TileOverride.from_args(args), gate)
    notes = ([why] if why else []) + notes
    levels = level_effects(args.model, args.target, shapes or None, args.dtype, fallback, gate)
    if args.json:
        print(json.dumps({"chains": [c.to_json() for c in chains],
                          "fused": sum(c.fused for c in chains), "notes": notes,
                          "other_refusals": [r.to_json() for r in others], "opt_levels": levels}, indent=2))
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
    print("fusion levels (--opt-level; kernels of the program, before block chains):")
    prev = None
    for r in levels:
        delta = "" if prev is None else f" ({r['kernels'] - prev:+d})"
        epi = f", {r['epilogue_convs']} convs with their epilogue" if r["epilogue_convs"] else ""
        print(f"  {r['level']}  {r['kernels']} kernels{delta}, {r['fused_blocks']} fused blocks{epi}: {r['adds']}")
        prev = r["kernels"]
    for note in notes:
        print(f"note: {note}")
    return 0


def register(sub, add_model_args) -> None:
    p = sub.add_parser("explain", help="list every DW->PW candidate chain, its tensor names, fused or why not")
    add_model_args(p)
    p.set_defaults(func=cmd_explain)
