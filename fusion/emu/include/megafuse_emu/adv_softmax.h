// SoftMax of the devkit's advanced API (semantics from its API reference), ND format:
//   SoftMax<T, isReuseSource, isBasicBlock>(dst, sumTensor, maxTensor, src, [sharedTmpBuffer,]
//       tiling, SoftMaxShapeInfo{srcM, srcK, oriSrcM, oriSrcK})
//   for each of the srcM rows (srcK elements apart): max and sum of exp(x - max) over the first
//   oriSrcK elements; dst = exp(x - max) / sum there; sumTensor / maxTensor hold each row's
//   value repeated over one 32-byte block ([srcM, 32 / sizeof(T)]). dst may be src.
//   AdjustSoftMaxRes<T1, T2>(res, maxTensor, from, to, shapeInfo): rows whose max has the bit
//   pattern `from` are set to `to`; returns whether any row was.
// SoftMaxTiling is megafuse's own layout (one struct for host and kernel, like TCubeTiling):
// SoftMaxTilingFunc records the shape and split; the emulation reads only the shape info.
// The tmp-size model is adv_shape.h's (two scratch vectors of one row).
#pragma once

#include "adv_reduce.h"

struct SoftMaxTiling {
    uint32_t srcM = 0, srcK = 0, srcSize = 0;
    uint32_t outMaxM = 0, outMaxK = 0, outMaxSize = 0;
    uint32_t splitM = 0, splitK = 0, splitSize = 0;
    uint32_t reduceM = 0, reduceK = 0, reduceSize = 0;
    uint32_t rangeM = 0, tailM = 0, tailSplitSize = 0, tailReduceSize = 0;
};
namespace optiling {
using ::SoftMaxTiling;
}

#ifndef ASSERT
#define ASSERT(cond) ascendc_assert(cond)
#endif

namespace AscendC {

struct SoftMaxShapeInfo {
    uint32_t srcM = 0;
    uint32_t srcK = 0;
    uint32_t oriSrcM = 0;
    uint32_t oriSrcK = 0;
};

inline uint32_t GetSoftMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const bool)
{
    uint32_t mx = 0, mn = 0;
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetDim(s.GetDimNum() - 1)), typeSize, 2, mx, mn);
    return mn;
}
inline uint32_t GetSoftMaxMaxTmpSize(const TensorShape& s, const uint32_t typeSize, const bool)
{
    uint32_t mx = 0, mn = 0;
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 2, mx, mn);
    return mx;
}
inline void SoftMaxTilingFunc(const TensorShape& s, const uint32_t dataTypeSize, const uint32_t localWorkSpaceSize,
                              SoftMaxTiling& t)
{
    const uint32_t m = s.GetDimNum() >= 2 ? static_cast<uint32_t>(s.GetShapeSize() / s.GetDim(s.GetDimNum() - 1)) : 1;
    const uint32_t k = static_cast<uint32_t>(s.GetDim(s.GetDimNum() - 1));
    const uint32_t blk = dataTypeSize ? 32 / dataTypeSize : 8;
    t = SoftMaxTiling{};
    t.srcM = m; t.srcK = k; t.srcSize = m * k;
    t.outMaxM = m; t.outMaxK = blk; t.outMaxSize = m * blk;
    const uint32_t rowBytes = std::max<uint32_t>(1, k * std::max<uint32_t>(dataTypeSize, 4) * 2);
    t.splitM = std::max<uint32_t>(1, std::min<uint32_t>(m, localWorkSpaceSize / rowBytes));
    t.splitK = k; t.splitSize = t.splitM * k;
    t.reduceM = t.splitM; t.reduceK = blk; t.reduceSize = t.splitM * blk;
    t.rangeM = m / t.splitM; t.tailM = m % t.splitM;
    t.tailSplitSize = t.tailM * k; t.tailReduceSize = t.tailM * blk;
}

}  // namespace AscendC

