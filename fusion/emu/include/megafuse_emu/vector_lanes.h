// Vector unit machinery under the API of vector.h: operands, lane masks, the count and repeat
// iteration (with counters and init tracking), and the lane functions of each op, including the
// Cast rounding modes. vector.h stamps the devkit's op names out of these.
// One lane computes the way the vector unit does per instruction: half and bfloat16_t through
// float with one rounding at the end (exact libm for Exp/Ln/Sqrt: the hardware approximations
// are not modelled).
#pragma once

#include <array>

#include "tensor.h"
#include "vec_mask.h"

namespace AscendC {

struct BinaryRepeatParams {
    BinaryRepeatParams() {}
    BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn, const uint8_t src1BlkStrideIn,
                       const uint8_t dstRepStrideIn, const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
        : dstBlkStride(dstBlkStrideIn), src0BlkStride(src0BlkStrideIn), src1BlkStride(src1BlkStrideIn),
          dstRepStride(dstRepStrideIn), src0RepStride(src0RepStrideIn), src1RepStride(src1RepStrideIn)
    {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

struct UnaryRepeatParams {
    UnaryRepeatParams() {}
    UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn, const uint8_t dstRepStrideIn,
                      const uint8_t srcRepStrideIn)
        : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn)
    {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint16_t srcBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t srcRepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
    bool halfBlock = false;
};

}  // namespace AscendC

namespace megafuse_emu {

// The devkit's repeatTime parameter is uint8_t, so 300 would silently become 44. The
// emulation takes any integer here (call sites are unchanged) to report it instead.
struct RepeatTimes {
    int64_t v;
    template <typename I, typename = std::enable_if_t<std::is_integral_v<I> || std::is_enum_v<I>>>
    RepeatTimes(I x) : v(static_cast<int64_t>(x))  // NOLINT: implicit on purpose
    {}
};

template <typename T>
T Ld(const uint8_t* base, uint64_t i)
{
    T v;
    std::memcpy(&v, base + i * sizeof(T), sizeof(T));
    return v;
}

template <typename T>
void St(uint8_t* base, uint64_t i, T v)
{
    std::memcpy(base + i * sizeof(T), &v, sizeof(T));
}

// Type one lane computes in: float for the 16-bit floats, the type itself otherwise.
template <typename T>
using CalcT = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>, float, T>;

// One vector operand: its tensor, element size and (repeat form) strides in DataBlocks.
struct Operand {
    const TensorRef* ref;
    uint32_t esize;
    uint32_t blk;
    uint32_t rep;
    const char* name;
    // "dst" operands are stored, the others loaded (uninitialized-read check). MulAddDst and
    // Axpy also load dst; that load is not checked.
    bool IsDst() const { return name[0] == 'd'; }
};

struct LaneMask {
    uint64_t w[2] = {0, 0};
    int64_t counter = -1;  // >= 0: counter mode (vec_mask.h), this many elements over all repeats
    bool Has(uint32_t lane) const { return (w[lane / 64] >> (lane % 64)) & 1u; }
    bool Empty() const { return w[0] == 0 && w[1] == 0; }
};

inline uint32_t LaneBytes(const Operand* ops, size_t n)
{
    uint32_t b = 0;
    for (size_t i = 0; i < n; ++i) b = std::max(b, ops[i].esize);
    return b;
}

// Continuous mask: the first `mask` lanes. Above the lane count the hardware silently
// clamps to one full repeat, so it is refused here.
inline void RequireWideLanes(uint32_t lane_bytes, const char* api, const Loc& loc)
{
    if (lane_bytes < 2) Fail(loc, Str(api, ": the mask/repeat form is emulated for 16- and 32-bit types only"));
}

// isSetMask = false: the mask register instead of the argument (vec_mask.h).
inline bool RegisterMask(LaneMask& out, uint32_t lane_bytes, const char* api, const Loc& loc)
{
    MaskReg& m = VecMask(loc);
    if (!m.pending) return false;
    m.pending = false;
    if (!m.set) Fail(loc, Str(api, ": isSetMask = false but no SetVectorMask / ResetMask set the mask register on this core"));
    if (m.counter) {
        out.counter = static_cast<int64_t>(m.w[0]);
        out.w[0] = out.w[1] = ~0ull;
        if (lane_bytes == 4) out.w[1] = 0;
    } else {
        out.w[0] = m.w[0];
        out.w[1] = lane_bytes == 4 ? 0 : m.w[1];
    }
    return true;
}

inline LaneMask ContinuousMask(uint64_t mask, uint32_t lane_bytes, const char* api, const Loc& loc)
{
    RequireWideLanes(lane_bytes, api, loc);
    if (LaneMask r; RegisterMask(r, lane_bytes, api, loc)) return r;
    const uint32_t lanes = 256 / lane_bytes;
    if (mask > lanes)
        Fail(loc, Str(api, ": mask ", mask, " exceeds ", lanes, " lanes per repeat for ", lane_bytes * 8,
                      "-bit operands"));
    LaneMask m;
    for (uint32_t l = 0; l < mask; ++l) m.w[l / 64] |= 1ull << (l % 64);
    return m;
}

inline LaneMask BitMask(const uint64_t* mask, uint32_t lane_bytes, const char* api, const Loc& loc)
{
    RequireWideLanes(lane_bytes, api, loc);
    if (LaneMask r; RegisterMask(r, lane_bytes, api, loc)) return r;
    LaneMask m;
    m.w[0] = mask[0];
    m.w[1] = mask[1];
    if (lane_bytes == 4 && m.w[1] != 0)
        Fail(loc, Str(api, ": mask[1] must be 0 for 32-bit operands (64 lanes per repeat)"));
    return m;
}

inline void CountVector(uint64_t bytes_or_repeats, bool is_repeats)
{
    Count(VECTOR_INSTRUCTIONS);
    Count(VECTOR_REPEATS, is_repeats ? bytes_or_repeats : (bytes_or_repeats + 255) / 256);
}

inline uint8_t* VecOperand(Operand& o, uint64_t count, const char* api, const Loc& loc)
{
    uint8_t* p = LocalAccess(*o.ref, o.esize, 0, count, api, o.name, loc);
    CheckMem(*o.ref, Mem::UB, api, o.name, loc);
    CheckLocalAlign(*o.ref, 32, api, o.name, loc);
    return p;
}

// Uninitialized-read tracking of the count form (init_check.h): a dst element is written when
// the src elements of its lane are, "derived" otherwise.
template <size_t N>
void PropagateCount(const std::array<Operand, N>& ops, const std::array<uint8_t*, N>& base, uint64_t count,
                    const char* api, const Loc& loc)
{
    bool all = true;
    for (size_t k = 0; k < N && all; ++k) {
        if (ops[k].IsDst()) continue;
        const uint8_t* w = ShadowOf(base[k]);
        all = w == nullptr || AllWritten(w, count * ops[k].esize);
    }
    for (size_t k = 0; k < N; ++k) {
        if (!ops[k].IsDst()) continue;
        if (all) {
            MarkWritten(base[k], count * ops[k].esize);
            continue;
        }
        for (uint64_t i = 0; i < count; ++i) {
            uint8_t st = kWritten;
            for (size_t j = 0; j < N; ++j) {
                if (ops[j].IsDst()) continue;
                const uint8_t* e = base[j] + i * ops[j].esize;
                const uint8_t sj = ElemState(e, ops[j].esize);
                if (sj == kNeverWritten) NoteOrigin(e, ops[j].esize, api, ops[j].name, loc);
                if (sj != kWritten) st = kDerived;
            }
            SetState(base[k] + i * ops[k].esize, ops[k].esize, st);
        }
    }
}

// Count form: lane i of every operand is element i. f(bases, i) computes one element.
template <size_t N, typename F>
void RunCount(const char* api, std::array<Operand, N> ops, int64_t count, F f, const Loc& loc)
{
    Core(loc);
    if (count < 0) Fail(loc, Str(api, ": count ", count, " is negative"));
    if (count == 0) return;  // documented NOP
    std::array<uint8_t*, N> base;
    for (size_t k = 0; k < N; ++k) base[k] = VecOperand(ops[k], count, api, loc);
    PropagateCount(ops, base, static_cast<uint64_t>(count), api, loc);
    for (int64_t i = 0; i < count; ++i) {
        std::array<uint64_t, N> idx;
        idx.fill(static_cast<uint64_t>(i));
        f(base, idx);
    }
    CountVector(static_cast<uint64_t>(count) * LaneBytes(ops.data(), N), false);
}

// Repeat form: lane l of repeat r of an operand with E elements per DataBlock is element
// r*repStride*E + (l/E)*blkStride*E + l%E.
// Counter mode (vec_mask.h): the repeats and the enabled lanes of each.
inline int64_t RepeatsOf(const LaneMask& m, const RepeatTimes& r, uint32_t lanes)
{
    return m.counter >= 0 ? (m.counter + lanes - 1) / lanes : r.v;
}
inline bool LaneOn(const LaneMask& m, int64_t r, uint32_t l, uint32_t lanes)
{
    return m.counter >= 0 ? r * static_cast<int64_t>(lanes) + l < m.counter && m.Has(l) : m.Has(l);
}

template <size_t N, typename F>
void RunRepeat(const char* api, std::array<Operand, N> ops, const LaneMask& mask, const RepeatTimes& repeat, F f,
               const Loc& loc)
{
    Core(loc);
    if (mask.counter < 0 && (repeat.v < 0 || repeat.v > 255))
        Fail(loc, Str(api, ": repeatTime ", repeat.v, " is outside [0, 255] (the uint8_t parameter would wrap)"));
    const uint32_t lanes = 256 / LaneBytes(ops.data(), N);
    const int64_t reps = RepeatsOf(mask, repeat, lanes);
    if (reps == 0 || mask.Empty()) return;  // documented NOP
    auto index = [&](const Operand& o, int64_t r, uint32_t l) {
        const uint64_t e = 32 / o.esize;
        return static_cast<uint64_t>(r) * o.rep * e + (l / e) * o.blk * e + l % e;
    };
    std::array<uint8_t*, N> base;
    for (size_t k = 0; k < N; ++k) {
        uint64_t hi = 0;  // strides are unsigned: the last full and the last repeat reach furthest
        for (int64_t r = std::max<int64_t>(0, reps - 2); r < reps; ++r)
            for (uint32_t l = 0; l < lanes; ++l)
                if (LaneOn(mask, r, l, lanes)) hi = std::max(hi, index(ops[k], r, l));
        base[k] = VecOperand(ops[k], hi + 1, api, loc);
    }
    for (int64_t r = 0; r < reps; ++r)
        for (uint32_t l = 0; l < lanes; ++l) {
            if (!LaneOn(mask, r, l, lanes)) continue;
            std::array<uint64_t, N> idx;
            for (size_t k = 0; k < N; ++k) idx[k] = index(ops[k], r, l);
            uint8_t st = kWritten;
            for (size_t k = 0; k < N; ++k) {
                if (ops[k].IsDst()) continue;
                const uint8_t* e = base[k] + idx[k] * ops[k].esize;
                const uint8_t sk = ElemState(e, ops[k].esize);
                if (sk == kNeverWritten) NoteOrigin(e, ops[k].esize, api, ops[k].name, loc);
                if (sk != kWritten) st = kDerived;
            }
            f(base, idx);
            for (size_t k = 0; k < N; ++k)
                if (ops[k].IsDst()) SetState(base[k] + idx[k] * ops[k].esize, ops[k].esize, st);
        }
    CountVector(static_cast<uint64_t>(reps), true);
}

template <typename T>
Operand Op(const AscendC::LocalTensor<T>& t, const char* name, uint32_t blk = 1, uint32_t rep = 8)
{
    return Operand{&t.ref_, sizeof(T), blk, rep, name};
}

// isSetMask = false: the op's mask conversion (ContinuousMask / BitMask) reads the register.
template <bool isSetMask>
void RequireSetMask(const Loc& loc = Loc::current())
{
    if constexpr (!isSetMask) VecMask(loc).pending = true;
}

// ---- Cast: conversions and rounding modes --------------------------------------------------

template <typename N>
uint32_t Bits(N v)
{
    if constexpr (sizeof(N) == 2) {
        uint16_t b;
        std::memcpy(&b, &v, 2);
        return b;
    } else {
        uint32_t b;
        std::memcpy(&b, &v, 4);
        return b;
    }
}

// Next representable value of a narrow float (half / bfloat16_t: sign-magnitude 16 bit).
template <typename N>
N Next16(N v, bool up)
{
    uint16_t b = static_cast<uint16_t>(Bits(v));
    const bool neg = b & 0x8000u;
    if ((b & 0x7fffu) == 0) b = up ? 0x0001u : 0x8001u;
    else if (up != neg) ++b;
    else --b;
    N out;
    std::memcpy(&out, &b, 2);
    return out;
}

// Rounds x (exactly representable as a double) to the float type N with a Cast RoundMode.
template <typename N>
N RoundToFloatType(double x, AscendC::RoundMode mode)
{
    using AscendC::RoundMode;
    N near;
    if constexpr (std::is_same_v<N, float>) near = static_cast<float>(x);
    else near = static_cast<N>(static_cast<float>(x));
    const double nd = static_cast<double>(static_cast<float>(near));
    if (mode == RoundMode::CAST_RINT || mode == RoundMode::CAST_NONE || std::isnan(x) || nd == x) return near;
    auto next = [](N v, bool up) {
        if constexpr (std::is_same_v<N, float>) return std::nextafter(v, up ? INFINITY : -INFINITY);
        else return Next16(v, up);
    };
    const N lo = nd < x ? near : next(near, false);
    const N hi = nd < x ? next(near, true) : near;
    const double lod = static_cast<float>(lo), hid = static_cast<float>(hi);
    switch (mode) {
        case RoundMode::CAST_FLOOR: return lo;
        case RoundMode::CAST_CEIL: return hi;
        case RoundMode::CAST_TRUNC: return x > 0 ? lo : hi;
        case RoundMode::CAST_ROUND:  // nearest, ties away from zero: differs from RINT only on ties
            return (x - lod == hid - x) ? (x > 0 ? hi : lo) : near;
        case RoundMode::CAST_ODD: return (Bits(lo) & 1u) ? lo : hi;
        default: return near;
    }
}

// Rounds to an integral value with a Cast RoundMode (CAST_NONE/CAST_RINT: to nearest even).
inline double RoundIntegral(double x, AscendC::RoundMode mode)
{
    using AscendC::RoundMode;
    switch (mode) {
        case RoundMode::CAST_FLOOR: return std::floor(x);
        case RoundMode::CAST_CEIL: return std::ceil(x);
        case RoundMode::CAST_ROUND: return std::round(x);  // ties away from zero
        case RoundMode::CAST_TRUNC: return std::trunc(x);
        default: return std::nearbyint(x);
    }
}

template <typename I>
I RoundToInt(double x, AscendC::RoundMode mode)
{
    const double r = RoundIntegral(x, mode);
    if (std::isnan(r)) return 0;
    // The vector unit saturates out-of-range conversions.
    return static_cast<I>(std::min<double>(std::max<double>(r, std::numeric_limits<I>::lowest()),
                                           std::numeric_limits<I>::max()));
}

// The (src, dst) pairs and round modes of the devkit Cast tables that are emulated: arch
// 2201 = "Atlas A2" table, arch 2002 = "Atlas 推理系列产品 AI Core" table.
template <typename T, typename U>
bool CastModeAllowed(AscendC::RoundMode m, bool a2)
{
    using AscendC::RoundMode;
    const bool none = m == RoundMode::CAST_NONE;
    const bool rfcrt = m == RoundMode::CAST_RINT || m == RoundMode::CAST_FLOOR || m == RoundMode::CAST_CEIL ||
                       m == RoundMode::CAST_ROUND || m == RoundMode::CAST_TRUNC;
    if constexpr (std::is_same_v<U, half> && std::is_same_v<T, float>) return none;
    else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, half>)
        return a2 ? (none || rfcrt || m == RoundMode::CAST_ODD) : (none || m == RoundMode::CAST_ODD);
    else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, int32_t>) return a2 && rfcrt;
    else if constexpr (std::is_same_v<U, half> && std::is_same_v<T, int32_t>) return rfcrt;
    else if constexpr (std::is_same_v<U, int32_t> && std::is_same_v<T, float>) return a2 ? (none || rfcrt) : none;
    else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, float>) return a2 && rfcrt;
    else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, bfloat16_t>) return a2 && rfcrt;
    else if constexpr (std::is_same_v<U, bfloat16_t> && std::is_same_v<T, float>) return a2 && none;
    else if constexpr (std::is_same_v<U, int16_t> && std::is_same_v<T, half>) return a2 ? (none || rfcrt) : none;
    else if constexpr (std::is_same_v<U, half> && std::is_same_v<T, int16_t>) return a2 ? rfcrt : m == RoundMode::CAST_RINT;
    else if constexpr ((std::is_same_v<U, int8_t> || std::is_same_v<U, uint8_t>) && std::is_same_v<T, half>) return none;
    else if constexpr (std::is_same_v<U, half> && (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>))
        return none || (a2 ? rfcrt : (m != RoundMode::CAST_RINT && rfcrt));
    else {
        static_assert(sizeof(T) == 0, "this Cast type pair is not emulated");
        return false;
    }
}

