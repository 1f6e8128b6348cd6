// Data-movement APIs of the devkit's 03_basic_api / 06_compatibility_guide samples:
//   * slice DataCopy (devkit 切片数据搬运 page): GM -> VECIN and VECOUT -> GM with SliceInfo
//     per dimension;
//   * LoadData2DParamsV2 (devkit Load2D page, "Load2Dv2"): Ascend 950 only; the struct exists
//     so code written for both arches compiles, a call is refused on 2201 / 2002.
#pragma once

#include <cstdint>
#include <vector>

#include "atomic.h"
#include "cube.h"
#include "data_copy.h"
#include "init_check.h"

namespace AscendC {

constexpr uint32_t K_MAX_DIM = 8;

// One dimension of a slice (devkit SliceInfo table): elements [startIndex, endIndex] of a
// dimension of shapeValue elements, taken in pieces of burstLen 32-byte blocks (dimension 0)
// or burstLen = 1 index (higher dimensions), stride elements skipped between pieces.
struct SliceInfo {
    SliceInfo() {}
    SliceInfo(const uint32_t startIndexIn, const uint32_t endIndexIn, const uint32_t strideIn,
              const uint32_t burstLenIn, const uint32_t shapeValueIn = 0)
        : startIndex(startIndexIn), endIndex(endIndexIn), stride(strideIn), burstLen(burstLenIn),
          shapeValue(shapeValueIn)
    {}
    uint32_t startIndex = 0;
    uint32_t endIndex = 0;
    uint32_t stride = 0;
    uint32_t burstLen = 0;
    uint32_t shapeValue = 0;
};

// Load2Dv2 parameters (devkit Load2D page, table of LoadData2DParamsV2).
struct LoadData2DParamsV2 {
    uint32_t mStartPosition = 0;
    uint32_t kStartPosition = 0;
    uint16_t mStep = 0;
    uint16_t kStep = 0;
    int32_t srcStride = 0;
    uint16_t dstStride = 0;
    bool ifTranspose = false;
    uint8_t sid = 0;
};

template <typename T>
void LoadData(const LocalTensor<T>&, const LocalTensor<T>&, const LoadData2DParamsV2&,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Core(loc);
    megafuse_emu::Fail(loc, "LoadData with LoadData2DParamsV2 (Load2Dv2) is available on Ascend 950 only (devkit "
                            "Load2D page); use LoadData2DParams on this SoC");
}

template <typename T>
void LoadData(const LocalTensor<T>&, const GlobalTensor<T>&, const LoadData2DParamsV2&,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Core(loc);
    megafuse_emu::Fail(loc, "LoadData with LoadData2DParamsV2 (Load2Dv2) is available on Ascend 950 only (devkit "
                            "Load2D page); use LoadData2DParams on this SoC");
}

}  // namespace AscendC

