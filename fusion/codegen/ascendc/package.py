"""`megafuse compile MODEL -t ascend[:SOC] -o DIR`: per fused block the kernel and host trees, and
the custom-operator package (op_pkg/<op_type>/<version>/{op_proto, op_impl, tests,
docs} with op_contract.yaml and benchmark.json).

    DIR/ascend.json                                      index of the blocks and their files
    DIR/<block>/kernel/<sym>.cpp, <sym>_tiling.h
    DIR/<block>/host/<sym>_host.{h,cpp}, main.cpp, CMakeLists.txt, README.md
    DIR/<chain>/kernel/megafuse_<chain>.cpp, the blocks' <sym>_tiling.h   (fusion/driver/chain.py, 910B)
    DIR/<chain>/megafuse_<chain>.json       the chain's packed weights / workspace / tiling layout
    DIR/op_pkg/<OpType>/<version>/op_contract.yaml, benchmark.json
                                 /op_proto/<OpType>.json, <sym>_proto.h
                                 /op_impl/ai_core/<sym>.cpp, <sym>_tiling.h
                                 /op_impl/host/<sym>_host.{h,cpp}
                                 /tests/<sym>_test.py
                                 /docs/README.md
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import fusion.codegen.ascendc.deploy_files as deploy_files
import fusion.codegen.ascendc.emit_host as emit_host
import fusion.codegen.ascendc.yaml_lite as yaml_lite
from fusion.codegen.ascendc.emit_chain import emit_chain
from schedules.wave import member_plan
from fusion.codegen.ascendc.emit_kernel import VERSION, EmittedKernel, emit_kernel
from fusion.codegen.ascendc.node_spec import block_spec, chain_spec, fused_ops_of, op_proto
from fusion.core.errors import MegafuseError
from fusion.core.sanitize import display, inside
from fusion.cost import model_fused
from fusion.cost.vendor_baseline import block_baseline
from schedules.twophase import fixpipe, res_in_cube

def op_pkg_dir(ek: EmittedKernel) -> str:
    return f"op_pkg/{ek.op_type}/{VERSION}"


def contract(ek: EmittedKernel, members: tuple[str, ...] = ()) -> dict:
    """op_contract.yaml: inputs, outputs, dtypes, formats, attributes, alignment and padding rules."""
    p, wl = ek.plan, ek.plan.workload
    tensor = lambda a: {"name": a.name, "dtype": a.dtype, "format": a.fmt, "shape": list(a.shape),  # noqa: E731
                        "bytes": a.nbytes, "description": a.desc}
    ins = [tensor(a) for a in ek.args if a.role in ("input", "weight")]
    outs = [tensor(a) for a in ek.args if a.role == "output"]
    return {
        "op_type": ek.op_type,
        "version": VERSION,
        "kernel": ek.symbol,
        "generator": f"megafuse {VERSION}",
        "block": ek.block,
        "fused_ops": list(members),
        "soc": p.soc.name,
        "soc_version": emit_host.soc_version(p.soc.name),
        "description": (f"Fused depthwise-separable block: DW {wl.kernel[0]}x{wl.kernel[1]} stride "
                        f"{wl.stride[0]}x{wl.stride[1]} + bias + {wl.act1}, PW 1x1 + bias + {wl.act2}"
                        f"{' + residual' if wl.residual else ''}; BN folded into the weights"),
        "signature": ek.signature,
        "parameters": [a.name for a in ek.args],
        "inputs": ins,
        "outputs": outs,
        "workspace": {"name": "workspace", "bytes": ek.device_workspace_bytes, "user_bytes": ek.workspace_bytes,
                      "system_bytes": ek.system_workspace_bytes if ek.workspace_bytes else 0,
                      "use": (ek.arg("workspace").desc if ek.workspace_bytes else "unused")},
        "tiling": {"name": "tiling", "struct": ek.tiling_struct, "bytes": 4 * len(ek.tiling_fields),
                   "fields": {k: v for k, v in ek.tiling_fields}},
        "attributes": {
            "batch": wl.batch, "cin": wl.cin, "cout": wl.cout, "height": wl.height, "width": wl.width,
            "out_height": wl.out_height, "out_width": wl.out_width,
            "kernel_size": list(wl.kernel), "strides": list(wl.stride),
            "pads": list(wl.pads), "act1": wl.act1, "act2": wl.act2, "residual": wl.residual,
            "dtype": wl.dtype, "accumulate": "float32",
        },
        "alignment": {
            "c0": 16,
            "channel_padding": (f"channels are padded with zeros to multiples of 16 (C1 = {wl.c1}, "
                                f"CO1 = {wl.co1}); weights and biases of padded channels must be 0; "
                                "padded output channels are written as act2(0)"),
            "spatial_padding": (f"the DW conv pads (top, left, bottom, right) = {list(wl.pads)} are zeros "
                                "made in UB; x in GM is unpadded"),
            "gm_alignment_bytes": 32,
            "ub_alignment_bytes": p.soc.ub_align,
            "row_bytes": (f"one pixel of 16 channels is {16 * (2 if wl.dtype == 'float16' else 4)} B, so every "
                          "GM row segment is a whole number of 32 B blocks (DataCopy, no DataCopyPad)"),
            "tails": (f"output tiles that do not divide {wl.out_height}x{wl.out_width} are computed whole "
                      "and written back clipped to the image"),
        },
        "launch": {
            "block_dim": ek.block_dim,
            "kernels": [{"symbol": ln.symbol, "block_dim": ln.block_dim, "core": ln.core, "what": ln.what,
                         "kernel_type": (f"KERNEL_TYPE_{ln.kernel_type.upper()}" if ln.kernel_type else
                                         "KERNEL_TYPE_AIV_ONLY" if ln.core == "AIV" else None),
                         "parameters": list(ln.args)} for ln in ek.launches],
        },
        "plan": {
            "variant": ek.variant,
            "tile": {"th": p.th, "tw": p.tw, "cib": p.cib, "cob": p.cob,
                     "double_buffer": p.tile.double_buffer, "pw_engine": p.tile.pw_engine},
            "n_tiles": p.n_tiles, "cores": p.cores, "ci_steps": p.ci_steps, "co_steps": p.co_steps,
            "ub_bytes": p.ub_bytes, "ub_capacity": p.soc.ub_usable_bytes,
            "memory": {sc: {"bytes": used, "capacity": p.capacity(sc)} for sc, used in p.scope_bytes.items()},
            "buffers": [{"name": b.name, "scope": b.scope, "shape": list(b.shape), "dtype": b.dtype,
                         "copies": b.copies, "bytes": b.aligned_bytes(p.soc.ub_align)} for b in p.kernel_buffers],
        },
        "precision": {
            "storage": wl.dtype, "accumulate": "float32",
            "tolerance_max_rel": 2e-2 if wl.dtype == "float16" else 1e-4,
            "rounding": _rounding(ek),
        },
        "notes": list(ek.notes),
    }


def _rounding(ek: EmittedKernel) -> str:
    dw = "DW: products exact in fp32 (Axpy), one rounding per add"
    if ek.variant == "vector-pw":
        return dw + "; PW likewise; fp32 -> storage by Cast CAST_NONE"
    pw = "; PW: Mmad accumulates in fp32 (the cube's order)"
    if ek.variant == "cube-pw" or (ek.variant == "two-phase" and ek.plan.soc.coupled):
        return dw + pw + "; L0C -> UB in fp32, epilogue in fp32, Cast CAST_NONE to storage"
    if ek.variant == "two-phase":
        if fixpipe(ek.plan.workload, ek.plan.soc):
            res = (", the residual added exactly (x 1) by the cube" if res_in_cube(ek.plan.workload, ek.plan.soc)
                   else "")
            return dw + pw + f" from the fp32 bias{res}; Fixpipe F322F16 to storage"
    if ek.plan.fixpipe_epilogue:
        return dw + pw + " from the fp32 bias; Fixpipe F322F16 to storage"
    return dw + pw + "; the pre-activation is rounded to fp16 by Fixpipe, the AIV epilogue runs in fp32"


def benchmark(ek: EmittedKernel, model_name: str | None = None, emulator: dict | None = None) -> dict:
    """benchmark.json: the cost model's figures for this plan (labelled modeled) next to the modeled
    unfused baseline (the vendor-like kernels the block replaces, lowered programs on the same step
    simulator); measured fields stay null until the launcher is run on a device."""

    p, wl = ek.plan, ek.plan.workload
    cost = model_fused(p, name=ek.symbol, timeline=False)
    base = block_baseline(wl, p.soc, "vendor")
    d = cost.as_dict()
    d.pop("timeline", None)
    return {
        "op_type": ek.op_type, "kernel": ek.symbol, "version": VERSION, "commit": _git_sha(),
        "model": model_name, "batch": wl.batch, "soc": p.soc.name, "tile": p.tile.describe(),
        "label": "modeled",
        "avg_latency_ms": cost.time_us / 1000.0,
        "p95_latency_ms": None,
        "throughput_fps": wl.batch / (cost.time_us * 1e-6) if cost.time_us > 0 else None,
        "gm_read_bytes": cost.gm_read_bytes, "gm_write_bytes": cost.gm_write_bytes,
        "modeled": d,
        "baseline_unfused_modeled": {"variant": base.variant, "time_us": base.time_us, "gm_bytes": base.gm_bytes,
                                     "kernels": len(base.kernels)},
        "speedup_vs_unfused_modeled": base.time_us / cost.time_us if cost.time_us > 0 else None,
        "measured": {"avg_latency_ms": None, "p95_latency_ms": None, "warmup": 3, "iterations": 50,
                     "how": "host/main.cpp on a device prints avg_us / p95_us"},
        "emulator_counters": emulator,
        "instruction_mix": instruction_mix_note(ek),
        "profiling_date": None,
    }


def instruction_mix_note(ek: EmittedKernel) -> str:
    """How far the modeled vector time describes this kernel's own instruction mix."""
    del ek   # every variant: the program counts the vector ops as the kernel issues them
    return ("the emitted vector instructions and repeats equal the model's counts (the lowered program "
            "states each op as the kernel issues it; tests/codegen/test_ascendc_codegen.py); the modeled time "
            "describes this kernel's instruction mix")


