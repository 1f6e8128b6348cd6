// Normalisation APIs of the devkit's advanced API (semantics: its API pages and their formulas),
// ND data [B, S, H] (rows of hLength elements, originalHLength of them real; the padding is
// neither read nor written):
//   RmsNorm<T>(dst, src, gamma, [tmp,] epsilon, RmsNormTiling)
//       dst = x * gamma / sqrt(sum(x^2) * reciprocalOfHLength + epsilon)
//   DeepNorm<T>(dst, mean, variance, src, gx, beta, gamma, [tmp,] alpha, epsilon, DeepNormTiling)
//       LayerNorm of y = alpha * x + gx (the page's example output shows the third output is the
//       variance, though the parameter is named rstdLocal)
//   LayerNorm<T>(out, mean, variance, x, gamma, beta, [tmp,] epsilon, LayerNormTiling)
//       mean, variance over H; out = (x - mean) / sqrt(variance + eps) * gamma + beta
//   LayerNormGrad<T>(pdX, resForGamma, dy, x, variance, mean, gamma, [tmp,] epsilon, tiling)
//   LayerNormGradBeta<T>(pdGamma, pdBeta, resForGamma, dy, [tmp,] tiling)
//       pdGamma = sum over B*S of dy * resForGamma, pdBeta = sum over B*S of dy
// mean / variance are [B, S], packed. The kernel APIs take the shape from the tiling struct (as
// on the device); a zero shape is refused. Each output element is computed in double and rounded
// once. The tiling structs carry the devkit's documented fields (one struct for host and kernel);
// the host Get*TilingInfo fill the shape fields (the split fields describe one pass over all
// rows: the emulation does not split). Tmp-size queries: megafuse's model (adv_shape.h).
// PopStackBuffer<T, pos>(tensor): the rest of pos's memory after the TPipe buffers (the "stack");
// a later InitBuffer in that memory is refused, since it would hand out the same bytes.
#pragma once

#include "adv_softmax_ext.h"

struct RmsNormTiling {
    uint32_t bLength = 0, sLength = 0, hLength = 0, originalHLength = 0;
    float reciprocalOfHLength = 0;
    uint32_t mainBshLength = 0, mainBsLength = 0, mainBsLengthAlign = 0, loopRound = 0, inputTailPos = 0,
             tailBshLength = 0, tailBsLength = 0;
};
struct LayerNormTiling {
    uint32_t bLength = 0, sLength = 0, hLength = 0, originalHLength = 0, inputXSize = 0, meanVarSize = 0,
             numberOfTmpBuf = 0, meanTmpTensorPos = 0, meanTmpTensorSize = 0, varianceTmpTensorPos = 0,
             varianceTmpTensorSize = 0, tmpBufSize = 0, oneTmpSize = 0, firstTmpStartPos = 0, secondTmpStartPos = 0,
             thirdTmpStartPos = 0, loopRound = 0, inputRoundSize = 0, inputTailSize = 0, inputTailPos = 0,
             meanVarRoundSize = 0, meanVarTailSize = 0, meanVarTailPos = 0, bshCurLength = 0, bsCurLength = 0;
    float lastDimValueBack = 0;
};
struct DeepNormTiling : LayerNormTiling {};
struct LayerNormGradTiling {
    uint32_t stackBufferSize = 0, bLength = 0, sLength = 0, hLength = 0, originalHLength = 0, oneCalSize = 0,
             nohCalSize = 0, loopNum = 0, tailSize = 0, nohTailSize = 0, tmpTensorBSHPos = 0, tmpTensorBSHSize = 0,
             pdVarTensorPos = 0, pdVarTensorSize = 0, pdMeanTensorPos = 0, pdMeanTensorSize = 0, x1TensorPos = 0,
             x1TensorSize = 0, x2TensorPos = 0, x2TensorSize = 0, x3TensorPos = 0, x3TensorSize = 0,
             tmpTensorPos = 0, tmpTensorSize = 0, tmpTensor1Pos = 0, tmpTensor1Size = 0, tmpTensor2Pos = 0,
             tmpTensor2Size = 0, lastDimValueBack = 0, lastDimValueBackMulTwo = 0;
};
struct LayerNormGradBetaTiling {
    uint32_t stackBufferSize = 0, bLength = 0, sLength = 0, hLength = 0, originalHLength = 0, bshLength = 0,
             bsLength = 0, oneCalSize = 0, numberOfTmpBuf = 0, loopRound = 0, inputTailSize = 0, inputTailPos = 0,
             bsTailSize = 0, bshCurLength = 0, bsCurLength = 0, gammaTempTensorPos = 0, betaTempTensorPos = 0,
             inputDyTmpTensorPos = 0, resForGammaTmpTensorPos = 0, reserved = 0;
};
namespace optiling {
using ::DeepNormTiling;
using ::LayerNormGradBetaTiling;
using ::LayerNormGradTiling;
using ::LayerNormTiling;
using ::RmsNormTiling;
}  // namespace optiling
namespace AscendC::tiling {
using ::DeepNormTiling;
using ::LayerNormGradBetaTiling;
using ::LayerNormGradTiling;
using ::LayerNormTiling;
using ::RmsNormTiling;
}  // namespace AscendC::tiling

