// Select with a byte mask (the devkit's advanced Select / SelectWithBytesMask):
//   Select(dst, src, scalar, mask, sharedTmpBuffer, SelectWithBytesMaskShapeInfo{firstAxis,
//          srcLastAxis, maskLastAxis}): dst[i][j] = mask[i][j] != 0 ? scalar : src[i][j] for
//   i < firstAxis, j < srcLastAxis; mask rows are maskLastAxis elements apart (>= srcLastAxis).
// DropOut(dst, src, mask (uint8), sharedTmpBuffer, keepProb, DropOutShapeInfo{firstAxis,
//   srcLastAxis, maskLastAxis}): dst = src * m * (1 / keepProb) with m the mask byte (!= 0) when
//   maskLastAxis >= srcLastAxis (byte mode) or bit j % 8 of byte j / 8 (LSB first) when a row's
//   maskLastAxis bytes hold srcLastAxis bits (bit mode).
#pragma once

#include "adv_math.h"
#include "vec_cmp.h"

namespace AscendC {

struct SelectWithBytesMaskShapeInfo {
    uint32_t firstAxis = 0;
    uint32_t srcLastAxis = 0;
    uint32_t maskLastAxis = 0;
};

inline void GetSelectMaxMinTmpSize(const TensorShape& src0, const TensorShape& src1, const uint32_t srcTypeSize,
                                   const TensorShape& mask, const uint32_t maskTypeSize, const bool, uint32_t& maxValue,
                                   uint32_t& minValue)
{
    (void)src1;
    (void)maskTypeSize;
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(std::max(src0.GetShapeSize(), mask.GetShapeSize())), srcTypeSize, 1,
                              maxValue, minValue);
}

template <typename T, typename U, bool isReuseMask = true>
void Select(const LocalTensor<T>& dst, const LocalTensor<T>& src, T scalar, const LocalTensor<U>& mask,
            const LocalTensor<uint8_t>& sharedTmpBuffer, const SelectWithBytesMaskShapeInfo& info,
            megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "Select takes half or float");
    static_assert(sizeof(U) <= 2 || std::is_same_v<U, uint32_t> || std::is_same_v<U, int32_t>, "Select: mask type");
    using namespace megafuse_emu;
    const char* api = "Select";
    Core(loc);
    AdvCheckTmp(api, sharedTmpBuffer.ref_, 1, {&dst.ref_, &src.ref_, &mask.ref_}, loc);
    if (info.maskLastAxis < info.srcLastAxis)
        Fail(loc, Str(api, ": maskLastAxis ", info.maskLastAxis, " is shorter than srcLastAxis ", info.srcLastAxis));
    const uint64_t rows = info.firstAxis, n = info.srcLastAxis, mn = info.maskLastAxis;
    if (rows == 0 || n == 0) return;
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, os{&src.ref_, sizeof(T), 1, 8, "src"}, om{&mask.ref_, sizeof(U), 1, 8, "mask"};
    uint8_t* db = VecOperand(od, rows * n, api, loc);
    const uint8_t* sb = VecOperand(os, rows * n, api, loc);
    const uint8_t* mb = VecOperand(om, (rows - 1) * mn + n, api, loc);
    for (uint64_t i = 0; i < rows; ++i)
        for (uint64_t j = 0; j < n; ++j) {
            uint8_t st = kWritten;
            const bool on = LdChecked<U>(mb, i * mn + j, st, api, "mask", loc) != 0;
            const T v = on ? scalar : static_cast<T>(LdChecked<T>(sb, i * n + j, st, api, "src", loc));
            St<T>(db, i * n + j, v);
            SetState(db + (i * n + j) * sizeof(T), sizeof(T), st);
        }
    CountVector(rows * n * sizeof(T), false);
}

struct DropOutShapeInfo {
    uint32_t firstAxis = 0;
    uint32_t srcLastAxis = 0;
    uint32_t maskLastAxis = 0;
};

inline void GetDropOutMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                    uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 1, maxValue, minValue);
}

template <typename T, bool isInitBitMode = false, uint32_t dropOutMode = 0>
void DropOut(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& mask,
             const LocalTensor<uint8_t>& sharedTmpBuffer, const float keepProb, const DropOutShapeInfo& info,
             megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "DropOut takes half or float");
    using namespace megafuse_emu;
    const char* api = "DropOut";
    Core(loc);
    AdvCheckTmp(api, sharedTmpBuffer.ref_, 1, {&dst.ref_, &src.ref_, &mask.ref_}, loc);
    if (!(keepProb > 0.0f && keepProb <= 1.0f)) Fail(loc, Str(api, ": keepProb ", keepProb, " is outside (0, 1]"));
    const uint64_t rows = info.firstAxis, n = info.srcLastAxis, mn = info.maskLastAxis;
    const bool bytes = mn >= n;
    if (!bytes && mn * 8 < n)
        Fail(loc, Str(api, ": maskLastAxis ", mn, " holds neither ", n, " mask bytes nor ", n, " mask bits"));
    if (rows == 0 || n == 0) return;
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, os{&src.ref_, sizeof(T), 1, 8, "src"}, om{&mask.ref_, 1, 1, 8, "mask"};
    uint8_t* db = VecOperand(od, rows * n, api, loc);
    const uint8_t* sb = VecOperand(os, rows * n, api, loc);
    const uint8_t* mb = VecOperand(om, rows * mn, api, loc);
    const float scale = 1.0f / keepProb;
    for (uint64_t i = 0; i < rows; ++i)
        for (uint64_t j = 0; j < n; ++j) {
            uint8_t st = kWritten;
            const uint64_t mi = i * mn + (bytes ? j : j / 8);
            const uint8_t mbyte = LdChecked<uint8_t>(mb, mi, st, api, "mask", loc);
            const bool keep = bytes ? mbyte != 0 : ((mbyte >> (j % 8)) & 1u);
            const float x = static_cast<float>(LdChecked<T>(sb, i * n + j, st, api, "src", loc));
            St<T>(db, i * n + j, static_cast<T>(keep ? x * scale : 0.0f * x));
            SetState(db + (i * n + j) * sizeof(T), sizeof(T), st);
        }
    CountVector(rows * n * sizeof(T), false);
}

}  // namespace AscendC
