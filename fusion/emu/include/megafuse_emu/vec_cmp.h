// Compare / Compares / Select of the devkit (count forms; semantics from its API reference):
//   Compare(dst, src0, src1, cmpMode, count)   bit i of dst (byte i / 8, LSB first) = src0[i] op src1[i]
//   Compares(dst, src0, scalar, cmpMode, count) the same against a scalar
//   Select(dst, selMask, src0, src1, selMode, count)
//     VSEL_CMPMASK_SPR         every repeat (256 B of elements) uses the same first lanes bits
//     VSEL_TENSOR_TENSOR_MODE  bit i picks src0[i] (1) or src1[i] (0)
//   Select(dst, selMask, src0, scalar, VSEL_TENSOR_SCALAR_MODE, count)  src0[i] or the scalar
// Operands in UB, 32-byte aligned; every element or mask byte read must exist in its tensor
// and be initialized.
#pragma once

#include "vector.h"

namespace AscendC {

enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

}  // namespace AscendC

namespace megafuse_emu {

template <typename C>
bool CmpOp(AscendC::CMPMODE m, C a, C b)
{
    using AscendC::CMPMODE;
    switch (m) {
        case CMPMODE::LT: return a < b;
        case CMPMODE::GT: return a > b;
        case CMPMODE::EQ: return a == b;
        case CMPMODE::LE: return a <= b;
        case CMPMODE::GE: return a >= b;
        default: return a != b;
    }
}

// Reads element i of a source operand (state-checked) in its compute type.
template <typename T>
CalcT<T> LdChecked(const uint8_t* base, uint64_t i, uint8_t& st, const char* api, const char* name, const Loc& loc)
{
    const uint8_t s = ElemState(base + i * sizeof(T), sizeof(T));
    if (s == kNeverWritten) NoteOrigin(base + i * sizeof(T), sizeof(T), api, name, loc);
    if (s != kWritten) st = kDerived;
    return static_cast<CalcT<T>>(Ld<T>(base, i));
}

template <typename T, typename U, typename Rhs>
void CompareCount(const char* api, const AscendC::LocalTensor<U>& dst, const AscendC::LocalTensor<T>& src0, Rhs rhs,
                  AscendC::CMPMODE mode, int64_t count, const Loc& loc)
{
    static_assert(kIsFloatLike<T> || std::is_same_v<T, int32_t> || std::is_same_v<T, int16_t> ||
                      std::is_same_v<T, uint16_t> || std::is_same_v<T, uint32_t>,
                  "Compare: unsupported data type");
    Core(loc);
    if (count < 0) Fail(loc, Str(api, ": count ", count, " is negative"));
    if (count == 0) return;
    Operand od{&dst.ref_, 1, 1, 8, "dst"}, o0{&src0.ref_, sizeof(T), 1, 8, "src0"};
    uint8_t* db = VecOperand(od, static_cast<uint64_t>((count + 7) / 8), api, loc);
    const uint8_t* s0 = VecOperand(o0, static_cast<uint64_t>(count), api, loc);
    for (int64_t byte = 0; byte * 8 < count; ++byte) {
        uint8_t bits = 0, st = kWritten;
        for (int64_t k = 0; k < 8 && byte * 8 + k < count; ++k) {
            const uint64_t i = static_cast<uint64_t>(byte * 8 + k);
            const CalcT<T> a = LdChecked<T>(s0, i, st, api, "src0", loc);
            if (CmpOp(mode, a, rhs(i, st))) bits |= static_cast<uint8_t>(1u << k);
        }
        db[byte] = bits;
        SetState(db + byte, 1, st);
    }
    CountVector(static_cast<uint64_t>(count) * sizeof(T), false);
}

template <typename T, typename U, typename Other>
void SelectCount(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& selMask,
                 const AscendC::LocalTensor<T>& src0, Other other, AscendC::SELMODE mode, int64_t count, const Loc& loc)
{
    static_assert(kIsFloatLike<T>, "Select: unsupported data type");
    const char* api = "Select";
    Core(loc);
    if (count < 0) Fail(loc, Str(api, ": count ", count, " is negative"));
    if (count == 0) return;
    const uint64_t lanes = 256 / sizeof(T);
    const bool per_repeat = mode == AscendC::SELMODE::VSEL_CMPMASK_SPR;
    const uint64_t mask_bytes = per_repeat ? std::min<uint64_t>(lanes, count) / 8 + (std::min<uint64_t>(lanes, count) % 8 != 0)
                                           : static_cast<uint64_t>((count + 7) / 8);
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, om{&selMask.ref_, 1, 1, 8, "selMask"},
        o0{&src0.ref_, sizeof(T), 1, 8, "src0"};
    uint8_t* db = VecOperand(od, static_cast<uint64_t>(count), api, loc);
    const uint8_t* mb = VecOperand(om, mask_bytes, api, loc);
    const uint8_t* s0 = VecOperand(o0, static_cast<uint64_t>(count), api, loc);
    for (uint64_t i = 0; i < static_cast<uint64_t>(count); ++i) {
        const uint64_t bit = per_repeat ? i % lanes : i;
        uint8_t st = kWritten;
        const uint8_t ms = ElemState(mb + bit / 8, 1);
        if (ms == kNeverWritten) NoteOrigin(mb + bit / 8, 1, api, "selMask", loc);
        if (ms != kWritten) st = kDerived;
        const bool pick0 = (mb[bit / 8] >> (bit % 8)) & 1u;
        T v;
        if (pick0) v = static_cast<T>(LdChecked<T>(s0, i, st, api, "src0", loc));
        else v = other(i, st);
        St<T>(db, i, v);
        SetState(db + i * sizeof(T), sizeof(T), st);
    }
    CountVector(static_cast<uint64_t>(count) * sizeof(T), false);
}

// The CMPMASK register (128 bits) that the register form of Compare writes and GetCmpMask /
// Select(VSEL_CMPMASK_SPR) read; per core: a thread runs one core at a time, the serial tells
// block runs apart.
struct CmpMaskReg {
    uint64_t serial = ~0ull;
    bool set = false;
    uint8_t bits[16] = {};
};
inline CmpMaskReg& CmpMask(const Loc& loc)
{
    static thread_local CmpMaskReg reg;
    CoreState& c = Core(loc);
    if (reg.serial != c.serial) reg = CmpMaskReg{c.serial, false, {}};
    return reg;
}

template <typename T>
void CompareToReg(const AscendC::LocalTensor<T>& src0, const AscendC::LocalTensor<T>& src1, AscendC::CMPMODE mode,
                  const LaneMask& mask, const AscendC::BinaryRepeatParams& p, const Loc& loc)
{
    if (mask.counter >= 0) Fail(loc, "Compare: counter mask mode is not emulated for the CMPMASK form");
    CmpMaskReg& reg = CmpMask(loc);
    std::memset(reg.bits, 0, sizeof(reg.bits));
    const uint32_t lanes = 256 / sizeof(T), e = 32 / sizeof(T);
    Operand o0{&src0.ref_, sizeof(T), p.src0BlkStride, p.src0RepStride, "src0"},
        o1{&src1.ref_, sizeof(T), p.src1BlkStride, p.src1RepStride, "src1"};
    uint64_t hi0 = 0, hi1 = 0;
    for (uint32_t l = 0; l < lanes; ++l)
        if (mask.Has(l)) {
            hi0 = std::max<uint64_t>(hi0, (l / e) * o0.blk * e + l % e);
            hi1 = std::max<uint64_t>(hi1, (l / e) * o1.blk * e + l % e);
        }
    const uint8_t* s0 = VecOperand(o0, hi0 + 1, "Compare", loc);
    const uint8_t* s1 = VecOperand(o1, hi1 + 1, "Compare", loc);
    for (uint32_t l = 0; l < lanes; ++l) {
        if (!mask.Has(l)) continue;
        uint8_t st = kWritten;
        const auto a = LdChecked<T>(s0, (l / e) * o0.blk * e + l % e, st, "Compare", "src0", loc);
        const auto b = LdChecked<T>(s1, (l / e) * o1.blk * e + l % e, st, "Compare", "src1", loc);
        if (CmpOp(mode, a, b)) reg.bits[l / 8] |= static_cast<uint8_t>(1u << (l % 8));
    }
    reg.set = true;
    CountVector(1, true);
}

}  // namespace megafuse_emu