namespace megafuse_emu {

// [B, S, H] of a shape (a 2-D [BS, H] shape counts as B = 1).
inline void NormBsh(const AscendC::TensorShape& s, uint32_t& b, uint32_t& sl, uint32_t& h)
{
    const size_t n = s.GetDimNum();
    h = n ? static_cast<uint32_t>(s.GetDim(n - 1)) : 0;
    sl = n >= 2 ? static_cast<uint32_t>(s.GetDim(n - 2)) : 1;
    b = n >= 3 ? static_cast<uint32_t>(s.GetShapeSize() / (static_cast<int64_t>(sl) * std::max<uint32_t>(h, 1))) : 1;
}

// The LayerNorm / LayerNormGrad(Beta) tiling shapes: {B, S, storageHLength, originHLength}
// (their tiling pages), or [B, S, H] with originH = H.
inline void NormBshh(const AscendC::TensorShape& s, uint32_t& b, uint32_t& sl, uint32_t& h, uint32_t& oh)
{
    if (s.GetDimNum() == 4) {
        b = static_cast<uint32_t>(s.GetDim(0)); sl = static_cast<uint32_t>(s.GetDim(1));
        h = static_cast<uint32_t>(s.GetDim(2)); oh = static_cast<uint32_t>(s.GetDim(3));
        return;
    }
    NormBsh(s, b, sl, h);
    oh = h;
}
inline uint64_t NormElems(const AscendC::TensorShape& s)
{
    uint32_t b = 0, sl = 0, h = 0, oh = 0;
    NormBshh(s, b, sl, h, oh);
    return static_cast<uint64_t>(b) * sl * h;
}

template <typename Tiling>
void FillLayerNormTiling(uint32_t b, uint32_t sl, uint32_t h, uint32_t oh, uint32_t stack, Tiling& t)
{
    t = Tiling{};
    t.bLength = b; t.sLength = sl; t.hLength = h; t.originalHLength = oh;
    t.inputXSize = b * sl * h; t.meanVarSize = b * sl;
    t.tmpBufSize = stack / 4; t.oneTmpSize = t.tmpBufSize; t.loopRound = 1;
    t.inputRoundSize = t.inputXSize; t.meanVarRoundSize = t.meanVarSize;
    t.bshCurLength = t.inputXSize; t.bsCurLength = t.meanVarSize;
    t.lastDimValueBack = oh ? 1.0f / static_cast<float>(oh) : 0.0f;
}

struct NormShape {
    uint64_t rows, h, oh;
};

inline NormShape NormShapeOf(const char* api, uint32_t b, uint32_t s, uint32_t h, uint32_t oh, uint32_t esize,
                             const Loc& loc)
{
    if (b == 0 || s == 0 || h == 0 || oh == 0 || oh > h)
        Fail(loc, Str(api, ": the tiling's shape [B, S, H] = [", b, ", ", s, ", ", h, "] (original H ", oh,
                      ") is not valid (fill it with the host tiling function)"));
    if ((static_cast<uint64_t>(h) * esize) % 32 != 0) Fail(loc, Str(api, ": H ", h, " is not 32-byte aligned"));
    return {static_cast<uint64_t>(b) * s, h, oh};
}

template <typename T>
void NormPut(uint8_t* b, uint64_t i, double v, uint8_t st)
{
    St<T>(b, i, static_cast<T>(static_cast<float>(v)));
    SetState(b + i * sizeof(T), sizeof(T), st);
}

// LayerNorm / DeepNorm (alpha != nullptr: y = alpha * x + gx).
template <typename T>
void LayerNormImpl(const char* api, const AscendC::LocalTensor<T>& out, const AscendC::LocalTensor<T>& mean,
                   const AscendC::LocalTensor<T>& var, const AscendC::LocalTensor<T>& x,
                   const AscendC::LocalTensor<T>* gx, const AscendC::LocalTensor<T>& gamma,
                   const AscendC::LocalTensor<T>& beta, const AscendC::LocalTensor<uint8_t>* tmp, const double* alpha,
                   double eps, const LayerNormTiling& t, const Loc& loc)
{
    static_assert(kHalfOrFloat<T>, "takes half or float");
    Core(loc);
    const NormShape n = NormShapeOf(api, t.bLength, t.sLength, t.hLength, t.originalHLength, sizeof(T), loc);
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&out.ref_, &x.ref_, &mean.ref_, &var.ref_}, loc);
    AdvNoOverlap(api, out.ref_, x.ref_, "src", loc);
    uint8_t* ob = SmOperand(out, n.rows * n.h, api, "dst", loc);
    uint8_t* mb = SmOperand(mean, n.rows, api, "dstMean", loc);
    uint8_t* vb = SmOperand(var, n.rows, api, "dstVariance", loc);
    const uint8_t* xb = SmOperand(x, n.rows * n.h, api, "src", loc);
    const uint8_t* gxb = gx ? SmOperand(*gx, n.rows * n.h, api, "srcGx", loc) : nullptr;
    const uint8_t* gb = SmOperand(gamma, n.h, api, "srcGamma", loc);
    const uint8_t* bb = SmOperand(beta, n.h, api, "srcBeta", loc);
    std::vector<double> y(n.oh);
    for (uint64_t i = 0; i < n.rows; ++i) {
        uint8_t st = kWritten;
        double m = 0, v = 0;
        for (uint64_t j = 0; j < n.oh; ++j) {
            y[j] = LdChecked<T>(xb, i * n.h + j, st, api, "src", loc);
            if (gxb) y[j] = *alpha * y[j] + static_cast<double>(LdChecked<T>(gxb, i * n.h + j, st, api, "srcGx", loc));
            m += y[j];
        }
        m /= static_cast<double>(n.oh);
        for (uint64_t j = 0; j < n.oh; ++j) v += (y[j] - m) * (y[j] - m);
        v /= static_cast<double>(n.oh);
        const double r = 1.0 / std::sqrt(v + eps);
        for (uint64_t j = 0; j < n.oh; ++j) {
            uint8_t sj = st;
            const double gj = LdChecked<T>(gb, j, sj, api, "srcGamma", loc), bj = LdChecked<T>(bb, j, sj, api, "srcBeta", loc);
            NormPut<T>(ob, i * n.h + j, (y[j] - m) * r * gj + bj, sj);
        }
        NormPut<T>(mb, i, m, st);
        NormPut<T>(vb, i, v, st);
    }
    CountVector(n.rows * n.h * sizeof(T) * 4, false);
}

}  // namespace megafuse_emu

