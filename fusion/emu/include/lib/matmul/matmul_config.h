// MatmulConfig and the functions that build it (devkit "MatmulConfig", "GetMMConfig",
// "GetNormalConfig" ... reference pages): the field names, types and defaults the pages
// document, so a kernel can copy CFG_NORM / CFG_MDL, set fields and pass the result as the
// Matmul template argument. The emulated Matmul computes the result only, so the fields that
// pick a data path or buffer strategy (templates, unit flag, preload, A2/B2 sharing, dual
// master, schedule type ...) change nothing here; the ones that change the result (partial
// output, channel split, relu, decompression, intra-block partial sums, N-batch) are refused
// when the Matmul is initialised (matmul_intf.h), and iterateOrder picks Iterate's order.
#pragma once

#include <cstdint>

enum class CubeFormat { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR, ROW_MAJOR = ND, COLUMN_MAJOR = 8 };
enum class LayoutMode { NONE = 0, BSNGD, SBNGD, BNGS1S2, NORMAL };
enum class BatchMode { NONE = 0, BATCH_LESS_THAN_L1, BATCH_LARGE_THAN_L1, SINGLE_LARGE_THAN_L1 };
enum BatchOutMode { SINGLE_BATCH = 0, MULTI_BATCH, DYNAMIC };
enum class IterateOrder { ORDER_M = 0, ORDER_N, UNDEF };
enum class ScheduleType { INNER_PRODUCT = 0, OUTER_PRODUCT };
enum IterateMode : uint8_t {
    ITERATE_MODE_NORMAL = 1, ITERATE_MODE_ALL = 2, ITERATE_MODE_BATCH = 4, ITERATE_MODE_N_BATCH = 8,
    ITERATE_MODE_DEFAULT = 0xFF
};
enum class DecompressionMode { DECOMP_NONE = 0 };  // the other modes (950 only) are not emulated
enum class MatmulConfigMode { CONFIG_NORM = 0, CONFIG_MDL, CONFIG_SPECIALMDL, CONFIG_IBSHARE };

struct MatmulConfig {
    bool doNorm = false;
    bool doBasicBlock = false;
    bool doMultiDataLoad = false;
    uint32_t basicM = 0, basicN = 0, basicK = 0;
    bool intrinsicsCheck = false;
    bool isNBatch = false;
    bool enVecND2NZ = false;
    bool doSpecialBasicBlock = false;
    uint32_t doMTE2Preload = 0;
    uint32_t singleCoreM = 0, singleCoreN = 0, singleCoreK = 0;
    uint32_t stepM = 0, stepN = 0;
    uint32_t baseMN = 0, singleCoreMN = 0;
    bool enUnitFlag = true;
    bool isPerTensor = false;
    bool hasAntiQuantOffset = false;
    bool doIBShareNorm = false;
    bool doSpecialMDL = false;
    bool enableInit = true;
    BatchMode batchMode = BatchMode::NONE;
    bool enableEnd = true;
    bool enableGetTensorC = true;
    bool enableSetOrgShape = true;
    bool enableSetBias = true;
    bool enableSetTail = true;
    bool enableQuantVector = true;
    bool enableSetDefineData = true;
    uint8_t iterateMode = ITERATE_MODE_DEFAULT;
    bool enableReuse = true;
    bool enableUBReuse = false;
    bool enableL1CacheUB = false;
    bool intraBlockPartSum = false;
    IterateOrder iterateOrder = IterateOrder::UNDEF;
    ScheduleType scheduleType = ScheduleType::INNER_PRODUCT;
    bool enableDoubleCache = false;
    bool isBiasBatch = true;
    bool enableStaticPadZeros = false;
    bool isPartialOutput = false;
    bool enableMixDualMaster = false;
    bool isA2B2Shared = false;
    bool isEnableChannelSplit = false;
    bool enableKdimReorderLoad = false;
    bool isCO1Shared = false;
    uint32_t sharedCO1BufferSize = 64 * 1024;
    BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH;
    bool enableL1BankConflictOptimise = false;
    bool enableRelu = false;
    DecompressionMode decompMode = DecompressionMode::DECOMP_NONE;
};

