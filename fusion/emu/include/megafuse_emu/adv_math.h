// Kernel side of the devkit's element-wise advanced (lib) APIs: Acosh, Ceil, Frac, Exp (with the
// Taylor expansion level), Log, Erf, Fmod, Power (tensor/scalar forms), Xor, ClampMin/ClampMax,
// Axpy with a shared buffer, Gelu, GeGLU, SwiGLU, Silu, Swish. Semantics from the devkit API
// reference pages; each lane computes in float (or the integer type) with one rounding at the
// end -- the device's polynomial approximations are not modelled, except Exp's documented
// Taylor mode (exp(floor(x)) * sum_{i<=n} frac^i / i!).
//
// Each API has the devkit's overloads: (dst, src..., sharedTmpBuffer, calCount),
// (dst, src..., sharedTmpBuffer), (dst, src..., calCount), (dst, src...); without calCount the
// whole src tensor is computed. Enforced: operands in UB and 32-byte aligned, calCount within
// every operand, dst not overlapping a source (the reference pages forbid it), a given
// sharedTmpBuffer in UB, not overlapping an operand, and at least the minimum of the host
// query (adv_shape.h), uninitialized source reads.
#pragma once

#include <cmath>

#include "adv_shape.h"
#include "vector.h"

namespace megafuse_emu {

inline bool Overlaps(const TensorRef& a, const TensorRef& b)
{
    return a.block != nullptr && a.block == b.block && a.off < b.off + b.len && b.off < a.off + a.len;
}

inline void AdvNoOverlap(const char* api, const TensorRef& dst, const TensorRef& src, const char* sname,
                         const Loc& loc)
{
    if (Overlaps(dst, src)) Fail(loc, Str(api, ": dst and ", sname, " overlap (the devkit does not allow it)"));
}

inline void AdvCheckTmp(const char* api, const TensorRef& tmp, uint32_t vecs, std::initializer_list<const TensorRef*> ops,
                        const Loc& loc)
{
    CheckMem(tmp, Mem::UB, api, "sharedTmpBuffer", loc);
    CheckLocalAlign(tmp, 32, api, "sharedTmpBuffer", loc);
    if (tmp.len < AdvMinTmp(vecs))
        Fail(loc, Str(api, ": sharedTmpBuffer holds ", tmp.len, " bytes, less than the minimum ", AdvMinTmp(vecs),
                      " bytes (Get", api, "MaxMinTmpSize minValue)"));
    for (const TensorRef* o : ops)
        if (Overlaps(tmp, *o)) Fail(loc, Str(api, ": sharedTmpBuffer overlaps an operand"));
}

template <typename T>
constexpr bool kHalfOrFloat = std::is_same_v<T, half> || std::is_same_v<T, float>;

// dst = f(src) per lane, in the compute type.
template <typename T, typename F>
void AdvUnary(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
              const AscendC::LocalTensor<uint8_t>* tmp, uint32_t vecs, int64_t count, F f, const Loc& loc)
{
    Core(loc);
    AdvNoOverlap(api, dst.ref_, src.ref_, "src", loc);
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, vecs, {&dst.ref_, &src.ref_}, loc);
    RunCount<2>(api, {Op(dst, "dst"), Op(src, "src")}, count,
                UnaryLane<T, T>([f](T x) {
                    if constexpr (kIsFloatLike<T>) return static_cast<T>(static_cast<float>(f(static_cast<CalcT<T>>(x))));
                    else return static_cast<T>(f(static_cast<CalcT<T>>(x)));
                }),
                loc);
}

// dst = f(src0, src1) per lane.
template <typename T, typename F>
void AdvBinary(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
               const AscendC::LocalTensor<T>& s1, const AscendC::LocalTensor<uint8_t>* tmp, uint32_t vecs,
               int64_t count, F f, const Loc& loc)
{
    Core(loc);
    AdvNoOverlap(api, dst.ref_, s0.ref_, "src0", loc);
    AdvNoOverlap(api, dst.ref_, s1.ref_, "src1", loc);
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, vecs, {&dst.ref_, &s0.ref_, &s1.ref_}, loc);
    RunCount<3>(api, {Op(dst, "dst"), Op(s0, "src0"), Op(s1, "src1")}, count, BinaryLane<T>(f), loc);
}