namespace AscendC {

struct LayerNormGradShapeInfo {
    DataFormat dataFormat = DataFormat::ND;
};

// Host queries (megafuse's tmp model: one scratch vector of one row minimum, of all rows maximum).
inline bool GetRmsNormMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, uint32_t& maxValue,
                                    uint32_t& minValue, const bool isBasicBlock = false)
{
    uint32_t b = 0, sl = 0, h = 0;
    megafuse_emu::NormBsh(s, b, sl, h);
    if (isBasicBlock && (h % 64 != 0 || h >= 2048 || (b * sl) % 8 != 0)) return false;
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 1, maxValue, minValue);
    return true;
}
inline bool GetRmsNormTilingInfo(const TensorShape& s, const TensorShape& ori, const uint32_t stackBufferByteSize,
                                 const uint32_t typeSize, RmsNormTiling& t, const bool isBasicBlock = false)
{
    uint32_t mx = 0, mn = 0;
    if (!GetRmsNormMaxMinTmpSize(s, typeSize, mx, mn, isBasicBlock) || stackBufferByteSize < mn) return false;
    t = RmsNormTiling{};
    uint32_t ob = 0, os = 0;
    megafuse_emu::NormBsh(s, t.bLength, t.sLength, t.hLength);
    megafuse_emu::NormBsh(ori, ob, os, t.originalHLength);
    if (t.originalHLength == 0) return false;
    t.reciprocalOfHLength = 1.0f / static_cast<float>(t.originalHLength);
    t.mainBsLength = t.bLength * t.sLength;
    t.mainBshLength = t.mainBsLength * t.hLength;
    t.mainBsLengthAlign = (t.mainBsLength + 7) / 8 * 8;
    t.loopRound = 1;
    t.inputTailPos = t.mainBshLength;
    return true;
}
inline bool GetDeepNormMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const bool, const bool isBasicBlock,
                                     uint32_t& maxValue, uint32_t& minValue)
{
    uint32_t b = 0, sl = 0, h = 0;
    megafuse_emu::NormBsh(s, b, sl, h);
    if (isBasicBlock && (h % 64 != 0 || h > 2040 || (b * sl) % 8 != 0)) return false;
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 1, maxValue, minValue);
    return true;
}
inline bool GetDeepNormTilingInfo(const TensorShape& s, const TensorShape& ori, const uint32_t stackBufferSize,
                                  const uint32_t typeSize, const bool isReuseSource, const bool isBasicBlock,
                                  DeepNormTiling& t)
{
    uint32_t mx = 0, mn = 0;
    if (!GetDeepNormMaxMinTmpSize(s, typeSize, isReuseSource, isBasicBlock, mx, mn) || stackBufferSize < mn) return false;
    uint32_t b = 0, sl = 0, h = 0, ob = 0, os = 0, oh = 0;
    megafuse_emu::NormBsh(s, b, sl, h);
    megafuse_emu::NormBsh(ori, ob, os, oh);
    megafuse_emu::FillLayerNormTiling(b, sl, h, oh, stackBufferSize, t);
    return true;
}
inline void GetLayerNormMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                      uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(megafuse_emu::NormElems(s), typeSize, 1, maxValue, minValue);
}
inline void GetLayerNormNDTilingInfo(const TensorShape& s, const uint32_t stackBufferSize, const uint32_t,
                                     const bool, LayerNormTiling& t)
{
    uint32_t b = 0, sl = 0, h = 0, oh = 0;
    megafuse_emu::NormBshh(s, b, sl, h, oh);
    megafuse_emu::FillLayerNormTiling(b, sl, h, oh, stackBufferSize, t);
}
inline void GetLayerNormGradMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const bool,
                                          uint32_t& maxValue, uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(megafuse_emu::NormElems(s), typeSize, 1, maxValue, minValue);
}
inline void GetLayerNormGradNDTilingInfo(const TensorShape& s, const uint32_t stackBufferSize, const uint32_t,
                                         const bool, LayerNormGradTiling& t)
{
    t = LayerNormGradTiling{};
    megafuse_emu::NormBshh(s, t.bLength, t.sLength, t.hLength, t.originalHLength);
    t.stackBufferSize = stackBufferSize;
    t.oneCalSize = t.bLength * t.sLength * t.hLength;
    t.nohCalSize = t.bLength * t.sLength;
    t.loopNum = 1;
}
inline void GetLayerNormGradBetaMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const bool,
                                              uint32_t& maxValue, uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(megafuse_emu::NormElems(s), typeSize, 1, maxValue, minValue);
}
inline void GetLayerNormGradBetaNDTilingInfo(const TensorShape& s, const uint32_t stackBufferSize, const uint32_t,
                                             const bool, LayerNormGradBetaTiling& t)
{
    t = LayerNormGradBetaTiling{};
    megafuse_emu::NormBshh(s, t.bLength, t.sLength, t.hLength, t.originalHLength);
    t.stackBufferSize = stackBufferSize;
    t.bsLength = t.bLength * t.sLength;
    t.bshLength = t.bsLength * t.hLength;
    t.oneCalSize = t.bshLength;
    t.loopRound = 1;
    t.bshCurLength = t.bshLength;
    t.bsCurLength = t.bsLength;
}