def _git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def op_info(ek: EmittedKernel, members: tuple[str, ...] = ()) -> dict:
    """op_proto/<OpType>.json: the node's definition (fusion/codegen/ascendc/node_spec.py): inputs/outputs
    with dtype, format and shape, and the attributes the fused ONNX node carries."""
    return op_proto(block_spec(ek, members), ek.symbol)


def proto_header(ek: EmittedKernel, members: tuple[str, ...] = ()) -> str:
    return deploy_files.proto_header(block_spec(ek, members), ek.symbol)


def block_files(ek: EmittedKernel, cost=None) -> dict[str, str]:
    """Relative path (under DIR/<block>/) -> text."""
    s = ek.symbol
    pkg = op_pkg_dir(ek)
    return {
        f"kernel/{ek.source_name}": ek.source,
        f"kernel/{ek.tiling_header_name}": ek.tiling_header,
        f"host/{s}_host.h": emit_host.host_header(ek),
        f"host/{s}_host.cpp": emit_host.host_tiling_cpp(ek),
        "host/main.cpp": emit_host.main_cpp(ek),
        "host/CMakeLists.txt": emit_host.cmake_lists(ek),
        "host/README.md": emit_host.readme(ek, pkg, cost),
    }


def package_files(ek: EmittedKernel, members=(), model_name=None, emulator=None, cost=None) -> dict[str, str]:
    """Relative path (under DIR/op_pkg/<OpType>/<version>/) -> text."""
    s = ek.symbol
    return {
        "op_contract.yaml": f"# Generated by megafuse {VERSION}: the contract of {ek.op_type}\n"
                            + yaml_lite.dump(contract(ek, members)),
        "benchmark.json": json.dumps(benchmark(ek, model_name, emulator), indent=2) + "\n",
        f"op_proto/{ek.op_type}.json": json.dumps(op_info(ek, members), indent=2) + "\n",
        f"op_proto/{s}_proto.h": proto_header(ek, members),
        f"framework/onnx_plugin/{s}_onnx_plugin.cc": deploy_files.onnx_plugin(block_spec(ek, members), s),
        f"op_impl/ai_core/{ek.source_name}": ek.source,
        f"op_impl/ai_core/{ek.tiling_header_name}": ek.tiling_header,
        f"op_impl/host/{s}_host.h": emit_host.host_header(ek),
        f"op_impl/host/{s}_host.cpp": emit_host.host_tiling_cpp(ek),
        f"tests/{s}_test.py": emit_host.test_script(ek),
        "docs/README.md": emit_host.readme(ek, ".", cost) + deploy_files.atc_steps(block_spec(ek, members), s),
    }


