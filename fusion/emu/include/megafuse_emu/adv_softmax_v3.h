// SoftmaxFlashV3 of the devkit's advanced API (the PASA softmax; its page's Python pseudo-code and
// constraints), ND, T = half data, U = float statistics:
//   SoftmaxFlashV3<T, U, isUpdate>(dst, mean, expSum, max, src, expMax, inMean, inExpSum, inMax, [tmp,]
//       tiling, SoftMaxParams{srcM, srcK, oriSrcM, oriSrcK, loopCnt, splitMeanCnt, alpha})
// per row x of n = srcK values (n >= 512, a multiple of 64; m a multiple of 8; splitMeanCnt 8;
// srcM = oriSrcM, srcK = oriSrcK), in float:
//   rowMeanLocal[j] (j < 8): the page's reduction -- BlockReduceSum of the first 512 values into 64
//       lanes (sums of 8), the remaining 64-value repeats added lane by lane, BlockReduceSum of the
//       64 lanes into 8 -- divided by baseK = n / 8; rowMeanGlobal = their mean;
//   x' = x - (rowMeanGlobal - rowMeanLocal[j]) * alpha / (1 - alpha) on the j-th chunk of baseK values;
//   mean = update ? (rowMeanGlobal + inMean * (loopCnt - 1)) / loopCnt : rowMeanGlobal;
//   shiftCurr = (rowMeanGlobal - mean) * s, shiftPrev = (inMean - mean) * s (s = alpha / (1 - alpha));
//   max = shiftCurr + rowmax(x'), with update max(that, shiftPrev + inMax);
//   dst = exp(x' - (max - shiftCurr)); expSum = rowsum(dst) (+ expMax * inExpSum with update);
//   expMax = exp(inMax - max + shiftPrev) (update only).
// mean / expSum / max and their inputs are one 32-byte block per row (8 floats), expMax one block of
// 16 halves. A row is read whole before its outputs are written (the page allows the in / out
// statistics to share tensors). Values are computed in double and rounded once per output.
#pragma once

#include "adv_softmax_ext.h"

namespace AscendC {

struct SoftMaxParams {
    uint32_t srcM = 0;
    uint32_t srcK = 0;
    uint32_t oriSrcM = 0;
    uint32_t oriSrcK = 0;
    uint32_t loopCnt = 1;
    uint32_t splitMeanCnt = 8;
    float alpha = 0.9375f;
};

inline void GetSoftMaxFlashV3MaxMinTmpSize(const TensorShape& s, const uint32_t ts1, const uint32_t ts2,
                                           uint32_t& maxValue, uint32_t& minValue, const bool, const bool = false)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetDim(s.GetDimNum() - 1)), std::max(ts1, ts2), 2, maxValue,
                              minValue);
}
inline void SoftMaxFlashV3TilingFunc(const TensorShape& s, const uint32_t ts1, const uint32_t ts2,
                                     const uint32_t work, SoftMaxTiling& t, const bool, const bool = false)
{
    SoftMaxTilingFunc(s, std::max(ts1, ts2), work, t);
}

}  // namespace AscendC

