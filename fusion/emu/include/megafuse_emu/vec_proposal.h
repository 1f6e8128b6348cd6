// Region proposals (devkit ProposalConcat / ProposalExtract / RpSort16 / MrgSort4 pages; Atlas
// inference AI Core = arch 2002 only), UB -> UB. A proposal is 8 elements of T (half or float):
// [x1, y1, x2, y2, score, label, reserved, reserved].
//   * ProposalConcat(dst, src, repeat, mode): repeat r puts src elements [16 r, 16 r + 16) into
//     field `mode` (0..5) of proposals [16 r, 16 r + 16); the other fields keep their bytes.
//   * ProposalExtract(dst, src, repeat, mode): the reverse.
//   * RpSort16(dst, src, repeat): each group of 16 proposals sorted by score, descending (equal
//     scores keep their order); whole proposals move.
//   * MrgSort4(dst, MrgSortSrcList, MrgSort4Info): merges the valid lists (validBit 0b11, 0b111,
//     0b1111) of elementLengths[i] sorted proposals by score, descending (ties: the lower-numbered
//     list first); repeatTimes > 1 with four equal lists steps 4 * length proposals per repeat;
//     ifExhaustedSuspension stops at the first exhausted list.
// Shadow (uninitialized-read) states move with the bytes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "init_check.h"
#include "tensor.h"
#include "vec_sort.h"
#include "vector_lanes.h"

namespace megafuse_emu {

template <typename T>
struct Proposal {
    uint8_t bytes[8 * sizeof(T)];
    uint8_t state[8 * sizeof(T)];
    float score;
};

template <typename T>
uint8_t* ProposalOperand(const AscendC::LocalTensor<T>& t, uint64_t elems, const char* api, const char* name,
                         const Loc& loc)
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "region proposals: half or float");
    CoreState& c = Core(loc);
    if (IsArch2201()) Fail(loc, Str(api, " is not available on ", c.soc_name, " (Atlas inference AI Core only)"));
    uint8_t* p = LocalAccess(t.ref_, sizeof(T), 0, elems, api, name, loc);
    CheckMem(t.ref_, Mem::UB, api, name, loc);
    CheckLocalAlign(t.ref_, 32, api, name, loc);
    return p;
}

template <typename T>
Proposal<T> LoadProposal(const uint8_t* p)
{
    Proposal<T> r{};
    std::memcpy(r.bytes, p, sizeof(r.bytes));
    const uint8_t* w = ShadowOf(p);
    if (w != nullptr) std::memcpy(r.state, w, sizeof(r.state));
    else std::memset(r.state, kWritten, sizeof(r.state));
    T s;
    std::memcpy(&s, p + 4 * sizeof(T), sizeof(T));
    r.score = static_cast<float>(s);
    return r;
}

template <typename T>
void StoreProposal(uint8_t* p, const Proposal<T>& r)
{
    std::memcpy(p, r.bytes, sizeof(r.bytes));
    uint8_t* w = ShadowOf(p);
    if (w == nullptr) return;
    for (size_t i = 0; i < sizeof(r.state); ++i) w[i] = r.state[i] == kNeverWritten ? kNeverWritten : r.state[i];
}

// The score decides the order: a score never written makes every moved byte "derived".
template <typename T>
void CheckScore(Proposal<T>& r, const uint8_t* at, const char* api, const Loc& loc)
{
    for (size_t b = 4 * sizeof(T); b < 5 * sizeof(T); ++b)
        if (r.state[b] != kWritten) {
            if (r.state[b] == kNeverWritten) NoteOrigin(at + 4 * sizeof(T), sizeof(T), api, "score", loc);
            for (auto& s : r.state) s = s == kWritten ? kDerived : s;
            return;
        }
}

