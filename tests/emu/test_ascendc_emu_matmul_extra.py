"""Matmul API additions of the emulator checked against a host reference (devkit-style program of
our own): a float C in NZ with isEnableChannelSplit (16 x 8 fractals), a constant tiling from
GetMatmulApiTiling used with a null runtime tiling, the host tiling's EnableMultiCoreSplitK and
GetSingleShape, and AscendC::Ceil."""

from __future__ import annotations

import pytest

from fusion.cli.main import main as cli_main

pytestmark = pytest.mark.usefixtures("emu_cache")   # tests/conftest.py

_PROGRAM = r"""
#include "kernel_tiling/kernel_tiling.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"
#include "acl/acl.h"
#include "kernel_operator.h"
#define ASCENDC_CUBE_ONLY
#include "lib/matmul_intf.h"
#include <cstdio>
#include <vector>
constexpr int M = 32, N = 40, K = 64;
using AT = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>;
using CN = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::NZ, float>;
using CT = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>;
constexpr MatmulConfig SplitCfg() { auto c = CFG_NORM; c.isEnableChannelSplit = true; return c; }
constexpr static MatmulConfig SPLIT = SplitCfg();
constexpr MatmulShapeParams SHAPE = {M, N, K, 16, 16, 32};
constexpr static auto STATIC = AscendC::GetMatmulApiTiling<AT, AT, CT, CT>(GetMMConfig<MatmulConfigMode::CONFIG_NORM>(SHAPE));
__global__ __cube__ void nz(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tilingGm)
{
    TCubeTiling t;
    for (uint32_t i = 0; i < sizeof(TCubeTiling) / 4; ++i) ((uint32_t*)&t)[i] = ((__gm__ uint32_t*)tilingGm)[i];
    AscendC::TPipe pipe;
    AscendC::Matmul<AT, AT, CN, CT, SPLIT> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a, M * K);
    bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.IterateAll(cg);
    mm.End();
}
__global__ __cube__ void constant(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    AscendC::TPipe pipe;
    AscendC::Matmul<AT, AT, CT, CT, STATIC> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, (TCubeTiling*)nullptr);
    mm.SetOrgShape(M, N, K);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a, M * K);
    bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.IterateAll(cg);
    mm.End();
}
int main()
{
    auto* platform = platform_ascendc::PlatformAscendCManager::GetInstance();
    std::vector<aclFloat16> a(M * K), b(K * N);
    for (int i = 0; i < M * K; ++i) a[i] = aclFloatToFloat16(float((i * 7) % 13 - 6) / 8);
    for (int i = 0; i < K * N; ++i) b[i] = aclFloatToFloat16(float((i * 5) % 11 - 5) / 4);
    std::vector<double> ref(M * N, 0.0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int k = 0; k < K; ++k) ref[i * N + j] += double(aclFloat16ToFloat(a[i * K + k])) * aclFloat16ToFloat(b[k * N + j]);
    uint8_t *ad, *bd, *cd, *td;
    aclrtMalloc((void**)&ad, M * K * 2, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&bd, K * N * 2, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&cd, M * N * 4, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&td, sizeof(TCubeTiling), ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(ad, M * K * 2, a.data(), M * K * 2, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(bd, K * N * 2, b.data(), K * N * 2, ACL_MEMCPY_HOST_TO_DEVICE);
    matmul_tiling::MultiCoreMatmulTiling api(*platform);
    api.SetDim(1);
    api.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    api.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    api.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::NZ, matmul_tiling::DataType::DT_FLOAT);
    api.SetOrgShape(M, N, K); api.SetShape(M, N, K);
    optiling::TCubeTiling tiling;
    if (api.GetTiling(tiling) == -1) return 3;
    aclrtMemcpy(td, sizeof(TCubeTiling), &tiling, sizeof(TCubeTiling), ACL_MEMCPY_HOST_TO_DEVICE);
    nz<<<1, nullptr, nullptr>>>(ad, bd, cd, td);
    std::vector<float> c(M * N);
    aclrtMemcpy(c.data(), M * N * 4, cd, M * N * 4, ACL_MEMCPY_DEVICE_TO_HOST);
    double errNz = 0;  // (i, j) at ((j / 8) * M + i) * 8 + j % 8 (M is a multiple of 16)
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) errNz = std::max(errNz, std::abs(ref[i * N + j] - c[((j / 8) * M + i) * 8 + j % 8]));
    constant<<<1, nullptr, nullptr>>>(ad, bd, cd);
    aclrtMemcpy(c.data(), M * N * 4, cd, M * N * 4, ACL_MEMCPY_DEVICE_TO_HOST);
    double errConst = 0;
    for (int i = 0; i < M * N; ++i) errConst = std::max(errConst, std::abs(ref[i] - c[i]));
    matmul_tiling::MultiCoreMatmulTiling sk(*platform);
    sk.SetDim(8);
    sk.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    sk.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    sk.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    sk.SetOrgShape(16, 16, 1024); sk.SetShape(16, 16, 1024);
    sk.EnableMultiCoreSplitK(true);
    int32_t sm = 0, sn = 0, skk = 0;
    if (sk.GetTiling(tiling) == -1 || sk.GetSingleShape(sm, sn, skk) != 0) return 4;
    std::printf("nz %g const %g splitk %d %d %d %d ceil %lld\n", errNz, errConst, tiling.usedCoreNum, sm, sn, skk,
                (long long)AscendC::Ceil<int64_t>(1025, 16));
    return 0;
}
"""


