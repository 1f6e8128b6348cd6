"""Devkit APIs the samples use, on small devkit-style kernels of our own: GM atomics, GEMV Mmad
(m = 1), LeakyRelu, IsSameType / DivCeil, GetTPipePtr at global scope, `emu run -D` and
two-file programs."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from fusion.emu import EmulationError, build_kernel
from fusion.cli.main import main as cli_main

_ATOMIC = r"""
#include "kernel_operator.h"
using namespace AscendC;
// every block adds its 64 floats into the same output; mode 1 sets Max instead, mode 2 a bad type
extern "C" __global__ __aicore__ void atomic_acc(GM_ADDR x, GM_ADDR y, uint32_t mode)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 64 * sizeof(float));
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * 64, 64);
    yGm.SetGlobalBuffer((__gm__ float*)y, 64);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, xGm, 64);
    q.EnQue(t);
    LocalTensor<float> u = q.DeQue<float>();
    if (mode == 0) SetAtomicAdd<float>();
    if (mode == 1) SetAtomicMax<float>();
    if (mode == 2) SetAtomicMax<int8_t>();
    DataCopy(yGm, u, 64);
    SetAtomicNone();
    q.FreeTensor(u);
}
"""


@pytest.mark.parametrize("mode", [0, 1])
def test_atomic_add_and_max_combine_blocks_into_gm(mode):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    y = np.full(64, 0.5, np.float32)
    build_kernel(_ATOMIC, "atomic_acc").run([x, y, mode], block_dim=4, soc="ascend910b2")
    expect = 0.5 + x.sum(0) if mode == 0 else np.maximum(0.5, x.max(0))
    np.testing.assert_allclose(y, expect, rtol=1e-6)


def test_atomic_type_outside_the_documented_list_is_refused():
    x = np.zeros((1, 64), np.float32)
    with pytest.raises(EmulationError, match=r"SetAtomicMax<int8_t>: type not supported"):
        build_kernel(_ATOMIC, "atomic_acc").run([x, np.zeros(64, np.float32), 2], block_dim=1, soc="ascend910b2")


_GEMV = r"""
#include "kernel_operator.h"
using namespace AscendC;
// y(1 x 32) = x(1 x 64) . W(64 x 32): A as 64 contiguous halves in L0A (GEMV), B as in the
// basic matmul (already NZ-fractal in GM: 4 K-fractals x 2 N-fractals, each 16 x 16 ZN)
extern "C" __global__ __aicore__ void gemv(GM_ADDR x, GM_ADDR w, GM_ADDR y)
{
    TPipe pipe;
    TQue<TPosition::A1, 1> a1; TQue<TPosition::B1, 1> b1;
    TQue<TPosition::A2, 1> a2; TQue<TPosition::B2, 1> b2; TQue<TPosition::CO1, 1> c1;
    pipe.InitBuffer(a1, 1, 512); pipe.InitBuffer(b1, 1, 64 * 32 * 2);
    pipe.InitBuffer(a2, 1, 512); pipe.InitBuffer(b2, 1, 64 * 32 * 2); pipe.InitBuffer(c1, 1, 2 * 1024);
    GlobalTensor<half> xg, wg; GlobalTensor<float> yg;
    xg.SetGlobalBuffer((__gm__ half*)x, 256); wg.SetGlobalBuffer((__gm__ half*)w, 64 * 32);
    yg.SetGlobalBuffer((__gm__ float*)y, 32);
    LocalTensor<half> al1 = a1.AllocTensor<half>(), bl1 = b1.AllocTensor<half>();
    DataCopy(al1, xg, 256);
    DataCopy(bl1, wg, 64 * 32);
    LocalTensor<half> al0 = a2.AllocTensor<half>(), bl0 = b2.AllocTensor<half>();
    LoadData2DParams pa; pa.repeatTimes = 1; pa.srcStride = 1;
    LoadData(al0, al1, pa);
    LoadData2DParams pb; pb.repeatTimes = 8; pb.srcStride = 1;
    LoadData(bl0, bl1, pb);
    LocalTensor<float> c = c1.AllocTensor<float>();
    MmadParams mp; mp.m = 1; mp.n = 32; mp.k = 64;
    Mmad(c, al0, bl0, mp);
    FixpipeParamsV220 fp; fp.nSize = 32; fp.mSize = 1; fp.srcStride = 16; fp.dstStride = 32;
    Fixpipe<float, float, CFG_ROW_MAJOR>(yg, c, fp);
}
"""


def _nz(w: np.ndarray) -> np.ndarray:
    """K x N -> the L0B layout Mmad reads: fractal (kb, nb) in kb-major order holds W[kb*16 + k,
    nb*16 + n] at row n, column k."""
    k, n = w.shape
    return w.reshape(k // 16, 16, n // 16, 16).transpose(0, 2, 3, 1).copy()


def test_gemv_mmad_m1():
    rng = np.random.default_rng(3)
    x = np.zeros(256, np.float16)
    x[:64] = rng.standard_normal(64).astype(np.float16)
    w = rng.standard_normal((64, 32)).astype(np.float16)
    y = np.zeros(32, np.float32)
    build_kernel(_GEMV, "gemv").run([x, _nz(w), y], block_dim=1, soc="ascend910b2")
    np.testing.assert_allclose(y, x[:64].astype(np.float32) @ w.astype(np.float32), rtol=1e-3, atol=1e-3)


_MISC = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void misc(GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    GetTPipePtr()->InitBuffer(buf, 2 * 64 * sizeof(float));   // unqualified, as the samples call it
    static_assert(IsSameType<float, float>::value && !IsSameType<float, half>::value);
    static_assert(DivCeil(65, 32) == 3);
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, 64); yg.SetGlobalBuffer((__gm__ float*)y, 64);
    LocalTensor<float> a = buf.Get<float>(), b = a[64];
    DataCopy(a, xg, 64);
    PipeBarrier<PIPE_ALL>();
    LeakyRelu(b, a, 0.25f, 64);
    PipeBarrier<PIPE_ALL>();
    DataCopy(yg, b, 64);
}
"""