inline double GeluTanh(double x)  // the devkit's Gelu: the tanh form, x * sigmoid(1.5957691 * (x + 0.044715 x^3))
{
    return x / (1.0 + std::exp(-1.5957691216057308 * (x + 0.044715 * x * x * x)));
}

inline double TaylorExp(double x, int terms)
{
    if (terms == 0) return std::exp(x);
    const double xa = std::floor(x), xb = x - xa;
    double item = 1.0, sum = 1.0;
    for (int i = 0; i < terms; ++i) {
        item *= xb / (i + 1);
        sum += item;
    }
    return std::exp(xa) * sum;
}

}  // namespace megafuse_emu

namespace AscendC {

// Unary advanced APIs, four overloads each.
#define MEGAFUSE_EMU_ADV_UNARY(NAME, VECS, TYPECHECK, EXPR)                                                      \
    template <typename T, bool isReuseSource = false>                                                            \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
              const uint32_t calCount, megafuse_emu::Loc loc = megafuse_emu::Loc::current())                     \
    {                                                                                                            \
        static_assert(TYPECHECK, #NAME ": unsupported data type");                                               \
        megafuse_emu::AdvUnary(#NAME, dst, src, &sharedTmpBuffer, VECS, calCount, [](auto x) { return EXPR; }, loc); \
    }                                                                                                            \
    template <typename T, bool isReuseSource = false>                                                            \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        NAME<T, isReuseSource>(dst, src, sharedTmpBuffer, src.GetSize(), loc);                                   \
    }                                                                                                            \
    template <typename T, bool isReuseSource = false>                                                            \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount,                     \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        static_assert(TYPECHECK, #NAME ": unsupported data type");                                               \
        megafuse_emu::AdvUnary(#NAME, dst, src, nullptr, VECS, calCount, [](auto x) { return EXPR; }, loc);     \
    }                                                                                                            \
    template <typename T, bool isReuseSource = false>                                                            \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, megafuse_emu::Loc loc = megafuse_emu::Loc::current()) \
    {                                                                                                            \
        NAME<T, isReuseSource>(dst, src, src.GetSize(), loc);                                                    \
    }

MEGAFUSE_EMU_ADV_UNARY(Acosh, megafuse_emu::adv_vecs::kAcosh, megafuse_emu::kHalfOrFloat<T>, std::acosh(x))
MEGAFUSE_EMU_ADV_UNARY(Ceil, megafuse_emu::adv_vecs::kCeil, megafuse_emu::kHalfOrFloat<T>, std::ceil(x))
// Frac: x - trunc(x) per the reference page's examples agrees with x - floor(x) only for x >= 0;
// the sample's golden is x - floor(x) for huge |x| (integral, so 0 either way). The page defines
// Frac(x) = x - floor(x).
MEGAFUSE_EMU_ADV_UNARY(Frac, megafuse_emu::adv_vecs::kFrac, megafuse_emu::kHalfOrFloat<T>,
                       std::isfinite(x) ? x - std::floor(x) : decltype(x)(0))
MEGAFUSE_EMU_ADV_UNARY(Log, megafuse_emu::adv_vecs::kLog, megafuse_emu::kHalfOrFloat<T>, std::log(x))
MEGAFUSE_EMU_ADV_UNARY(Erf, megafuse_emu::adv_vecs::kErf, megafuse_emu::kHalfOrFloat<T>, std::erf(x))
MEGAFUSE_EMU_ADV_UNARY(Silu, megafuse_emu::adv_vecs::kSilu, megafuse_emu::kHalfOrFloat<T>,
                       static_cast<float>(x / (1.0 + std::exp(-static_cast<double>(x)))))
#undef MEGAFUSE_EMU_ADV_UNARY

// Gelu<T, highPrecision, highPerformance>: the tanh form.
template <typename T, bool highPrecision = false, bool highPerformance = false>
void Gelu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
          const uint32_t dataSize, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(megafuse_emu::kHalfOrFloat<T>, "Gelu takes half or float");
    megafuse_emu::AdvUnary("Gelu", dst, src, &sharedTmpBuffer, megafuse_emu::adv_vecs::kGelu, dataSize,
                           [](auto x) { return static_cast<float>(megafuse_emu::GeluTanh(x)); }, loc);
}
template <typename T, bool highPrecision = false, bool highPerformance = false>
void Gelu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t dataSize,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(megafuse_emu::kHalfOrFloat<T>, "Gelu takes half or float");
    megafuse_emu::AdvUnary("Gelu", dst, src, nullptr, megafuse_emu::adv_vecs::kGelu, dataSize,
                           [](auto x) { return static_cast<float>(megafuse_emu::GeluTanh(x)); }, loc);
}