inline const char* RoundName(AscendC::RoundMode m)
{
    static const char* const names[] = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL",
                                        "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
    return names[static_cast<int>(m)];
}

template <typename T, typename U>
T CastValue(U x, AscendC::RoundMode mode)
{
    const double d = static_cast<double>(static_cast<CalcT<U>>(x));
    if constexpr (std::is_integral_v<T>) return RoundToInt<T>(d, mode);
    else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float>)
        return static_cast<float>(std::isfinite(d) ? RoundIntegral(d, mode) : d);  // float -> integral float
    else return RoundToFloatType<T>(d, mode);
}

// Axpy lane: dst = scalar * src + dst with one rounding. (T, U) = (half, half), (float, float)
// or (float, half); in the repeat form the lane count follows the wider type.
template <typename T, typename U>
auto AxpyLane(U scalar)
{
    static_assert((std::is_same_v<T, U> && kIsFloatLike<T>) ||
                      (std::is_same_v<T, float> && std::is_same_v<U, half>),
                  "Axpy is emulated for half->half, float->float and half->float");
    const float s = static_cast<float>(scalar);
    return [s](const auto& base, const auto& idx) {
        const float x = static_cast<float>(Ld<U>(base[1], idx[1]));
        const float d = static_cast<float>(Ld<T>(base[0], idx[0]));
        St<T>(base[0], idx[0], static_cast<T>(std::fma(s, x, d)));
    };
}

