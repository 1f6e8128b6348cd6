"""The op package files that take a fused ONNX model (fusion/driver/onnx_export.py) to a CANN device:
the GE prototype and the ATC ONNX parser plugin of each custom node, the ATC steps of the
package README, and the package of a block chain (its kernel, manifest and prototype).
Every text is generated from the node's NodeSpec (fusion/codegen/ascendc/node_spec.py)."""

from __future__ import annotations

import json

from fusion.codegen.ascendc.cxx import fill, template
from fusion.codegen.ascendc.emit_chain import EmittedChain
from fusion.codegen.ascendc.emit_host import soc_version
from fusion.codegen.ascendc.emit_kernel import VERSION
from fusion.codegen.ascendc.node_spec import DOMAIN, DOMAIN_VERSION, NodeSpec, attr_type, op_proto

GE_DTYPE = {"float16": "DT_FLOAT16", "float32": "DT_FLOAT", "uint8": "DT_UINT8"}


def proto_header(spec: NodeSpec, symbol: str) -> str:
    """op_proto/<sym>_proto.h: REG_OP with the node's inputs, outputs and attributes."""
    rows = [f"    .INPUT({t.name}, TensorType({{ge::{GE_DTYPE[t.dtype]}}}))  // {t.fmt} {list(t.shape)}"
            for t in spec.inputs]
    rows += [f"    .OUTPUT({t.name}, TensorType({{ge::{GE_DTYPE[t.dtype]}}}))  // {t.fmt} {list(t.shape)}"
             for t in spec.outputs]
    rows += [f"    .REQUIRED_ATTR({k}, {attr_type(v)})" for k, v in spec.attributes]
    return fill(template("op_proto.h"), VERSION=VERSION, OPTYPE=spec.op_type, KIND=spec.kind, SYM=symbol,
                DOMAIN=DOMAIN, BODY="\n".join(rows))


def onnx_plugin(spec: NodeSpec, symbol: str) -> str:
    return fill(template("onnx_plugin.cc"), VERSION=VERSION, OPTYPE=spec.op_type, KIND=spec.kind, SYM=symbol,
                DOMAIN=DOMAIN, DOMAINVER=DOMAIN_VERSION)


def atc_steps(spec: NodeSpec, symbol: str) -> str:
    """The README section: from the op packages and model.fused.onnx to an offline model (.om).
    Written from CANN's documented flow; not run here (no CANN toolkit on this machine)."""
    soc = soc_version(str(spec.attr("soc")))
    ins = ", ".join(f"`{t.name}` {t.dtype} {t.fmt} {list(t.shape)}" for t in spec.inputs)
    return f"""
## Deploying model.fused.onnx with ATC

`model.fused.onnx` (written by `megafuse compile --emit-onnx -o DIR`) holds one `{DOMAIN}` node per fused
block or block chain; this package is the one of node type `{spec.op_type}` (inputs {ins}; output
`{spec.outputs[0].name}` {spec.outputs[0].fmt} {list(spec.outputs[0].shape)}; attributes as in
`op_proto/{spec.op_type}.json`, which a test checks against the node). On a machine with the CANN toolkit:

1. Create the operator project from the prototype: `msopgen gen -i op_proto/{spec.op_type}.json -f onnx
   -c ai_core-{soc} -lan cpp -out {spec.op_type}_project` (or an existing custom-op project).
2. Copy the sources in: `op_impl/ai_core/*` to `op_kernel/`, `op_impl/host/*` (blocks) to `op_host/`,
   `framework/onnx_plugin/{symbol}_onnx_plugin.cc` to `framework/onnx_plugin/` (it maps
   `{DOMAIN}::{DOMAIN_VERSION}::{spec.op_type}` to the GE operator), `op_proto/{symbol}_proto.h` to `op_proto/`.
3. Build and install: `bash build.sh`, then `./build_out/custom_opp_*.run` (installs under
   `$ASCEND_OPP_PATH/vendors/`; or `--install-path=DIR` and `export ASCEND_CUSTOM_OPP_PATH=DIR/vendors/customize`).
   Repeat 1-3 for every package under `op_pkg/` that `model.fused.onnx` names.
4. Convert: `atc --model=model.fused.onnx --framework=5 --output=model_fused --soc_version={soc}`
   (`--input_shape` only for a model with dynamic inputs; the fused nodes are compiled for fixed shapes).
5. Run `model_fused.om` with ACL (e.g. `msame --model model_fused.om --output out/`) and compare with
   ONNX Runtime on `model.fused.onnx` here (`fusion.verify.onnx_run`, the same nodes through the LLVM kernels).
"""


def chain_package_files(ec: EmittedChain, spec: NodeSpec) -> dict[str, str]:
    """Relative path (under DIR/op_pkg/<OpType>/<version>/) -> text, for a block chain."""
    s = ec.symbol
    files = {
        f"op_proto/{spec.op_type}.json": json.dumps(op_proto(spec, s), indent=2) + "\n",
        f"op_proto/{s}_proto.h": proto_header(spec, s),
        f"op_impl/ai_core/{ec.source_name}": ec.source,
        f"op_impl/{s}.json": ec.manifest(),
        f"framework/onnx_plugin/{s}_onnx_plugin.cc": onnx_plugin(spec, s),
        "docs/README.md": (f"# {spec.op_type}: block chain {ec.name} (megafuse {VERSION})\n\n"
                           f"One launch of {len(ec.blocks)} members ({', '.join(ek.block for ek in ec.blocks)}; "
                           f"GEMM stages: {', '.join(ec.stages) or 'none'}), {ec.block_dim} blocks, a SyncAll "
                           f"between members. `op_impl/{s}.json` is the host's layout of the packed weights, "
                           f"workspace and tiling (the `weights` input packs every member's w_dw, b_dw, w_pw, "
                           f"b_pw at the offsets of the node's `weight_offsets` attribute).\n"
                           + atc_steps(spec, s)),
    }
    files.update({f"op_impl/ai_core/{name}": text for name, text in ec.headers})
    return files


__all__ = ["atc_steps", "chain_package_files", "onnx_plugin", "proto_header"]
