// WelfordUpdate / WelfordFinalize of the devkit's advanced API (its pages and parameter tables):
//   WelfordUpdate<T, U, isReuseSource, WelfordUpdateConfig{isInplace}>(outMean, outVar, inMean, inVar,
//       x, [tmp,] WelfordUpdateParam{rnLength, abLength, abComputeLength, nRec}), shapes
//       [rnLength, abLength]: for the first abComputeLength elements of each row
//           mean' = mean + (x - mean) * nRec,   M' = M + (x - mean) * (x - mean')
//       (Welford's step; M is the running sum of squared deviations, "方差中间结果"), computed
//       as the float vector instructions that formula takes -- Sub, Muls, Add, Sub, Mul, Add --
//       each rounding to float as a vector instruction does (not once from double: the
//       device's result is the rounded step sequence). Past
//       abComputeLength: isInplace copies the inputs to the outputs, otherwise nothing is written.
//   WelfordFinalize<isReuseSource>(outMean, outVar, mean[abLength], M[abLength], [counts,] [tmp,] para):
//       the lanes' partial results pooled: with c_j = counts[j] (or headCount for the first
//       headCountLength lanes and tailCount for the next tailCountLength without counts),
//           Mean = rRec * sum_j c_j * mean_j,   Var = rRec * sum_j (M_j + c_j * (mean_j - Mean)^2)
//       (rRec = 1/R, R the reduce length, as the parameter table defines it). The page's formula
//       images are not in the public repository (LFS objects); this is the standard pooled-variance
//       combination that the parameters describe, and it reproduces the devkit sample's golden.
//       outMean / outVar get one float (element 0).
// U (the statistics) is float; T (x) half or float (converted to float first). WelfordFinalize
// rounds each output once from double.
#pragma once

#include "adv_norm.h"  // SmOperand, NormPut

namespace AscendC {

struct WelfordUpdateConfig {
    bool isInplace = false;
};
constexpr WelfordUpdateConfig WFUPDATE_DEFAULT_CFG = {false};
struct WelfordUpdateParam {
    uint32_t rnLength;
    uint32_t abLength;
    uint32_t abComputeLength;
    float nRec;
};
struct WelfordFinalizeConfig {
    bool isCorrection = false;
};
constexpr WelfordFinalizeConfig WFFINALIZE_DEFAULT_CFG = {false};
struct WelfordFinalizePara {
    uint32_t rnLength;
    uint32_t abLength;
    uint32_t headCount;
    uint32_t headCountLength;
    uint32_t tailCount;
    uint32_t tailCountLength;
    float abRec;
    float rRec;
    float rRecWithCorrection = 0;  // Ascend 950 only (isCorrection); unused here
};

inline void GetWelfordUpdateMaxMinTmpSize(const TensorShape& s, const uint32_t typeSizeT, const uint32_t typeSizeU,
                                          const bool, const bool, uint32_t& maxValue, uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), std::max(typeSizeT, typeSizeU), 1, maxValue,
                              minValue);
}
inline void GetWelfordFinalizeMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const bool,
                                            uint32_t& maxValue, uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 1, maxValue, minValue);
}

}  // namespace AscendC

namespace megafuse_emu {

template <typename T, typename U>
void WelfordUpdateImpl(bool inplace, const AscendC::LocalTensor<U>& outMean, const AscendC::LocalTensor<U>& outVar,
                       const AscendC::LocalTensor<U>& inMean, const AscendC::LocalTensor<U>& inVar,
                       const AscendC::LocalTensor<T>& x, const AscendC::LocalTensor<uint8_t>* tmp,
                       const AscendC::WelfordUpdateParam& p, const Loc& loc)
{
    static_assert(kHalfOrFloat<T> && std::is_same_v<U, float>, "WelfordUpdate takes half/float x, float statistics");
    const char* api = "WelfordUpdate";
    Core(loc);
    if (p.rnLength == 0 || p.abLength == 0 || p.abComputeLength > p.abLength)
        Fail(loc, Str(api, ": para {rnLength ", p.rnLength, ", abLength ", p.abLength, ", abComputeLength ",
                      p.abComputeLength, "} is not valid"));
    if ((static_cast<uint64_t>(p.abLength) * sizeof(T)) % 32 != 0)
        Fail(loc, Str(api, ": abLength ", p.abLength, " is not 32-byte aligned"));
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&outMean.ref_, &outVar.ref_, &inMean.ref_, &inVar.ref_, &x.ref_}, loc);
    const uint64_t n = static_cast<uint64_t>(p.rnLength) * p.abLength;
    uint8_t* omb = SmOperand(outMean, n, api, "outputMean", loc);
    uint8_t* ovb = SmOperand(outVar, n, api, "outputVariance", loc);
    const uint8_t* imb = SmOperand(inMean, n, api, "inputMean", loc);
    const uint8_t* ivb = SmOperand(inVar, n, api, "inputVariance", loc);
    const uint8_t* xb = SmOperand(x, n, api, "inputX", loc);
    for (uint64_t r = 0; r < p.rnLength; ++r)
        for (uint64_t j = 0; j < p.abLength; ++j) {
            const uint64_t e = r * p.abLength + j;
            uint8_t st = kWritten;
            if (j >= p.abComputeLength) {
                if (!inplace) continue;
                const double m = LdChecked<U>(imb, e, st, api, "inputMean", loc);
                uint8_t sv = kWritten;
                const double v = LdChecked<U>(ivb, e, sv, api, "inputVariance", loc);
                St<U>(omb, e, static_cast<U>(m)); SetState(omb + e * 4, 4, st);
                St<U>(ovb, e, static_cast<U>(v)); SetState(ovb + e * 4, 4, sv);
                continue;
            }
            // float vector steps, each rounding: Sub, Muls, Add (mean), Sub, Mul, Add (M)
            const float m = LdChecked<U>(imb, e, st, api, "inputMean", loc);
            const float v = LdChecked<U>(ivb, e, st, api, "inputVariance", loc);
            const float xv = static_cast<float>(LdChecked<T>(xb, e, st, api, "inputX", loc));
            const float d = xv - m;
            const float t = d * p.nRec;
            const float m2 = m + t;
            const float d2 = xv - m2;
            const float t2 = d * d2;
            St<U>(omb, e, m2); SetState(omb + e * 4, 4, st);
            St<U>(ovb, e, v + t2); SetState(ovb + e * 4, 4, st);
        }
    CountVector(n * 4 * 5, false);
}

