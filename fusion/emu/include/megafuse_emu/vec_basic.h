// More basic vector APIs of the devkit (semantics from its API reference pages):
//   Brcb            each of 8 src elements per repeat fills one 32-byte DataBlock of dst (310P:
//                   dstBlkStride 1 only, two instructions a repeat: vadds + v4dtrans)
//   CreateVecIndex  dst[i] = firstValue + i
//   And / Or / Not  bitwise, 16-bit types; ShiftLeft / ShiftRight by a scalar
//   AddRelu / SubRelu  dst = max(src0 +- src1, 0)
//   ReduceDataBlock each DataBlock (32 B) of a repeat reduced to one value (the devkit's
//                   BlockReduceSum/Max/Min); ReducePairElem: adjacent lane pairs summed
//                   (PairReduceSum). One repeat's results are contiguous in dst; dstRepStride
//                   counts whole repeat results (8 values, resp. lanes / 2).
// Enforced like the rest of the vector unit: UB operands, 32-byte aligned starts, repeatTime
// in [0, 255], mask within the lanes, every accessed element inside its LocalTensor,
// uninitialized source elements.
#pragma once

#include "vector.h"

namespace AscendC {

enum class ReduceType : uint8_t { SUM = 0, MAX, MIN };

struct BrcbRepeatParams {
    BrcbRepeatParams() {}
    BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstBlkStride(dstBlkStrideIn), dstRepStride(dstRepStrideIn)
    {}
    uint16_t dstBlkStride = 1;
    uint16_t dstRepStride = 8;
};

}  // namespace AscendC

