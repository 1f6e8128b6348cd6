// WholeReduceSum, the cross-lane sum of the channel LayerNorm (fusion/codegen/ascendc/templates/
// ln_norm.h): the sum of each repeat's enabled lanes. Facts from the devkit's public API page
// (WholeReduceSum, now listed as ReduceRepeat<SUM>); no vendor code. The norm's Brcb is
// megafuse_emu/vec_basic.h's (on 310P two instructions and two repeats a repeat, dstBlkStride 1
// only; its 8 KiB scratch is the UB above ub_usable_bytes, 248 KiB).
//
// Counting: one instruction a call, its repeats the repeat count (as every repeat-form op).
#pragma once

#include "vector_lanes.h"

#define MEGAFUSE_EMU_LN_REDUCE 1

namespace AscendC {

// WholeReduceSum(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride):
// dst[r * dstRepStride] = sum of the enabled lanes of repeat r (lane l: element
// r * srcRepStride * E + (l / E) * srcBlkStride * E + l % E, E elements a DataBlock);
// dstRepStride in elements of T. Summed pairwise (a tree over the lanes, as the unit's adder).
template <typename T>
void WholeReduceSumLanes(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                         const megafuse_emu::LaneMask& mask, const int32_t repeatTime, const int32_t dstRepStride,
                         const int32_t srcBlkStride, const int32_t srcRepStride, const megafuse_emu::Loc& loc)
{
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, half>, "WholeReduceSum: half or float");
    using namespace megafuse_emu;
    Core(loc);
    if (repeatTime < 0 || repeatTime > 255)
        Fail(loc, Str(api, ": repeatTime ", repeatTime, " is outside [0, 255]"));
    if (repeatTime == 0 || mask.Empty()) return;
    const uint32_t lanes = 256 / sizeof(T), e = 32 / sizeof(T);
    auto at = [&](int64_t r, uint32_t l) {
        return static_cast<uint64_t>(r) * srcRepStride * e + (l / e) * srcBlkStride * e + l % e;
    };
    uint64_t hi = 0;
    for (uint32_t l = 0; l < lanes; ++l)
        if (mask.Has(l)) hi = std::max(hi, at(repeatTime - 1, l));
    Operand so = Op(src, "src"), dop = Op(dst, "dst");
    const uint8_t* s = VecOperand(so, hi + 1, api, loc);
    uint8_t* d = VecOperand(dop, static_cast<uint64_t>(repeatTime - 1) * dstRepStride + 1, api, loc);
    for (int32_t r = 0; r < repeatTime; ++r) {
        CalcT<T> v[128] = {};
        uint8_t st = kWritten;
        for (uint32_t l = 0; l < lanes; ++l) {
            if (!mask.Has(l)) continue;
            const uint8_t* p = s + at(r, l) * sizeof(T);
            const uint8_t ps = ElemState(p, sizeof(T));
            if (ps == kNeverWritten) NoteOrigin(p, sizeof(T), api, "src", loc);
            if (ps != kWritten) st = kDerived;
            v[l] = static_cast<CalcT<T>>(Ld<T>(s, at(r, l)));
        }
        for (uint32_t w = lanes / 2; w >= 1; w /= 2)
            for (uint32_t l = 0; l < w; ++l) v[l] = static_cast<CalcT<T>>(static_cast<T>(v[l] + v[l + w]));
        const uint64_t o = static_cast<uint64_t>(r) * dstRepStride;
        St<T>(d, o, static_cast<T>(v[0]));
        SetState(d + o * sizeof(T), sizeof(T), st);
    }
    Count(VECTOR_INSTRUCTIONS);
    Count(VECTOR_REPEATS, static_cast<uint64_t>(repeatTime));
}

template <typename T, bool isSetMask = true>
void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                    const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                    const int32_t srcRepStride, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    WholeReduceSumLanes("WholeReduceSum", dst, src, megafuse_emu::ContinuousMask(mask, sizeof(T), "WholeReduceSum", loc),
                        repeatTime, dstRepStride, srcBlkStride, srcRepStride, loc);
}

template <typename T, bool isSetMask = true>
void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                    const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                    const int32_t srcRepStride, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    WholeReduceSumLanes("WholeReduceSum", dst, src, megafuse_emu::BitMask(mask, sizeof(T), "WholeReduceSum", loc),
                        repeatTime, dstRepStride, srcBlkStride, srcRepStride, loc);
}

// Brcb (the per-pixel broadcast of the norm): megafuse_emu/vec_basic.h

}  // namespace AscendC