// MulAddDst lane: dst = src0 * src1 + dst with one rounding. (T, U) = (half, half), (float, float)
// or (float, half) (devkit MulAddDst page, table 3; the product of two halves is exact in float).
template <typename T, typename U>
auto MulAddDstLane()
{
    static_assert((std::is_same_v<T, U> && kIsFloatLike<T>) ||
                      (std::is_same_v<T, float> && std::is_same_v<U, half>),
                  "MulAddDst is emulated for half->half, float->float and half->float");
    return [](const auto& base, const auto& idx) {
        const float a = static_cast<float>(Ld<U>(base[1], idx[1]));
        const float b = static_cast<float>(Ld<U>(base[2], idx[2]));
        const float d = static_cast<float>(Ld<T>(base[0], idx[0]));
        St<T>(base[0], idx[0], static_cast<T>(std::fma(a, b, d)));
    };
}

// The repeat form of MulAddDst for either mask form.
template <typename T, typename U>
void MulAddDstRepeat(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src0,
                     const AscendC::LocalTensor<U>& src1, const LaneMask& mask, const RepeatTimes& repeat,
                     const AscendC::BinaryRepeatParams& p, const Loc& loc)
{
    RunRepeat<3>("MulAddDst",
                 {Op(dst, "dst", p.dstBlkStride, p.dstRepStride), Op(src0, "src0", p.src0BlkStride, p.src0RepStride),
                  Op(src1, "src1", p.src1BlkStride, p.src1RepStride)},
                 mask, repeat, MulAddDstLane<T, U>(), loc);
}

