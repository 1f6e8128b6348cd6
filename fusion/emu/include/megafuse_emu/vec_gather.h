// Gathers of the devkit (semantics from its API reference):
//   GatherMask(dst, src0, pattern, reduceMode, mask, GatherMaskParams, rsvdCnt)
//       each repeat visits all 256 bytes of src0 lanes (normal mode; the mask argument is not
//       used) and appends the lanes the pattern selects to dst, packed; rsvdCnt = how many.
//       pattern: a built-in uint8_t 1..7 (1: even lanes, 2: odd lanes, 3..6: lanes 0/1/2/3
//       mod 4, 7: all) or a tensor of bits (lane l of repeat r = bit l of the pattern at
//       r * src1RepeatStride blocks). reduceMode = true (counter mode) is refused.
//   Gather(dst, src, srcOffset (uint32 byte offsets), srcBaseAddr, count)
//       dst[i] = the src element at byte srcOffset[i] + srcBaseAddr.
//   Gatherb(dst, src, offset (uint32 byte offsets), repeatTime, GatherRepeatParams)
//       block j of repeat r of dst (at (r * dstRepStride + j * dstBlkStride) blocks) = the 32-byte
//       block of src at byte offset[r * 8 + j].
#pragma once

#include "vec_cmp.h"

namespace AscendC {

struct GatherMaskParams {
    GatherMaskParams() {}
    GatherMaskParams(const uint8_t src0BlockStrideIn, const uint16_t repeatTimesIn, const uint16_t src0RepeatStrideIn,
                     const uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn)
    {}
    uint8_t src0BlockStride = 1;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = 8;
    uint8_t src1RepeatStride = 8;
};

struct GatherRepeatParams {
    GatherRepeatParams() {}
    GatherRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t dstRepStrideIn)
        : dstBlkStride(dstBlkStrideIn), dstRepStride(dstRepStrideIn)
    {}
    uint8_t dstBlkStride = 1;
    uint8_t dstRepStride = 8;
};

}  // namespace AscendC

namespace megafuse_emu {

// sel(r, l, st): whether lane l of repeat r is kept.
template <typename T, typename Sel>
void GatherMaskImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0, bool reduceMode,
                    const AscendC::GatherMaskParams& p, uint64_t& rsvdCnt, Sel sel, const Loc& loc)
{
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "GatherMask takes 16- or 32-bit types");
    const char* api = "GatherMask";
    Core(loc);
    if (reduceMode) Fail(loc, "GatherMask: reduceMode = true (counter mode) is not emulated");
    if (p.repeatTimes > 255) Fail(loc, Str(api, ": repeatTimes ", p.repeatTimes, " exceeds 255"));
    const uint64_t lanes = 256 / sizeof(T), e = 32 / sizeof(T);
    rsvdCnt = 0;
    if (p.repeatTimes == 0) return;
    auto sidx = [&](uint64_t r, uint64_t l) { return r * p.src0RepeatStride * e + (l / e) * p.src0BlockStride * e + l % e; };
    uint64_t hi = 0;
    for (uint64_t l = 0; l < lanes; ++l) hi = std::max(hi, sidx(p.repeatTimes - 1ull, l));
    hi = std::max(hi, sidx(p.repeatTimes >= 2 ? p.repeatTimes - 2ull : 0, lanes - 1));
    Operand os{&src0.ref_, sizeof(T), 1, 8, "src0"};
    const uint8_t* sb = VecOperand(os, hi + 1, api, loc);
    std::vector<T> vals;
    std::vector<uint8_t> states;
    for (uint64_t r = 0; r < p.repeatTimes; ++r)
        for (uint64_t l = 0; l < lanes; ++l) {
            uint8_t st = kWritten;
            if (!sel(r, l, st)) continue;
            vals.push_back(static_cast<T>(LdChecked<T>(sb, sidx(r, l), st, api, "src0", loc)));
            states.push_back(st);
        }
    rsvdCnt = vals.size();
    if (vals.empty()) return;
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"};
    uint8_t* db = VecOperand(od, vals.size(), api, loc);
    for (size_t i = 0; i < vals.size(); ++i) {
        St<T>(db, i, vals[i]);
        SetState(db + i * sizeof(T), sizeof(T), states[i]);
    }
    CountVector(p.repeatTimes, true);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T>
void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern, const bool reduceMode,
                const uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt,
                megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    (void)mask;
    if (src1Pattern < 1 || src1Pattern > 7)
        megafuse_emu::Fail(loc, megafuse_emu::Str("GatherMask: built-in pattern ", int(src1Pattern), " is outside [1, 7]"));
    megafuse_emu::GatherMaskImpl(dst, src0, reduceMode, p, rsvdCnt,
                                 [src1Pattern](uint64_t, uint64_t l, uint8_t&) {
                                     switch (src1Pattern) {
                                         case 1: return l % 2 == 0;
                                         case 2: return l % 2 == 1;
                                         case 7: return true;
                                         default: return l % 4 == static_cast<uint64_t>(src1Pattern - 3);
                                     }
                                 },
                                 loc);
}

