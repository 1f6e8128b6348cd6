// DataCopy / DataCopyPad between GM, UB and L1, with the parameter structs of the devkit.
// Units (devkit "DataCopy" and "DataCopyPad" pages):
//   DataCopyParams: blockLen and gaps in 32 B DataBlocks on both sides, gap = end-to-start.
//   DataCopyExtParams (DataCopyPad): blockLen in bytes; the GM-side stride in bytes, the
//   UB-side stride in DataBlocks; each UB row is padded to 32 B.
//   Nd2NzParams (GM -> L1): dstNzC0Stride / dstNzNStride in 32 B, matrix strides in elements.
#pragma once

#include <algorithm>

#include "tensor.h"

namespace AscendC {

struct DataCopyParams {
    DataCopyParams() {}
    DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn, const uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcGap(srcStrideIn), dstGap(dstStrideIn)
    {}
    uint16_t blockCount = DEFAULT_DATA_COPY_NBURST;
    uint16_t blockLen = 0;
    union {  // srcStride is the older name of srcGap
        uint16_t srcGap = 0;
        uint16_t srcStride;
    };
    union {
        uint16_t dstGap = 0;
        uint16_t dstStride;
    };
};

struct DataCopyExtParams {
    DataCopyExtParams() {}
    DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn,
                      const uint32_t dstStrideIn, const uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn)
    {}
    uint16_t blockCount = DEFAULT_DATA_COPY_NBURST;
    uint32_t blockLen = 0;
    uint32_t srcStride = DEFAULT_DATA_COPY_STRIDE;
    uint32_t dstStride = DEFAULT_DATA_COPY_STRIDE;
    uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
    DataCopyPadExtParams() {}
    DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, T padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue)
    {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = 0;
};

struct Nd2NzParams {
    Nd2NzParams() {}
    Nd2NzParams(const uint16_t ndNumIn, const uint16_t nValueIn, const uint16_t dValueIn,
                const uint16_t srcNdMatrixStrideIn, const uint16_t srcDValueIn, const uint16_t dstNzC0StrideIn,
                const uint16_t dstNzNStrideIn, const uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn)
    {}
    uint16_t ndNum = 0;
    uint16_t nValue = 0;             // rows of each ND matrix
    uint16_t dValue = 0;             // columns (elements) of each ND matrix
    uint16_t srcNdMatrixStride = 0;  // elements between ND matrices in GM
    uint16_t srcDValue = 0;          // elements between rows in GM
    uint16_t dstNzC0Stride = 0;      // 32 B units between the C0-wide column blocks in L1
    uint16_t dstNzNStride = 0;       // 32 B units between rows in L1
    uint16_t dstNzMatrixStride = 0;  // elements between NZ matrices in L1
};

}  // namespace AscendC

namespace megafuse_emu {

inline const char* PadHint() { return IsArch2201() ? " (use DataCopyPad)" : " (pad the data to 32 B)"; }

// The GM <-> local paths DataCopy takes; returns the counter of the transfer.
inline Counter GmToLocalPath(const TensorRef& dst, const char* api, const Loc& loc)
{
    LocalAccess(dst, 1, 0, 0, api, "dst", loc);  // a usable tensor first
    switch (dst.block->mem) {
        case Mem::UB: return DMA_GM_TO_UB;
        case Mem::L1: return DMA_GM_TO_L1;
        default:
            Fail(loc, Str(api, ": GM -> ", PosName(dst.block->pos), " is not a DataCopy path (use LoadData for "
                          "L0A/L0B)"));
    }
}

inline void LocalToGmPath(const TensorRef& src, const char* api, const Loc& loc)
{
    LocalAccess(src, 1, 0, 0, api, "src", loc);
    if (src.block->mem != Mem::UB)
        Fail(loc, Str(api, ": ", PosName(src.block->pos), " -> GM is not a DataCopy path in this emulation "
                      "(UB -> GM only; L0C leaves through Fixpipe)"));
}

// Checks a DataCopyParams and returns the span in bytes of one side, or 0 for a no-op.
inline uint64_t ParamsSpan(const AscendC::DataCopyParams& p, uint16_t gap, const char* api, const Loc& loc)
{
    if (p.blockCount > 4095) Fail(loc, Str(api, ": blockCount ", p.blockCount, " exceeds 4095"));
    if (p.blockCount == 0 || p.blockLen == 0) return 0;  // documented NOP
    return (static_cast<uint64_t>(p.blockCount - 1) * (p.blockLen + gap) + p.blockLen) * 32;
}

}  // namespace megafuse_emu

