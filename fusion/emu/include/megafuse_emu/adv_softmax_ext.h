// The SoftMax family beyond SoftMax itself (semantics: the devkit's API reference pages of the same
// names, their Python formulas), ND format, rows of srcK elements (oriSrcK of them computed):
//   LogSoftMax<T>(dst, sum, max, src, sharedTmpBuffer, tiling, shapeInfo)
//       dst = log10(exp(x - max) / sum)  (the page's formula and algorithm: log10, not ln)
//   SoftmaxGrad<T>(dst, grad, src, [tmp,] tiling, isFront, shapeInfo)
//       d = rowsum(grad * src); dst = isFront ? d (one 32-byte block per row) : (grad - d) * src
//   SoftmaxGradFront<T>(dst, grad, src, [tmp,] tiling, shapeInfo) = SoftmaxGrad(isFront = true)
//   SoftmaxFlashV2<T[, U], isUpdate>(dst, expSum, max, src, expMax, inExpSum, inMax, [tmp,] tiling, shapeInfo)
//       isUpdate = false: max = rowmax(x), dst = exp(x - max), expSum = rowsum(dst)
//       isUpdate = true:  max = max(inMax, rowmax(x)), dst = exp(x - max),
//                         expMax = exp(inMax - max), expSum = expMax * inExpSum + rowsum(dst)
//       T: src/dst/expMax (half, float), U: expSum/max and their inputs (float; = T when one type).
// The per-row statistics (sum, max, expMax, inputs too) are one 32-byte block per row holding the
// row's value in every element (SOFTMAX_NORMAL); the inputs are read from the block's first
// element. A row is read whole before any output of it is written, so outputs may be the inputs
// (the samples pass sumLocal / maxLocal as both; the pages allow src = dst).
// Each lane computes in double and rounds once to its type (the device's instruction sequence is
// not modelled). Host side: the tmp-size queries (megafuse's model of adv_shape.h: two scratch
// vectors of one row) and the tiling functions, which fill SoftMaxTiling (adv_softmax.h).
#pragma once

#include "adv_softmax.h"

using LogSoftMaxTiling = SoftMaxTiling;
namespace optiling {
using ::LogSoftMaxTiling;
}
namespace AscendC::tiling {
using ::LogSoftMaxTiling;
using ::SoftMaxTiling;
}  // namespace AscendC::tiling

namespace AscendC {

enum class SoftmaxMode : uint8_t { SOFTMAX_NORMAL = 0, SOFTMAX_OUTPUT_WITHOUT_BRC = 1 };
struct SoftmaxConfig {
    bool isCheckTiling = true;
    uint32_t oriSrcM = 0;
    uint32_t oriSrcK = 0;
    SoftmaxMode mode = SoftmaxMode::SOFTMAX_NORMAL;
};
constexpr SoftmaxConfig SOFTMAX_DEFAULT_CFG = {true, 0, 0, SoftmaxMode::SOFTMAX_NORMAL};

// Host queries and tiling functions (the shape is [m..., k]).
inline uint32_t GetLogSoftMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const bool r)
{
    return GetSoftMaxMinTmpSize(s, typeSize, r);
}
inline uint32_t GetLogSoftMaxMaxTmpSize(const TensorShape& s, const uint32_t typeSize, const bool r)
{
    return GetSoftMaxMaxTmpSize(s, typeSize, r);
}
inline void LogSoftMaxTilingFunc(const TensorShape& s, const uint32_t typeSize, const uint32_t work, SoftMaxTiling& t)
{
    SoftMaxTilingFunc(s, typeSize, work, t);
}
inline uint32_t GetSoftMaxGradMinTmpSize(const TensorShape& s, const uint32_t typeSize, const bool, const bool r)
{
    return GetSoftMaxMinTmpSize(s, typeSize, r);
}
inline uint32_t GetSoftMaxGradMaxTmpSize(const TensorShape& s, const uint32_t typeSize, const bool, const bool r)
{
    return GetSoftMaxMaxTmpSize(s, typeSize, r);
}
inline void SoftMaxGradTilingFunc(const TensorShape& s, const uint32_t typeSize, const uint32_t work, SoftMaxTiling& t,
                                  const bool /*isFront*/ = false)
{
    SoftMaxTilingFunc(s, typeSize, work, t);
}
// FlashV2: dataTypeSize1 is src's, dataTypeSize2 the statistics'; the larger one sizes the rows.
inline uint32_t GetSoftMaxFlashV2MinTmpSize(const TensorShape& s, const uint32_t ts1, const uint32_t ts2, const bool,
                                            const bool = false, const bool = false)
{
    return GetSoftMaxMinTmpSize(s, std::max(ts1, ts2), false);
}
inline uint32_t GetSoftMaxFlashV2MaxTmpSize(const TensorShape& s, const uint32_t ts1, const uint32_t ts2, const bool,
                                            const bool = false, const bool = false)
{
    return GetSoftMaxMaxTmpSize(s, std::max(ts1, ts2), false);
}
inline void SoftMaxFlashV2TilingFunc(const TensorShape& s, const uint32_t ts1, const uint32_t ts2, const uint32_t work,
                                     SoftMaxTiling& t, const bool /*isUpdate*/, const bool = false, const bool = false)
{
    SoftMaxTilingFunc(s, std::max(ts1, ts2), work, t);
}

}  // namespace AscendC