template <typename T, bool isBasicBlock = false>
void RmsNorm(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& gamma,
             const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon, const RmsNormTiling& t,
             megafuse_emu::Loc loc = megafuse_emu::Loc::current());
template <typename T, bool isBasicBlock = false>
void RmsNorm(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& gamma, const T epsilon,
             const RmsNormTiling& t, megafuse_emu::Loc loc = megafuse_emu::Loc::current());

}  // namespace AscendC

namespace megafuse_emu {

template <typename T>
void RmsNormImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                 const AscendC::LocalTensor<T>& gamma, const AscendC::LocalTensor<uint8_t>* tmp, double eps,
                 const RmsNormTiling& t, const Loc& loc)
{
    static_assert(kHalfOrFloat<T>, "takes half or float");
    const char* api = "RmsNorm";
    Core(loc);
    const NormShape n = NormShapeOf(api, t.bLength, t.sLength, t.hLength, t.originalHLength, sizeof(T), loc);
    if (!(t.reciprocalOfHLength > 0.0f))
        Fail(loc, Str(api, ": the tiling's reciprocalOfHLength is ", t.reciprocalOfHLength, " (fill it with GetRmsNormTilingInfo)"));
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&dst.ref_, &src.ref_, &gamma.ref_}, loc);
    AdvNoOverlap(api, dst.ref_, gamma.ref_, "gamma", loc);
    uint8_t* db = SmOperand(dst, n.rows * n.h, api, "dst", loc);
    const uint8_t* sb = SmOperand(src, n.rows * n.h, api, "src", loc);
    const uint8_t* gb = SmOperand(gamma, n.h, api, "gamma", loc);
    std::vector<double> x(n.oh);
    for (uint64_t i = 0; i < n.rows; ++i) {
        uint8_t st = kWritten;
        double ss = 0;
        for (uint64_t j = 0; j < n.oh; ++j) {
            x[j] = LdChecked<T>(sb, i * n.h + j, st, api, "src", loc);
            ss += x[j] * x[j];
        }
        const double r = 1.0 / std::sqrt(ss * static_cast<double>(t.reciprocalOfHLength) + eps);
        for (uint64_t j = 0; j < n.oh; ++j) {
            uint8_t sj = st;
            NormPut<T>(db, i * n.h + j, x[j] * r * static_cast<double>(LdChecked<T>(gb, j, sj, api, "gamma", loc)), sj);
        }
    }
    CountVector(n.rows * n.h * sizeof(T) * 3, false);
}