// Swish(dst, src, dataSize, beta) = x / (1 + exp(-beta x)).
template <typename T, bool isReuseSource = false>
void Swish(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t dataSize, const T scalarValue,
           megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(megafuse_emu::kHalfOrFloat<T>, "Swish takes half or float");
    const double beta = static_cast<float>(scalarValue);
    megafuse_emu::AdvUnary("Swish", dst, src, nullptr, megafuse_emu::adv_vecs::kSwish, dataSize,
                           [beta](auto x) { return static_cast<float>(x / (1.0 + std::exp(-beta * x))); }, loc);
}

// Exp<T, taylorExpandLevel, isReuseSource>: level 0 is exp(x); otherwise exp(floor(x)) times the
// Taylor polynomial of degree taylorExpandLevel in frac(x) (devkit Exp page).
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
void Exp(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
         const uint32_t calCount, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(megafuse_emu::kHalfOrFloat<T>, "Exp takes half or float");
    megafuse_emu::AdvUnary("Exp", dst, src, &sharedTmpBuffer, megafuse_emu::adv_vecs::kExp, calCount,
                           [](auto x) { return static_cast<float>(megafuse_emu::TaylorExp(x, taylorExpandLevel)); }, loc);
}
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
void Exp(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount,
         megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(megafuse_emu::kHalfOrFloat<T>, "Exp takes half or float");
    megafuse_emu::AdvUnary("Exp", dst, src, nullptr, megafuse_emu::adv_vecs::kExp, calCount,
                           [](auto x) { return static_cast<float>(megafuse_emu::TaylorExp(x, taylorExpandLevel)); }, loc);
}

// ClampMin / ClampMax: dst = max(src, scalar) / min(src, scalar).
#define MEGAFUSE_EMU_ADV_CLAMP(NAME, EXPR)                                                                       \
    template <typename T, bool isReuseSource = false>                                                            \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
              const T scalar, const uint32_t calCount, megafuse_emu::Loc loc = megafuse_emu::Loc::current())     \
    {                                                                                                            \
        static_assert(megafuse_emu::kHalfOrFloat<T>, #NAME " takes half or float");                              \
        const float s = static_cast<float>(scalar);                                                              \
        megafuse_emu::AdvUnary(#NAME, dst, src, &sharedTmpBuffer, megafuse_emu::adv_vecs::kClamp, calCount,     \
                               [s](auto x) { return EXPR; }, loc);                                               \
    }                                                                                                            \
    template <typename T, bool isReuseSource = false>                                                            \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T scalar, const uint32_t calCount,     \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        static_assert(megafuse_emu::kHalfOrFloat<T>, #NAME " takes half or float");                              \
        const float s = static_cast<float>(scalar);                                                              \
        megafuse_emu::AdvUnary(#NAME, dst, src, nullptr, megafuse_emu::adv_vecs::kClamp, calCount,              \
                               [s](auto x) { return EXPR; }, loc);                                               \
    }
MEGAFUSE_EMU_ADV_CLAMP(ClampMin, (x < s ? s : x))
MEGAFUSE_EMU_ADV_CLAMP(ClampMax, (x > s ? s : x))
#undef MEGAFUSE_EMU_ADV_CLAMP

// Binary advanced APIs, four overloads each.
#define MEGAFUSE_EMU_ADV_BINARY(NAME, VECS, TYPECHECK, EXPR)                                                     \
    template <typename T, bool isReuseSource = false>                                                            \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                 \
              const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,                              \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        static_assert(TYPECHECK, #NAME ": unsupported data type");                                               \
        megafuse_emu::AdvBinary(#NAME, dst, src0, src1, &sharedTmpBuffer, VECS, calCount,                        \
                                [](auto a, auto b) { return EXPR; }, loc);                                       \
    }                                                                                                            \
    template <typename T, bool isReuseSource = false>                                                            \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                 \
              const LocalTensor<uint8_t>& sharedTmpBuffer, megafuse_emu::Loc loc = megafuse_emu::Loc::current()) \
    {                                                                                                            \
        NAME<T, isReuseSource>(dst, src0, src1, sharedTmpBuffer, src0.GetSize(), loc);                           \
    }                                                                                                            \
    template <typename T, bool isReuseSource = false>                                                            \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                 \
              const uint32_t calCount, megafuse_emu::Loc loc = megafuse_emu::Loc::current())                     \
    {                                                                                                            \
        static_assert(TYPECHECK, #NAME ": unsupported data type");                                               \
        megafuse_emu::AdvBinary(#NAME, dst, src0, src1, nullptr, VECS, calCount,                                 \
                                [](auto a, auto b) { return EXPR; }, loc);                                       \
    }                                                                                                            \
    template <typename T, bool isReuseSource = false>                                                            \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                 \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        NAME<T, isReuseSource>(dst, src0, src1, src0.GetSize(), loc);                                            \
    }