namespace megafuse_emu {

template <typename T, typename U>
void SoftmaxFlashV3Impl(bool update, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& mean,
                        const AscendC::LocalTensor<U>& sum, const AscendC::LocalTensor<U>& max,
                        const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<T>& expMax,
                        const AscendC::LocalTensor<U>& inMean, const AscendC::LocalTensor<U>& inSum,
                        const AscendC::LocalTensor<U>& inMax, const AscendC::LocalTensor<uint8_t>* tmp,
                        const AscendC::SoftMaxParams& p, const Loc& loc)
{
    static_assert(std::is_same_v<T, half> && std::is_same_v<U, float>, "SoftmaxFlashV3 takes half data, float statistics");
    const char* api = "SoftmaxFlashV3";
    Core(loc);
    const uint64_t m = p.srcM, n = p.srcK;
    if (p.srcM != p.oriSrcM || p.srcK != p.oriSrcK)
        Fail(loc, Str(api, ": srcM / srcK must equal oriSrcM / oriSrcK (unaligned shapes are not supported)"));
    if (m == 0 || m % 8 != 0 || n < 512 || n % 64 != 0)
        Fail(loc, Str(api, ": shape [", m, ", ", n, "] must have m a multiple of 8 and n >= 512 a multiple of 64"));
    if (p.splitMeanCnt != 8) Fail(loc, Str(api, ": splitMeanCnt ", p.splitMeanCnt, " (only 8 is supported)"));
    if (update && p.loopCnt < 1) Fail(loc, Str(api, ": loopCnt must be >= 1"));
    if (!(p.alpha > 0.0f && p.alpha < 1.0f)) Fail(loc, Str(api, ": alpha ", p.alpha, " is outside (0, 1)"));
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 2, {&dst.ref_, &src.ref_, &mean.ref_, &sum.ref_, &max.ref_}, loc);
    uint8_t* db = SmOperand(dst, m * n, api, "dst", loc);
    const uint8_t* sb = SmOperand(src, m * n, api, "src", loc);
    uint8_t* meb = SmOperand(mean, m * 8, api, "meanTensor", loc);
    uint8_t* sub = SmOperand(sum, m * 8, api, "expSumTensor", loc);
    uint8_t* mab = SmOperand(max, m * 8, api, "maxTensor", loc);
    uint8_t* eb = update ? SmOperand(expMax, m * 16, api, "expMaxTensor", loc) : nullptr;
    const uint8_t* imeb = update ? SmOperand(inMean, m * 8, api, "inMeanTensor", loc) : nullptr;
    const uint8_t* isub = update ? SmOperand(inSum, m * 8, api, "inExpSumTensor", loc) : nullptr;
    const uint8_t* imab = update ? SmOperand(inMax, m * 8, api, "inMaxTensor", loc) : nullptr;
    const double s = static_cast<double>(p.alpha) / (1.0 - static_cast<double>(p.alpha));
    const uint64_t baseK = n / 8;
    std::vector<double> x(n);
    for (uint64_t i = 0; i < m; ++i) {
        uint8_t st = kWritten;
        for (uint64_t j = 0; j < n; ++j) x[j] = LdChecked<T>(sb, i * n + j, st, api, "src", loc);
        double lanes[64] = {};
        for (uint64_t j = 0; j < 64; ++j)
            for (uint64_t t = 0; t < 8; ++t) lanes[j] += x[j * 8 + t];
        for (uint64_t e = 512; e < n; ++e) lanes[(e - 512) % 64] += x[e];
        double local[8], global = 0;
        for (uint64_t j = 0; j < 8; ++j) {
            local[j] = 0;
            for (uint64_t k = 0; k < 8; ++k) local[j] += lanes[j * 8 + k];
            local[j] /= static_cast<double>(baseK);
            global += local[j] / 8.0;
        }
        double rmax = -std::numeric_limits<double>::infinity();
        for (uint64_t j = 0; j < n; ++j) {
            x[j] -= (global - local[j / baseK]) * s;
            rmax = std::max(rmax, x[j]);
        }
        double inM = 0, inS = 0, inX = 0;
        if (update) {
            inM = LdChecked<U>(imeb, i * 8, st, api, "inMeanTensor", loc);
            inS = LdChecked<U>(isub, i * 8, st, api, "inExpSumTensor", loc);
            inX = LdChecked<U>(imab, i * 8, st, api, "inMaxTensor", loc);
        }
        const double mu = update ? (global + inM * (p.loopCnt - 1.0)) / p.loopCnt : global;
        const double shiftCurr = (global - mu) * s, shiftPrev = (inM - mu) * s;
        double mx = shiftCurr + rmax;
        if (update) mx = std::max(mx, shiftPrev + inX);
        const double sub0 = mx - shiftCurr;
        double total = 0;
        for (uint64_t j = 0; j < n; ++j) {
            const double e = std::exp(x[j] - sub0);
            total += e;
            St<T>(db, i * n + j, static_cast<T>(static_cast<float>(e)));
            SetState(db + (i * n + j) * sizeof(T), sizeof(T), st);
        }
        const double em = update ? std::exp(inX - mx + shiftPrev) : 1.0;
        SmPutRow<U>(meb, i, mu, st);
        SmPutRow<U>(sub, i, update ? em * inS + total : total, st);
        SmPutRow<U>(mab, i, mx, st);
        if (eb != nullptr) SmPutRow<T>(eb, i, em, st);
    }
    CountVector(m * n * sizeof(float) * 6, false);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T, typename U, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
void SoftmaxFlashV3(const LocalTensor<T>& dstTensor, const LocalTensor<U>& meanTensor, const LocalTensor<U>& expSumTensor,
                    const LocalTensor<U>& maxTensor, const LocalTensor<T>& srcTensor, const LocalTensor<T>& expMaxTensor,
                    const LocalTensor<U>& inMeanTensor, const LocalTensor<U>& inExpSumTensor,
                    const LocalTensor<U>& inMaxTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                    const SoftMaxTiling& tiling, const SoftMaxParams& params,
                    megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "SoftmaxFlashV3 supports ND only");
    (void)tiling;
    megafuse_emu::SoftmaxFlashV3Impl(isUpdate, dstTensor, meanTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor,
                                     inMeanTensor, inExpSumTensor, inMaxTensor, &sharedTmpBuffer, params, loc);
}
template <typename T, typename U, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
void SoftmaxFlashV3(const LocalTensor<T>& dstTensor, const LocalTensor<U>& meanTensor, const LocalTensor<U>& expSumTensor,
                    const LocalTensor<U>& maxTensor, const LocalTensor<T>& srcTensor, const LocalTensor<T>& expMaxTensor,
                    const LocalTensor<U>& inMeanTensor, const LocalTensor<U>& inExpSumTensor,
                    const LocalTensor<U>& inMaxTensor, const SoftMaxTiling& tiling, const SoftMaxParams& params,
                    megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "SoftmaxFlashV3 supports ND only");
    (void)tiling;
    megafuse_emu::SoftmaxFlashV3Impl(isUpdate, dstTensor, meanTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor,
                                     inMeanTensor, inExpSumTensor, inMaxTensor,
                                     static_cast<const LocalTensor<uint8_t>*>(nullptr), params, loc);
}

}  // namespace AscendC