inline void CheckRepeat(int32_t repeat, const char* api, const Loc& loc)
{
    if (repeat < 0 || repeat > 255) Fail(loc, Str(api, ": repeatTime ", repeat, " is outside [0, 255]"));
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T>
void ProposalConcat(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                    const int32_t modeNumber, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "ProposalConcat";
    CheckRepeat(repeatTime, api, loc);
    if (modeNumber < 0 || modeNumber > 5) Fail(loc, Str(api, ": modeNumber ", modeNumber, " is outside [0, 5]"));
    const uint64_t n = 16ull * repeatTime;
    uint8_t* d = ProposalOperand(dst, n * 8, api, "dst", loc);
    const uint8_t* s = ProposalOperand(src, n, api, "src", loc);
    for (uint64_t i = 0; i < n; ++i) {
        uint8_t* to = d + (i * 8 + modeNumber) * sizeof(T);
        PropagateCopy(to, s + i * sizeof(T), sizeof(T), api, "src", loc);
        std::memmove(to, s + i * sizeof(T), sizeof(T));
    }
    Count(VECTOR_INSTRUCTIONS);
    Count(VECTOR_REPEATS, static_cast<uint64_t>(repeatTime));
}

template <typename T>
void ProposalExtract(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                     const int32_t modeNumber, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "ProposalExtract";
    CheckRepeat(repeatTime, api, loc);
    if (modeNumber < 0 || modeNumber > 5) Fail(loc, Str(api, ": modeNumber ", modeNumber, " is outside [0, 5]"));
    const uint64_t n = 16ull * repeatTime;
    uint8_t* d = ProposalOperand(dst, n, api, "dst", loc);
    const uint8_t* s = ProposalOperand(src, n * 8, api, "src", loc);
    for (uint64_t i = 0; i < n; ++i) {
        const uint8_t* from = s + (i * 8 + modeNumber) * sizeof(T);
        PropagateCopy(d + i * sizeof(T), from, sizeof(T), api, "src", loc);
        std::memmove(d + i * sizeof(T), from, sizeof(T));
    }
    Count(VECTOR_INSTRUCTIONS);
    Count(VECTOR_REPEATS, static_cast<uint64_t>(repeatTime));
}

template <typename T>
void RpSort16(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "RpSort16";
    CheckRepeat(repeatTime, api, loc);
    const uint64_t n = 16ull * repeatTime;
    uint8_t* d = ProposalOperand(dst, n * 8, api, "dst", loc);
    const uint8_t* s = ProposalOperand(src, n * 8, api, "src", loc);
    constexpr uint64_t P = 8 * sizeof(T);
    std::vector<Proposal<T>> v;
    for (uint64_t i = 0; i < n; ++i) {
        v.push_back(LoadProposal<T>(s + i * P));
        CheckScore(v.back(), s + i * P, api, loc);
    }
    for (int32_t r = 0; r < repeatTime; ++r)
        std::stable_sort(v.begin() + 16 * r, v.begin() + 16 * (r + 1),
                         [](const Proposal<T>& a, const Proposal<T>& b) { return a.score > b.score; });
    for (uint64_t i = 0; i < n; ++i) StoreProposal(d + i * P, v[i]);
    Count(VECTOR_INSTRUCTIONS);
    Count(VECTOR_REPEATS, static_cast<uint64_t>(repeatTime));
}

template <typename T>
void MrgSort4(const LocalTensor<T>& dst, const MrgSortSrcList<T>& src, const MrgSort4Info& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "MrgSort4";
    Core(loc);
    const uint16_t vb = p.validBit;
    if (vb != 0b11 && vb != 0b111 && vb != 0b1111)
        Fail(loc, Str(api, ": validBit ", vb, " must be 0b11, 0b111 or 0b1111 (2 to 4 lists)"));
    const int lists = vb == 0b11 ? 2 : vb == 0b111 ? 3 : 4;
    if (p.repeatTimes == 0 || p.repeatTimes > 255) Fail(loc, Str(api, ": repeatTimes ", p.repeatTimes, " is outside [1, 255]"));
    if (p.repeatTimes > 1) {
        if (lists != 4) Fail(loc, Str(api, ": repeatTimes > 1 needs validBit 0b1111"));
        for (int i = 1; i < 4; ++i)
            if (p.elementLengths[i] != p.elementLengths[0]) Fail(loc, Str(api, ": repeatTimes > 1 needs four lists of one length"));
    }
    constexpr uint64_t P = 8 * sizeof(T);
    const LocalTensor<T>* srcs[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
    const uint64_t step = 4ull * p.elementLengths[0];
    uint64_t total = 0;
    std::array<const uint8_t*, 4> base{};
    for (int i = 0; i < lists; ++i) {
        total += p.elementLengths[i];
        base[i] = ProposalOperand(*srcs[i], ((p.repeatTimes - 1) * step + p.elementLengths[i]) * 8, api, "src", loc);
    }
    uint8_t* d = ProposalOperand(dst, ((p.repeatTimes - 1) * step + total) * 8, api, "dst", loc);
    std::array<uint16_t, 4> taken{};
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        std::vector<std::vector<Proposal<T>>> in(lists);
        for (int i = 0; i < lists; ++i)
            for (uint64_t k = 0; k < p.elementLengths[i]; ++k) {
                const uint8_t* at = base[i] + (r * step + k) * P;
                in[i].push_back(LoadProposal<T>(at));
                CheckScore(in[i].back(), at, api, loc);
            }
        uint64_t out = 0;
        const auto at = MergeSortedLists(in, lists, p.elementLengths, p.ifExhaustedSuspension,
                                         [&](const auto& e) { StoreProposal(d + (r * step + out++) * P, e); });
        for (int i = 0; i < lists; ++i) taken[i] = static_cast<uint16_t>(at[i]);
    }
    MrgSortCounts() = taken;
    Count(VECTOR_INSTRUCTIONS);
    Count(VECTOR_REPEATS, p.repeatTimes);
}

}  // namespace AscendC