def test_nz_channel_split_constant_tiling_and_split_k(tmp_path, capsys):
    (tmp_path / "mmx.asc").write_text(_PROGRAM)
    assert cli_main(["emu", "run", str(tmp_path / "mmx.asc"), "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.split()
    assert out[0] == "nz" and float(out[1]) < 1e-4, out        # NZ, 16 x 8 fractals, right values
    assert out[2] == "const" and float(out[3]) < 1e-4, out     # constant tiling, null runtime tiling
    # 16 x 16 x 1024 on 8 cores: one M x N block, K cut into 8 parts of 128
    assert out[4:9] == ["splitk", "8", "16", "16", "128"], out
    assert out[9:] == ["ceil", "65"], out


_PROGRAM2 = r"""
#include "kernel_tiling/kernel_tiling.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"
#include "acl/acl.h"
#include "kernel_operator.h"
#define ASCENDC_CUBE_ONLY
#include "lib/matmul_intf.h"
#include <cstdio>
#include <cstring>
#include <vector>
constexpr int M = 32, N = 32, K = 32, BATCH = 2;
using AN = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half, false, LayoutMode::NORMAL>;
using CN = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float, false, LayoutMode::NORMAL>;
using A8 = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, int8_t>;
using CH = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>;
using BI = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, int32_t>;
using AT = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>;
using CT = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>;
__aicore__ inline void Load(TCubeTiling& t, GM_ADDR g)
{
    for (uint32_t i = 0; i < sizeof(TCubeTiling) / 4; ++i) ((uint32_t*)&t)[i] = ((__gm__ uint32_t*)g)[i];
}
__global__ __cube__ void batch(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tg)
{
    TCubeTiling t; Load(t, tg);
    AscendC::TPipe pipe;
    AscendC::Matmul<AN, AN, CN> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    AscendC::GlobalTensor<half> ag, bg; AscendC::GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a, BATCH * M * K); bg.SetGlobalBuffer((__gm__ half*)b, BATCH * K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, BATCH * M * N);
    mm.SetTensorA(ag); mm.SetTensorB(bg);
    mm.IterateBatch(cg, BATCH, BATCH, false);
}
__global__ __cube__ void quant(GM_ADDR a, GM_ADDR b, GM_ADDR q, GM_ADDR c, GM_ADDR tg)
{
    TCubeTiling t; Load(t, tg);
    AscendC::TPipe pipe;
    AscendC::Matmul<A8, A8, CH, BI> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    AscendC::GlobalTensor<int8_t> ag, bg; AscendC::GlobalTensor<uint64_t> qg; AscendC::GlobalTensor<half> cg;
    ag.SetGlobalBuffer((__gm__ int8_t*)a, M * K); bg.SetGlobalBuffer((__gm__ int8_t*)b, K * N);
    qg.SetGlobalBuffer((__gm__ uint64_t*)q, N); cg.SetGlobalBuffer((__gm__ half*)c, M * N);
    mm.SetQuantVector(qg);
    mm.SetTensorA(ag); mm.SetTensorB(bg);
    mm.IterateAll(cg);
}
__global__ __cube__ void upper(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tg)
{
    TCubeTiling t; Load(t, tg);
    AscendC::TPipe pipe;
    AscendC::Matmul<AT, AT, CT, CT, CFG_NORM, AscendC::MatmulCallBackFunc<nullptr, nullptr, nullptr>,
                    AscendC::Impl::Detail::TrianUpperMatmulPolicy> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    AscendC::GlobalTensor<half> ag, bg; AscendC::GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a, M * K); bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    mm.SetTensorA(ag); mm.SetTensorB(bg);
    mm.IterateAll(cg);
}
static optiling::TCubeTiling Tiling(matmul_tiling::DataType in, matmul_tiling::DataType out, int base)
{
    matmul_tiling::MatmulApiTiling api(*platform_ascendc::PlatformAscendCManager::GetInstance());
    api.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, in);
    api.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, in);
    api.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, out);
    api.SetOrgShape(M, N, K); api.SetShape(M, N, K); api.SetFixSplit(base, base, -1);
    optiling::TCubeTiling t;
    api.GetTiling(t);
    return t;
}
template <class T> static uint8_t* Dev(const std::vector<T>& v)
{
    uint8_t* d; aclrtMalloc((void**)&d, v.size() * sizeof(T), ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(d, v.size() * sizeof(T), v.data(), v.size() * sizeof(T), ACL_MEMCPY_HOST_TO_DEVICE);
    return d;
}
template <class T> static std::vector<T> Host(uint8_t* d, size_t n)
{
    std::vector<T> v(n); aclrtMemcpy(v.data(), n * sizeof(T), d, n * sizeof(T), ACL_MEMCPY_DEVICE_TO_HOST); return v;
}
int main()
{
    // batch: two 32 x 32 x 32 matmuls stored one after the other (NORMAL layout)
    std::vector<aclFloat16> a(BATCH * M * K), b(BATCH * K * N);
    for (size_t i = 0; i < a.size(); ++i) a[i] = aclFloatToFloat16(float(int(i * 7 % 13) - 6) / 8);
    for (size_t i = 0; i < b.size(); ++i) b[i] = aclFloatToFloat16(float(int(i * 5 % 11) - 5) / 4);
    auto t = Tiling(matmul_tiling::DataType::DT_FLOAT16, matmul_tiling::DataType::DT_FLOAT, 16);
    uint8_t *ad = Dev(a), *bd = Dev(b), *cd = Dev(std::vector<float>(BATCH * M * N, -1.0f)), *td = Dev(std::vector<optiling::TCubeTiling>{t});
    batch<<<1, nullptr, nullptr>>>(ad, bd, cd, td);
    auto c = Host<float>(cd, BATCH * M * N);
    double eb = 0;
    for (int q = 0; q < BATCH; ++q)
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) {
                double s = 0;
                for (int k = 0; k < K; ++k)
                    s += double(aclFloat16ToFloat(a[q * M * K + i * K + k])) * aclFloat16ToFloat(b[q * K * N + k * N + j]);
                eb = std::max(eb, std::abs(s - c[q * M * N + i * N + j]));
            }
    // upper triangle policy, 16 x 16 blocks: the blocks below the block diagonal keep -1
    std::vector<float> minus(BATCH * M * N, -1.0f);
    aclrtMemcpy(cd, minus.size() * 4, minus.data(), minus.size() * 4, ACL_MEMCPY_HOST_TO_DEVICE);
    upper<<<1, nullptr, nullptr>>>(ad, bd, cd, td);
    c = Host<float>(cd, BATCH * M * N);
    const bool lowerKept = c[16 * N + 0] == -1.0f && c[0] != -1.0f && c[16] != -1.0f && c[16 * N + 16] != -1.0f;
    // quant: int8 x int8 -> int32, times a per-column scale -> half
    std::vector<int8_t> a8(M * K), b8(K * N);
    for (int i = 0; i < M * K; ++i) a8[i] = int8_t(i * 7 % 11 - 5);
    for (int i = 0; i < K * N; ++i) b8[i] = int8_t(i * 3 % 7 - 3);
    std::vector<uint64_t> qv(N);
    std::vector<float> sc(N);
    for (int j = 0; j < N; ++j) {
        float f = 0.05f * (j + 1); uint32_t bits; std::memcpy(&bits, &f, 4); qv[j] = bits;
        bits &= 0xFFFFE000u; std::memcpy(&sc[j], &bits, 4);
    }
    auto t8 = Tiling(matmul_tiling::DataType::DT_INT8, matmul_tiling::DataType::DT_FLOAT16, 16);
    uint8_t *a8d = Dev(a8), *b8d = Dev(b8), *qd = Dev(qv), *chd = Dev(std::vector<aclFloat16>(M * N)), *t8d = Dev(std::vector<optiling::TCubeTiling>{t8});
    quant<<<1, nullptr, nullptr>>>(a8d, b8d, qd, chd, t8d);
    auto ch = Host<aclFloat16>(chd, M * N);
    double eq = 0;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            int s = 0;
            for (int k = 0; k < K; ++k) s += a8[i * K + k] * b8[k * N + j];
            const double want = aclFloat16ToFloat(aclFloatToFloat16(float(s) * sc[j]));
            eq = std::max(eq, std::abs(want - aclFloat16ToFloat(ch[i * N + j])));
        }
    auto lay = AscendC::MakeLayout(AscendC::MakeShape(4, 5), AscendC::MakeStride(5, 1));
    std::printf("batch %g upper %d quant %g layout %lld\n", eb, int(lowerKept), eq,
                (long long)lay(AscendC::MakeCoord(2, 3)));
    return 0;
}
"""


def test_batch_quant_vector_triangle_policy_and_layout(tmp_path, capsys):
    (tmp_path / "mm2.asc").write_text(_PROGRAM2)
    assert cli_main(["emu", "run", str(tmp_path / "mm2.asc"), "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.split()
    assert out[0] == "batch" and float(out[1]) < 1e-4, out     # both batches from their own A, B
    assert out[2:4] == ["upper", "1"], out                     # block (1, 0) skipped, the others written
    assert out[4] == "quant" and float(out[5]) == 0.0, out     # int32 * 19-bit scale, once to half
    assert out[6:8] == ["layout", "13"], out                   # (2, 3) with strides (5, 1)


_PROGRAM3 = r"""
#include "kernel_tiling/kernel_tiling.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"
#include "acl/acl.h"
#include "kernel_operator.h"
#define ASCENDC_CUBE_ONLY
#include "lib/matmul_intf.h"
#include <cstdio>
#include <vector>
constexpr int M = 32, N = 32, K = 64;
using AT = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>;
using CT = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>;
constexpr MatmulConfig PartialCfg() { auto c = CFG_MDL; c.isPartialOutput = true; return c; }
constexpr static MatmulConfig PARTIAL = PartialCfg();
__global__ __cube__ void partial(GM_ADDR a, GM_ADDR b, GM_ADDR ws, GM_ADDR tg)
{
    TCubeTiling t;
    for (uint32_t i = 0; i < sizeof(TCubeTiling) / 4; ++i) ((uint32_t*)&t)[i] = ((__gm__ uint32_t*)tg)[i];
    AscendC::TPipe pipe;
    AscendC::Matmul<AT, AT, CT, CT, PARTIAL> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    AscendC::GlobalTensor<half> ag, bg; AscendC::GlobalTensor<float> wg;
    ag.SetGlobalBuffer((__gm__ half*)a, M * K); bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    wg.SetGlobalBuffer((__gm__ float*)ws, 8 * M * N);
    mm.SetTensorA(ag); mm.SetTensorB(bg);
    uint32_t off = 0;
    while (mm.Iterate()) {
        mm.GetTensorC(wg[off], 0, true);
        off += t.baseM * t.baseN;
    }
    mm.End();
}
extern "C" __global__ __aicore__ void plus(GM_ADDR x, GM_ADDR y)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> b0, b1;
    pipe.InitBuffer(b0, 256); pipe.InitBuffer(b1, 256);
    AscendC::LocalTensor<float> u = b0.Get<float>(), v = b1.Get<float>();
    AscendC::GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, 64); yg.SetGlobalBuffer((__gm__ float*)y, 64);
    AscendC::DataCopy(u, xg, 64);
    AscendC::DataCopy(v, xg, 64);
    AscendC::PipeBarrier<PIPE_ALL>();
    u = u + v;      // Add over u.GetSize() = 64 elements
    v = u * u;
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::DataCopy(yg, v, 64);
}
static std::pair<int, int> Split(int m, int n, int k, int bm, int bn)
{
    matmul_tiling::MultiCoreMatmulTiling api(*platform_ascendc::PlatformAscendCManager::GetInstance());
    api.SetDim(2);
    api.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    api.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    api.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    api.SetOrgShape(m, n, k); api.SetShape(m, n, k);
    if (bm > 0) api.SetFixSplit(bm, bn, -1);
    optiling::TCubeTiling t;
    api.GetTiling(t);
    return {t.singleCoreM, t.singleCoreN};
}
int main()
{
    std::vector<aclFloat16> a(M * K), b(K * N);
    for (int i = 0; i < M * K; ++i) a[i] = aclFloatToFloat16(float((i * 7) % 13 - 6) / 8);
    for (int i = 0; i < K * N; ++i) b[i] = aclFloatToFloat16(float((i * 5) % 11 - 5) / 4);
    matmul_tiling::MatmulApiTiling api(*platform_ascendc::PlatformAscendCManager::GetInstance());
    api.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    api.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    api.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    api.SetOrgShape(M, N, K); api.SetShape(M, N, K); api.SetFixSplit(16, 32, 32);
    optiling::TCubeTiling t;
    api.GetTiling(t);
    uint8_t *ad, *bd, *wd, *td;
    aclrtMalloc((void**)&ad, M * K * 2, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&bd, K * N * 2, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&wd, 8 * M * N * 4, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&td, sizeof(TCubeTiling), ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(ad, M * K * 2, a.data(), M * K * 2, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(bd, K * N * 2, b.data(), K * N * 2, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(td, sizeof(TCubeTiling), &t, sizeof(TCubeTiling), ACL_MEMCPY_HOST_TO_DEVICE);
    partial<<<1, nullptr, nullptr>>>(ad, bd, wd, td);
    std::vector<float> w(8 * M * N);
    aclrtMemcpy(w.data(), w.size() * 4, wd, w.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
    // blocks of 16 x 32 in M-first order (2 of them), each as 2 partials of K = 32, 512 floats apiece
    double err = 0;
    for (int blk = 0; blk < 2; ++blk)
        for (int kc = 0; kc < 2; ++kc)
            for (int i = 0; i < 16; ++i)
                for (int j = 0; j < 32; ++j) {
                    double s = 0;
                    for (int k = kc * 32; k < kc * 32 + 32; ++k)
                        s += double(aclFloat16ToFloat(a[(blk * 16 + i) * K + k])) * aclFloat16ToFloat(b[k * N + j]);
                    err = std::max(err, std::abs(s - w[(blk * 2 + kc) * 512 + i * 32 + j]));
                }
    std::vector<float> x(64), y(64);
    for (int i = 0; i < 64; ++i) x[i] = float(i) / 8;
    uint8_t *xd, *yd;
    aclrtMalloc((void**)&xd, 256, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&yd, 256, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(xd, 256, x.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE);
    plus<<<1, nullptr, nullptr>>>(xd, yd);
    aclrtMemcpy(y.data(), 256, yd, 256, ACL_MEMCPY_DEVICE_TO_HOST);
    double errOp = 0;
    for (int i = 0; i < 64; ++i) errOp = std::max(errOp, std::abs(double(y[i]) - 4.0 * x[i] * x[i]));
    auto s1 = Split(512, 128, 128, 128, 64), s2 = Split(512, 512, 128, -1, -1);
    std::printf("partial %g op %g split %d %d %d %d\n", err, errOp, s1.first, s1.second, s2.first, s2.second);
    return 0;
}
"""


def test_partial_output_operator_overloads_and_devkit_core_split(tmp_path, capsys):
    (tmp_path / "mm3.asc").write_text(_PROGRAM3)
    assert cli_main(["emu", "run", str(tmp_path / "mm3.asc"), "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.split()
    assert out[0] == "partial" and float(out[1]) < 1e-4, out   # each block's K chunks, one after the other
    assert out[2] == "op" and float(out[3]) < 1e-4, out        # u = u + v; v = u * u
    # the devkit's cost model on 2 cores: 512 x 128 with 128 x 64 base blocks is cut along N,
    # 512 x 512 (base 128 x 256) along M
    assert out[4:9] == ["split", "512", "64", "256", "512"], out