def test_leaky_relu_is_same_type_div_ceil_and_global_get_tpipe_ptr():
    x = np.linspace(-4, 4, 64, dtype=np.float32)
    y = np.zeros_like(x)
    build_kernel(_MISC, "misc").run([x, y], block_dim=1, soc="ascend910b2")
    np.testing.assert_array_equal(y, np.where(x >= 0, x, x * np.float32(0.25)))


_DEFINED = r"""
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void scenario(GM_ADDR y)
{
    ((__gm__ int32_t*)y)[0] = SCENARIO_NUM;
}
"""


def test_define_reaches_the_build_and_the_cache_key(tmp_path, capsys):
    src = tmp_path / "scenario.cpp"
    src.write_text(_DEFINED)
    for n in (1, 2):
        assert cli_main(["emu", "run", str(src), "-D", f"SCENARIO_NUM={n}", "--arg", "i32:8=0", "--json"]) == 0
        assert f'"first": [\n        {n}.0' in capsys.readouterr().out
    assert cli_main(["emu", "run", str(src), "-D", "1BAD", "--arg", "i32:8=0"]) == 2
    assert "-D '1BAD' is not NAME or NAME=VALUE" in capsys.readouterr().err


_TWO_KERNEL = r"""
#include "kernel_operator.h"
__global__ __vector__ void add_one(GM_ADDR x, uint32_t n)
{
    for (uint32_t i = 0; i < n; ++i) ((__gm__ float*)x)[i] += 1.0f;
}
void run_add_one(float* x, uint32_t n, aclrtStream stream) { add_one<<<1, nullptr, stream>>>((GM_ADDR)x, n); }
"""

_TWO_MAIN = r"""
#include <cstdio>
#include "acl/acl.h"
extern void run_add_one(float* x, uint32_t n, aclrtStream stream);
int main()
{
    float host[16] = {0};
    float* dev = nullptr;
    aclrtMalloc((void**)&dev, sizeof(host), ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(dev, sizeof(host), host, sizeof(host), ACL_MEMCPY_HOST_TO_DEVICE);
    run_add_one(dev, 16, nullptr);
    aclrtMemcpy(host, sizeof(host), dev, sizeof(host), ACL_MEMCPY_DEVICE_TO_HOST);
    std::printf("sum %g\n", host[0] * 16);
    return 0;
}
"""


def test_two_file_program(tmp_path, capsys):
    (tmp_path / "kernel.asc").write_text('#include "acl/acl.h"\n' + _TWO_KERNEL)
    (tmp_path / "main.cpp").write_text(_TWO_MAIN)
    assert cli_main(["emu", "run", str(tmp_path / "main.cpp"), str(tmp_path / "kernel.asc"),
                     "--workdir", str(tmp_path)]) == 0
    assert "sum 16" in capsys.readouterr().out