namespace megafuse_emu {

// The element offset of every contiguous piece of a slice, outer dimensions first, and the
// piece length in elements.
struct SlicePieces {
    std::vector<uint64_t> starts;
    uint64_t len = 0;
    uint64_t extent = 0;  // one past the highest element touched
};

inline SlicePieces SliceOf(const AscendC::SliceInfo* info, uint32_t dims, uint32_t esize, const char* side,
                           const Loc& loc)
{
    const char* api = "DataCopy (SliceInfo)";
    if (dims == 0 || dims > AscendC::K_MAX_DIM)
        Fail(loc, Str(api, ": dimValue ", dims, " outside [1, ", AscendC::K_MAX_DIM, "]"));
    SlicePieces out;
    std::vector<uint64_t> acc{0};
    uint64_t pitch = 1;
    std::vector<uint64_t> pitches(dims);
    for (uint32_t d = 0; d < dims; ++d) {
        pitches[d] = pitch;
        if (info[d].shapeValue == 0) Fail(loc, Str(api, ": ", side, " dimension ", d, " has shapeValue 0"));
        pitch *= info[d].shapeValue;
    }
    for (int d = static_cast<int>(dims) - 1; d >= 0; --d) {
        const AscendC::SliceInfo& s = info[d];
        if (s.burstLen == 0) Fail(loc, Str(api, ": ", side, " dimension ", d, " has burstLen 0"));
        if (d > 0 && s.burstLen != 1)
            Fail(loc, Str(api, ": ", side, " dimension ", d, " has burstLen ", s.burstLen,
                          " (documented: 1 for every dimension above the first)"));
        if (d == 0 && (s.burstLen * 32u) % esize != 0)
            Fail(loc, Str(api, ": burstLen is not a whole number of elements"));
        const uint64_t len = d == 0 ? s.burstLen * 32ull / esize : 1;
        if (s.endIndex < s.startIndex || s.endIndex >= s.shapeValue)
            Fail(loc, Str(api, ": ", side, " dimension ", d, " slice [", s.startIndex, ", ", s.endIndex,
                          "] is not inside its shapeValue ", s.shapeValue));
        std::vector<uint64_t> idx;
        for (uint64_t i = s.startIndex; i <= s.endIndex; i += len + s.stride) {
            if (i + len - 1 > s.endIndex)
                Fail(loc, Str(api, ": ", side, " dimension ", d, ": the piece at ", i, " of ", len,
                              " elements ends past endIndex ", s.endIndex));
            idx.push_back(i);
        }
        std::vector<uint64_t> next;
        for (uint64_t a : acc)
            for (uint64_t i : idx)
                if (d == 0) next.push_back(a + i);
                else for (uint64_t j = 0; j < len; ++j) next.push_back(a + (i + j) * pitches[d]);
        acc.swap(next);
        if (d == 0) out.len = len;
    }
    out.starts = acc;
    for (uint64_t st : acc) out.extent = std::max(out.extent, st + out.len);
    return out;
}

inline void MatchSlices(const SlicePieces& dst, const SlicePieces& src, const Loc& loc)
{
    if (dst.starts.size() != src.starts.size() || dst.len != src.len)
        Fail(loc, Str("DataCopy (SliceInfo): dst slices ", dst.starts.size(), " pieces of ", dst.len,
                      " elements but src slices ", src.starts.size(), " pieces of ", src.len));
}

// Every piece on the UB side starts on a 32-byte block, as every UB address of a DataCopy does.
inline void CheckPiecesAligned(const SlicePieces& p, uint32_t esize, const char* side, const Loc& loc)
{
    for (uint64_t st : p.starts)
        if (st * esize % 32 != 0)
            Fail(loc, Str("DataCopy (SliceInfo): the UB (", side, ") piece at element ", st,
                          " does not start on a 32-byte block"));
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const SliceInfo dstSliceInfo[],
              const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "DataCopy (SliceInfo)";
    Core(loc);
    if (dst.ref_.block == nullptr || dst.ref_.block->mem != Mem::UB)
        Fail(loc, Str(api, ": GM -> local slices go to VECIN (UB) only"));
    const SlicePieces ps = SliceOf(srcSliceInfo, dimValue, sizeof(T), "src", loc);
    const SlicePieces pd = SliceOf(dstSliceInfo, dimValue, sizeof(T), "dst", loc);
    MatchSlices(pd, ps, loc);
    CheckLocalAlign(dst.ref_, 32, api, "dst", loc);
    CheckPiecesAligned(pd, sizeof(T), "dst", loc);
    uint8_t* d = LocalAccess(dst.ref_, sizeof(T), 0, pd.extent, api, "dst", loc);
    const uint8_t* s = src.Access(0, ps.extent, api, loc);
    const uint64_t bytes = ps.len * sizeof(T);
    for (size_t i = 0; i < ps.starts.size(); ++i) {
        std::memcpy(d + pd.starts[i] * sizeof(T), s + ps.starts[i] * sizeof(T), bytes);
        MarkWritten(d + pd.starts[i] * sizeof(T), bytes);
    }
    Count(DMA_GM_TO_UB);
    Count(GM_READ_BYTES, bytes * ps.starts.size());
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const SliceInfo dstSliceInfo[],
              const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "DataCopy (SliceInfo)";
    Core(loc);
    if (src.ref_.block == nullptr || src.ref_.block->mem != Mem::UB)
        Fail(loc, Str(api, ": local -> GM slices come from VECOUT (UB) only"));
    const SlicePieces ps = SliceOf(srcSliceInfo, dimValue, sizeof(T), "src", loc);
    const SlicePieces pd = SliceOf(dstSliceInfo, dimValue, sizeof(T), "dst", loc);
    MatchSlices(pd, ps, loc);
    CheckLocalAlign(src.ref_, 32, api, "src", loc);
    CheckPiecesAligned(ps, sizeof(T), "src", loc);
    const uint8_t* s = LocalAccess(src.ref_, sizeof(T), 0, ps.extent, api, "src", loc);
    uint8_t* d = dst.Access(0, pd.extent, api, loc);
    const uint64_t bytes = ps.len * sizeof(T);
    for (size_t i = 0; i < ps.starts.size(); ++i) {
        CheckWritten(s + ps.starts[i] * sizeof(T), bytes, api, "src", loc);
        GmStore(d + pd.starts[i] * sizeof(T), s + ps.starts[i] * sizeof(T), bytes, api, loc);
    }
    Count(DMA_UB_TO_GM);
    Count(GM_WRITE_BYTES, bytes * ps.starts.size());
}

}  // namespace AscendC
