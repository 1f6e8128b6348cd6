// Fill (devkit): Fill(GlobalTensor, size, value) writes `size` copies of value into GM (the
// devkit stages them through UB and MTE3; the kernel orders later UB use with MTE3_MTE2), and
// Fill(LocalTensor, InitConstValueParams) is InitConstValue's newer name (cube.h).
// Copy(dst, src, mask, repeatTime, CopyRepeatParams): UB -> UB through the vector unit, lanes
// and strides as the other repeat-form vector ops (strides in 32-byte blocks).
#pragma once

#include "cube.h"
#include "vector.h"

namespace AscendC {

template <typename T>
void Fill(const GlobalTensor<T>& gm, const uint64_t size, const T value, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Core(loc);
    if (size == 0) return;
    uint8_t* p = gm.Access(0, size, "Fill", loc);
    for (uint64_t i = 0; i < size; ++i) std::memcpy(p + i * sizeof(T), &value, sizeof(T));
    megafuse_emu::Count(megafuse_emu::GM_WRITE_BYTES, size * sizeof(T));
}

template <typename T>
void Fill(const LocalTensor<T>& dst, const InitConstValueParams<T>& p, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    InitConstValue(dst, p, loc);
}

struct CopyRepeatParams {
    CopyRepeatParams() {}
    CopyRepeatParams(const uint16_t dstStrideIn, const uint16_t srcStrideIn, uint16_t dstRepeatSizeIn,
                     uint16_t srcRepeatSizeIn)
        : dstStride(dstStrideIn), srcStride(srcStrideIn), dstRepeatSize(dstRepeatSizeIn), srcRepeatSize(srcRepeatSizeIn)
    {}
    uint16_t dstStride = DEFAULT_BLK_STRIDE;
    uint16_t srcStride = DEFAULT_BLK_STRIDE;
    uint16_t dstRepeatSize = DEFAULT_REPEAT_STRIDE;
    uint16_t srcRepeatSize = DEFAULT_REPEAT_STRIDE;
};

template <typename T, bool isSetMask = true>
void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask, megafuse_emu::RepeatTimes repeatTime,
          const CopyRepeatParams& p, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Copy takes 16- or 32-bit types");
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::RunRepeat<2>("Copy", {megafuse_emu::Op(dst, "dst", p.dstStride, p.dstRepeatSize),
                                        megafuse_emu::Op(src, "src", p.srcStride, p.srcRepeatSize)},
                               megafuse_emu::ContinuousMask(mask, sizeof(T), "Copy", loc), repeatTime,
                               megafuse_emu::UnaryLane<T, T>([](T x) { return x; }), loc);
}
template <typename T, bool isSetMask = true>
void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], megafuse_emu::RepeatTimes repeatTime,
          const CopyRepeatParams& p, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Copy takes 16- or 32-bit types");
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::RunRepeat<2>("Copy", {megafuse_emu::Op(dst, "dst", p.dstStride, p.dstRepeatSize),
                                        megafuse_emu::Op(src, "src", p.srcStride, p.srcRepeatSize)},
                               megafuse_emu::BitMask(mask, sizeof(T), "Copy", loc), repeatTime,
                               megafuse_emu::UnaryLane<T, T>([](T x) { return x; }), loc);
}

}  // namespace AscendC
