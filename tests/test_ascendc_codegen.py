"""Ascend C code generation (fusion/ascendc) verified on the host emulation (fusion/ascendc_emu).

* every generated kernel of the six MobileNetV1 block shapes and the odd shapes builds with g++
  against the emulation and matches ONNX Runtime within fp16 tolerance on 910B2 and 310P3;
* the code comes from the plan: a different tile gives different code;
* the emulator's GM byte counters equal the cost model's figures for the same plan;
* the emitted package is complete, its op_contract.yaml parses and agrees with the kernel;
* the CLI runs it (`megafuse check -t ascend:910b2`, `megafuse compile -t ascend -o DIR`).

Kernel builds are cached under $MEGAFUSE_CACHE_DIR/emu (default ~/.cache/megafuse/emu); the first
run compiles every kernel once (about 4 s each, in parallel).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess

import numpy as np
import pytest

import models
from fusion.ascend_check import build_all, build_emitted, check_ascend, run_emitted
from fusion.ascendc import emit_kernel, yaml_lite
from fusion.ascendc.package import verify_package
from fusion.cli import main as cli_main
from fusion.costmodel import model_fused
from fusion.driver import TileOverride, compile_model
from fusion.soc import get_soc
from schedules.plan import make_plan
from schedules.workload import DwSepWorkload, TileConfig

SOCS = ["ascend910b2", "ascend310p3"]
BLOCKS = [b["name"] for b in models.MOBILENET_V1_BLOCKS + models.ODD_BLOCKS]
FP16_TOL = 2e-2


# ---- the acceptance matrix: 10 block shapes x 2 SoCs, fp16, default tiles ---------------------

@pytest.fixture(scope="module")
def compiled():
    """Every (SoC, block) compiled once; all generated kernels built up front, in parallel."""
    out = {}
    for soc in SOCS:
        for name in BLOCKS:
            m = models.build(name)
            out[soc, name] = (m, compile_model(m, target=f"ascend:{soc}", dtype="float16"))
    kernels = [emit_kernel(b.plan, b.name) for _m, cm in out.values() for b in cm.fused_blocks]
    build_all(kernels)
    return out


@pytest.mark.parametrize("soc", SOCS)
@pytest.mark.parametrize("name", BLOCKS)
def test_generated_kernel_matches_onnxruntime(compiled, soc, name):
    model, cm = compiled[soc, name]
    assert len(cm.fused_blocks) == 1
    res = check_ascend(cm, model, seed=0)
    assert res.passed, res.to_json()
    assert res.max_rel <= FP16_TOL
    (blk,) = res.blocks
    assert blk.variant == "vector-pw" and blk.soc == soc
    # the kernel is the fused computation itself: it agrees with the CPU kernel of the block
    assert blk.max_rel <= 1e-3, blk.describe()
    # one core per plan core, every byte the cost model counts
    assert blk.block_dim == cm.fused_blocks[0].plan.cores
    assert blk.counters["gm_read_bytes"] == blk.model_gm_read_bytes, blk.describe()
    assert blk.counters["gm_write_bytes"] == blk.model_gm_write_bytes, blk.describe()
    assert blk.counters["vector_instructions"] > 0 and blk.counters["cube_fractals"] == 0


# ---- code comes from the plan ------------------------------------------------------------------

def test_different_tile_gives_different_code():
    wl = DwSepWorkload(1, 32, 64, 28, 28, dtype="float16")
    soc = get_soc("ascend910b2")
    a = emit_kernel(make_plan(wl, TileConfig(4, 7, 2, 1), soc), "blk")
    b = emit_kernel(make_plan(wl, TileConfig(7, 4, 1, 2, double_buffer=False), soc), "blk")
    assert a.source != b.source and a.tiling_header != b.tiling_header
    assert a.tiling_bytes() != b.tiling_bytes()
    # buffer sizes and queue depths are the plan's
    for ek in (a, b):
        for buf in ek.plan.buffers:
            cname = "k" + "".join(p.capitalize() for p in buf.name.split("_"))
            assert f"constexpr uint32_t {cname}Bytes = {buf.bytes_per_copy};" in ek.tiling_header
            assert f"constexpr uint32_t {cname}Copies = {buf.copies};" in ek.tiling_header
        fields = dict(ek.tiling_fields)
        p = ek.plan
        assert (fields["th"], fields["tw"], fields["cib"], fields["cob"]) == (p.th, p.tw, p.cib, p.cob)
        assert (fields["nTiles"], fields["blockDim"], fields["ciSteps"], fields["coSteps"]) == \
            (p.n_tiles, p.cores, p.ci_steps, p.co_steps)
    assert "GetBlockIdx()" in a.source and "GetBlockNum()" in a.source
    assert re.search(r"InitBuffer\(xQue, \w+::kXTileCopies, \w+::kXTileBytes\)", a.source)


# ---- GM traffic: emulator counters == cost model ---------------------------------------------

def _act(x, kind):
    if kind == "relu":
        return np.maximum(x, 0)
    if kind == "relu6":
        return np.clip(x, 0, 6)
    if kind == "hardswish":
        return x * np.clip(x + 3, 0, 6) / 6
    return x


def _reference(wl: DwSepWorkload, x, w_dw, b_dw, w_pw, b_pw, res=None):
    """NumPy float32 reference of the fused block in the kernel's layouts."""
    (kh, kw), (sh, sw), (pt, pl, pb, pr) = wl.kernel, wl.stride, wl.pads
    oh, ow = wl.out_height, wl.out_width
    xp = np.pad(x.astype(np.float32), ((0, 0), (0, 0), (pt, pb), (pl, pr), (0, 0)))
    dw = np.zeros((wl.batch, wl.c1, oh, ow, 16), np.float32)
    for i in range(kh):
        for j in range(kw):
            dw += (xp[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
                   * w_dw[None, :, i, j, None, None, :].astype(np.float32))
    dw = _act(dw + b_dw[None, :, None, None, :], wl.act1).astype(wl.dtype).astype(np.float32)
    y = _act(np.einsum("nchwk,ockq->nohwq", dw, w_pw.astype(np.float32)) + b_pw[None, :, None, None, :], wl.act2)
    if res is not None:
        y = y + res.astype(np.float32)
    return y


def _random_args(wl: DwSepWorkload, seed=0):
    rng = np.random.default_rng(seed)
    kh, kw = wl.kernel
    ci, co = np.arange(wl.c1 * 16) < wl.cin, np.arange(wl.co1 * 16) < wl.cout
    mi, mo = ci.reshape(wl.c1, 16), co.reshape(wl.co1, 16)
    a = {
        "x": rng.standard_normal((wl.batch, wl.c1, wl.height, wl.width, 16)) * mi[None, :, None, None, :],
        "w_dw": rng.standard_normal((wl.c1, kh, kw, 16)) / 3 * mi[:, None, None, :],
        "b_dw": rng.standard_normal((wl.c1, 16)) * mi,
        "w_pw": rng.standard_normal((wl.co1, wl.c1, 16, 16)) / np.sqrt(wl.cin) * mi[None, :, :, None]
        * mo[:, None, None, :],
        "b_pw": rng.standard_normal((wl.co1, 16)) * mo,
    }
    if wl.residual:
        a["res"] = rng.standard_normal((wl.batch, wl.co1, wl.out_height, wl.out_width, 16)) * mo[None, :, None, None, :]
    dt = {"x": wl.dtype, "w_dw": wl.dtype, "w_pw": wl.dtype, "res": wl.dtype, "b_dw": "float32", "b_pw": "float32"}
    return {k: np.ascontiguousarray(v.astype(dt[k])) for k, v in a.items()}


# (workload, tile, soc): double buffering on/off, tiles that do not divide the output, several
# cib / cob (co-step tails), resident and streamed PW weights, stride 2, 5x5, batch 2, residual
CONSISTENCY = [
    (DwSepWorkload(1, 40, 56, 13, 13, dtype="float16"), TileConfig(4, 5, 2, 2, True), "ascend910b2"),
    (DwSepWorkload(1, 40, 56, 13, 13, dtype="float16"), TileConfig(4, 5, 2, 2, False), "ascend910b2"),
    (DwSepWorkload(2, 24, 40, 11, 9, (3, 3), (2, 2), dtype="float16"), TileConfig(2, 3, 1, 1, True), "ascend310p3"),
    (DwSepWorkload(1, 32, 48, 12, 12, (5, 5), (1, 1), (2, 2, 2, 2), act1="relu6", act2="hardswish",
                   dtype="float16"), TileConfig(5, 12, 3, 0, True), "ascend310p3"),
    (DwSepWorkload(1, 48, 48, 10, 10, act1="hardswish", act2="none", residual=True, dtype="float16"),
     TileConfig(3, 4, 2, 1, False), "ascend910b2"),
    (DwSepWorkload(1, 16, 80, 9, 7, (3, 3), (2, 1), (1, 1, 1, 1), dtype="float32"),
     TileConfig(2, 7, 5, 1, True), "ascend910b2"),
]


@pytest.mark.parametrize("wl,tile,soc", CONSISTENCY, ids=[f"{w.describe()}|{t.describe()}|{s}"
                                                          for w, t, s in CONSISTENCY])
def test_emulator_gm_bytes_equal_cost_model(wl, tile, soc):
    plan = make_plan(wl, tile, get_soc(soc))
    assert plan.fits()
    ek = emit_kernel(plan, "consistency")
    args = _random_args(wl)
    y, counters, _ = run_emitted(ek, build_emitted(ek), args)
    cost = model_fused(plan, timeline=False)
    assert counters["gm_read_bytes"] == cost.gm_read_bytes
    assert counters["gm_write_bytes"] == cost.gm_write_bytes
    assert cost.gm_read_bytes == sum(v for k, v in cost.traffic.items() if k != "output")
    ref = _reference(wl, **args)
    err = np.abs(y.astype(np.float64) - ref).max() / np.abs(ref).max()
    assert err <= (FP16_TOL if wl.dtype == "float16" else 1e-5), err


# ---- plans with PW on the cube -------------------------------------------------------------------

@pytest.mark.parametrize("soc", SOCS)
def test_cube_plan_is_emitted_as_vector_pw_and_passes(soc):
    m = models.build("odd_c40_56_h28")
    cm = compile_model(m, target=f"ascend:{soc}", dtype="float16",
                       tile=TileOverride(3, 7, 2, None, True, "cube"))
    assert cm.fused_blocks[0].plan.pw_on_cube
    res = check_ascend(cm, m)
    assert res.passed, res.to_json()
    (blk,) = res.blocks
    assert blk.variant == "vector-pw" and any("cube" in n for n in blk.notes)


# ---- the package -----------------------------------------------------------------------------------

def _load_yaml(text: str):
    try:
        import yaml  # PyYAML when installed; the project's tiny parser otherwise
        return yaml.safe_load(text)
    except ModuleNotFoundError:
        return yaml_lite.load(text)


def _signature(source: str, symbol: str) -> list[str]:
    m = re.search(r'extern "C" __global__ __aicore__ void ' + symbol + r"\(([^)]*)\)", source)
    assert m, f"no kernel entry {symbol}"
    params = [p.strip() for p in m.group(1).split(",")]
    assert all(p.startswith("GM_ADDR ") for p in params)
    return [p.split()[-1] for p in params]


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    model = models.dwsep_block(cin=40, cout=40, h=13, residual=True, act1="relu6", act2="none")
    path = tmp_path_factory.mktemp("model") / "block.onnx"
    import onnx
    onnx.save(model, path)
    out = tmp_path_factory.mktemp("pkg") / "out"
    rc = cli_main(["compile", str(path), "-t", "ascend:910b2", "--dtype", "float16", "-o", str(out)])
    assert rc == 0
    return path, out


def test_package_is_complete_and_contract_matches_kernel(package):
    _model, out = package
    assert verify_package(out) == []
    index = __import__("json").loads((out / "ascend.json").read_text())
    assert index["target"] == "ascend:ascend910b2" and len(index["blocks"]) == 1
    (entry,) = index["blocks"]
    blk, sym, op = entry["block"], entry["kernel"], entry["op_type"]
    for rel in (f"kernel/{sym}.cpp", f"kernel/{sym}_tiling.h", f"host/{sym}_host.cpp", f"host/{sym}_host.h",
                "host/main.cpp", "host/CMakeLists.txt", "host/README.md"):
        assert (out / blk / rel).is_file(), rel
    ver = next((out / "op_pkg" / op).iterdir())
    for d in ("op_proto", "op_impl", "tests", "docs"):
        assert (ver / d).is_dir() and any((ver / d).rglob("*")), d
    contract = _load_yaml((ver / "op_contract.yaml").read_text())
    source = (out / blk / "kernel" / f"{sym}.cpp").read_text()
    params = _signature(source, sym)
    assert contract["kernel"] == sym and contract["op_type"] == op
    assert contract["parameters"] == params
    assert [t["name"] for t in contract["inputs"]] + [t["name"] for t in contract["outputs"]] \
        + ["workspace", "tiling"] == params
    assert params == ["x", "w_dw", "b_dw", "w_pw", "b_pw", "res", "y", "workspace", "tiling"]
    fmts = {t["name"]: (t["format"], t["dtype"]) for t in contract["inputs"] + contract["outputs"]}
    assert fmts["x"] == ("NC1HWC0", "float16") and fmts["y"] == ("NC1HWC0", "float16")
    assert fmts["w_pw"] == ("FRACTAL_Z", "float16") and fmts["b_pw"][1] == "float32"
    assert contract["attributes"]["residual"] is True and contract["attributes"]["act1"] == "relu6"
    assert contract["tiling"]["bytes"] == 4 * len(contract["tiling"]["fields"])
    assert "using T = half;" in source
    # the tiling struct the host fills has the contract's fields, in order
    header = (out / blk / "kernel" / f"{sym}_tiling.h").read_text()
    assert re.findall(r"^    uint32_t (\w+);$", header, re.M) == list(contract["tiling"]["fields"])
    bench = __import__("json").loads((ver / "benchmark.json").read_text())
    assert bench["label"] == "modeled" and bench["gm_read_bytes"] > 0 and bench["modeled"]["time_us"] > 0
    cmake = (out / blk / "host" / "CMakeLists.txt").read_text()
    assert "ascendc_library(" in cmake and "ascendcl" in cmake
    assert f"ACLRT_LAUNCH_KERNEL({sym})" in (out / blk / "host" / "main.cpp").read_text()


STUB_ACL = r"""#pragma once
#include <cstddef>
#include <cstdint>
typedef int aclError; typedef void* aclrtStream; typedef void* aclrtEvent;
enum { ACL_SUCCESS = 0, ACL_MEM_MALLOC_HUGE_FIRST = 0, ACL_MEMCPY_HOST_TO_DEVICE = 1, ACL_MEMCPY_DEVICE_TO_HOST = 2 };
aclError aclInit(const char*); aclError aclFinalize(); aclError aclrtSetDevice(int32_t); aclError aclrtResetDevice(int32_t);
aclError aclrtCreateStream(aclrtStream*); aclError aclrtDestroyStream(aclrtStream); aclError aclrtSynchronizeStream(aclrtStream);
aclError aclrtMalloc(void**, size_t, int); aclError aclrtMallocHost(void**, size_t); aclError aclrtFree(void*);
aclError aclrtFreeHost(void*); aclError aclrtMemcpy(void*, size_t, const void*, size_t, int);
aclError aclrtCreateEvent(aclrtEvent*); aclError aclrtDestroyEvent(aclrtEvent); aclError aclrtRecordEvent(aclrtEvent, aclrtStream);
aclError aclrtSynchronizeEvent(aclrtEvent); aclError aclrtEventElapsedTime(float*, aclrtEvent, aclrtEvent);
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_host_code_compiles_against_acl_declarations(package, tmp_path):
    _model, out = package
    (blk_dir,) = [p for p in out.iterdir() if (p / "host").is_dir()]
    sym = next((blk_dir / "kernel").glob("*_tiling.h")).name[:-len("_tiling.h")]
    (tmp_path / "acl").mkdir()
    (tmp_path / "acl" / "acl.h").write_text(STUB_ACL)
    params = ", ".join(["void*"] * 9)
    (tmp_path / f"aclrtlaunch_{sym}.h").write_text(
        f"#pragma once\n#include \"acl/acl.h\"\nextern \"C\" uint32_t aclrtlaunch_{sym}(uint32_t, aclrtStream, {params});\n"
        f"#define ACLRT_LAUNCH_KERNEL(k) aclrtlaunch_##k\n")
    for src in ("main.cpp", f"{sym}_host.cpp"):
        proc = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", f"-I{tmp_path}",
                               f"-I{blk_dir / 'kernel'}", f"-I{blk_dir / 'host'}", str(blk_dir / "host" / src)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_package_test_script_verifies_the_kernel_run(package, tmp_path):
    """The op package's tests/*_test.py: gen writes inputs + a NumPy golden; the kernel (here on the
    emulator, on a device through host/main.cpp) writes y.bin; verify passes."""
    _model, out = package
    script = next(out.glob("op_pkg/*/*/tests/*_test.py"))
    spec = importlib.util.spec_from_file_location("pkg_test", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    data = tmp_path / "data"
    mod.gen(str(data), 0)
    m = models.dwsep_block(cin=40, cout=40, h=13, residual=True, act1="relu6", act2="none")
    cm = compile_model(m, target="ascend:910b2", dtype="float16")
    ek = emit_kernel(cm.fused_blocks[0].plan, cm.fused_blocks[0].name)
    arrays = {a.name: np.fromfile(data / f"{a.name}.bin", dtype=a.dtype).reshape(a.shape)
              for a in ek.args if a.role in ("input", "weight")}
    y, _, _ = run_emitted(ek, build_emitted(ek), arrays)
    y.tofile(data / "y.bin")
    assert mod.verify(str(data)) == 0


def test_structural_check_finds_problems(package, tmp_path):
    _model, out = package
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    (contract,) = bad.glob("op_pkg/*/*/op_contract.yaml")
    contract.write_text(contract.read_text().replace("name: w_pw", "name: w_pointwise"))
    next(bad.glob("*/host/main.cpp")).unlink()
    problems = verify_package(bad)
    assert any("main.cpp missing" in p for p in problems)
    shutil.copy(next(out.glob("*/host/main.cpp")), next(bad.glob("*/host")) / "main.cpp")
    assert any("do not match the kernel signature" in p for p in verify_package(bad))


def test_yaml_writer_round_trips():
    doc = {"a": 1, "b": "x y", "c": [1, 2.5, "z"], "d": {"e": None, "f": True, "g": "1.0"},
           "h": [{"name": "x", "shape": [1, 2]}, {"name": "y: odd", "q": "\"quoted\""}], "i": {}}
    assert yaml_lite.load(yaml_lite.dump(doc)) == doc


# ---- the CLI ------------------------------------------------------------------------------------

def test_cli_check_ascend_exits_zero(tmp_path, capsys):
    import onnx
    path = tmp_path / "odd.onnx"
    onnx.save(models.build("odd_h19_s2_24_40"), path)
    assert cli_main(["check", str(path), "-t", "ascend:910b2", "--dtype", "float16"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("PASS") or "PASS" in text
    assert "GM r/w" in text and "equal" in text


def test_cli_compile_ascend_writes_tree(tmp_path):
    import onnx
    path = tmp_path / "odd.onnx"
    onnx.save(models.build("odd_k5_32_48_h28"), path)
    out = tmp_path / "out"
    assert cli_main(["compile", str(path), "-t", "ascend", "--dtype", "float16", "-o", str(out)]) == 0
    assert (out / "ascend.json").is_file() and (out / "compile.json").is_file()
    assert list(out.glob("*/kernel/*.cpp")) and list(out.glob("*/host/CMakeLists.txt"))
    assert list(out.glob("op_pkg/*/*/op_contract.yaml")) and list(out.glob("op_pkg/*/*/benchmark.json"))
