// Sorting of the devkit's advanced API (semantics: its Concat / Sort / Extract / TopK pages), arch
// 2201 layout ("排布方式一"): a sorted element is an 8-byte (score, index) pair, the score in the low
// bytes (a half score in the low 2 bytes, 2 reserved), the uint32 index in the high 4 bytes.
//   Concat(concat, src, tmp, repeatTime): on 2201 the scores need no preprocessing, concat becomes
//     src (the region-proposal layout of arch 2002 is not emulated: refused).
//   Sort<T, isFullSort>(dst, concat, index, tmp, repeatTime): repeatTime groups of 32 scores, paired
//     with index[i], sorted descending (ties keep the input order, like the merge sort the page
//     names); isFullSort sorts all 32 * repeatTime together, otherwise each group of 32 alone.
//   Extract(dstValue, dstIndex, sorted, repeatTime): 32 * repeatTime pairs back to scores and indices.
//   TopK<T, isInitIndex, isHasfinish, isReuseSrc, topkMode>(dstValue, dstIndex, src, srcIndex,
//     finish, [tmp,] k, tiling, TopKInfo{outter, inner, n}, isLargest): per row the k largest (or
//     smallest) of the first n elements, sorted, ties by the lower position; indices are the
//     positions (isInitIndex = false) or srcIndex's values ([1, inner] shared by the rows in
//     Normal mode, [outter, inner] in Small mode); with isHasfinish, a row whose finish flag is
//     true gets the index n for all k. Normal mode: rows of k_pad values / kpad_index indices
//     (k rounded up to 32 bytes), the padding not written; Small mode (inner = 32): rows of k.
// Host: SortConfig / GetSortMaxMinTmpSize, TopkTiling / TopKTilingFunc / GetTopKMaxMinTmpSize
// (megafuse's tmp model, adv_shape.h; the tiling struct is megafuse's own: the shape the kernel
// checks against TopKInfo).
#pragma once

#include <algorithm>
#include <numeric>

#include "adv_softmax_ext.h"  // SmOperand

struct TopkTiling {
    int32_t inner = 0, outter = 0, k = 0, tmpBytes = 0;
    int32_t mode = 0, isLargest = 0, isInitIndex = 0, reserved = 0;
};
namespace optiling {
using ::TopkTiling;
}
namespace AscendC::tiling {
using ::TopkTiling;
}

namespace AscendC {

enum class SortType { RADIX_SORT, MERGE_SORT };
struct SortConfig {
    SortType type = SortType::RADIX_SORT;
    bool isDescend = false;
};
constexpr SortConfig DEFAULT_SORT_CONFIG = {SortType::RADIX_SORT, false};
enum class TopKMode { TOPK_NORMAL, TOPK_NSMALL };
struct TopKInfo {
    int32_t outter = 1;
    int32_t inner = 32;
    int32_t n = 32;
};

inline void GetSortMaxMinTmpSize(const TensorShape& s, const TensorDataType valueType, const TensorDataType,
                                 const bool, const SortConfig&, uint32_t& maxValue, uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()) * 2, TensorDataTypeSize(valueType), 1, maxValue,
                              minValue);
}
// Sorted-structure sizes on 2201: one 8-byte pair per element.
template <typename T>
uint32_t GetSortLen(const uint32_t elemCount)
{
    return elemCount * 8 / sizeof(T);
}
template <typename T>
uint32_t GetSortOffset(const uint32_t elemOffset)
{
    return elemOffset * 8 / sizeof(T);
}
template <typename Platform>
bool GetTopKMaxMinTmpSize(const Platform&, const int32_t inner, const int32_t outter, const bool, const bool,
                          TopKMode, const bool, const uint32_t dataTypeSize, uint32_t& maxValue, uint32_t& minValue)
{
    if (inner <= 0 || outter <= 0 || inner % 32 != 0) return false;
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(inner) * 2, dataTypeSize, 1, maxValue, minValue);
    return true;
}
template <typename Platform>
bool TopKTilingFunc(const Platform&, const int32_t inner, const int32_t outter, const int32_t k,
                    const uint32_t dataTypeSize, const bool isInitIndex, TopKMode mode, const bool isLargest,
                    TopkTiling& t)
{
    if (inner <= 0 || outter <= 0 || inner % 32 != 0 || k <= 0 || k > inner) return false;
    uint32_t mx = 0, mn = 0;
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(inner) * 2, dataTypeSize, 1, mx, mn);
    t = TopkTiling{inner, outter, k, static_cast<int32_t>(mn), static_cast<int32_t>(mode), isLargest, isInitIndex, 0};
    return true;
}

}  // namespace AscendC