template <typename T, typename U>
void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                const bool reduceMode, const uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt,
                megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    (void)mask;
    const uint64_t lanes = 256 / sizeof(T);
    Operand op{&src1Pattern.ref_, 1, 1, 8, "src1Pattern"};
    const uint64_t last = p.repeatTimes ? (p.repeatTimes - 1ull) * p.src1RepeatStride * 32 + lanes / 8 : 0;
    const uint8_t* pb = p.repeatTimes ? VecOperand(op, last, "GatherMask", loc) : nullptr;
    GatherMaskImpl(dst, src0, reduceMode, p, rsvdCnt,
                   [&](uint64_t r, uint64_t l, uint8_t& st) {
                       const uint8_t* byte = pb + r * p.src1RepeatStride * 32 + l / 8;
                       if (ElemState(byte, 1) == kNeverWritten) NoteOrigin(byte, 1, "GatherMask", "src1Pattern", loc);
                       if (ElemState(byte, 1) != kWritten) st = kDerived;
                       return ((*byte >> (l % 8)) & 1u) != 0;
                   },
                   loc);
}

template <typename T>
void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
            const uint32_t srcBaseAddr, const uint32_t count, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "Gather";
    Core(loc);
    if (count == 0) return;
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, oo{&srcOffset.ref_, 4, 1, 8, "srcOffset"};
    uint8_t* db = VecOperand(od, count, api, loc);
    const uint8_t* ob = VecOperand(oo, count, api, loc);
    CheckMem(src.ref_, Mem::UB, api, "src", loc);
    for (uint64_t i = 0; i < count; ++i) {
        uint8_t st = kWritten;
        const uint64_t byte = static_cast<uint64_t>(LdChecked<uint32_t>(ob, i, st, api, "srcOffset", loc)) + srcBaseAddr;
        if (byte % sizeof(T) != 0) Fail(loc, Str(api, ": srcOffset[", i, "] + srcBaseAddr = ", byte, " is not ", sizeof(T), "-byte aligned"));
        const uint8_t* sp = LocalAccess(src.ref_, sizeof(T), byte / sizeof(T), 1, api, "src", loc);
        if (ElemState(sp, sizeof(T)) == kNeverWritten) NoteOrigin(sp, sizeof(T), api, "src", loc);
        if (ElemState(sp, sizeof(T)) != kWritten) st = kDerived;
        std::memcpy(db + i * sizeof(T), sp, sizeof(T));
        SetState(db + i * sizeof(T), sizeof(T), st);
    }
    CountVector(static_cast<uint64_t>(count) * sizeof(T), false);
}

template <typename T>
void Gatherb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& offset,
             megafuse_emu::RepeatTimes repeatTime, const GatherRepeatParams& p,
             megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "Gatherb";
    Core(loc);
    if (repeatTime.v < 0 || repeatTime.v > 255) Fail(loc, Str(api, ": repeatTime ", repeatTime.v, " is outside [0, 255]"));
    if (repeatTime.v == 0) return;
    const uint64_t reps = static_cast<uint64_t>(repeatTime.v), e = 32 / sizeof(T);
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, oo{&offset.ref_, 4, 1, 8, "offset"};
    uint8_t* db = VecOperand(od, ((reps - 1) * p.dstRepStride + 7ull * p.dstBlkStride + 1) * e, api, loc);
    const uint8_t* ob = VecOperand(oo, reps * 8, api, loc);
    CheckMem(src.ref_, Mem::UB, api, "src", loc);
    for (uint64_t r = 0; r < reps; ++r)
        for (uint64_t j = 0; j < 8; ++j) {
            uint8_t st = kWritten;
            const uint64_t byte = LdChecked<uint32_t>(ob, r * 8 + j, st, api, "offset", loc);
            if (byte % 32 != 0) Fail(loc, Str(api, ": offset[", r * 8 + j, "] = ", byte, " is not 32-byte aligned"));
            const uint8_t* sp = LocalAccessBytes(src.ref_, byte, 32, api, "src", loc);
            for (int k = 0; k < 32; ++k)
                if (ElemState(sp + k, 1) != kWritten) st = kDerived;
            uint8_t* dp = db + (r * p.dstRepStride + j * p.dstBlkStride) * 32;
            std::memcpy(dp, sp, 32);
            SetState(dp, 32, st);
        }
    CountVector(reps, true);
}

}  // namespace AscendC
