// Pad and UnPad of the devkit's advanced API (semantics: their API pages), a 2-D [height, width]
// tensor in UB, along width:
//   Pad(dst, src, PadParams{leftPad, rightPad, padValue}, [tmp,] PadTiling)
//     width not 32-byte aligned: src holds height rows of width elements back to back; dst rows
//       are alignedWidth = align32(width) apart: leftPad values, the row, rightPad values --
//       leftPad + width + rightPad must be alignedWidth (the page: "pad to 32 B alignment").
//     width aligned with redundant columns (originWidth < width, from the tiling): dst = src,
//       columns [originWidth, originWidth + rightPad) set to padValue. An aligned width with no
//       redundant column is refused, as the page says.
//   UnPad(dst, src, UnPadParams{leftPad, rightPad}, [tmp,] UnPadTiling): src rows of width
//     (32-byte aligned) elements, dst rows of width - rightPad elements back to back; leftPad
//     "does not take effect yet" (page) and must be 0, rightPad in (0, 32 B).
// T: int16_t, uint16_t, half, int32_t, uint32_t, float. The tiling structs are megafuse's own (the
// shape the kernel API needs; one struct for host and kernel); tmp sizes: adv_shape.h's model.
#pragma once

#include "adv_softmax_ext.h"  // SmOperand

// Not at global scope: the samples name them AscendC::tiling::PadTiling (kernel) and, inside
// namespace optiling, PadTiling (host), and a kernel may have a PadTiling struct of its own.
namespace AscendC::tiling {
struct PadTiling {
    uint32_t srcHeight = 0, srcWidth = 0, srcOriWidth = 0, tmpBufSize = 0;
};
struct UnPadTiling {
    uint32_t srcHeight = 0, srcWidth = 0, tmpBufSize = 0, reserved = 0;
};
}  // namespace AscendC::tiling
namespace optiling {
using AscendC::tiling::PadTiling;
using AscendC::tiling::UnPadTiling;
}  // namespace optiling

namespace AscendC {

struct PadParams {
    uint16_t leftPad = 0;
    uint16_t rightPad = 0;
    int32_t padValue = 0;
};
struct UnPadParams {
    uint16_t leftPad = 0;
    uint16_t rightPad = 0;
};

inline void GetPadMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, uint32_t& maxValue, uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 1, maxValue, minValue);
}
inline void PadTilingFunc(const TensorShape& s, const TensorShape& ori, const uint32_t stackBufferSize,
                          const uint32_t, tiling::PadTiling& t)
{
    t = tiling::PadTiling{};
    t.srcHeight = static_cast<uint32_t>(s.GetDim(0));
    t.srcWidth = static_cast<uint32_t>(s.GetDim(1));
    t.srcOriWidth = static_cast<uint32_t>(ori.GetDim(1));
    t.tmpBufSize = stackBufferSize;
}
template <typename Platform>
void GetUnPadMaxMinTmpSize(const Platform&, const TensorShape& s, const uint32_t typeSize, uint32_t& maxValue,
                           uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 1, maxValue, minValue);
}
inline void UnPadTilingFunc(const TensorShape& s, const uint32_t stackBufferSize, const uint32_t, tiling::UnPadTiling& t)
{
    t = tiling::UnPadTiling{};
    t.srcHeight = static_cast<uint32_t>(s.GetDim(0));
    t.srcWidth = static_cast<uint32_t>(s.GetDim(1));
    t.tmpBufSize = stackBufferSize;
}

}  // namespace AscendC