namespace megafuse_emu {

template <typename T>
uint8_t* SmOperand(const AscendC::LocalTensor<T>& t, uint64_t n, const char* api, const char* name, const Loc& loc)
{
    Operand o{&t.ref_, sizeof(T), 1, 8, name};
    return VecOperand(o, n, api, loc);
}

inline void SmCheckShape(const char* api, const AscendC::SoftMaxShapeInfo& s, uint32_t esize, const Loc& loc)
{
    if (s.oriSrcK > s.srcK || s.oriSrcM > s.srcM || s.srcM == 0 || s.oriSrcK == 0)
        Fail(loc, Str(api, ": shape info {", s.srcM, ", ", s.srcK, ", ", s.oriSrcM, ", ", s.oriSrcK, "} is not valid"));
    if ((static_cast<uint64_t>(s.srcK) * esize) % 32 != 0)
        Fail(loc, Str(api, ": srcK ", s.srcK, " is not 32-byte aligned"));
}

// Writes v into the 32-byte block of row i (every element), with state st.
template <typename U>
void SmPutRow(uint8_t* b, uint64_t i, double v, uint8_t st)
{
    const uint64_t blk = 32 / sizeof(U);
    for (uint64_t e = 0; e < blk; ++e) St<U>(b, i * blk + e, static_cast<U>(static_cast<float>(v)));
    SetState(b + i * 32, 32, st);
}

// The whole LogSoftMax / FlashV2 row computation; kind 0 = LogSoftMax, 1 = FlashV2 (update or not).
template <typename T, typename U>
void SmRows(const char* api, int kind, bool update, const AscendC::LocalTensor<T>& dst,
            const AscendC::LocalTensor<U>& sum, const AscendC::LocalTensor<U>& max, const AscendC::LocalTensor<T>& src,
            const AscendC::LocalTensor<T>* expMax, const AscendC::LocalTensor<U>* inSum,
            const AscendC::LocalTensor<U>* inMax, const AscendC::LocalTensor<uint8_t>* tmp,
            const AscendC::SoftMaxShapeInfo& s, const Loc& loc)
{
    static_assert(kHalfOrFloat<T> && kHalfOrFloat<U>, "takes half or float");
    Core(loc);
    SmCheckShape(api, s, sizeof(T), loc);
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 2, {&dst.ref_, &src.ref_, &sum.ref_, &max.ref_}, loc);
    if (kind == 0) AdvNoOverlap(api, dst.ref_, src.ref_, "src", loc);  // LogSoftMax: no src/dst reuse
    const uint64_t rows = s.srcM, k = s.srcK, ub = 32 / sizeof(U), tb = 32 / sizeof(T);
    uint8_t* db = SmOperand(dst, rows * k, api, "dst", loc);
    const uint8_t* sb = SmOperand(src, rows * k, api, "src", loc);
    uint8_t* sub = SmOperand(sum, rows * ub, api, "dstSum", loc);
    uint8_t* mb = SmOperand(max, rows * ub, api, "dstMax", loc);
    uint8_t* eb = expMax && update ? SmOperand(*expMax, rows * tb, api, "dstExpMax", loc) : nullptr;
    const uint8_t* isb = inSum && update ? SmOperand(*inSum, rows * ub, api, "srcSum", loc) : nullptr;
    const uint8_t* imb = inMax && update ? SmOperand(*inMax, rows * ub, api, "srcMax", loc) : nullptr;
    std::vector<double> e(s.oriSrcK);
    for (uint64_t i = 0; i < rows; ++i) {
        uint8_t st = kWritten;
        double mx = -std::numeric_limits<double>::infinity(), total = 0, inS = 0, inM = 0;
        for (uint64_t j = 0; j < s.oriSrcK; ++j) mx = std::max(mx, static_cast<double>(LdChecked<T>(sb, i * k + j, st, api, "src", loc)));
        if (update) {
            inS = LdChecked<U>(isb, i * ub, st, api, "srcSum", loc);
            inM = LdChecked<U>(imb, i * ub, st, api, "srcMax", loc);
            mx = std::max(mx, inM);
        }
        for (uint64_t j = 0; j < s.oriSrcK; ++j) total += e[j] = std::exp(static_cast<double>(Ld<T>(sb, i * k + j)) - mx);
        const double em = update ? std::exp(inM - mx) : 1.0;
        const double outSum = update ? em * inS + total : total;
        for (uint64_t j = 0; j < s.oriSrcK; ++j) {
            const double v = kind == 0 ? std::log10(e[j] / total) : e[j];
            St<T>(db, i * k + j, static_cast<T>(static_cast<float>(v)));
            SetState(db + (i * k + j) * sizeof(T), sizeof(T), st);
        }
        SmPutRow<U>(sub, i, outSum, st);
        SmPutRow<U>(mb, i, mx, st);
        if (eb != nullptr) SmPutRow<T>(eb, i, em, st);
    }
    CountVector(rows * k * sizeof(T), false);
}