// GetMMConfig's parameter groups, in the documented member order (aggregate-initialised).
struct MatmulShapeParams {
    uint32_t singleCoreM, singleCoreN, singleCoreK, basicM, basicN, basicK;
};
struct MatmulQuantParams {
    bool isPerTensor, hasAntiQuantOffset;
};
struct MatmulBatchParams {
    bool isNBatch;
    BatchMode batchMode;
    bool isBiasBatch = true;
    BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH;
};
struct MatmulFuncParams {
    bool intrinsicsCheck = false, enVecND2NZ = false, enableDoubleCache = false, enableL1CacheUB = false;
    uint32_t doMTE2Preload = 0;
    IterateOrder iterateOrder = IterateOrder::UNDEF;
    ScheduleType scheduleType = ScheduleType::INNER_PRODUCT;
    bool enableReuse = true, enableUBReuse = false, isPartialOutput = false, isA2B2Shared = false;
    bool isEnableChannelSplit = false, enableKdimReorderLoad = false, enableL1BankConflictOptimise = false;
    bool enableRelu = false;
    DecompressionMode decompMode = DecompressionMode::DECOMP_NONE;
};
struct MatmulBiasParams {
    bool enableSetBias = true;
};

constexpr MatmulConfig GetNormalConfig(bool intrinsicsLimit = false, bool batchLoop = false, bool isVecND2NZ = false,
                                       BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1, bool isMsgReuse = true,
                                       IterateOrder order = IterateOrder::UNDEF,
                                       ScheduleType schedule = ScheduleType::INNER_PRODUCT, bool enUnitFlag = true,
                                       bool enableMixDualMaster = false,
                                       BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH)
{
    MatmulConfig c{};
    c.doNorm = true;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.enVecND2NZ = isVecND2NZ;
    c.batchMode = bmmMode;
    c.enableReuse = isMsgReuse;
    c.iterateOrder = order;
    c.scheduleType = schedule;
    c.enUnitFlag = enUnitFlag;
    c.enableMixDualMaster = enableMixDualMaster;
    c.bmmOutMode = bmmOutMode;
    return c;
}

constexpr MatmulConfig GetMDLConfig(bool intrinsicsLimit = false, bool batchLoop = false, uint32_t doMTE2Preload = 0,
                                    bool isVecND2NZ = false, bool isPerTensor = false, bool hasAntiQuantOffset = false,
                                    bool enUnitFlag = false, bool isMsgReuse = true, bool enableUBReuse = true,
                                    bool enableL1CacheUB = false, bool enableMixDualMaster = false,
                                    bool enableKdimReorderLoad = false)
{
    MatmulConfig c{};
    c.doMultiDataLoad = true;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.doMTE2Preload = doMTE2Preload;
    c.enVecND2NZ = isVecND2NZ;
    c.isPerTensor = isPerTensor;
    c.hasAntiQuantOffset = hasAntiQuantOffset;
    c.enUnitFlag = enUnitFlag;
    c.enableReuse = isMsgReuse;
    c.enableUBReuse = enableUBReuse;
    c.enableL1CacheUB = enableL1CacheUB;
    c.enableMixDualMaster = enableMixDualMaster;
    c.enableKdimReorderLoad = enableKdimReorderLoad;
    return c;
}

constexpr MatmulConfig GetSpecialMDLConfig(bool intrinsicsLimit = false, bool batchLoop = false,
                                           uint32_t doMTE2Preload = 0, bool isVecND2NZ = false,
                                           bool isPerTensor = false, bool hasAntiQuantOffset = false)
{
    MatmulConfig c = GetMDLConfig(intrinsicsLimit, batchLoop, doMTE2Preload, isVecND2NZ, isPerTensor,
                                  hasAntiQuantOffset);
    c.doMultiDataLoad = false;
    c.doSpecialMDL = true;
    return c;
}

