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