namespace megafuse_emu {

// Elementwise state of one lane read: kWritten unless a read byte was never written.
inline uint8_t ReadState(const uint8_t* p, uint32_t esize, const char* api, const char* operand, const Loc& loc)
{
    const uint8_t s = ElemState(p, esize);
    if (s == kNeverWritten) NoteOrigin(p, esize, api, operand, loc);
    return s;
}

inline void CheckRepeat(const char* api, const RepeatTimes& r, const Loc& loc)
{
    if (r.v < 0 || r.v > 255)
        Fail(loc, Str(api, ": repeatTime ", r.v, " is outside [0, 255] (the uint8_t parameter would wrap)"));
}

template <typename T>
double ReduceInit(AscendC::ReduceType t)
{
    if (t == AscendC::ReduceType::MAX) return -std::numeric_limits<double>::infinity();
    if (t == AscendC::ReduceType::MIN) return std::numeric_limits<double>::infinity();
    return 0.0;
}

inline double ReduceStep(AscendC::ReduceType t, double acc, double x)
{
    if (t == AscendC::ReduceType::MAX) return std::max(acc, x);
    if (t == AscendC::ReduceType::MIN) return std::min(acc, x);
    return acc + x;
}

// Reduces each group of `group` consecutive lanes of a repeat to one dst value; a group with no
// enabled lane leaves its dst element untouched.
template <typename T>
void GroupReduce(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                 const LaneMask& mask, const RepeatTimes& repeat, uint32_t group, AscendC::ReduceType type,
                 int64_t dstRepStride, int64_t srcBlkStride, int64_t srcRepStride, const Loc& loc)
{
    Core(loc);
    if (mask.counter < 0) CheckRepeat(api, repeat, loc);
    if (dstRepStride < 0 || srcBlkStride < 0 || srcRepStride < 0) Fail(loc, Str(api, ": negative stride"));
    const uint32_t lanes = 256 / sizeof(T), e = 32 / sizeof(T), outs = lanes / group;
    const int64_t reps = RepeatsOf(mask, repeat, lanes);
    if (reps == 0 || mask.Empty()) return;
    auto sidx = [&](int64_t r, uint32_t l) {
        return static_cast<uint64_t>(r * srcRepStride * e + (l / e) * srcBlkStride * e + l % e);
    };
    auto didx = [&](int64_t r, uint32_t l) { return static_cast<uint64_t>(r * dstRepStride * outs + l / group); };
    uint64_t shi = 0, dhi = 0;
    for (int64_t r = std::max<int64_t>(0, reps - 2); r < reps; ++r)
        for (uint32_t l = 0; l < lanes; ++l)
            if (LaneOn(mask, r, l, lanes)) {
                shi = std::max(shi, sidx(r, l));
                dhi = std::max(dhi, didx(r, l));
            }
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, os{&src.ref_, sizeof(T), 1, 8, "src"};
    uint8_t* db = VecOperand(od, dhi + 1, api, loc);
    const uint8_t* sb = VecOperand(os, shi + 1, api, loc);
    for (int64_t r = 0; r < reps; ++r)
        for (uint32_t g = 0; g < outs; ++g) {
            double acc = ReduceInit<T>(type);
            bool any = false;
            uint8_t st = kWritten;
            for (uint32_t l = g * group; l < (g + 1) * group; ++l) {
                if (!LaneOn(mask, r, l, lanes)) continue;
                const uint64_t i = sidx(r, l);
                if (ReadState(sb + i * sizeof(T), sizeof(T), api, "src", loc) != kWritten) st = kDerived;
                acc = ReduceStep(type, acc, static_cast<double>(static_cast<CalcT<T>>(Ld<T>(sb, i))));
                any = true;
            }
            if (!any) continue;
            const uint64_t o = didx(r, g * group);
            St<T>(db, o, static_cast<T>(static_cast<CalcT<T>>(acc)));
            SetState(db + o * sizeof(T), sizeof(T), st);
        }
    CountVector(static_cast<uint64_t>(reps), true);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T>
void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, megafuse_emu::RepeatTimes repeatTime,
          const BrcbRepeatParams& p, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Brcb takes 16- or 32-bit types");
    megafuse_emu::Core(loc);
    megafuse_emu::CheckRepeat("Brcb", repeatTime, loc);
    if (p.dstBlkStride == 0) megafuse_emu::Fail(loc, "Brcb: dstBlkStride 0 is undefined behaviour");
    const bool coupled = megafuse_emu::g_core->soc.arch == 2002;   // the SoC the kernel runs on
    if (coupled && p.dstBlkStride != 1) megafuse_emu::Fail(loc, "Brcb: arch 2002 (310P) supports dstBlkStride 1 only");
    if (repeatTime.v == 0) return;
    const uint64_t e = 32 / sizeof(T), last = static_cast<uint64_t>(repeatTime.v - 1);
    const uint64_t dhi = (last * p.dstRepStride + 7ull * p.dstBlkStride) * e + e;
    megafuse_emu::Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, os{&src.ref_, sizeof(T), 1, 8, "src"};
    uint8_t* db = megafuse_emu::VecOperand(od, dhi, "Brcb", loc);
    const uint8_t* sb = megafuse_emu::VecOperand(os, 8 * (last + 1), "Brcb", loc);
    if (db < sb + 8 * (last + 1) * sizeof(T) && sb < db + dhi * sizeof(T)) megafuse_emu::Fail(loc, "Brcb: src and dst overlap");
    for (uint64_t r = 0; r <= last; ++r)
        for (uint64_t j = 0; j < 8; ++j) {
            const uint64_t si = r * 8 + j;
            const uint8_t st = megafuse_emu::ReadState(sb + si * sizeof(T), sizeof(T), "Brcb", "src", loc);
            const T v = megafuse_emu::Ld<T>(sb, si);
            const uint64_t d0 = (r * p.dstRepStride + j * p.dstBlkStride) * e;
            for (uint64_t k = 0; k < e; ++k) megafuse_emu::St<T>(db, d0 + k, v);
            megafuse_emu::SetState(db + d0 * sizeof(T), 32, st == megafuse_emu::kWritten ? st : megafuse_emu::kDerived);
        }
    if (coupled) {   // 310P: the devkit's implementation issues vadds + v4dtrans per repeat
        megafuse_emu::Count(megafuse_emu::VECTOR_INSTRUCTIONS, 2ull * repeatTime.v);
        megafuse_emu::Count(megafuse_emu::VECTOR_REPEATS, 2ull * repeatTime.v);
    } else {
        megafuse_emu::CountVector(static_cast<uint64_t>(repeatTime.v), true);
    }
}

template <typename T>
void CreateVecIndex(const LocalTensor<T>& dst, const T& firstValue, uint32_t count,
                    megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float> || std::is_same_v<T, int16_t> ||
                      std::is_same_v<T, int32_t>,
                  "CreateVecIndex takes half, float, int16_t or int32_t");
    using C = megafuse_emu::CalcT<T>;
    const C first = static_cast<C>(firstValue);
    megafuse_emu::RunCount<1>("CreateVecIndex", {megafuse_emu::Op(dst, "dst")}, count,
                              [first](const auto& base, const auto& idx) {
                                  megafuse_emu::St<T>(base[0], idx[0], static_cast<T>(first + static_cast<C>(idx[0])));
                              },
                              loc);
}