template <typename T>
void LayerNormGradImpl(const AscendC::LocalTensor<T>& pdX, const AscendC::LocalTensor<T>& resForGamma,
                       const AscendC::LocalTensor<T>& dy, const AscendC::LocalTensor<T>& x,
                       const AscendC::LocalTensor<T>& var, const AscendC::LocalTensor<T>& mean,
                       const AscendC::LocalTensor<T>& gamma, const AscendC::LocalTensor<uint8_t>* tmp, double eps,
                       const LayerNormGradTiling& t, const Loc& loc)
{
    static_assert(kHalfOrFloat<T>, "takes half or float");
    const char* api = "LayerNormGrad";
    Core(loc);
    const NormShape n = NormShapeOf(api, t.bLength, t.sLength, t.hLength, t.originalHLength, sizeof(T), loc);
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&pdX.ref_, &resForGamma.ref_, &dy.ref_, &x.ref_}, loc);
    uint8_t* pb = SmOperand(pdX, n.rows * n.h, api, "dstPdX", loc);
    uint8_t* rb = SmOperand(resForGamma, n.rows * n.h, api, "dstResForGamma", loc);
    const uint8_t* db = SmOperand(dy, n.rows * n.h, api, "srcDy", loc);
    const uint8_t* xb = SmOperand(x, n.rows * n.h, api, "srcX", loc);
    const uint8_t* vb = SmOperand(var, n.rows, api, "srcVariance", loc);
    const uint8_t* mb = SmOperand(mean, n.rows, api, "srcMean", loc);
    const uint8_t* gb = SmOperand(gamma, n.h, api, "srcGamma", loc);
    const double H = static_cast<double>(n.oh);
    std::vector<double> pxl(n.oh), xm(n.oh);
    std::vector<uint8_t> sts(n.oh);
    for (uint64_t i = 0; i < n.rows; ++i) {
        uint8_t st = kWritten;
        const double v = LdChecked<T>(vb, i, st, api, "srcVariance", loc), m = LdChecked<T>(mb, i, st, api, "srcMean", loc);
        const double rs = 1.0 / std::sqrt(v + eps);
        double pdVar = 0, s1 = 0, s2 = 0;
        for (uint64_t j = 0; j < n.oh; ++j) {
            pxl[j] = static_cast<double>(LdChecked<T>(db, i * n.h + j, st, api, "srcDy", loc)) *
                     static_cast<double>(LdChecked<T>(gb, j, st, api, "srcGamma", loc));
            xm[j] = static_cast<double>(LdChecked<T>(xb, i * n.h + j, st, api, "srcX", loc)) - m;
            pdVar += -0.5 * pxl[j] * xm[j] * rs * rs * rs;
            s1 += -1.0 * pxl[j] * rs;
            s2 += -2.0 * xm[j];
        }
        const double pdMean = s1 + pdVar / H * s2;
        for (uint64_t j = 0; j < n.oh; ++j) {
            NormPut<T>(pb, i * n.h + j, pxl[j] * rs + pdVar * (2.0 / H) * xm[j] + pdMean / H, st);
            NormPut<T>(rb, i * n.h + j, xm[j] * rs, st);
        }
    }
    CountVector(n.rows * n.h * sizeof(T) * 8, false);
}

