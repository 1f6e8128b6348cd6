"""CLI: ``python -m models list`` / ``python -m models build NAME -o FILE.onnx``."""

from __future__ import annotations

import argparse
import inspect
import sys

import onnx

from . import REGISTRY, build


def _shape(vi: onnx.ValueInfoProto) -> str:
    dims = [d.dim_param or str(d.dim_value) for d in vi.type.tensor_type.shape.dim]
    return f"{vi.name}[{','.join(dims)}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="print the registry names")
    b = sub.add_parser("build", help="write one model to an .onnx file")
    b.add_argument("name")
    b.add_argument("-o", "--output", required=True)
    b.add_argument("--batch", type=int)
    b.add_argument("--resolution", type=int, help="square input side (models with a resolution option)")
    b.add_argument("--fold-bn", action="store_true")
    b.add_argument("--seed", type=int)
    b.add_argument("--opset", type=int)
    args = parser.parse_args(argv)

    if args.cmd == "list":
        print("\n".join(REGISTRY))
        return 0

    # Only forward what was given, so each builder keeps its own defaults.
    overrides = {k: v for k, v in (("batch", args.batch), ("seed", args.seed), ("opset", args.opset),
                                   ("resolution", args.resolution)) if v is not None}
    if args.fold_bn:
        overrides["fold_bn"] = True
    try:
        model = build(args.name, **overrides)
    except (KeyError, ValueError) as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 2
    except TypeError:   # an option the builder does not take (e.g. --resolution of a fixed-shape block)
        takes = inspect.signature(REGISTRY[args.name]).parameters
        bad = [k for k in overrides if k not in takes] or list(overrides)
        print(f"error: model {args.name!r} does not take {', '.join('--' + k for k in bad)}", file=sys.stderr)
        return 2
    onnx.save(model, args.output)
    inputs = " ".join(_shape(vi) for vi in model.graph.input)
    print(f"{args.output} inputs={inputs} nodes={len(model.graph.node)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