_OP_TILING = r"""
#include "register/tilingdata_base.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(ScaleTilingData)
TILING_DATA_FIELD_DEF(uint32_t, totalLength);
TILING_DATA_FIELD_DEF(float, scale);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(ScaleCustom, ScaleTilingData)
}
"""

_OP_KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void scale_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    GlobalTensor<DTYPE_X> xg, yg;
    xg.SetGlobalBuffer((__gm__ DTYPE_X*)x, t.totalLength);
    yg.SetGlobalBuffer((__gm__ DTYPE_X*)y, t.totalLength);
    for (uint32_t i = 0; i < t.totalLength; ++i) {
        if (TILING_KEY_IS(1)) yg.SetValue(i, xg.GetValue(i) * t.scale);
        if (TILING_KEY_IS(2)) yg.SetValue(i, xg.GetValue(i) + t.scale);
    }
}
"""


def test_op_tiling_header_key_and_dtype_macros(tmp_path, capsys):
    (tmp_path / "op_host").mkdir()
    (tmp_path / "op_host" / "scale_tiling.h").write_text(_OP_TILING)
    (tmp_path / "scale_custom.cpp").write_text(_OP_KERNEL)
    tiling = struct.unpack("<2I", struct.pack("<If", 8, 2.5))
    base = ["emu", "run", str(tmp_path / "scale_custom.cpp"), "--tiling-header", str(tmp_path / "op_host" / "scale_tiling.h"),
            "-D", "DTYPE_X=float", "--arg", "f32[1,2,3,4,5,6,7,8]", "--arg", "f32:8=0", "--arg", "null",
            "--arg", f"u32[{tiling[0]},{tiling[1]}]", "--out", str(tmp_path / "out")]
    assert cli_main(base + ["--tiling-key", "1"]) == 0
    np.testing.assert_array_equal(np.fromfile(tmp_path / "out" / "arg1.bin", np.float32), np.arange(1, 9) * 2.5)
    assert cli_main(base + ["--tiling-key", "2"]) == 0
    np.testing.assert_array_equal(np.fromfile(tmp_path / "out" / "arg1.bin", np.float32), np.arange(1, 9) + 2.5)
    capsys.readouterr()
    assert cli_main(base) == 1
    assert "TILING_KEY_IS(1): the kernel branches on the tiling key, which was not given" in capsys.readouterr().err


_MIX_KEYWORD = r"""
#include "acl/acl.h"
// __mix__(1, 2): a MIX kernel by keyword; the AIVs flag the AIC, which then writes GM
__global__ __mix__(1, 2) __aicore__ void mix_kw(GM_ADDR y)
{
    if ASCEND_IS_AIV {
        AscendC::CrossCoreSetFlag<0x2, PIPE_MTE3>(3);
    }
    if ASCEND_IS_AIC {
        AscendC::CrossCoreWaitFlag(3);
        AscendC::WriteGmByPassDCache<int32_t>((__gm__ int32_t*)y + AscendC::GetBlockIdx(), 7);
        AscendC::DataSyncBarrier<AscendC::MemDsbT::DDR>();
    }
}
int main()
{
    int32_t host[2] = {0, 0};
    uint8_t* dev = nullptr;
    aclrtMalloc((void**)&dev, sizeof(host), ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(dev, sizeof(host), host, sizeof(host), ACL_MEMCPY_HOST_TO_DEVICE);
    mix_kw<<<2, nullptr, nullptr>>>(dev);
    aclrtMemcpy(host, sizeof(host), dev, sizeof(host), ACL_MEMCPY_DEVICE_TO_HOST);
    std::printf("%d %d\n", host[0], host[1]);
    return 0;
}
"""


def test_mix_keyword_kernel_runs_as_a_mix_launch(tmp_path, capsys):
    (tmp_path / "mix_kw.asc").write_text(_MIX_KEYWORD)
    assert cli_main(["emu", "run", str(tmp_path / "mix_kw.asc"), "--workdir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == ["7", "7"]


_MATMUL = r"""
#include "kernel_tiling/kernel_tiling.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"
#include "acl/acl.h"
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include <cstdio>
#include <vector>
constexpr int M = 40, N = 72, K = 48;
__global__ __cube__ void mm(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR tilingGm)
{
    TCubeTiling t;
    for (uint32_t i = 0; i < sizeof(TCubeTiling) / 4; ++i) ((uint32_t*)&t)[i] = ((__gm__ uint32_t*)tilingGm)[i];
    AscendC::TPipe pipe;
    AscendC::Matmul<AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
                    AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half, true>,
                    AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>,
                    AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>, CFG_NORM> mmObj;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mmObj, &t);
    const int mBlocks = (t.M + t.singleCoreM - 1) / t.singleCoreM;
    const int mi = AscendC::GetBlockIdx() % mBlocks, ni = AscendC::GetBlockIdx() / mBlocks;
    AscendC::GlobalTensor<half> ag, bg; AscendC::GlobalTensor<float> cg, biasg;
    ag.SetGlobalBuffer((__gm__ half*)a + mi * t.singleCoreM * t.Ka, t.M * t.Ka - mi * t.singleCoreM * t.Ka);
    bg.SetGlobalBuffer((__gm__ half*)b + ni * t.singleCoreN * t.Kb, t.N * t.Kb - ni * t.singleCoreN * t.Kb);
    cg.SetGlobalBuffer((__gm__ float*)c + mi * t.singleCoreM * t.N + ni * t.singleCoreN);
    biasg.SetGlobalBuffer((__gm__ float*)bias + ni * t.singleCoreN);
    mmObj.SetTensorA(ag);
    mmObj.SetTensorB(bg, true);
    mmObj.SetBias(biasg);
    const int tm = t.M - mi * t.singleCoreM, tn = t.N - ni * t.singleCoreN;
    mmObj.SetTail(tm < t.singleCoreM ? tm : t.singleCoreM, tn < t.singleCoreN ? tn : t.singleCoreN);
    mmObj.IterateAll(cg);
    mmObj.End();
}
int main()
{
    auto* platform = platform_ascendc::PlatformAscendCManager::GetInstance();
    matmul_tiling::MultiCoreMatmulTiling api(*platform);
    api.SetDim(4);
    api.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    api.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16, true);
    api.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    api.SetBiasType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    api.SetOrgShape(M, N, K); api.SetShape(M, N, K); api.EnableBias(true);
    optiling::TCubeTiling tiling;
    if (api.GetTiling(tiling) == -1) return 3;
    std::vector<aclFloat16> a(M * K), b(N * K);
    std::vector<float> bias(N), c(M * N);
    for (int i = 0; i < M * K; ++i) a[i] = aclFloatToFloat16(float((i * 7) % 13 - 6) / 8);
    for (int i = 0; i < N * K; ++i) b[i] = aclFloatToFloat16(float((i * 5) % 11 - 5) / 4);
    for (int j = 0; j < N; ++j) bias[j] = j * 0.5f;
    uint8_t *ad, *bd, *biasd, *cd, *td;
    aclrtMalloc((void**)&ad, a.size() * 2, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&bd, b.size() * 2, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&biasd, N * 4, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&cd, M * N * 4, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&td, tiling.GetDataSize(), ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(ad, a.size() * 2, a.data(), a.size() * 2, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(bd, b.size() * 2, b.data(), b.size() * 2, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(biasd, N * 4, bias.data(), N * 4, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(td, tiling.GetDataSize(), &tiling, tiling.GetDataSize(), ACL_MEMCPY_HOST_TO_DEVICE);
    mm<<<tiling.usedCoreNum, nullptr, nullptr>>>(ad, bd, biasd, cd, td);
    aclrtMemcpy(c.data(), M * N * 4, cd, M * N * 4, ACL_MEMCPY_DEVICE_TO_HOST);
    double err = 0;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double s = bias[j];
            for (int k = 0; k < K; ++k) s += double(aclFloat16ToFloat(a[i * K + k])) * aclFloat16ToFloat(b[j * K + k]);
            err = std::max(err, std::abs(s - c[i * N + j]));
        }
    std::printf("cores %d max err %g\n", tiling.usedCoreNum, err);
    return 0;
}
"""


def test_matmul_high_level_api_with_host_tiling(tmp_path, capsys):
    # the host tiling splits 40 x 72 over 4 AICs; each block's IterateAll with a transposed B, a bias
    # and a tail matches a double-precision reference
    (tmp_path / "mm.asc").write_text(_MATMUL)
    assert cli_main(["emu", "run", str(tmp_path / "mm.asc"), "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.split()
    assert out[:2] == ["cores", "4"] and float(out[-1]) < 1e-4, out