def write_ascend_package(cm, out: Path, model_name: str | None = None) -> list[EmittedKernel]:

    out = Path(out)
    model_name = model_name or getattr(cm.graph, "name", None)
    kernels = []
    index = {"generator": f"megafuse {VERSION}", "target": cm.target.name, "dtype": cm.dtype, "blocks": []}
    for block in cm.fused_blocks:
        ek = emit_kernel(block.plan, block.name)
        cost = model_fused(ek.plan, name=ek.symbol, timeline=False)
        files = {f"{block.name}/{k}": v for k, v in block_files(ek, cost).items()}
        pkg = op_pkg_dir(ek)
        files.update({f"{pkg}/{k}": v for k, v in
                      package_files(ek, block.members, model_name, None, cost).items()})
        _write_files(out, files)
        index["blocks"].append({"block": block.name, "kernel": ek.symbol, "op_type": ek.op_type,
                                "variant": ek.variant, "tile": ek.plan.tile.describe(),
                                "block_dim": ek.block_dim, "files": sorted(files)})
        kernels.append(ek)
    # a chain composes its members as they run in it (fusion/chain.chain_plans), GEMM stages included
    index["chains"] = _write_chains(cm, out, {n: emit_kernel(p, n) for n, p in cm.chain_plans.items()})
    (out / "ascend.json").write_text(json.dumps(index, indent=2) + "\n")
    return kernels


