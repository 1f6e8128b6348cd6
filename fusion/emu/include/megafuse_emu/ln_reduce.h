// Cross-lane vector APIs of the channel LayerNorm (fusion/codegen/ascendc/templates/ln_norm.h):
// WholeReduceSum (the sum of each repeat's enabled lanes) and Brcb (each of 8 source elements a
// repeat filled into one 32 B DataBlock). Facts from the devkit's public API pages
// (WholeReduceSum, now listed as ReduceRepeat<SUM>; Brcb); no vendor code.
//
// Written beside the branch that adds the emulator's general reduce/broadcast APIs (emub): when
// that lands, this header's definitions are the ones to drop (MEGAFUSE_EMU_LN_REDUCE marks them).
//
// Counting: one instruction a call, its repeats the repeat count (as every repeat-form op) --
// except Brcb on arch 2002 (310P), whose devkit form is per repeat one vadds (the 8 elements
// copied to 8 rows) and one v4dtrans (the 8x8 transpose): 2 instructions and 2 repeats a
// repeat, dstBlkStride 1 only; its 8 KiB scratch is the UB above ub_usable_bytes (248 KiB).
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

struct BrcbRepeatParams {
    BrcbRepeatParams() {}
    BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn)
    {}
    uint16_t dstRepStride = 8;
    uint16_t dstBlkStride = 1;
};

// Brcb: repeat i fills DataBlock j (j < 8) at i * dstRepStride + j * dstBlkStride (in DataBlocks)
// with src[i * 8 + j]. src and dst must not overlap; dstBlkStride 0 is undefined (refused).
template <typename T>
void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint8_t repeatTime, const BrcbRepeatParams& p,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Brcb: 16- or 32-bit elements");
    using namespace megafuse_emu;
    Core(loc);
    if (p.dstBlkStride == 0) Fail(loc, "Brcb: dstBlkStride 0 is undefined behaviour");
    const bool coupled = g_core->soc.arch == 2002;   // the SoC the kernel runs on
    if (coupled && p.dstBlkStride != 1) Fail(loc, "Brcb: arch 2002 (310P) supports dstBlkStride 1 only");
    if (repeatTime == 0) return;
    const uint64_t e = 32 / sizeof(T), n = static_cast<uint64_t>(repeatTime) * 8;
    const uint64_t hi = (static_cast<uint64_t>(repeatTime - 1) * p.dstRepStride + 7ull * p.dstBlkStride + 1) * e;
    Operand so = Op(src, "src"), dop = Op(dst, "dst");
    const uint8_t* s = VecOperand(so, n, "Brcb", loc);
    uint8_t* d = VecOperand(dop, hi, "Brcb", loc);
    if (d < s + n * sizeof(T) && s < d + hi * sizeof(T)) Fail(loc, "Brcb: src and dst overlap");
    for (uint64_t i = 0; i < repeatTime; ++i)
        for (uint64_t j = 0; j < 8; ++j) {
            const uint8_t* ps = s + (i * 8 + j) * sizeof(T);
            const uint8_t st = ElemState(ps, sizeof(T));
            if (st == kNeverWritten) NoteOrigin(ps, sizeof(T), "Brcb", "src", loc);
            const T v = Ld<T>(s, i * 8 + j);
            const uint64_t b = (i * p.dstRepStride + j * p.dstBlkStride) * e;
            for (uint64_t k = 0; k < e; ++k) St<T>(d, b + k, v);
            SetState(d + b * sizeof(T), e * sizeof(T), st == kWritten ? kWritten : kDerived);
        }
    if (coupled) {   // vadds + v4dtrans a repeat (module doc)
        Count(VECTOR_INSTRUCTIONS, 2ull * repeatTime);
        Count(VECTOR_REPEATS, 2ull * repeatTime);
    } else {
        Count(VECTOR_INSTRUCTIONS);
        Count(VECTOR_REPEATS, repeatTime);
    }
}

}  // namespace AscendC