constexpr MatmulConfig GetIBShareNormConfig(bool intrinsicsLimit = false, bool batchLoop = false,
                                            bool isVecND2NZ = false, BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1,
                                            bool isDoubleCache = false, bool enUnitFlag = true)
{
    MatmulConfig c = GetNormalConfig(intrinsicsLimit, batchLoop, isVecND2NZ, bmmMode);
    c.doNorm = false;
    c.doIBShareNorm = true;
    c.enableDoubleCache = isDoubleCache;
    c.enUnitFlag = enUnitFlag;
    return c;
}

constexpr MatmulConfig GetBasicConfig(uint32_t basicM, uint32_t basicN, uint32_t basicK, bool intrinsicsLimit = false,
                                      bool batchLoop = false, BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1)
{
    MatmulConfig c = GetNormalConfig(intrinsicsLimit, batchLoop, false, bmmMode);
    c.doNorm = false;
    c.doBasicBlock = true;
    c.basicM = basicM;
    c.basicN = basicN;
    c.basicK = basicK;
    return c;
}

constexpr MatmulConfig CFG_NORM = GetNormalConfig();
constexpr MatmulConfig CFG_MDL = GetMDLConfig();
constexpr MatmulConfig CFG_IBSHARE_NORM = GetIBShareNormConfig();
constexpr MatmulConfig MM_CFG_BB = GetBasicConfig(128, 128, 128);

namespace megafuse_emu {

constexpr void ApplyMM(MatmulConfig& c, const MatmulShapeParams& p)
{
    c.singleCoreM = p.singleCoreM; c.singleCoreN = p.singleCoreN; c.singleCoreK = p.singleCoreK;
    c.basicM = p.basicM; c.basicN = p.basicN; c.basicK = p.basicK;
}
constexpr void ApplyMM(MatmulConfig& c, const MatmulQuantParams& p)
{
    c.isPerTensor = p.isPerTensor; c.hasAntiQuantOffset = p.hasAntiQuantOffset;
}
constexpr void ApplyMM(MatmulConfig& c, const MatmulBatchParams& p)
{
    c.isNBatch = p.isNBatch; c.batchMode = p.batchMode; c.isBiasBatch = p.isBiasBatch; c.bmmOutMode = p.bmmOutMode;
}
constexpr void ApplyMM(MatmulConfig& c, const MatmulFuncParams& p)
{
    c.intrinsicsCheck = p.intrinsicsCheck; c.enVecND2NZ = p.enVecND2NZ; c.enableDoubleCache = p.enableDoubleCache;
    c.enableL1CacheUB = p.enableL1CacheUB; c.doMTE2Preload = p.doMTE2Preload; c.iterateOrder = p.iterateOrder;
    c.scheduleType = p.scheduleType; c.enableReuse = p.enableReuse; c.enableUBReuse = p.enableUBReuse;
    c.isPartialOutput = p.isPartialOutput; c.isA2B2Shared = p.isA2B2Shared;
    c.isEnableChannelSplit = p.isEnableChannelSplit; c.enableKdimReorderLoad = p.enableKdimReorderLoad;
    c.enableL1BankConflictOptimise = p.enableL1BankConflictOptimise; c.enableRelu = p.enableRelu;
    c.decompMode = p.decompMode;
}
constexpr void ApplyMM(MatmulConfig& c, const MatmulBiasParams& p) { c.enableSetBias = p.enableSetBias; }

}  // namespace megafuse_emu

template <MatmulConfigMode MODE, typename... Params>
constexpr MatmulConfig GetMMConfig(Params&&... params)
{
    MatmulConfig c = MODE == MatmulConfigMode::CONFIG_MDL         ? CFG_MDL
                     : MODE == MatmulConfigMode::CONFIG_SPECIALMDL ? GetSpecialMDLConfig()
                     : MODE == MatmulConfigMode::CONFIG_IBSHARE    ? CFG_IBSHARE_NORM
                                                                   : CFG_NORM;
    (megafuse_emu::ApplyMM(c, params), ...);
    return c;
}
