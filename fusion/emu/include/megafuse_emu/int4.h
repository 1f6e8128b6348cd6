// int4b_t: the devkit's signed 4-bit integer (two per byte, element 2i in the low nibble of
// byte i, 2i + 1 in the high nibble; sizeof(int4b_t) = 1 as the devkit's samples note, one
// storage byte holding one value when used as a scalar).
//
// A LocalTensor<int4b_t> / GlobalTensor<int4b_t> counts elements of half a byte: GetSize, SetSize,
// SetGlobalBuffer(ptr, size), operator[] (even offsets: a view starts on a byte), the static-tensor
// constructor, GetValue and SetValue are specialised here; ReinterpretCast keeps the bytes. Cast between half
// and int4b_t is emulated (count and both mask forms; lane count of the half side, 64 int4 per
// 32-byte block; saturating to [-8, 7]) and Mmad int4b_t x int4b_t -> int32_t (16 x 64 A and
// 64 x 16 B fractals of 512 B, C0 = 64). APIs that move whole fractals or 32-byte blocks
// (LoadData with LoadData2DParams, DataCopy with DataCopyParams / Nd2NzParams, whose sizes are
// in bytes for a 1-byte T) work on the packed bytes unchanged; the count forms of DataCopy are
// deleted (they would move count bytes, not count / 2); other vector ops do not take int4b_t.
//
// Self-contained on purpose (other emulator headers may include it for their int4 paths).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cube.h"
#include "data_copy.h"
#include "init_check.h"
#include "tensor.h"
#include "vector_lanes.h"

namespace AscendC {

struct int4b_t {
    uint8_t storage = 0;  // the value in the low nibble
    int4b_t() = default;
    template <typename I, typename = std::enable_if_t<std::is_arithmetic_v<I>>>
    constexpr int4b_t(I v) : storage(static_cast<uint8_t>(static_cast<int>(v) & 0xF))  // NOLINT: implicit
    {}
    constexpr int Value() const { return (storage & 0x8) ? static_cast<int>(storage & 0xF) - 16 : storage & 0xF; }
    constexpr operator int() const { return Value(); }  // NOLINT: implicit like the device type
};

}  // namespace AscendC

namespace megafuse_emu {

template <>
constexpr const char* TypeName<AscendC::int4b_t>() { return "int4b_t"; }

// Nibble i of a byte array.
inline int LoadInt4(const uint8_t* base, uint64_t i)
{
    const uint8_t b = base[i / 2];
    const int v = (i % 2) ? (b >> 4) : (b & 0xF);
    return v >= 8 ? v - 16 : v;
}

inline void StoreInt4(uint8_t* base, uint64_t i, int v)
{
    uint8_t& b = base[i / 2];
    const uint8_t n = static_cast<uint8_t>(v & 0xF);
    b = (i % 2) ? static_cast<uint8_t>((b & 0x0F) | (n << 4)) : static_cast<uint8_t>((b & 0xF0) | n);
}

}  // namespace megafuse_emu

namespace AscendC {

template <>
inline LocalTensor<int4b_t>::LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize, megafuse_emu::Loc loc)
    : ref_(megafuse_emu::StaticTensorRef(pos, addr, (static_cast<uint64_t>(tileSize) + 1) / 2,
                                         "LocalTensor(TPosition, addr, tileSize)", loc))
{}

template <>
inline uint32_t LocalTensor<int4b_t>::GetSize() const { return static_cast<uint32_t>(ref_.len * 2); }

template <>
inline void LocalTensor<int4b_t>::SetSize(uint32_t size, megafuse_emu::Loc loc)
{
    if (ref_.block == nullptr) megafuse_emu::Fail(loc, "SetSize on an uninitialized LocalTensor");
    const uint64_t bytes = (static_cast<uint64_t>(size) + 1) / 2;
    if (ref_.off + bytes > ref_.block->bytes)
        megafuse_emu::Fail(loc, megafuse_emu::Str("SetSize(", size, ") exceeds the ", ref_.block->bytes, "-byte buffer"));
    ref_.len = bytes;
}

template <>
inline LocalTensor<int4b_t> LocalTensor<int4b_t>::operator[](uint32_t offset) const
{
    LocalTensor v = *this;
    if (ref_.bad) return v;
    const uint64_t size = GetSize();
    if (offset > size || offset % 2 != 0) {  // an odd offset would start inside a byte
        v.ref_.bad = true;
        v.ref_.bad_index = offset;
        v.ref_.bad_size = size;
        return v;
    }
    v.ref_.off += offset / 2;
    v.ref_.len -= offset / 2;
    return v;
}