namespace megafuse_emu {

template <typename T>
void SortImpl(bool full, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& concat,
              const AscendC::LocalTensor<uint32_t>& index, const AscendC::LocalTensor<T>& tmp, int32_t repeat,
              const Loc& loc)
{
    static_assert(kHalfOrFloat<T>, "Sort takes half or float");
    const char* api = "Sort";
    Core(loc);
    if (!IsArch2201()) Fail(loc, Str(api, ": the region-proposal layout of this arch is not emulated"));
    if (repeat < 0 || repeat > 255) Fail(loc, Str(api, ": repeatTime ", repeat, " is outside [0, 255]"));
    const uint64_t n = static_cast<uint64_t>(repeat) * 32, per = 8 / sizeof(T);
    CheckMem(tmp.ref_, Mem::UB, api, "tmp", loc);
    AdvNoOverlap(api, dst.ref_, concat.ref_, "concat", loc);
    const uint8_t* cb = SmOperand(concat, n, api, "concat", loc);
    const uint8_t* ib = SmOperand(index, n, api, "index", loc);
    uint8_t* db = SmOperand(dst, n * per, api, "dst", loc);
    std::vector<double> v(n);
    std::vector<uint32_t> id(n);
    std::vector<uint8_t> st(n, kWritten);
    for (uint64_t i = 0; i < n; ++i) {
        v[i] = LdChecked<T>(cb, i, st[i], api, "concat", loc);
        id[i] = static_cast<uint32_t>(LdChecked<uint32_t>(ib, i, st[i], api, "index", loc));
    }
    std::vector<uint64_t> ord(n);
    std::iota(ord.begin(), ord.end(), 0);
    const uint64_t group = full ? std::max<uint64_t>(n, 1) : 32;
    for (uint64_t g = 0; g < n; g += group)
        std::stable_sort(ord.begin() + g, ord.begin() + std::min(n, g + group),
                         [&](uint64_t a, uint64_t b) { return v[a] > v[b]; });
    for (uint64_t i = 0; i < n; ++i) {
        uint8_t* p = db + i * 8;
        std::memset(p, 0, 8);
        St<T>(p, 0, static_cast<T>(Ld<T>(cb, ord[i])));
        std::memcpy(p + 4, &id[ord[i]], 4);
        SetState(p, 8, st[ord[i]]);
    }
    CountVector(n * 8, false);
}

template <typename T>
void ExtractImpl(const AscendC::LocalTensor<T>& dstValue, const AscendC::LocalTensor<uint32_t>& dstIndex,
                 const AscendC::LocalTensor<T>& sorted, int32_t repeat, const Loc& loc)
{
    static_assert(kHalfOrFloat<T>, "Extract takes half or float");
    const char* api = "Extract";
    Core(loc);
    if (!IsArch2201()) Fail(loc, Str(api, ": the region-proposal layout of this arch is not emulated"));
    if (repeat < 0 || repeat > 255) Fail(loc, Str(api, ": repeatTime ", repeat, " is outside [0, 255]"));
    const uint64_t n = static_cast<uint64_t>(repeat) * 32, per = 8 / sizeof(T);
    const uint8_t* sb = SmOperand(sorted, n * per, api, "sorted", loc);
    uint8_t* vb = SmOperand(dstValue, n, api, "dstValue", loc);
    uint8_t* ib = SmOperand(dstIndex, n, api, "dstIndex", loc);
    for (uint64_t i = 0; i < n; ++i) {
        const uint8_t* p = sb + i * 8;
        const uint8_t sv = ElemState(p, sizeof(T)), si = ElemState(p + 4, 4);
        if (sv == kNeverWritten) NoteOrigin(p, sizeof(T), api, "sorted", loc);
        if (si == kNeverWritten) NoteOrigin(p + 4, 4, api, "sorted", loc);
        St<T>(vb, i, Ld<T>(p, 0));
        SetState(vb + i * sizeof(T), sizeof(T), sv == kWritten ? kWritten : kDerived);
        std::memcpy(ib + i * 4, p + 4, 4);
        SetState(ib + i * 4, 4, si == kWritten ? kWritten : kDerived);
    }
    CountVector(n * 8, false);
}

template <typename T, typename U>
void TopKImpl(bool initIndex, bool hasFinish, bool small, const AscendC::LocalTensor<T>& dstValue,
              const AscendC::LocalTensor<U>& dstIndex, const AscendC::LocalTensor<T>& src,
              const AscendC::LocalTensor<U>& srcIndex, const AscendC::LocalTensor<bool>& finish,
              const AscendC::LocalTensor<uint8_t>* tmp, int32_t k, const TopkTiling& t, const AscendC::TopKInfo& info,
              bool largest, const Loc& loc)
{
    static_assert(kHalfOrFloat<T>, "TopK takes half or float");
    static_assert(sizeof(U) == 4, "TopK indices are 32-bit");
    const char* api = "TopK";
    Core(loc);
    const int64_t outter = info.outter, inner = info.inner, n = info.n;
    if (outter <= 0 || inner <= 0 || inner % 32 != 0 || n <= 0 || n > inner)
        Fail(loc, Str(api, ": TopKInfo {outter ", outter, ", inner ", inner, ", n ", n,
                      "} is not valid (inner a multiple of 32, 1 <= n <= inner)"));
    if (small && inner != 32) Fail(loc, Str(api, ": Small mode needs inner = 32, not ", inner));
    if (small && hasFinish) Fail(loc, Str(api, ": Small mode supports isHasfinish = false only"));
    if (!small && inner > 4096) Fail(loc, Str(api, ": Normal mode allows inner up to 4096, not ", inner));
    if (k < 1 || k > n) Fail(loc, Str(api, ": k ", k, " is outside [1, n = ", n, "]"));
    if (t.inner != 0 && (t.inner != inner || t.outter != outter))
        Fail(loc, Str(api, ": the tiling was made for inner ", t.inner, ", outter ", t.outter, ", the call has inner ",
                      inner, ", outter ", outter));
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&dstValue.ref_, &dstIndex.ref_, &src.ref_}, loc);
    const uint64_t kp = small ? k : (k * sizeof(T) + 31) / 32 * 32 / sizeof(T);
    const uint64_t kpi = small ? k : (static_cast<uint64_t>(k) + 7) / 8 * 8;
    const uint8_t* sb = SmOperand(src, outter * inner, api, "src", loc);
    const uint8_t* ib = initIndex ? SmOperand(srcIndex, small ? outter * inner : inner, api, "srcIndex", loc) : nullptr;
    const uint8_t* fb = hasFinish ? SmOperand(finish, outter, api, "finish", loc) : nullptr;
    uint8_t* vb = SmOperand(dstValue, outter * kp, api, "dstValue", loc);
    uint8_t* xb = SmOperand(dstIndex, outter * kpi, api, "dstIndex", loc);
    std::vector<double> v(n);
    std::vector<uint64_t> ord(n);
    for (int64_t r = 0; r < outter; ++r) {
        uint8_t st = kWritten;
        for (int64_t j = 0; j < n; ++j) v[j] = LdChecked<T>(sb, r * inner + j, st, api, "src", loc);
        std::iota(ord.begin(), ord.end(), 0);
        std::stable_sort(ord.begin(), ord.end(),
                         [&](uint64_t a, uint64_t b) { return largest ? v[a] > v[b] : v[a] < v[b]; });
        uint8_t fst = st;
        const bool done = hasFinish && LdChecked<bool>(fb, r, fst, api, "finish", loc);
        for (int64_t i = 0; i < k; ++i) {
            const uint64_t j = ord[i];
            St<T>(vb, r * kp + i, Ld<T>(sb, r * inner + j));
            SetState(vb + (r * kp + i) * sizeof(T), sizeof(T), st);
            uint8_t ist = fst;
            U idx = static_cast<U>(j);
            if (ib != nullptr) idx = static_cast<U>(LdChecked<U>(ib, (small ? r * inner : 0) + j, ist, api, "srcIndex", loc));
            if (done) idx = static_cast<U>(n);
            St<U>(xb, r * kpi + i, idx);
            SetState(xb + (r * kpi + i) * 4, 4, ist);
        }
    }
    CountVector(outter * inner * sizeof(T) * 4, false);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T>