namespace AscendC {

// Register form: one repeat of src0 op src1 into the CMPMASK register.
template <typename T, bool isSetMask = true>
void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask,
             const BinaryRepeatParams& p, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::CompareToReg(src0, src1, cmpMode, megafuse_emu::ContinuousMask(mask, sizeof(T), "Compare", loc), p, loc);
}
template <typename T, bool isSetMask = true>
void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask[],
             const BinaryRepeatParams& p, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::RequireSetMask<isSetMask>();
    megafuse_emu::CompareToReg(src0, src1, cmpMode, megafuse_emu::BitMask(mask, sizeof(T), "Compare", loc), p, loc);
}

// GetCmpMask: the 128-bit CMPMASK register into the first 16 bytes of dst.
template <typename T>
void GetCmpMask(const LocalTensor<T>& dst, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::CmpMaskReg& reg = megafuse_emu::CmpMask(loc);
    if (!reg.set) megafuse_emu::Fail(loc, "GetCmpMask: no Compare has set the CMPMASK register on this core");
    megafuse_emu::Operand od{&dst.ref_, 1, 1, 8, "dst"};
    uint8_t* d = megafuse_emu::VecOperand(od, 16, "GetCmpMask", loc);
    std::memcpy(d, reg.bits, 16);
    megafuse_emu::MarkWritten(d, 16);
}

