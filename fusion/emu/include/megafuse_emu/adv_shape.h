// Host side of the devkit's advanced (lib) APIs: AscendC::TensorShape (= the devkit's ge::Shape,
// a list of int64 dims) and the Get<Op>MaxMinTmpSize queries of the element-wise advanced APIs.
//
// The temporary-space sizes are megafuse's own model, not the devkit's numbers: an API with
// `vecs` scratch vectors needs at least one 256-byte repeat per vector (min) and uses at most
// one vector per input element, in the 32-bit compute type (max). The kernel side (adv_math.h)
// checks a given sharedTmpBuffer against the same minimum, so a kernel that sizes its buffer
// from these queries is consistent with the check; the devkit's own minimum is documented only
// as "not smaller than the query's minValue", which is what is enforced.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace AscendC {

class TensorShape {
public:
    TensorShape() = default;
    TensorShape(const std::vector<int64_t>& dims) : dims_(dims) {}  // NOLINT: implicit like ge::Shape
    TensorShape(std::initializer_list<int64_t> dims) : dims_(dims) {}
    size_t GetDimNum() const { return dims_.size(); }
    int64_t GetDim(size_t i) const { return i < dims_.size() ? dims_[i] : 0; }
    void SetDim(size_t i, int64_t v)
    {
        if (i < dims_.size()) dims_[i] = v;
    }
    std::vector<int64_t> GetDims() const { return dims_; }
    int64_t GetShapeSize() const
    {
        int64_t n = 1;
        for (int64_t d : dims_) n *= d;
        return dims_.empty() ? 0 : n;
    }

private:
    std::vector<int64_t> dims_;
};

}  // namespace AscendC

namespace ge {
using Shape = AscendC::TensorShape;
}

namespace megafuse_emu {

constexpr uint32_t kAdvRepeatBytes = 256;

// The minimum temporary space (bytes) of an advanced API with `vecs` scratch vectors.
constexpr uint32_t AdvMinTmp(uint32_t vecs) { return vecs * kAdvRepeatBytes; }

inline void AdvTmpSizes(uint64_t elems, uint32_t typeSize, uint32_t vecs, uint32_t& maxValue, uint32_t& minValue)
{
    minValue = AdvMinTmp(vecs);
    const uint64_t per = (elems * std::max<uint32_t>(typeSize, 4) + 31) / 32 * 32;
    maxValue = static_cast<uint32_t>(std::max<uint64_t>(minValue, vecs * per));
}

// Scratch vectors of each element-wise advanced API (one source for host and kernel).
namespace adv_vecs {
constexpr uint32_t kAcosh = 2, kCeil = 1, kFrac = 1, kExp = 2, kFmod = 2, kPower = 3, kXor = 1, kClamp = 1,
                   kAxpy = 1, kErf = 3, kLog = 1, kGelu = 2, kGeGLU = 2, kSwiGLU = 2, kSilu = 1, kSwish = 1;
}

}  // namespace megafuse_emu

namespace AscendC {

#define MEGAFUSE_EMU_TMP_QUERY(NAME, VECS)                                                                     \
    inline void Get##NAME##MaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize,                 \
                                         const bool /*isReuseSource*/, uint32_t& maxValue, uint32_t& minValue) \
    {                                                                                                          \
        megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(srcShape.GetShapeSize()), typeSize, VECS, maxValue,    \
                                  minValue);                                                                   \
    }

MEGAFUSE_EMU_TMP_QUERY(Acosh, megafuse_emu::adv_vecs::kAcosh)
MEGAFUSE_EMU_TMP_QUERY(Ceil, megafuse_emu::adv_vecs::kCeil)
MEGAFUSE_EMU_TMP_QUERY(Frac, megafuse_emu::adv_vecs::kFrac)
MEGAFUSE_EMU_TMP_QUERY(Exp, megafuse_emu::adv_vecs::kExp)
MEGAFUSE_EMU_TMP_QUERY(Fmod, megafuse_emu::adv_vecs::kFmod)
MEGAFUSE_EMU_TMP_QUERY(Xor, megafuse_emu::adv_vecs::kXor)
MEGAFUSE_EMU_TMP_QUERY(Clamp, megafuse_emu::adv_vecs::kClamp)
MEGAFUSE_EMU_TMP_QUERY(Axpy, megafuse_emu::adv_vecs::kAxpy)
MEGAFUSE_EMU_TMP_QUERY(Erf, megafuse_emu::adv_vecs::kErf)
MEGAFUSE_EMU_TMP_QUERY(Log, megafuse_emu::adv_vecs::kLog)
MEGAFUSE_EMU_TMP_QUERY(GeGLU, megafuse_emu::adv_vecs::kGeGLU)
MEGAFUSE_EMU_TMP_QUERY(Sigmoid, 1)
#undef MEGAFUSE_EMU_TMP_QUERY

inline void GetSiluTmpSize(const TensorShape& s, const uint32_t typeSize, const bool, uint32_t& maxValue,
                           uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, megafuse_emu::adv_vecs::kSilu,
                              maxValue, minValue);
}
inline void GetSwishTmpSize(const TensorShape& s, const uint32_t typeSize, const bool, uint32_t& maxValue,
                            uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, megafuse_emu::adv_vecs::kSwish,
                              maxValue, minValue);
}
// SwiGLU's query takes isReuseSource last.
inline void GetSwiGLUMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, uint32_t& maxValue,
                                   uint32_t& minValue, const bool = false)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, megafuse_emu::adv_vecs::kSwiGLU,
                              maxValue, minValue);
}
inline uint32_t GetGeluMinTmpSize(const TensorShape&, const uint32_t)
{
    return megafuse_emu::AdvMinTmp(megafuse_emu::adv_vecs::kGelu);
}
inline uint32_t GetGeluMaxTmpSize(const TensorShape& s, const uint32_t typeSize)
{
    uint32_t mx = 0, mn = 0;
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, megafuse_emu::adv_vecs::kGelu, mx, mn);
    return mx;
}
// Power: the larger operand decides the element count; typeIsInt picks nothing here.
inline void GetPowerMaxMinTmpSize(const TensorShape& s0, const TensorShape& s1, const bool /*typeIsInt*/,
                                  const uint32_t typeSize, const bool, uint32_t& maxValue, uint32_t& minValue)
{
    const int64_t n = std::max(s0.GetShapeSize(), s1.GetShapeSize());
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(n), typeSize, megafuse_emu::adv_vecs::kPower, maxValue, minValue);
}

}  // namespace AscendC