// Count form + both repeat forms of a binary op on a type family.
#define MEGAFUSE_EMU_VEC_BINARY(NAME, TYPECHECK, EXPR)                                                           \
    template <typename T>                                                                                        \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,                 \
              const int32_t& count, megafuse_emu::Loc loc = megafuse_emu::Loc::current())                        \
    {                                                                                                            \
        static_assert(TYPECHECK, #NAME ": unsupported data type");                                               \
        megafuse_emu::RunCount<3>(#NAME, {megafuse_emu::Op(dst, "dst"), megafuse_emu::Op(src0, "src0"),          \
                                          megafuse_emu::Op(src1, "src1")},                                       \
                                  count, megafuse_emu::BinaryLane<T>([](auto a, auto b) { return EXPR; }), loc); \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask[], \
              megafuse_emu::RepeatTimes repeatTime, const BinaryRepeatParams& p,                                 \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        static_assert(TYPECHECK, #NAME ": unsupported data type");                                               \
        megafuse_emu::RequireSetMask<isSetMask>();                                                               \
        megafuse_emu::BinaryRepeat<T>(#NAME, dst, src0, src1, megafuse_emu::BitMask(mask, sizeof(T), #NAME, loc), \
                                      repeatTime, p, [](auto a, auto b) { return EXPR; }, loc);                  \
    }                                                                                                            \
    template <typename T, bool isSetMask = true>                                                                 \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask,  \
              megafuse_emu::RepeatTimes repeatTime, const BinaryRepeatParams& p,                                 \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        static_assert(TYPECHECK, #NAME ": unsupported data type");                                               \
        megafuse_emu::RequireSetMask<isSetMask>();                                                               \
        megafuse_emu::BinaryRepeat<T>(#NAME, dst, src0, src1,                                                    \
                                      megafuse_emu::ContinuousMask(mask, sizeof(T), #NAME, loc), repeatTime, p,  \
                                      [](auto a, auto b) { return EXPR; }, loc);                                 \
    }

#define MEGAFUSE_EMU_B16 (std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t>)
#define MEGAFUSE_EMU_RELU_T (std::is_same_v<T, half> || std::is_same_v<T, float> || std::is_same_v<T, int16_t>)
MEGAFUSE_EMU_VEC_BINARY(And, MEGAFUSE_EMU_B16, static_cast<T>(a & b))
MEGAFUSE_EMU_VEC_BINARY(Or, MEGAFUSE_EMU_B16, static_cast<T>(a | b))
MEGAFUSE_EMU_VEC_BINARY(AddRelu, MEGAFUSE_EMU_RELU_T, (a + b > 0 ? a + b : decltype(a + b)(0)))
MEGAFUSE_EMU_VEC_BINARY(SubRelu, MEGAFUSE_EMU_RELU_T, (a - b > 0 ? a - b : decltype(a - b)(0)))
#undef MEGAFUSE_EMU_VEC_BINARY
#undef MEGAFUSE_EMU_RELU_T

template <typename T>
void Not(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count,
         megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(MEGAFUSE_EMU_B16, "Not takes int16_t or uint16_t");
    megafuse_emu::RunCount<2>("Not", {megafuse_emu::Op(dst, "dst"), megafuse_emu::Op(src, "src")}, count,
                              megafuse_emu::UnaryLane<T, T>([](T a) { return static_cast<T>(~a); }), loc);
}
#undef MEGAFUSE_EMU_B16

// ShiftLeft / ShiftRight by a scalar (16/32-bit integers; signed right shifts are arithmetic).
#define MEGAFUSE_EMU_SHIFT(NAME, OP)                                                                             \
    template <typename T>                                                                                        \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& count,  \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        static_assert(std::is_integral_v<T> && (sizeof(T) == 2 || sizeof(T) == 4), #NAME " takes 16/32-bit integers"); \
        if (scalarValue < 0 || static_cast<uint64_t>(scalarValue) >= sizeof(T) * 8)                              \
            megafuse_emu::Fail(loc, megafuse_emu::Str(#NAME ": shift ", static_cast<int64_t>(scalarValue),       \
                                                      " is outside [0, ", sizeof(T) * 8, ")"));                  \
        const int s = static_cast<int>(scalarValue);                                                             \
        megafuse_emu::RunCount<2>(#NAME, {megafuse_emu::Op(dst, "dst"), megafuse_emu::Op(src, "src")}, count,   \
                                  megafuse_emu::UnaryLane<T, T>([s](T a) { return static_cast<T>(a OP s); }), loc); \
    }
MEGAFUSE_EMU_SHIFT(ShiftLeft, <<)
MEGAFUSE_EMU_SHIFT(ShiftRight, >>)
#undef MEGAFUSE_EMU_SHIFT

// ReduceDataBlock<type, T>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride).
template <ReduceType type, typename T, typename U = T, bool isSetMask = true>
void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                     megafuse_emu::RepeatTimes repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                     const int32_t srcRepStride, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "ReduceDataBlock takes half or float");
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::GroupReduce("ReduceDataBlock", dst, src, megafuse_emu::ContinuousMask(mask, sizeof(T), "ReduceDataBlock", loc),
                              repeatTime, 32 / sizeof(T), type, dstRepStride, srcBlkStride, srcRepStride, loc);
}
template <ReduceType type, typename T, typename U = T, bool isSetMask = true>
void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                     megafuse_emu::RepeatTimes repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                     const int32_t srcRepStride, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "ReduceDataBlock takes half or float");
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::GroupReduce("ReduceDataBlock", dst, src, megafuse_emu::BitMask(mask, sizeof(T), "ReduceDataBlock", loc),
                              repeatTime, 32 / sizeof(T), type, dstRepStride, srcBlkStride, srcRepStride, loc);
}

// ReducePairElem<SUM, T>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride).
template <ReduceType type, typename T, typename U = T, bool isSetMask = true>
void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                    megafuse_emu::RepeatTimes repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                    const int32_t srcRepStride, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(type == ReduceType::SUM, "ReducePairElem supports ReduceType::SUM only");
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "ReducePairElem takes half or float");
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::GroupReduce("ReducePairElem", dst, src, megafuse_emu::ContinuousMask(mask, sizeof(T), "ReducePairElem", loc),
                              repeatTime, 2, type, dstRepStride, srcBlkStride, srcRepStride, loc);
}
template <ReduceType type, typename T, typename U = T, bool isSetMask = true>
void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                    megafuse_emu::RepeatTimes repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                    const int32_t srcRepStride, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(type == ReduceType::SUM, "ReducePairElem supports ReduceType::SUM only");
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "ReducePairElem takes half or float");
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::GroupReduce("ReducePairElem", dst, src, megafuse_emu::BitMask(mask, sizeof(T), "ReducePairElem", loc),
                              repeatTime, 2, type, dstRepStride, srcBlkStride, srcRepStride, loc);
}

}  // namespace AscendC
