// The [A, R] normalisations of the devkit's advanced API (its LayerNorm / Normalize pages):
//   LayerNorm<U, T, isReuseSource, LayerNormConfig{isNoBeta, isNoGamma, isOnlyOutput, isOutputRstd}>(
//       y, mean, rstd, x, gamma, beta, epsilon, [tmp,] LayerNormPara{aLength, rLength,
//       rLengthWithPadding}, LayerNormSeparateTiling): per row of x (rLength values,
//       rLengthWithPadding apart) mean, rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * gamma + beta.
//       isOutputRstd = false (the variance instead) is Ascend 950 only and isOnlyOutput must be false
//       (the tiling page): both refused.
//   Normalize<U, T, isReuseSource, NormalizeConfig{reducePattern, aLength, isNoBeta, isNoGamma,
//       isOnlyOutput}>(y, rstd, mean, variance, x, gamma, beta, [tmp,] epsilon, NormalizePara):
//       the same with the given mean and variance; rstd is output unless isOnlyOutput.
// T: x / y (half, float), U: gamma / beta (float, or half with T half); mean / rstd / variance float.
// The padding columns of y are not written. Each element is computed in double, rounded once.
// Host: the 7-argument GetLayerNormMaxMinTmpSize, GetLayerNormNDTilingInfo(..., isComputeRstd,
// LayerNormSeparateTiling) (the shape is {A, R}; the kernel checks the call's aLength against it),
// GetNormalizeMaxMinTmpSize (megafuse's tmp model, adv_shape.h).
// AscendCUtils::SetOverflow(mode): CTRL[48] per the Mmad page -- 1: non-saturating (inf/nan kept),
// 0: saturating (inf -> +-MAX, nan -> 0). The emulator always computes the non-saturating way;
// the saturating mode is accepted but not applied (results that overflow stay inf / nan).
#pragma once

#include "adv_norm.h"

struct LayerNormSeparateTiling {
    uint32_t aLength = 0, rLength = 0, halfAddRepeatTimes = 0, rHeadLength = 0;
    float k2Rec = 0, k2RRec = 0;
    uint32_t inputXSize = 0, meanVarSize = 0, numberOfTmpBuf = 0, varianceTmpTensorPos = 0, varianceTmpTensorSize = 0,
             tmpBufSize = 0, oneTmpSize = 0, firstTmpStartPos = 0, secondTmpStartPos = 0, thirdTmpStartPos = 0,
             loopRound = 0, inputRoundSize = 0, inputTailSize = 0, inputTailPos = 0, meanVarRoundSize = 0,
             meanVarTailSize = 0, meanVarTailPos = 0, arCurLength = 0, aCurLength = 0;
    float rValueBack = 0;
};
namespace optiling {
using ::LayerNormSeparateTiling;
}
namespace AscendC::tiling {
using ::LayerNormSeparateTiling;
}

namespace AscendC {

struct LayerNormConfig {
    bool isNoBeta = false;
    bool isNoGamma = false;
    bool isOnlyOutput = false;
    bool isOutputRstd = true;
};
constexpr LayerNormConfig LNCFG_NORM = {false, false, false, true};
struct LayerNormPara {
    uint32_t aLength;
    uint32_t rLength;
    uint32_t rLengthWithPadding;
};
struct NormalizeConfig {
    ReducePattern reducePattern = ReducePattern::AR;
    int32_t aLength = -1;
    bool isNoBeta = false;
    bool isNoGamma = false;
    bool isOnlyOutput = false;
};
constexpr NormalizeConfig NLCFG_NORM = {ReducePattern::AR, -1, false, false, false};
struct NormalizePara {
    uint32_t aLength;
    uint32_t rLength;
    uint32_t rLengthWithPadding;
};

struct AscendCUtils {
    static void SetOverflow(uint64_t ctrlValue, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        megafuse_emu::Core(loc);
        if (ctrlValue > 1)
            megafuse_emu::Fail(loc, megafuse_emu::Str("AscendCUtils::SetOverflow(", ctrlValue,
                                                      "): CTRL[48] takes 0 (saturating) or 1 (non-saturating)"));
    }
};

inline void GetLayerNormMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const bool, const bool,
                                      const bool isOnlyOutput, uint32_t& maxValue, uint32_t& minValue)
{
    (void)isOnlyOutput;
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 1, maxValue, minValue);
}
inline void GetLayerNormNDTilingInfo(const TensorShape& s, const uint32_t stackBufferSize, const uint32_t, const bool,
                                     const bool, LayerNormSeparateTiling& t)
{
    t = LayerNormSeparateTiling{};
    t.aLength = static_cast<uint32_t>(s.GetDim(0));
    t.rLength = static_cast<uint32_t>(s.GetDim(s.GetDimNum() - 1));
    t.inputXSize = t.aLength * t.rLength;
    t.meanVarSize = t.aLength;
    t.tmpBufSize = stackBufferSize / 4;
    t.loopRound = 1;
    t.arCurLength = t.inputXSize;
    t.aCurLength = t.aLength;
    t.rValueBack = t.rLength ? 1.0f / static_cast<float>(t.rLength) : 0.0f;
}
inline void GetNormalizeMaxMinTmpSize(const TensorShape& s, const uint32_t typeSizeU, const uint32_t typeSizeT,
                                      const bool, const bool, const bool, uint32_t& maxValue, uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), std::max(typeSizeU, typeSizeT), 1, maxValue,
                              minValue);
}

}  // namespace AscendC