namespace AscendC {

// ---- contiguous copies: count elements; count * sizeof(T) must be a multiple of 32 B ------
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    const Counter path = GmToLocalPath(dst.ref_, "DataCopy", loc);
    if (bytes % 32 != 0)
        Fail(loc, Str("DataCopy of ", bytes, " bytes is not a multiple of 32 B", PadHint()));
    if (bytes == 0) return;
    CheckLocalAlign(dst.ref_, 32, "DataCopy", "dst", loc);
    uint8_t* d = LocalAccess(dst.ref_, sizeof(T), 0, count, "DataCopy", "dst", loc);
    std::memcpy(d, src.Access(0, count, "DataCopy", loc), bytes);
    Count(path);
    Count(GM_READ_BYTES, bytes);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    LocalToGmPath(src.ref_, "DataCopy", loc);
    if (bytes % 32 != 0)
        Fail(loc, Str("DataCopy of ", bytes, " bytes is not a multiple of 32 B", PadHint()));
    if (bytes == 0) return;
    CheckLocalAlign(src.ref_, 32, "DataCopy", "src", loc);
    const uint8_t* s = LocalAccess(src.ref_, sizeof(T), 0, count, "DataCopy", "src", loc);
    std::memcpy(dst.Access(0, count, "DataCopy", loc), s, bytes);
    Count(DMA_UB_TO_GM);
    Count(GM_WRITE_BYTES, bytes);
}

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    CheckMem(src.ref_, Mem::UB, "DataCopy (local -> local)", "src", loc);
    CheckMem(dst.ref_, Mem::UB, "DataCopy (local -> local)", "dst", loc);
    if (bytes % 32 != 0) Fail(loc, Str("DataCopy of ", bytes, " bytes is not a multiple of 32 B"));
    if (bytes == 0) return;
    CheckLocalAlign(src.ref_, 32, "DataCopy", "src", loc);
    CheckLocalAlign(dst.ref_, 32, "DataCopy", "dst", loc);
    const uint8_t* s = LocalAccess(src.ref_, sizeof(T), 0, count, "DataCopy", "src", loc);
    std::memmove(LocalAccess(dst.ref_, sizeof(T), 0, count, "DataCopy", "dst", loc), s, bytes);
    Count(DMA_UB_TO_UB);
}

// ---- strided copies with DataCopyParams ---------------------------------------------------
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    const Counter path = GmToLocalPath(dst.ref_, "DataCopy", loc);
    const uint64_t src_span = ParamsSpan(p, p.srcGap, "DataCopy", loc);
    const uint64_t dst_span = ParamsSpan(p, p.dstGap, "DataCopy", loc);
    if (src_span == 0) return;
    CheckLocalAlign(dst.ref_, 32, "DataCopy", "dst", loc);
    uint8_t* d = LocalAccessBytes(dst.ref_, 0, dst_span, "DataCopy", "dst", loc);
    const uint8_t* s = src.AccessBytes(0, src_span, "DataCopy", loc);
    const uint64_t len = p.blockLen * 32ull;
    for (uint32_t i = 0; i < p.blockCount; ++i)
        std::memcpy(d + i * (len + p.dstGap * 32ull), s + i * (len + p.srcGap * 32ull), len);
    Count(path);
    Count(GM_READ_BYTES, len * p.blockCount);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    LocalToGmPath(src.ref_, "DataCopy", loc);
    const uint64_t src_span = ParamsSpan(p, p.srcGap, "DataCopy", loc);
    const uint64_t dst_span = ParamsSpan(p, p.dstGap, "DataCopy", loc);
    if (src_span == 0) return;
    CheckLocalAlign(src.ref_, 32, "DataCopy", "src", loc);
    const uint8_t* s = LocalAccessBytes(src.ref_, 0, src_span, "DataCopy", "src", loc);
    uint8_t* d = dst.AccessBytes(0, dst_span, "DataCopy", loc);
    const uint64_t len = p.blockLen * 32ull;
    for (uint32_t i = 0; i < p.blockCount; ++i)
        std::memcpy(d + i * (len + p.dstGap * 32ull), s + i * (len + p.srcGap * 32ull), len);
    Count(DMA_UB_TO_GM);
    Count(GM_WRITE_BYTES, len * p.blockCount);
}

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    CheckMem(src.ref_, Mem::UB, "DataCopy (local -> local)", "src", loc);
    CheckMem(dst.ref_, Mem::UB, "DataCopy (local -> local)", "dst", loc);
    const uint64_t src_span = ParamsSpan(p, p.srcGap, "DataCopy", loc);
    const uint64_t dst_span = ParamsSpan(p, p.dstGap, "DataCopy", loc);
    if (src_span == 0) return;
    CheckLocalAlign(src.ref_, 32, "DataCopy", "src", loc);
    CheckLocalAlign(dst.ref_, 32, "DataCopy", "dst", loc);
    const uint8_t* s = LocalAccessBytes(src.ref_, 0, src_span, "DataCopy", "src", loc);
    uint8_t* d = LocalAccessBytes(dst.ref_, 0, dst_span, "DataCopy", "dst", loc);
    const uint64_t len = p.blockLen * 32ull;
    for (uint32_t i = 0; i < p.blockCount; ++i)
        std::memmove(d + i * (len + p.dstGap * 32ull), s + i * (len + p.srcGap * 32ull), len);
    Count(DMA_UB_TO_UB);
}