template <typename T, typename U>
void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
             uint32_t count, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Operand o1{&src1.ref_, sizeof(T), 1, 8, "src1"};
    const uint8_t* s1 = megafuse_emu::VecOperand(o1, count, "Compare", loc);
    megafuse_emu::CompareCount<T>("Compare", dst, src0,
                                  [s1, &loc](uint64_t i, uint8_t& st) {
                                      return megafuse_emu::LdChecked<T>(s1, i, st, "Compare", "src1", loc);
                                  },
                                  cmpMode, count, loc);
}

template <typename T, typename U>
void Compares(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,
              uint32_t count, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const auto s = static_cast<megafuse_emu::CalcT<T>>(src1Scalar);
    megafuse_emu::CompareCount<T>("Compares", dst, src0, [s](uint64_t, uint8_t&) { return s; }, cmpMode, count, loc);
}

template <typename T, typename U>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
            const LocalTensor<T>& src1, SELMODE selMode, uint32_t count, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    if (selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE)
        megafuse_emu::Fail(loc, "Select: VSEL_TENSOR_SCALAR_MODE takes a scalar src1, not a tensor");
    megafuse_emu::Operand o1{&src1.ref_, sizeof(T), 1, 8, "src1"};
    const uint8_t* s1 = megafuse_emu::VecOperand(o1, count, "Select", loc);
    megafuse_emu::SelectCount(dst, selMask, src0,
                              [s1, &loc](uint64_t i, uint8_t& st) {
                                  return static_cast<T>(megafuse_emu::LdChecked<T>(s1, i, st, "Select", "src1", loc));
                              },
                              selMode, count, loc);
}

template <typename T, typename U>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1,
            SELMODE selMode, uint32_t count, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
        megafuse_emu::Fail(loc, "Select: a scalar src1 needs VSEL_TENSOR_SCALAR_MODE");
    megafuse_emu::SelectCount(dst, selMask, src0, [src1](uint64_t, uint8_t&) { return src1; }, selMode, count, loc);
}

}  // namespace AscendC