namespace megafuse_emu {

// mean / var: given (Normalize) or computed (LayerNorm, given == false).
template <typename U, typename T>
void NormArImpl(const char* api, bool given, bool noBeta, bool noGamma, bool onlyOutput,
                const AscendC::LocalTensor<T>& y, const AscendC::LocalTensor<float>* rstd,
                const AscendC::LocalTensor<float>& mean, const AscendC::LocalTensor<float>* var,
                const AscendC::LocalTensor<T>& x, const AscendC::LocalTensor<U>& gamma, const AscendC::LocalTensor<U>& beta,
                const AscendC::LocalTensor<uint8_t>* tmp, double eps, uint32_t a, uint32_t r, uint32_t rp,
                const Loc& loc)
{
    static_assert(kHalfOrFloat<T> && kHalfOrFloat<U> && sizeof(U) >= sizeof(T),
                  "takes half / float x with gamma / beta at least as precise");
    Core(loc);
    if (a == 0 || r == 0 || r > rp) Fail(loc, Str(api, ": para {aLength ", a, ", rLength ", r, ", rLengthWithPadding ", rp, "} is not valid"));
    if ((static_cast<uint64_t>(rp) * sizeof(T)) % 32 != 0)
        Fail(loc, Str(api, ": rLengthWithPadding ", rp, " is not 32-byte aligned"));
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&y.ref_, &x.ref_, &mean.ref_}, loc);
    uint8_t* yb = SmOperand(y, static_cast<uint64_t>(a) * rp, api, "output", loc);
    const uint8_t* xb = SmOperand(x, static_cast<uint64_t>(a) * rp, api, "inputX", loc);
    uint8_t* mb = SmOperand(mean, a, api, given ? "inputMean" : "outputMean", loc);
    const uint8_t* vb = var ? SmOperand(*var, a, api, "inputVariance", loc) : nullptr;
    uint8_t* rb = rstd && !onlyOutput ? SmOperand(*rstd, a, api, "outputRstd", loc) : nullptr;
    const uint8_t* gb = noGamma ? nullptr : SmOperand(gamma, r, api, "gamma", loc);
    const uint8_t* bb = noBeta ? nullptr : SmOperand(beta, r, api, "beta", loc);
    std::vector<double> xv(r);
    for (uint64_t i = 0; i < a; ++i) {
        uint8_t st = kWritten;
        double m = 0, v = 0;
        for (uint64_t j = 0; j < r; ++j) xv[j] = LdChecked<T>(xb, i * rp + j, st, api, "inputX", loc);
        if (given) {
            m = LdChecked<float>(mb, i, st, api, "inputMean", loc);
            v = LdChecked<float>(vb, i, st, api, "inputVariance", loc);
        } else {
            for (uint64_t j = 0; j < r; ++j) m += xv[j];
            m /= r;
            for (uint64_t j = 0; j < r; ++j) v += (xv[j] - m) * (xv[j] - m);
            v /= r;
            NormPut<float>(mb, i, m, st);
        }
        const double rs = 1.0 / std::sqrt(v + eps);
        if (rb != nullptr) NormPut<float>(rb, i, rs, st);
        for (uint64_t j = 0; j < r; ++j) {
            uint8_t sj = st;
            double o = (xv[j] - m) * rs;
            if (gb) o *= static_cast<double>(LdChecked<U>(gb, j, sj, api, "gamma", loc));
            if (bb) o += static_cast<double>(LdChecked<U>(bb, j, sj, api, "beta", loc));
            NormPut<T>(yb, i * rp + j, o, sj);
        }
    }
    CountVector(static_cast<uint64_t>(a) * rp * sizeof(T) * 4, false);
}

