// Sorting (devkit Sort32 / MrgSort pages, Atlas A2 layout), UB -> UB, float and half scores:
// a sorted element is 8 bytes, the score (T) at byte 0 and its uint32_t index at byte 4 (half
// leaves bytes 2..3 as they were).
//   * Sort32(dst, src0 scores, src1 indices, repeatTime): each repeat sorts 32 (score, index)
//     pairs by score, descending (equal scores keep their input order); dst takes 32 elements
//     (256 B) per repeat.
//   * MrgSort(dst, MrgSortSrcList, MrgSort4Info): merges the valid lists (validBit: 0b11,
//     0b111 or 0b1111) of elementLengths[i] sorted elements into one descending list (equal
//     scores: the lower-numbered list first). repeatTimes > 1 needs four lists of one length
//     and validBit 0b1111; repeat r reads every list 4 * length elements further and writes
//     4 * length elements further. ifExhaustedSuspension stops at the first exhausted list;
//     GetMrgSortResult then tells how many elements of each list were taken.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "init_check.h"
#include "tensor.h"
#include "vector_lanes.h"

namespace AscendC {

template <typename T>
struct MrgSortSrcList {
    MrgSortSrcList() {}
    MrgSortSrcList(const LocalTensor<T>& src1In, const LocalTensor<T>& src2In, const LocalTensor<T>& src3In,
                   const LocalTensor<T>& src4In)
        : src1(src1In), src2(src2In), src3(src3In), src4(src4In)
    {}
    LocalTensor<T> src1;
    LocalTensor<T> src2;
    LocalTensor<T> src3;
    LocalTensor<T> src4;
};

struct MrgSort4Info {
    MrgSort4Info() {}
    MrgSort4Info(const uint16_t elementLengthsIn[4], const bool ifExhaustedSuspensionIn, const uint16_t validBitIn,
                 const uint16_t repeatTimesIn)
        : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn), repeatTimes(repeatTimesIn)
    {
        for (int i = 0; i < 4; ++i) elementLengths[i] = elementLengthsIn[i];
    }
    uint16_t elementLengths[4] = {0, 0, 0, 0};
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 0;
    uint16_t repeatTimes = 1;
};

}  // namespace AscendC