template <>
inline int4b_t LocalTensor<int4b_t>::GetValue(uint32_t index, megafuse_emu::Loc loc) const
{
    megafuse_emu::CheckMem(ref_, megafuse_emu::Mem::UB, "GetValue", "tensor", loc);
    const uint8_t* p = megafuse_emu::LocalAccess(ref_, 1, index / 2, 1, "GetValue", "tensor", loc);
    megafuse_emu::CheckWritten(p, 1, "GetValue", "tensor", loc);
    return int4b_t(megafuse_emu::LoadInt4(p, index % 2));
}

template <>
inline void LocalTensor<int4b_t>::SetValue(uint32_t index, const int4b_t& value, megafuse_emu::Loc loc) const
{
    megafuse_emu::CheckMem(ref_, megafuse_emu::Mem::UB, "SetValue", "tensor", loc);
    uint8_t* p = megafuse_emu::LocalAccess(ref_, 1, index / 2, 1, "SetValue", "tensor", loc);
    megafuse_emu::StoreInt4(p, index % 2, value.Value());
    megafuse_emu::MarkWritten(p, 1);
}

// GlobalTensor<int4b_t>: sizes and offsets count int4 elements (internally the packed bytes).
template <>
inline void GlobalTensor<int4b_t>::SetGlobalBuffer(__gm__ int4b_t* buffer, uint64_t bufferSize, megafuse_emu::Loc loc)
{
    set_line_ = loc.line();
    ptr_ = origin_ = buffer;
    off_ = 0;
    size_ = (bufferSize + 1) / 2;
    set_ = true;
    bad_ = false;
}

template <>
inline uint64_t GlobalTensor<int4b_t>::GetSize() const { return size_ * 2; }

template <>
inline GlobalTensor<int4b_t> GlobalTensor<int4b_t>::operator[](uint64_t offset) const
{
    GlobalTensor v = *this;
    if (bad_ || !set_) return v;
    if (offset > size_ * 2 || offset % 2 != 0) {  // an odd offset would start inside a byte
        v.bad_ = true;
        v.bad_index_ = off_ * 2 + offset;
        v.bad_size_ = (off_ + size_) * 2;
        return v;
    }
    v.ptr_ += offset / 2;
    v.off_ += offset / 2;
    v.size_ -= offset / 2;
    return v;
}

template <>
inline int4b_t GlobalTensor<int4b_t>::GetValue(uint64_t offset, megafuse_emu::Loc loc) const
{
    const uint8_t* p = AccessBytes(offset / 2, 1, "GlobalTensor::GetValue", loc);
    megafuse_emu::Count(megafuse_emu::GM_SCALAR_READS);
    return int4b_t(megafuse_emu::LoadInt4(p, offset % 2));
}

template <>
inline void GlobalTensor<int4b_t>::SetValue(uint64_t offset, const int4b_t& value, megafuse_emu::Loc loc) const
{
    uint8_t* p = AccessBytes(offset / 2, 1, "GlobalTensor::SetValue", loc);
    megafuse_emu::StoreInt4(p, offset % 2, value.Value());
    megafuse_emu::Count(megafuse_emu::GM_SCALAR_WRITES);
}

// The count forms would move count bytes instead of count / 2: not emulated.
template <typename T = int4b_t>
void DataCopy(const LocalTensor<int4b_t>&, const GlobalTensor<int4b_t>&, const uint32_t) = delete;
template <typename T = int4b_t>
void DataCopy(const GlobalTensor<int4b_t>&, const LocalTensor<int4b_t>&, const uint32_t) = delete;
template <typename T = int4b_t>
void DataCopy(const LocalTensor<int4b_t>&, const LocalTensor<int4b_t>&, const uint32_t) = delete;

}  // namespace AscendC