def _write_files(out: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = inside(out, rel)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        except OSError as e:
            raise MegafuseError(f"cannot write '{display(str(path))}': {e.strerror}") from None


def _write_chains(cm, out: Path, kernels: dict[str, EmittedKernel]) -> list[dict]:
    """Each chain's kernel (fusion/codegen/ascendc/emit_chain.py) beside the blocks' own kernels: the
    blocks' op packages stay usable one by one; the chain is the faster launch of the same code.
    `kernels`: every chain member's kernel from its chain plan. Each chain and each GEMM stage
    gets its op package too (the chain is one node of the fused ONNX model)."""
    rows = []
    for chain in cm.chains:
        chunks = cm.chain_plans[chain.blocks[0]].chunks   # one image chunk's kernels (schedules/wave.py)
        members = [kernels[b] if chunks == 1 else emit_kernel(member_plan(cm.chain_plans[b]), b) for b in chain.blocks]
        ec = emit_chain(chain.name, members, chain.residual_from, chain.stages, chunks)
        files = {f"{chain.name}/kernel/{ec.source_name}": ec.source,
                 f"{chain.name}/{ec.symbol}.json": ec.manifest()}
        files.update({f"{chain.name}/kernel/{name}": text for name, text in ec.headers})
        spec = chain_spec(ec, fused_ops_of(cm, chain.blocks))
        files.update({f"op_pkg/{spec.op_type}/{VERSION}/{k}": v
                      for k, v in deploy_files.chain_package_files(ec, spec).items()})
        for name in chain.stages:   # a GEMM stage's own package (its chain plan)
            ek = kernels[name]
            files.update({f"{op_pkg_dir(ek)}/{k}": v for k, v in
                          package_files(ek, cm.chain_stages[name].members, getattr(cm.graph, "name", None)).items()})
        _write_files(out, files)
        rows.append({"chain": chain.name, "kernel": ec.symbol, "op_type": spec.op_type, "blocks": list(chain.blocks),
                     "stages": list(chain.stages), "block_dim": ec.block_dim, "files": sorted(files)})
    return rows


def verify_package(out: Path) -> list[str]:
    """Structural check of a tree written by write_ascend_package: the files are there, every
    op_contract.yaml parses and agrees with its kernel's signature and tiling struct. Returns the
    problems found (empty when the package is sound)."""
    import re

    out = Path(out)
    problems: list[str] = []
    try:
        index = json.loads((out / "ascend.json").read_text())
    except (OSError, ValueError) as e:
        return [f"ascend.json: {e}"]
    for entry in index.get("blocks", []):
        blk, sym, op = entry["block"], entry["kernel"], entry["op_type"]
        for rel in (f"kernel/{sym}.cpp", f"kernel/{sym}_tiling.h", f"host/{sym}_host.h", f"host/{sym}_host.cpp",
                    "host/main.cpp", "host/CMakeLists.txt", "host/README.md"):
            if not (out / blk / rel).is_file():
                problems.append(f"{blk}/{rel} missing")
        ver = out / "op_pkg" / op / VERSION
        for d in ("op_proto", "op_impl", "tests", "docs"):
            if not (ver / d).is_dir() or not any((ver / d).rglob("*")):
                problems.append(f"{ver.relative_to(out)}/{d}/ missing or empty")
        for f in ("op_contract.yaml", "benchmark.json"):
            if not (ver / f).is_file():
                problems.append(f"{ver.relative_to(out)}/{f} missing")
        if problems:
            continue
        try:
            c = yaml_lite.load((ver / "op_contract.yaml").read_text())
        except Exception as e:  # noqa: BLE001 - any parse failure is a finding
            problems.append(f"op_contract.yaml of {op} does not parse: {e}")
            continue
        src = (out / blk / "kernel" / f"{sym}.cpp").read_text()
        m = re.search(r'extern "C" __global__ __aicore__ void ' + re.escape(sym) + r"\(([^)]*)\)", src)
        if not m:
            problems.append(f"{sym}.cpp has no kernel entry {sym}")
            continue
        params = [p.split()[-1] for p in m.group(1).split(",")]
        named = [t["name"] for t in c.get("inputs", [])] + [t["name"] for t in c.get("outputs", [])]
        if c.get("kernel") != sym or c.get("op_type") != op:
            problems.append(f"op_contract.yaml of {op} names kernel {c.get('kernel')!r} / op {c.get('op_type')!r}")
        if c.get("parameters") != params or named + ["workspace", "tiling"] != params:
            problems.append(f"op_contract.yaml of {op}: parameters {c.get('parameters')} / tensors {named} "
                            f"do not match the kernel signature {params}")
        hdr = (out / blk / "kernel" / f"{sym}_tiling.h").read_text()
        fields = re.findall(r"^    uint32_t (\w+);$", hdr, re.M)
        if list(c.get("tiling", {}).get("fields", {})) != fields:
            problems.append(f"op_contract.yaml of {op}: tiling fields differ from {sym}_tiling.h")
        ctype = {"float16": "half", "float32": "float"}.get(c.get("attributes", {}).get("dtype"))
        if ctype is None or f"using T = {ctype};" not in src:
            problems.append(f"op_contract.yaml of {op}: dtype does not match the kernel's storage type")
    return problems