namespace megafuse_emu {

struct SortedElem {
    float score;
    uint8_t bytes[8];
    uint8_t state;  // kWritten unless derived from never-written bytes
};

template <typename T>
uint8_t* SortOperand(const AscendC::LocalTensor<T>& t, uint64_t bytes, const char* api, const char* name, const Loc& loc)
{
    uint8_t* p = LocalAccessBytes(t.ref_, 0, bytes, api, name, loc);
    CheckMem(t.ref_, Mem::UB, api, name, loc);
    CheckLocalAlign(t.ref_, 32, api, name, loc);
    return p;
}

inline uint8_t StateOf(const uint8_t* p, uint64_t n)
{
    uint8_t st = kWritten;
    for (uint64_t i = 0; i < n; ++i) {
        const uint8_t s = ElemState(p + i, 1);
        if (s == kNeverWritten) return kNeverWritten;
        if (s == kDerived) st = kDerived;
    }
    return st;
}

// The merge counts of the last MrgSort of this core with ifExhaustedSuspension (per thread like
// the core state it belongs to).
inline std::array<uint16_t, 4>& MrgSortCounts()
{
    static thread_local std::array<uint16_t, 4> counts{};
    return counts;
}

template <typename T>
SortedElem ReadSorted(const uint8_t* p, const char* api, const Loc& loc)
{
    SortedElem e{};
    std::memcpy(e.bytes, p, 8);
    T s;
    std::memcpy(&s, p, sizeof(T));
    e.score = static_cast<float>(s);
    const uint8_t sc = StateOf(p, sizeof(T)), ix = StateOf(p + 4, 4);
    if (sc == kNeverWritten || ix == kNeverWritten) NoteOrigin(p, 8, api, "src", loc);
    e.state = sc == kWritten && ix == kWritten ? kWritten : kDerived;
    return e;
}

inline void WriteSorted(uint8_t* p, const SortedElem& e, uint32_t score_bytes)
{
    std::memcpy(p, e.bytes, score_bytes);
    std::memcpy(p + 4, e.bytes + 4, 4);
    SetState(p, score_bytes, e.state);
    SetState(p + 4, 4, e.state);
}

// The merge of MrgSort / MrgSort4 (one repeat): up to 4 lists sorted by descending score into one,
// the earlier list winning a tie; with `suspend` (ifExhaustedSuspension) it stops as soon as a list
// that had elements runs out. emit(element) writes each output in order; returns how many elements
// each list gave.
template <typename E, typename Lengths, typename Emit>
std::array<size_t, 4> MergeSortedLists(const std::vector<std::vector<E>>& in, int lists, const Lengths& lengths,
                                       bool suspend, Emit emit)
{
    std::array<size_t, 4> at{};
    for (;;) {
        int best = -1;
        bool exhausted = false;
        for (int i = 0; i < lists; ++i) {
            if (at[i] == in[i].size()) {
                exhausted = exhausted || lengths[i] > 0;
                continue;
            }
            if (best < 0 || in[i][at[i]].score > in[best][at[best]].score) best = i;
        }
        if (best < 0 || (suspend && exhausted)) break;
        emit(in[best][at[best]++]);
    }
    return at;
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T>
void Sort32(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<uint32_t>& src1,
            const int32_t repeatTime, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, half>, "Sort32: float or half scores");
    const char* api = "Sort32";
    Core(loc);
    if (!IsArch2201()) Fail(loc, Str(api, " is emulated with the Atlas A2 layout (arch 2201) only"));
    if (repeatTime < 0 || repeatTime > 255) Fail(loc, Str(api, ": repeatTime ", repeatTime, " is outside [0, 255]"));
    if (repeatTime == 0) return;
    const uint64_t n = 32ull * repeatTime;
    uint8_t* d = SortOperand(dst, n * 8, api, "dst", loc);
    const uint8_t* s0 = SortOperand(src0, n * sizeof(T), api, "src0", loc);
    const uint8_t* s1 = SortOperand(src1, n * 4, api, "src1", loc);
    std::vector<SortedElem> v(n);
    for (uint64_t i = 0; i < n; ++i) {
        SortedElem& e = v[i];
        std::memset(e.bytes, 0, 8);
        std::memcpy(e.bytes, s0 + i * sizeof(T), sizeof(T));
        std::memcpy(e.bytes + 4, s1 + i * 4, 4);
        T sc;
        std::memcpy(&sc, s0 + i * sizeof(T), sizeof(T));
        e.score = static_cast<float>(sc);
        const uint8_t a = StateOf(s0 + i * sizeof(T), sizeof(T)), b = StateOf(s1 + i * 4, 4);
        if (a == kNeverWritten) NoteOrigin(s0 + i * sizeof(T), sizeof(T), api, "src0", loc);
        if (b == kNeverWritten) NoteOrigin(s1 + i * 4, 4, api, "src1", loc);
        e.state = a == kWritten && b == kWritten ? kWritten : kDerived;
    }
    for (int32_t r = 0; r < repeatTime; ++r) {
        auto first = v.begin() + 32 * r;
        std::stable_sort(first, first + 32, [](const SortedElem& x, const SortedElem& y) { return x.score > y.score; });
    }
    for (uint64_t i = 0; i < n; ++i) WriteSorted(d + i * 8, v[i], sizeof(T));
    Count(VECTOR_INSTRUCTIONS);
    Count(VECTOR_REPEATS, static_cast<uint64_t>(repeatTime));
}

template <typename T>
void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& src, const MrgSort4Info& p,
             megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, half>, "MrgSort: float or half scores");
    const char* api = "MrgSort";
    Core(loc);
    if (!IsArch2201()) Fail(loc, Str(api, " is emulated with the Atlas A2 layout (arch 2201) only"));
    const uint16_t vb = p.validBit;
    if (vb != 0b11 && vb != 0b111 && vb != 0b1111)
        Fail(loc, Str(api, ": validBit ", vb, " must be 0b11, 0b111 or 0b1111 (2 to 4 lists)"));
    const int lists = vb == 0b11 ? 2 : vb == 0b111 ? 3 : 4;
    if (p.repeatTimes == 0 || p.repeatTimes > 255) Fail(loc, Str(api, ": repeatTimes ", p.repeatTimes, " is outside [1, 255]"));
    if (p.repeatTimes > 1) {
        if (lists != 4) Fail(loc, Str(api, ": repeatTimes > 1 needs validBit 0b1111"));
        for (int i = 1; i < 4; ++i)
            if (p.elementLengths[i] != p.elementLengths[0])
                Fail(loc, Str(api, ": repeatTimes > 1 needs four lists of one length"));
        if (p.ifExhaustedSuspension) Fail(loc, Str(api, ": repeatTimes > 1 with ifExhaustedSuspension is not emulated"));
    }
    const LocalTensor<T>* srcs[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
    uint64_t total = 0;
    for (int i = 0; i < lists; ++i) total += p.elementLengths[i];
    const uint64_t rep_step = 4ull * p.elementLengths[0];  // elements between repeats
    std::array<const uint8_t*, 4> base{};
    for (int i = 0; i < lists; ++i) {
        const uint64_t span = (p.repeatTimes - 1) * rep_step + p.elementLengths[i];
        base[i] = SortOperand(*srcs[i], span * 8, api, "src", loc);
    }
    uint8_t* d = SortOperand(dst, ((p.repeatTimes - 1) * rep_step + total) * 8, api, "dst", loc);
    std::array<uint16_t, 4> taken{};
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        std::vector<std::vector<SortedElem>> in(lists);
        for (int i = 0; i < lists; ++i)
            for (uint64_t k = 0; k < p.elementLengths[i]; ++k)
                in[i].push_back(ReadSorted<T>(base[i] + (r * rep_step + k) * 8, api, loc));
        uint64_t out = 0;
        const auto at = MergeSortedLists(in, lists, p.elementLengths, p.ifExhaustedSuspension,
                                         [&](const SortedElem& e) { WriteSorted(d + (r * rep_step + out++) * 8, e, sizeof(T)); });
        for (int i = 0; i < lists; ++i) taken[i] = static_cast<uint16_t>(at[i]);
    }
    MrgSortCounts() = taken;
    Count(VECTOR_INSTRUCTIONS);
    Count(VECTOR_REPEATS, p.repeatTimes);
}

// The element counts each list contributed to the last MrgSort (devkit GetMrgSortResult).
inline void GetMrgSortResult(uint16_t& mrgSortList1, uint16_t& mrgSortList2, uint16_t& mrgSortList3,
                             uint16_t& mrgSortList4)
{
    const auto& c = megafuse_emu::MrgSortCounts();
    mrgSortList1 = c[0];
    mrgSortList2 = c[1];
    mrgSortList3 = c[2];
    mrgSortList4 = c[3];
}

}  // namespace AscendC
