// Constant Matmul tilings (devkit "Matmul模板参数" table 1, GetMatmulApiTiling page):
// MatmulApiStaticTiling holds the TCubeTiling fields as constants plus the MatmulConfig `cfg`;
// GetMatmulApiTiling<A, B, C, BIAS>(cfg, l1Size) makes one at compile time from a MatmulConfig
// whose (singleCoreM, N, K, basicM, N, K) were fixed by GetMMConfig / Get*Config. A field the
// config leaves at 0 (partial constant tiling) is -1 here and comes from the runtime tiling.
// The Matmul takes it as its MM_CFG template argument (matmul_intf.h).
#pragma once

#include <cstdint>

#include "lib/matmul/matmul_config.h"

// At global scope like MatmulConfig (the samples name it unqualified), and in AscendC.
struct MatmulApiStaticTiling {
    int32_t usedCoreNum = -1;
    int32_t M = -1, N = -1, Ka = -1, Kb = -1;
    int32_t singleCoreM = -1, singleCoreN = -1, singleCoreK = -1;
    int32_t baseM = -1, baseN = -1, baseK = -1;
    int32_t depthA1 = -1, depthB1 = -1;
    int32_t stepM = -1, stepN = -1, stepKa = -1, stepKb = -1;
    int32_t isBias = -1, transLength = -1, iterateOrder = -1;
    int32_t dbL0A = -1, dbL0B = -1, dbL0C = -1;
    int32_t shareMode = -1, shareL1Size = -1, shareL0CSize = -1, shareUbSize = -1;
    int32_t batchM = -1, batchN = -1, singleBatchM = -1, singleBatchN = -1;
    int32_t mxTypePara = -1;
    MatmulConfig cfg{};
};

namespace AscendC {

using ::MatmulApiStaticTiling;

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE>
constexpr MatmulApiStaticTiling GetMatmulApiTiling(const MatmulConfig& mmCFG, int32_t l1Size = 512 * 1024)
{
    (void)l1Size;
    MatmulApiStaticTiling t{};
    t.cfg = mmCFG;
    auto orNone = [](uint32_t v) { return v == 0 ? -1 : static_cast<int32_t>(v); };
    t.singleCoreM = orNone(mmCFG.singleCoreM);
    t.singleCoreN = orNone(mmCFG.singleCoreN);
    t.singleCoreK = orNone(mmCFG.singleCoreK);
    t.baseM = orNone(mmCFG.basicM);
    t.baseN = orNone(mmCFG.basicN);
    t.baseK = orNone(mmCFG.basicK);
    t.iterateOrder = mmCFG.iterateOrder == IterateOrder::ORDER_M ? 0 : mmCFG.iterateOrder == IterateOrder::ORDER_N ? 1 : -1;
    t.isBias = mmCFG.enableSetBias ? 1 : 0;
    return t;
}

}  // namespace AscendC