void Concat(LocalTensor<T>& concat, const LocalTensor<T>& src, const LocalTensor<T>& tmp, const int32_t repeatTime,
            megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(megafuse_emu::kHalfOrFloat<T>, "Concat takes half or float");
    megafuse_emu::Core(loc);
    if (!megafuse_emu::IsArch2201())
        megafuse_emu::Fail(loc, "Concat: the region-proposal layout of this arch is not emulated");
    if (repeatTime < 0 || repeatTime > 255)
        megafuse_emu::Fail(loc, megafuse_emu::Str("Concat: repeatTime ", repeatTime, " is outside [0, 255]"));
    megafuse_emu::SmOperand(src, static_cast<uint64_t>(repeatTime) * 16, "Concat", "src", loc);
    megafuse_emu::CheckMem(tmp.ref_, megafuse_emu::Mem::UB, "Concat", "tmp", loc);
    concat = src;
}

template <typename T, bool isFullSort>
void Sort(const LocalTensor<T>& dst, const LocalTensor<T>& concat, const LocalTensor<uint32_t>& index,
          LocalTensor<T>& tmp, const int32_t repeatTime, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::SortImpl(isFullSort, dst, concat, index, tmp, repeatTime, loc);
}

template <typename T>
void Extract(const LocalTensor<T>& dstValue, const LocalTensor<uint32_t>& dstIndex, const LocalTensor<T>& sorted,
             const int32_t repeatTime, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::ExtractImpl(dstValue, dstIndex, sorted, repeatTime, loc);
}

