"""Kernels written the way the current Ascend C devkit samples are written compile unchanged
on the host emulator and match NumPy: static tensors (LocalMemAllocator), single-source
`.asc` programs with a host main and a <<<>>> launch, arch-conditional cube code, DataCopyPad
with pad values, TBuf offsets, Sigmoid, EVENT_ID synchronisation, GET_TILING_DATA tiling.
Also: the uninitialized-read check, and `megafuse emu run`."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel
from fusion.emu.launch_rewrite import kernel_types, preprocess
from fusion.emu.single_source import build_program, run_program
from fusion.cli.main import main as cli_main

DEVKIT = Path(__file__).parents[1] / "ascendc_kernels" / "devkit_style"
SOCS = ("ascend910b2", "ascend310p3")


def _workdir(tmp_path: Path, **inputs: np.ndarray) -> Path:
    (tmp_path / "input").mkdir()
    (tmp_path / "output").mkdir()
    for name, arr in inputs.items():
        arr.tofile(tmp_path / "input" / f"{name}.bin")
    return tmp_path


def _out(wd: Path, name: str, dtype, shape) -> np.ndarray:
    return np.fromfile(wd / "output" / f"{name}.bin", dtype=dtype).reshape(shape)


def _line_of(path: Path, marker: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if marker in ln)


# ---- single-source programs ------------------------------------------------------------------

def test_static_tensor_add_program_matches_numpy(tmp_path):
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(4 * 3072).astype(np.float32) for _ in range(2))
    wd = _workdir(tmp_path, x=x, y=y)
    res = run_program(build_program(DEVKIT / "add_static_alloc.asc", "ascend910b2"), cwd=wd)
    assert res.returncode == 0 and res.fault is None, res.stderr
    assert "4 blocks x 3072" in res.stdout
    np.testing.assert_array_equal(_out(wd, "z", np.float32, x.shape), x + y)


def test_data_copy_pad_fills_with_pad_values(tmp_path):
    x = np.random.default_rng(1).standard_normal((5, 20)).astype(np.float16)
    wd = _workdir(tmp_path, x=x)
    exe = build_program(DEVKIT / "pad_values.asc", "ascend910b2")
    res = run_program(exe, cwd=wd)
    assert res.returncode == 0, res.stderr
    two = np.float16(2)
    expect_set = np.concatenate([x * two, np.full((5, 12), 1 * two, np.float16)], axis=1)  # SetPadValue(1)
    expect_pad = np.concatenate([np.full((5, 4), -2 * two, np.float16), x * two,
                                 np.full((5, 8), -2 * two, np.float16)], axis=1)      # paddingValue -2
    np.testing.assert_array_equal(_out(wd, "out_set", np.float16, (5, 32)), expect_set)
    np.testing.assert_array_equal(_out(wd, "out_pad", np.float16, (5, 32)), expect_pad)


def test_pad_without_a_pad_value_is_an_uninitialized_read(tmp_path):
    # isPad = false and no SetPadValue: the padding is never written; doubling it and copying it
    # out is caught at the copy out, naming the buffer and where the garbage entered.
    wd = _workdir(tmp_path, x=np.zeros((5, 20), np.float16))
    src = DEVKIT / "pad_values.asc"
    res = run_program(build_program(src, "ascend910b2"), ["no-pad-value"], cwd=wd)
    assert res.returncode == 86 and res.fault is not None
    copy_line = _line_of(src, "AscendC::DataCopyPad(setGm, a, out);")
    muls_line = _line_of(src, "AscendC::Muls(a, a,")
    alloc_line = _line_of(src, "AscendC::LocalTensor<half> a = ub.Alloc")
    assert f"kernel 'pad_values' line {copy_line}: uninitialized read" in res.fault
    assert f"Muls at line {muls_line}" in res.fault
    assert f"LocalMemAllocator::Alloc at line {alloc_line}" in res.fault
    assert "UB bytes [40, 64)" in res.fault  # the 12 pad halves after the 20 data halves of row 0


@pytest.mark.parametrize("soc, branch, arch", [("ascend910b2", "fixpipe", 2201), ("ascend310p3", "l0c-ub", 2002)])
def test_arch_conditional_cube_code_follows_the_soc(tmp_path, soc, branch, arch):
    # One source, two chips: __NPU_ARCH__ comes from the SoC and picks the epilogue.
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 48, 64)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    wd = _workdir(tmp_path, a=a, b=b)
    res = run_program(build_program(DEVKIT / "matmul_arch.asc", soc), cwd=wd)
    assert res.returncode == 0, res.stderr
    assert f"branch: {branch} (kernel __NPU_ARCH__ {arch})" in res.stdout
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(_out(wd, "c", np.float32, (2, 48, 32)), ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("soc", SOCS)
def test_axpy_program_with_host_buffers_and_argv(tmp_path, soc):
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal(2 * 2560).astype(np.float32) for _ in range(2))
    wd = _workdir(tmp_path, x=x, y=y)
    res = run_program(build_program(DEVKIT / "axpy_host.asc", soc), ["-1.5"], cwd=wd)
    assert res.returncode == 0 and "alpha -1.5" in res.stdout, res.stderr
    np.testing.assert_allclose(_out(wd, "z", np.float32, x.shape), np.float32(-1.5) * x + y, rtol=1e-6, atol=1e-6)


def test_launch_rewrite_keeps_lines_and_reads_kernel_types():
    text = ("__global__ __vector__ void va(GM_ADDR x) {}\n"
            "template <int N> __cube__ __global__ void cb(GM_ADDR x) {}\n"
            "__global__ __aicore__ void mx(GM_ADDR x) { KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2); }\n"
            "int main() {\n  va<<<4, nullptr,\n     s>>>(p);\n  cb<16><<<1, nullptr, s>>>(p);\n  mx<<<2, nullptr, s>>>(p);\n}\n")
    assert kernel_types(text) == {"va": "AIV_ONLY", "cb": "AIC_ONLY", "mx": "MIX_AIC_1_2"}
    out = preprocess(text)
    assert out.count("\n") == text.count("\n")
    assert '::megafuse_emu::MakeLaunch(&va, "va", MEGAFUSE_EMU_KERNEL_AIV_ONLY, 4, nullptr, s)(' in out
    assert '::megafuse_emu::MakeLaunch(&cb<16>, "cb", MEGAFUSE_EMU_KERNEL_AIC_ONLY, 1, nullptr, s)(p);' in out
    assert "<<<" not in out


# ---- kernel-only files through the harness ---------------------------------------------------

@pytest.mark.parametrize("block_length, tile", [(1000, 256), (77, 64)])
def test_swish_with_tbuf_offsets_and_sigmoid(block_length, tile):
    k = build_kernel(DEVKIT / "swish_tbuf.cpp", "swish_tbuf")
    x = np.random.default_rng(4).standard_normal(3 * block_length).astype(np.float32) * 4
    y = np.zeros_like(x)
    res = k.run([x, y, np.array([block_length, tile], np.uint32)], block_dim=3, soc="ascend910b2")
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y, x64 / (1 + np.exp(-x64)), rtol=2e-6, atol=1e-6)
    assert res.counters["gm_read_bytes"] == x.nbytes  # DataCopyPad moves the tail bytes only


@pytest.mark.parametrize("soc", SOCS)
def test_leaky_relu_with_tiling_and_assert(soc):
    k = build_kernel(DEVKIT / "leaky_assert.cpp", "leaky_assert")
    tiling_t = np.dtype([("block", "<u4"), ("tile", "<u4"), ("alpha", "<f4")])
    x = np.random.default_rng(5).standard_normal(2 * 1024).astype(np.float16)
    y = np.zeros_like(x)
    k.run([x, y, None, np.array([(1024, 256, 0.1)], tiling_t)], block_dim=2, soc=soc)
    np.testing.assert_array_equal(y, np.maximum(x, x * np.float16(0.1)))
    with pytest.raises(EmulationError, match=r"ascendc_assert\(.*\) failed: tileLength 100 must be a multiple of "
                                             r"128 halves and divide blockLength 1024") as e:
        k.run([x, y, None, np.array([(1024, 100, 0.1)], tiling_t)], block_dim=2, soc=soc)
    assert e.value.kernel == "leaky_assert" and e.value.line == _line_of(DEVKIT / "leaky_assert.cpp", "ascendc_assert(")


def test_arch_conditional_tail_follows_the_soc():
    x = np.random.default_rng(6).standard_normal(601).astype(np.float32)  # 601 = 2 x 256 + 89
    counters = {}
    for soc in SOCS:
        k = build_kernel(DEVKIT / "softsign_arch.cpp", "softsign_arch", soc=soc)
        y = np.zeros_like(x)
        counters[soc] = k.run([x, y, np.array([601], np.uint32)], block_dim=1, soc=soc).counters
        np.testing.assert_allclose(y, x / (1 + np.abs(x)), rtol=1e-6)
    assert counters["ascend910b2"]["gm_scalar_writes"] == 0 and counters["ascend910b2"]["dma_ub_to_gm"] == 3
    assert counters["ascend310p3"]["gm_scalar_writes"] == 89 and counters["ascend310p3"]["dma_ub_to_gm"] == 2
    with pytest.raises(EmulationError, match=r"built for ascend310p3 \(__NPU_ARCH__ 2002\) and cannot run on ascend910b2"):
        k.run([x, np.zeros_like(x), np.array([601], np.uint32)], block_dim=1, soc="ascend910b2")
    with pytest.raises(EmulationError, match="tests __NPU_ARCH__: build it for a SoC"):
        build_kernel(DEVKIT / "softsign_arch.cpp", "softsign_arch")


def test_mmad_reading_l0a_before_writing_it_is_caught():
    src = DEVKIT / "l0a_uninit.cpp"
    k = build_kernel(src, "mmad_uninit_l0a")
    with pytest.raises(EmulationError) as e:
        k.run([np.ones(512, np.float16), np.ones(512, np.float16), np.zeros(256, np.float32)], block_dim=1,
              soc="ascend910b2")
    # The garbage is stopped where it would leave the core (the Fixpipe to GM); the message names
    # the Mmad that read L0A and the L0A tensor nothing wrote.
    assert e.value.kernel == "mmad_uninit_l0a" and e.value.line == _line_of(src, "FIXPIPE_LINE")
    msg = e.value.message
    assert "uninitialized read: Fixpipe uses src (CO1 / L0C) L0C bytes [0, " in msg
    assert f"first: Mmad at line {_line_of(src, 'MMAD_LINE')} read fm (A2 / L0A) L0A bytes [0, 2) that were never written" in msg
    assert f"the A2 tensor from LocalMemAllocator::Alloc at line {_line_of(src, 'the bug')}" in msg


_STATIC_RULES = r"""
#include "kernel_operator.h"
extern "C" __global__ __vector__ void two_allocators(GM_ADDR x)
{
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> a;
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> b;
}
extern "C" __global__ __vector__ void mixed_with_tpipe(GM_ADDR x)
{
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> a;
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
}
extern "C" __global__ __vector__ void misaligned_offset(GM_ADDR x)
{
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    AscendC::LocalTensor<float> t = buf.GetWithOffset<float>(8, 16);
}
extern "C" __global__ __vector__ void no_pipe(GM_ADDR x)
{
    AscendC::GetTPipePtr();
}
extern "C" __global__ __vector__ void too_big(GM_ADDR x)
{
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> a;
    AscendC::LocalTensor<float> t = a.Alloc<float>(1u << 20);
}
"""


@pytest.mark.parametrize("kernel, message", [
    ("two_allocators", "a second LocalMemAllocator of UB"),
    ("mixed_with_tpipe", "cannot be mixed with TPipe buffers"),
    ("misaligned_offset", r"GetWithOffset: bufOffset 16 B is not 32-byte aligned"),
    ("no_pipe", "GetTPipePtr: no TPipe exists"),
    ("too_big", r"Alloc<float>\(1048576\) needs 4194304 B of UB"),
])
def test_static_tensor_and_tbuf_rules(kernel, message):
    k = build_kernel(_STATIC_RULES, kernel)
    with pytest.raises(EmulationError, match=message):
        k.run([np.zeros(8, np.float32)], block_dim=1, soc="ascend910b2")


# ---- megafuse emu run --------------------------------------------------------------------------

def test_cli_runs_a_program_and_prints_its_output(tmp_path, capsys):
    rng = np.random.default_rng(7)
    wd = _workdir(tmp_path, a=rng.standard_normal((2, 48, 64)).astype(np.float16),
                  b=rng.standard_normal((64, 32)).astype(np.float16))
    rc = cli_main(["emu", "run", str(DEVKIT / "matmul_arch.asc"), "--soc", "ascend310p3", "--workdir", str(wd)])
    assert rc == 0
    assert "branch: l0c-ub (kernel __NPU_ARCH__ 2002)" in capsys.readouterr().out


def test_cli_kernel_fault_is_one_line_and_exit_1(tmp_path, capsys):
    wd = _workdir(tmp_path, x=np.zeros((5, 20), np.float16))
    rc = cli_main(["emu", "run", str(DEVKIT / "pad_values.asc"), "--workdir", str(wd), "--program-arg", "no-pad-value"])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.startswith("megafuse: error: kernel 'pad_values' line ") and err.count("\n") == 1
    assert "uninitialized read" in err


def test_cli_kernel_only_file_with_arg_specs(capsys):
    rc = cli_main(["emu", "run", str(DEVKIT / "swish_tbuf.cpp"), "--block-dim", "2", "--arg", "f32:200",
                   "--arg", "f32:200=0", "--arg", "u32[100,64]", "--json"])
    assert rc == 0
    import json

    report = json.loads(capsys.readouterr().out)
    assert report["kernel"] == "swish_tbuf" and report["counters"]["gm_write_bytes"] == 800
    assert report["buffers"]["arg1"]["elements"] == 200


@pytest.mark.parametrize("argv, message", [
    (["emu", "run", "kernel.txt"], r"expected an Ascend C source \(\.asc or \.cpp\)"),
    (["emu", "run", str(DEVKIT / "swish_tbuf.cpp"), "--arg", "f33:8"], r"--arg 0: 'f33:8' is not DTYPE:N"),
    (["emu", "run", str(DEVKIT / "swish_tbuf.cpp"), "--soc", "ascend999"], r"unknown SoC 'ascend999'"),
    (["emu", "run", "missing.asc"], r"cannot read missing\.asc"),
])
def test_cli_usage_errors_exit_2(argv, message, capsys):
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and err.count("\n") == 1


def test_cli_build_error_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.asc"
    bad.write_text('#include "kernel_operator.h"\n__global__ __vector__ void k(GM_ADDR x) { undeclared(); }\n'
                   "int main() { return 0; }\n")
    assert cli_main(["emu", "run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("megafuse: error: g++ failed to compile program bad.asc") and err.count("\n") == 1
    assert "undeclared" in err


def test_program_copy_past_an_aclrt_block_is_a_fault(tmp_path):
    prog = tmp_path / "overrun.asc"
    prog.write_text('#include "acl/acl.h"\n#include <vector>\nint main() {\n    std::vector<char> host(64);\n'
                    "    void* dev = nullptr;\n    aclrtMalloc(&dev, 32, ACL_MEM_MALLOC_HUGE_FIRST);\n"
                    "    aclrtMemcpy(dev, 64, host.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE);\n    return 0;\n}\n")
    res = run_program(build_program(prog, "ascend910b2"), cwd=tmp_path)
    assert res.returncode == 86
    assert res.fault == "aclrtMemcpy: 64 bytes from the destination run past the end of its 32-byte aclrtMalloc block (32 bytes left)"


def test_program_launch_with_host_memory_is_a_fault(tmp_path):
    prog = tmp_path / "hostptr.asc"
    prog.write_text('#include "acl/acl.h"\n__global__ __vector__ void k(GM_ADDR x) {}\n'
                    "int main() {\n    static uint8_t host[64];\n    k<<<1, nullptr, nullptr>>>(host);\n    return 0;\n}\n")
    res = run_program(build_program(prog, "ascend910b2"), cwd=tmp_path)
    assert res.returncode == 86 and "kernel 'k' argument 0 is not device memory" in res.fault


_KEYWORD_TYPED = r"""
#include "kernel_operator.h"
extern "C" __global__ __cube__ void cube_flag(GM_ADDR out)
{
    AscendC::GlobalTensor<int32_t> o;
    o.SetGlobalBuffer((__gm__ int32_t*)out, 2);
    o.SetValue(0, ASCEND_IS_AIC ? 1 : 0);
    o.SetValue(1, g_coreType);
}
"""


@pytest.mark.parametrize("soc, expect", [("ascend910b2", [1, 1]), ("ascend310p3", [0, 0])])
def test_cube_keyword_launches_on_aic_cores(soc, expect):
    # __cube__: an AIC_ONLY launch on 910B (ASCEND_IS_AIC true, g_coreType AIC) without a
    # KERNEL_TASK_TYPE_DEFAULT; coupled 310P cores are MIX.
    out = np.zeros(2, np.int32)
    res = build_kernel(_KEYWORD_TYPED, "cube_flag").run([out], block_dim=2, soc=soc)
    assert out.tolist() == expect
    assert res.kernel_type == ("aic_only" if soc == "ascend910b2" else None)


_LEGACY_PAD = r"""
#include "kernel_operator.h"
extern "C" __global__ __vector__ void legacy_pad(GM_ADDR x, GM_ADDR y)
{
    AscendC::GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 3 * 5);
    yGm.SetGlobalBuffer((__gm__ float*)y, 3 * 8);
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> ub;
    AscendC::LocalTensor<float> t = ub.Alloc<float, 3 * 8>();
    AscendC::DataCopyParams in{3, 5 * sizeof(float), 0, 0};
    uint64_t bits = 0;
    const float pad = -7.5f;
    std::memcpy(&bits, &pad, sizeof(pad));
    AscendC::DataCopyPad(t, xGm, in, AscendC::DataCopyPadParams{true, 0, 3, bits});
    AscendC::DataCopyParams out{1, 3 * 8 * sizeof(float), 0, 0};
    AscendC::DataCopyPad(yGm, t, out);
}
"""


def test_legacy_data_copy_pad_prototypes():
    # DataCopyParams (blockLen in bytes) + DataCopyPadParams (paddingValue as uint64 bits):
    # rows of 5 floats land as 8-float UB rows, right-padded with -7.5.
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    y = np.zeros((3, 8), np.float32)
    build_kernel(_LEGACY_PAD, "legacy_pad").run([x, y], block_dim=1, soc="ascend910b2")
    np.testing.assert_array_equal(y, np.concatenate([x, np.full((3, 3), -7.5, np.float32)], axis=1))


_STATIC_AT = r"""
#include "kernel_operator.h"
extern "C" __global__ __vector__ void static_at(GM_ADDR x, GM_ADDR y)
{
    AscendC::GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + block_idx * 64, 64);
    yGm.SetGlobalBuffer((__gm__ float*)y + block_idx * 64, 64);
    AscendC::LocalTensor<float> a(AscendC::TPosition::VECCALC, 0, 64);
    AscendC::LocalTensor<float> b(AscendC::TPosition::VECCALC, 256, 64);
    AscendC::DataCopy(a, xGm, 64);
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::Adds(b, a, static_cast<float>(block_num), 64);
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::DataCopy(yGm, b, 64);
}
"""


def test_static_tensor_constructor_and_block_idx_globals():
    # LocalTensor(TPosition, addr, tileSize) and the kernel-side globals block_idx / block_num.
    x = np.arange(3 * 64, dtype=np.float32)
    y = np.zeros_like(x)
    build_kernel(_STATIC_AT, "static_at").run([x, y], block_dim=3, soc="ascend910b2")
    np.testing.assert_array_equal(y, x + 3)


def test_cli_program_that_hangs_is_stopped(tmp_path, capsys):
    prog = tmp_path / "spin.asc"
    prog.write_text('#include "acl/acl.h"\nint main() {\n    volatile int x = 1;\n    while (x) {}\n    return 0;\n}\n')
    assert cli_main(["emu", "run", str(prog), "--workdir", str(tmp_path), "--timeout", "2"]) == 1
    err = capsys.readouterr().err
    assert "did not finish within 2 s" in err and err.count("\n") == 1
