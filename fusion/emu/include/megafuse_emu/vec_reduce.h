// Whole-repeat and whole-tensor reductions of the devkit (semantics from its API reference):
//   ReduceRepeat<type, T>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride, order)
//       each repeat's enabled lanes reduced to one value (the devkit's WholeReduceSum/Max/Min);
//       MAX/MIN also give the lane index (ReduceOrder: value+index, index+value, only value, only
//       index), stored as the unsigned integer of T's width. dstRepStride counts one repeat's
//       result (1 or 2 elements).
//   ReduceMax / ReduceMin / ReduceSum<T>(dst, src, workLocal, count [, calIndex]) and the
//       mask form (dst, src, workLocal, mask, repeatTime, srcRepStride [, calIndex]): dst[0] the
//       result, dst[1] the index (first occurrence) when calIndex. The last ReduceSum /
//       ReduceMax / ReduceMin value is kept for GetReduceRepeatSumSpr / GetReduceRepeatMaxMinSpr.
// Sums accumulate in double and round once to T (the device's pairwise T-precision adds are not
// modelled). Conditional<b, A, B>::type is std::conditional.
#pragma once

#include <functional>

#include "adv_math.h"
#include "vec_basic.h"
#include "vec_cmp.h"

namespace AscendC {

enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

template <bool b, typename A, typename B>
struct Conditional {
    using type = std::conditional_t<b, A, B>;
};

}  // namespace AscendC