namespace megafuse_emu {

template <typename T>
constexpr bool kPadType = std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t> || std::is_same_v<T, half> ||
                          std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, float>;

template <typename T>
void PadImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const AscendC::PadParams& p,
             const AscendC::LocalTensor<uint8_t>* tmp, const AscendC::tiling::PadTiling& t, const Loc& loc)
{
    static_assert(kPadType<T>, "Pad takes int16_t, uint16_t, half, int32_t, uint32_t or float");
    const char* api = "Pad";
    Core(loc);
    const uint64_t h = t.srcHeight, w = t.srcWidth, ow = t.srcOriWidth, blk = 32 / sizeof(T);
    if (h == 0 || w == 0 || ow == 0 || ow > w)
        Fail(loc, Str(api, ": the tiling's shape [", h, ", ", w, "] (original width ", ow,
                      ") is not valid (fill it with PadTilingFunc)"));
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&dst.ref_, &src.ref_}, loc);
    AdvNoOverlap(api, dst.ref_, src.ref_, "src", loc);
    const uint64_t aw = (w + blk - 1) / blk * blk;
    const bool aligned = aw == w;
    if (aligned && ow == w)
        Fail(loc, Str(api, ": width ", w, " is 32-byte aligned and has no redundant column: nothing to pad "
                           "(the page does not support it)"));
    if (!aligned && p.leftPad + w + p.rightPad != aw)
        Fail(loc, Str(api, ": leftPad ", p.leftPad, " + width ", w, " + rightPad ", p.rightPad,
                      " must make the 32-byte aligned width ", aw));
    const T pv = static_cast<T>(p.padValue);
    const uint8_t* sb = SmOperand(src, h * w, api, "src", loc);
    uint8_t* db = SmOperand(dst, h * aw, api, "dst", loc);
    for (uint64_t i = 0; i < h; ++i)
        for (uint64_t j = 0; j < aw; ++j) {
            uint8_t st = kWritten;
            T v = pv;
            if (aligned) {
                if (!(j >= ow && j < ow + p.rightPad)) v = static_cast<T>(LdChecked<T>(sb, i * w + j, st, api, "src", loc));
            } else if (j >= p.leftPad && j < p.leftPad + w) {
                v = static_cast<T>(LdChecked<T>(sb, i * w + j - p.leftPad, st, api, "src", loc));
            }
            St<T>(db, i * aw + j, v);
            SetState(db + (i * aw + j) * sizeof(T), sizeof(T), st);
        }
    CountVector(h * aw * sizeof(T), false);
}

template <typename T>
void UnPadImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const AscendC::UnPadParams& p,
               const AscendC::LocalTensor<uint8_t>* tmp, const AscendC::tiling::UnPadTiling& t, const Loc& loc)
{
    static_assert(kPadType<T>, "UnPad takes int16_t, uint16_t, half, int32_t, uint32_t or float");
    const char* api = "UnPad";
    Core(loc);
    const uint64_t h = t.srcHeight, w = t.srcWidth, blk = 32 / sizeof(T);
    if (h == 0 || w == 0)
        Fail(loc, Str(api, ": the tiling's shape [", h, ", ", w, "] is not valid (fill it with UnPadTilingFunc)"));
    if (w % blk != 0) Fail(loc, Str(api, ": width ", w, " is not 32-byte aligned (the page does not support it)"));
    if (p.leftPad != 0) Fail(loc, Str(api, ": leftPad ", p.leftPad, " (only rightPad takes effect; leftPad must be 0)"));
    if (p.rightPad == 0 || p.rightPad >= blk)
        Fail(loc, Str(api, ": rightPad ", p.rightPad, " must be in (0, ", blk, ") columns (less than 32 B)"));
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&dst.ref_, &src.ref_}, loc);
    AdvNoOverlap(api, dst.ref_, src.ref_, "src", loc);
    const uint64_t ow = w - p.rightPad;
    const uint8_t* sb = SmOperand(src, h * w, api, "src", loc);
    uint8_t* db = SmOperand(dst, h * ow, api, "dst", loc);
    for (uint64_t i = 0; i < h; ++i)
        for (uint64_t j = 0; j < ow; ++j) {
            uint8_t st = kWritten;
            St<T>(db, i * ow + j, static_cast<T>(LdChecked<T>(sb, i * w + j, st, api, "src", loc)));
            SetState(db + (i * ow + j) * sizeof(T), sizeof(T), st);
        }
    CountVector(h * w * sizeof(T), false);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T>
void Pad(const LocalTensor<T>& dst, const LocalTensor<T>& src, PadParams& padParams,
         const LocalTensor<uint8_t>& sharedTmpBuffer, tiling::PadTiling& tiling,
         megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::PadImpl(dst, src, padParams, &sharedTmpBuffer, tiling, loc);
}
template <typename T>
void Pad(const LocalTensor<T>& dst, const LocalTensor<T>& src, PadParams& padParams, tiling::PadTiling& tiling,
         megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::PadImpl(dst, src, padParams, static_cast<const LocalTensor<uint8_t>*>(nullptr), tiling, loc);
}
template <typename T>
void UnPad(const LocalTensor<T>& dst, const LocalTensor<T>& src, UnPadParams& unPadParams,
           LocalTensor<uint8_t>& sharedTmpBuffer, tiling::UnPadTiling& tiling, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::UnPadImpl(dst, src, unPadParams, &sharedTmpBuffer, tiling, loc);
}
template <typename T>
void UnPad(const LocalTensor<T>& dst, const LocalTensor<T>& src, UnPadParams& unPadParams, tiling::UnPadTiling& tiling,
           megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::UnPadImpl(dst, src, unPadParams, static_cast<const LocalTensor<uint8_t>*>(nullptr), tiling, loc);
}

}  // namespace AscendC