template <typename T>
void LayerNormGradBetaImpl(const AscendC::LocalTensor<T>& pdGamma, const AscendC::LocalTensor<T>& pdBeta,
                           const AscendC::LocalTensor<T>& resForGamma, const AscendC::LocalTensor<T>& dy,
                           const AscendC::LocalTensor<uint8_t>* tmp, const LayerNormGradBetaTiling& t, const Loc& loc)
{
    static_assert(kHalfOrFloat<T>, "takes half or float");
    const char* api = "LayerNormGradBeta";
    Core(loc);
    const NormShape n = NormShapeOf(api, t.bLength, t.sLength, t.hLength, t.originalHLength, sizeof(T), loc);
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&pdGamma.ref_, &pdBeta.ref_, &resForGamma.ref_, &dy.ref_}, loc);
    uint8_t* gb = SmOperand(pdGamma, n.h, api, "dstPdGamma", loc);
    uint8_t* bb = SmOperand(pdBeta, n.h, api, "dstPdBeta", loc);
    const uint8_t* rb = SmOperand(resForGamma, n.rows * n.h, api, "srcResForGamma", loc);
    const uint8_t* db = SmOperand(dy, n.rows * n.h, api, "srcDy", loc);
    for (uint64_t j = 0; j < n.oh; ++j) {
        uint8_t st = kWritten;
        double sg = 0, sb = 0;
        for (uint64_t i = 0; i < n.rows; ++i) {
            const double d = LdChecked<T>(db, i * n.h + j, st, api, "srcDy", loc);
            sg += d * static_cast<double>(LdChecked<T>(rb, i * n.h + j, st, api, "srcResForGamma", loc));
            sb += d;
        }
        NormPut<T>(gb, j, sg, st);
        NormPut<T>(bb, j, sb, st);
    }
    CountVector(n.rows * n.h * sizeof(T) * 2, false);
}