MEGAFUSE_EMU_ADV_BINARY(Fmod, megafuse_emu::adv_vecs::kFmod, megafuse_emu::kHalfOrFloat<T>, std::fmod(a, b))
MEGAFUSE_EMU_ADV_BINARY(Xor, megafuse_emu::adv_vecs::kXor, (std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t>),
                        static_cast<T>(a ^ b))
// GeGLU: dst = src0 * Gelu(src1) (the tanh form).
MEGAFUSE_EMU_ADV_BINARY(GeGLU, megafuse_emu::adv_vecs::kGeGLU, megafuse_emu::kHalfOrFloat<T>,
                        static_cast<float>(a * megafuse_emu::GeluTanh(b)))
#undef MEGAFUSE_EMU_ADV_BINARY

// SwiGLU: dst = src0 * Swish(src1, beta).
template <typename T, bool isReuseSource = false>
void SwiGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const float& scalarValue,
            const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,
            megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(megafuse_emu::kHalfOrFloat<T> || std::is_same_v<T, bfloat16_t>, "SwiGLU takes half, bfloat16_t or float");
    const double beta = scalarValue;
    megafuse_emu::AdvBinary("SwiGLU", dst, src0, src1, &sharedTmpBuffer, megafuse_emu::adv_vecs::kSwiGLU, calCount,
                            [beta](auto a, auto b) { return static_cast<float>(a * b / (1.0 + std::exp(-beta * b))); }, loc);
}
template <typename T, bool isReuseSource = false>
void SwiGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const float& scalarValue,
            const LocalTensor<uint8_t>& sharedTmpBuffer, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    SwiGLU<T, isReuseSource>(dst, src0, src1, scalarValue, sharedTmpBuffer, src0.GetSize(), loc);
}
template <typename T, bool isReuseSource = false>
void SwiGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const float& scalarValue,
            const uint32_t calCount, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(megafuse_emu::kHalfOrFloat<T> || std::is_same_v<T, bfloat16_t>, "SwiGLU takes half, bfloat16_t or float");
    const double beta = scalarValue;
    megafuse_emu::AdvBinary("SwiGLU", dst, src0, src1, nullptr, megafuse_emu::adv_vecs::kSwiGLU, calCount,
                            [beta](auto a, auto b) { return static_cast<float>(a * b / (1.0 + std::exp(-beta * b))); }, loc);
}
template <typename T, bool isReuseSource = false>
void SwiGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const float& scalarValue,
            megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    SwiGLU<T, isReuseSource>(dst, src0, src1, scalarValue, src0.GetSize(), loc);
}