namespace megafuse_emu {

template <typename T>
void SoftMaxImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& sum, const AscendC::LocalTensor<T>& max,
                 const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<uint8_t>* tmp,
                 const AscendC::SoftMaxShapeInfo& s, const Loc& loc)
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "SoftMax takes half or float");
    const char* api = "SoftMax";
    Core(loc);
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 2, {&dst.ref_, &src.ref_, &sum.ref_, &max.ref_}, loc);
    if (s.oriSrcK > s.srcK || s.srcM == 0 || s.oriSrcK == 0)
        Fail(loc, Str(api, ": shape info {", s.srcM, ", ", s.srcK, ", ", s.oriSrcM, ", ", s.oriSrcK, "} is not valid"));
    if ((static_cast<uint64_t>(s.srcK) * sizeof(T)) % 32 != 0)
        Fail(loc, Str(api, ": srcK ", s.srcK, " is not 32-byte aligned"));
    const uint64_t blk = 32 / sizeof(T), rows = s.srcM, k = s.srcK;
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, os{&src.ref_, sizeof(T), 1, 8, "src"},
        osu{&sum.ref_, sizeof(T), 1, 8, "sumTensor"}, om{&max.ref_, sizeof(T), 1, 8, "maxTensor"};
    uint8_t* db = VecOperand(od, rows * k, api, loc);
    const uint8_t* sb = VecOperand(os, rows * k, api, loc);
    uint8_t* sub = VecOperand(osu, rows * blk, api, loc);
    uint8_t* mb = VecOperand(om, rows * blk, api, loc);
    std::vector<double> e(s.oriSrcK);
    for (uint64_t i = 0; i < rows; ++i) {
        uint8_t st = kWritten;
        double mx = -std::numeric_limits<double>::infinity(), total = 0;
        for (uint64_t j = 0; j < s.oriSrcK; ++j) mx = std::max(mx, static_cast<double>(LdChecked<T>(sb, i * k + j, st, api, "src", loc)));
        for (uint64_t j = 0; j < s.oriSrcK; ++j) total += e[j] = std::exp(static_cast<double>(static_cast<CalcT<T>>(Ld<T>(sb, i * k + j))) - mx);
        for (uint64_t j = 0; j < s.oriSrcK; ++j) {
            St<T>(db, i * k + j, static_cast<T>(static_cast<float>(e[j] / total)));
            SetState(db + (i * k + j) * sizeof(T), sizeof(T), st);
        }
        for (uint64_t b = 0; b < blk; ++b) {
            St<T>(sub, i * blk + b, static_cast<T>(static_cast<float>(total)));
            St<T>(mb, i * blk + b, static_cast<T>(static_cast<float>(mx)));
        }
        SetState(sub + i * 32, 32, st);
        SetState(mb + i * 32, 32, st);
    }
    CountVector(rows * k * sizeof(T), false);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false>
void SoftMax(const LocalTensor<T>& dst, const LocalTensor<T>& sumTensor, const LocalTensor<T>& maxTensor,
             const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
             const SoftMaxShapeInfo& softmaxShapeInfo, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "SoftMax is emulated for ND data only");
    (void)tiling;
    megafuse_emu::SoftMaxImpl(dst, sumTensor, maxTensor, src, &sharedTmpBuffer, softmaxShapeInfo, loc);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false>
void SoftMax(const LocalTensor<T>& dst, const LocalTensor<T>& sumTensor, const LocalTensor<T>& maxTensor,
             const LocalTensor<T>& src, const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo,
             megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "SoftMax is emulated for ND data only");
    (void)tiling;
    megafuse_emu::SoftMaxImpl(dst, sumTensor, maxTensor, src, static_cast<const LocalTensor<uint8_t>*>(nullptr),
                              softmaxShapeInfo, loc);
}

template <typename T1, typename T2, bool isDataFormatNZ = false>
bool AdjustSoftMaxRes(const LocalTensor<T1>& softMaxRes, const LocalTensor<T2>& maxTensor, const uint32_t from,
                      const T1 to, const SoftMaxShapeInfo& s, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(!isDataFormatNZ, "AdjustSoftMaxRes is emulated for ND data only");
    using namespace megafuse_emu;
    const char* api = "AdjustSoftMaxRes";
    Core(loc);
    const uint64_t blk = 32 / sizeof(T2);
    Operand od{&softMaxRes.ref_, sizeof(T1), 1, 8, "softMaxRes"}, om{&maxTensor.ref_, sizeof(T2), 1, 8, "maxTensor"};
    uint8_t* db = VecOperand(od, static_cast<uint64_t>(s.srcM) * s.srcK, api, loc);
    const uint8_t* mb = VecOperand(om, s.srcM * blk, api, loc);
    bool any = false;
    for (uint64_t i = 0; i < s.srcM; ++i) {
        CheckWritten(mb + i * blk * sizeof(T2), sizeof(T2), api, "maxTensor", loc);
        uint32_t bits = 0;
        std::memcpy(&bits, mb + i * blk * sizeof(T2), sizeof(T2));
        if (bits != from) continue;
        any = true;
        for (uint64_t j = 0; j < s.srcK; ++j) St<T1>(db, i * s.srcK + j, to);
        MarkWritten(db + i * s.srcK * sizeof(T1), s.srcK * sizeof(T1));
    }
    return any;
}

}  // namespace AscendC
