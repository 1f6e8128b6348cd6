"""Cut an ONNX model by tensor names: the nodes that compute `outputs` from `inputs`.

Shape inference runs on the whole model first, with the user's --input-shape dims written into
its inputs, so dynamic dims propagate to the cut's new inputs. The cut is a plain ModelProto
(same opsets, only the initializers its nodes read): the compiler and ONNX Runtime (the `check`
reference) both run that one model.

Errors (one line, names escaped): a name no node, input or initializer defines; an initializer
named as a cut input; a listed input that none of the outputs depends on; a tensor the outputs
need that is neither computed inside the cut nor listed in --inputs.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import onnx
from onnx import helper

from fusion.core.errors import ShapeError, UnsupportedModelError
from fusion.frontend.onnx_import import read_model
from fusion.frontend.onnx_import import parse_input_shape


@dataclass(frozen=True)
class Cut:
    model: onnx.ModelProto
    input_shapes: dict[str, tuple[int, ...]]  # the --input-shape entries that name the cut's inputs
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def show(name: str) -> str:
    """A model-supplied name, safe for a one-line message (control characters escaped)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(name))


def split_names(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """'a,b' or ['a', 'b'] -> ('a', 'b'); None -> ()."""
    if text is None:
        return ()
    parts = text.split(",") if isinstance(text, str) else [p for t in text for p in str(t).split(",")]
    names = tuple(p.strip() for p in parts if p.strip())
    if isinstance(text, str) and text.strip() and not names:
        raise UnsupportedModelError(f"empty tensor name list {show(text)!r}")
    return names


def cut_model(model: Any, inputs: Sequence[str] | str | None = None, outputs: Sequence[str] | str | None = None,
              input_shapes: Mapping[str, tuple[int, ...]] | None = None, *, drop_unused: bool = False) -> Cut:
    """drop_unused: leave out listed inputs the outputs do not need (instead of an error)."""

    proto = onnx.ModelProto()
    proto.CopyFrom(read_model(model))
    if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
        _load_external(proto, model)
    g = proto.graph
    want_in, want_out = split_names(inputs), split_names(outputs)
    shapes = dict(input_shapes or {})
    inits = {t.name for t in g.initializer}
    graph_inputs = [vi.name for vi in g.input if vi.name not in inits]
    produced = {t: n for n in g.node for t in n.output if t}
    known = set(produced) | set(graph_inputs)

    for flag, names in (("--inputs", want_in), ("--outputs", want_out)):
        for t in names:
            if t in inits and t not in produced:
                raise UnsupportedModelError(f"{flag} names '{show(t)}', an initializer (a weight), not an "
                                            f"activation tensor")
            if t not in known:
                near = difflib.get_close_matches(t, sorted(known), n=3)
                hint = f"; did you mean {', '.join(repr(show(n)) for n in near)}?" if near else ""
                raise UnsupportedModelError(f"{flag} names '{show(t)}', which no node or graph input "
                                            f"defines{hint} (megafuse explain lists the chains' tensors)")
    both = set(want_in) & set(want_out)
    if both:
        raise UnsupportedModelError(f"'{show(sorted(both)[0])}' is in both --inputs and --outputs")

    _fix_input_dims(g, shapes, graph_inputs)
    typed = _inferred_types(proto)
    outs = want_out or tuple(o.name for o in g.output)
    nodes, needed_inputs = _walk(g, outs, set(want_in), inits, produced)
    if want_in and drop_unused:
        want_in = tuple(t for t in want_in if t in needed_inputs)
    if want_in:
        unused = [t for t in want_in if t not in needed_inputs]
        if unused:
            raise UnsupportedModelError(f"--inputs '{show(unused[0])}' does not feed any of the outputs "
                                        f"({', '.join(show(o) for o in outs)}): the cut would leave it "
                                        f"unconnected")
        cut_inputs = tuple(want_in)
    else:
        cut_inputs = tuple(t for t in graph_inputs if t in needed_inputs)

    new = helper.make_graph(
        nodes, g.name or "main",
        [_input_info(t, typed, shapes) for t in cut_inputs],
        [_output_info(t, typed) for t in outs],
        initializer=[t for t in g.initializer if t.name in _read_by(nodes)])
    cut = helper.make_model(new, opset_imports=list(proto.opset_import), ir_version=proto.ir_version,
                            producer_name=proto.producer_name or "megafuse-cut")
    left = {k: v for k, v in shapes.items() if k in cut_inputs}
    for k in shapes:
        if k not in cut_inputs and k not in graph_inputs:
            raise ShapeError(f"--input-shape names '{show(k)}', which is neither a graph input nor a cut input "
                             f"(cut inputs: {', '.join(show(t) for t in cut_inputs) or 'none'})")
    return Cut(cut, left, cut_inputs, tuple(outs))


def _load_external(proto: onnx.ModelProto, model: Any) -> None:
    from pathlib import Path

    from onnx.external_data_helper import load_external_data_for_model, uses_external_data

    if isinstance(model, bytes) or not any(uses_external_data(t) for t in proto.graph.initializer):
        return
    load_external_data_for_model(proto, str(Path(model).resolve().parent))


def _fix_input_dims(g, shapes: Mapping[str, tuple[int, ...]], graph_inputs: list[str]) -> None:
    """Write the concrete dims the user gave into the graph's inputs (before shape inference)."""
    for vi in g.input:
        dims = shapes.get(vi.name)
        if dims is None or vi.name not in graph_inputs:
            continue
        shape = vi.type.tensor_type.shape
        if len(shape.dim) != len(dims):
            continue  # the importer reports the rank mismatch with its own message
        for d, v in zip(shape.dim, dims):
            d.Clear()
            d.dim_value = int(v)


def _inferred_types(proto: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # noqa: BLE001 - inference is best effort: an unknown type is reported on use
        inferred = proto
    g = inferred.graph
    out = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.type.WhichOneof("value") == "tensor_type":
            out.setdefault(vi.name, vi.type)
    return out


def _walk(g, outs, stop: set[str], inits: set[str], produced) -> tuple[list, set[str]]:
    """The nodes between `stop` and `outs` (in model order) and the cut inputs they read."""
    keep: set[int] = set()
    index = {id(n): i for i, n in enumerate(g.node)}
    reached: set[str] = set()
    todo, seen = list(outs), set()
    while todo:
        t = todo.pop()
        if t in seen or not t:
            continue
        seen.add(t)
        if t in stop:
            reached.add(t)
            continue
        if t in inits and t not in produced:
            continue
        node = produced.get(t)
        if node is None:   # a graph input the listed --inputs do not cover
            if stop:
                raise UnsupportedModelError(
                    f"the cut needs graph input '{show(t)}', which --inputs does not list: the outputs "
                    f"depend on it through a path that bypasses the given inputs (add it to --inputs)")
            reached.add(t)
            continue
        keep.add(index[id(node)])
        todo.extend(node.input)
        for a in node.attribute:   # tensors read by subgraphs (If/Loop bodies) from outer scope
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                todo.extend(_outer_reads(sub))
    return [g.node[i] for i in sorted(keep)], reached


def _outer_reads(sub) -> set[str]:
    local = {t for n in sub.node for t in n.output} | {i.name for i in sub.input} | {t.name for t in sub.initializer}
    return {t for n in sub.node for t in n.input if t and t not in local}


def _read_by(nodes) -> set[str]:
    names = {t for n in nodes for t in n.input}
    for n in nodes:
        for a in n.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                names |= _outer_reads(sub)
    return names


def _input_info(t: str, typed, shapes) -> onnx.ValueInfoProto:
    ty = typed.get(t)
    if ty is None or not ty.tensor_type.elem_type:
        raise ShapeError(f"cut input '{show(t)}' has no inferred type: shape inference cannot reach it; pass "
                         f"--input-shape for the model's dynamic inputs, or cut at another tensor")
    vi = onnx.ValueInfoProto()
    vi.name = t
    vi.type.CopyFrom(ty)
    return vi


def _output_info(t: str, typed) -> onnx.ValueInfoProto:
    ty = typed.get(t)
    if ty is None:
        return helper.make_empty_tensor_value_info(t)
    vi = onnx.ValueInfoProto()
    vi.name = t
    vi.type.CopyFrom(ty)
    return vi


def supported_part(model: Any, supported, input_shapes=None) -> tuple[Cut, dict[str, int]] | None:
    """The model without its unsupported operators: their outputs become cut inputs, their inputs
    cut outputs. (cut, {unsupported op: count}), or None when every operator is supported."""

    proto = read_model(model)
    g = proto.graph
    bad = [n for n in g.node if n.op_type not in supported or n.domain not in ("", "ai.onnx")]
    if not bad:
        return None
    counts: dict[str, int] = {}
    for n in bad:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    good = [n for n in g.node if n not in bad]
    made_by_good = {t for n in good for t in n.output if t}
    read_by_good = {t for n in good for t in n.input if t}
    inits = {t.name for t in g.initializer}
    graph_inputs = [vi.name for vi in g.input if vi.name not in inits]
    new_inputs = [t for n in bad for t in n.output if t and t in read_by_good]
    outs = [t for n in bad for t in n.input if t in made_by_good]
    outs += [o.name for o in g.output if o.name in made_by_good]
    outs = list(dict.fromkeys(outs))
    if not outs:
        return None
    cut = cut_model(proto, graph_inputs + new_inputs, outs, input_shapes, drop_unused=True)
    return cut, counts


def add_cut_args(p) -> None:
    """The --inputs/--outputs flags of every command that reads a model."""
    p.add_argument("--inputs", metavar="NAME[,NAME...]", help="compile the subgraph starting at these tensors")
    p.add_argument("--outputs", metavar="NAME[,NAME...]", help="compile the subgraph ending at these tensors")


def apply_cut_args(args, workdir) -> None:
    """CLI: replace args.model by the cut written under `workdir` (so every command, and check's ORT
    reference, reads the cut) and keep only the --input-shape entries that name the cut's inputs."""
    from pathlib import Path


    shapes = dict(parse_input_shape(s) for s in args.input_shape)
    cut = cut_model(args.model, args.inputs, args.outputs, shapes)
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in Path(str(args.model)).stem) or "model"
    path = Path(workdir) / f"{stem}.cut.onnx"
    onnx.save(cut.model, str(path))
    args.model_label = f"{args.model} [{','.join(show(t) for t in cut.inputs)} -> {','.join(show(t) for t in cut.outputs)}]"
    args.model = str(path)
    args.inputs = args.outputs = None   # applied
    args.input_shape = [f"{k}={'x'.join(map(str, v))}" for k, v in cut.input_shapes.items()]
