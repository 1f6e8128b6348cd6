// How the devkit's multi-core matmul tiling cuts a large M x N output over the cores on a 910B
// (its "SPLIT_MN" case: M >= 128 and M * N > 26214 * cores, no SetSingleShape, no split K).
// Facts of the devkit's tiling algorithm (matmul_tiling_algorithm: CalcMultiCoreDims and its
// ComputeIntensity ordering), implemented here in our own terms: every (mDim, nDim) with
// mDim * nDim = cores is scored over its single-core block cut into base blocks (baseM x baseN x
// baseK; baseM 128 (256 with a 256 KiB L0C), baseN 256, baseK 128 bytes of A, or SetFixSplit's),
// main and tail blocks apart: cycles ~ baseM * baseN * baseK per block, memory ~ the A and B
// bytes each block loads. The best has the highest cycles / memory; equal ones (within 1e-6)
// with cycles within 1 % prefer the larger band ratio ((cores - mDim) * baseM + (cores - nDim) *
// baseN) / ((baseM + baseN) * cores), otherwise the fewer cycles.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace matmul_tiling {
namespace split_detail {

struct Score {
    int mDim, nDim;
    double cycles, intensity, band;
};

inline bool Better(const Score& a, const Score& b)
{
    if (std::fabs(a.intensity - b.intensity) > 1e-6) return a.intensity > b.intensity;
    if (std::fabs(a.cycles - b.cycles) < 0.01 * b.cycles) return a.band > b.band;
    return a.cycles < b.cycles;
}

// The best of the candidate (mDim, nDim) pairs.
inline std::pair<int, int> Best(const std::vector<std::pair<int, int>>& dims, int m, int n, int k, int cores, int baseM,
                                int baseN, int aBits, int bBits)
{
    const int baseK = std::min(128 * 8 / std::max(1, aBits), std::max(16, (k + 15) / 16 * 16));
    auto align16 = [](int v) { return (v + 15) / 16 * 16; };
    std::vector<Score> all;
    for (const auto& [mDim, nDim] : dims) {
        const int sm = align16((m + mDim - 1) / mDim), sn = align16((n + nDim - 1) / nDim);
        const int mainM = sm / baseM, tailM = sm % baseM, mainN = sn / baseN, tailN = sn % baseN;
        double cycles = 0, memory = 0;
        auto add = [&](int bm, int bn, double count) {
            cycles += double(bm) * bn * baseK * count;
            memory += (double(bm) * baseK * aBits + double(bn) * baseK * bBits) / 8 * count;
        };
        if (mainM > 0 && mainN > 0) add(baseM, baseN, double(mainM) * mainN);
        if (mainM > 0 && tailN > 0) add(baseM, tailN, mainM);
        if (tailM > 0 && mainN > 0) add(tailM, baseN, mainN);
        if (tailM > 0 && tailN > 0) add(tailM, tailN, 1);
        const double band = double((cores - mDim) * baseM + (cores - nDim) * baseN) / double((baseM + baseN) * cores);
        all.push_back({mDim, nDim, cycles, memory > 0 ? cycles / memory : 0, band});
    }
    std::stable_sort(all.begin(), all.end(), Better);
    return all.empty() ? std::pair<int, int>{0, 0} : std::pair<int, int>{all[0].mDim, all[0].nDim};
}

// (mDim, nDim) of the SPLIT_MN case (mDim * nDim = cores), or (0, 0) when it does not apply.
inline std::pair<int, int> DevkitMnSplit(int m, int n, int k, int cores, int fixM, int fixN, bool l0c256k, int aBits,
                                         int bBits)
{
    if (m < 128 || int64_t(m) * n <= int64_t(26214) * cores || cores < 1) return {0, 0};
    std::vector<std::pair<int, int>> dims;
    for (int mDim = 1; mDim <= cores; ++mDim)
        if (cores % mDim == 0) dims.emplace_back(mDim, cores / mDim);
    return Best(dims, m, n, k, cores, fixM > 0 ? fixM : (l0c256k ? 256 : 128), fixN > 0 ? fixN : 256, aBits, bBits);
}

// The N_BUFFER_33 schedule (SetMatmulConfigParams): mDim = ceil(M / (3 baseM)), and nDim the best
// of 1 .. min(N / baseN, cores / mDim) by the same score.
inline std::pair<int, int> DevkitNBuffer33Split(int m, int n, int k, int cores, int fixM, int fixN, bool l0c256k,
                                                int aBits, int bBits)
{
    const int baseM = fixM > 0 ? fixM : (l0c256k ? 256 : 128), baseN = fixN > 0 ? fixN : 256;
    const int mDim = std::max(1, (m + 3 * baseM - 1) / (3 * baseM));
    if (mDim > cores) return {0, 0};
    std::vector<std::pair<int, int>> dims;
    for (int nDim = 1; nDim <= std::max(1, std::min(n / baseN, cores / mDim)); ++nDim) dims.emplace_back(mDim, nDim);
    return Best(dims, m, n, k, cores, baseM, baseN, aBits, bBits);
}

}  // namespace split_detail
}  // namespace matmul_tiling
