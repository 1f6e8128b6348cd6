// Select with a byte mask (the devkit's advanced Select / SelectWithBytesMask):
//   Select(dst, src, scalar, mask, sharedTmpBuffer, SelectWithBytesMaskShapeInfo{firstAxis,
//          srcLastAxis, maskLastAxis}): dst[i][j] = mask[i][j] != 0 ? scalar : src[i][j] for
//   i < firstAxis, j < srcLastAxis; mask rows are maskLastAxis elements apart (>= srcLastAxis).
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

}  // namespace AscendC