template <typename T, bool isInitIndex = false, bool isHasfinish = false, bool isReuseSrc = false,
          TopKMode topkMode = TopKMode::TOPK_NORMAL, typename U>
void TopK(const LocalTensor<T>& dstValueLocal, const LocalTensor<U>& dstIndexLocal, const LocalTensor<T>& srcLocal,
          const LocalTensor<U>& srcIndexLocal, const LocalTensor<bool>& finishLocal, const int32_t k,
          const TopkTiling& tiling, const TopKInfo& topKInfo, const bool isLargest = true,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::TopKImpl(isInitIndex, isHasfinish, topkMode == TopKMode::TOPK_NSMALL, dstValueLocal, dstIndexLocal,
                           srcLocal, srcIndexLocal, finishLocal, static_cast<const LocalTensor<uint8_t>*>(nullptr), k,
                           tiling, topKInfo, isLargest, loc);
}
template <typename T, bool isInitIndex = false, bool isHasfinish = false, bool isReuseSrc = false,
          TopKMode topkMode = TopKMode::TOPK_NORMAL, typename U>
void TopK(const LocalTensor<T>& dstValueLocal, const LocalTensor<U>& dstIndexLocal, const LocalTensor<T>& srcLocal,
          const LocalTensor<U>& srcIndexLocal, const LocalTensor<bool>& finishLocal,
          const LocalTensor<uint8_t>& tmpLocal, const int32_t k, const TopkTiling& tiling, const TopKInfo& topKInfo,
          const bool isLargest = true, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::TopKImpl(isInitIndex, isHasfinish, topkMode == TopKMode::TOPK_NSMALL, dstValueLocal, dstIndexLocal,
                           srcLocal, srcIndexLocal, finishLocal, &tmpLocal, k, tiling, topKInfo, isLargest, loc);
}

}  // namespace AscendC
