"""The high-level Matmul API of the emulator as the devkit's matmul samples drive it
(lib/matmul_intf.h, lib/matmul/matmul_config.h): `using namespace matmul`, a MatmulConfig
built from CFG_MDL with iterateOrder = ORDER_N, C in UB (VECIN) taken block by block with
Iterate<false> / GetTensorC<false>, and an __aicore__ kernel of a program that includes the
header without ASCENDC_CUBE_ONLY launching as MIX AIC:AIV = 1:2 (2 blocks = 4 AIVs, each with
its own single-core block). A config field that changes the result and is not emulated is
refused in one line naming the kernel's REGIST_MATMUL_OBJ line."""

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
#include "lib/matmul_intf.h"
#include <cstdio>
#include <vector>
using namespace matmul;
constexpr int M = 64, N = 64, K = 32;
constexpr MatmulConfig MakeCfg()
{
    auto c = CFG_MDL;
    c.iterateOrder = IterateOrder::ORDER_N;
#ifdef RELU
    c.enableRelu = true;
#endif
    return c;
}
constexpr static MatmulConfig CFG = MakeCfg();
__global__ __aicore__ void mm(GM_ADDR a, GM_ADDR b, GM_ADDR c, __kfc_workspace__ GM_ADDR ws, GM_ADDR tilingGm)
{
    TCubeTiling t;
    for (uint32_t i = 0; i < sizeof(TCubeTiling) / 4; ++i) ((uint32_t*)&t)[i] = ((__gm__ uint32_t*)tilingGm)[i];
    AscendC::TPipe pipe;
    Matmul<MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>, MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
           MatmulType<AscendC::TPosition::VECIN, CubeFormat::ND, float>, MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>,
           CFG> mmObj;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mmObj, &t);
    const int mBlocks = t.M / t.singleCoreM;
    const int mi = GetBlockIdx() % mBlocks, ni = GetBlockIdx() / mBlocks;
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a + mi * t.singleCoreM * K, t.singleCoreM * K);
    bg.SetGlobalBuffer((__gm__ half*)b + ni * t.singleCoreN);
    cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    mmObj.SetTensorA(ag);
    mmObj.SetTensorB(bg);
    AscendC::TQue<AscendC::TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, t.baseM * t.baseN * 4);
    mmObj.template Iterate<false>();
    const int nb = t.singleCoreN / t.baseN, blocks = t.singleCoreM / t.baseM * nb;
    for (int i = 0; i < blocks; ++i) {
        auto l = q.AllocTensor<float>();
        mmObj.template GetTensorC<false>(l);
        q.EnQue(l);
        l = q.DeQue<float>();
        const int r = i / nb, cc = i % nb;  // ORDER_N: N moves first
        AscendC::DataCopyParams p{(uint16_t)t.baseM, (uint16_t)(t.baseN * 4 / 32), 0, (uint16_t)((N - t.baseN) * 4 / 32)};
        AscendC::DataCopy(cg[(mi * t.singleCoreM + r * t.baseM) * N + ni * t.singleCoreN + cc * t.baseN], l, p);
        q.FreeTensor(l);
    }
    mmObj.End();
}
int main()
{
    auto* platform = platform_ascendc::PlatformAscendCManager::GetInstance();
    matmul_tiling::MultiCoreMatmulTiling api(*platform);
    api.SetDim(4);
    api.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    api.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
    api.SetCType(matmul_tiling::TPosition::VECIN, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    api.SetOrgShape(M, N, K); api.SetShape(M, N, K); api.SetFixSplit(16, 16, 32);
    optiling::TCubeTiling tiling;
    if (api.GetTiling(tiling) == -1) return 3;
    std::vector<aclFloat16> a(M * K), b(K * N);
    std::vector<float> c(M * N);
    for (int i = 0; i < M * K; ++i) a[i] = aclFloatToFloat16(float((i * 7) % 13 - 6) / 8);
    for (int i = 0; i < K * N; ++i) b[i] = aclFloatToFloat16(float((i * 5) % 11 - 5) / 4);
    uint8_t *ad, *bd, *cd, *wd, *td;
    aclrtMalloc((void**)&ad, a.size() * 2, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&bd, b.size() * 2, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&cd, M * N * 4, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&wd, 1024, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&td, tiling.GetDataSize(), ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(ad, a.size() * 2, a.data(), a.size() * 2, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(bd, b.size() * 2, b.data(), b.size() * 2, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(td, tiling.GetDataSize(), &tiling, tiling.GetDataSize(), ACL_MEMCPY_HOST_TO_DEVICE);
    mm<<<tiling.usedCoreNum / 2, nullptr, nullptr>>>(ad, bd, cd, wd, td);
    aclrtMemcpy(c.data(), M * N * 4, cd, M * N * 4, ACL_MEMCPY_DEVICE_TO_HOST);
    double err = 0;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double s = 0;
            for (int k = 0; k < K; ++k) s += double(aclFloat16ToFloat(a[i * K + k])) * aclFloat16ToFloat(b[k * N + j]);
            err = std::max(err, std::abs(s - c[i * N + j]));
        }
    std::printf("cores %d single %d %d base %d %d max err %g\n", tiling.usedCoreNum, tiling.singleCoreM,
                tiling.singleCoreN, tiling.baseM, tiling.baseN, err);
    return 0;
}
"""


def test_mix_matmul_async_blocks_into_ub_in_config_order(tmp_path, capsys):
    (tmp_path / "mmx.asc").write_text(_PROGRAM)
    assert cli_main(["emu", "run", str(tmp_path / "mmx.asc"), "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.split()
    # 4 AIV cores of 32 x 32, four 16 x 16 blocks each, placed by the kernel in ORDER_N order: an
    # M-first order (the tiling's default) would put the off-diagonal blocks in each other's place
    assert out[:8] == ["cores", "4", "single", "32", "32", "base", "16", "16"], out
    assert float(out[-1]) < 1e-4, out


def test_result_changing_config_field_is_refused(tmp_path, capsys):
    (tmp_path / "mmx.asc").write_text(_PROGRAM)
    rc = cli_main(["emu", "run", str(tmp_path / "mmx.asc"), "-D", "RELU", "--workdir", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1, (rc, err)
    line = 1 + _PROGRAM.splitlines().index("    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mmObj, &t);")
    assert f"kernel 'mm' line {line}: Matmul: MatmulConfig.enableRelu changes the result" in err[0], err



_GEMV_ALIGN = r"""
#include "kernel_tiling/kernel_tiling.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"
#include "acl/acl.h"
#include "kernel_operator.h"
#define ASCENDC_CUBE_ONLY
#include "lib/matmul_intf.h"
#include <cstdio>
#include <vector>
constexpr int M = 3, N = 20, K = 64, NA = 24;  // C rows: 20 floats, ND_ALIGN pads them to 32 B = 24
using AT = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>;
using AV = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::VECTOR, half>;
using CT = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>;
using CA = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND_ALIGN, float>;
template <class A, class C>
__aicore__ inline void Run(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR tilingGm)
{
    TCubeTiling t;
    for (uint32_t i = 0; i < sizeof(TCubeTiling) / 4; ++i) ((uint32_t*)&t)[i] = ((__gm__ uint32_t*)tilingGm)[i];
    AscendC::TPipe pipe;
    AscendC::Matmul<A, AT, C> mmObj;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mmObj, &t);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a, t.M * K);
    bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, M * NA);
    mmObj.SetTensorA(ag);
    mmObj.SetTensorB(bg);
    mmObj.IterateAll(cg);
    mmObj.End();
}
__global__ __cube__ void gemv(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR t) { Run<AV, CT>(a, b, c, t); }
__global__ __cube__ void align(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR t) { Run<AT, CA>(a, b, c, t); }
int main()
{
    auto* platform = platform_ascendc::PlatformAscendCManager::GetInstance();
    std::vector<aclFloat16> a(M * K), b(K * N);
    for (int i = 0; i < M * K; ++i) a[i] = aclFloatToFloat16(float(i % 5 - 2));
    for (int i = 0; i < K * N; ++i) b[i] = aclFloatToFloat16(float((i * 3) % 7 - 3) / 2);
    uint8_t *ad, *bd, *cd, *td;
    aclrtMalloc((void**)&ad, M * K * 2, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&bd, K * N * 2, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&cd, M * NA * 4, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&td, sizeof(TCubeTiling), ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(ad, M * K * 2, a.data(), M * K * 2, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(bd, K * N * 2, b.data(), K * N * 2, ACL_MEMCPY_HOST_TO_DEVICE);
    for (int rows : {1, M}) {  // GEMV with A a VECTOR, then 3 rows into ND_ALIGN C
        matmul_tiling::MultiCoreMatmulTiling api(*platform);
        api.SetDim(1);
        api.SetAType(matmul_tiling::TPosition::GM, rows == 1 ? matmul_tiling::CubeFormat::VECTOR : matmul_tiling::CubeFormat::ND,
                     matmul_tiling::DataType::DT_FLOAT16);
        api.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16);
        api.SetCType(matmul_tiling::TPosition::GM, rows == 1 ? matmul_tiling::CubeFormat::ND : matmul_tiling::CubeFormat::ND_ALIGN,
                     matmul_tiling::DataType::DT_FLOAT);
        api.SetOrgShape(rows, N, K); api.SetShape(rows, N, K);
        optiling::TCubeTiling tiling;
        if (api.GetTiling(tiling) == -1) return 3;
        std::vector<float> c(M * NA, -7.0f);
        aclrtMemcpy(cd, M * NA * 4, c.data(), M * NA * 4, ACL_MEMCPY_HOST_TO_DEVICE);
        aclrtMemcpy(td, sizeof(TCubeTiling), &tiling, sizeof(TCubeTiling), ACL_MEMCPY_HOST_TO_DEVICE);
        if (rows == 1) gemv<<<1, nullptr, nullptr>>>(ad, bd, cd, td);
        else align<<<1, nullptr, nullptr>>>(ad, bd, cd, td);
        aclrtMemcpy(c.data(), M * NA * 4, cd, M * NA * 4, ACL_MEMCPY_DEVICE_TO_HOST);
        const int ld = rows == 1 ? N : NA;
        double err = 0;
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < N; ++j) {
                double s = 0;
                for (int k = 0; k < K; ++k) s += double(aclFloat16ToFloat(a[i * K + k])) * aclFloat16ToFloat(b[k * N + j]);
                err = std::max(err, std::abs(s - c[i * ld + j]));
            }
        std::printf("rows %d err %g pad %g\n", rows, err, c[rows == 1 ? N : NA - 1]);
    }
    return 0;
}
"""


def test_gemv_vector_a_and_nd_align_c(tmp_path, capsys):
    # A as a VECTOR (1 x K, GEMV); then C as ND_ALIGN: 3 rows of 20 results 24 floats apart, the
    # padding keeping what the host put there (-7)
    (tmp_path / "gemv.asc").write_text(_GEMV_ALIGN)
    assert cli_main(["emu", "run", str(tmp_path / "gemv.asc"), "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.split()
    assert out[0:2] == ["rows", "1"] and float(out[3]) < 1e-4 and out[5] == "-7", out
    assert out[6:8] == ["rows", "3"] and float(out[9]) < 1e-4 and out[11] == "-7", out