namespace megafuse_emu {

// half <-> int4b_t lanes. Round modes: the devkit cast sample converts half -> int4b_t with
// CAST_CEIL and the matmul_s4 sample int4b_t -> half with CAST_NONE; the other modes follow
// the half -> int8_t row of the A2 Cast table (not verified for int4b_t).
inline void CheckInt4Cast(bool to_int4, AscendC::RoundMode m, const Loc& loc)
{
    CoreState& c = Core(loc);
    if (!IsArch2201()) Fail(loc, Str("Cast with int4b_t is emulated on arch 2201 only, not on ", c.soc_name));
    if (!to_int4 && m != AscendC::RoundMode::CAST_NONE)
        Fail(loc, Str("Cast int4b_t -> half is exact: only CAST_NONE, not ", RoundName(m)));
    if (to_int4 && m == AscendC::RoundMode::CAST_ODD) Fail(loc, "Cast half -> int4b_t does not support CAST_ODD");
}

inline int HalfToInt4(half x, AscendC::RoundMode m)
{
    const double r = RoundIntegral(static_cast<double>(static_cast<float>(x)), m);
    if (std::isnan(r)) return 0;
    return static_cast<int>(std::min(7.0, std::max(-8.0, r)));
}

// One int4 <-> half conversion over element lists. idx_half / idx_int4: element indices of
// each lane; the int4 side is addressed in nibbles.
template <typename Lanes>
void Int4CastRun(bool to_int4, const AscendC::LocalTensor<AscendC::int4b_t>& t4, const AscendC::LocalTensor<half>& th,
                 AscendC::RoundMode m, uint64_t max4, uint64_t maxh, Lanes lanes, uint64_t repeats_or_bytes,
                 bool is_repeats, const Loc& loc)
{
    const char* api = "Cast";
    CheckInt4Cast(to_int4, m, loc);
    uint8_t* b4 = LocalAccess(t4.ref_, 1, 0, max4 / 2 + 1, api, to_int4 ? "dst" : "src", loc);
    CheckMem(t4.ref_, Mem::UB, api, to_int4 ? "dst" : "src", loc);
    CheckLocalAlign(t4.ref_, 32, api, to_int4 ? "dst" : "src", loc);
    uint8_t* bh = LocalAccess(th.ref_, sizeof(half), 0, maxh + 1, api, to_int4 ? "src" : "dst", loc);
    CheckMem(th.ref_, Mem::UB, api, to_int4 ? "src" : "dst", loc);
    CheckLocalAlign(th.ref_, 32, api, to_int4 ? "src" : "dst", loc);
    lanes([&](uint64_t i4, uint64_t ih) {
        if (to_int4) {
            const uint8_t st = ElemState(bh + ih * 2, 2);
            if (st == kNeverWritten) NoteOrigin(bh + ih * 2, 2, api, "src", loc);
            half x;
            std::memcpy(&x, bh + ih * 2, 2);
            StoreInt4(b4, i4, HalfToInt4(x, m));
            // the byte's state: a nibble write keeps the other nibble's
            uint8_t* w = ShadowOf(b4 + i4 / 2);
            if (w != nullptr && (*w == kWritten || *w == kNeverWritten)) SetState(b4 + i4 / 2, 1, st == kWritten ? kWritten : kDerived);
        } else {
            const uint8_t st = ElemState(b4 + i4 / 2, 1);
            if (st == kNeverWritten) NoteOrigin(b4 + i4 / 2, 1, api, "src", loc);
            const half y = static_cast<half>(static_cast<float>(LoadInt4(b4, i4)));
            std::memcpy(bh + ih * 2, &y, 2);
            SetState(bh + ih * 2, 2, st == kWritten ? kWritten : kDerived);
        }
    });
    Count(VECTOR_INSTRUCTIONS);
    Count(VECTOR_REPEATS, is_repeats ? repeats_or_bytes : (repeats_or_bytes + 255) / 256);
}

inline void Int4CastCount(bool to_int4, const AscendC::LocalTensor<AscendC::int4b_t>& t4,
                          const AscendC::LocalTensor<half>& th, AscendC::RoundMode m, int64_t count, const Loc& loc)
{
    Core(loc);
    if (count < 0) Fail(loc, Str("Cast: count ", count, " is negative"));
    if (count == 0) return;
    Int4CastRun(to_int4, t4, th, m, count - 1, count - 1,
                [&](auto f) { for (int64_t i = 0; i < count; ++i) f(i, i); }, count * 2ull, false, loc);
}

// Repeat form: 128 lanes (the half side's), the int4 side 64 elements per 32-byte block.
inline void Int4CastRepeat(bool to_int4, const AscendC::LocalTensor<AscendC::int4b_t>& t4,
                           const AscendC::LocalTensor<half>& th, AscendC::RoundMode m, const LaneMask& mask,
                           const RepeatTimes& repeat, const AscendC::UnaryRepeatParams& p, const Loc& loc)
{
    Core(loc);
    if (mask.counter < 0 && (repeat.v < 0 || repeat.v > 255))
        Fail(loc, Str("Cast: repeatTime ", repeat.v, " is outside [0, 255] (the uint8_t parameter would wrap)"));
    constexpr uint32_t lanes = 128;
    const int64_t reps = RepeatsOf(mask, repeat, lanes);
    if (reps == 0 || mask.Empty()) return;
    const uint32_t blk4 = to_int4 ? p.dstBlkStride : p.srcBlkStride, rep4 = to_int4 ? p.dstRepStride : p.srcRepStride;
    const uint32_t blkh = to_int4 ? p.srcBlkStride : p.dstBlkStride, reph = to_int4 ? p.srcRepStride : p.dstRepStride;
    auto idx = [](int64_t r, uint32_t l, uint64_t e, uint32_t blk, uint32_t rep) {
        return static_cast<uint64_t>(r) * rep * e + (l / e) * blk * e + l % e;
    };
    uint64_t max4 = 0, maxh = 0;
    for (int64_t r = 0; r < reps; ++r)
        for (uint32_t l = 0; l < lanes; ++l)
            if (LaneOn(mask, r, l, lanes)) {
                max4 = std::max(max4, idx(r, l, 64, blk4, rep4));
                maxh = std::max(maxh, idx(r, l, 16, blkh, reph));
            }
    Int4CastRun(to_int4, t4, th, m, max4, maxh,
                [&](auto f) {
                    for (int64_t r = 0; r < reps; ++r)
                        for (uint32_t l = 0; l < lanes; ++l)
                            if (LaneOn(mask, r, l, lanes)) f(idx(r, l, 64, blk4, rep4), idx(r, l, 16, blkh, reph));
                },
                static_cast<uint64_t>(reps), true, loc);
}

}  // namespace megafuse_emu