inline void WelfordFinalizeImpl(const AscendC::LocalTensor<float>& outMean, const AscendC::LocalTensor<float>& outVar,
                                const AscendC::LocalTensor<float>& mean, const AscendC::LocalTensor<float>& var,
                                const AscendC::LocalTensor<int32_t>* counts, const AscendC::LocalTensor<uint8_t>* tmp,
                                const AscendC::WelfordFinalizePara& p, const Loc& loc)
{
    const char* api = "WelfordFinalize";
    Core(loc);
    const uint64_t ab = p.abLength;
    if (ab == 0 || ab % 8 != 0) Fail(loc, Str(api, ": abLength ", ab, " must be a positive multiple of 8 (32 bytes)"));
    if (counts == nullptr && static_cast<uint64_t>(p.headCountLength) + p.tailCountLength != ab)
        Fail(loc, Str(api, ": without counts, headCountLength ", p.headCountLength, " + tailCountLength ",
                      p.tailCountLength, " must be abLength ", ab));
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&outMean.ref_, &outVar.ref_, &mean.ref_, &var.ref_}, loc);
    uint8_t* omb = SmOperand(outMean, 1, api, "outputMean", loc);
    uint8_t* ovb = SmOperand(outVar, 1, api, "outputVariance", loc);
    const uint8_t* mb = SmOperand(mean, ab, api, "inputMean", loc);
    const uint8_t* vb = SmOperand(var, ab, api, "inputVariance", loc);
    const uint8_t* cb = counts ? SmOperand(*counts, ab, api, "counts", loc) : nullptr;
    uint8_t st = kWritten;
    std::vector<double> c(ab), m(ab);
    double total = 0;
    for (uint64_t j = 0; j < ab; ++j) {
        c[j] = cb ? static_cast<double>(LdChecked<int32_t>(cb, j, st, api, "counts", loc))
                  : static_cast<double>(j < p.headCountLength ? p.headCount : p.tailCount);
        m[j] = LdChecked<float>(mb, j, st, api, "inputMean", loc);
        total += c[j] * m[j];
    }
    const double rr = static_cast<double>(p.rRec), mu = total * rr;
    double v = 0;
    for (uint64_t j = 0; j < ab; ++j)
        v += static_cast<double>(LdChecked<float>(vb, j, st, api, "inputVariance", loc)) + c[j] * (m[j] - mu) * (m[j] - mu);
    NormPut<float>(omb, 0, mu, st);
    NormPut<float>(ovb, 0, v * rr, st);
    CountVector(ab * 4 * 6, false);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T, typename U, bool isReuseSource = false, const WelfordUpdateConfig& config = WFUPDATE_DEFAULT_CFG>
void WelfordUpdate(const LocalTensor<U>& outputMean, const LocalTensor<U>& outputVariance, const LocalTensor<U>& inputMean,
                   const LocalTensor<U>& inputVariance, const LocalTensor<T>& inputX,
                   const LocalTensor<uint8_t>& sharedTmpBuffer, const WelfordUpdateParam& para,
                   megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::WelfordUpdateImpl(config.isInplace, outputMean, outputVariance, inputMean, inputVariance, inputX,
                                    &sharedTmpBuffer, para, loc);
}
template <typename T, typename U, bool isReuseSource = false, const WelfordUpdateConfig& config = WFUPDATE_DEFAULT_CFG>
void WelfordUpdate(const LocalTensor<U>& outputMean, const LocalTensor<U>& outputVariance, const LocalTensor<U>& inputMean,
                   const LocalTensor<U>& inputVariance, const LocalTensor<T>& inputX, const WelfordUpdateParam& para,
                   megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::WelfordUpdateImpl(config.isInplace, outputMean, outputVariance, inputMean, inputVariance, inputX,
                                    static_cast<const LocalTensor<uint8_t>*>(nullptr), para, loc);
}

template <bool isReuseSource = false>
void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                     const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                     const LocalTensor<uint8_t>& sharedTmpBuffer, WelfordFinalizePara& para,
                     megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::WelfordFinalizeImpl(outputMean, outputVariance, inputMean, inputVariance, nullptr, &sharedTmpBuffer,
                                      para, loc);
}
template <bool isReuseSource = false>
void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                     const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                     const LocalTensor<int32_t>& counts, const LocalTensor<uint8_t>& sharedTmpBuffer,
                     WelfordFinalizePara& para, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::WelfordFinalizeImpl(outputMean, outputVariance, inputMean, inputVariance, &counts, &sharedTmpBuffer,
                                      para, loc);
}
template <bool isReuseSource = false>
void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                     const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                     WelfordFinalizePara& para, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::WelfordFinalizeImpl(outputMean, outputVariance, inputMean, inputVariance, nullptr, nullptr, para, loc);
}
template <bool isReuseSource = false>
void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                     const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                     const LocalTensor<int32_t>& counts, WelfordFinalizePara& para,
                     megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::WelfordFinalizeImpl(outputMean, outputVariance, inputMean, inputVariance, &counts, nullptr, para, loc);
}

}  // namespace AscendC
