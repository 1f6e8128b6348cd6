// Vector unit: element-wise ops in the two forms of the devkit.
//   count form   Op(dst, src..., count)                       first `count` elements
//   repeat form  Op(dst, src..., mask, repeatTime, params)    repeatTime iterations of 256 B,
//                lanes enabled by mask, operand addresses from block/repeat strides (32 B units)
// The iteration and lane functions are in vector_lanes.h.
#pragma once

#include "vector_lanes.h"

// ---- The API --------------------------------------------------------------------------------
namespace AscendC {

// Binary ops: dst = op(src0, src1). Stamped out per op because the devkit declares each by
// name in three forms (count, bit mask, continuous mask).
#define MEGAFUSE_EMU_BINARY(NAME, EXPR, CHECK)                                                                   \
    template <typename T>                                                                                        \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                 \
              const int32_t& count, megafuse_emu::Loc loc = megafuse_emu::Loc::current())                        \
    {                                                                                                            \
        CHECK;                                                                                                   \
        megafuse_emu::RunCount<3>(#NAME, {megafuse_emu::Op(dst, "dst"), megafuse_emu::Op(src0, "src0"),          \
                                          megafuse_emu::Op(src1, "src1")},                                       \
                                  count, megafuse_emu::BinaryLane<T>([](auto a, auto b) { return EXPR; }), loc); \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask[], \
              megafuse_emu::RepeatTimes repeatTime, const BinaryRepeatParams& p,                                 \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        CHECK;                                                                                                   \
        megafuse_emu::RequireSetMask<isSetMask>();                                                               \
        megafuse_emu::BinaryRepeat<T>(#NAME, dst, src0, src1, megafuse_emu::BitMask(mask, sizeof(T), #NAME, loc), \
                                      repeatTime, p, [](auto a, auto b) { return EXPR; }, loc);                  \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask,  \
              megafuse_emu::RepeatTimes repeatTime, const BinaryRepeatParams& p,                                 \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        CHECK;                                                                                                   \
        megafuse_emu::RequireSetMask<isSetMask>();                                                               \
        megafuse_emu::BinaryRepeat<T>(#NAME, dst, src0, src1,                                                    \
                                      megafuse_emu::ContinuousMask(mask, sizeof(T), #NAME, loc), repeatTime, p,  \
                                      [](auto a, auto b) { return EXPR; }, loc);                                 \
    }

}  // namespace AscendC