namespace megafuse_emu {

struct ReduceSpr {
    uint64_t serial = ~0ull;
    double sum = 0, maxmin = 0;
    uint64_t index = 0;
    bool has_sum = false, has_maxmin = false;
};
inline ReduceSpr& ReduceSprOf(const Loc& loc)
{
    static thread_local ReduceSpr reg;
    CoreState& c = Core(loc);
    if (reg.serial != c.serial) reg = ReduceSpr{c.serial};
    return reg;
}

template <typename T>
T IndexAsT(uint64_t idx)
{
    using I = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
    const I v = static_cast<I>(idx);
    T out;
    std::memcpy(&out, &v, sizeof(T));
    return out;
}

struct ReduceResult {
    double value = 0;
    uint64_t index = 0;
    bool any = false;
    uint8_t st = kWritten;
};

// Reduces lane values v(i) (i = 0..n-1; enabled(i)) with type t; MAX/MIN keep the first best.
template <typename Get>
ReduceResult ReduceLanes(AscendC::ReduceType t, uint64_t n, Get get)
{
    ReduceResult r;
    r.value = ReduceInit<float>(t);
    for (uint64_t i = 0; i < n; ++i) {
        double x;
        if (!get(i, x, r.st)) continue;
        if (t == AscendC::ReduceType::SUM) r.value += x;
        else if ((t == AscendC::ReduceType::MAX && x > r.value) || (t == AscendC::ReduceType::MIN && x < r.value) ||
                 !r.any) {
            r.value = x;
            r.index = i;
        }
        r.any = true;
    }
    return r;
}

template <typename T>
void ReduceRepeatImpl(AscendC::ReduceType type, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                      const LaneMask& mask, const RepeatTimes& repeat, int64_t dstRepStride, int64_t srcBlkStride,
                      int64_t srcRepStride, AscendC::ReduceOrder order, const Loc& loc)
{
    const char* api = "ReduceRepeat";
    Core(loc);
    if (mask.counter < 0) CheckRepeat(api, repeat, loc);
    if (dstRepStride < 0 || srcBlkStride < 0 || srcRepStride < 0) Fail(loc, Str(api, ": negative stride"));
    using AscendC::ReduceOrder;
    const bool pair = type != AscendC::ReduceType::SUM &&
                      (order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE);
    const uint64_t outs = pair ? 2 : 1, lanes = 256 / sizeof(T), e = 32 / sizeof(T);
    const int64_t reps = RepeatsOf(mask, repeat, static_cast<uint32_t>(lanes));
    if (reps == 0 || mask.Empty()) return;
    auto on = [&](int64_t r, uint64_t l) { return LaneOn(mask, r, static_cast<uint32_t>(l), static_cast<uint32_t>(lanes)); };
    auto sidx = [&](int64_t r, uint64_t l) {
        return static_cast<uint64_t>(r * srcRepStride * e + (l / e) * srcBlkStride * e + l % e);
    };
    uint64_t shi = 0;
    for (int64_t r = std::max<int64_t>(0, reps - 2); r < reps; ++r)
        for (uint64_t l = 0; l < lanes; ++l)
            if (on(r, l)) shi = std::max(shi, sidx(r, l));
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, os{&src.ref_, sizeof(T), 1, 8, "src"};
    uint8_t* db = VecOperand(od, static_cast<uint64_t>((reps - 1) * dstRepStride) * outs + outs, api, loc);
    const uint8_t* sb = VecOperand(os, shi + 1, api, loc);
    for (int64_t r = 0; r < reps; ++r) {
        ReduceResult res = ReduceLanes(type, lanes, [&](uint64_t l, double& x, uint8_t& st) {
            if (!on(r, l)) return false;
            x = static_cast<double>(LdChecked<T>(sb, sidx(r, l), st, api, "src", loc));
            return true;
        });
        const T v = static_cast<T>(static_cast<CalcT<T>>(res.value)), ix = IndexAsT<T>(res.index);
        T first = v, second = ix;
        if (order == ReduceOrder::ORDER_INDEX_VALUE || order == ReduceOrder::ORDER_ONLY_INDEX) std::swap(first, second);
        if (type == AscendC::ReduceType::SUM) first = v;
        const uint64_t o = static_cast<uint64_t>(r * dstRepStride) * outs;
        St<T>(db, o, first);
        if (pair) St<T>(db, o + 1, second);
        SetState(db + o * sizeof(T), static_cast<uint64_t>(outs * sizeof(T)), res.st);
    }
    CountVector(static_cast<uint64_t>(reps), true);
}

// ReduceMax/Min/Sum over `count` elements, or over `repeat` repeats of masked lanes.
template <typename T>
void ReduceAll(AscendC::ReduceType type, const char* api, const AscendC::LocalTensor<T>& dst,
               const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<T>& work, const LaneMask* mask,
               int64_t count_or_repeat, int64_t srcRepStride, bool calIndex, const Loc& loc)
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "ReduceMax/Min/Sum take half or float");
    Core(loc);
    CheckMem(work.ref_, Mem::UB, api, "workLocal", loc);
    if (Overlaps(work.ref_, src.ref_) || Overlaps(work.ref_, dst.ref_))
        Fail(loc, Str(api, ": workLocal overlaps an operand"));
    const uint64_t lanes = 256 / sizeof(T), e = 32 / sizeof(T);
    if (mask != nullptr && mask->counter >= 0) Fail(loc, Str(api, ": counter mask mode is not emulated for this API"));
    uint64_t n;  // lane positions visited
    std::function<uint64_t(uint64_t)> at;
    if (mask == nullptr) {
        if (count_or_repeat <= 0) Fail(loc, Str(api, ": count ", count_or_repeat, " must be positive"));
        n = static_cast<uint64_t>(count_or_repeat);
        at = [](uint64_t i) { return i; };
    } else {
        CheckRepeat(api, RepeatTimes(count_or_repeat), loc);
        if (count_or_repeat == 0) return;
        n = static_cast<uint64_t>(count_or_repeat) * lanes;
        at = [=](uint64_t i) { return (i / lanes) * srcRepStride * e + i % lanes; };
    }
    uint64_t shi = 0;
    for (uint64_t i = 0; i < n; ++i)
        if (mask == nullptr || mask->Has(static_cast<uint32_t>(i % lanes))) shi = std::max(shi, at(i));
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, os{&src.ref_, sizeof(T), 1, 8, "src"};
    uint8_t* db = VecOperand(od, calIndex ? 2 : 1, api, loc);
    const uint8_t* sb = VecOperand(os, shi + 1, api, loc);
    ReduceResult res = ReduceLanes(type, n, [&](uint64_t i, double& x, uint8_t& st) {
        if (mask != nullptr && !mask->Has(static_cast<uint32_t>(i % lanes))) return false;
        x = static_cast<double>(LdChecked<T>(sb, at(i), st, api, "src", loc));
        return true;
    });
    if (!res.any) Fail(loc, Str(api, ": the mask enables no lane"));
    const T v = static_cast<T>(static_cast<CalcT<T>>(res.value));
    St<T>(db, 0, v);
    SetState(db, sizeof(T), res.st);
    if (calIndex) {
        // the mask form counts the index over the visited lanes of all repeats
        St<T>(db, 1, IndexAsT<T>(res.index));
        SetState(db + sizeof(T), sizeof(T), res.st);
    }
    ReduceSpr& spr = ReduceSprOf(loc);
    if (type == AscendC::ReduceType::SUM) { spr.sum = static_cast<double>(static_cast<CalcT<T>>(v)); spr.has_sum = true; }
    else { spr.maxmin = static_cast<double>(static_cast<CalcT<T>>(v)); spr.index = res.index; spr.has_maxmin = true; }
    CountVector(n * sizeof(T), false);
}

}  // namespace megafuse_emu