template <typename T>
void SmGrad(const char* api, bool front, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& grad,
            const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<uint8_t>* tmp,
            const AscendC::SoftMaxShapeInfo& s, const Loc& loc)
{
    static_assert(kHalfOrFloat<T>, "takes half or float");
    Core(loc);
    SmCheckShape(api, s, sizeof(T), loc);
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 2, {&dst.ref_, &src.ref_, &grad.ref_}, loc);
    const uint64_t rows = s.srcM, k = s.srcK, blk = 32 / sizeof(T);
    uint8_t* db = SmOperand(dst, rows * (front ? blk : k), api, "dst", loc);
    const uint8_t* gb = SmOperand(grad, rows * k, api, "grad", loc);
    const uint8_t* sb = SmOperand(src, rows * k, api, "src", loc);
    std::vector<double> g(s.oriSrcK), x(s.oriSrcK);
    for (uint64_t i = 0; i < rows; ++i) {
        uint8_t st = kWritten;
        double d = 0;
        for (uint64_t j = 0; j < s.oriSrcK; ++j) {
            g[j] = LdChecked<T>(gb, i * k + j, st, api, "grad", loc);
            x[j] = LdChecked<T>(sb, i * k + j, st, api, "src", loc);
            d += g[j] * x[j];
        }
        if (front) {
            SmPutRow<T>(db, i, d, st);
            continue;
        }
        for (uint64_t j = 0; j < s.oriSrcK; ++j) {
            St<T>(db, i * k + j, static_cast<T>(static_cast<float>((g[j] - d) * x[j])));
            SetState(db + (i * k + j) * sizeof(T), sizeof(T), st);
        }
    }
    CountVector(rows * k * sizeof(T) * 2, false);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
void LogSoftMax(const LocalTensor<T>& dst, const LocalTensor<T>& sum, const LocalTensor<T>& max,
                const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, const LogSoftMaxTiling& tiling,
                const SoftMaxShapeInfo& shapeInfo = {}, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "LogSoftMax is emulated for ND data only");
    (void)tiling;
    megafuse_emu::SmRows<T, T>("LogSoftMax", 0, false, dst, sum, max, src, nullptr, nullptr, nullptr,
                               &sharedTmpBuffer, shapeInfo, loc);
}

template <typename T, bool isBasicBlock = false, bool isDataFormatNZ = false>
void SoftmaxGrad(const LocalTensor<T>& dst, const LocalTensor<T>& grad, const LocalTensor<T>& src,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling, bool isFront = false,
                 const SoftMaxShapeInfo& shapeInfo = {}, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "SoftmaxGrad is emulated for ND data only");
    (void)tiling;
    megafuse_emu::SmGrad("SoftmaxGrad", isFront, dst, grad, src, &sharedTmpBuffer, shapeInfo, loc);
}
template <typename T, bool isBasicBlock = false, bool isDataFormatNZ = false>
void SoftmaxGrad(const LocalTensor<T>& dst, const LocalTensor<T>& grad, const LocalTensor<T>& src,
                 const SoftMaxTiling& tiling, bool isFront = false, const SoftMaxShapeInfo& shapeInfo = {},
                 megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "SoftmaxGrad is emulated for ND data only");
    (void)tiling;
    megafuse_emu::SmGrad("SoftmaxGrad", isFront, dst, grad, src, static_cast<const LocalTensor<uint8_t>*>(nullptr),
                         shapeInfo, loc);
}
template <typename T, bool isBasicBlock = false, bool isDataFormatNZ = false>
void SoftmaxGradFront(const LocalTensor<T>& dst, const LocalTensor<T>& grad, const LocalTensor<T>& src,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                      const SoftMaxShapeInfo& shapeInfo = {}, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "SoftmaxGradFront is emulated for ND data only");
    (void)tiling;
    megafuse_emu::SmGrad("SoftmaxGradFront", true, dst, grad, src, &sharedTmpBuffer, shapeInfo, loc);
}
template <typename T, bool isBasicBlock = false, bool isDataFormatNZ = false>
void SoftmaxGradFront(const LocalTensor<T>& dst, const LocalTensor<T>& grad, const LocalTensor<T>& src,
                      const SoftMaxTiling& tiling, const SoftMaxShapeInfo& shapeInfo = {},
                      megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "SoftmaxGradFront is emulated for ND data only");
    (void)tiling;
    megafuse_emu::SmGrad("SoftmaxGradFront", true, dst, grad, src, static_cast<const LocalTensor<uint8_t>*>(nullptr),
                         shapeInfo, loc);
}