namespace AscendC {

#define MEGAFUSE_EMU_FLOAT_ONLY(NAME)                                                                            \
    static_assert(megafuse_emu::kIsFloatLike<T>, #NAME " is emulated for half/float/bfloat16_t only")
#define MEGAFUSE_EMU_NO_CHECK (void)0

MEGAFUSE_EMU_BINARY(Add, a + b, MEGAFUSE_EMU_NO_CHECK)
MEGAFUSE_EMU_BINARY(Sub, a - b, MEGAFUSE_EMU_NO_CHECK)
MEGAFUSE_EMU_BINARY(Mul, a * b, MEGAFUSE_EMU_NO_CHECK)
MEGAFUSE_EMU_BINARY(Div, a / b, MEGAFUSE_EMU_FLOAT_ONLY(Div))
MEGAFUSE_EMU_BINARY(Max, (a > b ? a : b), MEGAFUSE_EMU_NO_CHECK)
MEGAFUSE_EMU_BINARY(Min, (a < b ? a : b), MEGAFUSE_EMU_NO_CHECK)

// Unary ops dst = f(src), three forms each.
#define MEGAFUSE_EMU_UNARY(NAME, EXPR, CHECK)                                                                    \
    template <typename T>                                                                                        \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count,                        \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        CHECK;                                                                                                   \
        megafuse_emu::RunCount<2>(#NAME, {megafuse_emu::Op(dst, "dst"), megafuse_emu::Op(src, "src")}, count,   \
                                  megafuse_emu::UnaryLane<T, T>(megafuse_emu::Elementwise<T>([](auto a) { return EXPR; })), \
                                  loc);                                                                          \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask[],                             \
              megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,                                  \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        CHECK;                                                                                                   \
        megafuse_emu::RequireSetMask<isSetMask>();                                                               \
        megafuse_emu::UnaryRepeat(#NAME, dst, src, megafuse_emu::BitMask(mask, sizeof(T), #NAME, loc), repeatTime, \
                                  p, megafuse_emu::Elementwise<T>([](auto a) { return EXPR; }), loc);            \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,                               \
              megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,                                  \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        CHECK;                                                                                                   \
        megafuse_emu::RequireSetMask<isSetMask>();                                                               \
        megafuse_emu::UnaryRepeat(#NAME, dst, src, megafuse_emu::ContinuousMask(mask, sizeof(T), #NAME, loc),    \
                                  repeatTime, p, megafuse_emu::Elementwise<T>([](auto a) { return EXPR; }), loc); \
    }

MEGAFUSE_EMU_UNARY(Relu, (a > 0 ? a : decltype(a)(0)), MEGAFUSE_EMU_NO_CHECK)
MEGAFUSE_EMU_UNARY(Abs, (a < 0 ? -a : a), MEGAFUSE_EMU_NO_CHECK)
MEGAFUSE_EMU_UNARY(Exp, std::exp(a), MEGAFUSE_EMU_FLOAT_ONLY(Exp))
MEGAFUSE_EMU_UNARY(Ln, std::log(a), MEGAFUSE_EMU_FLOAT_ONLY(Ln))
MEGAFUSE_EMU_UNARY(Sqrt, std::sqrt(a), MEGAFUSE_EMU_FLOAT_ONLY(Sqrt))
MEGAFUSE_EMU_UNARY(Reciprocal, decltype(a)(1) / a, MEGAFUSE_EMU_FLOAT_ONLY(Reciprocal))

// Scalar ops dst = f(src, scalar), three forms each.
#define MEGAFUSE_EMU_SCALAR(NAME, EXPR)                                                                          \
    template <typename T, bool isSetMask = true>                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& count,  \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        megafuse_emu::RequireSetMask<isSetMask>();                                                               \
        const megafuse_emu::CalcT<T> s = static_cast<megafuse_emu::CalcT<T>>(scalarValue);                       \
        megafuse_emu::RunCount<2>(#NAME, {megafuse_emu::Op(dst, "dst"), megafuse_emu::Op(src, "src")}, count,   \
                                  megafuse_emu::UnaryLane<T, T>(megafuse_emu::Elementwise<T>([s](auto a) { return EXPR; })), \
                                  loc);                                                                          \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask[],       \
              megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,                                  \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        megafuse_emu::RequireSetMask<isSetMask>();                                                               \
        const megafuse_emu::CalcT<T> s = static_cast<megafuse_emu::CalcT<T>>(scalarValue);                       \
        megafuse_emu::UnaryRepeat(#NAME, dst, src, megafuse_emu::BitMask(mask, sizeof(T), #NAME, loc), repeatTime, \
                                  p, megafuse_emu::Elementwise<T>([s](auto a) { return EXPR; }), loc);           \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask,         \
              megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,                                  \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        megafuse_emu::RequireSetMask<isSetMask>();                                                               \
        const megafuse_emu::CalcT<T> s = static_cast<megafuse_emu::CalcT<T>>(scalarValue);                       \
        megafuse_emu::UnaryRepeat(#NAME, dst, src, megafuse_emu::ContinuousMask(mask, sizeof(T), #NAME, loc),    \
                                  repeatTime, p, megafuse_emu::Elementwise<T>([s](auto a) { return EXPR; }), loc); \
    }

MEGAFUSE_EMU_SCALAR(Adds, a + s)
MEGAFUSE_EMU_SCALAR(Muls, a * s)
MEGAFUSE_EMU_SCALAR(Maxs, (a > s ? a : s))
MEGAFUSE_EMU_SCALAR(Mins, (a < s ? a : s))

// Duplicate: dst = scalar.
template <typename T>
void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RunCount<1>("Duplicate", {megafuse_emu::Op(dst, "dst")}, count,
                              [v = scalarValue](const auto& base, const auto& idx) { megafuse_emu::St<T>(base[0], idx[0], v); },
                              loc);
}

template <typename T, bool isSetMask = true>
void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask[], megafuse_emu::RepeatTimes repeatTime,
               const uint16_t dstBlockStride, const uint8_t dstRepeatStride,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::RunRepeat<1>("Duplicate", {megafuse_emu::Op(dst, "dst", dstBlockStride, dstRepeatStride)},
                               megafuse_emu::BitMask(mask, sizeof(T), "Duplicate", loc), repeatTime,
                               [v = scalarValue](const auto& base, const auto& idx) { megafuse_emu::St<T>(base[0], idx[0], v); },
                               loc);
}

template <typename T, bool isSetMask = true>
void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask, megafuse_emu::RepeatTimes repeatTime,
               const uint16_t dstBlockStride, const uint8_t dstRepeatStride,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::RunRepeat<1>("Duplicate", {megafuse_emu::Op(dst, "dst", dstBlockStride, dstRepeatStride)},
                               megafuse_emu::ContinuousMask(mask, sizeof(T), "Duplicate", loc), repeatTime,
                               [v = scalarValue](const auto& base, const auto& idx) { megafuse_emu::St<T>(base[0], idx[0], v); },
                               loc);
}