// PopStackBuffer: the rest of the memory of `pos` as one scratch buffer (see the header comment).
template <typename T>
bool PopStack(AscendC::LocalTensor<T>& out, AscendC::TPosition pos, const Loc& loc)
{
    CoreState& c = Core(loc);
    const Mem m = PositionMem(pos, loc);
    CheckCoreKind(m, pos, loc);
    const int mi = static_cast<int>(m);
    if (c.used[mi] >= c.budget[mi]) return false;
    BlockInfo b;
    b.mem = m;
    b.pos = pos;
    b.addr = static_cast<uint32_t>(c.used[mi]);
    b.bytes = static_cast<uint32_t>(c.budget[mi] - c.used[mi]);
    b.state = BlockInfo::State::Scratch;
    b.owner = nullptr;
    b.line = loc.line();
    c.blocks.push_back(b);
    c.used[mi] = c.budget[mi];  // later InitBuffer calls would overlap the stack: refused as over budget
    c.allocs.push_back({m, pos, 1, b.bytes, loc.line(), false});
    out = TensorOf<T>(&c.blocks.back(), b.bytes);
    return true;
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T, TPosition pos = TPosition::LCM>
bool PopStackBuffer(LocalTensor<T>& popLocal, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    return megafuse_emu::PopStack(popLocal, pos, loc);
}

template <typename T, bool isBasicBlock>
void RmsNorm(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& gamma,
             const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon, const RmsNormTiling& t, megafuse_emu::Loc loc)
{
    megafuse_emu::RmsNormImpl(dst, src, gamma, &sharedTmpBuffer, static_cast<double>(static_cast<float>(epsilon)), t, loc);
}
template <typename T, bool isBasicBlock>
void RmsNorm(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& gamma, const T epsilon,
             const RmsNormTiling& t, megafuse_emu::Loc loc)
{
    megafuse_emu::RmsNormImpl(dst, src, gamma, static_cast<const LocalTensor<uint8_t>*>(nullptr),
                              static_cast<double>(static_cast<float>(epsilon)), t, loc);
}

template <typename T, bool isReuseSrc = false, bool isBasicBlock = false>
void DeepNorm(const LocalTensor<T>& dst, const LocalTensor<T>& mean, const LocalTensor<T>& rstd,
              const LocalTensor<T>& src, const LocalTensor<T>& gx, const LocalTensor<T>& beta,
              const LocalTensor<T>& gamma, const LocalTensor<uint8_t>& sharedTmpBuffer, const T alpha,
              const T epsilon, DeepNormTiling& t, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const double a = static_cast<float>(alpha);
    megafuse_emu::LayerNormImpl("DeepNorm", dst, mean, rstd, src, &gx, gamma, beta, &sharedTmpBuffer, &a,
                                static_cast<float>(epsilon), t, loc);
}
template <typename T, bool isReuseSrc = false, bool isBasicBlock = false>
void DeepNorm(const LocalTensor<T>& dst, const LocalTensor<T>& mean, const LocalTensor<T>& rstd,
              const LocalTensor<T>& src, const LocalTensor<T>& gx, const LocalTensor<T>& beta,
              const LocalTensor<T>& gamma, const T alpha, const T epsilon, DeepNormTiling& t,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const double a = static_cast<float>(alpha);
    megafuse_emu::LayerNormImpl("DeepNorm", dst, mean, rstd, src, &gx, gamma, beta,
                                static_cast<const LocalTensor<uint8_t>*>(nullptr), &a, static_cast<float>(epsilon), t,
                                loc);
}

template <typename T, bool isReuseSource = false>
void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean, const LocalTensor<T>& outputVariance,
               const LocalTensor<T>& inputX, const LocalTensor<T>& gamma, const LocalTensor<T>& beta,
               const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon, LayerNormTiling& t,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::LayerNormImpl("LayerNorm", output, outputMean, outputVariance, inputX,
                                static_cast<const LocalTensor<T>*>(nullptr), gamma, beta, &sharedTmpBuffer, nullptr,
                                static_cast<float>(epsilon), t, loc);
}
template <typename T, bool isReuseSource = false>
void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean, const LocalTensor<T>& outputVariance,
               const LocalTensor<T>& inputX, const LocalTensor<T>& gamma, const LocalTensor<T>& beta, const T epsilon,
               LayerNormTiling& t, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::LayerNormImpl("LayerNorm", output, outputMean, outputVariance, inputX,
                                static_cast<const LocalTensor<T>*>(nullptr), gamma, beta,
                                static_cast<const LocalTensor<uint8_t>*>(nullptr), nullptr, static_cast<float>(epsilon),
                                t, loc);
}