// Power: tensor ^ tensor, tensor ^ scalar, scalar ^ tensor (pow in the compute type).
template <typename T, bool isReuseSource = false>
void Power(const LocalTensor<T>& dst, const LocalTensor<T>& base, const LocalTensor<T>& exp,
           const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,
           megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::AdvBinary("Power", dst, base, exp, &sharedTmpBuffer, megafuse_emu::adv_vecs::kPower, calCount,
                            [](auto a, auto b) { return static_cast<decltype(a)>(std::pow(a, b)); }, loc);
}
template <typename T, bool isReuseSource = false>
void Power(const LocalTensor<T>& dst, const LocalTensor<T>& base, const LocalTensor<T>& exp,
           const LocalTensor<uint8_t>& sharedTmpBuffer, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    Power<T, isReuseSource>(dst, base, exp, sharedTmpBuffer, base.GetSize(), loc);
}
template <typename T, bool isReuseSource = false>
void Power(const LocalTensor<T>& dst, const LocalTensor<T>& base, const T& exp,
           const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,
           megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const auto e = static_cast<megafuse_emu::CalcT<T>>(exp);
    megafuse_emu::AdvUnary("Power", dst, base, &sharedTmpBuffer, megafuse_emu::adv_vecs::kPower, calCount,
                           [e](auto a) { return static_cast<decltype(a)>(std::pow(a, e)); }, loc);
}
template <typename T, bool isReuseSource = false>
void Power(const LocalTensor<T>& dst, const LocalTensor<T>& base, const T& exp,
           const LocalTensor<uint8_t>& sharedTmpBuffer, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    Power<T, isReuseSource>(dst, base, exp, sharedTmpBuffer, base.GetSize(), loc);
}
template <typename T, bool isReuseSource = false>
void Power(const LocalTensor<T>& dst, const T& base, const LocalTensor<T>& exp,
           const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,
           megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const auto b = static_cast<megafuse_emu::CalcT<T>>(base);
    megafuse_emu::AdvUnary("Power", dst, exp, &sharedTmpBuffer, megafuse_emu::adv_vecs::kPower, calCount,
                           [b](auto a) { return static_cast<decltype(a)>(std::pow(b, a)); }, loc);
}
template <typename T, bool isReuseSource = false>
void Power(const LocalTensor<T>& dst, const T& base, const LocalTensor<T>& exp,
           const LocalTensor<uint8_t>& sharedTmpBuffer, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    Power<T, isReuseSource>(dst, base, exp, sharedTmpBuffer, exp.GetSize(), loc);
}

// Power without a shared buffer (the devkit takes the scratch from the pipe's free UB).
template <typename T, bool isReuseSource = false>
void Power(const LocalTensor<T>& dst, const LocalTensor<T>& base, const LocalTensor<T>& exp,
           megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::AdvBinary("Power", dst, base, exp, nullptr, megafuse_emu::adv_vecs::kPower, base.GetSize(),
                            [](auto a, auto b) { return static_cast<decltype(a)>(std::pow(a, b)); }, loc);
}
template <typename T, bool isReuseSource = false>
void Power(const LocalTensor<T>& dst, const LocalTensor<T>& base, const T& exp,
           megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const auto e = static_cast<megafuse_emu::CalcT<T>>(exp);
    megafuse_emu::AdvUnary("Power", dst, base, nullptr, megafuse_emu::adv_vecs::kPower, base.GetSize(),
                           [e](auto a) { return static_cast<decltype(a)>(std::pow(a, e)); }, loc);
}
template <typename T, bool isReuseSource = false>
void Power(const LocalTensor<T>& dst, const T& base, const LocalTensor<T>& exp,
           megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const auto b = static_cast<megafuse_emu::CalcT<T>>(base);
    megafuse_emu::AdvUnary("Power", dst, exp, nullptr, megafuse_emu::adv_vecs::kPower, exp.GetSize(),
                           [b](auto a) { return static_cast<decltype(a)>(std::pow(b, a)); }, loc);
}

// Arange: dst[i] = firstValue + i * diffValue, i < count (computed in the compute type).
template <typename T>
void Arange(const LocalTensor<T>& dst, const T firstValue, const T diffValue, const int32_t count,
            megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(megafuse_emu::kHalfOrFloat<T> || std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t>,
                  "Arange takes half, float, int16_t or int32_t");
    using C = megafuse_emu::CalcT<T>;
    const C first = static_cast<C>(firstValue), diff = static_cast<C>(diffValue);
    megafuse_emu::RunCount<1>("Arange", {megafuse_emu::Op(dst, "dst")}, count,
                              [first, diff](const auto& base, const auto& idx) {
                                  megafuse_emu::St<T>(base[0], idx[0], static_cast<T>(first + static_cast<C>(idx[0]) * diff));
                              },
                              loc);
}

// Axpy with a shared buffer (advanced form): dst = scalar * src + dst, (T, U) as the basic Axpy.
template <typename T, typename U, bool isReuseSource = false>
void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U scalarValue,
          const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Core(loc);
    megafuse_emu::AdvNoOverlap("Axpy", dst.ref_, src.ref_, "src", loc);
    megafuse_emu::AdvCheckTmp("Axpy", sharedTmpBuffer.ref_, megafuse_emu::adv_vecs::kAxpy, {&dst.ref_, &src.ref_}, loc);
    Axpy(dst, src, scalarValue, static_cast<int32_t>(calCount), loc);
}

}  // namespace AscendC