inline void CheckSeparateTiling(const char* api, const LayerNormSeparateTiling& t, const AscendC::LayerNormPara& p,
                                const Loc& loc)
{
    if (t.aLength == 0 || t.rLength == 0)
        Fail(loc, Str(api, ": the LayerNormSeparateTiling is empty (fill it with GetLayerNormNDTilingInfo)"));
    if (p.aLength > t.aLength || p.rLength != t.rLength)
        Fail(loc, Str(api, ": para {aLength ", p.aLength, ", rLength ", p.rLength, "} does not fit the tiling's {A ",
                      t.aLength, ", R ", t.rLength, "} (aLength may be smaller, rLength must match)"));
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename U, typename T, bool isReuseSource = false, const LayerNormConfig& config = LNCFG_NORM>
void LayerNorm(const LocalTensor<T>& output, const LocalTensor<float>& outputMean, const LocalTensor<float>& outputRstd,
               const LocalTensor<T>& inputX, const LocalTensor<U>& gamma, const LocalTensor<U>& beta, const float epsilon,
               const LocalTensor<uint8_t>& sharedTmpBuffer, const LayerNormPara& para,
               const LayerNormSeparateTiling& tiling, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(config.isOutputRstd, "LayerNorm: the variance output (isOutputRstd = false) is Ascend 950 only");
    static_assert(!config.isOnlyOutput, "LayerNorm: isOnlyOutput must be false (the tiling page)");
    megafuse_emu::CheckSeparateTiling("LayerNorm", tiling, para, loc);
    megafuse_emu::NormArImpl<U, T>("LayerNorm", false, config.isNoBeta, config.isNoGamma, false, output, &outputRstd,
                                   outputMean, nullptr, inputX, gamma, beta, &sharedTmpBuffer, epsilon, para.aLength,
                                   para.rLength, para.rLengthWithPadding, loc);
}
template <typename U, typename T, bool isReuseSource = false, const LayerNormConfig& config = LNCFG_NORM>
void LayerNorm(const LocalTensor<T>& output, const LocalTensor<float>& outputMean, const LocalTensor<float>& outputRstd,
               const LocalTensor<T>& inputX, const LocalTensor<U>& gamma, const LocalTensor<U>& beta, const float epsilon,
               const LayerNormPara& para, const LayerNormSeparateTiling& tiling,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(config.isOutputRstd, "LayerNorm: the variance output (isOutputRstd = false) is Ascend 950 only");
    static_assert(!config.isOnlyOutput, "LayerNorm: isOnlyOutput must be false (the tiling page)");
    megafuse_emu::CheckSeparateTiling("LayerNorm", tiling, para, loc);
    megafuse_emu::NormArImpl<U, T>("LayerNorm", false, config.isNoBeta, config.isNoGamma, false, output, &outputRstd,
                                   outputMean, nullptr, inputX, gamma, beta,
                                   static_cast<const LocalTensor<uint8_t>*>(nullptr), epsilon, para.aLength,
                                   para.rLength, para.rLengthWithPadding, loc);
}

template <typename U, typename T, bool isReuseSource = false, const NormalizeConfig& config = NLCFG_NORM>
void Normalize(const LocalTensor<T>& output, const LocalTensor<float>& outputRstd, const LocalTensor<float>& inputMean,
               const LocalTensor<float>& inputVariance, const LocalTensor<T>& inputX, const LocalTensor<U>& gamma,
               const LocalTensor<U>& beta, const LocalTensor<uint8_t>& sharedTmpBuffer, const float epsilon,
               const NormalizePara& para, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(config.reducePattern == ReducePattern::AR, "Normalize supports ReducePattern::AR only");
    if (config.aLength != -1 && static_cast<uint32_t>(config.aLength) != para.aLength)
        megafuse_emu::Fail(loc, megafuse_emu::Str("Normalize: config.aLength ", config.aLength, " differs from para.aLength ",
                                                  para.aLength));
    megafuse_emu::NormArImpl<U, T>("Normalize", true, config.isNoBeta, config.isNoGamma, config.isOnlyOutput, output,
                                   &outputRstd, inputMean, &inputVariance, inputX, gamma, beta, &sharedTmpBuffer,
                                   epsilon, para.aLength, para.rLength, para.rLengthWithPadding, loc);
}
template <typename U, typename T, bool isReuseSource = false, const NormalizeConfig& config = NLCFG_NORM>
void Normalize(const LocalTensor<T>& output, const LocalTensor<float>& outputRstd, const LocalTensor<float>& inputMean,
               const LocalTensor<float>& inputVariance, const LocalTensor<T>& inputX, const LocalTensor<U>& gamma,
               const LocalTensor<U>& beta, const float epsilon, const NormalizePara& para,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(config.reducePattern == ReducePattern::AR, "Normalize supports ReducePattern::AR only");
    if (config.aLength != -1 && static_cast<uint32_t>(config.aLength) != para.aLength)
        megafuse_emu::Fail(loc, megafuse_emu::Str("Normalize: config.aLength ", config.aLength, " differs from para.aLength ",
                                                  para.aLength));
    megafuse_emu::NormArImpl<U, T>("Normalize", true, config.isNoBeta, config.isNoGamma, config.isOnlyOutput, output,
                                   &outputRstd, inputMean, &inputVariance, inputX, gamma, beta,
                                   static_cast<const LocalTensor<uint8_t>*>(nullptr), epsilon, para.aLength,
                                   para.rLength, para.rLengthWithPadding, loc);
}

}  // namespace AscendC