// ---- GM (ND, row-major) -> L1 (NZ) with on-the-fly layout change ---------------------------
// Row j of ND matrix i goes to dst + i*dstNzMatrixStride elements + j*dstNzNStride*32 B; its
// k-th 32 B piece goes dstNzC0Stride*32 B further per k. A row tail short of 32 B is
// zero-filled in L1 (devkit copy_gm_to_cbuf_multi_nd2nz description).
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    if (GmToLocalPath(dst.ref_, "DataCopy (ND2NZ)", loc) != DMA_GM_TO_L1)
        Fail(loc, "DataCopy with Nd2NzParams is emulated for GM -> A1/B1 (L1) only");
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;
    CheckLocalAlign(dst.ref_, 32, "DataCopy (ND2NZ)", "dst", loc);
    const uint64_t es = sizeof(T);
    const uint64_t row_bytes = p.dValue * es;
    const uint64_t pieces = (row_bytes + 31) / 32;
    const uint64_t src_elems =
        static_cast<uint64_t>(p.ndNum - 1) * p.srcNdMatrixStride + (p.nValue - 1ull) * p.srcDValue + p.dValue;
    const uint64_t dst_bytes = (p.ndNum - 1ull) * p.dstNzMatrixStride * es + (p.nValue - 1ull) * p.dstNzNStride * 32 +
                               (pieces - 1) * p.dstNzC0Stride * 32 + 32;
    const uint8_t* s = src.Access(0, src_elems, "DataCopy (ND2NZ)", loc);
    uint8_t* d = LocalAccessBytes(dst.ref_, 0, dst_bytes, "DataCopy (ND2NZ)", "dst", loc);
    for (uint64_t i = 0; i < p.ndNum; ++i)
        for (uint64_t j = 0; j < p.nValue; ++j) {
            const uint8_t* srow = s + (i * p.srcNdMatrixStride + j * p.srcDValue) * es;
            uint8_t* drow = d + i * p.dstNzMatrixStride * es + j * p.dstNzNStride * 32;
            for (uint64_t k = 0; k < pieces; ++k) {
                const uint64_t n = std::min<uint64_t>(32, row_bytes - k * 32);
                uint8_t* dp = drow + k * p.dstNzC0Stride * 32;
                std::memcpy(dp, srow + k * 32, n);
                std::memset(dp + n, 0, 32 - n);
            }
        }
    Count(DMA_GM_TO_L1);
    Count(GM_READ_BYTES, static_cast<uint64_t>(p.ndNum) * p.nValue * row_bytes);
}