// One data type (T = U) and mixed (half data, float statistics) forms; the type U is deduced
// from the statistics tensors.
template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG, typename U>
void SoftmaxFlashV2(const LocalTensor<T>& dst, const LocalTensor<U>& expSum, const LocalTensor<U>& max,
                    const LocalTensor<T>& src, const LocalTensor<T>& expMax, const LocalTensor<U>& inExpSum,
                    const LocalTensor<U>& inMax, const LocalTensor<uint8_t>& sharedTmpBuffer,
                    const SoftMaxTiling& tiling, const SoftMaxShapeInfo& shapeInfo = {},
                    megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "SoftmaxFlashV2 is emulated for ND data only");
    static_assert(config.mode == SoftmaxMode::SOFTMAX_NORMAL, "SoftmaxFlashV2 is emulated for SOFTMAX_NORMAL only");
    (void)tiling;
    megafuse_emu::SmRows<T, U>("SoftmaxFlashV2", 1, isUpdate, dst, expSum, max, src, &expMax, &inExpSum, &inMax,
                               &sharedTmpBuffer, shapeInfo, loc);
}
template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG, typename U>
void SoftmaxFlashV2(const LocalTensor<T>& dst, const LocalTensor<U>& expSum, const LocalTensor<U>& max,
                    const LocalTensor<T>& src, const LocalTensor<T>& expMax, const LocalTensor<U>& inExpSum,
                    const LocalTensor<U>& inMax, const SoftMaxTiling& tiling, const SoftMaxShapeInfo& shapeInfo = {},
                    megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "SoftmaxFlashV2 is emulated for ND data only");
    static_assert(config.mode == SoftmaxMode::SOFTMAX_NORMAL, "SoftmaxFlashV2 is emulated for SOFTMAX_NORMAL only");
    (void)tiling;
    megafuse_emu::SmRows<T, U>("SoftmaxFlashV2", 1, isUpdate, dst, expSum, max, src, &expMax, &inExpSum, &inMax,
                               static_cast<const LocalTensor<uint8_t>*>(nullptr), shapeInfo, loc);
}

// The page's mixed-type spelling SoftmaxFlashV2<T, U, isUpdate, ...> (half data, float statistics).
template <typename T, typename U, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
void SoftmaxFlashV2(const LocalTensor<T>& dst, const LocalTensor<U>& expSum, const LocalTensor<U>& max,
                    const LocalTensor<T>& src, const LocalTensor<T>& expMax, const LocalTensor<U>& inExpSum,
                    const LocalTensor<U>& inMax, const LocalTensor<uint8_t>& sharedTmpBuffer,
                    const SoftMaxTiling& tiling, const SoftMaxShapeInfo& shapeInfo = {},
                    megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    SoftmaxFlashV2<T, isUpdate, isReuseSource, isBasicBlock, isDataFormatNZ, config, U>(
        dst, expSum, max, src, expMax, inExpSum, inMax, sharedTmpBuffer, tiling, shapeInfo, loc);
}
template <typename T, typename U, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
void SoftmaxFlashV2(const LocalTensor<T>& dst, const LocalTensor<U>& expSum, const LocalTensor<U>& max,
                    const LocalTensor<T>& src, const LocalTensor<T>& expMax, const LocalTensor<U>& inExpSum,
                    const LocalTensor<U>& inMax, const SoftMaxTiling& tiling, const SoftMaxShapeInfo& shapeInfo = {},
                    megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    SoftmaxFlashV2<T, isUpdate, isReuseSource, isBasicBlock, isDataFormatNZ, config, U>(
        dst, expSum, max, src, expMax, inExpSum, inMax, tiling, shapeInfo, loc);
}

}  // namespace AscendC