namespace AscendC {

// Cast<int4b_t, half> / Cast<half, int4b_t> (explicit template arguments as the devkit samples
// write them, or deduced from the tensors).
template <typename T = int4b_t, typename U = half, bool isSetMask = true>
void Cast(const LocalTensor<int4b_t>& dst, const LocalTensor<half>& src, const RoundMode& roundMode,
          const uint32_t count, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, int4b_t> && std::is_same_v<U, half>);
    megafuse_emu::Int4CastCount(true, dst, src, roundMode, count, loc);
}

template <typename T = half, typename U = int4b_t, bool isSetMask = true>
void Cast(const LocalTensor<half>& dst, const LocalTensor<int4b_t>& src, const RoundMode& roundMode,
          const uint32_t count, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> && std::is_same_v<U, int4b_t>);
    megafuse_emu::Int4CastCount(false, src, dst, roundMode, count, loc);
}

template <typename T = int4b_t, typename U = half, bool isSetMask = true>
void Cast(const LocalTensor<int4b_t>& dst, const LocalTensor<half>& src, const RoundMode& roundMode, const uint64_t mask,
          megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, int4b_t> && std::is_same_v<U, half>);
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::Int4CastRepeat(true, dst, src, roundMode, megafuse_emu::ContinuousMask(mask, 2, "Cast", loc),
                                 repeatTime, p, loc);
}

template <typename T = int4b_t, typename U = half, bool isSetMask = true>
void Cast(const LocalTensor<int4b_t>& dst, const LocalTensor<half>& src, const RoundMode& roundMode,
          const uint64_t mask[], megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, int4b_t> && std::is_same_v<U, half>);
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::Int4CastRepeat(true, dst, src, roundMode, megafuse_emu::BitMask(mask, 2, "Cast", loc), repeatTime,
                                 p, loc);
}

template <typename T = half, typename U = int4b_t, bool isSetMask = true>
void Cast(const LocalTensor<half>& dst, const LocalTensor<int4b_t>& src, const RoundMode& roundMode, const uint64_t mask,
          megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> && std::is_same_v<U, int4b_t>);
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::Int4CastRepeat(false, src, dst, roundMode, megafuse_emu::ContinuousMask(mask, 2, "Cast", loc),
                                 repeatTime, p, loc);
}