// Cast lane, after checking the type pair and round mode against the SoC's Cast table.
template <typename T, typename U>
auto CastLane(AscendC::RoundMode mode, const Loc& loc)
{
    CoreState& c = Core(loc);
    if (!CastModeAllowed<T, U>(mode, IsArch2201()))
        Fail(loc, Str("Cast ", TypeName<U>(), " -> ", TypeName<T>(), " does not support ", RoundName(mode), " on ",
                      c.soc_name));
    return [mode](const auto& base, const auto& idx) {
        St<T>(base[0], idx[0], CastValue<T, U>(Ld<U>(base[1], idx[1]), mode));
    };
}

}  // namespace megafuse_emu

namespace megafuse_emu {

template <typename T, typename F>
auto BinaryLane(F op)
{
    return [op](const auto& base, const auto& idx) {
        using C = CalcT<T>;
        St<T>(base[0], idx[0], static_cast<T>(op(static_cast<C>(Ld<T>(base[1], idx[1])),
                                                 static_cast<C>(Ld<T>(base[2], idx[2])))));
    };
}

template <typename T, typename F>
void BinaryRepeat(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                  const AscendC::LocalTensor<T>& s1, const LaneMask& m, const RepeatTimes& r,
                  const AscendC::BinaryRepeatParams& p, F op, const Loc& loc)
{
    RunRepeat<3>(api, {Op(dst, "dst", p.dstBlkStride, p.dstRepStride), Op(s0, "src0", p.src0BlkStride, p.src0RepStride),
                       Op(s1, "src1", p.src1BlkStride, p.src1RepStride)},
                 m, r, BinaryLane<T>(op), loc);
}

// dst = f(src) for the unary and scalar ops; T is the dst type, U the src type.
template <typename T, typename U, typename F>
auto UnaryLane(F f)
{
    return [f](const auto& base, const auto& idx) { St<T>(base[0], idx[0], f(Ld<U>(base[1], idx[1]))); };
}

template <typename T, typename U, typename F>
void UnaryRepeat(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src,
                 const LaneMask& m, const RepeatTimes& r, const AscendC::UnaryRepeatParams& p, F f, const Loc& loc)
{
    RunRepeat<2>(api, {Op(dst, "dst", p.dstBlkStride, p.dstRepStride), Op(src, "src", p.srcBlkStride, p.srcRepStride)},
                 m, r, UnaryLane<T, U>(f), loc);
}

template <typename T, typename F>
auto Elementwise(F op)  // T -> T through the calc type
{
    return [op](T x) { return static_cast<T>(op(static_cast<CalcT<T>>(x))); };
}

}  // namespace megafuse_emu