template <typename T, bool isReuseSource = false>
void LayerNormGrad(const LocalTensor<T>& outputPdX, const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                   const LocalTensor<T>& inputX, const LocalTensor<T>& inputVariance, const LocalTensor<T>& inputMean,
                   const LocalTensor<T>& inputGamma, LocalTensor<uint8_t>& sharedTmpBuffer, T epsilon,
                   LayerNormGradTiling& t, const LayerNormGradShapeInfo& = {},
                   megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::LayerNormGradImpl(outputPdX, resForGamma, inputDy, inputX, inputVariance, inputMean, inputGamma,
                                    &sharedTmpBuffer, static_cast<float>(epsilon), t, loc);
}
template <typename T, bool isReuseSource = false>
void LayerNormGrad(const LocalTensor<T>& outputPdX, const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                   const LocalTensor<T>& inputX, const LocalTensor<T>& inputVariance, const LocalTensor<T>& inputMean,
                   const LocalTensor<T>& inputGamma, T epsilon, LayerNormGradTiling& t,
                   const LayerNormGradShapeInfo& = {}, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::LayerNormGradImpl(outputPdX, resForGamma, inputDy, inputX, inputVariance, inputMean, inputGamma,
                                    static_cast<const LocalTensor<uint8_t>*>(nullptr), static_cast<float>(epsilon), t,
                                    loc);
}

template <typename T, bool isReuseSource = false>
void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                       const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                       const LocalTensor<uint8_t>& sharedTmpBuffer, const LayerNormGradBetaTiling& t,
                       megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::LayerNormGradBetaImpl(outputPdGamma, outputPdBeta, resForGamma, inputDy, &sharedTmpBuffer, t, loc);
}
template <typename T, bool isReuseSource = false>
void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                       const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy, LayerNormGradBetaTiling& t,
                       megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::LayerNormGradBetaImpl(outputPdGamma, outputPdBeta, resForGamma, inputDy,
                                        static_cast<const LocalTensor<uint8_t>*>(nullptr), t, loc);
}

}  // namespace AscendC