// ---- DataCopyPad: byte-exact GM <-> UB for tails (arch 2201 only) ------------------------
template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                 const DataCopyPadExtParams<T>& pad, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    CoreState& c = Core(loc);
    if (!IsArch2201()) Fail(loc, Str("DataCopyPad is not available on ", c.soc_name, " (arch ", c.soc.arch, ")"));
    CheckMem(dst.ref_, Mem::UB, "DataCopyPad", "dst", loc);
    if (p.blockCount > 4095) Fail(loc, Str("DataCopyPad: blockCount ", p.blockCount, " exceeds 4095"));
    if (p.blockLen % sizeof(T) != 0)
        Fail(loc, Str("DataCopyPad: blockLen ", p.blockLen, " B is not a multiple of sizeof(", TypeName<T>(), ")"));
    if (pad.leftPadding * sizeof(T) > 32 || pad.rightPadding * sizeof(T) > 32)
        Fail(loc, "DataCopyPad: leftPadding and rightPadding may cover at most 32 B each");
    if (p.blockCount == 0 || p.blockLen == 0) return;  // documented NOP
    CheckLocalAlign(dst.ref_, 32, "DataCopyPad", "dst", loc);
    const uint64_t es = sizeof(T);
    const uint64_t left = pad.leftPadding * es;
    const uint64_t right = pad.rightPadding * es;
    const uint64_t row = (left + p.blockLen + right + 31) / 32 * 32;  // one UB row, 32 B aligned
    const uint64_t dst_pitch = row + p.dstStride * 32ull;
    const uint64_t src_pitch = p.blockLen + static_cast<uint64_t>(p.srcStride);
    const uint8_t* s = src.AccessBytes(0, (p.blockCount - 1ull) * src_pitch + p.blockLen, "DataCopyPad", loc);
    uint8_t* d = LocalAccessBytes(dst.ref_, 0, (p.blockCount - 1ull) * dst_pitch + row, "DataCopyPad", "dst", loc);
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        uint8_t* drow = d + i * dst_pitch;
        const uint8_t* srow = s + i * src_pitch;
        std::memcpy(drow + left, srow, p.blockLen);
        // Fill per the devkit: without padding the dummy tail repeats the row's first element;
        // with padding and isPad the pad value; otherwise the bytes keep whatever UB held.
        const bool no_pad = pad.leftPadding == 0 && pad.rightPadding == 0;
        if (!no_pad && !pad.isPad) continue;
        T fill;
        if (no_pad) std::memcpy(&fill, srow, es);
        else fill = pad.paddingValue;
        for (uint64_t b = 0; b < left; b += es) std::memcpy(drow + b, &fill, es);
        for (uint64_t b = left + p.blockLen; b + es <= row; b += es) std::memcpy(drow + b, &fill, es);
    }
    Count(DMA_GM_TO_UB);
    Count(GM_READ_BYTES, static_cast<uint64_t>(p.blockCount) * p.blockLen);
}

template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p,
                 megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    CoreState& c = Core(loc);
    if (!IsArch2201()) Fail(loc, Str("DataCopyPad is not available on ", c.soc_name, " (arch ", c.soc.arch, ")"));
    LocalToGmPath(src.ref_, "DataCopyPad", loc);
    if (p.blockCount > 4095) Fail(loc, Str("DataCopyPad: blockCount ", p.blockCount, " exceeds 4095"));
    if (p.blockLen % sizeof(T) != 0)
        Fail(loc, Str("DataCopyPad: blockLen ", p.blockLen, " B is not a multiple of sizeof(", TypeName<T>(), ")"));
    if (p.blockCount == 0 || p.blockLen == 0) return;
    CheckLocalAlign(src.ref_, 32, "DataCopyPad", "src", loc);
    const uint64_t row = (p.blockLen + 31ull) / 32 * 32;
    const uint64_t src_pitch = row + p.srcStride * 32ull;
    const uint64_t dst_pitch = p.blockLen + static_cast<uint64_t>(p.dstStride);
    const uint8_t* s =
        LocalAccessBytes(src.ref_, 0, (p.blockCount - 1ull) * src_pitch + p.blockLen, "DataCopyPad", "src", loc);
    uint8_t* d = dst.AccessBytes(0, (p.blockCount - 1ull) * dst_pitch + p.blockLen, "DataCopyPad", loc);
    for (uint64_t i = 0; i < p.blockCount; ++i) std::memcpy(d + i * dst_pitch, s + i * src_pitch, p.blockLen);
    Count(DMA_UB_TO_GM);
    Count(GM_WRITE_BYTES, static_cast<uint64_t>(p.blockCount) * p.blockLen);
}

}  // namespace AscendC