template <typename T = half, typename U = int4b_t, bool isSetMask = true>
void Cast(const LocalTensor<half>& dst, const LocalTensor<int4b_t>& src, const RoundMode& roundMode,
          const uint64_t mask[], megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> && std::is_same_v<U, int4b_t>);
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::Int4CastRepeat(false, src, dst, roundMode, megafuse_emu::BitMask(mask, 2, "Cast", loc), repeatTime,
                                 p, loc);
}

}  // namespace AscendC

namespace AscendC {

// Mmad with int4b_t A and B (devkit Mmad page: int4b_t -> int32_t on Atlas A2): C0 = 64 elements
// (32 B), fractal layouts as for the other types (cube.h), C in 16 x 16 int32 NZ fractals.
// Initial C as Mmad's: 0 when cmatrixInitVal && !isBias, else the accumulated L0C.
inline void Mmad(const LocalTensor<int32_t>& dst, const LocalTensor<int4b_t>& fm, const LocalTensor<int4b_t>& filter,
                 const MmadParams& p, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "Mmad (int4b_t)";
    CoreState& c = Core(loc);
    if (!IsArch2201()) Fail(loc, Str(api, " is emulated on arch 2201 only, not on ", c.soc_name));
    MmadOperands(dst, fm, filter, loc);
    if (p.cmatrixSource && !(p.cmatrixInitVal && !p.isBias)) Fail(loc, Str(api, ": cmatrixSource = true is not emulated"));
    if (p.m == 0 || p.n == 0 || p.k == 0) return;
    if (p.m == 1) Fail(loc, Str(api, ": GEMV (m = 1) is not emulated"));
    CheckLocalAlign(fm.ref_, 512, api, "fm", loc);
    CheckLocalAlign(filter.ref_, 512, api, "filter", loc);
    CheckLocalAlign(dst.ref_, 1024, api, "dst", loc);
    constexpr uint64_t c0 = 64;
    const uint64_t m1 = (p.m + 15) / 16, k1 = (p.k + c0 - 1) / c0, n1 = (p.n + 15) / 16;
    const uint8_t* a = LocalAccessBytes(fm.ref_, 0, m1 * k1 * 512, api, "fm", loc);
    const uint8_t* b = LocalAccessBytes(filter.ref_, 0, k1 * n1 * 512, api, "filter", loc);
    uint8_t* out = LocalAccess(dst.ref_, 4, 0, m1 * n1 * 256, api, "dst", loc);
    const bool zero = p.cmatrixInitVal && !p.isBias;
    for (uint64_t i = 0; i < m1 * 16; ++i)
        for (uint64_t j = 0; j < n1 * 16; ++j) {
            const uint64_t ci = ((j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16;
            const bool valid = i < p.m && j < p.n;
            uint8_t st = zero ? kWritten : ElemState(out + ci * 4, 4);
            if (st == kNeverWritten) st = kDerived;
            int32_t acc = zero || !valid ? 0 : Ld<int32_t>(out, ci);
            for (uint64_t kk = 0; kk < p.k; ++kk) {
                const uint64_t ai = ((i / 16) * k1 + kk / c0) * 16 * c0 + (i % 16) * c0 + kk % c0;
                const uint64_t bi = ((kk / c0) * n1 + j / 16) * c0 * 16 + (j % 16) * c0 + kk % c0;
                const uint8_t sa = ElemState(a + ai / 2, 1), sb = ElemState(b + bi / 2, 1);
                if (sa != kWritten || sb != kWritten) {
                    if (sa == kNeverWritten) NoteOrigin(a + ai / 2, 1, api, "fm (A2 / L0A)", loc);
                    if (sb == kNeverWritten) NoteOrigin(b + bi / 2, 1, api, "filter (B2 / L0B)", loc);
                    st = kDerived;
                }
                if (valid) acc += LoadInt4(a, ai) * LoadInt4(b, bi);
            }
            // fractal padding (rows past m, columns past n) holds whatever the cube computes from
            // the padding; here 0, marked derived when the padding was never written
            St<int32_t>(out, ci, acc);
            SetState(out + ci * 4, 4, st);
        }
    Count(MMAD_INSTRUCTIONS);
    Count(CUBE_FRACTALS, m1 * k1 * n1);
}

}  // namespace AscendC