namespace AscendC {

template <ReduceType type, typename T, typename U = T, bool isSetMask = true>
void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                  megafuse_emu::RepeatTimes repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                  const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                  megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "ReduceRepeat takes half or float");
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::ReduceRepeatImpl(type, dst, src, megafuse_emu::ContinuousMask(mask, sizeof(T), "ReduceRepeat", loc),
                                   repeatTime, dstRepStride, srcBlkStride, srcRepStride, order, loc);
}
template <ReduceType type, typename T, typename U = T, bool isSetMask = true>
void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                  megafuse_emu::RepeatTimes repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                  const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                  megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "ReduceRepeat takes half or float");
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::ReduceRepeatImpl(type, dst, src, megafuse_emu::BitMask(mask, sizeof(T), "ReduceRepeat", loc),
                                   repeatTime, dstRepStride, srcBlkStride, srcRepStride, order, loc);
}

#define MEGAFUSE_EMU_REDUCE_ALL(NAME, TYPE)                                                                      \
    template <typename T>                                                                                        \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,             \
              const int32_t count, bool calIndex = false, megafuse_emu::Loc loc = megafuse_emu::Loc::current())   \
    {                                                                                                            \
        megafuse_emu::ReduceAll(TYPE, #NAME, dst, src, workLocal, nullptr, count, 0, calIndex, loc);             \
    }                                                                                                            \
    template <typename T>                                                                                        \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,             \
              const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = false,   \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        const megafuse_emu::LaneMask m = megafuse_emu::ContinuousMask(mask, sizeof(T), #NAME, loc);              \
        megafuse_emu::ReduceAll(TYPE, #NAME, dst, src, workLocal, &m, repeatTime, srcRepStride, calIndex, loc);  \
    }                                                                                                            \
    template <typename T>                                                                                        \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,             \
              const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = false, \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        const megafuse_emu::LaneMask m = megafuse_emu::BitMask(mask, sizeof(T), #NAME, loc);                     \
        megafuse_emu::ReduceAll(TYPE, #NAME, dst, src, workLocal, &m, repeatTime, srcRepStride, calIndex, loc);  \
    }
MEGAFUSE_EMU_REDUCE_ALL(ReduceMax, ReduceType::MAX)
MEGAFUSE_EMU_REDUCE_ALL(ReduceMin, ReduceType::MIN)
#undef MEGAFUSE_EMU_REDUCE_ALL

// ReduceSum has no calIndex.
template <typename T>
void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,
               const int32_t count, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::ReduceAll(ReduceType::SUM, "ReduceSum", dst, src, workLocal, nullptr, count, 0, false, loc);
}
template <typename T>
void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,
               const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const megafuse_emu::LaneMask m = megafuse_emu::ContinuousMask(mask, sizeof(T), "ReduceSum", loc);
    megafuse_emu::ReduceAll(ReduceType::SUM, "ReduceSum", dst, src, workLocal, &m, repeatTime, srcRepStride, false, loc);
}
template <typename T>
void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& workLocal,
               const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const megafuse_emu::LaneMask m = megafuse_emu::BitMask(mask, sizeof(T), "ReduceSum", loc);
    megafuse_emu::ReduceAll(ReduceType::SUM, "ReduceSum", dst, src, workLocal, &m, repeatTime, srcRepStride, false, loc);
}

template <typename T>
T GetReduceRepeatSumSpr(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::ReduceSpr& s = megafuse_emu::ReduceSprOf(loc);
    if (!s.has_sum) megafuse_emu::Fail(loc, "GetReduceRepeatSumSpr: no ReduceSum ran on this core");
    return static_cast<T>(static_cast<megafuse_emu::CalcT<T>>(s.sum));
}
template <typename T>
void GetReduceRepeatMaxMinSpr(T& maxMinValue, T& maxMinIndex, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::ReduceSpr& s = megafuse_emu::ReduceSprOf(loc);
    if (!s.has_maxmin) megafuse_emu::Fail(loc, "GetReduceRepeatMaxMinSpr: no ReduceMax/ReduceMin ran on this core");
    maxMinValue = static_cast<T>(static_cast<megafuse_emu::CalcT<T>>(s.maxmin));
    maxMinIndex = megafuse_emu::IndexAsT<T>(s.index);
}

}  // namespace AscendC