// MulAddDst: dst = src0 * src1 + dst, one rounding (see megafuse_emu::MulAddDstLane); both arches
// (the vendor's API reference lists Atlas A2/A3 and the Atlas inference-series AI Core).
template <typename T, typename U>
void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1, const int32_t& count,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RunCount<3>("MulAddDst", {megafuse_emu::Op(dst, "dst"), megafuse_emu::Op(src0, "src0"),
                                            megafuse_emu::Op(src1, "src1")},
                              count, megafuse_emu::MulAddDstLane<T, U>(), loc);
}

template <typename T, typename U, bool isSetMask = true>
void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1, uint64_t mask[],
               megafuse_emu::RepeatTimes repeatTime, const BinaryRepeatParams& p,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::MulAddDstRepeat(dst, src0, src1, megafuse_emu::BitMask(mask, std::max(sizeof(T), sizeof(U)),
                                                                          "MulAddDst", loc),
                                  repeatTime, p, loc);
}

template <typename T, typename U, bool isSetMask = true>
void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1, uint64_t mask,
               megafuse_emu::RepeatTimes repeatTime, const BinaryRepeatParams& p,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::MulAddDstRepeat(dst, src0, src1,
                                  megafuse_emu::ContinuousMask(mask, std::max(sizeof(T), sizeof(U)), "MulAddDst", loc),
                                  repeatTime, p, loc);
}

// Axpy: dst = scalar * src + dst, one rounding (see megafuse_emu::AxpyLane).
template <typename T, typename U>
void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, const int32_t& count,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RunCount<2>("Axpy", {megafuse_emu::Op(dst, "dst"), megafuse_emu::Op(src, "src")}, count,
                              megafuse_emu::AxpyLane<T, U>(scalarValue), loc);
}

template <typename T, typename U, bool isSetMask = true>
void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, uint64_t mask[],
          megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    const size_t lane = std::max(sizeof(T), sizeof(U));
    megafuse_emu::RunRepeat<2>("Axpy",
                               {megafuse_emu::Op(dst, "dst", p.dstBlkStride, p.dstRepStride),
                                megafuse_emu::Op(src, "src", p.srcBlkStride, p.srcRepStride)},
                               megafuse_emu::BitMask(mask, lane, "Axpy", loc), repeatTime, megafuse_emu::AxpyLane<T, U>(scalarValue),
                               loc);
}

template <typename T, typename U, bool isSetMask = true>
void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, uint64_t mask,
          megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    const size_t lane = std::max(sizeof(T), sizeof(U));
    megafuse_emu::RunRepeat<2>("Axpy",
                               {megafuse_emu::Op(dst, "dst", p.dstBlkStride, p.dstRepStride),
                                megafuse_emu::Op(src, "src", p.srcBlkStride, p.srcRepStride)},
                               megafuse_emu::ContinuousMask(mask, lane, "Axpy", loc), repeatTime,
                               megafuse_emu::AxpyLane<T, U>(scalarValue), loc);
}

// Cast: dst (T) = round(src (U)). The lane count follows the wider type.
template <typename T, typename U>
void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode, const uint32_t count,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    auto lane = megafuse_emu::CastLane<T, U>(roundMode, loc);
    megafuse_emu::RunCount<2>("Cast", {megafuse_emu::Op(dst, "dst"), megafuse_emu::Op(src, "src")}, count, lane, loc);
}

template <typename T, typename U, bool isSetMask = true>
void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode, const uint64_t mask[],
          megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    auto lane = megafuse_emu::CastLane<T, U>(roundMode, loc);
    megafuse_emu::RunRepeat<2>("Cast",
                               {megafuse_emu::Op(dst, "dst", p.dstBlkStride, p.dstRepStride),
                                megafuse_emu::Op(src, "src", p.srcBlkStride, p.srcRepStride)},
                               megafuse_emu::BitMask(mask, std::max(sizeof(T), sizeof(U)), "Cast", loc), repeatTime,
                               lane, loc);
}

template <typename T, typename U, bool isSetMask = true>
void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode, const uint64_t mask,
          megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    auto lane = megafuse_emu::CastLane<T, U>(roundMode, loc);
    megafuse_emu::RunRepeat<2>("Cast",
                               {megafuse_emu::Op(dst, "dst", p.dstBlkStride, p.dstRepStride),
                                megafuse_emu::Op(src, "src", p.srcBlkStride, p.srcRepStride)},
                               megafuse_emu::ContinuousMask(mask, std::max(sizeof(T), sizeof(U)), "Cast", loc),
                               repeatTime, lane, loc);
}

#undef MEGAFUSE_EMU_BINARY
#undef MEGAFUSE_EMU_UNARY
#undef MEGAFUSE_EMU_SCALAR
#undef MEGAFUSE_EMU_FLOAT_ONLY
#undef MEGAFUSE_EMU_NO_CHECK

}  // namespace AscendC